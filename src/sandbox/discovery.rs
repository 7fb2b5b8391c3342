//! Discovery caches: top backtests, top strategies by live replay, and optimizer parameter sets.
//! Each is computed in the background, published row by row as it goes, and persisted; a request
//! waits at most [`MAX_WAIT`] for a cold cache and otherwise answers with what is ready and
//! `computing: true`.

use super::backtests::{engine_config, params_json, wire_stats};
use super::core::Shared;
use super::data::{self, Timeframe};
use super::engine::Bar;
use super::engine::backtest;
use super::engine::metrics::Stats;
use super::engine::optimizer;
use super::engine::strategies::{self, Params, STRATEGIES, StrategySpec};
use super::settings::Settings;
use super::venue::market::Market;
use crate::api::model::{Discovery, DiscoveryRow};
use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// Longest a request waits on a cold cache.
pub const MAX_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
/// The pairs scanned for top backtests and live replay.
pub const MAIN_PAIRS: [&str; 3] = ["BTC", "ETH", "SOL"];
/// The timeframes scanned for top backtests.
pub const SCAN_TIMEFRAMES: [Timeframe; 3] = [Timeframe::M15, Timeframe::H1, Timeframe::H4];
/// History behind each cached top backtest.
pub const SCAN_DAYS: u32 = 60;
/// Random parameter sets tried per strategy, pair and timeframe for top backtests (besides the
/// defaults).
pub const SCAN_RANDOM: usize = 16;
/// Parameter sets per strategy in an optimizer grid.
pub const GRID_POINTS: usize = 125;
/// Candidates optimized between two looks at [`Cache::stop`]: a multiple of the optimizer's
/// batch per thread, so steps keep both threads busy.
const STOP_CHECK_EVERY: usize = 16;
/// Extra history before a live-replay window so indicators are warmed up when it starts.
pub const WARMUP_DAYS: u32 = 30;
/// The live replay's timeframe.
pub const LIVE_TIMEFRAME: Timeframe = Timeframe::H1;

/// A computation: context, cache key, and a callback that publishes partial rows.
pub type Compute = fn(&Ctx, &str, &dyn Fn(Vec<DiscoveryRow>)) -> Vec<DiscoveryRow>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    TopBacktests,
    TopLive,
    Combos,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::TopBacktests => "top_backtests",
            Kind::TopLive => "top_live",
            Kind::Combos => "combos",
        }
    }

    fn parse(s: &str) -> Option<Kind> {
        [Kind::TopBacktests, Kind::TopLive, Kind::Combos]
            .into_iter()
            .find(|k| k.as_str() == s)
    }

    /// How long a computed answer stays fresh (sandbox time). Live replay follows the feed.
    fn ttl(self) -> Duration {
        match self {
            Kind::TopLive => Duration::minutes(5),
            Kind::TopBacktests | Kind::Combos => Duration::hours(1),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Entry {
    pub rows: Vec<DiscoveryRow>,
    pub computed_at: Option<DateTime<Utc>>,
    /// The rows are a full computation (possibly stale), not a partial one.
    pub complete: bool,
    pub computing: bool,
}

impl Entry {
    pub fn answer(&self, rows: Vec<DiscoveryRow>) -> Discovery {
        Discovery {
            count: rows.len() as u32,
            rows,
            computing: self.computing,
            computed_at: self.computed_at,
            extra: Default::default(),
        }
    }
}

/// What a computation needs, taken from the core once.
#[derive(Clone)]
pub struct Ctx {
    pub market: Arc<Market>,
    pub csv_dir: Option<PathBuf>,
    pub settings: Settings,
    pub now: DateTime<Utc>,
    /// Set when the sandbox stops: a grid over a year of minute bars runs for a minute or more,
    /// and nobody is left to read it.
    stopped: Arc<AtomicBool>,
}

impl Ctx {
    fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    fn bars(&self, coin: &str, tf: Timeframe, days: u32) -> Result<Vec<Bar>, data::CsvError> {
        data::bars(
            &self.market,
            self.csv_dir.as_deref(),
            coin,
            tf,
            days,
            self.now,
        )
    }
}

#[derive(Default)]
pub struct Cache {
    entries: Mutex<HashMap<(Kind, String), Entry>>,
    changed: Notify,
    stopped: Arc<AtomicBool>,
}

impl Cache {
    /// Ends the computations under way at their next step; what they found so far is dropped,
    /// not cached as complete.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    /// Fills the cache from what earlier runs persisted.
    pub fn load(&self, rows: Vec<super::store::CachedAnswer>) {
        let mut entries = self.lock();
        for (kind, key, at, payload) in rows {
            let (Some(kind), Ok(rows)) = (Kind::parse(&kind), serde_json::from_str(&payload))
            else {
                continue;
            };
            entries.insert(
                (kind, key),
                Entry {
                    rows,
                    computed_at: Some(at),
                    complete: true,
                    computing: false,
                },
            );
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(Kind, String), Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish(&self, kind: Kind, key: &str, update: impl FnOnce(&mut Entry)) {
        update(self.lock().entry((kind, key.to_string())).or_default());
        self.changed.notify_waiters();
    }

    fn snapshot(&self, kind: Kind, key: &str) -> Entry {
        self.lock()
            .get(&(kind, key.to_string()))
            .cloned()
            .unwrap_or_default()
    }
}

/// The cached answer for `(kind, key)`: fresh rows at once; otherwise starts (or joins) a
/// computation and waits for it up to [`MAX_WAIT`].
pub async fn get(
    shared: &Arc<Shared>,
    kind: Kind,
    key: String,
    compute: Compute,
) -> Result<Entry, tokio::task::JoinError> {
    let cache = shared.discovery.clone();
    let stopped = cache.stopped.clone();
    let ctx = shared
        .run_raw(move |core, now| Ctx {
            market: core.market.clone(),
            csv_dir: core.settings.csv_dir.clone(),
            settings: core.settings.clone(),
            now,
            stopped,
        })
        .await?;
    let start = {
        let mut entries = cache.lock();
        let entry = entries.entry((kind, key.clone())).or_default();
        let fresh = entry.complete
            && entry
                .computed_at
                .is_some_and(|t| ctx.now - t < kind.ttl() && t <= ctx.now);
        if fresh {
            return Ok(entry.clone());
        }
        let start = !entry.computing;
        entry.computing = true;
        start
    };
    if start {
        let (shared, key) = (shared.clone(), key.clone());
        tokio::spawn(async move { run(shared, kind, key, ctx, compute).await });
    }
    let deadline = tokio::time::Instant::now() + MAX_WAIT;
    loop {
        let notified = cache.changed.notified();
        let entry = cache.snapshot(kind, &key);
        if !entry.computing {
            return Ok(entry);
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            return Ok(cache.snapshot(kind, &key));
        }
    }
}

async fn run(shared: Arc<Shared>, kind: Kind, key: String, ctx: Ctx, compute: Compute) {
    let cache = shared.discovery.clone();
    let (c, k, at) = (cache.clone(), key.clone(), ctx.now);
    let rows = tokio::task::spawn_blocking(move || {
        // Partial rows replace stale ones only when there were none: a stale full answer is
        // more useful than a fresh partial one.
        let publish = |rows: Vec<DiscoveryRow>| {
            c.publish(kind, &k, |e| {
                if !e.complete {
                    e.rows = rows;
                }
            })
        };
        compute(&ctx, &k, &publish)
    })
    .await;
    let rows = match rows {
        // Stopped: nothing is cached as complete; a request still waiting hears at once.
        Ok(_) if cache.stopped.load(Ordering::Relaxed) => {
            cache.publish(kind, &key, |e| e.computing = false);
            return;
        }
        Ok(rows) => rows,
        Err(e) => {
            tracing::error!("discovery {} {key} failed: {e}", kind.as_str());
            cache.publish(kind, &key, |e| e.computing = false);
            return;
        }
    };
    let payload = serde_json::to_string(&rows).unwrap_or_default();
    cache.publish(kind, &key, |e| {
        e.rows = rows;
        e.computed_at = Some(at);
        e.complete = true;
        e.computing = false;
    });
    let (kind_s, k) = (kind.as_str(), key.clone());
    let stored = shared
        .run_raw(move |core, _| core.store.cache_put(kind_s, &k, at, &payload))
        .await;
    if let Ok(Err(e)) = stored {
        tracing::error!("cannot persist discovery {kind_s} {key}: {e}");
    }
}

/// Quality by documented thresholds (README): excellent = return ≥ 10 %, Sharpe ≥ 1, profit
/// factor ≥ 1.5, max drawdown above −15 %, ≥ 10 trades; good = return > 0, profit factor ≥ 1.1,
/// max drawdown above −30 %, ≥ 5 trades; otherwise poor.
pub fn quality(s: &Stats) -> &'static str {
    let pf = if s.profit_factor.is_nan() {
        0.0
    } else {
        s.profit_factor
    };
    let sharpe = if s.sharpe.is_nan() { 0.0 } else { s.sharpe };
    let dd = if s.max_drawdown_pct.is_nan() {
        0.0
    } else {
        s.max_drawdown_pct
    };
    if s.return_pct >= 10.0 && sharpe >= 1.0 && pf >= 1.5 && dd > -15.0 && s.trades >= 10 {
        "excellent"
    } else if s.return_pct > 0.0 && pf >= 1.1 && dd > -30.0 && s.trades >= 5 {
        "good"
    } else {
        "poor"
    }
}

pub fn param_hash(spec: &StrategySpec, params: &Params) -> String {
    let text = serde_json::to_string(&params_json(spec, params)).unwrap_or_default();
    hex::encode(&Sha256::digest(format!("{}:{text}", spec.id).as_bytes())[..4])
}

fn row(
    spec: &StrategySpec,
    params: &Params,
    pair: &str,
    tf: Timeframe,
    days: u32,
    stats: &Stats,
) -> DiscoveryRow {
    let hash = param_hash(spec, params);
    DiscoveryRow {
        id: format!("{}:{pair}:{}:{hash}", spec.id, tf.as_str()),
        strategy_id: spec.id.into(),
        strategy_name: spec.name.into(),
        category: spec.category.as_str().into(),
        pair: format!("{pair}-USD"),
        timeframe: tf.as_str().into(),
        days,
        parameters: params_json(spec, params),
        param_hash: hash,
        quality: quality(stats).into(),
        rank_within_strategy: None,
        stats: wire_stats(stats),
    }
}

/// Combos per strategy that carry their equity curve (a grid has dozens; the best are opened).
const COMBO_CURVES: usize = 3;

/// Points of a row's equity curve: enough for a chart the width of a terminal, few enough that
/// a ranked answer of a hundred rows stays small.
const CURVE_POINTS: usize = 120;

/// A backtest's equity curve as a discovery row carries it (a sandbox extension the console
/// draws in a row's details): `[{t, equity, drawdown}]`, as a backtest's result has it, thinned
/// to [`CURVE_POINTS`] keeping the first and the last point and the deepest trough.
fn curve(result: &backtest::BacktestResult) -> serde_json::Value {
    let n = result.equity.len().min(result.drawdown.len());
    if n == 0 {
        return serde_json::Value::Array(Vec::new());
    }
    let trough = (0..n)
        .min_by(|a, b| result.drawdown[*a].1.total_cmp(&result.drawdown[*b].1))
        .unwrap_or(0);
    let step = n.div_ceil(CURVE_POINTS).max(1);
    let mut keep: Vec<usize> = (0..n).step_by(step).collect();
    keep.extend([trough, n - 1]);
    keep.sort_unstable();
    keep.dedup();
    serde_json::Value::Array(
        keep.into_iter()
            .map(|i| {
                let (t, equity) = result.equity[i];
                json!({"t": t, "equity": equity, "drawdown": result.drawdown[i].1})
            })
            .collect(),
    )
}

/// The equity curve of `params` on `bars`: one more backtest, for the row a ranking shows.
fn curve_of(
    spec: &StrategySpec,
    params: &Params,
    bars: &[Bar],
    cfg: &backtest::Config,
) -> serde_json::Value {
    let mut signals = Vec::with_capacity(bars.len());
    strategies::signals(spec, params, bars, &mut signals);
    curve(&backtest::run(bars, &signals, cfg))
}

fn by_return(a: &DiscoveryRow, b: &DiscoveryRow) -> std::cmp::Ordering {
    let r = |x: &DiscoveryRow| x.stats.total_return.unwrap_or(f64::NEG_INFINITY);
    r(b).total_cmp(&r(a))
}

/// Every strategy on every main pair and scan timeframe, with the best of its defaults and a few
/// random parameter sets.
pub fn compute_top_backtests(
    ctx: &Ctx,
    _key: &str,
    publish: &dyn Fn(Vec<DiscoveryRow>),
) -> Vec<DiscoveryRow> {
    let cfg = engine_config(&ctx.settings);
    let mut rows = Vec::new();
    for pair in MAIN_PAIRS {
        for tf in SCAN_TIMEFRAMES {
            let Ok(bars) = ctx.bars(pair, tf, SCAN_DAYS) else {
                continue;
            };
            if bars.len() < 2 {
                continue;
            }
            for (k, spec) in STRATEGIES.iter().enumerate() {
                if ctx.stopped() {
                    return rows;
                }
                let mut candidates = vec![Params::defaults(spec)];
                candidates.extend(strategies::random(spec, SCAN_RANDOM, 7 + k as u64));
                let results = optimizer::optimize(spec, &bars, &cfg, &candidates, 1);
                let best = results.iter().max_by(|a, b| {
                    let r = |s: &Stats| {
                        if s.return_pct.is_nan() {
                            f64::NEG_INFINITY
                        } else {
                            s.return_pct
                        }
                    };
                    r(&a.1).total_cmp(&r(&b.1))
                });
                if let Some((params, stats)) = best {
                    let mut r = row(spec, params, pair, tf, SCAN_DAYS, stats);
                    r.stats
                        .extra
                        .insert("equity".into(), curve_of(spec, params, &bars, &cfg));
                    r.stats.extra.insert("source".into(), json!("optimized"));
                    r.stats
                        .extra
                        .insert("candidates".into(), json!(candidates.len()));
                    rows.push(r);
                }
            }
            rows.sort_by(by_return);
            publish(rows.clone());
        }
    }
    rows
}

/// Each strategy's signals replayed over the last `window_days` of the feed (1h bars), per main
/// pair. `key` is the window in days.
pub fn compute_top_live(
    ctx: &Ctx,
    key: &str,
    _publish: &dyn Fn(Vec<DiscoveryRow>),
) -> Vec<DiscoveryRow> {
    let window: u32 = key.parse().unwrap_or(7);
    let cfg = engine_config(&ctx.settings);
    let start = (ctx.now - Duration::days(i64::from(window))).timestamp();
    let mut rows = Vec::new();
    for pair in MAIN_PAIRS {
        let Ok(bars) = ctx.bars(pair, LIVE_TIMEFRAME, window + WARMUP_DAYS) else {
            continue;
        };
        let first = bars.partition_point(|b| b.time < start);
        if bars.len() - first < 2 {
            continue;
        }
        let mut signals = Vec::with_capacity(bars.len());
        for spec in STRATEGIES {
            let params = Params::defaults(spec);
            strategies::signals(spec, &params, &bars, &mut signals);
            let result = backtest::run(&bars[first..], &signals[first..], &cfg);
            let mut r = row(spec, &params, pair, LIVE_TIMEFRAME, window, &result.stats);
            r.stats.extra.insert("equity".into(), curve(&result));
            // The latest target the strategy set inside the window: what it says now.
            let last = signals[first..]
                .iter()
                .zip(&bars[first..])
                .rev()
                .find(|(s, _)| **s != 0)
                .map(|(s, b)| {
                    json!({"time": chrono::DateTime::from_timestamp(b.time, 0),
                           "direction": if *s > 0 { "long" } else { "short" }})
                });
            r.stats
                .extra
                .insert("lastSignal".into(), last.unwrap_or(serde_json::Value::Null));
            r.stats.extra.insert(
                "currentTarget".into(),
                json!(match signals.last() {
                    Some(1) => "long",
                    Some(-1) => "short",
                    _ => "flat",
                }),
            );
            rows.push(r);
        }
    }
    rows.sort_by(by_return);
    rows
}

/// A grid over each strategy's parameter space on one pair, timeframe and history; `key` is
/// `PAIR:TF:DAYS`. Rows carry their rank within their strategy.
pub fn compute_combos(
    ctx: &Ctx,
    key: &str,
    publish: &dyn Fn(Vec<DiscoveryRow>),
) -> Vec<DiscoveryRow> {
    let mut parts = key.split(':');
    let (Some(coin), Some(tf), Some(days)) = (
        parts.next(),
        parts.next().and_then(Timeframe::parse),
        parts.next().and_then(|d| d.parse::<u32>().ok()),
    ) else {
        return Vec::new();
    };
    let Ok(bars) = ctx.bars(coin, tf, days) else {
        return Vec::new();
    };
    if bars.len() < 2 {
        return Vec::new();
    }
    let cfg = engine_config(&ctx.settings);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(2);
    let mut rows = Vec::new();
    for spec in STRATEGIES {
        let grid = strategies::grid(spec, GRID_POINTS);
        // In steps, so that a stopped sandbox is noticed within seconds even on a year of 1m bars.
        let mut results = Vec::with_capacity(grid.len());
        for step in grid.chunks(STOP_CHECK_EVERY) {
            if ctx.stopped() {
                return rows;
            }
            results.extend(optimizer::optimize(spec, &bars, &cfg, step, threads));
        }
        let mut strategy_rows: Vec<DiscoveryRow> = results
            .iter()
            .map(|(p, s)| row(spec, p, coin, tf, days, s))
            .collect();
        strategy_rows.sort_by(by_return);
        for (i, r) in strategy_rows.iter_mut().enumerate() {
            r.rank_within_strategy = Some(i as u32 + 1);
        }
        // The curves of each strategy's best few: the rows a person opens.
        for r in strategy_rows.iter_mut().take(COMBO_CURVES) {
            if let Some((p, _)) = results
                .iter()
                .find(|(p, _)| param_hash(spec, p) == r.param_hash)
            {
                r.stats
                    .extra
                    .insert("equity".into(), curve_of(spec, p, &bars, &cfg));
            }
        }
        rows.extend(strategy_rows);
        publish(rows.clone());
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(stopped: bool) -> Ctx {
        Ctx {
            market: Arc::new(Market::new(42)),
            csv_dir: None,
            settings: Settings::default(),
            now: Utc::now(),
            stopped: Arc::new(AtomicBool::new(stopped)),
        }
    }

    #[test]
    fn a_stopped_sandbox_computes_no_grid() {
        let running = ctx(false);
        let key = "BTC:1h:20";
        let rows = compute_combos(&running, key, &|_| {});
        assert_eq!(rows.len(), STRATEGIES.len() * GRID_POINTS);
        let stopped = ctx(true);
        let published = Mutex::new(0);
        let rows = compute_combos(&stopped, key, &|_| *published.lock().unwrap() += 1);
        assert!(rows.is_empty(), "{} rows", rows.len());
        assert_eq!(*published.lock().unwrap(), 0);
        assert!(compute_top_backtests(&stopped, "scan", &|_| {}).is_empty());
    }
}
