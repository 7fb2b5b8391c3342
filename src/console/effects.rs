//! Performs Effects on tokio and reports back as Actions. Nothing here blocks the event loop: every
//! request is its own task, bounded by the client's timeout.

use super::action::{Action, Answer, Effect, Payload, Resource};
use super::inbox::Evidence;
use super::journal::JournalSender;
use super::payload::{DiscoveryPayload, DiscoveryQuery};
use crate::api::{ApiError, Client};
use chrono::Utc;
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;

#[derive(Clone)]
pub struct Runner {
    pub client: Client,
    pub tx: UnboundedSender<Action>,
    /// The decision journal's one writer (`journal.rs`); None disables it.
    pub journal: Option<JournalSender>,
}

impl Runner {
    pub fn run(&self, effect: Effect) {
        match effect {
            Effect::Fetch(resource) => self.spawn(move |c| async move {
                let result = fetch(&c, resource).await;
                Answer::Loaded { resource, result }
            }),
            Effect::Propose(signal) => self.spawn(move |c| async move {
                let result = c.propose_trade(&signal).await.map(Box::new);
                Answer::Proposed { signal, result }
            }),
            Effect::Confirm(id) => self.spawn(move |c| async move {
                let result = c.confirm_trade(&id).await.map(Box::new);
                Answer::Confirmed { id, result }
            }),
            Effect::Reconcile { list } => self.spawn(move |c| async move {
                Answer::Reconciled {
                    evidence: Box::new(reconcile(&c, list).await),
                }
            }),
            Effect::FetchDiscovery(query) => self.spawn(move |c| async move {
                let result = discover(&c, &query).await;
                Answer::Discovered { query, result }
            }),
            Effect::RunBacktest(request) => self.spawn(move |c| async move {
                let result = c.run_backtest(&request).await.map(Box::new);
                Answer::BacktestSubmitted { request, result }
            }),
            Effect::FetchCandles(coin) => self.spawn(move |c| async move {
                let result = c
                    .sandbox_candles(
                        &coin,
                        super::feeds::market::CANDLE_INTERVAL,
                        super::feeds::market::CANDLE_LIMIT,
                    )
                    .await
                    .map(Box::new);
                Answer::CandlesLoaded { coin, result }
            }),
            Effect::FetchJob(id) => self.spawn(move |c| async move {
                let result = c.get_backtest_job(&id).await.map(Box::new);
                Answer::JobLoaded { id, result }
            }),
            Effect::FetchResearch => self.spawn(move |c| async move {
                let result = c.research_status().await.map(Box::new);
                Answer::ResearchLoaded { result }
            }),
            Effect::StopResearch(run_id) => self.spawn(move |c| async move {
                let result = c.research_stop(&run_id).await.map(Box::new);
                Answer::ResearchStopped { run_id, result }
            }),
            Effect::Cli(command) => self.spawn(move |c| async move {
                let result = c.mcp_cli(&command).await;
                Answer::CliAnswered { command, result }
            }),
            Effect::FetchCapabilities => self.spawn(move |c| async move {
                let result = c.list_mcp_capabilities().await.map(Box::new);
                Answer::CapabilitiesLoaded { result }
            }),
            Effect::ExecuteTool {
                name,
                args,
                approval,
            } => self.spawn(move |c| async move {
                let result = c.execute_mcp_tool(&name, args.clone()).await.map(Box::new);
                Answer::ToolExecuted {
                    name,
                    args,
                    approval,
                    result,
                }
            }),
            Effect::Chat(messages) => self.spawn(move |c| async move {
                let result = c.mcp_agent_chat(&messages).await.map(Box::new);
                Answer::ChatAnswered { result }
            }),
            Effect::Trade(signal) => self.spawn(move |c| async move {
                let result = c.place_order(&signal).await.map(Box::new);
                Answer::Traded { signal, result }
            }),
            Effect::FetchDestinations => self.spawn(move |c| async move {
                let result = c.list_signal_destinations().await;
                Answer::DestinationsLoaded { result }
            }),
            Effect::CreateDestination(request) => self.spawn(move |c| async move {
                let result = c.create_signal_destination(&request).await.map(Box::new);
                Answer::DestinationCreated {
                    name: request.name,
                    result,
                }
            }),
            Effect::FetchDeliveries(id) => self.spawn(move |c| async move {
                let result = c.list_signal_deliveries(&id, Some(50)).await;
                Answer::DeliveriesLoaded { id, result }
            }),
            Effect::FetchBuilderFee(wallet) => self.spawn(move |c| async move {
                let result = c.approve_builder_fee_payload(&wallet).await.map(Box::new);
                Answer::BuilderFeeLoaded { wallet, result }
            }),
            Effect::ApproveBuilderFee(approval) => self.spawn(move |c| async move {
                let result = c.approve_builder_fee(&approval).await.map(Box::new);
                Answer::BuilderFeeApproved { result }
            }),
            Effect::FetchGate => self.spawn(move |c| async move {
                let (inbox, agents) = tokio::join!(c.gate_inbox(Some("all")), c.gate_agents());
                let result = inbox.and_then(|i| Ok(Box::new((i, Some(agents?)))));
                Answer::GateLoaded { result }
            }),
            Effect::FetchGateInbox { since } => self.spawn(move |c| async move {
                let result = c
                    .gate_inbox_since(Some("all"), since, crate::console::gate::HOLD)
                    .await
                    .map(|i| Box::new((i, None)));
                Answer::GateLoaded { result }
            }),
            Effect::GateApprove(id) => self.spawn(move |c| async move {
                let result = c.gate_approve(&id, &[]).await.map(Box::new);
                Answer::GateDecided {
                    id,
                    approve: true,
                    result,
                }
            }),
            Effect::FetchGuard => self.spawn(move |c| async move {
                let (kill, standing) =
                    tokio::join!(c.gate_kill_switch(), c.gate_standing_approvals());
                Answer::GuardLoaded { kill, standing }
            }),
            Effect::FetchPolicy => self.spawn(move |c| async move {
                let result = c.gate_policy().await.map(Box::new);
                Answer::PolicyLoaded { result }
            }),
            Effect::GateCheck(id) => self.spawn(move |c| async move {
                let result = c.gate_check(&id).await.map(Box::new);
                Answer::GateChecked { id, result }
            }),
            Effect::GateApproveOverride { id, overrides } => self.spawn(move |c| async move {
                let result = c.gate_approve(&id, &overrides).await.map(Box::new);
                Answer::GateDecided {
                    id,
                    approve: true,
                    result,
                }
            }),
            Effect::GateSetKill { on, reason } => self.spawn(move |c| async move {
                let result = c.gate_set_kill_switch(on, &reason).await;
                Answer::KillSwitchSet { on, result }
            }),
            Effect::GateSuspend { agent, reason } => self.spawn(move |c| async move {
                let result = c.gate_suspend_agent(&agent, &reason).await;
                Answer::AgentStateSet {
                    agent,
                    suspend: true,
                    result,
                }
            }),
            Effect::GateResume(agent) => self.spawn(move |c| async move {
                let result = c.gate_resume_agent(&agent).await;
                Answer::AgentStateSet {
                    agent,
                    suspend: false,
                    result,
                }
            }),
            Effect::GateCreateStanding(request) => self.spawn(move |c| async move {
                let what = format!(
                    "standing approval for {} ({} minutes)",
                    request.agent, request.minutes
                );
                let result = c.gate_create_standing_approval(&request).await.map(|_| ());
                Answer::StandingChanged { what, result }
            }),
            Effect::GateRevokeStanding(n) => self.spawn(move |c| async move {
                let result = c.gate_delete_standing_approval(n).await;
                Answer::StandingChanged {
                    what: format!("revoke standing approval {n}"),
                    result,
                }
            }),
            Effect::GateReject { id, reason } => self.spawn(move |c| async move {
                let result = c.gate_reject(&id, &reason).await.map(Box::new);
                Answer::GateDecided {
                    id,
                    approve: false,
                    result,
                }
            }),
            Effect::Journal(line) => {
                // Queued to the writer thread, in order; the disk never stalls the loop.
                if let Some(journal) = &self.journal {
                    journal.append(line);
                }
            }
            // Bell, Clipboard and Quit act on the terminal and the loop; the loop handles them.
            Effect::Bell | Effect::Clipboard(_) | Effect::Quit => {}
        }
    }

    /// Runs one request on its own task and sends its answer back, timed, as one Action.
    fn spawn<F, Fut>(&self, request: F)
    where
        F: FnOnce(Client) -> Fut + Send + 'static,
        Fut: Future<Output = Answer> + Send + 'static,
    {
        let client = self.client.clone();
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let answer = request(client).await;
            let _ = tx.send(Action::answered(Utc::now(), started.elapsed(), answer));
        });
    }
}

async fn fetch(client: &Client, resource: Resource) -> Result<Payload, ApiError> {
    Ok(match resource {
        Resource::Whoami => Payload::Whoami(Box::new(client.whoami(true).await?)),
        Resource::Positions => Payload::Positions(client.get_positions().await?.positions),
        Resource::Orders => Payload::Orders(client.list_open_orders(None).await?.orders),
        Resource::Pnl => Payload::Pnl(Box::new(client.pnl_summary().await?)),
        Resource::Proposals => Payload::Proposals(client.list_proposals(None).await?.proposals),
        Resource::Usage => Payload::Usage(Box::new(client.get_usage().await?)),
        Resource::Audit => Payload::Audit(client.list_audit_logs(Some(200)).await?.logs),
    })
}

/// The proposals list (when offered) and the audit log, each given up after a short wait: these
/// checks repeat every few seconds while the service is unreachable, so none may hang for the
/// client's full timeout and retries.
async fn reconcile(client: &Client, list: bool) -> Evidence {
    use super::inbox::{AUDIT_WINDOW, RECHECK_TIMEOUT};
    async fn quick<T>(f: impl Future<Output = Result<T, ApiError>>) -> Result<T, ApiError> {
        tokio::time::timeout(RECHECK_TIMEOUT, f)
            .await
            .unwrap_or_else(|_| {
                Err(ApiError::Transport(format!(
                    "no answer within {}s",
                    RECHECK_TIMEOUT.as_secs()
                )))
            })
    }
    let proposals = if list {
        Some(
            quick(client.list_proposals(Some("all")))
                .await
                .map(|p| p.proposals),
        )
    } else {
        None
    };
    let audit = quick(client.list_audit_logs(Some(AUDIT_WINDOW)))
        .await
        .map(|a| a.logs);
    Evidence { proposals, audit }
}

async fn discover(client: &Client, query: &DiscoveryQuery) -> Result<DiscoveryPayload, ApiError> {
    Ok(match query {
        DiscoveryQuery::Strategies => {
            DiscoveryPayload::Strategies(client.discover_strategies().await?.strategies)
        }
        DiscoveryQuery::TopBacktests(q) => DiscoveryPayload::Rows(Box::new(
            client
                .discover_top_backtests(q.filter.as_deref(), q.include_all)
                .await?,
        )),
        DiscoveryQuery::TopLive(q) => DiscoveryPayload::Rows(Box::new(
            client.discover_top_live(q.window_days, q.limit).await?,
        )),
        DiscoveryQuery::Combos(q) => DiscoveryPayload::Rows(Box::new(
            client.discover_top_optimized_combos(&q.to_params()).await?,
        )),
    })
}
