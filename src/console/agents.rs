//! State of the agent screens: the research run (Research tab), the tool catalog with its argument
//! editor and foldable result (Tools tab), and the chat with the service's agent (Chat tab). The
//! logic that changes it lives in `app_agents.rs`; drawing in `views/{research,tools,chat}.rs`.

use super::jsontree::JsonTree;
use super::poll::Poll;
use super::schema::{self, Problem};
use crate::api::ApiError;
use crate::api::model::{ChatMessage, ResearchRun, ToolCall, ToolCapability};
use chrono::{DateTime, Utc};
use ratatui_textarea::TextArea;
use serde_json::Value;
use std::time::Duration;

/// Research polling: while a run is active and its tab is on screen.
pub const RESEARCH_POLL_VISIBLE: Duration = Duration::from_secs(2);
/// Research polling otherwise (an active run off screen, or a finished one).
pub const RESEARCH_POLL_IDLE: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Default)]
pub struct ResearchState {
    pub run: Option<ResearchRun>,
    /// The service answered at least once.
    pub checked: bool,
    /// Not scheduled while no run exists or the service has no research operations; a stop
    /// request holds it as in flight too.
    pub poll: Poll,
    pub error: Option<String>,
    /// False once the service showed it has no research operations.
    pub unsupported: bool,
    /// The last reply of the service's command line to a `/research` command.
    pub reply: Option<String>,
    /// Transcript lines scrolled up from the newest (0 follows the newest).
    pub scroll: usize,
}

impl ResearchState {
    pub fn active(&self) -> bool {
        self.run.as_ref().is_some_and(|r| r.status == "active")
    }

    /// Agents as a tree: the lead(s) first, each followed by its workers; (index, depth, last
    /// child of its parent).
    pub fn tree(&self) -> Vec<(usize, usize, bool)> {
        let Some(run) = &self.run else {
            return Vec::new();
        };
        let agents = &run.agents;
        let mut out = Vec::new();
        let mut placed = vec![false; agents.len()];
        let roots: Vec<usize> = (0..agents.len())
            .filter(|i| {
                agents[*i].role == "lead"
                    || agents[*i]
                        .parent
                        .as_ref()
                        .is_none_or(|p| !agents.iter().any(|a| &a.agent_id == p))
            })
            .collect();
        for r in roots {
            if placed[r] {
                continue;
            }
            placed[r] = true;
            out.push((r, 0, false));
            let kids: Vec<usize> = (0..agents.len())
                .filter(|i| {
                    !placed[*i] && agents[*i].parent.as_deref() == Some(&agents[r].agent_id)
                })
                .collect();
            for (k, i) in kids.iter().enumerate() {
                placed[*i] = true;
                out.push((*i, 1, k + 1 == kids.len()));
            }
        }
        for (i, p) in placed.iter().enumerate() {
            if !p {
                out.push((i, 1, false));
            }
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Observe,
    Experiment,
    Mutate,
    Other,
}

impl Tier {
    pub fn of(name: &str) -> Tier {
        match name {
            "observe" => Tier::Observe,
            "experiment" => Tier::Experiment,
            "mutate" => Tier::Mutate,
            _ => Tier::Other,
        }
    }
}

/// The tool argument editor (an overlay over the Tools tab).
#[derive(Debug)]
pub struct ToolEditor {
    pub tool: String,
    pub input: TextArea<'static>,
    /// Problems of the text as it is now (checked on every key).
    pub problems: Vec<Problem>,
    /// The user tried to send while there were problems.
    pub refused: bool,
}

impl ToolEditor {
    pub fn new(tool: &ToolCapability, text: &str) -> ToolEditor {
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        let mut input = TextArea::new(if lines.is_empty() {
            vec![String::new()]
        } else {
            lines
        });
        input.move_cursor(ratatui_textarea::CursorMove::Bottom);
        input.move_cursor(ratatui_textarea::CursorMove::End);
        let mut e = ToolEditor {
            tool: tool.name.clone(),
            input,
            problems: Vec::new(),
            refused: false,
        };
        e.check(&tool.input_schema);
        e
    }

    pub fn text(&self) -> String {
        self.input.lines().join("\n")
    }

    pub fn check(&mut self, schema: &Value) -> Option<Value> {
        let (value, problems) = schema::check_text(schema, &self.text());
        self.problems = problems;
        value.filter(|_| self.problems.is_empty())
    }
}

/// What the result panel shows.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub tool: String,
    pub args: Value,
    pub at: DateTime<Utc>,
    pub result: Result<JsonTree, String>,
    /// Set when the answer was a confirm token, now waiting in the inbox under this id.
    pub awaiting: Option<String>,
}

#[derive(Default)]
pub struct ToolsState {
    /// Sorted by tier (observe, experiment, mutate), then name.
    pub tools: Vec<ToolCapability>,
    pub loaded: bool,
    pub in_flight: bool,
    pub error: Option<String>,
    /// Fetch the catalog at the next schedule.
    pub due: bool,
    /// Tool executions sent and not answered.
    pub running: usize,
    pub outcome: Option<ToolOutcome>,
    /// `/tool` typed before the catalog arrived: (name, args text).
    pub pending: Option<(String, Option<String>)>,
}

impl ToolsState {
    pub fn set_tools(&mut self, mut tools: Vec<ToolCapability>) {
        let rank = |t: &ToolCapability| match Tier::of(&t.tier) {
            Tier::Observe => 0,
            Tier::Experiment => 1,
            Tier::Mutate => 2,
            Tier::Other => 3,
        };
        tools.sort_by(|a, b| rank(a).cmp(&rank(b)).then(a.name.cmp(&b.name)));
        self.tools = tools;
        self.loaded = true;
    }

    pub fn find(&self, name: &str) -> Option<usize> {
        let bare = name.strip_prefix("service_").unwrap_or(name);
        self.tools.iter().position(|t| {
            t.name == name || t.name.strip_prefix("service_") == Some(bare) || t.operation == bare
        })
    }
}

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
pub struct ChatState {
    pub entries: Vec<ChatEntry>,
    /// The conversation as sent to the service (user and assistant turns).
    pub history: Vec<ChatMessage>,
    pub in_flight: bool,
    /// `llm` or `router`, from the last reply.
    pub mode: Option<String>,
    /// Lines scrolled up from the newest.
    pub scroll: usize,
}

/// A line of a wrapped text pane, with what it belongs to (for styling).
#[derive(Debug, Clone, PartialEq)]
pub struct TextLine {
    pub text: String,
    pub style: LineStyle,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineStyle {
    Plain,
    Muted,
    Accent,
    Good,
    Bad,
    Warn,
    Heading,
}

/// Word-wraps `text` to `width` columns; continuation lines start with `indent`.
pub fn wrap(text: &str, width: usize, indent: &str) -> Vec<String> {
    let width = width.max(8);
    let mut out = Vec::new();
    for para in text.split('\n') {
        // Leading spaces are kept: they indent.
        let body = para.trim_start_matches(' ');
        let mut line = " ".repeat(para.len() - body.len());
        let mut len = line.len();
        let lead = len;
        for word in body.split(' ') {
            let wlen = word.chars().count();
            let sep = usize::from(len > lead);
            if len > lead && len + sep + wlen > width {
                out.push(std::mem::take(&mut line));
                line.push_str(indent);
                len = indent.chars().count();
            } else if sep == 1 {
                line.push(' ');
                len += 1;
            }
            // A word longer than the line is cut into pieces.
            let mut rest: Vec<char> = word.chars().collect();
            while len + rest.len() > width && len < width {
                let take = width - len;
                line.extend(rest.drain(..take));
                out.push(std::mem::take(&mut line));
                line.push_str(indent);
                len = indent.chars().count();
            }
            len += rest.len();
            line.extend(rest);
        }
        out.push(line);
    }
    out
}

/// The research transcript as wrapped lines, oldest first.
pub fn transcript_lines(state: &ResearchState, width: usize) -> Vec<TextLine> {
    let mut out = Vec::new();
    let Some(run) = &state.run else {
        return out;
    };
    for m in &run.transcript {
        let head = format!("{} {}: ", m.time.format("%H:%M:%S"), m.author);
        let style = match m.author.as_str() {
            "user" => LineStyle::Accent,
            "lead" => LineStyle::Good,
            "system" => LineStyle::Muted,
            _ => LineStyle::Plain,
        };
        for (i, l) in wrap(&format!("{head}{}", m.text), width, "    ")
            .into_iter()
            .enumerate()
        {
            out.push(TextLine {
                text: l,
                style: if i == 0 { style } else { LineStyle::Plain },
            });
        }
    }
    out
}

/// The chat as wrapped lines, oldest first.
pub fn chat_lines(state: &ChatState, width: usize) -> Vec<TextLine> {
    use super::jsontree::summarize;
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
        other => super::jsontree::cut(&other.to_string(), 60),
    }
}

/// Markdown shown as text: headings emphasized, the rest as written. JSON pretty-printed.
pub fn artifact_lines(kind: &str, content: &str, width: usize) -> Vec<TextLine> {
    let mut out = Vec::new();
    if kind == "json" {
        let text = serde_json::from_str::<Value>(content)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or_else(|| content.to_string());
        for l in text.lines() {
            for w in wrap(l, width, "  ") {
                out.push(TextLine {
                    text: w,
                    style: LineStyle::Plain,
                });
            }
        }
        return out;
    }
    let mut fenced = false;
    for l in content.lines() {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let (text, style) = if fenced {
            (l.to_string(), LineStyle::Muted)
        } else if let Some(h) = l.strip_prefix("# ") {
            (h.to_uppercase(), LineStyle::Heading)
        } else if let Some(h) = l.strip_prefix("## ").or_else(|| l.strip_prefix("### ")) {
            (h.to_string(), LineStyle::Heading)
        } else if let Some(item) = l.strip_prefix("- ").or_else(|| l.strip_prefix("* ")) {
            (format!("• {item}"), LineStyle::Plain)
        } else {
            (l.to_string(), LineStyle::Plain)
        };
        for w in wrap(
            &text,
            width,
            if style == LineStyle::Plain { "  " } else { "" },
        ) {
            out.push(TextLine { text: w, style });
        }
    }
    out
}

/// Parses `expiresAt` as RFC 3339 or epoch milliseconds.
pub fn parse_time(v: &Value) -> Option<DateTime<Utc>> {
    match v {
        Value::String(s) => DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|t| t.with_timezone(&Utc))
            .or_else(|| {
                s.parse::<i64>()
                    .ok()
                    .and_then(DateTime::from_timestamp_millis)
            }),
        Value::Number(n) => n.as_i64().and_then(|ms| {
            if ms < 100_000_000_000 {
                DateTime::from_timestamp(ms, 0)
            } else {
                DateTime::from_timestamp_millis(ms)
            }
        }),
        _ => None,
    }
}

pub fn error_text(e: &ApiError) -> String {
    e.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_words_and_cuts_long_ones() {
        assert_eq!(
            wrap("the quick brown fox jumps", 10, "  "),
            ["the quick", "  brown", "  fox", "  jumps"]
        );
        assert_eq!(wrap("abcdefghijklmnop", 8, ""), ["abcdefgh", "ijklmnop"]);
        assert_eq!(wrap("a\nb", 8, ""), ["a", "b"]);
    }
}
