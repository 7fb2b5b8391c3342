//! Guardrails over loopback: policy rules and their verdicts, the re-check at approval, the kill
//! switch across a restart, standing approvals, the journal and its verification by the CLI, and a
//! signed notification on a local HTTPS receiver.

use super::{Setup, gate_cli, send, upstream_count};
use crate::common;
use agentdesk::api::Scope;
use agentdesk::api::webhook_sig;
use agentdesk::gateway::GateConfig;
use agentdesk::gateway::upstream::notify::Destination;
use agentdesk::secret::Secret;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// A sandbox, and a gateway with its own key for the account (the policy reads positions and PnL
/// with it), configured further by `f`.
pub(super) async fn guarded(f: impl FnOnce(&mut GateConfig)) -> Setup {
    let sandbox = common::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gate_db = dir.path().join("gateway.db");
    let own = sandbox
        .running
        .create_key(Scope::McpMutate, "gateway")
        .await
        .unwrap();
    let gate = common::start_gateway_with(&sandbox.base_url(), &sandbox.clock, &gate_db, |c| {
        c.upstream_key = Some(own);
        f(c);
    })
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

pub(super) async fn propose(s: &Setup, key: &Secret, body: Value) -> (StatusCode, Value) {
    send(
        &s.gate.base_url(),
        Method::POST,
        "/api/delegated/propose",
        Some(key.expose()),
        Some(body),
    )
    .await
}

pub(super) fn trade(coin: &str, size_usd: f64) -> Value {
    json!({"strategy": "Agent", "a": format!("{coin}USDT"), "d": "long", "o": "market",
           "sizeUsd": size_usd, "leverage": 3, "sl": "1"})
}

pub(super) async fn put_policy(s: &Setup, policy: Value) -> (StatusCode, Value) {
    s.supervisor(Method::PUT, "/gate/v1/policy", Some(policy))
        .await
}

pub(super) async fn approve(s: &Setup, id: &str, body: Option<Value>) -> (StatusCode, Value) {
    s.supervisor(Method::POST, &format!("/gate/v1/inbox/{id}/approve"), body)
        .await
}

pub(super) async fn journal(s: &Setup) -> Vec<Value> {
    let (st, body) = s.supervisor(Method::GET, "/gate/v1/journal", None).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    body["records"].as_array().unwrap().clone()
}

/// Asserts a 403 policy_violation naming `rule`, with every text in `mentions` in its message.
pub(super) fn refused(answer: &(StatusCode, Value), rule: &str, mentions: &[&str]) {
    let (st, body) = answer;
    assert_eq!(*st, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "policy_violation", "{body}");
    assert_eq!(body["error"]["rule"], rule, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    for m in mentions {
        assert!(message.contains(m), "{m:?} not in {message:?}");
    }
}

pub(super) fn passed(answer: &(StatusCode, Value)) -> String {
    let (st, body) = answer;
    assert_eq!(*st, StatusCode::OK, "{body}");
    body["proposalId"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn each_rule_refuses_naming_the_limit_and_the_value_and_passes_within_it() {
    let s = guarded(|_| {}).await;
    let key = s.sandbox.key(Scope::McpMutate);

    // A bad policy is refused whole, naming the key; the old one stays.
    let (st, body) = put_policy(&s, json!({"max_notional_usd": 5000, "max_levrage": 3})).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["code"], "invalid_policy");
    assert_eq!(body["error"]["field"], "policy.max_levrage");
    let (st, body) = s.supervisor(Method::GET, "/gate/v1/policy", None).await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(body["policy"], json!({}));

    let (st, body) = put_policy(
        &s,
        json!({
            "allowed_coins": ["BTC", "ETH"],
            "max_notional_usd": 3000,
            "max_leverage": 5,
            "require_stop_loss": true,
            "max_open_positions": 1,
            "max_daily_notional_usd": 4000,
        }),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let (_, body) = s.supervisor(Method::GET, "/gate/v1/policy", None).await;
    assert_eq!(body["policy"]["max_notional_usd"], 3000.0);
    assert_eq!(body["policy"]["allowed_coins"], json!(["BTC", "ETH"]));

    let before = upstream_count(&s, "propose_trade");
    refused(
        &propose(&s, &key, trade("SOL", 1000.0)).await,
        "allowed_coins",
        &["SOL", "BTC, ETH"],
    );
    refused(
        &propose(&s, &key, trade("BTC", 3500.0)).await,
        "max_notional_usd",
        &["3500.00 USD", "3000.00 USD"],
    );
    let mut high = trade("BTC", 1000.0);
    high["leverage"] = json!(10);
    refused(
        &propose(&s, &key, high).await,
        "max_leverage",
        &["10x", "5x"],
    );
    let mut naked = trade("BTC", 1000.0);
    naked.as_object_mut().unwrap().remove("sl");
    refused(
        &propose(&s, &key, naked).await,
        "require_stop_loss",
        &["stop loss"],
    );
    // Nothing refused reached the upstream.
    assert_eq!(upstream_count(&s, "propose_trade"), before);

    // Within every rule it passes, and the item carries each rule's verdict; 2900 of 3000 is near.
    let id = passed(&propose(&s, &key, trade("BTC", 2900.0)).await);
    let item = s.inbox("pending").await[0].clone();
    let verdicts = item["verdicts"].as_array().unwrap();
    let rules: Vec<&str> = verdicts
        .iter()
        .map(|v| v["rule"].as_str().unwrap())
        .collect();
    assert_eq!(
        rules,
        [
            "allowed_coins",
            "max_notional_usd",
            "max_leverage",
            "require_stop_loss",
            "max_open_positions",
            "max_daily_notional_usd"
        ]
    );
    assert!(verdicts.iter().all(|v| v["ok"] == true), "{verdicts:?}");
    // Judged on the service's preview of the staging: what will execute.
    let notional = &verdicts[1];
    assert_eq!(
        (&notional["limit"], &notional["value"], &notional["near"]),
        (&json!(3000.0), &item["preview"]["notional"], &json!(true))
    );
    let (st, body) = approve(&s, &id, None).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["status"], "executed");

    // One position open now: a second coin is one too many; the same coin adds none.
    refused(
        &propose(&s, &key, trade("ETH", 500.0)).await,
        "max_open_positions",
        &["2 open positions", "max_open_positions = 1"],
    );
    // About 2900 executed today (as the service priced it): 1500 more breaks the daily 4000.
    refused(
        &propose(&s, &key, trade("BTC", 1500.0)).await,
        "max_daily_notional_usd",
        &["exceeds", "4000.00 USD"],
    );
    passed(&propose(&s, &key, trade("BTC", 1000.0)).await);

    // Every policy change is journaled.
    let changes = journal(&s)
        .await
        .into_iter()
        .filter(|r| r["kind"] == "policy_change")
        .count();
    assert_eq!(
        changes, 2,
        "the config's empty policy at start, then the PUT"
    );
}

/// An upstream whose account lost 250.50 USD today (in the real deployment's string numbers), with
/// a BTC position open, and that stages whatever it is asked to.
async fn losing_upstream() -> String {
    use axum::routing::{get, post};
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let app = axum::Router::new()
        .route(
            "/api/delegated/pnl/summary",
            get(|| async { axum::Json(json!({"success": true, "pnl": {"today": "-250.50"}})) }),
        )
        .route(
            "/api/delegated/positions",
            get(|| async {
                axum::Json(json!({"success": true, "positions": [{"coin": "BTC", "szi": "0.1"}]}))
            }),
        )
        .route(
            "/api/delegated/whoami",
            get(|| async { axum::Json(json!({"success": true, "messengerId": "m-1"})) }),
        )
        .route(
            "/api/delegated/propose",
            post(|| async {
                let n = NEXT.fetch_add(1, Ordering::SeqCst);
                axum::Json(json!({"success": true, "proposalId": format!("p-{n}"),
                                  "expiresAt": "2026-06-01T12:05:00Z"}))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn past_the_daily_loss_limit_only_reducing_trades_pass() {
    let sandbox = common::start().await;
    let dir = tempfile::tempdir().unwrap();
    let upstream = losing_upstream().await;
    let db = dir.path().join("g.db");
    let gate = common::start_gateway_with(&upstream, &sandbox.clock, &db, |c| {
        c.upstream_key = Some(Secret::new(String::from("gateway-key")));
        c.policy = agentdesk::gateway::rules::policy::Policy::from_json(
            &json!({"daily_loss_limit_usd": 200, "max_open_positions": 2}),
        )
        .unwrap();
    })
    .await;
    let token = gate.mint_token("alice").await.unwrap();
    let base = gate.base_url();
    let post = |body: Value| {
        let base = base.clone();
        async move {
            send(
                &base,
                Method::POST,
                "/api/delegated/propose",
                Some("agent-key"),
                Some(body),
            )
            .await
        }
    };
    let answer = post(trade("ETH", 100.0)).await;
    refused(
        &answer,
        "daily_loss_limit_usd",
        &["-250.50 USD", "200.00 USD", "only reducing trades pass"],
    );
    assert_eq!(answer.1["error"]["rules"], json!(["daily_loss_limit_usd"]));
    // A close reduces: it passes.
    let (st, body) = post(json!({"a": "BTCUSDT", "d": "close"})).await;
    assert_eq!(st, StatusCode::OK, "{body}");

    // Under a wider limit the loss is near it, and the open position counts.
    let (st, body) = send(
        &base,
        Method::PUT,
        "/gate/v1/policy",
        Some(token.expose()),
        Some(json!({"daily_loss_limit_usd": 300, "max_open_positions": 2})),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let (st, body) = post(trade("ETH", 100.0)).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let (_, body) = send(
        &base,
        Method::GET,
        "/gate/v1/inbox",
        Some(token.expose()),
        None,
    )
    .await;
    let verdicts = &body["items"][0]["verdicts"];
    assert_eq!(verdicts[0]["rule"], "max_open_positions");
    assert_eq!(
        (&verdicts[0]["value"], &verdicts[0]["near"]),
        (&json!(2), &json!(true))
    );
    assert_eq!(verdicts[1]["rule"], "daily_loss_limit_usd");
    assert_eq!(
        (&verdicts[1]["value"], &verdicts[1]["near"]),
        (&json!(-250.5), &json!(true))
    );
    gate.shutdown().await;
}

#[tokio::test]
async fn an_approval_rechecks_the_live_account_and_needs_an_explicit_override() {
    let s = guarded(|c| {
        c.policy =
            agentdesk::gateway::rules::policy::Policy::from_json(&json!({"max_open_positions": 1}))
                .unwrap();
    })
    .await;
    let key = s.sandbox.key(Scope::McpMutate);
    // Both pass at staging: no position is open yet.
    let btc = passed(&propose(&s, &key, trade("BTC", 1000.0)).await);
    let eth = passed(&propose(&s, &key, trade("ETH", 1000.0)).await);
    let (st, body) = approve(&s, &btc, None).await;
    assert_eq!(
        (st, &body["item"]["status"]),
        (StatusCode::OK, &json!("executed"))
    );

    // Now ETH would be a second position: the check says so before anyone approves.
    let (st, check) = s
        .supervisor(Method::GET, &format!("/gate/v1/inbox/{eth}/check"), None)
        .await;
    assert_eq!(st, StatusCode::OK, "{check}");
    assert_eq!(check["needsOverride"], json!(["max_open_positions"]));
    assert_eq!(check["verdicts"][0]["value"], 2);
    assert_eq!(check["killSwitch"]["blocks"], false);
    let answer = approve(&s, &eth, None).await;
    refused(
        &answer,
        "max_open_positions",
        &["override", "max_open_positions"],
    );
    assert_eq!(upstream_count(&s, "confirm_trade"), 1);
    let (st, body) = approve(&s, &eth, Some(json!({"override": ["max_leverage"]}))).await;
    assert_eq!(
        st,
        StatusCode::FORBIDDEN,
        "overriding another rule is not enough: {body}"
    );

    // An approver may approve, not approve past a rule: the override is an admin's.
    let approver = s
        .gate
        .mint_token_as("amy", agentdesk::gateway::store::Role::Approver)
        .await
        .unwrap();
    let (st, body) = send(
        &s.gate.base_url(),
        Method::POST,
        &format!("/gate/v1/inbox/{eth}/approve"),
        Some(approver.expose()),
        Some(json!({"override": ["max_open_positions"]})),
    )
    .await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "insufficient_role", "{body}");
    assert_eq!(body["error"]["needed"], "admin", "{body}");
    assert_eq!(upstream_count(&s, "confirm_trade"), 1);

    let (st, body) = approve(&s, &eth, Some(json!({"override": ["max_open_positions"]}))).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["status"], "executed");
    let records = journal(&s).await;
    let last = records.last().unwrap();
    assert_eq!(last["kind"], "override");
    assert_eq!(last["actor"], "alice");
    assert_eq!(last["detail"]["overridden"], json!(["max_open_positions"]));
    assert_eq!(last["item"], body["item"]["id"]);
}

#[tokio::test]
async fn the_kill_switch_survives_a_restart_lets_closes_pass_and_refuses_opens() {
    let s = guarded(|_| {}).await;
    let key = s.sandbox.key(Scope::McpMutate);
    let open = passed(&propose(&s, &key, trade("BTC", 1000.0)).await);
    approve(&s, &open, None).await;
    let waiting = passed(&propose(&s, &key, trade("ETH", 1000.0)).await);

    let (st, body) = s
        .supervisor(
            Method::POST,
            "/gate/v1/kill-switch",
            Some(json!({"on": true})),
        )
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "a reason is required: {body}");
    let (st, body) = s
        .supervisor(
            Method::POST,
            "/gate/v1/kill-switch",
            Some(json!({"on": true, "reason": "venue incident"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");

    let s = s.restart_gate().await;
    let (_, body) = s
        .supervisor(Method::GET, "/gate/v1/kill-switch", None)
        .await;
    assert_eq!(body["killSwitch"]["on"], true, "{body}");
    assert_eq!(body["killSwitch"]["reason"], "venue incident");

    let before = upstream_count(&s, "propose_trade");
    let (st, body) = propose(&s, &key, trade("BTC", 500.0)).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "kill_switch");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("venue incident")
    );
    assert_eq!(upstream_count(&s, "propose_trade"), before);
    let (st, body) = approve(&s, &waiting, None).await;
    assert_eq!(
        (st, &body["error"]["code"]),
        (StatusCode::FORBIDDEN, &json!("kill_switch"))
    );

    // A close is staged and approved while the switch is on.
    let close = passed(&propose(&s, &key, json!({"a": "BTCUSDT", "d": "close"})).await);
    let (st, body) = approve(&s, &close, None).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["status"], "executed", "{body}");
    assert!(
        s.sandbox
            .legacy()
            .get_positions()
            .await
            .unwrap()
            .positions
            .is_empty()
    );

    let (st, _) = s
        .supervisor(
            Method::POST,
            "/gate/v1/kill-switch",
            Some(json!({"on": false})),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    passed(&propose(&s, &key, trade("BTC", 500.0)).await);
    let kinds: Vec<Value> = journal(&s)
        .await
        .into_iter()
        .map(|r| r["kind"].clone())
        .collect();
    assert!(kinds.contains(&json!("kill_switch_on")) && kinds.contains(&json!("kill_switch_off")));
}

#[tokio::test]
async fn a_standing_approval_executes_a_fitting_proposal_and_not_a_misfitting_one() {
    let s = guarded(|_| {}).await;
    let key = s.sandbox.key(Scope::McpMutate);
    let (st, body) = s
        .supervisor(
            Method::POST,
            "/gate/v1/standing-approvals",
            Some(
                json!({"agent": "*", "coins": ["BTC"], "maxNotionalUsd": 1500, "minutes": 60,
                        "reason": "small BTC entries this hour"}),
            ),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let id = body["standingApproval"]["id"].as_i64().unwrap();

    let fits = passed(&propose(&s, &key, trade("BTC", 1000.0)).await);
    let too_big = passed(&propose(&s, &key, trade("BTC", 2000.0)).await);
    let other_coin = passed(&propose(&s, &key, trade("ETH", 1000.0)).await);
    assert_eq!(s.upstream_confirms(&fits), 1);
    let (st, body) = super::confirm(&s, &key, &fits).await;
    assert_eq!(
        (st, &body["status"]),
        (StatusCode::OK, &json!("executed")),
        "{body}"
    );
    let pending: Vec<Value> = s
        .inbox("pending")
        .await
        .iter()
        .map(|i| i["proposalId"].clone())
        .collect();
    assert_eq!(pending, [json!(other_coin), json!(too_big)]);
    assert_eq!(s.upstream_confirms(&too_big), 0);

    let (_, body) = s
        .supervisor(Method::GET, "/gate/v1/standing-approvals", None)
        .await;
    let live = &body["standingApprovals"][0];
    assert_eq!(live["id"], id);
    let remaining = live["remainingSecs"].as_i64().unwrap();
    assert!((3500..=3600).contains(&remaining), "{remaining}");
    assert_eq!(live["approved"][0]["proposalId"], fits.as_str());
    assert_eq!(live["approved"].as_array().unwrap().len(), 1);
    let auto = journal(&s)
        .await
        .into_iter()
        .find(|r| r["kind"] == "auto_approve")
        .unwrap();
    assert_eq!(auto["actor"], format!("standing approval {id}"));
    assert!(
        auto["detail"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("auto-approved by standing approval {id}"))
    );

    let (st, _) = s
        .supervisor(
            Method::DELETE,
            &format!("/gate/v1/standing-approvals/{id}"),
            None,
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    let after = passed(&propose(&s, &key, trade("BTC", 1000.0)).await);
    assert_eq!(s.upstream_confirms(&after), 0);
}

#[tokio::test]
async fn the_journal_verifies_and_then_names_the_record_changed_with_sql() {
    let s = guarded(|_| {}).await;
    let key = s.sandbox.key(Scope::McpMutate);
    let a = passed(&propose(&s, &key, trade("BTC", 1000.0)).await);
    let b = passed(&propose(&s, &key, trade("ETH", 1000.0)).await);
    approve(&s, &a, None).await;
    s.supervisor(
        Method::POST,
        &format!("/gate/v1/inbox/{b}/reject"),
        Some(json!({"reason": "not now"})),
    )
    .await;
    let records = journal(&s).await;
    let kinds: Vec<&str> = records
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["policy_change", "approve", "reject"]);
    assert_eq!(records[1]["prevHash"], records[0]["hash"]);
    assert_eq!(records[2]["detail"]["reason"], "not now");

    let db = s.gate_db.to_str().unwrap().to_string();
    let (ok, out, err) = gate_cli(&["journal", "verify", "--db", &db]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "journal ok: 3 records");

    let conn = rusqlite::Connection::open(&s.gate_db).unwrap();
    conn.execute(
        "UPDATE journal SET detail = '{\"reason\":\"approved\"}' WHERE seq = 3",
        [],
    )
    .unwrap();
    drop(conn);
    let (ok, _, err) = gate_cli(&["journal", "verify", "--db", &db]);
    assert!(!ok);
    assert!(err.contains("record 3"), "{err}");
}

/// Each request a receiver got: its headers (lowercase names) and its body.
pub(super) type Deliveries = Arc<Mutex<Vec<(Vec<(String, String)>, String)>>>;

/// An HTTPS receiver on loopback with a self-signed certificate: records each request's headers
/// and body, answers 500 to the first `failures` and 200 after.
pub(super) async fn receiver(
    dir: &std::path::Path,
    failures: usize,
) -> (u16, std::path::PathBuf, Deliveries) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::rustls::ServerConfig;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let pem = dir.join("receiver.pem");
    std::fs::write(&pem, ck.cert.pem()).unwrap();
    let tls = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(ck.cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der())),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let got: Deliveries = Default::default();
    let state = got.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, state) = (acceptor.clone(), state.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let (head_end, len) = loop {
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
                        let len = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        break (i + 4, len);
                    }
                    match tls.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                };
                while buf.len() < head_end + len {
                    match tls.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                let headers = head
                    .split("\r\n")
                    .skip(1)
                    .filter_map(|l| l.split_once(':'))
                    .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                    .collect();
                let body = String::from_utf8_lossy(&buf[head_end..head_end + len]).into_owned();
                let n = {
                    let mut got = state.lock().unwrap();
                    got.push((headers, body));
                    got.len()
                };
                let status = if n <= failures { "500 Oops" } else { "200 OK" };
                let answer =
                    format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                let _ = tls.write_all(answer.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    (port, pem, got)
}

#[tokio::test]
async fn a_waiting_item_is_notified_with_a_standard_webhooks_signature_retried_until_taken() {
    let dir = tempfile::tempdir().unwrap();
    let (port, pem, got) = receiver(dir.path(), 2).await;
    let secret = webhook_sig::new_secret();
    let destination = Destination {
        url: format!("https://localhost:{port}/hook"),
        secret: secret.clone(),
        allow_hosts: vec!["localhost".into()],
        ca_file: Some(pem),
        max_attempts: 3,
    };
    let s = guarded(|c| {
        c.notify = vec![destination];
        c.policy = agentdesk::gateway::rules::policy::Policy::from_json(
            &json!({"max_notional_usd": 1200}),
        )
        .unwrap();
    })
    .await;
    let key = s.sandbox.key(Scope::McpMutate);
    // Before the proposal: the first attempt leaves while it is being answered, so a clock
    // started after the answer could see less than the backoff on a loaded machine.
    let start = std::time::Instant::now();
    let p = passed(&propose(&s, &key, trade("BTC", 1000.0)).await);

    // Two 500s, then the third attempt is taken (after 0.5 s and 1 s of backoff).
    let deliveries = loop {
        let got = got.lock().unwrap().clone();
        if got.len() >= 3 {
            break got;
        }
        assert!(start.elapsed().as_secs() < 15, "{} deliveries", got.len());
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert!(
        start.elapsed() >= std::time::Duration::from_millis(1500),
        "three attempts within {:?}, less than the 0.5 s + 1 s of backoff",
        start.elapsed()
    );
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    assert_eq!(
        got.lock().unwrap().len(),
        3,
        "no attempt after the one taken"
    );
    let id_of = |headers: &Vec<(String, String)>| {
        headers
            .iter()
            .find(|(k, _)| k == webhook_sig::HEADER_ID)
            .map(|(_, v)| v.clone())
    };
    assert!(
        deliveries
            .iter()
            .all(|(h, _)| id_of(h) == id_of(&deliveries[0].0))
    );
    let (headers, body) = deliveries[2].clone();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {name} header"))
    };
    let timestamp: i64 = header(webhook_sig::HEADER_TIMESTAMP).parse().unwrap();
    webhook_sig::verify(
        &secret,
        &header(webhook_sig::HEADER_ID),
        timestamp,
        body.as_bytes(),
        &header(webhook_sig::HEADER_SIGNATURE),
        chrono::Utc::now().timestamp(),
        webhook_sig::DEFAULT_TOLERANCE_SECS,
    )
    .expect("the signature verifies");
    // A wrong secret does not verify the same delivery.
    assert!(
        webhook_sig::verify(
            &webhook_sig::new_secret(),
            &header(webhook_sig::HEADER_ID),
            timestamp,
            body.as_bytes(),
            &header(webhook_sig::HEADER_SIGNATURE),
            chrono::Utc::now().timestamp(),
            webhook_sig::DEFAULT_TOLERANCE_SECS,
        )
        .is_err()
    );
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["item"]["proposalId"], p.as_str());
    assert_eq!(v["verdicts"][0]["rule"], "max_notional_usd");
    assert_eq!(v["verdicts"][0]["near"], true);
    assert_eq!(v["expiresAt"], v["item"]["expiresAt"]);
    let text = v["text"].as_str().unwrap();
    // The notification names the trade that will execute: the coin, not the agent's spelling.
    assert!(
        text.contains("trade BTC ") && text.contains("max_notional_usd"),
        "{text}"
    );
}

#[tokio::test]
async fn with_the_kill_switch_on_allowed_immediate_trades_may_only_reduce() {
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
    // Allowed by the policy: an immediate trade goes through.
    let (st, body) = post("/api/v1/trades", signal.clone()).await;
    assert_eq!(st, StatusCode::OK, "{body}");

    s.supervisor(
        Method::POST,
        "/gate/v1/kill-switch",
        Some(json!({"on": true, "reason": "drawdown review"})),
    )
    .await;
    let opens = upstream_count(&s, "place_order");
    let (st, body) = post("/api/v1/trades", signal.clone()).await;
    assert_eq!(
        (st, &body["error"]["code"]),
        (StatusCode::FORBIDDEN, &json!("kill_switch"))
    );
    let order = json!({"pair": "BTC-USD", "side": "long", "orderType": "market", "usdAmount": 500,
                       "leverage": 3, "exchange": "venue"});
    let (st, body) = post("/api/v1/orders", order.clone()).await;
    assert_eq!(
        (st, &body["error"]["code"]),
        (StatusCode::FORBIDDEN, &json!("kill_switch"))
    );
    assert_eq!(upstream_count(&s, "place_order"), opens);

    // A flag in the request does not make a trade reduce: `reduceOnly` is no field of a
    // platform order, refused before anything is forwarded.
    let before = upstream_count(&s, "platform_place_order");
    let mut reduce = order;
    reduce["reduceOnly"] = json!(true);
    let (st, answer) = post("/api/v1/orders", reduce).await;
    assert_eq!(
        (st, &answer["error"]["field"]),
        (StatusCode::BAD_REQUEST, &json!("reduceOnly")),
        "{answer}"
    );
    assert_eq!(upstream_count(&s, "platform_place_order"), before);

    // Closes and cancels of orders that stop no loss reach the upstream (whatever it answers).
    for (path, body, op) in [
        (
            "/api/v1/positions/close",
            json!({"pair": "BTC-USD", "percentage": 100, "exchange": "venue"}),
            "platform_close_position",
        ),
        (
            "/api/v1/orders/cancel",
            json!({"oid": 1, "coin": "BTC"}),
            "platform_cancel_order",
        ),
    ] {
        let before = upstream_count(&s, op);
        let (_, answer) = post(path, body).await;
        assert_ne!(answer["error"]["code"], "kill_switch", "{path}: {answer}");
        assert_eq!(
            upstream_count(&s, op),
            before + 1,
            "{path} did not reach the upstream"
        );
    }
}

/// The policy a running `agentdesk gate` answers, read with its supervisor token.
async fn served_policy(base: &str, token: &str) -> Value {
    let (st, body) = send(base, Method::GET, "/gate/v1/policy", Some(token), None).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    body["policy"].clone()
}

#[cfg(unix)]
#[tokio::test]
async fn sighup_reloads_the_policy_and_a_broken_file_keeps_the_old_one() {
    use std::io::{BufRead, BufReader};
    let sandbox = common::start().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("gate.db");
    let db = db.to_str().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[policy]\nmax_notional_usd = 1000\n").unwrap();
    let (ok, token, err) = gate_cli(&["token", "--db", db]);
    assert!(ok, "{err}");
    let token = token.trim().to_string();
    // Its log says when a reload was refused: the broken file's check waits for that, not for
    // a fixed pause a loaded machine may outlast.
    let log = dir.path().join("gate.log");
    let mut child = std::process::Command::new(super::BIN)
        .args([
            "gate",
            "--upstream",
            &sandbox.base_url(),
            "--addr",
            "127.0.0.1:0",
        ])
        .args(["--db", db, "--config", config.to_str().unwrap()])
        .env("AGENTDESK_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let stdout = child.stdout.take().unwrap();
    let _child = super::Child(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();

    let hup = || {
        let status = std::process::Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap();
        assert!(status.success());
    };
    // A supervisor may reload as soon as the gateway says it listens: that SIGHUP is a reload
    // (here of the same file), not the end of the process.
    hup();
    let logged = |what: &str| {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains(what)
    };
    let start = std::time::Instant::now();
    while !logged("policy unchanged") {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "no reload logged 20 s after a SIGHUP sent at once: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        served_policy(&base, &token).await,
        json!({"max_notional_usd": 1000.0})
    );

    // Reloads are asynchronous: wait for the answer to change.
    async fn settle(base: &str, token: &str, want: &Value) -> Value {
        let start = std::time::Instant::now();
        loop {
            let got = served_policy(base, token).await;
            if &got == want || start.elapsed() > std::time::Duration::from_secs(20) {
                return got;
            }
            tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        }
    }
    std::fs::write(
        &config,
        "[policy]\nmax_notional_usd = 2000\n[policy.agents.bot]\nmax_leverage = 2\n",
    )
    .unwrap();
    hup();
    let want = json!({"max_notional_usd": 2000.0, "agents": {"bot": {"max_leverage": 2.0}}});
    assert_eq!(settle(&base, &token, &want).await, want);

    std::fs::write(&config, "[policy]\nmax_notional = 5\n").unwrap();
    hup();
    let start = std::time::Instant::now();
    while !logged("policy not reloaded") {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "the broken file's reload was not logged within 20 s: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(served_policy(&base, &token).await, want);
    let changes = journal_at(&base, &token)
        .await
        .into_iter()
        .filter(|r| r["kind"] == "policy_change")
        .map(|r| r["actor"].clone())
        .collect::<Vec<_>>();
    assert_eq!(changes, [json!("config"), json!("config reload (SIGHUP)")]);
}

async fn journal_at(base: &str, token: &str) -> Vec<Value> {
    let (_, body) = send(base, Method::GET, "/gate/v1/journal", Some(token), None).await;
    body["records"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_standing_approval_for_one_agent_covers_only_it_and_only_until_it_ends() {
    let s = guarded(|_| {}).await;
    let (bot, other) = (
        s.sandbox.key(Scope::McpMutate),
        s.sandbox
            .running
            .create_key(Scope::McpMutate, "other")
            .await
            .unwrap(),
    );
    let (st, body) = s
        .supervisor(
            Method::POST,
            "/gate/v1/standing-approvals",
            Some(
                json!({"agent": bot.fingerprint(), "maxNotionalUsd": 1500, "minutes": 10,
                        "reason": "bot's small entries"}),
            ),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let mine = passed(&propose(&s, &bot, trade("ETH", 1000.0)).await);
    let theirs = passed(&propose(&s, &other, trade("ETH", 1000.0)).await);
    assert_eq!(
        (s.upstream_confirms(&mine), s.upstream_confirms(&theirs)),
        (1, 0)
    );
    s.sandbox.clock.advance(chrono::Duration::minutes(11));
    let later = passed(&propose(&s, &bot, trade("ETH", 1000.0)).await);
    assert_eq!(s.upstream_confirms(&later), 0);
    let (_, body) = s
        .supervisor(Method::GET, "/gate/v1/standing-approvals", None)
        .await;
    assert_eq!(body["standingApprovals"], json!([]));
}

/// Issue 33: a staging the policy refuses on its request (before anything goes upstream) is in
/// the supervisor's inbox as refused by the policy, as one the service's preview breaks is; the
/// service staged nothing.
#[tokio::test]
async fn a_staging_refused_on_its_request_is_listed_as_refused_by_the_policy() {
    let s = guarded(|_| {}).await;
    let key = s.sandbox.key(Scope::McpMutate);
    let (st, body) = put_policy(&s, json!({"allowed_coins": ["BTC"]})).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let before = upstream_count(&s, "propose_trade");
    refused(
        &propose(&s, &key, trade("SOL", 500.0)).await,
        "allowed_coins",
        &["SOL"],
    );
    assert_eq!(
        upstream_count(&s, "propose_trade"),
        before,
        "nothing staged"
    );
    let (st, body) = s
        .supervisor(Method::GET, "/gate/v1/inbox?status=all", None)
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let items = body["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{body}");
    let item = &items[0];
    assert_eq!(item["status"], "rejected", "{item}");
    assert_eq!(item["decidedBy"], "policy", "{item}");
    assert!(item["reason"].as_str().unwrap().contains("SOL"), "{item}");
    assert!(item.get("proposalId").is_none_or(Value::is_null), "{item}");
    assert_eq!(item["request"]["a"], "SOLUSDT", "{item}");
    // It cannot be approved: nothing was staged to execute.
    let id = item["id"].as_str().unwrap();
    let (st, body) = approve(&s, id, None).await;
    assert_eq!(st, StatusCode::CONFLICT, "{body}");
    assert!(
        journal(&s)
            .await
            .iter()
            .any(|r| r["kind"] == "policy_refusal" && r["item"] == id),
        "journaled"
    );
}
