//! Strategy catalogue, parameter handling and signal generation.
//!
//! A strategy turns bars into a *target position* per bar: `+1` long, `-1`
//! short, `0` flat, decided at the close of bar `i` from `bars[..=i]` only. The
//! backtester fills that target at the next bar's open, so no strategy can see
//! the future. Every strategy emits both long and short targets; the backtest
//! config decides whether shorts are taken.
//!
//! Parameters arrive from HTTP requests, so [`resolve_params`] validates them
//! and reports errors with a JSON-path-like field name; signal generation itself
//! never panics, even on nonsense parameters (it yields flat signals).

use std::fmt;

use super::Bar;
use super::indicators::{self, Ema, Running, Sma};

/// Broad family a strategy belongs to, for grouping in the UI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    Trend,
    MeanReversion,
    Breakout,
    Momentum,
    Volatility,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Trend => "trend",
            Category::MeanReversion => "mean-reversion",
            Category::Breakout => "breakout",
            Category::Momentum => "momentum",
            Category::Volatility => "volatility",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamKind {
    Int,
    Float,
}

impl ParamKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ParamKind::Int => "int",
            ParamKind::Float => "float",
        }
    }
}

/// One tunable parameter: its valid range and the lattice (`min + k·step`)
/// that [`grid`] and [`random`] enumerate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParamSpec {
    pub name: &'static str,
    pub kind: ParamKind,
    pub default: f64,
    pub min: f64,
    pub max: f64,
    pub step: f64,
    pub description: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StrategySpec {
    pub id: &'static str,
    pub name: &'static str,
    pub category: Category,
    pub description: &'static str,
    pub entry_summary: &'static str,
    pub exit_summary: &'static str,
    pub indicator_summary: &'static str,
    pub params: &'static [ParamSpec],
}

/// Upper bound on parameters per strategy; lets [`Params`] be `Copy` and
/// allocation-free, which matters when the optimizer juggles thousands of them.
pub const MAX_PARAMS: usize = 4;

/// Parameter values in the order of the spec's `params`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    values: [f64; MAX_PARAMS],
    len: usize,
}

impl Params {
    /// The spec's defaults (extra parameters beyond [`MAX_PARAMS`] are ignored).
    pub fn defaults(spec: &StrategySpec) -> Params {
        // Unused slots are 0.0, not NaN, so derived equality works.
        let mut p = Params {
            values: [0.0; MAX_PARAMS],
            len: spec.params.len().min(MAX_PARAMS),
        };
        for (v, ps) in p.values.iter_mut().zip(spec.params) {
            *v = ps.default;
        }
        p
    }

    pub fn values(&self) -> &[f64] {
        &self.values[..self.len]
    }

    /// Value at position `i`, NaN if out of range (so a mismatched spec yields
    /// flat signals rather than a panic).
    pub fn get(&self, i: usize) -> f64 {
        self.values().get(i).copied().unwrap_or(f64::NAN)
    }

    /// `(name, value)` pairs, e.g. for echoing the resolved parameters back.
    pub fn named<'a>(
        &'a self,
        spec: &'a StrategySpec,
    ) -> impl Iterator<Item = (&'static str, f64)> + 'a {
        spec.params
            .iter()
            .map(|p| p.name)
            .zip(self.values().iter().copied())
    }
}

/// A rejected parameter, addressed like the request body field it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError {
    /// e.g. `"parameters.fast"`.
    pub field: String,
    pub message: String,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for ParamError {}

const fn int(
    name: &'static str,
    default: f64,
    min: f64,
    max: f64,
    description: &'static str,
) -> ParamSpec {
    ParamSpec {
        name,
        kind: ParamKind::Int,
        default,
        min,
        max,
        step: 1.0,
        description,
    }
}

const fn float(
    name: &'static str,
    default: f64,
    min: f64,
    max: f64,
    step: f64,
    description: &'static str,
) -> ParamSpec {
    ParamSpec {
        name,
        kind: ParamKind::Float,
        default,
        min,
        max,
        step,
        description,
    }
}

/// The catalogue. Every id here is handled by [`signals`]; a test enforces it.
pub static STRATEGIES: &[StrategySpec] = &[
    StrategySpec {
        id: "sma_cross",
        name: "SMA crossover",
        category: Category::Trend,
        description: "Follows the trend by comparing a fast and a slow simple moving average.",
        entry_summary: "Long while SMA(fast) > SMA(slow); short while SMA(fast) < SMA(slow).",
        exit_summary: "Reverses when the averages cross the other way.",
        indicator_summary: "SMA(fast), SMA(slow) of close.",
        params: &[
            int("fast", 10.0, 2.0, 200.0, "Fast SMA period (bars)."),
            int(
                "slow",
                30.0,
                3.0,
                400.0,
                "Slow SMA period (bars); must exceed fast.",
            ),
        ],
    },
    StrategySpec {
        id: "ema_cross",
        name: "EMA crossover",
        category: Category::Trend,
        description: "Trend following with exponential averages, which react faster than SMAs.",
        entry_summary: "Long while EMA(fast) > EMA(slow); short while EMA(fast) < EMA(slow).",
        exit_summary: "Reverses when the averages cross the other way.",
        indicator_summary: "EMA(fast), EMA(slow) of close (SMA-seeded).",
        params: &[
            int("fast", 12.0, 2.0, 200.0, "Fast EMA period (bars)."),
            int(
                "slow",
                26.0,
                3.0,
                400.0,
                "Slow EMA period (bars); must exceed fast.",
            ),
        ],
    },
    StrategySpec {
        id: "rsi_reversion",
        name: "RSI mean reversion",
        category: Category::MeanReversion,
        description: "Fades stretched moves: buys oversold and sells overbought RSI readings.",
        entry_summary: "Long when RSI < lower; short when RSI > upper.",
        exit_summary: "Long exits when RSI >= 50, short exits when RSI <= 50.",
        indicator_summary: "Wilder RSI(period) of close.",
        params: &[
            int("period", 14.0, 2.0, 100.0, "RSI period (bars)."),
            float(
                "lower",
                30.0,
                5.0,
                50.0,
                1.0,
                "Oversold threshold; must be below upper.",
            ),
            float("upper", 70.0, 50.0, 95.0, 1.0, "Overbought threshold."),
        ],
    },
    StrategySpec {
        id: "bollinger_reversion",
        name: "Bollinger band reversion",
        category: Category::MeanReversion,
        description: "Buys closes below the lower band and sells closes above the upper band.",
        entry_summary: "Long when close < lower band; short when close > upper band.",
        exit_summary: "Exit when the close returns to the middle band.",
        indicator_summary: "SMA(period) ± k · population stddev(period) of close.",
        params: &[
            int("period", 20.0, 5.0, 200.0, "Band window (bars)."),
            float(
                "k",
                2.0,
                0.5,
                4.0,
                0.1,
                "Band width in standard deviations.",
            ),
        ],
    },
    StrategySpec {
        id: "donchian_breakout",
        name: "Donchian breakout",
        category: Category::Breakout,
        description: "Turtle-style channel breakout with a shorter exit channel.",
        entry_summary: "Long when close > highest high of the previous `entry` bars; \
                        short when close < their lowest low.",
        exit_summary: "Long exits when close < lowest low of the previous `exit` bars; \
                       short exits when close > their highest high.",
        indicator_summary: "Donchian(entry), Donchian(exit) of the prior bars.",
        params: &[
            int("entry", 20.0, 5.0, 200.0, "Entry channel length (bars)."),
            int(
                "exit",
                10.0,
                2.0,
                200.0,
                "Exit channel length (bars); at most entry.",
            ),
        ],
    },
    StrategySpec {
        id: "macd",
        name: "MACD signal cross",
        category: Category::Momentum,
        description: "Rides momentum using the MACD line against its signal line.",
        entry_summary: "Long while MACD > signal; short while MACD < signal.",
        exit_summary: "Reverses when MACD crosses its signal line.",
        indicator_summary: "EMA(fast) - EMA(slow) of close, signal = EMA(signal) of that.",
        params: &[
            int(
                "fast",
                12.0,
                2.0,
                50.0,
                "Fast EMA period; must be below slow.",
            ),
            int("slow", 26.0, 5.0, 100.0, "Slow EMA period."),
            int("signal", 9.0, 2.0, 50.0, "Signal EMA period."),
        ],
    },
    StrategySpec {
        id: "supertrend",
        name: "SuperTrend",
        category: Category::Trend,
        description: "ATR trailing-band trend follower.",
        entry_summary: "Long while the SuperTrend direction is up; short while it is down.",
        exit_summary: "Reverses when the close crosses the trailing band.",
        indicator_summary: "SuperTrend(ATR period, multiplier) on hl2.",
        params: &[
            int("atr_period", 10.0, 2.0, 100.0, "Wilder ATR period (bars)."),
            float("multiplier", 3.0, 0.5, 6.0, 0.1, "Band distance in ATRs."),
        ],
    },
    StrategySpec {
        id: "keltner_breakout",
        name: "Keltner channel breakout",
        category: Category::Volatility,
        description: "Trades volatility expansions out of an ATR channel around an EMA.",
        entry_summary: "Long when close > upper channel; short when close < lower channel.",
        exit_summary: "Exit when the close crosses back through the middle EMA.",
        indicator_summary: "EMA(ema_period) ± k · ATR(atr_period).",
        params: &[
            int(
                "ema_period",
                20.0,
                5.0,
                200.0,
                "Middle-line EMA period (bars).",
            ),
            int("atr_period", 10.0, 2.0, 100.0, "Wilder ATR period (bars)."),
            float("k", 2.0, 0.5, 5.0, 0.1, "Channel width in ATRs."),
        ],
    },
];

/// Look a strategy up by id.
pub fn strategy(id: &str) -> Option<&'static StrategySpec> {
    STRATEGIES.iter().find(|s| s.id == id)
}

fn field(name: &str) -> String {
    format!("parameters.{name}")
}

/// Validate user-supplied parameters and fill in defaults for the missing ones.
///
/// Rejects unknown names (listing the valid ones), duplicates, non-finite
/// values, values outside `[min, max]`, non-integers for `Int` parameters and
/// violations of cross-parameter constraints such as `fast < slow`.
pub fn resolve_params(spec: &StrategySpec, given: &[(String, f64)]) -> Result<Params, ParamError> {
    let mut params = Params::defaults(spec);
    let mut seen = [false; MAX_PARAMS];
    for (name, value) in given {
        let Some(idx) = spec.params.iter().position(|p| p.name == name) else {
            let valid: Vec<&str> = spec.params.iter().map(|p| p.name).collect();
            let valid = if valid.is_empty() {
                "none".to_string()
            } else {
                valid.join(", ")
            };
            return Err(ParamError {
                field: field(name),
                message: format!(
                    "unknown parameter \"{name}\" for strategy {}; valid parameters: {valid}",
                    spec.id
                ),
            });
        };
        let ps = &spec.params[idx];
        if idx >= MAX_PARAMS {
            // Only reachable for a foreign spec with too many parameters.
            return Err(ParamError {
                field: field(name),
                message: format!("strategies support at most {MAX_PARAMS} parameters"),
            });
        }
        if seen[idx] {
            return Err(ParamError {
                field: field(name),
                message: "given more than once".to_string(),
            });
        }
        seen[idx] = true;
        let v = *value;
        if !v.is_finite() {
            return Err(ParamError {
                field: field(name),
                message: "must be a finite number".to_string(),
            });
        }
        if ps.kind == ParamKind::Int && v.fract() != 0.0 {
            return Err(ParamError {
                field: field(name),
                message: format!("must be an integer (got {v})"),
            });
        }
        if v < ps.min || v > ps.max {
            return Err(ParamError {
                field: field(name),
                message: format!("must be between {} and {} (got {v})", ps.min, ps.max),
            });
        }
        params.values[idx] = v;
    }
    check_constraints(spec, &params)?;
    Ok(params)
}

/// Cross-parameter rules. Kept next to the catalogue so grid/random sampling
/// and request validation agree on what a valid combination is.
fn check_constraints(spec: &StrategySpec, p: &Params) -> Result<(), ParamError> {
    let less = |a: usize, b: usize, strict: bool| -> Result<(), ParamError> {
        let (x, y) = (p.get(a), p.get(b));
        let ok = if strict { x < y } else { x <= y };
        if ok {
            return Ok(());
        }
        let (na, nb) = (spec.params[a].name, spec.params[b].name);
        let rel = if strict { "less than" } else { "at most" };
        Err(ParamError {
            field: field(na),
            message: format!("{na} ({x}) must be {rel} {nb} ({y})"),
        })
    };
    match spec.id {
        "sma_cross" | "ema_cross" | "macd" => less(0, 1, true),
        "rsi_reversion" => less(1, 2, true),
        "donchian_breakout" => less(1, 0, false),
        _ => Ok(()),
    }
}

fn satisfies_constraints(spec: &StrategySpec, p: &Params) -> bool {
    check_constraints(spec, p).is_ok()
}

/// Reusable indicator buffers so repeated signal generation (the optimizer)
/// does not allocate per candidate once the buffers have grown.
#[derive(Debug, Default, Clone)]
pub struct SignalScratch {
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
    d: Vec<f64>,
    closes: Vec<f64>,
}

/// Target position per bar (`+1`/`-1`/`0`), decided at the close of bar `i`
/// from `bars[..=i]` only. `out` is cleared and gets one entry per bar.
pub fn signals(spec: &StrategySpec, params: &Params, bars: &[Bar], out: &mut Vec<i8>) {
    let mut scratch = SignalScratch::default();
    signals_with(spec, params, bars, &mut scratch, out);
}

/// [`signals`] with caller-owned scratch buffers.
pub fn signals_with(
    spec: &StrategySpec,
    params: &Params,
    bars: &[Bar],
    scratch: &mut SignalScratch,
    out: &mut Vec<i8>,
) {
    let mut closes = std::mem::take(&mut scratch.closes);
    closes.clear();
    if uses_closes(spec) {
        closes.extend(bars.iter().map(|b| b.close));
    }
    signals_core(spec, params, bars, &closes, scratch, out);
    scratch.closes = closes;
}

/// Whether [`signals_core`] reads the `closes` slice; the others read `bars`
/// directly, which saves a pass and a buffer on the hottest strategies.
fn uses_closes(spec: &StrategySpec) -> bool {
    !matches!(spec.id, "sma_cross" | "ema_cross" | "supertrend")
}

/// Periods come in as validated integers, but this must not panic on anything:
/// NaN and negatives become 0 (an unusable period, hence flat signals).
fn period(v: f64) -> usize {
    if v >= 1.0 { v as usize } else { 0 }
}

/// Shared by [`signals_with`] and the optimizer, which extracts `closes` once.
/// `closes` may be empty for strategies where [`uses_closes`] is false.
pub(super) fn signals_core(
    spec: &StrategySpec,
    p: &Params,
    bars: &[Bar],
    closes: &[f64],
    s: &mut SignalScratch,
    out: &mut Vec<i8>,
) {
    out.clear();
    out.reserve(bars.len());
    match spec.id {
        // The crossovers consume streaming averages directly: no indicator
        // buffers, one pass (this is the optimizer's and the bench's hot path).
        "sma_cross" => {
            let close = |i: usize| bars[i].close;
            let fast = indicators::sma_stream(bars.len(), period(p.get(0)), close);
            let slow = indicators::sma_stream(bars.len(), period(p.get(1)), close);
            cross(fast, slow, out);
        }
        "ema_cross" => {
            let close = bars.iter().map(|b| b.close);
            let fast = indicators::ema_stream(close.clone(), period(p.get(0)));
            let slow = indicators::ema_stream(close, period(p.get(1)));
            cross(fast, slow, out);
        }
        "macd" => {
            let (f, sl, sg) = (period(p.get(0)), period(p.get(1)), period(p.get(2)));
            indicators::macd(closes, f, sl, sg, &mut s.a, &mut s.b, &mut s.c);
            cross(s.a.iter().copied(), s.b.iter().copied(), out);
        }
        "supertrend" => {
            indicators::supertrend(bars, period(p.get(0)), p.get(1), &mut s.a, &mut s.b);
            // NaN (warm-up) casts to 0, i.e. flat.
            out.extend(s.b.iter().map(|&d| d as i8));
        }
        "rsi_reversion" => {
            indicators::rsi(closes, period(p.get(0)), &mut s.a);
            let (lo, hi) = (p.get(1), p.get(2));
            machine(
                out,
                s.a.iter().map(|&r| [r < lo, r > hi, r >= 50.0, r <= 50.0]),
            );
        }
        "bollinger_reversion" => {
            let (a, b, c) = (&mut s.a, &mut s.b, &mut s.c);
            indicators::bollinger(closes, period(p.get(0)), p.get(1), a, b, c);
            let it = closes.iter().zip(a.iter()).zip(b.iter()).zip(c.iter());
            machine(
                out,
                it.map(|(((&x, &m), &u), &l)| [x < l, x > u, x >= m, x <= m]),
            );
        }
        "donchian_breakout" => {
            indicators::donchian(bars, period(p.get(0)), &mut s.a, &mut s.b);
            indicators::donchian(bars, period(p.get(1)), &mut s.c, &mut s.d);
            let it = closes
                .iter()
                .zip(s.a.iter().zip(&s.b))
                .zip(s.c.iter().zip(&s.d));
            machine(
                out,
                it.map(|((&x, (&eu, &el)), (&xu, &xl))| [x > eu, x < el, x < xl, x > xu]),
            );
        }
        "keltner_breakout" => {
            let (a, b, c) = (&mut s.a, &mut s.b, &mut s.c);
            let (e, at, k) = (period(p.get(0)), period(p.get(1)), p.get(2));
            indicators::keltner(bars, e, at, k, a, b, c);
            let it = closes.iter().zip(a.iter()).zip(b.iter()).zip(c.iter());
            machine(
                out,
                it.map(|(((&x, &m), &u), &l)| [x > u, x < l, x < m, x > m]),
            );
        }
        _ => out.resize(bars.len(), 0),
    }
}

/// The two averages a moving-average crossover compares, as `(average, fast
/// period, slow period)`, or `None` for the other strategies. The optimizer
/// computes each period's average once with [`Averager`] and builds the
/// signals with [`cross_series`]: the same values [`signals_core`] streams.
pub(super) fn crossover(spec: &StrategySpec, p: &Params) -> Option<(Average, usize, usize)> {
    let kind = match spec.id {
        "sma_cross" => Average::Simple,
        "ema_cross" => Average::Exponential,
        _ => return None,
    };
    Some((kind, period(p.get(0)), period(p.get(1))))
}

/// Which moving average a crossover uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Average {
    Simple,
    Exponential,
}

/// The close's moving average of one period over `len` bars, one value at a time: the steps
/// of [`signals_core`]'s streams, resumable from a copy of their [`Running`] state.
#[derive(Debug, Clone, Copy)]
pub(super) enum Averager {
    Simple(Sma),
    Exponential(Ema),
}

impl Averager {
    pub(super) fn new(kind: Average, len: usize, period: usize) -> Averager {
        match kind {
            Average::Simple => Averager::Simple(Sma::new(len, period)),
            Average::Exponential => Averager::Exponential(Ema::new(period)),
        }
    }

    /// Values `from..from + out.len()` of the average of `closes`, the values before `from`
    /// having run on `run`, each passed through `store`.
    #[inline(always)]
    pub(super) fn fill<T>(
        &self,
        run: &mut Running,
        closes: &[f64],
        from: usize,
        out: &mut [T],
        store: impl Fn(f64) -> T,
    ) {
        match self {
            Averager::Simple(sma) => {
                for (k, v) in out.iter_mut().enumerate() {
                    *v = store(sma.next(run, from + k, |i| closes[i]));
                }
            }
            Averager::Exponential(ema) => {
                for (v, &x) in out.iter_mut().zip(&closes[from..]) {
                    *v = store(ema.next(run, x));
                }
            }
        }
    }
}

/// Bars a chunk of [`cross_series`] holds.
pub(super) const CROSS_CHUNK: usize = 32;

/// The crossover signals of two series, what [`cross`] makes of them, from the series
/// rounded to `f32`, which halves what is read and doubles the compares per instruction.
/// Rounding to nearest never reverses an order, so where two rounded values differ the
/// exact ones differ the same way, and where one is NaN so is the exact one (no order
/// either way); only where they are equal (a tie, or two values closer than `f32` tells
/// apart) is the order unknown. Such a chunk of `CROSS_CHUNK` bars is handed to
/// `exact(first bar, out)`, which writes the exact comparisons. Then a tie (or the NaN
/// warm-up) takes the position before it, which only chunks holding a zero need to look at.
pub(super) fn cross_series(
    fast: &[f32],
    slow: &[f32],
    mut exact: impl FnMut(usize, &mut [i8]),
    out: &mut Vec<i8>,
) {
    let n = fast.len().min(slow.len());
    // Every slot is written below, so only a length change touches memory here.
    out.resize(n, 0);
    let mut pos = 0i8;
    for (c, chunk) in out.chunks_mut(CROSS_CHUNK).enumerate() {
        let from = c * CROSS_CHUNK;
        let (f, s) = (
            &fast[from..from + chunk.len()],
            &slow[from..from + chunk.len()],
        );
        // Whether every bar is ordered, found with the compares: reading the chunk back
        // right after its byte stores would wait on them.
        let (mut unknown, mut ordered) = (false, true);
        for ((d, &f), &s) in chunk.iter_mut().zip(f).zip(s) {
            let (above, below) = (f > s, f < s);
            *d = above as i8 - below as i8;
            unknown |= f == s;
            ordered &= above | below;
        }
        if unknown {
            exact(from, chunk);
            ordered = chunk.iter().all(|&d| d != 0);
        }
        if ordered {
            pos = chunk[chunk.len() - 1];
            continue;
        }
        for d in chunk {
            if *d == 0 {
                *d = pos;
            } else {
                pos = *d;
            }
        }
    }
}

/// `+1` while `fast > slow`, `-1` while `fast < slow`, unchanged on ties and
/// `0` until both are defined (NaN compares false both ways). Written without
/// branches so the loop stays a straight compare-and-select.
fn cross(fast: impl Iterator<Item = f64>, slow: impl Iterator<Item = f64>, out: &mut Vec<i8>) {
    let mut pos = 0i8;
    out.extend(fast.zip(slow).map(|(f, s)| {
        let d = (f > s) as i8 - (f < s) as i8;
        pos = if d != 0 { d } else { pos };
        pos
    }));
}

/// Entry/exit state machine. Each item is
/// `[long_entry, short_entry, long_exit, short_exit]`; exits are applied first
/// so an opposite entry on the same bar becomes a reversal.
fn machine(out: &mut Vec<i8>, conds: impl Iterator<Item = [bool; 4]>) {
    let mut pos = 0i8;
    out.extend(conds.map(|[le, se, lx, sx]| {
        if (pos == 1 && lx) || (pos == -1 && sx) {
            pos = 0;
        }
        if pos == 0 {
            pos = if le {
                1
            } else if se {
                -1
            } else {
                0
            };
        }
        pos
    }));
}

/// Grids larger than this are thinned per dimension before enumeration so a
/// foreign spec with a huge space cannot stall a request.
const GRID_ENUM_LIMIT: u64 = 2_000_000;

/// The lattice values `min + k·step` of one parameter (snapped to integers for
/// `Int`, rounded to 1e-9 for floats so `0.1` steps do not print as
/// `0.30000000000000004`). A degenerate range yields just the default.
fn lattice(ps: &ParamSpec) -> Vec<f64> {
    let steps = (ps.max - ps.min) / ps.step;
    if !(steps.is_finite() && steps >= 0.0 && ps.step > 0.0) {
        return vec![ps.default];
    }
    let count = (steps + 1e-9).floor() as u64 + 1;
    let count = count.min(GRID_ENUM_LIMIT);
    (0..count)
        .map(|k| {
            let v = ps.min + k as f64 * ps.step;
            let v = match ps.kind {
                ParamKind::Int => v.round(),
                ParamKind::Float => (v * 1e9).round() / 1e9,
            };
            v.min(ps.max)
        })
        .collect()
}

/// `k` evenly spaced picks out of `items` (first and last included).
fn thin<T: Copy>(items: &[T], k: usize) -> Vec<T> {
    let n = items.len();
    if k >= n {
        return items.to_vec();
    }
    if k <= 1 {
        return items.first().copied().into_iter().collect();
    }
    (0..k).map(|j| items[j * (n - 1) / (k - 1)]).collect()
}

/// Full grid over each parameter's `min..=max` by `step` (cross-constraints
/// applied), evenly thinned to at most `max_points` (at least 1) and always
/// containing the defaults. Points are in lexicographic order, first
/// parameter outermost; thinning picks ranks `⌊j · total / max_points⌋`.
pub fn grid(spec: &StrategySpec, max_points: usize) -> Vec<Params> {
    let max_points = max_points.max(1);
    let defaults = Params::defaults(spec);
    let dims = defaults.len;
    let mut axes: Vec<Vec<f64>> = spec.params[..dims].iter().map(lattice).collect();
    let product = |axes: &[Vec<f64>]| {
        axes.iter()
            .fold(1u64, |acc, a| acc.saturating_mul(a.len() as u64))
    };
    if product(&axes) > GRID_ENUM_LIMIT {
        let per_dim = (GRID_ENUM_LIMIT as f64).powf(1.0 / dims as f64).floor() as usize;
        for a in &mut axes {
            *a = thin(a, per_dim.max(1));
        }
    }

    // Pass 1 counts valid points so pass 2 can pick evenly spaced ranks
    // without materialising the whole grid.
    let mut total = 0u64;
    for_each_point(&axes, |v| {
        total += satisfies_constraints(spec, &with_values(defaults, v)) as u64;
    });
    let mut picked = Vec::with_capacity((max_points as u64).min(total) as usize + 1);
    if total > 0 {
        let want = (max_points as u64).min(total);
        let mut next_pick = 0u64;
        let mut rank = 0u64;
        for_each_point(&axes, |v| {
            let p = with_values(defaults, v);
            if !satisfies_constraints(spec, &p) {
                return;
            }
            // Pick number j sits at rank floor(j * total / want).
            let j = picked.len() as u64;
            if j < want && rank == next_pick {
                picked.push(p);
                next_pick = ((j as u128 + 1) * total as u128 / want as u128) as u64;
            }
            rank += 1;
        });
    }
    if !picked.contains(&defaults) {
        let pos = picked.partition_point(|p| lex_less(p, &defaults));
        if picked.len() < max_points {
            picked.insert(pos, defaults);
        } else {
            // Replacing the neighbour keeps the list sorted and the size capped.
            let at = pos.min(picked.len() - 1);
            picked[at] = defaults;
        }
    }
    picked
}

fn with_values(mut base: Params, v: &[f64]) -> Params {
    base.values[..v.len()].copy_from_slice(v);
    base
}

fn lex_less(a: &Params, b: &Params) -> bool {
    for (x, y) in a.values().iter().zip(b.values()) {
        if x != y {
            return x < y;
        }
    }
    false
}

/// Odometer over the cartesian product, last axis fastest.
fn for_each_point(axes: &[Vec<f64>], mut f: impl FnMut(&[f64])) {
    if axes.iter().any(|a| a.is_empty()) {
        return;
    }
    let mut idx = [0usize; MAX_PARAMS];
    let mut vals = [0.0f64; MAX_PARAMS];
    let d = axes.len().min(MAX_PARAMS);
    for k in 0..d {
        vals[k] = axes[k][0];
    }
    loop {
        f(&vals[..d]);
        let mut k = d;
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < axes[k].len() {
                vals[k] = axes[k][idx[k]];
                break;
            }
            idx[k] = 0;
            vals[k] = axes[k][0];
        }
    }
}

/// SplitMix64: tiny, fast, and fully deterministic for a given seed.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` via multiply-high (no modulo bias worth mentioning).
    fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }
}

/// `n` random lattice points (uniform per parameter, cross-constraints
/// respected by rejection; a point that keeps failing falls back to the
/// defaults). Deterministic for a given `seed`. Callers should cap `n`; the
/// up-front reservation is capped so a huge `n` cannot abort on allocation.
pub fn random(spec: &StrategySpec, n: usize, seed: u64) -> Vec<Params> {
    let defaults = Params::defaults(spec);
    let axes: Vec<Vec<f64>> = spec.params[..defaults.len].iter().map(lattice).collect();
    let mut rng = SplitMix64(seed);
    let mut out = Vec::with_capacity(n.min(1 << 16));
    for _ in 0..n {
        let mut point = defaults;
        for _attempt in 0..64 {
            let mut p = defaults;
            for (v, axis) in p.values.iter_mut().zip(&axes) {
                *v = axis[rng.below(axis.len())];
            }
            if satisfies_constraints(spec, &p) {
                point = p;
                break;
            }
        }
        out.push(point);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(pairs: &[(&str, f64)]) -> Vec<(String, f64)> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    fn sma() -> &'static StrategySpec {
        strategy("sma_cross").expect("catalogue has sma_cross")
    }

    #[test]
    fn catalogue_is_consistent() {
        assert!(STRATEGIES.len() >= 8);
        let bars: Vec<Bar> = (0..300)
            .map(|i| {
                let x = 100.0 + (i as f64 * 0.2).sin() * 10.0 + i as f64 * 0.01;
                Bar {
                    time: i * 60,
                    open: x,
                    high: x + 1.0,
                    low: x - 1.0,
                    close: x,
                    volume: 1.0,
                }
            })
            .collect();
        for spec in STRATEGIES {
            assert!(spec.params.len() <= MAX_PARAMS, "{}", spec.id);
            assert_eq!(strategy(spec.id), Some(spec));
            let d = Params::defaults(spec);
            assert!(satisfies_constraints(spec, &d), "{} defaults", spec.id);
            for ps in spec.params {
                assert!(ps.min <= ps.default && ps.default <= ps.max, "{}", ps.name);
                assert!(
                    lattice(ps).contains(&ps.default),
                    "{} default on lattice",
                    ps.name
                );
            }
            let full: u64 = spec
                .params
                .iter()
                .map(|p| lattice(p).len() as u64)
                .product();
            assert!(
                full <= GRID_ENUM_LIMIT,
                "{} grid too large: {full}",
                spec.id
            );
            // Every catalogued id must be implemented: a sine wave trades both ways.
            let mut out = Vec::new();
            signals(spec, &d, &bars, &mut out);
            assert_eq!(out.len(), bars.len());
            assert!(
                out.contains(&1) && out.contains(&-1),
                "{} never trades both ways",
                spec.id
            );
        }
        assert!(strategy("nope").is_none());
    }

    #[test]
    fn category_strings() {
        let all = [
            (Category::Trend, "trend"),
            (Category::MeanReversion, "mean-reversion"),
            (Category::Breakout, "breakout"),
            (Category::Momentum, "momentum"),
            (Category::Volatility, "volatility"),
        ];
        for (c, s) in all {
            assert_eq!(c.as_str(), s);
        }
    }

    #[test]
    fn resolve_fills_defaults_and_accepts_valid_values() {
        let p = resolve_params(sma(), &given(&[("slow", 50.0)])).unwrap();
        assert_eq!(p.values(), &[10.0, 50.0]);
        let named: Vec<_> = p.named(sma()).collect();
        assert_eq!(named, vec![("fast", 10.0), ("slow", 50.0)]);
    }

    #[test]
    fn resolve_rejects_unknown_names_listing_valid_ones() {
        let e = resolve_params(sma(), &given(&[("fats", 5.0)])).unwrap_err();
        assert_eq!(e.field, "parameters.fats");
        assert!(
            e.message.contains("valid parameters: fast, slow"),
            "{}",
            e.message
        );
    }

    #[test]
    fn resolve_rejects_out_of_range_non_integer_and_non_finite() {
        let e = resolve_params(sma(), &given(&[("fast", 1.0)])).unwrap_err();
        assert_eq!(e.field, "parameters.fast");
        assert!(e.message.contains("between 2 and 200"), "{}", e.message);
        let e = resolve_params(sma(), &given(&[("slow", 1e9)])).unwrap_err();
        assert_eq!(e.field, "parameters.slow");
        let e = resolve_params(sma(), &given(&[("fast", 5.5)])).unwrap_err();
        assert!(e.message.contains("integer"), "{}", e.message);
        let e = resolve_params(sma(), &given(&[("fast", f64::NAN)])).unwrap_err();
        assert!(e.message.contains("finite"), "{}", e.message);
        let e = resolve_params(sma(), &given(&[("fast", 5.0), ("fast", 6.0)])).unwrap_err();
        assert!(e.message.contains("more than once"), "{}", e.message);
        // Float params accept fractions.
        let bb = strategy("bollinger_reversion").unwrap();
        assert!(resolve_params(bb, &given(&[("k", 2.35)])).is_ok());
    }

    #[test]
    fn resolve_enforces_cross_constraints() {
        let e = resolve_params(sma(), &given(&[("fast", 30.0), ("slow", 30.0)])).unwrap_err();
        assert_eq!(e.field, "parameters.fast");
        assert_eq!(e.message, "fast (30) must be less than slow (30)");
        // Defaults for slow (30) are used when only fast is given.
        assert!(resolve_params(sma(), &given(&[("fast", 40.0)])).is_err());
        let macd = strategy("macd").unwrap();
        assert!(resolve_params(macd, &given(&[("fast", 26.0)])).is_err());
        let rsi = strategy("rsi_reversion").unwrap();
        let e = resolve_params(rsi, &given(&[("lower", 50.0), ("upper", 50.0)])).unwrap_err();
        assert_eq!(e.field, "parameters.lower");
        let dc = strategy("donchian_breakout").unwrap();
        let e = resolve_params(dc, &given(&[("entry", 10.0), ("exit", 11.0)])).unwrap_err();
        assert_eq!(e.field, "parameters.exit");
        assert!(resolve_params(dc, &given(&[("entry", 10.0), ("exit", 10.0)])).is_ok());
    }

    #[test]
    fn grid_is_bounded_deterministic_and_contains_defaults() {
        for spec in STRATEGIES {
            for max in [1usize, 7, 100, 1000] {
                let g = grid(spec, max);
                assert!(
                    !g.is_empty() && g.len() <= max,
                    "{} {max}: {}",
                    spec.id,
                    g.len()
                );
                assert_eq!(g, grid(spec, max), "deterministic");
                assert!(g.contains(&Params::defaults(spec)), "{} {max}", spec.id);
                for p in &g {
                    assert!(satisfies_constraints(spec, p), "{} {p:?}", spec.id);
                    for (v, ps) in p.values().iter().zip(spec.params) {
                        assert!(ps.min <= *v && *v <= ps.max, "{} {v}", ps.name);
                    }
                }
                // Strictly increasing lexicographically: sorted and no duplicates.
                assert!(g.windows(2).all(|w| lex_less(&w[0], &w[1])), "{}", spec.id);
            }
        }
        // Large budgets hit exactly the requested size for big spaces...
        assert_eq!(grid(sma(), 1000).len(), 1000);
        // ...and return the full (constraint-filtered) grid for small ones.
        let st = strategy("supertrend").unwrap();
        assert_eq!(grid(st, 1_000_000).len(), 99 * 56);
        // sma_cross: fast in 2..=200, slow in 3..=400, fast < slow.
        let full: usize = (2..=200).map(|f: usize| 400 - f).sum();
        assert_eq!(grid(sma(), usize::MAX).len(), full);
        // Thinning spreads over the whole first axis.
        let g = grid(sma(), 50);
        assert_eq!(g[0].values(), &[2.0, 3.0]);
        assert!(g.last().unwrap().get(0) >= 190.0);
    }

    #[test]
    fn random_is_deterministic_and_in_bounds() {
        for spec in STRATEGIES {
            let a = random(spec, 200, 42);
            assert_eq!(a.len(), 200);
            assert_eq!(a, random(spec, 200, 42));
            assert_ne!(a, random(spec, 200, 43), "{} seeds differ", spec.id);
            for p in &a {
                assert!(satisfies_constraints(spec, p));
                for (v, ps) in p.values().iter().zip(spec.params) {
                    assert!(ps.min <= *v && *v <= ps.max);
                    let k = (v - ps.min) / ps.step;
                    assert!((k - k.round()).abs() < 1e-6, "{} {v} off lattice", ps.name);
                }
            }
        }
        assert!(random(sma(), 0, 1).is_empty());
    }

    #[test]
    fn float_lattice_is_clean() {
        let bb = strategy("bollinger_reversion").unwrap();
        let ks = lattice(&bb.params[1]);
        assert_eq!(ks.len(), 36);
        assert!(ks.contains(&0.7) && ks.contains(&2.0) && ks.contains(&4.0));
    }

    #[test]
    fn bad_params_give_flat_signals_not_panics() {
        let bars = vec![Bar::default(); 10];
        let mut out = Vec::new();
        for spec in STRATEGIES {
            let p = Params {
                values: [f64::NAN, -3.0, f64::INFINITY, 0.0],
                len: spec.params.len(),
            };
            signals(spec, &p, &bars, &mut out);
            assert_eq!(out.len(), 10);
            signals(spec, &Params::defaults(spec), &[], &mut out);
            assert!(out.is_empty());
        }
    }

    /// The crossover the optimizer uses, from series rounded to `f32`, is the streaming one on
    /// the exact series: ties (which keep the position), values that only `f64` tells apart,
    /// NaN warm-ups and chunk boundaries included.
    #[test]
    fn cross_series_is_cross() {
        let nan = f64::NAN;
        let mut fast = vec![nan; 5];
        let mut slow = vec![nan; 9];
        for i in 0..200 {
            fast.push([1.0, 2.0, 2.0, 3.0, 1.5][i % 5]);
        }
        for i in 0..196 {
            slow.push([2.0, 2.0, 1.0, 3.0][i % 4]);
        }
        // A long tie inside one chunk and across the next.
        for (f, s) in fast[60..100].iter_mut().zip(&mut slow[60..100]) {
            *f = 7.0;
            *s = 7.0;
        }
        // Equal once rounded to f32, either way round or equal, next to decided bars.
        let tiny = 1e-12;
        for (k, (f, s)) in fast[130..180]
            .iter_mut()
            .zip(&mut slow[130..180])
            .enumerate()
        {
            *f = 1000.0 + [tiny, -tiny, 0.0, 0.5, tiny][k % 5];
            *s = 1000.0;
        }
        let coarse = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<_>>();
        let (fast32, slow32) = (coarse(&fast), coarse(&slow));
        let mut want = Vec::new();
        cross(fast.iter().copied(), slow.iter().copied(), &mut want);
        assert!(want.windows(2).any(|w| w[0] != 0 && w[0] == w[1]));
        let mut asked = Vec::new();
        let mut exact = |from: usize, out: &mut [i8]| {
            asked.push(from);
            for (k, d) in out.iter_mut().enumerate() {
                let (f, s) = (fast[from + k], slow[from + k]);
                *d = (f > s) as i8 - (f < s) as i8;
            }
        };
        let mut got = Vec::new();
        cross_series(&fast32, &slow32, &mut exact, &mut got);
        assert_eq!(got, want);
        // Only the chunks holding equal rounded values: the ties and the near ties.
        let mut equal: Vec<usize> = (0..fast.len().min(slow.len()))
            .filter(|&i| fast32[i] == slow32[i])
            .map(|i| i / CROSS_CHUNK * CROSS_CHUNK)
            .collect();
        equal.dedup();
        assert_eq!(asked, equal);
        assert!(equal.contains(&160));
        assert!((130..180).any(|i| got[i] != got[i - 1]));
        cross_series(&fast32[..3], &slow32, |_, _| (), &mut got);
        assert_eq!(got, [0, 0, 0]);
    }

    #[test]
    fn sma_cross_signal_semantics() {
        // Closes rise then fall: fast(2) above slow(3) while rising, below after.
        let closes = [1.0, 2.0, 3.0, 4.0, 3.0, 2.0, 1.0];
        let bars: Vec<Bar> = closes
            .iter()
            .map(|&c| Bar {
                close: c,
                open: c,
                high: c,
                low: c,
                ..Bar::default()
            })
            .collect();
        let p = resolve_params(sma(), &given(&[("fast", 2.0), ("slow", 3.0)])).unwrap();
        let mut out = Vec::new();
        signals(sma(), &p, &bars, &mut out);
        // fast: _,1.5,2.5,3.5,3.5,2.5,1.5  slow: _,_,2,3,3.33,3,2
        assert_eq!(out, vec![0, 0, 1, 1, 1, -1, -1]);
    }
}

#[cfg(test)]
mod lookahead {
    use proptest::prelude::*;
    use proptest::sample::Index;

    use super::*;

    /// (return, upper wick, lower wick) per bar -> a positive random walk.
    fn walk(steps: &[(f64, f64, f64)], start: f64, t0: i64) -> Vec<Bar> {
        let mut px = start;
        steps
            .iter()
            .enumerate()
            .map(|(i, &(r, uw, lw))| {
                let open = px;
                px *= 1.0 + r;
                Bar {
                    time: t0 + i as i64 * 300,
                    open,
                    high: open.max(px) * (1.0 + uw),
                    low: open.min(px) * (1.0 - lw),
                    close: px,
                    volume: 1.0,
                }
            })
            .collect()
    }

    fn steps(len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<(f64, f64, f64)>> {
        prop::collection::vec((-0.03f64..0.03, 0.0f64..0.01, 0.0f64..0.01), len)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Signals at or before `t` never depend on bars after `t`, for every
        /// strategy with its defaults and with random parameters (periods are
        /// kept small enough to be warmed up within the series).
        #[test]
        fn signals_never_look_ahead(
            base in steps(60..260),
            tail in steps(260..261),
            cut in any::<Index>(),
            seed in any::<u64>(),
        ) {
            let bars = walk(&base, 100.0, 1_700_000_000);
            let t = cut.index(bars.len());
            // Same prefix, entirely different future (including length).
            let mut other = bars[..=t].to_vec();
            let future = walk(&tail, bars[t].close * 1.5, bars[t].time + 300);
            other.extend(future.into_iter().take(bars.len() - t - 1 + (seed % 7) as usize));

            let (mut a, mut b) = (Vec::new(), Vec::new());
            for spec in STRATEGIES {
                let mut cands = vec![Params::defaults(spec)];
                cands.extend(random(spec, 2, seed));
                // Short-period candidates actually trade on a short series.
                let mut small = Params::defaults(spec);
                for (v, ps) in small.values.iter_mut().zip(spec.params) {
                    *v = (ps.min + (*v - ps.min) / 4.0).round().max(ps.min);
                }
                if satisfies_constraints(spec, &small) {
                    cands.push(small);
                }
                for p in &cands {
                    signals(spec, p, &bars, &mut a);
                    signals(spec, p, &other, &mut b);
                    prop_assert_eq!(&a[..=t], &b[..=t], "{} {:?} t={}", spec.id, p, t);
                }
            }
        }
    }
}
