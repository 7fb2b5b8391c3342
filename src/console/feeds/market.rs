//! Each coin's recent price, for the price charts: the sandbox's candles when the service has
//! them (`GET /sandbox/v1/candles`), else the marks this console saw — positions' `markPx` at each
//! poll, proposals' at their staging — kept per coin up to a bound. The interface has no market
//! data (README "Interface notes"); a chart says which of the two it draws.

use crate::api::ApiError;
use crate::api::model::Candles;
use crate::console::widgets::chart::Point;
use chrono::{DateTime, Duration as TimeDelta, Utc};
use std::collections::{HashMap, VecDeque};

/// Marks kept per coin: at a 2 s positions poll, the last 20 minutes.
pub const MARKS_PER_COIN: usize = 600;
/// Coins whose marks are kept: a desk's book, not a venue's listing.
const MAX_COINS: usize = 64;
pub const CANDLE_INTERVAL: &str = "1m";
pub const CANDLE_LIMIT: u32 = 120;
/// A coin's candles are asked for again this long after they came, while it is charted.
pub const CANDLES_FRESH: TimeDelta = TimeDelta::seconds(30);
/// After a failure (not a 404), this long before asking again.
const RETRY: TimeDelta = TimeDelta::seconds(10);

#[derive(Debug, Clone, Default)]
pub struct Market {
    marks: HashMap<String, VecDeque<(DateTime<Utc>, f64)>>,
    candles: HashMap<String, CoinCandles>,
    /// The service answered the candles path 404: it has no market data, and is not asked again.
    pub unsupported: bool,
    /// The coin whose candles are being asked for.
    pub asking: Option<String>,
    /// Coins the service has no market for (it refused the coin): not asked again.
    unknown: std::collections::HashSet<String>,
    failed: Option<(DateTime<Utc>, String)>,
}

#[derive(Debug, Clone, Default)]
struct CoinCandles {
    at: Option<DateTime<Utc>>,
    /// (open time, close), oldest first.
    points: Vec<Point>,
}

/// What a chart of one coin draws, and how it says where the prices come from.
#[derive(Debug, Clone)]
pub struct Prices<'a> {
    /// "1m candles from the sandbox", "marks seen since 10:02".
    pub source: String,
    /// What the chart says when there is nothing to draw.
    pub empty: String,
    candles: &'a [Point],
    marks: Option<&'a VecDeque<(DateTime<Utc>, f64)>>,
}

impl<'a> Prices<'a> {
    pub fn points(&self) -> impl Iterator<Item = Point> + Clone + 'a {
        let marks = self.marks;
        self.candles.iter().copied().chain(
            marks
                .into_iter()
                .flatten()
                .map(|(t, p)| (t.timestamp() as f64, *p)),
        )
    }
}

impl Market {
    /// Notes `coin`'s mark at `at`. A mark already held for that instant (a proposal listed
    /// again) is not added twice; one older than the held ones goes in its place in time.
    pub fn saw_mark(&mut self, coin: &str, at: DateTime<Utc>, px: f64) {
        if !px.is_finite() || px <= 0.0 || coin.is_empty() {
            return;
        }
        if !self.marks.contains_key(coin) && self.marks.len() >= MAX_COINS {
            return;
        }
        let marks = self.marks.entry(coin.to_string()).or_default();
        let i = marks.partition_point(|(t, _)| *t <= at);
        if i > 0 && marks[i - 1].0 == at {
            return;
        }
        marks.insert(i, (at, px));
        while marks.len() > MARKS_PER_COIN {
            marks.pop_front();
        }
    }

    pub fn marks_of(&self, coin: &str) -> usize {
        self.marks.get(coin).map_or(0, VecDeque::len)
    }

    /// Whether `coin`'s candles should be asked for now.
    pub fn wants_candles(&self, coin: &str, now: DateTime<Utc>) -> bool {
        if self.unsupported
            || self.asking.is_some()
            || coin.is_empty()
            || self.unknown.contains(coin)
        {
            return false;
        }
        if self
            .failed
            .as_ref()
            .is_some_and(|(at, _)| now - *at < RETRY)
        {
            return false;
        }
        self.candles
            .get(coin)
            .and_then(|c| c.at)
            .is_none_or(|at| now - at >= CANDLES_FRESH)
    }

    pub fn asked(&mut self, coin: &str) {
        self.asking = Some(coin.to_string());
    }

    /// The answer to a candles request: kept, or read as "no market data" (404), or a failure
    /// to retry after a while.
    pub fn answered(&mut self, coin: &str, at: DateTime<Utc>, result: Result<Candles, ApiError>) {
        self.asking = None;
        match result {
            Ok(c) => {
                self.failed = None;
                let points = c
                    .candles
                    .iter()
                    .map(|k| (k.time.timestamp() as f64, k.close))
                    .collect();
                self.candles.insert(
                    coin.to_string(),
                    CoinCandles {
                        at: Some(at),
                        points,
                    },
                );
            }
            Err(ApiError::NotFound { .. }) => self.unsupported = true,
            Err(ApiError::Invalid { field: Some(f), .. }) if f == "coin" => {
                self.unknown.insert(coin.to_string());
            }
            Err(e) => self.failed = Some((at, crate::console::feeds::short_error(&e, 60))),
        }
    }

    /// What to draw for `coin`: its candles when there are some, else the marks seen.
    pub fn prices(&self, coin: &str) -> Prices<'_> {
        let candles = self
            .candles
            .get(coin)
            .map(|c| c.points.as_slice())
            .unwrap_or_default();
        if !candles.is_empty() {
            return Prices {
                source: format!("{CANDLE_INTERVAL} candles from the sandbox"),
                empty: String::new(),
                candles,
                marks: None,
            };
        }
        let marks = self.marks.get(coin).filter(|m| !m.is_empty());
        let source = match marks.map(|m| (m.len(), m.front())) {
            Some((1, Some((at, _)))) => format!("one mark seen, at {}", at.format("%H:%M:%S")),
            Some((n, Some((since, _)))) => {
                format!("{n} marks seen since {}", since.format("%H:%M"))
            }
            // Nothing to draw: the caption says why there are no candles.
            _ if self.unsupported => "no market data from this service".to_string(),
            _ if self.unknown.contains(coin) => format!("no market for {coin} on this service"),
            _ => match (&self.failed, &self.asking) {
                (Some((_, e)), _) => format!("candles failed: {e}"),
                (None, Some(_)) => "candles asked for".to_string(),
                (None, None) => String::new(),
            },
        };
        Prices {
            source,
            empty: format!("no price history yet: no mark of {coin} seen"),
            candles: &[],
            marks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(s: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_700_000_000 + s, 0).unwrap()
    }

    #[test]
    fn marks_are_kept_in_time_once_each_and_bounded() {
        let mut m = Market::default();
        m.saw_mark("BTC", t(10), 100.0);
        m.saw_mark("BTC", t(5), 99.0);
        m.saw_mark("BTC", t(10), 100.0);
        m.saw_mark("BTC", t(20), f64::NAN);
        m.saw_mark("BTC", t(20), 0.0);
        let p = m.prices("BTC");
        assert_eq!(
            p.points().collect::<Vec<_>>(),
            vec![
                (t(5).timestamp() as f64, 99.0),
                (t(10).timestamp() as f64, 100.0)
            ]
        );
        assert!(p.source.starts_with("2 marks seen since "), "{}", p.source);
        for i in 0..(MARKS_PER_COIN as i64 + 50) {
            m.saw_mark("BTC", t(100 + i), 1.0);
        }
        assert_eq!(m.marks_of("BTC"), MARKS_PER_COIN);
        for i in 0..(MAX_COINS + 5) {
            m.saw_mark(&format!("C{i}"), t(0), 1.0);
        }
        assert_eq!(m.marks.len(), MAX_COINS);
    }

    #[test]
    fn candles_replace_marks_and_a_404_means_no_market_data() {
        let mut m = Market::default();
        m.saw_mark("ETH", t(0), 3000.0);
        assert!(m.wants_candles("ETH", t(0)));
        m.asked("ETH");
        assert!(!m.wants_candles("ETH", t(0)), "one request out at a time");
        let candles: Candles = serde_json::from_value(serde_json::json!({
            "coin": "ETH", "interval": "1m", "candles": [
                {"time": "2023-11-14T22:13:00Z", "open": 1, "high": 2, "low": 1, "close": 2},
                {"time": "2023-11-14T22:14:00Z", "open": "2", "high": 3, "low": 2, "close": "3"},
            ]
        }))
        .unwrap();
        m.answered("ETH", t(1), Ok(candles));
        let p = m.prices("ETH");
        assert_eq!(p.source, "1m candles from the sandbox");
        assert_eq!(p.points().map(|p| p.1).collect::<Vec<_>>(), vec![2.0, 3.0]);
        assert!(!m.wants_candles("ETH", t(20)));
        assert!(m.wants_candles("ETH", t(31)));

        m.asked("BTC");
        let gone = ApiError::NotFound {
            code: "not_found".into(),
            message: "no".into(),
        };
        m.answered("BTC", t(2), Err(gone));
        assert!(m.unsupported && !m.wants_candles("ETH", t(100)));
        assert_eq!(m.prices("BTC").source, "no market data from this service");
        assert_eq!(
            m.prices("BTC").empty,
            "no price history yet: no mark of BTC seen"
        );
        assert!(m.prices("BTC").points().next().is_none());
    }

    #[test]
    fn a_coin_the_service_has_no_market_for_is_not_asked_again() {
        let mut m = Market::default();
        m.asked("XRP");
        let refused = ApiError::Invalid {
            code: "invalid_query".into(),
            field: Some("coin".into()),
            message: "the sandbox has no market for XRP".into(),
        };
        m.answered("XRP", t(0), Err(refused));
        assert!(!m.wants_candles("XRP", t(1000)));
        assert!(
            m.wants_candles("BTC", t(0)),
            "other coins are still asked for"
        );
        assert_eq!(m.prices("XRP").source, "no market for XRP on this service");
    }

    #[test]
    fn a_failure_waits_before_asking_again() {
        let mut m = Market::default();
        m.asked("BTC");
        m.answered("BTC", t(0), Err(ApiError::Transport("refused".into())));
        assert!(!m.wants_candles("BTC", t(5)));
        assert!(m.wants_candles("BTC", t(10)));
        assert!(m.prices("BTC").source.starts_with("candles failed: "));
    }
}
