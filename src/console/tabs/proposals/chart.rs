//! An inbox item's price chart: its coin's recent price (`feeds::market`) with the levels the
//! detail and the approve dialog state in words — entry or limit, take profit, stop loss and the
//! liquidation estimate — as labelled lines. The levels come from the same risk preview the text
//! shows ([`InboxShown::risk_of`]), so the chart and the words never disagree.

use crate::api::model::Preview;
use crate::console::inbox::InboxItem;
use crate::console::tabs::proposals::risk::Risk;
use crate::console::tabs::proposals::shown::InboxShown;
use crate::console::theme::Theme;
use crate::console::widgets::chart::{self, Level, PriceChart};
use ratatui::Frame;
use ratatui::layout::Rect;

/// The detail pane draws a chart from this height (inside its borders) up.
pub const DETAIL_MIN_ROWS: u16 = 16;
/// Rows a chart needs to draw prices: caption, three rows of plot, the time axis.
pub const MIN_ROWS: u16 = 5;
/// Rows a chart without prices takes: its caption and why there are none.
pub const EMPTY_ROWS: u16 = 2;

/// The rows `item`'s chart wants, up to `most`: None for an item without a coin, two when there
/// is no price to draw (the chart then only says why).
pub fn wanted_rows(v: &InboxShown<'_>, item: &InboxItem, most: u16) -> Option<u16> {
    let coin = chart_coin(item)?;
    let priced = v.account.market.prices(&coin).points().next().is_some();
    Some(if priced { most } else { EMPTY_ROWS })
}

/// The coin an item's chart draws; None for a tool call or an item without one.
pub fn chart_coin(item: &InboxItem) -> Option<String> {
    if item.tool.is_some() {
        return None;
    }
    let p = &item.proposal.preview;
    let coin = match p.coin.as_str() {
        "" => p.closes.first()?.coin.as_str(),
        c => c,
    };
    Some(crate::api::symbol::coin_of(coin)).filter(|c| !c.is_empty())
}

/// The levels of a trade as the detail states them: the limit (or the mark a market order fills
/// near), TP, SL and the liquidation estimate. A close has the entries of what it closes.
pub fn levels(theme: &Theme, p: &Preview, r: Option<&Risk>) -> Vec<Level> {
    let level = |name, value, style, glyph| Level {
        name,
        value,
        style,
        glyph,
    };
    let Some(r) = r.filter(|_| p.kind == "trade") else {
        return p
            .closes
            .iter()
            .take(1)
            .map(|c| level("Entry", c.entry_px, theme.base, '─'))
            .collect();
    };
    let mut out = vec![match p.limit_px {
        Some(l) => level("Limit", l, theme.base, '─'),
        None => level("Entry", r.mark, theme.base, '─'),
    }];
    if let Some(tp) = p.tp {
        out.push(level("TP", tp, theme.good, '┄'));
    }
    if let Some(sl) = p.sl {
        out.push(level("SL", sl, theme.bad, '┄'));
    }
    if let Some(liq) = r.est_liquidation {
        out.push(level("Liq", liq, theme.critical, '═'));
    }
    out
}

/// Where the detail's text and chart go: the text first, the chart (up to `want` rows) below it
/// in what the text leaves, when the pane is tall enough for both.
pub fn split_detail(inner: Rect, text_rows: usize, want: u16) -> (Rect, Option<Rect>) {
    if inner.height < DETAIL_MIN_ROWS {
        return (inner, None);
    }
    let left = inner.height.saturating_sub(text_rows as u16 + 1);
    let least = if want <= EMPTY_ROWS {
        EMPTY_ROWS
    } else {
        MIN_ROWS + 2
    };
    if left < least {
        return (inner, None);
    }
    // All the pane has left: on a tall terminal the prices get the height, not empty rows.
    let h = left.min(want);
    let text = Rect::new(inner.x, inner.y, inner.width, text_rows as u16);
    let chart = Rect::new(inner.x, text.bottom() + 1, inner.width, h);
    (text, Some(chart))
}

/// Draws `item`'s price chart into `area`; nothing for an item without a coin.
pub fn draw(f: &mut Frame, area: Rect, theme: &Theme, v: &InboxShown<'_>, item: &InboxItem) {
    let Some(coin) = chart_coin(item) else {
        return;
    };
    let p = &item.proposal.preview;
    let risk = (p.kind == "trade").then(|| v.risk_of(p));
    let levels = levels(theme, p, risk.as_ref());
    let prices = v.account.market.prices(&coin);
    chart::price(
        f.buffer_mut(),
        area,
        theme,
        PriceChart {
            coin: &coin,
            source: &prices.source,
            points: prices.points(),
            levels: &levels,
            empty: &prices.empty,
        },
    );
}
