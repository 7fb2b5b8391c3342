//! The simulated venue seen through the API: triggers and resting limits fill when the feed crosses.

use crate::common;
use crate::staged::long_btc;
use agentdesk::api::Client;
use chrono::Duration;

/// Advances the clock in 5-minute steps until `done` says so (at most a simulated week).
async fn advance_until<F, Fut>(s: &common::TestServer, c: &Client, mut done: F) -> bool
where
    F: FnMut(Client) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..(7 * 24 * 12) {
        s.clock.advance(Duration::minutes(5));
        if done(c.clone()).await {
            return true;
        }
    }
    false
}

#[tokio::test]
async fn a_stop_loss_fires_when_the_feed_crosses_it_and_cancels_the_take_profit() {
    let s = common::start().await;
    let c = s.legacy();
    let mark = c.propose_trade(&long_btc()).await.unwrap().preview.mark_px;
    let mut sig = long_btc();
    let sl = (mark * 0.995).round();
    sig.sl = Some(sl);
    sig.tp = Some((mark * 1.5).round());
    let p = c.propose_trade(&sig).await.unwrap();
    c.confirm_trade(&p.proposal_id).await.unwrap();
    assert_eq!(c.list_open_orders(None).await.unwrap().orders.len(), 2);

    let closed = advance_until(&s, &c, |c| async move {
        c.get_positions().await.unwrap().positions.is_empty()
    })
    .await;
    assert!(closed, "the feed never crossed {sl} within a week");
    // The take-profit went with the position (one-cancels-other on a position's TP/SL).
    assert!(c.list_open_orders(None).await.unwrap().orders.is_empty());
    let pnl = c.pnl_summary().await.unwrap();
    assert!(
        pnl.total_realized_pnl.unwrap() < 0.0,
        "{:?}",
        pnl.total_realized_pnl
    );
    assert!(pnl.total_portfolio_value < 100_000.0);
}

#[tokio::test]
async fn a_resting_limit_fills_when_the_price_comes_to_it() {
    let s = common::start().await;
    let c = s.legacy();
    let mark = c.propose_trade(&long_btc()).await.unwrap().preview.mark_px;
    let limit = (mark * 0.997).round();
    let mut sig = long_btc();
    sig.o = Some("limit".into());
    sig.p = Some(limit);
    let done = c.place_order(&sig).await.unwrap();
    assert_eq!(done.status, "resting");
    let filled = advance_until(&s, &c, |c| async move {
        !c.get_positions().await.unwrap().positions.is_empty()
    })
    .await;
    assert!(filled, "the feed never came down to {limit}");
    let pos = &c.get_positions().await.unwrap().positions[0];
    assert_eq!(pos.entry_px, limit, "a resting limit fills at its price");
    assert!(c.list_open_orders(None).await.unwrap().orders.is_empty());
}

#[tokio::test]
async fn the_feed_is_deterministic_and_moves_with_the_clock() {
    let a = common::start().await;
    let b = common::start().await;
    let pa = a
        .legacy()
        .propose_trade(&long_btc())
        .await
        .unwrap()
        .preview
        .mark_px;
    let pb = b
        .legacy()
        .propose_trade(&long_btc())
        .await
        .unwrap()
        .preview
        .mark_px;
    assert_eq!(pa, pb, "same seed, same time, same price");
    a.clock.advance(Duration::hours(1));
    let later = a
        .legacy()
        .propose_trade(&long_btc())
        .await
        .unwrap()
        .preview
        .mark_px;
    assert_ne!(pa, later);
}
