//! The client against a service that is not our sandbox: the stand-in of the real deployment
//! (`agentdesk::standin`), in its deployment shape and in a minimal one. A shape change that the
//! console cannot read shows up here, not in front of a supervisor.

use agentdesk::api::model::TradeSignal;
use agentdesk::api::{ApiError, Client};
use agentdesk::secret::Secret;
use agentdesk::standin::{self, ErrorPlace, Running, Shape, StandInConfig};

const KEY: &str = "live_contract_key";

async fn start(shape: Shape, errors: ErrorPlace) -> (Running, Client) {
    let mut config = StandInConfig::new("127.0.0.1:0".parse().unwrap(), KEY);
    config.shape = shape;
    config.errors = errors;
    let running = standin::start(config).await.unwrap();
    let client = Client::new(&running.base_url(), Some(Secret::new(KEY))).unwrap();
    (running, client)
}

fn btc_long() -> TradeSignal {
    serde_json::from_value(serde_json::json!({
        "strategy": "Agent", "a": "BTCUSDT", "d": "long", "o": "market",
        "sizeUsd": "2000", "leverage": 5, "tp": "70000", "sl": "58000",
    }))
    .unwrap()
}

#[tokio::test]
async fn account_reads_decode_in_both_shapes() {
    for shape in [Shape::Deployment, Shape::Minimal] {
        let (_s, client) = start(shape, ErrorPlace::Message).await;
        let who = client.whoami(true).await.unwrap();
        assert_eq!(who.messenger_id, "tg_700100", "{shape:?}");
        client.get_usage().await.unwrap();
        assert!(client.get_positions().await.unwrap().positions.is_empty());
        let pnl = client.pnl_summary().await.unwrap();
        assert_eq!(pnl.total_portfolio_value, 100_000.0, "{shape:?}");
        client.list_open_orders(None).await.unwrap();
    }
}

#[tokio::test]
async fn a_staged_trade_confirms_and_shows_up_as_a_position() {
    for shape in [Shape::Deployment, Shape::Minimal] {
        let (_s, client) = start(shape, ErrorPlace::Message).await;
        let proposal = client.propose_trade(&btc_long()).await.unwrap();
        assert!(!proposal.proposal_id.is_empty());
        assert!(proposal.expires_at.is_some(), "{shape:?}: expiresAt read");
        assert_eq!(proposal.preview.coin, "BTC");
        assert!(
            (proposal.preview.notional - 2000.0).abs() < 1e-6,
            "{shape:?}: notional as text"
        );
        let executed = client.confirm_trade(&proposal.proposal_id).await.unwrap();
        // The deployment's answer carries the venue's statuses under result.response.data.
        let raw = serde_json::to_value(&executed).unwrap();
        assert!(raw.to_string().contains("\"filled\""), "{shape:?}: {raw}");
        let positions = client.get_positions().await.unwrap();
        assert_eq!(positions.positions.len(), 1, "{shape:?}");
        assert_eq!(positions.positions[0].coin, "BTC");
        let pnl = client.pnl_summary().await.unwrap();
        assert_eq!(pnl.total_positions, 1, "{shape:?}: totalPositions as text");
    }
}

#[tokio::test]
async fn errors_on_http_200_are_errors_wherever_the_message_sits() {
    for place in [
        ErrorPlace::ErrorString,
        ErrorPlace::ErrorMessage,
        ErrorPlace::ResultError,
        ErrorPlace::Message,
    ] {
        let (_s, client) = start(Shape::Deployment, place).await;
        let e = client.confirm_trade("no-such-proposal").await.unwrap_err();
        assert_eq!(e.to_string(), "Proposal not found or expired", "{place:?}");
    }
}

#[tokio::test]
async fn a_refused_key_is_recognized_although_the_status_is_200() {
    for place in [
        ErrorPlace::Message,
        ErrorPlace::ErrorString,
        ErrorPlace::ErrorMessage,
    ] {
        let (s, _) = start(Shape::Deployment, place).await;
        let wrong = Client::new(&s.base_url(), Some(Secret::new("live_wrong"))).unwrap();
        match wrong.whoami(true).await {
            Err(ApiError::Unauthorized { message }) => assert_eq!(message, "Invalid API key"),
            other => panic!("{place:?}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn the_deployment_has_no_proposals_list() {
    let (_s, client) = start(Shape::Deployment, ErrorPlace::Message).await;
    let e = client.list_proposals(None).await.unwrap_err();
    assert!(matches!(e, ApiError::NotFound { .. }), "{e:?}");
}
