//! The Discovery tab's update: which views are fetched (only while the tab shows), their answers,
//! the filter and sort, and its keys (h/l switch views, Enter shows a row's details, b backtests
//! and p proposes from a row).

use super::{DView, DiscoveryPayload, DiscoveryQuery, DiscoveryTab, Selected};
use crate::api::ApiError;
use crate::console::action::Effect;
use crate::console::command;
use crate::console::component::{Ask, Ctx, TabComponent};
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use crate::console::poll::to_delta;
use crate::console::tab::Tab;
use crate::console::table::Rows;
use chrono::{DateTime, Utc};
use std::time::Duration;

impl DiscoveryTab {
    /// The Discovery views fetched while the tab shows: the visible one, and the strategy catalog
    /// until it has loaded once (the backtest form takes parameter types and bounds from it).
    pub fn due_views(&self) -> Vec<DView> {
        let view = self.view;
        let mut views = vec![view];
        if view != DView::Strategies && self.state(DView::Strategies).feed.poll.updated_at.is_none()
        {
            views.push(DView::Strategies);
        }
        views
    }

    /// Entering the tab or `r`: the visible view is fetched now.
    pub fn due_now(&mut self, now: DateTime<Utc>) {
        let view = self.view;
        for v in self.due_views() {
            let feed = &mut self.state_mut(v).feed;
            if v == view || feed.poll.next_due.is_none() {
                feed.poll.ask_at(now);
            }
        }
    }

    pub fn switch_view(&mut self, view: DView, now: DateTime<Utc>) {
        self.view = view;
        for v in self.due_views() {
            let feed = &mut self.state_mut(v).feed;
            // A view never fetched is fetched now; one fetched before keeps its schedule (and is
            // fetched now if that has passed).
            if feed.poll.next_due.is_none() {
                feed.poll.ask_at(now);
            }
        }
    }

    pub fn on_discovered(
        &mut self,
        query: DiscoveryQuery,
        result: Result<DiscoveryPayload, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
        ctx: &mut Ctx,
    ) {
        ctx.ask(Ask::Redraw);
        let view = query.view();
        let current = query == self.query(view);
        let now = ctx.now;
        match result {
            Ok(payload) => {
                self.store(&query, payload);
                let feed = &mut self.state_mut(view).feed;
                if current {
                    feed.answered(at, latency);
                } else {
                    // The answer is for parameters changed since: ask again with the new ones.
                    feed.poll.settled();
                    feed.poll.latency = Some(latency);
                    feed.poll.ask_at(now.min(at));
                }
            }
            Err(ApiError::Unauthorized { message }) => {
                let feed = &mut self.state_mut(view).feed;
                feed.poll.settled();
                feed.error = Some(ApiError::Unauthorized {
                    message: message.clone(),
                });
                ctx.ask(Ask::AuthFailed(message));
            }
            Err(e) => {
                let quota = match &e {
                    ApiError::QuotaExceeded { retry_after, .. } => Some(*retry_after),
                    _ => None,
                };
                let feed = &mut self.state_mut(view).feed;
                if current {
                    feed.failed(at, e);
                } else {
                    feed.poll.settled();
                    feed.poll.ask_at(now.min(at));
                }
                if let Some(wait) = quota {
                    ctx.ask(Ask::HoldPosts(at + to_delta(wait)));
                }
            }
        }
    }

    /// The row under the cursor of the view shown, `row` being that view's data row there.
    pub fn selected_row(&self, row: Option<usize>) -> Option<Selected<'_>> {
        self.get(self.view, row?)
    }

    /// `p`: the command line, prefilled with a proposal for the row's coin, to edit and run. The
    /// direction is the row's latest signal when the service sends one (`lastSignal`), else long.
    pub fn propose(&self, ctx: &mut Ctx) {
        if ctx.tab != Tab::Discovery {
            return;
        }
        let (pair, signal) = match self.selected_row(ctx.row(self.view.pane())) {
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
        ctx.ask(Ask::Prefill(format!("/propose {coin} {side} $1000 ")));
    }
}

impl TabComponent for DiscoveryTab {
    fn rows(
        &self,
        pane: Pane,
        _now: DateTime<Utc>,
        _master: Option<usize>,
    ) -> Option<Box<dyn Rows + '_>> {
        DView::of_pane(pane).map(|v| Box::new(self.table(v)) as Box<dyn Rows>)
    }

    fn schedule(&mut self, now: DateTime<Utc>, shown: bool, fx: &mut Vec<Effect>) {
        // Fetched only while the tab is on screen.
        if !shown {
            return;
        }
        for view in self.due_views() {
            let query = self.query(view);
            let feed = &mut self.state_mut(view).feed;
            if feed.poll.start(now) {
                fx.push(Effect::FetchDiscovery(query));
            }
        }
    }

    fn entered(&mut self, now: DateTime<Utc>) {
        self.due_now(now);
    }

    fn refresh(&mut self, now: DateTime<Utc>, shown: bool) {
        if shown {
            self.due_now(now);
        }
    }

    fn on_key(&mut self, action: KeyAction, pane: Pane, ctx: &mut Ctx) -> bool {
        let view = self.view;
        match action {
            KeyAction::Left | KeyAction::FocusPrev => self.switch_view(view.step(-1), ctx.now),
            KeyAction::Right | KeyAction::FocusNext => self.switch_view(view.step(1), ctx.now),
            KeyAction::Select => {
                if self.selected_row(ctx.row(pane)).is_some() {
                    ctx.ask(Ask::Open(Box::new(Modal::Details { scroll: 0 })));
                }
            }
            KeyAction::Backtest => ctx.ask(Ask::BacktestForm),
            KeyAction::Propose => self.propose(ctx),
            _ => return false,
        }
        true
    }
}
