//! Run the engine's `sma_cross` on a CSV of bars and print one JSON line, so an
//! outside tool (benches/backtesting_py_compare.py) can check the results and the
//! speed against another backtester on identical bars.
//!
//! ```text
//! cargo run --release --example engine_compare -- BARS.csv FAST SLOW FEE_RATE \
//!     [--repeat N] [--long-only] [--trades]
//! cargo run --release --example engine_compare -- --generate N OUT.csv \
//!     [--coin BTC] [--interval 5] [--seed 42] [--until UNIX]
//! ```
//!
//! Backtest mode: the CSV has `timestamp,open,high,low,close,volume` rows
//! (timestamp in unix seconds; a header line is optional). The run uses
//! `Config { initial_equity: 10_000, fee_rate: FEE_RATE, slippage_bps: 0,
//! sl_pct/tp_pct: None, allow_short: !--long-only }`. `run_time_s` is the best
//! of `--repeat` runs (default 1) of signal generation + backtest + all metrics
//! with reused buffers (the engine's hot path); CSV parsing is not timed.
//! `stats` holds every engine statistic; `--trades` adds the trade list.
//!
//! Generate mode: writes N bars of the sandbox's seeded feed
//! (`Market::new(seed).candles(...)`, 5-minute BTC from the feed origin by
//! default). Prices are written with Rust's shortest round-trip formatting, so
//! every reader parses back bit-identical `f64`s.

use std::io::{BufWriter, Write};
use std::process::ExitCode;
use std::time::Instant;

use agentdesk::sandbox::engine::{
    Bar, Config, Params, SignalScratch, Workspace, resolve_params, signals_with, strategy,
};
use agentdesk::sandbox::venue::market::{Market, ORIGIN_UNIX_SECONDS};
use chrono::{DateTime, Duration, Utc};
use serde_json::json;

const USAGE: &str = "usage:
  engine_compare BARS.csv FAST SLOW FEE_RATE [--repeat N] [--long-only] [--trades]
  engine_compare --generate N OUT.csv [--coin BTC] [--interval 5] [--seed 42] [--until UNIX]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.first().map(String::as_str) == Some("--generate") {
        generate(&args[1..])
    } else {
        backtest(&args)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("engine_compare: {e}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// Splits `args` into positionals and `--flag [value]` options.
struct Args {
    positional: Vec<String>,
    options: Vec<(String, Option<String>)>,
}

impl Args {
    fn parse(args: &[String], with_value: &[&str], switches: &[&str]) -> Result<Args, String> {
        let mut out = Args {
            positional: Vec::new(),
            options: Vec::new(),
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if with_value.contains(&a.as_str()) {
                let v = it.next().ok_or_else(|| format!("{a} needs a value"))?;
                out.options.push((a.clone(), Some(v.clone())));
            } else if switches.contains(&a.as_str()) {
                out.options.push((a.clone(), None));
            } else if a.starts_with("--") {
                return Err(format!("unknown option {a}"));
            } else {
                out.positional.push(a.clone());
            }
        }
        Ok(out)
    }

    fn value(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.as_deref())
    }

    fn switch(&self, name: &str) -> bool {
        self.options.iter().any(|(n, _)| n == name)
    }
}

fn num<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("{what}: not a valid number: {s:?}"))
}

fn generate(args: &[String]) -> Result<(), String> {
    let a = Args::parse(args, &["--coin", "--interval", "--seed", "--until"], &[])?;
    let [n, out] = a.positional.as_slice() else {
        return Err("--generate needs N and OUT.csv".into());
    };
    let n: usize = num(n, "N")?;
    let coin = a.value("--coin").unwrap_or("BTC");
    let interval: u32 = num(a.value("--interval").unwrap_or("5"), "--interval")?;
    let seed: u64 = num(a.value("--seed").unwrap_or("42"), "--seed")?;
    if interval == 0 {
        return Err("--interval must be positive".into());
    }

    let market = Market::new(seed);
    if let Some(until) = a.value("--until") {
        // The window the sandbox's backtests use: the last N bars closed by then.
        let until: i64 = num(until, "--until")?;
        let tf = agentdesk::sandbox::data::Timeframe::ALL
            .into_iter()
            .find(|t| t.minutes() == interval)
            .ok_or("--until needs an --interval the sandbox knows (1, 5, 15, 60, 240, 1440)")?;
        let now = DateTime::UNIX_EPOCH + Duration::seconds(until);
        let bars = agentdesk::sandbox::data::feed_window(&market, coin, tf, n, now);
        let rows = bars
            .iter()
            .map(|b| (b.time, b.open, b.high, b.low, b.close, b.volume));
        return write_csv(out, rows, coin, interval, seed);
    }
    let mut cursor: DateTime<Utc> = DateTime::UNIX_EPOCH + Duration::seconds(ORIGIN_UNIX_SECONDS);
    let mut bars = Vec::with_capacity(n);
    while bars.len() < n {
        // The feed caps each call (MAX_CANDLES); walk forward chunk by chunk.
        let chunk = market.candles(coin, interval, cursor, n - bars.len());
        let Some(last) = chunk.last() else {
            return Err(format!(
                "the feed returned no candles for {coin} at {cursor}"
            ));
        };
        cursor = last.time + Duration::minutes(i64::from(interval));
        bars.extend(chunk);
    }

    let rows = bars.iter().map(|c| {
        let t = c.time.timestamp();
        (t, c.open, c.high, c.low, c.close, c.volume)
    });
    write_csv(out, rows, coin, interval, seed)
}

type Row = (i64, f64, f64, f64, f64, f64);

fn write_csv(
    out: &str,
    rows: impl Iterator<Item = Row>,
    coin: &str,
    interval: u32,
    seed: u64,
) -> Result<(), String> {
    let file = std::fs::File::create(out).map_err(|e| format!("{out}: {e}"))?;
    let mut w = BufWriter::new(file);
    let io = |e: std::io::Error| format!("{out}: {e}");
    writeln!(w, "timestamp,open,high,low,close,volume").map_err(io)?;
    let mut n = 0;
    for (t, o, h, l, c, v) in rows {
        writeln!(w, "{t},{o},{h},{l},{c},{v}").map_err(io)?;
        n += 1;
    }
    w.flush().map_err(io)?;
    eprintln!("wrote {n} {coin} {interval}m bars (seed {seed}) to {out}");
    Ok(())
}

fn read_csv(path: &str) -> Result<Vec<Bar>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut bars = Vec::new();
    for (ln, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if ln == 0 && f[0].parse::<f64>().is_err() {
            continue; // header
        }
        if f.len() < 6 {
            return Err(format!("{path}:{}: expected 6 columns", ln + 1));
        }
        let at = |i: usize| -> Result<f64, String> {
            f[i].parse()
                .map_err(|_| format!("{path}:{}: bad number {:?}", ln + 1, f[i]))
        };
        bars.push(Bar {
            time: f[0]
                .parse()
                .map_err(|_| format!("{path}:{}: bad timestamp {:?}", ln + 1, f[0]))?,
            open: at(1)?,
            high: at(2)?,
            low: at(3)?,
            close: at(4)?,
            volume: at(5)?,
        });
    }
    if bars.is_empty() {
        return Err(format!("{path}: no bars"));
    }
    Ok(bars)
}

/// NaN/inf are not JSON; write them as null.
fn f(v: f64) -> serde_json::Value {
    if v.is_finite() {
        json!(v)
    } else {
        serde_json::Value::Null
    }
}

fn backtest(args: &[String]) -> Result<(), String> {
    let a = Args::parse(args, &["--repeat"], &["--long-only", "--trades"])?;
    let [path, fast, slow, fee] = a.positional.as_slice() else {
        return Err("expected BARS.csv FAST SLOW FEE_RATE".into());
    };
    let fast: f64 = num(fast, "FAST")?;
    let slow: f64 = num(slow, "SLOW")?;
    let fee_rate: f64 = num(fee, "FEE_RATE")?;
    let repeat: usize = num::<usize>(a.value("--repeat").unwrap_or("1"), "--repeat")?.max(1);
    let allow_short = !a.switch("--long-only");

    let spec = strategy("sma_cross").ok_or("the catalogue has no sma_cross")?;
    let params: Params = resolve_params(
        spec,
        &[("fast".to_string(), fast), ("slow".to_string(), slow)],
    )
    .map_err(|e| e.to_string())?;
    let cfg = Config {
        initial_equity: 10_000.0,
        fee_rate,
        slippage_bps: 0.0,
        sl_pct: None,
        tp_pct: None,
        allow_short,
        ..Config::default()
    };
    cfg.validate().map_err(|e| e.to_string())?;

    let bars = read_csv(path)?;

    let (mut scratch, mut sig, mut ws) =
        (SignalScratch::default(), Vec::new(), Workspace::default());
    let mut times = Vec::with_capacity(repeat);
    let mut result = None;
    for _ in 0..repeat {
        let t0 = Instant::now();
        signals_with(spec, &params, &bars, &mut scratch, &mut sig);
        let r = ws.run(&bars, &sig, &cfg);
        times.push(t0.elapsed().as_secs_f64());
        result = Some(std::hint::black_box(r));
    }
    let r = result.expect("repeat >= 1");
    times.sort_by(f64::total_cmp);
    let s = &r.stats;

    let mut out = json!({
        "engine": "agentdesk",
        "bars": bars.len(),
        "fast": fast,
        "slow": slow,
        "fee_rate": fee_rate,
        "allow_short": allow_short,
        "trades": s.trades,
        "final_equity": f(s.equity_final),
        "return_pct": f(s.return_pct),
        "max_drawdown_pct": f(s.max_drawdown_pct),
        "repeats": repeat,
        "run_time_s": times[0],
        "run_time_median_s": times[times.len() / 2],
    });
    out["stats"] = json!({
        "duration_days": f(s.duration_days),
        "exposure_time_pct": f(s.exposure_time_pct),
        "equity_final": f(s.equity_final),
        "equity_peak": f(s.equity_peak),
        "return_pct": f(s.return_pct),
        "buy_hold_return_pct": f(s.buy_hold_return_pct),
        "return_ann_pct": f(s.return_ann_pct),
        "volatility_ann_pct": f(s.volatility_ann_pct),
        "sharpe": f(s.sharpe),
        "sortino": f(s.sortino),
        "calmar": f(s.calmar),
        "max_drawdown_pct": f(s.max_drawdown_pct),
        "avg_drawdown_pct": f(s.avg_drawdown_pct),
        "max_drawdown_duration_days": f(s.max_drawdown_duration_days),
        "avg_drawdown_duration_days": f(s.avg_drawdown_duration_days),
        "trades": s.trades,
        "win_rate_pct": f(s.win_rate_pct),
        "best_trade_pct": f(s.best_trade_pct),
        "worst_trade_pct": f(s.worst_trade_pct),
        "avg_trade_pct": f(s.avg_trade_pct),
        "max_trade_duration_days": f(s.max_trade_duration_days),
        "avg_trade_duration_days": f(s.avg_trade_duration_days),
        "profit_factor": f(s.profit_factor),
        "expectancy_pct": f(s.expectancy_pct),
        "sqn": f(s.sqn),
    });
    if a.switch("--trades") {
        out["trade_list"] = r
            .trades
            .iter()
            .map(|t| {
                json!({
                    "entry_time": t.entry_time,
                    "exit_time": t.exit_time,
                    "direction": t.direction,
                    "entry_px": t.entry_px,
                    "exit_px": t.exit_px,
                    "size": t.size,
                    "pnl": t.pnl,
                    "return_pct": t.return_pct,
                    "exit": t.exit.as_str(),
                })
            })
            .collect();
    }
    println!("{out}");
    Ok(())
}
