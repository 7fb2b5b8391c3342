//! The supervisor's decisions on the inbox: `a` opens the approve dialog (the dialog and the
//! deliberate `y` decide, `dialog.rs` and `deliberate.rs`), its approval goes out here; `x` and
//! `/reject` reject (asked first where a rejection is final), `u` takes back a dismissal. Which
//! item a key acts on is the pane's selected id, never a row (`selection.rs`).

use super::context::InboxCtx;
use super::dialog::ApproveDialog;
use super::{DecisionKind, Inbox, InboxItem, LocalState, Source, Status};
use crate::console::action::Effect;
use crate::console::component::{Ask, Ctx, ToastLevel};
use crate::console::decider::Decider;
use crate::console::layout::Pane;
use crate::console::modal::{Confirm, Deciding, Modal};
use crate::console::tab::Tab;
use chrono::{DateTime, Utc};
use serde_json::json;

/// The inbox pane the approve, reject and undo keys act in on `tab`: on the Desk its strip (the
/// only inbox it shows, whichever pane has the focus), elsewhere the Proposals list.
pub fn acting_pane(tab: Tab) -> Pane {
    if tab == Tab::Desk {
        Pane::Strip
    } else {
        Pane::Inbox
    }
}

impl Inbox {
    /// An item as messages name it, or its id once it is gone from the inbox.
    pub fn described(&self, id: &str) -> String {
        self.item(id)
            .map(|i| i.describe())
            .unwrap_or_else(|| id.to_string())
    }

    /// Why the gateway says item `id` cannot be judged (and so nobody may approve it).
    pub fn trade_error(&self, id: &str) -> Option<String> {
        self.gate.item(id).and_then(|g| g.trade_error.clone())
    }

    /// The inbox item under the cursor (the Proposals list, or the Desk strip): the one whose id
    /// is selected, even when it has just left the strip, so a key acts on what was on screen
    /// and says why it cannot.
    fn selected_item(&self, ctx: &Ctx) -> Option<&InboxItem> {
        let pane = acting_pane(ctx.tab);
        match &self.selection(pane).id {
            Some(id) => self.item(id),
            // Not synced yet: the row under the pane's cursor, through its filter and sort.
            None => {
                let rows = self.pane_rows(pane, ctx.now);
                ctx.row(pane)
                    .and_then(|k| rows.get(k))
                    .map(|i| &self.items()[*i])
            }
        }
    }

    /// The selected item's id, for `c` to copy (nothing is decided with it).
    pub(crate) fn selected_id(&self, ctx: &InboxCtx) -> Option<String> {
        self.selected_item(ctx).map(|i| i.id().to_string())
    }

    /// The id the approve, reject and undo keys act on; None, with the reason shown, when the
    /// selection moved by itself a moment ago (the key was meant for what was selected before).
    pub(crate) fn acting_on(&mut self, ctx: &mut InboxCtx) -> Option<String> {
        let pane = acting_pane(ctx.tab);
        if self.moved_under_the_key(pane, ctx) {
            return None;
        }
        let id = self.selected_item(ctx).map(|i| i.id().to_string())?;
        (!self.hidden_by_filter(pane, &id, ctx)).then_some(id)
    }

    /// True, saying so, when the pane's filter hides proposal `id`: a filter that shows nothing
    /// leaves the last selection named, and `u` may take back a dismissal the list does not
    /// show; a key must not act on a row the supervisor cannot see.
    fn hidden_by_filter(&self, pane: Pane, id: &str, ctx: &mut InboxCtx) -> bool {
        let filter = ctx.tables().query(pane).filter;
        if filter.trim().is_empty() || self.pane_ids(pane, ctx.now, ctx.tables()).contains(&id) {
            return false;
        }
        ctx.toast(
            format!(
                "{id} is not in the list shown (/{filter}): nothing done; Esc clears the filter"
            ),
            ToastLevel::Error,
        );
        true
    }

    /// True (and a line saying why) when the gateway decides `id` and this console's supervisor
    /// token may not do what needs `needed`.
    fn role_refuses(&self, id: &str, needed: &str, what: &str, ctx: &mut InboxCtx) -> bool {
        if self.decider_for(id) != Decider::Gateway {
            return false;
        }
        match self.gate.role_refusal(needed, what) {
            Some(why) => {
                ctx.toast(why, ToastLevel::Error);
                true
            }
            None => false,
        }
    }

    /// `a` and `/confirm`: the approve dialog on `id`, when it can be approved; else why not.
    pub(crate) fn start_approval(&mut self, id: &str, ctx: &mut InboxCtx) {
        if self.role_refuses(id, "approver", "approving", ctx) {
            return;
        }
        let now = ctx.now;
        if self.rate_limited(id, ctx) {
            return;
        }
        match self.item(id) {
            Some(item) if item.can_approve(now) && self.trade_error(id).is_none() => {
                let check = self.gate.approve_check(id);
                let dialog = Modal::Approve(ApproveDialog::new(id, now, check));
                ctx.ask(Ask::Open(Box::new(dialog)));
            }
            Some(item)
                if item.status(now) == Status::Approved
                    && self.decider_for(id) == Decider::Gateway =>
            {
                let note = self.gate.item(id).and_then(|g| g.note.clone());
                let text = Decider::Gateway.approved_waiting(id, note.as_ref());
                ctx.toast(text, ToastLevel::Info);
            }
            Some(_) if self.trade_error(id).is_some() => {
                let why = self.trade_error(id).unwrap_or_default();
                ctx.toast(
                    format!("{id} cannot be approved: the gateway cannot judge it ({why})"),
                    ToastLevel::Error,
                );
            }
            Some(item) if item.status(now) == Status::Unknown => ctx.toast(
                format!(
                    "{id}: outcome unknown — checking with the service; it can be approved again \
                     only once the service says it is still staged"
                ),
                ToastLevel::Error,
            ),
            Some(item) => {
                let status = item.status(now).label();
                ctx.toast(
                    format!("{id} is {status}: it can no longer be approved"),
                    ToastLevel::Error,
                );
            }
            None => ctx.toast(format!("no proposal {id} in the inbox"), ToastLevel::Error),
        }
    }

    /// The dialog's approval, overriding `overrides` on a gateway (none: a plain approval); the
    /// gateway's refusals were asked before (`gate_refuses`).
    pub(crate) fn approve(&mut self, id: &str, overrides: Vec<String>, ctx: &mut InboxCtx) {
        let now = ctx.now;
        if ctx.posts_held() {
            return;
        }
        // On a gateway an agent's own confirm is refused: the supervisor API executes it.
        let via_gate = self.gate.is_gateway();
        let decider = self.decider_for(id);
        if self.trade_error(id).is_some() {
            return;
        }
        if self.rate_limited(id, ctx) {
            return;
        }
        let Some(item) = self.item_mut(id) else {
            return;
        };
        // Re-checked here: the countdown may have run out while the dialog was open.
        if !item.can_approve(now) {
            let status = item.status(now).label();
            ctx.toast(
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
            self.gate.probe_by(now);
            ctx.toast(
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
                self.gate.overriding(id, overrides.clone());
            }
            ctx.fx.push(if overrides.is_empty() {
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
            ctx.fx.push(Effect::ExecuteTool {
                name: t.tool.clone(),
                args: serde_json::Value::Object(args),
                approval: Some(id.to_string()),
            });
            ctx.ask(Ask::ToolSent);
            return;
        }
        ctx.fx.push(Effect::Confirm(id.to_string()));
    }

    /// `x`: rejects the item under the cursor.
    pub(crate) fn reject(&mut self, id: &str, ctx: &mut InboxCtx) {
        self.reject_with(id, None, ctx);
    }

    /// `x` and `/reject`: a rejection that cannot be taken back (a gateway's) is asked first.
    pub(crate) fn reject_with(&mut self, id: &str, reason: Option<String>, ctx: &mut InboxCtx) {
        let decider = self.decider_for(id);
        if self.role_refuses(id, "approver", "rejecting", ctx) {
            return;
        }
        if decider.reject_asks_first() {
            let now = ctx.now;
            match self.item(id) {
                Some(item) if item.status(now) == Status::Staged => {
                    let question = Modal::Confirm(Confirm::new(
                        Deciding::Reject {
                            id: id.to_string(),
                            reason,
                        },
                        now,
                    ));
                    ctx.ask(Ask::Open(Box::new(question)));
                }
                // Says why there is nothing to reject.
                _ => self.reject_on_gate(id, reason, ctx),
            }
            return;
        }
        if self.staged_for_reject(id, ctx) != Some(true) {
            return;
        }
        let Some(item) = self.item_mut(id) else {
            return;
        };
        item.local = LocalState::Rejected;
        let summary = item.describe();
        let result = decider.reject_result(item.tool.is_some());
        self.dismiss(id);
        self.decide(id, DecisionKind::Rejected, summary, result.into(), ctx);
    }

    /// `x` and `/reject`: on a gateway the rejection is the gateway's, with a reason the agent's
    /// confirm is refused with.
    pub(crate) fn reject_on_gate(&mut self, id: &str, reason: Option<String>, ctx: &mut InboxCtx) {
        match self.staged_for_reject(id, ctx) {
            None => {
                ctx.toast(format!("no item {id} in the inbox"), ToastLevel::Error);
                return;
            }
            Some(false) => return,
            Some(true) => {}
        }
        let Some(item) = self.item_mut(id) else {
            return;
        };
        item.local = LocalState::Confirming;
        ctx.fx.push(Effect::GateReject {
            id: id.to_string(),
            reason: reason.unwrap_or_else(|| crate::console::gate::DEFAULT_REJECT_REASON.into()),
        });
    }

    /// Whether `id` is staged, so that there is something to reject; when it is not, the toast
    /// says what it is. None when the inbox holds no such item.
    fn staged_for_reject(&self, id: &str, ctx: &mut InboxCtx) -> Option<bool> {
        let status = self.item(id)?.status(ctx.now);
        if status != Status::Staged {
            ctx.toast(
                format!("{id} is {}: nothing to reject", status.label()),
                ToastLevel::Error,
            );
        }
        Some(status == Status::Staged)
    }

    /// `u`: takes back a dismissal while the proposal is live — the selected proposal when the
    /// Proposals list shows a dismissed one, else the latest dismissal. Recorded like a decision.
    pub(crate) fn undo_dismissal(&mut self, ctx: &mut InboxCtx) {
        let now = ctx.now;
        let selected = (acting_pane(ctx.tab) == Pane::Inbox)
            .then(|| self.selected_item(ctx))
            .flatten()
            .filter(|i| i.local == LocalState::Rejected)
            .map(|i| i.id().to_string());
        let Some(id) = selected.or_else(|| self.dismissed().last().cloned()) else {
            ctx.toast(
                "Nothing to undo: no proposal was dismissed",
                ToastLevel::Error,
            );
            return;
        };
        if self.hidden_by_filter(acting_pane(ctx.tab), &id, ctx) {
            return;
        }
        self.undismiss(&id);
        if let Some(why) = self.decider_for(&id).undo_refusal(&id) {
            ctx.toast(why, ToastLevel::Error);
            return;
        }
        let Some(item) = self.item_mut(&id) else {
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
            ctx.toast(text, ToastLevel::Error);
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
            ctx,
        );
        ctx.toast(
            format!("Restored {id}: staged again{left}"),
            ToastLevel::Info,
        );
        let pane = acting_pane(ctx.tab);
        self.select_proposal(pane, &id, ctx);
    }

    /// True, saying so, while the service's wait for this proposal's confirm runs.
    fn rate_limited(&mut self, id: &str, ctx: &mut InboxCtx) -> bool {
        let Some(left) = self.wait_left(id, ctx.now) else {
            self.unlimit(id);
            return false;
        };
        let said = self.limited_note(id).unwrap_or_default();
        ctx.toast(
            format!("{id}: rate limited — retry in {left} s ({said}); it is still staged"),
            ToastLevel::Error,
        );
        true
    }

    /// A dismissal `u` could take back: the footer offers the key only then.
    pub fn can_undo(&self, now: DateTime<Utc>) -> bool {
        self.dismissed().iter().any(|id| {
            self.decider_for(id).reject_undoable()
                && self.item(id).is_some_and(|i| {
                    i.local == LocalState::Rejected && i.service_status(now) == Status::Staged
                })
        })
    }
}
