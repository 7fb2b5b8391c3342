//! A staging: the request sent to propose_trade, and the preview the service answered, made into
//! one preview a console's views and the gateway's approval page can show. Our sandbox answers
//! with a full preview; the deployment answers with a few venue fields (`coin`, `side`, `sz`,
//! `markPx`, ...) or none, so the request fills what the answer leaves out — never the other way
//! round: what the service says it will execute wins over what we asked for.

use crate::api::model::{Preview, TradeSignal};

pub use crate::api::symbol::coin_of;

/// The kind of proposal a request stages: `trade`, `close` or `close_all`.
pub fn kind_of(request: &TradeSignal) -> &'static str {
    match (request.action.as_deref(), request.d.as_deref()) {
        (Some("close_all"), _) => "close_all",
        (Some("close"), _) | (_, Some("close")) => "close",
        _ => "trade",
    }
}

/// The preview as the views show it: the service's answer, with the gaps filled from the
/// request. Sizes given as USD notional stay notional when no price is known to convert them.
pub fn complete(request: &TradeSignal, returned: &Preview) -> Preview {
    let mut p = returned.clone();
    if p.kind.is_empty() {
        p.kind = kind_of(request).to_string();
    }
    if p.coin.is_empty()
        && let Some(a) = &request.a
    {
        p.coin = coin_of(a);
    }
    if p.asset.is_empty()
        && let Some(a) = &request.a
    {
        p.asset = a.clone();
    }
    if p.exchange.is_empty()
        && let Some(e) = &request.exchange
    {
        p.exchange = e.clone();
    }
    if p.strategy.is_none() {
        p.strategy = request.strategy.clone();
    }
    if p.kind != "trade" {
        if p.direction.is_empty() {
            p.direction = "close".into();
        }
        return p;
    }
    if p.direction.is_empty()
        && let Some(d) = &request.d
    {
        p.direction = d.clone();
    }
    if p.order_type.is_empty()
        && let Some(o) = &request.o
    {
        p.order_type = o.clone();
    }
    if p.order_type.is_empty() {
        p.order_type = if request.p.is_some() {
            "limit"
        } else {
            "market"
        }
        .into();
    }
    if p.limit_px.is_none() && p.order_type == "limit" {
        p.limit_px = request.p;
    }
    if p.leverage == 0
        && let Some(l) = request.leverage
    {
        p.leverage = l;
    }
    p.tp = p.tp.or(request.tp);
    p.sl = p.sl.or(request.sl);
    let price = p.limit_px.filter(|x| *x > 0.0).unwrap_or(p.mark_px);
    if p.size <= 0.0 {
        match (request.size, request.size_usd) {
            (Some(s), _) if s > 0.0 => p.size = s,
            (_, Some(usd)) if usd > 0.0 && price > 0.0 => p.size = usd / price,
            _ => {}
        }
    }
    if p.notional <= 0.0 {
        if p.size > 0.0 && price > 0.0 {
            p.notional = p.size * price;
        } else if let Some(usd) = request.size_usd.filter(|u| *u > 0.0) {
            p.notional = usd;
        }
    }
    p
}

/// The request as one line, in the console's own command words: what the supervisor would have
/// typed (`long BTC $2,000 5x market TP 70000 SL 58000`).
pub fn describe_request(r: &TradeSignal) -> String {
    use crate::api::model::fmt_decimal;
    let coin = r.a.as_deref().map(coin_of).unwrap_or_default();
    match kind_of(r) {
        "close_all" => return "close all positions".into(),
        "close" => return format!("close {coin}"),
        _ => {}
    }
    let mut parts = vec![r.d.clone().unwrap_or_else(|| "?".into()), coin];
    match (r.size, r.size_usd) {
        (Some(s), _) => parts.push(fmt_decimal(s)),
        (_, Some(u)) => parts.push(format!("${}", fmt_decimal(u))),
        _ => parts.push("default size".into()),
    }
    if let Some(l) = r.leverage {
        parts.push(format!("{l}x"));
    }
    match (r.o.as_deref(), r.p) {
        (Some("limit") | None, Some(px)) => parts.push(format!("limit {}", fmt_decimal(px))),
        (Some(o), _) => parts.push(o.to_string()),
        (None, None) => {}
    }
    if let Some(tp) = r.tp {
        parts.push(format!("TP {}", fmt_decimal(tp)));
    }
    if let Some(sl) = r.sl {
        parts.push(format!("SL {}", fmt_decimal(sl)));
    }
    if let Some(e) = &r.exchange {
        parts.push(format!("on {e}"));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn signal(v: serde_json::Value) -> TradeSignal {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn coins_from_pairs() {
        for (a, c) in [
            ("BTCUSDT", "BTC"),
            ("eth-usd", "ETH"),
            ("SOL/USD", "SOL"),
            ("DOGE-PERP", "DOGE"),
            ("BNB", "BNB"),
            ("USDT", "USDT"),
        ] {
            assert_eq!(coin_of(a), c, "{a}");
        }
    }

    #[test]
    fn an_empty_answer_is_filled_from_the_request() {
        let r = signal(
            json!({"a": "BTCUSDT", "d": "long", "o": "limit", "p": "60000",
            "sizeUsd": "3000", "leverage": 5, "tp": "70000", "sl": "58000"}),
        );
        let p = complete(&r, &Preview::default());
        assert_eq!(
            (p.kind.as_str(), p.coin.as_str(), p.direction.as_str()),
            ("trade", "BTC", "long")
        );
        assert_eq!(
            (p.leverage, p.limit_px, p.tp, p.sl),
            (5, Some(60000.0), Some(70000.0), Some(58000.0))
        );
        // Priced at the limit: $3,000 at 60,000 is 0.05 BTC.
        assert!((p.size - 0.05).abs() < 1e-12);
        assert_eq!(p.notional, 3000.0);
    }

    #[test]
    fn usd_size_without_any_price_stays_notional() {
        let r = signal(json!({"a": "ETHUSDT", "d": "short", "sizeUsd": 500}));
        let p = complete(&r, &Preview::default());
        assert_eq!(
            (p.size, p.notional, p.order_type.as_str()),
            (0.0, 500.0, "market")
        );
    }

    #[test]
    fn what_the_service_says_wins_over_the_request() {
        let r =
            signal(json!({"a": "BTCUSDT", "d": "long", "size": "1", "leverage": 20, "tp": "1"}));
        let returned = Preview {
            coin: "BTC".into(),
            direction: "long".into(),
            size: 0.5,
            leverage: 10,
            mark_px: 60000.0,
            tp: Some(70000.0),
            ..Default::default()
        };
        let p = complete(&r, &returned);
        assert_eq!((p.size, p.leverage, p.tp), (0.5, 10, Some(70000.0)));
        assert_eq!(p.notional, 30000.0);
    }

    #[test]
    fn closes_keep_their_kind() {
        let p = complete(
            &signal(json!({"a": "SOLUSDT", "d": "close"})),
            &Preview::default(),
        );
        assert_eq!((p.kind.as_str(), p.coin.as_str()), ("close", "SOL"));
        let all = complete(&signal(json!({"action": "close_all"})), &Preview::default());
        assert_eq!(all.kind, "close_all");
    }

    #[test]
    fn requests_read_as_commands() {
        let r = signal(
            json!({"a": "BTCUSDT", "d": "long", "o": "market", "sizeUsd": 2000,
            "leverage": 5, "tp": 70000, "sl": 58000}),
        );
        assert_eq!(
            describe_request(&r),
            "long BTC $2000 5x market TP 70000 SL 58000"
        );
        assert_eq!(
            describe_request(&signal(json!({"action": "close_all"}))),
            "close all positions"
        );
    }
}
