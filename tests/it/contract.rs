//! The client against a service that is not our sandbox: the stand-in of the real deployment
//! (`agentdesk::standin`), in its deployment shape and in a minimal one. A shape change that the
//! console cannot read shows up here, not in front of a supervisor.

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
