//! The help overlay: every key (from the keymap in force) and every command.

use super::widgets;
use crate::console::app::App;
use crate::console::command::COMMANDS;
use crate::console::keymap::KeyAction;
use crate::console::theme::Theme;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

const KEYS: &[(KeyAction, &str)] = &[
    (KeyAction::Up, "move up"),
    (KeyAction::Down, "move down"),
    (KeyAction::PageUp, "page up"),
    (KeyAction::PageDown, "page down"),
    (KeyAction::Top, "first row"),
    (KeyAction::Bottom, "last row"),
    (KeyAction::FocusNext, "next pane"),
    (KeyAction::FocusPrev, "previous pane"),
    (KeyAction::NextTab, "next tab"),
    (KeyAction::PrevTab, "previous tab"),
    (KeyAction::Select, "open (strip → inbox)"),
    (KeyAction::Approve, "approve the selected proposal (then y)"),
    (KeyAction::ConfirmYes, "yes, in a dialog"),
    (KeyAction::Reject, "reject (dismiss) the selected proposal"),
    (KeyAction::Cancel, "close a dialog"),
    (KeyAction::Refresh, "refresh everything now"),
    (KeyAction::Filter, "filter the logs"),
    (KeyAction::CommandLine, "command line"),
    (KeyAction::Help, "this help"),
    (KeyAction::Quit, "quit"),
];

pub fn draw(f: &mut Frame, app: &App, theme: &Theme, area: Rect) {
    let r = widgets::centered(area, 84, area.height.saturating_sub(2));
    f.render_widget(Clear, r);
    let mut lines = vec![Line::styled("Keys", theme.accent)];
    for (action, what) in KEYS {
        let keys = app.keymap.keys_for(*action).join(" ");
        lines.push(Line::from(vec![
            Span::styled(format!("  {keys:<16}"), theme.base.patch(theme.accent)),
            Span::styled(*what, theme.base),
        ]));
    }
    lines.push(Line::from(vec![
        Span::styled(format!("  {:<16}", "1-9"), theme.base.patch(theme.accent)),
        Span::styled("switch tab", theme.base),
    ]));
    lines.push(Line::raw(""));
    lines.push(Line::styled("Commands (after :)", theme.accent));
    for c in COMMANDS {
        lines.push(Line::from(vec![
            Span::styled(format!("  {:<44}", c.usage), theme.base.patch(theme.accent)),
            Span::styled(c.summary, theme.base),
        ]));
    }
    let p = Paragraph::new(lines)
        .block(widgets::block(
            theme,
            Line::from(" Help — Esc closes "),
            true,
        ))
        .style(theme.base)
        .wrap(Wrap { trim: false });
    f.render_widget(p, r);
}
