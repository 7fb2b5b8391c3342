//! Reads are served beside the writer, not behind it, and answer from totals kept with each fill.

use crate::common;
use crate::staged::long_btc;
use agentdesk::api::Scope;
use agentdesk::api::model::TradeSignal;
use agentdesk::sandbox::store::Store;
use std::time::Duration;

#[tokio::test]
async fn a_read_is_answered_while_a_write_waits_for_the_database() {
    let s = common::start().await;
    let c = s.legacy();
    // Another connection takes SQLite's write lock, so the sandbox's next write waits for it —
    // holding the sandbox's writer while it waits.
    let blocker = rusqlite::Connection::open(&s.db).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let writer = {
        let c = c.clone();
        tokio::spawn(async move { c.propose_trade(&long_btc()).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !writer.is_finished(),
        "the write should be waiting for the database"
    );
    let positions = c.get_positions().await.unwrap();
    assert!(positions.positions.is_empty());
    c.pnl_summary().await.unwrap();
    c.whoami(true).await.unwrap();
    assert!(
        !writer.is_finished(),
        "the reads were answered before the write could proceed"
    );
    blocker.execute_batch("ROLLBACK").unwrap();
    let staged = writer.await.unwrap().unwrap();
    // The write is visible to the next read as soon as it was acknowledged.
    let listed = c.list_proposals(Some("staged")).await.unwrap().proposals;
    assert_eq!(listed[0].proposal_id, staged.proposal_id);
}

#[tokio::test]
async fn realized_pnl_is_the_sum_of_the_fills() {
    let s = common::start().await;
    let c = s.client(Scope::WebhookAlerts);
    for d in ["long", "short", "long", "short"] {
        c.place_order(&TradeSignal {
            strategy: Some("totals".into()),
            a: Some("BTC".into()),
            d: Some(d.into()),
            o: Some("market".into()),
            size_usd: Some(5_000.0),
            fanout: Some(false),
            ..Default::default()
        })
        .await
        .unwrap();
        s.clock.advance(chrono::Duration::minutes(7));
    }
    let pnl = c.pnl_summary().await.unwrap();
    let store = Store::open(&s.db).unwrap();
    let account = store.accounts().unwrap()[0].id;
    let from_fills = store.realized_from_fills(account).unwrap();
    assert!(from_fills != 0.0, "four fills pay fees");
    assert!(
        (pnl.total_realized_pnl.unwrap() - from_fills).abs() < 1e-6,
        "{:?} vs {from_fills}",
        pnl.total_realized_pnl
    );
}
