//! Deterministic synthetic price feed.
//!
//! Every coin follows a mean-reverting log-price random walk with one step per
//! minute, starting at its base price at [`origin`]. The shocks come from a
//! hand-written splitmix64 hash of (seed, coin, minute), so the same seed gives
//! the same prices on every machine and with every crate version, and any
//! minute can be recomputed without storing the path. Between minute
//! boundaries the price is linear, which lets the book find the exact instant a
//! trigger is crossed.

use std::f64::consts::{LN_2, TAU};
use std::fmt;
use std::sync::{Mutex, MutexGuard};

use chrono::{DateTime, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

/// Static description of a tradable perpetual.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AssetSpec {
    pub coin: &'static str,
    /// Price at the origin and the level the walk drifts back toward.
    pub base_price: f64,
    /// Standard deviation of daily log returns.
    pub daily_vol: f64,
    pub max_leverage: u32,
    pub sz_decimals: u32,
}

/// The asset table. The order is part of the feed: a coin's index seeds its
/// hash stream, so append new coins at the end to keep existing paths intact.
pub static ASSETS: &[AssetSpec] = &[
    AssetSpec {
        coin: "BTC",
        base_price: 65_000.0,
        daily_vol: 0.03,
        max_leverage: 50,
        sz_decimals: 5,
    },
    AssetSpec {
        coin: "ETH",
        base_price: 3_400.0,
        daily_vol: 0.04,
        max_leverage: 50,
        sz_decimals: 4,
    },
    AssetSpec {
        coin: "SOL",
        base_price: 150.0,
        daily_vol: 0.05,
        max_leverage: 20,
        sz_decimals: 2,
    },
    AssetSpec {
        coin: "XRP",
        base_price: 0.55,
        daily_vol: 0.045,
        max_leverage: 20,
        sz_decimals: 0,
    },
    AssetSpec {
        coin: "DOGE",
        base_price: 0.15,
        daily_vol: 0.06,
        max_leverage: 10,
        sz_decimals: 0,
    },
    AssetSpec {
        coin: "AVAX",
        base_price: 35.0,
        daily_vol: 0.055,
        max_leverage: 10,
        sz_decimals: 2,
    },
    AssetSpec {
        coin: "LINK",
        base_price: 15.0,
        daily_vol: 0.05,
        max_leverage: 10,
        sz_decimals: 1,
    },
    AssetSpec {
        coin: "BNB",
        base_price: 580.0,
        daily_vol: 0.035,
        max_leverage: 20,
        sz_decimals: 3,
    },
    AssetSpec {
        coin: "ARB",
        base_price: 1.0,
        daily_vol: 0.06,
        max_leverage: 10,
        sz_decimals: 1,
    },
    AssetSpec {
        coin: "SUI",
        base_price: 1.2,
        daily_vol: 0.07,
        max_leverage: 10,
        sz_decimals: 1,
    },
];

/// Looks a coin up by its canonical name, ignoring ASCII case. Use
/// [`super::normalize_coin`] first for pair spellings like "BTC-USD".
pub fn asset(coin: &str) -> Option<&'static AssetSpec> {
    ASSETS.iter().find(|a| a.coin.eq_ignore_ascii_case(coin))
}

fn asset_index(coin: &str) -> Option<usize> {
    ASSETS
        .iter()
        .position(|a| a.coin.eq_ignore_ascii_case(coin))
}

/// 2024-01-01T00:00:00Z, where every walk starts at its base price.
pub const ORIGIN_UNIX_SECONDS: i64 = 1_704_067_200;
const MINUTES_PER_DAY: i64 = 1440;
const NANOS_PER_MINUTE: i64 = 60_000_000_000;
/// The feed is flat after 50 years. Without a horizon a far-future timestamp
/// would make one query walk billions of steps while holding a coin's lock.
pub const MAX_MINUTE: i64 = 50 * 365 * MINUTES_PER_DAY;
/// Mean-reversion half-life: weak enough to be invisible intraday, strong
/// enough that prices stay plausible over years of simulated time.
const HALF_LIFE_MINUTES: f64 = 60.0 * MINUTES_PER_DAY as f64;
const KNOTS_MAX_SPAN_DAYS: i64 = 400;
/// The venue serves at most this many candles per request.
pub const MAX_CANDLES: usize = 5000;
/// Candle requests walk every minute they cover; this bounds that work.
const MAX_CANDLE_SPAN_MINUTES: i64 = 1000 * MINUTES_PER_DAY;
/// Typical traded notional per minute, before the per-minute noise and the
/// boost from large moves.
const VOLUME_USD_PER_MINUTE: f64 = 200_000.0;
const VOLUME_SALT: u64 = 0x5EED_0F70_1E5A_17ED;

pub fn origin() -> DateTime<Utc> {
    DateTime::UNIX_EPOCH + TimeDelta::seconds(ORIGIN_UNIX_SECONDS)
}

/// Start of minute `minute` counted from [`origin`], clamped to the feed's
/// horizon (either side) so the addition cannot overflow.
pub fn minute_time(minute: i64) -> DateTime<Utc> {
    origin() + TimeDelta::minutes(minute.clamp(-MAX_MINUTE, MAX_MINUTE))
}

/// Minute index of `t` and nanoseconds into that minute, clamped to
/// `[0, MAX_MINUTE]` because the feed is flat outside it.
fn split_time(t: DateTime<Utc>) -> (i64, i64) {
    let d = t.signed_duration_since(origin());
    if d <= TimeDelta::zero() {
        return (0, 0);
    }
    let secs = d.num_seconds();
    let minute = secs / 60;
    if minute >= MAX_MINUTE {
        return (MAX_MINUTE, 0);
    }
    let nanos = (secs % 60) * 1_000_000_000 + i64::from(d.subsec_nanos());
    (minute, nanos)
}

/// Minute index of `t` rounded toward minus infinity, unclamped below the
/// origin (candle grids may start before it).
fn floor_minute(t: DateTime<Utc>) -> i64 {
    let d = t.signed_duration_since(origin());
    let secs = d.num_seconds() - i64::from(d.subsec_nanos() < 0);
    secs.div_euclid(60).clamp(-MAX_MINUTE, MAX_MINUTE)
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Uniform in the open interval (0, 1), so `ln` in Box–Muller stays finite.
fn unit(h: u64) -> f64 {
    ((h >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}

fn coin_key(seed: u64, index: usize) -> u64 {
    splitmix64(splitmix64(seed) ^ (index as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03))
}

fn minute_hash(key: u64, minute: i64) -> u64 {
    splitmix64(key ^ splitmix64(minute as u64))
}

/// Standard normal shock for the step from `minute` to `minute + 1`: the definition that
/// [`Shocks::fill`] computes a day at a time.
fn shock(key: u64, minute: i64) -> f64 {
    let h1 = minute_hash(key, minute);
    let h2 = splitmix64(h1);
    (-2.0 * unit(h1).ln()).sqrt() * (TAU * unit(h2)).cos()
}

/// Angle buckets for [`Shocks::fill`]: libm's cosine branches on where its argument lies on the
/// circle, and in minute order that is a coin toss it mispredicts. Grouping by sixteenths of the
/// circle makes the branches predictable, which halves the cosine's cost.
const ANGLE_BUCKETS: usize = 16;

/// The shocks of up to a day of consecutive steps, computed together before the walk uses them,
/// with the minute hashes the volume reuses. Every value comes from the same operations as
/// [`shock`] and [`minute_hash`]; only the order in which the cosines are taken differs.
#[derive(Default)]
struct Shocks {
    hash: Vec<u64>,
    shock: Vec<f64>,
    radius: Vec<f64>,
    angle: Vec<f64>,
    bucket: Vec<u8>,
    order: Vec<u16>,
}

impl Shocks {
    /// Shocks of the steps from minutes `first .. first + n` (`n` at most a day).
    fn fill(&mut self, key: u64, first: i64, n: usize) {
        debug_assert!(n <= MINUTES_PER_DAY as usize);
        for v in [&mut self.shock, &mut self.radius, &mut self.angle] {
            v.resize(n, 0.0);
        }
        self.hash.resize(n, 0);
        self.bucket.resize(n, 0);
        self.order.resize(n, 0);
        let mut starts = [0u16; ANGLE_BUCKETS + 1];
        for i in 0..n {
            let h1 = minute_hash(key, first + i as i64);
            let u2 = unit(splitmix64(h1));
            self.hash[i] = h1;
            self.radius[i] = (-2.0 * unit(h1).ln()).sqrt();
            self.angle[i] = TAU * u2;
            let b = ((u2 * ANGLE_BUCKETS as f64) as usize).min(ANGLE_BUCKETS - 1);
            self.bucket[i] = b as u8;
            starts[b + 1] += 1;
        }
        for b in 0..ANGLE_BUCKETS {
            starts[b + 1] += starts[b];
        }
        for i in 0..n {
            let b = usize::from(self.bucket[i]);
            self.order[usize::from(starts[b])] = i as u16;
            starts[b] += 1;
        }
        for &i in &self.order {
            let i = usize::from(i);
            self.shock[i] = self.radius[i] * self.angle[i].cos();
        }
    }
}

/// A coin's walk parameters: all the walk needs besides a starting value, so it can run
/// without the coin's lock.
#[derive(Debug, Clone, Copy)]
struct Walk {
    key: u64,
    mean_log: f64,
    theta: f64,
    sigma: f64,
}

impl Walk {
    /// Walks `x` (the log price at minute `first`) through the `n` steps that start at minutes
    /// `first .. first + n` (at most a day, all inside the feed's range), calling
    /// `f(i, minute hash of step i, log price after step i)`; returns the last value.
    fn run(
        &self,
        mut x: f64,
        first: i64,
        n: usize,
        shocks: &mut Shocks,
        mut f: impl FnMut(usize, u64, f64),
    ) -> f64 {
        shocks.fill(self.key, first, n);
        for (i, (&shock, &hash)) in shocks.shock.iter().zip(&shocks.hash).enumerate() {
            x = x + self.theta * (self.mean_log - x) + self.sigma * shock;
            f(i, hash, x);
        }
        x
    }
}

/// One coin's walk parameters plus what has been computed of it so far.
struct CoinPath {
    walk: Walk,
    mean_log: f64,
    /// Log price at each day boundary: `checkpoints[d]` is minute `d * 1440`.
    /// Only ever extended, so it is consistent even after a panic elsewhere.
    checkpoints: Vec<f64>,
    /// The most recently requested day in full (1441 values, both boundaries),
    /// because marks and knots cluster around "now".
    day: Option<(i64, Vec<f64>)>,
}

impl CoinPath {
    fn new(seed: u64, index: usize, spec: &AssetSpec) -> Self {
        let mean_log = spec.base_price.ln();
        CoinPath {
            walk: Walk {
                key: coin_key(seed, index),
                mean_log,
                theta: LN_2 / HALF_LIFE_MINUTES,
                sigma: spec.daily_vol / (MINUTES_PER_DAY as f64).sqrt(),
            },
            mean_log,
            checkpoints: vec![mean_log],
            day: None,
        }
    }

    /// Log price at the start of `day`, walking forward from the last cached
    /// checkpoint. The checkpoints and [`Self::day_path`] apply the same
    /// operations in the same order, so cached and cold answers are identical.
    fn checkpoint(&mut self, day: i64) -> f64 {
        let day = day.clamp(0, MAX_MINUTE / MINUTES_PER_DAY) as usize;
        // Minute by minute, not through [`Shocks`]: with nothing else to do per step, the
        // processor overlaps consecutive shocks better than the grouped cosines save (measured).
        let walk = self.walk;
        while self.checkpoints.len() <= day {
            let last = self.checkpoints.len() - 1;
            let mut x = self.checkpoints[last];
            let first_minute = last as i64 * MINUTES_PER_DAY;
            for k in 0..MINUTES_PER_DAY {
                x = x
                    + walk.theta * (walk.mean_log - x)
                    + walk.sigma * shock(walk.key, first_minute + k);
            }
            self.checkpoints.push(x);
        }
        self.checkpoints[day]
    }

    /// Log prices at minutes `day*1440 ..= (day+1)*1440`.
    fn day_path(&mut self, day: i64) -> &[f64] {
        let cached = matches!(&self.day, Some((d, _)) if *d == day);
        if !cached {
            let x0 = self.checkpoint(day);
            let mut xs = self.day.take().map(|(_, v)| v).unwrap_or_default();
            xs.clear();
            xs.push(x0);
            let x = self.walk.run(
                x0,
                day * MINUTES_PER_DAY,
                MINUTES_PER_DAY as usize,
                &mut Shocks::default(),
                |_, _, x| xs.push(x),
            );
            // The day's end is the next checkpoint; keep it since we have it.
            if self.checkpoints.len() as i64 == day + 1 {
                self.checkpoints.push(x);
            }
            self.day = Some((day, xs));
        }
        self.day.as_ref().map_or(&[], |(_, xs)| xs.as_slice())
    }
}

/// OHLCV bar aggregated from the minute path. `volume` is in coin units.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Candle {
    pub time: DateTime<Utc>,
    pub open: f64,
    pub high: f64,
    pub low: f64,
    pub close: f64,
    pub volume: f64,
}

/// The price feed for one seed. Cheap to share: queries take `&self` and each
/// coin's cache sits behind its own lock, so coins never contend.
pub struct Market {
    seed: u64,
    coins: Vec<Mutex<CoinPath>>,
}

impl fmt::Debug for Market {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Market")
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

impl Market {
    pub fn new(seed: u64) -> Self {
        let coins = ASSETS
            .iter()
            .enumerate()
            .map(|(i, spec)| Mutex::new(CoinPath::new(seed, i, spec)))
            .collect();
        Market { seed, coins }
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    fn lock(&self, index: usize) -> Option<MutexGuard<'_, CoinPath>> {
        // The cache only ever grows by complete values, so a poisoned lock
        // still guards consistent data and can be used as is.
        let cell = self.coins.get(index)?;
        Some(cell.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// Price at the boundary `origin + minute * 60s`. Negative minutes give the
    /// origin price; minutes past [`MAX_MINUTE`] give the horizon price.
    pub fn minute_price(&self, coin: &str, minute: i64) -> Option<f64> {
        let mut path = self.lock(asset_index(coin)?)?;
        let m = minute.clamp(0, MAX_MINUTE);
        let xs = path.day_path(m.div_euclid(MINUTES_PER_DAY));
        let x = xs.get(m.rem_euclid(MINUTES_PER_DAY) as usize)?;
        Some(x.exp())
    }

    /// Mark price at any instant: linear between the surrounding minute prices.
    pub fn mark(&self, coin: &str, t: DateTime<Utc>) -> Option<f64> {
        self.mark_at(asset_index(coin)?, t)
    }

    fn mark_at(&self, index: usize, t: DateTime<Utc>) -> Option<f64> {
        let (minute, nanos) = split_time(t);
        let mut path = self.lock(index)?;
        let xs = path.day_path(minute.div_euclid(MINUTES_PER_DAY));
        let k = minute.rem_euclid(MINUTES_PER_DAY) as usize;
        let p0 = xs.get(k)?.exp();
        if nanos == 0 {
            return Some(p0);
        }
        let p1 = xs.get(k + 1)?.exp();
        Some(p0 + (p1 - p0) * (nanos as f64 / NANOS_PER_MINUTE as f64))
    }

    /// Calls `f(minute, log_price)` for every minute in `m0..=m1`, holding the
    /// coin's lock once. Minutes outside the feed's range see the clamped value.
    fn visit(&self, index: usize, m0: i64, m1: i64, mut f: impl FnMut(i64, f64)) {
        let Some(mut path) = self.lock(index) else {
            return;
        };
        let mut m = m0;
        while m <= m1 {
            let clamped = m.clamp(0, MAX_MINUTE);
            if clamped != m {
                // Flat outside the feed's range: one lookup serves the stretch.
                let day = clamped.div_euclid(MINUTES_PER_DAY);
                let k = clamped.rem_euclid(MINUTES_PER_DAY) as usize;
                let x = path.day_path(day).get(k).copied().unwrap_or(path.mean_log);
                let end = if m < 0 { m1.min(-1) } else { m1 };
                for mm in m..=end {
                    f(mm, x);
                }
                m = end + 1;
                continue;
            }
            let day = m.div_euclid(MINUTES_PER_DAY);
            let day_start = day * MINUTES_PER_DAY;
            let end = m1.min(day_start + MINUTES_PER_DAY - 1).min(MAX_MINUTE);
            let xs = path.day_path(day);
            let lo = (m - day_start) as usize;
            let hi = (end - day_start) as usize;
            for (offset, x) in xs.iter().enumerate().take(hi + 1).skip(lo) {
                f(day_start + offset as i64, *x);
            }
            m = end + 1;
        }
    }

    /// The piecewise-linear path from `from` to `to`: the point at `from`,
    /// every minute boundary strictly between, and the point at `to`. Empty if
    /// `to <= from` or the coin is unknown. Spans over 400 days are cut to the
    /// last 400 days so a stale caller cannot request millions of points.
    pub fn knots(
        &self,
        coin: &str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Vec<(DateTime<Utc>, f64)> {
        let Some(index) = asset_index(coin) else {
            return Vec::new();
        };
        if to <= from {
            return Vec::new();
        }
        let from = to
            .checked_sub_signed(TimeDelta::days(KNOTS_MAX_SPAN_DAYS))
            .map_or(from, |earliest| from.max(earliest));
        let (Some(p_from), Some(p_to)) = (self.mark_at(index, from), self.mark_at(index, to))
        else {
            return Vec::new();
        };
        let origin = origin();
        // Boundaries before the origin add nothing: the path is flat there.
        let first = if from < origin {
            0
        } else {
            split_time(from).0 + 1
        };
        let last = if to <= origin {
            -1
        } else {
            let (m, nanos) = split_time(to);
            if nanos == 0 { m - 1 } else { m }
        };
        let inner = usize::try_from(last - first + 1).unwrap_or(0);
        let mut out = Vec::with_capacity(inner + 2);
        out.push((from, p_from));
        if first <= last {
            self.visit(index, first, last, |m, x| {
                out.push((minute_time(m), x.exp()))
            });
        }
        out.push((to, p_to));
        out
    }

    /// Up to `count` candles of `interval_minutes`, the first containing
    /// `from`. Candles are aligned to the Unix-epoch grid (so hourly candles
    /// start on the hour and daily ones at 00:00 UTC, like the venue's). Each
    /// candle spans its minute boundaries inclusive, so a candle's close equals
    /// the next one's open. At most [`MAX_CANDLES`] candles and 1000 days of
    /// path are produced per call.
    pub fn candles(
        &self,
        coin: &str,
        interval_minutes: u32,
        from: DateTime<Utc>,
        count: usize,
    ) -> Vec<Candle> {
        let Some(index) = asset_index(coin) else {
            return Vec::new();
        };
        if interval_minutes == 0 || count == 0 {
            return Vec::new();
        }
        let interval = i64::from(interval_minutes);
        let max_by_span = usize::try_from(MAX_CANDLE_SPAN_MINUTES / interval)
            .unwrap_or(0)
            .max(1);
        let count = count.min(MAX_CANDLES).min(max_by_span);
        let origin_epoch_minute = ORIGIN_UNIX_SECONDS / 60;
        let epoch_minute = origin_epoch_minute + floor_minute(from);
        let start = epoch_minute - epoch_minute.rem_euclid(interval) - origin_epoch_minute;
        let mut candles: Vec<Candle> = Vec::with_capacity(count);
        self.aggregate(index, start, interval, count, |k, c| {
            candles.push(Candle {
                time: minute_time(start + k as i64 * interval),
                open: c.open,
                high: c.high,
                low: c.low,
                close: c.close,
                volume: c.volume,
            })
        });
        candles
    }

    /// `count` candles of `interval_minutes`, the first opening at `first` (unix seconds, on
    /// the interval's grid; rounded down to a minute), passed to `emit` with their opening time
    /// in unix seconds, oldest first. The same candles as [`Self::candles`] without its cap on
    /// the count: for the sandbox's own readers of long histories (backtests), which bound what
    /// they ask. Still at most 1000 days of path per call.
    pub fn candle_series(
        &self,
        coin: &str,
        interval_minutes: u32,
        first: i64,
        count: usize,
        mut emit: impl FnMut(i64, Ohlcv),
    ) {
        let Some(index) = asset_index(coin) else {
            return;
        };
        if interval_minutes == 0 || count == 0 {
            return;
        }
        let interval = i64::from(interval_minutes);
        let max_by_span = usize::try_from(MAX_CANDLE_SPAN_MINUTES / interval)
            .unwrap_or(0)
            .max(1);
        let count = count.min(max_by_span);
        let origin_epoch_minute = ORIGIN_UNIX_SECONDS / 60;
        let start = (first.div_euclid(60) - origin_epoch_minute).clamp(-MAX_MINUTE, MAX_MINUTE);
        self.aggregate(index, start, interval, count, |k, c| {
            emit((origin_epoch_minute + start + k as i64 * interval) * 60, c)
        });
    }

    /// Aggregates `count` candles of `interval` minutes from minute `start` and passes each
    /// to `emit` with its index. A candle spans its minute boundaries inclusive; its volume is
    /// that of the steps inside it.
    fn aggregate(
        &self,
        index: usize,
        start: i64,
        interval: i64,
        count: usize,
        mut emit: impl FnMut(usize, Ohlcv),
    ) {
        let end = start + count as i64 * interval;
        let mut candle = Ohlcv::at(0.0);
        let mut prev = 0.0;
        let mut k = 0;
        let mut left = interval;
        self.walk_minutes(index, start, end, |m, hash, x, sigma| {
            let p = x.exp();
            if m == start {
                candle = Ohlcv::at(p);
                prev = x;
                return;
            }
            candle.volume += step_volume(hash, (x - prev).abs() / sigma, p);
            candle.high = candle.high.max(p);
            candle.low = candle.low.min(p);
            candle.close = p;
            prev = x;
            left -= 1;
            if left == 0 {
                emit(k, candle);
                k += 1;
                left = interval;
                candle = Ohlcv::at(p);
            }
        });
    }

    /// Calls `f(minute, hash of the step into it, log price, sigma)` for every minute in
    /// `m0..=m1` (the hash is meaningless for `m0`, which no step of the range reaches). The
    /// coin's lock is held only to find the log price at `m0`; the walk from there runs
    /// without it, so long ranges of one coin can be generated side by side. Minutes outside
    /// the feed's range see the clamped value.
    fn walk_minutes(&self, index: usize, m0: i64, m1: i64, mut f: impl FnMut(i64, u64, f64, f64)) {
        let (walk, mut x) = {
            let Some(mut path) = self.lock(index) else {
                return;
            };
            let m = m0.clamp(0, MAX_MINUTE);
            let xs = path.day_path(m.div_euclid(MINUTES_PER_DAY));
            let x = xs[m.rem_euclid(MINUTES_PER_DAY) as usize];
            (path.walk, x)
        };
        let sigma = walk.sigma;
        f(m0, 0, x, sigma);
        let mut shocks = Shocks::default();
        // `m` is the minute `x` belongs to; each round steps it forward.
        let mut m = m0;
        while m < m1 {
            if !(0..MAX_MINUTE).contains(&m) {
                // Flat outside the feed's range, though each step still has its volume.
                let stop = if m < 0 { m1.min(0) } else { m1 };
                while m < stop {
                    let hash = minute_hash(walk.key, m);
                    m += 1;
                    f(m, hash, x, sigma);
                }
                continue;
            }
            let day_end = m - m.rem_euclid(MINUTES_PER_DAY) + MINUTES_PER_DAY;
            let n = (m1.min(MAX_MINUTE).min(day_end) - m) as usize;
            let first = m;
            x = walk.run(x, first, n, &mut shocks, |i, hash, x| {
                f(first + i as i64 + 1, hash, x, sigma)
            });
            m += n as i64;
        }
    }
}

/// A candle's prices and volume (coin units).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ohlcv {
    pub open: f64,
    pub high: f64,
    pub low: f64,
    pub close: f64,
    pub volume: f64,
}

impl Ohlcv {
    fn at(p: f64) -> Ohlcv {
        Ohlcv {
            open: p,
            high: p,
            low: p,
            close: p,
            volume: 0.0,
        }
    }
}

/// Coin volume traded during the step with this minute hash: noisy but
/// reproducible, and larger when the move (in standard deviations) is larger,
/// as on a real venue.
fn step_volume(minute_hash: u64, move_in_sigmas: f64, price: f64) -> f64 {
    let u = unit(splitmix64(minute_hash ^ VOLUME_SALT));
    VOLUME_USD_PER_MINUTE * (0.25 + 1.5 * u) * (1.0 + move_in_sigmas) / price
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().expect("valid RFC 3339 timestamp")
    }

    #[test]
    fn market_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Market>();
    }

    #[test]
    fn feed_is_deterministic_per_seed() {
        let a = Market::new(42);
        let b = Market::new(42);
        let c = Market::new(43);
        let minutes = [0, 1, 59, 1439, 1440, 10_000, 200_000];
        for spec in ASSETS {
            for &m in &minutes {
                assert_eq!(a.minute_price(spec.coin, m), b.minute_price(spec.coin, m));
            }
            assert_ne!(
                a.minute_price(spec.coin, 10_000),
                c.minute_price(spec.coin, 10_000),
                "{}",
                spec.coin
            );
        }
        // Coins do not share a stream.
        let btc: Vec<f64> = (1..50)
            .map(|m| a.minute_price("BTC", m).unwrap_or(0.0))
            .collect();
        let eth: Vec<f64> = (1..50)
            .map(|m| a.minute_price("ETH", m).unwrap_or(0.0))
            .collect();
        let btc_ret: Vec<f64> = btc.windows(2).map(|w| (w[1] / w[0]).ln()).collect();
        let eth_ret: Vec<f64> = eth.windows(2).map(|w| (w[1] / w[0]).ln()).collect();
        assert_ne!(btc_ret, eth_ret);
    }

    #[test]
    fn walk_starts_at_base_price_and_moves() {
        let m = Market::new(1);
        for spec in ASSETS {
            let p0 = m.minute_price(spec.coin, 0).expect("known coin");
            assert!((p0 / spec.base_price - 1.0).abs() < 1e-12, "{}", spec.coin);
            assert_eq!(m.minute_price(spec.coin, -5), Some(p0));
            let p1 = m.minute_price(spec.coin, 1).expect("known coin");
            assert_ne!(p0, p1);
            // One minute's move is a few per-minute sigmas at most.
            let sigma = spec.daily_vol / 1440f64.sqrt();
            assert!((p1 / p0).ln().abs() < 6.0 * sigma, "{}", spec.coin);
        }
        assert_eq!(m.minute_price("NOPE", 0), None);
        assert_eq!(m.mark("NOPE", origin()), None);
    }

    #[test]
    fn mark_interpolates_linearly_between_minutes() {
        let m = Market::new(9);
        let p100 = m.minute_price("ETH", 100).expect("known coin");
        let p101 = m.minute_price("ETH", 101).expect("known coin");
        let base = minute_time(100);
        assert_eq!(m.mark("ETH", base), Some(p100));
        let quarter = m
            .mark("ETH", base + TimeDelta::seconds(15))
            .expect("known coin");
        assert!((quarter - (p100 + 0.25 * (p101 - p100))).abs() < 1e-9);
        let almost = m
            .mark("ETH", base + TimeDelta::milliseconds(59_999))
            .expect("known");
        assert!((almost - (p100 + 0.999_983_333 * (p101 - p100))).abs() < 1e-6);
        // Across a day boundary the next minute comes from the next day.
        let p1439 = m.minute_price("ETH", 1439).expect("known coin");
        let p1440 = m.minute_price("ETH", 1440).expect("known coin");
        let mid = m
            .mark("ETH", minute_time(1439) + TimeDelta::seconds(30))
            .expect("known");
        assert!((mid - 0.5 * (p1439 + p1440)).abs() < 1e-9);
        // Before the origin the feed is flat at the origin price.
        let p0 = m.minute_price("ETH", 0);
        assert_eq!(m.mark("ETH", at("2023-06-01T00:00:00Z")), p0);
        // Case-insensitive coin names.
        assert_eq!(m.mark("eth", base), Some(p100));
    }

    #[test]
    fn checkpoint_cache_matches_cold_computation() {
        let warm = Market::new(5);
        // Warm far ahead, then answer earlier and later queries from the cache.
        let far = warm.minute_price("SOL", 1_000_000).expect("known coin");
        for minute in [
            0, 1439, 1440, 400_123, 400_124, 999_999, 1_000_000, 1_200_007,
        ] {
            let cold = Market::new(5);
            assert_eq!(
                warm.minute_price("SOL", minute),
                cold.minute_price("SOL", minute),
                "minute {minute}"
            );
        }
        assert_eq!(Market::new(5).minute_price("SOL", 1_000_000), Some(far));
        let t = minute_time(700_000) + TimeDelta::seconds(20);
        assert_eq!(warm.mark("SOL", t), Market::new(5).mark("SOL", t));
        // Knots walk days through the same cache; they must agree with marks.
        let knots = warm.knots("SOL", minute_time(812_000), minute_time(812_000 + 3000));
        for (time, px) in knots.iter().step_by(97) {
            assert_eq!(Market::new(5).mark("SOL", *time), Some(*px));
        }
    }

    #[test]
    fn far_minute_on_cold_market_returns() {
        let m = Market::new(77);
        let p = m.minute_price("BTC", 1_500_000).expect("known coin");
        assert!(p.is_finite() && p > 0.0);
        // Beyond the horizon the feed is flat rather than unbounded work.
        assert_eq!(
            m.minute_price("DOGE", MAX_MINUTE + 10),
            m.minute_price("DOGE", MAX_MINUTE)
        );
    }

    #[test]
    fn prices_stay_plausible_over_two_years() {
        let m = Market::new(2024);
        for spec in ASSETS {
            let days = m.candles(spec.coin, 1440, origin(), 731);
            assert_eq!(days.len(), 731, "{}", spec.coin);
            let low = days.iter().map(|c| c.low).fold(f64::INFINITY, f64::min);
            let high = days.iter().map(|c| c.high).fold(0.0, f64::max);
            // The walk's stationary spread is up to ~0.45 in log terms for the
            // most volatile coins, so 8x either way is a generous outer bound.
            assert!(low > spec.base_price / 8.0, "{} low {low}", spec.coin);
            assert!(high < spec.base_price * 8.0, "{} high {high}", spec.coin);
            // And it actually moves: at least a few percent over two years.
            assert!(high / low > 1.05, "{} range {low}..{high}", spec.coin);
        }
    }

    #[test]
    fn knots_cover_the_span_with_minute_boundaries() {
        let m = Market::new(3);
        let from = at("2024-02-01T10:00:30Z");
        let to = at("2024-02-01T10:05:00Z");
        let k = m.knots("BTC", from, to);
        let times: Vec<DateTime<Utc>> = k.iter().map(|(t, _)| *t).collect();
        assert_eq!(
            times,
            vec![
                from,
                at("2024-02-01T10:01:00Z"),
                at("2024-02-01T10:02:00Z"),
                at("2024-02-01T10:03:00Z"),
                at("2024-02-01T10:04:00Z"),
                to,
            ]
        );
        for (t, px) in &k {
            assert_eq!(m.mark("BTC", *t), Some(*px));
        }
        assert!(m.knots("BTC", to, from).is_empty());
        assert!(m.knots("BTC", to, to).is_empty());
        assert!(m.knots("NOPE", from, to).is_empty());
        // Within one minute: just the two ends.
        let short = m.knots("BTC", from, from + TimeDelta::seconds(10));
        assert_eq!(short.len(), 2);
        // Spans before the origin are flat and skip negative boundaries.
        let early = m.knots(
            "BTC",
            at("2023-12-31T23:58:00Z"),
            at("2024-01-01T00:01:30Z"),
        );
        assert_eq!(early.len(), 4);
        assert_eq!(early[1].0, origin());
        // Long spans are capped to the last 400 days.
        let long_to = at("2026-01-01T00:00:00Z");
        let long = m.knots("ARB", origin(), long_to);
        assert_eq!(long[0].0, long_to - TimeDelta::days(400));
        assert_eq!(long.len(), 400 * 1440 + 1);
    }

    #[test]
    fn candles_aggregate_the_minute_path() {
        let m = Market::new(11);
        let from = at("2024-05-10T13:37:12Z");
        let candles = m.candles("ETH", 60, from, 5);
        assert_eq!(candles.len(), 5);
        assert_eq!(candles[0].time, at("2024-05-10T13:00:00Z"));
        for (i, c) in candles.iter().enumerate() {
            assert_eq!(
                c.time,
                at("2024-05-10T13:00:00Z") + TimeDelta::hours(i as i64)
            );
            let knots = m.knots("ETH", c.time, c.time + TimeDelta::hours(1));
            assert_eq!(knots.len(), 61);
            assert_eq!(Some(c.open), knots.first().map(|k| k.1));
            assert_eq!(Some(c.close), knots.last().map(|k| k.1));
            let hi = knots.iter().map(|k| k.1).fold(f64::MIN, f64::max);
            let lo = knots.iter().map(|k| k.1).fold(f64::MAX, f64::min);
            assert_eq!((c.high, c.low), (hi, lo));
            assert!(c.volume > 0.0);
        }
        for w in candles.windows(2) {
            assert_eq!(w[0].close, w[1].open);
        }
        // Volume is deterministic.
        assert_eq!(candles, Market::new(11).candles("ETH", 60, from, 5));
        assert!(m.candles("ETH", 0, from, 5).is_empty());
        assert!(m.candles("ETH", 60, from, 0).is_empty());
        assert!(m.candles("NOPE", 60, from, 5).is_empty());
        assert_eq!(m.candles("ETH", 1, from, 100_000).len(), MAX_CANDLES);
    }

    fn digest(values: impl IntoIterator<Item = u64>) -> u64 {
        values.into_iter().fold(0xCBF2_9CE4_8422_2325u64, |h, v| {
            (h ^ v).wrapping_mul(0x0000_0100_0000_01B3).rotate_left(29)
        })
    }

    fn candle_bits(c: &[Candle]) -> Vec<u64> {
        c.iter()
            .flat_map(|c| {
                [
                    c.time.timestamp() as u64,
                    c.open.to_bits(),
                    c.high.to_bits(),
                    c.low.to_bits(),
                    c.close.to_bits(),
                    c.volume.to_bits(),
                ]
            })
            .collect()
    }

    /// Candles, knots, marks and minute prices are pinned bit for bit, as recorded from the
    /// day-by-day generator before it was made faster: across the origin (where the feed is
    /// flat), off-grid starts, day boundaries and every interval the venue serves.
    #[test]
    fn feed_values_are_pinned() {
        let m = Market::new(42);
        let cases = [
            (
                "XRP",
                1,
                "2023-12-31T22:13:05Z",
                5000,
                0x51c4_c497_d284_dfb6,
            ),
            (
                "BTC",
                1,
                "2024-09-30T23:59:59Z",
                5000,
                0xc9da_f3b8_5abe_5aa3,
            ),
            (
                "ETH",
                5,
                "2024-03-03T03:03:03Z",
                5000,
                0xfe3d_fe2b_1091_4bf5,
            ),
            (
                "AVAX",
                15,
                "2023-12-30T00:00:00Z",
                700,
                0x2405_0692_c4b0_0629,
            ),
            (
                "LINK",
                60,
                "2024-06-01T10:30:00Z",
                5000,
                0x8b29_8eab_f248_1d26,
            ),
            (
                "ARB",
                240,
                "2024-02-02T02:00:00Z",
                2000,
                0x927a_b354_ce67_f02f,
            ),
            (
                "SUI",
                1440,
                "2024-01-01T00:00:00Z",
                800,
                0x0cea_26bf_0c7e_0ce7,
            ),
            (
                "SOL",
                7,
                "2024-04-04T04:04:04Z",
                3000,
                0xe903_5d90_421c_d179,
            ),
        ];
        for (coin, interval, from, count, want) in cases {
            let candles = m.candles(coin, interval, at(from), count);
            assert_eq!(candles.len(), count, "{coin} {interval}");
            assert_eq!(digest(candle_bits(&candles)), want, "{coin} {interval}");
        }
        let knots = m.knots(
            "DOGE",
            at("2024-07-07T07:07:07.5Z"),
            at("2024-07-09T01:02:03Z"),
        );
        let bits = knots
            .iter()
            .flat_map(|(t, p)| [t.timestamp_micros() as u64, p.to_bits()]);
        assert_eq!(knots.len(), 2517);
        assert_eq!(digest(bits), 0xe57c_a4a4_e96a_3e69);
        let prices = [0, 1, 1439, 1440, 777_777, 1_000_001]
            .map(|minute| m.minute_price("BNB", minute).unwrap_or(0.0).to_bits());
        assert_eq!(digest(prices), 0xd4eb_a2af_c826_a0d0);
        let marks = [
            "2024-01-01T00:00:30Z",
            "2024-05-05T05:05:05.005Z",
            "2025-12-31T23:59:59Z",
        ]
        .map(|t| m.mark("ETH", at(t)).unwrap_or(0.0).to_bits());
        assert_eq!(digest(marks), 0x583a_3cc8_03e1_42c1);
    }

    /// A day's shocks computed together (cosines grouped by angle) are the per-minute ones,
    /// bit for bit, and come with each minute's hash.
    #[test]
    fn batched_shocks_are_the_per_minute_shocks() {
        let key = coin_key(42, 3);
        let mut shocks = Shocks::default();
        for (first, n) in [(0, 1440), (777_600, 1440), (5, 1), (1_000_017, 613)] {
            shocks.fill(key, first, n);
            assert_eq!(shocks.shock.len(), n);
            for i in 0..n {
                let minute = first + i as i64;
                assert_eq!(shocks.shock[i].to_bits(), shock(key, minute).to_bits());
                assert_eq!(shocks.hash[i], minute_hash(key, minute));
            }
        }
    }
}
