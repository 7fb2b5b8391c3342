//! Charts drawn cell by cell into the frame's buffer: a series as braille dots, price levels as
//! labelled horizontal lines, an equity curve over its drawdown.
//!
//! A series is read through an iterator, twice (its bounds, then its columns), and reduced to one
//! min/max per braille dot column: what a frame holds is bounded by the chart's width whatever
//! the number of points. Every level and scale is also written as text, so the charts read the
//! same without colour (`NO_COLOR`).

use crate::console::theme::Theme;
use crate::console::widgets::{num, px, truncate};
use chrono::{TimeZone, Utc};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

/// x in unix seconds, y the value.
pub type Point = (f64, f64);

/// A horizontal line at `value`, named at the chart's right edge (`TP 3,120`).
#[derive(Debug, Clone, Copy)]
pub struct Level {
    pub name: &'static str,
    pub value: f64,
    pub style: Style,
    /// The line's character: levels of another kind read apart without colour.
    pub glyph: char,
}

impl Level {
    fn label(&self) -> String {
        format!("{} {}", self.name, px(self.value))
    }
}

/// What a price chart draws.
pub struct PriceChart<'a, I> {
    pub coin: &'a str,
    /// Where the prices come from ("1m candles from the sandbox", "marks seen since 10:02").
    pub source: &'a str,
    pub points: I,
    pub levels: &'a [Level],
    /// Said instead of a plot when there are no points.
    pub empty: &'a str,
}

/// What an equity chart draws.
pub struct EquityChart<'a, E, D> {
    /// First words of the caption ("Equity", "Session equity").
    pub name: &'a str,
    pub equity: E,
    /// Drawdown from the running peak, in percent (≤ 0), point by point: the service's own when
    /// it sends one, else [`underwater`] of the equity.
    pub drawdown: D,
    /// Said instead of a plot when there are fewer than two points.
    pub empty: &'a str,
}

/// Drawdown from the running peak, in percent, of an equity series.
pub fn underwater(
    equity: impl Iterator<Item = Point> + Clone,
) -> impl Iterator<Item = Point> + Clone {
    equity.scan(f64::NEG_INFINITY, |peak, (t, e)| {
        *peak = peak.max(e);
        let dd = if *peak > 0.0 {
            (e / *peak - 1.0) * 100.0
        } else {
            0.0
        };
        Some((t, dd))
    })
}

/// The extent of the finite points of a series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    pub x0: f64,
    pub x1: f64,
    pub lo: f64,
    pub hi: f64,
    pub count: usize,
    pub last: f64,
}

pub fn bounds(points: impl Iterator<Item = Point>) -> Option<Bounds> {
    let mut b: Option<Bounds> = None;
    for (x, y) in points.filter(|(x, y)| x.is_finite() && y.is_finite()) {
        let b = b.get_or_insert(Bounds {
            x0: x,
            x1: x,
            lo: y,
            hi: y,
            count: 0,
            last: y,
        });
        b.x0 = b.x0.min(x);
        b.x1 = b.x1.max(x);
        b.lo = b.lo.min(y);
        b.hi = b.hi.max(y);
        b.count += 1;
        b.last = y;
    }
    b
}

/// The points that fall in one dot column: their range, and the first and last, so the line
/// joins each column to the next where the series went.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Column {
    pub first: f64,
    pub last: f64,
    pub lo: f64,
    pub hi: f64,
}

/// The series reduced to `n` dot columns over [x0, x1]. A series with one x (one point) lands
/// in the last column: it is the latest value.
pub fn columns(
    points: impl Iterator<Item = Point>,
    x0: f64,
    x1: f64,
    n: usize,
) -> Vec<Option<Column>> {
    let mut out: Vec<Option<Column>> = vec![None; n];
    if n == 0 {
        return out;
    }
    let span = x1 - x0;
    for (x, y) in points.filter(|(x, y)| x.is_finite() && y.is_finite()) {
        let i = if span > 0.0 {
            (((x - x0) / span) * (n - 1) as f64).round() as usize
        } else {
            n - 1
        };
        let c = &mut out[i.min(n - 1)];
        match c {
            None => {
                *c = Some(Column {
                    first: y,
                    last: y,
                    lo: y,
                    hi: y,
                })
            }
            Some(c) => {
                c.last = y;
                c.lo = c.lo.min(y);
                c.hi = c.hi.max(y);
            }
        }
    }
    out
}

/// A vertical scale: values from `lo` (bottom) to `hi` (top) over `rows` dot rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub lo: f64,
    pub hi: f64,
}

impl Scale {
    /// The scale of a series and the levels drawn with it, so every level is on the chart,
    /// padded so the extremes do not sit on the border. A flat series gets a band around it.
    pub fn fit(lo: f64, hi: f64, levels: impl Iterator<Item = f64>) -> Scale {
        let (mut lo, mut hi) = (lo, hi);
        for v in levels.filter(|v| v.is_finite()) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        let pad = if hi > lo {
            (hi - lo) * 0.04
        } else {
            (hi.abs() * 0.001).max(1e-9)
        };
        Scale {
            lo: lo - pad,
            hi: hi + pad,
        }
    }

    /// The dot row (0 at the top) of `y` on a grid `rows` dots high.
    pub fn row(&self, y: f64, rows: usize) -> i32 {
        if rows <= 1 || self.hi <= self.lo {
            return (rows / 2) as i32;
        }
        let r = ((self.hi - y) / (self.hi - self.lo) * (rows - 1) as f64).round();
        r.clamp(0.0, (rows - 1) as f64) as i32
    }
}

/// Braille cells: each 2 dots wide and 4 high.
struct Dots {
    w: usize,
    h: usize,
    cells: Vec<u8>,
}

const BRAILLE: [[u8; 4]; 2] = [[0x01, 0x02, 0x04, 0x40], [0x08, 0x10, 0x20, 0x80]];

impl Dots {
    fn new(area: Rect) -> Dots {
        let (w, h) = (area.width as usize, area.height as usize);
        Dots {
            w,
            h,
            cells: vec![0; w * h],
        }
    }

    fn set(&mut self, x: i32, y: i32) {
        if x < 0 || y < 0 {
            return;
        }
        let (x, y) = (x as usize, y as usize);
        if x >= self.w * 2 || y >= self.h * 4 {
            return;
        }
        self.cells[(y / 4) * self.w + x / 2] |= BRAILLE[x % 2][y % 4];
    }

    fn vline(&mut self, x: i32, y0: i32, y1: i32) {
        for y in y0.min(y1)..=y0.max(y1) {
            self.set(x, y);
        }
    }

    fn line(&mut self, (x0, y0): (i32, i32), (x1, y1): (i32, i32)) {
        let (dx, dy) = ((x1 - x0).abs(), -(y1 - y0).abs());
        let (sx, sy) = (if x0 < x1 { 1 } else { -1 }, if y0 < y1 { 1 } else { -1 });
        let (mut x, mut y, mut err) = (x0, y0, dx + dy);
        loop {
            self.set(x, y);
            if x == x1 && y == y1 {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }

    /// The columns as a line; with `fill_to`, each column also filled to that value (an area).
    fn plot(&mut self, cols: &[Option<Column>], scale: Scale, fill_to: Option<f64>) {
        let rows = self.h * 4;
        let mut prev: Option<(i32, i32)> = None;
        for (x, c) in cols.iter().enumerate() {
            let Some(c) = c else { continue };
            let x = x as i32;
            let first = scale.row(c.first, rows);
            if let Some(p) = prev {
                self.line(p, (x, first));
            }
            self.vline(x, scale.row(c.lo, rows), scale.row(c.hi, rows));
            if let Some(base) = fill_to {
                self.vline(x, scale.row(base, rows), scale.row(c.lo, rows));
            }
            prev = Some((x, scale.row(c.last, rows)));
        }
    }

    fn is_set(&self, cx: usize, cy: usize) -> bool {
        self.cells.get(cy * self.w + cx).is_some_and(|c| *c != 0)
    }

    fn render(&self, buf: &mut Buffer, area: Rect, style: Style) {
        for cy in 0..self.h.min(area.height as usize) {
            for cx in 0..self.w.min(area.width as usize) {
                let bits = self.cells[cy * self.w + cx];
                if bits == 0 {
                    continue;
                }
                let ch = char::from_u32(0x2800 + u32::from(bits)).unwrap_or(' ');
                if let Some(cell) = buf.cell_mut((area.x + cx as u16, area.y + cy as u16)) {
                    cell.set_char(ch).set_style(style);
                }
            }
        }
    }
}

fn put(buf: &mut Buffer, x: u16, y: u16, text: &str, style: Style, max: u16) {
    if max == 0 {
        return;
    }
    buf.set_stringn(x, y, text, max as usize, style);
}

fn put_line(buf: &mut Buffer, area: Rect, row: u16, line: Line<'_>) {
    if row < area.height {
        line.render(Rect::new(area.x, area.y + row, area.width, 1), buf);
    }
}

/// How long a span of seconds is, shortly: `45s`, `14m`, `2h05m`, `3d04h`.
pub fn span_text(secs: f64) -> String {
    let s = secs.max(0.0) as i64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d{:02}h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// A time on an axis, as precise as the span needs: `10:02`, `03-14`, `2025-03`.
pub fn time_text(t: f64, span: f64) -> String {
    let Some(at) = Utc.timestamp_opt(t as i64, 0).single() else {
        return String::new();
    };
    if span < 2.0 * 86_400.0 {
        at.format("%H:%M").to_string()
    } else if span < 400.0 * 86_400.0 {
        at.format("%m-%d").to_string()
    } else {
        at.format("%Y-%m").to_string()
    }
}

/// The bottom row: first time at the left, the span in the middle, the last time at the right.
fn time_axis(buf: &mut Buffer, plot: Rect, y: u16, b: &Bounds, style: Style) {
    let span = b.x1 - b.x0;
    let to = time_text(b.x1, span);
    if span <= 0.0 {
        // One instant: its time under its dot, at the right.
        let x = plot.right().saturating_sub(to.chars().count() as u16);
        put(buf, x.max(plot.x), y, &to, style, plot.width);
        return;
    }
    let from = time_text(b.x0, span);
    let middle = format!("← {} →", span_text(span));
    put(buf, plot.x, y, &from, style, plot.width);
    let right = plot.right().saturating_sub(to.chars().count() as u16);
    if right > plot.x + from.chars().count() as u16 {
        put(buf, right, y, &to, style, plot.right() - right);
    }
    let mid_w = middle.chars().count() as u16;
    let mid = plot.x + plot.width.saturating_sub(mid_w) / 2;
    if mid > plot.x + from.chars().count() as u16 + 1 && mid + mid_w + 1 < right {
        put(buf, mid, y, &middle, style, mid_w);
    }
}

/// The least share of a price chart's height the prices keep: a level farther than that (a
/// liquidation half the price away) would flatten them into a line.
const PRICES_SHARE: f64 = 0.2;

/// The range a price chart shows: the prices' widened, nearest level first, by each level that
/// leaves the prices [`PRICES_SHARE`] of the height. True for the levels left beyond it.
pub fn fit_levels(lo: f64, hi: f64, values: &[f64]) -> (f64, f64, Vec<bool>) {
    // A flat series (one mark) has no shape to keep: every level is placed.
    let band = if hi - lo < hi.abs() * 0.001 {
        f64::INFINITY
    } else {
        hi - lo
    };
    let away = |v: f64| (v - hi).max(lo - v).max(0.0);
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|a, b| away(values[*a]).total_cmp(&away(values[*b])));
    let (mut lo, mut hi) = (lo, hi);
    let mut beyond = vec![false; values.len()];
    for i in order {
        let (l, h) = (lo.min(values[i]), hi.max(values[i]));
        if h - l <= band / PRICES_SHARE {
            (lo, hi) = (l, h);
        } else {
            beyond[i] = true;
        }
    }
    (lo, hi, beyond)
}

/// Draws a price series with its levels: caption on the first row (the coin, where the prices
/// come from, the last one), the scale at the left, each level's name and price at the right,
/// the time span below.
pub fn price<I: Iterator<Item = Point> + Clone>(
    buf: &mut Buffer,
    area: Rect,
    theme: &Theme,
    chart: PriceChart<'_, I>,
) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let b = bounds(chart.points.clone());
    let mut caption = vec![Span::styled(chart.coin.to_string(), theme.accent)];
    if !chart.source.is_empty() {
        caption.push(Span::styled(format!(" · {}", chart.source), theme.muted));
    }
    if let Some(b) = &b {
        caption.push(Span::styled(format!(" · last {}", px(b.last)), theme.base));
    }
    put_line(buf, area, 0, Line::from(caption));
    let Some(b) = b else {
        put_line(
            buf,
            area,
            1,
            Line::styled(chart.empty.to_string(), theme.muted),
        );
        return;
    };
    let body = Rect::new(area.x, area.y + 1, area.width, area.height - 1);
    if body.height < 2 {
        return;
    }
    let axis = body.height >= 4;
    let plot_h = body.height - u16::from(axis);
    let levels: Vec<&Level> = chart
        .levels
        .iter()
        .filter(|l| l.value.is_finite() && l.value > 0.0)
        .collect();
    let values: Vec<f64> = levels.iter().map(|l| l.value).collect();
    let (lo, hi, beyond) = fit_levels(b.lo, b.hi, &values);
    let scale = Scale::fit(lo, hi, std::iter::empty());
    let (top, bottom) = (px(scale.hi), px(scale.lo));
    let y_w = top.chars().count().max(bottom.chars().count()) as u16 + 1;
    let dot_rows = plot_h as usize * 4;
    // A level beyond the scale is named on the edge it lies past.
    let level_row = |i: usize| match beyond[i] {
        true if values[i] > scale.hi => 0,
        true => plot_h - 1,
        false => (scale.row(values[i], dot_rows) / 4) as u16,
    };
    // Levels sharing a row: all but one name go to a free row, with an arrow to their line.
    let shared = (0..levels.len()).any(|i| (0..i).any(|j| level_row(i) == level_row(j)));
    let arrows = shared || beyond.contains(&true);
    let label_w = levels
        .iter()
        .map(|l| l.label().chars().count() as u16 + 1 + u16::from(arrows))
        .max()
        .unwrap_or(0);
    // The levels' names matter more than the scale: the scale goes first when room is short.
    let y_w = if body.width >= y_w + label_w + 12 {
        y_w
    } else {
        0
    };
    let plot = Rect::new(
        body.x + y_w,
        body.y,
        body.width.saturating_sub(y_w + label_w),
        plot_h,
    );
    if plot.width < 4 {
        put_line(
            buf,
            body,
            0,
            Line::styled("too narrow for the chart", theme.muted),
        );
        return;
    }
    if y_w > 0 {
        put(
            buf,
            body.x,
            plot.y,
            &format!("{top:>w$}", w = y_w as usize - 1),
            theme.muted,
            y_w,
        );
        put(
            buf,
            body.x,
            plot.bottom() - 1,
            &format!("{bottom:>w$}", w = y_w as usize - 1),
            theme.muted,
            y_w,
        );
    }
    let mut dots = Dots::new(plot);
    let cols = columns(chart.points, b.x0, b.x1, plot.width as usize * 2);
    dots.plot(&cols, scale, None);
    let mut taken: Vec<u16> = Vec::with_capacity(levels.len());
    for (i, l) in levels.iter().enumerate() {
        let cy = level_row(i);
        for cx in (0..plot.width).filter(|_| !beyond[i]) {
            if !dots.is_set(cx as usize, cy as usize)
                && let Some(cell) = buf.cell_mut((plot.x + cx, plot.y + cy))
            {
                cell.set_char(l.glyph).set_style(theme.muted);
            }
        }
        let row = (0..plot.height)
            .filter(|r| !taken.contains(r))
            .min_by_key(|r| r.abs_diff(cy))
            .unwrap_or(cy);
        taken.push(row);
        let arrow = match row.cmp(&cy) {
            _ if beyond[i] && values[i] > scale.hi => "↑",
            _ if beyond[i] => "↓",
            std::cmp::Ordering::Less => "↓",
            std::cmp::Ordering::Greater => "↑",
            std::cmp::Ordering::Equal => "",
        };
        put(
            buf,
            plot.right() + 1,
            plot.y + row,
            &truncate(
                &format!("{arrow}{}", l.label()),
                label_w.saturating_sub(1) as usize,
            ),
            l.style,
            label_w.saturating_sub(1),
        );
    }
    dots.render(buf, plot, theme.accent);
    if axis {
        time_axis(buf, plot, plot.bottom(), &b, theme.muted);
    }
}

/// Draws an equity curve with, when there is room, its drawdown below it as an area from 0 %:
/// caption (first and last equity, the return, the deepest drawdown), scales at the left, the
/// time span below. Under 5 rows it is a bare line with its high, span and low at the left.
pub fn equity<E, D>(buf: &mut Buffer, area: Rect, theme: &Theme, chart: EquityChart<'_, E, D>)
where
    E: Iterator<Item = Point> + Clone,
    D: Iterator<Item = Point> + Clone,
{
    if area.height == 0 || area.width == 0 {
        return;
    }
    let Some(b) = bounds(chart.equity.clone()).filter(|b| b.count >= 2) else {
        put_line(
            buf,
            area,
            0,
            Line::styled(chart.empty.to_string(), theme.muted),
        );
        return;
    };
    let dd = bounds(chart.drawdown.clone());
    let deepest = dd.map(|d| d.lo.min(0.0)).unwrap_or(0.0);
    let scale = Scale::fit(b.lo, b.hi, std::iter::empty());
    let (top, bottom) = (num(b.hi, 2), num(b.lo, 2));
    if area.height < 5 {
        let span = format!("over {}", span_text(b.x1 - b.x0));
        let label_w = [&top, &bottom, &span]
            .iter()
            .map(|s| s.chars().count())
            .max()
            .unwrap_or(0) as u16
            + 1;
        let plot = Rect::new(
            area.x + label_w,
            area.y,
            area.width.saturating_sub(label_w),
            area.height,
        );
        let w = label_w as usize - 1;
        put(
            buf,
            area.x,
            area.y,
            &format!("{top:>w$}"),
            theme.muted,
            label_w,
        );
        if area.height >= 3 {
            let mid = area.y + area.height / 2;
            put(
                buf,
                area.x,
                mid,
                &format!("{span:>w$}"),
                theme.muted,
                label_w,
            );
        }
        // A flat curve has one level: a second label would only repeat it.
        if area.height >= 2 && top != bottom {
            put(
                buf,
                area.x,
                area.bottom() - 1,
                &format!("{bottom:>w$}"),
                theme.muted,
                label_w,
            );
        }
        let mut dots = Dots::new(plot);
        dots.plot(
            &columns(chart.equity, b.x0, b.x1, plot.width as usize * 2),
            scale,
            None,
        );
        dots.render(buf, plot, theme.accent);
        return;
    }
    let first = chart
        .equity
        .clone()
        .find(|(x, y)| x.is_finite() && y.is_finite());
    let first = first.map(|p| p.1).unwrap_or(b.last);
    let change = if first != 0.0 {
        format!("{:+.2}%", (b.last / first - 1.0) * 100.0)
    } else {
        String::new()
    };
    let (from, to, dd_text) = (num(first, 2), num(b.last, 2), format!("{deepest:.2}%"));
    // The longest caption that fits: a narrow chart keeps the return and the drawdown.
    let captions = [
        (
            format!("{} ", chart.name),
            format!("{from} → {to} ({change})"),
            " · max drawdown ",
        ),
        (
            String::new(),
            format!("{from} → {to} ({change})"),
            " · max DD ",
        ),
        (String::new(), change.clone(), " · max DD "),
    ];
    let fits = |(a, b, c): &(String, String, &str)| {
        (a.chars().count() + b.chars().count() + c.chars().count() + dd_text.chars().count())
            <= area.width as usize
    };
    let (name, figures, dd_name) = captions
        .iter()
        .find(|c| fits(c))
        .unwrap_or(&captions[2])
        .clone();
    put_line(
        buf,
        area,
        0,
        Line::from(vec![
            Span::styled(name, theme.muted),
            Span::styled(figures, theme.base),
            Span::styled(dd_name, theme.muted),
            Span::styled(dd_text, theme.bad),
        ]),
    );
    let body_h = area.height - 2;
    let dd_h = if body_h >= 5 && dd.is_some() {
        (body_h / 3).max(2)
    } else {
        0
    };
    let eq_h = body_h - dd_h;
    let dd_lo = format!("{deepest:.1}%");
    let y_w = [&top, &bottom, &dd_lo]
        .iter()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(0) as u16
        + 1;
    let w = y_w as usize - 1;
    let plot_w = area.width.saturating_sub(y_w);
    let eq = Rect::new(area.x + y_w, area.y + 1, plot_w, eq_h);
    put(buf, area.x, eq.y, &format!("{top:>w$}"), theme.muted, y_w);
    if top != bottom {
        put(
            buf,
            area.x,
            eq.bottom() - 1,
            &format!("{bottom:>w$}"),
            theme.muted,
            y_w,
        );
    }
    let mut dots = Dots::new(eq);
    dots.plot(
        &columns(chart.equity, b.x0, b.x1, plot_w as usize * 2),
        scale,
        None,
    );
    dots.render(buf, eq, theme.accent);
    if dd_h > 0 {
        let panel = Rect::new(eq.x, eq.bottom(), plot_w, dd_h);
        put(
            buf,
            area.x,
            panel.y,
            &format!("{:>w$}", "0%"),
            theme.muted,
            y_w,
        );
        put(
            buf,
            area.x,
            panel.bottom() - 1,
            &format!("{dd_lo:>w$}"),
            theme.bad,
            y_w,
        );
        let dd_scale = Scale {
            lo: deepest.min(-0.01),
            hi: 0.0,
        };
        let mut dots = Dots::new(panel);
        let cols = columns(chart.drawdown, b.x0, b.x1, plot_w as usize * 2);
        dots.plot(&cols, dd_scale, Some(0.0));
        dots.render(buf, panel, theme.bad);
    }
    time_axis(buf, eq, area.bottom() - 1, &b, theme.muted);
}

#[cfg(test)]
mod tests;
