//! The service's proposals in the inbox: its list merged in (and this console's own stagings), an
//! expiry noted once, a confirm's answer, and a confirm that got no answer settled by what the
//! service's records say became of it.

use super::context::InboxCtx;
use super::{
    DecisionKind, Evidence, Inbox, InboxItem, LocalState, Outcome, START_SLACK, Source, Status,
    describe_preview, execution_summary_in, outcome, outcome_of, staged, tool_outcome,
};
use crate::api::ApiError;
use crate::api::model::{ExecutionResult, Proposal, ProposalStatus, TradeSignal};
use crate::console::action::{Effect, Resource};
use crate::console::component::{Ask, ToastLevel};
use crate::console::decider::{Answered, Decider};
use crate::console::poll::to_delta;
use chrono::{DateTime, Utc};

impl Inbox {
    pub(crate) fn merge_proposals(&mut self, list: Vec<Proposal>, ctx: &mut InboxCtx) {
        let now = ctx.now;
        let mut fresh = 0;
        let mut waiting = 0;
        let mut settle = Vec::new();
        for p in list {
            // Another agent's, while the gateway inbox shows one agent's items only.
            if self.gate.hides(&p.proposal_id) {
                continue;
            }
            let unanswered = self.unanswered(&p.proposal_id);
            if let Some(item) = self.item_mut(&p.proposal_id) {
                // A confirm this console is waiting for decides the local state, not a poll; a
                // confirm that got no answer is settled by what the list says. One found staged
                // may still run later (it was queued on a paused service): then it is this
                // console's approval after all.
                if unanswered
                    && item.local == LocalState::None
                    && p.status == ProposalStatus::Executed
                {
                    item.local = LocalState::Unknown {
                        error: "the confirm that got no answer ran after all".into(),
                        checking: true,
                    };
                }
                if matches!(item.local, LocalState::Unknown { .. }) {
                    settle.push((p.proposal_id.clone(), outcome_of(&p)));
                }
                item.merge(p);
                continue;
            }
            let new = self.first_sight(p.proposal_id.clone());
            let mut item = InboxItem {
                proposal: p,
                source: Source::Service,
                local: LocalState::None,
                first_seen: now,
                expiry_noted: false,
                tool: None,
                request: None,
            };
            // Only what this console showed live is journaled: one first seen already expired
            // (a fresh console listing old proposals) was never the supervisor's to decide.
            item.expiry_noted = item.status(now) == Status::Expired;
            // What was decided stays decided: a dismissal before a restart is still one.
            self.reapply(&mut item);
            // Staged before this console started (a restart): it was waiting, not new — said
            // once for all of them, without the bell, as on a gateway.
            let before_start = item
                .proposal
                .created_at
                .is_some_and(|c| c < self.started_at() - START_SLACK);
            if new && item.status(now) == Status::Staged && before_start {
                waiting += 1;
            } else if new && item.status(now) == Status::Staged {
                fresh += 1;
                ctx.toast(
                    format!("New proposal: {}", item.describe()),
                    ToastLevel::Info,
                );
            }
            self.push(item);
        }
        if fresh > 0 && ctx.bell {
            ctx.fx.push(Effect::Bell);
        }
        self.say_waiting(waiting, ctx);
        self.sort();
        for (id, found) in settle {
            self.settle_unknown(&id, found, ctx);
        }
    }

    /// The one start-up line, on every setup: how many items staged before this console started
    /// are waiting (they were not rung in as new).
    pub(crate) fn say_waiting(&self, waiting: usize, ctx: &mut InboxCtx) {
        if waiting > 0 {
            ctx.toast(
                format!(
                    "{waiting} item{} staged before this console started {} waiting in the inbox",
                    if waiting == 1 { "" } else { "s" },
                    if waiting == 1 { "is" } else { "are" }
                ),
                ToastLevel::Info,
            );
        }
    }

    pub(crate) fn note_expiries(&mut self, ctx: &mut InboxCtx) {
        let now = ctx.now;
        let mut expired = Vec::new();
        for item in self.items_mut() {
            if !item.expiry_noted && item.status(now) == Status::Expired {
                item.expiry_noted = true;
                expired.push((item.id().to_string(), item.describe()));
            }
        }
        for (id, summary) in expired {
            self.decide(
                &id,
                DecisionKind::Expired,
                summary,
                "not approved in time".into(),
                ctx,
            );
        }
    }

    pub(crate) fn on_proposed(
        &mut self,
        signal: &TradeSignal,
        result: Result<Box<Proposal>, ApiError>,
        at: DateTime<Utc>,
        ctx: &mut InboxCtx,
    ) {
        match result {
            Ok(mut p) => {
                // The deployment's answer may carry only an id and a few venue fields: what
                // we asked for fills the rest, so the row, the dialog and the journal say what
                // is staged.
                p.preview = staged::complete(signal, &p.preview);
                if p.status.is_unsaid() {
                    p.status = ProposalStatus::Staged;
                }
                // The interface says a proposal expires 5 minutes after staging; an answer
                // without `expiresAt` gets that, counted from its arrival (the service's clock
                // may run out up to one round trip earlier).
                if p.expires_at.is_none() {
                    p.expires_at = Some(at + chrono::Duration::minutes(5));
                }
                let text = format!(
                    "Staged {}: {}",
                    p.proposal_id,
                    describe_preview(&p.preview, &p.proposal_id)
                );
                self.first_sight(p.proposal_id.clone());
                match self.item_mut(&p.proposal_id) {
                    Some(item) => {
                        item.request = Some(Box::new(signal.clone()));
                        item.merge(*p);
                    }
                    None => {
                        self.push(InboxItem {
                            proposal: *p,
                            source: Source::Console,
                            local: LocalState::None,
                            first_seen: at,
                            expiry_noted: false,
                            tool: None,
                            request: Some(Box::new(signal.clone())),
                        });
                        self.sort();
                    }
                }
                ctx.toast(text, ToastLevel::Info);
            }
            Err(e) => {
                let what = signal
                    .a
                    .clone()
                    .or(signal.action.clone())
                    .unwrap_or_default();
                ctx.toast(format!("Propose {what} failed: {e}"), ToastLevel::Error);
            }
        }
        ctx.ask(Ask::Poll(&[Resource::Proposals, Resource::Usage], at));
    }

    pub(crate) fn on_confirmed(
        &mut self,
        id: &str,
        result: Result<Box<ExecutionResult>, ApiError>,
        at: DateTime<Utc>,
        ctx: &mut InboxCtx,
    ) {
        let summary = self.described(id);
        match result {
            Ok(done) => {
                let coin = self.item(id).map(|i| i.proposal.preview.coin.clone());
                let text = execution_summary_in(&done, coin.as_deref());
                if let Some(item) = self.item_mut(id) {
                    item.local = LocalState::Approved(text.clone());
                    item.proposal.status = ProposalStatus::Executed;
                }
                ctx.toast(format!("Approved {id}: {text}"), ToastLevel::Info);
                self.decide(id, DecisionKind::Approved, summary, text, ctx);
            }
            Err(e) if Decider::Service.read_error(&e) == Answered::AlreadyExecuted => {
                // Our own confirm was answered "already executed": it executed. What it did is
                // read from the service's records before anything is said or journaled.
                let text = e.to_string();
                if let Some(item) = self.item_mut(id) {
                    item.local = LocalState::Unknown {
                        error: text.clone(),
                        checking: true,
                    };
                }
                self.note_said_executed(id);
                self.recheck_at(at);
                ctx.toast(
                    format!(
                        "Confirm {id}: the service says it already executed ({text}) — reading {} for what it did",
                        Decider::Service.outcome_source()
                    ),
                    ToastLevel::Info,
                );
            }
            Err(e) if self.outcome_unknown(id, &e) => {
                let text = e.to_string();
                if let Some(item) = self.item_mut(id) {
                    item.local = LocalState::Unknown {
                        error: text.clone(),
                        checking: true,
                    };
                }
                self.note_unanswered(id);
                self.recheck_at(at);
                ctx.toast(Decider::Service.open_outcome(id, &e), ToastLevel::Error);
            }
            // The service asked to wait: nothing executed, the proposal is still staged. It is
            // approved again by hand after the wait, never re-sent from here.
            Err(ApiError::QuotaExceeded {
                retry_after,
                message,
            }) => {
                let until = at + to_delta(retry_after);
                ctx.ask(Ask::HoldPosts(until));
                if let Some(item) = self.item_mut(id)
                    && item.local == LocalState::Confirming
                {
                    item.local = LocalState::None;
                }
                self.limit(id, until, message.clone());
                ctx.toast(
                    format!(
                        "{id} not confirmed: rate limited — retry in {} s ({message}). Nothing \
                         executed and it is still staged: a then y approves it after the wait",
                        retry_after.as_secs()
                    ),
                    ToastLevel::Error,
                );
            }
            Err(e) => {
                let text = e.to_string();
                if let Some(item) = self.item_mut(id) {
                    item.local = LocalState::Failed(text.clone());
                }
                ctx.toast(format!("Confirm {id} failed: {text}"), ToastLevel::Error);
                self.decide(id, DecisionKind::Failed, summary, text, ctx);
            }
        }
        // What the confirm changed shows up now, not at the next scheduled poll.
        ctx.ask(Ask::Poll(&Resource::TRADED, at));
        ctx.ask(Ask::Poll(&[Resource::Proposals, Resource::Usage], at));
    }

    /// A confirm that got no answer may have executed: the request may have reached the service
    /// before the connection failed. So may one the service calls already executed, when an
    /// earlier confirm of this console got no answer.
    fn outcome_unknown(&self, _id: &str, e: &ApiError) -> bool {
        Decider::Service.read_error(e) == Answered::Open
    }

    pub(crate) fn on_reconciled(
        &mut self,
        evidence: &Evidence,
        at: DateTime<Utc>,
        ctx: &mut InboxCtx,
    ) {
        self.rechecked(at);
        if evidence.unreachable() {
            return;
        }
        let ids: Vec<String> = self
            .items()
            .iter()
            .filter(|i| matches!(i.local, LocalState::Unknown { checking: true, .. }))
            .map(|i| i.id().to_string())
            .collect();
        for id in ids {
            if let Some(Ok(list)) = &evidence.proposals
                && let Some(p) = list.iter().find(|p| p.proposal_id == id)
                && let Some(item) = self.item_mut(&id)
            {
                item.merge(p.clone());
            }
            let Some((staged_at, tool)) = self.item(&id).map(|i| {
                (
                    i.proposal.created_at.unwrap_or(i.first_seen),
                    i.tool.as_ref().map(|t| t.tool.clone()),
                )
            }) else {
                continue;
            };
            let found = match tool {
                Some(tool) => tool_outcome(&tool, staged_at, evidence),
                None => outcome(&id, staged_at, evidence),
            };
            self.settle_unknown(&id, found, ctx);
        }
    }

    /// What the service's records said of a confirm that got no answer.
    fn settle_unknown(&mut self, id: &str, found: Outcome, ctx: &mut InboxCtx) {
        let now = ctx.now;
        let Some(item) = self.item_mut(id) else {
            return;
        };
        let LocalState::Unknown { error, .. } = &item.local else {
            return;
        };
        let error = error.clone();
        let summary = item.describe();
        // The service answered our own confirm "already executed": it did execute, whatever
        // else its records can or cannot say.
        let found = match found {
            Outcome::NotExecuted | Outcome::Unknown if self.said_executed(id) => {
                Outcome::Executed(format!(
                    "executed (the service answered this console's confirm: {error}; its records \
                     do not say more)"
                ))
            }
            other => other,
        };
        self.forget_said_executed(id);
        let Some(item) = self.item_mut(id) else {
            return;
        };
        match found {
            Outcome::Executed(text) => {
                item.local = LocalState::Approved(text.clone());
                item.proposal.status = ProposalStatus::Executed;
                self.forget_unanswered(id);
                ctx.toast(
                    format!("Confirm {id} did execute: {text}"),
                    ToastLevel::Info,
                );
                self.decide(id, DecisionKind::Approved, summary, text, ctx);
            }
            Outcome::Failed(text) => {
                item.local = LocalState::Failed(text.clone());
                self.forget_unanswered(id);
                ctx.toast(format!("Confirm {id} failed: {text}"), ToastLevel::Error);
                self.decide(id, DecisionKind::Failed, summary, text, ctx);
            }
            Outcome::NotExecuted => {
                item.local = LocalState::None;
                let text = if item.service_status(now) == Status::Staged {
                    format!(
                        "{id} did not execute: the confirm never reached the service. It is still \
                         staged: a then y approves it again"
                    )
                } else {
                    format!("{id} did not execute, and its time is over")
                };
                ctx.toast(text, ToastLevel::Info);
            }
            Outcome::Unknown => {
                // Nothing can execute it any more, and the records will not say: stop asking.
                if item
                    .remaining(now)
                    .is_some_and(|r| r <= chrono::TimeDelta::zero())
                {
                    item.local = LocalState::Unknown {
                        error,
                        checking: false,
                    };
                    ctx.toast(
                        format!(
                            "The service cannot tell whether {id} executed (its records do not \
                             say): check the positions"
                        ),
                        ToastLevel::Error,
                    );
                }
            }
        }
    }
}
