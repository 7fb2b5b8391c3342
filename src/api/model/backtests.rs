//! Backtests, strategies and discovery.

use super::{ErrorDetail, Extra, lenient, num};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BacktestRequest {
    pub strategy_id: String,
    pub pair: String,
    pub timeframe: String,
    pub days: u32,
    #[serde(default)]
    pub parameters: Map<String, Value>,
}

/// Fewer closed trades than this and a ratio (Sharpe, Sortino, profit factor, win rate ...) says
/// more about chance than about the strategy. Here, beside the statistics, because both sides
/// judge samples by it: the console mutes and flags such rows, and the sandbox's research report
/// ranks them after every row with enough trades.
pub const MIN_TRADES: u32 = 20;

/// A number that may be absent or undefined (no trades → no win rate): `null` on the wire.
pub type Metric = Option<f64>;

/// Backtest statistics, backtesting.py-grade; percentages are in percent. The seed-observed
/// summary fields (`totalReturn`, `totalTrades`, `winRate`, `maxDrawdown`, `sharpeRatio`,
/// `profitFactor`, `startDate`, `endDate`) sit beside the full set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BacktestStats {
    #[serde(default, deserialize_with = "num::de_opt")]
    pub total_return: Metric,
    #[serde(default, deserialize_with = "num::int")]
    pub total_trades: u32,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub win_rate: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub max_drawdown: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub sharpe_ratio: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub profit_factor: Metric,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_date: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_date: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub buy_hold_return: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub return_ann: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub volatility_ann: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub sortino_ratio: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub calmar_ratio: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub avg_drawdown: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub max_drawdown_duration_days: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub best_trade: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub worst_trade: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub avg_trade: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub expectancy: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub sqn: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub exposure_time: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub avg_trade_duration_days: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub equity_final: Metric,
    #[serde(flatten)]
    pub extra: Extra,
}

impl BacktestStats {
    /// The win rate in percent. The interface names a win rate without a unit: the sandbox sends
    /// percent (55.0), the deployment's rows a fraction (0.55). A value from 0 to 1 is read as a
    /// fraction — a win rate of at most 1 % is far rarer than a fraction — and anything above as
    /// percent (see the README's Interface notes).
    pub fn win_rate_pct(&self) -> Metric {
        self.win_rate.map(|w| {
            if (0.0..=1.0).contains(&w) {
                w * 100.0
            } else {
                w
            }
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EquityPoint {
    /// Unix seconds.
    pub t: i64,
    #[serde(deserialize_with = "num::de")]
    pub equity: f64,
    /// Drawdown from the running peak, in percent (≤ 0).
    #[serde(deserialize_with = "num::de")]
    pub drawdown: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BacktestTrade {
    pub entry_time: DateTime<Utc>,
    pub exit_time: DateTime<Utc>,
    /// `long` or `short`.
    pub direction: String,
    #[serde(deserialize_with = "num::de")]
    pub entry_px: f64,
    #[serde(deserialize_with = "num::de")]
    pub exit_px: f64,
    #[serde(deserialize_with = "num::de")]
    pub size: f64,
    #[serde(deserialize_with = "num::de")]
    pub pnl: f64,
    #[serde(deserialize_with = "num::de")]
    pub return_pct: f64,
    /// `signal`, `stop_loss`, `take_profit` or `end_of_data`.
    pub exit_reason: String,
    #[serde(default, deserialize_with = "num::int")]
    pub bars: u32,
}

/// What a finished job carries in `data`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BacktestData {
    #[serde(flatten)]
    pub stats: BacktestStats,
    #[serde(default)]
    pub strategy_id: String,
    #[serde(default)]
    pub pair: String,
    #[serde(default)]
    pub timeframe: String,
    #[serde(default, deserialize_with = "num::int")]
    pub days: u32,
    #[serde(default)]
    pub parameters: Map<String, Value>,
    #[serde(default, deserialize_with = "num::int")]
    pub bars: u32,
    #[serde(default)]
    pub equity: Vec<EquityPoint>,
    #[serde(default)]
    pub trades: Vec<BacktestTrade>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BacktestJob {
    #[serde(default)]
    pub job_id: String,
    #[serde(default)]
    pub poll_url: String,
    /// `queued`, `running`, `done` or `failed`.
    #[serde(default)]
    pub status: String,
    /// 0-100.
    #[serde(default, deserialize_with = "num::int")]
    pub progress: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<BacktestRequest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<BacktestData>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorDetail>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StrategyParam {
    pub name: String,
    /// `integer` or `number`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(deserialize_with = "num::de")]
    pub default: f64,
    #[serde(deserialize_with = "num::de")]
    pub min: f64,
    #[serde(deserialize_with = "num::de")]
    pub max: f64,
    #[serde(deserialize_with = "num::de")]
    pub step: f64,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StrategyEntry {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub category: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub entry_summary: String,
    #[serde(default)]
    pub exit_summary: String,
    #[serde(default)]
    pub indicator_summary: String,
    #[serde(default)]
    pub parameters: Vec<StrategyParam>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Strategies {
    #[serde(default, deserialize_with = "lenient::rows")]
    pub strategies: Vec<StrategyEntry>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A ranked discovery row: a strategy with parameters on a pair and timeframe, and its results.
/// Top backtests, top live and optimized combos all use it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveryRow {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub strategy_id: String,
    #[serde(default)]
    pub strategy_name: String,
    #[serde(default)]
    pub category: String,
    #[serde(default)]
    pub pair: String,
    #[serde(default)]
    pub timeframe: String,
    #[serde(default, deserialize_with = "num::int")]
    pub days: u32,
    #[serde(default)]
    pub parameters: Map<String, Value>,
    #[serde(default)]
    pub param_hash: String,
    /// `good`, `excellent` or `poor`, by the documented thresholds.
    #[serde(default)]
    pub quality: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "num::int_opt"
    )]
    pub rank_within_strategy: Option<u32>,
    #[serde(flatten)]
    pub stats: BacktestStats,
}

/// Answer of the three ranked discovery operations. `computing` is true while the cache behind it
/// is still being filled: the rows are what is ready.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Discovery {
    /// Written as `results` (top backtests, top live) or `combos` (optimized combos, as the
    /// deployment names it); read from either.
    #[serde(
        default,
        rename = "results",
        alias = "rows",
        alias = "combos",
        deserialize_with = "lenient::rows"
    )]
    pub rows: Vec<DiscoveryRow>,
    #[serde(default, deserialize_with = "num::int")]
    pub count: u32,
    #[serde(default)]
    pub computing: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub computed_at: Option<DateTime<Utc>>,
    #[serde(flatten)]
    pub extra: Extra,
}

super::account::lenient_rows!(StrategyEntry, BacktestJob);

impl super::Lenient for DiscoveryRow {
    /// The row's unknown fields land in its flattened stats.
    fn extra_mut(&mut self) -> &mut Extra {
        &mut self.stats.extra
    }
}
