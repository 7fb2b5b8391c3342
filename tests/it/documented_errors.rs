//! The OpenAPI document tells the truth about errors: for every catalog operation, every status it
//! declares besides 200 is triggered here over loopback and answers with that status and the error
//! shape, and the generic cases (a bad key, no key, a key of the wrong scope, a bad body or query,
//! an oversized body, a used-up quota) answer only declared statuses. A declared status without a
//! trigger case fails the test, and so does a triggered status that is not declared.

use crate::common::{self, TestServer};
use agentdesk::api::Scope;
use agentdesk::api::catalog::{self, Method, Operation, ScopeRule};
use agentdesk::sandbox::Settings;
use chrono::Duration;
use serde_json::{Value, json};

/// The sandboxes the cases need: a normal one, one whose daily caps are zero, one that has not
/// approved the builder fee, and one whose audit store is down and that takes no signal
/// destinations.
struct Env {
    s: TestServer,
    capped: TestServer,
    unapproved: TestServer,
    no_audit: TestServer,
}

/// One request, sent raw so every status and body is seen as the server wrote it.
struct Req {
    key: Option<String>,
    path: String,
    query: String,
    body: Option<String>,
    headers: Vec<(&'static str, String)>,
}

impl Req {
    fn new(server: &TestServer, op: &Operation) -> Req {
        let args: Vec<&str> = op.path_params().iter().map(|_| "x_nope").collect();
        Req {
            key: Some(server.key(Scope::Legacy).expose().to_string()),
            path: op.path_with(&args),
            query: String::new(),
            body: (op.method == Method::Post).then(|| op.example_body.unwrap_or("{}").to_string()),
            headers: Vec::new(),
        }
    }

    fn key(mut self, key: Option<String>) -> Req {
        self.key = key;
        self
    }

    fn body(mut self, body: Value) -> Req {
        self.body = Some(body.to_string());
        self
    }

    async fn send(self, server: &TestServer, op: &Operation) -> (u16, Value) {
        let url = server.url(&format!("{}{}", self.path, self.query));
        let mut req = match op.method {
            Method::Get => server.http().get(url),
            Method::Post => server
                .http()
                .post(url)
                .header("content-type", "application/json")
                .body(self.body.unwrap_or_default()),
        };
        if let Some(key) = self.key {
            req = req.header("x-api-key", key);
        }
        for (k, v) in self.headers {
            req = req.header(k, v);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }
}

async fn post(server: &TestServer, name: &str, scope: Scope, body: Value) -> Value {
    let op = catalog::op(name);
    let (status, v) = Req::new(server, op)
        .key(Some(server.key(scope).expose().to_string()))
        .body(body)
        .send(server, op)
        .await;
    assert_eq!(status, 200, "{name}: {v}");
    v
}

fn long_btc() -> Value {
    json!({"a": "BTCUSDT", "d": "long", "o": "market", "sizeUsd": 2000, "strategy": "Agent"})
}

/// A staged proposal's id.
async fn staged(server: &TestServer, scope: Scope, body: Value) -> String {
    let v = post(server, "propose_trade", scope, body).await;
    v["proposalId"].as_str().unwrap().to_string()
}

/// A confirm token for placing `long_btc` through the tool.
async fn token(server: &TestServer, scope: Scope) -> String {
    let v = post(
        server,
        "execute_mcp_tool",
        scope,
        json!({"name": "service_place_order", "args": long_btc()}),
    )
    .await;
    v["result"]["confirmToken"].as_str().unwrap().to_string()
}

fn place_with(token: &str) -> Value {
    let mut args = long_btc();
    args["confirmToken"] = json!(token);
    json!({"name": "service_place_order", "args": args})
}

/// The request that makes `op` answer `status` (the generic cases first), or None when there is
/// no such case.
async fn trigger(env: &Env, op: &Operation, status: u16) -> Option<(u16, Value)> {
    let s = &env.s;
    let base = || Req::new(s, op);
    let is_post = op.method == Method::Post;
    let generic = match status {
        401 => Some(base().key(Some("adk_not_a_key".into()))),
        402 if op.auth == catalog::Auth::ApiKeyOrPayment => Some(base().key(None)),
        403 if op.scope != ScopeRule::AnyKey => {
            Some(base().key(Some(s.key(Scope::McpMutate).expose().to_string())))
        }
        400 if !is_post && !op.query.is_empty() => {
            let mut r = base();
            r.query = format!("?{}=", op.query[0].name);
            Some(r)
        }
        400 if is_post => {
            let mut r = base();
            r.body = Some("{\"unterminated".into());
            Some(r)
        }
        413 if is_post => {
            let mut r = base();
            r.body = Some(format!("{{\"pad\":\"{}\"}}", "x".repeat(70 * 1024)));
            Some(r)
        }
        _ => None,
    };
    if let Some(req) = generic {
        return Some(req.send(s, op).await);
    }
    let legacy = Scope::Legacy;
    let req = match (op.name, status) {
        (_, 429) if op.quota.post || op.quota.compute => {
            let r = Req::new(&env.capped, op);
            return Some(r.send(&env.capped, op).await);
        }
        ("list_audit_logs", 503) => {
            return Some(Req::new(&env.no_audit, op).send(&env.no_audit, op).await);
        }
        ("get_backtest_job" | "list_signal_deliveries", 404) => base(),
        ("propose_trade", 403) => base().body(json!({"id": "someone-else", "a": "BTCUSDT",
                                                     "d": "long", "sizeUsd": "100"})),
        ("approve_builder_fee_payload", 403) => {
            let mut r = base();
            r.query = "?venueWallet=0x0000000000000000000000000000000000000001".into();
            r
        }
        ("approve_builder_fee", 403) => base().body(json!({
            "venueWallet": "0x0000000000000000000000000000000000000001", "nonce": 1,
            "signature": "0x00", "signatureChainId": "0x66eee"})),
        ("research_message" | "research_stop", 404) => base(),
        ("confirm_trade" | "close_position", 404) => {
            base().body(json!({"proposalId": "prop_nope"}))
        }
        ("confirm_trade", 403) => {
            // Staged by one key, confirmed by another.
            let id = staged(s, Scope::McpMutate, long_btc()).await;
            base().body(json!({"proposalId": id}))
        }
        ("confirm_trade" | "close_position", 409) => {
            let close = op.name == "close_position";
            post(s, "place_order", legacy, long_btc()).await;
            let body = if close {
                json!({"action": "close", "a": "BTCUSDT"})
            } else {
                long_btc()
            };
            let id = staged(s, legacy, body).await;
            post(s, "confirm_trade", legacy, json!({"proposalId": id})).await;
            base()
                .body(json!({"proposalId": id, "action": if close { Some("close") } else { None }}))
        }
        ("confirm_trade", 410) => {
            let id = staged(s, legacy, long_btc()).await;
            s.clock.advance(Duration::hours(2));
            base().body(json!({"proposalId": id}))
        }
        ("place_order", 409) => base().body(json!({
            "a": "BTCUSDT", "d": "long", "o": "market", "sizeUsd": 5_000_000, "strategy": "Agent"
        })),
        ("platform_place_order" | "platform_cancel_order", 409) => {
            let r = Req::new(&env.unapproved, op);
            return Some(r.send(&env.unapproved, op).await);
        }
        ("platform_place_order", 422) => {
            let key = ("idempotency-key", "documented-errors-1".to_string());
            let mut first = base();
            first.headers.push(key.clone());
            let (status, v) = first.send(s, op).await;
            assert_eq!(status, 200, "{v}");
            let mut again = base().body(json!({
                "pair": "ETH-USD", "side": "short", "orderType": "market",
                "sizingMode": "usd", "usdAmount": 700
            }));
            again.headers.push(key);
            again
        }
        ("platform_close_position", 409) => {
            base().body(json!({"pair": "DOGE-USD", "percentage": 100}))
        }
        ("platform_cancel_order", 404) => base().body(json!({"oid": 42, "coin": "BTC"})),
        ("create_signal_destination", 409) => {
            let r = Req::new(&env.no_audit, op).body(json!({
                "url": "https://127.0.0.1:9/hook", "strategyIds": ["*"],
                "directions": ["BUY"], "name": "one too many"
            }));
            return Some(r.send(&env.no_audit, op).await);
        }
        ("execute_mcp_tool", 404) => base().body(json!({"name": "service_nope", "args": {}})),
        ("execute_mcp_tool", 403) => {
            let t = token(s, Scope::McpMutate).await;
            base().body(place_with(&t))
        }
        ("execute_mcp_tool", 409) => {
            let t = token(s, legacy).await;
            post(s, "execute_mcp_tool", legacy, place_with(&t)).await;
            base().body(place_with(&t))
        }
        ("execute_mcp_tool", 410) => {
            let t = token(s, legacy).await;
            s.clock.advance(Duration::hours(1));
            base().body(place_with(&t))
        }
        ("research_start", 409) => {
            // One active run per account.
            post(
                s,
                "research_start",
                legacy,
                json!({"task": "find a trend strategy for BTC"}),
            )
            .await;
            base()
        }
        ("research_message" | "research_stop", 409) => {
            let run = post(
                &env.unapproved,
                "research_start",
                legacy,
                json!({"task": "find a trend strategy for SOL"}),
            )
            .await;
            let id = run["runId"].as_str().unwrap().to_string();
            let stop = catalog::op("research_stop");
            let (st, v) = Req {
                path: stop.path_with(&[&id]),
                ..Req::new(&env.unapproved, stop)
            }
            .send(&env.unapproved, stop)
            .await;
            assert_eq!(st, 200, "{v}");
            let r = Req {
                path: op.path_with(&[&id]),
                ..Req::new(&env.unapproved, op)
            };
            return Some(r.send(&env.unapproved, op).await);
        }
        ("mcp_cli", 409) => base().body(json!({"command": "/research stop"})),
        _ => return None,
    };
    Some(req.send(s, op).await)
}

fn declared(doc: &Value, op: &Operation) -> Vec<u16> {
    let method = match op.method {
        Method::Get => "get",
        Method::Post => "post",
    };
    doc["paths"][op.path][method]["responses"]
        .as_object()
        .unwrap_or_else(|| panic!("{} is not in the document", op.name))
        .keys()
        .map(|k| k.parse().unwrap())
        .collect()
}

fn error_shaped(v: &Value) -> bool {
    v["success"] == json!(false)
        && v["error"]["code"].as_str().is_some_and(|c| !c.is_empty())
        && v["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
}

/// Every error status a case exists for.
const CASES: [u16; 11] = [400, 401, 402, 403, 404, 409, 410, 413, 422, 429, 503];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_declared_error_status_is_triggered_and_every_triggered_one_declared() {
    let env = Env {
        s: common::start().await,
        capped: common::start_with(Settings {
            daily_post_cap: 0,
            daily_compute_cap: 0,
            max_signal_destinations: 0,
            ..Default::default()
        })
        .await,
        unapproved: common::start_unapproved().await,
        no_audit: common::start_with(Settings {
            audit_log_unavailable: true,
            max_signal_destinations: 0,
            webhook_allow_hosts: vec!["127.0.0.1".into()],
            ..Default::default()
        })
        .await,
    };
    let doc: Value = env
        .s
        .http()
        .get(env.s.url(catalog::op("get_openapi").path))
        .header("x-api-key", env.s.key(Scope::Legacy).expose())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut failures = Vec::new();
    for op in catalog::OPERATIONS {
        let statuses = declared(&doc, op);
        assert!(statuses.contains(&200), "{}", op.name);
        for &status in statuses.iter().filter(|s| **s != 200) {
            match trigger(&env, op, status).await {
                None => failures.push(format!("{} declares {status}: no trigger case", op.name)),
                Some((got, body)) if got != status || !error_shaped(&body) => {
                    failures.push(format!(
                        "{} declares {status}, its case answered {got}: {body}",
                        op.name
                    ))
                }
                Some(_) => {}
            }
        }
        // Every case that applies to the operation, declared or not: its answer must be declared.
        for status in CASES {
            if statuses.contains(&status) {
                continue;
            }
            if let Some((got, body)) = trigger(&env, op, status).await
                && got != 200
                && !statuses.contains(&got)
            {
                failures.push(format!(
                    "{} answers {got} (case {status}) but declares {statuses:?}: {body}",
                    op.name
                ));
            }
        }
    }
    // The one payable trading operation in the seed is not this one.
    assert!(!declared(&doc, catalog::op("platform_place_order")).contains(&402));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// An empty value of any query parameter (`?status=`, `?limit=`) is a 400 `invalid_query` naming
/// that parameter, not its default.
#[tokio::test]
async fn an_empty_query_value_is_a_400_naming_the_parameter() {
    let s = common::start().await;
    let mut seen = 0;
    for op in catalog::OPERATIONS {
        for param in op.query {
            let mut req = Req::new(&s, op);
            req.query = format!("?{}=", param.name);
            let (status, body) = req.send(&s, op).await;
            assert_eq!(status, 400, "{} ?{}=: {body}", op.name, param.name);
            assert_eq!(body["error"]["code"], "invalid_query", "{body}");
            assert_eq!(body["error"]["field"], param.name, "{body}");
            let message = body["error"]["message"].as_str().unwrap();
            assert!(message.contains(param.name), "{message}");
            seen += 1;
        }
    }
    assert!(seen >= 10, "{seen} query parameters");
}
