//! Generated feed bars kept between backtests, per coin and timeframe.
//!
//! The feed is deterministic (a bar's values depend only on the seed, the coin and the bar's
//! time), so a cached bar is the bar a fresh generation would make: the cache only saves time.
//! Each (coin, timeframe) holds one contiguous run of bars; a request inside it is a slice, a
//! request that reaches past its end generates only the missing newer bars, and anything else
//! replaces it. Entries are evicted least recently used once their bars exceed a byte budget.
//!
//! A long run is written into memory whose pages are already mapped where there is some: the
//! cache keeps one spare year of one-minute bars (an evicted run, or one made in the background
//! once a backtest that took the last one has ended). Touching 25 MB for the first time costs
//! 13-39 ms of page faults on our 2-core VM, as much as generating the bars; a researcher's
//! first backtest of a pair should not pay it.

use super::data::{self, Timeframe};
use super::engine::Bar;
use super::venue::market::Market;
use chrono::{DateTime, Utc};
use std::ops::{Deref, Range};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A year of one-minute bars (~25 MB), the longest run a backtest asks for.
const YEAR_1M: usize = 525_600;

/// Bytes of bars the cache keeps: two full years of one-minute bars, so two coins' longest
/// backtests stay warm together. The spare adds at most one more year.
pub const BUDGET_BYTES: usize = 2 * YEAR_1M * std::mem::size_of::<Bar>();

/// Bars shared with the cache: a window of one contiguous run, read as a slice.
#[derive(Clone)]
pub struct Bars {
    run: Arc<Vec<Bar>>,
    range: Range<usize>,
}

impl Bars {
    pub fn owned(bars: Vec<Bar>) -> Bars {
        let range = 0..bars.len();
        Bars {
            run: Arc::new(bars),
            range,
        }
    }
}

impl Deref for Bars {
    type Target = [Bar];
    fn deref(&self) -> &[Bar] {
        &self.run[self.range.clone()]
    }
}

struct Entry {
    coin: String,
    tf: Timeframe,
    run: Arc<Vec<Bar>>,
    used: u64,
}

#[derive(Default)]
pub struct BarCache {
    inner: Mutex<(Vec<Entry>, u64)>,
    spare: Arc<Spare>,
}

/// Bars whose pages are mapped, for the next long run to be written into.
#[derive(Default)]
struct Spare {
    bars: Mutex<Option<Vec<Bar>>>,
    /// A spare is being made in the background.
    making: AtomicBool,
    /// A long run was generated since the last refill: one should be made.
    taken: AtomicBool,
}

impl Spare {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Vec<Bar>>> {
        self.bars.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The spare cut to `count` bars (their old values: every one is overwritten), if it holds
    /// that many.
    fn take(&self, count: usize) -> Option<Vec<Bar>> {
        let mut bars = self.slot().take_if(|bars| bars.len() >= count)?;
        bars.truncate(count);
        // Unused pages go back to the system rather than staying with this run.
        bars.shrink_to_fit();
        Some(bars)
    }

    /// Keeps `bars` as the spare if it is longer than the one there is.
    fn offer(&self, bars: Vec<Bar>) {
        let mut slot = self.slot();
        if bars.len() >= PARALLEL_FROM && slot.as_ref().is_none_or(|s| s.len() < bars.len()) {
            *slot = Some(bars);
        }
    }

    /// Makes a spare year in the background unless there is one (a shorter one does not do for
    /// a year's run) or one is being made.
    fn refill(self: &Arc<Self>) {
        let year = self.slot().as_ref().is_some_and(|s| s.len() >= YEAR_1M);
        if year || self.making.swap(true, Ordering::AcqRel) {
            return;
        }
        let spare = self.clone();
        let made = std::thread::Builder::new()
            .name("bar-spare".into())
            .spawn(move || {
                // Written, not calloc'ed: the point is that its pages are mapped.
                spare.offer(vec![Bar::default(); YEAR_1M]);
                spare.making.store(false, Ordering::Release);
            });
        if made.is_err() {
            self.making.store(false, Ordering::Release);
        }
    }
}

/// Start of the first and the last of the `days` of bars that closed by `now`, in unix seconds:
/// the window `data::feed_bars` returns.
fn window(tf: Timeframe, days: u32, now: DateTime<Utc>) -> (i64, i64, usize) {
    let step = i64::from(tf.minutes()) * 60;
    let count = (i64::from(days) * 1_440 / i64::from(tf.minutes())).max(1);
    let last = now.timestamp().div_euclid(step) * step - step;
    (last - (count - 1) * step, last, count as usize)
}

impl BarCache {
    /// The bars `data::feed_bars(market, coin, tf, days, now)` returns, from the cache where it
    /// holds them. Generation runs outside the lock; two requests missing together both generate
    /// and the later one's run is kept.
    pub fn feed_bars(
        &self,
        market: &Market,
        coin: &str,
        tf: Timeframe,
        days: u32,
        now: DateTime<Utc>,
    ) -> Bars {
        let step = i64::from(tf.minutes()) * 60;
        let (first, last, count) = window(tf, days, now);
        let cached = self.lookup(coin, tf);
        if let Some(run) = &cached
            && let (Some(head), Some(tail)) = (run.first(), run.last())
            && head.time <= first
        {
            let at = |t: i64| ((t - head.time) / step) as usize;
            if tail.time >= last {
                return Bars {
                    run: run.clone(),
                    range: at(first)..at(last) + 1,
                };
            }
            if tail.time + step >= first {
                // Only the bars that closed since the run was made are new.
                let from = tail.time + step;
                let missing = ((last - from) / step + 1) as usize;
                let keep = &run[at(first)..];
                let mut bars = Vec::with_capacity(keep.len() + missing);
                bars.extend_from_slice(keep);
                // A temporary: the spare is kept for a run that stays.
                bars.extend(self.range(market, coin, tf, from, missing, false));
                return self.store(coin, tf, bars);
            }
        }
        let bars = self.range(market, coin, tf, first, count, true);
        self.store(coin, tf, bars)
    }

    fn lookup(&self, coin: &str, tf: Timeframe) -> Option<Arc<Vec<Bar>>> {
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (entries, clock) = &mut *guard;
        *clock += 1;
        let entry = entries.iter_mut().find(|e| e.coin == coin && e.tf == tf)?;
        entry.used = *clock;
        Some(entry.run.clone())
    }

    fn store(&self, coin: &str, tf: Timeframe, bars: Vec<Bar>) -> Bars {
        let out = Bars::owned(bars);
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (entries, clock) = &mut *guard;
        *clock += 1;
        entries.retain(|e| !(e.coin == coin && e.tf == tf));
        entries.push(Entry {
            coin: coin.to_string(),
            tf,
            run: out.run.clone(),
            used: *clock,
        });
        let size = |e: &Entry| e.run.len() * std::mem::size_of::<Bar>();
        while entries.len() > 1 && entries.iter().map(size).sum::<usize>() > BUDGET_BYTES {
            let oldest = entries
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| e.used)
                .map(|(i, _)| i)
                .unwrap_or(0);
            // A run no job reads any more is memory already mapped: the next long run's.
            if let Ok(run) = Arc::try_unwrap(entries.remove(oldest).run) {
                self.spare.offer(run);
            }
        }
        out
    }

    /// (coin, timeframe, bars) of what is cached, least recently used first.
    pub fn contents(&self) -> Vec<(String, Timeframe, usize)> {
        let guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut entries: Vec<&Entry> = guard.0.iter().collect();
        entries.sort_by_key(|e| e.used);
        entries
            .into_iter()
            .map(|e| (e.coin.clone(), e.tf, e.run.len()))
            .collect()
    }
}

/// Below this many bars a range is generated on the calling thread.
const PARALLEL_FROM: usize = 100_000;
/// A long range is generated in this many parts per core.
const PARALLEL_PARTS_PER_CORE: usize = 4;

impl BarCache {
    /// `count` bars from the one starting at `first` (unix seconds, on the timeframe's grid),
    /// written into the spare where there is one and `spare` allows it, else into zeroed
    /// memory not yet touched, whose pages the generating threads then fault in themselves.
    fn range(
        &self,
        market: &Market,
        coin: &str,
        tf: Timeframe,
        first: i64,
        count: usize,
        spare: bool,
    ) -> Vec<Bar> {
        let long = count >= PARALLEL_FROM;
        let started = std::time::Instant::now();
        let taken = (long && spare).then(|| self.spare.take(count)).flatten();
        if long && spare {
            self.spare.taken.store(true, Ordering::Release);
        }
        let into = if taken.is_some() {
            "the spare"
        } else {
            "new memory"
        };
        let mut bars = taken.unwrap_or_else(|| bytemuck::zeroed_vec(count));
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        let whole = match long && cores > 1 {
            true => in_parts(market, coin, tf, first, cores, &mut bars),
            false => data::feed_range_into(market, coin, tf, first, &mut bars),
        };
        bars.truncate(whole);
        if whole < count {
            // A coin the feed does not serve: no memory is kept for bars that are not there.
            bars.shrink_to_fit();
        }
        if long {
            tracing::debug!(
                "{count} {coin} bars generated into {into} in {:?}",
                started.elapsed()
            );
        }
        bars
    }

    /// Makes a spare year in the background if a long run took the last one: called once the
    /// backtest that generated it has answered, so the page faults do not slow its end.
    pub fn replace_spare(&self) {
        if self.spare.taken.swap(false, Ordering::AcqRel) {
            self.spare.refill();
        }
    }
}

/// Fills `bars` with the range from `first` in parts generated side by side, one thread per
/// core, each straight into its place: a bar depends only on its own time (the feed's walk
/// runs without the coin's lock once it has its starting price), so the parts joined are the
/// range generated in one go. Returns how many bars were made, as one call over it would.
fn in_parts(
    market: &Market,
    coin: &str,
    tf: Timeframe,
    first: i64,
    cores: usize,
    bars: &mut [Bar],
) -> usize {
    let step = i64::from(tf.minutes()) * 60;
    // More parts than cores, taken in turn: a thread slowed by other work on its core takes
    // fewer of them instead of holding the whole range back.
    let size = bars.len().div_ceil(cores * PARALLEL_PARTS_PER_CORE).max(1);
    let count = bars.len().div_ceil(size);
    let parts = Mutex::new(bars.chunks_mut(size).enumerate());
    let made = Mutex::new(vec![(0, 0); count]);
    std::thread::scope(|scope| {
        for _ in 0..cores {
            scope.spawn(|| {
                loop {
                    let next = parts.lock().unwrap_or_else(|e| e.into_inner()).next();
                    let Some((k, part)) = next else { break };
                    let from = first + (k * size) as i64 * step;
                    let wrote = data::feed_range_into(market, coin, tf, from, part);
                    made.lock().unwrap_or_else(|e| e.into_inner())[k] = (part.len(), wrote);
                }
            });
        }
    });
    // A part the feed could not fill ends the range there.
    let mut whole = 0;
    for (len, wrote) in made.into_inner().unwrap_or_else(|e| e.into_inner()) {
        whole += wrote;
        if wrote < len {
            break;
        }
    }
    whole
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    /// Cached bars are the bars a fresh generation makes: served from the cache, extended by the
    /// bars that closed since, cut to a shorter history, and regenerated for a longer one.
    #[test]
    fn cached_bars_equal_fresh_ones() {
        let market = Market::new(42);
        let cache = BarCache::default();
        let t0 = at("2026-06-01T12:07:30Z");
        let steps = [
            (Timeframe::M5, 3, Duration::zero()),      // generated
            (Timeframe::M5, 3, Duration::seconds(20)), // same bars: a slice
            (Timeframe::M5, 3, Duration::minutes(23)), // extended by 4 bars
            (Timeframe::M5, 1, Duration::minutes(24)), // a shorter window inside
            (Timeframe::M5, 5, Duration::minutes(24)), // longer: regenerated
            (Timeframe::M5, 5, Duration::days(6)),     // past the end: regenerated
            (Timeframe::M1, 2, Duration::minutes(1)),  // another timeframe beside it
            (Timeframe::H1, 30, Duration::hours(50)),
            // Long enough to be generated in parts side by side.
            (Timeframe::M1, 80, Duration::hours(3)),
        ];
        for (tf, days, dt) in steps {
            let now = t0 + dt;
            let fresh = data::feed_bars(&market, "BTC", tf, days, now);
            let cached = cache.feed_bars(&market, "BTC", tf, days, now);
            assert_eq!(&*cached, fresh.as_slice(), "{tf:?} {days}d at {now}");
        }
        let kept: Vec<_> = cache.contents().into_iter().map(|(_, tf, _)| tf).collect();
        assert_eq!(kept, [Timeframe::M5, Timeframe::H1, Timeframe::M1]);
        // An unknown coin has no bars, whether generated in one part or side by side.
        for days in [1, 80] {
            assert!(
                cache
                    .feed_bars(&market, "NOPE", Timeframe::M1, days, t0)
                    .is_empty()
            );
        }
    }

    /// A long run written into the spare (the year made in the background after the first
    /// long generation, holding zeros, or another coin's evicted bars) holds exactly the bars a
    /// fresh generation makes.
    #[test]
    fn runs_written_into_a_spare_equal_fresh_ones() {
        let market = Market::new(11);
        let cache = BarCache::default();
        let now = at("2026-06-01T00:00:00Z");
        let long = |coin: &str, days| {
            let cached = cache.feed_bars(&market, coin, Timeframe::M1, days, now);
            let fresh = data::feed_bars(&market, coin, Timeframe::M1, days, now);
            assert!(&*cached == fresh.as_slice(), "{coin} {days}d");
        };
        long("BTC", 80);
        cache.replace_spare();
        let made = std::time::Instant::now();
        while cache.spare.making.load(Ordering::Acquire) || cache.spare.slot().is_none() {
            assert!(made.elapsed().as_secs() < 30, "no spare made");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(cache.spare.slot().as_ref().map(Vec::len), Some(YEAR_1M));
        long("ETH", 70);
        // A spare holding another coin's bars, longer than the run written into it.
        cache
            .spare
            .offer(data::feed_bars(&market, "BTC", Timeframe::M1, 90, now));
        long("SOL", 75);
    }

    #[test]
    fn the_spare_is_the_longest_run_offered_and_cut_to_what_is_asked() {
        let spare = Spare::default();
        spare.offer(vec![Bar::default(); PARALLEL_FROM - 1]);
        assert!(spare.slot().is_none(), "too short to be worth keeping");
        spare.offer(vec![Bar::default(); PARALLEL_FROM + 10]);
        spare.offer(vec![Bar::default(); PARALLEL_FROM + 5]);
        assert_eq!(
            spare.slot().as_ref().map(Vec::len),
            Some(PARALLEL_FROM + 10)
        );
        assert!(
            spare.take(PARALLEL_FROM + 11).is_none(),
            "too short for this run"
        );
        assert_eq!(
            spare.take(PARALLEL_FROM).map(|b| b.len()),
            Some(PARALLEL_FROM)
        );
        assert!(spare.slot().is_none(), "taken");
    }

    #[test]
    fn a_hit_is_a_slice_of_the_same_run() {
        let market = Market::new(7);
        let cache = BarCache::default();
        let now = at("2026-06-01T12:07:30Z");
        let a = cache.feed_bars(&market, "ETH", Timeframe::M15, 10, now);
        let b = cache.feed_bars(&market, "ETH", Timeframe::M15, 4, now);
        assert!(Arc::ptr_eq(&a.run, &b.run), "no second generation");
        assert_eq!(&a[a.len() - b.len()..], &*b);
    }

    #[test]
    fn least_recently_used_runs_leave_first_past_the_budget() {
        let market = Market::new(3);
        let cache = BarCache::default();
        let now = at("2026-06-01T00:00:00Z");
        // A year of one-minute bars is half the budget.
        cache.feed_bars(&market, "BTC", Timeframe::M1, 365, now);
        cache.feed_bars(&market, "ETH", Timeframe::M1, 365, now);
        cache.feed_bars(&market, "BTC", Timeframe::M1, 1, now); // BTC is the most recent
        cache.feed_bars(&market, "SOL", Timeframe::M1, 365, now);
        let coins: Vec<_> = cache.contents().into_iter().map(|(c, _, _)| c).collect();
        assert_eq!(coins, ["BTC", "SOL"]);
    }
}
