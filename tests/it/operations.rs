//! What an operator's tools ask of both servers: liveness, readiness (failing while the store or
//! the upstream is not there), Prometheus metrics, request ids carried end to end, and JSON logs.

use crate::common;
use agentdesk::api::Scope;
use agentdesk::gateway::rules::policy::GateSettings;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::sync::{Arc, Mutex};

const BIN: &str = env!("CARGO_BIN_EXE_agentdesk");

async fn get(
    url: &str,
    key: Option<&str>,
    id: Option<&str>,
) -> (StatusCode, String, Option<String>) {
    let mut req = reqwest::Client::new().get(url);
    if let Some(k) = key {
        req = req.header("x-api-key", k);
    }
    if let Some(id) = id {
        req = req.header("x-request-id", id);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    let rid = resp
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    (status, resp.text().await.unwrap(), rid)
}

#[tokio::test]
async fn both_servers_answer_health_readiness_and_metrics_without_a_key() {
    let sandbox = common::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gate = common::start_gateway(
        &sandbox.base_url(),
        &sandbox.clock,
        &dir.path().join("g.db"),
        GateSettings::default(),
        None,
    )
    .await;
    let key = sandbox.key(Scope::McpMutate);
    for base in [sandbox.base_url(), gate.base_url()] {
        let (st, body, _) = get(&format!("{base}/healthz"), None, None).await;
        assert_eq!(st, StatusCode::OK, "{base}: {body}");
        let (st, body, _) = get(&format!("{base}/readyz"), None, None).await;
        assert_eq!(st, StatusCode::OK, "{base}: {body}");
        assert!(body.contains("\"ready\""), "{body}");
        let (st, _, _) = get(
            &format!("{base}/api/delegated/positions"),
            Some(key.expose()),
            None,
        )
        .await;
        assert_eq!(st, StatusCode::OK);
        let (st, text, _) = get(&format!("{base}/metrics"), None, None).await;
        assert_eq!(st, StatusCode::OK);
        assert!(
            text.contains("agentdesk_http_requests_total")
                && text.contains("operation=\"get_positions\"")
                && text.contains("agentdesk_http_request_duration_seconds_bucket"),
            "{text}"
        );
    }
    // A staging, then the gateway's own figures: the inbox by status, decisions by kind, the
    // kill switch, agents connected, the upstream's latency.
    let agent = agentdesk::api::client::Client::new(&gate.base_url(), Some(key.clone())).unwrap();
    let who = agent.whoami(false).await.unwrap();
    let signal = agentdesk::api::model::TradeSignal {
        id: Some(who.messenger_id.clone()),
        a: Some("BTCUSDT".into()),
        d: Some("long".into()),
        size_usd: Some(100.0),
        ..Default::default()
    };
    agent.propose_trade(&signal).await.unwrap();
    let (_, text, _) = get(&format!("{}/metrics", gate.base_url()), None, None).await;
    for series in [
        "agentdesk_gateway_items{status=\"pending\"} 1",
        "agentdesk_gateway_kill_switch 0",
        "agentdesk_gateway_connected_agents",
        "agentdesk_gateway_decisions_total{kind=\"policy_change\"}",
        "agentdesk_gateway_upstream_duration_seconds_bucket",
    ] {
        assert!(text.contains(series), "{series} not in:\n{text}");
    }
}

/// The value of the series `name` whose labels include every `labels` pair, read back from the
/// Prometheus text (0 when absent).
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn request_counts_are_read_back_and_move_with_requests() {
    let sandbox = common::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gate = common::start_gateway(
        &sandbox.base_url(),
        &sandbox.clock,
        &dir.path().join("g.db"),
        GateSettings::default(),
        None,
    )
    .await;
    let key = sandbox.key(Scope::McpMutate);
    let labels = [
        ("server", "gateway"),
        ("operation", "get_positions"),
        ("status", "200"),
    ];
    let metrics = || async {
        get(&format!("{}/metrics", gate.base_url()), None, None)
            .await
            .1
    };
    let before = sample(&metrics().await, "agentdesk_http_requests_total", &labels);
    for _ in 0..3 {
        get(
            &format!("{}/api/delegated/positions", gate.base_url()),
            Some(key.expose()),
            None,
        )
        .await;
    }
    let text = metrics().await;
    let after = sample(&text, "agentdesk_http_requests_total", &labels);
    // Other tests in this process may add to the same series; ours are at least three.
    assert!(after - before >= 3.0, "{before} -> {after}\n{text}");
    let count = sample(
        &text,
        "agentdesk_http_request_duration_seconds_count",
        &labels[..2],
    );
    assert!(count >= 3.0, "{text}");
}

#[tokio::test]
async fn readiness_fails_while_the_upstream_or_the_store_is_not_there() {
    let (_hold, port) = common::refused_port();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("g.db");
    let clock = agentdesk::sandbox::TestClock::new(common::t0());
    let gate = common::start_gateway(
        &format!("http://127.0.0.1:{port}"),
        &clock,
        &db,
        GateSettings::default(),
        None,
    )
    .await;
    let (st, body, _) = get(&format!("{}/readyz", gate.base_url()), None, None).await;
    assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["store"], "ok");
    // What is down, not why: the reasons (addresses, errors) go to the log.
    assert_eq!(v["upstream"], "unavailable", "{v}");
    // The liveness probe still answers: the process is fine, its surroundings are not.
    let (st, _, _) = get(&format!("{}/healthz", gate.base_url()), None, None).await;
    assert_eq!(st, StatusCode::OK);

    // A store that does not answer what it is asked (its tables gone from under it) is not ready.
    let sandbox = common::start().await;
    let gate = common::start_gateway(
        &sandbox.base_url(),
        &sandbox.clock,
        &dir.path().join("g2.db"),
        GateSettings::default(),
        None,
    )
    .await;
    let db = rusqlite::Connection::open(dir.path().join("g2.db")).unwrap();
    db.execute_batch("ALTER TABLE items RENAME TO items_gone")
        .unwrap();
    let (st, body, _) = get(&format!("{}/readyz", gate.base_url()), None, None).await;
    assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body.contains("\"upstream\":\"ok\""), "{body}");
    db.execute_batch("ALTER TABLE items_gone RENAME TO items")
        .unwrap();
    let (st, body, _) = get(&format!("{}/readyz", gate.base_url()), None, None).await;
    assert_eq!(st, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn metrics_want_a_supervisor_token_once_the_gateway_faces_a_network() {
    let sandbox = common::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gate = common::start_gateway_with(
        &sandbox.base_url(),
        &sandbox.clock,
        &dir.path().join("g.db"),
        |c| c.public_url = Some("https://gate.example.com".into()),
    )
    .await;
    let (st, _, _) = get(&format!("{}/metrics", gate.base_url()), None, None).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    let token = gate.mint_token("ops").await.unwrap();
    let (st, text, _) = get(
        &format!("{}/metrics", gate.base_url()),
        Some(token.expose()),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    assert!(text.contains("agentdesk_gateway_items"), "{text}");
}

/// An upstream that records the request id of every call it gets.
async fn recording_upstream() -> (String, Arc<Mutex<Vec<(String, String)>>>) {
    use axum::routing::{get, post};
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = |seen: Arc<Mutex<Vec<(String, String)>>>, what: &'static str| {
        move |headers: axum::http::HeaderMap| {
            let id = headers
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            seen.lock().unwrap().push((what.to_string(), id));
            async move {
                match what {
                    "propose" => axum::Json(json!({"success": true, "proposalId": "p-1",
                        "expiresAt": "2026-06-01T12:05:00Z"})),
                    "confirm" => axum::Json(json!({"success": true, "status": "executed"})),
                    _ => axum::Json(json!({"success": true, "positions": []})),
                }
            }
        }
    };
    let app = axum::Router::new()
        .route(
            "/api/delegated/positions",
            get(record(seen.clone(), "positions")),
        )
        .route("/api/delegated/whoami", get(record(seen.clone(), "whoami")))
        .route(
            "/api/delegated/propose",
            post(record(seen.clone(), "propose")),
        )
        .route(
            "/api/delegated/confirm",
            post(record(seen.clone(), "confirm")),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), seen)
}

#[tokio::test]
async fn a_request_id_goes_from_the_caller_through_the_gateway_to_the_service() {
    let (upstream, seen) = recording_upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let clock = agentdesk::sandbox::TestClock::new(common::t0());
    let gate =
        common::start_gateway_with(&upstream, &clock, &dir.path().join("g.db"), |_| {}).await;
    let base = gate.base_url();
    // The caller's id is kept and answered; a read is forwarded with it.
    let (st, _, rid) = get(
        &format!("{base}/api/delegated/positions"),
        Some("agent-key-1"),
        Some("trace-abc-123"),
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(rid.as_deref(), Some("trace-abc-123"));
    // No id, or one that could forge log lines: a new one is made and answered.
    let (_, _, made) = get(&format!("{base}/healthz"), None, None).await;
    assert!(
        made.as_deref().is_some_and(|m| m.starts_with("req_")),
        "{made:?}"
    );
    let (_, _, replaced) = get(&format!("{base}/healthz"), None, Some(&"x".repeat(300))).await;
    assert!(
        replaced.as_deref().is_some_and(|m| m.starts_with("req_")),
        "{replaced:?}"
    );
    // A read is forwarded with the id it is answered with, the caller's or a new one.
    let positions = format!("{base}/api/delegated/positions");
    let (_, _, fresh) = get(&positions, Some("agent-key-1"), None).await;
    let (_, _, renewed) = get(&positions, Some("agent-key-1"), Some(&"x".repeat(300))).await;

    // A staging, then the supervisor's approval: the execution carries the approval's id.
    let resp = reqwest::Client::new()
        .post(format!("{base}/api/delegated/propose"))
        .header("x-api-key", "agent-key-1")
        .header("x-request-id", "stage-1")
        .json(&json!({"a": "BTCUSDT", "d": "long", "sizeUsd": "100"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let token = gate.mint_token("").await.unwrap();
    let resp = reqwest::Client::new()
        .post(format!("{base}/gate/v1/inbox/p-1/approve"))
        .header("x-api-key", token.expose())
        .header("x-request-id", "approve-7")
        .send()
        .await
        .unwrap();
    assert_eq!(
        resp.status(),
        StatusCode::OK,
        "{}",
        resp.text().await.unwrap()
    );
    let seen = seen.lock().unwrap().clone();
    for id in [
        "trace-abc-123",
        fresh.as_deref().unwrap(),
        renewed.as_deref().unwrap(),
    ] {
        assert!(id.len() <= 128, "{id}");
        assert!(
            seen.contains(&("positions".into(), id.into())),
            "{id}: {seen:?}"
        );
    }
    assert!(
        seen.contains(&("propose".into(), "stage-1".into())),
        "{seen:?}"
    );
    assert!(
        seen.contains(&("confirm".into(), "approve-7".into())),
        "{seen:?}"
    );
}

/// `agentdesk serve` with JSON logs on stderr (at `log`, else its default level) and a database
/// in `dir`: the process, its base URL and the keys it printed by scope.
fn serve_json(
    dir: &std::path::Path,
    log: Option<&str>,
) -> (
    std::process::Child,
    String,
    std::collections::HashMap<String, String>,
) {
    let mut cmd = std::process::Command::new(BIN);
    cmd.args([
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--log-format",
        "json",
        "--db",
    ])
    .arg(dir.join("s.db"))
    .env("HOME", dir)
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    match log {
        Some(filter) => cmd.env("AGENTDESK_LOG", filter),
        None => cmd.env_remove("AGENTDESK_LOG"),
    };
    let mut child = cmd.spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut keys = std::collections::HashMap::new();
    let base = loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "no listening line");
        if let Some(url) = line.trim().strip_prefix("listening on ") {
            break url.to_string();
        }
        if let [scope, k] = line.split_whitespace().collect::<Vec<_>>()[..] {
            keys.insert(scope.to_string(), k.to_string());
        }
    };
    (child, base, keys)
}

/// Stops the server and reads its stderr, every line JSON.
fn json_lines(mut child: std::process::Child) -> Vec<Value> {
    let _ = child.kill();
    let stderr = child.wait_with_output().unwrap().stderr;
    String::from_utf8_lossy(&stderr)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// Issue 34: at the default level the sandbox says every mutation (staging, execution) in one
/// line with the request id; it said nothing when it executed a trade.
#[tokio::test]
async fn the_sandbox_logs_every_staging_and_execution_with_its_request_id() {
    let dir = tempfile::tempdir().unwrap();
    let (child, base, keys) = serve_json(dir.path(), None);
    let key = keys
        .get("mcp:mutate")
        .expect("serve prints an mcp:mutate key")
        .clone();
    let http = reqwest::Client::new();
    let staged: Value = http
        .post(format!("{base}/api/delegated/propose"))
        .header("x-api-key", &key)
        .header("x-request-id", "stage-log-1")
        .json(&json!({"a": "BTCUSDT", "d": "long", "sizeUsd": "100", "leverage": 2}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = staged["proposalId"].as_str().unwrap().to_string();
    let resp = http
        .post(format!("{base}/api/delegated/confirm"))
        .header("x-api-key", &key)
        .header("x-request-id", "confirm-log-1")
        .json(&json!({"proposalId": id}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let lines = json_lines(child);
    for (rid, op) in [
        ("stage-log-1", "propose_trade"),
        ("confirm-log-1", "confirm_trade"),
    ] {
        assert!(
            lines.iter().any(|l| l["span"]["request_id"] == rid
                && l["fields"]["message"] == "mutation"
                && l["fields"]["op"] == op
                && l["fields"]["proposal"] == id.as_str()),
            "{op} with {rid}: {lines:#?}"
        );
    }
}

#[tokio::test]
async fn json_logs_carry_the_request_id_on_every_line_of_the_request() {
    let dir = tempfile::tempdir().unwrap();
    let (child, base, _) = serve_json(dir.path(), Some("warn,agentdesk::edge::requests=debug"));
    let (st, _, _) = get(&format!("{base}/healthz"), None, Some("log-me-42")).await;
    assert_eq!(st, StatusCode::OK);
    let lines = json_lines(child);
    let ours: Vec<&Value> = lines
        .iter()
        .filter(|l| l["span"]["request_id"] == "log-me-42")
        .collect();
    assert!(
        ours.len() >= 2,
        "request and response lines with the id: {lines:#?}"
    );
}

#[tokio::test]
async fn each_caller_has_its_own_rate_limit_answered_as_a_429_with_retry_after() {
    let sandbox = common::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gate = common::start_gateway_with(
        &sandbox.base_url(),
        &sandbox.clock,
        &dir.path().join("g.db"),
        |c| {
            c.settings.rate_limit_per_second = 1;
            c.settings.rate_limit_burst = 3;
        },
    )
    .await;
    let url = format!("{}/api/delegated/positions", gate.base_url());
    let (busy, calm) = (sandbox.key(Scope::McpMutate), sandbox.key(Scope::Legacy));
    for _ in 0..3 {
        let (st, body, _) = get(&url, Some(busy.expose()), None).await;
        assert_eq!(st, StatusCode::OK, "{body}");
    }
    let resp = reqwest::Client::new()
        .get(&url)
        .header("x-api-key", busy.expose())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&wait), "{wait}");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["success"], false);
    assert_eq!(body["error"]["code"], "rate_limited");
    // Reads take a shorter way through the gateway than stagings; both count in one bucket.
    let resp = reqwest::Client::new()
        .post(format!("{}/api/delegated/propose", gate.base_url()))
        .header("x-api-key", busy.expose())
        .json(&json!({"a": "BTCUSDT", "d": "long", "sizeUsd": "100"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    // Another key is not slowed by the first one's burst.
    let (st, _, _) = get(&url, Some(calm.expose()), None).await;
    assert_eq!(st, StatusCode::OK);
    // A sender that makes up a key for each request is held by its address (four times a
    // caller's limit): the made-up keys get no buckets of their own past it.
    let mut limited = false;
    for i in 0..20 {
        let (st, _, _) = get(&url, Some(&format!("made-up-{i}")), None).await;
        limited |= st == StatusCode::TOO_MANY_REQUESTS;
    }
    assert!(limited, "twenty made-up keys from one address went through");
}

/// Issue 34: one credential, read once the same way by the limiter, REST and MCP. The same key
/// spelled another way (a Bearer in any case, with extra spaces) is the same bucket; a junk
/// `x-api-key` beside the real Bearer is refused, never a fresh bucket.
#[tokio::test]
async fn a_key_spelled_another_way_is_the_same_bucket_and_two_keys_are_refused() {
    let sandbox = common::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gate = common::start_gateway_with(
        &sandbox.base_url(),
        &sandbox.clock,
        &dir.path().join("g.db"),
        |c| {
            c.settings.rate_limit_per_second = 1;
            c.settings.rate_limit_burst = 3;
        },
    )
    .await;
    let key = sandbox.key(Scope::McpMutate);
    let url = format!("{}/api/delegated/positions", gate.base_url());
    for _ in 0..3 {
        let (st, body, _) = get(&url, Some(key.expose()), None).await;
        assert_eq!(st, StatusCode::OK, "{body}");
    }
    for auth in [
        format!("Bearer {}", key.expose()),
        format!("bearer   {} ", key.expose()),
    ] {
        let resp = reqwest::Client::new()
            .post(format!("{}/mcp", gate.base_url()))
            .header("authorization", &auth)
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS, "{auth:?}");
    }
    let resp = reqwest::Client::new()
        .post(format!("{}/mcp", gate.base_url()))
        .header("authorization", format!("Bearer {}", key.expose()))
        .header("x-api-key", "junk-beside-it")
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let body: Value = resp.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("two different credentials"),
        "{body}"
    );
}

struct Proc(std::process::Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Spawns the binary and reads its stdout to the `listening on URL` line.
fn spawn_listening(cmd: &mut std::process::Command) -> (Proc, String) {
    let mut child = cmd.stdout(std::process::Stdio::piped()).spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let base = loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "no listening line");
        if let Some(url) = line.trim().strip_prefix("listening on ") {
            break url.to_string();
        }
    };
    // Keep draining stdout so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in out.lines() {});
    (Proc(child), base)
}

/// One request id, from the supervisor's approval through the real gateway binary to the real
/// sandbox binary's own JSON log lines of the confirm it executed.
#[tokio::test]
async fn a_request_id_is_followed_from_the_supervisor_api_to_the_sandboxs_log() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox_db = dir.path().join("s.db");
    let sandbox_log = dir.path().join("sandbox.log");
    let (mut serve, base) = spawn_listening(
        std::process::Command::new(BIN)
            .args([
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--log-format",
                "json",
                "--db",
            ])
            .arg(&sandbox_db)
            .env("AGENTDESK_LOG", "warn,agentdesk::edge::requests=debug")
            .env("HOME", dir.path())
            .stderr(std::fs::File::create(&sandbox_log).unwrap()),
    );
    let key = std::process::Command::new(BIN)
        .args(["keys", "create", "--scope", "mcp:mutate", "--db"])
        .arg(&sandbox_db)
        .output()
        .unwrap();
    let key = String::from_utf8(key.stdout).unwrap().trim().to_string();
    let gate_db = dir.path().join("g.db");
    let (_gate, gate) = spawn_listening(
        std::process::Command::new(BIN)
            .args(["gate", "--upstream", &base, "--addr", "127.0.0.1:0", "--db"])
            .arg(&gate_db)
            .env("HOME", dir.path())
            .stderr(std::process::Stdio::null()),
    );
    let token = std::process::Command::new(BIN)
        .args(["gate", "token", "--role", "approver", "--db"])
        .arg(&gate_db)
        .output()
        .unwrap();
    let token = String::from_utf8(token.stdout).unwrap().trim().to_string();

    let http = reqwest::Client::new();
    let who: Value = http
        .get(format!("{gate}/api/delegated/whoami"))
        .header("x-api-key", &key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let staged: Value = http
        .post(format!("{gate}/api/delegated/propose"))
        .header("x-api-key", &key)
        .json(&json!({"id": who["messengerId"], "a": "BTCUSDT", "d": "long", "sizeUsd": "100"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let proposal = staged["proposalId"]
        .as_str()
        .unwrap_or_else(|| panic!("{staged}"));
    let approved = http
        .post(format!("{gate}/gate/v1/inbox/{proposal}/approve"))
        .header("x-api-key", &token)
        .header("x-request-id", "follow-me-77")
        .send()
        .await
        .unwrap();
    assert_eq!(approved.headers()["x-request-id"], "follow-me-77");
    let approved: Value = approved.json().await.unwrap();
    assert_eq!(approved["item"]["status"], "executed", "{approved}");

    let _ = serve.0.kill();
    let _ = serve.0.wait();
    let log = std::fs::read_to_string(&sandbox_log).unwrap();
    let confirm: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["span"]["request_id"] == "follow-me-77")
        .collect();
    assert!(
        confirm
            .iter()
            .any(|l| l["span"]["path"] == "/api/delegated/confirm"),
        "the sandbox's log has no line of the confirm with the approval's id:\n{log}"
    );
}

/// A forwarded answer keeps the upstream's Content-Length instead of being re-chunked.
#[tokio::test]
async fn a_forwarded_answer_keeps_the_upstreams_content_length() {
    let sandbox = common::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gate = common::start_gateway(
        &sandbox.base_url(),
        &sandbox.clock,
        &dir.path().join("g.db"),
        GateSettings::default(),
        None,
    )
    .await;
    let key = sandbox.key(Scope::McpMutate);
    for base in [sandbox.base_url(), gate.base_url()] {
        let resp = reqwest::Client::new()
            .get(format!("{base}/api/delegated/positions"))
            .header("x-api-key", key.expose())
            .send()
            .await
            .unwrap();
        let declared = resp.headers().get("content-length").cloned();
        assert!(resp.headers().get("transfer-encoding").is_none(), "{base}");
        let body = resp.bytes().await.unwrap();
        assert_eq!(
            declared.and_then(|v| v.to_str().ok()?.parse::<usize>().ok()),
            Some(body.len()),
            "{base}"
        );
    }
}
