//! Performs Effects on tokio and reports back as Actions. Nothing here blocks the event loop: every
//! request is its own task, bounded by the client's timeout.

use super::action::{Action, Effect, Payload, Resource};
use super::discovery::{DiscoveryPayload, DiscoveryQuery};
use crate::api::catalog;
use crate::api::client::Request;
use crate::api::{ApiError, Client};
use chrono::Utc;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;

#[derive(Clone)]
pub struct Runner {
    pub client: Client,
    pub tx: UnboundedSender<Action>,
    /// The JSON-lines decision journal; None disables it.
    pub journal: Option<PathBuf>,
}

impl Runner {
    pub fn run(&self, effect: Effect) {
        match effect {
            Effect::Fetch(resource) => {
                let this = self.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = fetch(&this.client, resource).await;
                    let _ = this.tx.send(Action::Loaded {
                        resource,
                        result,
                        latency: started.elapsed(),
                        at: Utc::now(),
                    });
                });
            }
            Effect::Propose(signal) => {
                let this = self.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = this.client.propose_trade(&signal).await.map(Box::new);
                    let _ = this.tx.send(Action::Proposed {
                        signal,
                        result,
                        latency: started.elapsed(),
                        at: Utc::now(),
                    });
                });
            }
            Effect::Confirm(id) => {
                let this = self.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = this.client.confirm_trade(&id).await.map(Box::new);
                    let _ = this.tx.send(Action::Confirmed {
                        id,
                        result,
                        latency: started.elapsed(),
                        at: Utc::now(),
                    });
                });
            }
            Effect::FetchDiscovery(query) => {
                let this = self.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = discover(&this.client, &query).await;
                    let _ = this.tx.send(Action::Discovered {
                        query,
                        result,
                        latency: started.elapsed(),
                        at: Utc::now(),
                    });
                });
            }
            Effect::RunBacktest(request) => {
                let this = self.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = this.client.run_backtest(&request).await.map(Box::new);
                    let _ = this.tx.send(Action::BacktestSubmitted {
                        request,
                        result,
                        latency: started.elapsed(),
                        at: Utc::now(),
                    });
                });
            }
            Effect::FetchJob(id) => {
                let this = self.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = this.client.get_backtest_job(&id).await.map(Box::new);
                    let _ = this.tx.send(Action::JobLoaded {
                        id,
                        result,
                        latency: started.elapsed(),
                        at: Utc::now(),
                    });
                });
            }
            Effect::FetchResearch => {
                let this = self.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = this.client.research_status().await.map(Box::new);
                    let _ = this.tx.send(Action::ResearchLoaded {
                        result,
                        latency: started.elapsed(),
                        at: Utc::now(),
                    });
                });
            }
            Effect::StopResearch(run_id) => {
                let this = self.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = this.client.research_stop(&run_id).await.map(Box::new);
                    let _ = this.tx.send(Action::ResearchStopped {
                        run_id,
                        result,
                        latency: started.elapsed(),
                        at: Utc::now(),
                    });
                });
            }
            Effect::Cli(command) => {
                let this = self.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = this.client.mcp_cli(&command).await;
                    let _ = this.tx.send(Action::CliAnswered {
                        command,
                        result,
                        latency: started.elapsed(),
                        at: Utc::now(),
                    });
                });
            }
            Effect::FetchCapabilities => {
                let this = self.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = this.client.list_mcp_capabilities().await.map(Box::new);
                    let _ = this.tx.send(Action::CapabilitiesLoaded {
                        result,
                        latency: started.elapsed(),
                        at: Utc::now(),
                    });
                });
            }
            Effect::ExecuteTool {
                name,
                args,
                approval,
            } => {
                let this = self.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = this
                        .client
                        .execute_mcp_tool(&name, args.clone())
                        .await
                        .map(Box::new);
                    let _ = this.tx.send(Action::ToolExecuted {
                        name,
                        args,
                        approval,
                        result,
                        latency: started.elapsed(),
                        at: Utc::now(),
                    });
                });
            }
            Effect::Chat(messages) => {
                let this = self.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = this.client.mcp_agent_chat(&messages).await.map(Box::new);
                    let _ = this.tx.send(Action::ChatAnswered {
                        result,
                        latency: started.elapsed(),
                        at: Utc::now(),
                    });
                });
            }
            Effect::Trade(signal) => {
                let this = self.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = this.client.place_order(&signal).await.map(Box::new);
                    let _ = this.tx.send(Action::Traded {
                        signal,
                        result,
                        latency: started.elapsed(),
                        at: Utc::now(),
                    });
                });
            }
            Effect::FetchDestinations => {
                let this = self.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = this
                        .client
                        .list_signal_destinations()
                        .await
                        .and_then(to_json);
                    let _ = this.tx.send(Action::DestinationsLoaded {
                        result,
                        latency: started.elapsed(),
                        at: Utc::now(),
                    });
                });
            }
            Effect::CreateDestination(request) => {
                let this = self.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = this
                        .client
                        .create_signal_destination(&request)
                        .await
                        .and_then(to_json)
                        .map(super::signals::split_secret);
                    let _ = this.tx.send(Action::DestinationCreated {
                        name: request.name,
                        result,
                        latency: started.elapsed(),
                        at: Utc::now(),
                    });
                });
            }
            Effect::FetchDeliveries(id) => {
                let this = self.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    // An extension with no typed method yet: called through its catalog entry.
                    let result = match catalog::find("list_signal_deliveries") {
                        Some(op) => {
                            let req = Request {
                                path_args: vec![id.clone()],
                                query: vec![("limit".into(), "50".into())],
                                ..Default::default()
                            };
                            this.client.call(op, req).await
                        }
                        None => Err(ApiError::NotFound {
                            code: "not_in_catalog".into(),
                            message: "list_signal_deliveries is not in the catalog".into(),
                        }),
                    };
                    let _ = this.tx.send(Action::DeliveriesLoaded {
                        id,
                        result,
                        latency: started.elapsed(),
                        at: Utc::now(),
                    });
                });
            }
            Effect::FetchBuilderFee(wallet) => {
                let this = self.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = this
                        .client
                        .approve_builder_fee_payload(&wallet)
                        .await
                        .and_then(to_json);
                    let _ = this.tx.send(Action::BuilderFeeLoaded {
                        wallet,
                        result,
                        latency: started.elapsed(),
                        at: Utc::now(),
                    });
                });
            }
            Effect::ApproveBuilderFee(approval) => {
                let this = self.clone();
                tokio::spawn(async move {
                    let started = Instant::now();
                    let result = this
                        .client
                        .approve_builder_fee(&approval)
                        .await
                        .and_then(to_json);
                    let _ = this.tx.send(Action::BuilderFeeApproved {
                        result,
                        latency: started.elapsed(),
                        at: Utc::now(),
                    });
                });
            }
            Effect::Journal(line) => {
                if let Some(path) = self.journal.clone() {
                    // A small append; done off the loop all the same, as disks can stall.
                    tokio::task::spawn_blocking(move || {
                        if let Err(e) = append_line(&path, &line) {
                            tracing::error!("cannot append to the journal {}: {e}", path.display());
                        }
                    });
                }
            }
            // Bell, Clipboard and Quit act on the terminal and the loop; the loop handles them.
            Effect::Bell | Effect::Clipboard(_) | Effect::Quit => {}
        }
    }
}

pub fn append_line(path: &std::path::Path, line: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    writeln!(f, "{line}")?;
    f.sync_data()
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

/// A typed answer back to JSON, which the app reads tolerantly (these shapes are still settling).
fn to_json<T: serde::Serialize>(value: T) -> Result<serde_json::Value, ApiError> {
    serde_json::to_value(value).map_err(|e| ApiError::Decode(e.to_string()))
}
