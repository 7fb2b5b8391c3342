//! An execution the upstream refuses with a wait (a 429 with Retry-After, or the deployment's HTTP
//! 200 `success:false` rate-limit answer) is not a failure: the proposal is still staged, the item
//! goes back to approved with the time it may run, nobody's call reaches the upstream before then,
//! and it runs exactly once after.

use super::send;
use crate::common;
use agentdesk::gateway::rules::policy::GateSettings;
use agentdesk::gateway::{GateDb, Running};
use agentdesk::sandbox::TestClock;
use axum::response::{IntoResponse, Response};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const KEY: &str = "rl_agent_key_1";

/// An upstream whose first confirm is refused with `limited`; every later one executes. Counts the
/// confirms it was sent.
async fn limiting_upstream(
    expires: chrono::DateTime<chrono::Utc>,
    limited: fn() -> Response,
    first_after: std::time::Duration,
) -> (String, Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    use axum::routing::{get, post};
    let confirms = Arc::new(AtomicUsize::new(0));
    let counted = confirms.clone();
    let app = axum::Router::new()
        .route(
            "/api/delegated/whoami",
            get(|| async { axum::Json(json!({"success": true, "messengerId": "m-7"})) }),
        )
        .route(
            "/api/delegated/propose",
            post(move || async move {
                axum::Json(json!({"success": true, "proposalId": "rl-1",
                                  "expiresAt": expires.to_rfc3339()}))
            }),
        )
        .route(
            "/api/delegated/confirm",
            post(move || async move {
                if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                    tokio::time::sleep(first_after).await;
                    return limited();
                }
                axum::Json(json!({"success": true, "status": "executed", "proposalId": "rl-1"}))
                    .into_response()
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), confirms, task)
}

struct Rig {
    clock: TestClock,
    gate: Running,
    token: String,
    confirms: Arc<AtomicUsize>,
    upstream: tokio::task::JoinHandle<()>,
    _dir: tempfile::TempDir,
}

async fn rig(limited: fn() -> Response) -> Rig {
    rig_on(limited, None).await
}

/// With `store`, the gateway keeps its inbox in that PostgreSQL database instead of SQLite.
async fn rig_on(limited: fn() -> Response, store: Option<String>) -> Rig {
    rig_with(limited, store, std::time::Duration::ZERO).await
}

/// `first_after`: how long the upstream takes to answer the first confirm.
async fn rig_with(
    limited: fn() -> Response,
    store: Option<String>,
    first_after: std::time::Duration,
) -> Rig {
    let clock = TestClock::new(common::t0());
    let (url, confirms, upstream) = limiting_upstream(
        common::t0() + chrono::Duration::minutes(5),
        limited,
        first_after,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let gate = common::start_gateway_with(&url, &clock, &dir.path().join("g.db"), |c| {
        c.settings = GateSettings::default();
        if let Some(store) = store {
            c.db = GateDb::Postgres(store);
        }
    })
    .await;
    let token = gate.mint_token("").await.unwrap().expose().to_string();
    let (st, body) = send(
        &gate.base_url(),
        reqwest::Method::POST,
        "/api/delegated/propose",
        Some(KEY),
        Some(json!({"a": "BTCUSDT", "d": "long", "size": 0.001})),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    Rig {
        clock,
        gate,
        token,
        confirms,
        upstream,
        _dir: dir,
    }
}

impl Rig {
    async fn approve(&self) -> (StatusCode, Value) {
        send(
            &self.gate.base_url(),
            reqwest::Method::POST,
            "/gate/v1/inbox/rl-1/approve",
            Some(&self.token),
            None,
        )
        .await
    }

    /// The agent's own confirm, with the Retry-After it was answered.
    async fn confirm(&self) -> (StatusCode, Option<String>, Value) {
        let resp = reqwest::Client::new()
            .post(format!("{}/api/delegated/confirm", self.gate.base_url()))
            .header("x-api-key", KEY)
            .json(&json!({"proposalId": "rl-1"}))
            .send()
            .await
            .unwrap();
        let retry = resp
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_string());
        (resp.status(), retry, resp.json().await.unwrap())
    }

    async fn item(&self) -> Value {
        let (st, body) = send(
            &self.gate.base_url(),
            reqwest::Method::GET,
            "/gate/v1/inbox?status=all",
            Some(&self.token),
            None,
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{body}");
        body["items"][0].clone()
    }

    fn confirms(&self) -> usize {
        self.confirms.load(Ordering::SeqCst)
    }
}

fn too_many_requests() -> Response {
    (
        StatusCode::TOO_MANY_REQUESTS,
        [("retry-after", "30")],
        axum::Json(json!({"success": false, "error": {"code": "quota_exceeded",
                          "message": "too many confirms"}})),
    )
        .into_response()
}

#[tokio::test]
async fn a_429_to_the_execution_keeps_the_approval_and_it_runs_once_after_the_wait() {
    waits_then_runs_once(rig(too_many_requests).await).await;
}

#[tokio::test]
async fn on_postgresql_a_429_to_the_execution_keeps_the_approval_too() {
    let test = "on_postgresql_a_429_to_the_execution_keeps_the_approval_too";
    let Some(store) = super::postgres::pg(test).await else {
        return;
    };
    waits_then_runs_once(rig_on(too_many_requests, Some(store)).await).await;
}

async fn waits_then_runs_once(r: Rig) {
    let (st, body) = r.approve().await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["status"], "approved", "{body}");
    let note = "rate limited by the service — retry after 2026-06-01T12:00:30Z";
    assert_eq!(body["item"]["note"], note, "{body}");
    assert_eq!(r.confirms(), 1);

    // Before the wait is over nobody's call reaches the upstream: the agent is told when to come
    // back, and the supervisor's second approve answers the item as it stands.
    let (st, retry, body) = r.confirm().await;
    assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "execution_pending");
    assert!(
        body["error"]["message"].as_str().unwrap().contains(note),
        "{body}"
    );
    assert_eq!(retry.as_deref(), Some("30"));
    r.clock.advance(chrono::Duration::seconds(20));
    let (_, retry, _) = r.confirm().await;
    assert_eq!(retry.as_deref(), Some("10"));
    let (st, body) = r.approve().await;
    assert_eq!(
        (st, &body["item"]["status"]),
        (StatusCode::OK, &json!("approved")),
        "{body}"
    );
    assert_eq!(
        r.confirms(),
        1,
        "no call reached the upstream during the wait"
    );

    r.clock.advance(chrono::Duration::seconds(10));
    let (st, _, body) = r.confirm().await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "executed", "{body}");
    let item = r.item().await;
    assert_eq!(item["status"], "executed", "{item}");
    assert!(item.get("note").is_none(), "{item}");
    // Executed once, whoever asks afterwards.
    let (st, _, _) = r.confirm().await;
    assert_eq!(st, StatusCode::OK);
    let (st, body) = r.approve().await;
    assert_eq!(
        (st, &body["item"]["status"]),
        (StatusCode::OK, &json!("executed"))
    );
    // The task that would have run it after the wait wakes within a second of the clock passing
    // it: give it that second, so a second run by it would be counted here.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(r.confirms(), 2);
    r.upstream.abort();
}

fn deployment_rate_limit() -> Response {
    axum::Json(json!({"success": false,
                      "message": "Rate limit exceeded. Try again in 1 seconds."}))
    .into_response()
}

#[tokio::test]
async fn the_deployments_200_rate_limit_answer_is_a_wait_and_the_item_runs_by_itself_after_it() {
    let r = rig(deployment_rate_limit).await;
    let (st, body) = r.approve().await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["status"], "approved", "{body}");
    assert_eq!(
        body["item"]["note"],
        "rate limited by the service — retry after 2026-06-01T12:00:01Z"
    );
    // Nobody calls: the gateway runs the approved item itself once its clock passes the wait.
    r.clock.advance(chrono::Duration::seconds(2));
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let item = loop {
        let item = r.item().await;
        if item["status"] != "approved" || std::time::Instant::now() > give_up {
            break item;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(item["status"], "executed", "{item}");
    assert_eq!(r.confirms(), 2);
    // The agent's confirm now returns that execution; nothing runs again.
    let (st, _, body) = r.confirm().await;
    assert_eq!((st, &body["status"]), (StatusCode::OK, &json!("executed")));
    assert_eq!(r.confirms(), 2);
    r.upstream.abort();
}

#[tokio::test]
async fn a_rate_limited_item_whose_proposal_expires_meanwhile_is_expired() {
    let r = rig(too_many_requests).await;
    let (_, body) = r.approve().await;
    assert_eq!(body["item"]["status"], "approved", "{body}");
    r.clock.advance(chrono::Duration::minutes(6));
    let (st, _, body) = r.confirm().await;
    assert_eq!(st, StatusCode::GONE, "{body}");
    assert_eq!(body["error"]["code"], "proposal_expired");
    assert_eq!(r.item().await["status"], "expired");
    assert_eq!(r.confirms(), 1);
    r.upstream.abort();
}

#[tokio::test]
async fn a_rate_limited_item_rejected_while_it_waits_never_runs() {
    let r = rig(too_many_requests).await;
    let (_, body) = r.approve().await;
    assert_eq!(body["item"]["status"], "approved", "{body}");
    let (st, body) = send(
        &r.gate.base_url(),
        reqwest::Method::POST,
        "/gate/v1/inbox/rl-1/reject",
        Some(&r.token),
        Some(json!({"reason": "not at this price any more"})),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    r.clock.advance(chrono::Duration::seconds(31));
    // Past the wait: whatever was scheduled finds it rejected.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let (st, _, body) = r.confirm().await;
    assert_eq!(
        (st, &body["error"]["code"]),
        (StatusCode::FORBIDDEN, &json!("rejected_by_supervisor")),
        "{body}"
    );
    assert_eq!(r.item().await["status"], "rejected");
    assert_eq!(r.confirms(), 1);
    r.upstream.abort();
}

/// The stand-in of the real deployment, limited to one confirm a minute, answers the second in its
/// own rate-limit shape (HTTP 200 `success:false`, the wait in the message and in `retryAfter`).
#[tokio::test]
async fn the_stand_ins_rate_limit_keeps_the_second_approval_waiting() {
    use agentdesk::standin::{self, StandInConfig};
    let key = "standin_gate_key";
    let mut config = StandInConfig::new("127.0.0.1:0".parse().unwrap(), key);
    config.confirms_per_minute = Some(1);
    let upstream = standin::start(config).await.unwrap();
    // The stand-in keeps real time; so does this gateway's clock here.
    let clock = TestClock::new(chrono::Utc::now());
    let dir = tempfile::tempdir().unwrap();
    let gate = common::start_gateway(
        &upstream.base_url(),
        &clock,
        &dir.path().join("g.db"),
        GateSettings::default(),
        None,
    )
    .await;
    let token = gate.mint_token("").await.unwrap();
    let base = gate.base_url();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let (st, body) = send(
            &base,
            reqwest::Method::POST,
            "/api/delegated/propose",
            Some(key),
            Some(
                json!({"strategy": "Agent", "a": "BTCUSDT", "d": "long", "o": "market",
                        "sizeUsd": "2000", "leverage": 5, "tp": "70000", "sl": "58000"}),
            ),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{body}");
        let id = body["proposalId"]
            .as_str()
            .or(body["data"]["proposalId"].as_str())
            .unwrap_or_else(|| panic!("{body}"))
            .to_string();
        ids.push(id);
    }
    let approve = |id: &str| {
        let path = format!("/gate/v1/inbox/{id}/approve");
        let (base, token) = (base.clone(), token.clone());
        async move {
            send(
                &base,
                reqwest::Method::POST,
                &path,
                Some(token.expose()),
                None,
            )
            .await
        }
    };
    let (st, body) = approve(&ids[0]).await;
    assert_eq!(
        (st, &body["item"]["status"]),
        (StatusCode::OK, &json!("executed")),
        "{body}"
    );
    let (st, body) = approve(&ids[1]).await;
    assert_eq!(
        (st, &body["item"]["status"]),
        (StatusCode::OK, &json!("approved")),
        "{body}"
    );
    let note = body["item"]["note"].as_str().unwrap();
    let at = note
        .strip_prefix("rate limited by the service — retry after ")
        .unwrap_or_else(|| panic!("{note}"));
    let at: chrono::DateTime<chrono::Utc> = at.parse().unwrap();
    let wait = (at - clock_now(&clock)).num_seconds();
    assert!((50..=61).contains(&wait), "{note}: {wait} s");
    let (st, body) = send(
        &base,
        reqwest::Method::POST,
        "/api/delegated/confirm",
        Some(key),
        Some(json!({"proposalId": ids[1]})),
    )
    .await;
    assert_eq!(
        (st, &body["error"]["code"]),
        (StatusCode::SERVICE_UNAVAILABLE, &json!("execution_pending")),
        "{body}"
    );
}

fn clock_now(clock: &TestClock) -> chrono::DateTime<chrono::Utc> {
    use agentdesk::sandbox::Clock;
    clock.now()
}

fn executed() -> Response {
    axum::Json(json!({"success": true, "status": "executed", "proposalId": "rl-1"})).into_response()
}

/// A supervisor's client that gives up while the upstream is slow to answer the confirm does not
/// strand the item: the execution the approval started finishes and is recorded.
#[tokio::test]
async fn an_approval_whose_caller_gives_up_still_finishes_its_execution() {
    let r = rig_with(executed, None, std::time::Duration::from_millis(1500)).await;
    let gone = reqwest::Client::new()
        .post(format!("{}/gate/v1/inbox/rl-1/approve", r.gate.base_url()))
        .header("x-api-key", &r.token)
        .timeout(std::time::Duration::from_millis(300))
        .send()
        .await;
    assert!(gone.is_err(), "the caller was meant to give up: {gone:?}");
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let item = loop {
        let item = r.item().await;
        if item["status"] == "executed" || std::time::Instant::now() > give_up {
            break item;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(item["status"], "executed", "{item}");
    assert_eq!(r.confirms(), 1);
    r.upstream.abort();
}
