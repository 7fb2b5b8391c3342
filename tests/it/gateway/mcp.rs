//! `/mcp` driven by rmcp's own client over loopback: the same supervision as REST, in MCP's terms.

use super::{Setup, long_btc, send, setup, upstream_count};
use agentdesk::api::Scope;
use agentdesk::secret::Secret;
use reqwest::StatusCode;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    ClientRequest, Implementation, ProgressNotificationParam, ProtocolVersion,
    ReadResourceRequestParams, RequestMetaObject, ResourceContents,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A client that counts the progress notifications it hears.
#[derive(Clone)]
pub(super) struct Probe {
    info: ClientConfig,
    progress: Arc<AtomicUsize>,
    /// What the last progress notification said.
    said: Arc<std::sync::Mutex<String>>,
}

impl ClientHandler for Probe {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        *self.said.lock().unwrap() = params.message.unwrap_or_default();
        self.progress.fetch_add(1, Ordering::SeqCst);
    }
}

pub(super) type Client = RunningService<RoleClient, Probe>;

/// The version the official SDKs negotiate today (with a session), unless told otherwise.
async fn connect_as(s: &Setup, key: &Secret, version: ProtocolVersion) -> Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", s.gate.base_url()))
            .auth_header(key.expose()),
    );
    let probe = Probe {
        info: ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("it-agent", "9.9.9"),
        )
        .with_protocol_version(version),
        progress: Arc::default(),
        said: Arc::default(),
    };
    probe
        .serve(transport)
        .await
        .expect("the MCP client connects")
}

pub(super) async fn connect(s: &Setup, key: &Secret) -> Client {
    connect_as(s, key, ProtocolVersion::V_2025_11_25).await
}

fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().cloned().unwrap()
}

pub(super) async fn call(c: &Client, name: &str, a: Value) -> CallToolResult {
    c.call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(args(a)))
        .await
        .expect("a tool call answers a result, even a refusal")
}

pub(super) fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn structured(r: &CallToolResult) -> Value {
    r.structured_content.clone().unwrap_or(Value::Null)
}

async fn propose(s: &Setup, c: &Client) -> String {
    let signal = serde_json::to_value(long_btc(&s.sandbox.running.messenger_id)).unwrap();
    let r = call(c, "service_propose_trade", signal).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    let t = text(&r);
    assert!(t.starts_with("STAGED, NOT EXECUTED"), "{t}");
    assert!(t.contains("human") && t.contains("expires at"), "{t}");
    let sc = structured(&r);
    assert_eq!(sc["status"], "staged", "{sc}");
    assert_eq!(sc["requiresHumanApproval"], true);
    assert!(
        !sc.to_string().contains("confirmToken"),
        "the agent never sees a token: {sc}"
    );
    let id = sc["proposalId"].as_str().unwrap().to_string();
    assert!(t.contains(&id));
    id
}

/// Starts the confirm tool in the background (it waits for the human).
fn confirm_later(c: &Arc<Client>, id: &str) -> tokio::task::JoinHandle<CallToolResult> {
    let (c, id) = (c.clone(), id.to_string());
    tokio::spawn(async move { call(&c, "service_confirm_trade", json!({"proposalId": id})).await })
}

async fn decide(s: &Setup, id: &str, how: &str, body: Option<Value>) {
    let (st, b) = s
        .supervisor(
            reqwest::Method::POST,
            &format!("/gate/v1/inbox/{id}/{how}"),
            body,
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{b}");
}

#[tokio::test]
async fn an_agent_connects_lists_the_services_tools_and_reads_as_over_rest() {
    let s = setup().await;
    let key = s.sandbox.key(Scope::McpMutate);
    let c = connect(&s, &key).await;
    let info = c.peer_info().unwrap();
    let server = info.server_info.clone().unwrap();
    assert_eq!(server.name, "agentdesk");
    assert_eq!(server.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25);

    let tools = c.list_all_tools().await.unwrap();
    let tool = |n: &str| tools.iter().find(|t| t.name == n).cloned().unwrap();
    let positions = tool("service_get_positions");
    assert_eq!(positions.annotations.unwrap().read_only_hint, Some(true));
    let place = tool("service_place_order");
    assert_eq!(
        place.annotations.clone().unwrap().destructive_hint,
        Some(true)
    );
    assert_eq!(place.annotations.unwrap().read_only_hint, Some(false));
    assert!(
        place.input_schema["properties"]
            .get("confirmToken")
            .is_none()
    );
    assert!(place.input_schema["properties"].get("a").is_some());
    // The service's catalog, not ours: every tool it lists that the gateway forwards.
    let (_, caps) = send(
        &s.sandbox.base_url(),
        reqwest::Method::GET,
        "/api/delegated/mcp/capabilities",
        Some(key.expose()),
        None,
    )
    .await;
    assert_eq!(tools.len(), caps["tools"].as_array().unwrap().len());

    // The supervisor sees how the agent connects (until it uses REST, as just below).
    let (_, agents) = s
        .supervisor(reqwest::Method::GET, "/gate/v1/agents", None)
        .await;
    let me = agents["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["fingerprint"] == key.fingerprint())
        .cloned()
        .unwrap();
    assert_eq!(
        (&me["transport"], &me["clientName"], &me["clientVersion"]),
        (&json!("mcp"), &json!("it-agent"), &json!("9.9.9")),
        "{me}"
    );
    // A read answers what REST answers for the same key, through the same path.
    let r = call(&c, "service_whoami", json!({})).await;
    let (st, rest) = send(
        &s.gate.base_url(),
        reqwest::Method::POST,
        "/api/delegated/mcp/tool",
        Some(key.expose()),
        Some(json!({"name": "service_whoami", "args": {}})),
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(structured(&r), rest);
    assert_eq!(r.is_error, Some(false));

    // Account state as resources, read through the gateway.
    let listed = c.list_resources(None).await.unwrap();
    assert_eq!(listed.resources.len(), 3);
    let read = c
        .read_resource(ReadResourceRequestParams::new(
            "agentdesk://account/positions",
        ))
        .await
        .unwrap();
    let ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
        panic!("a JSON text resource");
    };
    let (_, rest) = send(
        &s.gate.base_url(),
        reqwest::Method::GET,
        "/api/delegated/positions",
        Some(key.expose()),
        None,
    )
    .await;
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), rest);

    c.cancel().await.unwrap();
}

#[tokio::test]
async fn the_latest_protocol_version_is_served_too() {
    let s = setup().await;
    let key = s.sandbox.key(Scope::McpMutate);
    let c = connect_as(&s, &key, ProtocolVersion::LATEST).await;
    let r = call(&c, "service_get_usage", json!({})).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert!(!c.list_all_tools().await.unwrap().is_empty());
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn a_staging_is_one_call_and_the_confirm_waits_for_the_humans_approval() {
    let s = setup().await;
    let key = s.sandbox.key(Scope::McpMutate);
    let c = Arc::new(connect(&s, &key).await);
    let id = propose(&s, &c).await;
    let items = s.inbox("pending").await;
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["proposalId"], id.as_str());
    assert_eq!(items[0]["agent"], key.fingerprint());
    assert_eq!(items[0]["kind"], "trade");

    let waiting = confirm_later(&c, &id);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(
        !waiting.is_finished(),
        "the confirm waits while the item is pending"
    );
    assert_eq!(s.upstream_confirms(&id), 0);
    decide(&s, &id, "approve", None).await;
    let r = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert!(text(&r).starts_with("EXECUTED"), "{}", text(&r));
    assert_eq!(structured(&r)["status"], "executed");
    assert!(
        c.service().progress.load(Ordering::SeqCst) >= 1,
        "progress while waiting"
    );
    // Checked at the sandbox: executed there once, and the position is open.
    assert_eq!(s.upstream_confirms(&id), 1);
    let (_, positions) = send(
        &s.sandbox.base_url(),
        reqwest::Method::GET,
        "/api/delegated/positions",
        Some(key.expose()),
        None,
    )
    .await;
    assert!(positions.to_string().contains("BTC"), "{positions}");
}

#[tokio::test]
async fn a_rejection_and_an_expiry_end_the_wait_with_a_tool_error() {
    let s = setup().await;
    let key = s.sandbox.key(Scope::McpMutate);
    let c = Arc::new(connect(&s, &key).await);

    let id = propose(&s, &c).await;
    let waiting = confirm_later(&c, &id);
    tokio::time::sleep(Duration::from_millis(500)).await;
    decide(
        &s,
        &id,
        "reject",
        Some(json!({"reason": "too big for today"})),
    )
    .await;
    let r = waiting.await.unwrap();
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).starts_with("REJECTED"), "{}", text(&r));
    assert!(text(&r).contains("too big for today"), "{}", text(&r));
    assert_eq!(structured(&r)["status"], "rejected");

    let id = propose(&s, &c).await;
    let waiting = confirm_later(&c, &id);
    tokio::time::sleep(Duration::from_millis(500)).await;
    s.sandbox.clock.advance(chrono::Duration::minutes(6));
    let r = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).starts_with("EXPIRED"), "{}", text(&r));
    assert!(text(&r).contains("expired"), "{}", text(&r));
    assert_eq!(upstream_count(&s, "confirm_trade"), 0);
}

#[tokio::test]
async fn a_wait_longer_than_the_call_allows_says_how_to_ask_again_and_a_cancel_changes_nothing() {
    let s = setup().await;
    let key = s.sandbox.key(Scope::McpMutate);
    let c = connect(&s, &key).await;
    let id = propose(&s, &c).await;

    let mut params = CallToolRequestParams::new("service_confirm_trade")
        .with_arguments(args(json!({"proposalId": id})));
    let mut meta = RequestMetaObject::default();
    meta.insert("agentdesk/waitSeconds".into(), json!(1));
    params.meta = Some(meta);
    let r = c.call_tool(params).await.unwrap();
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert!(text(&r).starts_with("STILL WAITING"), "{}", text(&r));
    assert!(text(&r).contains("again"), "{}", text(&r));
    assert_eq!(structured(&r)["status"], "pending");

    let handle = c
        .peer()
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(
                CallToolRequestParams::new("service_confirm_trade")
                    .with_arguments(args(json!({"proposalId": id}))),
            )),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    handle
        .cancel(Some("the user changed their mind".into()))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let items = s.inbox("pending").await;
    assert_eq!(items.len(), 1, "still pending after a cancel: {items:?}");
    assert_eq!(upstream_count(&s, "confirm_trade"), 0);
    // The session is still usable.
    let r = call(&c, "service_get_usage", json!({})).await;
    assert_eq!(r.is_error, Some(false));
}

/// A step-up item's confirm says where its quorum stands while it waits, in its progress and in
/// its answer, and runs once the second supervisor approves.
#[tokio::test]
async fn a_waiting_confirm_of_a_step_up_item_reports_its_approvals_so_far() {
    let s = setup().await;
    let (st, body) = s
        .supervisor(
            reqwest::Method::PUT,
            "/gate/v1/policy",
            Some(json!({"step_up_notional_usd": 1000})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let key = s.sandbox.key(Scope::McpMutate);
    let c = Arc::new(connect(&s, &key).await);
    let id = propose(&s, &c).await;
    decide(&s, &id, "approve", None).await;
    assert_eq!(
        s.upstream_confirms(&id),
        0,
        "one approval of two runs nothing"
    );

    let mut params = CallToolRequestParams::new("service_confirm_trade")
        .with_arguments(args(json!({"proposalId": id})));
    let mut meta = RequestMetaObject::default();
    meta.insert("agentdesk/waitSeconds".into(), json!(2));
    params.meta = Some(meta);
    let r = c.call_tool(params).await.unwrap();
    let t = text(&r);
    assert!(t.starts_with("STILL WAITING"), "{t}");
    assert!(t.contains("(1 of 2 approvals)"), "{t}");
    assert!(!t.contains("alice"), "how many, never who: {t}");
    let said = c.service().said.lock().unwrap().clone();
    assert!(said.contains("(1 of 2 approvals)"), "{said:?}");

    let bob = s
        .gate
        .mint_token_as("bob", agentdesk::gateway::store::Role::Approver)
        .await
        .unwrap();
    let waiting = confirm_later(&c, &id);
    let (st, body) = send(
        &s.gate.base_url(),
        reqwest::Method::POST,
        &format!("/gate/v1/inbox/{id}/approve"),
        Some(bob.expose()),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let r = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .unwrap()
        .unwrap();
    assert!(text(&r).starts_with("EXECUTED"), "{}", text(&r));
    assert_eq!(s.upstream_confirms(&id), 1);
}

/// Issue 34: a wait an agent asks for is validated before it becomes a duration: 1e308, a
/// negative, a string or more than ten minutes is refused naming the field (it panicked a worker
/// once, and the call never answered); the session goes on serving.
#[tokio::test]
async fn a_wait_that_is_no_duration_is_refused_naming_the_field() {
    let s = setup().await;
    let key = s.sandbox.key(Scope::McpMutate);
    let c = connect(&s, &key).await;
    let id = propose(&s, &c).await;
    for bad in [json!(1e308), json!(-1), json!("5"), json!(601)] {
        let mut params = CallToolRequestParams::new("service_confirm_trade")
            .with_arguments(args(json!({"proposalId": id})));
        let mut meta = RequestMetaObject::default();
        meta.insert("agentdesk/waitSeconds".into(), bad.clone());
        params.meta = Some(meta);
        let e = tokio::time::timeout(Duration::from_secs(10), c.call_tool(params))
            .await
            .unwrap_or_else(|_| panic!("{bad}: no answer"))
            .expect_err("refused");
        let said = e.to_string();
        assert!(said.contains("agentdesk/waitSeconds"), "{bad}: {said}");
    }
    // Still serving.
    let r = call(&c, "service_whoami", json!({})).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(upstream_count(&s, "confirm_trade"), 0);
}

#[tokio::test]
async fn a_mutate_tool_stages_in_one_call_and_its_confirm_runs_it_once_approved() {
    let s = setup().await;
    let key = s.sandbox.key(Scope::Legacy);
    let c = Arc::new(connect(&s, &key).await);
    let order = json!({"id": s.sandbox.running.messenger_id, "strategy": "Agent",
                       "a": "BTCUSDT", "d": "long", "o": "market", "sizeUsd": 1000});
    let r = call(&c, "service_place_order", order).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert!(text(&r).starts_with("STAGED"), "{}", text(&r));
    let id = structured(&r)["proposalId"].as_str().unwrap().to_string();
    assert_eq!(upstream_count(&s, "place_order"), 0, "nothing ran yet");
    let items = s.inbox("pending").await;
    assert_eq!(items[0]["id"], id.as_str());
    assert_eq!(items[0]["kind"], "tool:service_place_order");

    let waiting = confirm_later(&c, &id);
    tokio::time::sleep(Duration::from_millis(500)).await;
    decide(&s, &id, "approve", None).await;
    let r = waiting.await.unwrap();
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(structured(&r)["status"], "executed");
    assert_eq!(upstream_count(&s, "place_order"), 1);

    // A confirm token of the agent's own is refused: the gateway does that exchange.
    let r = call(
        &c,
        "service_place_order",
        json!({"a": "BTCUSDT", "d": "long", "confirmToken": "ct_mine"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("confirmToken"), "{}", text(&r));
}

#[tokio::test]
async fn the_kill_switch_and_unknown_or_respelled_names_are_refused_as_over_rest() {
    let s = setup().await;
    let key = s.sandbox.key(Scope::Legacy);
    let c = connect(&s, &key).await;
    for name in [
        "service_no_such_tool",
        " service_place_order",
        "SERVICE_PLACE_ORDER",
        "service_place_order\u{0}",
        "place_order",
        "service_execute_mcp_tool",
    ] {
        let r = call(
            &c,
            name,
            json!({"a": "BTCUSDT", "d": "long", "sizeUsd": 1000}),
        )
        .await;
        assert_eq!(r.is_error, Some(true), "{name:?}: {}", text(&r));
    }
    assert!(s.inbox("all").await.is_empty());
    assert_eq!(upstream_count(&s, "execute_mcp_tool"), 0);

    let (st, body) = s
        .supervisor(
            reqwest::Method::POST,
            "/gate/v1/kill-switch",
            Some(json!({"on": true, "reason": "drill"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let signal = serde_json::to_value(long_btc(&s.sandbox.running.messenger_id)).unwrap();
    for tool in ["service_propose_trade", "service_place_order"] {
        let r = call(&c, tool, signal.clone()).await;
        assert_eq!(r.is_error, Some(true), "{tool}: {}", text(&r));
        assert!(text(&r).contains("kill switch"), "{tool}: {}", text(&r));
    }
    assert!(s.inbox("pending").await.is_empty());
}

#[tokio::test]
async fn no_key_or_a_wrong_key_is_401_before_any_session_and_sessions_are_per_key() {
    let s = setup().await;
    let url = format!("{}/mcp", s.gate.base_url());
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"}}});
    let http = reqwest::Client::new();
    let post = |auth: Option<(&'static str, String)>, session: Option<String>| {
        let mut req = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .json(&init);
        if let Some((h, v)) = auth {
            req = req.header(h, v);
        }
        if let Some(id) = session {
            req = req.header("mcp-session-id", id);
        }
        req.send()
    };
    for auth in [
        None,
        Some(("authorization", "Bearer sk_wrong".to_string())),
        Some(("x-api-key", "sk_wrong".to_string())),
        Some(("authorization", format!("Bearer {}", s.token.expose()))),
    ] {
        let resp = post(auth.clone(), None).await.unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "{auth:?}");
        assert!(resp.headers().get("mcp-session-id").is_none());
    }
    // Either header carries the agent's key.
    let key = s.sandbox.key(Scope::McpMutate);
    let ok = post(Some(("x-api-key", key.expose().to_string())), None)
        .await
        .unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
    let session = ok.headers()["mcp-session-id"].to_str().unwrap().to_string();
    // Another key cannot use that session.
    let other = s
        .sandbox
        .running
        .create_key(Scope::McpMutate, "other")
        .await
        .unwrap();
    let resp = post(
        Some(("authorization", format!("Bearer {}", other.expose()))),
        Some(session),
    )
    .await
    .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    // A session id this gateway never opened (or whose owner it forgot) is refused the same way,
    // whatever key comes with it, before rmcp sees it.
    let resp = post(
        Some(("x-api-key", key.expose().to_string())),
        Some("made-up-session".into()),
    )
    .await
    .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "session_not_found", "{body}");
}

#[tokio::test]
async fn twenty_concurrent_sessions() {
    let s = Arc::new(setup().await);
    let keys: Vec<Secret> = {
        let mut keys = vec![s.sandbox.key(Scope::McpMutate)];
        for name in ["agent-0", "agent-1", "agent-2"] {
            keys.push(
                s.sandbox
                    .running
                    .create_key(Scope::McpMutate, name)
                    .await
                    .unwrap(),
            );
        }
        keys
    };
    let runs = (0..20).map(|i| {
        let (s, key) = (s.clone(), keys[i % keys.len()].clone());
        tokio::spawn(async move {
            let c = connect(&s, &key).await;
            let r = call(&c, "service_whoami", json!({})).await;
            assert_eq!(r.is_error, Some(false), "{}", text(&r));
            let id = propose(&s, &c).await;
            c.cancel().await.unwrap();
            id
        })
    });
    let mut ids = Vec::new();
    for r in futures::future::join_all(runs).await {
        ids.push(r.unwrap());
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 20);
    assert_eq!(s.inbox("pending").await.len(), 20);
}

#[tokio::test]
async fn a_key_given_twice_in_a_tools_arguments_is_refused_naming_it_before_rmcp_reads_it() {
    let s = setup().await;
    let url = format!("{}/mcp", s.gate.base_url());
    let key = s.sandbox.key(Scope::McpMutate);
    let http = reqwest::Client::new();
    let post = |body: String, session: Option<String>| {
        let mut req = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("x-api-key", key.expose())
            .body(body);
        if let Some(id) = session {
            req = req
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-06-18");
        }
        req.send()
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let ok = post(init.to_string(), None).await.unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
    let session = ok.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let resp = post(initialized.to_string(), Some(session.clone()))
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());

    let signal = serde_json::to_value(long_btc(&s.sandbox.running.messenger_id)).unwrap();
    let call = |arguments: String| {
        format!(
            r#"{{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {{"name": "service_propose_trade", "arguments": {arguments}}}}}"#
        )
    };
    // The direction twice: which one would rmcp have kept?
    let twice = signal.to_string().replacen('{', r#"{"d": "short", "#, 1);
    let resp = post(call(twice), Some(session.clone())).await.unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_body", "{body}");
    assert!(
        body["error"]["field"]
            .as_str()
            .is_some_and(|f| f.ends_with("arguments.d")),
        "the key is named: {body}"
    );
    assert_eq!(
        upstream_count(&s, "propose_trade"),
        0,
        "nothing reached the service"
    );

    // The same call with the key once goes through, on the same session.
    let resp = post(call(signal.to_string()), Some(session)).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let _ = resp.bytes().await;
    assert_eq!(upstream_count(&s, "propose_trade"), 1);
}

#[tokio::test]
async fn a_suspended_agents_tool_calls_are_refused_as_over_rest_and_stage_nothing() {
    let s = setup().await;
    let key = s.sandbox.key(Scope::Legacy);
    let c = connect(&s, &key).await;
    propose(&s, &c).await;
    let (st, body) = s
        .supervisor(
            reqwest::Method::POST,
            &format!("/gate/v1/agents/{}/suspend", key.fingerprint()),
            Some(json!({"reason": "drill"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let rows = |table: &str| -> i64 {
        agentdesk::sandbox::store::Store::open(&s.sandbox.db)
            .unwrap()
            .conn
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
            .unwrap()
    };
    let (proposals, fills) = (rows("proposals"), rows("fills"));
    let signal = serde_json::to_value(long_btc(&s.sandbox.running.messenger_id)).unwrap();
    for tool in ["service_propose_trade", "service_place_order"] {
        let r = call(&c, tool, signal.clone()).await;
        assert_eq!(r.is_error, Some(true), "{tool}: {}", text(&r));
        assert!(
            text(&r).contains("suspended") && text(&r).contains("drill"),
            "{tool}: {}",
            text(&r)
        );
    }
    assert_eq!((rows("proposals"), rows("fills")), (proposals, fills));
    assert_eq!(s.inbox("pending").await.len(), 1);
}
