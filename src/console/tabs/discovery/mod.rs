//! The Discovery tab's state: four views (strategy catalog, top backtests, top live, optimized
//! combos), each with its query, its rows, and an index of the rows that pass the filter in the
//! chosen sort order. The index is rebuilt when data arrives or the sort or filter changes, never
//! per frame, so a view over thousands of rows costs a frame what a view over thirty does.
//!
//! Fetching: only the visible view is fetched, and only while the tab is visible — on entering the
//! tab, on a query change, on `r`, every 60 s, and every 2 s while the service says it is still
//! computing. Errors back off like the other feeds.

mod update;
pub mod view;

use crate::api::ApiError;
use crate::api::model::{DiscoveryRow, StrategyEntry};
use crate::console::command::TopParam;
use crate::console::poll::Poll;
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use std::cmp::Ordering;
use std::time::Duration;

pub use crate::console::payload::{
    BacktestsQuery, CombosQuery, DiscoveryPayload, DiscoveryQuery, LiveQuery,
};
pub use crate::console::tab::DView;
pub use crate::console::widgets::value_text;

/// Refresh of the visible view.
pub const REFRESH: Duration = Duration::from_secs(60);
/// Re-fetch while the service is still computing the answer.
pub const COMPUTING_REFRESH: Duration = Duration::from_secs(2);

/// The Discovery tab's part of `DView` (named in `tab.rs` so the layout can place the views).
impl DView {
    /// The sort keys `s` cycles through on this view; the first is the service's order.
    pub fn sort_keys(self) -> &'static [SortKey] {
        use SortKey::*;
        match self {
            DView::Strategies => &[Rank, Name, Category, Id, Params],
            DView::TopBacktests | DView::TopLive => &[
                Rank,
                Return,
                WinRate,
                MaxDrawdown,
                Sharpe,
                ProfitFactor,
                Trades,
                Strategy,
                Pair,
                Timeframe,
                Quality,
            ],
            DView::Combos => &[
                Rank,
                Strategy,
                RankWithin,
                Return,
                Trades,
                WinRate,
                MaxDrawdown,
                Sharpe,
            ],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// The order the service answered in.
    Rank,
    Name,
    Category,
    Id,
    Params,
    Strategy,
    Pair,
    Timeframe,
    Return,
    WinRate,
    MaxDrawdown,
    Sharpe,
    ProfitFactor,
    Trades,
    Quality,
    RankWithin,
}

impl SortKey {
    pub fn label(self) -> &'static str {
        match self {
            SortKey::Rank => "rank",
            SortKey::Name => "name",
            SortKey::Category => "category",
            SortKey::Id => "id",
            SortKey::Params => "params",
            SortKey::Strategy => "strategy",
            SortKey::Pair => "pair",
            SortKey::Timeframe => "tf",
            SortKey::Return => "return",
            SortKey::WinRate => "win",
            SortKey::MaxDrawdown => "max DD",
            SortKey::Sharpe => "Sharpe",
            SortKey::ProfitFactor => "PF",
            SortKey::Trades => "trades",
            SortKey::Quality => "quality",
            SortKey::RankWithin => "rank in strategy",
        }
    }

    /// Numbers sort best first (largest; for drawdowns, which are ≤ 0, the shallowest), text
    /// alphabetically; `S` reverses either.
    fn compare_rows(self, a: &DiscoveryRow, b: &DiscoveryRow) -> Ordering {
        let desc = |x: Option<f64>, y: Option<f64>| {
            let x = x.filter(|v| v.is_finite()).unwrap_or(f64::NEG_INFINITY);
            let y = y.filter(|v| v.is_finite()).unwrap_or(f64::NEG_INFINITY);
            y.total_cmp(&x)
        };
        match self {
            SortKey::Rank | SortKey::Name | SortKey::Category | SortKey::Id | SortKey::Params => {
                Ordering::Equal
            }
            SortKey::Strategy => row_name(a).cmp(row_name(b)),
            SortKey::Pair => a.pair.cmp(&b.pair),
            SortKey::Timeframe => timeframe_minutes(&a.timeframe)
                .cmp(&timeframe_minutes(&b.timeframe))
                .then_with(|| a.timeframe.cmp(&b.timeframe)),
            SortKey::Return => desc(a.stats.total_return, b.stats.total_return),
            SortKey::WinRate => desc(a.stats.win_rate_pct(), b.stats.win_rate_pct()),
            SortKey::MaxDrawdown => desc(a.stats.max_drawdown, b.stats.max_drawdown),
            SortKey::Sharpe => desc(a.stats.sharpe_ratio, b.stats.sharpe_ratio),
            SortKey::ProfitFactor => desc(a.stats.profit_factor, b.stats.profit_factor),
            SortKey::Trades => b.stats.total_trades.cmp(&a.stats.total_trades),
            SortKey::Quality => quality_rank(&a.quality).cmp(&quality_rank(&b.quality)),
            SortKey::RankWithin => a
                .rank_within_strategy
                .unwrap_or(u32::MAX)
                .cmp(&b.rank_within_strategy.unwrap_or(u32::MAX)),
        }
    }

    fn compare_strategies(self, a: &StrategyEntry, b: &StrategyEntry) -> Ordering {
        match self {
            SortKey::Name => a.name.cmp(&b.name),
            SortKey::Category => a.category.cmp(&b.category).then(a.name.cmp(&b.name)),
            SortKey::Id => a.id.cmp(&b.id),
            SortKey::Params => b.parameters.len().cmp(&a.parameters.len()),
            _ => Ordering::Equal,
        }
    }
}

pub fn row_name(r: &DiscoveryRow) -> &str {
    if r.strategy_name.is_empty() {
        &r.strategy_id
    } else {
        &r.strategy_name
    }
}

fn quality_rank(q: &str) -> u8 {
    match q {
        "excellent" => 0,
        "good" => 1,
        "poor" => 2,
        _ => 3,
    }
}

fn timeframe_minutes(tf: &str) -> u64 {
    let (n, unit) = tf.split_at(tf.len().saturating_sub(1));
    let n: u64 = n.parse().unwrap_or(u64::MAX / 100_000);
    n * match unit {
        "m" => 1,
        "h" => 60,
        "d" => 1440,
        "w" => 10080,
        _ => 1,
    }
}

/// `fast=9 slow=21` in the service's key order.
pub fn params_text(params: &Map<String, Value>) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={}", value_text(v)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// How one view's data is doing.
#[derive(Debug, Clone, Default)]
pub struct ViewFeed {
    /// Not scheduled until the view is first shown.
    pub poll: Poll,
    pub error: Option<ApiError>,
    pub computing: bool,
    pub computed_at: Option<DateTime<Utc>>,
    /// Rows the service counted (may exceed those sent).
    pub count: Option<u32>,
}

/// One view's rows as shown: filter, sort, and the index they produce.
#[derive(Debug, Clone, Default)]
pub struct ViewState {
    pub filter: String,
    /// Index into the view's `sort_keys()`.
    pub sort: usize,
    pub reverse: bool,
    /// Indices of the rows that pass the filter, in display order.
    pub index: Vec<usize>,
    /// Lower-case text each row is filtered on, built when rows arrive.
    hay: Vec<String>,
    /// How many times `index` was rebuilt (tests check it is not rebuilt needlessly).
    pub rebuilds: u64,
    pub feed: ViewFeed,
}

#[derive(Debug, Clone, Default)]
pub struct DiscoveryTab {
    view: DView,
    strategies: Vec<StrategyEntry>,
    top: Vec<DiscoveryRow>,
    live: Vec<DiscoveryRow>,
    combos: Vec<DiscoveryRow>,
    backtests_query: BacktestsQuery,
    live_query: LiveQuery,
    combos_query: CombosQuery,
    states: [ViewState; 4],
}

/// A row of a view under the cursor, for details, backtests and proposals.
#[derive(Debug, Clone, Copy)]
pub enum Selected<'a> {
    Strategy(&'a StrategyEntry),
    Row(&'a DiscoveryRow),
}

impl DiscoveryTab {
    pub fn state(&self, view: DView) -> &ViewState {
        &self.states[view.index()]
    }

    fn state_mut(&mut self, view: DView) -> &mut ViewState {
        &mut self.states[view.index()]
    }

    /// The view shown.
    pub fn view(&self) -> DView {
        self.view
    }

    /// `/top`: `view` is shown with `params` applied and fetched now; true when its query
    /// changed (its rows start from the top).
    pub fn show_top(&mut self, view: DView, params: &[TopParam], now: DateTime<Utc>) -> bool {
        self.view = view;
        let changed = self.apply(view, params);
        self.state_mut(view).feed.poll.ask_at(now);
        changed
    }

    #[cfg(test)]
    pub fn combos_query(&self) -> &CombosQuery {
        &self.combos_query
    }

    /// The rows of a ranked view as a test sets them, without an answer.
    #[cfg(test)]
    pub fn rows_mut(&mut self, view: DView) -> &mut Vec<DiscoveryRow> {
        match view {
            DView::TopLive => &mut self.live,
            DView::Combos => &mut self.combos,
            _ => &mut self.top,
        }
    }

    pub fn rows(&self, view: DView) -> &[DiscoveryRow] {
        match view {
            DView::Strategies => &[],
            DView::TopBacktests => &self.top,
            DView::TopLive => &self.live,
            DView::Combos => &self.combos,
        }
    }

    /// Rows shown by `view` (after the filter).
    pub fn len(&self, view: DView) -> usize {
        self.state(view).index.len()
    }

    /// The row at display position `pos` of `view`.
    pub fn get(&self, view: DView, pos: usize) -> Option<Selected<'_>> {
        let i = *self.state(view).index.get(pos)?;
        match view {
            DView::Strategies => self.strategies.get(i).map(Selected::Strategy),
            v => self.rows(v).get(i).map(Selected::Row),
        }
    }

    pub fn strategy(&self, id: &str) -> Option<&StrategyEntry> {
        self.strategies.iter().find(|s| s.id == id)
    }

    /// The request that fetches `view` with its current query.
    pub fn query(&self, view: DView) -> DiscoveryQuery {
        match view {
            DView::Strategies => DiscoveryQuery::Strategies,
            DView::TopBacktests => DiscoveryQuery::TopBacktests(self.backtests_query.clone()),
            DView::TopLive => DiscoveryQuery::TopLive(self.live_query.clone()),
            DView::Combos => DiscoveryQuery::Combos(self.combos_query.clone()),
        }
    }

    /// The query line shown above a view's table: every parameter with its value, or None where
    /// the server's default applies.
    pub fn query_text(&self, view: DView) -> Vec<(&'static str, Option<String>)> {
        match view {
            DView::Strategies => vec![],
            DView::TopBacktests => {
                let q = &self.backtests_query;
                vec![
                    ("filter", q.filter.clone()),
                    ("includeAll", q.include_all.map(|b| b.to_string())),
                ]
            }
            DView::TopLive => {
                let q = &self.live_query;
                vec![
                    ("windowDays", q.window_days.map(|n| n.to_string())),
                    ("limit", q.limit.map(|n| n.to_string())),
                ]
            }
            DView::Combos => {
                let q = &self.combos_query;
                let set: Vec<(&str, String)> = q.to_params();
                [
                    "pair",
                    "timeframe",
                    "days",
                    "perStrategy",
                    "limit",
                    "filter",
                ]
                .into_iter()
                .chain(["minReturnPct", "minTrades"])
                .map(|k| {
                    (
                        k,
                        set.iter().find(|(sk, _)| *sk == k).map(|(_, v)| v.clone()),
                    )
                })
                .collect()
            }
        }
    }

    /// Applies `/top` parameters to a view's query; true if the query changed.
    fn apply(&mut self, view: DView, params: &[TopParam]) -> bool {
        let before = self.query(view);
        for p in params {
            match (view, p) {
                (DView::TopBacktests, TopParam::Filter(v)) => {
                    self.backtests_query.filter = v.clone()
                }
                (DView::TopBacktests, TopParam::IncludeAll(v)) => {
                    self.backtests_query.include_all = *v
                }
                (DView::TopLive, TopParam::WindowDays(v)) => self.live_query.window_days = *v,
                (DView::TopLive, TopParam::Limit(v)) => self.live_query.limit = *v,
                (DView::Combos, TopParam::Pair(v)) => self.combos_query.pair = v.clone(),
                (DView::Combos, TopParam::Timeframe(v)) => self.combos_query.timeframe = v.clone(),
                (DView::Combos, TopParam::Days(v)) => self.combos_query.days = *v,
                (DView::Combos, TopParam::PerStrategy(v)) => self.combos_query.per_strategy = *v,
                (DView::Combos, TopParam::Limit(v)) => self.combos_query.limit = *v,
                (DView::Combos, TopParam::Filter(v)) => self.combos_query.filter = v.clone(),
                (DView::Combos, TopParam::MinReturnPct(v)) => self.combos_query.min_return_pct = *v,
                (DView::Combos, TopParam::MinTrades(v)) => self.combos_query.min_trades = *v,
                // The parser only accepts each view's own keys.
                _ => {}
            }
        }
        self.query(view) != before
    }

    /// Stores an answer; returns false (and keeps the old rows) when it answers an older query.
    pub fn store(&mut self, query: &DiscoveryQuery, payload: DiscoveryPayload) -> bool {
        let view = query.view();
        if *query != self.query(view) {
            return false;
        }
        match payload {
            DiscoveryPayload::Strategies(list) => {
                self.strategies = list;
                let feed = &mut self.state_mut(view).feed;
                feed.computing = false;
                feed.count = None;
            }
            DiscoveryPayload::Rows(d) => {
                let d = *d;
                let feed = &mut self.state_mut(view).feed;
                feed.computing = d.computing;
                feed.computed_at = d.computed_at;
                feed.count = Some(d.count);
                match view {
                    DView::TopBacktests => self.top = d.rows,
                    DView::TopLive => self.live = d.rows,
                    DView::Combos => self.combos = d.rows,
                    DView::Strategies => {}
                }
            }
        }
        self.rebuild_hay(view);
        self.rebuild(view);
        true
    }

    fn rebuild_hay(&mut self, view: DView) {
        let hay: Vec<String> = match view {
            DView::Strategies => self
                .strategies
                .iter()
                .map(|s| {
                    let params: Vec<&str> = s.parameters.iter().map(|p| p.name.as_str()).collect();
                    format!("{} {} {} {}", s.id, s.name, s.category, params.join(" "))
                        .to_lowercase()
                })
                .collect(),
            v => self
                .rows(v)
                .iter()
                .map(|r| {
                    format!(
                        "{} {} {} {} {} {} {}",
                        r.strategy_id,
                        r.strategy_name,
                        r.category,
                        r.pair,
                        r.timeframe,
                        r.quality,
                        params_text(&r.parameters)
                    )
                    .to_lowercase()
                })
                .collect(),
        };
        self.state_mut(view).hay = hay;
    }

    /// Recomputes a view's index from its filter and sort. Called when rows arrive or the sort or
    /// filter changes.
    pub fn rebuild(&mut self, view: DView) {
        let st = &self.states[view.index()];
        let needle = st.filter.to_lowercase();
        let mut index: Vec<usize> = st
            .hay
            .iter()
            .enumerate()
            .filter(|(_, h)| needle.is_empty() || h.contains(&needle))
            .map(|(i, _)| i)
            .collect();
        let key = view.sort_keys()[st.sort.min(view.sort_keys().len() - 1)];
        match view {
            DView::Strategies => {
                let list = &self.strategies;
                index.sort_by(|a, b| key.compare_strategies(&list[*a], &list[*b]));
            }
            v => {
                let rows = self.rows(v);
                index.sort_by(|a, b| key.compare_rows(&rows[*a], &rows[*b]));
            }
        }
        if st.reverse {
            index.reverse();
        }
        let st = &mut self.states[view.index()];
        st.index = index;
        st.rebuilds += 1;
    }

    pub fn sort_key(&self, view: DView) -> SortKey {
        let keys = view.sort_keys();
        keys[self.state(view).sort.min(keys.len() - 1)]
    }
}

impl ViewFeed {
    /// After an answer: the next fetch is in 60 s, or in 2 s while the service is computing.
    pub fn answered(&mut self, at: DateTime<Utc>, latency: Duration) {
        self.error = None;
        let wait = if self.computing {
            COMPUTING_REFRESH
        } else {
            REFRESH
        };
        self.poll.succeeded(at, latency, wait);
    }

    pub fn failed(&mut self, at: DateTime<Utc>, error: ApiError) {
        self.poll.failed(at, COMPUTING_REFRESH, &error);
        self.error = Some(error);
    }
}
