//! The account feeds every tab shares: whoami, positions, open orders, PnL, proposals, usage and
//! the audit log, each polled on its own interval (configurable) with one [`Poll`], and what their
//! answers change. Lower layer: the feeds' data; `app/feeds.rs` is App's part.

use crate::api::ApiError;
use crate::api::model::{OpenOrderRow, PnlSummary, PositionRow, Usage, Whoami};
use crate::config::PollIntervals;
use crate::console::action::Resource;
use crate::console::decider::Decider;
use crate::console::poll::Poll;
use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Duration;

pub mod market;

pub const EQUITY_POINTS: usize = 600;
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
    /// Each coin's recent price, for the charts.
    pub market: market::Market,
}

/// Paper or real money, as the header says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Badge {
    /// The embedded sandbox: paper by construction.
    Sandbox,
    /// The service says `paperTrading: true` (whoami's summary).
    Paper,
    /// The service answered whoami and did not say paper: real money is assumed.
    Live,
    /// whoami has not answered yet: nothing is claimed either way.
    Unknown,
}

impl Account {
    /// Paper or real money: the header's badge, and what every dialog that decides money says.
    pub fn badge(&self, sandbox: bool) -> Badge {
        if sandbox {
            return Badge::Sandbox;
        }
        match &self.whoami {
            None => Badge::Unknown,
            Some(w) => match w.summary.as_ref().and_then(|s| s.paper_trading) {
                Some(true) => Badge::Paper,
                _ => Badge::Live,
            },
        }
    }
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

    /// Not answered yet, failing, or answered (possibly with nothing).
    pub fn state(&self) -> FeedState<'_> {
        match (&self.error, self.poll.updated_at) {
            (Some(e), _) => FeedState::Failed(e),
            (None, None) => FeedState::Loading,
            (None, Some(_)) => FeedState::Loaded,
        }
    }

    /// Its last request could not reach the service.
    /// The service (or the gateway's upstream: a 502/503/504) cannot be reached: recovery is
    /// probed every second rather than waited out with the backoff.
    pub fn unreachable(&self) -> bool {
        self.error.as_ref().is_some_and(ApiError::is_transient)
    }

    /// Data older than three intervals is stale: shown, but marked with its age. A feed asked
    /// later than its interval on purpose (while what it shows cannot change unseen, see
    /// `App::quiet_interval`) counts from that later time: its schedule says when an answer is
    /// expected, not the interval.
    pub fn is_stale(&self, now: DateTime<Utc>) -> bool {
        let Some(age) = self.age(now) else {
            return false;
        };
        let expected = match (&self.error, self.poll.next_due, self.poll.updated_at) {
            (None, Some(due), Some(at)) => (due - at).to_std().unwrap_or_default(),
            _ => Duration::ZERO,
        };
        age > expected.max(self.interval) + self.interval * 2
    }
}

/// What a feed's pane can say about it.
#[derive(Debug, Clone, Copy)]
pub enum FeedState<'a> {
    /// No answer yet: "loading positions…", never "no open positions".
    Loading,
    /// The last request failed (earlier data, if any, is still shown).
    Failed(&'a ApiError),
    Loaded,
}

/// The feed's name as the header and the panes say it.
pub fn name(r: Resource) -> &'static str {
    match r {
        Resource::Whoami => "whoami",
        Resource::Positions => "positions",
        Resource::Orders => "orders",
        Resource::Pnl => "pnl",
        Resource::Proposals => "proposals",
        Resource::Usage => "usage",
        Resource::Audit => "logs",
    }
}

/// The Desk's feeds: when one fails the connection is in trouble. The others (identity, the
/// proposals extension, usage, the audit log) failing is that feed's problem, shown as such.
pub fn required(r: Resource) -> bool {
    matches!(r, Resource::Positions | Resource::Orders | Resource::Pnl)
}

/// A feed's error in a few words: the service's message, cut with an ellipsis.
pub fn short_error(e: &ApiError, max: usize) -> String {
    crate::console::widgets::truncate(&e.to_string(), max)
}

/// The line an empty pane of a feed shows: its error, "loading …", or `empty` once it answered.
pub fn empty_text(feed: &Feed, r: Resource, empty: &str) -> String {
    if !feed.supported {
        // An extension the service lacks: what the console itself knows is all there is.
        return empty.to_string();
    }
    match feed.state() {
        FeedState::Failed(e) => format!("{}: {}", name(r), e),
        FeedState::Loading => format!("loading {}…", name(r)),
        FeedState::Loaded => empty.to_string(),
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    pub poll: BTreeMap<Resource, Duration>,
    pub bell: bool,
}

/// Whether `feed` is polled: what the service supports, and on a gateway not the upstream's
/// proposals list — the gateway's inbox holds every proposal that can be approved there (it
/// refuses a confirm for anything not staged through it). The scheduler and the loop's wake-up
/// both ask this, so a feed never polled is never waited for.
pub fn polled(resource: Resource, feed: &Feed, decider: Decider) -> bool {
    feed.supported && (resource != Resource::Proposals || decider.polls_service_proposals())
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
