//! The risk of a staged trade, from its (completed) preview, the positions held in its coin and
//! the account value: what the console's approve dialog and the gateway's approval page show.
//! Whatever cannot be computed is named in `unknown`, so a supervisor never reads a blank as "no
//! risk".

use crate::api::model::{PositionRow, Preview};
use crate::api::symbol::coin_of;

/// The coin a preview trades, however the service spelled it (`BTCUSDT`, `BTC-USD`, ...): the
/// key positions are matched on.
pub fn preview_coin(preview: &Preview) -> String {
    if preview.coin.trim().is_empty() {
        coin_of(&preview.asset)
    } else {
        coin_of(&preview.coin)
    }
}

/// A target on the losing side of the stop (below it for a long, above it for a short) is wrong
/// at any price, so it is named even when no entry or mark price is known.
pub fn inverted_levels(preview: &Preview) -> Option<String> {
    let (Some(tp), Some(sl)) = (preview.tp, preview.sl) else {
        return None;
    };
    let fmt = crate::api::model::fmt_decimal;
    match preview.direction.as_str() {
        "long" if tp <= sl => Some(format!(
            "TP {} is at or below SL {} on a long: wrong at any price",
            fmt(tp),
            fmt(sl)
        )),
        "short" if tp >= sl => Some(format!(
            "TP {} is at or above SL {} on a short: wrong at any price",
            fmt(tp),
            fmt(sl)
        )),
        _ => None,
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Risk {
    /// The coin traded, one spelling whatever the service sent.
    pub coin: String,
    pub mark: f64,
    pub notional: f64,
    pub margin: f64,
    pub est_liquidation: Option<f64>,
    /// How far the liquidation estimate is from the entry, in %.
    pub liquidation_pct: Option<f64>,
    /// The adverse move that consumes the margin, 100/leverage in %: an upper bound on the
    /// distance to liquidation whatever the venue's maintenance margin.
    pub margin_gone_pct: Option<f64>,
    pub sl_pct: Option<f64>,
    pub sl_usd: Option<f64>,
    pub tp_pct: Option<f64>,
    pub tp_usd: Option<f64>,
    pub reward_risk: Option<f64>,
    pub account_value: Option<f64>,
    /// Notional and margin as shares of the account value, in %.
    pub notional_pct: Option<f64>,
    pub margin_pct: Option<f64>,
    /// Share of the account value lost if the stop-loss fills (or the margin, without one), in %.
    pub equity_at_risk_pct: Option<f64>,
    pub existing: Option<PositionRow>,
    /// The signed size held in the coin once this fills, when something is held already.
    pub resulting_szi: Option<f64>,
    /// What could not be computed, and why.
    pub unknown: Vec<String>,
    /// What looks wrong with the trade as staged: a TP or SL on the wrong side of the entry,
    /// which would fill at once, or an SL beyond the liquidation, which never fills.
    pub warnings: Vec<String>,
    /// What `equity_at_risk_pct` is the loss of.
    pub loss_bound: LossBound,
}

/// What bounds a trade's loss: its stop-loss, or (when the stop does not) the whole margin.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LossBound {
    Stop,
    #[default]
    NoStop,
    /// There is a stop, but no entry price to measure it from.
    StopNotPriced,
    /// The stop is on the wrong side of the entry.
    StopFillsAtOnce,
    /// The position is liquidated before the price reaches the stop.
    LiquidatedFirst,
}

impl LossBound {
    /// Why the loss is the margin, said after it; `None` when the stop bounds it.
    pub fn margin_because(self) -> Option<&'static str> {
        match self {
            LossBound::Stop => None,
            LossBound::NoStop => Some("no SL"),
            LossBound::StopNotPriced => Some("SL not priced"),
            LossBound::StopFillsAtOnce => Some("the SL fills at once"),
            LossBound::LiquidatedFirst => Some("liquidated before the SL"),
        }
    }
}

/// `account_value`: the account value, or why it is not known.
pub fn risk(
    preview: &Preview,
    positions: &[PositionRow],
    account_value: Result<f64, String>,
) -> Risk {
    let mut unknown = Vec::new();
    let coin = preview_coin(preview);
    let existing = positions
        .iter()
        .find(|p| {
            !coin.is_empty()
                && coin_of(&p.coin) == coin
                && (preview.exchange.is_empty() || p.exchange == preview.exchange)
        })
        .cloned();
    let mark = existing
        .as_ref()
        .map(|p| p.mark_px)
        .filter(|m| *m > 0.0)
        .unwrap_or(preview.mark_px);
    let entry = preview.limit_px.filter(|l| *l > 0.0).unwrap_or(mark);
    let size = preview.size.max(0.0);
    let notional = if size > 0.0 && entry > 0.0 {
        size * entry
    } else {
        preview.notional.max(0.0)
    };
    if entry <= 0.0 {
        unknown.push("price unknown: the service sent no mark price".into());
    }
    if notional <= 0.0 {
        unknown.push("notional unknown: no size and no price".into());
    }
    let leverage = if preview.leverage > 0 {
        Some(preview.leverage as f64)
    } else {
        unknown.push("leverage unknown: margin taken at 1x".into());
        None
    };
    let margin = if preview.margin > 0.0 && size > 0.0 && preview.limit_px.is_none() {
        preview.margin
    } else {
        notional / leverage.unwrap_or(1.0)
    };
    let long = preview.direction != "short";
    let dist = |level: Option<f64>| {
        level.filter(|_| entry > 0.0).map(|l| {
            let pct = (l - entry).abs() / entry * 100.0;
            (pct, (l - entry).abs() * size)
        })
    };
    let sl = dist(preview.sl);
    let tp = dist(preview.tp);
    if preview.sl.is_some() && sl.is_none() {
        unknown.push("SL distance unknown: no entry price".into());
    }
    if preview.tp.is_some() && tp.is_none() {
        unknown.push("TP distance unknown: no entry price".into());
    }
    // A stop or target on the wrong side of the entry fills at once: the supervisor should see
    // that before approving, whatever the service accepted.
    let mut warnings: Vec<String> = inverted_levels(preview).into_iter().collect();
    let side = if long { "long" } else { "short" };
    let wrong = |level: f64, above: bool| {
        entry > 0.0
            && if above {
                level <= entry
            } else {
                level >= entry
            }
    };
    if let Some(l) = preview.sl.filter(|l| wrong(*l, !long)) {
        warnings.push(format!(
            "SL {} is {} the entry {} of a {side}: it would fill at once",
            crate::api::model::fmt_decimal(l),
            if long { "at or above" } else { "at or below" },
            crate::api::model::fmt_decimal(entry)
        ));
    }
    if let Some(l) = preview.tp.filter(|l| wrong(*l, long)) {
        warnings.push(format!(
            "TP {} is {} the entry {} of a {side}: it would fill at once",
            crate::api::model::fmt_decimal(l),
            if long { "at or below" } else { "at or above" },
            crate::api::model::fmt_decimal(entry)
        ));
    }
    // A level on the wrong side has no reward or risk to compare: it fills at once.
    let tp_wrong = preview.tp.is_some_and(|l| wrong(l, long));
    let sl_wrong = preview.sl.is_some_and(|l| wrong(l, !long));
    let reward_risk = match (tp, sl) {
        (Some((_, reward)), Some((_, risk))) if risk > 0.0 && !tp_wrong && !sl_wrong => {
            Some(reward / risk)
        }
        _ => None,
    };
    let liquidation_pct = preview
        .est_liquidation_px
        .filter(|_| entry > 0.0)
        .map(|l| (l - entry).abs() / entry * 100.0);
    let margin_gone_pct = leverage.map(|l| 100.0 / l);
    // Without an estimate the margin bound stands in (the views say so on the liquidation
    // line); without leverage there is not even that.
    if preview.est_liquidation_px.is_none() && margin_gone_pct.is_none() {
        unknown.push("liquidation unknown: no estimate and no leverage".into());
    }
    let account_value = match account_value {
        Ok(v) if v > 0.0 && v.is_finite() => Some(v),
        Ok(v) => {
            unknown.push(format!("account value unknown: the service reports {v}"));
            None
        }
        Err(why) => {
            unknown.push(format!("account value unknown: {why}"));
            None
        }
    };
    let share = |x: f64| account_value.filter(|_| x > 0.0).map(|v| x / v * 100.0);
    // A stop beyond the liquidation never fills: the position is liquidated first, and what is
    // lost is the margin, not the stop's distance. The README's own `/propose BTC long $2000
    // sl=60000` picks 5x and showed a stop-loss loss with the liquidation above the stop.
    let liquidated_first = match (preview.sl, preview.est_liquidation_px) {
        (Some(stop), Some(liq)) if !sl_wrong && liq > 0.0 => {
            if long {
                liq >= stop
            } else {
                liq <= stop
            }
        }
        _ => false,
    };
    if liquidated_first && let (Some(stop), Some(liq)) = (preview.sl, preview.est_liquidation_px) {
        warnings.push(format!(
            "liquidation ≈ {} comes before the SL {} of a {side}: the stop never fills, the \
             margin {} is lost first (lower the leverage or move the stop)",
            crate::api::model::fmt_decimal(liq),
            crate::api::model::fmt_decimal(stop),
            crate::api::model::fmt_decimal(margin),
        ));
    }
    // A stop on the wrong side fills at once and one beyond the liquidation never does: neither
    // bounds the loss, so the margin does (as without a stop).
    let loss_bound = match (preview.sl, sl) {
        (None, _) => LossBound::NoStop,
        (Some(_), None) => LossBound::StopNotPriced,
        _ if sl_wrong => LossBound::StopFillsAtOnce,
        _ if liquidated_first => LossBound::LiquidatedFirst,
        _ => LossBound::Stop,
    };
    let at_risk = sl
        .filter(|_| loss_bound == LossBound::Stop)
        .map(|(_, usd)| usd)
        .unwrap_or(margin);
    let resulting_szi = existing.as_ref().map(|e| {
        let signed = if long { size } else { -size };
        let total = e.szi + signed;
        if total.abs() < 1e-12 { 0.0 } else { total }
    });
    if existing.is_some() && size <= 0.0 {
        unknown.push("resulting position unknown: size unknown".into());
    }
    Risk {
        coin,
        mark,
        notional,
        margin,
        est_liquidation: preview.est_liquidation_px,
        liquidation_pct,
        margin_gone_pct,
        sl_pct: sl.map(|s| s.0),
        sl_usd: sl.map(|s| s.1),
        tp_pct: tp.map(|t| t.0),
        tp_usd: tp.map(|t| t.1),
        reward_risk,
        account_value,
        notional_pct: share(notional),
        margin_pct: share(margin),
        equity_at_risk_pct: share(at_risk),
        existing,
        resulting_szi: resulting_szi.filter(|_| size > 0.0),
        unknown,
        warnings,
        loss_bound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_stop_or_target_on_the_wrong_side_of_the_entry_is_named() {
        let short = |sl: f64, tp: f64| Preview {
            kind: "trade".into(),
            coin: "ETH".into(),
            direction: "short".into(),
            size: 0.5,
            mark_px: 3000.0,
            leverage: 3,
            sl: Some(sl),
            tp: Some(tp),
            ..Preview::default()
        };
        let fine = risk(&short(3300.0, 2700.0), &[], Ok(100_000.0));
        assert_eq!(fine.warnings, Vec::<String>::new());
        let wrong = risk(&short(2400.0, 3600.0), &[], Ok(100_000.0));
        assert_eq!(
            wrong.warnings,
            [
                "TP 3600 is at or above SL 2400 on a short: wrong at any price",
                "SL 2400 is at or below the entry 3000 of a short: it would fill at once",
                "TP 3600 is at or above the entry 3000 of a short: it would fill at once",
            ]
        );
        let mut long = short(2400.0, 3600.0);
        long.direction = "long".into();
        assert_eq!(
            risk(&long, &[], Ok(100_000.0)).warnings,
            Vec::<String>::new()
        );
        long.sl = Some(3000.0);
        assert_eq!(risk(&long, &[], Ok(100_000.0)).warnings.len(), 1);
    }

    fn btc(size: f64, lev: u32) -> Preview {
        Preview {
            kind: "trade".into(),
            coin: "BTC".into(),
            direction: "long".into(),
            size,
            mark_px: 60_000.0,
            leverage: lev,
            ..Default::default()
        }
    }

    #[test]
    fn a_full_preview_against_a_known_account() {
        let mut p = btc(0.5, 10);
        p.sl = Some(57_000.0);
        p.tp = Some(66_000.0);
        p.est_liquidation_px = Some(54_600.0);
        let held = PositionRow {
            coin: "BTC".into(),
            szi: -0.2,
            mark_px: 60_000.0,
            ..Default::default()
        };
        let r = risk(&p, &[held], Ok(100_000.0));
        assert_eq!((r.notional, r.margin), (30_000.0, 3_000.0));
        assert_eq!((r.notional_pct, r.margin_pct), (Some(30.0), Some(3.0)));
        assert_eq!((r.sl_pct, r.sl_usd), (Some(5.0), Some(1_500.0)));
        assert_eq!((r.tp_pct, r.tp_usd), (Some(10.0), Some(3_000.0)));
        assert_eq!(r.reward_risk, Some(2.0));
        assert_eq!(r.equity_at_risk_pct, Some(1.5));
        assert!((r.liquidation_pct.unwrap() - 9.0).abs() < 1e-9);
        assert!((r.resulting_szi.unwrap() - 0.3).abs() < 1e-12);
        assert!(r.unknown.is_empty(), "{:?}", r.unknown);
    }

    #[test]
    fn a_stop_beyond_the_liquidation_is_named_and_the_margin_is_what_is_at_risk() {
        // A long at 10x from 60,000 is liquidated near 54,600: a stop at 54,000 never fills.
        let mut p = btc(0.5, 10);
        p.sl = Some(54_000.0);
        p.est_liquidation_px = Some(54_600.0);
        let r = risk(&p, &[], Ok(100_000.0));
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("comes before the SL") && w.contains("54600")),
            "{:?}",
            r.warnings
        );
        assert_eq!(
            r.equity_at_risk_pct,
            Some(3.0),
            "the margin, not the stop's 3,000"
        );
        // The same stop inside the liquidation bounds the loss as before.
        p.sl = Some(57_000.0);
        let r = risk(&p, &[], Ok(100_000.0));
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert_eq!(r.equity_at_risk_pct, Some(1.5));
        // A short mirrored: liquidated near 65,400, a stop at 66,000 never fills.
        let mut p = btc(0.5, 10);
        p.direction = "short".into();
        p.sl = Some(66_000.0);
        p.est_liquidation_px = Some(65_400.0);
        let r = risk(&p, &[], Ok(100_000.0));
        assert!(r.warnings.iter().any(|w| w.contains("comes before the SL")));
        assert_eq!(r.equity_at_risk_pct, Some(3.0));
    }

    #[test]
    fn a_stop_on_the_wrong_side_puts_the_margin_at_risk_not_its_distance() {
        let mut p = btc(0.5, 10);
        p.sl = Some(61_000.0);
        let r = risk(&p, &[], Ok(100_000.0));
        assert!(r.warnings.iter().any(|w| w.contains("would fill at once")));
        assert_eq!(r.equity_at_risk_pct, Some(3.0));
    }

    #[test]
    fn a_level_on_the_wrong_side_shows_no_reward_to_risk() {
        // A long whose TP is below the entry, and one whose SL is above it.
        for (tp, sl) in [(57_000.0, 55_000.0), (66_000.0, 61_000.0)] {
            let mut p = btc(0.5, 10);
            p.tp = Some(tp);
            p.sl = Some(sl);
            let r = risk(&p, &[], Ok(100_000.0));
            assert_eq!(r.reward_risk, None, "tp {tp} sl {sl}");
            assert!(
                r.warnings.iter().any(|w| w.contains("would fill at once")),
                "{:?}",
                r.warnings
            );
        }
    }

    #[test]
    fn what_cannot_be_computed_is_said() {
        let r = risk(&btc(0.5, 0), &[], Err("no PnL yet".into()));
        assert!(
            r.unknown
                .contains(&"account value unknown: no PnL yet".to_string())
        );
        assert!(r.unknown.iter().any(|u| u.starts_with("leverage unknown")));
        assert!(
            r.unknown
                .iter()
                .any(|u| u.starts_with("liquidation unknown"))
        );
        assert_eq!(r.notional_pct, None);
        assert_eq!(r.equity_at_risk_pct, None);
        let no_price = Preview {
            mark_px: 0.0,
            sl: Some(1.0),
            ..btc(0.5, 5)
        };
        let r = risk(&no_price, &[], Ok(1_000.0));
        assert!(r.unknown.iter().any(|u| u.starts_with("price unknown")));
        assert!(
            r.unknown
                .iter()
                .any(|u| u.starts_with("SL distance unknown"))
        );
    }

    #[test]
    fn a_notional_only_preview_still_has_margin_and_share() {
        let p = Preview {
            kind: "trade".into(),
            coin: "ETH".into(),
            direction: "short".into(),
            notional: 2_000.0,
            leverage: 4,
            ..Default::default()
        };
        let r = risk(&p, &[], Ok(10_000.0));
        assert_eq!((r.notional, r.margin), (2_000.0, 500.0));
        assert_eq!(r.margin_pct, Some(5.0));
        assert!(r.unknown.iter().any(|u| u.starts_with("price unknown")));
    }

    #[test]
    fn closing_the_whole_position_leaves_nothing() {
        let mut p = btc(0.2, 5);
        p.direction = "short".into();
        let held = PositionRow {
            coin: "BTC".into(),
            szi: 0.2,
            ..Default::default()
        };
        assert_eq!(risk(&p, &[held], Ok(1.0)).resulting_szi, Some(0.0));
    }

    proptest! {
        #[test]
        fn figures_are_finite_and_consistent(
            size in 0.0f64..1e4,
            mark in 0.0f64..1e6,
            lev in 0u32..100,
            sl in proptest::option::of(0.0f64..2e6),
            tp in proptest::option::of(0.0f64..2e6),
            value in -1e7f64..1e7,
            held in proptest::option::of(-1e4f64..1e4),
        ) {
            let p = Preview { mark_px: mark, sl, tp, ..btc(size, lev) };
            let positions: Vec<PositionRow> = held
                .map(|szi| PositionRow { coin: "BTC".into(), szi, ..Default::default() })
                .into_iter()
                .collect();
            let r = risk(&p, &positions, Ok(value));
            for x in [Some(r.notional), Some(r.margin), r.sl_pct, r.tp_pct, r.notional_pct,
                      r.margin_pct, r.equity_at_risk_pct, r.reward_risk, r.resulting_szi] {
                prop_assert!(x.is_none_or(f64::is_finite));
            }
            prop_assert!(r.margin <= r.notional + 1e-9);
            // A figure is either computed or its absence is explained.
            prop_assert_eq!(r.account_value.is_none(), r.unknown.iter().any(|u| u.starts_with("account value")));
            prop_assert_eq!(r.notional > 0.0, !r.unknown.iter().any(|u| u.starts_with("notional")));
        }
    }
}
