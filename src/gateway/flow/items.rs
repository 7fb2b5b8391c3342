//! Inbox items as the supervisor sees them: the typed model of the supervisor API
//! ([`GateItem`]), with the trade that will execute and the digest an approval binds to, and the
//! notification that tells the `[[notify]]` destinations an item waits for a human.

use super::guard;
use super::link;
use crate::api::model::{GateItem, GateTrade, GateVerdict};
use crate::gateway::gate::Gate;
use crate::gateway::gate::memory::Derivation;
use crate::gateway::model::error::{GateError, Kind};
use crate::gateway::model::trade::{PricedBy, Trade};
use crate::gateway::store::{Agent, Hold, Item, ItemRef, Status, Transition};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// What the inbox shows of an item that never changes once it is staged, derived once.
fn derived(gate: &Gate, item: &Item) -> Arc<Derivation> {
    gate.derived.get_or_derive(&item.id, || {
        let (trade, trade_error) = match guard::item_trade_offline(gate, item) {
            Ok(t) => (t.as_ref().map(GateTrade::from), None),
            Err(why) => (None, Some(why.to_string())),
        };
        Derivation {
            trade,
            trade_error,
            digest: guard::item_digest(item),
            verdicts: item.verdicts.clone().unwrap_or_default(),
        }
    })
}

/// 404, naming the id asked for.
pub fn not_found(id: &str) -> GateError {
    GateError::new(
        Kind::NotFound,
        "not_found",
        format!("no inbox item with id or proposalId {id:?}"),
    )
}

/// The item with this id (or this proposalId), or 404 naming it.
pub async fn find(gate: &Gate, id: &str) -> Result<Item, GateError> {
    gate.store
        .item(ItemRef::IdOrProposal(id))
        .await
        .map_err(GateError::store)?
        .ok_or_else(|| not_found(id))
}

/// When an item the upstream rate-limited may run again, from its note.
pub fn retry_at(item: &Item) -> Option<DateTime<Utc>> {
    match item.note {
        Some(Hold::RateLimited { until }) => Some(until),
        _ => None,
    }
}

/// Moves an item out of execution, and counts an execution's notional against the agent's daily
/// limit once, by whoever's move it was. True when this call moved it.
pub async fn settle(gate: &Gate, item: &Item, t: Transition) -> Result<bool, GateError> {
    let (to, now) = (t.to, t.now);
    let moved = gate
        .store
        .transition(&item.id, t)
        .await
        .map_err(GateError::store)?;
    if moved && to == Status::Executed {
        // One that cannot be read as a trade counts as adding exposure.
        let adds = guard::item_trade_offline(gate, item)
            .ok()
            .flatten()
            .is_none_or(|t| !t.reduces);
        if item.notional.is_some() || adds {
            guard::count_execution(gate, &item.agent, now, item.notional).await?;
        }
    }
    Ok(moved)
}

/// The known agents by key hash, for labelling items.
pub async fn agent_map(gate: &Gate) -> Result<HashMap<String, Agent>, GateError> {
    Ok(gate
        .store
        .agents()
        .await
        .map_err(GateError::store)?
        .into_iter()
        .map(|a| (a.key_hash.clone(), a))
        .collect())
}

impl From<&Trade> for GateTrade {
    fn from(t: &Trade) -> Self {
        GateTrade {
            operation: t.operation.clone(),
            coin: t.coin.clone(),
            side: t.side.clone(),
            size: t.size,
            notional: t.notional,
            leverage: t.leverage,
            stop_loss: t.stop_loss,
            reduces: t.reduces,
            removes_stop_loss: t.removes_stop_loss,
            priced_by: match t.priced_by {
                PricedBy::Preview => "preview",
                PricedBy::Request => "request",
            }
            .to_string(),
            unknown: t.unknown.clone(),
            disagreements: t.disagreements.clone(),
        }
    }
}

/// An item as the supervisor API answers it. The trade is priced without asking the service
/// (a listing must not cost an upstream call per item): a value only the live account states
/// shows as unknown here, and is read live when the item is approved.
pub fn model(gate: &Gate, item: &Item, agents: &HashMap<String, Agent>) -> GateItem {
    model_with(gate, item, agents, gate.knows(&item.agent))
}

/// [`model`], with whether the gateway holds the agent's key given (an inbox listing decides it
/// once for every item it writes, and keeps it with what it wrote).
pub fn model_with(
    gate: &Gate,
    item: &Item,
    agents: &HashMap<String, Agent>,
    key_held: bool,
) -> GateItem {
    let agent = agents.get(&item.agent);
    // A note that says more (an outcome unknown, a wait the service asked for) already says
    // what happens next; waiting for the key is the note of an item that has none.
    let note = match (item.status, &item.note) {
        (Status::Approved, None) if !key_held => Some(Hold::WaitingForKey),
        (_, note) => note.clone(),
    };
    let derived = derived(gate, item);
    GateItem {
        id: item.id.clone(),
        agent: agent
            .map(Agent::label)
            .unwrap_or(&item.agent[..8])
            .to_string(),
        agent_fingerprint: item.agent[..8].to_string(),
        account: item.account.clone(),
        kind: item.kind.clone(),
        status: item.status,
        proposal_id: item.proposal_id.clone(),
        request: item.request.clone(),
        preview: item.preview.clone(),
        expires_at: Some(item.expires_at),
        created_at: Some(item.created_at),
        decided_at: item.decided_at,
        decided_by: item.decided_by.clone(),
        reason: item.reason.clone(),
        result: item
            .result
            .as_ref()
            .map(crate::gateway::store::Execution::json),
        note,
        verdicts: derived.verdicts.clone(),
        standing_approval: item.standing,
        notional: item.notional,
        trade: derived.trade.clone(),
        trade_error: derived.trade_error.clone(),
        trade_digest: Some(derived.digest.clone()),
        approvals: item.approvals.clone(),
        approvals_required: item.approvals_required,
        staged_by: item.staged_by.clone(),
        extra: Default::default(),
    }
}

/// Tells the `[[notify]]` destinations about an item that now waits for a human.
pub async fn notify_pending(gate: &Gate, id: &str) {
    let Ok(Some(item)) = gate.store.item(ItemRef::IdOrProposal(id)).await else {
        return;
    };
    let Ok(agents) = agent_map(gate).await else {
        return;
    };
    let v = model(gate, &item, &agents);
    let expires = item
        .expires_at
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let what = v
        .trade
        .as_ref()
        .and_then(|t| t.coin.clone())
        .or_else(|| {
            item.request
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_default();
    let notional = v
        .trade
        .as_ref()
        .and_then(|t| t.notional)
        .or(item.notional)
        .map(|n| format!(" {n:.0} USD"))
        .unwrap_or_default();
    let near: Vec<&str> = v
        .verdicts
        .iter()
        .filter(|v| v.near)
        .map(|v| v.rule.as_str())
        .collect();
    let text = format!(
        "agentdesk: {} staged {} {}{}, waiting for {} until {}{}",
        v.agent,
        item.kind,
        what,
        notional,
        approvals_wanted(&v),
        expires,
        if near.is_empty() {
            String::new()
        } else {
            format!(" (near its limit: {})", near.join(", "))
        }
    );
    let link = link::for_notification(gate, &item).await;
    let text = match &link {
        Some(url) => format!("{text}. Approve or reject: {url}"),
        None => text,
    };
    /// The `gate.item.pending` notification (README "Notifications").
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Pending<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        text: String,
        item: GateItem,
        verdicts: Option<&'a [GateVerdict]>,
        expires_at: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        approve_url: Option<String>,
    }
    let body = Pending {
        kind: "gate.item.pending",
        text,
        item: v,
        verdicts: item.verdicts.as_deref(),
        expires_at: expires,
        approve_url: link,
    };
    // Each approval short of the quorum tells the supervisors again, as a message of its own.
    let id = match item.approvals.len() {
        0 => format!("msg_{}", item.id),
        n => format!("msg_{}_{n}", item.id),
    };
    gate.notifier
        .send(id, serde_json::to_value(body).unwrap_or_default());
}

/// What a pending item waits for, in a notification: "approval", or "approval, 1 of 2
/// approvals (alice),".
fn approvals_wanted(item: &GateItem) -> String {
    match crate::api::model::quorum(&item.approvals, item.approvals_required) {
        None => "approval".into(),
        Some(q) => format!("approval, {q},"),
    }
}
