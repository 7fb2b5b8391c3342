//! The gateway's agents as the console lists them (`/agents`): each with its state, so a
//! supervisor sees at a glance which one is suspended, by whom and why, next to how it connects
//! and what it has waiting. Lower layer: lines and the panel; `app/guard.rs` opens it.

use super::super::theme::Theme;
use crate::api::model::GateAgent;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

/// The panel's line where agent `i` begins: one line each, two for a suspended one.
pub fn head_line(agents: &[GateAgent], i: usize) -> usize {
    agents
        .iter()
        .take(i)
        .map(|a| 1 + usize::from(a.suspension.is_some()))
        .sum()
}

/// Each agent with its state and today's executions; `selected` is marked, for `s` and `r`.
pub fn agents_lines<'a>(theme: &Theme, agents: &[GateAgent], selected: usize) -> Vec<Line<'a>> {
    let mut lines = Vec::new();
    if agents.is_empty() {
        lines.push(Line::styled(
            "No agent has used this gateway yet.",
            theme.muted,
        ));
    }
    for (i, a) in agents.iter().enumerate() {
        let mark = if i == selected { "▶ " } else { "  " };
        let name = theme.accent.add_modifier(Modifier::BOLD);
        let mut head = vec![
            Span::styled(mark, name),
            Span::styled(
                format!("{:<16} ", a.agent),
                if i == selected {
                    name.add_modifier(Modifier::REVERSED)
                } else {
                    name
                },
            ),
            Span::styled(format!("{:<9} ", a.fingerprint), theme.muted),
        ];
        match &a.suspension {
            Some(_) => head.push(Span::styled(
                "SUSPENDED",
                theme.bad.add_modifier(Modifier::BOLD),
            )),
            None => head.push(Span::styled("active", theme.good)),
        }
        let via = match a.transport.as_deref() {
            Some("mcp") => " · via MCP",
            Some("rest") => " · via REST",
            _ => "",
        };
        head.push(Span::raw(format!(
            " · {} pending · {} executed today ({} USD){via}",
            a.pending,
            a.executions_today,
            crate::console::widgets::size((a.notional_today * 100.0).round() / 100.0)
        )));
        lines.push(Line::from(head));
        if let Some(s) = &a.suspension {
            lines.push(Line::styled(
                format!(
                    "    by {} at {}: {}",
                    s.by,
                    s.at.format("%Y-%m-%d %H:%M UTC"),
                    s.reason
                ),
                theme.bad,
            ));
        }
    }
    lines.push(Line::from(""));
    lines.push(Line::styled(
        "↑↓ choose · s suspend (then the reason; asks first) · r resume (admin) · esc close",
        theme.muted,
    ));
    lines
}

pub fn agents_panel(
    f: &mut ratatui::Frame,
    theme: &Theme,
    area: ratatui::layout::Rect,
    agents: &[GateAgent],
    scroll: u16,
    selected: usize,
) {
    let lines = agents_lines(theme, agents, selected);
    super::super::widgets::lines_panel(f, theme, area, "Agents", lines, scroll);
}
