//! App's part of the account feeds: what their answers change (upper layer: it changes `App`).

use crate::api::ApiError;
use crate::console::action::{Effect, Payload, Resource};
use crate::console::app::App;
use crate::console::feeds::EQUITY_POINTS;
use crate::console::layout::Pane;
use crate::console::poll::{PROBE, to_delta};
use chrono::{DateTime, Utc};
use std::time::Duration;

/// How often a flat account's feeds are asked on a long-polled gateway (see
/// `App::quiet_interval`).
pub const QUIET_ACCOUNT: std::time::Duration = std::time::Duration::from_secs(30);

/// How often the audit log is asked while the Logs tab is not on screen.
pub const QUIET_AUDIT: std::time::Duration = std::time::Duration::from_secs(60);

impl App {
    /// Polls these resources at `at` instead of at their next scheduled time: what an action just
    /// changed shows up now.
    pub(crate) fn poll_now(&mut self, resources: &[Resource], at: DateTime<Utc>) {
        for r in resources {
            if let Some(f) = self.feeds.get_mut(r) {
                f.poll.ask_at(at);
            }
        }
    }

    /// How long a feed waits instead of its interval while what it shows cannot change unseen,
    /// so an idle desk costs nearly nothing:
    /// - on a long-polled gateway nothing moves a flat account (no position, no open order) but
    ///   an execution, and the console hears of every execution from the gateway's inbox at once
    ///   and asks the account then (`inbox/gateway.rs`); a trade made on the service past the
    ///   gateway shows within [`QUIET_ACCOUNT`];
    /// - the audit log is shown on the Logs tab only, which asks it again when it comes on screen.
    fn quiet_interval(&self, resource: Resource) -> Option<std::time::Duration> {
        match resource {
            Resource::Positions | Resource::Orders | Resource::Pnl if self.account_is_quiet() => {
                Some(QUIET_ACCOUNT)
            }
            Resource::Audit if self.tab != crate::console::tab::Tab::Logs => Some(QUIET_AUDIT),
            _ => None,
        }
    }

    fn account_is_quiet(&self) -> bool {
        self.inbox.gate().long_polled()
            && self.decider() == crate::console::decider::Decider::Gateway
            && self.account.positions.is_empty()
            && self.account.orders.is_empty()
            && [Resource::Positions, Resource::Orders]
                .iter()
                .all(|r| self.feeds[r].poll.updated_at.is_some())
    }

    pub(crate) fn on_loaded(
        &mut self,
        resource: Resource,
        result: Result<Payload, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
        fx: &mut Vec<Effect>,
    ) {
        let Some(feed) = self.feeds.get_mut(&resource) else {
            return;
        };
        feed.poll.settled();
        feed.poll.latency = Some(latency);
        match result {
            Ok(payload) => {
                feed.error = None;
                feed.poll.succeeded(at, latency, feed.interval);
                self.apply(payload, at, fx);
                if let Some(quiet) = self.quiet_interval(resource)
                    && let Some(feed) = self.feeds.get_mut(&resource)
                {
                    feed.poll.ask_at(at + to_delta(quiet));
                }
                // The service answers again: the feeds that could not reach it ask now instead of
                // at the end of their backoff.
                for f in self.feeds.values_mut() {
                    if f.unreachable() {
                        f.poll.probe_by(at);
                    }
                }
            }
            Err(ApiError::Unauthorized { message }) => {
                feed.error = Some(ApiError::Unauthorized {
                    message: message.clone(),
                });
                self.auth_failed = Some(message);
            }
            Err(ApiError::NotFound { .. }) if resource == Resource::Proposals => {
                // The service has no proposals extension: the inbox shows what this console staged.
                feed.supported = false;
                feed.error = None;
            }
            Err(e) => {
                if let ApiError::QuotaExceeded { retry_after, .. } = &e {
                    self.quota_until = Some(at + to_delta(*retry_after));
                }
                feed.poll.failed(at, feed.interval, &e);
                // A gateway's 502/503/504 (its upstream is down) is as unreachable as no answer.
                let unreachable = e.is_transient();
                feed.error = Some(e);
                if unreachable {
                    // One cheap request probes every second; the rest back off.
                    if let Some(probe) = self.feeds.get_mut(&Resource::Whoami) {
                        probe.poll.probe_by(at + to_delta(PROBE));
                    }
                }
            }
        }
    }

    fn apply(&mut self, payload: Payload, at: DateTime<Utc>, fx: &mut Vec<Effect>) {
        match payload {
            Payload::Whoami(w) => self.account.whoami = Some(*w),
            Payload::Positions(rows) => {
                self.account.position_index.clear();
                for (i, p) in rows.iter().enumerate() {
                    self.account
                        .position_index
                        // Keyed as proposals are looked up: one coin however spelled.
                        .entry(crate::api::symbol::coin_of(&p.coin))
                        .or_default()
                        .push(i);
                }
                for p in &rows {
                    self.account.market.saw_mark(
                        &crate::api::symbol::coin_of(&p.coin),
                        at,
                        p.mark_px,
                    );
                }
                self.account.positions = rows;
                self.clamp(Pane::Positions);
            }
            Payload::Orders(rows) => {
                self.account.orders = rows;
                self.clamp(Pane::Orders);
            }
            Payload::Pnl(p) => {
                self.account
                    .equity_history
                    .push_back((at, p.total_portfolio_value));
                while self.account.equity_history.len() > EQUITY_POINTS {
                    self.account.equity_history.pop_front();
                }
                self.account.pnl = Some(*p);
            }
            Payload::Usage(u) => self.account.usage = Some(*u),
            Payload::Audit(rows) => {
                self.tabs.logs.on_audit(rows);
            }
            Payload::Proposals(list) => {
                with_inbox!(self, fx, |inbox, ctx| inbox.merge_proposals(list, ctx));
                self.note_staging_marks();
            }
        }
    }
}
