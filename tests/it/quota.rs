//! Daily caps: POSTs the seed marks 429 count, GETs never; 429 with Retry-After; reset at UTC midnight.

use crate::common;
use crate::staged::long_btc;
use agentdesk::api::{ApiError, Scope};
use agentdesk::sandbox::Settings;
use chrono::{Duration, Timelike};

#[tokio::test]
async fn post_cap_gives_429_with_retry_after_and_resets_next_utc_day() {
    let s = common::start_with(Settings {
        daily_post_cap: 3,
        ..Default::default()
    })
    .await;
    let c = s.legacy();
    for _ in 0..3 {
        c.propose_trade(&long_btc()).await.unwrap();
    }
    // GETs never count.
    for _ in 0..5 {
        c.get_usage().await.unwrap();
        c.get_positions().await.unwrap();
    }
    let usage = c.get_usage().await.unwrap();
    assert_eq!(usage.api_post_quota.used, 3);
    assert_eq!(usage.api_post_quota.remaining, 0);

    let resp = s
        .http()
        .post(s.url("/api/delegated/propose"))
        .header("x-api-key", s.key(Scope::Legacy).expose())
        .json(&long_btc())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 429);
    let now = s.clock_now();
    let expected = 86_400 - now.num_seconds_from_midnight() as u64;
    let retry: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(retry, expected);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "quota_exceeded");

    let err = c.propose_trade(&long_btc()).await.unwrap_err();
    assert!(
        matches!(err, ApiError::QuotaExceeded { retry_after, .. } if retry_after.as_secs() == expected)
    );

    // Platform orders are not marked 429 in the seed: the exhausted key may still place them.
    let order = agentdesk::api::model::PlatformOrder {
        pair: "ETH-USD".into(),
        side: "short".into(),
        sizing_mode: Some("usd".into()),
        usd_amount: Some(500.0),
        ..Default::default()
    };
    c.platform_place_order(&order, None).await.unwrap();

    // Another key has its own cap.
    s.client(Scope::McpMutate)
        .propose_trade(&long_btc())
        .await
        .unwrap();

    s.clock.advance(Duration::seconds(expected as i64));
    c.propose_trade(&long_btc()).await.unwrap();
    assert_eq!(c.get_usage().await.unwrap().api_post_quota.used, 1);
}

#[tokio::test]
async fn compute_cap_is_separate() {
    let s = common::start_with(Settings {
        daily_compute_cap: 0,
        ..Default::default()
    })
    .await;
    let c = s.legacy();
    // run_backtest consumes compute: with a zero compute cap it is refused before anything runs,
    // and the refused call does not use up the POST cap either.
    let req = agentdesk::api::model::BacktestRequest {
        strategy_id: "sma_cross".into(),
        pair: "BTC-USD".into(),
        timeframe: "15m".into(),
        days: 30,
        parameters: Default::default(),
    };
    let err = c.run_backtest(&req).await.unwrap_err();
    assert!(
        matches!(&err, ApiError::QuotaExceeded { message, .. } if message.contains("compute")),
        "{err:?}"
    );
    let usage = c.get_usage().await.unwrap();
    assert_eq!(usage.api_post_quota.used, 0);
    assert_eq!(usage.compute.limit, 0);
    c.propose_trade(&long_btc()).await.unwrap();
}
