//! The Desk tab's keys: Enter on a strip item opens it in the Proposals tab.

use super::DeskTab;
use crate::console::component::{Ask, Ctx, TabComponent};
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;

impl TabComponent for DeskTab {
    fn on_key(&mut self, action: KeyAction, pane: Pane, ctx: &mut Ctx) -> bool {
        if action != KeyAction::Select || pane != Pane::Strip {
            return false;
        }
        // The strip's items are the inbox's, which App keeps.
        ctx.ask(Ask::ShowSelected(Pane::Strip));
        true
    }
}
