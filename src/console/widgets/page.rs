//! A bordered pane of wrapped text scrolled from its top line (the inbox detail, a tool's schema):
//! it takes the focus like a table and scrolls with the cursor keys, and its title says which
//! lines are shown when not all fit, as a table's says which rows.

use crate::console::layout::text_rows;
use crate::console::theme::Theme;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

fn paragraph<'a>(lines: Vec<Line<'a>>) -> Paragraph<'a> {
    Paragraph::new(lines).wrap(Wrap { trim: false })
}

/// The first line `lines` can be scrolled to in `area` (borders included): the last line then
/// sits on the bottom row.
pub fn max_scroll(lines: Vec<Line<'_>>, area: Rect) -> usize {
    paragraph(lines)
        .line_count(area.width.saturating_sub(2))
        .saturating_sub(text_rows(area))
}

/// Draws `lines` in a bordered `area`, from wrapped line `scroll` (kept within the text).
pub fn draw<'a>(
    f: &mut Frame,
    theme: &Theme,
    area: Rect,
    mut title: Line<'a>,
    focused: bool,
    lines: Vec<Line<'a>>,
    scroll: usize,
) {
    if area.height == 0 {
        return;
    }
    let p = paragraph(lines);
    let total = p.line_count(area.width.saturating_sub(2));
    let rows = text_rows(area);
    let scroll = scroll.min(total.saturating_sub(rows));
    if total > rows && rows > 0 {
        title.spans.push(Span::styled(
            format!(" {}-{} of {} ", scroll + 1, scroll + rows, total),
            theme.muted,
        ));
    }
    let block = super::block(theme, title, focused);
    let scroll = scroll.min(u16::MAX as usize) as u16;
    f.render_widget(p.block(block).scroll((scroll, 0)), area);
}
