//! The inbox: stagings captured on their way back to the agent, the agent's own confirm held until a
//! supervisor decided, and an approval executed upstream exactly once with the proposing agent's key.
//!
//! The upstream may be the real deployment, whose shapes are only partly known (numbers as strings,
//! errors as 200 with `success: false`), so answers are read as JSON values with lookups, never
//! through the typed models.

use super::execute;
use super::guard;
use super::halt;
use super::items::{self, retry_at};
use crate::api::catalog;
use crate::api::model::lenient::time as parse_time;
use crate::gateway::gate::{AgentKey, Gate};
use crate::gateway::model::error::{GateError, Kind};
use crate::gateway::model::request::Parsed;
use crate::gateway::model::trade;
use crate::gateway::rules::policy;
use crate::gateway::rules::tools::ToolClass;
use crate::gateway::store::{Exec, Hold, Item, ItemRef, Record, Status, Transition, detail};
use crate::gateway::upstream::{Answer, Buffered, Incoming};
use chrono::{DateTime, Duration, Utc};
use serde_json::Value;
use std::sync::Arc;

/// Lifetime the interface gives proposals, for an upstream answer that does not say.
const DEFAULT_TTL_MINUTES: i64 = 5;

/// Looks a field up at the top of an answer, then in its usual wrappers.
fn lookup<'a>(v: &'a Value, names: &[&str]) -> Option<&'a Value> {
    let scopes = [Some(v), v.get("data"), v.get("result"), v.get("proposal")];
    scopes.into_iter().flatten().find_map(|scope| {
        names
            .iter()
            .find_map(|n| scope.get(*n).filter(|x| !x.is_null()))
    })
}

fn lookup_str(v: &Value, names: &[&str]) -> Option<String> {
    match lookup(v, names)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn new_item_id() -> String {
    use rand::RngExt;
    let bytes: [u8; 8] = rand::rng().random();
    format!("gi_{}", hex::encode(bytes))
}

fn require_agent(incoming: &Incoming) -> Result<&AgentKey, GateError> {
    incoming.agent.as_ref().ok_or_else(|| {
        GateError::new(
            Kind::Unauthorized,
            "unauthorized",
            "send your API key in the x-api-key header",
        )
    })
}

/// Forwards a staging with the agent's key and, when the upstream staged something, records it as a
/// pending item before the agent gets the answer (unchanged).
///
/// Judged twice: on the checked request before anything goes upstream (a rule it already breaks
/// leaves no proposal behind), then on the trade the service staged (its preview), which is the
/// one that would execute. A staging the second judgement refuses is kept in the inbox as
/// refused by the policy, so the supervisor sees what the agent tried.
pub async fn stage(gate: &Arc<Gate>, incoming: &Incoming, exec: Exec) -> Result<Answer, GateError> {
    let agent = require_agent(incoming)?;
    let defaults = &gate.settings.defaults;
    let parsed = incoming.parsed();
    let facts = guard::facts(gate, &agent.secret, trade::needs(parsed, defaults)).await;
    let asked = trade::of_request(incoming.op.name, parsed, defaults, &facts);
    if let Some(e) = halt::halted(gate, &agent.hash, asked.as_ref()).await? {
        return Err(e);
    }
    if let Some(t) = &asked {
        // Only values the request states: what it leaves to the service is priced by the
        // service's preview below.
        let verdicts = guard::check(gate, &agent.hash, t, guard::Phase::Arrival(&agent.secret))
            .await?
            .verdicts;
        if verdicts.iter().any(|v| !v.ok && v.value.is_some())
            && let Some(e) = guard::violation(&verdicts)
        {
            // Nothing went upstream, but the supervisor sees what the agent tried, as for a
            // staging the service's preview breaks.
            refused_request(gate, incoming, agent, exec, t, &verdicts, &e).await?;
            return Err(e);
        }
    }
    let answer = send_buffered(gate, incoming).await?;
    if !answer.is_success() {
        return Ok(Answer::Read(answer));
    }
    crate::gateway::flow::forward::remember(gate, agent).await;
    let body = answer.json();
    let capture = match exec {
        Exec::Tool => {
            lookup_str(&body, &["confirmToken", "confirm_token"]).map(|t| (None, Some(t)))
        }
        _ => lookup_str(&body, &["proposalId", "proposal_id"]).map(|p| (Some(p), None)),
    };
    let Some((proposal_id, confirm_token)) = capture else {
        return Ok(Answer::Read(answer));
    };
    let (request, traded_op) = what_runs(incoming, exec);
    let preview = lookup(&body, &["preview"]).cloned().unwrap_or(Value::Null);
    let trade = match (asked, trade::preview_of(&preview)) {
        (Some(r), Some(p)) => Some(trade::with_preview(Some(r), &p, traded_op)),
        (r, _) => r,
    };
    // What the service staged is judged again: a suspension made meanwhile stops it too.
    let halted = halt::halted(gate, &agent.hash, trade.as_ref()).await?;
    let (verdicts, approvals_required) = match &trade {
        Some(t) => {
            let judged =
                guard::check(gate, &agent.hash, t, guard::Phase::Priced(&agent.secret)).await?;
            (judged.verdicts, judged.approvals_required)
        }
        None => (Vec::new(), 1),
    };
    let refusal = halted.or_else(|| guard::violation(&verdicts));
    let kind = item_kind(incoming, exec, &request, lookup_str(&body, &["kind"]));
    let now = gate.now();
    let fresh = pending_item(gate, agent, kind, exec, request, now).await;
    let item = Item {
        proposal_id,
        confirm_token,
        preview,
        expires_at: lookup(&body, &["expiresAt", "expires_at"])
            .and_then(parse_time)
            .unwrap_or(fresh.expires_at),
        notional: trade.as_ref().and_then(|t| t.notional),
        verdicts: Some(verdicts.iter().map(policy::Verdict::model).collect()),
        approvals_required,
        staged_by: incoming.supervisor.clone(),
        ..fresh
    };
    let (id, kind, digest) = (
        item.id.clone(),
        item.kind.clone(),
        guard::item_digest(&item),
    );
    if !gate
        .store
        .insert_item(item)
        .await
        .map_err(GateError::store)?
    {
        return Ok(Answer::Read(answer));
    }
    tracing::info!(item = %id, agent = agent.fingerprint(), kind = %kind, "staged");
    if let Some(mut e) = refusal {
        reject_by_policy(
            gate,
            &id,
            now,
            &e.message,
            &verdicts,
            trade.as_ref(),
            &digest,
        )
        .await?;
        e.message = format!(
            "{}; the service priced the staging that way, so it is refused here and will not \
             execute through this gateway",
            e.message
        );
        return Err(e);
    }
    // A standing approval is one supervisor's: it never stands in for a step-up's quorum.
    let standing = trade.as_ref().filter(|_| approvals_required == 1);
    if !auto_approve(gate, &id, &agent.hash, standing, &digest).await? {
        items::notify_pending(gate, &id).await;
    }
    Ok(Answer::Read(answer))
}

/// The item of a staging the policy refused: rejected by the policy, journaled with the rules
/// and the trade it judged.
async fn reject_by_policy(
    gate: &Arc<Gate>,
    id: &str,
    now: chrono::DateTime<chrono::Utc>,
    message: &str,
    verdicts: &[policy::Verdict],
    trade: Option<&trade::Trade>,
    digest: &str,
) -> Result<(), GateError> {
    let record = Record::new(
        "policy_refusal",
        "policy",
        now,
        detail::PolicyRefusal {
            message,
            verdicts,
            trade,
            trade_digest: digest,
        },
    )
    .item(id);
    let t = Transition {
        decided_by: Some("policy".into()),
        reason: Some(message.to_string()),
        ..Transition::new(&[Status::Pending], Status::Rejected, now)
    }
    .journaled(record);
    gate.store
        .transition(id, t)
        .await
        .map_err(GateError::store)?;
    Ok(())
}

/// What an item keeps of a staging: the checked request of the operation that will run (for a
/// proposal staged through a tool, the tool's arguments, the propose body, never the wrapper), and
/// that operation's name.
fn what_runs(incoming: &Incoming, exec: Exec) -> (Value, &'static str) {
    match incoming.parsed() {
        Parsed::Tool(call) if exec != Exec::Tool => {
            (Value::Object(call.args.clone()), call.op.name)
        }
        Parsed::Tool(call) => (incoming.canonical(), call.op.name),
        _ => (incoming.canonical(), incoming.op.name),
    }
}

/// An item's kind: a tool call's `tool:<name>`, else what the upstream said it staged (`said`),
/// else what the request asks.
fn item_kind(incoming: &Incoming, exec: Exec, request: &Value, said: Option<String>) -> String {
    match (exec, incoming.parsed()) {
        (Exec::Tool, Parsed::Tool(call)) => format!("tool:{}", call.op.tool_name()),
        _ => said.unwrap_or_else(|| kind_of(request)),
    }
}

/// A new pending item of `agent`'s, created `now`, with the service's 5 minutes to live; the
/// caller sets what it knows beyond that (the proposal, the preview, the verdicts).
async fn pending_item(
    gate: &Arc<Gate>,
    agent: &AgentKey,
    kind: String,
    exec: Exec,
    request: Value,
    now: chrono::DateTime<chrono::Utc>,
) -> Item {
    Item {
        id: new_item_id(),
        agent: agent.hash.clone(),
        account: account_of(gate, agent).await,
        kind,
        exec,
        proposal_id: None,
        confirm_token: None,
        request,
        preview: Value::Null,
        expires_at: now + Duration::minutes(DEFAULT_TTL_MINUTES),
        created_at: now,
        status: Status::Pending,
        decided_at: None,
        decided_by: None,
        reason: None,
        result: None,
        note: None,
        notional: None,
        verdicts: None,
        standing: None,
        approvals: Vec::new(),
        approvals_required: 1,
        staged_by: None,
    }
}

/// A staging the policy refused on its request, before anything went upstream: kept as an item
/// with no proposal, rejected by the policy, so it shows in the supervisor's inbox.
async fn refused_request(
    gate: &Arc<Gate>,
    incoming: &Incoming,
    agent: &AgentKey,
    exec: Exec,
    trade: &trade::Trade,
    verdicts: &[policy::Verdict],
    e: &GateError,
) -> Result<(), GateError> {
    let (request, _) = what_runs(incoming, exec);
    let kind = item_kind(incoming, exec, &request, None);
    let now = gate.now();
    let item = Item {
        notional: trade.notional,
        verdicts: Some(verdicts.iter().map(policy::Verdict::model).collect()),
        ..pending_item(gate, agent, kind, exec, request, now).await
    };
    let (id, digest) = (item.id.clone(), guard::item_digest(&item));
    if gate
        .store
        .insert_item(item)
        .await
        .map_err(GateError::store)?
    {
        tracing::info!(item = %id, agent = agent.fingerprint(), "staging refused by the policy");
        reject_by_policy(gate, &id, now, &e.message, verdicts, Some(trade), &digest).await?;
    }
    Ok(())
}

/// Approves and executes a fresh item at once when a live standing approval covers it (and the
/// kill switch is off). True when it did.
async fn auto_approve(
    gate: &Arc<Gate>,
    id: &str,
    agent: &str,
    trade: Option<&trade::Trade>,
    digest: &str,
) -> Result<bool, GateError> {
    let Some(trade) = trade else {
        return Ok(false);
    };
    if trade.reduces || halt::killed(gate).await?.is_some() {
        return Ok(false);
    }
    let Some(standing) = guard::standing_for(gate, agent, trade).await? else {
        return Ok(false);
    };
    let now = gate.now();
    let by = format!("standing approval {}", standing.id);
    let record = Record::new(
        "auto_approve",
        &by,
        now,
        detail::AutoApproved {
            standing_approval: standing.id,
            reason: &standing.reason,
            message: format!("auto-approved by standing approval {}", standing.id),
            trade: Some(trade),
            trade_digest: digest,
        },
    )
    .item(id);
    let t = Transition {
        unexpired_at: Some(now),
        decided_by: Some(by.clone()),
        standing: Some(standing.id),
        ..Transition::new(&[Status::Pending], Status::Approved, now)
    }
    .journaled(record);
    if !gate
        .store
        .transition(id, t)
        .await
        .map_err(GateError::store)?
    {
        return Ok(false);
    }
    tracing::info!(item = %id, standing = standing.id, "auto-approved");
    // The staging itself succeeded: an execution that fails now stays approved (with its note)
    // and runs on the agent's confirm, as after any approval.
    if let Err(e) = execute::execute(gate, id).await {
        tracing::warn!(item = %id, "auto-approved item did not run yet: {}", e.message);
    }
    Ok(true)
}

/// What a staging body stages when the upstream's answer does not say.
fn kind_of(request: &Value) -> String {
    match request.get("action").and_then(Value::as_str) {
        Some(a @ ("close" | "close_all")) => a.to_string(),
        _ if request.get("d").and_then(Value::as_str) == Some("close") => "close".into(),
        _ => "trade".into(),
    }
}

/// The agent's account (messengerId), asked of the upstream's whoami once per key.
async fn account_of(gate: &Arc<Gate>, agent: &AgentKey) -> Option<String> {
    let known = gate
        .store
        .agent_seen(&agent.hash, agent.fingerprint(), gate.now())
        .await
        .ok()?;
    if known.account.is_some() {
        return known.account;
    }
    let answer = gate
        .upstream
        .get_json(catalog::op("whoami"), &agent.secret)
        .await
        .ok()?;
    if !answer.is_success() {
        return None;
    }
    let account = lookup_str(
        &answer.json(),
        &["messengerId", "messenger_id", "account", "id"],
    )?;
    gate.store
        .set_agent_account(&agent.hash, &account)
        .await
        .ok()?;
    Some(account)
}

async fn send_buffered(gate: &Gate, incoming: &Incoming) -> Result<Buffered, GateError> {
    // The gateway reads this answer, and it decodes no compression: ask for it plain (the agent's
    // client accepts a plain answer whatever it offered).
    let mut headers = incoming.headers.clone();
    headers.remove(reqwest::header::ACCEPT_ENCODING);
    let resp = gate
        .upstream
        .send(
            incoming.method.clone(),
            &incoming.path_and_query,
            &headers,
            incoming.agent.as_ref().map(|a| &a.secret),
            incoming.body.clone(),
        )
        .await?;
    Buffered::read(&gate.upstream, resp).await
}

/// `execute_mcp_tool`: a mutate tool's first call is a staging, its re-submission with a
/// `confirmToken` is a confirm. Tools of the other tiers pass through (as checked).
pub async fn tool(gate: &Arc<Gate>, incoming: &Incoming) -> Result<Answer, GateError> {
    let Parsed::Tool(call) = incoming.parsed() else {
        return Err(GateError::new(
            Kind::Invalid,
            "invalid_body",
            "execute_mcp_tool takes name and args",
        ));
    };
    let op = call.op;
    let key = incoming.agent.as_ref().map(|a| &a.secret);
    if super::tools::classify(gate, op, gate.upstream.key.as_ref().or(key)).await?
        == ToolClass::Reads
    {
        return crate::gateway::flow::forward::pass_through(gate, incoming).await;
    }
    let executes_proposal = op.name == "confirm_trade"
        || matches!(&call.body, Parsed::Close(c) if c.proposal_id.is_some());
    if executes_proposal {
        return Err(GateError::new(
            Kind::Forbidden,
            "human_approval_required",
            format!(
                "proposals staged through this gateway run when the supervisor approves them in agentdesk; \
                 {} through a tool is not accepted here, POST /api/delegated/confirm returns the execution once approved",
                op.tool_name()
            ),
        ));
    }
    if op.name == "propose_trade" || op.name == "close_position" {
        // Staging through a tool changes nothing on the account: both calls pass, and the proposal
        // the second one stages is what the supervisor approves, as if it came through propose.
        return match &call.confirm_token {
            None => crate::gateway::flow::forward::pass_through(gate, incoming).await,
            Some(_) => stage(gate, incoming, Exec::Confirm).await,
        };
    }
    match &call.confirm_token {
        Some(token) => decided(gate, incoming, ItemRef::ConfirmToken(token), token).await,
        None => stage(gate, incoming, Exec::Tool).await,
    }
}

/// The agent's own confirm of a proposal (`confirm_trade`, or `close_position` with a proposalId).
pub async fn confirm(gate: &Arc<Gate>, incoming: &Incoming) -> Result<Answer, GateError> {
    require_agent(incoming)?;
    let id = match incoming.parsed() {
        Parsed::Confirm(c) => Some(c.proposal_id.clone()),
        Parsed::Close(c) => c.proposal_id.clone(),
        _ => None,
    }
    .filter(|id| !id.trim().is_empty());
    let Some(id) = id else {
        return Err(GateError::new(
            Kind::Invalid,
            "invalid_body",
            "the body must be a JSON object with the proposalId that propose answered",
        )
        .with_field("proposalId"));
    };
    decided(gate, incoming, ItemRef::Proposal(&id), &id).await
}

/// Answers an agent's confirm from the item's decision: held while pending, the execution's answer
/// once approved (running it now if the gateway was waiting for this agent's key).
async fn decided(
    gate: &Arc<Gate>,
    incoming: &Incoming,
    which: ItemRef<'_>,
    shown: &str,
) -> Result<Answer, GateError> {
    let agent = require_agent(incoming)?;
    let now = gate.now();
    gate.store.expire_due(now).await.map_err(GateError::store)?;
    let item = gate
        .store
        .item(which)
        .await
        .map_err(GateError::store)?
        .ok_or_else(|| {
            GateError::new(
                Kind::Forbidden,
                "human_approval_required",
                format!(
                    "{shown} was not staged through this gateway, so no supervisor can approve it; \
                     stage it again through this gateway and the supervisor approves it in agentdesk"
                ),
            )
        })?;
    if item.agent != agent.hash {
        return Err(GateError::new(
            Kind::Forbidden,
            "proposal_key_mismatch",
            format!(
                "{shown} was staged with another API key; only that key receives its execution"
            ),
        ));
    }
    crate::gateway::flow::forward::remember(gate, agent).await;
    let item = match item.status {
        Status::Approved | Status::Executing => execute::execute(gate, &item.id).await?,
        _ => item,
    };
    answer_for(&item, shown, gate.now())
}

fn answer_for(item: &Item, shown: &str, now: DateTime<Utc>) -> Result<Answer, GateError> {
    match item.status {
        Status::Unknown => Err(GateError::new(
            Kind::Internal,
            "internal",
            format!("{shown} is in a state this gateway does not know"),
        )),
        Status::Pending => Err(GateError::new(
            Kind::Forbidden,
            "human_approval_required",
            format!(
                "{shown} waits for a supervisor's approval in agentdesk (until {}); once approved the gateway \
                 executes it and this call returns the execution",
                item.expires_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ),
        )),
        Status::Rejected => Err(GateError::new(
            Kind::Forbidden,
            "rejected_by_supervisor",
            format!(
                "the supervisor rejected {shown}: {}",
                item.reason.as_deref().unwrap_or("no reason given")
            ),
        )),
        Status::Expired => Err(GateError::new(
            Kind::Expired,
            "proposal_expired",
            format!(
                "{shown} expired at {} before a supervisor approved it; stage it again",
                item.expires_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ),
        )),
        Status::Approved | Status::Executing => {
            let mut e = GateError::new(
                Kind::Unavailable,
                "execution_pending",
                format!(
                    "{shown} is approved and not executed yet ({}); call again",
                    item.note
                        .as_ref()
                        .map_or("the execution is in progress".into(), Hold::to_string)
                ),
            );
            // Whole seconds, rounded up: a caller that waits this long finds the wait over.
            e.retry_after = retry_at(item)
                .filter(|t| *t > now)
                .map(|t| ((t - now).num_milliseconds() as u64).div_ceil(1000));
            Err(e)
        }
        Status::Executed | Status::Failed => Ok(stored_answer(item)),
    }
}

/// The upstream's answer to the execution, as it was.
fn stored_answer(item: &Item) -> Answer {
    match &item.result {
        Some(e) => Answer::Stored {
            status: Some(e.status)
                .filter(|s| (100..600).contains(s))
                .unwrap_or(200),
            body: e.body.clone(),
        },
        None => Answer::Stored {
            status: 200,
            body: Value::Null,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn times_are_read_in_every_shape_the_upstream_may_use() {
        let t: DateTime<Utc> = "2026-06-01T12:05:00Z".parse().unwrap();
        assert_eq!(parse_time(&json!("2026-06-01T12:05:00Z")), Some(t));
        assert_eq!(parse_time(&json!(t.timestamp())), Some(t));
        assert_eq!(parse_time(&json!(t.timestamp_millis())), Some(t));
        assert_eq!(parse_time(&json!(t.timestamp().to_string())), Some(t));
        assert_eq!(parse_time(&json!("soon")), None);
    }

    #[test]
    fn proposal_ids_are_found_at_the_top_or_in_a_wrapper() {
        assert_eq!(
            lookup_str(&json!({"proposalId": "p1"}), &["proposalId"]).as_deref(),
            Some("p1")
        );
        assert_eq!(
            lookup_str(&json!({"data": {"proposalId": 7}}), &["proposalId"]).as_deref(),
            Some("7")
        );
        assert_eq!(
            lookup_str(
                &json!({"result": {"confirmToken": "ct_1"}}),
                &["confirmToken"]
            )
            .as_deref(),
            Some("ct_1")
        );
        assert_eq!(
            lookup_str(&json!({"proposalId": ""}), &["proposalId"]),
            None
        );
        assert_eq!(kind_of(&json!({"action": "close_all"})), "close_all");
        assert_eq!(kind_of(&json!({"d": "close", "a": "BTCUSDT"})), "close");
        assert_eq!(kind_of(&json!({"d": "long"})), "trade");
    }
}
