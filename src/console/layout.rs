//! Where everything is on screen. One function computes it from the terminal size and the state, and
//! both the views (to draw) and `App::update` (to map mouse clicks) use it, so they always agree.

use super::tab::{DView, Tab};
use ratatui::layout::{Constraint, Direction, Layout, Rect};

/// A focusable region of a tab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pane {
    Positions,
    Orders,
    /// The Desk's strip of staged proposals.
    Strip,
    Inbox,
    /// The selected inbox item as it will execute, with its risk: a text pane, scrolled.
    Detail,
    Decisions,
    Audit,
    Requests,
    /// Every toast and command error, in full (the Logs tab).
    Messages,
    /// The Discovery views, one shown at a time.
    Strategies,
    TopBacktests,
    TopLive,
    Combos,
    /// Backtest jobs, the selected job's statistics (scrolled when they do not fit), and its
    /// trades.
    Jobs,
    Stats,
    Trades,
    /// The research run's lead and agents, its artifacts, and its transcript.
    Agents,
    Artifacts,
    Transcript,
    /// The tool catalog, the selected tool's schema (a text pane, scrolled), and the last tool
    /// call's result.
    Tools,
    Schema,
    Result,
    /// The conversation with the service's agent.
    ChatLog,
    /// Signal destinations, and the selected one's delivery log.
    Destinations,
    Deliveries,
}

impl Pane {
    pub fn title(self) -> &'static str {
        match self {
            Pane::Positions => "Positions",
            Pane::Orders => "Open orders",
            Pane::Strip => "Staged proposals",
            Pane::Inbox => "Approval inbox",
            Pane::Detail => "Detail",
            Pane::Decisions => "Decisions",
            Pane::Audit => "Service audit log",
            Pane::Requests => "Console requests",
            Pane::Messages => "Messages",
            Pane::Strategies => "Strategies",
            Pane::TopBacktests => "Top backtests",
            Pane::TopLive => "Top live",
            Pane::Combos => "Optimized combos",
            Pane::Jobs => "Backtest jobs",
            Pane::Stats => "Statistics",
            Pane::Trades => "Trades",
            Pane::Agents => "Lead and agents",
            Pane::Artifacts => "Artifacts",
            Pane::Transcript => "Transcript",
            Pane::Tools => "Tools",
            Pane::Schema => "Schema",
            Pane::Result => "Result",
            Pane::ChatLog => "Chat",
            Pane::Destinations => "Signal destinations",
            Pane::Deliveries => "Deliveries",
        }
    }

    /// A pane of text scrolled from its top line, rather than a table with a cursor.
    pub fn is_text(self) -> bool {
        matches!(self, Pane::Detail | Pane::Schema | Pane::Stats)
    }
}

#[derive(Debug, Clone, Default)]
pub struct Screen {
    pub header: Rect,
    pub tabs: Vec<(Tab, Rect)>,
    pub tab_bar: Rect,
    /// The Desk's PnL summary; the Proposals tab's detail panel.
    pub summary: Rect,
    pub detail: Rect,
    pub panes: Vec<(Pane, Rect)>,
    /// The Discovery tab's view selector, one rect per view label.
    pub views: Vec<(DView, Rect)>,
    /// The Discovery tab's query line.
    pub query: Rect,
    /// The Backtests tab's statistics (also `Pane::Stats`) and equity chart.
    pub stats: Rect,
    pub chart: Rect,
    /// The Research tab's run line and reply line; the Chat tab's mode line.
    pub banner: Rect,
    /// The Tools tab's schema of the selected tool (also `Pane::Schema`).
    pub schema: Rect,
    /// Tab labels without their padding, when the full ones do not fit.
    pub compact_tabs: bool,
    /// Only the active tab's title, the others by number, when even compact labels do not fit.
    pub tight_tabs: bool,
    pub footer: Rect,
    pub command: Rect,
}

/// Rows of a bordered table above its first data row: the top border and the header.
pub const TABLE_TOP: u16 = 2;
/// Rows of a bordered table that are not data: top border, header, bottom border.
pub const TABLE_CHROME: u16 = 3;

impl Screen {
    pub fn pane(&self, pane: Pane) -> Rect {
        self.panes
            .iter()
            .find(|(p, _)| *p == pane)
            .map(|(_, r)| *r)
            .unwrap_or_default()
    }

    /// Data rows a table pane can show.
    pub fn rows(&self, pane: Pane) -> usize {
        self.pane(pane).height.saturating_sub(TABLE_CHROME) as usize
    }

    pub fn tab_at(&self, x: u16, y: u16) -> Option<Tab> {
        self.tabs
            .iter()
            .find(|(_, r)| contains(*r, x, y))
            .map(|(t, _)| *t)
    }

    pub fn view_at(&self, x: u16, y: u16) -> Option<DView> {
        self.views
            .iter()
            .find(|(_, r)| contains(*r, x, y))
            .map(|(v, _)| *v)
    }

    pub fn pane_at(&self, x: u16, y: u16) -> Option<Pane> {
        self.panes
            .iter()
            .find(|(_, r)| contains(*r, x, y))
            .map(|(p, _)| *p)
    }

    /// The pane and the visible data row (0 = first shown) under a point.
    pub fn row_at(&self, x: u16, y: u16) -> Option<(Pane, usize)> {
        let pane = self.pane_at(x, y)?;
        let r = self.pane(pane);
        let first = r.y + TABLE_TOP;
        let last = r.y + r.height.saturating_sub(1);
        (y >= first && y < last).then(|| (pane, (y - first) as usize))
    }
}

fn contains(r: Rect, x: u16, y: u16) -> bool {
    x >= r.x && x < r.x + r.width && y >= r.y && y < r.y + r.height
}

/// `pane` over the whole body; every other region of the tab empty (drawn as nothing, and no
/// click lands in it).
fn zoomed(screen: &mut Screen, pane: Pane, body: Rect) {
    let gone = Rect::default();
    for (p, r) in screen.panes.iter_mut() {
        *r = if *p == pane { body } else { gone };
    }
    screen.views.clear();
    for r in [
        &mut screen.summary,
        &mut screen.detail,
        &mut screen.query,
        &mut screen.stats,
        &mut screen.chart,
        &mut screen.banner,
        &mut screen.schema,
    ] {
        *r = gone;
    }
    // The views draw these panes from their named rects.
    match pane {
        Pane::Detail => screen.detail = body,
        Pane::Schema => screen.schema = body,
        Pane::Stats => screen.stats = body,
        _ => {}
    }
}

/// The first row shown so that `selected` is visible in a window of `rows`.
pub fn offset(selected: usize, rows: usize) -> usize {
    if rows == 0 {
        return selected;
    }
    (selected + 1).saturating_sub(rows)
}

/// Tab labels as the tab bar writes them: " 1 Desk ", " 2 Proposals (3) "; compact: "1 Desk".
pub fn tab_label(i: usize, tab: Tab, shape: &Shape, compact: bool) -> String {
    let staged = match tab {
        Tab::Proposals => shape.staged,
        _ => 0,
    };
    let text = if staged > 0 {
        format!("{} {} ({staged})", i + 1, tab.title())
    } else {
        format!("{} {}", i + 1, tab.title())
    };
    if compact { text } else { format!(" {text} ") }
}

/// The label as drawn: in tight mode, tabs other than the active one show a short title.
pub fn tab_label_at(i: usize, tab: Tab, shape: &Shape, compact: bool, tight: bool) -> String {
    if !tight || tab == shape.tab {
        return tab_label(i, tab, shape, compact);
    }
    let short = match tab {
        Tab::Desk => "Desk",
        Tab::Proposals => "Props",
        Tab::Logs => "Logs",
        Tab::Discovery => "Disc",
        Tab::Backtests => "Tests",
        Tab::Research => "Res",
        Tab::Tools => "Tools",
        Tab::Chat => "Chat",
        Tab::Signals => "Sig",
    };
    match (tab, shape.staged) {
        (Tab::Proposals, n) if n > 0 => format!("{} {short}({n})", i + 1),
        _ => format!("{} {short}", i + 1),
    }
}

/// Data lines of a bordered text pane (no header row).
pub fn text_rows(r: Rect) -> usize {
    r.height.saturating_sub(2) as usize
}

/// A Discovery view's label in the selector: " Top backtests ".
pub fn view_label(view: DView) -> String {
    format!(" {} ", view.title())
}

/// What the layout depends on besides the terminal's size: the tab on screen and how many rows
/// the tables that grow with their data have.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub tab: Tab,
    /// Staged proposals on the strip (the Proposals tab's label counts them).
    pub staged: usize,
    /// Inbox items that can still be approved (the Desk's strip).
    pub approvable: usize,
    pub inbox: usize,
    pub positions: usize,
    pub orders: usize,
    pub discovery_view: DView,
    pub jobs: usize,
    pub agents: usize,
    pub artifacts: usize,
    pub tools: usize,
    /// Lines of the selected tool's schema before wrapping (its heading and one per argument).
    pub schema: usize,
    pub destinations: usize,
    /// A pane zoomed to the whole body (`z`): the tab's other regions are not drawn.
    pub zoom: Option<Pane>,
}

pub fn compute(width: u16, height: u16, shape: &Shape) -> Screen {
    let area = Rect::new(0, 0, width, height);
    let [header, tab_bar, body, footer, command] = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .areas(area);
    let mut tabs = Vec::new();
    let mut x = tab_bar.x;
    let full: usize = Tab::ALL
        .iter()
        .enumerate()
        .map(|(i, t)| tab_label(i, *t, shape, false).chars().count() + 1)
        .sum();
    let compact = full > tab_bar.width as usize;
    let compact_w: usize = Tab::ALL
        .iter()
        .enumerate()
        .map(|(i, t)| tab_label(i, *t, shape, true).chars().count() + 1)
        .sum();
    let tight = compact_w > tab_bar.width as usize + 1;
    for (i, tab) in Tab::ALL.iter().enumerate() {
        let w = tab_label_at(i, *tab, shape, compact, tight).chars().count() as u16;
        let w = w.min((tab_bar.x + tab_bar.width).saturating_sub(x));
        tabs.push((*tab, Rect::new(x, tab_bar.y, w, 1)));
        x += w + 1;
    }
    let mut screen = Screen {
        header,
        tabs,
        tab_bar,
        compact_tabs: compact,
        tight_tabs: tight,
        footer,
        command,
        ..Default::default()
    };
    match shape.tab {
        Tab::Desk => desk(&mut screen, body, shape),
        Tab::Proposals => proposals(&mut screen, body, shape),
        Tab::Logs => {
            let [audit, rest] = Layout::default()
                .direction(Direction::Vertical)
                .constraints([Constraint::Percentage(40), Constraint::Percentage(60)])
                .areas(body);
            // Messages beside the request log when there is room; under it otherwise.
            let [requests, messages] = if width >= 140 {
                Layout::horizontal([Constraint::Length(72), Constraint::Min(40)]).areas(rest)
            } else {
                Layout::vertical([Constraint::Percentage(60), Constraint::Percentage(40)])
                    .areas(rest)
            };
            screen.panes = vec![
                (Pane::Audit, audit),
                (Pane::Requests, requests),
                (Pane::Messages, messages),
            ];
        }
        Tab::Discovery => {
            let [selector, query, table] = Layout::default()
                .direction(Direction::Vertical)
                .constraints([
                    Constraint::Length(1),
                    Constraint::Length(1),
                    Constraint::Min(3),
                ])
                .areas(body);
            let mut x = selector.x;
            for view in DView::ALL {
                let w = (view_label(view).chars().count() as u16)
                    .min((selector.x + selector.width).saturating_sub(x));
                screen.views.push((view, Rect::new(x, selector.y, w, 1)));
                x += w + 1;
            }
            screen.query = query;
            screen.panes = vec![(shape.discovery_view.pane(), table)];
        }
        Tab::Backtests => {
            let tall = body.height >= 30;
            // A tall terminal lists more jobs and gives the statistics and the equity chart a
            // third of the height; the trades take the rest.
            let most = if tall { (body.height / 6).max(5) } else { 2 };
            let listed = (shape.jobs as u16).clamp(1, most);
            let middle = if tall { (body.height / 3).max(14) } else { 9 };
            let [jobs, middle, trades] = Layout::default()
                .direction(Direction::Vertical)
                .constraints([
                    Constraint::Length(listed + TABLE_CHROME),
                    Constraint::Length(middle),
                    Constraint::Min(TABLE_CHROME),
                ])
                .areas(body);
            let stats_w = if width >= 100 { 52 } else { 49 };
            let [stats, chart] = Layout::default()
                .direction(Direction::Horizontal)
                .constraints([Constraint::Length(stats_w), Constraint::Min(10)])
                .areas(middle);
            screen.stats = stats;
            screen.chart = chart;
            screen.panes = vec![
                (Pane::Jobs, jobs),
                (Pane::Stats, stats),
                (Pane::Trades, trades),
            ];
        }
        Tab::Research => {
            let [banner, rest] =
                Layout::vertical([Constraint::Length(2), Constraint::Min(3)]).areas(body);
            screen.banner = banner;
            let agents_n = shape.agents.max(1) as u16;
            let artifacts_n = shape.artifacts.max(1) as u16;
            let (agents, artifacts, transcript) = if width >= 160 {
                // Wide: the agents and the artifacts side by side, as tall as the longer list
                // needs (up to half the height), and the transcript, which only grows, under
                // them over the whole width.
                let band = table_height(shape.agents.max(shape.artifacts))
                    .min(rest.height / 2)
                    .max(TABLE_CHROME + 1);
                let [top, transcript] =
                    Layout::vertical([Constraint::Length(band), Constraint::Min(3)]).areas(rest);
                let [agents, artifacts] =
                    Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)])
                        .areas(top);
                (agents, artifacts, transcript)
            } else if width >= 100 {
                let [left, right] =
                    Layout::horizontal([Constraint::Percentage(50), Constraint::Min(20)])
                        .areas(rest);
                let [agents, artifacts] = Layout::vertical([
                    Constraint::Min(TABLE_CHROME + 1),
                    Constraint::Length(artifacts_n.min(6) + TABLE_CHROME),
                ])
                .areas(left);
                (agents, artifacts, right)
            } else {
                let [agents, artifacts, transcript] = Layout::vertical([
                    Constraint::Length(agents_n.min(4) + TABLE_CHROME),
                    Constraint::Length(artifacts_n.min(2) + TABLE_CHROME),
                    Constraint::Min(3),
                ])
                .areas(rest);
                (agents, artifacts, transcript)
            };
            screen.panes = vec![
                (Pane::Agents, agents),
                (Pane::Artifacts, artifacts),
                (Pane::Transcript, transcript),
            ];
        }
        Tab::Tools => {
            let (tools, schema, result) = if width >= 100 {
                let [left, right] =
                    Layout::horizontal([Constraint::Percentage(45), Constraint::Min(20)])
                        .areas(body);
                // The schema as tall as its lines (up to 40%), the result the rest: a tool with
                // two arguments left three quarters of its 40% empty.
                let most = (right.height * 2 / 5).max(6);
                let schema_h = (shape.schema.min(u16::MAX as usize / 2) as u16 + 2).clamp(6, most);
                let [schema, result] =
                    Layout::vertical([Constraint::Length(schema_h), Constraint::Min(TABLE_CHROME)])
                        .areas(right);
                (left, schema, result)
            } else {
                let listed = shape.tools.clamp(1, 5) as u16;
                let [tools, schema, result] = Layout::vertical([
                    Constraint::Length(listed + TABLE_CHROME),
                    Constraint::Length(6),
                    Constraint::Min(TABLE_CHROME),
                ])
                .areas(body);
                (tools, schema, result)
            };
            screen.schema = schema;
            screen.panes = vec![
                (Pane::Tools, tools),
                (Pane::Schema, schema),
                (Pane::Result, result),
            ];
        }
        Tab::Chat => {
            let [banner, log] =
                Layout::vertical([Constraint::Length(1), Constraint::Min(3)]).areas(body);
            screen.banner = banner;
            screen.panes = vec![(Pane::ChatLog, log)];
        }
        Tab::Signals => {
            // Eight rows, more on a tall terminal: the deliveries below keep at least half.
            let most = (body.height / 2).saturating_sub(1 + TABLE_CHROME).max(8) as usize;
            let listed = shape.destinations.clamp(1, most) as u16;
            let [banner, dests, deliveries] = Layout::vertical([
                Constraint::Length(1),
                Constraint::Length(listed + TABLE_CHROME),
                Constraint::Min(TABLE_CHROME),
            ])
            .areas(body);
            screen.banner = banner;
            screen.panes = vec![(Pane::Destinations, dests), (Pane::Deliveries, deliveries)];
        }
    }
    if let Some(z) = shape
        .zoom
        .filter(|z| screen.panes.iter().any(|(p, _)| p == z))
    {
        zoomed(&mut screen, z, body);
    }
    screen
}

/// Rows a table needs to show `n` data rows (one, for its empty line, when it has none). Capped
/// past any terminal's height, low enough that the Desk's sums of three never overflow.
fn table_height(n: usize) -> u16 {
    (n.clamp(1, 4096) as u16) + TABLE_CHROME
}

/// The Desk: the PnL summary, positions and open orders (side by side on a wide terminal), the
/// strip of staged proposals. Tables get the rows their data needs; what is left goes to the
/// summary, whose equity chart can use any height.
fn desk(screen: &mut Screen, body: Rect, shape: &Shape) {
    let (positions_h, orders_h) = (table_height(shape.positions), table_height(shape.orders));
    let strip_need = table_height(shape.approvable);
    // Both tables' columns fit in half of 200 columns.
    let side = body.width >= 200;
    let tables_need = if side {
        positions_h.max(orders_h)
    } else {
        positions_h + orders_h
    };
    let one_row = TABLE_CHROME + 1;
    let tables_min = if side { one_row } else { 2 * one_row };
    let mut summary_h = 5;
    // A strip that fits needs no cap; one that does not fit keeps at least a few rows.
    let strip_short = strip_need.min(7);
    let strip = if summary_h + tables_need + strip_need <= body.height {
        summary_h = body.height - tables_need - strip_need;
        strip_need
    } else if summary_h + tables_need + strip_short <= body.height {
        body.height - summary_h - tables_need
    } else {
        // Every table keeps at least one data row: on a short terminal the strip gives up its
        // extra rows first, then the PnL summary its third line.
        let mut strip = strip_short;
        if body.height < summary_h + tables_min + strip {
            strip = body
                .height
                .saturating_sub(summary_h + tables_min)
                .clamp(one_row, strip);
        }
        if body.height < summary_h + tables_min + strip {
            summary_h = 4;
        }
        strip
    };
    let [summary, tables, strip] = Layout::vertical([
        Constraint::Length(summary_h),
        Constraint::Min(tables_min),
        Constraint::Length(strip),
    ])
    .areas(body);
    let [positions, orders] = if side {
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(tables)
    } else if positions_h + orders_h <= tables.height {
        // Orders take any spare row: they come and go more often than positions.
        Layout::vertical([Constraint::Length(positions_h), Constraint::Min(one_row)]).areas(tables)
    } else {
        Layout::vertical([Constraint::Percentage(55), Constraint::Min(one_row)]).areas(tables)
    };
    screen.summary = summary;
    screen.panes = vec![
        (Pane::Positions, positions),
        (Pane::Orders, orders),
        (Pane::Strip, strip),
    ];
}

/// Proposals: the inbox, the selected item's detail and the decisions. Wide, the detail has the
/// whole right side (a trade's risk, verdicts and chart use the height) and the decisions take
/// what the inbox leaves on the left; narrow, they stack and the detail scrolls.
fn proposals(screen: &mut Screen, body: Rect, shape: &Shape) {
    let width = body.width;
    let decisions_min = if body.height >= 30 { 8 } else { 4 };
    let (inbox, detail, decisions) = if width >= 160 {
        let [left, detail] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                .areas(body);
        // The decisions keep at least a few rows; the inbox has the rest up to what it needs,
        // and the decisions (a history that only grows) any spare rows.
        let inbox_h = table_height(shape.inbox)
            .max(8)
            .min(left.height.saturating_sub(decisions_min));
        let [inbox, decisions] =
            Layout::vertical([Constraint::Length(inbox_h), Constraint::Min(decisions_min)])
                .areas(left);
        (inbox, detail, decisions)
    } else if width >= 100 {
        // Under 160 columns half the width is too narrow for the decisions' results: they
        // keep the whole width under the list and the detail.
        let [top, decisions] =
            Layout::vertical([Constraint::Min(8), Constraint::Length(decisions_min)]).areas(body);
        // From 140 columns the list gets half: at 45% a gateway's inbox (agent column
        // included) lost its TP/SL column up to 166 columns.
        let list = if width >= 140 { 50 } else { 45 };
        let [inbox, detail] = Layout::horizontal([
            Constraint::Percentage(list),
            Constraint::Percentage(100 - list),
        ])
        .areas(top);
        (inbox, detail, decisions)
    } else {
        let [top, decisions] =
            Layout::vertical([Constraint::Min(8), Constraint::Length(decisions_min)]).areas(body);
        // On a short screen the detail comes first: with five rows listed, 60x20 left it two
        // lines, too few for the trade and its risk. What does not fit scrolls (focus it).
        let most = if body.height >= 20 { 5 } else { 2 };
        let listed = shape.inbox.clamp(1, most) as u16 + TABLE_CHROME;
        let [inbox, detail] =
            Layout::vertical([Constraint::Length(listed), Constraint::Min(4)]).areas(top);
        (inbox, detail, decisions)
    };
    screen.detail = detail;
    screen.panes = vec![
        (Pane::Inbox, inbox),
        (Pane::Detail, detail),
        (Pane::Decisions, decisions),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_keeps_the_selection_visible() {
        assert_eq!(offset(0, 10), 0);
        assert_eq!(offset(9, 10), 0);
        assert_eq!(offset(10, 10), 1);
        assert_eq!(offset(99, 10), 90);
    }
}
