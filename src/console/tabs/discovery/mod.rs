//! The Discovery tab's state: four views (strategy catalog, top backtests, top live, optimized
//! combos), each with its query, its rows, and an index of the rows that pass the filter in the
//! chosen sort order. The index is rebuilt when data arrives or the sort or filter changes, never
//! per frame, so a view over thousands of rows costs a frame what a view over thirty does.
//!
//! Fetching: only the visible view is fetched, and only while the tab is visible — on entering the
//! tab, on a query change, on `r`, every 60 s, and every 2 s while the service says it is still
//! computing. Errors back off like the other feeds.

pub mod rows;
mod update;
pub mod view;

use crate::api::ApiError;
use crate::api::model::{DiscoveryRow, StrategyEntry};
use crate::console::command::TopParam;
use crate::console::poll::Poll;
use chrono::{DateTime, Utc};
use rows::DiscoveryRows;
use serde_json::{Map, Value};
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

pub fn row_name(r: &DiscoveryRow) -> &str {
    if r.strategy_name.is_empty() {
        &r.strategy_id
    } else {
        &r.strategy_name
    }
}

pub(super) fn quality_rank(q: &str) -> u8 {
    match q {
        "excellent" => 0,
        "good" => 1,
        "poor" => 2,
        _ => 3,
    }
}

pub(super) fn timeframe_minutes(tf: &str) -> u64 {
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

/// One view's feed. Its filter and order are the table's (`console/table.rs`), as every
/// table's are.
#[derive(Debug, Clone, Default)]
pub struct ViewState {
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

    /// Rows `view` holds (before the table's filter).
    pub fn len(&self, view: DView) -> usize {
        match view {
            DView::Strategies => self.strategies.len(),
            v => self.rows(v).len(),
        }
    }

    /// `view` as a table.
    pub fn table(&self, view: DView) -> DiscoveryRows<'_> {
        match view {
            DView::Strategies => DiscoveryRows::Strategies(&self.strategies),
            DView::Combos => DiscoveryRows::Combos(&self.combos),
            v => DiscoveryRows::Ranked(self.rows(v)),
        }
    }

    /// Row `i` of `view`'s data.
    pub fn get(&self, view: DView, i: usize) -> Option<Selected<'_>> {
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
        true
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
