//! The Chat tab's update: sending the conversation, the agent's replies (their confirm tokens go to
//! the inbox), and its keys.

use crate::api::ApiError;
use crate::api::model::{ChatMessage, ChatReply};
use crate::console::action::Effect;
use crate::console::app::{App, ToastLevel};
use crate::console::inbox::Source;
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;
use crate::console::poll::to_delta;
use crate::console::tab::Tab;
use chrono::{DateTime, Utc};
use serde_json::Value;

use super::ChatEntry;

impl App {
    pub(crate) fn send_chat(&mut self, text: String, fx: &mut Vec<Effect>) {
        self.set_tab(Tab::Chat);
        if self.chat.in_flight {
            self.toast(
                "the agent is still answering the last message",
                ToastLevel::Error,
            );
            return;
        }
        if self.posts_held() {
            return;
        }
        self.chat.entries.push(ChatEntry::User {
            at: self.now,
            text: text.clone(),
        });
        self.chat.history.push(ChatMessage {
            role: "user".into(),
            content: text,
        });
        self.chat.in_flight = true;
        self.chat.scroll = 0;
        fx.push(Effect::Chat(self.chat.history.clone()));
    }

    pub(crate) fn on_chat_answered(
        &mut self,
        result: Result<Box<ChatReply>, ApiError>,
        at: DateTime<Utc>,
        fx: &mut Vec<Effect>,
    ) {
        self.chat.in_flight = false;
        self.chat.scroll = 0;
        self.dirty = true;
        match result {
            Ok(reply) => {
                let reply = *reply;
                let mut ids = Vec::new();
                for t in &reply.confirm_tokens {
                    let tool = t.get("tool").and_then(Value::as_str).unwrap_or("tool");
                    let args = t.get("args").cloned().unwrap_or(Value::Null);
                    if let Some(id) = self.add_tool_approval(tool, &args, t, Source::Service, fx) {
                        ids.push(id);
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
                self.chat.history.push(ChatMessage {
                    role: "assistant".into(),
                    content: reply.reply.clone(),
                });
                self.chat.mode = Some(reply.mode.clone());
                self.chat.entries.push(ChatEntry::Assistant {
                    at,
                    text: reply.reply,
                    mode: reply.mode,
                    tool_calls: reply.tool_calls,
                    tokens: ids,
                });
            }
            Err(e) => {
                if let ApiError::QuotaExceeded { retry_after, .. } = &e {
                    self.quota_until = Some(at + to_delta(*retry_after));
                }
                // The unanswered message stays on screen but leaves the conversation sent next.
                self.chat.history.pop();
                self.chat.entries.push(ChatEntry::Failed {
                    at,
                    error: e.to_string(),
                });
                self.toast(format!("chat failed: {e}"), ToastLevel::Error);
            }
        }
    }

    /// Keys of the tab; true when handled.
    pub(crate) fn on_chat_key(&mut self, action: KeyAction, pane: Pane) -> bool {
        match action {
            KeyAction::Top | KeyAction::Bottom if pane == Pane::ChatLog => {
                self.chat.scroll = self.scroll_end(pane, action);
            }
            KeyAction::Message | KeyAction::Select => self.prefill("/chat "),
            _ => return false,
        }
        true
    }
}
