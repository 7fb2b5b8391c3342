//! Where the sandbox gets the time. Tests use [`TestClock`] to move past a proposal's 5 minutes, or to
//! the next UTC day, without sleeping.

use chrono::{DateTime, Duration, Utc};
use std::sync::{Arc, Mutex};

pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;
}

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that only moves when told to. Clones share the same time.
#[derive(Debug, Clone)]
pub struct TestClock(Arc<Mutex<DateTime<Utc>>>);

impl TestClock {
    pub fn new(start: DateTime<Utc>) -> Self {
        TestClock(Arc::new(Mutex::new(start)))
    }

    pub fn advance(&self, by: Duration) {
        let mut t = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *t += by;
    }

    pub fn set(&self, to: DateTime<Utc>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = to;
    }
}

impl Clock for TestClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Seconds from `now` to the next UTC midnight, when daily quotas reset (at least 1).
pub fn seconds_to_next_utc_midnight(now: DateTime<Utc>) -> u64 {
    let next = next_utc_midnight(now);
    (next - now).num_seconds().max(1) as u64
}

pub fn next_utc_midnight(now: DateTime<Utc>) -> DateTime<Utc> {
    let day = now.date_naive();
    let next = day.succ_opt().unwrap_or(day);
    next.and_hms_opt(0, 0, 0)
        .map(|t| t.and_utc())
        .unwrap_or(now + Duration::days(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn midnight_math() {
        let t: DateTime<Utc> = "2026-11-21T23:59:30Z".parse().unwrap();
        assert_eq!(seconds_to_next_utc_midnight(t), 30);
        let clock = TestClock::new(t);
        clock.advance(Duration::seconds(31));
        assert_eq!(clock.now().to_rfc3339(), "2026-11-22T00:00:01+00:00");
    }
}
