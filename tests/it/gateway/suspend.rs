//! Agents suspended one at a time: a suspended agent adds no exposure — its stagings and immediate
//! trades are refused before anything reaches the service and its pending items cannot be
//! approved — while its closes pass; an approver suspends, only an admin resumes; a suspension
//! outlives a restart. Judged on the sandbox's own tables, not on the gateway's answers.

use super::guard::{guarded, journal, passed, propose, trade};
use super::{Setup, gate_cli, send};
use crate::common;
use agentdesk::api::Scope;
use agentdesk::gateway::store::Role;
use agentdesk::secret::Secret;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// Rows of a table of the sandbox's database: what the service holds, whatever the gateway said.
fn service_rows(s: &Setup, table: &str) -> i64 {
    agentdesk::sandbox::store::Store::open(&s.sandbox.db)
        .unwrap()
        .conn
        .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

async fn as_token(
    s: &Setup,
    token: &Secret,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    send(
        &s.gate.base_url(),
        Method::POST,
        path,
        Some(token.expose()),
        body,
    )
    .await
}

async fn approve(s: &Setup, id: &str) -> (StatusCode, Value) {
    as_token(s, &s.token, &format!("/gate/v1/inbox/{id}/approve"), None).await
}

fn suspended(answer: &(StatusCode, Value), mentions: &[&str]) {
    let (st, body) = answer;
    assert_eq!(*st, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "agent_suspended", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    for m in mentions {
        assert!(message.contains(m), "{m:?} not in {message:?}");
    }
}

async fn agent_entry(s: &Setup, fingerprint: &str) -> Value {
    let (st, body) = s.supervisor(Method::GET, "/gate/v1/agents", None).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    body["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["fingerprint"] == fingerprint)
        .unwrap_or_else(|| panic!("{fingerprint} not in {body}"))
        .clone()
}

#[tokio::test]
async fn a_suspended_agent_stages_nothing_new_its_close_passes_and_a_resume_by_an_admin_ends_it() {
    let s = guarded(|_| {}).await;
    let key = s.sandbox.key(Scope::McpMutate);
    let other = s
        .sandbox
        .running
        .create_key(Scope::McpMutate, "agent-b")
        .await
        .unwrap();
    let fp = key.fingerprint();
    let approver = s.gate.mint_token_as("amy", Role::Approver).await.unwrap();
    let open = passed(&propose(&s, &key, trade("BTC", 1000.0)).await);
    let (st, body) = approve(&s, &open).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let waiting = passed(&propose(&s, &key, trade("ETH", 1000.0)).await);
    passed(&propose(&s, &other, trade("ETH", 500.0)).await);
    let entry = agent_entry(&s, &fp).await;
    assert_eq!(entry["state"], "active");
    // Today's executions, as the agents view shows them: the one approved above.
    assert_eq!(entry["executionsToday"], 1, "{entry}");
    let notional = entry["notionalToday"].as_f64().unwrap();
    assert!((900.0..=1100.0).contains(&notional), "{entry}");
    assert_eq!(
        agent_entry(&s, &other.fingerprint()).await["executionsToday"],
        0
    );

    // Read strictly: no reason, or a field the body does not have, suspends nobody.
    let path = format!("/gate/v1/agents/{fp}/suspend");
    for body in [json!({}), json!({"reason": "x", "until": "monday"})] {
        let (st, answer) = as_token(&s, &approver, &path, Some(body)).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{answer}");
    }
    let (st, answer) = as_token(
        &s,
        &approver,
        "/gate/v1/agents/nobody-here/suspend",
        Some(json!({"reason": "x"})),
    )
    .await;
    assert_eq!(
        (st, &answer["error"]["code"]),
        (StatusCode::NOT_FOUND, &json!("unknown_agent"))
    );
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nobody-here")
    );
    assert_eq!(agent_entry(&s, &fp).await["state"], "active");

    // An approver suspends it, by its fingerprint.
    let (st, answer) = as_token(
        &s,
        &approver,
        &path,
        Some(json!({"reason": "retries the same order in a loop"})),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{answer}");
    assert_eq!(answer["changed"], true);
    assert_eq!(answer["agents"][0]["state"], "suspended", "{answer}");
    let listed = agent_entry(&s, &fp).await;
    assert_eq!(listed["state"], "suspended", "{listed}");
    assert_eq!(
        listed["suspension"]["reason"],
        "retries the same order in a loop"
    );
    assert_eq!(listed["suspension"]["by"], "amy");
    assert!(listed["suspension"]["at"].is_string(), "{listed}");
    // The approve dialog's re-check says so before anyone presses y.
    let (st, check) = s
        .supervisor(
            Method::GET,
            &format!("/gate/v1/inbox/{waiting}/check"),
            None,
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{check}");
    assert_eq!(
        check["suspension"]["reason"], "retries the same order in a loop",
        "{check}"
    );
    assert_eq!(
        agent_entry(&s, &other.fingerprint()).await["state"],
        "active"
    );

    // Its new staging never reaches the service; the other agent's does.
    let (proposals, fills) = (service_rows(&s, "proposals"), service_rows(&s, "fills"));
    suspended(
        &propose(&s, &key, trade("BTC", 500.0)).await,
        &[&fp, "retries the same order in a loop", "amy"],
    );
    assert_eq!(service_rows(&s, "proposals"), proposals);
    passed(&propose(&s, &other, trade("BTC", 500.0)).await);
    assert_eq!(service_rows(&s, "proposals"), proposals + 1);

    // Its pending item cannot be approved, and stays pending.
    suspended(&approve(&s, &waiting).await, &[&fp]);
    assert_eq!(service_rows(&s, "fills"), fills);
    let pending = s.inbox("pending").await;
    assert!(
        pending.iter().any(|i| i["proposalId"] == waiting.as_str()),
        "{pending:?}"
    );

    // Its close is staged and executes.
    let close = passed(&propose(&s, &key, json!({"a": "BTCUSDT", "d": "close"})).await);
    let (st, body) = approve(&s, &close).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["status"], "executed", "{body}");
    assert_eq!(service_rows(&s, "fills"), fills + 1);
    assert!(
        s.sandbox
            .legacy()
            .get_positions()
            .await
            .unwrap()
            .positions
            .is_empty(),
        "the close ran on the service"
    );

    // Suspending again changes nothing and keeps the first reason.
    let (st, answer) = as_token(&s, &s.token, &path, Some(json!({"reason": "again"}))).await;
    assert_eq!(
        (st, &answer["changed"]),
        (StatusCode::OK, &json!(false)),
        "{answer}"
    );
    assert_eq!(
        agent_entry(&s, &fp).await["suspension"]["reason"],
        "retries the same order in a loop"
    );

    // Only an admin resumes.
    let resume = format!("/gate/v1/agents/{fp}/resume");
    let (st, answer) = as_token(&s, &approver, &resume, None).await;
    assert_eq!(
        (st, &answer["error"]["code"]),
        (StatusCode::FORBIDDEN, &json!("insufficient_role")),
        "{answer}"
    );
    assert_eq!(agent_entry(&s, &fp).await["state"], "suspended");
    let (st, answer) = as_token(&s, &s.token, &resume, None).await;
    assert_eq!(st, StatusCode::OK, "{answer}");
    assert_eq!(answer["agents"][0]["state"], "active", "{answer}");
    assert!(answer["agents"][0].get("suspension").is_none(), "{answer}");

    // Active again: it stages, and its waiting item is approved and fills.
    passed(&propose(&s, &key, trade("BTC", 500.0)).await);
    assert_eq!(service_rows(&s, "proposals"), proposals + 3);
    let (st, body) = approve(&s, &waiting).await;
    assert_eq!(
        (st, &body["item"]["status"]),
        (StatusCode::OK, &json!("executed")),
        "{body}"
    );
    assert_eq!(service_rows(&s, "fills"), fills + 2);

    let records = journal(&s).await;
    let of = |kind: &str| -> Vec<Value> {
        records
            .iter()
            .filter(|r| r["kind"] == kind)
            .cloned()
            .collect()
    };
    let (on, off) = (of("agent_suspend"), of("agent_resume"));
    assert_eq!((on.len(), off.len()), (1, 1), "{records:?}");
    assert_eq!(on[0]["actor"], "amy");
    assert_eq!(on[0]["detail"]["agent"], fp.as_str());
    assert_eq!(
        on[0]["detail"]["reason"],
        "retries the same order in a loop"
    );
    assert_eq!(off[0]["actor"], "alice");
    assert_eq!(off[0]["detail"]["fingerprint"], fp.as_str());
}

#[tokio::test]
async fn a_suspension_by_name_survives_a_restart() {
    let s = guarded(|_| {}).await;
    let key = s.sandbox.key(Scope::McpMutate);
    passed(&propose(&s, &key, trade("BTC", 500.0)).await);
    let db = s.gate_db.display().to_string();
    let (ok, _, err) = gate_cli(&["agent", "name", "--db", &db, &key.fingerprint(), "scalper"]);
    assert!(ok, "{err}");
    let (st, answer) = s
        .supervisor(
            Method::POST,
            "/gate/v1/agents/Scalper/suspend",
            Some(json!({"reason": "drawdown review"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{answer}");
    assert_eq!(answer["agents"][0]["agent"], "scalper", "{answer}");

    let s = s.restart_gate().await;
    let proposals = service_rows(&s, "proposals");
    suspended(
        &propose(&s, &key, trade("BTC", 500.0)).await,
        &["scalper", "drawdown review", "alice"],
    );
    assert_eq!(service_rows(&s, "proposals"), proposals);
    assert_eq!(
        agent_entry(&s, &key.fingerprint()).await["state"],
        "suspended"
    );
}

#[tokio::test]
async fn a_suspended_agents_immediate_trades_are_refused_unless_they_reduce() {
    let s = guarded(|c| {
        c.policy =
            agentdesk::gateway::rules::policy::Policy::from_json(&json!({"allow_immediate": true}))
                .unwrap();
    })
    .await;
    let key = s.sandbox.key(Scope::Legacy);
    let who = s.sandbox.legacy().whoami(false).await.unwrap();
    let mut signal = trade("BTC", 1000.0);
    signal["id"] = json!(who.messenger_id);
    let base = s.gate.base_url();
    let post = |path: &'static str, body: Value| {
        let (base, key) = (base.clone(), key.expose().to_string());
        async move { send(&base, Method::POST, path, Some(&key), Some(body)).await }
    };
    let (st, body) = post("/api/v1/trades", signal.clone()).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let fills = service_rows(&s, "fills");
    assert!(fills > 0);

    let (st, answer) = s
        .supervisor(
            Method::POST,
            &format!("/gate/v1/agents/{}/suspend", key.fingerprint()),
            Some(json!({"reason": "over-trading"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{answer}");
    let orders = service_rows(&s, "orders");
    suspended(
        &post("/api/v1/trades", signal.clone()).await,
        &["over-trading"],
    );
    let order = json!({"pair": "BTC-USD", "side": "long", "orderType": "market", "usdAmount": 500,
                       "leverage": 3, "exchange": "venue"});
    suspended(&post("/api/v1/orders", order).await, &["over-trading"]);
    assert_eq!(
        (service_rows(&s, "fills"), service_rows(&s, "orders")),
        (fills, orders)
    );

    // Its close goes through and the position is gone on the service.
    let mut close = signal;
    close["d"] = json!("close");
    let (st, body) = post("/api/v1/trades", close).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert!(service_rows(&s, "fills") > fills);
    assert!(
        s.sandbox
            .legacy()
            .get_positions()
            .await
            .unwrap()
            .positions
            .is_empty(),
        "the close ran on the service"
    );
}

/// The other gateway instance on the same PostgreSQL refuses the agent the first one suspended.
#[tokio::test]
async fn a_suspension_made_on_one_instance_refuses_on_the_other() {
    let Some(url) =
        super::postgres::pg("a_suspension_made_on_one_instance_refuses_on_the_other").await
    else {
        return;
    };
    let sandbox = common::start().await;
    let instance = |url: String| {
        let sandbox = &sandbox;
        async move {
            common::start_gateway_with(
                &sandbox.base_url(),
                &sandbox.clock,
                std::path::Path::new("unused.db"),
                |c| c.db = agentdesk::gateway::GateDb::Postgres(url),
            )
            .await
        }
    };
    let (a, b) = (instance(url.clone()).await, instance(url).await);
    let token = a.mint_token("alice").await.unwrap();
    let key = sandbox.key(Scope::McpMutate);
    let stage = |base: String| {
        let key = key.clone();
        async move {
            send(
                &base,
                Method::POST,
                "/api/delegated/propose",
                Some(key.expose()),
                Some(trade("BTC", 500.0)),
            )
            .await
        }
    };
    let (st, body) = stage(b.base_url()).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let waiting = body["proposalId"].as_str().unwrap().to_string();

    let (st, answer) = send(
        &a.base_url(),
        Method::POST,
        &format!("/gate/v1/agents/{}/suspend", key.fingerprint()),
        Some(token.expose()),
        Some(json!({"reason": "seen on A"})),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{answer}");

    let proposals = || -> i64 {
        agentdesk::sandbox::store::Store::open(&sandbox.db)
            .unwrap()
            .conn
            .query_row("SELECT COUNT(*) FROM proposals", [], |r| r.get(0))
            .unwrap()
    };
    let before = proposals();
    suspended(&stage(b.base_url()).await, &["seen on A"]);
    assert_eq!(proposals(), before);
    let fills = || -> i64 {
        agentdesk::sandbox::store::Store::open(&sandbox.db)
            .unwrap()
            .conn
            .query_row("SELECT COUNT(*) FROM fills", [], |r| r.get(0))
            .unwrap()
    };
    let (filled, path) = (fills(), format!("/gate/v1/inbox/{waiting}/approve"));
    suspended(
        &send(
            &b.base_url(),
            Method::POST,
            &path,
            Some(token.expose()),
            None,
        )
        .await,
        &["seen on A"],
    );
    assert_eq!(fills(), filled);

    // Resumed on B, A lets it stage again.
    let (st, answer) = send(
        &b.base_url(),
        Method::POST,
        &format!("/gate/v1/agents/{}/resume", key.fingerprint()),
        Some(token.expose()),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{answer}");
    let (st, body) = stage(a.base_url()).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(proposals(), before + 1);
}

#[tokio::test]
async fn an_item_approved_before_a_suspension_and_held_for_the_key_runs_only_after_the_resume() {
    let s = super::setup().await;
    let key = s.sandbox.key(Scope::McpMutate);
    let who = s.agent(&key).whoami(false).await.unwrap();
    let p = s
        .agent(&key)
        .propose_trade(&super::long_btc(&who.messenger_id))
        .await
        .unwrap();
    // Restarted: the approval waits for the agent's key.
    let s = s.restart_gate().await;
    let approve = format!("/gate/v1/inbox/{}/approve", p.proposal_id);
    let (st, body) = s.supervisor(Method::POST, &approve, None).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["note"], "waiting for the agent to reconnect");
    let fp = key.fingerprint();
    let (st, body) = s
        .supervisor(
            Method::POST,
            &format!("/gate/v1/agents/{fp}/suspend"),
            Some(json!({"reason": "drill"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    // The agent's read brings its key back: while suspended, the held item does not run.
    s.agent(&key).get_positions().await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(s.upstream_confirms(&p.proposal_id), 0);
    assert_eq!(s.inbox("all").await[0]["status"], "approved");
    // Resumed: it runs, once.
    let (st, body) = s
        .supervisor(Method::POST, &format!("/gate/v1/agents/{fp}/resume"), None)
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let start = std::time::Instant::now();
    while s.inbox("all").await[0]["status"] != "executed" {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "not executed 20 s after the resume"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(s.upstream_confirms(&p.proposal_id), 1);
}
