//! The Research tab: the service's research run — its lead and agents, artifacts and transcript —
//! polled while a run exists, and the `/research` commands sent to the service's command line.

pub mod rows;
mod update;
pub mod view;

use crate::api::model::ResearchRun;
use crate::console::poll::Poll;
use crate::console::widgets::text::{LineStyle, TextLine, wrap};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::time::Duration;

/// Research polling: while a run is active and its tab is on screen.
pub const RESEARCH_POLL_VISIBLE: Duration = Duration::from_secs(2);
/// Research polling otherwise (an active run off screen, or a finished one).
pub const RESEARCH_POLL_IDLE: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Default)]
pub struct ResearchTab {
    run: Option<ResearchRun>,
    /// The service answered at least once.
    checked: bool,
    /// Not scheduled while no run exists or the service has no research operations; a stop
    /// request holds it as in flight too.
    poll: Poll,
    error: Option<String>,
    /// False once the service showed it has no research operations.
    unsupported: bool,
    /// The last reply of the service's command line to a `/research` command.
    reply: Option<String>,
    /// Transcript lines scrolled up from the newest (0 follows the newest).
    scroll: usize,
}

impl ResearchTab {
    /// Checked once at start; polled on only while a run exists.
    pub fn new(now: DateTime<Utc>) -> Self {
        ResearchTab {
            poll: Poll::due_now(now),
            ..Default::default()
        }
    }

    /// A tab showing `run`, as a test draws it.
    #[cfg(test)]
    pub fn showing(run: ResearchRun) -> Self {
        ResearchTab {
            run: Some(run),
            ..Default::default()
        }
    }

    pub fn run(&self) -> Option<&ResearchRun> {
        self.run.as_ref()
    }

    /// Rows of the Artifacts pane.
    pub fn artifacts(&self) -> usize {
        self.run.as_ref().map_or(0, |r| r.artifacts.len())
    }

    /// False once the service showed it has no research operations.
    pub fn supported(&self) -> bool {
        !self.unsupported
    }

    /// When the run is asked for next, if it is.
    pub fn wakeup(&self) -> Option<DateTime<Utc>> {
        if self.unsupported {
            None
        } else {
            self.poll.wakeup()
        }
    }

    #[cfg(test)]
    pub fn poll(&self) -> &Poll {
        &self.poll
    }

    /// The last reply of the service's command line to a `/research` command.
    pub fn reply(&self) -> Option<&str> {
        self.reply.as_deref()
    }

    #[cfg(test)]
    pub fn set_reply(&mut self, reply: String) {
        self.reply = Some(reply);
    }

    /// Transcript lines scrolled up from the newest; the router scrolls text panes.
    pub fn scroll(&self) -> usize {
        self.scroll
    }

    pub fn scroll_mut(&mut self) -> &mut usize {
        &mut self.scroll
    }

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

/// The research transcript as wrapped lines, oldest first.
pub fn transcript_lines(state: &ResearchTab, width: usize) -> Vec<TextLine> {
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
        // Fields the service sent that we do not read, after the text as `key=value`.
        let mut text = m.text.clone();
        for pair in crate::api::model::extra_pairs(&m.extra) {
            text.push_str(&format!(" [{pair}]"));
        }
        for (i, l) in wrap(&format!("{head}{text}"), width, "    ")
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
    let all: Vec<&str> = content.lines().collect();
    let mut at = 0;
    while at < all.len() {
        let l = all[at];
        at += 1;
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        // A pipe table shows as a table: aligned columns, a rule under the header.
        let table = if fenced {
            0
        } else {
            crate::console::widgets::text::pipe_table_len(&all, at - 1)
        };
        if table > 0 {
            out.extend(crate::console::widgets::text::pipe_table(
                &all[at - 1..at - 1 + table],
                width,
            ));
            at += table - 1;
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
