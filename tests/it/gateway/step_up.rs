//! Step-up approvals: above `step_up_notional_usd` an item executes once, only on the approval
//! of the required number of distinct supervisors; the one who staged it never counts, the same
//! one twice counts once, a rejection by any of them ends it, an override needs an admin and
//! counts as one approval, and a trade no one approves may not be that large. Judged on the
//! sandbox's own tables (its proposals and fills), not on the gateway's answers.

use super::guard::{guarded, passed, propose, put_policy, refused, trade};
use super::{Setup, send};
use agentdesk::api::Scope;
use agentdesk::gateway::store::Role;
use agentdesk::secret::Secret;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// The sandbox's word on a proposal (`staged`, `executed`, ...) and its fills: what happened.
pub(super) fn service_status(sandbox_db: &std::path::Path, proposal: &str) -> (String, i64) {
    let store = agentdesk::sandbox::store::Store::open(sandbox_db).unwrap();
    let status = store
        .conn
        .query_row(
            "SELECT status FROM proposals WHERE id = ?1",
            [proposal],
            |r| r.get(0),
        )
        .unwrap();
    let fills = store
        .conn
        .query_row("SELECT COUNT(*) FROM fills", [], |r| r.get(0))
        .unwrap();
    (status, fills)
}

async fn approve_as(
    s: &Setup,
    token: &Secret,
    id: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    send(
        &s.gate.base_url(),
        Method::POST,
        &format!("/gate/v1/inbox/{id}/approve"),
        Some(token.expose()),
        body,
    )
    .await
}

async fn item(s: &Setup, proposal: &str) -> Value {
    let (st, body) = s
        .supervisor(Method::GET, "/gate/v1/inbox?status=all", None)
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["proposalId"] == proposal)
        .unwrap_or_else(|| panic!("{proposal} not in {body}"))
        .clone()
}

fn approvers(item: &Value) -> Vec<String> {
    item["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["by"].as_str().unwrap().to_string())
        .collect()
}

fn conflict(answer: &(StatusCode, Value), code: &str) {
    let (st, body) = answer;
    assert_eq!(*st, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
}

async fn step_up(s: &Setup) {
    let (st, body) = put_policy(
        s,
        json!({"step_up_notional_usd": 5000, "step_up_approvals": 2}),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn a_large_item_executes_once_on_the_second_distinct_approval_and_a_small_one_on_the_first() {
    let s = guarded(|_| {}).await;
    step_up(&s).await;
    let key = s.sandbox.key(Scope::McpMutate);
    let bob = s.gate.mint_token_as("bob", Role::Approver).await.unwrap();
    let carol = s.gate.mint_token_as("carol", Role::Approver).await.unwrap();
    let db = s.sandbox.db.clone();

    // A standing approval is one supervisor's: it approves the small item, never the large one.
    let (st, body) = s
        .supervisor(
            Method::POST,
            "/gate/v1/standing-approvals",
            Some(
                json!({"agent": "*", "coins": ["BTC"], "maxNotionalUsd": 100000,
                        "minutes": 60, "reason": "BTC this hour"}),
            ),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let small = passed(&propose(&s, &key, trade("BTC", 1000.0)).await);
    assert_eq!(service_status(&db, &small).0, "executed");

    let big = passed(&propose(&s, &key, trade("BTC", 8000.0)).await);
    let (_, fills) = service_status(&db, &big);
    let staged = item(&s, &big).await;
    assert_eq!(staged["status"], "pending", "{staged}");
    assert_eq!(staged["approvalsRequired"], 2, "{staged}");
    assert_eq!(approvers(&staged), Vec::<String>::new());

    // The first approval is recorded; nothing executes.
    let (st, body) = approve_as(&s, &s.token, &big, None).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["status"], "pending", "{body}");
    assert_eq!(approvers(&body["item"]), ["alice"]);
    assert_eq!(service_status(&db, &big), ("staged".into(), fills));
    // The same supervisor again counts once.
    conflict(
        &approve_as(&s, &s.token, &big, None).await,
        "already_approved",
    );
    assert_eq!(service_status(&db, &big), ("staged".into(), fills));

    // The second distinct approval executes it, once; a third changes nothing.
    let (st, body) = approve_as(&s, &bob, &big, None).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["status"], "executed", "{body}");
    assert_eq!(approvers(&body["item"]), ["alice", "bob"]);
    let (status, after) = service_status(&db, &big);
    assert_eq!(status, "executed");
    assert!(after > fills, "the execution filled");
    let (st, body) = approve_as(&s, &carol, &big, None).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["status"], "executed", "{body}");
    assert_eq!(service_status(&db, &big), ("executed".into(), after));

    // The journal records each approval with its place in the quorum.
    let records = super::guard::journal(&s).await;
    let quorum: Vec<(String, Value)> = records
        .iter()
        .filter(|r| r["kind"] == "approve" && r["detail"]["quorum"].is_object())
        .map(|r| {
            (
                r["actor"].as_str().unwrap().to_string(),
                r["detail"]["quorum"].clone(),
            )
        })
        .collect();
    assert_eq!(
        quorum,
        [
            ("alice".into(), json!({"approvals": 1, "required": 2})),
            ("bob".into(), json!({"approvals": 2, "required": 2})),
        ],
        "{records:#?}"
    );
}

#[tokio::test]
async fn the_supervisor_who_staged_it_does_not_count_and_any_rejection_ends_it() {
    let s = guarded(|_| {}).await;
    step_up(&s).await;
    let key = s.sandbox.key(Scope::McpMutate);
    let bob = s.gate.mint_token_as("bob", Role::Approver).await.unwrap();
    let carol = s.gate.mint_token_as("carol", Role::Approver).await.unwrap();
    let db = s.sandbox.db.clone();
    let stage_as = |supervisor: Option<&str>| {
        let mut headers = vec![("x-api-key", key.expose().to_string())];
        if let Some(t) = supervisor {
            headers.push(("x-agentdesk-supervisor", t.to_string()));
        }
        let url = format!("{}/api/delegated/propose", s.gate.base_url());
        async move {
            let mut req = reqwest::Client::new().post(url).json(&trade("BTC", 9000.0));
            for (k, v) in headers {
                req = req.header(k, v);
            }
            let resp = req.send().await.unwrap();
            let st = resp.status();
            (st, resp.json::<Value>().await.unwrap_or(Value::Null))
        }
    };

    // A name nobody can prove is refused, and nothing is staged.
    let (st, body) = stage_as(Some("agd_not_a_token")).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("x-agentdesk-supervisor")
    );

    let mine = passed(&stage_as(Some(s.token.expose())).await);
    assert_eq!(item(&s, &mine).await["stagedBy"], "alice");
    conflict(&approve_as(&s, &s.token, &mine, None).await, "own_staging");
    let (st, body) = approve_as(&s, &bob, &mine, None).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(service_status(&db, &mine).0, "staged");
    let (st, body) = approve_as(&s, &carol, &mine, None).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(service_status(&db, &mine).0, "executed");

    // One approval, then a rejection: it ends, and a later approval cannot revive it.
    let other = passed(&stage_as(None).await);
    let (st, body) = approve_as(&s, &bob, &other, None).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let (st, body) = send(
        &s.gate.base_url(),
        Method::POST,
        &format!("/gate/v1/inbox/{other}/reject"),
        Some(carol.expose()),
        Some(json!({"reason": "too large today"})),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    conflict(
        &approve_as(&s, &s.token, &other, None).await,
        "already_rejected",
    );
    assert_ne!(service_status(&db, &other).0, "executed");
}

#[tokio::test]
async fn an_override_needs_an_admin_and_counts_as_one_approval() {
    let s = guarded(|_| {}).await;
    step_up(&s).await;
    let key = s.sandbox.key(Scope::McpMutate);
    let bob = s.gate.mint_token_as("bob", Role::Approver).await.unwrap();
    let db = s.sandbox.db.clone();
    let big = passed(&propose(&s, &key, trade("BTC", 8000.0)).await);
    // The rule changes after staging: the approval has to override it.
    let (st, body) = put_policy(
        &s,
        json!({"step_up_notional_usd": 5000, "max_notional_usd": 6000}),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    refused(
        &approve_as(&s, &bob, &big, None).await,
        "max_notional_usd",
        &["override"],
    );
    let (st, body) = approve_as(
        &s,
        &bob,
        &big,
        Some(json!({"override": ["max_notional_usd"]})),
    )
    .await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "insufficient_role", "{body}");
    let (st, body) = approve_as(
        &s,
        &s.token,
        &big,
        Some(json!({"override": ["max_notional_usd"]})),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(
        body["item"]["status"], "pending",
        "one approval of two: {body}"
    );
    assert_eq!(
        body["item"]["approvals"][0]["overrides"],
        json!(["max_notional_usd"])
    );
    assert_eq!(service_status(&db, &big).0, "staged");
    // Each approval overrides for itself: the admin's judged the trade as it was then. An
    // approver cannot complete it while the rule is broken; a second admin's override does.
    refused(
        &approve_as(&s, &bob, &big, None).await,
        "max_notional_usd",
        &["override"],
    );
    assert_eq!(service_status(&db, &big).0, "staged");
    let dana = s.gate.mint_token_as("dana", Role::Admin).await.unwrap();
    let (st, body) = approve_as(
        &s,
        &dana,
        &big,
        Some(json!({"override": ["max_notional_usd"]})),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(service_status(&db, &big).0, "executed");
}

#[tokio::test]
async fn a_quorum_not_reached_in_time_expires_and_an_immediate_trade_above_the_step_is_refused() {
    let s = guarded(|_| {}).await;
    step_up(&s).await;
    let key = s.sandbox.key(Scope::McpMutate);
    let bob = s.gate.mint_token_as("bob", Role::Approver).await.unwrap();
    let db = s.sandbox.db.clone();
    let big = passed(&propose(&s, &key, trade("BTC", 8000.0)).await);
    let (st, body) = approve_as(&s, &s.token, &big, None).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    s.sandbox.clock.advance(chrono::Duration::minutes(6));
    let (st, body) = approve_as(&s, &bob, &big, None).await;
    assert_eq!(st, StatusCode::GONE, "{body}");
    assert_eq!(item(&s, &big).await["status"], "expired");
    assert_ne!(service_status(&db, &big).0, "executed");

    // No one approves an immediate trade: above the step it is refused before the service.
    let orders = |db: &std::path::Path| -> i64 {
        agentdesk::sandbox::store::Store::open(db)
            .unwrap()
            .conn
            .query_row("SELECT COUNT(*) FROM orders", [], |r| r.get(0))
            .unwrap()
    };
    let before = orders(&db);
    let (st, body) = put_policy(
        &s,
        json!({"step_up_notional_usd": 5000, "allow_immediate": true}),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let answer = send(
        &s.gate.base_url(),
        Method::POST,
        "/api/v1/trades",
        Some(key.expose()),
        Some(trade("BTC", 8000.0)),
    )
    .await;
    refused(
        &answer,
        "step_up_notional_usd",
        &["8000.00 USD", "2 supervisors"],
    );
    assert_eq!(orders(&db), before);
}
