//! The Chat tab: the conversation with the service's agent, its tool calls, and the confirm tokens
//! it sent to the approval inbox.

mod update;
pub mod view;

use crate::api::model::{ChatMessage, ToolCall};
use crate::console::widgets::text::{LineStyle, TextLine, wrap};
use chrono::{DateTime, Utc};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub enum ChatEntry {
    User {
        at: DateTime<Utc>,
        text: String,
    },
    Assistant {
        at: DateTime<Utc>,
        text: String,
        mode: String,
        tool_calls: Vec<ToolCall>,
        /// Inbox ids of the confirm tokens this reply sent there.
        tokens: Vec<String>,
    },
    Failed {
        at: DateTime<Utc>,
        error: String,
    },
}

#[derive(Debug, Clone, Default)]
pub struct ChatTab {
    entries: Vec<ChatEntry>,
    /// The conversation as sent to the service (user and assistant turns).
    history: Vec<ChatMessage>,
    in_flight: bool,
    /// `llm` or `router`, from the last reply.
    mode: Option<String>,
    /// Lines scrolled up from the newest.
    scroll: usize,
}

impl ChatTab {
    /// `llm` or `router`, from the last reply.
    pub fn mode(&self) -> Option<&str> {
        self.mode.as_deref()
    }

    /// Lines scrolled up from the newest; the router scrolls text panes (`app/input.rs`).
    pub fn scroll_mut(&mut self) -> &mut usize {
        &mut self.scroll
    }
}

/// The chat as wrapped lines, oldest first.
pub fn chat_lines(state: &ChatTab, width: usize) -> Vec<TextLine> {
    use crate::console::widgets::jsontree::summarize;
    let mut out = Vec::new();
    let mut push = |text: String, style: LineStyle, indent: &str| {
        for (i, l) in wrap(&text, width, indent).into_iter().enumerate() {
            out.push(TextLine {
                text: l,
                style: if i == 0 { style } else { LineStyle::Plain },
            });
        }
    };
    for e in &state.entries {
        match e {
            ChatEntry::User { at, text } => {
                push(
                    format!("{} you", at.format("%H:%M:%S")),
                    LineStyle::Accent,
                    "",
                );
                push(format!("  {text}"), LineStyle::Plain, "  ");
            }
            ChatEntry::Assistant {
                at,
                text,
                mode,
                tool_calls,
                tokens,
            } => {
                let how = if mode == "router" {
                    " (router: no LLM configured)".to_string()
                } else if mode.is_empty() {
                    String::new()
                } else {
                    format!(" ({mode})")
                };
                push(
                    format!("{} assistant{how}", at.format("%H:%M:%S")),
                    LineStyle::Good,
                    "",
                );
                for call in tool_calls {
                    let args = jsontree_args(&call.args);
                    match &call.error {
                        Some(err) => push(
                            format!(
                                "  ⚙ {}({args}) → error {}: {}",
                                call.name, err.code, err.message
                            ),
                            LineStyle::Bad,
                            "      ",
                        ),
                        None => push(
                            format!(
                                "  ⚙ {}({args}) → {}",
                                call.name,
                                summarize(&call.result, 60)
                            ),
                            LineStyle::Muted,
                            "      ",
                        ),
                    }
                }
                push(format!("  {text}"), LineStyle::Plain, "  ");
                if !tokens.is_empty() {
                    push(
                        format!(
                            "  ⚑ sent to the approval inbox: {} (a, then y, on tab 2)",
                            tokens.join(", ")
                        ),
                        LineStyle::Warn,
                        "    ",
                    );
                }
            }
            ChatEntry::Failed { at, error } => push(
                format!("{} chat failed: {error}", at.format("%H:%M:%S")),
                LineStyle::Bad,
                "  ",
            ),
        }
    }
    out
}

fn jsontree_args(args: &Value) -> String {
    match args {
        Value::Object(m) if m.is_empty() => String::new(),
        Value::Null => String::new(),
        other => crate::console::widgets::jsontree::cut(&other.to_string(), 60),
    }
}
