//! Tools are classified from the service's own capability catalog: a deployment that runs a
//! trading tool without a confirmation step, lacks a tool, cannot list its tools, or confirms a
//! tool our catalog calls a read. Judged by what the stand-in service ran.

use super::send;
use crate::common;
use agentdesk::gateway::Running;
use agentdesk::gateway::rules::policy::{GateSettings, Policy};
use agentdesk::sandbox::TestClock;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

const KEY: &str = "tc_agent_key_1";

/// What the stand-in was asked to run: tool calls that executed (a tool that does not confirm
/// first, or a re-submission with a token), and first calls that only staged a token.
#[derive(Default)]
struct Seen {
    executed: Vec<Value>,
    staged: Vec<Value>,
    catalog_reads: usize,
}

struct Standin {
    url: String,
    seen: Arc<Mutex<Seen>>,
    _task: tokio::task::JoinHandle<()>,
}

/// A service whose catalog is `catalog` (None: its MCP is off, 404). A tool runs on its first
/// call unless the catalog marks it mutate.
async fn standin(catalog: Option<Value>) -> Standin {
    use axum::routing::{get, post};
    let seen = Arc::new(Mutex::new(Seen::default()));
    let confirms: Vec<String> = catalog
        .as_ref()
        .and_then(|c| c["tools"].as_array().cloned())
        .into_iter()
        .flatten()
        // The stand-in runs a tool at once unless it says the tool confirms first (its own
        // flag, else its mutate tier), as a real deployment would.
        .filter(|t| match t.get("requiresConfirmation") {
            Some(flag) => flag == true,
            None => t["tier"] == "mutate",
        })
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    let (reads, runs) = (seen.clone(), seen.clone());
    let app = axum::Router::new()
        .route(
            "/api/delegated/whoami",
            get(|| async { axum::Json(json!({"success": true, "messengerId": "m-9"})) }),
        )
        .route(
            "/api/delegated/mcp/capabilities",
            get(move || {
                let catalog = catalog.clone();
                reads.lock().unwrap().catalog_reads += 1;
                async move {
                    match catalog {
                        Some(c) => axum::Json(c).into_response(),
                        None => (
                            axum::http::StatusCode::NOT_FOUND,
                            axum::Json(json!({"success": false,
                                "error": {"code": "mcp_disabled", "message": "MCP is off"}})),
                        )
                            .into_response(),
                    }
                }
            }),
        )
        .route(
            "/api/delegated/mcp/tool",
            post(move |axum::Json(body): axum::Json<Value>| {
                let confirms = confirms.clone();
                let runs = runs.clone();
                async move {
                    let name = body["name"].as_str().unwrap_or("").to_string();
                    let mut seen = runs.lock().unwrap();
                    if confirms.contains(&name) && body["args"].get("confirmToken").is_none() {
                        seen.staged.push(body);
                        return axum::Json(json!({"success": true, "result": {
                            "confirmToken": "ct_1", "expiresAt": "2026-06-01T12:05:00Z",
                            "preview": {}}}));
                    }
                    seen.executed.push(body);
                    axum::Json(json!({"success": true, "result": {"ran": name}}))
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Standin {
        url: format!("http://{addr}"),
        seen,
        _task: task,
    }
}

use axum::response::IntoResponse;

fn tool(name: &str, tier: &str) -> Value {
    json!({"name": name, "tier": tier})
}

async fn gateway(s: &Standin, dir: &tempfile::TempDir) -> Running {
    let clock = TestClock::new(common::t0());
    common::start_gateway_with(&s.url, &clock, &dir.path().join("g.db"), |c| {
        c.settings = GateSettings {
            allow_immediate: vec!["*".into()],
            defaults: c.settings.defaults.clone(),
            ..GateSettings::default()
        };
        c.policy = Policy::from_json(&json!({"max_notional_usd": 1000})).unwrap();
    })
    .await
}

async fn call(g: &Running, name: &str, args: Value) -> (StatusCode, Value) {
    send(
        &g.base_url(),
        reqwest::Method::POST,
        "/api/delegated/mcp/tool",
        Some(KEY),
        Some(json!({"name": name, "args": args})),
    )
    .await
}

#[tokio::test]
async fn a_trading_tool_the_service_runs_without_confirming_is_refused_unsent() {
    let s = standin(Some(json!({"tools": [
        tool("service_place_order", "observe"),
        tool("service_get_positions", "observe"),
    ]})))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let g = gateway(&s, &dir).await;
    let (st, body) = call(
        &g,
        "service_place_order",
        json!({"id": "m-9", "a": "BTCUSDT", "d": "long", "sizeUsd": "50", "o": "market"}),
    )
    .await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "unconfirmed_mutate_tool", "{body}");
    // A read passes as before.
    let (st, body) = call(&g, "service_get_positions", json!({})).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    // Nor does an immediate order get "priced" by the tool's first call: here that call is the
    // trade. Unpriced (coins at market), it fails closed on the notional rule.
    let (st, body) = send(
        &g.base_url(),
        reqwest::Method::POST,
        "/api/v1/trades",
        Some(KEY),
        Some(json!({"id": "m-9", "a": "BTCUSDT", "d": "long", "size": "1", "o": "market"})),
    )
    .await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{body}");
    let seen = s.seen.lock().unwrap();
    let ran: Vec<&str> = seen
        .executed
        .iter()
        .filter_map(|b| b["name"].as_str())
        .collect();
    assert_eq!(ran, ["service_get_positions"]);
}

/// Mutate by tier, yet `requiresConfirmation: false`: the service runs it on the first call, so
/// staging it would execute it. Refused, and the service never sees the call.
#[tokio::test]
async fn a_mutate_tool_the_service_says_runs_at_once_is_refused_unsent() {
    let s = standin(Some(json!({"tools": [
        {"name": "service_place_order", "tier": "mutate", "requiresConfirmation": false},
    ]})))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let g = gateway(&s, &dir).await;
    let (st, body) = call(
        &g,
        "service_place_order",
        json!({"id": "m-9", "a": "BTCUSDT", "d": "long", "sizeUsd": "50", "o": "market"}),
    )
    .await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "unconfirmed_mutate_tool", "{body}");
    let seen = s.seen.lock().unwrap();
    assert!(seen.executed.is_empty() && seen.staged.is_empty());
}

#[tokio::test]
async fn a_tool_the_service_does_not_list_is_unknown_in_any_spelling() {
    let s = standin(Some(
        json!({"tools": [tool("service_get_positions", "observe")]}),
    ))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let g = gateway(&s, &dir).await;
    for name in ["service_cancel_order", "service_get_usage"] {
        let (st, body) = call(&g, name, json!({})).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{name}: {body}");
        assert_eq!(body["error"]["code"], "unknown_tool", "{body}");
    }
    assert!(s.seen.lock().unwrap().executed.is_empty());
}

#[tokio::test]
async fn no_tool_passes_while_the_service_catalog_cannot_be_read_and_it_is_read_again() {
    let s = standin(None).await;
    let dir = tempfile::tempdir().unwrap();
    let g = gateway(&s, &dir).await;
    let (st, body) = call(&g, "service_get_positions", json!({})).await;
    assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "tool_catalog_unavailable", "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("404"),
        "{body}"
    );
    // Within the retry pause the catalog is not asked again for every call.
    let (st, _) = call(&g, "service_get_positions", json!({})).await;
    assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE);
    let seen = s.seen.lock().unwrap();
    assert_eq!(seen.catalog_reads, 1);
    assert!(seen.executed.is_empty() && seen.staged.is_empty());
}

#[tokio::test]
async fn a_tool_the_service_confirms_is_held_for_the_supervisor_whatever_our_catalog_says() {
    let s = standin(Some(
        json!({"tools": [tool("service_get_positions", "mutate")]}),
    ))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let g = gateway(&s, &dir).await;
    let (st, body) = call(&g, "service_get_positions", json!({})).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["confirmToken"], "ct_1");
    let (st, body) = call(&g, "service_get_positions", json!({"confirmToken": "ct_1"})).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "human_approval_required", "{body}");
    let seen = s.seen.lock().unwrap();
    assert_eq!(seen.staged.len(), 1);
    assert!(seen.executed.is_empty(), "{:?}", seen.executed);
}
