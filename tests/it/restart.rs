//! A sandbox restarted on the same database has everything it acknowledged.

use crate::common;
use crate::staged::long_btc;
use agentdesk::api::Scope;
use agentdesk::api::model::{PlatformOrder, TradeSignal};

#[tokio::test]
async fn positions_orders_proposals_and_keys_survive_a_restart() {
    let s = common::start().await;
    let c = s.legacy();
    let mark = c.propose_trade(&long_btc()).await.unwrap().preview.mark_px;
    let mut sig = long_btc();
    sig.sl = Some((mark * 0.8).round());
    let p = c.propose_trade(&sig).await.unwrap();
    c.confirm_trade(&p.proposal_id).await.unwrap();
    let limit = PlatformOrder {
        pair: "ETH-USD".into(),
        side: "long".into(),
        order_type: Some("limit".into()),
        limit_price: Some(100.0),
        sizing_mode: Some("usd".into()),
        usd_amount: Some(500.0),
        ..Default::default()
    };
    c.platform_place_order(&limit, None).await.unwrap();
    let staged = c
        .propose_trade(&TradeSignal {
            a: Some("SOLUSDT".into()),
            d: Some("short".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let positions = c.get_positions().await.unwrap().positions;
    let orders = c.list_open_orders(None).await.unwrap().orders;
    let pnl = c.pnl_summary().await.unwrap();
    let logs = c.list_audit_logs(None).await.unwrap().logs.len();

    let s = s.restart().await;
    let c = s.legacy();
    assert_eq!(c.get_positions().await.unwrap().positions, positions);
    assert_eq!(c.list_open_orders(None).await.unwrap().orders, orders);
    let after = c.pnl_summary().await.unwrap();
    assert_eq!(after.total_portfolio_value, pnl.total_portfolio_value);
    assert_eq!(after.total_realized_pnl, pnl.total_realized_pnl);
    assert_eq!(c.list_audit_logs(None).await.unwrap().logs.len(), logs);

    // The staged proposal is still there and still confirmable, once.
    let listed = c.list_proposals(Some("staged")).await.unwrap().proposals;
    // Newest first: the SOL short, then the probe used to read the mark.
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].proposal_id, staged.proposal_id);
    let done = c.confirm_trade(&staged.proposal_id).await.unwrap();
    // Order ids continue where they were: no reuse after a restart.
    let max_before = orders.iter().map(|o| o.oid).max().unwrap();
    assert!(done.execution.fills[0].oid > max_before);
    // Every kind of key still works.
    for scope in Scope::ALL {
        s.client(scope).whoami(false).await.unwrap();
    }
}

/// A database a newer agentdesk wrote is refused with why, not run on: this binary does not know
/// what its newer tables mean (the gateway's stores do the same).
#[test]
fn a_sandbox_database_newer_than_the_binary_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    drop(agentdesk::sandbox::store::Store::open(&path).unwrap());
    rusqlite::Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", 9999)
        .unwrap();
    let e = agentdesk::sandbox::store::Store::open(&path)
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("newer than this agentdesk"), "{e}");
}
