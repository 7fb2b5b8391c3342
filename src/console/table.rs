//! Every table's filter and order, the same for all of them: `/` types a filter (words, and
//! `field:value` such as `status:pending`, `agent:demo`, `coin:btc`, `notional:>1000`), Esc
//! clears it, `s` sorts by the next field and `S` reverses, a click on a header sorts by that
//! column, and the title says which filter and which order are in force.
//!
//! A table's data stays its owner's (a tab's, the inbox's, App's logs); what it gives this module
//! is a [`Rows`]: its fields, and a key per row and field. From those and the pane's [`Query`]
//! an index of the rows shown, in order, is built when the data or the query changes (never per
//! frame), so a pane over 10,000 rows draws what a pane over 30 does. The pane's cursor is a
//! position in that index; [`Tables::row`] says which of the owner's rows it is on.
//!
//! Lower layer: imports only the layout's pane names and the widgets' column type.

use super::layout::{Pane, Screen};
use super::theme::Theme;
use super::widgets::{self, Col};
use ratatui::Frame;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// What one cell is to a filter and a sort.
#[derive(Debug, Clone, PartialEq)]
pub enum Key<'a> {
    Num(f64),
    Text(Cow<'a, str>),
    /// Sorted and compared by the number, found by the words: a timeframe (`5m` orders by its
    /// minutes), a quality (best first).
    Labeled(f64, Cow<'a, str>),
    /// Nothing known: matches no `field:value`, and sorts last in either direction.
    None,
}

impl Key<'_> {
    pub fn text(s: impl Into<String>) -> Key<'static> {
        Key::Text(Cow::Owned(s.into()))
    }

    fn matches(&self, needle: &Needle) -> bool {
        match (needle, self) {
            (_, Key::None) => false,
            (Needle::Cmp(op, x), Key::Num(v)) => op.holds(v.total_cmp(x)),
            (Needle::Cmp(..), Key::Text(_)) => false,
            (Needle::Text(n), Key::Num(v)) => contains(&plain_number(*v), n),
            (Needle::Text(n), Key::Text(t)) => contains(t, n),
            (Needle::Cmp(op, x), Key::Labeled(v, _)) => op.holds(v.total_cmp(x)),
            (Needle::Text(n), Key::Labeled(_, t)) => contains(t, n),
        }
    }
}

/// A number as a filter reads it: without thousands separators, so `size:0.5` and `px:2352`
/// find what the cell shows as `0.5000` or `2,352.9`.
fn plain_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// Case-insensitive containment; `needle` is lowercase already.
fn contains(hay: &str, needle: &str) -> bool {
    if hay.is_ascii() {
        // The common case, without an allocation per cell.
        let (h, n) = (hay.as_bytes(), needle.as_bytes());
        return n.is_empty() || h.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n));
    }
    hay.to_lowercase().contains(needle)
}

/// A field of a table: what `field:value` names and `s` sorts by.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// Lowercase, one word: what a filter addresses (a unique prefix will do).
    pub name: &'static str,
    /// The column whose header a click sorts by this field ("" when no column shows it).
    pub header: &'static str,
    /// `s` orders largest first (amounts, returns); otherwise smallest first (names, time
    /// left).
    pub descending: bool,
}

/// A field ordered smallest (or alphabetically) first.
pub const fn field(name: &'static str, header: &'static str) -> Field {
    Field {
        name,
        header,
        descending: false,
    }
}

/// A field ordered largest first.
pub const fn amount(name: &'static str, header: &'static str) -> Field {
    Field {
        name,
        header,
        descending: true,
    }
}

/// What a table is to its filter and sort. Built by the data's owner when asked; cheap (it
/// borrows the data).
pub trait Rows {
    /// The columns as drawn: the view draws these, and a header click is read against them.
    fn cols(&self) -> &[Col];
    fn fields(&self) -> &'static [Field];
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn key(&self, row: usize, field: usize) -> Key<'_>;
    /// What `c` copies of a row.
    fn id(&self, _row: usize) -> Option<String> {
        None
    }
    /// The order before `s` chose one, and between rows a sort finds equal: by this rank, then
    /// as listed. Read once per row for a sort, not per comparison.
    fn rank(&self, _row: usize) -> i64 {
        0
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

impl Op {
    fn holds(self, o: Ordering) -> bool {
        match self {
            Op::Lt => o.is_lt(),
            Op::Le => o.is_le(),
            Op::Gt => o.is_gt(),
            Op::Ge => o.is_ge(),
            Op::Eq => o.is_eq(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Needle {
    Text(String),
    Cmp(Op, f64),
}

#[derive(Debug, Clone, PartialEq)]
struct Term {
    /// None: any field.
    field: Option<usize>,
    needle: Needle,
    negated: bool,
}

impl Term {
    fn matches(&self, rows: &dyn Rows, row: usize) -> bool {
        let hit = match self.field {
            Some(f) => rows.key(row, f).matches(&self.needle),
            None => (0..rows.fields().len()).any(|f| rows.key(row, f).matches(&self.needle)),
        };
        hit != self.negated
    }
}

/// The filter as typed, read against a table's fields. An unknown field is an error the title
/// shows; the filter then shows nothing rather than everything, so a mistyped `staus:pending`
/// never reads as "these are the pending ones".
fn parse(text: &str, fields: &[Field]) -> Result<Vec<Term>, String> {
    let mut terms = Vec::new();
    for word in text.split_whitespace() {
        let (negated, word) = match word.strip_prefix('-') {
            Some(rest) if !rest.is_empty() && rest.parse::<f64>().is_err() => (true, rest),
            _ => (false, word),
        };
        let (field, value) = match word.split_once(':') {
            Some((name, value)) if !name.is_empty() => (Some(field_named(name, fields)?), value),
            _ => (None, word),
        };
        let needle = match field {
            Some(_) => needle(value),
            None => Needle::Text(value.to_lowercase()),
        };
        terms.push(Term {
            field,
            needle,
            negated,
        });
    }
    Ok(terms)
}

/// `>1000`, `<=5`, `=0` compare numbers; anything else is text to find.
fn needle(value: &str) -> Needle {
    let (op, rest) = if let Some(r) = value.strip_prefix(">=") {
        (Op::Ge, r)
    } else if let Some(r) = value.strip_prefix("<=") {
        (Op::Le, r)
    } else if let Some(r) = value.strip_prefix('>') {
        (Op::Gt, r)
    } else if let Some(r) = value.strip_prefix('<') {
        (Op::Lt, r)
    } else if let Some(r) = value.strip_prefix('=') {
        (Op::Eq, r)
    } else {
        return Needle::Text(value.to_lowercase());
    };
    match rest.replace(',', "").parse::<f64>() {
        Ok(x) if x.is_finite() => Needle::Cmp(op, x),
        _ => Needle::Text(value.to_lowercase()),
    }
}

fn field_named(name: &str, fields: &[Field]) -> Result<usize, String> {
    let name = name.to_lowercase();
    if let Some(i) = fields.iter().position(|f| f.name == name) {
        return Ok(i);
    }
    let prefixed: Vec<usize> = (0..fields.len())
        .filter(|i| fields[*i].name.starts_with(&name))
        .collect();
    match prefixed.as_slice() {
        [one] => Ok(*one),
        _ => Err(format!(
            "no field \"{name}\" here; fields: {}",
            fields.iter().map(|f| f.name).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// One table's filter and order as the keys left them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    pub filter: String,
    /// An index into the table's fields; None: its natural order.
    pub sort: Option<usize>,
    pub reverse: bool,
}

impl Query {
    /// Whether anything narrows or reorders the table.
    pub fn is_set(&self) -> bool {
        !self.filter.trim().is_empty() || self.sort.is_some() || self.reverse
    }
}

/// A pane's query, and the rows it shows in order.
#[derive(Debug, Clone, Default)]
pub struct View {
    pub query: Query,
    /// Rows of the data, in the order shown; only those that pass the filter.
    index: Vec<usize>,
    /// Rows the data has (the title says "3 of 20" when the filter hides some).
    total: usize,
    /// Why the filter cannot be read.
    error: Option<String>,
    fields: &'static [Field],
    /// Where the cursor was when the view was last built, and the id of the row it was on.
    cursor: Option<(usize, String)>,
}

impl View {
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    pub fn total(&self) -> usize {
        self.total
    }

    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// The data row at position `at`.
    pub fn row(&self, at: usize) -> Option<usize> {
        self.index.get(at).copied()
    }

    /// The data rows shown, in order.
    pub fn order(&self) -> &[usize] {
        &self.index
    }

    /// Rebuilds the index from `rows` and the query.
    fn build(&mut self, rows: &dyn Rows) {
        self.fields = rows.fields();
        self.total = rows.len();
        self.index.clear();
        let terms = match parse(&self.query.filter, self.fields) {
            Ok(terms) => {
                self.error = None;
                terms
            }
            Err(e) => {
                self.error = Some(e);
                return;
            }
        };
        self.index
            .extend((0..rows.len()).filter(|row| terms.iter().all(|t| t.matches(rows, *row))));
        let sort = self.query.sort.filter(|s| *s < self.fields.len());
        let reverse = self.query.reverse;
        // Each row's keys are read once (a sort compares a row many times, and a key may be a
        // text the row has to put together): 10,000 inbox items sort in a few milliseconds.
        match sort {
            None => {
                self.index.sort_by_cached_key(|r| (rows.rank(*r), *r));
                if reverse {
                    self.index.reverse();
                }
            }
            Some(f) => {
                let descending = self.fields[f].descending != reverse;
                let mut keyed: Vec<(Key, i64, usize)> = self
                    .index
                    .iter()
                    .map(|r| (rows.key(*r, f), rows.rank(*r), *r))
                    .collect();
                keyed.sort_by(|a, b| {
                    compare(&a.0, &b.0, descending).then_with(|| (a.1, a.2).cmp(&(b.1, b.2)))
                });
                self.index = keyed.into_iter().map(|(_, _, r)| r).collect();
            }
        }
    }

    /// What the title adds: the filter, its error, the sort, and how many rows it hides.
    pub fn title(&self) -> Option<String> {
        let mut parts = Vec::new();
        let filter = self.query.filter.trim();
        if let Some(e) = &self.error {
            parts.push(format!("/{filter}: {e}"));
        } else if !filter.is_empty() {
            parts.push(format!(
                "/{filter} ({} of {})",
                self.index.len(),
                self.total
            ));
        }
        let arrow = |descending: bool| if descending { "↓" } else { "↑" };
        match self.query.sort.and_then(|s| self.fields.get(s)) {
            Some(f) => parts.push(format!(
                "sort {} {}",
                f.name,
                arrow(f.descending != self.query.reverse)
            )),
            None if self.query.reverse => parts.push("order reversed".into()),
            None => {}
        }
        (!parts.is_empty()).then(|| parts.join(" · "))
    }
}

/// Known keys first in the asked direction; unknown ones last either way.
fn compare(a: &Key, b: &Key, descending: bool) -> Ordering {
    let flip = |o: Ordering| if descending { o.reverse() } else { o };
    match (a, b) {
        (Key::None, Key::None) => Ordering::Equal,
        (Key::None, _) => Ordering::Greater,
        (_, Key::None) => Ordering::Less,
        (Key::Num(x) | Key::Labeled(x, _), Key::Num(y) | Key::Labeled(y, _)) => {
            flip(x.total_cmp(y))
        }
        (Key::Text(x), Key::Text(y)) => flip(cmp_text(x, y)),
        // Numbers before text in a column that has both.
        (Key::Num(_) | Key::Labeled(..), Key::Text(_)) => Ordering::Less,
        (Key::Text(_), Key::Num(_) | Key::Labeled(..)) => Ordering::Greater,
    }
}

fn cmp_text(a: &str, b: &str) -> Ordering {
    let lower = |s: &str| s.chars().flat_map(char::to_lowercase).collect::<String>();
    if a.is_ascii() && b.is_ascii() {
        let (x, y) = (a.as_bytes(), b.as_bytes());
        return x
            .iter()
            .map(u8::to_ascii_lowercase)
            .cmp(y.iter().map(u8::to_ascii_lowercase))
            .then_with(|| a.cmp(b));
    }
    lower(a).cmp(&lower(b)).then_with(|| a.cmp(b))
}

/// Every pane's view. A pane with none yet shows its rows as listed.
#[derive(Debug, Clone, Default)]
pub struct Tables {
    views: BTreeMap<Pane, View>,
}

impl Tables {
    pub fn view(&self, pane: Pane) -> Option<&View> {
        self.views.get(&pane)
    }

    pub fn query(&self, pane: Pane) -> Query {
        self.views
            .get(&pane)
            .map(|v| v.query.clone())
            .unwrap_or_default()
    }

    /// The pane's view of `rows` under `query` (the pane's own when None), built apart from
    /// the tables so that `rows` may borrow what holds them; [`Tables::put`] keeps it.
    pub fn built(&self, pane: Pane, rows: &dyn Rows, query: Option<Query>) -> View {
        let mut view = View {
            query: query.unwrap_or_else(|| self.query(pane)),
            // The index's allocation is reused by the next build only when it is taken; a new
            // one is cheap next to the filter's work.
            ..View::default()
        };
        view.build(rows);
        view
    }

    pub fn put(&mut self, pane: Pane, mut view: View) {
        view.cursor = self.views.get(&pane).and_then(|v| v.cursor.clone());
        self.views.insert(pane, view);
    }

    /// Where the pane's cursor was when its view was last built, and the id of its row.
    pub fn cursor(&self, pane: Pane) -> Option<(usize, &str)> {
        let (at, id) = self.views.get(&pane)?.cursor.as_ref()?;
        Some((*at, id))
    }

    pub fn set_cursor(&mut self, pane: Pane, cursor: Option<(usize, String)>) {
        if let Some(v) = self.views.get_mut(&pane) {
            v.cursor = cursor;
        }
    }

    /// The pane's rows changed, or its query did: its index is built again.
    pub fn rebuild(&mut self, pane: Pane, rows: &dyn Rows) {
        let view = self.built(pane, rows, None);
        self.put(pane, view);
    }

    /// Changes the pane's query with `change`, and rebuilds from `rows`; true when it changed.
    pub fn set(&mut self, pane: Pane, rows: &dyn Rows, change: impl FnOnce(&mut Query)) -> bool {
        let before = self.query(pane);
        let mut query = before.clone();
        change(&mut query);
        let changed = query != before;
        let view = self.built(pane, rows, Some(query));
        self.put(pane, view);
        changed
    }

    /// Rows the pane shows.
    pub fn len(&self, pane: Pane, rows: usize) -> usize {
        self.views.get(&pane).map_or(rows, View::len)
    }

    /// The data row at position `at` of the pane (as listed, before any view was built).
    pub fn row(&self, pane: Pane, at: usize) -> Option<usize> {
        match self.views.get(&pane) {
            Some(v) => v.index.get(at).copied(),
            None => Some(at),
        }
    }

    /// Where data row `row` is shown in the pane, if it passes the filter.
    pub fn position(&self, pane: Pane, row: usize) -> Option<usize> {
        match self.views.get(&pane) {
            Some(v) => v.index.iter().position(|r| *r == row),
            None => Some(row),
        }
    }

    pub fn title(&self, pane: Pane) -> Option<String> {
        self.views.get(&pane).and_then(View::title)
    }
}

/// Draws a table pane through its view: the rows that pass its filter in its order, its
/// columns as `rows` gives them (so a header click reads what was drawn), and its title followed
/// by the filter and the sort. `row` is called with a row of the data, for the visible ones only.
#[allow(clippy::too_many_arguments)]
pub fn draw<'a>(
    f: &mut Frame,
    screen: &Screen,
    theme: &Theme,
    tables: &Tables,
    pane: Pane,
    mut title: Line<'a>,
    focused: bool,
    selected: usize,
    rows: &dyn Rows,
    empty: &str,
    mut row: impl FnMut(usize) -> (Vec<Line<'a>>, Option<Style>),
) {
    // A view built before its rows changed in this update (a list replaced under it) is built
    // again here for this frame, so no index points past the rows.
    let fresh;
    let view = match tables.view(pane) {
        Some(v) if v.total != rows.len() => {
            fresh = tables.built(pane, rows, None);
            Some(&fresh)
        }
        other => other,
    };
    if let Some(text) = view.and_then(View::title) {
        let style = if view.is_some_and(|v| v.error.is_some()) {
            theme.error
        } else {
            theme.accent
        };
        title.spans.push(Span::styled(format!("[{text}] "), style));
    }
    let len = view.map_or(rows.len(), View::len);
    let hidden;
    let empty = match view {
        Some(v) if v.total > 0 && v.is_empty() => {
            hidden = match &v.error {
                Some(e) => e.clone(),
                None => format!(
                    "nothing matches /{} (of {}): Esc clears it",
                    v.query.filter.trim(),
                    v.total
                ),
            };
            hidden.as_str()
        }
        _ => empty,
    };
    widgets::table(
        f,
        screen,
        theme,
        pane,
        title,
        focused,
        selected,
        len,
        rows.cols(),
        empty,
        |i| row(view.and_then(|v| v.index.get(i).copied()).unwrap_or(i)),
    );
}

/// The column under `x` of a table pane's header as `cols` are drawn in `width` cells.
pub fn header_at(cols: &[Col], area: ratatui::layout::Rect, x: u16) -> Option<&'static str> {
    let inner = area.width.saturating_sub(2);
    let kept = widgets::fit(cols, inner);
    let widths = widgets::widths_of(cols, &kept, inner);
    let mut left = area.x + 1;
    for (k, w) in kept.iter().zip(widths) {
        if x >= left && x < left + w {
            return Some(cols[*k].title);
        }
        left += w + 1;
    }
    None
}

/// `s`: no sort → the first field → … → the last → no sort (the natural order).
pub fn next_sort(q: &mut Query, fields: usize) {
    q.sort = match q.sort {
        None if fields > 0 => Some(0),
        Some(s) if s + 1 < fields => Some(s + 1),
        _ => None,
    };
    q.reverse = false;
}

/// A click on a header: sort by that column's field; again on the same one reverses.
pub fn sort_by_header(q: &mut Query, fields: &[Field], title: &str) -> bool {
    let Some(f) = fields
        .iter()
        .position(|f| !f.header.is_empty() && f.header == title)
    else {
        return false;
    };
    if q.sort == Some(f) {
        q.reverse = !q.reverse;
    } else {
        q.sort = Some(f);
        q.reverse = false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::widgets::col;

    struct Sample(Vec<(&'static str, &'static str, f64)>);

    const FIELDS: &[Field] = &[
        field("status", "Status"),
        field("coin", "Coin"),
        amount("notional", "Notional"),
    ];
    const COLS: &[Col] = &[
        col("Status", 8, 0),
        col("Coin", 5, 0),
        col("Notional", 9, 0),
    ];

    impl Rows for Sample {
        fn cols(&self) -> &[Col] {
            COLS
        }
        fn fields(&self) -> &'static [Field] {
            FIELDS
        }
        fn len(&self) -> usize {
            self.0.len()
        }
        fn key(&self, row: usize, field: usize) -> Key<'_> {
            let (s, c, n) = self.0[row];
            match field {
                0 => Key::Text(s.into()),
                1 => Key::Text(c.into()),
                _ if n.is_nan() => Key::None,
                _ => Key::Num(n),
            }
        }
        fn id(&self, row: usize) -> Option<String> {
            Some(format!("p{row}"))
        }
    }

    fn sample() -> Sample {
        Sample(vec![
            ("pending", "BTC", 1200.0),
            ("executed", "ETH", 300.0),
            ("expired", "BTC", f64::NAN),
            ("pending", "SOL", 2500.0),
        ])
    }

    fn shown(filter: &str, sort: Option<usize>, reverse: bool) -> (Vec<usize>, Option<String>) {
        let mut t = Tables::default();
        let rows = sample();
        t.set(Pane::Inbox, &rows, |q| {
            q.filter = filter.into();
            q.sort = sort;
            q.reverse = reverse;
        });
        let v = t.view(Pane::Inbox).unwrap();
        (v.order().to_vec(), v.error().map(String::from))
    }

    #[test]
    fn field_value_terms_narrow_by_that_field_only() {
        assert_eq!(shown("status:pending", None, false).0, vec![0, 3]);
        assert_eq!(shown("coin:btc", None, false).0, vec![0, 2]);
        // A unique prefix names the field; words match any field.
        assert_eq!(shown("st:pend co:sol", None, false).0, vec![3]);
        assert_eq!(shown("eth", None, false).0, vec![1]);
        assert_eq!(shown("-status:pending", None, false).0, vec![1, 2]);
    }

    #[test]
    fn numbers_compare_and_an_unknown_value_never_matches() {
        assert_eq!(shown("notional:>1000", None, false).0, vec![0, 3]);
        assert_eq!(shown("notional:<=300", None, false).0, vec![1]);
        assert_eq!(shown("notional:1200", None, false).0, vec![0]);
        assert_eq!(shown("notional:>1,000", None, false).0, vec![0, 3]);
    }

    #[test]
    fn an_unknown_field_shows_nothing_and_says_which_fields_there_are() {
        let (order, error) = shown("staus:pending", None, false);
        assert!(order.is_empty());
        let error = error.unwrap();
        assert!(error.contains("\"staus\""), "{error}");
        assert!(error.contains("status, coin, notional"), "{error}");
        // The title says it too.
        let mut t = Tables::default();
        t.set(Pane::Inbox, &sample(), |q| q.filter = "zz:x".into());
        assert!(t.title(Pane::Inbox).unwrap().contains("no field"));
    }

    #[test]
    fn sorting_puts_unknown_values_last_in_either_direction() {
        assert_eq!(shown("", Some(2), false).0, vec![3, 0, 1, 2]);
        assert_eq!(shown("", Some(2), true).0, vec![1, 0, 3, 2]);
        // Text ascending, ties in the natural order.
        assert_eq!(shown("", Some(1), false).0, vec![0, 2, 1, 3]);
        assert_eq!(shown("", None, true).0, vec![3, 2, 1, 0]);
    }

    #[test]
    fn the_title_says_the_filter_the_count_and_the_sort() {
        let mut t = Tables::default();
        let rows = sample();
        assert_eq!(t.title(Pane::Inbox), None);
        t.set(Pane::Inbox, &rows, |q| {
            q.filter = "status:pending".into();
            q.sort = Some(2);
        });
        assert_eq!(
            t.title(Pane::Inbox).unwrap(),
            "/status:pending (2 of 4) · sort notional ↓"
        );
        assert_eq!(t.row(Pane::Inbox, 0), Some(3));
        assert_eq!(t.position(Pane::Inbox, 0), Some(1));
        assert_eq!(t.position(Pane::Inbox, 1), None);
        assert_eq!(t.len(Pane::Inbox, 4), 2);
        // A pane without a view shows its rows as listed.
        assert_eq!(t.row(Pane::Orders, 5), Some(5));
        assert_eq!(t.len(Pane::Orders, 7), 7);
    }

    #[test]
    fn s_cycles_through_the_fields_and_back_to_the_natural_order() {
        let mut q = Query::default();
        let mut seen = Vec::new();
        for _ in 0..4 {
            next_sort(&mut q, 3);
            seen.push(q.sort);
        }
        assert_eq!(seen, vec![Some(0), Some(1), Some(2), None]);
        assert!(sort_by_header(&mut q, FIELDS, "Coin"));
        assert_eq!((q.sort, q.reverse), (Some(1), false));
        assert!(sort_by_header(&mut q, FIELDS, "Coin"));
        assert_eq!((q.sort, q.reverse), (Some(1), true));
        assert!(!sort_by_header(&mut q, FIELDS, "Agent"));
    }

    proptest::proptest! {
        /// Whatever is typed, the view lists each row at most once and only rows that exist.
        #[test]
        fn any_filter_lists_existing_rows_once(filter in "\\PC{0,24}", sort in 0usize..5, reverse: bool) {
            let mut t = Tables::default();
            let rows = sample();
            t.set(Pane::Inbox, &rows, |q| {
                q.filter = filter;
                q.sort = (sort < 3).then_some(sort);
                q.reverse = reverse;
            });
            let order = t.view(Pane::Inbox).unwrap().order().to_vec();
            let mut seen = order.clone();
            seen.sort_unstable();
            seen.dedup();
            proptest::prop_assert_eq!(seen.len(), order.len());
            proptest::prop_assert!(order.iter().all(|r| *r < 4));
        }
    }
}
