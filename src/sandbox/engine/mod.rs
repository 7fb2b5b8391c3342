//! Self-contained strategy backtesting engine.
//!
//! Layout:
//! - [`indicators`]: O(n) streaming technical indicators writing into caller buffers.
//! - [`strategies`]: the strategy catalogue, parameter validation/enumeration and
//!   signal generation (target position per bar, decided at the bar's close).
//! - [`backtest`]: the fill simulator (next-open fills, fees, slippage, SL/TP).
//! - [`metrics`]: backtesting.py-compatible statistics.
//! - [`optimizer`]: parallel parameter search over many candidates.
//!
//! Everything here is dependency-free and refers to siblings through `super::`
//! only, so the folder can be dropped into another crate at any module path.
//!
//! Floating-point statistics that are undefined (no trades, zero variance, ...)
//! are `f64::NAN`; the HTTP layer is expected to serialise those as `null`.

pub mod backtest;
pub mod indicators;
pub mod metrics;
pub mod optimizer;
pub mod strategies;

pub use self::backtest::{BacktestResult, Config, Exit, Trade, Workspace, run};
pub use self::metrics::Stats;
pub use self::optimizer::{RankBy, optimize, rank};
pub use self::strategies::{
    Category, ParamError, ParamKind, ParamSpec, Params, STRATEGIES, SignalScratch, StrategySpec,
    grid, random, resolve_params, signals, signals_with, strategy,
};

/// One OHLCV candle.
#[derive(Debug, Clone, Copy, PartialEq, Default, bytemuck::Zeroable)]
pub struct Bar {
    /// Unix seconds of the bar's open.
    pub time: i64,
    pub open: f64,
    pub high: f64,
    pub low: f64,
    pub close: f64,
    pub volume: f64,
}
