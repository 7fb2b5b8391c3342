//! The account feeds every tab shares: whoami, positions, open orders, PnL, proposals, usage and
//! the audit log, each polled on its own interval (configurable) with one [`Poll`], and what their
//! answers change. Lower layer: the feeds' data; `update.rs` is App's part.

mod update;

use crate::api::ApiError;
use crate::api::model::{OpenOrderRow, PnlSummary, PositionRow, Usage, Whoami};
use crate::config::PollIntervals;
use crate::console::action::Resource;
use crate::console::poll::Poll;
use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Duration;

const EQUITY_POINTS: usize = 600;
/// What the account feeds last said: the Desk's data, which the header, the risk preview and
/// completion read too.
#[derive(Debug, Clone, Default)]
pub struct Account {
    pub whoami: Option<Whoami>,
    pub positions: Vec<PositionRow>,
    /// Indices into `positions` by coin, rebuilt when positions arrive, so a risk preview drawn
    /// every frame never scans a large book.
    pub(crate) position_index: HashMap<String, Vec<usize>>,
    pub orders: Vec<OpenOrderRow>,
    pub pnl: Option<PnlSummary>,
    pub equity_history: VecDeque<(DateTime<Utc>, f64)>,
    pub usage: Option<Usage>,
}

/// How one polled resource is doing.
#[derive(Debug, Clone)]
pub struct Feed {
    pub interval: Duration,
    pub poll: Poll,
    pub error: Option<ApiError>,
    /// False once the service showed it does not offer this resource (an extension).
    pub supported: bool,
}

impl Feed {
    pub(crate) fn new(interval: Duration, now: DateTime<Utc>) -> Self {
        Feed {
            interval,
            poll: Poll::due_now(now),
            error: None,
            supported: true,
        }
    }

    pub fn age(&self, now: DateTime<Utc>) -> Option<Duration> {
        self.poll.age(now)
    }

    /// Data older than three intervals is stale: shown, but marked with its age.
    pub fn is_stale(&self, now: DateTime<Utc>) -> bool {
        self.age(now).is_some_and(|a| a > self.interval * 3)
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    pub poll: BTreeMap<Resource, Duration>,
    pub bell: bool,
}

impl Default for Options {
    fn default() -> Self {
        let ms = |n| Duration::from_millis(n);
        let poll = BTreeMap::from([
            (Resource::Whoami, ms(60_000)),
            (Resource::Positions, ms(2_000)),
            (Resource::Orders, ms(2_000)),
            (Resource::Pnl, ms(2_000)),
            (Resource::Proposals, ms(1_000)),
            (Resource::Usage, ms(15_000)),
            (Resource::Audit, ms(10_000)),
        ]);
        Options { poll, bell: true }
    }
}

impl Options {
    /// The configured intervals in place of the defaults (`Whoami` is not configurable).
    pub fn with_poll(mut self, config: &PollIntervals) -> Options {
        for (resource, interval) in [
            (Resource::Positions, config.positions),
            (Resource::Orders, config.orders),
            (Resource::Pnl, config.pnl),
            (Resource::Proposals, config.proposals),
            (Resource::Usage, config.usage),
            (Resource::Audit, config.audit),
        ] {
            self.poll.insert(resource, interval);
        }
        self
    }
}
