//! App's side of the approval inbox: it routes keys, answers and moments to the inbox
//! (`console::inbox`, which owns the items, the gateway's state and how decisions are made) with an
//! `InboxCtx`, as it routes a tab's with a `Ctx`, and reads it for the frame and the tests.

use crate::console::action::Effect;
use crate::console::app::App;
use crate::console::inbox::Source;
use serde_json::Value;

impl App {
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
