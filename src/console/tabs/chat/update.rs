//! The Chat tab's update: sending the conversation, the agent's replies, and its keys. The confirm
//! tokens a reply carries go to the inbox, which is App's: App puts them there and hands this tab
//! their inbox ids (`app/route.rs`).

use super::{ChatEntry, ChatTab};
use crate::api::ApiError;
use crate::api::model::{ChatMessage, ChatReply};
use crate::console::action::Effect;
use crate::console::component::{Ask, Ctx, TabComponent, ToastLevel};
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;
use crate::console::poll::to_delta;
use chrono::{DateTime, Utc};

impl ChatTab {
    pub fn send(&mut self, text: String, ctx: &mut Ctx) {
        if self.in_flight {
            ctx.toast(
                "the agent is still answering the last message",
                ToastLevel::Error,
            );
            return;
        }
        if ctx.posts_held() {
            return;
        }
        self.entries.push(ChatEntry::User {
            at: ctx.now,
            text: text.clone(),
        });
        self.history.push(ChatMessage {
            role: "user".into(),
            content: text,
        });
        self.in_flight = true;
        self.scroll = 0;
        ctx.fx.push(Effect::Chat(self.history.clone()));
    }

    /// `tokens`: the inbox ids of the reply's confirm tokens, already in the inbox.
    pub fn on_answered(
        &mut self,
        result: Result<Box<ChatReply>, ApiError>,
        tokens: Vec<String>,
        at: DateTime<Utc>,
        ctx: &mut Ctx,
    ) {
        self.in_flight = false;
        self.scroll = 0;
        match result {
            Ok(reply) => {
                let reply = *reply;
                self.history.push(ChatMessage {
                    role: "assistant".into(),
                    content: reply.reply.clone(),
                });
                self.mode = Some(reply.mode.clone());
                self.entries.push(ChatEntry::Assistant {
                    at,
                    text: reply.reply,
                    mode: reply.mode,
                    tool_calls: reply.tool_calls,
                    tokens,
                });
            }
            Err(e) => {
                if let ApiError::QuotaExceeded { retry_after, .. } = &e {
                    ctx.ask(Ask::HoldPosts(at + to_delta(*retry_after)));
                }
                // The unanswered message stays on screen but leaves the conversation sent next.
                self.history.pop();
                self.entries.push(ChatEntry::Failed {
                    at,
                    error: e.to_string(),
                });
                ctx.toast(format!("chat failed: {e}"), ToastLevel::Error);
            }
        }
    }
}

impl TabComponent for ChatTab {
    /// Keys of the tab; true when handled. Scrolling the chat is the router's, as for every
    /// pane.
    fn on_key(&mut self, action: KeyAction, _pane: Pane, ctx: &mut Ctx) -> bool {
        match action {
            KeyAction::Message | KeyAction::Select => ctx.ask(Ask::Prefill("/chat ".into())),
            _ => return false,
        }
        true
    }
}
