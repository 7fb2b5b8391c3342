//! A backtest's statistics as label and value, shown by the Backtests tab and by a Discovery
//! row's details.

use super::{num, opt, signed};
use crate::api::model::BacktestStats;

/// Every statistic, most important first (a short panel shows the first ones).
pub fn stat_items(s: &BacktestStats) -> Vec<(&'static str, String)> {
    let pct = |x: Option<f64>| x.map(|v| signed(v, 2)).unwrap_or_else(|| "-".into());
    let days = |x: Option<f64>| {
        x.map(|v| format!("{} d", num(v, 1)))
            .unwrap_or_else(|| "-".into())
    };
    vec![
        ("Return %", pct(s.total_return)),
        ("Buy&Hold %", pct(s.buy_hold_return)),
        ("Max DD %", opt(s.max_drawdown, 2)),
        ("Sharpe", opt(s.sharpe_ratio, 2)),
        ("Trades", s.total_trades.to_string()),
        ("Win rate %", opt(s.win_rate, 1)),
        ("Profit factor", opt(s.profit_factor, 2)),
        ("Ann. return %", pct(s.return_ann)),
        ("Ann. vol %", opt(s.volatility_ann, 2)),
        ("Sortino", opt(s.sortino_ratio, 2)),
        ("Calmar", opt(s.calmar_ratio, 2)),
        ("Avg DD %", opt(s.avg_drawdown, 2)),
        ("Max DD dur", days(s.max_drawdown_duration_days)),
        ("Best trade %", pct(s.best_trade)),
        ("Worst trade %", pct(s.worst_trade)),
        ("Avg trade %", pct(s.avg_trade)),
        ("Expectancy %", pct(s.expectancy)),
        ("SQN", opt(s.sqn, 2)),
        ("Exposure %", opt(s.exposure_time, 1)),
        ("Avg trade dur", days(s.avg_trade_duration_days)),
        ("Final equity", opt(s.equity_final, 2)),
    ]
}
