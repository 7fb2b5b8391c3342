//! The gateway's agents as the console lists them (`/agents`): each with its state, so a
//! supervisor sees at a glance which one is suspended, by whom and why, next to how it connects
//! and what it has waiting. Lower layer: lines and the panel; `app/guard.rs` opens it.

use super::super::theme::Theme;
use crate::api::model::GateAgent;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

pub fn agents_lines<'a>(theme: &Theme, agents: &[GateAgent]) -> Vec<Line<'a>> {
    let mut lines = Vec::new();
    if agents.is_empty() {
        lines.push(Line::styled(
            "No agent has used this gateway yet.",
            theme.muted,
        ));
    }
    for a in agents {
        let mut head = vec![
            Span::styled(
                format!("{:<16} ", a.agent),
                theme.accent.add_modifier(Modifier::BOLD),
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
        head.push(Span::raw(format!(" · {} pending{via}", a.pending)));
        lines.push(Line::from(head));
        if let Some(s) = &a.suspension {
            lines.push(Line::styled(
                format!(
                    "  by {} at {}: {}",
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
        "/suspend <agent> <reason> stops one (asks first) · /resume <agent> (admin) ends it",
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
) {
    let lines = agents_lines(theme, agents);
    super::super::widgets::lines_panel(f, theme, area, "Agents", lines, scroll);
}
