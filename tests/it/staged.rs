//! Staged trading: propose → confirm within 5 minutes, exactly once, with the proposing key.

use crate::common;
use agentdesk::api::ApiError;
use agentdesk::api::Scope;
use agentdesk::api::model::{CloseRequest, TradeSignal};
use chrono::Duration;

pub fn long_btc() -> TradeSignal {
    TradeSignal {
        strategy: Some("Agent".into()),
        a: Some("BTCUSDT".into()),
        d: Some("long".into()),
        o: Some("market".into()),
        size_usd: Some(2_000.0),
        ..Default::default()
    }
}

#[tokio::test]
async fn propose_returns_id_expiry_and_preview_then_confirm_executes() {
    let s = common::start().await;
    let agent = s.client(Scope::McpMutate);
    let who = agent.whoami(false).await.unwrap();
    let mut signal = long_btc();
    signal.id = Some(who.messenger_id.clone());
    let p = agent.propose_trade(&signal).await.unwrap();
    assert!(p.proposal_id.starts_with("prop_"));
    assert_eq!(p.status, "staged");
    assert_eq!(
        p.expires_at.unwrap() - p.created_at.unwrap(),
        Duration::minutes(5)
    );
    assert_eq!(p.preview.coin, "BTC");
    assert_eq!(p.preview.direction, "long");
    assert!(
        (p.preview.notional - 2_000.0).abs() < 50.0,
        "{}",
        p.preview.notional
    );
    assert_eq!(p.preview.leverage, 5);
    assert!(p.preview.est_liquidation_px.unwrap() < p.preview.mark_px);
    assert!(p.json_summary.unwrap().contains(&p.proposal_id));
    // Nothing executes before the confirm.
    assert!(agent.get_positions().await.unwrap().positions.is_empty());

    let done = agent.confirm_trade(&p.proposal_id).await.unwrap();
    assert_eq!(done.status, "executed");
    assert_eq!(done.execution.fills.len(), 1);
    let positions = agent.get_positions().await.unwrap().positions;
    assert_eq!(positions.len(), 1);
    assert_eq!(positions[0].coin, "BTC");
    assert!((positions[0].szi - p.preview.size).abs() < 1e-12);

    let listed = agent.list_proposals(None).await.unwrap().proposals;
    assert_eq!(listed[0].proposal_id, p.proposal_id);
    assert_eq!(listed[0].status, "executed");
}

#[tokio::test]
async fn confirm_at_4_59_works_and_at_5_01_is_gone() {
    let s = common::start().await;
    let c = s.legacy();
    let early = c.propose_trade(&long_btc()).await.unwrap();
    let late = c.propose_trade(&long_btc()).await.unwrap();
    s.clock.advance(Duration::seconds(4 * 60 + 59));
    c.confirm_trade(&early.proposal_id).await.unwrap();
    s.clock.advance(Duration::seconds(2));
    let err = c.confirm_trade(&late.proposal_id).await.unwrap_err();
    assert!(
        matches!(&err, ApiError::Expired { code, .. } if code == "proposal_expired"),
        "{err:?}"
    );
    let listed = c.list_proposals(Some("expired")).await.unwrap().proposals;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].proposal_id, late.proposal_id);
    // Only the early one traded.
    assert_eq!(c.get_positions().await.unwrap().positions.len(), 1);
}

#[tokio::test]
async fn confirm_errors_unknown_other_key_and_second_confirm() {
    let s = common::start().await;
    let agent = s.client(Scope::McpMutate);
    let other = s.client(Scope::Legacy);
    let p = agent.propose_trade(&long_btc()).await.unwrap();

    let err = agent.confirm_trade("prop_doesnotexist").await.unwrap_err();
    assert!(matches!(err, ApiError::NotFound { .. }), "{err:?}");

    let err = other.confirm_trade(&p.proposal_id).await.unwrap_err();
    assert!(
        matches!(&err, ApiError::Forbidden { code, .. } if code == "proposal_key_mismatch"),
        "{err:?}"
    );

    agent.confirm_trade(&p.proposal_id).await.unwrap();
    let err = agent.confirm_trade(&p.proposal_id).await.unwrap_err();
    assert!(
        matches!(&err, ApiError::Conflict { code, .. } if code == "proposal_already_executed"),
        "{err:?}"
    );
    // Every attempt is audited, failures with their code.
    let logs = agent.list_audit_logs(Some(10)).await.unwrap().logs;
    let codes: Vec<_> = logs.iter().filter_map(|l| l.error_code.clone()).collect();
    assert!(codes.contains(&"proposal_already_executed".to_string()));
    assert!(codes.contains(&"proposal_key_mismatch".to_string()));
    assert!(codes.contains(&"not_found".to_string()));
    let ok = logs
        .iter()
        .find(|l| l.operation == "confirm_trade" && l.outcome == "ok")
        .unwrap();
    assert_eq!(ok.proposal_id.as_deref(), Some(p.proposal_id.as_str()));
    assert!(ok.oid.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_concurrent_confirms_execute_once() {
    let s = common::start().await;
    let c = s.legacy();
    let p = c.propose_trade(&long_btc()).await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..200 {
        let c = c.clone();
        let id = p.proposal_id.clone();
        tasks.push(tokio::spawn(async move { c.confirm_trade(&id).await }));
    }
    let mut ok = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => ok += 1,
            Err(ApiError::Conflict { code, .. }) => assert_eq!(code, "proposal_already_executed"),
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!(ok, 1);
    let positions = c.get_positions().await.unwrap().positions;
    assert_eq!(positions.len(), 1);
    assert!(
        (positions[0].szi - p.preview.size).abs() < 1e-12,
        "one fill only"
    );
}

#[tokio::test]
async fn staged_close_and_close_all() {
    let s = common::start().await;
    let c = s.client(Scope::McpMutate);
    for a in ["BTCUSDT", "ETHUSDT"] {
        let mut sig = long_btc();
        sig.a = Some(a.into());
        let p = c.propose_trade(&sig).await.unwrap();
        c.confirm_trade(&p.proposal_id).await.unwrap();
    }
    assert_eq!(c.get_positions().await.unwrap().positions.len(), 2);

    // Flattening without staging is refused, clearly.
    let err = c
        .close_position(&CloseRequest {
            proposal_id: None,
            action: Some("close_all".into()),
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ApiError::Invalid { code, message, .. } if code == "staging_required" && message.contains("propose")),
        "{err:?}"
    );

    // d=close plus a stages a close of that coin; close_position executes it by id.
    let close_btc = c
        .propose_trade(&TradeSignal {
            a: Some("BTCUSDT".into()),
            d: Some("close".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(close_btc.kind, "close");
    assert_eq!(close_btc.preview.closes.len(), 1);
    let done = c
        .close_position(&CloseRequest {
            proposal_id: Some(close_btc.proposal_id.clone()),
            action: Some("close".into()),
        })
        .await
        .unwrap();
    assert_eq!(done.execution.fills[0].coin, "BTC");
    let left = c.get_positions().await.unwrap().positions;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].coin, "ETH");

    // A trade proposal is not a close.
    let trade = c.propose_trade(&long_btc()).await.unwrap();
    let err = c
        .close_position(&CloseRequest {
            proposal_id: Some(trade.proposal_id),
            action: None,
        })
        .await
        .unwrap_err();
    assert!(matches!(err, ApiError::Invalid { .. }), "{err:?}");

    // close_all through propose then confirm flattens everything.
    let all = c
        .propose_trade(&TradeSignal {
            action: Some("close_all".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(all.kind, "close_all");
    c.confirm_trade(&all.proposal_id).await.unwrap();
    assert!(c.get_positions().await.unwrap().positions.is_empty());

    // Nothing left to close: a clear conflict at staging time.
    let err = c
        .propose_trade(&TradeSignal {
            action: Some("close_all".into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ApiError::Conflict { code, .. } if code == "no_position"),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_failed_execution_marks_the_proposal_failed_and_changes_nothing() {
    let s = common::start().await;
    let c = s.legacy();
    // 50x BTC with 10 M notional needs 200 k margin: more than the 100 k paper equity.
    let mut sig = long_btc();
    sig.size_usd = Some(10_000_000.0);
    sig.leverage = Some(50);
    let p = c.propose_trade(&sig).await.unwrap();
    let err = c.confirm_trade(&p.proposal_id).await.unwrap_err();
    assert!(
        matches!(&err, ApiError::Conflict { code, .. } if code == "insufficient_margin"),
        "{err:?}"
    );
    assert!(c.get_positions().await.unwrap().positions.is_empty());
    let listed = c.list_proposals(Some("failed")).await.unwrap().proposals;
    assert_eq!(listed[0].proposal_id, p.proposal_id);
    assert_eq!(
        listed[0].error.as_ref().unwrap().code,
        "insufficient_margin"
    );
    let err = c.confirm_trade(&p.proposal_id).await.unwrap_err();
    assert!(
        matches!(&err, ApiError::Conflict { code, .. } if code == "proposal_failed"),
        "{err:?}"
    );
}

#[tokio::test]
async fn tp_and_sl_become_trigger_orders_with_oids() {
    let s = common::start().await;
    let c = s.legacy();
    let mark = c.propose_trade(&long_btc()).await.unwrap().preview.mark_px;
    let mut sig = long_btc();
    sig.tp = Some((mark * 1.1).round());
    sig.sl = Some((mark * 0.9).round());
    let p = c.propose_trade(&sig).await.unwrap();
    assert_eq!(p.preview.tp, sig.tp);
    let done = c.confirm_trade(&p.proposal_id).await.unwrap();
    assert_eq!(done.execution.triggers.len(), 2);
    let orders = c.list_open_orders(None).await.unwrap().orders;
    assert_eq!(orders.len(), 2);
    let types: Vec<_> = orders.iter().map(|o| o.order_type.as_str()).collect();
    assert!(types.contains(&"Stop Market") && types.contains(&"Take Profit Market"));
    assert!(
        orders
            .iter()
            .all(|o| o.reduce_only && o.is_trigger && o.oid > 0)
    );
}
