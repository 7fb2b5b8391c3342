//! `GET /sandbox/v1/candles`, the console's price data: from the sandbox, through a gateway in
//! front of it, and what a service without it answers (the console then draws the marks it saw).

use crate::common;
use crate::staged::long_btc;
use agentdesk::api::{ApiError, Client};
use agentdesk::gateway::rules::policy::GateSettings;
use agentdesk::secret::Secret;
use chrono::Duration;

#[tokio::test]
async fn the_sandbox_answers_closed_candles_up_to_its_clock() {
    let s = common::start().await;
    s.clock
        .advance(Duration::minutes(300) + Duration::seconds(17));
    let c = s.legacy();
    let got = c.sandbox_candles("BTC-USD", "1m", 120).await.unwrap();
    assert_eq!((got.coin.as_str(), got.interval.as_str()), ("BTC", "1m"));
    assert_eq!(got.candles.len(), 120);
    let now = s.clock_now();
    let last = got.candles.last().unwrap();
    // Closed: the last one ended at the latest minute boundary, never after the clock.
    assert!(
        last.time + Duration::minutes(1) <= now,
        "{} vs {now}",
        last.time
    );
    assert!(now - (last.time + Duration::minutes(1)) < Duration::minutes(1));
    for w in got.candles.windows(2) {
        assert_eq!(w[1].time - w[0].time, Duration::minutes(1));
        assert_eq!(w[0].close, w[1].open);
    }
    let mark = c.propose_trade(&long_btc()).await.unwrap().preview.mark_px;
    assert!(
        (last.close / mark - 1.0).abs() < 0.01,
        "{} vs {mark}",
        last.close
    );

    let hours = c.sandbox_candles("eth", "1h", 5).await.unwrap();
    assert_eq!(hours.candles.len(), 5);
    assert!(hours.candles.iter().all(|k| k.time.timestamp() % 3600 == 0));

    for (coin, interval, limit, field) in [
        ("NOPE", "1m", 10, "coin"),
        ("BTC", "7m", 10, "interval"),
        ("BTC", "1m", 0, "limit"),
        ("BTC", "1m", 100_000, "limit"),
    ] {
        match c.sandbox_candles(coin, interval, limit).await {
            Err(ApiError::Invalid { field: Some(f), .. }) => assert_eq!(f, field),
            other => panic!("{coin} {interval} {limit}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_gateway_passes_the_candles_on_as_a_read() {
    let s = common::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gate = common::start_gateway(
        &s.base_url(),
        &s.clock,
        &dir.path().join("gateway.db"),
        GateSettings::default(),
        None,
    )
    .await;
    let direct = s.legacy().sandbox_candles("BTC", "5m", 30).await.unwrap();
    // The console's client on a gateway: an agent key that is no key upstream, and a token.
    let token = gate.mint_token("alice").await.unwrap();
    let console = Client::new(&gate.base_url(), Some(Secret::new("not-a-key")))
        .unwrap()
        .with_gate_token(Some(token));
    assert_eq!(
        console.sandbox_candles("BTC", "5m", 30).await.unwrap(),
        direct
    );
    match console.sandbox_candles("BTC", "2m", 30).await {
        Err(ApiError::Invalid { field: Some(f), .. }) => assert_eq!(f, "interval"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_gateway_on_a_network_passes_them_on_to_supervisors_only() {
    let s = common::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gate = common::start_gateway_with(&s.base_url(), &s.clock, &dir.path().join("g.db"), |c| {
        c.public_url = Some("https://desk.example.com/".into());
    })
    .await;
    let anyone = Client::new(&gate.base_url(), None).unwrap();
    assert!(matches!(
        anyone.sandbox_candles("BTC", "1m", 10).await,
        Err(ApiError::Unauthorized { .. })
    ));
    let token = gate.mint_token("alice").await.unwrap();
    let supervisor = anyone.with_gate_token(Some(token));
    assert_eq!(
        supervisor
            .sandbox_candles("BTC", "1m", 10)
            .await
            .unwrap()
            .candles
            .len(),
        10
    );
}

#[tokio::test]
async fn a_service_without_market_data_answers_not_found() {
    let running = agentdesk::standin::start(agentdesk::standin::StandInConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        "live_key",
    ))
    .await
    .unwrap();
    let c = Client::new(&running.base_url(), Some(Secret::new("live_key"))).unwrap();
    let got = c.sandbox_candles("BTC", "1m", 10).await;
    assert!(matches!(got, Err(ApiError::NotFound { .. })), "{got:?}");
}
