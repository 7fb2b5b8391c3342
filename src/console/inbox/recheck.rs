//! The checks of confirms whose outcome is unknown, started as a tab's polls are, with a `Ctx`.
//! A file of its own for the reason `selection.rs` is.

use super::{Inbox, LocalState};
use crate::console::action::Effect;
use crate::console::component::Ctx;

impl Inbox {
    /// Asks the service again while a confirm's outcome is unknown; `list` when the service
    /// lists its proposals.
    pub fn schedule_recheck(&mut self, list: bool, ctx: &mut Ctx) {
        let checking = self
            .items
            .iter()
            .any(|i| matches!(i.local, LocalState::Unknown { checking: true, .. }));
        if !checking {
            self.recheck.stop();
            return;
        }
        if self.recheck.start(ctx.now) {
            ctx.fx.push(Effect::Reconcile { list });
        }
    }
}
