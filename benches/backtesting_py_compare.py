#!/usr/bin/env python3
"""Cross-check the agentdesk engine's `sma_cross` against backtesting.py.

Usage (benches/backtesting_py_compare.sh sets this up):

    backtesting_py_compare.py --engine target/release/examples/engine_compare \
        --check BARS_10K.csv [--speed BARS_100K.csv] [--fast 10 --slow 30 --fee 0.001]

Correctness (--check): the same CSV is run through backtesting.py and through
the engine example, once with shorts (the engine's default, a reversal on
every cross) and once long-only (`allow_short = false`). Trade counts must be
equal and the final returns must agree within TOL_PP percentage points; every
trade's entry/exit time and direction are compared too.

Speed (--speed): backtesting.py's `bt.run()` (best of 3 after a warm-up run)
against the engine's per-run time (best of many) on the same 100k bars.

How the strategy mirrors the engine (src/sandbox/engine/):

* Signal (strategies.rs `cross`): target = +1 while SMA(fast) > SMA(slow),
  -1 while below, unchanged on a tie, 0 during the slow SMA's warm-up. The
  SMAs are computed with the engine's running sum (`sum += x[i] - x[i-p]`,
  `sum * (1/p)`), so the comparisons are bit-identical, not just close.
  The arrays are plain numpy attributes, not `self.I` indicators: backtesting.py
  skips the indicator warm-up *plus one bar* before calling `next()`, which
  would delay the first entry by one bar relative to the engine.
* Fills (backtest.rs): the target decided at bar i's close fills at bar i+1's
  open (`trade_on_close=False`); a reversal is close + open at that same open
  (`exclusive_orders=True`, then `buy()`/`sell()`); with `allow_short=false`
  a -1 target means flat (`position.close()`).
* Fees: `commission=FEE` per side on notional, as the engine's `fee_rate`.
* Sizing: all-in, `buy()`'s default size (1 - eps of equity) gives
  `units = floor(equity / (price * (1 + fee)))`, the engine's
  `cash / (fill * (1 + fee))` without the floor. backtesting.py trades whole
  units, so the run uses `FractionalBacktest` with `fractional_unit = 2**-27`
  (~7.5e-9 BTC, ~$0.0005 at these prices). A power of two keeps the scaled
  prices exact, so the SMA comparisons stay bit-identical.
* End of data: the engine never fills the last bar's signal and closes an open
  position at the last bar's *close* (fee charged). backtesting.py's
  `finalize_trades=True` re-runs the last bar and fills the close (and any
  order placed on the last bar) at the last bar's *open*. The mirror run
  therefore uses `finalize_trades=False`, places no order on the last bar and
  closes the remaining trade at the last close itself: equity at the last close
  (backtesting.py's `Equity Final`) minus the exit commission
  `|size| * close * FEE`, and that trade is counted. The native
  `finalize_trades=True` figures are printed for information.

Tolerance: TOL_PP = 0.01 percentage points of return. The only modelled
difference left is the whole-unit floor: each entry leaves < 1 unit
(< $0.001) of cash uninvested, which changes that trade's P&L by at most
$0.001 * |trade return| and the fees by $0.001 * FEE; over a few hundred
trades that is < $0.01 of a $10,000 account, i.e. < 1e-4 pp. Floating-point
order differences (notional = units * scaled price) are ~1e-12 relative.
0.01 pp therefore leaves two orders of magnitude of headroom while still
catching any real fill/fee difference (one fill at the wrong bar moves the
result by ~0.1-1 pp; one fee missing or doubled moves it by FEE*100 = 0.1 pp).
"""

import argparse
import json
import math
import subprocess
import sys
import time
import warnings

import numpy as np
import pandas as pd
from backtesting import Strategy
from backtesting.lib import FractionalBacktest
import backtesting

TOL_PP = 0.01
FRACTIONAL_UNIT = 2.0 ** -27
INITIAL = 10_000.0
SPEED_GOAL = 500.0

# Keep the timing loop free of tqdm's progress bars.
try:
    backtesting.backtesting._tqdm = lambda seq, **_: seq
except AttributeError:
    pass


def load(path):
    raw = pd.read_csv(path)
    raw.columns = [c.strip().lower() for c in raw.columns]
    df = pd.DataFrame(
        {
            "Open": raw["open"].astype(float).values,
            "High": raw["high"].astype(float).values,
            "Low": raw["low"].astype(float).values,
            "Close": raw["close"].astype(float).values,
            "Volume": raw["volume"].astype(float).values,
        },
        index=pd.DatetimeIndex(pd.to_datetime(raw["timestamp"], unit="s"), name="Time"),
    )
    return df


def engine_sma(close, period):
    """indicators::sma_stream, operation for operation."""
    n = len(close)
    out = np.full(n, np.nan)
    if period <= 0 or period > n:
        return out
    inv = 1.0 / period
    s = 0.0
    for i in range(n):
        if i < period:
            s += close[i]
        else:
            s += close[i] - close[i - period]
        if i + 1 >= period:
            out[i] = s * inv
    return out


def engine_targets(close, fast, slow):
    """strategies::cross: sticky sign of SMA(fast) - SMA(slow), NaN -> hold."""
    f = engine_sma(close, fast)
    s = engine_sma(close, slow)
    out = np.zeros(len(close), dtype=np.int8)
    pos = 0
    for i in range(len(close)):
        d = int(f[i] > s[i]) - int(f[i] < s[i])  # NaN compares false: d = 0
        if d != 0:
            pos = d
        out[i] = pos
    return out


class EngineSmaCross(Strategy):
    fast = 10
    slow = 30
    allow_short = True

    def init(self):
        close = np.asarray(self.data.Close, dtype=float)
        self.target = engine_targets(close, self.fast, self.slow)
        if not self.allow_short:
            self.target = np.maximum(self.target, 0)
        self.last = len(close) - 1

    def next(self):
        i = len(self.data) - 1
        if i >= self.last:
            return  # the engine never fills the last bar's signal
        t = int(self.target[i])
        size = self.position.size
        cur = (size > 0) - (size < 0)
        if t == cur:
            return
        if t > 0:
            self.buy()  # exclusive_orders: closes a short at the same open
        elif t < 0:
            self.sell()
        else:
            self.position.close()


def run_bt(df, fast, slow, fee, allow_short, finalize):
    bt = FractionalBacktest(
        df,
        EngineSmaCross,
        cash=INITIAL,
        commission=fee,
        trade_on_close=False,
        exclusive_orders=True,
        finalize_trades=finalize,
        fractional_unit=FRACTIONAL_UNIT,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        stats = bt.run(fast=fast, slow=slow, allow_short=allow_short)
        elapsed = time.perf_counter() - t0
    return bt, stats, elapsed


def bt_mirror(df, fast, slow, fee, allow_short):
    """backtesting.py with the engine's end-of-data rule applied (see module doc)."""
    _, stats, _ = run_bt(df, fast, slow, fee, allow_short, finalize=False)
    strat = stats["_strategy"]
    open_trades = list(strat.trades)
    last_close_scaled = df["Close"].iloc[-1] * FRACTIONAL_UNIT
    exit_fees = sum(abs(t.size) * last_close_scaled * fee for t in open_trades)
    final = float(stats["Equity Final [$]"]) - exit_fees
    closed = stats["_trades"]
    rows = [
        (int(r.EntryTime.timestamp()), int(r.ExitTime.timestamp()), 1 if r.Size > 0 else -1,
         float(r.EntryPrice), float(r.ExitPrice))
        for r in closed.itertuples()
    ]
    last_t = int(df.index[-1].timestamp())
    for t in open_trades:
        rows.append((int(t.entry_time.timestamp()), last_t, 1 if t.size > 0 else -1,
                     t.entry_price / FRACTIONAL_UNIT, float(df["Close"].iloc[-1])))
    return {
        "trades": len(closed) + len(open_trades),
        "final_equity": final,
        "return_pct": (final - INITIAL) / INITIAL * 100.0,
        "stats": stats,
        "open_at_end": len(open_trades),
        "rows": rows,
    }


# Engine Stats field -> backtesting.py stats key (metrics.rs mirrors _stats.py).
METRICS = [
    ("duration_days", "Duration"),
    ("exposure_time_pct", "Exposure Time [%]"),
    ("equity_final", "Equity Final [$]"),
    ("equity_peak", "Equity Peak [$]"),
    ("return_pct", "Return [%]"),
    ("buy_hold_return_pct", "Buy & Hold Return [%]"),
    ("return_ann_pct", "Return (Ann.) [%]"),
    ("volatility_ann_pct", "Volatility (Ann.) [%]"),
    ("sharpe", "Sharpe Ratio"),
    ("sortino", "Sortino Ratio"),
    ("calmar", "Calmar Ratio"),
    ("max_drawdown_pct", "Max. Drawdown [%]"),
    ("avg_drawdown_pct", "Avg. Drawdown [%]"),
    ("max_drawdown_duration_days", "Max. Drawdown Duration"),
    ("avg_drawdown_duration_days", "Avg. Drawdown Duration"),
    ("trades", "# Trades"),
    ("win_rate_pct", "Win Rate [%]"),
    ("best_trade_pct", "Best Trade [%]"),
    ("worst_trade_pct", "Worst Trade [%]"),
    ("avg_trade_pct", "Avg. Trade [%]"),
    ("max_trade_duration_days", "Max. Trade Duration"),
    ("avg_trade_duration_days", "Avg. Trade Duration"),
    ("profit_factor", "Profit Factor"),
    ("expectancy_pct", "Expectancy [%]"),
    ("sqn", "SQN"),
]
METRIC_RTOL = 1e-6


def as_float(v):
    if isinstance(v, pd.Timedelta):
        return v / pd.Timedelta(days=1)
    try:
        v = float(v)
    except (TypeError, ValueError):
        return float("nan")
    return v


DURATIONS = {"duration_days", "max_drawdown_duration_days", "avg_drawdown_duration_days",
             "max_trade_duration_days", "avg_trade_duration_days"}
# Daily-return statistics: see pre1346_annualised().
ANNUALISED = {"return_ann_pct", "volatility_ann_pct", "sharpe", "sortino", "calmar"}


def pre1346_annualised(bt_stats):
    """backtesting.py's annualised statistics recomputed from its own equity
    curve with the convention before kernc/backtesting.py PR #1346 (the
    installed 0.6.6 already has that change): the first day's NaN `pct_change` is *kept*, and
    `geometric_mean` fills it with 0, so it counts in the mean's length D. The
    engine (metrics.rs) documents and implements that older convention; 0.6.6
    drops the first day (`.pct_change().dropna()`)."""
    eq = bt_stats["_equity_curve"]["Equity"]
    idx = eq.index
    have_weekends = idx.day_of_week.to_series().between(5, 6).mean() > 2 / 7 * .6
    A = 365 if have_weekends else 252
    r = eq.resample("D").last().dropna().pct_change()  # first day NaN kept
    g = backtesting._stats.geometric_mean(r)
    ann = (1 + g) ** A - 1
    vol = np.sqrt((r.var(ddof=1) + (1 + g) ** 2) ** A - (1 + g) ** (2 * A))
    sortino = ann / (np.sqrt(np.mean(r.dropna().clip(-np.inf, 0) ** 2)) * np.sqrt(A))
    max_dd = -float(bt_stats["Max. Drawdown [%]"]) / 100
    return {"return_ann_pct": ann * 100, "volatility_ann_pct": vol * 100,
            "sharpe": ann / vol, "sortino": sortino, "calmar": ann / (max_dd or np.nan)}


def close_enough(e, b):
    if not math.isfinite(e) and not math.isfinite(b):
        return True
    return (math.isfinite(e) and math.isfinite(b)
            and abs(e - b) <= METRIC_RTOL * max(1.0, abs(b)))


def compare_metrics(eng_stats, bt_stats):
    """Every statistic, when both runs end flat (then backtesting.py's stats
    cover exactly the engine's trades and equity curve). Returns the names
    that differ beyond METRIC_RTOL (relative, or absolute below 1)."""
    bad = []
    for ek, bk in METRICS:
        e = eng_stats.get(ek)
        e = float("nan") if e is None else float(e)
        b = as_float(bt_stats[bk])
        if ek in DURATIONS and math.isfinite(e):
            # backtesting.py rounds durations *up* to the data's resolution
            # (`_round_timedelta`: 5-minute bars -> whole minutes).
            e = math.ceil(round(e * 1440, 6)) / 1440
        if not close_enough(e, b):
            bad.append((ek, bk, e, b))
    return bad


def run_engine(exe, csv, fast, slow, fee, allow_short, repeat=1, trades=False):
    cmd = [exe, csv, str(fast), str(slow), repr(fee), "--repeat", str(repeat)]
    if not allow_short:
        cmd.append("--long-only")
    if trades:
        cmd.append("--trades")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def check(args, df, allow_short):
    label = "long+short" if allow_short else "long-only"
    fast, slow, fee = args.fast, args.slow, args.fee
    eng = run_engine(args.engine, args.check, fast, slow, fee, allow_short, trades=True)
    bt = bt_mirror(df, fast, slow, fee, allow_short)
    _, native, _ = run_bt(df, fast, slow, fee, allow_short, finalize=True)

    print(f"\n== {label}: SMA({fast},{slow}), fee {fee}, {len(df)} bars ({args.check})")
    print(f"  engine        : trades {eng['trades']:5d}  final {eng['final_equity']:.6f}"
          f"  return {eng['return_pct']:+.6f} %")
    print(f"  backtesting.py: trades {bt['trades']:5d}  final {bt['final_equity']:.6f}"
          f"  return {bt['return_pct']:+.6f} %  (mirror: close at last close,"
          f" {bt['open_at_end']} trade open at the end)")
    print(f"  backtesting.py native finalize_trades=True (closes at the last bar's open):"
          f" trades {int(native['# Trades'])}, return {float(native['Return [%]']):+.6f} %")

    ok = True
    if eng["trades"] == bt["trades"]:
        print(f"  PASS trades: {eng['trades']} == {bt['trades']}")
    else:
        print(f"  FAIL trades: engine {eng['trades']} != backtesting.py {bt['trades']}")
        ok = False
    diff = abs(eng["return_pct"] - bt["return_pct"])
    if diff <= TOL_PP:
        print(f"  PASS return: |{eng['return_pct']:.6f} - {bt['return_pct']:.6f}| ="
              f" {diff:.2e} pp <= {TOL_PP} pp")
    else:
        print(f"  FAIL return: |{eng['return_pct']:.6f} - {bt['return_pct']:.6f}| ="
              f" {diff:.2e} pp > {TOL_PP} pp")
        ok = False

    # Fill timing and prices, trade by trade.
    et = [(t["entry_time"], t["exit_time"], t["direction"], t["entry_px"], t["exit_px"])
          for t in eng["trade_list"]]
    mism = [k for k, (a, b) in enumerate(zip(et, bt["rows"])) if a[:3] != b[:3]]
    max_px = max((max(abs(a[3] - b[3]) / a[3], abs(a[4] - b[4]) / a[4])
                  for a, b in zip(et, bt["rows"])), default=0.0)
    if not mism and len(et) == len(bt["rows"]):
        print(f"  PASS fills: all {len(et)} trades have the same entry/exit bar and"
              f" direction; max relative fill-price difference {max_px:.1e}")
    else:
        ok = False
        k = mism[0] if mism else min(len(et), len(bt["rows"]))
        print(f"  FAIL fills: first differing trade #{k}:")
        print(f"    engine        : {et[k] if k < len(et) else None}")
        print(f"    backtesting.py: {bt['rows'][k] if k < len(bt['rows']) else None}")
    if bt["open_at_end"] == 0:
        bad = compare_metrics(eng["stats"], bt["stats"])
        old_conv = pre1346_annualised(bt["stats"])
        known = [x for x in bad if x[0] in ANNUALISED
                 and close_enough(float(eng["stats"][x[0]]), old_conv[x[0]])]
        unexplained = [x for x in bad if x not in known]
        n_ok = len(METRICS) - len(bad)
        print(f"  PASS metrics: {n_ok} of {len(METRICS)} statistics agree (rel. {METRIC_RTOL:g};"
              " durations after backtesting.py's round-up to the minute)")
        for ek, bk, e, b in known:
            print(f"  DIFF metric {ek} / '{bk}': engine {e:.9g}, backtesting.py {b:.9g};"
                  f" equals backtesting.py's pre-PR#1346 formula ({old_conv[ek]:.9g}):"
                  " first day counted in the daily geometric mean")
        for ek, bk, e, b in unexplained:
            ok = False
            print(f"  FAIL metric {ek} / '{bk}': engine {e!r}, backtesting.py {b!r}")
    else:
        print("  INFO metrics: not compared (a trade is open at the end, and the two"
              " close it differently; see the long-only run)")
    return ok


def speed(args):
    df = load(args.speed)
    fast, slow, fee = args.fast, args.slow, args.fee
    eng = run_engine(args.engine, args.speed, fast, slow, fee, True, repeat=args.engine_repeat)
    times = []
    for k in range(1 + args.py_repeat):  # first run is a warm-up
        _, stats, el = run_bt(df, fast, slow, fee, True, finalize=False)
        if k:
            times.append(el)
    py = min(times)
    ratio = py / eng["run_time_s"]
    print(f"\n== speed: SMA({fast},{slow}), fee {fee}, {len(df)} bars ({args.speed})")
    print(f"  backtesting.py {backtesting.__version__} bt.run(): best of {args.py_repeat}"
          f" = {py:.3f} s  (all: {', '.join(f'{t:.3f}' for t in times)})")
    print(f"  engine (signals + backtest + metrics): best of {eng['repeats']}"
          f" = {eng['run_time_s'] * 1e3:.3f} ms  (median {eng['run_time_median_s'] * 1e3:.3f} ms)"
          f"  = {len(df) / eng['run_time_s'] / 1e6:.1f} M bars/s")
    verdict = "PASS" if ratio >= SPEED_GOAL else "FAIL"
    print(f"  {verdict} speed ratio: {ratio:,.0f}x (goal >= {SPEED_GOAL:.0f}x)")
    print(f"  (same trades? engine {eng['trades']}, backtesting.py {int(stats['# Trades'])}"
          f" closed + {len(list(stats['_strategy'].trades))} open)")
    return ratio >= SPEED_GOAL


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--engine", required=True, help="path to the engine_compare binary")
    p.add_argument("--check", help="CSV for the correctness cross-check")
    p.add_argument("--speed", help="CSV for the speed comparison")
    p.add_argument("--fast", type=int, default=10)
    p.add_argument("--slow", type=int, default=30)
    p.add_argument("--fee", type=float, default=0.001)
    p.add_argument("--py-repeat", type=int, default=3)
    p.add_argument("--engine-repeat", type=int, default=300)
    args = p.parse_args()
    print(f"backtesting.py {backtesting.__version__}, pandas {pd.__version__},"
          f" numpy {np.__version__}, python {sys.version.split()[0]}")

    ok = True
    if args.check:
        df = load(args.check)
        for allow_short in (True, False):
            ok &= check(args, df, allow_short)
    if args.speed:
        ok &= speed(args)
    print("\nRESULT:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
