//! The Discovery tab's update: which views are fetched (only while the tab shows), their answers,
//! the filter and sort, and its keys (h/l switch views, Enter shows a row's details, b backtests
//! and p proposes from a row).

use crate::api::ApiError;
use crate::console::action::Effect;
use crate::console::app::App;
use crate::console::command;
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use crate::console::poll::to_delta;
use crate::console::tab::Tab;
use chrono::{DateTime, Utc};
use std::time::Duration;

use super::{DView, DiscoveryPayload, DiscoveryQuery, Selected};

impl App {
    pub(crate) fn schedule_discovery(&mut self, fx: &mut Vec<Effect>) {
        let now = self.now;
        for view in self.discovery_due_views() {
            let query = self.discovery.query(view);
            let feed = &mut self.discovery.state_mut(view).feed;
            if feed.poll.start(now) {
                fx.push(Effect::FetchDiscovery(query));
            }
        }
    }

    /// The Discovery views fetched while the tab shows: the visible one, and the strategy catalog
    /// until it has loaded once (the backtest form takes parameter types and bounds from it).
    pub fn discovery_due_views(&self) -> Vec<DView> {
        let view = self.discovery.view;
        let mut views = vec![view];
        if view != DView::Strategies
            && self
                .discovery
                .state(DView::Strategies)
                .feed
                .poll
                .updated_at
                .is_none()
        {
            views.push(DView::Strategies);
        }
        views
    }

    /// Entering the tab or `r`: the visible view is fetched now.
    pub(crate) fn discovery_due_now(&mut self) {
        let now = self.now;
        let view = self.discovery.view;
        for v in self.discovery_due_views() {
            let feed = &mut self.discovery.state_mut(v).feed;
            if v == view || feed.poll.next_due.is_none() {
                feed.poll.ask_at(now);
            }
        }
    }

    pub(crate) fn switch_view(&mut self, view: DView) {
        self.discovery.view = view;
        let now = self.now;
        for v in self.discovery_due_views() {
            let feed = &mut self.discovery.state_mut(v).feed;
            // A view never fetched is fetched now; one fetched before keeps its schedule (and is
            // fetched now if that has passed).
            if feed.poll.next_due.is_none() {
                feed.poll.ask_at(now);
            }
        }
    }

    /// Rebuilds a view's index after a sort or filter change, keeping the cursor on the same row
    /// when it is still shown.
    fn rebuild_view(&mut self, view: DView) {
        let before = self.row_under_cursor(view);
        self.discovery.rebuild(view);
        self.reselect(view, before);
    }

    /// The data row the cursor is on in a Discovery view.
    fn row_under_cursor(&self, view: DView) -> Option<usize> {
        self.discovery
            .state(view)
            .index
            .get(self.selected(view.pane()))
            .copied()
    }

    /// After a view's index changed, puts the cursor back on the row it was on (or the top).
    fn reselect(&mut self, view: DView, before: Option<usize>) {
        let pane = view.pane();
        let pos = before
            .and_then(|i| {
                self.discovery
                    .state(view)
                    .index
                    .iter()
                    .position(|x| *x == i)
            })
            .unwrap_or(0);
        self.selected.insert(pane, pos);
        self.clamp(pane);
    }

    pub(crate) fn on_discovered(
        &mut self,
        query: DiscoveryQuery,
        result: Result<DiscoveryPayload, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
    ) {
        self.dirty = true;
        let view = query.view();
        let current = query == self.discovery.query(view);
        let now = self.now;
        match result {
            Ok(payload) => {
                let before = self.row_under_cursor(view);
                self.discovery.store(&query, payload);
                let feed = &mut self.discovery.state_mut(view).feed;
                if current {
                    feed.answered(at, latency);
                    self.reselect(view, before);
                } else {
                    // The answer is for parameters changed since: ask again with the new ones.
                    feed.poll.settled();
                    feed.poll.latency = Some(latency);
                    feed.poll.ask_at(now.min(at));
                }
            }
            Err(ApiError::Unauthorized { message }) => {
                let feed = &mut self.discovery.state_mut(view).feed;
                feed.poll.settled();
                feed.error = Some(ApiError::Unauthorized {
                    message: message.clone(),
                });
                self.auth_failed = Some(message);
            }
            Err(e) => {
                let quota = match &e {
                    ApiError::QuotaExceeded { retry_after, .. } => Some(*retry_after),
                    _ => None,
                };
                let feed = &mut self.discovery.state_mut(view).feed;
                if current {
                    feed.failed(at, e);
                } else {
                    feed.poll.settled();
                    feed.poll.ask_at(now.min(at));
                }
                if let Some(wait) = quota {
                    self.quota_until = Some(at + to_delta(wait));
                }
            }
        }
    }

    /// The Discovery row under the cursor.
    pub fn selected_row(&self) -> Option<Selected<'_>> {
        let view = self.discovery.view;
        self.discovery.get(view, self.selected(view.pane()))
    }

    /// `p`: the command line, prefilled with a proposal for the row's coin, to edit and run. The
    /// direction is the row's latest signal when the service sends one (`lastSignal`), else long.
    pub(crate) fn propose_from_row(&mut self) {
        if self.tab != Tab::Discovery {
            return;
        }
        let (pair, signal) = match self.selected_row() {
            Some(Selected::Row(r)) => (
                r.pair.clone(),
                r.stats
                    .extra
                    .get("lastSignal")
                    .and_then(|v| v.as_str())
                    .map(str::to_ascii_lowercase),
            ),
            Some(Selected::Strategy(_)) => ("BTC-USD".to_string(), None),
            None => return,
        };
        let coin = command::normalize_pair(&pair)
            .and_then(|p| p.strip_suffix("-USD").map(str::to_string))
            .unwrap_or_else(|| "BTC".into());
        let side = match signal.as_deref() {
            Some("short" | "sell") => "short",
            _ => "long",
        };
        self.prefill(&format!("/propose {coin} {side} $1000 "));
    }

    /// One character typed into (Some) or erased from (None) the filter of the view shown.
    pub(crate) fn edit_discovery_filter(&mut self, edit: Option<char>) {
        let view = self.discovery.view;
        let filter = &mut self.discovery.state_mut(view).filter;
        match edit {
            Some(c) => filter.push(c),
            None => {
                filter.pop();
            }
        }
        self.rebuild_view(view);
    }

    pub(crate) fn on_discovery_key(&mut self, action: KeyAction, pane: Pane) -> bool {
        let view = self.discovery.view;
        match action {
            KeyAction::Left | KeyAction::FocusPrev => self.switch_view(view.step(-1)),
            KeyAction::Right | KeyAction::FocusNext => self.switch_view(view.step(1)),
            KeyAction::SortNext | KeyAction::SortReverse => {
                let st = self.discovery.state_mut(view);
                if action == KeyAction::SortNext {
                    st.sort = (st.sort + 1) % view.sort_keys().len();
                    st.reverse = false;
                } else {
                    st.reverse = !st.reverse;
                }
                self.rebuild_view(view);
            }
            KeyAction::Select => {
                if self.discovery.get(view, self.selected(pane)).is_some() {
                    self.modal = Some(Modal::Details { scroll: 0 });
                }
            }
            KeyAction::Filter => self.modal = Some(Modal::Filter),
            KeyAction::Backtest => self.open_backtest_form(),
            KeyAction::Propose => self.propose_from_row(),
            _ => return false,
        }
        true
    }
}
