//! What the inbox's views read — the Desk strip, the Proposals tab, the approve dialog — and
//! nothing else of App: the inbox, the gateway's data, the account a trade is judged against.
//! Like `component::Shown` for the other tabs, read-only and built for one draw; App asks it the same
//! questions (how an item is decided, its risk, what the dialog may do) so both read one answer.

use crate::api::model::Preview;
use crate::console::action::Resource;
use crate::console::component::ServiceInfo;
use crate::console::decider::Decider;
use crate::console::feeds::{Account, Feed};
use crate::console::gate::GateState;
use crate::console::gate::guard::{ApproveCheck, kill_reason};
use crate::console::inbox::dialog::{ApproveDialog, Context};
use crate::console::inbox::{Inbox, InboxItem};
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use crate::console::tabs::proposals::approve::approve_max_scroll;
use crate::console::tabs::proposals::risk::Risk;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

pub struct InboxShown<'a> {
    pub now: DateTime<Utc>,
    pub inbox: &'a Inbox,
    pub gate: &'a GateState,
    pub service: &'a ServiceInfo,
    pub account: &'a Account,
    pub feeds: &'a BTreeMap<Resource, Feed>,
    pub modal: Option<&'a Modal>,
    /// The terminal's size: the approve dialog's scroll range depends on it.
    pub size: (u16, u16),
    /// The other panes' cursors (the inbox panes follow a proposal id instead).
    pub selected: &'a BTreeMap<Pane, usize>,
    /// Every table's filter and order (the inbox panes' too).
    pub tables: &'a crate::console::table::Tables,
    pub focused: Pane,
    /// The key that approves in a dialog, as the keymap binds it.
    pub yes_key: String,
    /// A deciding key's decision is held (`deliberate::Held`): the dialog says any key cancels.
    pub deciding: bool,
}

impl<'a> InboxShown<'a> {
    pub fn item(&self, id: &str) -> Option<&'a InboxItem> {
        self.inbox.item(id)
    }

    /// Inbox indices of what the Desk strip shows.
    pub fn strip_items(&self) -> Vec<usize> {
        self.inbox.strip_items(self.now)
    }

    /// The row a pane draws as selected: an inbox pane's is where its proposal is now.
    pub fn selected(&self, pane: Pane) -> usize {
        self.inbox
            .row(pane, self.now, self.tables)
            .unwrap_or_else(|| self.selected.get(&pane).copied().unwrap_or(0))
    }

    pub fn focused_pane(&self) -> Pane {
        self.focused
    }

    /// How decisions on inbox item `id` are made: through the gateway when the service is one
    /// and the gateway decides the item (every trade it lists; a tool call once it is its item),
    /// else through the service.
    pub fn decider_for(&self, id: &str) -> Decider {
        self.inbox.decider_for(id)
    }

    /// How this console decides, for what is not one item's (the feeds it polls).
    pub fn decider(&self) -> Decider {
        self.inbox.decider()
    }

    /// The risk preview of a proposal against the live positions and account value.
    pub fn risk_of(&self, preview: &Preview) -> Risk {
        crate::console::inbox::risk::live(preview, self.account)
    }

    /// What the approve dialog needs to know of the rest of the console to judge a key.
    /// Why the item an approve dialog is open on can no longer be approved (it expired, or was
    /// decided, while the dialog was open); None while it can.
    pub fn gone(&self, id: &str) -> Option<String> {
        match self.item(id) {
            None => Some(format!("{id} left the inbox")),
            Some(i) if i.can_approve(self.now) => None,
            Some(i) => Some(format!("{id} is {}", i.status(self.now).label())),
        }
    }

    pub fn approve_context(&self, d: &ApproveDialog) -> Context {
        let gate_item = self.gate.item(&d.id);
        let gateway = self.decider_for(&d.id) == Decider::Gateway && gate_item.is_some();
        let breaking = if gateway {
            let fresh = ApproveCheck::new(&d.id);
            d.check_for(&d.id).unwrap_or(&fresh).breaking(gate_item)
        } else {
            Vec::new()
        };
        let kill = if gateway {
            kill_reason(self.gate.kill())
                .or_else(|| d.check_for(&d.id).and_then(ApproveCheck::blocked_by_kill))
        } else {
            None
        };
        let word = self
            .item(&d.id)
            .map(|i| {
                let p = &i.proposal.preview;
                if p.coin.is_empty() {
                    p.closes.first().map(|c| c.coin.clone()).unwrap_or_default()
                } else {
                    p.coin.clone()
                }
            })
            .filter(|w| !w.trim().is_empty())
            // No coin to type (never for a trade or a close): the rule's own name confirms.
            .unwrap_or_else(|| breaking.first().cloned().unwrap_or_default());
        Context {
            breaking,
            word,
            kill,
            gateway,
            max_scroll: approve_max_scroll(self, &d.id, self.size),
            page: (self.size.1 / 2).max(1),
            gone: self.gone(&d.id),
            yes_key: self.yes_key.clone(),
            deciding: self.deciding,
            y_does: gate_item
                .filter(|_| gateway)
                .and_then(|g| crate::console::gate::guard::y_does(d.check_for(&d.id), g))
                .map(|(does, _)| does),
        }
    }
}
