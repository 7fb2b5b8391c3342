//! Backtest statistics, defined as in backtesting.py's `compute_stats`
//! (`backtesting/_stats.py`), computed in one streaming pass over the per-bar
//! equity curve plus one over the trades, without allocating.
//!
//! Notation: `E_i` equity at the close of bar `i`, `P_i = max(E_0..=E_i)`,
//! drawdown `dd_i = 1 - E_i / P_i`. Percentages are reported as percent
//! (`12.5` = 12.5 %); durations in days (fractional).
//!
//! **Daily returns.** Like backtesting.py's `equity.resample('D').last()`, the
//! curve is sampled at the last bar of each UTC calendar day that has bars;
//! `r_d = E_d / E_{d-1} - 1` for consecutive sampled days. The first day has no
//! return and is dropped (backtesting.py ≥ 0.6: `pct_change().dropna()`), so the
//! geometric mean runs over the `D - 1` returns. The cross-check script in
//! benches/ compares every statistic with backtesting.py on identical bars.
//!
//! **Annualisation.** `A = 365` when more than `0.6 · 2/7` of the bars fall on a
//! Saturday or Sunday (24/7 crypto data), else `A = 252` — backtesting.py's rule.
//!
//! **Undefined values** are `f64::NAN` (no trades, zero variance, a single
//! day, ...). The HTTP layer writes NaN as JSON `null`. Where backtesting.py
//! would divide by zero and produce ±inf (Sortino with no losing day), we also
//! return NaN so every field stays JSON-representable.

use super::Bar;
use super::backtest::Trade;

const DAY: i64 = 86_400;

/// Summary statistics of one backtest. Field docs give the exact formula.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// Time of the first bar (unix seconds).
    pub start: i64,
    /// Time of the last bar.
    pub end: i64,
    /// `(end - start) / 86400`.
    pub duration_days: f64,
    /// Share of bars during which a position was held at some point, entry
    /// and exit bars included (backtesting.py counts bars, not wall time).
    pub exposure_time_pct: f64,
    /// `E_last`.
    pub equity_final: f64,
    /// `max E_i`.
    pub equity_peak: f64,
    /// `(E_last - E_0) / E_0 · 100`.
    pub return_pct: f64,
    /// `(C_last - C_0) / C_0 · 100` on closes (long-only benchmark).
    pub buy_hold_return_pct: f64,
    /// `((1 + g)^A - 1) · 100`, `g = exp(Σ ln(1 + r_d) / (D - 1)) - 1` the geometric
    /// mean daily return (`g = 0` if any `1 + r_d ≤ 0`).
    pub return_ann_pct: f64,
    /// `sqrt((s² + (1+g)²)^A - (1+g)^(2A)) · 100`, `s²` the sample variance
    /// (ddof 1) of the daily returns: the variance of a compounded product of
    /// `A` i.i.d. daily returns.
    pub volatility_ann_pct: f64,
    /// `return_ann_pct / volatility_ann_pct` (risk-free rate 0).
    pub sharpe: f64,
    /// `((1+g)^A - 1) / (sqrt(mean(min(r_d, 0)²)) · sqrt(A))`.
    pub sortino: f64,
    /// `((1+g)^A - 1) / max(dd)`.
    pub calmar: f64,
    /// `-max(dd) · 100` (negative, like backtesting.py).
    pub max_drawdown_pct: f64,
    /// `-mean(peak dd of each drawdown period) · 100`. A drawdown period runs
    /// between consecutive bars with `dd = 0` that are more than one bar apart,
    /// the last one ending at the final bar.
    pub avg_drawdown_pct: f64,
    /// Longest drawdown period, `(t_end - t_start) / 86400`.
    pub max_drawdown_duration_days: f64,
    /// Mean drawdown period length in days.
    pub avg_drawdown_duration_days: f64,
    /// Number of closed trades.
    pub trades: usize,
    /// `count(pnl > 0) / trades · 100`.
    pub win_rate_pct: f64,
    /// `max(return_pct)` over trades.
    pub best_trade_pct: f64,
    /// `min(return_pct)` over trades.
    pub worst_trade_pct: f64,
    /// Geometric mean trade return: `(exp(mean(ln(1 + R))) - 1) · 100` with
    /// `R = return_pct / 100` (0 if any `1 + R ≤ 0`), as backtesting.py.
    pub avg_trade_pct: f64,
    /// `max(exit_time - entry_time) / 86400`.
    pub max_trade_duration_days: f64,
    /// `mean(exit_time - entry_time) / 86400`.
    pub avg_trade_duration_days: f64,
    /// `Σ R⁺ / |Σ R⁻|` over trade *returns* (backtesting.py uses returns, not
    /// PnL); NaN without losing trades.
    pub profit_factor: f64,
    /// `mean(return_pct)` — the arithmetic mean trade return.
    pub expectancy_pct: f64,
    /// `sqrt(trades) · mean(pnl) / std(pnl)` with ddof 1 (Van Tharp's SQN).
    pub sqn: f64,
}

impl Stats {
    /// Statistics of an empty run: everything undefined.
    pub fn empty() -> Stats {
        let nan = f64::NAN;
        Stats {
            start: 0,
            end: 0,
            duration_days: nan,
            exposure_time_pct: nan,
            equity_final: nan,
            equity_peak: nan,
            return_pct: nan,
            buy_hold_return_pct: nan,
            return_ann_pct: nan,
            volatility_ann_pct: nan,
            sharpe: nan,
            sortino: nan,
            calmar: nan,
            max_drawdown_pct: nan,
            avg_drawdown_pct: nan,
            max_drawdown_duration_days: nan,
            avg_drawdown_duration_days: nan,
            trades: 0,
            win_rate_pct: nan,
            best_trade_pct: nan,
            worst_trade_pct: nan,
            avg_trade_pct: nan,
            max_trade_duration_days: nan,
            avg_trade_duration_days: nan,
            profit_factor: nan,
            expectancy_pct: nan,
            sqn: nan,
        }
    }
}

/// The deepest drawdown's endpoints, which the equity downsampler keeps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Deepest {
    pub peak_idx: usize,
    pub peak_time: i64,
    pub peak_equity: f64,
    pub trough_idx: usize,
    pub trough_time: i64,
    pub trough_equity: f64,
}

/// Stats plus the deepest drawdown's location.
pub(super) struct Summary {
    pub stats: Stats,
    pub deepest: Option<Deepest>,
}

/// Compute [`Stats`] from bars (times and closes), the per-bar equity curve
/// (same length; extra elements of either are ignored), the closed trades and
/// the number of bars with exposure. Bars must be in ascending time order.
pub fn compute(bars: &[Bar], equity: &[f64], trades: &[Trade], exposure_bars: usize) -> Stats {
    let mut curve = Curve::new();
    for (b, &e) in bars.iter().zip(equity) {
        curve.push(b.time, e);
    }
    let n = bars.len().min(equity.len());
    curve.finish(&bars[..n], trades, exposure_bars).stats
}

/// Index of the first value equal to `x`, a chunk of compares at a time.
fn first_equal(values: &[f64], x: f64) -> Option<usize> {
    const CHUNK: usize = 8;
    let mut chunks = values.chunks_exact(CHUNK);
    let mut at = 0;
    for chunk in &mut chunks {
        if chunk.iter().fold(false, |any, &v| any | (v == x)) {
            return chunk.iter().position(|&v| v == x).map(|k| at + k);
        }
        at += CHUNK;
    }
    chunks
        .remainder()
        .iter()
        .position(|&v| v == x)
        .map(|k| at + k)
}

/// Index of the first value at or above `x` (NaNs never are), a chunk at a time through
/// the chunk's largest values; the next value is looked at alone first, since new highs
/// come in runs.
fn first_at_least(values: &[f64], x: f64) -> Option<usize> {
    const CHUNK: usize = 8;
    if values.first().is_some_and(|&v| v >= x) {
        return Some(0);
    }
    let mut chunks = values.chunks_exact(CHUNK);
    let mut at = 0;
    for chunk in &mut chunks {
        // Lanes that do not wait on each other; a NaN never replaces a lane.
        let mut lanes = [f64::NEG_INFINITY; 4];
        for pair in chunk.chunks_exact(4) {
            for (m, &v) in lanes.iter_mut().zip(pair) {
                *m = if v > *m { v } else { *m };
            }
        }
        if lanes.iter().fold(false, |any, &m| any | (m >= x)) {
            return chunk.iter().position(|&v| v >= x).map(|k| at + k);
        }
        at += CHUNK;
    }
    chunks
        .remainder()
        .iter()
        .position(|&v| v >= x)
        .map(|k| at + k)
}

/// Bars a [`Blocks`] block holds.
const BLOCK: usize = 32;

/// The lowest and highest close of every whole block of [`BLOCK`] bars. Through bars where a
/// position is held unchanged, equity is `cash + qty · (close - entry)`, which never reverses
/// the order of two closes (each operation rounds a monotone function of its input), so a
/// block's highest and lowest equity are those at its extreme closes: a block whose highest
/// equity is below the peak sets no new high, and only its lowest equity can matter.
#[derive(Debug, Clone, Default)]
pub(super) struct Blocks {
    /// `(lowest, highest)` close of each block, or `None` where a close is not a plain
    /// finite price (NaN or beyond 1e300, where the arithmetic could make a NaN).
    range: Vec<Option<(f64, f64)>>,
}

impl Blocks {
    pub(super) fn new(closes: &[f64]) -> Blocks {
        let plain = |c: f64| c.abs() <= 1e300;
        let range = closes
            .chunks_exact(BLOCK)
            .map(|block| {
                block.iter().all(|&c| plain(c)).then(|| {
                    block
                        .iter()
                        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &c| {
                            (if c < lo { c } else { lo }, if c > hi { c } else { hi })
                        })
                })
            })
            .collect();
        Blocks { range }
    }
}

/// Bars `from..to` through which the book stayed as it is: each one's equity is
/// `cash + qty · (close - entry_px)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Held {
    pub from: usize,
    pub to: usize,
    pub cash: f64,
    pub qty: f64,
    pub entry_px: f64,
}

/// The end of the UTC day holding `time` (saturating) and whether that day is a weekend day.
fn day_of(time: i64) -> (i64, bool) {
    let d = time.div_euclid(DAY);
    ((d + 1).saturating_mul(DAY), is_weekend(d))
}

/// Where the days of a run of bars begin, as a curve walking them finds them: what
/// [`Curve::push_held`] needs instead of every bar's time. Statistics-only runs over the same
/// bars (an optimizer's candidates) share one.
#[derive(Debug, Clone, Default)]
pub(super) struct Days {
    /// The curve's `day_end` before the bars: `i64::MIN` for a fresh curve.
    from: i64,
    /// Bars walked.
    len: usize,
    /// `(first bar, day end, weekend)` of each day begun by these bars.
    starts: Vec<(usize, i64, bool)>,
}

impl Days {
    /// The days of `bars` pushed into a fresh curve ([`Curve::new`]).
    pub(super) fn new(bars: &[Bar]) -> Days {
        Days::after(bars, i64::MIN)
    }

    fn after(bars: &[Bar], from: i64) -> Days {
        let mut day_end = from;
        let mut starts = Vec::new();
        for (k, b) in bars.iter().enumerate() {
            if b.time >= day_end {
                let (end, weekend) = day_of(b.time);
                starts.push((k, end, weekend));
                day_end = end;
            }
        }
        Days {
            from,
            len: bars.len(),
            starts,
        }
    }
}

/// `x / y`, NaN when `y` is zero (backtesting.py's `x / (y or np.nan)`).
fn div_or_nan(x: f64, y: f64) -> f64 {
    if y == 0.0 { f64::NAN } else { x / y }
}

/// Days since the epoch → weekday with Monday = 0 (1970-01-01 was a Thursday).
fn is_weekend(day: i64) -> bool {
    (day + 3).rem_euclid(7) >= 5
}

/// Streaming daily-return accumulator (Welford for the variance).
#[derive(Default)]
struct DailyReturns {
    days: usize,
    prev_close: f64,
    n: usize,
    mean: f64,
    m2: f64,
    log_sum: f64,
    any_nonpositive: bool,
    downside_sq: f64,
}

impl DailyReturns {
    /// Close out a day whose last equity was `e`.
    fn day(&mut self, e: f64) {
        self.days += 1;
        if self.days > 1 {
            let r = e / self.prev_close - 1.0;
            self.n += 1;
            let delta = r - self.mean;
            self.mean += delta / self.n as f64;
            self.m2 += delta * (r - self.mean);
            if 1.0 + r > 0.0 {
                self.log_sum += (1.0 + r).ln();
            } else {
                self.any_nonpositive = true;
            }
            self.downside_sq += r.min(0.0) * r.min(0.0);
        }
        self.prev_close = e;
    }
}

/// One-pass accumulator over the equity curve, fed bar by bar from the
/// backtest loop so no per-bar equity buffer is ever written. Everything the
/// curve statistics need is O(1) state.
///
/// Drawdown periods: within a period the running peak is constant, so the
/// period's deepest drawdown is `1 - min(E) / peak` and no per-bar division is
/// needed; a period is closed whenever equity is back at its peak.
pub(super) struct Curve {
    count: usize,
    first_equity: f64,
    last_equity: f64,
    // Running peak = the last bar with zero drawdown.
    peak: f64,
    peak_idx: usize,
    peak_time: i64,
    // Lowest equity since that peak.
    seg_min: f64,
    seg_min_idx: usize,
    seg_min_time: i64,
    // Completed drawdown periods.
    periods: usize,
    sum_peak_dd: f64,
    sum_dur: i64,
    max_dur: i64,
    max_dd: f64,
    deepest: Option<Deepest>,
    // Daily resampling.
    daily: DailyReturns,
    day_end: i64,
    day_is_weekend: bool,
    day_last: f64,
    weekend_bars: usize,
}

/// The peaks' walk of [`Curve::push_held`] over one buffer of equity (the bar at index `k`
/// is the curve's bar `base + k`), with the running peak in locals.
struct Walk<'a> {
    bars: &'a [Bar],
    equity: &'a [f64],
    base: usize,
    peak: f64,
    peak_idx: usize,
    peak_time: i64,
    /// The block the curve's `seg_min` was taken from, as a value only: its bar is looked up
    /// when needed ([`Walk::settle`]).
    lowest_block: Option<usize>,
}

impl Walk<'_> {
    /// Bars `from..to`, the bars before `from` walked.
    fn bars(&mut self, curve: &mut Curve, mut from: usize, to: usize) {
        while let Some(k) = first_at_least(&self.equity[from..to], self.peak).map(|j| from + j) {
            let (idx, time) = (self.base + k, self.bars[k].time);
            if idx > self.peak_idx + 1 {
                self.lowest_in(curve, from, k);
                self.settle(curve);
                (curve.peak, curve.peak_idx, curve.peak_time) =
                    (self.peak, self.peak_idx, self.peak_time);
                curve.close_period(time, 1.0 - curve.seg_min / self.peak);
            }
            self.peak = self.equity[k];
            self.peak_idx = idx;
            self.peak_time = time;
            curve.seg_min = f64::INFINITY;
            self.lowest_block = None;
            from = k + 1;
        }
        self.lowest_in(curve, from, to);
    }

    fn lowest_in(&mut self, curve: &mut Curve, from: usize, to: usize) {
        if curve.lowest_in(
            &self.bars[from..to],
            &self.equity[from..to],
            self.base + from,
        ) {
            self.lowest_block = None;
        }
    }

    /// The curve's `seg_min` as the bar that holds it: the first bar of its block equal to it.
    fn settle(&mut self, curve: &mut Curve) {
        if let Some(from) = self.lowest_block.take() {
            let block = &self.equity[from..from + BLOCK];
            if let Some(k) = first_equal(block, curve.seg_min).map(|k| from + k) {
                curve.seg_min = self.equity[k];
                curve.seg_min_idx = self.base + k;
                curve.seg_min_time = self.bars[k].time;
            }
        }
    }
}

impl Curve {
    pub fn new() -> Curve {
        Curve {
            count: 0,
            first_equity: f64::NAN,
            last_equity: f64::NAN,
            peak: f64::NEG_INFINITY,
            peak_idx: 0,
            peak_time: 0,
            seg_min: f64::INFINITY,
            seg_min_idx: 0,
            seg_min_time: 0,
            periods: 0,
            sum_peak_dd: 0.0,
            sum_dur: 0,
            max_dur: 0,
            max_dd: 0.0,
            deepest: None,
            daily: DailyReturns::default(),
            day_end: i64::MIN,
            day_is_weekend: false,
            day_last: f64::NAN,
            weekend_bars: 0,
        }
    }

    /// The running maximum of the equity pushed so far.
    #[inline]
    pub fn running_peak(&self) -> f64 {
        self.peak
    }

    /// Feed the equity `e` at the close of the next bar (opened at `time`).
    #[inline]
    pub fn push(&mut self, time: i64, e: f64) {
        let i = self.count;
        if i == 0 {
            self.first_equity = e;
        }
        if time >= self.day_end {
            self.new_day(time);
        }
        self.day_last = e;
        self.weekend_bars += self.day_is_weekend as usize;
        if e >= self.peak {
            if i > self.peak_idx + 1 {
                self.close_period(time, 1.0 - self.seg_min / self.peak);
            }
            self.peak = e;
            self.peak_idx = i;
            self.peak_time = time;
            self.seg_min = f64::INFINITY;
        } else if e < self.seg_min {
            self.seg_min = e;
            self.seg_min_idx = i;
            self.seg_min_time = time;
        }
        self.last_equity = e;
        self.count = i + 1;
    }

    /// [`Curve::push`] of every `(bars[i].time, equity[i])`, for a curve already held in a
    /// buffer: bit for bit the same state (what [`Curve::push_held`] does knowing nothing of
    /// the bars).
    #[cfg(test)]
    fn push_all(&mut self, bars: &[Bar], equity: &[f64]) {
        let n = bars.len().min(equity.len());
        let days = Days::after(&bars[..n], self.day_end);
        self.push_held(bars, equity, &days, &[], None);
    }

    /// [`Curve::push`] of every `(bars[i].time, equity[i])`, for a curve already held in a
    /// buffer (the optimizer's statistics-only runs): bit for bit the same state. `days` are
    /// the bars' days from this curve's state (other days are found again); `held` says where a
    /// position was held unchanged (in bar order), and `blocks` are the blocks of the bars'
    /// closes (without them, every bar is walked). The days are taken one at a time, then the peaks:
    /// a whole block inside a held stretch is judged by its extreme closes (see [`Blocks`]);
    /// elsewhere the walk jumps from a new high to the next value at or above it, a chunk of
    /// compares at a time, and takes the lowest value of the bars it passed.
    pub(super) fn push_held(
        &mut self,
        bars: &[Bar],
        equity: &[f64],
        days: &Days,
        held: &[Held],
        blocks: Option<&Blocks>,
    ) {
        let n = bars.len().min(equity.len());
        if days.from != self.day_end || days.len != n {
            let days = Days::after(&bars[..n], self.day_end);
            return self.push_held(bars, equity, &days, held, blocks);
        }
        if n == 0 {
            return;
        }
        let (bars, equity) = (&bars[..n], &equity[..n]);
        if self.count == 0 {
            self.first_equity = equity[0];
        }
        let base = self.count;
        // First bar of the day being walked, for the weekend count.
        let mut day_from = 0;
        for &(k, end, weekend) in &days.starts {
            self.weekend_bars += (k - day_from) * self.day_is_weekend as usize;
            if k > 0 {
                self.day_last = equity[k - 1];
            }
            if base + k > 0 {
                self.daily.day(self.day_last);
            }
            (self.day_end, self.day_is_weekend) = (end, weekend);
            day_from = k;
        }
        self.weekend_bars += (n - day_from) * self.day_is_weekend as usize;

        let mut walk = Walk {
            bars,
            equity,
            base,
            peak: self.peak,
            peak_idx: self.peak_idx,
            peak_time: self.peak_time,
            lowest_block: None,
        };
        // Bars before `done` are walked.
        let mut done = 0;
        let blocks = blocks.filter(|b| b.range.len() == n / BLOCK);
        let held = if blocks.is_some() { held } else { &[] };
        for h in held.iter().filter(|h| h.from <= h.to && h.to <= n) {
            let plain = [h.cash, h.qty, h.entry_px].iter().all(|v| v.is_finite())
                && h.entry_px.abs() <= 1e300;
            let Some(blocks) = blocks.filter(|_| plain) else {
                continue;
            };
            let f = |c: f64| h.cash + h.qty * (c - h.entry_px);
            for b in h.from.div_ceil(BLOCK)..h.to / BLOCK {
                let Some((lo, hi)) = blocks.range[b] else {
                    continue;
                };
                let (from, to) = (b * BLOCK, (b + 1) * BLOCK);
                if from < done {
                    continue;
                }
                walk.bars(self, done, from);
                done = from;
                // A short position's equity is highest at the lowest close.
                let (lo, hi) = if h.qty < 0.0 {
                    (f(hi), f(lo))
                } else {
                    (f(lo), f(hi))
                };
                if hi >= walk.peak {
                    // A new high inside: walked bar by bar.
                    continue;
                }
                if lo < self.seg_min {
                    self.seg_min = lo;
                    walk.lowest_block = Some(from);
                }
                done = to;
            }
        }
        walk.bars(self, done, n);
        walk.settle(self);
        (self.peak, self.peak_idx, self.peak_time) = (walk.peak, walk.peak_idx, walk.peak_time);
        self.day_last = equity[n - 1];
        self.last_equity = equity[n - 1];
        self.count = base + n;
    }

    /// Takes the bars `equity` (the first at index `first`) into `seg_min`, as one
    /// `e < seg_min` per bar would: the first bar holding the lowest value, NaNs skipped.
    /// Whether one was lower.
    fn lowest_in(&mut self, bars: &[Bar], equity: &[f64], first: usize) -> bool {
        // Four independent minimums per chunk, so the compares need not wait on each other.
        let mut lanes = [f64::INFINITY; 4];
        let mut chunks = equity.chunks_exact(4);
        for chunk in &mut chunks {
            for (m, &e) in lanes.iter_mut().zip(chunk) {
                *m = if e < *m { e } else { *m };
            }
        }
        let lowest = chunks
            .remainder()
            .iter()
            .chain(&lanes)
            .fold(f64::INFINITY, |m, &e| if e < m { e } else { m });
        if lowest < self.seg_min
            && let Some(k) = first_equal(equity, lowest)
        {
            // The bar's own value: equal to `lowest`, but a zero keeps its sign.
            self.seg_min = equity[k];
            self.seg_min_idx = first + k;
            self.seg_min_time = bars[k].time;
            return true;
        }
        false
    }

    #[cold]
    fn new_day(&mut self, time: i64) {
        if self.count > 0 {
            self.daily.day(self.day_last);
        }
        (self.day_end, self.day_is_weekend) = day_of(time);
    }

    /// Account the drawdown period from the current peak to the bar at `to_time`.
    fn close_period(&mut self, to_time: i64, dd: f64) {
        // Saturating: bar times are data, and a corrupt one must not panic.
        let dur = to_time.saturating_sub(self.peak_time);
        self.periods += 1;
        self.sum_peak_dd += dd;
        self.sum_dur = self.sum_dur.saturating_add(dur);
        self.max_dur = self.max_dur.max(dur);
        self.note_depth(dd);
    }

    fn note_depth(&mut self, dd: f64) {
        if dd > self.max_dd {
            self.max_dd = dd;
            self.deepest = Some(Deepest {
                peak_idx: self.peak_idx,
                peak_time: self.peak_time,
                peak_equity: self.peak,
                trough_idx: self.seg_min_idx,
                trough_time: self.seg_min_time,
                trough_equity: self.seg_min,
            });
        }
    }

    /// Final statistics. `bars` are the bars that were pushed (only the first
    /// and last are read: start/end times and the buy & hold closes).
    pub fn finish(mut self, bars: &[Bar], trades: &[Trade], exposure_bars: usize) -> Summary {
        let n = self.count;
        let (Some(first), Some(last_bar)) = (bars.first(), bars.last()) else {
            return Summary {
                stats: Stats::empty(),
                deepest: None,
            };
        };
        if n == 0 {
            return Summary {
                stats: Stats::empty(),
                deepest: None,
            };
        }
        self.daily.day(self.day_last);
        let last = n - 1;
        // The final bar always closes a period (backtesting.py appends it to
        // the zero-drawdown indices). A one-bar tail is not a period but still
        // counts towards the maximum drawdown.
        let mut tail_dd = f64::NAN;
        if self.peak_idx < last {
            tail_dd = 1.0 - self.seg_min / self.peak;
            if last > self.peak_idx + 1 {
                self.close_period(last_bar.time, tail_dd);
            } else {
                self.note_depth(tail_dd);
            }
        }

        let (e0, e_last) = (self.first_equity, self.last_equity);
        let d = &self.daily;
        let a = if self.weekend_bars as f64 / n as f64 > 2.0 / 7.0 * 0.6 {
            365.0
        } else {
            252.0
        };
        let g = if d.any_nonpositive || d.n == 0 {
            0.0
        } else {
            (d.log_sum / d.n as f64).exp() - 1.0
        };
        let ann = (1.0 + g).powf(a) - 1.0;
        let var = if d.n >= 2 {
            d.m2 / (d.n - 1) as f64
        } else {
            f64::NAN
        };
        let vol = ((var + (1.0 + g) * (1.0 + g)).powf(a) - (1.0 + g).powf(2.0 * a)).sqrt();
        let downside = if d.n > 0 {
            (d.downside_sq / d.n as f64).sqrt() * a.sqrt()
        } else {
            f64::NAN
        };

        let (avg_dd, max_dur, avg_dur) = if self.periods > 0 {
            let c = self.periods as f64;
            (
                -self.sum_peak_dd / c * 100.0,
                self.max_dur as f64 / DAY as f64,
                self.sum_dur as f64 / c / DAY as f64,
            )
        } else {
            // backtesting.py falls back to the mean of the non-zero drawdowns,
            // which can only be the one-bar tail here.
            let avg = if tail_dd > 0.0 {
                -tail_dd * 100.0
            } else {
                f64::NAN
            };
            (avg, f64::NAN, f64::NAN)
        };

        let mut stats = Stats {
            start: first.time,
            end: last_bar.time,
            duration_days: last_bar.time.saturating_sub(first.time) as f64 / DAY as f64,
            exposure_time_pct: exposure_bars.min(n) as f64 / n as f64 * 100.0,
            equity_final: e_last,
            // The running peak after the last bar is the curve's maximum.
            equity_peak: self.peak,
            return_pct: (e_last - e0) / e0 * 100.0,
            buy_hold_return_pct: (last_bar.close - first.close) / first.close * 100.0,
            return_ann_pct: ann * 100.0,
            volatility_ann_pct: vol * 100.0,
            sharpe: div_or_nan(ann * 100.0, vol * 100.0),
            sortino: div_or_nan(ann, downside),
            calmar: div_or_nan(ann, self.max_dd),
            max_drawdown_pct: -self.max_dd * 100.0,
            avg_drawdown_pct: avg_dd,
            max_drawdown_duration_days: max_dur,
            avg_drawdown_duration_days: avg_dur,
            ..Stats::empty()
        };
        trade_stats(trades, &mut stats);
        Summary {
            stats,
            deepest: self.deepest,
        }
    }
}

fn trade_stats(trades: &[Trade], s: &mut Stats) {
    s.trades = trades.len();
    if trades.is_empty() {
        return;
    }
    let n = trades.len() as f64;
    let (mut wins, mut best, mut worst) = (0usize, f64::NEG_INFINITY, f64::INFINITY);
    let (mut sum_ret, mut log_sum, mut nonpositive) = (0.0, 0.0, false);
    let (mut gross_win, mut gross_loss) = (0.0, 0.0);
    let (mut max_dur, mut sum_dur) = (0i64, 0i64);
    let mut sum_pnl = 0.0;
    for t in trades {
        wins += (t.pnl > 0.0) as usize;
        best = best.max(t.return_pct);
        worst = worst.min(t.return_pct);
        sum_ret += t.return_pct;
        let growth = 1.0 + t.return_pct / 100.0;
        if growth > 0.0 {
            log_sum += growth.ln();
        } else {
            nonpositive = true;
        }
        if t.return_pct > 0.0 {
            gross_win += t.return_pct;
        } else {
            gross_loss += t.return_pct;
        }
        let dur = t.exit_time.saturating_sub(t.entry_time);
        max_dur = max_dur.max(dur);
        sum_dur = sum_dur.saturating_add(dur);
        sum_pnl += t.pnl;
    }
    let mean_pnl = sum_pnl / n;
    // Two-pass variance: trade lists are short and this avoids cancellation.
    let ss: f64 = trades.iter().map(|t| (t.pnl - mean_pnl).powi(2)).sum();
    let std_pnl = if trades.len() >= 2 {
        (ss / (n - 1.0)).sqrt()
    } else {
        f64::NAN
    };
    s.win_rate_pct = wins as f64 / n * 100.0;
    s.best_trade_pct = best;
    s.worst_trade_pct = worst;
    s.avg_trade_pct = if nonpositive {
        0.0
    } else {
        ((log_sum / n).exp() - 1.0) * 100.0
    };
    s.max_trade_duration_days = max_dur as f64 / DAY as f64;
    s.avg_trade_duration_days = sum_dur as f64 / n / DAY as f64;
    s.profit_factor = div_or_nan(gross_win, gross_loss.abs());
    s.expectancy_pct = sum_ret / n;
    s.sqn = div_or_nan(n.sqrt() * mean_pnl, std_pnl);
}

#[cfg(test)]
mod tests {
    use super::super::backtest::Exit;
    use super::*;

    const T0: i64 = 1_704_067_200; // 2024-01-01 00:00 UTC, a Monday

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9 * b.abs().max(1.0), "{a} != {b}");
    }

    /// One bar per day at midnight, closes `c`, starting on `start`.
    fn daily_bars(start: i64, closes: &[f64]) -> Vec<Bar> {
        closes
            .iter()
            .enumerate()
            .map(|(i, &c)| Bar {
                time: start + i as i64 * DAY,
                open: c,
                high: c,
                low: c,
                close: c,
                volume: 0.0,
            })
            .collect()
    }

    fn trade(days_in: i64, days_out: i64, pnl: f64, ret: f64) -> Trade {
        Trade {
            entry_time: T0 + days_in * DAY,
            exit_time: T0 + days_out * DAY,
            direction: 1,
            entry_px: 100.0,
            exit_px: 100.0,
            size: 1.0,
            pnl,
            return_pct: ret,
            bars: (days_out - days_in) as usize,
            exit: Exit::Signal,
        }
    }

    #[test]
    fn equity_curve_statistics_by_hand() {
        // Equity, one point per weekday (Mon..Fri, then Mon..Tue): 7 bars, no
        // weekend bars -> A = 252.
        //   E  = 100, 110, 99, 104.5, 115.5, 110, 121
        //   P  = 100, 110, 110, 110, 115.5, 115.5, 121
        //   dd = 0, 0, .1, .05, 0, 1-110/115.5, 0
        // Drawdown periods (zero-dd bars 0,1,4,6 plus the last bar 6):
        //   bars 1..4: peak dd .1, duration 3 calendar days (Tue -> Fri)
        //   bars 4..6: peak dd 1/21 (= 1 - 110/115.5), duration Fri -> Tue = 4 days
        // max dd 10 %, avg dd (0.1 + 1/21)/2, max duration 4, avg 3.5 days.
        let mut b = daily_bars(T0, &[100.0, 110.0, 99.0, 104.5, 115.5]);
        b.extend(daily_bars(T0 + 7 * DAY, &[110.0, 121.0]));
        let e: Vec<f64> = b.iter().map(|b| b.close).collect();
        let s = compute(&b, &e, &[], 3);

        close(s.return_pct, 21.0);
        close(s.buy_hold_return_pct, 21.0);
        close(s.equity_final, 121.0);
        close(s.equity_peak, 121.0);
        close(s.max_drawdown_pct, -10.0);
        close(s.avg_drawdown_pct, -(0.1 + 1.0 / 21.0) / 2.0 * 100.0);
        close(s.max_drawdown_duration_days, 4.0);
        close(s.avg_drawdown_duration_days, 3.5);
        close(s.duration_days, 8.0);
        close(s.exposure_time_pct, 3.0 / 7.0 * 100.0);
        assert_eq!((s.start, s.end), (T0, T0 + 8 * DAY));

        // Daily returns r = .1, -.1, .0555.., .1052.., -.047619.., .1 (6 of them, the
        // first day has none); Π(1+r) = 1.21, so g = 1.21^(1/6) - 1 and
        // ann = 1.21^(252/6) - 1.
        let r = [
            0.1,
            -0.1,
            104.5 / 99.0 - 1.0,
            115.5 / 104.5 - 1.0,
            110.0 / 115.5 - 1.0,
            0.1,
        ];
        let g = 1.21f64.powf(1.0 / 6.0) - 1.0;
        let ann = 1.21f64.powf(252.0 / 6.0) - 1.0;
        close(s.return_ann_pct, ann * 100.0);
        let mean = r.iter().sum::<f64>() / 6.0;
        let var = r.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 5.0;
        let vol = ((var + (1.0 + g).powi(2)).powf(252.0) - (1.0 + g).powf(504.0)).sqrt();
        close(s.volatility_ann_pct, vol * 100.0);
        // Sharpe = ann / vol; Sortino uses the two losing days over all six.
        close(s.sharpe, ann / vol);
        let down = ((0.01 + (110.0f64 / 115.5 - 1.0).powi(2)) / 6.0).sqrt() * 252f64.sqrt();
        close(s.sortino, ann / down);
        close(s.calmar, ann / 0.1);
    }

    #[test]
    fn weekend_bars_switch_annualisation_to_365_days() {
        // Seven consecutive days (Mon..Sun): 2/7 weekend bars > 0.6 · 2/7.
        let b = daily_bars(T0, &[100.0, 101.0, 102.0, 103.0, 104.0, 105.0, 106.0]);
        let e: Vec<f64> = b.iter().map(|b| b.close).collect();
        let s = compute(&b, &e, &[], 0);
        close(s.return_ann_pct, (1.06f64.powf(365.0 / 6.0) - 1.0) * 100.0);
        // No losing day: Sortino's denominator is zero -> NaN (not inf).
        assert!(s.sortino.is_nan());
        // Never below the peak: no drawdown periods at all.
        assert_eq!(s.max_drawdown_pct, 0.0);
        assert!(s.calmar.is_nan());
        assert!(s.max_drawdown_duration_days.is_nan());
        assert!(s.avg_drawdown_pct.is_nan());
    }

    #[test]
    fn intraday_bars_are_resampled_to_the_last_bar_of_each_day() {
        // Two 12h bars per day; only the second of each day matters for returns.
        // Day closes: 100 -> 120 -> 60: returns .2, -.5 (the 999 intraday spike is ignored).
        let times = [0, 12, 24, 36, 48, 60].map(|h| T0 + h * 3600);
        let eq = [100.0, 100.0, 999.0, 120.0, 80.0, 60.0];
        let b: Vec<Bar> = times
            .iter()
            .zip(eq)
            .map(|(&time, c)| Bar {
                time,
                close: c,
                open: c,
                high: c,
                low: c,
                volume: 0.0,
            })
            .collect();
        let s = compute(&b, &eq, &[], 0);
        let g = (1.2f64 * 0.5).powf(1.0 / 3.0) - 1.0;
        close(s.return_ann_pct, ((1.0 + g).powf(252.0) - 1.0) * 100.0);
        // Sortino: downside = sqrt((0 + .25) / 2) * sqrt(252).
        let ann = (1.0 + g).powf(252.0) - 1.0;
        close(s.sortino, ann / ((0.25f64 / 2.0).sqrt() * 252f64.sqrt()));
        // Max dd from the 999 spike to 60.
        close(s.max_drawdown_pct, -(1.0 - 60.0 / 999.0) * 100.0);
    }

    #[test]
    fn trade_statistics_by_hand() {
        // Four trades: pnl 10, -5, 20, -5 with returns 10 %, -5 %, 20 %, -4 %.
        // win rate 2/4 = 50 %; best 20 %, worst -5 %;
        // profit factor (10 + 20) / (5 + 4) = 3.333..; expectancy (10-5+20-4)/4 = 5.25;
        // mean pnl 5, deviations 5, -10, 15, -10 -> ss = 25+100+225+100 = 450,
        // std = sqrt(450/3) = sqrt(150); SQN = sqrt(4) · 5 / sqrt(150) = 10/sqrt(150).
        // avg trade = (1.1 · .95 · 1.2 · .96)^(1/4) - 1. Durations 1, 2, 3, 6 days.
        let trades = [
            trade(0, 1, 10.0, 10.0),
            trade(1, 3, -5.0, -5.0),
            trade(3, 6, 20.0, 20.0),
            trade(6, 12, -5.0, -4.0),
        ];
        let b = daily_bars(T0, &[100.0; 13]);
        let e = vec![100.0; 13];
        let s = compute(&b, &e, &trades, 13);
        assert_eq!(s.trades, 4);
        close(s.win_rate_pct, 50.0);
        close(s.best_trade_pct, 20.0);
        close(s.worst_trade_pct, -5.0);
        close(s.profit_factor, 30.0 / 9.0);
        close(s.expectancy_pct, 21.0 / 4.0);
        close(s.sqn, 10.0 / 150f64.sqrt());
        let geo = (1.1f64 * 0.95 * 1.2 * 0.96).powf(0.25) - 1.0;
        close(s.avg_trade_pct, geo * 100.0);
        close(s.max_trade_duration_days, 6.0);
        close(s.avg_trade_duration_days, 3.0);
        close(s.exposure_time_pct, 100.0);
    }

    #[test]
    fn undefined_trade_statistics_are_nan() {
        let b = daily_bars(T0, &[100.0, 100.0]);
        let s = compute(&b, &[100.0, 100.0], &[], 0);
        assert_eq!(s.trades, 0);
        for v in [
            s.win_rate_pct,
            s.best_trade_pct,
            s.avg_trade_pct,
            s.profit_factor,
            s.expectancy_pct,
            s.sqn,
            s.max_trade_duration_days,
        ] {
            assert!(v.is_nan());
        }
        // One winning trade: SQN needs two, profit factor needs a loss.
        let s = compute(&b, &[100.0, 100.0], &[trade(0, 1, 1.0, 1.0)], 2);
        assert!(s.sqn.is_nan() && s.profit_factor.is_nan());
        close(s.win_rate_pct, 100.0);
        // A single day: no daily returns, so no volatility / Sharpe.
        let s = compute(&b[..1], &[100.0], &[], 0);
        close(s.return_ann_pct, 0.0);
        assert!(s.volatility_ann_pct.is_nan() && s.sharpe.is_nan());
        // NaN != NaN, so compare the rendering.
        let empty = compute(&[], &[], &[], 0);
        assert_eq!(format!("{empty:?}"), format!("{:?}", Stats::empty()));
    }

    #[test]
    fn one_bar_tail_drawdown_counts_for_max_but_is_not_a_period() {
        // dd only at the final bar: backtesting.py reports it as max and avg
        // drawdown but has no drawdown period (durations NaN).
        let b = daily_bars(T0, &[100.0, 110.0, 99.0]);
        let s = compute(&b, &[100.0, 110.0, 99.0], &[], 0);
        close(s.max_drawdown_pct, -10.0);
        close(s.avg_drawdown_pct, -10.0);
        assert!(s.max_drawdown_duration_days.is_nan());
        // With two bars in the tail it is a period ending at the last bar.
        let b = daily_bars(T0, &[100.0, 110.0, 99.0, 104.5]);
        let s = compute(&b, &[100.0, 110.0, 99.0, 104.5], &[], 0);
        close(s.max_drawdown_duration_days, 2.0);
        close(s.avg_drawdown_pct, -10.0);
    }

    /// Every field of a curve, including those the statistics only read through a threshold
    /// (the weekend share), then the statistics themselves.
    fn summary(c: Curve, bars: &[Bar]) -> String {
        let d = &c.daily;
        let state = format!(
            "{} {:?} {:?} {} {} {:?} {} {} {} {} {} {:?} {} {} {:?} {:?}",
            c.count,
            (
                c.first_equity,
                c.last_equity,
                c.peak,
                c.peak_idx,
                c.peak_time
            ),
            (c.seg_min, c.seg_min_idx, c.seg_min_time),
            c.periods,
            c.sum_peak_dd,
            (c.sum_dur, c.max_dur, c.max_dd),
            c.day_end,
            c.day_is_weekend,
            c.day_last,
            c.weekend_bars,
            d.days,
            (d.prev_close, d.n, d.mean, d.m2),
            d.log_sum,
            d.any_nonpositive,
            d.downside_sq,
            c.deepest,
        );
        let s = c.finish(bars, &[], 0);
        format!("{state} {:?} {:?}", s.stats, s.deepest)
    }

    /// `push_all` leaves the curve as pushing bar by bar does, in one call or
    /// two: equal lows, flat stretches, NaN and signed zeros, gaps, a weekend,
    /// a bar out of order and times where the day's end saturates.
    #[test]
    fn push_all_is_push_bar_by_bar() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut e = 1000.0;
        let mut t = T0 - 3 * 3600;
        let mut bars = Vec::new();
        let mut equity = Vec::new();
        for i in 0..3000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            e = match x % 23 {
                0 => e,                      // flat
                1 => 990.0,                  // a low visited again and again
                2 if i % 5 == 0 => f64::NAN, // a hole in the curve
                3 if i % 7 == 0 => -0.0,     // zeros of both signs
                4 if i % 7 == 0 => 0.0,
                _ => {
                    (if e.is_finite() { e } else { 1000.0 })
                        * (1.0 + ((x >> 11) % 2001) as f64 / 1e5 - 0.01)
                }
            };
            t += match i {
                1200 => 4 * 86_400 + 17, // a gap over a weekend
                2000 => -5 * 86_400,     // back in time
                _ => 300,
            };
            bars.push(Bar {
                time: if i >= 2990 { i64::MAX - 3000 + i } else { t },
                close: 1.0 + i as f64,
                ..Bar::default()
            });
            equity.push(e);
        }
        let summary = |c: Curve| summary(c, &bars);
        let mut one = Curve::new();
        for (b, &e) in bars.iter().zip(&equity) {
            one.push(b.time, e);
        }
        let want = summary(one);
        for split in [0, 1, 2, 777, 2999, 3000] {
            let mut all = Curve::new();
            all.push_all(&bars[..split], &equity[..split]);
            all.push_all(&bars[split..], &equity[split..]);
            assert_eq!(summary(all), want, "split at {split}");
        }
        // Pushed bar by bar first, then the rest at once.
        let mut mixed = Curve::new();
        for (b, &e) in bars[..1500].iter().zip(&equity) {
            mixed.push(b.time, e);
        }
        mixed.push_all(&bars[1500..], &equity[1500..]);
        assert_eq!(summary(mixed), want);
    }

    /// Knowing where a position was held, `push_held` passes over whole blocks by their extreme
    /// closes and leaves the curve as pushing bar by bar does: a long stretch through rising
    /// closes and a short one through falling closes (new highs block after block), a flat
    /// stretch at a cash of -0.0 whose first low is a +0.0 inside a block that also holds
    /// -0.0, new highs in blocks whose extreme closes make a NaN, then stretches of any kind at random: closes that are NaN or beyond 1e300, books
    /// that are not finite, single bars between the stretches; and a curve already begun.
    #[test]
    fn push_held_is_push_bar_by_bar() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut rand = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let n = 6000;
        let mut px = 100.0;
        let mut closes = Vec::new();
        for i in 0..n {
            // Long climbs and falls, so that stretches set new highs block after block.
            let drift = if (i / 700) % 2 == 0 { 0.02 } else { -0.02 };
            px += drift + (rand(2001) as f64 - 1000.0) / 20_000.0;
            closes.push(match i {
                1408..1440 => [1.0, -1.0][i % 2],
                1472 | 1503 => 1e300,
                1504 | 1535 => f64::MAX,
                1473..1535 => 100.0,
                5800 => f64::NAN,
                5900 => 1e301,
                _ => px,
            });
        }
        let bars: Vec<Bar> = closes
            .iter()
            .enumerate()
            .map(|(i, &close)| Bar {
                time: T0 + i as i64 * 300 + if i >= 4000 { 3 * 86_400 } else { 0 },
                close,
                ..Bar::default()
            })
            .collect();
        let mut equity = vec![1000.0; 10];
        let mut held = Vec::new();
        let mut hold =
            |equity: &mut Vec<f64>, to: usize, (cash, qty, entry_px): (f64, f64, f64)| {
                let from = equity.len();
                for &c in &closes[from..to] {
                    equity.push(cash + qty * (c - entry_px));
                }
                held.push(Held {
                    from,
                    to,
                    cash,
                    qty,
                    entry_px,
                });
            };
        hold(&mut equity, 700, (1000.0, 10.0, closes[10]));
        let cash = equity[699];
        hold(&mut equity, 1400, (cash, -cash / closes[700], closes[700]));
        equity.extend([990.0; 8]);
        hold(&mut equity, 1472, (-0.0, 0.0, 0.0));
        // New highs where the extreme closes' equity is NaN (0 · inf): a book or closes out of
        // the plain range, walked bar by bar.
        hold(&mut equity, 1504, (5000.0, 0.0, -f64::MAX));
        hold(&mut equity, 1536, (6000.0, 0.0, -1e300));
        let mut cash: f64 = 1000.0;
        while equity.len() < n {
            let from = equity.len();
            if rand(4) == 0 {
                // A fill bar: any value.
                equity.push([cash, cash * 1.01, 990.0, f64::NAN][rand(4) as usize]);
                continue;
            }
            let to = (from + 1 + rand(400) as usize).min(n);
            let entry_px = closes[from];
            let book = match rand(100) {
                0..=49 => (cash, cash / entry_px.abs().max(1.0), entry_px),
                50..=89 => (cash, -cash / entry_px.abs().max(1.0), entry_px),
                90..=93 => (cash, 0.0, 0.0),
                94..=96 => (-0.0, 0.0, 0.0),
                _ => ([f64::NAN, cash][rand(2) as usize], 1.0, 1e301),
            };
            hold(&mut equity, to, book);
            let last = equity[to - 1];
            cash = if last.is_finite() && last > 0.0 {
                last
            } else {
                1000.0
            };
        }
        assert!(held.iter().filter(|h| h.to - h.from >= 2 * BLOCK).count() > 10);

        // The designed stretches alone (the lows at their end), then everything.
        for cut in [1472, 1536, n] {
            let (bars, equity) = (&bars[..cut], &equity[..cut]);
            let mut one = Curve::new();
            for (b, &e) in bars.iter().zip(equity) {
                one.push(b.time, e);
            }
            let held: Vec<Held> = held.iter().copied().filter(|h| h.to <= cut).collect();
            let blocks = Blocks::new(&closes[..cut]);
            let mut all = Curve::new();
            all.push_held(bars, equity, &Days::new(bars), &held, Some(&blocks));
            assert_eq!(summary(all, bars), summary(one, bars), "{cut} bars");
        }
        let mut one = Curve::new();
        for (b, &e) in bars.iter().zip(&equity) {
            one.push(b.time, e);
        }
        let want = summary(one, &bars);

        // After bars pushed one by one: the held stretches and blocks of the rest.
        let split = 1500;
        let rest: Vec<Held> = held
            .iter()
            .filter(|h| h.from >= split)
            .map(|h| Held {
                from: h.from - split,
                to: h.to - split,
                ..*h
            })
            .collect();
        let mut mixed = Curve::new();
        for (b, &e) in bars[..split].iter().zip(&equity) {
            mixed.push(b.time, e);
        }
        let days = Days::after(&bars[split..], mixed.day_end);
        let blocks = Blocks::new(&closes[split..]);
        mixed.push_held(
            &bars[split..],
            &equity[split..],
            &days,
            &rest,
            Some(&blocks),
        );
        assert_eq!(summary(mixed, &bars), want);
    }
}
