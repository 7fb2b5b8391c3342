//! App's part of the inbox: merging the service's list, expiries, approve and reject, and their
//! answers (upper layer: it changes `App`).

use crate::api::ApiError;
use crate::api::model::{Proposal, ProposalStatus, TradeSignal};
use crate::console::action::{Effect, Resource};
use crate::console::app::App;
use crate::console::app::ToastLevel;
use crate::console::decider::{Answered, Decider};
use crate::console::inbox::dialog::ApproveDialog;
use crate::console::inbox::{
    DecisionKind, Evidence, InboxItem, LocalState, Outcome, PaneSelection, START_SLACK, Source,
    Status, describe_preview, execution_summary, outcome, outcome_of, staged, tool_outcome,
};
use crate::console::layout::Pane;
use crate::console::modal::{Confirm, Deciding, Modal};
use crate::console::poll::to_delta;
use crate::console::tab::Tab;
use chrono::{DateTime, Utc};
use serde_json::json;

impl App {
    /// How decisions on inbox item `id` are made (see `InboxShown::decider_for`).
    pub fn decider_for(&self, id: &str) -> Decider {
        self.inbox_shown().decider_for(id)
    }

    /// How this console decides, for what is not one item's (the feeds it polls).
    pub fn decider(&self) -> Decider {
        self.inbox_shown().decider()
    }

    pub fn item(&self, id: &str) -> Option<&InboxItem> {
        self.inbox.item(id)
    }

    /// An item as messages name it, or its id once it is gone from the inbox.
    pub fn described(&self, id: &str) -> String {
        self.item(id)
            .map(|i| i.describe())
            .unwrap_or_else(|| id.to_string())
    }

    /// The inbox pane the approve, reject and undo keys act in: on the Desk its strip (the only
    /// inbox it shows, whichever pane has the focus), elsewhere the Proposals list.
    pub fn inbox_pane(&self) -> Pane {
        if self.tab == Tab::Desk {
            Pane::Strip
        } else {
            Pane::Inbox
        }
    }

    /// The inbox item under the cursor (the Proposals list, or the Desk strip): the one whose id
    /// is selected, even when it has just left the strip, so a key acts on what was on screen
    /// and says why it cannot.
    pub fn selected_item(&self) -> Option<&InboxItem> {
        let pane = self.inbox_pane();
        match &self.selection(pane).id {
            Some(id) => self.item(id),
            None => match pane {
                Pane::Strip => self.strip_items().first().map(|i| &self.inbox.items()[*i]),
                _ => self.inbox.items().get(self.selected(Pane::Inbox)),
            },
        }
    }

    /// Inbox indices of the proposals the Desk strip shows (see [`crate::console::inbox::Inbox::strip_items`]).
    pub fn strip_items(&self) -> Vec<usize> {
        self.inbox.strip_items(self.now)
    }

    pub fn selection(&self, pane: Pane) -> &PaneSelection {
        self.inbox.selection(pane)
    }

    /// The row an inbox pane draws as selected (see [`crate::console::inbox::Inbox::row`]).
    pub(crate) fn inbox_row(&self, pane: Pane) -> Option<usize> {
        self.inbox.row(pane, self.now)
    }

    /// The cursor moved to `row` of an inbox pane (a key or a click): that proposal is selected.
    pub(crate) fn select_inbox_row(&mut self, pane: Pane, row: usize) {
        let mut none = Vec::new();
        with_ctx!(self, &mut none, |ctx| self.inbox.select_row(pane, row, ctx));
    }

    /// Selects proposal `id` in an inbox pane, as the supervisor asked.
    pub(crate) fn select_proposal(&mut self, pane: Pane, id: &str) {
        let mut none = Vec::new();
        with_ctx!(self, &mut none, |ctx| self
            .inbox
            .select_proposal(pane, id, ctx));
    }

    /// After every update (see `Inbox::sync_selection`).
    pub(crate) fn sync_inbox_selection(&mut self, by_user: bool, fx: &mut Vec<Effect>) {
        with_ctx!(self, fx, |ctx| self.inbox.sync_selection(by_user, ctx));
    }

    /// The id the approve, reject and undo keys act on; None, with the reason shown, when the
    /// selection moved by itself a moment ago (the key was meant for what was selected before).
    pub(crate) fn acting_on(&mut self) -> Option<String> {
        let pane = self.inbox_pane();
        let mut none = Vec::new();
        if with_ctx!(self, &mut none, |ctx| self
            .inbox
            .moved_under_the_key(pane, ctx))
        {
            return None;
        }
        self.selected_item().map(|i| i.id().to_string())
    }

    pub(crate) fn merge_proposals(&mut self, list: Vec<Proposal>, fx: &mut Vec<Effect>) {
        let now = self.now;
        let mut fresh = 0;
        let mut waiting = 0;
        let mut settle = Vec::new();
        for p in list {
            // Another agent's, while the gateway inbox shows one agent's items only.
            if self.inbox.gate().hides(&p.proposal_id) {
                continue;
            }
            let unanswered = self.inbox.unanswered(&p.proposal_id);
            if let Some(item) = self.inbox.item_mut(&p.proposal_id) {
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
            let new = self.inbox.first_sight(p.proposal_id.clone());
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
            self.inbox.reapply(&mut item);
            // Staged before this console started (a restart): it was waiting, not new — said
            // once for all of them, without the bell, as on a gateway.
            let before_start = item
                .proposal
                .created_at
                .is_some_and(|c| c < self.inbox.started_at() - START_SLACK);
            if new && item.status(now) == Status::Staged && before_start {
                waiting += 1;
            } else if new && item.status(now) == Status::Staged {
                fresh += 1;
                self.toast(
                    format!("New proposal: {}", item.describe()),
                    ToastLevel::Info,
                );
            }
            self.inbox.push(item);
        }
        if fresh > 0 && self.options.bell {
            fx.push(Effect::Bell);
        }
        self.say_waiting(waiting);
        self.inbox.sort();
        for (id, found) in settle {
            self.settle_unknown(&id, found, fx);
        }
    }

    /// The one start-up line, on every setup: how many items staged before this console started
    /// are waiting (they were not rung in as new).
    pub(crate) fn say_waiting(&mut self, waiting: usize) {
        if waiting > 0 {
            self.toast(
                format!(
                    "{waiting} item{} staged before this console started {} waiting in the inbox",
                    if waiting == 1 { "" } else { "s" },
                    if waiting == 1 { "is" } else { "are" }
                ),
                ToastLevel::Info,
            );
        }
    }

    pub(crate) fn note_expiries(&mut self, fx: &mut Vec<Effect>) {
        let now = self.now;
        let mut expired = Vec::new();
        for item in self.inbox.items_mut() {
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
                fx,
            );
        }
    }

    pub(crate) fn decide(
        &mut self,
        id: &str,
        kind: DecisionKind,
        summary: String,
        result: String,
        fx: &mut Vec<Effect>,
    ) {
        with_inbox!(self, fx, |inbox, ctx| inbox
            .decide(id, kind, summary, result, ctx));
    }

    pub(crate) fn on_proposed(
        &mut self,
        signal: &TradeSignal,
        result: Result<Box<Proposal>, ApiError>,
        at: DateTime<Utc>,
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
                self.inbox.first_sight(p.proposal_id.clone());
                match self.inbox.item_mut(&p.proposal_id) {
                    Some(item) => {
                        item.request = Some(Box::new(signal.clone()));
                        item.merge(*p);
                    }
                    None => {
                        self.inbox.push(InboxItem {
                            proposal: *p,
                            source: Source::Console,
                            local: LocalState::None,
                            first_seen: at,
                            expiry_noted: false,
                            tool: None,
                            request: Some(Box::new(signal.clone())),
                        });
                        self.inbox.sort();
                    }
                }
                self.toast(text, ToastLevel::Info);
            }
            Err(e) => {
                let what = signal
                    .a
                    .clone()
                    .or(signal.action.clone())
                    .unwrap_or_default();
                self.toast(format!("Propose {what} failed: {e}"), ToastLevel::Error);
            }
        }
        self.poll_now(&[Resource::Proposals, Resource::Usage], at);
    }

    pub(crate) fn on_confirmed(
        &mut self,
        id: &str,
        result: Result<Box<crate::api::model::ExecutionResult>, ApiError>,
        at: DateTime<Utc>,
        fx: &mut Vec<Effect>,
    ) {
        let summary = self.described(id);
        match result {
            Ok(done) => {
                let text = execution_summary(&done);
                if let Some(item) = self.inbox.item_mut(id) {
                    item.local = LocalState::Approved(text.clone());
                    item.proposal.status = ProposalStatus::Executed;
                }
                self.toast(format!("Approved {id}: {text}"), ToastLevel::Info);
                self.decide(id, DecisionKind::Approved, summary, text, fx);
            }
            Err(e) if Decider::Service.read_error(&e) == Answered::AlreadyExecuted => {
                // Our own confirm was answered "already executed": it executed. What it did is
                // read from the service's records before anything is said or journaled.
                let text = e.to_string();
                if let Some(item) = self.inbox.item_mut(id) {
                    item.local = LocalState::Unknown {
                        error: text.clone(),
                        checking: true,
                    };
                }
                self.inbox.note_said_executed(id);
                self.inbox.recheck_at(at);
                self.toast(
                    format!(
                        "Confirm {id}: the service says it already executed ({text}) — reading                          {} for what it did",
                        Decider::Service.outcome_source()
                    ),
                    ToastLevel::Info,
                );
            }
            Err(e) if self.outcome_unknown(id, &e) => {
                let text = e.to_string();
                if let Some(item) = self.inbox.item_mut(id) {
                    item.local = LocalState::Unknown {
                        error: text.clone(),
                        checking: true,
                    };
                }
                self.inbox.note_unanswered(id);
                self.inbox.recheck_at(at);
                self.toast(Decider::Service.open_outcome(id, &e), ToastLevel::Error);
            }
            // The service asked to wait: nothing executed, the proposal is still staged. It is
            // approved again by hand after the wait, never re-sent from here.
            Err(ApiError::QuotaExceeded {
                retry_after,
                message,
            }) => {
                let until = at + to_delta(retry_after);
                self.quota_until = Some(until);
                if let Some(item) = self.inbox.item_mut(id)
                    && item.local == LocalState::Confirming
                {
                    item.local = LocalState::None;
                }
                self.inbox.limit(id, until, message.clone());
                self.toast(
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
                if let Some(item) = self.inbox.item_mut(id) {
                    item.local = LocalState::Failed(text.clone());
                }
                self.toast(format!("Confirm {id} failed: {text}"), ToastLevel::Error);
                self.decide(id, DecisionKind::Failed, summary, text, fx);
            }
        }
        // What the confirm changed shows up now, not at the next scheduled poll.
        self.poll_now(&Resource::TRADED, at);
        self.poll_now(&[Resource::Proposals, Resource::Usage], at);
    }

    pub(crate) fn start_approval(&mut self, id: &str) {
        if self.decider_for(id) == Decider::Gateway
            && self.gate_role_refuses("approver", "approving")
        {
            return;
        }
        let now = self.now;
        if self.rate_limited(id) {
            return;
        }
        match self.item(id) {
            Some(item) if item.can_approve(now) && self.gate_trade_error(id).is_none() => {
                let check = self.gate_check_for(id);
                self.modal = Some(Modal::Approve(ApproveDialog::new(id, now, check)))
            }
            Some(item)
                if item.status(now) == Status::Approved
                    && self.decider_for(id) == Decider::Gateway =>
            {
                let note = self.inbox.gate().item(id).and_then(|g| g.note.clone());
                let text = Decider::Gateway.approved_waiting(id, note.as_ref());
                self.toast(text, ToastLevel::Info);
            }
            Some(_) if self.gate_trade_error(id).is_some() => {
                let why = self.gate_trade_error(id).unwrap_or_default();
                self.toast(
                    format!("{id} cannot be approved: the gateway cannot judge it ({why})"),
                    ToastLevel::Error,
                );
            }
            Some(item) if item.status(now) == Status::Unknown => self.toast(
                format!(
                    "{id}: outcome unknown — checking with the service; it can be approved again \
                     only once the service says it is still staged"
                ),
                ToastLevel::Error,
            ),
            Some(item) => {
                let status = item.status(now).label();
                self.toast(
                    format!("{id} is {status}: it can no longer be approved"),
                    ToastLevel::Error,
                );
            }
            None => self.toast(format!("no proposal {id} in the inbox"), ToastLevel::Error),
        }
    }

    /// The dialog's approval, overriding `overrides` on a gateway (none: a plain approval); the
    /// gateway's refusals were asked before (`gate_refuses`).
    pub(crate) fn approve(&mut self, id: &str, overrides: Vec<String>, fx: &mut Vec<Effect>) {
        let now = self.now;
        if self.posts_held() {
            return;
        }
        // On a gateway an agent's own confirm is refused: the supervisor API executes it.
        let via_gate = self.inbox.gate().is_gateway();
        let decider = self.decider_for(id);
        if self.gate_trade_error(id).is_some() {
            return;
        }
        if self.rate_limited(id) {
            return;
        }
        let Some(item) = self.inbox.item_mut(id) else {
            return;
        };
        // Re-checked here: the countdown may have run out while the dialog was open.
        if !item.can_approve(now) {
            let status = item.status(now).label();
            self.toast(
                format!("{id} is {status}: not confirmed"),
                ToastLevel::Error,
            );
            return;
        }
        // On a gateway a tool's token runs only once the gateway's copy is approved: this
        // console's tool call is approved there, as its item (see `adopt_tool_approval`). Not
        // listed yet, it waits for the next poll rather than sending a token the gateway refuses.
        // A propose or close tool is the exception: its re-submission only stages a proposal,
        // which the gateway captures and the supervisor approves next.
        let stages_only = item.tool.as_ref().is_some_and(|t| {
            matches!(
                t.tool.as_str(),
                "service_propose_trade" | "service_close_position"
            )
        });
        if via_gate && item.tool.is_some() && item.source != Source::Gateway && !stages_only {
            let origin = item.tool.as_ref().map(|t| t.origin).unwrap_or("tools");
            self.inbox.gate_mut().probe_by(now);
            self.toast(
                format!(
                    "{id}: the gateway approves this {origin} tool call in its inbox and has not \
                     listed it yet; it becomes the gateway's item with the next poll, then a, y"
                ),
                ToastLevel::Error,
            );
            return;
        }
        item.local = LocalState::Confirming;
        if decider == Decider::Gateway {
            if !overrides.is_empty() {
                self.inbox.gate_mut().overriding(id, overrides.clone());
            }
            fx.push(if overrides.is_empty() {
                Effect::GateApprove(id.to_string())
            } else {
                Effect::GateApproveOverride {
                    id: id.to_string(),
                    overrides,
                }
            });
            return;
        }
        if let Some(t) = &item.tool {
            let mut args = match &t.args {
                serde_json::Value::Object(m) => m.clone(),
                _ => serde_json::Map::new(),
            };
            args.insert("confirmToken".into(), json!(t.confirm_token));
            fx.push(Effect::ExecuteTool {
                name: t.tool.clone(),
                args: serde_json::Value::Object(args),
                approval: Some(id.to_string()),
            });
            self.tabs.tools.sent_one();
            return;
        }
        fx.push(Effect::Confirm(id.to_string()));
    }

    pub(crate) fn reject(&mut self, id: &str, fx: &mut Vec<Effect>) {
        self.reject_with(id, None, fx);
    }

    /// `x` and `/reject`: a rejection that cannot be taken back (a gateway's) is asked first.
    pub(crate) fn reject_with(&mut self, id: &str, reason: Option<String>, fx: &mut Vec<Effect>) {
        let decider = self.decider_for(id);
        if decider == Decider::Gateway && self.gate_role_refuses("approver", "rejecting") {
            return;
        }
        if decider.reject_asks_first() {
            let now = self.now;
            match self.item(id) {
                Some(item) if item.status(now) == Status::Staged => {
                    self.modal = Some(Modal::Confirm(Confirm::new(
                        Deciding::Reject {
                            id: id.to_string(),
                            reason,
                        },
                        now,
                    )));
                }
                // Says why there is nothing to reject.
                _ => self.reject_on_gate(id, reason, fx),
            }
            return;
        }
        if self.staged_for_reject(id) != Some(true) {
            return;
        }
        let Some(item) = self.inbox.item_mut(id) else {
            return;
        };
        item.local = LocalState::Rejected;
        let summary = item.describe();
        let result = decider.reject_result(item.tool.is_some());
        self.inbox.dismiss(id);
        self.decide(id, DecisionKind::Rejected, summary, result.into(), fx);
    }
}

impl App {
    /// `u`: takes back a dismissal while the proposal is live — the selected proposal when the
    /// Proposals list shows a dismissed one, else the latest dismissal. Recorded like a decision.
    /// Whether `id` is staged, so that there is something to reject; when it is not, the toast
    /// says what it is. None when the inbox holds no such item.
    pub(crate) fn staged_for_reject(&mut self, id: &str) -> Option<bool> {
        let status = self.inbox.item(id)?.status(self.now);
        if status != Status::Staged {
            self.toast(
                format!("{id} is {}: nothing to reject", status.label()),
                ToastLevel::Error,
            );
        }
        Some(status == Status::Staged)
    }

    pub(crate) fn undo_dismissal(&mut self, fx: &mut Vec<Effect>) {
        let now = self.now;
        let selected = (self.inbox_pane() == Pane::Inbox)
            .then(|| self.selected_item())
            .flatten()
            .filter(|i| i.local == LocalState::Rejected)
            .map(|i| i.id().to_string());
        let Some(id) = selected.or_else(|| self.inbox.dismissed().last().cloned()) else {
            self.toast(
                "Nothing to undo: no proposal was dismissed",
                ToastLevel::Error,
            );
            return;
        };
        self.inbox.undismiss(&id);
        if let Some(why) = self.decider_for(&id).undo_refusal(&id) {
            self.toast(why, ToastLevel::Error);
            return;
        }
        let Some(item) = self.inbox.item_mut(&id) else {
            return;
        };
        if item.local != LocalState::Rejected {
            return;
        }
        let service = item.service_status(now);
        if service != Status::Staged {
            let when = match (service, item.proposal.expires_at) {
                (Status::Expired, Some(e)) => format!(" at {}", e.format("%H:%M:%S")),
                _ => String::new(),
            };
            let text = format!(
                "Cannot undo the dismissal of {id}: it {}{when}, so the service no longer takes it",
                service.label()
            );
            self.toast(text, ToastLevel::Error);
            return;
        }
        item.local = LocalState::None;
        let summary = item.describe();
        let left = item
            .remaining(now)
            .map(|l| {
                let s = l.num_seconds().max(0);
                format!(", {}:{:02} left to approve", s / 60, s % 60)
            })
            .unwrap_or_default();
        self.decide(
            &id,
            DecisionKind::Undone,
            summary,
            "dismissal undone; staged again".into(),
            fx,
        );
        self.toast(
            format!("Restored {id}: staged again{left}"),
            ToastLevel::Info,
        );
        let pane = self.inbox_pane();
        self.select_proposal(pane, &id);
    }

    /// A confirm that got no answer may have executed: the request may have reached the service
    /// before the connection failed. So may one the service calls already executed, when an
    /// earlier confirm of this console got no answer.
    fn outcome_unknown(&self, _id: &str, e: &ApiError) -> bool {
        Decider::Service.read_error(e) == Answered::Open
    }

    /// Asks the service again while a confirm's outcome is unknown.
    pub(crate) fn schedule_recheck(&mut self, fx: &mut Vec<Effect>) {
        let list = self.feeds[&Resource::Proposals].supported;
        with_ctx!(self, fx, |ctx| self.inbox.schedule_recheck(list, ctx));
    }

    pub(crate) fn on_reconciled(
        &mut self,
        evidence: &Evidence,
        at: DateTime<Utc>,
        fx: &mut Vec<Effect>,
    ) {
        self.inbox.rechecked(at);
        if evidence.unreachable() {
            return;
        }
        let ids: Vec<String> = self
            .inbox
            .items()
            .iter()
            .filter(|i| matches!(i.local, LocalState::Unknown { checking: true, .. }))
            .map(|i| i.id().to_string())
            .collect();
        for id in ids {
            if let Some(Ok(list)) = &evidence.proposals
                && let Some(p) = list.iter().find(|p| p.proposal_id == id)
                && let Some(item) = self.inbox.item_mut(&id)
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
            self.settle_unknown(&id, found, fx);
        }
    }

    /// What the service's records said of a confirm that got no answer.
    fn settle_unknown(&mut self, id: &str, found: Outcome, fx: &mut Vec<Effect>) {
        let now = self.now;
        let Some(item) = self.inbox.item_mut(id) else {
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
            Outcome::NotExecuted | Outcome::Unknown if self.inbox.said_executed(id) => {
                Outcome::Executed(format!(
                    "executed (the service answered this console's confirm: {error}; its records \
                     do not say more)"
                ))
            }
            other => other,
        };
        self.inbox.forget_said_executed(id);
        let Some(item) = self.inbox.item_mut(id) else {
            return;
        };
        match found {
            Outcome::Executed(text) => {
                item.local = LocalState::Approved(text.clone());
                item.proposal.status = ProposalStatus::Executed;
                self.inbox.forget_unanswered(id);
                self.toast(
                    format!("Confirm {id} did execute: {text}"),
                    ToastLevel::Info,
                );
                self.decide(id, DecisionKind::Approved, summary, text, fx);
            }
            Outcome::Failed(text) => {
                item.local = LocalState::Failed(text.clone());
                self.inbox.forget_unanswered(id);
                self.toast(format!("Confirm {id} failed: {text}"), ToastLevel::Error);
                self.decide(id, DecisionKind::Failed, summary, text, fx);
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
                self.toast(text, ToastLevel::Info);
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
                    self.toast(
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

impl App {
    /// True, saying so, while the service's wait for this proposal's confirm runs.
    fn rate_limited(&mut self, id: &str) -> bool {
        let now = self.now;
        let Some(left) = self.inbox.wait_left(id, now) else {
            self.inbox.unlimit(id);
            return false;
        };
        let said = self
            .inbox
            .limited_note(id)
            .map(str::to_string)
            .unwrap_or_default();
        self.toast(
            format!("{id}: rate limited — retry in {left} s ({said}); it is still staged"),
            ToastLevel::Error,
        );
        true
    }

    /// A dismissal `u` could take back: the footer offers the key only then.
    pub fn can_undo(&self) -> bool {
        self.inbox.dismissed().iter().any(|id| {
            self.decider_for(id).reject_undoable()
                && self.item(id).is_some_and(|i| {
                    i.local == LocalState::Rejected && i.service_status(self.now) == Status::Staged
                })
        })
    }
}
