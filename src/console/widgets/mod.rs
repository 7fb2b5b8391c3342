//! Small pieces the screens share: number formats, the countdown bar, windowed tables.
//!
//! Every number the console writes for a person goes through one of the formats here (`num`,
//! `signed`, `px`, `size`, `fmt_number`, `pct`): magnitudes from 1,000 up have thousands
//! separators wherever they appear (a result panel, a table, a dialog). Two kinds of text keep the
//! service's digits instead: a JSON view (`jsontree`, a tool's raw result), which shows the value
//! as sent, and a text field the person edits (`plain_number`), which is parsed back.

pub mod chart;
pub mod jsontree;
pub mod page;
pub mod stats;
pub mod text;

use crate::console::layout::{self, Pane, Screen};
use crate::console::theme::Theme;
use chrono::Duration as TimeDelta;
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Row, Table};
use std::time::Duration;

/// Full proposal lifetime, for the countdown bar's scale.
const LIFETIME_SECS: i64 = 300;

/// `1234567.891` → `1,234,567.89`; NaN and infinities are `-`.
pub fn num(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let s = format!("{:.*}", decimals, x.abs());
    // A negative that rounds to zero is written without its sign: `0.00`, not `-0.00`.
    let sign = if x < 0.0 && s.chars().any(|c| c.is_ascii_digit() && c != '0') {
        "-"
    } else {
        ""
    };
    format!("{sign}{}", group(&s))
}

/// Thousands separators in a decimal number's integer part: `-1234567.5` → `-1,234,567.5`. One
/// rule with the sandbox's reports (`api::model::group_thousands`).
pub fn group(text: &str) -> String {
    crate::api::model::group_thousands(text)
}

/// `text` with each word that is a plain number grouped (`$2000` → `$2,000`, `@3215` →
/// `@3,215`), for lines the shared `api` code writes without the console's format (the request
/// an agent sent). Words with anything else in them (`5x`, an id, `900131)`) stay as they are.
pub fn group_words(text: &str) -> String {
    text.split(' ')
        .map(|w| {
            let (lead, rest) = match w.strip_prefix(['$', '@']) {
                Some(rest) => (&w[..1], rest),
                None => ("", w),
            };
            format!("{lead}{}", group(rest))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A percentage with `decimals` decimals and its sign: `12.35%`, `-1,387.40%`.
pub fn pct(x: f64, decimals: usize) -> String {
    format!("{}%", num(x, decimals))
}

/// Signed, for PnL: `+12.30` / `-4.00`.
pub fn signed(x: f64, decimals: usize) -> String {
    if x > 0.0 {
        format!("+{}", num(x, decimals))
    } else {
        num(x, decimals)
    }
}

/// A price with precision that suits its size (5 significant figures, as the venue quotes).
pub fn px(x: f64) -> String {
    if !x.is_finite() || x == 0.0 {
        return "-".into();
    }
    let mag = x.abs().log10().floor() as i32;
    // Up to 10 decimals, so a coin quoted at 0.00001234 keeps its five figures.
    let decimals = (4 - mag).clamp(0, 10) as usize;
    num(x, decimals)
}

/// A size or an amount as the venue writes it (up to 8 decimals, no trailing zeros), grouped:
/// `5,000`, `0.032653`, `1,234.5`.
pub fn size(x: f64) -> String {
    group(&crate::api::model::fmt_decimal(x))
}

pub fn age(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// `m:ss` left.
pub fn clock(left: TimeDelta) -> String {
    let s = left.num_seconds().max(0);
    format!("{}:{:02}", s / 60, s % 60)
}

/// The style of a countdown with this much time left: amber under 60 s, red under 15 s.
pub fn urgency(theme: &Theme, left: TimeDelta) -> Style {
    let s = left.num_seconds();
    if s <= 0 {
        theme.expired
    } else if s < 15 {
        theme.critical
    } else if s < 60 {
        theme.warn
    } else {
        theme.good
    }
}

/// A bar like `██████░░░░ 3:12` whose filled share is the time left of the item's `lifetime`
/// (5 minutes when it is not known): a fresh 90-second item is a full bar, not a nearly empty one.
pub fn countdown<'a>(
    theme: &Theme,
    left: TimeDelta,
    lifetime: Option<TimeDelta>,
    width: usize,
) -> Vec<Span<'a>> {
    if left <= TimeDelta::zero() {
        return vec![Span::styled(
            format!("{:<w$}", "expired", w = width + 5),
            theme.expired,
        )];
    }
    let life_ms = lifetime
        .map(|l| l.num_milliseconds())
        .filter(|ms| *ms > 0)
        .unwrap_or(LIFETIME_SECS * 1000);
    let filled = ((left.num_milliseconds() as f64 / life_ms as f64) * width as f64)
        .ceil()
        .clamp(0.0, width as f64) as usize;
    let style = urgency(theme, left);
    vec![
        Span::styled("█".repeat(filled), style),
        Span::styled("░".repeat(width - filled), theme.muted),
        Span::styled(format!(" {}", clock(left)), style),
    ]
}

pub fn pnl_style(theme: &Theme, x: f64) -> Style {
    if x > 0.0 {
        theme.good
    } else if x < 0.0 {
        theme.bad
    } else {
        theme.base
    }
}

pub fn block<'a>(theme: &Theme, title: Line<'a>, focused: bool) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(if focused {
            theme.border_focused
        } else {
            theme.border_unfocused
        })
        .title(title)
}

/// A table column. Columns whose `prio` is highest give way first when the pane is too narrow, so
/// no cell is ever cut to a misleading value (an oid, "venue2", "10x") and the layout is the same
/// on every run (over-constrained layouts are solved differently from run to run).
#[derive(Debug, Clone, Copy)]
pub struct Col {
    pub title: &'static str,
    /// Width in cells; 0 takes what is left, at least `min`.
    pub width: u16,
    pub min: u16,
    /// 0 always shows; larger values drop first.
    pub prio: u8,
    pub right: bool,
}

pub const fn col(title: &'static str, width: u16, prio: u8) -> Col {
    Col {
        title,
        width,
        min: width,
        prio,
        right: false,
    }
}

/// A column that takes the width left over, and is dropped if it cannot have `min`.
pub const fn fill_col(title: &'static str, min: u16, prio: u8) -> Col {
    Col {
        title,
        width: 0,
        min,
        prio,
        right: false,
    }
}

/// A right-aligned (numeric) column.
pub const fn num_col(title: &'static str, width: u16, prio: u8) -> Col {
    Col {
        title,
        width,
        min: width,
        prio,
        right: true,
    }
}

/// The columns that fit in `width`, in their original order.
pub fn fit(cols: &[Col], width: u16) -> Vec<usize> {
    let mut order: Vec<usize> = (0..cols.len()).collect();
    order.sort_by_key(|i| (cols[*i].prio, *i));
    let mut used = 0u16;
    let mut kept = Vec::new();
    for i in order {
        let need = cols[i].min + u16::from(!kept.is_empty());
        if kept.is_empty() || used + need <= width {
            used += need;
            kept.push(i);
        }
    }
    kept.sort_unstable();
    kept
}

/// A table pane that renders only its visible window of rows: `row(i)` is called for those alone,
/// so a pane over 100,000 rows costs the same as one over 30. `row` returns every column's cell
/// and an optional row style; columns that do not fit are dropped here.
#[allow(clippy::too_many_arguments)]
pub fn table<'a>(
    f: &mut Frame,
    screen: &Screen,
    theme: &Theme,
    pane: Pane,
    title: Line<'a>,
    focused: bool,
    selected: usize,
    len: usize,
    cols: &[Col],
    empty: &str,
    mut row: impl FnMut(usize) -> (Vec<Line<'a>>, Option<Style>),
) {
    let area = screen.pane(pane);
    if area.height == 0 {
        return;
    }
    let kept = fit(cols, area.width.saturating_sub(2));
    let cell_widths = widths_of(cols, &kept, area.width.saturating_sub(2));
    let rows = screen.rows(pane);
    let offset = layout::offset(selected, rows);
    let end = (offset + rows).min(len);
    let align = |c: &Col, line: Line<'a>| {
        if c.right { line.right_aligned() } else { line }
    };
    let mut visible: Vec<Row> = Vec::with_capacity(end.saturating_sub(offset));
    for i in offset..end {
        let (mut cells, style) = row(i);
        let cells: Vec<Cell> = kept
            .iter()
            .zip(&cell_widths)
            .map(|(k, w)| {
                // Cut with an ellipsis, never silently: `period=1…`, not `period=1` for 183.
                let line = truncate_line(std::mem::take(&mut cells[*k]), *w as usize);
                Cell::from(align(&cols[*k], line))
            })
            .collect();
        let mut r = Row::new(cells);
        if let Some(style) = style {
            r = r.style(style);
        }
        if focused && i == selected {
            r = r.style(theme.selected);
        }
        visible.push(r);
    }
    let mut title = title;
    if len > rows && rows > 0 {
        title.spans.push(Span::styled(
            format!(" {}-{} of {} ", offset + 1, end, len),
            theme.muted,
        ));
    }
    let header = Row::new(
        kept.iter()
            .map(|k| Cell::from(align(&cols[*k], Line::from(cols[*k].title)))),
    )
    .style(theme.muted.add_modifier(ratatui::style::Modifier::BOLD));
    let block = block(theme, title, focused);
    if len == 0 {
        let inner = block.inner(area);
        f.render_widget(block, area);
        f.render_widget(
            ratatui::widgets::Paragraph::new(Line::styled(empty, theme.muted)),
            Rect {
                y: inner.y,
                height: inner.height.min(1),
                ..inner
            },
        );
        return;
    }
    let widths: Vec<Constraint> = kept
        .iter()
        .map(|k| match cols[*k].width {
            0 => Constraint::Fill(1),
            w => Constraint::Length(w),
        })
        .collect();
    let table = Table::new(visible, widths)
        .header(header)
        .block(block)
        .column_spacing(1);
    f.render_widget(table, area);
}

/// The width each kept column gets: its own, and an even share of what is left for the filling
/// ones (rounded down, so a cell that fits it fits whatever the layout gives).
pub fn widths_of(cols: &[Col], kept: &[usize], inner: u16) -> Vec<u16> {
    let fixed: u16 = kept.iter().map(|k| cols[*k].width).sum();
    let spacing = kept.len().saturating_sub(1) as u16;
    let fills = kept.iter().filter(|k| cols[**k].width == 0).count() as u16;
    let share = inner
        .saturating_sub(fixed + spacing)
        .checked_div(fills)
        .unwrap_or(0);
    kept.iter()
        .map(|k| match cols[*k].width {
            0 => share,
            w => w,
        })
        .collect()
}

/// A styled line cut to `max` cells with [`truncate`]'s rule, each span keeping its style.
pub fn truncate_line(line: Line<'_>, max: usize) -> Line<'_> {
    if line.width() <= max {
        return line;
    }
    let mut room = max;
    let mut spans = Vec::new();
    for span in line.spans {
        let w = span.width();
        if w < room {
            room -= w;
            spans.push(span);
            continue;
        }
        // The span that crosses the edge ends the line, with the ellipsis in its style.
        let cut = truncate(&span.content, room);
        let cut = if cut.ends_with('…') {
            cut
        } else {
            truncate(&format!("{cut}…"), room)
        };
        spans.push(Span::styled(cut, span.style));
        break;
    }
    Line { spans, ..line }
}

/// " · stale 12s" when a pane's data is old, else nothing.
pub fn staleness<'a>(theme: &Theme, stale_for: Option<Duration>) -> Vec<Span<'a>> {
    match stale_for {
        Some(d) => vec![Span::styled(format!(" stale {} ", age(d)), theme.warn)],
        None => vec![],
    }
}

/// A panel over the screen (`/agents`, `/auto`): its lines in a centred box as tall as they are
/// (at most the screen), scrolled by `scroll` lines.
pub fn lines_panel(
    f: &mut Frame,
    theme: &Theme,
    area: Rect,
    title: &str,
    lines: Vec<Line<'_>>,
    scroll: u16,
) {
    use ratatui::widgets::{Clear, Paragraph, Wrap};
    let height = (lines.len() as u16).saturating_add(2).min(area.height);
    let r = centered(area, 90, height);
    f.render_widget(Clear, r);
    let p = Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .scroll((scroll, 0))
        .block(block(theme, Line::from(format!(" {title} ")), true))
        .style(theme.base);
    f.render_widget(p, r);
}

pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width);
    let h = height.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

pub fn opt(x: Option<f64>, decimals: usize) -> String {
    x.map(|v| num(v, decimals)).unwrap_or_else(|| "-".into())
}

/// A JSON value as a field or a parameter list shows it: strings without quotes, numbers in the
/// console's format (`2,352.9`). Not for a JSON tree, which shows what the service sent.
pub fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Number(n) if n.is_f64() => {
            n.as_f64().map_or_else(|| n.to_string(), fmt_number)
        }
        // Integers are grouped from their own digits: a u64 past 2^53 loses none.
        serde_json::Value::Number(n) => group(&n.to_string()),
        other => plain_value_text(other),
    }
}

/// [`value_text`] without separators, for a text field the person edits (a form prefilled from
/// a row's parameters) and for identifiers and times, which are not magnitudes.
pub fn plain_value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `text` cut to `max` terminal cells, ending in `…` when it was cut (`period=1…`, never a
/// misleading `period=1` for 183). Widths are display widths: a wide character counts two.
/// Every table cell and one-line message that may be too long goes through here.
pub fn truncate(text: &str, max: usize) -> String {
    use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};
    if text.width() <= max {
        return text.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > max - 1 {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// A number as short as it can be written, grouped: `14` (not `14.0`), `2,352.9`, `0.125`;
/// NaN and infinities are `-`.
pub fn fmt_number(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    group(&plain_number(x))
}

/// [`fmt_number`] without separators, for a text field the person edits and the console parses
/// back (a form's prefilled value).
pub fn plain_number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 9e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
mod tests {
    /// Issue 37: the bar is a share of the item's own lifetime, so a fresh 90-second item is full
    /// rather than looking nearly expired against 5 minutes.
    #[test]
    fn the_countdown_bar_is_a_share_of_the_items_own_lifetime() {
        let theme = Theme::monochrome();
        let bar = |left: i64, life: Option<i64>| -> String {
            countdown(
                &theme,
                TimeDelta::seconds(left),
                life.map(TimeDelta::seconds),
                10,
            )
            .iter()
            .map(|s| s.content.to_string())
            .collect()
        };
        assert_eq!(bar(90, Some(90)), "██████████ 1:30");
        assert_eq!(bar(45, Some(90)), "█████░░░░░ 0:45");
        assert_eq!(bar(90, None), "███░░░░░░░ 1:30", "5 minutes when not known");
        // Under a minute has an attribute of its own without color (NO_COLOR).
        let style = |left: i64| countdown(&theme, TimeDelta::seconds(left), None, 10)[0].style;
        assert_ne!(style(90), style(45));
        assert_ne!(style(45), style(10));
    }

    use super::*;

    #[test]
    fn columns_that_do_not_fit_drop_by_priority_and_keep_their_order() {
        let cols = [
            col("a", 10, 0),
            col("b", 10, 2),
            col("c", 10, 1),
            fill_col("d", 8, 0),
        ];
        assert_eq!(fit(&cols, 100), vec![0, 1, 2, 3]);
        // a + d(8 min) + c = 10 + 9 + 11 = 30; b does not fit.
        assert_eq!(fit(&cols, 30), vec![0, 2, 3]);
        assert_eq!(fit(&cols, 5), vec![0]);
    }

    #[test]
    fn truncation_is_width_aware_and_says_so() {
        assert_eq!(truncate("period=183", 9), "period=1…");
        assert_eq!(truncate("period=183", 10), "period=183");
        assert_eq!(truncate("abc", 0), "");
        assert_eq!(truncate("abc", 1), "…");
        // 日本 is four cells wide: three cells hold one wide character and the ellipsis.
        assert_eq!(truncate("日本語", 3), "日…");
        assert_eq!(truncate("日本語", 4), "日…");
        assert_eq!(truncate("日本語", 6), "日本語");
    }

    #[test]
    fn lines_cut_keep_styles_and_end_in_an_ellipsis() {
        let line = Line::from(vec![Span::raw("period="), Span::raw("183")]);
        let cut = truncate_line(line, 9);
        assert_eq!(cut.to_string(), "period=1…");
        let line = Line::from(vec![Span::raw("abcdef"), Span::raw("gh")]);
        assert_eq!(truncate_line(line, 6).to_string(), "abcde…");
        let line = Line::from("short");
        assert_eq!(truncate_line(line, 9).to_string(), "short");
    }

    /// Issue 37: one format everywhere, separators from 1,000 up.
    #[test]
    fn numbers_are_grouped_from_a_thousand_up_whatever_the_format() {
        assert_eq!(num(999.0, 0), "999");
        assert_eq!(num(1000.0, 0), "1,000");
        assert_eq!(num(-2352.9, 1), "-2,352.9");
        // Rounding that crosses 1,000 is grouped after rounding.
        assert_eq!(num(999.996, 2), "1,000.00");
        assert_eq!(num(-999.96, 1), "-1,000.0");
        assert_eq!(num(f64::NAN, 2), "-");
        assert_eq!(num(f64::INFINITY, 2), "-");
        assert_eq!(num(f64::NEG_INFINITY, 0), "-");
        assert_eq!(signed(1387.4, 2), "+1,387.40");
        assert_eq!(pct(-14002.0, 2), "-14,002.00%");
        assert_eq!(fmt_number(2352.9), "2,352.9");
        assert_eq!(fmt_number(-1_000_000.0), "-1,000,000");
        assert_eq!(fmt_number(0.125), "0.125");
        assert_eq!(fmt_number(f64::NAN), "-");
        assert_eq!(
            plain_number(2352.9),
            "2352.9",
            "a form field is parsed back"
        );
        assert_eq!(size(5000.0), "5,000");
        assert_eq!(size(0.032653), "0.032653");
        assert_eq!(size(-1234.5), "-1,234.5");
        // Small prices keep five significant figures, however many decimals that takes.
        assert_eq!(px(0.00001234), "0.000012340");
        assert_eq!(px(0.1834), "0.18340");
        assert_eq!(px(-3215.0), "-3,215.0");
        assert_eq!(px(99_999.9), "100,000");
        assert_eq!(px(f64::NAN), "-");
        // Text that is not a plain number is left alone.
        assert_eq!(group("n/a <30d"), "n/a <30d");
        assert_eq!(group("1e21"), "1e21");
        assert_eq!(group("-"), "-");
        assert_eq!(group("12345"), "12,345");
        assert_eq!(
            group_words("long BTC $2000 5x limit 61250.5 TP 70000 SL 580 on venue2"),
            "long BTC $2,000 5x limit 61,250.5 TP 70,000 SL 580 on venue2"
        );
        assert_eq!(group_words("(oid 900131) @3215"), "(oid 900131) @3,215");
    }

    #[test]
    fn number_formats() {
        assert_eq!(num(1234567.891, 2), "1,234,567.89");
        assert_eq!(num(-1234.5, 1), "-1,234.5");
        assert_eq!(num(-0.001, 2), "0.00");
        assert_eq!(signed(12.3, 2), "+12.30");
        assert_eq!(px(65432.1), "65,432");
        assert_eq!(px(0.123456), "0.12346");
        assert_eq!(clock(TimeDelta::seconds(192)), "3:12");
        assert_eq!(age(Duration::from_secs(75)), "1m15s");
    }
}
