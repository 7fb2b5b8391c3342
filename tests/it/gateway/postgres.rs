//! Several gateway instances on one PostgreSQL database in front of one sandbox: one inbox, one
//! kill switch, one journal, and each approval executed upstream once.
//!
//! These need a server: `AGENTDESK_TEST_PG=postgres://user@host:port/db` (`.ci/run` starts one).
//! Without it each test says it was skipped, by name, and passes. Each test works in a schema of
//! its own, so they run in parallel.

use super::{gate_cli, long_btc, send};
use crate::common::{self, TestServer};
use agentdesk::api::{Client, Scope};
use agentdesk::gateway::store::{PostgresStore, Store};
use agentdesk::gateway::{GateDb, Running, journal};
use agentdesk::secret::Secret;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const TEST_PG: &str = "AGENTDESK_TEST_PG";

/// A fresh schema on the test server as a URL whose search path is that schema, or None (the skip
/// said past the harness's capture, so it shows in a passing run).
pub(super) async fn pg(test: &str) -> Option<String> {
    let Some(base) = std::env::var(TEST_PG).ok().filter(|v| !v.is_empty()) else {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "skipped: {test}: {TEST_PG} not set");
        return None;
    };
    Some(
        agentdesk::gateway::store::postgres::fresh_schema(&base, "t")
            .await
            .unwrap_or_else(|e| panic!("{TEST_PG}: {e}")),
    )
}

async fn instance(sandbox: &TestServer, url: &str) -> Running {
    // The path is not used: the store is the URL.
    common::start_gateway_with(
        &sandbox.base_url(),
        &sandbox.clock,
        std::path::Path::new("unused.db"),
        |c| c.db = GateDb::Postgres(url.to_string()),
    )
    .await
}

async fn supervisor(
    gate: &Running,
    token: &Secret,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    send(&gate.base_url(), method, path, Some(token.expose()), body).await
}

async fn inbox(gate: &Running, token: &Secret, status: &str) -> Vec<Value> {
    let path = format!("/gate/v1/inbox?status={status}");
    let (st, body) = supervisor(gate, token, Method::GET, &path, None).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    body["items"].as_array().unwrap().clone()
}

async fn status_of(gate: &Running, token: &Secret, proposal_id: &str) -> String {
    inbox(gate, token, "all")
        .await
        .iter()
        .find(|i| i["proposalId"] == proposal_id)
        .map(|i| i["status"].as_str().unwrap().to_string())
        .unwrap_or_default()
}

/// Asks until `f` holds or `within` has passed; true when it held.
async fn eventually<F, Fut>(within: Duration, mut f: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let until = Instant::now() + within;
    loop {
        if f().await {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// How many times the sandbox was asked to execute this proposal (its audit log records every
/// confirm attempt).
fn upstream_confirms(sandbox: &TestServer, proposal_id: &str) -> i64 {
    agentdesk::sandbox::store::Store::open(&sandbox.db)
        .unwrap()
        .conn
        .query_row(
            "SELECT COUNT(*) FROM audit_logs WHERE operation = 'confirm_trade' AND proposal_id = ?1",
            [proposal_id],
            |r| r.get(0),
        )
        .unwrap()
}

async fn stage(gate: &Running, key: &Secret) -> String {
    let agent = Client::new(&gate.base_url(), Some(key.clone())).unwrap();
    let who = agent.whoami(false).await.unwrap();
    agent
        .propose_trade(&long_btc(&who.messenger_id))
        .await
        .unwrap()
        .proposal_id
}

async fn approve(gate: &Running, token: &Secret, proposal_id: &str) -> (StatusCode, Value) {
    let path = format!("/gate/v1/inbox/{proposal_id}/approve");
    supervisor(gate, token, Method::POST, &path, None).await
}

#[tokio::test]
async fn two_instances_share_one_inbox_one_kill_switch_and_one_journal_and_execute_once() {
    let Some(url) =
        pg("two_instances_share_one_inbox_one_kill_switch_and_one_journal_and_execute_once").await
    else {
        return;
    };
    let sandbox = common::start().await;
    let (a, b) = (
        instance(&sandbox, &url).await,
        instance(&sandbox, &url).await,
    );
    // A token minted on one instance is good on the other: tokens live in the store.
    let token = a.mint_token("alice").await.unwrap();
    let key_1 = sandbox.key(Scope::McpMutate);
    let key_2 = sandbox
        .running
        .create_key(Scope::McpMutate, "agent-2")
        .await
        .unwrap();

    // Agents stage through both; the supervisor API on either lists every item.
    let p1 = stage(&a, &key_1).await;
    let p2 = stage(&b, &key_2).await;
    for gate in [&a, &b] {
        let pending = inbox(gate, &token, "pending").await;
        let ids: Vec<&Value> = pending.iter().map(|i| &i["proposalId"]).collect();
        assert!(
            ids.contains(&&json!(p1)) && ids.contains(&&json!(p2)),
            "{pending:?}"
        );
    }

    // Agent 1's key is held by both (a read through B): both may execute, and race to.
    Client::new(&b.base_url(), Some(key_1.clone()))
        .unwrap()
        .get_positions()
        .await
        .unwrap();
    let approvals = (0..100).map(|i| {
        let (base, token, p1) = (
            if i % 2 == 0 {
                a.base_url()
            } else {
                b.base_url()
            },
            token.clone(),
            p1.clone(),
        );
        tokio::spawn(async move {
            let path = format!("/gate/v1/inbox/{p1}/approve");
            send(&base, Method::POST, &path, Some(token.expose()), None).await
        })
    });
    for joined in futures::future::join_all(approvals).await {
        let (st, body) = joined.unwrap();
        assert_eq!(st, StatusCode::OK, "{body}");
        assert_eq!(body["item"]["status"], "executed", "{body}");
    }
    assert_eq!(upstream_confirms(&sandbox, &p1), 1);

    // Agent 2's key is only on B; approved on A, it runs on B at one of B's polls (every 0.5 s;
    // the deadline leaves room for a loaded machine).
    let (st, body) = approve(&a, &token, &p2).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert!(
        eventually(Duration::from_secs(20), || async {
            status_of(&a, &token, &p2).await == "executed"
        })
        .await,
        "{:?}",
        inbox(&a, &token, "all").await
    );
    assert_eq!(upstream_confirms(&sandbox, &p2), 1);
    let done = Client::new(&b.base_url(), Some(key_2.clone()))
        .unwrap()
        .confirm_trade(&p2)
        .await
        .unwrap();
    assert_eq!(done.status, "executed");
    assert_eq!(upstream_confirms(&sandbox, &p2), 1);

    // The kill switch set on A refuses a staging on B.
    let (st, body) = supervisor(
        &a,
        &token,
        Method::POST,
        "/gate/v1/kill-switch",
        Some(json!({"on": true, "reason": "venue incident"})),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let who = Client::new(&b.base_url(), Some(key_2.clone()))
        .unwrap()
        .whoami(false)
        .await
        .unwrap();
    let refused = eventually(Duration::from_secs(10), || async {
        let (st, body) = send(
            &b.base_url(),
            Method::POST,
            "/api/delegated/propose",
            Some(key_2.expose()),
            Some(serde_json::to_value(long_btc(&who.messenger_id)).unwrap()),
        )
        .await;
        st == StatusCode::FORBIDDEN && body["error"]["code"] == "kill_switch"
    })
    .await;
    assert!(refused, "B still stages with A's kill switch on");
    let (st, _) = supervisor(
        &b,
        &token,
        Method::POST,
        "/gate/v1/kill-switch",
        Some(json!({"on": false, "reason": "resolved"})),
    )
    .await;
    assert_eq!(st, StatusCode::OK);

    // Concurrent decisions on both instances keep one journal chain.
    let mut staged = Vec::new();
    for i in 0..8 {
        let (gate, key) = if i % 2 == 0 {
            (&a, &key_1)
        } else {
            (&b, &key_2)
        };
        staged.push(stage(gate, key).await);
    }
    let decisions = staged.iter().enumerate().map(|(i, p)| {
        let base = if i % 2 == 0 {
            b.base_url()
        } else {
            a.base_url()
        };
        let (token, p) = (token.clone(), p.clone());
        tokio::spawn(async move {
            let (verb, body) = if i % 4 < 2 {
                ("approve", None)
            } else {
                ("reject", Some(json!({"reason": "too big"})))
            };
            let path = format!("/gate/v1/inbox/{p}/{verb}");
            send(&base, Method::POST, &path, Some(token.expose()), body).await
        })
    });
    for joined in futures::future::join_all(decisions).await {
        let (st, body) = joined.unwrap();
        assert_eq!(st, StatusCode::OK, "{body}");
    }
    let store = PostgresStore::connect(&url).await.unwrap();
    let rows = store.journal(0, 10_000).await.unwrap();
    let n = journal::verify(&rows).unwrap();
    // Two approvals, a kill switch on and off, eight decisions.
    assert!(n >= 12, "{n} records");
    let (ok, out, err) = gate_cli(&["journal", "verify", "--store", &url]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), format!("journal ok: {n} records"));
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn a_killed_instance_leaves_the_other_serving_and_its_claims_are_taken_over() {
    let Some(url) =
        pg("a_killed_instance_leaves_the_other_serving_and_its_claims_are_taken_over").await
    else {
        return;
    };
    let sandbox = common::start().await;
    let (a, b) = (
        instance(&sandbox, &url).await,
        instance(&sandbox, &url).await,
    );
    let token = a.mint_token("alice").await.unwrap();
    let key = sandbox.key(Scope::McpMutate);
    let before = stage(&a, &key).await;
    let claimed = stage(&b, &key).await;
    // A claims an item for execution and dies before the upstream answered (as kill -9 would
    // leave it): the claim, as A would have written it, an hour old by the gateways' clock.
    let claimed_at = {
        use agentdesk::sandbox::Clock;
        sandbox.clock.now() - chrono::Duration::hours(1)
    };
    let store = PostgresStore::connect(&url).await.unwrap();
    let (client, _conn) = agentdesk::gateway::store::postgres::tls::connect(&url)
        .await
        .unwrap();
    client
        .execute(
            "UPDATE items SET status = 'executing', claimed_at = $2 WHERE proposal_id = $1",
            &[&claimed, &claimed_at],
        )
        .await
        .unwrap();
    let a_addr = a.addr;
    a.abort().await;
    assert!(
        reqwest::get(format!("http://{a_addr}/gate/v1/inbox"))
            .await
            .is_err(),
        "the killed instance still answers"
    );

    // B serves the inbox, including what was staged through A, and decides it.
    let all = inbox(&b, &token, "all").await;
    assert!(all.iter().any(|i| i["proposalId"] == before), "{all:?}");
    let (st, body) = approve(&b, &token, &before).await;
    assert_eq!(
        (st, &body["item"]["status"]),
        (StatusCode::OK, &json!("executed")),
        "{body}"
    );
    assert_eq!(upstream_confirms(&sandbox, &before), 1);

    // B takes the stale claim back to approved; the agent's confirm then runs it, once.
    assert!(
        eventually(Duration::from_secs(20), || async {
            store
                .item(agentdesk::gateway::store::ItemRef::Proposal(&claimed))
                .await
                .unwrap()
                .is_some_and(|i| i.status == agentdesk::gateway::store::Status::Approved)
        })
        .await
    );
    let done = Client::new(&b.base_url(), Some(key.clone()))
        .unwrap()
        .confirm_trade(&claimed)
        .await
        .unwrap();
    assert_eq!(done.status, "executed");
    assert_eq!(upstream_confirms(&sandbox, &claimed), 1);
    b.shutdown().await;
}

#[tokio::test]
async fn the_gate_subcommands_take_a_store_url() {
    let Some(url) = pg("the_gate_subcommands_take_a_store_url").await else {
        return;
    };
    let (ok, token, err) = gate_cli(&["token", "--store", &url, "--label", "bob"]);
    assert!(ok, "{err}");
    let store = PostgresStore::connect(&url).await.unwrap();
    let hash = agentdesk::gateway::sha256_hex(token.trim());
    assert_eq!(store.token(&hash).await.unwrap().unwrap().label, "bob");
    let now = chrono::Utc::now();
    store
        .agent_seen(&"ab".repeat(32), "abababab", now)
        .await
        .unwrap();
    let (ok, out, err) = gate_cli(&["agent", "name", "--store", &url, "abababab", "scalper"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "agent abababab is now \"scalper\"");
    assert_eq!(store.agents().await.unwrap()[0].label(), "scalper");
    // The config's `[gate] store` is where a subcommand without --store or --db looks.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, format!("[gate]\nstore = {url:?}\n")).unwrap();
    let config = config.to_str().unwrap();
    let (ok, out, err) = gate_cli(&["journal", "verify", "--config", config]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "journal ok: 0 records");
    let (ok, _, err) = gate_cli(&["token", "--config", config, "--label", "carol"]);
    assert!(ok, "{err}");
    let (ok, _, err) = gate_cli(&["journal", "verify", "--store", "/tmp/gateway.db"]);
    assert!(!ok);
    assert!(err.contains("--store takes a postgres:// URL"), "{err}");
    let (ok, _, err) = gate_cli(&["token", "--store", &url, "--db", "/tmp/g.db"]);
    assert!(!ok && err.contains("cannot be used with"), "{err}");
}

/// A managed PostgreSQL is reached over TLS with its certificate checked: `.ci/postgres.sh`
/// starts the test server with a certificate of its own CA and names it in
/// `AGENTDESK_TEST_PG_TLS` (`sslmode=verify-full&sslrootcert=...`).
#[tokio::test]
async fn postgres_over_tls_checks_the_certificate_it_is_given() {
    const TLS: &str = "AGENTDESK_TEST_PG_TLS";
    let Some(url) = std::env::var(TLS).ok().filter(|v| !v.is_empty()) else {
        eprintln!("skipped: postgres_over_tls_checks_the_certificate_it_is_given: {TLS} not set");
        return;
    };
    let url = agentdesk::gateway::store::postgres::fresh_schema(&url, "t")
        .await
        .unwrap();
    let store = PostgresStore::connect(&url).await.unwrap();
    let (client, _conn) = agentdesk::gateway::store::postgres::tls::connect(&url)
        .await
        .unwrap();
    let ssl: bool = client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(ssl, "the connection is not encrypted");
    drop(store);
    // The same server, its CA not named: the public roots do not vouch for it.
    let (base, _) = url.split_once('?').unwrap();
    let refused = PostgresStore::connect(&format!("{base}?sslmode=verify-full")).await;
    let e = refused.err().expect("an unknown CA is refused").to_string();
    assert!(
        e.to_lowercase().contains("certificate") || e.contains("tls"),
        "{e}"
    );
    // require encrypts without checking, as libpq does.
    PostgresStore::connect(&format!("{base}?sslmode=require"))
        .await
        .unwrap();
}

/// An instance keeps each listed item's answer; another instance's decision moves the row's
/// revision in the database, so the first one's next listing shows it, as the deciding one does.
#[tokio::test]
async fn a_listing_kept_by_one_instance_shows_a_decision_made_on_another() {
    let Some(url) = pg("a_listing_kept_by_one_instance_shows_a_decision_made_on_another").await
    else {
        return;
    };
    let sandbox = common::start().await;
    let (a, b) = (
        instance(&sandbox, &url).await,
        instance(&sandbox, &url).await,
    );
    let token = a.mint_token("alice").await.unwrap();
    let key = sandbox.key(Scope::McpMutate);
    let (first, second) = (stage(&a, &key).await, stage(&a, &key).await);
    for _ in 0..2 {
        assert_eq!(inbox(&a, &token, "pending").await.len(), 2);
        assert_eq!(status_of(&a, &token, &first).await, "pending");
    }
    let path = format!("/gate/v1/inbox/{first}/reject");
    let body = json!({"reason": "too large"});
    let (st, rejected) = supervisor(&b, &token, Method::POST, &path, Some(body)).await;
    assert_eq!(st, StatusCode::OK, "{rejected}");

    let pending = inbox(&a, &token, "pending").await;
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0]["proposalId"], second.as_str());
    let on = |listing: Vec<Value>| {
        listing
            .into_iter()
            .find(|i| i["proposalId"] == first.as_str())
            .unwrap()
    };
    let seen_by_a = on(inbox(&a, &token, "all").await);
    assert_eq!(seen_by_a["status"], "rejected");
    assert_eq!(seen_by_a["reason"], "too large");
    assert_eq!(seen_by_a, on(inbox(&b, &token, "rejected").await));
    assert_eq!(seen_by_a, rejected["item"]);
}

#[tokio::test]
async fn two_supervisors_approving_a_step_up_item_at_once_on_two_instances_execute_it_once() {
    let Some(url) =
        pg("two_supervisors_approving_a_step_up_item_at_once_on_two_instances_execute_it_once")
            .await
    else {
        return;
    };
    let sandbox = common::start().await;
    let (a, b) = (
        instance(&sandbox, &url).await,
        instance(&sandbox, &url).await,
    );
    let alice = a.mint_token("alice").await.unwrap();
    let bob = b
        .mint_token_as("bob", agentdesk::gateway::store::Role::Approver)
        .await
        .unwrap();
    let (st, body) = supervisor(
        &a,
        &alice,
        Method::PUT,
        "/gate/v1/policy",
        Some(json!({"step_up_notional_usd": 1000})),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let key = sandbox.key(Scope::McpMutate);
    // Both instances hold the agent's key: either approval may be the one that runs it.
    Client::new(&b.base_url(), Some(key.clone()))
        .unwrap()
        .get_positions()
        .await
        .unwrap();
    for round in 0..8 {
        let p = stage(if round % 2 == 0 { &a } else { &b }, &key).await;
        let (first, second) = tokio::join!(approve(&a, &alice, &p), approve(&b, &bob, &p));
        for (st, body) in [&first, &second] {
            assert_eq!(*st, StatusCode::OK, "round {round}: {body}");
        }
        let statuses = [&first.1["item"]["status"], &second.1["item"]["status"]];
        assert!(
            statuses.contains(&&json!("executed")),
            "round {round}: one of the two approvals is the second and runs it: {statuses:?}"
        );
        assert_eq!(upstream_confirms(&sandbox, &p), 1, "round {round}");
        let approvals = inbox(&a, &alice, "all")
            .await
            .into_iter()
            .find(|i| i["proposalId"] == p)
            .unwrap()["approvals"]
            .as_array()
            .unwrap()
            .len();
        assert_eq!(approvals, 2, "round {round}");
    }
}
