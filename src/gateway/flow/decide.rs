//! A supervisor's decision on an item: an approval (one of the quorum a step-up item needs, or
//! the one that executes it) or a rejection.
//!
//! Every approval is one conditional write of the item's approvals, applied only if the item
//! still has the approvals it was read with. Two supervisors approving at the same moment (on
//! one instance or two on one PostgreSQL) both write or one reads again; the approval that
//! reaches the quorum is the write that also moves the item to executing, so it runs once.

use super::execute;
use super::guard;
use super::halt;
use super::items::{self, find};
use crate::api::model::GateApproval;
use crate::gateway::gate::Gate;
use crate::gateway::model::error::{GateError, Kind};
use crate::gateway::store::{Approvals, Item, Record, Status, Transition, detail};
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// Who decides: a supervisor (its token's label), from the supervisor API or through an approval
/// link it was sent. One supervisor is one approver whichever way it approves.
#[derive(Debug, Clone, Copy)]
pub struct Decider<'a> {
    pub label: &'a str,
    pub via_link: bool,
    /// The label is a supervisor's: false for a notification's link, which anyone who read the
    /// message holds, and so never counts towards a step-up quorum.
    pub named: bool,
}

impl Decider<'_> {
    /// The journal's actor and the item's `decidedBy`.
    pub fn actor(&self) -> String {
        match self.via_link {
            true => format!("via link by {}", self.label),
            false => self.label.to_string(),
        }
    }
}

/// Reads of an item an approval makes when others' approvals keep landing first. Each miss is
/// another supervisor's approval (at most a quorum of them) or the item moving on.
const ATTEMPTS: usize = 8;

/// A supervisor's approval. Of an item that needs one approval, or the last of a step-up item's
/// quorum: pending → approved (once), then the execution. Short of the quorum: the approval is
/// recorded and the item stays pending. Approving an item that is already approved or executed
/// answers its state, so a repeated click is harmless.
///
/// A pending item is checked again first, against the account as it is now: while the kill switch
/// is on, or its agent is suspended, only reducing items pass, and a rule the item now breaks
/// refuses the approval unless `overrides` names it (or an earlier approval of the item did).
/// The same supervisor approving twice is 409 `already_approved`; the supervisor who staged a
/// step-up item never counts towards it (409 `own_staging`).
pub async fn approve(
    gate: &Arc<Gate>,
    id: &str,
    who: Decider<'_>,
    overrides: &[String],
) -> Result<Item, GateError> {
    gate.store
        .expire_due(gate.now())
        .await
        .map_err(GateError::store)?;
    for _ in 0..ATTEMPTS {
        // Each attempt at its own time: the expiry is judged when its write goes.
        let now = gate.now();
        let item = find(gate, id).await?;
        if let Some(done) = approve_once(gate, item, who, overrides, now).await? {
            return Ok(done);
        }
    }
    Err(GateError::new(
        Kind::Conflict,
        "approval_contended",
        format!("item {id} kept changing while the approval was recorded; approve it again"),
    ))
}

/// One attempt: `None` when the item changed since it was read (another approval landed first).
async fn approve_once(
    gate: &Arc<Gate>,
    item: Item,
    who: Decider<'_>,
    overrides: &[String],
    now: DateTime<Utc>,
) -> Result<Option<Item>, GateError> {
    let by = &who.actor();
    // Where an approval's time goes, in its log line: the store's reads, the rules (the store
    // and the upstream's account figures), and the one commit of the decision with its journal.
    let started = std::time::Instant::now();
    if item.status != Status::Pending {
        return settled(gate, &item.id).await.map(Some);
    }
    let digest = guard::item_digest(&item);
    let trade = guard::item_trade(gate, &item).await.map_err(|why| {
        GateError::new(
            Kind::Conflict,
            "unclassifiable_item",
            format!(
                "item {} cannot be judged ({why}); it is not approved: the agent can stage it again",
                item.id
            ),
        )
    })?;
    // A pending item that trades nothing the gateway can tell still waits on the agent.
    if trade.is_none()
        && let Some(e) = halt::halted(gate, &item.agent, None).await?
    {
        return Err(e);
    }
    let read = started.elapsed();
    let mut required = item.approvals_required;
    let mut overridden: Vec<String> = Vec::new();
    let mut record = Record::new(
        "approve",
        by,
        now,
        detail::Approved {
            trade_digest: &digest,
        },
    );
    if let Some(trade) = &trade {
        // The kill switch, the agent's suspension and the rules are read at once (each a round
        // trip on a shared store). A stop is the answer, and ends the check where it is: the
        // account figures a rule may be reading upstream are not waited for.
        let halted = halt::halted(gate, &item.agent, Some(trade));
        let check = guard::check(gate, &item.agent, trade, guard::Phase::Approval);
        tokio::pin!(halted, check);
        let judged = tokio::select! {
            biased;
            halted = &mut halted => match halted? {
                Some(e) => return Err(e),
                None => check.await?,
            },
            judged = &mut check => match halted.await? {
                Some(e) => return Err(e),
                None => judged?,
            },
        };
        // The step is judged on the trade that will execute, and never asks for fewer people
        // than the item was staged with.
        required = required.max(judged.approvals_required);
        let verdicts = judged.verdicts;
        // Every approval overrides, itself, what the trade breaks when it is given: an earlier
        // admin's override judged the trade as it was then, not as it is now.
        let broken: Vec<&str> = verdicts.iter().filter(|v| !v.ok).map(|v| v.rule).collect();
        let missing: Vec<&str> = broken
            .iter()
            .copied()
            .filter(|r| !overrides.iter().any(|o| o == r))
            .collect();
        if !missing.is_empty() {
            let mut e = guard::violation(&verdicts).expect("a rule is broken");
            e.message = format!(
                "{}; approving anyway needs an explicit override: {{\"override\": [{}]}}",
                e.message,
                missing
                    .iter()
                    .map(|r| format!("\"{r}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return Err(e);
        }
        overridden = broken
            .iter()
            .filter(|r| overrides.iter().any(|o| o == *r))
            .map(|r| r.to_string())
            .collect();
        let quorum = (required > 1).then(|| detail::Quorum {
            approvals: item.approvals.len() + 1,
            required,
        });
        let detail = detail::Judged {
            verdicts: &verdicts,
            overridden: &broken,
            trade: Some(trade),
            trade_digest: &digest,
            quorum,
        };
        record = if broken.is_empty() {
            Record::new("approve", by, now, detail)
        } else {
            Record::new("override", by, now, detail)
        };
    }
    if required > 1 {
        if !who.named {
            return Err(GateError::new(
                Kind::Forbidden,
                "approval_not_named",
                format!(
                    "item {} needs {required} distinct supervisors' approvals, and this link \
                     (sent with the notification to every destination) names nobody: approve it \
                     in agentdesk, or with a link a supervisor minted",
                    item.id
                ),
            ));
        }
        refuse_repeat(&item, who.label, required)?;
    }
    let record = record.item(&item.id);
    let judged = started.elapsed();
    let mut approvals = item.approvals.clone();
    approvals.push(GateApproval {
        by: who.label.to_string(),
        at: now,
        overrides: overridden,
    });
    let reached = approvals.len() >= required as usize;
    let count = approvals.len();
    let approvals = Some(Approvals {
        seen: item.approvals.len(),
        now: approvals,
        required,
    });
    // When the gateway holds the agent's key, the approval that reaches the quorum is also the
    // claim of the item's run: one commit before the confirm goes (one fsync on PostgreSQL, not
    // two), and no other instance can claim it in between. Without the key it waits, approved.
    let key = gate.key_of(&item.agent);
    let to = match (reached, &key) {
        (false, _) => Status::Pending,
        (true, Some(_)) => Status::Executing,
        (true, None) => Status::Approved,
    };
    let t = Transition {
        unexpired_at: Some(now),
        decided_by: reached.then(|| by.to_string()),
        approvals,
        ..Transition::new(&[Status::Pending], to, now)
    }
    .journaled(record);
    if !gate
        .store
        .transition(&item.id, t)
        .await
        .map_err(GateError::store)?
    {
        // Another approval, a rejection or the expiry got there first: read it again.
        let now_item = find(gate, &item.id).await?;
        return match now_item.status {
            Status::Pending => Ok(None),
            _ => settled(gate, &item.id).await.map(Some),
        };
    }
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    tracing::info!(
        item = %item.id,
        by,
        approvals = count,
        required,
        read_ms = ms(read),
        rules_ms = ms(judged - read),
        commit_ms = ms(started.elapsed() - judged),
        "approved"
    );
    if !reached {
        // The other supervisors hear it still waits, and for whom.
        items::notify_pending(gate, &item.id).await;
        return find(gate, &item.id).await.map(Some);
    }
    match key {
        Some(key) => execute::run_claimed(gate, item, key).await.map(Some),
        // Without the agent's key it waits, approved: the execution says so on the item (an
        // instance holding the key runs it at its next poll).
        None => settled(gate, &item.id).await.map(Some),
    }
}

/// 409 for a supervisor whose approval would not count: one already given, or the item's own.
fn refuse_repeat(item: &Item, by: &str, required: u32) -> Result<(), GateError> {
    let so_far = || crate::api::model::quorum(&item.approvals, required).unwrap_or_default();
    if item.approvals.iter().any(|a| a.by == by) {
        return Err(GateError::new(
            Kind::Conflict,
            "already_approved",
            format!(
                "{by} already approved item {}: it has {} and needs another supervisor's",
                item.id,
                so_far()
            ),
        ));
    }
    if item.staged_by.as_deref() == Some(by) {
        return Err(GateError::new(
            Kind::Conflict,
            "own_staging",
            format!(
                "{by} staged item {} and does not count towards its {required} approvals ({}); \
                 other supervisors approve it",
                item.id,
                so_far()
            ),
        ));
    }
    Ok(())
}

/// The answer to an approval of an item that is no longer pending: an approved or claimed one
/// runs (a second approve of an approved item is what runs it once its key is known), a decided
/// one says how it ended.
async fn settled(gate: &Arc<Gate>, id: &str) -> Result<Item, GateError> {
    let item = find(gate, id).await?;
    match item.status {
        Status::Approved | Status::Executing => execute::execute(gate, &item.id).await,
        Status::Rejected => Err(GateError::new(
            Kind::Conflict,
            "already_rejected",
            format!(
                "item {} was rejected; the agent can stage it again",
                item.id
            ),
        )),
        Status::Expired => Err(GateError::new(
            Kind::Expired,
            "proposal_expired",
            format!("item {} expired before it was approved", item.id),
        )),
        _ => Ok(item),
    }
}

/// A supervisor's rejection, with the reason the agent will be told.
pub async fn reject(
    gate: &Arc<Gate>,
    id: &str,
    who: Decider<'_>,
    reason: String,
) -> Result<Item, GateError> {
    let by = &who.actor();
    let now = gate.now();
    gate.store.expire_due(now).await.map_err(GateError::store)?;
    let item = find(gate, id).await?;
    let record = Record::new("reject", by, now, detail::Reason { reason: &reason }).item(&item.id);
    let t = Transition {
        decided_by: Some(by.to_string()),
        reason: Some(reason),
        ..Transition::new(&[Status::Pending, Status::Approved], Status::Rejected, now)
    }
    .journaled(record);
    if gate
        .store
        .transition(&item.id, t)
        .await
        .map_err(GateError::store)?
    {
        tracing::info!(item = %item.id, by, "rejected");
        return find(gate, &item.id).await;
    }
    let item = find(gate, &item.id).await?;
    match item.status {
        Status::Rejected => Ok(item),
        other => Err(GateError::new(
            Kind::Conflict,
            "already_decided",
            format!(
                "item {} is {} and can no longer be rejected",
                item.id,
                other.as_str()
            ),
        )),
    }
}
