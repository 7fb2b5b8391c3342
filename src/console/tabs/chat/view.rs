//! Chat: the conversation with the service's agent — messages, the tool calls it made (name, args,
//! result summary or error), the confirm tokens it sent to the inbox — and its mode.

use super::ChatTab;
use crate::console::component::Shown;
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;
use crate::console::tabs::research::view::text_pane;
use crate::console::theme::Theme;
use ratatui::Frame;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

impl ChatTab {
    pub fn draw(&self, f: &mut Frame, s: &Shown) {
        let (theme, screen) = (s.theme, s.screen);
        let key = |a| s.keymap.keys_for(a).first().cloned().unwrap_or_default();
        let mut spans = match self.mode.as_deref() {
            Some("router") => vec![Span::styled(
                " router mode: no LLM is configured, a deterministic intent router answers ",
                app_warn(theme),
            )],
            Some("") | None => vec![Span::styled(" the service's agent ", theme.muted)],
            Some(mode) => vec![Span::styled(format!(" mode: {mode} "), theme.muted)],
        };
        spans.push(Span::styled("· ", theme.muted));
        spans.push(Span::styled(key(KeyAction::Message), theme.accent));
        spans.push(Span::styled(" or :/chat <message> writes", theme.muted));
        f.render_widget(Paragraph::new(Line::from(spans)), screen.banner);

        let area = screen.pane(Pane::ChatLog);
        let lines = super::chat_lines(self, area.width.saturating_sub(2) as usize);
        let mut title = vec![Span::styled(" Chat ", theme.accent)];
        if self.in_flight {
            title.push(Span::styled("the agent is answering… ", theme.warn));
        }
        text_pane(
            f,
            theme,
            area,
            Line::from(title),
            s.focused(Pane::ChatLog),
            &lines,
            self.scroll,
            "ask about positions, strategies or backtests; tools it calls show here",
        );
    }
}

fn app_warn(theme: &Theme) -> ratatui::style::Style {
    theme.warn
}
