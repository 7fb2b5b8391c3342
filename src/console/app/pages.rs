//! Text panes scrolled from the top (`Pane::is_text`): the inbox detail, a tool's schema, a
//! backtest's statistics. Their first line shown is kept in `selected`, as a table's cursor, and
//! kept within the text at the terminal's size, so the first key after End moves at once.

use crate::console::app::App;
use crate::console::layout::{self, Pane};
use crate::console::theme::Theme;
use crate::console::widgets::page;

impl App {
    /// The furthest a text pane scrolls: its wrapped lines beyond one screenful.
    pub(crate) fn page_max_scroll(&self, pane: Pane) -> usize {
        let screen = layout::compute(self.size.0, self.size.1, &self.shape());
        let area = screen.pane(pane);
        // Styles do not change how text wraps: any theme measures it.
        let theme = Theme::default();
        match pane {
            Pane::Detail => {
                let v = self.inbox_shown();
                let selected = v
                    .inbox
                    .selection(Pane::Inbox)
                    .id
                    .as_deref()
                    .filter(|_| v.inbox.row(Pane::Inbox, v.now, v.tables).is_some());
                match selected.and_then(|id| v.inbox.item(id)) {
                    Some(item) => page::max_scroll(
                        crate::console::tabs::proposals::view::detail_lines(&v, &theme, item),
                        area,
                    ),
                    None => 0,
                }
            }
            Pane::Schema => {
                let tools = &self.tabs.tools;
                let row = self.row(Pane::Tools).unwrap_or(usize::MAX);
                let lines = tools.schema_lines(&theme, self.keymap(), row);
                page::max_scroll(lines, area)
            }
            Pane::Stats => {
                crate::console::tabs::backtests::stats_max_scroll(self.selected_job(), area)
            }
            _ => 0,
        }
    }

    /// Scrolls a text pane by `delta` lines (`i64::MIN`: to the top, `i64::MAX`: to the end).
    pub(crate) fn scroll_page(&mut self, pane: Pane, delta: i64) {
        let max = self.page_max_scroll(pane) as i64;
        let cur = self.selected.get(&pane).copied().unwrap_or(0) as i64;
        let to = cur.saturating_add(delta).clamp(0, max);
        self.selected.insert(pane, to as usize);
    }
}
