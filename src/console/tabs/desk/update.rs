//! The Desk tab's keys: Enter on a strip item opens it in the Proposals tab.

use crate::console::app::App;
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;
use crate::console::tab::Tab;

impl App {
    /// Enter on a strip item opens it in the Proposals tab.
    pub(crate) fn on_desk_key(&mut self, action: KeyAction, pane: Pane) -> bool {
        if action != KeyAction::Select || pane != Pane::Strip {
            return false;
        }
        if let Some(id) = self.selection(Pane::Strip).id.clone() {
            self.set_tab(Tab::Proposals);
            self.select_proposal(Pane::Inbox, &id);
        }
        true
    }
}
