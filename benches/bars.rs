//! Bar generation from the seeded feed: what a backtest's first job on a (coin, timeframe) pays
//! before the engine runs. Run with `cargo bench --bench bars`.
//!
//! - `feed_year_1m/fresh_market`: a year of one-minute BTC bars (525,600) on a `Market` that has
//!   computed nothing yet, as on a sandbox just started: the walk from the feed's origin to the
//!   window (its day checkpoints) plus the year itself.
//! - `feed_year_1m/checkpoints_known`: the same year once the coin's day checkpoints up to now
//!   are known (any mark of the coin near now computes them): the year's bars alone.
//! - `feed_year_1m/bar_cache_miss`: the same through `BarCache::feed_bars` on an empty cache,
//!   the backtest job's path (a long range is generated in parts side by side).
//! - `checkpoints/origin_to_now`: the day checkpoints alone, from the origin to now.
//!
//! Goal (issue 14, with the engine and the API around it): the first 525,600-bar backtest through
//! the API >= 100x backtesting.py, which leaves about 10 ms for the bars.

use std::hint::black_box;

use agentdesk::sandbox::bar_cache::BarCache;
use agentdesk::sandbox::data::{self, Timeframe};
use agentdesk::sandbox::venue::Market;
use chrono::{DateTime, Utc};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};

/// A fixed "now", so every run generates the same bars (this one is 1,057 days after the origin).
fn now() -> DateTime<Utc> {
    "2026-11-23T12:00:30Z".parse().expect("valid timestamp")
}

fn warm_market() -> Market {
    let market = Market::new(42);
    black_box(market.mark("BTC", now()));
    market
}

fn bench_year(c: &mut Criterion) {
    let mut g = c.benchmark_group("feed_year_1m");
    g.sample_size(20);
    g.throughput(Throughput::Elements(525_600));
    g.bench_function("fresh_market", |b| {
        b.iter_batched(
            || Market::new(42),
            |market| data::feed_bars(&market, "BTC", Timeframe::M1, 365, now()),
            BatchSize::PerIteration,
        )
    });
    let market = warm_market();
    g.bench_function("checkpoints_known", |b| {
        b.iter(|| data::feed_bars(&market, "BTC", Timeframe::M1, 365, now()))
    });
    g.bench_function("bar_cache_miss", |b| {
        b.iter_batched(
            BarCache::default,
            |cache| {
                let bars = cache.feed_bars(&market, "BTC", Timeframe::M1, 365, now());
                black_box(bars.len())
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

fn bench_checkpoints(c: &mut Criterion) {
    let mut g = c.benchmark_group("checkpoints");
    g.sample_size(20);
    g.bench_function("origin_to_now", |b| {
        b.iter_batched(
            || Market::new(42),
            |market| market.mark("BTC", now()),
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group!(benches, bench_year, bench_checkpoints);
criterion_main!(benches);
