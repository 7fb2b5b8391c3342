//! Immediate trading: trade signals on /api/v1/trades and platform orders, closes and cancels.

use crate::common;
use crate::staged::long_btc;
use agentdesk::api::model::{CancelRequest, OneOrMany, PlatformClose, PlatformOrder};
use agentdesk::api::{ApiError, Scope};
use rusqlite::Connection;

fn platform_long(pct: f64, leverage: u32) -> PlatformOrder {
    PlatformOrder {
        pair: "BTC-USD".into(),
        side: "long".into(),
        order_type: Some("market".into()),
        sizing_mode: Some("account".into()),
        account_percentage: Some(pct),
        leverage: Some(leverage),
        exchange: Some("venue".into()),
        ..Default::default()
    }
}

fn fanout_flags(db: &std::path::Path) -> Vec<bool> {
    let conn = Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT fanout FROM trade_signals ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[tokio::test]
async fn trades_execute_now_and_record_the_fanout_choice() {
    let s = common::start().await;
    let c = s.client(Scope::WebhookAlerts);
    let done = c.place_order(&long_btc()).await.unwrap();
    assert_eq!(done.status, "filled");
    assert_eq!(done.execution.fanout, Some(true));

    let mut no_fanout = long_btc();
    no_fanout.fanout = Some(false);
    let done = c.place_order(&no_fanout).await.unwrap();
    assert_eq!(done.execution.fanout, Some(false));

    // The header alone opts out too.
    let resp = s
        .http()
        .post(s.url("/api/v1/trades"))
        .header("x-api-key", s.key(Scope::WebhookAlerts).expose())
        .header("X-Service-Fanout", "0")
        .json(&long_btc())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(fanout_flags(&s.db), vec![true, false, false]);

    // d=close through /api/v1/trades closes at once.
    let mut close = long_btc();
    close.d = Some("close".into());
    c.place_order(&close).await.unwrap();
    assert!(c.get_positions().await.unwrap().positions.is_empty());
}

#[tokio::test]
async fn account_sizing_tp_sl_percentages_and_close() {
    let s = common::start().await;
    let c = s.client(Scope::PlatformTrade);
    let mut order = platform_long(10.0, 3);
    order.sl_enabled = true;
    order.sl_type = Some("percentage".into());
    order.sl_percentage = Some(2.0);
    order.tp_enabled = true;
    order.tp_type = Some("percentage".into());
    order.tp_percentage = Some(4.0);
    let done = c.platform_place_order(&order, None).await.unwrap();
    let fill = &done.execution.fills[0];
    let notional = fill.px * fill.sz;
    // 10% of 100 k equity at 3x.
    assert!((notional - 30_000.0).abs() < 30.0, "notional {notional}");
    let triggers = &done.execution.triggers;
    assert_eq!(triggers.len(), 2);
    let sl = triggers
        .iter()
        .find(|t| t.order_type == "Stop Market")
        .unwrap();
    let tp = triggers
        .iter()
        .find(|t| t.order_type == "Take Profit Market")
        .unwrap();
    assert!((sl.trigger_px.unwrap() / fill.px - 0.98).abs() < 1e-3);
    assert!((tp.trigger_px.unwrap() / fill.px - 1.04).abs() < 1e-3);

    // Close half by pair, then the rest by positionId.
    let half = c
        .platform_close_position(&PlatformClose {
            pair: Some("BTC-USD".into()),
            percentage: Some(50.0),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!((half.execution.fills[0].sz - fill.sz / 2.0).abs() < 1e-4);
    let pos = c.get_positions().await.unwrap().positions;
    c.platform_close_position(&PlatformClose {
        position_id: Some(pos[0].position_id.clone()),
        ..Default::default()
    })
    .await
    .unwrap();
    assert!(c.get_positions().await.unwrap().positions.is_empty());
    // The position's TP/SL went with it.
    assert!(c.list_open_orders(None).await.unwrap().orders.is_empty());
    let err = c
        .platform_close_position(&PlatformClose {
            pair: Some("BTC-USD".into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ApiError::Conflict { code, .. } if code == "no_position"),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_hundred_concurrent_orders_with_one_idempotency_key_make_one_order() {
    let s = common::start().await;
    let base = s.url("/api/v1/orders");
    let key = s.key(Scope::PlatformTrade);
    let http = s.http();
    let body = serde_json::to_value(platform_long(5.0, 2)).unwrap();
    let mut tasks = Vec::new();
    for _ in 0..100 {
        let (http, base, key, body) = (http.clone(), base.clone(), key.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            let resp = http
                .post(&base)
                .header("x-api-key", key.expose())
                .header("Idempotency-Key", "order-1")
                .json(&body)
                .send()
                .await
                .unwrap();
            (resp.status().as_u16(), resp.text().await.unwrap())
        }));
    }
    let mut bodies = Vec::new();
    for t in tasks {
        let (status, text) = t.await.unwrap();
        assert_eq!(status, 200, "{text}");
        bodies.push(text);
    }
    let first: serde_json::Value = serde_json::from_str(&bodies[0]).unwrap();
    for b in &bodies {
        let v: serde_json::Value = serde_json::from_str(b).unwrap();
        assert_eq!(v, first, "every retry gets the same answer");
    }
    let c = s.client(Scope::PlatformTrade);
    let pos = c.get_positions().await.unwrap().positions;
    assert_eq!(pos.len(), 1);
    let fill_sz = first["execution"]["fills"][0]["sz"].as_str().unwrap();
    assert_eq!(pos[0].szi, fill_sz.parse::<f64>().unwrap(), "one fill only");

    // The same key with another body is refused.
    let err = c
        .platform_place_order(&platform_long(6.0, 2), Some("order-1"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ApiError::Invalid { code, .. } if code == "idempotency_key_reused"),
        "{err:?}"
    );
    // A client-generated key per call means two calls are two orders.
    c.platform_place_order(&platform_long(1.0, 1), None)
        .await
        .unwrap();
    c.platform_place_order(&platform_long(1.0, 1), None)
        .await
        .unwrap();
    let pos = c.get_positions().await.unwrap().positions;
    assert!(pos[0].szi > fill_sz.parse::<f64>().unwrap());
}

#[tokio::test]
async fn limit_orders_rest_and_cancel_one_or_several() {
    let s = common::start().await;
    let c = s.client(Scope::PlatformTrade);
    let mark = c
        .platform_place_order(&platform_long(1.0, 1), None)
        .await
        .unwrap()
        .execution
        .fills[0]
        .px;
    let mut oids = Vec::new();
    for i in 0..3 {
        let order = PlatformOrder {
            order_type: Some("limit".into()),
            limit_price: Some((mark * (0.5 + i as f64 * 0.01)).round()),
            sizing_mode: Some("usd".into()),
            usd_amount: Some(1_000.0),
            account_percentage: None,
            ..platform_long(0.0, 1)
        };
        let done = c.platform_place_order(&order, None).await.unwrap();
        assert_eq!(done.status, "resting");
        oids.push(done.execution.resting[0].oid);
    }
    let open = c.list_open_orders(Some("venue")).await.unwrap().orders;
    assert_eq!(open.len(), 3);
    assert!(
        open.iter()
            .all(|o| o.order_type == "Limit" && o.side == "B")
    );
    assert!(
        c.list_open_orders(Some("venue2"))
            .await
            .unwrap()
            .orders
            .is_empty()
    );

    let one = c
        .platform_cancel_order(&CancelRequest {
            oid: OneOrMany::One(oids[0]),
            coin: "BTC".into(),
            exchange: None,
            venue_api_key: None,
            venue_wallet: None,
        })
        .await
        .unwrap();
    assert_eq!(one.cancelled, vec![oids[0]]);
    let two = c
        .platform_cancel_order(&CancelRequest {
            oid: OneOrMany::Many(vec![oids[1], oids[2], 42]),
            coin: "BTC".into(),
            exchange: None,
            venue_api_key: None,
            venue_wallet: None,
        })
        .await
        .unwrap();
    assert_eq!(two.cancelled, vec![oids[1], oids[2]]);
    assert_eq!(two.statuses[0], "success");
    assert!(two.statuses[2]["error"].is_string());
    assert!(c.list_open_orders(None).await.unwrap().orders.is_empty());
}

#[tokio::test]
async fn an_idempotent_replay_is_audited_as_a_replay() {
    let s = common::start().await;
    let c = s.client(Scope::PlatformTrade);
    let first = c
        .platform_place_order(&platform_long(5.0, 2), Some("order-r"))
        .await
        .unwrap();
    let again = c
        .platform_place_order(&platform_long(5.0, 2), Some("order-r"))
        .await
        .unwrap();
    assert_eq!(first, again);
    let logs = c.list_audit_logs(None).await.unwrap().logs;
    let outcomes: Vec<&str> = logs
        .iter()
        .filter(|l| l.operation == "platform_place_order")
        .map(|l| l.outcome.as_str())
        .collect();
    // Newest first.
    assert_eq!(outcomes, ["replay", "ok"]);
    assert_eq!(logs[0].oid, logs[1].oid, "both name the one order");
}
