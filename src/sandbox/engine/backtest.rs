//! Bar-by-bar fill simulator.
//!
//! # Rules
//!
//! - **No look-ahead.** `signals[i]` is the target position decided at the close
//!   of bar `i`; it is filled at the **open of bar `i + 1`**. The signal of the
//!   last bar is never filled (there is no next open).
//! - **Prices.** Market fills (signal entries/exits, stop-loss, end of data) pay
//!   slippage against the trader: buys at `px · (1 + bps/10⁴)`, sells at
//!   `px · (1 - bps/10⁴)`. Take-profit fills are limit orders and get no
//!   slippage.
//! - **Fees.** `fee_rate × notional` on every fill, entry and exit.
//! - **Sizing.** All-in, like backtesting.py with `trade_on_close=False` and
//!   `size≈1.0`, but in fractional units: `units = cash / (fill · (1 + fee_rate))`,
//!   so the entry fee is covered by the available cash. One position at a time;
//!   no position is opened with non-positive cash.
//! - **Reversal.** A target of the opposite sign closes the position and opens
//!   the new one at the same next open (two fills, two fees).
//! - **Stop-loss / take-profit** are percentages of the entry fill price
//!   (`sl_pct = 2.0` means 2 %). They are checked from the fill bar onwards
//!   (the entry happens at the open, so the rest of that bar's range is live),
//!   using each bar's high/low:
//!   - if the bar *opens* beyond a level (a gap), the fill is at the open;
//!   - otherwise a touched level fills at the level;
//!   - if both SL and TP lie inside the same bar, **SL fills first**. OHLC
//!     cannot tell which came first, so this is deliberately pessimistic.
//!
//!   After an SL/TP exit the strategy is *re-armed* only when its signal
//!   changes: holding a `+1` signal does not immediately re-buy after a stop.
//! - **End of data.** A position still open after the last bar is closed at
//!   the last close (a market fill: slippage and fee apply), exit
//!   [`Exit::EndOfData`].
//! - **Equity** is marked to market at every close (`cash + units · (close -
//!   entry)`), which is what the drawdown statistics use. The last point is the
//!   cash after the end-of-data close.
//! - `allow_short = false` turns short targets into flat.
//!
//! [`run`] never panics: non-finite or negative config values are treated as
//! "off"/zero (see [`Config::validate`] for rejecting them up front), and a
//! signals slice shorter than the bars is padded with flat targets.

use super::Bar;
use super::metrics::{Blocks, Curve, Days, Deepest, Held, Stats};
use super::strategies::ParamError;

/// Backtest settings. `Default` is 10 000 equity, no costs, no stops, shorts on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    pub initial_equity: f64,
    /// Per side, as a fraction of notional (0.001 = 0.1 %).
    pub fee_rate: f64,
    /// Per market fill, against the trader, in basis points.
    pub slippage_bps: f64,
    /// Stop-loss distance in percent of the entry fill.
    pub sl_pct: Option<f64>,
    /// Take-profit distance in percent of the entry fill.
    pub tp_pct: Option<f64>,
    pub allow_short: bool,
    /// Size of the downsampled equity/drawdown series (at least 4 are kept).
    pub max_equity_points: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            initial_equity: 10_000.0,
            fee_rate: 0.0,
            slippage_bps: 0.0,
            sl_pct: None,
            tp_pct: None,
            allow_short: true,
            max_equity_points: 500,
        }
    }
}

impl Config {
    /// Reject values that [`run`] would otherwise silently sanitise. Field
    /// names are the config's own (`"fee_rate"`, ...).
    pub fn validate(&self) -> Result<(), ParamError> {
        let err = |field: &str, message: &str| {
            Err(ParamError {
                field: field.to_string(),
                message: message.to_string(),
            })
        };
        if !(self.initial_equity.is_finite() && self.initial_equity > 0.0) {
            return err("initial_equity", "must be a positive finite number");
        }
        if !(self.fee_rate.is_finite() && (0.0..0.5).contains(&self.fee_rate)) {
            return err("fee_rate", "must be in [0, 0.5)");
        }
        if !(self.slippage_bps.is_finite() && (0.0..5_000.0).contains(&self.slippage_bps)) {
            return err("slippage_bps", "must be in [0, 5000)");
        }
        if let Some(v) = self.sl_pct
            && !(v.is_finite() && v > 0.0 && v < 100.0)
        {
            return err("sl_pct", "must be in (0, 100)");
        }
        if let Some(v) = self.tp_pct
            && !(v.is_finite() && v > 0.0)
        {
            return err("tp_pct", "must be a positive finite number");
        }
        Ok(())
    }
}

/// Why a trade was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Exit {
    Signal,
    StopLoss,
    TakeProfit,
    EndOfData,
}

impl Exit {
    pub fn as_str(self) -> &'static str {
        match self {
            Exit::Signal => "signal",
            Exit::StopLoss => "stop_loss",
            Exit::TakeProfit => "take_profit",
            Exit::EndOfData => "end_of_data",
        }
    }
}

/// A closed round trip.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trade {
    /// Open time of the bar whose open filled the entry.
    pub entry_time: i64,
    /// Open time of the bar in which the exit filled.
    pub exit_time: i64,
    /// `+1` long, `-1` short.
    pub direction: i8,
    /// Fill prices including slippage.
    pub entry_px: f64,
    pub exit_px: f64,
    /// Units (always positive).
    pub size: f64,
    /// Net of both fees.
    pub pnl: f64,
    /// `pnl / (size · entry_px) · 100`, i.e. net of fees, in percent.
    pub return_pct: f64,
    /// Exit bar index minus entry bar index.
    pub bars: usize,
    pub exit: Exit,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BacktestResult {
    pub stats: Stats,
    pub trades: Vec<Trade>,
    /// `(time, equity)` downsampled to `max_equity_points`, always keeping the
    /// first and last bar, the deepest drawdown trough and the peak before it.
    pub equity: Vec<(i64, f64)>,
    /// Same points: `(equity / running peak - 1) · 100`, so `≤ 0`.
    pub drawdown: Vec<(i64, f64)>,
}

/// Run a backtest of target-position `signals` over `bars` (see module docs).
pub fn run(bars: &[Bar], signals: &[i8], cfg: &Config) -> BacktestResult {
    Workspace::default().run(bars, signals, cfg)
}

/// Reusable trade and equity buffers for repeated backtests (the optimizer
/// keeps one per worker). A full run consumes the equity curve bar by bar
/// (statistics and downsampler) and never stores it; statistics-only runs keep
/// it in `equity` between the fill loop and the statistics, so that each of
/// the two loops holds its state in registers.
#[derive(Debug, Default, Clone)]
pub struct Workspace {
    trades: Vec<Trade>,
    equity: Vec<f64>,
    held: Vec<Held>,
    prepared: Option<Prepared>,
}

/// What statistics-only runs over the same bars share (the optimizer's candidates): the
/// closes in a column of their own, so that a held position is marked to market with vector
/// arithmetic reading 8 bytes a bar instead of a 48-byte bar; the bars' days; and the closes'
/// blocks, by which the statistics pass over most held bars without reading them.
#[derive(Debug, Clone, Default)]
pub(super) struct Prepared {
    closes: Vec<f64>,
    days: Days,
    blocks: Blocks,
}

impl Prepared {
    pub(super) fn new(bars: &[Bar]) -> Prepared {
        let mut prepared = Prepared::default();
        prepared.fill(bars);
        prepared
    }

    fn fill(&mut self, bars: &[Bar]) {
        self.closes.clear();
        self.closes.extend(bars.iter().map(|b| b.close));
        self.days = Days::new(bars);
        self.blocks = Blocks::new(&self.closes);
    }

    /// The closes, one per bar.
    pub(super) fn closes(&self) -> &[f64] {
        &self.closes
    }
}

impl Workspace {
    /// Same as [`run`], reusing this workspace's buffers.
    pub fn run(&mut self, bars: &[Bar], signals: &[i8], cfg: &Config) -> BacktestResult {
        let mut curve = Curve::new();
        let mut sampler = Sampler::new(bars.len(), cfg.max_equity_points);
        let exposed = simulate(bars, signals, cfg, &mut self.trades, |i, b, e| {
            curve.push(b.time, e);
            if i == sampler.next {
                sampler.record(i, b.time, e, curve.running_peak());
            }
        });
        let summary = curve.finish(bars, &self.trades, exposed);
        let (equity, drawdown) = sampler.finish(summary.deepest);
        BacktestResult {
            stats: summary.stats,
            trades: self.trades.clone(),
            equity,
            drawdown,
        }
    }

    /// Statistics only: no trade list or curves are materialised.
    pub fn stats(&mut self, bars: &[Bar], signals: &[i8], cfg: &Config) -> Stats {
        let mut prepared = self.prepared.take().unwrap_or_default();
        prepared.fill(bars);
        let stats = self.stats_with(bars, &prepared, signals, cfg);
        self.prepared = Some(prepared);
        stats
    }

    /// [`Workspace::stats`] with what runs over the same `bars` share computed once.
    pub(super) fn stats_with(
        &mut self,
        bars: &[Bar],
        prepared: &Prepared,
        signals: &[i8],
        cfg: &Config,
    ) -> Stats {
        // Every slot is written by the loop, so only a length change touches memory here.
        self.equity.resize(bars.len(), 0.0);
        self.held.clear();
        let mut marks = Column {
            equity: &mut self.equity,
            closes: &prepared.closes,
            held: &mut self.held,
        };
        let exposed = simulate_marks(bars, signals, cfg, &mut self.trades, &mut marks);
        let mut curve = Curve::new();
        let blocks = Some(&prepared.blocks);
        curve.push_held(bars, &self.equity, &prepared.days, &self.held, blocks);
        curve.finish(bars, &self.trades, exposed).stats
    }

    /// Trades of the last run.
    pub fn trades(&self) -> &[Trade] {
        &self.trades
    }
}

/// Config after sanitising: what the loop actually uses.
struct Rules {
    fee: f64,
    slip: f64,
    /// Stop distances as fractions; NaN disables (every comparison is false).
    sl: f64,
    tp: f64,
    allow_short: bool,
}

impl Rules {
    fn new(cfg: &Config) -> Rules {
        let nonneg = |v: f64| if v.is_finite() && v > 0.0 { v } else { 0.0 };
        let stop = |v: Option<f64>| match v {
            Some(p) if p.is_finite() && p > 0.0 => p / 100.0,
            _ => f64::NAN,
        };
        Rules {
            fee: nonneg(cfg.fee_rate),
            slip: nonneg(cfg.slippage_bps) / 10_000.0,
            sl: stop(cfg.sl_pct),
            tp: stop(cfg.tp_pct),
            allow_short: cfg.allow_short,
        }
    }
}

/// Open position and cash. `qty` is signed so marking to market is one fused
/// multiply-add whatever the direction (and exactly `cash` when flat).
struct Book<'a> {
    cash: f64,
    dir: i8,
    qty: f64,
    size: f64,
    entry_px: f64,
    entry_fee: f64,
    entry_bar: usize,
    sl_level: f64,
    tp_level: f64,
    trades: &'a mut Vec<Trade>,
}

impl Book<'_> {
    /// Enter `dir` at raw price `px` (slippage applied here) on bar `i`.
    #[inline(always)]
    fn open(&mut self, dir: i8, px: f64, i: usize, r: &Rules) {
        let d = f64::from(dir);
        let fill = px * (1.0 + d * r.slip);
        let size = self.cash / (fill * (1.0 + r.fee));
        if !(size.is_finite() && size > 0.0) {
            return;
        }
        self.entry_fee = size * fill * r.fee;
        self.cash -= self.entry_fee;
        self.dir = dir;
        self.size = size;
        self.qty = d * size;
        self.entry_px = fill;
        self.entry_bar = i;
        self.sl_level = fill * (1.0 - d * r.sl);
        self.tp_level = fill * (1.0 + d * r.tp);
    }

    /// Close at the final fill price `fill` (slippage already applied).
    #[inline(always)]
    fn close(&mut self, fill: f64, i: usize, bars: &[Bar], exit: Exit, r: &Rules) {
        let gross = self.qty * (fill - self.entry_px);
        let exit_fee = self.size * fill * r.fee;
        self.cash += gross - exit_fee;
        let pnl = gross - self.entry_fee - exit_fee;
        self.trades.push(Trade {
            entry_time: bars[self.entry_bar].time,
            exit_time: bars[i].time,
            direction: self.dir,
            entry_px: self.entry_px,
            exit_px: fill,
            size: self.size,
            pnl,
            return_pct: pnl / (self.size * self.entry_px) * 100.0,
            bars: i - self.entry_bar,
            exit,
        });
        self.dir = 0;
        self.qty = 0.0;
        self.size = 0.0;
        self.entry_px = 0.0;
    }

    /// Market-close at raw price `px` (a sell for longs, a buy for shorts).
    #[inline(always)]
    fn close_market(&mut self, px: f64, i: usize, bars: &[Bar], exit: Exit, r: &Rules) {
        let fill = px * (1.0 - f64::from(self.dir) * r.slip);
        self.close(fill, i, bars, exit, r);
    }

    /// Stop-loss / take-profit inside bar `i`. Returns the direction that was
    /// stopped out (0 if none) so the caller can wait for a fresh signal.
    #[inline(always)]
    fn check_stops(&mut self, b: &Bar, i: usize, bars: &[Bar], r: &Rules) -> i8 {
        let dir = self.dir;
        let (sl, tp) = (self.sl_level, self.tp_level);
        // Express everything as "adverse" / "favourable" so one code path
        // serves both directions; NaN levels never compare true.
        let (open_hit_sl, open_hit_tp, bar_hit_sl, bar_hit_tp) = if dir > 0 {
            (b.open <= sl, b.open >= tp, b.low <= sl, b.high >= tp)
        } else {
            (b.open >= sl, b.open <= tp, b.high >= sl, b.low <= tp)
        };
        if open_hit_sl {
            self.close_market(b.open, i, bars, Exit::StopLoss, r);
        } else if open_hit_tp {
            self.close(b.open, i, bars, Exit::TakeProfit, r);
        } else if bar_hit_sl {
            self.close_market(sl, i, bars, Exit::StopLoss, r);
        } else if bar_hit_tp {
            self.close(tp, i, bars, Exit::TakeProfit, r);
        } else {
            return 0;
        }
        dir
    }
}

/// Where the bar loop puts each bar's marked-to-market equity.
pub(super) trait Marks {
    /// The equity at the close of bar `i`.
    fn mark(&mut self, i: usize, b: &Bar, equity: f64);

    /// Bars `from..to` of `bars`, through which the book stays as it is: each one's equity is
    /// `cash + qty * (close - entry_px)`.
    #[inline(always)]
    fn hold(&mut self, bars: &[Bar], from: usize, to: usize, book: (f64, f64, f64)) {
        let (cash, qty, entry_px) = book;
        for (k, b) in bars[from..to].iter().enumerate() {
            self.mark(from + k, b, cash + qty * (b.close - entry_px));
        }
    }
}

/// Marks handed to a closure one bar at a time.
struct EachBar<F>(F);

impl<F: FnMut(usize, &Bar, f64)> Marks for EachBar<F> {
    #[inline(always)]
    fn mark(&mut self, i: usize, b: &Bar, equity: f64) {
        (self.0)(i, b, equity)
    }
}

/// Marks written to a buffer, runs of held bars from a column of closes, noted in `held`.
struct Column<'a> {
    equity: &'a mut [f64],
    closes: &'a [f64],
    held: &'a mut Vec<Held>,
}

impl Marks for Column<'_> {
    #[inline(always)]
    fn mark(&mut self, i: usize, _: &Bar, equity: f64) {
        self.equity[i] = equity;
    }

    #[inline(always)]
    fn hold(&mut self, _: &[Bar], from: usize, to: usize, book: (f64, f64, f64)) {
        let (cash, qty, entry_px) = book;
        for (e, &close) in self.equity[from..to].iter_mut().zip(&self.closes[from..to]) {
            *e = cash + qty * (close - entry_px);
        }
        self.held.push(Held {
            from,
            to,
            cash,
            qty,
            entry_px,
        });
    }
}

/// The bar loop. Fills `trades` and hands the marked-to-market equity of every
/// bar to `on_equity(index, bar, equity)`; returns the number of bars during
/// which a position was held at some point (entry and exit bars inclusive, as
/// backtesting.py counts exposure).
pub(super) fn simulate(
    bars: &[Bar],
    signals: &[i8],
    cfg: &Config,
    trades: &mut Vec<Trade>,
    on_equity: impl FnMut(usize, &Bar, f64),
) -> usize {
    simulate_marks(bars, signals, cfg, trades, &mut EachBar(on_equity))
}

/// [`simulate`] handing the equity to `marks`.
fn simulate_marks(
    bars: &[Bar],
    signals: &[i8],
    cfg: &Config,
    trades: &mut Vec<Trade>,
    marks: &mut impl Marks,
) -> usize {
    let r = Rules::new(cfg);
    // Without stops nothing blocks a signal and no bar checks its range: the
    // optimizer's candidates mostly run without, and the loop is half as long.
    if r.sl.is_nan() && r.tp.is_nan() {
        simulate_with::<false>(bars, signals, cfg, &r, trades, marks)
    } else {
        simulate_with::<true>(bars, signals, cfg, &r, trades, marks)
    }
}

fn simulate_with<const STOPS: bool>(
    bars: &[Bar],
    signals: &[i8],
    cfg: &Config,
    r: &Rules,
    trades: &mut Vec<Trade>,
    marks: &mut impl Marks,
) -> usize {
    trades.clear();
    let n = bars.len();
    if n == 0 {
        return 0;
    }
    let initial = if cfg.initial_equity.is_finite() && cfg.initial_equity > 0.0 {
        cfg.initial_equity
    } else {
        0.0
    };
    let mut book = Book {
        cash: initial,
        dir: 0,
        qty: 0.0,
        size: 0.0,
        entry_px: 0.0,
        entry_fee: 0.0,
        entry_bar: 0,
        sl_level: f64::NAN,
        tp_level: f64::NAN,
        trades,
    };
    let min_target: i8 = if r.allow_short { -1 } else { 0 };
    let mut pending = 0i8;
    let mut blocked = 0i8;
    let mut exposed = 0usize;
    let last = n - 1;

    let target = |i: usize| {
        signals
            .get(i)
            .copied()
            .unwrap_or(0)
            .signum()
            .max(min_target)
    };
    let mut i = 0;
    while i < n {
        let b = &bars[i];
        let held_at_open = book.dir;
        // Position changes are rare; keep them out of the straight-line path.
        if pending != book.dir {
            if book.dir != 0 {
                book.close_market(b.open, i, bars, Exit::Signal, r);
            }
            if pending != 0 {
                book.open(pending, b.open, i, r);
            }
        }
        exposed += ((held_at_open | book.dir) != 0) as usize;
        if STOPS && book.dir != 0 {
            let stopped = book.check_stops(b, i, bars, r);
            if stopped != 0 {
                blocked = stopped;
            }
        }
        if i == last && book.dir != 0 {
            book.close_market(b.close, i, bars, Exit::EndOfData, r);
        }
        marks.mark(i, b, book.cash + book.qty * (b.close - book.entry_px));

        let mut next = target(i);
        if STOPS && blocked != 0 {
            if next == blocked {
                next = 0;
            } else {
                blocked = 0;
            }
        }
        pending = next;
        i += 1;
        if !STOPS {
            // The bars before the target changes (or the last bar) fill nothing
            // and close nothing: only the mark to market moves, so the book
            // stays in registers for the whole run.
            let (dir, cash, qty, entry_px) = (book.dir, book.cash, book.qty, book.entry_px);
            let held = (dir != 0) as usize;
            let end = last.min(signals.len());
            if pending == dir && i < end {
                // The run ends after the first bar whose target differs.
                let differs = |s: i8| s.signum().max(min_target) != dir;
                let stop = i + first_where(&signals[i..end], differs).map_or(end - i, |k| k + 1);
                marks.hold(bars, i, stop, (cash, qty, entry_px));
                exposed += held * (stop - i);
                pending = target(stop - 1);
                i = stop;
            }
        }
    }
    exposed
}

/// Index of the first item for which `hit` holds. Looks at a chunk at a time
/// without an exit inside it, which the compiler turns into vector compares:
/// the fill loop's runs of unchanged targets are hundreds of bars long. In the
/// chunk that holds one, a mask of the chunk's hits gives the first without a
/// branch per item.
fn first_where(items: &[i8], hit: impl Fn(i8) -> bool) -> Option<usize> {
    const CHUNK: usize = 32;
    let mut chunks = items.chunks_exact(CHUNK);
    let mut at = 0;
    for chunk in &mut chunks {
        if chunk.iter().fold(false, |any, &s| any | hit(s)) {
            let mask = chunk
                .iter()
                .enumerate()
                .fold(0u32, |m, (k, &s)| m | (u32::from(hit(s)) << k));
            return Some(at + mask.trailing_zeros() as usize);
        }
        at += CHUNK;
    }
    chunks
        .remainder()
        .iter()
        .position(|&s| hit(s))
        .map(|k| at + k)
}

/// `(time, value)` points of a downsampled curve.
type Series = Vec<(i64, f64)>;

/// Streaming equity downsampler: records evenly spaced bars as they pass
/// (the indices are known up front from the bar count), then merges in the
/// deepest drawdown's peak and trough, which are only known at the end.
struct Sampler {
    n: usize,
    /// Evenly spaced slots (the first and last bar included).
    k: usize,
    taken: usize,
    /// Next bar index to record; `usize::MAX` once all slots are taken.
    next: usize,
    /// `(index, time, equity, drawdown %)`.
    points: Vec<(usize, i64, f64, f64)>,
}

impl Sampler {
    /// At most `max_points` points in total; at least 4 so first, last, peak
    /// and trough always fit.
    fn new(n: usize, max_points: usize) -> Sampler {
        let max_points = max_points.max(4);
        let k = if n <= max_points { n } else { max_points - 2 };
        Sampler {
            n,
            k,
            taken: 0,
            next: if n == 0 { usize::MAX } else { 0 },
            points: Vec::with_capacity(max_points.min(n)),
        }
    }

    #[cold]
    fn record(&mut self, i: usize, time: i64, equity: f64, running_peak: f64) {
        self.points
            .push((i, time, equity, drawdown_pct(equity, running_peak)));
        self.taken += 1;
        self.next = if self.taken >= self.k {
            usize::MAX
        } else if self.k == self.n {
            self.taken
        } else {
            // k ≥ 2 here and n - 1 > k - 1, so these indices strictly increase.
            self.taken * (self.n - 1) / (self.k - 1)
        };
    }

    fn finish(mut self, deepest: Option<Deepest>) -> (Series, Series) {
        if let Some(d) = deepest {
            let trough_dd = drawdown_pct(d.trough_equity, d.peak_equity);
            for p in [
                (d.peak_idx, d.peak_time, d.peak_equity, 0.0),
                (d.trough_idx, d.trough_time, d.trough_equity, trough_dd),
            ] {
                if let Err(at) = self.points.binary_search_by_key(&p.0, |q| q.0) {
                    self.points.insert(at, p);
                }
            }
        }
        self.points
            .iter()
            .map(|&(_, t, e, dd)| ((t, e), (t, dd)))
            .unzip()
    }
}

/// `(equity / peak - 1) · 100`; 0 when there is no positive peak to measure from.
fn drawdown_pct(equity: f64, peak: f64) -> f64 {
    if peak > 0.0 {
        (equity / peak - 1.0) * 100.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bars one minute apart from (open, high, low, close).
    fn bars(ohlc: &[(f64, f64, f64, f64)]) -> Vec<Bar> {
        ohlc.iter()
            .enumerate()
            .map(|(i, &(open, high, low, close))| Bar {
                time: 1_700_000_000 + i as i64 * 60,
                open,
                high,
                low,
                close,
                volume: 1.0,
            })
            .collect()
    }

    fn flat(px: &[f64]) -> Vec<Bar> {
        bars(&px.iter().map(|&p| (p, p, p, p)).collect::<Vec<_>>())
    }

    fn cfg() -> Config {
        Config {
            initial_equity: 1000.0,
            ..Config::default()
        }
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9, "{a} != {b}");
    }

    #[test]
    fn signal_fills_at_next_open() {
        // Signal at close of bar 0 -> buy at open of bar 1 (101), exit signal at
        // close of bar 2 -> sell at open of bar 3 (110).
        let b = bars(&[
            (100.0, 100.0, 100.0, 100.0),
            (101.0, 106.0, 100.0, 105.0),
            (104.0, 108.0, 103.0, 107.0),
            (110.0, 111.0, 109.0, 110.0),
            (120.0, 120.0, 120.0, 120.0),
        ]);
        let res = run(&b, &[1, 1, 0, 0, 0], &cfg());
        assert_eq!(res.trades.len(), 1);
        let t = res.trades[0];
        close(t.entry_px, 101.0);
        close(t.exit_px, 110.0);
        assert_eq!((t.entry_time, t.exit_time), (b[1].time, b[3].time));
        assert_eq!((t.direction, t.bars, t.exit), (1, 2, Exit::Signal));
        let units = 1000.0 / 101.0;
        close(t.size, units);
        close(t.pnl, units * 9.0);
        close(t.return_pct, 9.0 / 101.0 * 100.0);
        // Equity is marked at each close: flat, 105, 107, then realised at 110.
        let eq: Vec<f64> = res.equity.iter().map(|p| p.1).collect();
        let want = [
            1000.0,
            units * 105.0,
            units * 107.0,
            units * 110.0,
            units * 110.0,
        ];
        for (g, w) in eq.iter().zip(want) {
            close(*g, w);
        }
        // Exposure = bars 1..=3 of 5.
        close(res.stats.exposure_time_pct, 60.0);
    }

    #[test]
    fn fees_and_slippage_are_charged_against_the_trader() {
        // 10 bps fee per side, 50 bps slippage. Long: buy 100 * 1.005 = 100.5,
        // sell 110 * 0.995 = 109.45. units = 1000 / (100.5 * 1.001).
        let b = flat(&[90.0, 100.0, 110.0, 110.0]);
        let c = Config {
            fee_rate: 0.001,
            slippage_bps: 50.0,
            ..cfg()
        };
        let res = run(&b, &[1, 0, 0, 0], &c);
        let t = res.trades[0];
        let units = 1000.0 / (100.5 * 1.001);
        close(t.entry_px, 100.5);
        close(t.exit_px, 109.45);
        close(t.size, units);
        let fees = units * 100.5 * 0.001 + units * 109.45 * 0.001;
        close(t.pnl, units * (109.45 - 100.5) - fees);
        close(res.stats.equity_final, 1000.0 + t.pnl);
        // Short: sell 100 * 0.995 = 99.5, buy back 110 * 1.005 = 110.55.
        let res = run(&b, &[-1, 0, 0, 0], &c);
        let t = res.trades[0];
        close(t.entry_px, 99.5);
        close(t.exit_px, 110.55);
        let units = 1000.0 / (99.5 * 1.001);
        let fees = units * 99.5 * 0.001 + units * 110.55 * 0.001;
        close(t.pnl, -units * (110.55 - 99.5) - fees);
        assert_eq!(t.direction, -1);
    }

    #[test]
    fn stop_loss_fills_first_when_both_levels_are_inside_one_bar() {
        // Entry at 100 (bar 1 open). SL 5 % = 95, TP 5 % = 105; bar 2 spans both.
        let b = bars(&[
            (100.0, 100.0, 100.0, 100.0),
            (100.0, 101.0, 99.0, 100.0),
            (100.0, 106.0, 94.0, 100.0),
            (100.0, 100.0, 100.0, 100.0),
        ]);
        let c = Config {
            sl_pct: Some(5.0),
            tp_pct: Some(5.0),
            ..cfg()
        };
        let res = run(&b, &[1, 1, 1, 1], &c);
        assert_eq!(
            res.trades.len(),
            1,
            "no re-entry while the signal is unchanged"
        );
        let t = res.trades[0];
        assert_eq!(t.exit, Exit::StopLoss);
        close(t.exit_px, 95.0);
        assert_eq!(t.exit_time, b[2].time);
        // Short mirror: SL at 105 wins over TP at 95.
        let res = run(&b, &[-1, -1, -1, -1], &c);
        assert_eq!(res.trades[0].exit, Exit::StopLoss);
        close(res.trades[0].exit_px, 105.0);
    }

    #[test]
    fn take_profit_fills_at_level_without_slippage() {
        let b = bars(&[
            (100.0, 100.0, 100.0, 100.0),
            (100.0, 101.0, 99.0, 100.0),
            (101.0, 111.0, 100.0, 104.0),
        ]);
        let c = Config {
            sl_pct: Some(5.0),
            tp_pct: Some(10.0),
            slippage_bps: 10.0,
            ..cfg()
        };
        let res = run(&b, &[1, 1, 1], &c);
        let t = res.trades[0];
        assert_eq!(t.exit, Exit::TakeProfit);
        // Entry 100.1 (slipped), TP = 100.1 * 1.1.
        close(t.exit_px, 100.1 * 1.1);
    }

    #[test]
    fn gaps_through_levels_fill_at_the_open() {
        // Long from 100 with SL 5 %: bar 2 gaps down to open 90 -> fill at 90, not 95.
        let b = bars(&[
            (100.0, 100.0, 100.0, 100.0),
            (100.0, 101.0, 99.0, 100.0),
            (90.0, 92.0, 88.0, 91.0),
        ]);
        let c = Config {
            sl_pct: Some(5.0),
            tp_pct: Some(5.0),
            ..cfg()
        };
        let res = run(&b, &[1, 1, 1], &c);
        assert_eq!(res.trades[0].exit, Exit::StopLoss);
        close(res.trades[0].exit_px, 90.0);
        // Gap up through TP at 105 -> fill at the better open 120.
        let b = bars(&[
            (100.0, 100.0, 100.0, 100.0),
            (100.0, 101.0, 99.0, 100.0),
            (120.0, 121.0, 119.0, 120.0),
        ]);
        let res = run(&b, &[1, 1, 1], &c);
        assert_eq!(res.trades[0].exit, Exit::TakeProfit);
        close(res.trades[0].exit_px, 120.0);
    }

    #[test]
    fn stops_are_live_on_the_entry_bar_and_rearm_on_signal_change() {
        let b = bars(&[
            (100.0, 100.0, 100.0, 100.0),
            (100.0, 100.0, 90.0, 95.0), // entry at 100, low 90 hits SL 95 in-bar
            (95.0, 95.0, 95.0, 95.0),
            (95.0, 95.0, 95.0, 95.0),
            (96.0, 96.0, 96.0, 96.0),
        ]);
        let c = Config {
            sl_pct: Some(5.0),
            ..cfg()
        };
        // Signal flat at bar 2 re-arms; long again at bar 3 -> enter at open of 4.
        let res = run(&b, &[1, 1, 0, 1, 1], &c);
        assert_eq!(res.trades.len(), 2);
        assert_eq!(res.trades[0].exit, Exit::StopLoss);
        assert_eq!(res.trades[0].bars, 0);
        assert_eq!(res.trades[1].entry_time, b[4].time);
        assert_eq!(res.trades[1].exit, Exit::EndOfData);
    }

    #[test]
    fn reversal_closes_and_opens_at_the_same_open() {
        let b = flat(&[100.0, 100.0, 110.0, 121.0, 121.0]);
        let c = Config {
            fee_rate: 0.01,
            ..cfg()
        };
        let res = run(&b, &[1, -1, -1, 0, 0], &c);
        assert_eq!(res.trades.len(), 2);
        let (a, s) = (res.trades[0], res.trades[1]);
        assert_eq!((a.direction, s.direction), (1, -1));
        assert_eq!(a.exit_time, s.entry_time);
        close(a.exit_px, 110.0);
        close(s.entry_px, 110.0);
        // The short is sized from the cash left after the long (fees included).
        let units_a = 1000.0 / (100.0 * 1.01);
        let cash = 1000.0 + a.pnl;
        close(
            a.pnl,
            units_a * 10.0 - units_a * 100.0 * 0.01 - units_a * 110.0 * 0.01,
        );
        close(s.size, cash / (110.0 * 1.01));
        close(res.stats.equity_final, cash + s.pnl);
        // Long-only: the short target becomes flat.
        let long_only = Config {
            allow_short: false,
            ..c
        };
        let res = run(&b, &[1, -1, -1, 0, 0], &long_only);
        assert_eq!(res.trades.len(), 1);
        assert_eq!(res.trades[0].direction, 1);
    }

    #[test]
    fn open_position_is_closed_at_the_last_close() {
        let b = bars(&[
            (100.0, 100.0, 100.0, 100.0),
            (100.0, 100.0, 100.0, 100.0),
            (100.0, 130.0, 100.0, 120.0),
        ]);
        let c = Config {
            slippage_bps: 100.0,
            ..cfg()
        };
        let res = run(&b, &[1, 1, 1], &c);
        let t = res.trades[0];
        assert_eq!(t.exit, Exit::EndOfData);
        assert_eq!(t.exit_time, b[2].time);
        close(t.entry_px, 101.0);
        close(t.exit_px, 120.0 * 0.99);
        close(res.stats.equity_final, 1000.0 + t.pnl);
        close(res.equity.last().unwrap().1, 1000.0 + t.pnl);
    }

    #[test]
    fn last_signal_is_never_filled_and_short_signals_are_padded() {
        let b = flat(&[100.0, 100.0, 100.0]);
        assert!(run(&b, &[0, 0, 1], &cfg()).trades.is_empty());
        assert!(run(&b, &[], &cfg()).trades.is_empty());
        let res = run(&[], &[], &cfg());
        assert!(res.trades.is_empty() && res.equity.is_empty());
        assert!(res.stats.return_pct.is_nan());
    }

    #[test]
    fn garbage_config_does_not_panic_and_validate_rejects_it() {
        let b = flat(&[100.0, 101.0, 102.0, 103.0]);
        let bad = Config {
            initial_equity: f64::NAN,
            fee_rate: -1.0,
            slippage_bps: f64::INFINITY,
            sl_pct: Some(-3.0),
            tp_pct: Some(f64::NAN),
            allow_short: true,
            max_equity_points: 0,
        };
        let res = run(&b, &[1, -1, 1, 0], &bad);
        assert!(res.trades.is_empty(), "no cash, no trades");
        assert!(bad.validate().is_err());
        assert_eq!(cfg().validate(), Ok(()));
        let e = Config {
            fee_rate: 0.7,
            ..cfg()
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.field, "fee_rate");
    }

    #[test]
    fn downsampling_keeps_first_last_and_trough() {
        // 1000 bars rising, with one deep dip at bar 333 (not on the even grid).
        let mut px: Vec<f64> = (0..1000).map(|i| 100.0 + i as f64 * 0.1).collect();
        px[333] = 50.0;
        let b = flat(&px);
        let mut sig = vec![1i8; 1000];
        sig[999] = 0;
        let c = Config {
            max_equity_points: 50,
            ..cfg()
        };
        let res = run(&b, &sig, &c);
        assert!(res.equity.len() <= 50 && res.equity.len() >= 48);
        assert_eq!(res.equity.len(), res.drawdown.len());
        assert_eq!(res.equity[0].0, b[0].time);
        assert_eq!(res.equity.last().unwrap().0, b[999].time);
        let trough = res.equity.iter().position(|p| p.0 == b[333].time);
        let trough = trough.expect("trough kept");
        assert!(res.equity.iter().any(|p| p.0 == b[332].time), "peak kept");
        // The drawdown at the kept trough is the series' maximum drawdown.
        close(res.drawdown[trough].1, res.stats.max_drawdown_pct);
        assert!(res.drawdown.iter().all(|p| p.1 <= 0.0));
        assert!(res.equity.windows(2).all(|w| w[0].0 < w[1].0));

        // Every kept point is the exact per-bar equity, and its drawdown is
        // measured from the running peak over all bars, not just kept ones.
        let mut full = Vec::new();
        simulate(&b, &sig, &c, &mut Vec::new(), |_, _, e| full.push(e));
        for (&(t, e), &(_, d)) in res.equity.iter().zip(&res.drawdown) {
            let i = b.iter().position(|x| x.time == t).unwrap();
            close(e, full[i]);
            let peak = full[..=i].iter().cloned().fold(f64::MIN, f64::max);
            close(d, (full[i] / peak - 1.0) * 100.0);
        }
        // Short series are returned whole.
        let res = run(&b[..30], &sig[..30], &c);
        assert_eq!(res.equity.len(), 30);
    }
}

#[cfg(test)]
mod lookahead {
    use proptest::prelude::*;
    use proptest::sample::Index;

    use super::*;

    fn bars_from(steps: &[(f64, f64, f64)]) -> Vec<Bar> {
        let mut px = 100.0;
        steps
            .iter()
            .enumerate()
            .map(|(i, &(r, uw, lw))| {
                let open = px;
                px *= 1.0 + r;
                Bar {
                    time: 1_700_000_000 + i as i64 * 3600,
                    open,
                    high: open.max(px) * (1.0 + uw),
                    low: open.min(px) * (1.0 - lw),
                    close: px,
                    volume: 1.0,
                }
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Equity and trades up to bar `t` depend only on bars and signals up
        /// to `t` (the end-of-data close only touches the final bar).
        #[test]
        fn fills_never_look_ahead(
            steps in prop::collection::vec((-0.05f64..0.05, 0.0f64..0.03, 0.0f64..0.03), 3..120),
            sig in prop::collection::vec(-1i8..=1, 120),
            alt in prop::collection::vec((-0.05f64..0.05, 0.0f64..0.03, 0.0f64..0.03), 120),
            alt_sig in prop::collection::vec(-1i8..=1, 120),
            cut in any::<Index>(),
            stops in any::<bool>(),
        ) {
            let bars = bars_from(&steps);
            let n = bars.len();
            let t = cut.index(n - 1); // t < n - 1
            let mut other_steps = steps[..=t].to_vec();
            other_steps.extend_from_slice(&alt[..n - t - 1]);
            let other = bars_from(&other_steps);
            let mut other_sig = sig[..=t].to_vec();
            other_sig.extend_from_slice(&alt_sig[..n - t - 1]);

            let cfg = Config {
                fee_rate: 0.001,
                slippage_bps: 5.0,
                sl_pct: stops.then_some(2.0),
                tp_pct: stops.then_some(3.0),
                ..Config::default()
            };
            let (mut ta, mut tb, mut ea, mut eb) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            simulate(&bars, &sig[..n], &cfg, &mut ta, |_, _, e| ea.push(e));
            simulate(&other, &other_sig, &cfg, &mut tb, |_, _, e| eb.push(e));
            prop_assert_eq!(ea.len(), n);
            prop_assert_eq!(&ea[..=t], &eb[..=t]);
            let cutoff = bars[t].time;
            let closed = |v: &[Trade]| -> Vec<Trade> {
                v.iter().filter(|x| x.exit_time <= cutoff).copied().collect()
            };
            prop_assert_eq!(closed(&ta), closed(&tb));
        }
    }
}
