//! Desk: PnL summary with the session's equity chart, positions, open orders, and the strip of
//! staged proposals with their countdowns.

use crate::console::action::Resource;
use crate::console::feeds;
use crate::console::inbox::LocalState;
use crate::console::layout::{Pane, Screen};
use crate::console::table;
use crate::console::tabs::desk::rows;
use crate::console::tabs::proposals::rows::InboxRows;
use crate::console::tabs::proposals::shown::InboxShown;
use crate::console::theme::Theme;
use crate::console::widgets::{self, countdown, num, pnl_style, px, signed, size};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

/// What a pane shows for a number the service did not send.
pub const NOT_SENT: &str = "not sent";

pub fn draw(f: &mut Frame, v: &InboxShown<'_>, theme: &Theme, screen: &Screen) {
    summary(f, v, theme, screen);
    positions(f, v, theme, screen);
    orders(f, v, theme, screen);
    strip(f, v, theme, screen);
}

fn stale(v: &InboxShown<'_>, r: Resource) -> Option<std::time::Duration> {
    let feed = &v.feeds[&r];
    feed.is_stale(v.now).then(|| feed.age(v.now)).flatten()
}

fn title<'a>(v: &InboxShown<'_>, theme: &Theme, text: &str, r: Resource) -> Line<'a> {
    let mut spans = vec![Span::styled(format!(" {text} "), theme.accent)];
    spans.extend(widgets::staleness(theme, stale(v, r)));
    let feed = &v.feeds[&r];
    // Rows from before the failure stay on screen; the title says they are not current.
    if let (Some(e), Some(_)) = (&feed.error, feed.poll.updated_at) {
        spans.push(Span::styled(
            format!(" failing: {} ", feeds::short_error(e, 40)),
            theme.error,
        ));
    }
    Line::from(spans)
}

/// What an empty feed pane says: loading, its error, or `empty` once it answered.
fn empty(v: &InboxShown<'_>, r: Resource, empty: &str) -> String {
    feeds::empty_text(&v.feeds[&r], r, empty)
}

/// Rows below the PnL figures from which the equity chart takes the pane's whole width.
const CHART_BELOW_ROWS: u16 = 6;

fn summary(f: &mut Frame, v: &InboxShown<'_>, theme: &Theme, screen: &Screen) {
    let area = screen.summary;
    let block = widgets::block(theme, title(v, theme, "PnL", Resource::Pnl), false);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let Some(p) = &v.account.pnl else {
        let text = empty(v, Resource::Pnl, "no PnL summary");
        let style = if v.feeds[&Resource::Pnl].error.is_some() {
            theme.error
        } else {
            theme.muted
        };
        f.render_widget(
            Paragraph::new(Span::styled(text, style)).wrap(ratatui::widgets::Wrap { trim: true }),
            inner,
        );
        return;
    };
    // The chart needs room: under the figures, the whole width, when the pane has rows to spare
    // (a tall terminal gives them to it); else beside them from 110 columns; on a narrow, short
    // terminal the numbers come first.
    let (text, spark) = if inner.height >= 3 + CHART_BELOW_ROWS {
        let [text, spark] =
            Layout::vertical([Constraint::Length(3), Constraint::Min(0)]).areas(inner);
        (text, spark)
    } else {
        let spark_width = if inner.width >= 110 {
            inner.width * 35 / 100
        } else {
            0
        };
        let [text, spark] =
            Layout::horizontal([Constraint::Min(40), Constraint::Length(spark_width)]).areas(inner);
        (text, spark)
    };
    let kv = |k: &str, v: String, style| {
        vec![
            Span::styled(format!("{k} "), theme.muted),
            Span::styled(format!("{v}   "), style),
        ]
    };
    let mut l1 = kv(
        "Equity",
        num(p.total_portfolio_value, 2),
        theme.base.patch(theme.accent),
    );
    l1.extend(kv(
        "uPnL",
        signed(p.total_unrealized_pnl, 2),
        pnl_style(theme, p.total_unrealized_pnl),
    ));
    // A field the service did not send is said so, never shown as a 0 it did not report.
    let unsent = || (NOT_SENT.to_string(), theme.muted);
    let (realized, realized_style) = p
        .total_realized_pnl
        .map(|r| (signed(r, 2), pnl_style(theme, r)))
        .unwrap_or_else(unsent);
    l1.extend(kv("Realized", realized, realized_style));
    let mut l2 = kv(
        "Today",
        signed(p.pnl.today, 2),
        pnl_style(theme, p.pnl.today),
    );
    l2.extend(kv(
        "7d",
        signed(p.pnl.week, 2),
        pnl_style(theme, p.pnl.week),
    ));
    l2.extend(kv(
        "30d",
        signed(p.pnl.month, 2),
        pnl_style(theme, p.pnl.month),
    ));
    l2.extend(kv(
        "Total",
        signed(p.pnl.total, 2),
        pnl_style(theme, p.pnl.total),
    ));
    let amount = |x: Option<f64>| x.map(|v| (num(v, 2), theme.base)).unwrap_or_else(unsent);
    let (margin, margin_style) = amount(p.margin_summary.total_margin_used);
    let mut l3 = kv("Margin used", margin, margin_style);
    let (withdrawable, withdrawable_style) = amount(p.withdrawable);
    l3.extend(kv("Withdrawable", withdrawable, withdrawable_style));
    l3.extend(kv("Positions", p.total_positions.to_string(), theme.base));
    f.render_widget(
        Paragraph::new(vec![Line::from(l1), Line::from(l2), Line::from(l3)]),
        text,
    );
    // The session's equity as a line, with its high, its low and the time it spans: a shape
    // without a scale says "it moved", not by how much.
    let session = v
        .account
        .equity_history
        .iter()
        .map(|(t, e)| (t.timestamp() as f64, *e));
    widgets::chart::equity(
        f.buffer_mut(),
        spark,
        theme,
        widgets::chart::EquityChart {
            name: "Session equity",
            equity: session.clone(),
            drawdown: widgets::chart::underwater(session),
            empty: "a line from the next PnL poll",
        },
    );
}

fn positions(f: &mut Frame, v: &InboxShown<'_>, theme: &Theme, screen: &Screen) {
    let focused = v.focused_pane() == Pane::Positions;
    let rows = &v.account.positions;
    let empty = empty(v, Resource::Positions, "no open positions");
    table::draw(
        f,
        screen,
        theme,
        v.tables,
        Pane::Positions,
        title(v, theme, Pane::Positions.title(), Resource::Positions),
        focused,
        v.selected(Pane::Positions),
        &rows::Positions(rows),
        &empty,
        |i| {
            let p = &rows[i];
            let roe = rows::roe(p);
            let long = p.szi >= 0.0;
            let side_style = if long { theme.good } else { theme.bad };
            let cells = vec![
                Line::from(p.exchange.clone()),
                Line::from(p.coin.clone()),
                Line::styled(if long { "long" } else { "short" }, side_style),
                Line::from(size(p.szi.abs())),
                Line::from(px(p.entry_px)),
                Line::from(px(p.mark_px)),
                Line::styled(
                    signed(p.unrealized_pnl, 2),
                    pnl_style(theme, p.unrealized_pnl),
                ),
                Line::styled(signed(roe, 2), pnl_style(theme, roe)),
                Line::from(format!("{}x", p.leverage.value)),
                Line::from(p.liquidation_px.map(px).unwrap_or_else(|| "-".into())),
                Line::from(num(p.margin_used, 2)),
            ];
            (cells, None)
        },
    );
}

fn orders(f: &mut Frame, v: &InboxShown<'_>, theme: &Theme, screen: &Screen) {
    let focused = v.focused_pane() == Pane::Orders;
    let rows = &v.account.orders;
    let now_ms = v.now.timestamp_millis();
    let empty = empty(v, Resource::Orders, "no resting orders");
    table::draw(
        f,
        screen,
        theme,
        v.tables,
        Pane::Orders,
        title(v, theme, Pane::Orders.title(), Resource::Orders),
        focused,
        v.selected(Pane::Orders),
        &rows::Orders { rows, now_ms },
        &empty,
        |i| {
            let o = &rows[i];
            let buy = o.side == "B";
            let price = match o.trigger_px {
                Some(t) if o.is_trigger => format!("@{}", px(t)),
                _ => px(o.limit_px),
            };
            let age = std::time::Duration::from_millis((now_ms - o.timestamp).max(0) as u64);
            let cells = vec![
                Line::from(o.exchange.clone()),
                Line::from(o.coin.clone()),
                Line::styled(
                    if buy { "buy" } else { "sell" },
                    if buy { theme.good } else { theme.bad },
                ),
                Line::from(o.order_type.clone()),
                Line::from(price),
                Line::from(size(o.sz)),
                Line::from(size(o.orig_sz)),
                Line::from(if o.reduce_only { "RO" } else { "" }),
                Line::from(o.oid.to_string()),
                Line::from(widgets::age(age)),
            ];
            (cells, None)
        },
    );
}

fn strip(f: &mut Frame, v: &InboxShown<'_>, theme: &Theme, screen: &Screen) {
    let focused = v.focused_pane() == Pane::Strip;
    // On the Desk, approve and reject act on the strip's selection whichever pane has the focus,
    // so it is always shown.
    let selected = v.selected(Pane::Strip);
    let on_gate = v.gate.is_gateway();
    let empty = empty(
        v,
        Resource::Proposals,
        "nothing staged: agents' proposals appear here",
    );
    let strip_rows = InboxRows::new(v.inbox, Pane::Strip, v.now, &v.service.key_fingerprint);
    table::draw(
        f,
        screen,
        theme,
        v.tables,
        Pane::Strip,
        Line::from(Span::styled(
            format!(" {} ", Pane::Strip.title()),
            theme.accent,
        )),
        focused,
        selected,
        &strip_rows,
        &empty,
        |k| {
            let item = strip_rows.item(k);
            let left = item.remaining(v.now).unwrap_or_default();
            let first = if matches!(item.local, LocalState::Unknown { .. }) {
                Line::styled(item.status_text(v.now), theme.warn)
            } else if let Some(wait) = v.inbox.wait_left(item.id(), v.now) {
                Line::styled(format!("rate limited {wait}s"), theme.warn)
            } else {
                Line::from(countdown(theme, left, item.lifetime(), 12))
            };
            let mut cells = vec![
                first,
                Line::from(item.describe()),
                Line::from(item.id().to_string()),
            ];
            if on_gate {
                let agent = v.gate.agent_label(item.id(), &v.service.key_fingerprint);
                cells.insert(1, Line::from(agent.to_string()));
            }
            let shown_selected = v.inbox.selection(Pane::Strip).id.as_deref() == Some(item.id());
            (
                cells,
                (!focused && shown_selected).then_some(theme.selected),
            )
        },
    );
}
