//! A backtest's statistics as label and value, shown by the Backtests tab and by a Discovery
//! row's details.

use super::{num, opt, signed};
use crate::api::model::BacktestStats;

/// Shorter windows are not annualised: compounding a week's return over a year gives figures
/// (thousands of percent) that say nothing about the strategy.
pub const MIN_ANNUALISED_DAYS: f64 = 30.0;

/// What an annualised figure shows on a window shorter than [`MIN_ANNUALISED_DAYS`]; the raw
/// return stays on its own line.
pub const NOT_ANNUALISED: &str = "n/a <30d";

/// Fewer trades than this: a ratio is shown with its sample size, and tables mute it (a ranking led
/// by a row with 2 trades is not a finding). One threshold with the sandbox's research ranking.
pub use crate::api::model::MIN_TRADES;

/// Whether the backtest closed too few trades for its ratios to mean much.
pub fn few_trades(s: &BacktestStats) -> bool {
    s.total_trades < MIN_TRADES
}

/// The window a backtest covers, in days: from its dates when the service sent them, else the
/// days asked for (`days`, 0 when unknown).
pub fn window_days(s: &BacktestStats, days: u32) -> Option<f64> {
    match (s.start_date, s.end_date) {
        (Some(a), Some(b)) if b > a => Some((b - a).num_seconds() as f64 / 86_400.0),
        _ => (days > 0).then_some(days as f64),
    }
}

/// Every statistic, most important first (a short panel shows the first ones). `days`: the
/// window asked for, 0 when unknown.
pub fn stat_items(s: &BacktestStats, days: u32) -> Vec<(&'static str, String)> {
    let short = window_days(s, days).is_some_and(|d| d < MIN_ANNUALISED_DAYS);
    let annual = |x: String| if short { NOT_ANNUALISED.to_string() } else { x };
    let pct = |x: Option<f64>| x.map(|v| signed(v, 2)).unwrap_or_else(|| "-".into());
    let days = |x: Option<f64>| {
        x.map(|v| format!("{} d", num(v, 1)))
            .unwrap_or_else(|| "-".into())
    };
    let mut items = vec![
        ("Return %", pct(s.total_return)),
        ("Buy&Hold %", pct(s.buy_hold_return)),
        ("Max DD %", opt(s.max_drawdown, 2)),
        ("Sharpe", opt(s.sharpe_ratio, 2)),
        ("Trades", s.total_trades.to_string()),
        ("Win rate %", opt(s.win_rate_pct(), 1)),
        ("Profit factor", opt(s.profit_factor, 2)),
        ("Ann. return %", annual(pct(s.return_ann))),
        ("Ann. vol %", annual(opt(s.volatility_ann, 2))),
        ("Sortino", opt(s.sortino_ratio, 2)),
        ("Calmar", annual(opt(s.calmar_ratio, 2))),
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
    ];
    if few_trades(s) {
        // Said first, where even a short panel shows it, and short enough for its column: the
        // ratios below stand on this many trades.
        items.insert(0, ("Sample", format!("few ({})", s.total_trades)));
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 37: Sortino 11,857 on 2 trades is not shown as a finding: the panel says first
    /// that its ratios stand on a few trades.
    #[test]
    fn ratios_on_too_few_trades_are_flagged_first() {
        let s = BacktestStats {
            total_trades: 2,
            sortino_ratio: Some(11_857.0),
            ..BacktestStats::default()
        };
        let items = stat_items(&s, 90);
        assert_eq!(items[0], ("Sample", "few (2)".to_string()));
        let enough = BacktestStats {
            total_trades: 40,
            ..s
        };
        assert_ne!(stat_items(&enough, 90)[0].0, "Sample");
    }

    #[test]
    fn a_short_window_is_not_annualised() {
        let s = BacktestStats {
            total_return: Some(4.0),
            return_ann: Some(15_000.0),
            calmar_ratio: Some(900.0),
            win_rate: Some(0.55),
            ..BacktestStats::default()
        };
        let value = |items: &[(&str, String)], k: &str| {
            items.iter().find(|(l, _)| *l == k).unwrap().1.clone()
        };
        let week = stat_items(&s, 7);
        assert_eq!(value(&week, "Return %"), "+4.00");
        assert_eq!(value(&week, "Ann. return %"), NOT_ANNUALISED);
        assert_eq!(value(&week, "Calmar"), NOT_ANNUALISED);
        let quarter = stat_items(&s, 90);
        assert_eq!(value(&quarter, "Ann. return %"), "+15,000.00");
        // A fraction from the deployment is a percentage here.
        assert_eq!(value(&week, "Win rate %"), "55.0");
    }
}
