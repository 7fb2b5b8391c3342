//! App's side of the approval inbox: it routes keys, answers and moments to the inbox
//! (`console::inbox`, which owns the items, the gateway's state and how decisions are made) with an
//! `InboxCtx`, as it routes a tab's with a `Ctx`, and reads it for the frame and the tests.

use crate::console::action::Effect;
use crate::console::app::App;
use crate::console::decider::Decider;
use crate::console::inbox::{InboxItem, PaneSelection, Source};
use crate::console::layout::Pane;
use serde_json::Value;

impl App {
    pub fn item(&self, id: &str) -> Option<&InboxItem> {
        self.inbox.item(id)
    }

    /// An item as messages name it, or its id once it is gone from the inbox.
    pub fn described(&self, id: &str) -> String {
        self.inbox.described(id)
    }

    /// How this console decides, for what is not one item's (the feeds it polls).
    pub fn decider(&self) -> Decider {
        self.inbox.decider()
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
        self.inbox.row(pane, self.now, &self.tables)
    }

    /// The cursor moved to `row` of an inbox pane (a key or a click): that proposal is selected.
    pub(crate) fn select_inbox_row(&mut self, pane: Pane, row: usize) {
        let mut none = Vec::new();
        with_ctx!(self, &mut none, |ctx| self.inbox.select_row(pane, row, ctx));
    }

    /// Selects proposal `id` in an inbox pane, as the supervisor asked.
    pub fn select_proposal(&mut self, pane: Pane, id: &str) {
        let mut none = Vec::new();
        with_ctx!(self, &mut none, |ctx| self
            .inbox
            .select_proposal(pane, id, ctx));
    }

    /// After every update (see `Inbox::sync_selection`).
    pub(crate) fn sync_inbox_selection(&mut self, by_user: bool, fx: &mut Vec<Effect>) {
        with_ctx!(self, fx, |ctx| self.inbox.sync_selection(by_user, ctx));
    }

    /// A dismissal `u` could take back: the footer offers the key only then.
    pub fn can_undo(&self) -> bool {
        self.inbox.can_undo(self.now)
    }

    /// Puts a confirm token into the inbox (see `Inbox::add_tool_approval`).
    pub(crate) fn add_tool_approval(
        &mut self,
        tool: &str,
        args: &Value,
        token: &Value,
        source: Source,
        fx: &mut Vec<Effect>,
    ) -> Option<String> {
        with_inbox!(self, fx, |inbox, ctx| inbox
            .add_tool_approval(tool, args, token, source, ctx))
    }
}
