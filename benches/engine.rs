//! Engine throughput. Run with `cargo bench --bench engine`.
//!
//! - `sma_cross_100k/*`: signal generation + backtest loop + all metrics on
//!   100 000 five-minute bars (goal: >= 70 M bars/s, i.e. <= ~1.4 ms/run).
//! - `sma_cross_100k/plain_loop`: the hand-written single-purpose reference.
//! - `optimizer/grid1000_x_8640_2threads`: 1 000 SMA-cross combinations over
//!   30 days of 5m bars on 2 threads (goal: <= 0.15 s).
//! - `optimizer/grid10000_x_8640_2threads`: the same with 10 000 combinations
//!   (issue 22: goal <= 0.3 s).

use std::hint::black_box;

use agentdesk::sandbox::engine::{
    Bar, Config, Params, SignalScratch, Workspace, grid, optimize, run, signals, signals_with,
    strategy,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// Deterministic random walk (LCG), 5-minute bars.
fn bars(n: usize) -> Vec<Bar> {
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    let mut px = 30_000.0f64;
    (0..n)
        .map(|i| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let u = (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            let open = px;
            px *= 1.0 + u * 0.004;
            Bar {
                time: 1_700_000_000 + i as i64 * 300,
                open,
                high: open.max(px) * 1.0005,
                low: open.min(px) * 0.9995,
                close: px,
                volume: 1.0,
            }
        })
        .collect()
}

/// The reference: one fused loop, two running sums, next-open fills, equity
/// and max drawdown, no fees/stops/statistics.
fn plain_sma_cross(bars: &[Bar], fast: usize, slow: usize) -> (f64, f64) {
    let (mut sf, mut ss) = (0.0, 0.0);
    let (mut pos, mut pending) = (0.0f64, 0.0f64);
    let (mut cash, mut units, mut entry) = (10_000.0f64, 0.0f64, 0.0f64);
    let (mut peak, mut max_dd) = (10_000.0f64, 0.0f64);
    for i in 0..bars.len() {
        let b = &bars[i];
        if pending != pos {
            if pos != 0.0 {
                cash += units * (b.open - entry);
            }
            units = pending * cash / b.open;
            entry = b.open;
            pos = pending;
        }
        let eq = cash + units * (b.close - entry);
        peak = peak.max(eq);
        max_dd = max_dd.max(1.0 - eq / peak);
        sf += b.close;
        ss += b.close;
        if i >= fast {
            sf -= bars[i - fast].close;
        }
        if i >= slow {
            ss -= bars[i - slow].close;
        }
        if i + 1 >= slow {
            let d = sf / fast as f64 - ss / slow as f64;
            pending = if d > 0.0 {
                1.0
            } else if d < 0.0 {
                -1.0
            } else {
                pending
            };
        }
    }
    (cash + units * (bars[bars.len() - 1].close - entry), max_dd)
}

fn bench_single(c: &mut Criterion) {
    let data = bars(100_000);
    let spec = strategy("sma_cross").expect("sma_cross");
    let params = Params::defaults(spec);
    let cfg = Config {
        fee_rate: 0.0005,
        slippage_bps: 1.0,
        ..Config::default()
    };
    let mut g = c.benchmark_group("sma_cross_100k");
    g.throughput(Throughput::Elements(data.len() as u64));
    g.sample_size(60);

    g.bench_function("public_api", |b| {
        let mut sig = Vec::new();
        b.iter(|| {
            signals(spec, &params, black_box(&data), &mut sig);
            run(black_box(&data), &sig, &cfg)
        })
    });
    g.bench_function("workspace_full_result", |b| {
        let (mut scratch, mut sig, mut ws) =
            (SignalScratch::default(), Vec::new(), Workspace::default());
        b.iter(|| {
            signals_with(spec, &params, black_box(&data), &mut scratch, &mut sig);
            ws.run(black_box(&data), &sig, &cfg)
        })
    });
    g.bench_function("workspace_stats_only", |b| {
        let (mut scratch, mut sig, mut ws) =
            (SignalScratch::default(), Vec::new(), Workspace::default());
        b.iter(|| {
            signals_with(spec, &params, black_box(&data), &mut scratch, &mut sig);
            ws.stats(black_box(&data), &sig, &cfg)
        })
    });
    g.bench_function("component_signals_only", |b| {
        let mut sig = Vec::new();
        b.iter(|| signals(spec, &params, black_box(&data), &mut sig))
    });
    g.bench_function("component_backtest_and_metrics_only", |b| {
        let mut sig = Vec::new();
        signals(spec, &params, &data, &mut sig);
        let mut ws = Workspace::default();
        b.iter(|| ws.run(black_box(&data), black_box(&sig), &cfg))
    });
    g.bench_function("plain_loop", |b| {
        b.iter(|| plain_sma_cross(black_box(&data), 10, 30))
    });
    g.finish();
}

fn bench_optimizer(c: &mut Criterion) {
    let data = bars(8_640);
    let spec = strategy("sma_cross").expect("sma_cross");
    let cfg = Config {
        fee_rate: 0.0005,
        ..Config::default()
    };
    let mut g = c.benchmark_group("optimizer");
    g.sample_size(10);
    for size in [1_000, 10_000] {
        let cands = grid(spec, size);
        assert_eq!(cands.len(), size);
        g.throughput(Throughput::Elements((data.len() * cands.len()) as u64));
        for threads in [1, 2] {
            g.bench_function(format!("grid{size}_x_8640_{threads}threads"), |b| {
                b.iter(|| optimize(spec, black_box(&data), &cfg, &cands, threads))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench_single, bench_optimizer);
criterion_main!(benches);
