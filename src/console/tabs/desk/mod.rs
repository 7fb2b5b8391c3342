//! The Desk tab: positions, open orders, the PnL summary with its equity chart, and the strip of
//! proposals that can still be approved. Its data are the account feeds the App keeps, as the
//! header, the risk preview and completion read them too.

pub mod view;

use super::Tab;
use crate::console::app::App;
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;

impl App {
    /// Enter on a strip item opens it in the Proposals tab.
    pub(crate) fn on_desk_key(&mut self, action: KeyAction, pane: Pane) -> bool {
        if action != KeyAction::Select || pane != Pane::Strip {
            return false;
        }
        if let Some(i) = self.strip_items().get(self.selected(Pane::Strip)).copied() {
            self.set_tab(Tab::Proposals);
            self.selected.insert(Pane::Inbox, i);
        }
        true
    }
}
