//! Parallel parameter search.
//!
//! Candidates are backtested on `threads` scoped workers that pull small
//! batches from a shared counter (robust when the cores are shared with other
//! work, unlike fixed chunks). Each worker owns its signal, indicator and
//! equity buffers, so after the first candidate nothing is allocated per bar
//! and only the (small) trade list grows per candidate. What every candidate
//! reads the same way (the closes in a column, the bars' days) is computed once.
//!
//! For the moving-average crossovers, each period's average is computed once
//! per search and shared by every candidate that uses it (10,000 SMA
//! crossings use about 400 distinct periods), so a candidate's signals are a
//! comparison of two precomputed series. The series are kept rounded to `f32`
//! with the average's state every [`CROSS_CHUNK`] bars: a candidate reads half
//! the bytes (the slow average comes from the shared cache, or memory, for
//! nearly every candidate), and the rare chunk the rounded values cannot order
//! is computed again exactly from its starting state.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::Bar;
use super::backtest::{Config, Prepared, Workspace};
use super::indicators::Running;
use super::metrics::Stats;
use super::strategies::{
    Average, Averager, CROSS_CHUNK, Params, SignalScratch, StrategySpec, cross_series, crossover,
    signals_core,
};

/// Candidates handed to a worker at a time: big enough to make the atomic
/// negligible, small enough to balance load at the tail.
const BATCH: usize = 8;

/// Upper bound on worker threads, so a request cannot make us spawn thousands.
pub const MAX_THREADS: usize = 64;

/// Most bytes of precomputed averages one search holds (about 1,700 periods of
/// 30 days of five-minute bars); past it, each candidate streams its own.
const AVERAGES_BUDGET_BYTES: usize = 64 << 20;

/// Each distinct period's moving average over the bars, by period: rounded to
/// `f32`, with the state the average had before each chunk of bars.
struct Averages {
    periods: Vec<usize>,
    averagers: Vec<Averager>,
    /// Bars per period.
    len: usize,
    /// `len` rounded values a period.
    coarse: Vec<f32>,
    /// `len.div_ceil(CROSS_CHUNK)` states a period.
    resume: Vec<Running>,
}

impl Averages {
    /// The averages every candidate needs, when they are all crossovers of one
    /// kind and fit the budget; computed on up to `threads` threads.
    fn new(
        spec: &StrategySpec,
        closes: &[f64],
        candidates: &[Params],
        threads: usize,
    ) -> Option<Averages> {
        let mut kind = None;
        let mut periods = Vec::with_capacity(2 * candidates.len());
        for p in candidates {
            let (k, fast, slow) = crossover(spec, p)?;
            if kind.is_some_and(|kind: Average| kind != k) {
                return None;
            }
            kind = Some(k);
            periods.extend([fast, slow]);
        }
        let kind = kind?;
        periods.sort_unstable();
        periods.dedup();
        let len = closes.len();
        let chunks = len.div_ceil(CROSS_CHUNK);
        let per_period = len * std::mem::size_of::<f32>() + chunks * size_of::<Running>();
        if periods.len().saturating_mul(per_period) > AVERAGES_BUDGET_BYTES || len == 0 {
            return None;
        }
        let averagers: Vec<Averager> = periods
            .iter()
            .map(|&p| Averager::new(kind, len, p))
            .collect();
        let mut coarse = vec![0.0f32; periods.len() * len];
        let mut resume = vec![Running::default(); periods.len() * chunks];
        let fill = |avgs: &[Averager], coarse: &mut [f32], resume: &mut [Running]| {
            for ((avg, values), states) in avgs
                .iter()
                .zip(coarse.chunks_mut(len))
                .zip(resume.chunks_mut(chunks))
            {
                let mut run = Running::default();
                for (c, (chunk, state)) in values.chunks_mut(CROSS_CHUNK).zip(states).enumerate() {
                    *state = run;
                    avg.fill(&mut run, closes, c * CROSS_CHUNK, chunk, |v| v as f32);
                }
            }
        };
        let per_thread = periods.len().div_ceil(threads.max(1));
        if threads <= 1 || per_thread == periods.len() {
            fill(&averagers, &mut coarse, &mut resume);
        } else {
            std::thread::scope(|s| {
                for ((avgs, coarse), resume) in averagers
                    .chunks(per_thread)
                    .zip(coarse.chunks_mut(per_thread * len))
                    .zip(resume.chunks_mut(per_thread * chunks))
                {
                    s.spawn(move || fill(avgs, coarse, resume));
                }
            });
        }
        Some(Averages {
            periods,
            averagers,
            len,
            coarse,
            resume,
        })
    }

    /// The crossover signals of the averages of periods `fast` and `slow`, as
    /// [`signals_core`] makes them from the closes.
    fn cross(&self, fast: usize, slow: usize, closes: &[f64], out: &mut Vec<i8>) {
        let (Ok(f), Ok(s)) = (
            self.periods.binary_search(&fast),
            self.periods.binary_search(&slow),
        ) else {
            // Every candidate's periods are here; should one not be, no signal.
            out.clear();
            out.resize(self.len, 0);
            return;
        };
        let chunks = self.len.div_ceil(CROSS_CHUNK);
        let values = |p: usize| &self.coarse[p * self.len..(p + 1) * self.len];
        let states = |p: usize| &self.resume[p * chunks..(p + 1) * chunks];
        let (fast_states, slow_states) = (states(f), states(s));
        let (fast_avg, slow_avg) = (&self.averagers[f], &self.averagers[s]);
        let exact = |from: usize, out: &mut [i8]| {
            let mut fast = [0.0; CROSS_CHUNK];
            let mut slow = [0.0; CROSS_CHUNK];
            let (fast, slow) = (&mut fast[..out.len()], &mut slow[..out.len()]);
            let c = from / CROSS_CHUNK;
            fast_avg.fill(&mut { fast_states[c] }, closes, from, fast, |v| v);
            slow_avg.fill(&mut { slow_states[c] }, closes, from, slow, |v| v);
            for ((d, &f), &s) in out.iter_mut().zip(&*fast).zip(&*slow) {
                *d = (f > s) as i8 - (f < s) as i8;
            }
        };
        cross_series(values(f), values(s), exact, out);
    }
}

/// Backtest every candidate and return `(params, stats)` in candidate order.
/// `threads` is clamped to `1..=min(candidates.len(), MAX_THREADS)`.
pub fn optimize(
    spec: &StrategySpec,
    bars: &[Bar],
    cfg: &Config,
    candidates: &[Params],
    threads: usize,
) -> Vec<(Params, Stats)> {
    if candidates.is_empty() {
        return Vec::new();
    }
    let threads = threads.clamp(1, candidates.len().min(MAX_THREADS));
    let prepared = Prepared::new(bars);
    let closes = prepared.closes();
    let averages = Averages::new(spec, closes, candidates, threads);
    let next = AtomicUsize::new(0);
    let work = || {
        let mut scratch = SignalScratch::default();
        let mut sig = Vec::new();
        let mut ws = Workspace::default();
        let mut done = Vec::new();
        loop {
            let start = next.fetch_add(BATCH, Ordering::Relaxed);
            if start >= candidates.len() {
                break;
            }
            let end = (start + BATCH).min(candidates.len());
            for (i, p) in candidates[start..end].iter().enumerate() {
                match (&averages, crossover(spec, p)) {
                    (Some(avg), Some((_, fast, slow))) => avg.cross(fast, slow, closes, &mut sig),
                    _ => signals_core(spec, p, bars, closes, &mut scratch, &mut sig),
                }
                done.push((start + i, ws.stats_with(bars, &prepared, &sig, cfg)));
            }
        }
        done
    };

    let mut slots: Vec<Option<Stats>> = vec![None; candidates.len()];
    let parts: Vec<Vec<(usize, Stats)>> = if threads == 1 {
        vec![work()]
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads).map(|_| s.spawn(work)).collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        })
    };
    for (i, st) in parts.into_iter().flatten() {
        slots[i] = Some(st);
    }
    candidates
        .iter()
        .zip(slots)
        .map(|(p, st)| (*p, st.unwrap_or_else(Stats::empty)))
        .collect()
}

/// Objective for [`rank`]. Every objective is "higher is better" on the
/// corresponding [`Stats`] field; for `MaxDrawdown` that means the shallowest
/// drawdown first, since drawdowns are reported as negative percentages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RankBy {
    Return,
    ReturnAnn,
    Sharpe,
    Sortino,
    Calmar,
    MaxDrawdown,
    WinRate,
    ProfitFactor,
    Expectancy,
    Sqn,
}

impl RankBy {
    pub const ALL: [RankBy; 10] = [
        RankBy::Return,
        RankBy::ReturnAnn,
        RankBy::Sharpe,
        RankBy::Sortino,
        RankBy::Calmar,
        RankBy::MaxDrawdown,
        RankBy::WinRate,
        RankBy::ProfitFactor,
        RankBy::Expectancy,
        RankBy::Sqn,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RankBy::Return => "return",
            RankBy::ReturnAnn => "return_ann",
            RankBy::Sharpe => "sharpe",
            RankBy::Sortino => "sortino",
            RankBy::Calmar => "calmar",
            RankBy::MaxDrawdown => "max_drawdown",
            RankBy::WinRate => "win_rate",
            RankBy::ProfitFactor => "profit_factor",
            RankBy::Expectancy => "expectancy",
            RankBy::Sqn => "sqn",
        }
    }

    /// Inverse of [`RankBy::as_str`], for request parsing.
    pub fn parse(s: &str) -> Option<RankBy> {
        RankBy::ALL.into_iter().find(|r| r.as_str() == s)
    }

    fn key(self, s: &Stats) -> f64 {
        match self {
            RankBy::Return => s.return_pct,
            RankBy::ReturnAnn => s.return_ann_pct,
            RankBy::Sharpe => s.sharpe,
            RankBy::Sortino => s.sortino,
            RankBy::Calmar => s.calmar,
            RankBy::MaxDrawdown => s.max_drawdown_pct,
            RankBy::WinRate => s.win_rate_pct,
            RankBy::ProfitFactor => s.profit_factor,
            RankBy::Expectancy => s.expectancy_pct,
            RankBy::Sqn => s.sqn,
        }
    }
}

/// Indices into `results`, best first. NaN objectives (undefined, e.g. no
/// trades) sort last; ties keep candidate order so rankings are reproducible.
pub fn rank(results: &[(Params, Stats)], by: RankBy) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..results.len()).collect();
    // `total_cmp` on the negated key gives descending order; mapping NaN to
    // +inf after negation (i.e. -inf before) sends it to the end.
    let key = |i: usize| {
        let k = by.key(&results[i].1);
        if k.is_nan() { f64::INFINITY } else { -k }
    };
    idx.sort_by(|&a, &b| key(a).total_cmp(&key(b)));
    idx
}

#[cfg(test)]
mod tests {
    use super::super::backtest::run;
    use super::super::strategies::{grid, random, signals, strategy};
    use super::*;

    fn series(n: usize) -> Vec<Bar> {
        let mut x = 100.0f64;
        let mut s = 7u64;
        (0..n)
            .map(|i| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let u = (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                let open = x;
                x *= 1.0 + 0.004 * u + 0.0005 * (i as f64 / 50.0).sin();
                Bar {
                    time: 1_700_000_000 + i as i64 * 300,
                    open,
                    high: open.max(x) * 1.001,
                    low: open.min(x) * 0.999,
                    close: x,
                    volume: 1.0,
                }
            })
            .collect()
    }

    #[test]
    fn parallel_results_match_single_runs_in_candidate_order() {
        let bars = series(3000);
        let cfg = Config {
            fee_rate: 0.0005,
            sl_pct: Some(2.0),
            ..Config::default()
        };
        let spec = strategy("ema_cross").unwrap();
        let cands = random(spec, 37, 9);
        let par = optimize(spec, &bars, &cfg, &cands, 3);
        let seq = optimize(spec, &bars, &cfg, &cands, 1);
        assert_eq!(par.len(), cands.len());
        let mut sig = Vec::new();
        for ((p, st), q) in par.iter().zip(&cands) {
            assert_eq!(p, q);
            signals(spec, q, &bars, &mut sig);
            let direct = run(&bars, &sig, &cfg).stats;
            // NaN != NaN, so compare through Debug formatting.
            assert_eq!(format!("{st:?}"), format!("{direct:?}"));
        }
        assert_eq!(format!("{par:?}"), format!("{seq:?}"));
        assert!(optimize(spec, &bars, &cfg, &[], 2).is_empty());
    }

    /// The crossovers' shared averages and the statistics-only fill loop give
    /// what a plain backtest of each candidate gives: a sample of the grid, with
    /// and without shorts, fees and slippage, on bars with a gap. The plain run
    /// has stops that never fill, so it walks every bar (no skipped runs).
    #[test]
    fn crossover_grids_match_a_plain_run_per_candidate() {
        let mut bars = series(4000);
        for b in &mut bars[2500..] {
            b.time += 3 * 86_400 + 7;
        }
        let mut sig = Vec::new();
        for id in ["sma_cross", "ema_cross"] {
            let spec = strategy(id).unwrap();
            let mut cands = grid(spec, 300);
            cands.extend(random(spec, 40, 5));
            for cfg in [
                Config::default(),
                Config {
                    fee_rate: 0.001,
                    slippage_bps: 2.0,
                    allow_short: false,
                    ..Config::default()
                },
            ] {
                let fast = optimize(spec, &bars, &cfg, &cands, 2);
                let mut trades = 0;
                for ((p, st), q) in fast.iter().zip(&cands) {
                    assert_eq!(p, q);
                    signals(spec, q, &bars, &mut sig);
                    let every_bar = Config {
                        sl_pct: Some(99.0),
                        tp_pct: Some(1e9),
                        ..cfg
                    };
                    let plain = run(&bars, &sig, &every_bar).stats;
                    assert_eq!(format!("{st:?}"), format!("{plain:?}"), "{id} {q:?}");
                    trades += st.trades;
                }
                assert!(trades > 1000, "{id}: the sample trades ({trades})");
            }
        }
    }

    /// Averages that `f32` cannot tell apart (a price that moves by less than its rounding
    /// step, and flat stretches where the averages tie exactly): the crossings come from the
    /// exact averages, replayed from their saved state, as a plain run computes them.
    #[test]
    fn crossovers_of_averages_equal_in_f32_are_exact() {
        let mut s = 11u64;
        let bars: Vec<Bar> = (0..3000)
            .map(|i| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let close = if (1000..1400).contains(&i) {
                    50_000.0
                } else {
                    50_000.0 + ((s >> 33) % 9) as f64 * 1e-9
                };
                Bar {
                    time: 1_700_000_000 + i as i64 * 300,
                    open: close,
                    high: close,
                    low: close,
                    close,
                    volume: 1.0,
                }
            })
            .collect();
        let mut sig = Vec::new();
        for id in ["sma_cross", "ema_cross"] {
            let spec = strategy(id).unwrap();
            let cands = grid(spec, 150);
            let cfg = Config::default();
            let mut trades = 0;
            for ((p, st), q) in optimize(spec, &bars, &cfg, &cands, 2).iter().zip(&cands) {
                assert_eq!(p, q);
                signals(spec, q, &bars, &mut sig);
                let plain = run(&bars, &sig, &cfg).stats;
                assert_eq!(format!("{st:?}"), format!("{plain:?}"), "{id} {q:?}");
                trades += st.trades;
            }
            assert!(trades > 1000, "{id}: the sample trades ({trades})");
        }
    }

    #[test]
    fn rank_orders_best_first_with_nan_last() {
        let spec = strategy("sma_cross").unwrap();
        let p = grid(spec, 4);
        let mk = |ret: f64, dd: f64| Stats {
            return_pct: ret,
            max_drawdown_pct: dd,
            ..Stats::empty()
        };
        let results = vec![
            (p[0], mk(5.0, -10.0)),
            (p[1], mk(f64::NAN, f64::NAN)),
            (p[2], mk(12.0, -30.0)),
            (p[3], mk(5.0, -2.0)),
        ];
        assert_eq!(rank(&results, RankBy::Return), vec![2, 0, 3, 1]);
        assert_eq!(rank(&results, RankBy::MaxDrawdown), vec![3, 0, 2, 1]);
        assert!(rank(&results, RankBy::Sharpe).len() == 4);
        for r in RankBy::ALL {
            assert_eq!(RankBy::parse(r.as_str()), Some(r));
        }
        assert_eq!(RankBy::parse("bogus"), None);
    }
}
