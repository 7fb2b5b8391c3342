//! App's side of the tabs that are components (`component.rs`): what an answer or a command
//! changes beyond one tab — the inbox every tab shares, the tab on screen — before the tab gets
//! its part.

use crate::api::ApiError;
use crate::api::model::ChatReply;
use crate::console::action::Effect;
use crate::console::app::{App, ToastLevel};
use crate::console::component::Ctx;
use crate::console::inbox::Source;
use crate::console::tab::Tab;
use chrono::{DateTime, Utc};
use serde_json::Value;

impl App {
    /// `/chat <text>`: the Chat tab comes on screen and sends it.
    pub(crate) fn send_chat(&mut self, text: String, fx: &mut Vec<Effect>) {
        self.set_tab(Tab::Chat);
        let mut ctx = Ctx::new(self.now, self.quota_until, &mut self.selected);
        self.chat.send(text, &mut ctx);
        let done = ctx.finish();
        self.perform(done, fx);
    }

    /// The confirm tokens of the agent's reply go to the inbox; the chat shows their ids.
    pub(crate) fn on_chat_answered(
        &mut self,
        result: Result<Box<ChatReply>, ApiError>,
        at: DateTime<Utc>,
        fx: &mut Vec<Effect>,
    ) {
        self.dirty = true;
        let mut ids = Vec::new();
        if let Ok(reply) = &result {
            for t in &reply.confirm_tokens {
                let tool = t.get("tool").and_then(Value::as_str).unwrap_or("tool");
                let args = t.get("args").cloned().unwrap_or(Value::Null);
                if let Some(id) = self.add_tool_approval(tool, &args, t, Source::Service, fx) {
                    ids.push(id);
                }
            }
        }
        if !ids.is_empty() {
            self.toast(
                format!(
                    "{} sent to the inbox: approve with a, then y",
                    ids.join(", ")
                ),
                ToastLevel::Info,
            );
        }
        let mut ctx = Ctx::new(self.now, self.quota_until, &mut self.selected);
        self.chat.on_answered(result, ids, at, &mut ctx);
        let done = ctx.finish();
        self.perform(done, fx);
    }
}
