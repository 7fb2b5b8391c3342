//! The help overlay: every key (from the keymap in force) and every command.

use crate::console::app::App;
use crate::console::command::COMMANDS;
use crate::console::keymap::KeyAction;
use crate::console::theme::Theme;
use crate::console::widgets;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

const KEYS: &[(KeyAction, &str)] = &[
    (KeyAction::Up, "move up"),
    (KeyAction::Down, "move down"),
    (KeyAction::PageUp, "page up"),
    (KeyAction::PageDown, "page down"),
    (
        KeyAction::Top,
        "first row of a list, oldest line of a transcript",
    ),
    (
        KeyAction::Bottom,
        "last row of a list, newest line of a transcript",
    ),
    (KeyAction::FocusNext, "next pane"),
    (KeyAction::FocusPrev, "previous pane"),
    (KeyAction::NextTab, "next tab"),
    (KeyAction::PrevTab, "previous tab"),
    (
        KeyAction::Select,
        "open (strip → inbox, Discovery row details)",
    ),
    (
        KeyAction::Approve,
        "approve the selected proposal (after a quiet moment; then read, then y)",
    ),
    (
        KeyAction::ConfirmYes,
        "yes, in a dialog: a second after it opened, on its own, then any key cancels",
    ),
    (
        KeyAction::Override,
        "approve dialog on a gateway: override broken rules (type the coin, Enter)",
    ),
    (
        KeyAction::Policy,
        "on a gateway: the policy in force (as /policy)",
    ),
    (KeyAction::Reject, "reject (dismiss) the selected proposal"),
    (
        KeyAction::Undo,
        "undo a dismissal while the proposal is live",
    ),
    (KeyAction::Cancel, "close a dialog"),
    (KeyAction::Left, "previous Discovery view"),
    (KeyAction::Right, "next Discovery view"),
    (
        KeyAction::SortNext,
        "sort the focused table by its next field (a header click sorts by that column)",
    ),
    (KeyAction::SortReverse, "reverse the focused table's order"),
    (
        KeyAction::Backtest,
        "backtest form from the selected row or job",
    ),
    (
        KeyAction::Propose,
        "prefill /propose for the selected row's coin",
    ),
    (
        KeyAction::NewRun,
        "Research: prefill /research start on the command line",
    ),
    (
        KeyAction::Message,
        "Research: prefill /research say; Chat: prefill /chat",
    ),
    (KeyAction::StopRun, "Research: stop the active run (then y)"),
    (KeyAction::Toggle, "Tools: fold / unfold the JSON node"),
    (
        KeyAction::Fanout,
        "Signals: toggle the fan-out default of /trade",
    ),
    (
        KeyAction::BuilderFee,
        "Signals: builder-fee panel (y signs with AGENTDESK_WALLET_KEY)",
    ),
    (
        KeyAction::Copy,
        "copy the selected row's id (the proposal's on the Desk), or the signing secret shown once (OSC 52)",
    ),
    (
        KeyAction::Zoom,
        "zoom the focused pane to the whole screen (again: back)",
    ),
    (KeyAction::Refresh, "refresh everything now"),
    (
        KeyAction::Filter,
        "filter the focused table: words, field:value (status:pending agent:demo coin:btc \
         notional:>1000, -word excludes); esc clears",
    ),
    (KeyAction::CommandLine, "command line"),
    (KeyAction::Help, "this help"),
    (KeyAction::Quit, "quit"),
];

/// Where the help overlay sits on a screen of `area`.
fn frame(area: Rect) -> Rect {
    widgets::centered(
        area,
        area.width.saturating_sub(4).min(110),
        area.height.saturating_sub(2),
    )
}

/// How far the help scrolls on a screen of `size`: until its last line is at the bottom.
pub fn max_scroll(app: &App, size: (u16, u16)) -> u16 {
    let r = frame(Rect::new(0, 0, size.0, size.1));
    let theme = Theme::default();
    (lines(app, &theme).len() as u16).saturating_sub(r.height.saturating_sub(2))
}

pub fn draw(f: &mut Frame, app: &App, theme: &Theme, area: Rect, scroll: u16) {
    let r = frame(area);
    f.render_widget(Clear, r);
    let lines = lines(app, theme);
    // Scrolling stops where the last line is at the bottom.
    let visible = r.height.saturating_sub(2);
    let scroll = scroll.min((lines.len() as u16).saturating_sub(visible));
    let title = if lines.len() as u16 > visible {
        " agentdesk console help — / search, j/k scroll, g/G top/bottom, Esc closes "
    } else {
        " agentdesk console help — / search, Esc closes "
    };
    let p = Paragraph::new(lines)
        .block(widgets::block(theme, Line::from(title), true))
        .style(theme.base)
        .scroll((scroll, 0));
    f.render_widget(p, r);
}

/// The help's lines: everything, or (searching) the keys and commands that mention the query,
/// under a line that says what is searched.
fn lines(app: &App, theme: &Theme) -> Vec<Line<'static>> {
    let (query, typing) = match app.modal() {
        Some(crate::console::modal::Modal::Help { query, typing, .. }) => (query.as_str(), *typing),
        _ => ("", false),
    };
    let all = entries(app, theme);
    if query.is_empty() && !typing {
        return all.into_iter().flatten().collect();
    }
    let needle = query.to_lowercase();
    let text = |l: &Line| -> String { l.spans.iter().map(|s| s.content.as_ref()).collect() };
    let found: Vec<Vec<Line<'static>>> = all
        .into_iter()
        // Keys, commands and the connect lines (indented); not the section titles.
        .filter(|e| e.first().is_some_and(|l| text(l).starts_with("  ")))
        .filter(|e| e.iter().any(|l| text(l).to_lowercase().contains(&needle)))
        .collect();
    let mut lines = vec![
        Line::styled(
            format!(
                "search: {query}{} — {} found ({})",
                if typing { "▏" } else { "" },
                found.len(),
                if typing {
                    "enter keeps it, esc clears it"
                } else {
                    "/ edits it, esc clears it"
                }
            ),
            theme.accent,
        ),
        Line::raw(""),
    ];
    if found.is_empty() {
        lines.push(Line::styled("  nothing mentions it", theme.muted));
    }
    lines.extend(found.into_iter().flatten());
    lines
}

/// The help as entries: a section's title, a key, a command (its usage and summary together),
/// or an empty line between sections.
fn entries(app: &App, theme: &Theme) -> Vec<Vec<Line<'static>>> {
    let mut lines: Vec<Vec<Line<'static>>> = Vec::new();
    if let Some(reason) = crate::console::gate::guard::kill_reason(app.gate().kill()) {
        lines.push(vec![Line::styled(
            format!(
                "KILL SWITCH ON: {}",
                crate::console::gate::guard::kill_refusal(&reason)
            ),
            theme.bad,
        )]);
        lines.push(vec![Line::raw("")]);
    }
    if let Some(connect) = app.gate().connect() {
        lines.push(vec![Line::styled("Connect an agent", theme.accent)]);
        for l in connect.lines() {
            lines.push(vec![Line::styled(format!("  {l}"), theme.base)]);
        }
        lines.push(vec![Line::raw("")]);
    }
    lines.push(vec![Line::styled("Keys", theme.accent)]);
    for (action, what) in KEYS {
        let keys = app.keymap().keys_for(*action).join(" ");
        lines.push(vec![Line::from(vec![
            Span::styled(format!("  {keys:<16}"), theme.base.patch(theme.accent)),
            Span::styled(*what, theme.base),
        ])]);
    }
    lines.push(vec![Line::from(vec![
        Span::styled(format!("  {:<16}", "1-9"), theme.base.patch(theme.accent)),
        Span::styled("switch tab", theme.base),
    ])]);
    lines.push(vec![Line::raw("")]);
    lines.push(vec![Line::styled(
        "Commands (after :) — [service] ones are answered by the service's command line",
        theme.accent,
    )]);
    // Usage and summary on lines of their own: a usage line is long, and cutting either hides
    // what the command takes or does.
    for c in COMMANDS {
        lines.push(vec![
            Line::from(vec![
                Span::styled(format!("  {}", c.usage), theme.base.patch(theme.accent)),
                Span::styled(if c.service { "  [service]" } else { "" }, theme.muted),
            ]),
            Line::styled(format!("      {}", c.summary), theme.base),
        ]);
    }
    lines
}
