//! What the approval inbox may see and change of the rest of the console while it handles a key,
//! an answer or a moment, as a tab gets a [`Ctx`]: the clock, the pane cursors, the effects to
//! start and the asks App performs once it returns (toasts, the modal, the feeds to poll, the
//! Tools tab's outcome), and beside them what its decisions are judged and journaled with — the
//! account a trade's risk is worked out against, the service, whether to ring the bell.
//! `with_inbox!` builds it, so the inbox never holds `&mut App`.

use crate::console::component::{Ctx, ServiceInfo};
use crate::console::feeds::Account;
use std::ops::{Deref, DerefMut};

pub struct InboxCtx<'a> {
    ctx: Ctx<'a>,
    /// The live positions and account value a staged trade's risk is judged against.
    pub account: &'a Account,
    /// The service the decisions are journaled as made on, and this console's key.
    pub service: &'a ServiceInfo,
    /// Whether a new proposal rings the bell.
    pub bell: bool,
    /// Whether the service lists its proposals (a recheck reads the list then).
    pub proposals_listed: bool,
}

impl<'a> InboxCtx<'a> {
    /// Only `with_inbox!` calls this.
    pub fn new(
        ctx: Ctx<'a>,
        account: &'a Account,
        service: &'a ServiceInfo,
        bell: bool,
        proposals_listed: bool,
    ) -> Self {
        InboxCtx {
            ctx,
            account,
            service,
            bell,
            proposals_listed,
        }
    }

    /// The effects and asks, for App to perform.
    pub fn finish(
        self,
    ) -> (
        Vec<crate::console::action::Effect>,
        Vec<crate::console::component::Ask>,
    ) {
        self.ctx.finish()
    }
}

/// The tab context within: what the inbox shares with every tab (its selection methods take it).
impl<'a> Deref for InboxCtx<'a> {
    type Target = Ctx<'a>;

    fn deref(&self) -> &Ctx<'a> {
        &self.ctx
    }
}

impl DerefMut for InboxCtx<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.ctx
    }
}
