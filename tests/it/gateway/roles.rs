//! Roles for supervisor tokens: a viewer reads, an approver also decides, an admin also changes
//! the policy, standing approvals and the kill switch. A refused call is 403 `insufficient_role`
//! naming the role needed, and journaled.

use super::{Setup, long_btc, send, setup};
use agentdesk::api::Scope;
use agentdesk::gateway::store::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

async fn call(
    s: &Setup,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    send(&s.gate.base_url(), method, path, Some(token), body).await
}

#[tokio::test]
async fn each_role_does_what_it_may_and_is_told_which_role_the_rest_needs() {
    let s = setup().await;
    let viewer = s.gate.mint_token_as("vic", Role::Viewer).await.unwrap();
    let approver = s.gate.mint_token_as("amy", Role::Approver).await.unwrap();
    let admin = s.token.clone();
    let key = s.sandbox.key(Scope::McpMutate);
    let agent = s.agent(&key);
    let who = agent.whoami(false).await.unwrap();
    let p = agent
        .propose_trade(&long_btc(&who.messenger_id))
        .await
        .unwrap();
    let approve = format!("/gate/v1/inbox/{}/approve", p.proposal_id);

    // The viewer reads everything and decides nothing.
    for path in [
        "/gate/v1/inbox",
        "/gate/v1/journal",
        "/gate/v1/policy",
        "/gate/v1/kill-switch",
        "/gate/v1/standing-approvals",
        "/gate/v1/agents",
        "/api/delegated/positions",
    ] {
        let (st, body) = call(&s, viewer.expose(), Method::GET, path, None).await;
        // Reads of the account need the gateway's own key, which this one has not: a 503
        // that says so, not a refusal of the role.
        assert!(
            st == StatusCode::OK || body["error"]["code"] == "upstream_key_not_configured",
            "{path}: {st} {body}"
        );
    }
    let (st, body) = call(&s, viewer.expose(), Method::GET, "/gate/v1/agents", None).await;
    assert_eq!(
        (st, &body["you"]["role"]),
        (StatusCode::OK, &json!("viewer")),
        "{body}"
    );
    let reject = format!("/gate/v1/inbox/{}/reject", p.proposal_id);
    for path in [&approve, &reject] {
        let (st, body) = call(&s, viewer.expose(), Method::POST, path, None).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{path}: {body}");
        assert_eq!(body["error"]["code"], "insufficient_role", "{path}");
        assert_eq!(body["error"]["needed"], "approver", "{path}");
    }
    assert_eq!(s.upstream_confirms(&p.proposal_id), 0);

    // The approver decides; the policy, the kill switch, standing approvals and links are an
    // admin's.
    for (method, path, body) in [
        (
            Method::PUT,
            "/gate/v1/policy",
            json!({"max_notional_usd": 1}),
        ),
        (
            Method::POST,
            "/gate/v1/kill-switch",
            json!({"on": true, "reason": "x"}),
        ),
        (
            Method::POST,
            "/gate/v1/standing-approvals",
            json!({"agent": "*", "maxNotionalUsd": 10000, "minutes": 60, "reason": "x"}),
        ),
        (
            Method::POST,
            &format!("/gate/v1/inbox/{}/link", p.proposal_id),
            json!({}),
        ),
        (Method::DELETE, "/gate/v1/standing-approvals/1", json!({})),
    ] {
        let (st, answer) = call(&s, approver.expose(), method, path, Some(body)).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{path}: {answer}");
        assert_eq!(
            (&answer["error"]["code"], &answer["error"]["needed"]),
            (&json!("insufficient_role"), &json!("admin")),
            "{path}: {answer}"
        );
    }
    let (st, body) = call(&s, approver.expose(), Method::POST, &approve, None).await;
    assert_eq!(
        (st, &body["item"]["status"]),
        (StatusCode::OK, &json!("executed")),
        "{body}"
    );
    assert_eq!(body["item"]["decidedBy"], "amy");
    let (st, _) = call(
        &s,
        admin.expose(),
        Method::PUT,
        "/gate/v1/policy",
        Some(json!({"max_notional_usd": 5000})),
    )
    .await;
    assert_eq!(st, StatusCode::OK);

    // Every refusal is on the record, with who and what it needed.
    let (_, journal) = call(&s, admin.expose(), Method::GET, "/gate/v1/journal", None).await;
    let refused: Vec<&Value> = journal["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "insufficient_role")
        .collect();
    assert_eq!(refused.len(), 7, "{journal}");
    assert!(refused.iter().any(|r| r["actor"] == "vic"), "{refused:?}");
}
