//! The schedule of every polled request: the account feeds, the Discovery views, backtest jobs, the
//! research run, signal destinations and their deliveries. Each asks the same questions — is it due,
//! is a request out, when to ask again after an answer or a failure — so one type answers them and
//! the owner keeps only what differs (its interval, its data, how it shows an error).

use crate::api::ApiError;
use chrono::{DateTime, Duration as TimeDelta, Utc};
use std::time::Duration;

/// Polling gives up on quick retries after a failure, backing off up to this.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// While the service cannot be reached, one cheap request (whoami) asks this often, so recovery is
/// seen within a couple of seconds while the other feeds wait out their backoff.
pub const PROBE: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Default)]
pub struct Poll {
    /// None: not until something asks (a tab is entered, `r`, a command).
    pub next_due: Option<DateTime<Utc>>,
    pub in_flight: bool,
    /// Consecutive failures; 0 after an answer.
    pub failures: u32,
    /// When the last answer arrived.
    pub updated_at: Option<DateTime<Utc>>,
    /// When the last failure arrived (kept after a success, for ordering the two).
    pub failed_at: Option<DateTime<Utc>>,
    pub latency: Option<Duration>,
    /// An ask made while a request was out: that request's answer predates it (a research run
    /// started meanwhile, say), so it neither cancels the ask nor waits out the interval.
    pub asked: Option<DateTime<Utc>>,
}

impl Poll {
    /// Due at once.
    pub fn due_now(now: DateTime<Utc>) -> Poll {
        Poll {
            next_due: Some(now),
            ..Poll::default()
        }
    }

    /// Nothing out and its time has come.
    pub fn is_due(&self, now: DateTime<Utc>) -> bool {
        !self.in_flight && self.next_due.is_some_and(|d| d <= now)
    }

    /// Marks the request sent when it is due; true when the caller should send it.
    pub fn start(&mut self, now: DateTime<Utc>) -> bool {
        let due = self.is_due(now);
        if due {
            self.in_flight = true;
            self.asked = None;
        }
        due
    }

    /// When the loop must wake up for it (None while a request is out or nothing is scheduled).
    pub fn wakeup(&self) -> Option<DateTime<Utc>> {
        self.next_due.filter(|_| !self.in_flight)
    }

    /// Ask at `at` instead of at the scheduled time.
    pub fn ask_at(&mut self, at: DateTime<Utc>) {
        self.next_due = Some(at);
        if self.in_flight {
            self.asked = Some(at);
        }
    }

    /// Stop asking until something asks again (an ask made while the last request was out
    /// stands).
    pub fn stop(&mut self) {
        self.next_due = self.asked;
    }

    /// After an answer: an ask made while it was out comes first.
    fn then_asked(&mut self) {
        if let Some(a) = self.asked {
            self.next_due = Some(self.next_due.map_or(a, |d| d.min(a)));
        }
    }

    /// An answer arrived; the next request is `interval` later.
    pub fn succeeded(&mut self, at: DateTime<Utc>, latency: Duration, interval: Duration) {
        self.in_flight = false;
        self.failures = 0;
        self.updated_at = Some(at);
        self.latency = Some(latency);
        self.next_due = Some(at + to_delta(interval));
        self.then_asked();
    }

    /// The request failed: the next one waits what a 429 asks, else backs off from `interval`.
    pub fn failed(&mut self, at: DateTime<Utc>, interval: Duration, error: &ApiError) {
        self.in_flight = false;
        self.failures += 1;
        self.failed_at = Some(at);
        let wait = match error {
            ApiError::QuotaExceeded { retry_after, .. } => *retry_after,
            _ => backoff(interval, self.failures),
        };
        self.next_due = Some(at + to_delta(wait));
        // A 429 is waited out whatever was asked.
        if !matches!(error, ApiError::QuotaExceeded { .. }) {
            self.then_asked();
        }
    }

    /// Ask again no later than `at` (sooner stays sooner); nothing if a request is out.
    pub fn probe_by(&mut self, at: DateTime<Utc>) {
        if !self.in_flight && self.next_due.is_none_or(|d| d > at) {
            self.next_due = Some(at);
        }
    }

    /// The answer to a request made once (when asked, not on an interval): nothing follows it.
    pub fn answered_once(&mut self, at: DateTime<Utc>, latency: Duration) {
        self.in_flight = false;
        self.failures = 0;
        self.updated_at = Some(at);
        self.latency = Some(latency);
        self.next_due = None;
        self.then_asked();
    }

    /// The request came back without changing the schedule (refused key, unsupported operation).
    pub fn settled(&mut self) {
        self.in_flight = false;
        self.then_asked();
    }

    pub fn age(&self, now: DateTime<Utc>) -> Option<Duration> {
        self.updated_at
            .map(|t| (now - t).to_std().unwrap_or_default())
    }
}

/// Exponential backoff after `failures` consecutive failures, capped at [`MAX_BACKOFF`].
pub fn backoff(interval: Duration, failures: u32) -> Duration {
    let factor = 1u32 << failures.min(16);
    interval.saturating_mul(factor).min(MAX_BACKOFF)
}

/// Intervals come from configuration; one too large for chrono waits the longest backoff.
pub fn to_delta(d: Duration) -> TimeDelta {
    TimeDelta::from_std(d).unwrap_or(TimeDelta::seconds(30))
}

#[cfg(test)]
mod tests {

    /// Seen in the research e2e under load: `/research start` asked for the run while a fetch
    /// sent before it was out; that fetch's "no run" stopped the poll, and the run never showed.
    #[test]
    fn an_ask_made_while_a_request_is_out_outlives_that_requests_answer() {
        let t0 = Utc::now();
        let mut p = Poll::due_now(t0);
        assert!(p.start(t0));
        let asked = t0 + TimeDelta::milliseconds(100);
        p.ask_at(asked);
        p.succeeded(asked, Duration::from_millis(5), Duration::from_secs(30));
        assert_eq!(p.next_due, Some(asked), "not the interval later");
        p.stop();
        assert_eq!(
            p.next_due,
            Some(asked),
            "the stale answer does not cancel the ask"
        );
        assert!(p.start(asked));
        p.succeeded(asked, Duration::from_millis(5), Duration::from_secs(30));
        p.stop();
        assert_eq!(p.next_due, None, "answered after the ask: stopping stops");
    }

    use super::*;
    use chrono::TimeZone;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 6, 1, 12, 0, 0).unwrap()
    }

    #[test]
    fn starts_once_when_due_and_reschedules_on_answer() {
        let mut p = Poll::default();
        assert!(!p.start(t0()), "nothing scheduled");
        p.ask_at(t0());
        assert!(p.start(t0()));
        assert!(!p.start(t0()), "a request is already out");
        assert_eq!(p.wakeup(), None);
        p.succeeded(t0(), Duration::from_millis(5), Duration::from_secs(2));
        assert_eq!(p.next_due, Some(t0() + TimeDelta::seconds(2)));
        assert!(!p.is_due(t0() + TimeDelta::seconds(1)));
        assert!(p.is_due(t0() + TimeDelta::seconds(2)));
    }

    #[test]
    fn failures_back_off_to_the_cap_and_honour_retry_after() {
        let mut p = Poll::due_now(t0());
        let err = ApiError::Transport("down".into());
        let mut waits = Vec::new();
        for _ in 0..6 {
            p.start(t0());
            p.failed(t0(), Duration::from_secs(2), &err);
            waits.push((p.next_due.unwrap() - t0()).num_seconds());
        }
        assert_eq!(waits, [4, 8, 16, 30, 30, 30]);
        let quota = ApiError::QuotaExceeded {
            message: "quota".into(),
            retry_after: Duration::from_secs(120),
        };
        p.failed(t0(), Duration::from_secs(2), &quota);
        assert_eq!(p.next_due, Some(t0() + TimeDelta::seconds(120)));
        p.succeeded(t0(), Duration::ZERO, Duration::from_secs(2));
        assert_eq!(p.failures, 0);
    }
}
