//! The risk of a staged trade, from its preview and the live positions and equity.

use crate::api::model::{PositionRow, Preview};
use crate::console::app::App;

/// The risk of a proposal, from its preview and live data.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Risk {
    pub mark: f64,
    pub notional: f64,
    pub margin: f64,
    pub est_liquidation: Option<f64>,
    pub sl_pct: Option<f64>,
    pub sl_usd: Option<f64>,
    pub tp_pct: Option<f64>,
    pub tp_usd: Option<f64>,
    pub reward_risk: Option<f64>,
    /// Share of equity lost if the stop-loss fills (or the margin, without one), in %.
    pub equity_at_risk_pct: Option<f64>,
    pub existing: Option<PositionRow>,
}

pub fn risk(preview: &Preview, positions: &[PositionRow], equity: Option<f64>) -> Risk {
    let existing = positions
        .iter()
        .find(|p| {
            p.coin == preview.coin
                && (preview.exchange.is_empty() || p.exchange == preview.exchange)
        })
        .cloned();
    let mark = existing
        .as_ref()
        .map(|p| p.mark_px)
        .filter(|m| *m > 0.0)
        .unwrap_or(preview.mark_px);
    let entry = preview.limit_px.unwrap_or(mark);
    let notional = preview.size * entry;
    let leverage = preview.leverage.max(1) as f64;
    let margin = notional / leverage;
    let dist = |level: Option<f64>| {
        level.filter(|_| entry > 0.0).map(|l| {
            let pct = (l - entry).abs() / entry * 100.0;
            (pct, (l - entry).abs() * preview.size)
        })
    };
    let sl = dist(preview.sl);
    let tp = dist(preview.tp);
    let reward_risk = match (tp, sl) {
        (Some((_, reward)), Some((_, risk))) if risk > 0.0 => Some(reward / risk),
        _ => None,
    };
    let at_risk = sl.map(|(_, usd)| usd).unwrap_or(margin);
    Risk {
        mark,
        notional,
        margin,
        est_liquidation: preview.est_liquidation_px,
        sl_pct: sl.map(|s| s.0),
        sl_usd: sl.map(|s| s.1),
        tp_pct: tp.map(|t| t.0),
        tp_usd: tp.map(|t| t.1),
        reward_risk,
        equity_at_risk_pct: equity.filter(|e| *e > 0.0).map(|e| at_risk / e * 100.0),
        existing,
    }
}
impl App {
    /// The risk preview of a proposal against the live positions and equity.
    pub fn risk_of(&self, preview: &Preview) -> Risk {
        let held: Vec<PositionRow> = self
            .account
            .position_index
            .get(&preview.coin)
            .into_iter()
            .flatten()
            .filter_map(|i| self.account.positions.get(*i))
            .cloned()
            .collect();
        let equity = self.account.pnl.as_ref().map(|s| s.total_portfolio_value);
        risk(preview, &held, equity)
    }
}
