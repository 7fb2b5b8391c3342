//! Market data for backtests and discovery: OHLCV bars per pair and timeframe, from the same seeded
//! feed as the venue (so backtests, live replay and fills agree), or from a folder of CSV files
//! when the sandbox config names one.

use super::engine::Bar;
use super::venue::market::Market;
use chrono::{DateTime, Utc};
use std::path::{Path, PathBuf};

/// Longest history a backtest may ask for.
pub const MAX_DAYS: u32 = 365;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Timeframe {
    M1,
    M5,
    M15,
    H1,
    H4,
    D1,
}

impl Timeframe {
    pub const ALL: [Timeframe; 6] = [
        Timeframe::M1,
        Timeframe::M5,
        Timeframe::M15,
        Timeframe::H1,
        Timeframe::H4,
        Timeframe::D1,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Timeframe::M1 => "1m",
            Timeframe::M5 => "5m",
            Timeframe::M15 => "15m",
            Timeframe::H1 => "1h",
            Timeframe::H4 => "4h",
            Timeframe::D1 => "1d",
        }
    }

    pub fn parse(s: &str) -> Option<Timeframe> {
        let s = s.trim().to_ascii_lowercase();
        Timeframe::ALL.into_iter().find(|t| t.as_str() == s)
    }

    pub fn minutes(self) -> u32 {
        match self {
            Timeframe::M1 => 1,
            Timeframe::M5 => 5,
            Timeframe::M15 => 15,
            Timeframe::H1 => 60,
            Timeframe::H4 => 240,
            Timeframe::D1 => 1_440,
        }
    }

    pub fn known() -> String {
        Timeframe::ALL.map(|t| t.as_str()).join(", ")
    }
}

/// The `days` of closed bars ending at `now`, oldest first: from `csv_dir` if it holds a file for
/// this coin and timeframe, else from the feed.
pub fn bars(
    market: &Market,
    csv_dir: Option<&Path>,
    coin: &str,
    tf: Timeframe,
    days: u32,
    now: DateTime<Utc>,
) -> Result<Vec<Bar>, CsvError> {
    if let Some(dir) = csv_dir
        && let Some(path) = csv_file(dir, coin, tf)
    {
        return csv_bars(&path, days);
    }
    Ok(feed_bars(market, coin, tf, days, now))
}

/// Bars from the seeded feed. Only bars that closed by `now` are included: an unfinished bar
/// would leak the future into a backtest run later.
pub fn feed_bars(
    market: &Market,
    coin: &str,
    tf: Timeframe,
    days: u32,
    now: DateTime<Utc>,
) -> Vec<Bar> {
    let count = (i64::from(days) * 1_440 / i64::from(tf.minutes())).max(1) as usize;
    feed_window(market, coin, tf, count, now)
}

/// The last `count` bars of the feed that closed by `now`, oldest first.
pub fn feed_window(
    market: &Market,
    coin: &str,
    tf: Timeframe,
    count: usize,
    now: DateTime<Utc>,
) -> Vec<Bar> {
    // The last bar that closed by `now` opened one step before the step `now` is in.
    let step = i64::from(tf.minutes()) * 60;
    let last = now.timestamp().div_euclid(step) * step - step;
    let mut out = vec![Bar::default(); count];
    let made = feed_range_into(market, coin, tf, last - (count as i64 - 1) * step, &mut out);
    out.truncate(made);
    out
}

/// Writes the feed's bars from the one opening at `first` (unix seconds, on the timeframe's
/// grid) into `out`, one per slot, and returns how many it wrote: all of them, unless the coin
/// is unknown (none) or `out` spans more than the feed serves in one call (1000 days).
pub fn feed_range_into(
    market: &Market,
    coin: &str,
    tf: Timeframe,
    first: i64,
    out: &mut [Bar],
) -> usize {
    let mut slots = out.iter_mut();
    let mut made = 0;
    market.candle_series(coin, tf.minutes(), first, slots.len(), |time, c| {
        if let Some(slot) = slots.next() {
            *slot = Bar {
                time,
                open: c.open,
                high: c.high,
                low: c.low,
                close: c.close,
                volume: c.volume,
            };
            made += 1;
        }
    });
    made
}

/// Whether `dir` holds a CSV file for this coin and timeframe (which then replaces the feed).
pub fn has_csv(dir: &Path, coin: &str, tf: Timeframe) -> bool {
    csv_file(dir, coin, tf).is_some()
}

fn csv_file(dir: &Path, coin: &str, tf: Timeframe) -> Option<std::path::PathBuf> {
    [
        format!("{coin}-USD_{}.csv", tf.as_str()),
        format!("{coin}_{}.csv", tf.as_str()),
        format!("{coin}-{}.csv", tf.as_str()),
    ]
    .into_iter()
    .map(|name| dir.join(name))
    .find(|p| p.is_file())
}

/// Why a CSV file of bars was not read; a row's error names the file and the line.
#[derive(Debug, thiserror::Error)]
pub enum CsvError {
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} line {line}: expected timestamp,open,high,low,close,volume", .path.display())]
    TooFewFields { path: PathBuf, line: usize },
    #[error("{} line {line}: bad timestamp {value:?}", .path.display())]
    BadTimestamp {
        path: PathBuf,
        line: usize,
        value: String,
    },
    #[error("{} line {line}: bad number {value:?}", .path.display())]
    BadNumber {
        path: PathBuf,
        line: usize,
        value: String,
    },
    #[error("{} has no rows", .0.display())]
    NoRows(PathBuf),
}

/// Reads `timestamp,open,high,low,close,volume` rows (a header row is optional; the timestamp is
/// unix seconds, unix milliseconds or RFC 3339) and keeps the last `days` days of the file.
pub fn csv_bars(path: &Path, days: u32) -> Result<Vec<Bar>, CsvError> {
    let text = std::fs::read_to_string(path).map_err(|source| CsvError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut bars = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let (path, line) = (|| path.to_path_buf(), n + 1);
        if fields.len() < 6 {
            let path = path();
            return Err(CsvError::TooFewFields { path, line });
        }
        let Some(time) = parse_time(fields[0]) else {
            if n == 0 {
                continue; // header
            }
            let (path, value) = (path(), fields[0].to_string());
            return Err(CsvError::BadTimestamp { path, line, value });
        };
        let mut v = [0.0; 5];
        for (k, f) in fields[1..6].iter().enumerate() {
            v[k] = f
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| CsvError::BadNumber {
                    path: path(),
                    line,
                    value: f.to_string(),
                })?;
        }
        bars.push(Bar {
            time,
            open: v[0],
            high: v[1],
            low: v[2],
            close: v[3],
            volume: v[4],
        });
    }
    bars.sort_by_key(|b| b.time);
    bars.dedup_by_key(|b| b.time);
    if let Some(last) = bars.last().map(|b| b.time) {
        let from = last - i64::from(days) * 86_400;
        bars.retain(|b| b.time > from);
    }
    if bars.is_empty() {
        return Err(CsvError::NoRows(path.to_path_buf()));
    }
    Ok(bars)
}

fn parse_time(s: &str) -> Option<i64> {
    if let Ok(n) = s.parse::<i64>() {
        // Milliseconds from 2001 on are above 1e12; seconds stay below until the year 33658.
        return Some(if n > 1_000_000_000_000 { n / 1000 } else { n });
    }
    DateTime::parse_from_rfc3339(s).ok().map(|t| t.timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feed_bars_are_closed_contiguous_and_sized_by_days() {
        let market = Market::new(42);
        let now: DateTime<Utc> = "2026-06-01T12:07:30Z".parse().unwrap();
        let bars = feed_bars(&market, "BTC", Timeframe::M5, 2, now);
        assert_eq!(bars.len(), 2 * 288);
        // The last bar closed at or before now: 12:00-12:05 is the last complete one.
        assert_eq!(
            bars.last().unwrap().time,
            "2026-06-01T12:00:00Z"
                .parse::<DateTime<Utc>>()
                .unwrap()
                .timestamp()
        );
        for w in bars.windows(2) {
            assert_eq!(w[1].time - w[0].time, 300);
            assert!(
                (w[1].open - w[0].close).abs() < 1e-9,
                "a bar opens where the last closed"
            );
        }
        assert!(
            bars.iter()
                .all(|b| b.low <= b.open.min(b.close) && b.high >= b.open.max(b.close))
        );
        assert!(feed_bars(&market, "NOPE", Timeframe::M5, 2, now).is_empty());
        // Long histories span many feed chunks.
        assert_eq!(
            feed_bars(&market, "ETH", Timeframe::M1, 5, now).len(),
            5 * 1440
        );
    }

    /// Order-sensitive digest of every bit of every bar, so a faster generator can be proven to
    /// make exactly the bars the original one made.
    fn digest(bars: &[Bar]) -> u64 {
        bars.iter().fold(0xCBF2_9CE4_8422_2325u64, |h, b| {
            [
                b.time as u64,
                b.open.to_bits(),
                b.high.to_bits(),
                b.low.to_bits(),
                b.close.to_bits(),
                b.volume.to_bits(),
            ]
            .into_iter()
            .fold(h, |h, v| {
                (h ^ v).wrapping_mul(0x0000_0100_0000_01B3).rotate_left(29)
            })
        })
    }

    /// The values of a year of one-minute bars (and of longer timeframes) are pinned bit for bit:
    /// they were recorded from the day-by-day generator, before it was made faster.
    #[test]
    fn feed_bar_values_are_pinned() {
        let market = Market::new(42);
        let now: DateTime<Utc> = "2025-03-01T08:30:45Z".parse().unwrap();
        let cases = [
            ("BTC", Timeframe::M1, 365, 525_600, 0xadef_6a84_6282_1df0),
            ("ETH", Timeframe::M1, 365, 525_600, 0x8c2f_a93f_37d8_55bd),
            ("SOL", Timeframe::M5, 30, 8_640, 0x2f65_04b4_b92c_10d5),
            ("DOGE", Timeframe::H1, 365, 8_760, 0xcc8f_d14e_31ff_3e01),
            ("SUI", Timeframe::H4, 200, 1_200, 0x41d4_0c7f_c350_184b),
            ("BNB", Timeframe::D1, 365, 365, 0x310e_aeae_c2b5_1e95),
        ];
        for (coin, tf, days, count, want) in cases {
            let bars = feed_bars(&market, coin, tf, days, now);
            assert_eq!(bars.len(), count, "{coin} {tf:?}");
            assert_eq!(digest(&bars), want, "{coin} {tf:?}");
        }
    }

    #[test]
    fn csv_files_are_read_with_or_without_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("BTC-USD_1h.csv");
        std::fs::write(
            &path,
            "timestamp,open,high,low,close,volume\n1700003600,2,3,1,2.5,10\n1700000000,1,2,0.5,1.5,5\n",
        )
        .unwrap();
        let bars = bars(
            &Market::new(1),
            Some(dir.path()),
            "BTC",
            Timeframe::H1,
            30,
            Utc::now(),
        )
        .unwrap();
        assert_eq!(bars.len(), 2);
        assert_eq!(bars[0].time, 1_700_000_000);
        std::fs::write(&path, "1700000000000,1,2,0.5,x,5\n").unwrap();
        let err = csv_bars(&path, 30).unwrap_err().to_string();
        assert!(err.contains("line 1") && err.contains("\"x\""), "{err}");
    }
}
