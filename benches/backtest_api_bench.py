#!/usr/bin/env python3
"""A 525,600-bar SMA-cross backtest through the sandbox's API against backtesting.py, in one run.

Usage (benches/backtest_api_bench.sh sets this up):

    backtest_api_bench.py --base http://127.0.0.1:PORT --key KEY --bars BARS.csv \
        [--fast 10 --slow 30 --fee 0.001 --rounds 5 --py-repeat 2]

API side: one keep-alive HTTP/1.1 connection; each round POSTs /api/delegated/backtests
(sma_cross, BTC-USD, 1m, 365 days = 525,600 bars) and polls GET /api/delegated/backtests/{id}
back to back (no sleep between polls, so the figure is the job's latency plus at most one
poll's round trip, not a polling interval) until the job is done. A round is timed from
before the POST is sent to the end of the `done` answer, which carries the whole result. The
first round generates the bars (a cold cache: on a sandbox just started, this includes walking the
feed from its origin to the window); the later ones find them cached (in builds with the bar
cache). Then one first job on each of --cold-pairs (other coins, so their bars are generated too)
gives more first-job samples; before each, an untimed five-day 1h backtest on that coin walks the
feed to now, as any earlier read of the coin (a mark, a proposal, discovery's warm-up) has on a
sandbox that has been running, so these time the year's bars, not the walk from the feed's origin. The time includes the client's parse of the final answer.

backtesting.py side: `Backtest.run()` of benches/backtesting_py_compare.py's mirror strategy
(SMA(fast) vs SMA(slow), fills at the next open, commission per side) on a DataFrame of the same
number of bars of the same seeded feed, best of --py-repeat runs after a warm-up; CSV loading
and DataFrame construction are not timed.
"""

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.parse
import warnings

GOAL = 100.0


def api_rounds(base, key, fast, slow, rounds, poll_s, pair="BTC-USD", timeframe="1m", days=365):
    url = urllib.parse.urlparse(base)
    conn = http.client.HTTPConnection(url.hostname, url.port)
    headers = {"x-api-key": key, "content-type": "application/json"}
    body = json.dumps(
        {
            "strategyId": "sma_cross",
            "pair": pair,
            "timeframe": timeframe,
            "days": days,
            "parameters": {"fast": fast, "slow": slow},
        }
    )
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        conn.request("POST", "/api/delegated/backtests", body, headers)
        resp = conn.getresponse()
        job = json.loads(resp.read())
        if resp.status != 200:
            sys.exit(f"backtest_api_bench: submit answered {resp.status}: {job}")
        path = job["pollUrl"]
        polls = 0
        while True:
            conn.request("GET", path, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
            polls += 1
            job = json.loads(raw)
            if job.get("status") in ("done", "failed"):
                break
            if poll_s > 0:
                time.sleep(poll_s)
        t1 = time.perf_counter()
        if job["status"] != "done":
            sys.exit(f"backtest_api_bench: the job failed: {job.get('error')}")
        data = job["data"]
        out.append(
            {
                "seconds": t1 - t0,
                "polls": polls,
                "bars": data["bars"],
                "trades": data["totalTrades"],
                "return": data["totalReturn"],
                "start": data["startDate"],
                "bytes": len(raw),
            }
        )
    return out


def py_run(csv, fast, slow, fee, repeat):
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    import backtesting_py_compare as cmp  # noqa: E402  (needs backtesting installed)

    df = cmp.load(csv)
    times = []
    stats = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(repeat + 1):
            bt = cmp.FractionalBacktest(
                df,
                cmp.EngineSmaCross,
                cash=cmp.INITIAL,
                commission=fee,
                trade_on_close=False,
                exclusive_orders=True,
                finalize_trades=True,
                fractional_unit=cmp.FRACTIONAL_UNIT,
            )
            t0 = time.perf_counter()
            stats = bt.run(fast=fast, slow=slow, allow_short=True)
            dt = time.perf_counter() - t0
            if i > 0:  # the first run warms imports and caches
                times.append(dt)
    return df, min(times), stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--bars", required=True, help="CSV to write the same bars to")
    ap.add_argument("--gen", required=True, help="engine_compare, which writes them")
    ap.add_argument("--poll-ms", type=float, default=0.0)
    ap.add_argument("--fast", type=int, default=10)
    ap.add_argument("--slow", type=int, default=30)
    ap.add_argument("--fee", type=float, default=0.001)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--py-repeat", type=int, default=2)
    ap.add_argument("--cold-pairs", default="ETH-USD,SOL-USD", help="more first jobs, one per pair")
    a = ap.parse_args()

    # The bars the sandbox's job will use: the last 525,600 one-minute bars closed by now.
    until = int(time.time())
    subprocess.run(
        [a.gen, "--generate", "525600", a.bars, "--interval", "1", "--until", str(until)],
        check=True,
    )
    rounds = api_rounds(a.base, a.key, a.fast, a.slow, a.rounds, a.poll_ms / 1000)
    for i, r in enumerate(rounds):
        kind = (
            "first on a fresh sandbox: feed walked from its origin, bars generated"
            if i == 0
            else "repeat: bars cached, if the build caches"
        )
        print(
            f"api round {i + 1}: {r['seconds'] * 1000:.1f} ms, {r['polls']} polls, "
            f"{r['bars']} bars, {r['trades']} trades, final answer {r['bytes']} bytes  [{kind}]"
        )
    # After the BTC rounds: a cache miss on another coin may evict BTC's bars.
    others = []
    for pair in filter(None, a.cold_pairs.split(",")):
        api_rounds(a.base, a.key, a.fast, a.slow, 1, a.poll_ms / 1000, pair.strip(), "1h", 5)
        r = api_rounds(a.base, a.key, a.fast, a.slow, 1, a.poll_ms / 1000, pair.strip())[0]
        others.append((pair.strip(), r))
        print(
            f"api first job on {pair.strip()}: {r['seconds'] * 1000:.1f} ms, {r['polls']} polls, "
            f"{r['bars']} bars, {r['trades']} trades  [first: bars generated, feed already at now]"
        )
    df, py_s, stats = py_run(a.bars, a.fast, a.slow, a.fee, a.py_repeat)
    bars = len(df)
    print(
        f"backtesting.py: {bars} bars, bt.run() best of {a.py_repeat}: {py_s:.3f} s, "
        f"{int(stats['# Trades'])} trades, return {stats['Return [%]']:.4f} %"
    )
    if bars != rounds[0]["bars"]:
        sys.exit(f"backtest_api_bench: bar counts differ ({bars} vs {rounds[0]['bars']})")
    # Same window when the job's first bar is the CSV's (a minute may have turned in between).
    first = df.index[0].strftime("%Y-%m-%dT%H:%M:%S")
    same = rounds[0]["start"].startswith(first)
    print(
        f"api result: {rounds[0]['trades']} trades, return {rounds[0]['return']:.4f} % "
        f"(bars from {rounds[0]['start']}; backtesting.py's from {first}: "
        f"{'the same bars' if same else 'shifted by the clock'}; backtesting.py closes the last "
        "trade at the last open, the engine at the last close)"
    )
    cold = rounds[0]["seconds"]
    warm = [r["seconds"] for r in rounds[1:]] or [cold]
    med = statistics.median(warm)
    print(
        f"api end to end, first job on a fresh sandbox (BTC): {cold * 1000:.1f} ms -> "
        f"{py_s / cold:.0f}x backtesting.py"
    )
    firsts = [r["seconds"] for _, r in others]
    if firsts:
        fmed = statistics.median(firsts)
        print(
            f"api end to end, first jobs with the feed at now ({', '.join(p for p, _ in others)}), "
            f"median: {fmed * 1000:.1f} ms (worst {max(firsts) * 1000:.1f}) -> "
            f"{py_s / fmed:.0f}x backtesting.py"
        )
    print(
        f"api end to end, repeats (warm), median of {len(warm)}: {med * 1000:.1f} ms "
        f"(best {min(warm) * 1000:.1f}) -> {py_s / med:.0f}x backtesting.py"
    )
    checks = [("fresh sandbox", cold), ("repeats", med)]
    if firsts:
        checks.insert(1, ("first jobs", statistics.median(firsts)))
    ok = all(py_s / t >= GOAL for _, t in checks)
    print(
        f"{'PASS' if ok else 'FAIL'}: "
        + ", ".join(f"{name} {py_s / t:.0f}x" for name, t in checks)
        + f"; goal >= {GOAL:.0f}x for each"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
