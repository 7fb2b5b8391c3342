//! The supervision gateway over loopback: a sandbox upstream, the gateway in-process, agents as HTTP
//! clients of the gateway with their own keys.

use crate::common::{self, TestServer};
use agentdesk::api::model::TradeSignal;
use agentdesk::api::{Client, Scope};
use agentdesk::gateway::rules::policy::GateSettings;
use agentdesk::gateway::{GATEWAY_HEADER, Running};
use agentdesk::secret::Secret;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::PathBuf;

mod attacks;
mod config;
mod console_client;
mod console_outcome;
mod controls;
mod guard;
mod link_page;
mod links;
mod long_poll;
mod mcp;
mod openapi;
mod policy_view;
mod postgres;
mod rate_limit;
mod reconcile;
mod roles;
mod step_up;
mod suspend;
mod tool_catalog;
mod wire;

struct Setup {
    sandbox: TestServer,
    gate: Running,
    gate_db: PathBuf,
    token: Secret,
    _dir: tempfile::TempDir,
}

async fn setup() -> Setup {
    let sandbox = common::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gate_db = dir.path().join("gateway.db");
    let gate = common::start_gateway(
        &sandbox.base_url(),
        &sandbox.clock,
        &gate_db,
        GateSettings::default(),
        None,
    )
    .await;
    let token = gate.mint_token("alice").await.unwrap();
    Setup {
        sandbox,
        gate,
        gate_db,
        token,
        _dir: dir,
    }
}

/// A gateway in front of `upstream` with these settings (and the directory its store is in).
pub(super) async fn gateway_before(
    upstream: SocketAddr,
    settings: GateSettings,
) -> (Running, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let clock = agentdesk::sandbox::TestClock::new(common::t0());
    let gate = common::start_gateway(
        &format!("http://{upstream}"),
        &clock,
        &dir.path().join("g.db"),
        settings,
        None,
    )
    .await;
    (gate, dir)
}

impl Setup {
    fn agent(&self, key: &Secret) -> Client {
        Client::new(&self.gate.base_url(), Some(key.clone())).unwrap()
    }

    async fn restart_gate(self) -> Setup {
        let Setup {
            sandbox,
            gate,
            gate_db,
            token,
            _dir,
        } = self;
        gate.shutdown().await;
        let gate = common::start_gateway(
            &sandbox.base_url(),
            &sandbox.clock,
            &gate_db,
            GateSettings::default(),
            None,
        )
        .await;
        Setup {
            sandbox,
            gate,
            gate_db,
            token,
            _dir,
        }
    }

    async fn supervisor(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        send(
            &self.gate.base_url(),
            method,
            path,
            Some(self.token.expose()),
            body,
        )
        .await
    }

    async fn inbox(&self, status: &str) -> Vec<Value> {
        let (st, body) = self
            .supervisor(
                reqwest::Method::GET,
                &format!("/gate/v1/inbox?status={status}"),
                None,
            )
            .await;
        assert_eq!(st, StatusCode::OK, "{body}");
        body["items"].as_array().unwrap().clone()
    }

    /// How many times the upstream was asked to execute this proposal (its audit log records every
    /// confirm attempt).
    fn upstream_confirms(&self, proposal_id: &str) -> i64 {
        agentdesk::sandbox::store::Store::open(&self.sandbox.db)
            .unwrap()
            .conn
            .query_row(
                "SELECT COUNT(*) FROM audit_logs WHERE operation = 'confirm_trade' AND proposal_id = ?1",
                [proposal_id],
                |r| r.get(0),
            )
            .unwrap()
    }
}

async fn send(
    base: &str,
    method: reqwest::Method,
    path: &str,
    key: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = reqwest::Client::new().request(method, format!("{base}{path}"));
    if let Some(key) = key {
        req = req.header("x-api-key", key);
    }
    if let Some(body) = body {
        req = req.json(&body);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn long_btc(messenger_id: &str) -> TradeSignal {
    TradeSignal {
        id: Some(messenger_id.into()),
        strategy: Some("Agent".into()),
        a: Some("BTCUSDT".into()),
        d: Some("long".into()),
        o: Some("market".into()),
        size_usd: Some(2_000.0),
        ..Default::default()
    }
}

async fn confirm(s: &Setup, key: &Secret, proposal_id: &str) -> (StatusCode, Value) {
    send(
        &s.gate.base_url(),
        reqwest::Method::POST,
        "/api/delegated/confirm",
        Some(key.expose()),
        Some(json!({"proposalId": proposal_id})),
    )
    .await
}

fn db_bytes(path: &std::path::Path) -> Vec<u8> {
    let mut all = Vec::new();
    for suffix in ["", "-wal", "-shm"] {
        let file = PathBuf::from(format!("{}{suffix}", path.display()));
        if let Ok(bytes) = std::fs::read(&file) {
            all.extend(bytes);
        }
    }
    all
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn two_agents_stage_a_human_approves_once_rejects_and_the_inbox_survives_a_restart() {
    let s = setup().await;
    let key_a = s.sandbox.key(Scope::McpMutate);
    let key_b = s
        .sandbox
        .running
        .create_key(Scope::McpMutate, "agent-b")
        .await
        .unwrap();
    let (a, b) = (s.agent(&key_a), s.agent(&key_b));
    let who = a.whoami(false).await.unwrap();
    let pa = a.propose_trade(&long_btc(&who.messenger_id)).await.unwrap();
    let pb = b.propose_trade(&long_btc(&who.messenger_id)).await.unwrap();
    assert!(pa.proposal_id.starts_with("prop_") && pb.proposal_id.starts_with("prop_"));

    // The agent's own confirm is held.
    let (st, body) = confirm(&s, &key_a, &pa.proposal_id).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "human_approval_required");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("agentdesk")
    );
    // Another agent cannot collect it either.
    let (st, body) = confirm(&s, &key_b, &pa.proposal_id).await;
    assert_eq!(st, StatusCode::FORBIDDEN);
    assert_eq!(body["error"]["code"], "proposal_key_mismatch");
    assert_eq!(s.upstream_confirms(&pa.proposal_id), 0);

    // The supervisor sees both, labelled by agent.
    let items = s.inbox("pending").await;
    assert_eq!(items.len(), 2, "{items:?}");
    let item_a = items
        .iter()
        .find(|i| i["proposalId"] == pa.proposal_id.as_str())
        .unwrap();
    let item_b = items
        .iter()
        .find(|i| i["proposalId"] == pb.proposal_id.as_str())
        .unwrap();
    assert_eq!(item_a["agent"], key_a.fingerprint());
    assert_eq!(item_b["agent"], key_b.fingerprint());
    assert_eq!(item_a["account"], who.messenger_id.as_str());
    assert_eq!(item_a["kind"], "trade");
    assert_eq!(item_a["status"], "pending");
    assert_eq!(item_a["request"]["a"], "BTCUSDT");
    assert_eq!(item_a["preview"]["coin"], "BTC");
    assert_eq!(
        item_a["expiresAt"],
        pa.expires_at
            .unwrap()
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    // Newest first.
    assert_eq!(items[0]["proposalId"], pb.proposal_id.as_str());

    // Fifty concurrent approvals: one upstream confirm.
    let id_a = item_a["id"].as_str().unwrap().to_string();
    let approvals = (0..50).map(|_| {
        let (base, token, id) = (
            s.gate.base_url(),
            s.token.expose().to_string(),
            id_a.clone(),
        );
        tokio::spawn(async move {
            send(
                &base,
                reqwest::Method::POST,
                &format!("/gate/v1/inbox/{id}/approve"),
                Some(&token),
                None,
            )
            .await
        })
    });
    for answer in futures::future::join_all(approvals).await {
        let (st, body) = answer.unwrap();
        assert_eq!(st, StatusCode::OK, "{body}");
        assert_eq!(body["item"]["status"], "executed", "{body}");
        assert_eq!(body["item"]["decidedBy"], "alice");
    }
    assert_eq!(s.upstream_confirms(&pa.proposal_id), 1);
    assert_eq!(
        s.sandbox
            .legacy()
            .get_positions()
            .await
            .unwrap()
            .positions
            .len(),
        1
    );

    // The agent's confirm now answers the execution, every time, without another upstream call.
    for _ in 0..2 {
        let (st, body) = confirm(&s, &key_a, &pa.proposal_id).await;
        assert_eq!(st, StatusCode::OK, "{body}");
        assert_eq!(body["status"], "executed");
        assert_eq!(body["proposalId"], pa.proposal_id.as_str());
        assert_eq!(body["execution"]["fills"].as_array().unwrap().len(), 1);
    }
    let done = a.confirm_trade(&pa.proposal_id).await.unwrap();
    assert_eq!(done.execution.fills.len(), 1);
    assert_eq!(s.upstream_confirms(&pa.proposal_id), 1);

    // Rejection, with the reason the agent is told; by proposalId, which the API accepts too.
    let (st, body) = s
        .supervisor(
            reqwest::Method::POST,
            &format!("/gate/v1/inbox/{}/reject", pb.proposal_id),
            Some(json!({"reason": "too large for today"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["status"], "rejected");
    let (st, body) = confirm(&s, &key_b, &pb.proposal_id).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "rejected_by_supervisor");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too large for today")
    );
    assert_eq!(s.upstream_confirms(&pb.proposal_id), 0);
    // A rejected item is not approved afterwards.
    let (st, body) = s
        .supervisor(
            reqwest::Method::POST,
            &format!("/gate/v1/inbox/{}/approve", pb.proposal_id),
            None,
        )
        .await;
    assert_eq!(st, StatusCode::CONFLICT, "{body}");

    assert!(s.inbox("pending").await.is_empty());
    let s = s.restart_gate().await;
    let all = s.inbox("all").await;
    assert_eq!(all.len(), 2);
    let statuses: Vec<_> = all.iter().map(|i| i["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, vec!["rejected", "executed"]);
    assert_eq!(all[1]["result"]["body"]["status"], "executed");
    assert_eq!(all[0]["reason"], "too large for today");
    // The executed answer survives the restart too.
    let (st, body) = confirm(&s, &key_a, &pa.proposal_id).await;
    assert_eq!((st, &body["status"]), (StatusCode::OK, &json!("executed")));

    let bytes = db_bytes(&s.gate_db);
    assert!(!bytes.is_empty());
    for secret in [&key_a, &key_b, &s.token] {
        assert!(
            !contains(&bytes, secret.expose()),
            "a plain key is in the gateway's database"
        );
    }
    // What it does keep is the fingerprint, so the inbox can name the agent.
    assert!(contains(&bytes, &key_a.fingerprint()));
}

#[tokio::test]
async fn an_approval_after_a_restart_waits_for_the_agent_and_runs_on_its_next_request() {
    let s = setup().await;
    let key = s.sandbox.key(Scope::McpMutate);
    let agent = s.agent(&key);
    let who = agent.whoami(false).await.unwrap();
    let p = agent
        .propose_trade(&long_btc(&who.messenger_id))
        .await
        .unwrap();
    let s = s.restart_gate().await;

    let (st, body) = s
        .supervisor(
            reqwest::Method::POST,
            &format!("/gate/v1/inbox/{}/approve", p.proposal_id),
            None,
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["status"], "approved");
    assert_eq!(body["item"]["note"], "waiting for the agent to reconnect");
    assert_eq!(s.upstream_confirms(&p.proposal_id), 0);

    // Any request of the agent brings its key back; the approved item then runs.
    let agent = s.agent(&key);
    agent.get_positions().await.unwrap();
    // It runs in the background after that request: poll, with room for a loaded machine.
    let start = std::time::Instant::now();
    loop {
        let status = s.inbox("all").await[0]["status"]
            .as_str()
            .unwrap()
            .to_string();
        if status == "executed" {
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "the approved item is {status}, not executed, 20 s after the agent's request"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(s.upstream_confirms(&p.proposal_id), 1);
    let done = agent.confirm_trade(&p.proposal_id).await.unwrap();
    assert_eq!(done.status, "executed");
    assert_eq!(s.upstream_confirms(&p.proposal_id), 1);
}

#[tokio::test]
async fn an_approved_item_runs_on_the_agents_confirm_when_that_is_its_first_request() {
    let s = setup().await;
    let key = s.sandbox.key(Scope::McpMutate);
    let who = s.agent(&key).whoami(false).await.unwrap();
    let p = s
        .agent(&key)
        .propose_trade(&long_btc(&who.messenger_id))
        .await
        .unwrap();
    let s = s.restart_gate().await;
    let (st, _) = s
        .supervisor(
            reqwest::Method::POST,
            &format!("/gate/v1/inbox/{}/approve", p.proposal_id),
            None,
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    let (st, body) = confirm(&s, &key, &p.proposal_id).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "executed");
    assert_eq!(s.upstream_confirms(&p.proposal_id), 1);
}

#[tokio::test]
async fn pending_items_expire_with_the_proposal() {
    let s = setup().await;
    let key = s.sandbox.key(Scope::McpMutate);
    let who = s.agent(&key).whoami(false).await.unwrap();
    let p = s
        .agent(&key)
        .propose_trade(&long_btc(&who.messenger_id))
        .await
        .unwrap();
    s.sandbox.clock.advance(chrono::Duration::minutes(6));
    assert!(s.inbox("pending").await.is_empty());
    let expired = s.inbox("expired").await;
    assert_eq!(expired.len(), 1);
    let (st, body) = s
        .supervisor(
            reqwest::Method::POST,
            &format!("/gate/v1/inbox/{}/approve", p.proposal_id),
            None,
        )
        .await;
    assert_eq!(st, StatusCode::GONE, "{body}");
    let (st, body) = confirm(&s, &key, &p.proposal_id).await;
    assert_eq!(
        (st, &body["error"]["code"]),
        (StatusCode::GONE, &json!("proposal_expired"))
    );
    assert_eq!(s.upstream_confirms(&p.proposal_id), 0);
}

async fn tool(s: &Setup, key: &Secret, name: &str, args: Value) -> (StatusCode, Value) {
    send(
        &s.gate.base_url(),
        reqwest::Method::POST,
        "/api/delegated/mcp/tool",
        Some(key.expose()),
        Some(json!({"name": name, "args": args})),
    )
    .await
}

fn upstream_count(s: &Setup, operation: &str) -> i64 {
    agentdesk::sandbox::store::Store::open(&s.sandbox.db)
        .unwrap()
        .conn
        .query_row(
            "SELECT COUNT(*) FROM audit_logs WHERE operation = ?1",
            [operation],
            |r| r.get(0),
        )
        .unwrap()
}

#[tokio::test]
async fn a_mutate_tool_is_captured_by_its_confirm_token_and_runs_once_when_approved() {
    let s = setup().await;
    let key = s.sandbox.key(Scope::Legacy);
    let args = serde_json::to_value(long_btc(&s.sandbox.running.messenger_id)).unwrap();
    let (st, first) = tool(&s, &key, "service_place_order", args.clone()).await;
    assert_eq!(st, StatusCode::OK, "{first}");
    let token = first["result"]["confirmToken"]
        .as_str()
        .unwrap()
        .to_string();
    let items = s.inbox("pending").await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["kind"], "tool:service_place_order");
    assert_eq!(items[0]["request"]["args"]["a"], "BTCUSDT");

    let mut again = args.clone();
    again["confirmToken"] = json!(token);
    let (st, answer) = tool(&s, &key, "service_place_order", again.clone()).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{answer}");
    assert_eq!(answer["error"]["code"], "human_approval_required");
    assert_eq!(upstream_count(&s, "place_order"), 0);

    let id = items[0]["id"].as_str().unwrap();
    let (st, approved) = s
        .supervisor(
            reqwest::Method::POST,
            &format!("/gate/v1/inbox/{id}/approve"),
            None,
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{approved}");
    assert_eq!(approved["item"]["status"], "executed", "{approved}");
    assert_eq!(upstream_count(&s, "place_order"), 1);
    assert_eq!(
        s.sandbox
            .legacy()
            .get_positions()
            .await
            .unwrap()
            .positions
            .len(),
        1
    );
    let (st, answer) = tool(&s, &key, "service_place_order", again).await;
    assert_eq!(st, StatusCode::OK, "{answer}");
    assert_eq!(answer, approved["item"]["result"]["body"]);
    assert_eq!(upstream_count(&s, "place_order"), 1);
}

#[tokio::test]
async fn a_proposal_staged_through_a_tool_is_approved_like_any_other() {
    let s = setup().await;
    let key = s.sandbox.key(Scope::McpMutate);
    let args = serde_json::to_value(long_btc(&s.sandbox.running.messenger_id)).unwrap();
    let (st, first) = tool(&s, &key, "service_propose_trade", args.clone()).await;
    assert_eq!(st, StatusCode::OK, "{first}");
    assert!(s.inbox("all").await.is_empty(), "staging needs no approval");
    let mut again = args;
    again["confirmToken"] = first["result"]["confirmToken"].clone();
    let (st, staged) = tool(&s, &key, "service_propose_trade", again).await;
    assert_eq!(st, StatusCode::OK, "{staged}");
    let proposal = staged["result"]["proposalId"].as_str().unwrap().to_string();
    let items = s.inbox("pending").await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["proposalId"], proposal.as_str());
    assert_eq!(items[0]["kind"], "trade");

    // Neither route confirms it before a human did.
    let (st, body) = tool(
        &s,
        &key,
        "service_confirm_trade",
        json!({"proposalId": proposal}),
    )
    .await;
    assert_eq!(
        (st, &body["error"]["code"]),
        (StatusCode::FORBIDDEN, &json!("human_approval_required"))
    );
    let (st, body) = confirm(&s, &key, &proposal).await;
    assert_eq!(
        (st, &body["error"]["code"]),
        (StatusCode::FORBIDDEN, &json!("human_approval_required"))
    );

    let (st, _) = s
        .supervisor(
            reqwest::Method::POST,
            &format!("/gate/v1/inbox/{proposal}/approve"),
            None,
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    let (st, body) = confirm(&s, &key, &proposal).await;
    assert_eq!((st, &body["status"]), (StatusCode::OK, &json!("executed")));
    assert_eq!(s.upstream_confirms(&proposal), 1);
}

#[tokio::test]
async fn a_staged_close_is_captured_and_its_execution_held() {
    let s = setup().await;
    let key = s.sandbox.key(Scope::McpMutate);
    // A position to close, opened at the sandbox directly.
    let direct = s.sandbox.client(Scope::McpMutate);
    let p = direct
        .propose_trade(&long_btc(&s.sandbox.running.messenger_id))
        .await
        .unwrap();
    direct.confirm_trade(&p.proposal_id).await.unwrap();
    let base = s.gate.base_url();
    let (st, staged) = send(
        &base,
        reqwest::Method::POST,
        "/api/delegated/propose",
        Some(key.expose()),
        Some(json!({"id": s.sandbox.running.messenger_id, "action": "close_all"})),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{staged}");
    let proposal = staged["proposalId"].as_str().unwrap();
    let items = s.inbox("pending").await;
    assert_eq!(items[0]["kind"], "close_all");
    let (st, body) = send(
        &base,
        reqwest::Method::POST,
        "/api/delegated/positions/close",
        Some(key.expose()),
        Some(json!({"proposalId": proposal, "action": "close_all"})),
    )
    .await;
    assert_eq!(
        (st, &body["error"]["code"]),
        (StatusCode::FORBIDDEN, &json!("human_approval_required"))
    );
    // A close without a proposal is the upstream's to refuse, and it is passed on as it was.
    let body = json!({"action": "close_all"});
    let direct = send(
        &s.sandbox.base_url(),
        reqwest::Method::POST,
        "/api/delegated/positions/close",
        Some(key.expose()),
        Some(body.clone()),
    )
    .await;
    let through = send(
        &base,
        reqwest::Method::POST,
        "/api/delegated/positions/close",
        Some(key.expose()),
        Some(body),
    )
    .await;
    assert_eq!(direct.0, StatusCode::BAD_REQUEST);
    assert_eq!(through, direct);
}

#[tokio::test]
async fn quota_answers_keep_their_retry_after() {
    let sandbox = common::start_with(agentdesk::sandbox::Settings {
        daily_post_cap: 1,
        ..Default::default()
    })
    .await;
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
    let signal = serde_json::to_value(long_btc(&sandbox.running.messenger_id)).unwrap();
    let mut last = None;
    for _ in 0..3 {
        let resp = reqwest::Client::new()
            .post(format!("{}/api/delegated/propose", gate.base_url()))
            .header("x-api-key", key.expose())
            .json(&signal)
            .send()
            .await
            .unwrap();
        last = Some((resp.status(), resp.headers().get("retry-after").cloned()));
    }
    let (status, retry_after) = last.unwrap();
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    let secs: u64 = retry_after
        .expect("Retry-After passed on")
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(secs > 0);
}

#[tokio::test]
async fn immediate_trades_need_the_configs_permission() {
    let s = setup().await;
    let key = s.sandbox.key(Scope::Legacy);
    let who = s.sandbox.legacy().whoami(false).await.unwrap();
    let signal = serde_json::to_value(long_btc(&who.messenger_id)).unwrap();
    let (st, body) = send(
        &s.gate.base_url(),
        reqwest::Method::POST,
        "/api/v1/trades",
        Some(key.expose()),
        Some(signal.clone()),
    )
    .await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "staging_required_by_supervisor");
    assert!(
        s.sandbox
            .legacy()
            .get_positions()
            .await
            .unwrap()
            .positions
            .is_empty()
    );

    let allowed = GateSettings {
        allow_immediate: vec![key.fingerprint()],
        ..GateSettings::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let gate = common::start_gateway(
        &s.sandbox.base_url(),
        &s.sandbox.clock,
        &dir.path().join("g.db"),
        allowed,
        None,
    )
    .await;
    let (st, body) = send(
        &gate.base_url(),
        reqwest::Method::POST,
        "/api/v1/trades",
        Some(key.expose()),
        Some(signal.clone()),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(
        s.sandbox
            .legacy()
            .get_positions()
            .await
            .unwrap()
            .positions
            .len(),
        1
    );
    // The permission is this agent's, not everyone's.
    let other = s.sandbox.key(Scope::WebhookAlerts);
    let (st, body) = send(
        &gate.base_url(),
        reqwest::Method::POST,
        "/api/v1/trades",
        Some(other.expose()),
        Some(signal),
    )
    .await;
    assert_eq!(
        (st, &body["error"]["code"]),
        (
            StatusCode::FORBIDDEN,
            &json!("staging_required_by_supervisor")
        )
    );
}

#[tokio::test]
async fn upstream_answers_pass_through_unchanged_and_the_gateway_speaks_for_itself() {
    let s = setup().await;
    let (base, up) = (s.gate.base_url(), s.sandbox.base_url());
    // An upstream 4xx is passed on as it was: bad key, bad body.
    let mcp = s.sandbox.key(Scope::McpMutate).expose().to_string();
    for (method, path, key, body) in [
        (
            reqwest::Method::GET,
            "/api/delegated/whoami",
            "adk_wrong",
            None,
        ),
        (
            reqwest::Method::POST,
            "/api/delegated/propose",
            mcp.as_str(),
            Some(json!({"a": 5})),
        ),
    ] {
        let direct = send(&up, method.clone(), path, Some(key), body.clone()).await;
        let through = send(&base, method, path, Some(key), body).await;
        assert!(direct.0.is_client_error(), "{direct:?}");
        assert_eq!(through, direct);
    }
    // Reads stream through with the caller's key, and carry the gateway's mark.
    let key = s.sandbox.key(Scope::McpMutate);
    let resp = reqwest::Client::new()
        .get(format!("{base}/api/delegated/positions"))
        .header("x-api-key", key.expose())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()[GATEWAY_HEADER], "1");
    let r = reqwest::Client::new()
        .get(format!("{base}/api/delegated/backtests/job_missing"))
        .header("x-api-key", key.expose())
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::NOT_FOUND,
        "a path parameter reaches the upstream"
    );

    // Unknown paths are answered here.
    let (st, body) = send(
        &base,
        reqwest::Method::GET,
        "/api/delegated/nope",
        Some(key.expose()),
        None,
    )
    .await;
    assert_eq!(
        (st, &body["error"]["code"]),
        (StatusCode::NOT_FOUND, &json!("not_found"))
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/api/delegated/nope")
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("openapi.json"),
        "the gateway's own answer, not the upstream's: {body}"
    );

    // Bodies over the limit are refused before anything is forwarded.
    let big = "x".repeat(2 << 20);
    let (st, body) = send(
        &base,
        reqwest::Method::POST,
        "/api/delegated/propose",
        Some(key.expose()),
        Some(json!({"a": big})),
    )
    .await;
    assert_eq!(
        (st, &body["error"]["code"]),
        (StatusCode::PAYLOAD_TOO_LARGE, &json!("payload_too_large"))
    );
    assert!(s.inbox("all").await.is_empty());

    // The OpenAPI document is the interface plus the supervisor API.
    let (st, doc) = send(
        &base,
        reqwest::Method::GET,
        "/api/agent/openapi.json",
        None,
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    for path in [
        "/gate/v1/inbox",
        "/gate/v1/inbox/{id}/approve",
        "/gate/v1/inbox/{id}/reject",
        "/gate/v1/agents",
        "/gate/v1/policy",
        "/gate/v1/kill-switch",
        "/gate/v1/standing-approvals",
        "/gate/v1/standing-approvals/{id}",
        "/gate/v1/journal",
        "/gate/v1/inbox/{id}/check",
        "/api/delegated/propose",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} missing");
    }
    assert_eq!(doc["servers"][0]["url"], base.as_str());
}

#[tokio::test]
async fn the_supervisor_api_wants_a_token_and_lists_agents() {
    let s = setup().await;
    let base = s.gate.base_url();
    let agent_key = s.sandbox.key(Scope::McpMutate);
    for key in [
        None,
        Some("gst_00000000000000000000000000000000"),
        Some(agent_key.expose()),
    ] {
        for (method, path) in [
            (reqwest::Method::GET, "/gate/v1/inbox"),
            (reqwest::Method::GET, "/gate/v1/agents"),
            (reqwest::Method::POST, "/gate/v1/inbox/gi_x/approve"),
            (reqwest::Method::POST, "/gate/v1/inbox/gi_x/reject"),
        ] {
            let (st, body) = send(&base, method, path, key, None).await;
            assert_eq!(st, StatusCode::UNAUTHORIZED, "{path} {key:?}: {body}");
            assert_eq!(body["error"]["code"], "unauthorized");
        }
    }
    let (st, body) = s
        .supervisor(reqwest::Method::GET, "/gate/v1/inbox?status=maybe", None)
        .await;
    assert_eq!(
        (st, &body["error"]["field"]),
        (StatusCode::BAD_REQUEST, &json!("status"))
    );
    let (st, _) = s
        .supervisor(
            reqwest::Method::POST,
            "/gate/v1/inbox/gi_missing/approve",
            None,
        )
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);

    let (_, body) = s
        .supervisor(reqwest::Method::GET, "/gate/v1/agents", None)
        .await;
    assert_eq!(body["agents"], json!([]));
    // A key the upstream refuses is no agent.
    let (st, _) = send(
        &s.gate.base_url(),
        reqwest::Method::GET,
        "/api/delegated/positions",
        Some("adk_wrong"),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    let (_, body) = s
        .supervisor(reqwest::Method::GET, "/gate/v1/agents", None)
        .await;
    assert_eq!(body["agents"], json!([]));
    s.agent(&agent_key).get_positions().await.unwrap();
    let (st, body) = s
        .supervisor(reqwest::Method::GET, "/gate/v1/agents", None)
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let agents = body["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 1, "{body}");
    assert_eq!(agents[0]["account"], Value::Null, "learnt when it stages");
    assert_eq!(agents[0]["pending"], 0);
    let who = s.agent(&agent_key).whoami(false).await.unwrap();
    s.agent(&agent_key)
        .propose_trade(&long_btc(&who.messenger_id))
        .await
        .unwrap();
    let (_, body) = s
        .supervisor(reqwest::Method::GET, "/gate/v1/agents", None)
        .await;
    let agents = body["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 1, "{body}");
    assert_eq!(agents[0]["fingerprint"], agent_key.fingerprint());
    assert_eq!(agents[0]["account"], who.messenger_id.as_str());
    assert_eq!(agents[0]["connected"], true);
    assert_eq!(agents[0]["pending"], 1);

    // Something shaped like a token that is not one of ours is refused here, not sent upstream.
    let (st, body) = send(
        &s.gate.base_url(),
        reqwest::Method::GET,
        "/api/delegated/positions",
        Some("gst_00000000000000000000000000000000"),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("supervisor token"),
        "{body}"
    );
    // A supervisor token reads the account only with the gateway's own key, and never writes.
    let (st, body) = s
        .supervisor(reqwest::Method::GET, "/api/delegated/positions", None)
        .await;
    assert_eq!(
        (st, &body["error"]["code"]),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            &json!("upstream_key_not_configured")
        )
    );
    let dir = tempfile::tempdir().unwrap();
    let gate = common::start_gateway(
        &s.sandbox.base_url(),
        &s.sandbox.clock,
        &dir.path().join("g.db"),
        GateSettings::default(),
        Some(s.sandbox.key(Scope::McpMutate)),
    )
    .await;
    let token = gate.mint_token("").await.unwrap();
    let (st, body) = send(
        &gate.base_url(),
        reqwest::Method::GET,
        "/api/delegated/whoami",
        Some(token.expose()),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["messengerId"], s.sandbox.running.messenger_id.as_str());
    let (st, body) = send(
        &gate.base_url(),
        reqwest::Method::POST,
        "/api/delegated/propose",
        Some(token.expose()),
        Some(json!({})),
    )
    .await;
    assert_eq!(
        (st, &body["error"]["code"]),
        (StatusCode::FORBIDDEN, &json!("supervisor_token_read_only"))
    );
}

#[tokio::test]
async fn an_unreachable_upstream_is_a_502_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on, held so no other test's server is given it meanwhile.
    let (_held, port) = common::refused_port();
    let clock = agentdesk::sandbox::TestClock::new(common::t0());
    let gate = common::start_gateway(
        &format!("http://127.0.0.1:{port}"),
        &clock,
        &dir.path().join("g.db"),
        GateSettings::default(),
        None,
    )
    .await;
    for (method, path) in [
        (reqwest::Method::GET, "/api/delegated/whoami"),
        (reqwest::Method::POST, "/api/delegated/propose"),
    ] {
        let (st, body) = send(
            &gate.base_url(),
            method,
            path,
            Some("adk_any"),
            Some(json!({})),
        )
        .await;
        assert_eq!(st, StatusCode::BAD_GATEWAY, "{body}");
        assert_eq!(body["error"]["code"], "upstream_unreachable");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains(&port.to_string()),
            "{body}"
        );
    }
}

#[tokio::test]
async fn a_silent_upstream_is_a_504() {
    // Accepts connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            held.push(sock);
        }
    });
    let settings = GateSettings {
        timeout_secs: 1,
        ..GateSettings::default()
    };
    let (gate, _dir) = gateway_before(addr, settings).await;
    let (st, body) = send(
        &gate.base_url(),
        reqwest::Method::GET,
        "/api/delegated/whoami",
        Some("adk_any"),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::GATEWAY_TIMEOUT, "{body}");
    assert_eq!(body["error"]["code"], "upstream_timeout");
    hold.abort();
}

const BIN: &str = env!("CARGO_BIN_EXE_agentdesk");

struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn gate_cli(args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(BIN)
        .arg("gate")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[tokio::test]
async fn the_gate_command_serves_mints_tokens_and_names_agents() {
    use std::io::{BufRead, BufReader};
    let sandbox = common::start().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("gate.db");
    let db = db.to_str().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[gate]\nallow_immediate = [\"alice\"]\n").unwrap();
    let legacy = sandbox.key(Scope::Legacy);

    let mut child = std::process::Command::new(BIN)
        .args([
            "gate",
            "--upstream",
            &sandbox.base_url(),
            "--addr",
            "127.0.0.1:0",
            "--db",
            db,
        ])
        .args([
            "--config",
            config.to_str().unwrap(),
            "--upstream-key-env",
            "ADK_GATE_TEST_KEY",
        ])
        .env("ADK_GATE_TEST_KEY", sandbox.key(Scope::McpMutate).expose())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = Child(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{line:?}"))
        .to_string();
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");

    let (ok, token, err) = gate_cli(&["token", "--db", db, "--label", "bob"]);
    assert!(ok, "{err}");
    let token = token.strip_suffix('\n').unwrap();
    assert!(
        token.starts_with("gst_") && !token.contains(char::is_whitespace),
        "{token:?}"
    );
    assert!(!contains(&db_bytes(std::path::Path::new(db)), token));

    // The supervisor token reads the account with the gateway's own key.
    let (st, who) = send(
        &base,
        reqwest::Method::GET,
        "/api/delegated/whoami",
        Some(token),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{who}");

    // An immediate trade is refused until the agent is named as the config allows.
    let signal = serde_json::to_value(long_btc(&sandbox.running.messenger_id)).unwrap();
    let (st, body) = send(
        &base,
        reqwest::Method::POST,
        "/api/v1/trades",
        Some(legacy.expose()),
        Some(signal.clone()),
    )
    .await;
    assert_eq!(
        (st, &body["error"]["code"]),
        (
            StatusCode::FORBIDDEN,
            &json!("staging_required_by_supervisor")
        )
    );
    // An agent is known once the upstream accepted one of its requests.
    let (st, _) = send(
        &base,
        reqwest::Method::GET,
        "/api/delegated/whoami",
        Some(legacy.expose()),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    let (ok, _, err) = gate_cli(&["agent", "name", "--db", db, "zz", "alice"]);
    assert!(!ok && err.contains("fingerprint"), "{err}");
    let (ok, _, err) = gate_cli(&["agent", "name", "--db", db, "00000000", "alice"]);
    assert!(!ok && err.contains("no agent"), "{err}");
    let (ok, out, err) = gate_cli(&["agent", "name", "--db", db, &legacy.fingerprint(), "alice"]);
    assert!(ok, "{err}");
    assert!(out.contains("alice"), "{out}");
    let (st, body) = send(
        &base,
        reqwest::Method::POST,
        "/api/v1/trades",
        Some(legacy.expose()),
        Some(signal),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let (st, body) = send(
        &base,
        reqwest::Method::GET,
        "/gate/v1/agents",
        Some(token),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["agents"][0]["agent"], "alice");
    drop(child);

    let (ok, _, err) = gate_cli(&["--addr", "127.0.0.1:0", "--db", db]);
    assert!(!ok && err.contains("--upstream"), "{err}");
}

#[tokio::test]
async fn an_allowed_platform_order_keeps_its_idempotency_key() {
    let s = setup().await;
    let key = s.sandbox.key(Scope::PlatformTrade);
    let dir = tempfile::tempdir().unwrap();
    let allowed = GateSettings {
        allow_immediate: vec![key.fingerprint()],
        ..GateSettings::default()
    };
    let gate = common::start_gateway(
        &s.sandbox.base_url(),
        &s.sandbox.clock,
        &dir.path().join("g.db"),
        allowed,
        None,
    )
    .await;
    let order = |pct: f64| {
        json!({"pair": "BTC-USD", "side": "long", "orderType": "market", "sizingMode": "account",
               "accountPercentage": pct, "leverage": 2, "exchange": "venue"})
    };
    let post = |body: Value| {
        reqwest::Client::new()
            .post(format!("{}/api/v1/orders", gate.base_url()))
            .header("x-api-key", key.expose())
            .header("Idempotency-Key", "gate-order-1")
            .json(&body)
            .send()
    };
    let first: Value = post(order(5.0)).await.unwrap().json().await.unwrap();
    let again: Value = post(order(5.0)).await.unwrap().json().await.unwrap();
    assert_eq!(first["success"], true, "{first}");
    assert_eq!(again, first, "the retry is the same order");
    assert_eq!(
        s.sandbox
            .legacy()
            .get_positions()
            .await
            .unwrap()
            .positions
            .len(),
        1
    );
    let other = post(order(6.0)).await.unwrap();
    assert_eq!(other.status(), StatusCode::UNPROCESSABLE_ENTITY);
}

/// A TCP relay to the sandbox that can be cut: while off, it closes every connection, open or new,
/// as a crashed or restarting upstream does.
struct Relay {
    addr: std::net::SocketAddr,
    on: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Relay {
    async fn start(target: std::net::SocketAddr) -> Relay {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (on, watch) = tokio::sync::watch::channel(true);
        let task = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let mut watch = watch.clone();
                if !*watch.borrow() {
                    continue;
                }
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = watch.wait_for(|on| !on) => {}
                    }
                });
            }
        });
        Relay { addr, on, task }
    }

    fn set(&self, on: bool) {
        self.on.send_replace(on);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tokio::test]
async fn an_approval_while_the_upstream_is_down_is_kept_and_runs_once_it_is_back() {
    let sandbox = common::start().await;
    let relay = Relay::start(sandbox.running.addr).await;
    let dir = tempfile::tempdir().unwrap();
    let gate = common::start_gateway(
        &format!("http://{}", relay.addr),
        &sandbox.clock,
        &dir.path().join("g.db"),
        GateSettings::default(),
        None,
    )
    .await;
    let token = gate.mint_token("").await.unwrap();
    let key = sandbox.key(Scope::McpMutate);
    let agent = Client::new(&gate.base_url(), Some(key.clone())).unwrap();
    let p = agent
        .propose_trade(&long_btc(&sandbox.running.messenger_id))
        .await
        .unwrap();
    let approve = format!("/gate/v1/inbox/{}/approve", p.proposal_id);

    relay.set(false);
    let (st, body) = send(
        &gate.base_url(),
        reqwest::Method::POST,
        &approve,
        Some(token.expose()),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::BAD_GATEWAY, "{body}");
    assert_eq!(body["error"]["code"], "upstream_unreachable");
    let (_, inbox) = send(
        &gate.base_url(),
        reqwest::Method::GET,
        "/gate/v1/inbox?status=approved",
        Some(token.expose()),
        None,
    )
    .await;
    let item = &inbox["items"][0];
    assert_eq!(item["proposalId"], p.proposal_id.as_str(), "{inbox}");
    assert!(
        item["note"]
            .as_str()
            .unwrap()
            .contains("upstream_unreachable"),
        "{item}"
    );
    // The agent's confirm says so too, rather than pretending it ran.
    let (st, body) = send(
        &gate.base_url(),
        reqwest::Method::POST,
        "/api/delegated/confirm",
        Some(key.expose()),
        Some(json!({"proposalId": p.proposal_id})),
    )
    .await;
    assert_eq!(
        (st, &body["error"]["code"]),
        (StatusCode::BAD_GATEWAY, &json!("upstream_unreachable"))
    );

    relay.set(true);
    let (st, body) = send(
        &gate.base_url(),
        reqwest::Method::POST,
        &approve,
        Some(token.expose()),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["status"], "executed");
    assert!(body["item"].get("note").is_none(), "{body}");
    let done = agent.confirm_trade(&p.proposal_id).await.unwrap();
    assert_eq!(done.status, "executed");
    assert_eq!(
        sandbox
            .legacy()
            .get_positions()
            .await
            .unwrap()
            .positions
            .len(),
        1
    );
}

/// An upstream in the real deployment's observed shapes: errors as 200 `success: false`, the proposal
/// inside `data`, `expiresAt` as epoch seconds in a string, and a CSRF guard on POSTs.
async fn real_shaped_upstream(
    expires: chrono::DateTime<chrono::Utc>,
    confirms: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    use axum::http::HeaderMap;
    use axum::routing::{get, post};
    let csrf = |headers: &HeaderMap| headers.get("x-requested-with").is_some();
    let app = axum::Router::new()
        .route(
            "/api/delegated/whoami",
            get(|| async { axum::Json(json!({"success": true, "messengerId": "m-42"})) }),
        )
        .route(
            "/api/delegated/propose",
            post(
                move |headers: HeaderMap, body: axum::Json<Value>| async move {
                    use axum::response::IntoResponse;
                    if !csrf(&headers) {
                        return axum::Json(json!({"success": false, "error": "csrf"}))
                            .into_response();
                    }
                    // Compresses when the client offers it, as a deployment behind a proxy does (the
                    // bytes stand in for gzip: only a client that did not ask would be fooled).
                    if headers.contains_key("accept-encoding") {
                        return ([("content-encoding", "gzip")], vec![0x1f_u8, 0x8b, 0, 1])
                            .into_response();
                    }
                    if body["a"] == "FAIL" {
                        return axum::Json(json!({"success": false, "message": "market closed"}))
                            .into_response();
                    }
                    axum::Json(json!({"success": true, "data": {
                        "proposalId": "real-1",
                        "expiresAt": expires.timestamp().to_string(),
                        "preview": {"coin": "BTC", "notional": "2000.5"},
                    }}))
                    .into_response()
                },
            ),
        )
        .route(
            "/api/delegated/confirm",
            post(move |headers: HeaderMap| async move {
                if !csrf(&headers) {
                    return axum::Json(json!({"success": false, "error": "csrf"}));
                }
                confirms.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                axum::Json(json!({"success": true, "result": {"status": "filled"}}))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, task)
}

#[tokio::test]
async fn stagings_are_read_in_the_real_deployments_shapes() {
    let clock = agentdesk::sandbox::TestClock::new(common::t0());
    let expires = common::t0() + chrono::Duration::minutes(5);
    let confirms = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (addr, upstream) = real_shaped_upstream(expires, confirms.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let gate = common::start_gateway(
        &format!("http://{addr}"),
        &clock,
        &dir.path().join("g.db"),
        GateSettings::default(),
        None,
    )
    .await;
    let token = gate.mint_token("").await.unwrap();
    let base = gate.base_url();
    // Agents' HTTP clients offer compression by default.
    let propose = |a: &str| {
        let req = reqwest::Client::new()
            .post(format!("{base}/api/delegated/propose"))
            .header("x-api-key", "real_key_1")
            .header("accept-encoding", "gzip, deflate")
            .json(&json!({"a": a, "d": "long"}));
        async move {
            let resp = req.send().await.unwrap();
            (resp.status(), resp.json::<Value>().await.unwrap())
        }
    };
    // An error answered as 200 is passed on as it was, and stages nothing.
    let (st, body) = propose("FAIL").await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(body, json!({"success": false, "message": "market closed"}));
    let inbox = |path: &'static str| {
        send(
            &base,
            reqwest::Method::GET,
            path,
            Some(token.expose()),
            None,
        )
    };
    assert_eq!(
        inbox("/gate/v1/inbox?status=all").await.1["items"],
        json!([])
    );

    let (st, body) = propose("BTCUSDT").await;
    assert_eq!(
        (st, &body["data"]["proposalId"]),
        (StatusCode::OK, &json!("real-1"))
    );
    let (_, listed) = inbox("/gate/v1/inbox").await;
    let item = &listed["items"][0];
    assert_eq!(item["proposalId"], "real-1", "{listed}");
    assert_eq!(item["account"], "m-42");
    assert_eq!(item["kind"], "trade");
    assert_eq!(item["preview"]["notional"], "2000.5");
    assert_eq!(
        item["expiresAt"],
        expires.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    let (st, body) = send(
        &base,
        reqwest::Method::POST,
        "/gate/v1/inbox/real-1/approve",
        Some(token.expose()),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["status"], "executed", "{body}");
    assert_eq!(confirms.load(std::sync::atomic::Ordering::SeqCst), 1);
    upstream.abort();
}

#[tokio::test]
async fn answers_are_streamed_not_held_until_complete() {
    use axum::routing::get;
    // The upstream sends the first part of its answer at once and the rest only once the test
    // has read that part through the gateway: a gateway that held the answer until complete
    // never shows the first part, however long the test waits (no race with a fixed pause).
    let rest_may_go = std::sync::Arc::new(tokio::sync::Notify::new());
    let gate_rest = rest_may_go.clone();
    let app = axum::Router::new().route(
        "/api/delegated/logs",
        get(move || async move {
            let parts = futures::stream::unfold(0, move |n| {
                let gate_rest = gate_rest.clone();
                async move {
                    match n {
                        0 => Some((Ok::<_, std::io::Error>("{\"logs\": [".to_string()), 1)),
                        1 => {
                            gate_rest.notified().await;
                            Some((Ok("]}".to_string()), 2))
                        }
                        _ => None,
                    }
                }
            });
            axum::body::Body::from_stream(parts)
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let upstream = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let (gate, _dir) = gateway_before(addr, GateSettings::default()).await;
    let mut resp = reqwest::Client::new()
        .get(format!("{}/api/delegated/logs", gate.base_url()))
        .header("x-api-key", "adk_any")
        .send()
        .await
        .unwrap();
    let first = tokio::time::timeout(std::time::Duration::from_secs(20), resp.chunk())
        .await
        .expect("the first part arrives while the upstream holds back the rest")
        .unwrap()
        .unwrap();
    assert_eq!(&first[..], b"{\"logs\": [");
    rest_may_go.notify_one();
    let mut rest = Vec::new();
    while let Some(chunk) = resp.chunk().await.unwrap() {
        rest.extend_from_slice(&chunk);
    }
    assert_eq!(rest, b"]}");
    upstream.abort();
}

#[tokio::test]
async fn a_trade_a_chat_turn_prepared_is_staged_and_approved_through_the_gateway() {
    use agentdesk::api::model::ChatMessage;
    let s = setup().await;
    let key = s.sandbox.key(Scope::McpMutate);
    let agent = s.agent(&key);
    let reply = agent
        .mcp_agent_chat(&[ChatMessage {
            role: "user".into(),
            content: "go long 0.01 BTC".into(),
        }])
        .await
        .unwrap();
    let prepared = &reply.confirm_tokens[0];
    assert_eq!(prepared["tool"], "service_propose_trade");
    let mut args = prepared["args"].clone();
    args["confirmToken"] = prepared["confirmToken"].clone();
    let (st, staged) = tool(&s, &key, "service_propose_trade", args).await;
    assert_eq!(st, StatusCode::OK, "{staged}");
    let proposal = staged["result"]["proposalId"].as_str().unwrap().to_string();
    let items = s.inbox("pending").await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["proposalId"], proposal.as_str());
    let (st, body) = confirm(&s, &key, &proposal).await;
    assert_eq!(
        (st, &body["error"]["code"]),
        (StatusCode::FORBIDDEN, &json!("human_approval_required"))
    );
    let (st, body) = s
        .supervisor(
            reqwest::Method::POST,
            &format!("/gate/v1/inbox/{proposal}/approve"),
            None,
        )
        .await;
    assert_eq!(
        (st, &body["item"]["status"]),
        (StatusCode::OK, &json!("executed"))
    );
    assert_eq!(s.upstream_confirms(&proposal), 1);
}
