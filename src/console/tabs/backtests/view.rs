//! Backtests: the jobs this console follows with their progress; the selected job's statistics,
//! equity curve over its drawdown, and trades; and the backtest form.

use super::{BacktestForm, BacktestsTab, FieldKind, JobEntry, fmt_number};
use crate::api::model::BacktestData;
use crate::console::component::Shown;
use crate::console::layout::Pane;
use crate::console::table;
use crate::console::tabs::backtests::rows::{Jobs, Trades};
use crate::console::theme::Theme;
use crate::console::widgets::stats::stat_items;
use crate::console::widgets::{self, pnl_style, px, signed};
use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

fn status_style(theme: &Theme, j: &JobEntry) -> Style {
    if j.failed() {
        theme.bad
    } else if j.finished() {
        theme.good
    } else {
        theme.warn
    }
}

/// `████░░░ 60% running`, or the final status.
fn status_cell<'a>(theme: &Theme, j: &JobEntry) -> Line<'a> {
    if j.gone {
        return Line::styled("unknown job", theme.bad);
    }
    if j.finished() {
        return Line::styled(j.job.status.clone(), status_style(theme, j));
    }
    let width = 7usize;
    let p = j.job.progress.min(100) as usize;
    let filled = p * width / 100;
    let status = if j.job.status.is_empty() {
        "…"
    } else {
        &j.job.status
    };
    Line::from(vec![
        Span::styled("█".repeat(filled), theme.warn),
        Span::styled("░".repeat(width - filled), theme.muted),
        Span::styled(format!(" {p:>3}% {status}"), theme.warn),
    ])
}

impl BacktestsTab {
    pub fn draw(&self, f: &mut Frame, s: &Shown) {
        let (theme, screen) = (s.theme, s.screen);
        let job = s.row(Pane::Jobs).and_then(|r| self.job(r));
        jobs(f, self, s);
        let page = (s.focused(Pane::Stats), s.selected(Pane::Stats));
        stats(f, theme, screen.stats, job, page);
        chart(
            f,
            theme,
            screen.chart,
            job.and_then(|j| j.job.data.as_deref()),
        );
        trades(f, s, job);
    }
}

fn jobs(f: &mut Frame, tab: &BacktestsTab, s: &Shown) {
    let (theme, screen) = (s.theme, s.screen);
    let mut title = vec![Span::styled(
        format!(" {} ", Pane::Jobs.title()),
        theme.accent,
    )];
    if tab.submitting > 0 {
        title.push(Span::styled(
            format!("submitting {}… ", tab.submitting),
            theme.warn,
        ));
    }
    table::draw(
        f,
        screen,
        theme,
        s.tables,
        Pane::Jobs,
        Line::from(title),
        s.focused(Pane::Jobs),
        s.selected(Pane::Jobs),
        &Jobs(&tab.jobs),
        "no backtests yet: b on a Discovery row, or /backtest <strategy> <pair> <tf> <days>",
        |i| {
            let j = &tab.jobs[i];
            let (strategy, pair, tf, days) = j.describe();
            let data = j.job.data.as_deref();
            let ret = data.and_then(|d| d.stats.total_return);
            let submitted = j.job.created_at.unwrap_or(j.first_seen);
            let cells = vec![
                Line::from(j.id().to_string()),
                Line::from(strategy),
                Line::from(pair),
                Line::from(tf),
                Line::from(days.map(|d| d.to_string()).unwrap_or_default()),
                status_cell(theme, j),
                match ret {
                    Some(r) => Line::styled(signed(r, 2), pnl_style(theme, r)),
                    None => Line::from(""),
                },
                Line::from(
                    data.map(|d| d.stats.total_trades.to_string())
                        .unwrap_or_default(),
                ),
                Line::from(submitted.format("%H:%M:%S").to_string()),
            ];
            (cells, None)
        },
    );
}

/// The finished job's statistics in `inner`: how many columns, and how many rows each column has.
fn stats_grid(data: &BacktestData, inner: Rect) -> (Vec<(&'static str, String)>, u16, usize) {
    let items = stat_items(&data.stats, data.days);
    let columns: u16 = if inner.width > 2 * STAT_COL_W { 2 } else { 1 };
    // The first column is filled first when all fit.
    let rows = items
        .len()
        .div_ceil(columns as usize)
        .max(inner.height as usize);
    (items, columns, rows)
}

/// A column of statistics is a 13-cell label, a space and a 9-cell value.
const STAT_COL_W: u16 = 23;

/// How far the statistics of `job` scroll in the pane `area`: the rows of their columns that
/// do not fit (the short panel of an 80x24 terminal shows 7 of 11).
pub fn stats_max_scroll(job: Option<&JobEntry>, area: Rect) -> usize {
    let inner = Rect {
        width: area.width.saturating_sub(2),
        height: area.height.saturating_sub(2),
        ..area
    };
    match job.and_then(|j| {
        j.job
            .data
            .as_deref()
            .filter(|_| j.finished() && !j.failed())
    }) {
        Some(data) => stats_grid(data, inner)
            .2
            .saturating_sub(inner.height as usize),
        None => 0,
    }
}

fn stats(
    f: &mut Frame,
    theme: &Theme,
    area: Rect,
    job: Option<&JobEntry>,
    (focused, scroll): (bool, usize),
) {
    if area.height == 0 {
        return;
    }
    let max = stats_max_scroll(job, area);
    let scroll = scroll.min(max);
    let mut title = vec![Span::styled(
        match job {
            Some(j) => format!(" Statistics · {} ", j.id()),
            None => " Statistics ".to_string(),
        },
        theme.accent,
    )];
    if max > 0 {
        let shown = area.height.saturating_sub(2) as usize;
        title.push(Span::styled(
            format!(
                " rows {}-{} of {} ",
                scroll + 1,
                scroll + shown,
                shown + max
            ),
            theme.muted,
        ));
    }
    let block = widgets::block(theme, Line::from(title), focused);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let Some(j) = job else {
        f.render_widget(
            Paragraph::new(Span::styled("select a job", theme.muted)),
            inner,
        );
        return;
    };
    let mut lines: Vec<Line> = Vec::new();
    if j.failed() {
        lines.push(Line::styled("failed", theme.bad));
        if let Some(e) = &j.job.error {
            lines.push(Line::styled(e.code.clone(), theme.muted));
            lines.push(Line::styled(e.message.clone(), theme.error));
        }
        if let Some(e) = &j.error {
            lines.push(Line::styled(e.clone(), theme.error));
        }
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
        return;
    }
    let Some(data) = j.job.data.as_deref().filter(|_| j.finished()) else {
        lines.push(status_cell(theme, j));
        if let Some(r) = &j.job.request {
            lines.push(Line::styled(
                format!(
                    "{} {} {} {} days",
                    r.strategy_id, r.pair, r.timeframe, r.days
                ),
                theme.muted,
            ));
            lines.push(Line::styled(
                crate::console::tabs::discovery::params_text(&r.parameters),
                theme.muted,
            ));
        }
        if let Some(e) = &j.error {
            lines.push(Line::styled(e.clone(), theme.error));
        }
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
        return;
    };
    // Column-major, two columns when there is room; the most important statistics first. When
    // they do not fit, the columns scroll together.
    let (items, columns, rows) = stats_grid(data, inner);
    let col_w = (inner.width / columns).max(STAT_COL_W + 1).min(inner.width);
    for c in 0..columns {
        let mut col_lines = Vec::new();
        let shown = rows.saturating_sub(scroll).min(inner.height as usize);
        for (label, value) in items.iter().skip(c as usize * rows + scroll).take(shown) {
            let style = if label.ends_with('%') && value.starts_with('-') {
                theme.bad
            } else {
                theme.base
            };
            col_lines.push(Line::from(vec![
                Span::styled(format!("{label:<13} "), theme.muted),
                Span::styled(format!("{value:>9}"), style),
            ]));
        }
        let r = Rect::new(inner.x + c * col_w, inner.y, col_w, inner.height);
        f.render_widget(Paragraph::new(col_lines), r);
    }
}

/// Equity over drawdown, sharing the time axis.
fn chart(f: &mut Frame, theme: &Theme, area: Rect, data: Option<&BacktestData>) {
    if area.height == 0 {
        return;
    }
    let block = widgets::block(
        theme,
        Line::styled(" Equity · drawdown % ", theme.accent),
        false,
    );
    let inner = block.inner(area);
    f.render_widget(block, area);
    let points = data.map(|d| d.equity.as_slice()).unwrap_or_default();
    // The service's own drawdown, not one worked out here: the chart says what the statistics do.
    widgets::chart::equity(
        f.buffer_mut(),
        inner,
        theme,
        widgets::chart::EquityChart {
            name: "Equity",
            equity: points.iter().map(|p| (p.t as f64, p.equity)),
            drawdown: points.iter().map(|p| (p.t as f64, p.drawdown)),
            empty: "no equity curve yet",
        },
    );
}

fn trades(f: &mut Frame, s: &Shown, job: Option<&JobEntry>) {
    let (theme, screen) = (s.theme, s.screen);
    let data = job.and_then(|j| j.job.data.as_deref());
    let trades = data.map(|d| d.trades.as_slice()).unwrap_or_default();
    table::draw(
        f,
        screen,
        theme,
        s.tables,
        Pane::Trades,
        Line::from(Span::styled(
            format!(" {} ", Pane::Trades.title()),
            theme.accent,
        )),
        s.focused(Pane::Trades),
        s.selected(Pane::Trades),
        &Trades(trades),
        "no trades",
        |i| {
            let t = &trades[i];
            let dir_style = if t.direction == "long" {
                theme.good
            } else {
                theme.bad
            };
            let cells = vec![
                Line::from((i + 1).to_string()),
                Line::styled(t.direction.clone(), dir_style),
                Line::from(t.entry_time.format("%m-%d %H:%M").to_string()),
                Line::from(t.exit_time.format("%m-%d %H:%M").to_string()),
                Line::from(px(t.entry_px)),
                Line::from(px(t.exit_px)),
                Line::styled(signed(t.return_pct, 2), pnl_style(theme, t.return_pct)),
                Line::styled(signed(t.pnl, 2), pnl_style(theme, t.pnl)),
                Line::from(t.bars.to_string()),
                Line::from(t.exit_reason.replace('_', " ")),
            ];
            (cells, None)
        },
    );
}

/// The backtest form: one line per field, its error beside it.
pub fn form(f: &mut Frame, theme: &Theme, area: Rect, form: &BacktestForm) {
    let height = form.fields.len() as u16 + 4;
    let r = widgets::centered(area, area.width.saturating_sub(4).min(76), height);
    f.render_widget(Clear, r);
    let block = widgets::block(
        theme,
        Line::from(" Backtest — Tab next field · Enter run · Esc cancel "),
        true,
    );
    let inner = block.inner(r);
    f.render_widget(block, r);
    const LABEL: u16 = 15;
    const VALUE: u16 = 18;
    let mut cursor = None;
    for (i, field) in form.fields.iter().enumerate() {
        let y = inner.y + i as u16;
        if y >= inner.y + inner.height {
            break;
        }
        let focused = i == form.focus;
        let value_style = if focused { theme.selected } else { theme.base };
        let hint = match &field.kind {
            FieldKind::Param {
                integer,
                min: Some(lo),
                max: Some(hi),
            } => format!(
                "{} {}..{}",
                if *integer { "int" } else { "num" },
                fmt_number(*lo),
                fmt_number(*hi)
            ),
            _ => String::new(),
        };
        let mut spans = vec![
            Span::styled(
                format!("{:>w$} ", field.label, w = LABEL as usize - 1),
                theme.muted,
            ),
            Span::styled(
                format!("{:<w$}", field.value, w = VALUE as usize),
                value_style,
            ),
            Span::raw(" "),
        ];
        match &field.error {
            Some(e) => spans.push(Span::styled(e.clone(), theme.error)),
            None => spans.push(Span::styled(hint, theme.muted)),
        }
        f.render_widget(
            Paragraph::new(Line::from(spans)),
            Rect::new(inner.x, y, inner.width, 1),
        );
        if focused {
            let x = inner.x + LABEL + (field.value.chars().count() as u16).min(VALUE);
            cursor = Some(Position::new(x.min(inner.x + inner.width - 1), y));
        }
    }
    let errors = form.fields.iter().filter(|f| f.error.is_some()).count();
    if errors > 0 {
        let y = inner.y + inner.height.saturating_sub(1);
        f.render_widget(
            Paragraph::new(Span::styled(
                format!("{errors} field(s) to fix: nothing was sent"),
                theme.error,
            )),
            Rect::new(inner.x, y, inner.width, 1),
        );
    }
    if let Some(c) = cursor {
        f.set_cursor_position(c);
    }
}
