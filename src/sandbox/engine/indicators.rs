//! Streaming technical indicators.
//!
//! Every function is O(n) in the input length, clears the caller-provided output
//! buffers and fills them with exactly one value per input bar, so buffers can be
//! reused across calls without reallocating. [`sma_stream`] and [`ema_stream`]
//! are the iterator forms (what [`sma`]/[`ema`] collect), for consumers that
//! need each value only once and should not pay for a buffer. Values are `f64::NAN` during the
//! warm-up period (and everywhere if the period is 0 or longer than the input), so
//! callers never need special cases for bad periods and nothing here can panic.
//!
//! Each value at index `i` depends only on inputs `..=i` (the Donchian channel
//! only on `..i`), which is what makes the strategies free of look-ahead.

use super::Bar;

const NAN: f64 = f64::NAN;

/// Fill `out` with `n` NaNs: the answer for an unusable period.
fn all_nan(out: &mut Vec<f64>, n: usize) {
    out.clear();
    out.resize(n, NAN);
}

/// Simple moving average: `mean(src[i+1-period ..= i])`.
pub fn sma(src: &[f64], period: usize, out: &mut Vec<f64>) {
    out.clear();
    out.extend(sma_stream(src.len(), period, |i| src[i]));
}

/// Streaming SMA over `len` values read through `get` (which may index any
/// series, e.g. `|i| bars[i].close`), one item per index. Lets strategies
/// consume the average without materialising it; [`sma`] is this collected,
/// so both paths produce bit-identical values.
pub fn sma_stream(
    len: usize,
    period: usize,
    get: impl Fn(usize) -> f64,
) -> impl Iterator<Item = f64> {
    let sma = Sma::new(len, period);
    let mut run = Running::default();
    (0..len).map(move |i| sma.next(&mut run, i, &get))
}

/// What a streaming average carries from one value to the next: the whole of its state
/// besides its constants, so a copy taken before index `i` resumes the series at `i` with the
/// same operations (the optimizer replays a few values from such copies instead of storing
/// every value in full precision).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Running {
    acc: f64,
    seen: usize,
}

/// [`sma_stream`]'s step, over `len` values.
#[derive(Debug, Clone, Copy)]
pub struct Sma {
    period: usize,
    inv: f64,
    usable: bool,
}

impl Sma {
    pub fn new(len: usize, period: usize) -> Sma {
        Sma {
            period,
            inv: 1.0 / period as f64,
            usable: period > 0 && period <= len,
        }
    }

    /// The value at index `i`, the steps before it having run on `run`.
    #[inline(always)]
    pub fn next(&self, run: &mut Running, i: usize, get: impl Fn(usize) -> f64) -> f64 {
        if !self.usable {
            return NAN;
        }
        // A running sum keeps this O(n): add the new value, drop the one
        // leaving the window.
        if i < self.period {
            run.acc += get(i);
        } else {
            run.acc += get(i) - get(i - self.period);
        }
        if i + 1 >= self.period {
            run.acc * self.inv
        } else {
            NAN
        }
    }
}

/// Exponential moving average with `alpha = 2 / (period + 1)`, seeded with the
/// SMA of the first `period` values (TA-Lib convention) so the first value is
/// not dominated by a single bar. Leading NaNs are skipped, which lets the MACD
/// signal line run over the MACD line's own warm-up.
pub fn ema(src: &[f64], period: usize, out: &mut Vec<f64>) {
    out.clear();
    out.extend(ema_stream(src.iter().copied(), period));
}

/// Streaming form of [`ema`] over any value iterator.
pub fn ema_stream(src: impl Iterator<Item = f64>, period: usize) -> impl Iterator<Item = f64> {
    let ema = Ema::new(period);
    let mut run = Running::default();
    src.map(move |x| ema.next(&mut run, x))
}

/// [`ema_stream`]'s step.
#[derive(Debug, Clone, Copy)]
pub struct Ema {
    period: usize,
    p: f64,
    alpha: f64,
}

impl Ema {
    pub fn new(period: usize) -> Ema {
        let p = period as f64;
        Ema {
            period,
            p,
            alpha: 2.0 / (p + 1.0),
        }
    }

    /// The value after `x`, the values before it having run on `run`.
    #[inline(always)]
    pub fn next(&self, run: &mut Running, x: f64) -> f64 {
        if self.period == 0 {
            return NAN;
        }
        if run.seen >= self.period {
            run.acc += self.alpha * (x - run.acc);
            return run.acc;
        }
        if run.seen == 0 && x.is_nan() {
            return NAN;
        }
        run.acc += x;
        run.seen += 1;
        if run.seen == self.period {
            run.acc /= self.p;
            run.acc
        } else {
            NAN
        }
    }
}

/// Wilder's RSI. Changes `d_i = src[i] - src[i-1]`; the first average gain/loss
/// is the plain mean over `d_1..=d_period` (first value at index `period`), then
/// `avg = (avg * (period - 1) + x) / period`. `RSI = 100 - 100 / (1 + gain/loss)`,
/// 100 when there were no losses and 50 when the price did not move at all.
pub fn rsi(src: &[f64], period: usize, out: &mut Vec<f64>) {
    let n = src.len();
    if period == 0 || period >= n {
        return all_nan(out, n);
    }
    out.clear();
    out.reserve(n);
    out.extend(std::iter::repeat_n(NAN, period));
    let p = period as f64;
    let (mut gain, mut loss) = (0.0, 0.0);
    for w in src[..=period].windows(2) {
        let d = w[1] - w[0];
        gain += d.max(0.0);
        loss += (-d).max(0.0);
    }
    gain /= p;
    loss /= p;
    out.push(rsi_value(gain, loss));
    out.extend(src[period..].windows(2).map(|w| {
        let d = w[1] - w[0];
        gain = (gain * (p - 1.0) + d.max(0.0)) / p;
        loss = (loss * (p - 1.0) + (-d).max(0.0)) / p;
        rsi_value(gain, loss)
    }));
}

fn rsi_value(gain: f64, loss: f64) -> f64 {
    if loss == 0.0 {
        if gain == 0.0 { 50.0 } else { 100.0 }
    } else {
        100.0 - 100.0 / (1.0 + gain / loss)
    }
}

/// Rolling mean and population standard deviation (ddof = 0, the Bollinger
/// convention) over `period` values, calling `emit(i, mean, sd)` for every
/// index from `period - 1` on. Uses the sliding Welford update instead of
/// sum/sum-of-squares, which would cancel catastrophically at price levels
/// like 60 000 with small variance.
fn rolling_mean_sd(src: &[f64], period: usize, mut emit: impl FnMut(usize, f64, f64)) {
    let p = period as f64;
    let mut mean = src[..period].iter().sum::<f64>() / p;
    let mut m2: f64 = src[..period].iter().map(|x| (x - mean) * (x - mean)).sum();
    emit(period - 1, mean, (m2 / p).sqrt());
    for i in period..src.len() {
        let (x, y) = (src[i], src[i - period]);
        let old = mean;
        mean += (x - y) / p;
        m2 += (x - y) * (x - mean + y - old);
        // Rounding can push M2 a hair below zero on flat windows.
        emit(i, mean, (m2.max(0.0) / p).sqrt());
    }
}

/// Rolling population standard deviation (ddof = 0) over `period` values.
pub fn stddev(src: &[f64], period: usize, out: &mut Vec<f64>) {
    let n = src.len();
    all_nan(out, n);
    if period == 0 || period > n {
        return;
    }
    rolling_mean_sd(src, period, |i, _, sd| out[i] = sd);
}

/// Bollinger bands: `mid = SMA(period)`, `upper/lower = mid ± k · σ` with the
/// population standard deviation of the same window.
pub fn bollinger(
    src: &[f64],
    period: usize,
    k: f64,
    mid: &mut Vec<f64>,
    upper: &mut Vec<f64>,
    lower: &mut Vec<f64>,
) {
    let n = src.len();
    all_nan(mid, n);
    all_nan(upper, n);
    all_nan(lower, n);
    if period == 0 || period > n {
        return;
    }
    rolling_mean_sd(src, period, |i, m, sd| {
        mid[i] = m;
        upper[i] = m + k * sd;
        lower[i] = m - k * sd;
    });
}

/// Donchian channel of the *previous* `period` bars:
/// `upper[i] = max(high[i-period..i])`, `lower[i] = min(low[i-period..i])`,
/// first value at index `period`. Excluding bar `i` lets a breakout rule compare
/// `close[i]` with the channel it has to break. Monotonic deques keep it O(n).
pub fn donchian(bars: &[Bar], period: usize, upper: &mut Vec<f64>, lower: &mut Vec<f64>) {
    let n = bars.len();
    if period == 0 || period >= n {
        all_nan(upper, n);
        all_nan(lower, n);
        return;
    }
    upper.clear();
    lower.clear();
    upper.reserve(n);
    lower.reserve(n);
    // Indices of candidate extremes, values monotonically decreasing (max) or
    // increasing (min) from front to back.
    let mut maxq = std::collections::VecDeque::with_capacity(period + 1);
    let mut minq = std::collections::VecDeque::with_capacity(period + 1);
    for (i, b) in bars.iter().enumerate() {
        if i >= period {
            let oldest = i - period;
            while maxq.front().is_some_and(|&j| j < oldest) {
                maxq.pop_front();
            }
            while minq.front().is_some_and(|&j| j < oldest) {
                minq.pop_front();
            }
            upper.push(maxq.front().map_or(NAN, |&j: &usize| bars[j].high));
            lower.push(minq.front().map_or(NAN, |&j: &usize| bars[j].low));
        } else {
            upper.push(NAN);
            lower.push(NAN);
        }
        while maxq.back().is_some_and(|&j: &usize| bars[j].high <= b.high) {
            maxq.pop_back();
        }
        maxq.push_back(i);
        while minq.back().is_some_and(|&j: &usize| bars[j].low >= b.low) {
            minq.pop_back();
        }
        minq.push_back(i);
    }
}

/// MACD: `line = EMA(fast) - EMA(slow)`, `signal = EMA(line, signal_period)`
/// (starting where the line becomes defined), `hist = line - signal`.
pub fn macd(
    src: &[f64],
    fast: usize,
    slow: usize,
    signal_period: usize,
    line: &mut Vec<f64>,
    signal: &mut Vec<f64>,
    hist: &mut Vec<f64>,
) {
    ema(src, fast, line);
    // `hist` doubles as scratch for the slow EMA to avoid an extra buffer.
    ema(src, slow, hist);
    for (l, s) in line.iter_mut().zip(hist.iter()) {
        *l -= s;
    }
    ema(line, signal_period, signal);
    for ((h, l), s) in hist.iter_mut().zip(line.iter()).zip(signal.iter()) {
        *h = l - s;
    }
}

/// Wilder's Average True Range. `TR_0 = high - low` (no previous close),
/// `TR_i = max(high - low, |high - close_{i-1}|, |low - close_{i-1}|)`; the first
/// ATR (index `period - 1`) is the mean of `TR_0..=TR_{period-1}`, then
/// `atr = (atr · (period - 1) + TR) / period`.
pub fn atr(bars: &[Bar], period: usize, out: &mut Vec<f64>) {
    let n = bars.len();
    if period == 0 || period > n {
        return all_nan(out, n);
    }
    out.clear();
    out.reserve(n);
    let p = period as f64;
    let mut prev_close = NAN;
    let mut acc = 0.0;
    out.extend(bars.iter().enumerate().map(|(i, b)| {
        let hl = b.high - b.low;
        let tr = if i == 0 {
            hl
        } else {
            hl.max((b.high - prev_close).abs())
                .max((b.low - prev_close).abs())
        };
        prev_close = b.close;
        if i + 1 < period {
            acc += tr;
            NAN
        } else if i + 1 == period {
            acc = (acc + tr) / p;
            acc
        } else {
            acc = (acc * (p - 1.0) + tr) / p;
            acc
        }
    }));
}

/// SuperTrend with ATR(period) bands around `hl2 = (high + low) / 2`:
/// basic bands `hl2 ± mult · ATR`; the final upper band only moves down (and the
/// lower only up) unless the previous close broke through it. Direction flips to
/// `-1` when the close falls below the final lower band and to `+1` when it
/// rises above the final upper band; it starts at `+1` unless the first close is
/// already below the lower band. `line` is the lower band in an uptrend and the
/// upper band in a downtrend; `dir` holds `±1.0` (NaN in warm-up).
pub fn supertrend(bars: &[Bar], period: usize, mult: f64, line: &mut Vec<f64>, dir: &mut Vec<f64>) {
    // ATR goes into `line` first; each slot is read before it is overwritten.
    atr(bars, period, line);
    dir.clear();
    dir.reserve(bars.len());
    let (mut fu, mut fl, mut d) = (NAN, NAN, 1.0);
    let mut started = false;
    let mut prev_close = NAN;
    for (slot, b) in line.iter_mut().zip(bars) {
        let a = *slot;
        if a.is_nan() {
            dir.push(NAN);
            prev_close = b.close;
            continue;
        }
        let hl2 = (b.high + b.low) * 0.5;
        let (bu, bl) = (hl2 + mult * a, hl2 - mult * a);
        if started {
            fu = if bu < fu || prev_close > fu { bu } else { fu };
            fl = if bl > fl || prev_close < fl { bl } else { fl };
            d = if d > 0.0 {
                if b.close < fl { -1.0 } else { 1.0 }
            } else if b.close > fu {
                1.0
            } else {
                -1.0
            };
        } else {
            fu = bu;
            fl = bl;
            d = if b.close < bl { -1.0 } else { 1.0 };
            started = true;
        }
        *slot = if d > 0.0 { fl } else { fu };
        dir.push(d);
        prev_close = b.close;
    }
}

/// Keltner channel: `mid = EMA(close, ema_period)`,
/// `upper/lower = mid ± k · ATR(atr_period)`.
pub fn keltner(
    bars: &[Bar],
    ema_period: usize,
    atr_period: usize,
    k: f64,
    mid: &mut Vec<f64>,
    upper: &mut Vec<f64>,
    lower: &mut Vec<f64>,
) {
    mid.clear();
    mid.extend(ema_stream(bars.iter().map(|b| b.close), ema_period));
    atr(bars, atr_period, upper);
    lower.clear();
    lower.extend(mid.iter().zip(upper.iter()).map(|(m, a)| m - k * a));
    for (u, m) in upper.iter_mut().zip(mid.iter()) {
        *u = m + k * *u;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close_enough(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len(), "length: got {got:?}, want {want:?}");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            if w.is_nan() {
                assert!(g.is_nan(), "index {i}: got {g}, want NaN ({got:?})");
            } else {
                assert!(
                    (g - w).abs() < 1e-9,
                    "index {i}: got {g}, want {w} ({got:?})"
                );
            }
        }
    }

    fn bars(hlc: &[(f64, f64, f64)]) -> Vec<Bar> {
        hlc.iter()
            .enumerate()
            .map(|(i, &(high, low, close))| Bar {
                time: i as i64 * 60,
                open: close,
                high,
                low,
                close,
                volume: 1.0,
            })
            .collect()
    }

    /// TR: 2, 2, 2, 4.5, 3 (see `atr_wilder`).
    fn atr_fixture() -> Vec<Bar> {
        bars(&[
            (10.0, 8.0, 9.0),
            (11.0, 9.0, 10.0),
            (12.0, 10.0, 11.5),
            (11.0, 7.0, 8.0),
            (9.0, 6.0, 6.5),
        ])
    }

    #[test]
    fn sma_small() {
        let mut out = Vec::new();
        sma(&[1.0, 2.0, 3.0, 4.0, 5.0], 3, &mut out);
        close_enough(&out, &[NAN, NAN, 2.0, 3.0, 4.0]);
        sma(&[1.0, 2.0], 3, &mut out);
        close_enough(&out, &[NAN, NAN]);
        sma(&[1.0, 2.0], 0, &mut out);
        close_enough(&out, &[NAN, NAN]);
    }

    #[test]
    fn ema_seeded_with_sma() {
        // alpha = 2/(3+1) = 0.5; seed = (2+4+6)/3 = 4; 4 + .5(8-4) = 6; 6 + .5(12-6) = 9.
        let mut out = Vec::new();
        ema(&[2.0, 4.0, 6.0, 8.0, 12.0], 3, &mut out);
        close_enough(&out, &[NAN, NAN, 4.0, 6.0, 9.0]);
        // Leading NaNs are skipped: seed = (4+6)/2 = 5, alpha 2/3: 5 + 2/3(8-5) = 7.
        ema(&[NAN, 4.0, 6.0, 8.0], 2, &mut out);
        close_enough(&out, &[NAN, NAN, 5.0, 7.0]);
    }

    #[test]
    fn rsi_wilder() {
        // d = +1, +1, -1, +2. idx2: gain 1, loss 0 -> 100.
        // idx3: gain (1+0)/2 = .5, loss (0+1)/2 = .5 -> 50.
        // idx4: gain (.5+2)/2 = 1.25, loss (.5+0)/2 = .25 -> rs 5 -> 100 - 100/6.
        let mut out = Vec::new();
        rsi(&[1.0, 2.0, 3.0, 2.0, 4.0], 2, &mut out);
        close_enough(&out, &[NAN, NAN, 100.0, 50.0, 100.0 - 100.0 / 6.0]);
        rsi(&[3.0, 3.0, 3.0], 2, &mut out);
        close_enough(&out, &[NAN, NAN, 50.0]);
    }

    #[test]
    fn stddev_and_bollinger() {
        // [1,2,3]: mean 2, var 2/3. [2,3,5]: mean 10/3, var (16+1+25)/9/3 = 42/27.
        let src = [1.0, 2.0, 3.0, 5.0];
        let mut out = Vec::new();
        stddev(&src, 3, &mut out);
        let (s2, s3) = ((2.0f64 / 3.0).sqrt(), (42.0f64 / 27.0).sqrt());
        close_enough(&out, &[NAN, NAN, s2, s3]);
        // Textbook population example: sd of [2,4,4,4,5,5,7,9] is exactly 2.
        stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0], 8, &mut out);
        close_enough(&out, &[NAN, NAN, NAN, NAN, NAN, NAN, NAN, 2.0]);

        let (mut m, mut u, mut l) = (Vec::new(), Vec::new(), Vec::new());
        bollinger(&src, 3, 2.0, &mut m, &mut u, &mut l);
        close_enough(&m, &[NAN, NAN, 2.0, 10.0 / 3.0]);
        close_enough(&u, &[NAN, NAN, 2.0 + 2.0 * s2, 10.0 / 3.0 + 2.0 * s3]);
        close_enough(&l, &[NAN, NAN, 2.0 - 2.0 * s2, 10.0 / 3.0 - 2.0 * s3]);
    }

    #[test]
    fn stddev_is_stable_at_high_price_levels() {
        // A flat window at 60k must give exactly ~0, not sqrt(rounding noise).
        let mut src = vec![60_000.0; 50];
        src.extend([60_000.5, 59_999.5, 60_000.0]);
        src.extend(vec![60_000.0; 50]);
        let mut out = Vec::new();
        stddev(&src, 10, &mut out);
        assert!(out[40].abs() < 1e-9);
        assert!(
            out.last().is_some_and(|v| v.abs() < 1e-6),
            "{:?}",
            out.last()
        );
    }

    #[test]
    fn donchian_excludes_current_bar() {
        // highs 1,3,2,5,4 lows 0,1,1,2,3, period 2.
        let b: Vec<Bar> = [(1.0, 0.0), (3.0, 1.0), (2.0, 1.0), (5.0, 2.0), (4.0, 3.0)]
            .iter()
            .map(|&(high, low)| Bar {
                high,
                low,
                open: low,
                close: low,
                ..Bar::default()
            })
            .collect();
        let (mut u, mut l) = (Vec::new(), Vec::new());
        donchian(&b, 2, &mut u, &mut l);
        close_enough(&u, &[NAN, NAN, 3.0, 3.0, 5.0]);
        close_enough(&l, &[NAN, NAN, 0.0, 1.0, 1.0]);
    }

    #[test]
    fn macd_fractions() {
        // Worked by hand in fractions for src = 1,2,4,8,16,32, fast 2, slow 3, signal 2:
        // EMA2 = _, 3/2, 19/6, 115/18, 691/54, 4147/162
        // EMA3 = _, _, 7/3, 31/6, 127/12, 511/24
        // line = _, _, 5/6, 11/9, 239/108, 2791/648
        // signal: seed (5/6 + 11/9)/2 = 37/36; 37/36 + 2/3 (239/108 - 37/36) = 589/324;
        //         589/324 + 2/3 (2791/648 - 589/324)
        let src = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0];
        let (mut line, mut sig, mut hist) = (Vec::new(), Vec::new(), Vec::new());
        macd(&src, 2, 3, 2, &mut line, &mut sig, &mut hist);
        close_enough(
            &line,
            &[
                NAN,
                NAN,
                5.0 / 6.0,
                11.0 / 9.0,
                239.0 / 108.0,
                2791.0 / 648.0,
            ],
        );
        let s5 = 589.0 / 324.0 + 2.0 / 3.0 * (2791.0 / 648.0 - 589.0 / 324.0);
        close_enough(&sig, &[NAN, NAN, NAN, 37.0 / 36.0, 589.0 / 324.0, s5]);
        close_enough(
            &hist,
            &[
                NAN,
                NAN,
                NAN,
                11.0 / 9.0 - 37.0 / 36.0,
                128.0 / 324.0,
                2791.0 / 648.0 - s5,
            ],
        );
    }

    #[test]
    fn atr_wilder() {
        // TR: 2; max(2,|11-9|,|9-9|)=2; max(2,|12-10|,|10-10|)=2;
        //     max(4,|11-11.5|,|7-11.5|)=4.5; max(3,|9-8|,|6-8|)=3.
        // period 2: (2+2)/2 = 2; (2+2)/2 = 2; (2+4.5)/2 = 3.25; (3.25+3)/2 = 3.125.
        let mut out = Vec::new();
        atr(&atr_fixture(), 2, &mut out);
        close_enough(&out, &[NAN, 2.0, 2.0, 3.25, 3.125]);
    }

    #[test]
    fn supertrend_flips_on_band_break() {
        // mult 1, ATR as in `atr_wilder`.
        // i1: hl2 10 -> bands 12 / 8, close 10 -> up, line 8.
        // i2: hl2 11 -> basic 13 / 9: upper stays 12 (13 > 12), lower rises to 9; up, line 9.
        // i3: hl2 9, atr 3.25 -> basic 12.25 / 5.75: upper 12, lower 9; close 8 < 9 -> down, line 12.
        // i4: hl2 7.5, atr 3.125 -> basic 10.625 / 4.375: upper drops to 10.625,
        //     lower resets (prev close 8 < 9) to 4.375; close 6.5 < 10.625 -> down, line 10.625.
        let (mut line, mut dir) = (Vec::new(), Vec::new());
        supertrend(&atr_fixture(), 2, 1.0, &mut line, &mut dir);
        close_enough(&line, &[NAN, 8.0, 9.0, 12.0, 10.625]);
        close_enough(&dir, &[NAN, 1.0, 1.0, -1.0, -1.0]);
    }

    #[test]
    fn keltner_bands() {
        // EMA2 of closes 9,10,11.5,8,6.5: 9.5; 9.5 + 2/3 (2) = 65/6; ATR2: 2, 2, 3.25, 3.125.
        let (mut m, mut u, mut l) = (Vec::new(), Vec::new(), Vec::new());
        keltner(&atr_fixture(), 2, 2, 2.0, &mut m, &mut u, &mut l);
        let m3 = 65.0 / 6.0 + 2.0 / 3.0 * (8.0 - 65.0 / 6.0);
        let m4 = m3 + 2.0 / 3.0 * (6.5 - m3);
        close_enough(&m, &[NAN, 9.5, 65.0 / 6.0, m3, m4]);
        close_enough(&u, &[NAN, 13.5, 65.0 / 6.0 + 4.0, m3 + 6.5, m4 + 6.25]);
        close_enough(&l, &[NAN, 5.5, 65.0 / 6.0 - 4.0, m3 - 6.5, m4 - 6.25]);
    }
}
