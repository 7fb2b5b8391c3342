//! `GET /sandbox/v1/candles`: the simulated market's recent candles, so a console on the sandbox
//! can draw a coin's price. Outside the catalog, as `/healthz` is: the interface has no
//! market-data operation and a real service answers this path 404 (README "Interface notes").
//! Market data is the same for every account, so no key is asked.

use super::super::core::Shared;
use super::super::error::AppError;
use super::super::venue::market;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::sync::Arc;

pub const PATH: &str = "/sandbox/v1/candles";

/// Candles in one answer, at most: a chart is a few hundred columns wide.
pub const MAX_LIMIT: usize = 1000;
const DEFAULT_LIMIT: usize = 120;

/// The venue's interval names, in minutes.
const INTERVALS: &[(&str, u32)] = &[
    ("1m", 1),
    ("5m", 5),
    ("15m", 15),
    ("1h", 60),
    ("4h", 240),
    ("1d", 1440),
];

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Candles {
    success: bool,
    coin: String,
    interval: &'static str,
    candles: Vec<market::Candle>,
}

pub async fn candles(shared: Arc<Shared>, req: Request) -> Response {
    let query = req.uri().query().unwrap_or("").to_string();
    // A long span walks days of the simulated path: off the runtime's threads.
    match tokio::task::spawn_blocking(move || answer(&shared, &query)).await {
        Ok(Ok(c)) => axum::Json(c).into_response(),
        Ok(Err(e)) => e.into_response(),
        Err(e) => AppError::internal(e).into_response(),
    }
}

fn answer(shared: &Shared, raw: &str) -> Result<Candles, AppError> {
    let query = super::parse_query(raw);
    let symbol = query
        .get("coin")
        .filter(|c| !c.trim().is_empty())
        .ok_or_else(|| AppError::invalid_query("coin", "coin is required, e.g. coin=BTC"))?;
    let coin = crate::api::symbol::coin_of(symbol);
    let spec = market::asset(&coin).ok_or_else(|| {
        AppError::invalid_query("coin", format!("the sandbox has no market for {symbol}"))
    })?;
    let name = query.get("interval").map(String::as_str).unwrap_or("1m");
    let (interval, minutes) = INTERVALS
        .iter()
        .find(|(n, _)| *n == name)
        .copied()
        .ok_or_else(|| {
            AppError::invalid_query("interval", "interval is one of 1m, 5m, 15m, 1h, 4h, 1d")
        })?;
    let limit = match query.get("limit") {
        None => DEFAULT_LIMIT,
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|l| (1..=MAX_LIMIT).contains(l))
            .ok_or_else(|| {
                AppError::invalid_query("limit", format!("limit is 1 to {MAX_LIMIT}"))
            })?,
    };
    // Closed candles only: the simulated path is known ahead of the clock, and a candle still
    // open would show prices from the future.
    let now = shared.clock.now().timestamp().div_euclid(60);
    let step = i64::from(minutes);
    let last_open = now - now.rem_euclid(step) - step;
    let first = last_open - (limit as i64 - 1) * step;
    let from = chrono::DateTime::from_timestamp(first * 60, 0).unwrap_or_default();
    let mut candles = shared.market().candles(spec.coin, minutes, from, limit);
    candles.retain(|c| c.time.timestamp() <= last_open * 60);
    Ok(Candles {
        success: true,
        coin: spec.coin.to_string(),
        interval,
        candles,
    })
}
