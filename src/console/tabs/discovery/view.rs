//! Discovery: the strategy catalog and the three ranked views (top backtests, top live, optimized
//! combos), each under its query line, sorted and filtered through the index the app keeps; and the
//! details overlay of the selected row.

use super::DiscoveryTab;
use crate::api::model::{DiscoveryRow, StrategyEntry};
use crate::console::component::Shown;
use crate::console::keymap::Keymap;
use crate::console::layout::{self, Screen};
use crate::console::table::{self, Rows};
use crate::console::tabs::discovery::{DView, Selected, params_text, row_name};
use crate::console::theme::Theme;
use crate::console::widgets::stats::{few_trades, stat_items};
use crate::console::widgets::{self, age, opt, pnl_style, signed};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

fn quality_style(theme: &Theme, q: &str) -> Style {
    match q {
        "excellent" => theme.good,
        "good" => theme.accent,
        _ => theme.muted,
    }
}

impl DiscoveryTab {
    pub fn draw(&self, f: &mut Frame, s: &Shown) {
        draw(f, self, s);
    }
}

fn draw(f: &mut Frame, tab: &DiscoveryTab, on: &Shown) {
    let (theme, screen) = (on.theme, on.screen);
    selector(f, tab, theme, screen);
    query_line(f, tab, on, screen.query);
    let view = tab.view;
    let st = tab.state(view);
    let mut title = vec![Span::styled(format!(" {} ", view.title()), theme.accent)];
    let pane = view.pane();
    let rows = tab.table(view);
    let total = rows.len();
    // The count is of what shows: a filter hides rows, the service may hold more than it sent.
    let shown = on.tables.len(pane, total);
    let held = match st.feed.count {
        Some(c) if c as usize > total => c as usize,
        _ => total,
    };
    let count = if shown < held {
        format!("{shown} of {held} rows ")
    } else {
        format!("{shown} rows ")
    };
    title.push(Span::styled(count, theme.muted));
    let focused = true;
    let selected = on.selected(pane);
    let empty = if st.feed.poll.in_flight && st.feed.poll.updated_at.is_none() {
        "loading…"
    } else if st.feed.computing {
        "the service is still computing: rows appear as they are ready"
    } else {
        "no rows"
    };
    let title = Line::from(title);
    table::draw(
        f,
        screen,
        theme,
        on.tables,
        pane,
        title,
        focused,
        selected,
        &rows,
        empty,
        |i| match tab.get(view, i) {
            Some(Selected::Strategy(s)) => (strategy_cells(s), None),
            Some(Selected::Row(r)) if view == DView::Combos => (combo_cells(theme, r), None),
            Some(Selected::Row(r)) => (ranked_cells(theme, r), None),
            None => (vec![Line::default(); rows.cols().len()], None),
        },
    );
}

fn strategy_cells<'a>(s: &StrategyEntry) -> Vec<Line<'a>> {
    let params: Vec<String> = s
        .parameters
        .iter()
        .map(|p| {
            format!(
                "{}={}",
                p.name,
                crate::console::tabs::backtests::fmt_number(p.default)
            )
        })
        .collect();
    vec![
        Line::from(s.id.clone()),
        Line::from(s.name.clone()),
        Line::from(s.category.clone()),
        Line::from(s.parameters.len().to_string()),
        Line::from(params.join(" ")),
    ]
}

fn ranked_cells<'a>(theme: &Theme, r: &DiscoveryRow) -> Vec<Line<'a>> {
    let s = &r.stats;
    vec![
        Line::from(row_name(r).to_string()),
        Line::from(r.pair.clone()),
        Line::from(r.timeframe.clone()),
        Line::from(if r.days > 0 {
            r.days.to_string()
        } else {
            String::new()
        }),
        return_cell(theme, s.total_return),
        ratio_cell(theme, s, opt(s.win_rate_pct(), 1)),
        Line::from(opt(s.max_drawdown, 1)),
        ratio_cell(theme, s, opt(s.sharpe_ratio, 2)),
        ratio_cell(theme, s, opt(s.profit_factor, 2)),
        trades_cell(theme, s),
        Line::styled(r.quality.clone(), quality_style(theme, &r.quality)),
        Line::from(params_text(&r.parameters)),
    ]
}

fn combo_cells<'a>(theme: &Theme, r: &DiscoveryRow) -> Vec<Line<'a>> {
    let s = &r.stats;
    vec![
        Line::from(row_name(r).to_string()),
        Line::from(
            r.rank_within_strategy
                .map(|n| n.to_string())
                .unwrap_or_default(),
        ),
        Line::from(params_text(&r.parameters)),
        return_cell(theme, s.total_return),
        trades_cell(theme, s),
        ratio_cell(theme, s, opt(s.win_rate_pct(), 1)),
        Line::from(opt(s.max_drawdown, 1)),
        ratio_cell(theme, s, opt(s.sharpe_ratio, 2)),
        Line::from(r.pair.clone()),
        Line::from(r.timeframe.clone()),
    ]
}

/// A trade count, marked when it is too few for the row's ratios to mean much.
fn trades_cell<'a>(theme: &Theme, s: &crate::api::model::BacktestStats) -> Line<'a> {
    if few_trades(s) {
        Line::styled(format!("{}!", s.total_trades), theme.warn)
    } else {
        Line::from(s.total_trades.to_string())
    }
}

/// A ratio, muted when it stands on too few trades.
fn ratio_cell<'a>(theme: &Theme, s: &crate::api::model::BacktestStats, text: String) -> Line<'a> {
    if few_trades(s) {
        Line::styled(text, theme.muted)
    } else {
        Line::from(text)
    }
}

fn return_cell<'a>(theme: &Theme, x: Option<f64>) -> Line<'a> {
    match x {
        Some(v) => Line::styled(signed(v, 2), pnl_style(theme, v)),
        None => Line::from("-"),
    }
}

fn selector(f: &mut Frame, tab: &DiscoveryTab, theme: &Theme, screen: &Screen) {
    let mut spans = Vec::new();
    for (view, _) in &screen.views {
        let style = if *view == tab.view {
            theme.tab_active
        } else {
            theme.tab_inactive
        };
        spans.push(Span::styled(layout::view_label(*view), style));
        spans.push(Span::raw(" "));
    }
    spans.push(Span::styled(
        " h/l switch · /top sets the query · muted = server default",
        theme.muted,
    ));
    if let Some((_, first)) = screen.views.first() {
        let row = Rect::new(first.x, first.y, screen.query.width, 1);
        f.render_widget(Paragraph::new(Line::from(spans)), row);
    }
}

/// Defaults the interface documents, shown (muted) where the query leaves them to the server.
fn documented_default(key: &str) -> Option<&'static str> {
    match key {
        "pair" => Some("BTC-USD"),
        "timeframe" => Some("5m"),
        "days" => Some("30"),
        _ => None,
    }
}

/// `computing… filter=good includeAll=– · 4s ago`: what the service is asked, muted where its
/// default applies (`–` where the default is not documented).
fn query_line(f: &mut Frame, tab: &DiscoveryTab, shown: &Shown, area: Rect) {
    let theme = shown.theme;
    let view = tab.view;
    let st = tab.state(view);
    let mut spans: Vec<Span> = vec![Span::raw(" ")];
    if st.feed.computing {
        spans.push(Span::styled("computing… ", theme.warn));
    }
    let params = tab.query_text(view);
    if params.is_empty() {
        spans.push(Span::styled("catalog ", theme.muted));
    }
    for (k, v) in params {
        spans.push(Span::styled(format!("{k}="), theme.muted));
        match v {
            Some(v) => spans.push(Span::styled(v, theme.accent)),
            None => spans.push(Span::styled(
                documented_default(k).unwrap_or("–"),
                theme.muted,
            )),
        }
        spans.push(Span::raw(" "));
    }
    if st.feed.poll.in_flight {
        spans.push(Span::styled("· loading ", theme.muted));
    } else if let Some(t) = st.feed.poll.updated_at {
        spans.push(Span::styled(
            format!(
                "· {} ago ",
                age((shown.now - t).to_std().unwrap_or_default())
            ),
            theme.muted,
        ));
    }
    if let Some(e) = &st.feed.error {
        spans.push(Span::styled(format!("· {e}"), theme.error));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

// ---- details overlay -----------------------------------------------------------------------------

fn kv<'a>(theme: &Theme, k: &str, v: String) -> Line<'a> {
    Line::from(vec![
        Span::styled(format!("  {k:<16}"), theme.muted),
        Span::styled(v, theme.base),
    ])
}

pub fn detail_lines<'a>(theme: &Theme, sel: Selected<'_>) -> Vec<Line<'a>> {
    let mut lines = Vec::new();
    match sel {
        Selected::Strategy(s) => {
            lines.push(Line::from(vec![
                Span::styled(s.name.clone(), theme.accent),
                Span::styled(format!("  {} · {}", s.id, s.category), theme.muted),
            ]));
            for (label, text) in [
                ("", &s.description),
                ("Entry: ", &s.entry_summary),
                ("Exit: ", &s.exit_summary),
                ("Indicators: ", &s.indicator_summary),
            ] {
                if !text.is_empty() {
                    lines.push(Line::from(vec![
                        Span::styled(label.to_string(), theme.muted),
                        Span::styled(text.clone(), theme.base),
                    ]));
                }
            }
            lines.push(Line::raw(""));
            lines.push(Line::styled("Parameters", theme.accent));
            for p in &s.parameters {
                let fmt = crate::console::tabs::backtests::fmt_number;
                lines.push(Line::from(vec![
                    Span::styled(format!("  {:<16}", p.name), theme.base),
                    Span::styled(
                        format!(
                            "{:<8} default {:<6} range {}..{} step {}  ",
                            p.kind,
                            fmt(p.default),
                            fmt(p.min),
                            fmt(p.max),
                            fmt(p.step)
                        ),
                        theme.muted,
                    ),
                    Span::styled(p.description.clone(), theme.base),
                ]));
            }
        }
        Selected::Row(r) => {
            lines.push(Line::from(vec![
                Span::styled(row_name(r).to_string(), theme.accent),
                Span::styled(format!("  {} · {}", r.strategy_id, r.category), theme.muted),
            ]));
            let mut facts = vec![r.pair.clone(), r.timeframe.clone()];
            if r.days > 0 {
                facts.push(format!("{} days", r.days));
            }
            if !r.quality.is_empty() {
                facts.push(format!("quality {}", r.quality));
            }
            if let Some(n) = r.rank_within_strategy {
                facts.push(format!("rank {n} in strategy"));
            }
            lines.push(Line::styled(facts.join(" · "), theme.base));
            if !r.param_hash.is_empty() {
                lines.push(Line::styled(
                    format!("parameter set {}", r.param_hash),
                    theme.muted,
                ));
            }
            lines.push(Line::raw(""));
            lines.push(Line::styled("Parameters", theme.accent));
            for (k, v) in &r.parameters {
                lines.push(kv(theme, k, crate::console::tabs::discovery::value_text(v)));
            }
            lines.push(Line::raw(""));
            lines.push(Line::styled("Statistics", theme.accent));
            for (label, value) in stat_items(&r.stats, r.days) {
                lines.push(kv(theme, label, value));
            }
            lines.push(Line::raw(""));
            lines.push(Line::styled("Equity curve", theme.accent));
            match curve(r) {
                Some(points) => lines.push(kv(
                    theme,
                    "sent",
                    format!("{} points: drawn below", points.clone().count()),
                )),
                None => lines.push(kv(
                    theme,
                    "not sent",
                    "this service ranks rows by statistics only; a backtest of this row draws \
                     its curve"
                        .into(),
                )),
            }
            other_fields(theme, &r.stats.extra, &mut lines);
        }
    }
    if let Selected::Strategy(s) = sel {
        other_fields(theme, &s.extra, &mut lines);
    }
    lines
}

/// A row's equity curve, when the service sends one: `stats.equity`, as a backtest's result has
/// it (`[{t, equity, drawdown}]`). The sandbox sends one (an extension); the interface's rows
/// carry none. Read in place, point by point, so a frame holds none of it.
pub fn curve(
    r: &crate::api::model::DiscoveryRow,
) -> Option<impl Iterator<Item = (f64, f64, f64)> + Clone + '_> {
    let points = r.stats.extra.get(CURVE)?.as_array()?;
    let num = |v: Option<&serde_json::Value>| match v? {
        serde_json::Value::String(s) => s.parse::<f64>().ok(),
        v => v.as_f64(),
    };
    let read = move |p: &serde_json::Value| {
        Some((
            num(p.get("t"))?,
            num(p.get("equity"))?,
            num(p.get("drawdown"))?,
        ))
    };
    let mut it = points.iter().filter_map(read).peekable();
    it.peek()?;
    Some(it)
}

const CURVE: &str = "equity";

/// Fields the service sent that we do not read, as `key=value`: shown, never dropped (a curve
/// is drawn, not printed).
fn other_fields<'a>(theme: &Theme, extra: &crate::api::model::Extra, lines: &mut Vec<Line<'a>>) {
    let mut pairs = crate::api::model::extra_pairs(extra);
    pairs.retain(|p| !p.starts_with(&format!("{CURVE}=")));
    if pairs.is_empty() {
        return;
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("Other fields", theme.accent));
    for p in pairs {
        lines.push(Line::styled(format!("  {p}"), theme.muted));
    }
}

pub fn details(
    f: &mut Frame,
    row: Option<Selected<'_>>,
    keymap: &Keymap,
    theme: &Theme,
    area: Rect,
    scroll: u16,
) {
    let Some(sel) = row else {
        return;
    };
    let r = widgets::centered(
        area,
        area.width.saturating_sub(4).min(100),
        area.height.saturating_sub(2),
    );
    f.render_widget(Clear, r);
    let lines = detail_lines(theme, sel);
    // A curve the row carries is drawn under the text when the overlay has room for both.
    let chart = match sel {
        Selected::Row(row) if r.height >= 24 => curve(row),
        _ => None,
    };
    let chart_rows = if chart.is_some() { 10 } else { 0 };
    let text = Rect::new(r.x, r.y, r.width, r.height - chart_rows);
    let visible = text.height.saturating_sub(2);
    let scroll = scroll.min((lines.len() as u16).saturating_sub(visible));
    let key = |a| keymap.keys_for(a).first().cloned().unwrap_or_default();
    use crate::console::keymap::KeyAction;
    let title = format!(
        " Details — {} backtest · {} propose · Esc closes ",
        key(KeyAction::Backtest),
        key(KeyAction::Propose)
    );
    let p = Paragraph::new(lines)
        .block(widgets::block(theme, Line::from(title), true))
        .style(theme.base)
        .wrap(Wrap { trim: false })
        .scroll((scroll, 0));
    f.render_widget(p, text);
    if let Some(points) = chart {
        let area = Rect::new(r.x, text.bottom(), r.width, chart_rows);
        let block = widgets::block(theme, Line::from(" Equity · drawdown % "), true);
        let inner = block.inner(area);
        f.render_widget(block.style(theme.base), area);
        widgets::chart::equity(
            f.buffer_mut(),
            inner,
            theme,
            widgets::chart::EquityChart {
                name: "Equity",
                equity: points.clone().map(|(t, e, _)| (t, e)),
                drawdown: points.map(|(t, _, d)| (t, d)),
                empty: "no equity curve",
            },
        );
    }
}
