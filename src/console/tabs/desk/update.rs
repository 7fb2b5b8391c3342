//! The Desk tab's keys: Enter on a strip item opens it in the Proposals tab.

use super::DeskTab;
use crate::console::component::{Ask, Ctx};
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;

impl DeskTab {
    /// `strip`: the inbox item under the strip's cursor (the inbox is App's, shared by the tabs).
    pub fn on_key(
        &mut self,
        action: KeyAction,
        pane: Pane,
        strip: Option<String>,
        ctx: &mut Ctx,
    ) -> bool {
        if action != KeyAction::Select || pane != Pane::Strip {
            return false;
        }
        if let Some(id) = strip {
            ctx.ask(Ask::ShowProposal(id));
        }
        true
    }
}
