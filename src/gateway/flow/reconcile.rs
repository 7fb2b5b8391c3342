//! At start, before the gateway serves: what became of the items a stopped gateway left executing
//! (killed between sending the confirm and recording the answer). The service is asked with the
//! gateway's own key for the account; what it says is recorded, so a trade that executed is never
//! shown as waiting, failed or approvable again. What nobody can tell stays approved with its
//! outcome unknown, and the agent's next request asks the service again (it runs a proposal at
//! most once, and answers "already executed" when it had).

use crate::api::catalog;
use crate::api::model::{Proposal, Proposals};
use crate::gateway::gate::Gate;
use crate::gateway::model::error::GateError;
use crate::gateway::store::{Exec, Execution, Hold, Item, Record, Status, Transition, detail};
use std::collections::HashMap;
use std::sync::Arc;

/// What the service's proposals say about the items left executing, by proposal id. Empty when
/// the gateway has no key of its own or the service keeps no list (the real deployment).
pub(super) async fn proposals(gate: &Gate) -> HashMap<String, Proposal> {
    let Some(key) = gate.upstream.key.as_ref() else {
        return HashMap::new();
    };
    let op = catalog::op("list_proposals");
    let answer = match gate.upstream.get_json(op, key).await {
        Ok(a) if a.is_success() => a,
        Ok(a) => {
            tracing::info!(
                status = a.status.as_u16(),
                "the service lists no proposals; recovered items keep an unknown outcome"
            );
            return HashMap::new();
        }
        Err(e) => {
            tracing::warn!(
                "cannot ask the service about recovered items: {}",
                e.message
            );
            return HashMap::new();
        }
    };
    serde_json::from_slice::<Proposals>(&answer.body)
        .map(|p| {
            p.proposals
                .into_iter()
                .map(|p| (p.proposal_id.clone(), p))
                .collect()
        })
        .unwrap_or_default()
}

/// Settles every item the start recovered from `executing`; returns how many it settled.
pub async fn settle_recovered(gate: &Arc<Gate>) -> Result<usize, GateError> {
    let recovered: Vec<Item> = gate
        .store
        .items(Some(Status::Approved), 10_000)
        .await
        .map_err(GateError::store)?
        .into_iter()
        .filter(|i| i.note == Some(Hold::Recovered))
        .collect();
    if recovered.is_empty() {
        return Ok(0);
    }
    let known = proposals(gate).await;
    let mut settled = 0;
    for item in &recovered {
        let said = match item.exec {
            Exec::Confirm | Exec::Close => item.proposal_id.as_ref().and_then(|p| known.get(p)),
            // A confirm token is not listed anywhere: its re-submission tells.
            Exec::Tool => None,
        };
        if settle(gate, item, said).await? {
            settled += 1;
        }
    }
    tracing::info!(
        recovered = recovered.len(),
        settled,
        "reconciled the items a stopped gateway left executing"
    );
    Ok(settled)
}

async fn settle(gate: &Gate, item: &Item, said: Option<&Proposal>) -> Result<bool, GateError> {
    let now = gate.now();
    // Read as text, in any case: other deployments spell an execution `filled` and a staging
    // `pending`, and the service's record is what settles the item.
    let status = said.map(|p| p.status.as_str().to_ascii_lowercase());
    let detail = |outcome| detail::Reconciled {
        outcome,
        service_status: status.as_deref(),
        proposal_id: item.proposal_id.as_deref(),
    };
    let t = match status.as_deref() {
        // The service's record is the execution's result, whichever way it ended.
        Some(said_status @ ("executed" | "filled" | "failed")) => {
            let (to, note, outcome) = if said_status == "failed" {
                (Status::Failed, None, "failed")
            } else {
                (Status::Executed, Some(Hold::ExecutedBeforeStop), "executed")
            };
            Transition {
                result: Some(Execution {
                    status: 200,
                    body: serde_json::to_value(said).unwrap_or_default(),
                    reconciled: true,
                }),
                note,
                ..Transition::new(&[Status::Approved], to, now)
            }
            .journaled(Record::new("reconcile", "gateway", now, detail(outcome)).item(&item.id))
        }
        Some("expired") => Transition::new(&[Status::Approved], Status::Expired, now)
            .journaled(Record::new("reconcile", "gateway", now, detail("expired")).item(&item.id)),
        Some("staged" | "pending") => Transition {
            note: Some(Hold::NotRun),
            ..Transition::new(&[Status::Approved], Status::Approved, now)
        }
        .journaled(Record::new("reconcile", "gateway", now, detail("not_run")).item(&item.id)),
        _ => Transition {
            note: Some(Hold::OutcomeUnknown),
            ..Transition::new(&[Status::Approved], Status::Approved, now)
        }
        .journaled(Record::new("reconcile", "gateway", now, detail("unknown")).item(&item.id)),
    };
    let to = t.to;
    let moved = super::items::settle(gate, item, t).await?;
    Ok(moved && to != Status::Approved)
}
