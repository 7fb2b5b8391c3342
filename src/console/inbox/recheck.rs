//! The checks of confirms whose outcome is unknown, started as a tab's polls are, with an `InboxCtx`.
//! A file of its own for the reason `selection.rs` is.

use super::context::InboxCtx;
use super::{Inbox, LocalState};
use crate::console::action::Effect;

impl Inbox {
    /// Asks the service again while a confirm's outcome is unknown (its proposals list too, when
    /// it keeps one).
    pub fn schedule_recheck(&mut self, ctx: &mut InboxCtx) {
        let list = ctx.proposals_listed;
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
