//! The supervisor's guardrails at run time: the policy in force, the kill switch and standing
//! approvals. All three live in the store, not in this process, so every gateway instance sharing
//! one database applies the same ones, and every change to them is journaled with it.

use crate::api::catalog;
use crate::api::model::{
    GateDailyUse, GateStanding, GateStandingItem, GateToday, OpenOrders, PnlSummary,
};
use crate::gateway::gate::Gate;
use crate::gateway::model::error::{GateError, Kind};
use crate::gateway::model::request;
use crate::gateway::model::trade::{self, Fact, FactError, Facts, Needs, Trade};
use crate::gateway::rules::controls::{self, Controls, Live, Unread};
use crate::gateway::rules::policy::{self, Account, Policy, Rules, Verdict};
use crate::gateway::store::{Item, Record, Standing, detail};
use crate::secret::Secret;
use chrono::{DateTime, Utc};
use serde_json::Value;

const POLICY: &str = "policy";

pub async fn policy(gate: &Gate) -> Result<Policy, GateError> {
    match gate.store.state(POLICY).await.map_err(GateError::store)? {
        // What is stored was validated when it was set.
        Some(v) => Policy::from_json(&v).map_err(|e| {
            GateError::new(
                Kind::Unavailable,
                "policy_unreadable",
                format!("the stored policy no longer reads ({e}); PUT /gate/v1/policy a new one"),
            )
        }),
        None => Ok(Policy::default()),
    }
}

/// The checks a policy must pass besides its own syntax: rules that read the account need the
/// gateway's own key for it.
pub fn validate(policy: &Policy, has_upstream_key: bool) -> Result<(), policy::PolicyError> {
    if policy.needs_account() && !has_upstream_key {
        let key = if policy.rules.needs_account() {
            let r = &policy.rules;
            if r.max_open_positions.is_some() {
                "policy.max_open_positions"
            } else {
                "policy.daily_loss_limit_usd"
            }
            .to_string()
        } else {
            let (label, _) = policy
                .agents
                .iter()
                .find(|(_, r)| r.needs_account())
                .expect("an agent's rules need the account");
            format!("policy.agents.{label}")
        };
        return Err(policy::PolicyError {
            message: format!(
                "{key} reads the account's positions and PnL, and this gateway has no key of its own \
                 for the account (start it with --upstream-key-env VAR)"
            ),
            key,
        });
    }
    Ok(())
}

/// Replaces the policy in force (journaled as a policy change) unless it is the same.
pub async fn set_policy(gate: &Gate, new: &Policy, by: &str) -> Result<bool, GateError> {
    let old = policy(gate).await.ok();
    let stored = gate.store.state(POLICY).await.map_err(GateError::store)?;
    if stored.is_some() && old.as_ref() == Some(new) {
        return Ok(false);
    }
    let record = Record::new(
        "policy_change",
        by,
        gate.now(),
        detail::PolicyChange {
            from: old.map(|p| p.to_json()),
            to: new.to_json(),
        },
    );
    gate.store
        .set_state(POLICY, new.to_json(), record)
        .await
        .map_err(GateError::store)?;
    Ok(true)
}

/// The live facts a trade's meaning depends on, read upstream with the agent's own key (its own
/// account). What cannot be read stays an error, and the rules that need it fail closed.
pub async fn facts(gate: &Gate, key: &Secret, needs: Needs) -> Facts {
    let mut facts = Facts::default();
    // Asked at once: each is a round trip upstream, and the trade waits for all of them.
    let (value, orders, positions) = tokio::join!(
        async {
            needs
                .account_value
                .then_some(account_value(gate, key).await)
        },
        async { needs.open_orders.then_some(stop_orders(gate, key).await) },
        async { needs.positions.then_some(positions(gate, key).await) },
    );
    if let Some(v) = value {
        facts.account_value = v;
    }
    if let Some(o) = orders {
        facts.stop_orders = o;
    }
    if let Some(p) = positions {
        facts.positions = p;
    }
    facts
}

async fn positions(
    gate: &Gate,
    key: &Secret,
) -> Result<Vec<crate::api::model::PositionRow>, FactError> {
    let scope = read_fact(gate, key, "get_positions", Fact::Positions).await?;
    let rows: crate::api::model::Positions =
        serde_json::from_value(scope).map_err(|e| FactError::PositionsShape(e.to_string()))?;
    Ok(rows.positions)
}

/// What the service answers about one fact with the agent's key: its data (inside `data` where
/// the deployment wraps it).
async fn read_fact(gate: &Gate, key: &Secret, op: &str, fact: Fact) -> Result<Value, FactError> {
    let answer = gate
        .upstream
        .get_json(catalog::op(op), key)
        .await
        .map_err(|e| FactError::Unreachable {
            fact,
            message: e.message,
        })?;
    if !answer.is_success() {
        return Err(FactError::Status {
            fact,
            status: answer.status,
        });
    }
    let v = answer.json();
    Ok(match v.get("data") {
        Some(data) => data.clone(),
        None => v,
    })
}

async fn account_value(gate: &Gate, key: &Secret) -> Result<f64, FactError> {
    let scope = read_fact(gate, key, "pnl_summary", Fact::AccountValue).await?;
    let pnl: PnlSummary = serde_json::from_value(scope).unwrap_or_default();
    [pnl.total_portfolio_value, pnl.margin_summary.account_value]
        .into_iter()
        .find(|x| x.is_finite() && *x > 0.0)
        .ok_or(FactError::NoAccountValue)
}

/// Oids of the resting orders that stop a position's loss. An order whose kind cannot be told is
/// counted as one: cancelling it may take the stop away.
async fn stop_orders(gate: &Gate, key: &Secret) -> Result<Vec<u64>, FactError> {
    let scope = read_fact(gate, key, "list_open_orders", Fact::OpenOrders).await?;
    let orders: OpenOrders =
        serde_json::from_value(scope).map_err(|e| FactError::OrdersShape(e.to_string()))?;
    Ok(orders
        .orders
        .iter()
        .filter(|o| {
            let kind = o.order_type.to_ascii_lowercase();
            kind.contains("stop") || (o.is_trigger && !kind.contains("take profit"))
        })
        .map(|o| o.oid)
        .collect())
}

/// The trade an immediate request will execute. A trade signal the request cannot price alone (a
/// size in coins at market, a default nobody stated) is priced by the service itself: a mutate
/// tool's first call previews without running anything.
pub async fn immediate_trade(
    gate: &Gate,
    agent: &crate::gateway::gate::AgentKey,
    incoming: &crate::gateway::upstream::Incoming,
) -> Result<Trade, GateError> {
    let parsed = incoming.parsed();
    let defaults = &gate.settings.defaults;
    let facts = facts(gate, &agent.secret, trade::needs(parsed, defaults)).await;
    let request =
        trade::of_request(incoming.op.name, parsed, defaults, &facts).ok_or_else(|| {
            GateError::new(
                Kind::Forbidden,
                "unclassifiable_request",
                format!(
                    "the gateway cannot tell what {} trades, so it is not forwarded",
                    incoming.op.name
                ),
            )
        })?;
    // The controls that measure against the mark need the service's price for the coin; the
    // account's positions state it only for coins it holds.
    let wants_mark = || async {
        Ok::<_, GateError>(
            request.mark.is_none() && rules_for(gate, &agent.hash).await?.controls.wants_preview(),
        )
    };
    if incoming.op.name == "place_order"
        && !request.reduces
        && (request.notional.is_none() || request.leverage.is_none() || wants_mark().await?)
        && let Some(preview) = tool_preview(gate, agent, incoming).await
    {
        return Ok(trade::with_preview(
            Some(request),
            &preview,
            incoming.op.name,
        ));
    }
    Ok(request)
}

/// The service's own preview of an immediate trade signal, from the first call of its mutate tool
/// (which stages a confirm token and runs nothing). `None` where the service offers no such tool,
/// and where its catalog does not say the tool confirms first: that call would be the trade.
async fn tool_preview(
    gate: &Gate,
    agent: &crate::gateway::gate::AgentKey,
    incoming: &crate::gateway::upstream::Incoming,
) -> Option<crate::api::model::Preview> {
    let class = super::tools::classify(gate, incoming.op, Some(&agent.secret)).await;
    if class.ok()? != crate::gateway::rules::tools::ToolClass::Staged {
        return None;
    }
    let body = serde_json::to_value(crate::api::model::ExecuteToolRequest {
        name: incoming.op.tool_name(),
        args: incoming.canonical(),
    })
    .unwrap_or_default();
    let answer = gate
        .upstream
        .post_json(catalog::op("execute_mcp_tool"), &agent.secret, &body)
        .await
        .ok()?;
    if !answer.is_success() {
        return None;
    }
    let v = answer.json();
    let preview = v
        .get("result")
        .and_then(|r| r.get("preview"))
        .or_else(|| v.get("preview"))?;
    trade::preview_of(preview)
}

/// Refuses a trade the kill switch or a rule stops; the verdicts otherwise.
pub async fn judge(
    gate: &Gate,
    agent: &crate::gateway::gate::AgentKey,
    trade: &Trade,
) -> Result<Vec<Verdict>, GateError> {
    if !trade.reduces
        && let Some(reason) = super::halt::killed(gate).await?
    {
        return Err(super::halt::kill_switch_error(&reason));
    }
    let judged = check(gate, &agent.hash, trade, Phase::Arrival(&agent.secret)).await?;
    // A trade no one approves must not be one that needs more than one supervisor.
    let mut verdicts = judged.verdicts;
    verdicts.extend(judged.unapproved);
    if let Some(e) = violation(&verdicts) {
        return Err(e);
    }
    Ok(verdicts)
}

/// The operation an item's stored request is the body of.
fn item_op(item: &Item) -> &'static str {
    match item.exec {
        crate::gateway::store::Exec::Confirm => "propose_trade",
        crate::gateway::store::Exec::Close => "close_position",
        crate::gateway::store::Exec::Tool => "execute_mcp_tool",
    }
}

/// What an inbox item will execute: its stored (checked) request, priced by the service's preview
/// when it gave one. `None` for an item that does not trade; an error when its stored request
/// does not read as its operation's (an item staged before the strict reading), which nobody may
/// approve unjudged. Values only the live account states (account value, stop orders) are read
/// with the agent's key when the gateway holds it.
pub async fn item_trade(gate: &Gate, item: &Item) -> Result<Option<Trade>, UnreadItem> {
    let (op, checked) = item_request(item)?;
    let needs = trade::needs(&checked.parsed, &gate.settings.defaults);
    let facts = match gate.key_of(&item.agent) {
        Some(key) if needs != Needs::default() => facts(gate, &key, needs).await,
        _ => Facts::default(),
    };
    Ok(item_trade_with(gate, item, op, &checked, &facts))
}

/// [`item_trade`] without asking the service: a value only the live account states stays
/// unknown (for listings, which must not cost an upstream call per item).
pub fn item_trade_offline(gate: &Gate, item: &Item) -> Result<Option<Trade>, UnreadItem> {
    let (op, checked) = item_request(item)?;
    Ok(item_trade_with(gate, item, op, &checked, &Facts::default()))
}

/// An item whose stored request does not read as its operation's body.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("its stored request does not read as {op}'s: {error:?}")]
pub struct UnreadItem {
    pub op: &'static str,
    pub error: request::ReadError,
}

fn item_request(item: &Item) -> Result<(&'static str, request::Checked), UnreadItem> {
    let op = item_op(item);
    let checked = request::read(catalog::op(op), item.request.to_string().as_bytes())
        .map_err(|error| UnreadItem { op, error })?;
    Ok((op, checked))
}

fn item_trade_with(
    gate: &Gate,
    item: &Item,
    op: &'static str,
    checked: &request::Checked,
    facts: &Facts,
) -> Option<Trade> {
    let request = trade::of_request(op, &checked.parsed, &gate.settings.defaults, facts);
    let traded_op = match &checked.parsed {
        request::Parsed::Tool(call) => call.op.name,
        _ => op,
    };
    match trade::preview_of(&item.preview) {
        Some(p) if request.is_some() => Some(trade::with_preview(request, &p, traded_op)),
        _ => request,
    }
}

/// The digest of what an item will execute, which an approval binds to.
pub fn item_digest(item: &Item) -> String {
    trade::digest(&item.request, &item.preview)
}

/// Each known agent's notional executed this UTC day against its `max_daily_notional_usd`, so a
/// supervisor reading the policy sees how much of the daily limit is used.
pub async fn today(gate: &Gate, policy: &Policy) -> Result<GateToday, GateError> {
    let since = policy::day_start(gate.now());
    let mut agents = Vec::new();
    for a in gate.store.agents().await.map_err(GateError::store)? {
        let executed = gate
            .store
            .executed_since(&a.key_hash, since)
            .await
            .map_err(GateError::store)?;
        let labels: Vec<&str> = a
            .name
            .as_deref()
            .into_iter()
            .chain([a.fingerprint.as_str()])
            .collect();
        agents.push(GateDailyUse {
            agent: a.label().to_string(),
            fingerprint: a.fingerprint.clone(),
            executed_notional_usd: executed,
            max_daily_notional_usd: policy.for_agent(&labels).max_daily_notional_usd,
        });
    }
    Ok(GateToday { since, agents })
}

/// The labels an agent's policy table may be under: its name, then its fingerprint.
pub async fn labels(gate: &Gate, agent: &str) -> Result<Vec<String>, GateError> {
    let name = gate
        .store
        .agents()
        .await
        .map_err(GateError::store)?
        .into_iter()
        .find(|a| a.key_hash == agent)
        .and_then(|a| a.name);
    Ok(name.into_iter().chain([agent[..8].to_string()]).collect())
}

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Positions and today's PnL, read upstream with the gateway's own key.
pub async fn account(gate: &Gate) -> Result<Account, GateError> {
    let Some(key) = gate.upstream.key.clone() else {
        return Err(GateError::new(
            Kind::Unavailable,
            "upstream_key_not_configured",
            "the policy reads the account and this gateway has no key of its own for it; start it with --upstream-key-env VAR",
        ));
    };
    let unreadable = |what: &str, detail: String| {
        GateError::new(
            Kind::Upstream,
            "account_unreadable",
            format!(
                "the policy needs the account's {what} and the upstream did not give them ({detail})"
            ),
        )
    };
    let pnl = gate
        .upstream
        .get_json(catalog::op("pnl_summary"), &key)
        .await?;
    if !pnl.is_success() {
        return Err(unreadable("PnL", format!("HTTP {}", pnl.status)));
    }
    let pnl = pnl.json();
    let scope = pnl.get("data").unwrap_or(&pnl);
    let pnl_today = scope
        .get("pnl")
        .and_then(|p| p.get("today"))
        .and_then(num)
        .ok_or_else(|| unreadable("PnL", "no pnl.today in the answer".into()))?;
    let positions = gate
        .upstream
        .get_json(catalog::op("get_positions"), &key)
        .await?;
    if !positions.is_success() {
        return Err(unreadable(
            "positions",
            format!("HTTP {}", positions.status),
        ));
    }
    let positions = positions.json();
    let rows = positions
        .get("positions")
        .or_else(|| positions.get("data").and_then(|d| d.get("positions")))
        .and_then(Value::as_array)
        .ok_or_else(|| unreadable("positions", "no positions list in the answer".into()))?;
    let mut open: Vec<String> = rows
        .iter()
        .filter_map(|p| {
            ["coin", "asset", "pair", "symbol"]
                .iter()
                .find_map(|k| p.get(*k).and_then(Value::as_str))
                .map(crate::api::symbol::coin_of)
        })
        .collect();
    open.sort();
    open.dedup();
    Ok(Account { open, pnl_today })
}

/// The rules in force for this agent.
async fn rules_for(gate: &Gate, agent: &str) -> Result<Rules, GateError> {
    // Asked at once: on a shared store each is a round trip, and an approval waits for them.
    let (labels, policy) = tokio::try_join!(labels(gate, agent), policy(gate))?;
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    Ok(policy.for_agent(&labels))
}

/// The moment of a trade's life a check is for. Stagings and immediate trades count against
/// `max_stagings_per_minute` once, when they arrive; an approval is not a staging. An arriving
/// request brings its key, which the controls read the account with: the gateway keeps an agent's
/// key only once the upstream accepted it, so an agent's first request has no other.
#[derive(Clone, Copy)]
pub enum Phase<'k> {
    /// A staging or an immediate trade as it arrives: counted.
    Arrival(&'k Secret),
    /// The same staging judged again on the service's preview: not counted again.
    Priced(&'k Secret),
    /// An approval, or what one would meet.
    Approval,
}

/// Every rule's verdict for this agent's trade, against the account as it is now: the policy's
/// rules, then the pre-trade controls. Every staging, immediate trade, tool call and approval is
/// judged here, so no path skips a rule.
/// What the rules say of a trade: every rule's verdict, and how many distinct supervisors must
/// approve it.
pub struct Judgement {
    pub verdicts: Vec<Verdict>,
    pub approvals_required: u32,
    /// The step-up's refusal, should the trade execute with no one's approval.
    pub unapproved: Option<Verdict>,
}

pub async fn check(
    gate: &Gate,
    agent: &str,
    trade: &Trade,
    phase: Phase<'_>,
) -> Result<Judgement, GateError> {
    let (stagings, key) = match phase {
        Phase::Arrival(key) => (Some(gate.stagings_in_last_minute(agent, true)), Some(key)),
        Phase::Priced(key) => (
            Some(gate.stagings_in_last_minute(agent, false).saturating_sub(1)),
            Some(key),
        ),
        Phase::Approval => (None, None),
    };
    let rules = rules_for(gate, agent).await?;
    let account = if rules.needs_account() && !trade.reduces {
        Some(account(gate).await?)
    } else {
        None
    };
    let executed = if rules.max_daily_notional_usd.is_some() {
        gate.store
            .executed_since(agent, policy::day_start(gate.now()))
            .await
            .map_err(GateError::store)?
    } else {
        0.0
    };
    let mut verdicts = policy::verdicts(&rules, trade, account.as_ref(), executed);
    if rules.controls != Controls::default() {
        let live = live(gate, agent, key, &rules.controls, trade, stagings).await?;
        verdicts.extend(controls::verdicts(&rules.controls, trade, &live));
    }
    Ok(Judgement {
        verdicts,
        approvals_required: rules.step_up.approvals_required(trade),
        unapproved: rules.step_up.immediate_verdict(trade),
    })
}

/// The agent's executions in the last hour, counted by the store (so every instance on one
/// database counts the same): what `max_executions_per_hour` measures, with
/// [`controls::execution_throttle`] for its verdict.
pub async fn executions_in_last_hour(gate: &Gate, agent: &str) -> Result<u64, GateError> {
    gate.store
        .executions_since(agent, gate.now() - chrono::Duration::hours(1))
        .await
        .map_err(GateError::store)
}

/// An execution of `agent`'s that added exposure: counted towards the day's notional (nothing
/// when its USD figure is not known) and towards `max_executions_per_hour` (always), then the
/// throttle looks at the count.
pub async fn count_execution(
    gate: &Gate,
    agent: &str,
    at: DateTime<Utc>,
    notional: Option<f64>,
) -> Result<(), GateError> {
    gate.store
        .add_executed(agent, at, notional.unwrap_or(0.0))
        .await
        .map_err(GateError::store)?;
    throttle(gate, agent).await;
    Ok(())
}

/// After an execution of `agent`'s: at its `max_executions_per_hour` the agent is suspended
/// (RTS 6's repeated-execution throttle: the strategy is disabled until a designated person
/// re-enables it), so what it stages next is refused as suspended, not only its next execution.
/// A failure here is logged and leaves the execution's answer as it is: the throttle still
/// refuses the next execution at its approval.
async fn throttle(gate: &Gate, agent: &str) {
    let suspended = async {
        let policy = policy(gate).await?;
        let labels = labels(gate, agent).await?;
        let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
        let Some(max) = policy.for_agent(&labels).controls.max_executions_per_hour else {
            return Ok(false);
        };
        let count = executions_in_last_hour(gate, agent).await?;
        if count < max {
            return Ok(false);
        }
        let reason = format!(
            "max_executions_per_hour: {count} executions in the last hour reach the limit of \
             {max}; an admin resumes it"
        );
        super::suspend::suspend_key(gate, agent, &reason, "policy").await
    };
    match suspended.await {
        Ok(true) => tracing::warn!(
            agent = &agent[..8],
            "agent suspended: max_executions_per_hour reached"
        ),
        Ok(false) => {}
        Err(e) => tracing::error!(
            agent = &agent[..8],
            "max_executions_per_hour could not be checked after an execution: {}",
            e.message
        ),
    }
}

/// What the controls judge a trade against. Read with the agent's key (its own account), else
/// the gateway's; only what a set control needs, and nothing for a trade that opens nothing.
async fn live(
    gate: &Gate,
    agent: &str,
    key: Option<&Secret>,
    c: &Controls,
    trade: &Trade,
    stagings: Option<u64>,
) -> Result<Live, GateError> {
    let mut live = Live {
        stagings,
        ..Live::default()
    };
    if trade.reduces || trade.removes_stop_loss {
        return Ok(live);
    }
    let mut needs = c.needs();
    needs.positions &= trade.mark.is_none() || c.max_position_usd.is_some();
    let key = key
        .cloned()
        .or_else(|| gate.key_of(agent))
        .or_else(|| gate.upstream.key.clone());
    // The store's count and the upstream's facts at once: neither waits for the other.
    let (executions, facts) = tokio::join!(
        async {
            match c.max_executions_per_hour {
                Some(_) => executions_in_last_hour(gate, agent).await.map(Some),
                None => Ok(None),
            }
        },
        async {
            match &key {
                Some(key) if needs != Needs::default() => facts(gate, key, needs).await,
                _ => Facts::default(),
            }
        },
    );
    if let Some(n) = executions? {
        live.executions = Ok(n);
    }
    let coin = trade.coin.as_deref().unwrap_or("?");
    let held = facts.positions.as_ref().map(|rows| {
        rows.iter()
            .filter(|r| crate::api::symbol::coin_of(&r.coin) == coin)
            .collect::<Vec<_>>()
    });
    live.position = match &held {
        Ok(rows) => Ok(rows.iter().map(|r| r.szi).sum()),
        Err(e) => Err(Unread(format!("in {coin} is not known: {e}"))),
    };
    live.mark = match (trade.mark, &held) {
        (Some(m), _) => Ok(m),
        (None, Ok(rows)) => rows
            .iter()
            .map(|r| r.mark_px)
            .find(|m| m.is_finite() && *m > 0.0)
            .ok_or_else(|| {
                Unread(format!(
                    "of {coin} is not known: no preview of the service priced this trade and the \
                     account holds no {coin} position that states it"
                ))
            }),
        (None, Err(e)) => Err(Unread(format!("of {coin} is not known: {e}"))),
    };
    live.equity = facts
        .account_value
        .map_err(|e| Unread(format!("is not known: {e}")));
    Ok(live)
}

/// Whether the agent's policy allows immediate trades.
pub async fn allows_immediate(gate: &Gate, agent: &str) -> Result<bool, GateError> {
    let labels = labels(gate, agent).await?;
    let name = labels.len().eq(&2).then(|| labels[0].as_str());
    let refs: Vec<&str> = labels.iter().map(String::as_str).collect();
    Ok(gate.settings.allows_immediate(name, agent)
        || policy(gate).await?.for_agent(&refs).allow_immediate == Some(true))
}

/// 403 `policy_violation` for the first broken rule (one that measured the trade over its limit
/// before one that could not measure it), naming every broken one.
pub fn violation(verdicts: &[Verdict]) -> Option<GateError> {
    let mut broken: Vec<&Verdict> = verdicts.iter().filter(|v| !v.ok).collect();
    // A rule that measured the trade over its limit is named before one that could not measure
    // it: the first is what the agent must change.
    broken.sort_by_key(|v| v.value.is_none());
    let first = broken.first()?;
    let mut e = GateError::new(
        Kind::Forbidden,
        "policy_violation",
        broken
            .iter()
            .map(|v| v.message.as_str())
            .collect::<Vec<_>>()
            .join("; "),
    );
    /// What a violation adds to the error object: the first rule broken, all of them, and every
    /// verdict.
    #[derive(serde::Serialize)]
    struct Violation<'a> {
        rule: &'a str,
        rules: Vec<&'a str>,
        verdicts: &'a [Verdict],
    }
    let violation = Violation {
        rule: first.rule,
        rules: broken.iter().map(|v| v.rule).collect(),
        verdicts,
    };
    e.extra = Some(Box::new(
        serde_json::to_value(violation).unwrap_or_default(),
    ));
    Some(e)
}

/// The live standing approval this staging fits, if one does.
pub async fn standing_for(
    gate: &Gate,
    agent: &str,
    trade: &Trade,
) -> Result<Option<Standing>, GateError> {
    let (Some(coin), Some(notional)) = (&trade.coin, trade.notional) else {
        return Ok(None);
    };
    let labels = labels(gate, agent).await?;
    let all = gate
        .store
        .standings(gate.now())
        .await
        .map_err(GateError::store)?;
    Ok(all.into_iter().find(|s| {
        (s.agent == "*" || labels.contains(&s.agent))
            && (s.coins.is_empty() || s.coins.contains(coin))
            && notional <= s.max_notional_usd
    }))
}

pub fn standing_model(s: &Standing, now: DateTime<Utc>, approved: &[Item]) -> GateStanding {
    GateStanding {
        id: s.id,
        agent: s.agent.clone(),
        coins: s.coins.clone(),
        max_notional_usd: s.max_notional_usd,
        reason: s.reason.clone(),
        created_by: Some(s.created_by.clone()),
        created_at: Some(s.created_at),
        expires_at: s.expires_at,
        remaining_secs: Some((s.expires_at - now).num_seconds().max(0)),
        approved: approved
            .iter()
            .map(|i| GateStandingItem {
                id: i.id.clone(),
                proposal_id: i.proposal_id.clone(),
                kind: i.kind.clone(),
                status: i.status,
                notional: i.notional,
                created_at: Some(i.created_at),
            })
            .collect(),
    }
}
