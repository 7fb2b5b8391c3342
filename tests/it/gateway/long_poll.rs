//! The supervisor's inbox long poll (`?since=&wait=`): held while nothing changes, answered as
//! soon as an agent stages, and refused with a named field when asked wrongly.

use super::{long_btc, setup};
use agentdesk::api::Scope;
use reqwest::StatusCode;
use std::time::Duration;

#[tokio::test]
async fn a_held_inbox_poll_answers_when_an_agent_stages() {
    let s = setup().await;
    let (st, first) = s
        .supervisor(reqwest::Method::GET, "/gate/v1/inbox?status=all", None)
        .await;
    assert_eq!(st, StatusCode::OK, "{first}");
    let version = first["version"]
        .as_u64()
        .expect("the answer carries a version");

    // Another version than the gateway's is answered at once, whatever the wait.
    let (st, stale) = s
        .supervisor(
            reqwest::Method::GET,
            &format!("/gate/v1/inbox?status=all&since={}&wait=30", version + 1000),
            None,
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{stale}");
    assert_eq!(stale["version"].as_u64(), Some(version));

    let base = s.gate.base_url();
    let token = s.token.expose().to_string();
    let held = tokio::spawn(async move {
        reqwest::Client::new()
            .get(format!(
                "{base}/gate/v1/inbox?status=all&since={version}&wait=30"
            ))
            .header("x-api-key", token)
            .send()
            .await
            .unwrap()
            .json::<serde_json::Value>()
            .await
            .unwrap()
    });
    // Nothing changed: the gateway holds it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!held.is_finished(), "answered though nothing changed");

    let key = s.sandbox.key(Scope::McpMutate);
    let staged = s
        .agent(&key)
        .propose_trade(&long_btc(&s.sandbox.running.messenger_id))
        .await
        .unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(10), held)
        .await
        .expect("the staging ends the wait")
        .unwrap();
    assert!(answer["version"].as_u64().unwrap() > version, "{answer}");
    let ids: Vec<&str> = answer["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["proposalId"].as_str())
        .collect();
    assert!(ids.contains(&staged.proposal_id.as_str()), "{answer}");
}

#[tokio::test]
async fn a_long_poll_asked_wrongly_names_the_field() {
    let s = setup().await;
    for (query, field) in [
        ("since=-1&wait=5", "since"),
        ("since=3&wait=31", "wait"),
        ("since=3&wait=soon", "wait"),
    ] {
        let (st, body) = s
            .supervisor(
                reqwest::Method::GET,
                &format!("/gate/v1/inbox?{query}"),
                None,
            )
            .await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_eq!(body["error"]["field"], field, "{query}: {body}");
    }
}
