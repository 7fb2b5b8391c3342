//! When time alone changes the screen. The loop wakes for the next poll, a toast's end, and — only
//! while a countdown or an age is on screen — every second.

use crate::console::action::Resource;
use crate::console::app::App;
use crate::console::feeds;
use crate::console::inbox::Status;
use crate::console::modal::Modal;
use crate::console::tab::Tab;
use chrono::{DateTime, Duration as TimeDelta, Utc};

impl App {
    /// Countdowns or ages are on screen: time alone changes what is drawn, so the loop ticks
    /// every second. Otherwise it sleeps until the next poll, toast end or event.
    pub fn needs_clock(&self) -> bool {
        self.header_shows_time() || self.tab_shows_time() || self.modal_shows_time()
    }

    /// "ok 3s ago", "last ok 12s ago, retrying in 4s", or the quota countdown. A refused key is
    /// a fixed message.
    fn header_shows_time(&self) -> bool {
        let quota = self.quota_until.is_some_and(|t| t > self.now);
        let connection = self.auth_failed.is_none()
            && self
                .feeds
                .values()
                .any(|f| f.poll.updated_at.is_some() || f.poll.failures > 0);
        quota || connection
    }

    fn tab_shows_time(&self) -> bool {
        let loaded = |r: Resource| self.feeds[&r].poll.updated_at.is_some();
        let counting = || {
            self.inbox
                .items()
                .iter()
                .any(|i| i.proposal.expires_at.is_some() && i.status(self.now) == Status::Staged)
        };
        match self.tab {
            // Countdowns in the strip, order ages, stale markers.
            Tab::Desk => counting() || loaded(Resource::Positions) || loaded(Resource::Orders),
            Tab::Proposals => counting(),
            Tab::Logs => loaded(Resource::Audit),
            Tab::Discovery => {
                let view = self.tabs.discovery.view();
                self.tabs
                    .discovery
                    .state(view)
                    .feed
                    .poll
                    .updated_at
                    .is_some()
            }
            Tab::Research => self.tabs.research.active(),
            Tab::Signals => self.tabs.signals.loaded() || self.tabs.signals.retry_pending(self.now),
            Tab::Backtests | Tab::Tools | Tab::Chat => false,
        }
    }

    fn modal_shows_time(&self) -> bool {
        matches!(&self.modal, Some(Modal::Approve(d)) if self.item(&d.id).is_some_and(|i| i.remaining(self.now).is_some()))
            || matches!(&self.modal, Some(Modal::Standing { .. }))
    }

    /// When the runner should wake up next if nothing happens: the next poll, the next whole second
    /// while a countdown or age is shown, or a toast's end.
    pub fn next_wakeup(&self) -> DateTime<Utc> {
        let mut next = self.now + TimeDelta::seconds(3600);
        // A decision waiting out its hold is carried out as soon as the hold passes.
        if let Some(held) = &self.held {
            next = next.min(held.due());
        }
        if self.auth_failed.is_none() {
            let decider = self.decider();
            for (_, feed) in self
                .feeds
                .iter()
                .filter(|(r, f)| feeds::polled(**r, f, decider))
            {
                next = next.min(feed.poll.wakeup().unwrap_or(next));
            }
        }
        if self.needs_clock() || self.pending_draw {
            let ms = self.now.timestamp_subsec_millis() as i64;
            next = next.min(self.now + TimeDelta::milliseconds(1000 - ms));
        }
        for t in &self.toasts {
            next = next.min(t.until);
        }
        if self.auth_failed.is_none() {
            if self.tab == Tab::Discovery {
                for v in self.tabs.discovery.due_views() {
                    if let Some(due) = self.tabs.discovery.state(v).feed.poll.wakeup() {
                        next = next.min(due);
                    }
                }
            }
            if let Some(due) = self.tabs.backtests.wakeup() {
                next = next.min(due);
            }
            if let Some(due) = self.tabs.research.wakeup() {
                next = next.min(due);
            }
            if let Some(due) = self.tabs.signals.next_due(self.tab) {
                next = next.min(due);
            }
            if let Some(due) = self.inbox.recheck_due() {
                next = next.min(due);
            }
            if let Some(due) = self.inbox.gate().wakeup() {
                next = next.min(due);
            }
        }
        next.max(self.now)
    }
}
