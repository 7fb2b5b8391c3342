//! Key scopes and authentication: the seed's scope table for every operation the sandbox serves, and
//! 401 for missing, invalid and revoked keys.

use crate::common::{self, TestServer};
use agentdesk::api::catalog::{self, Method};
use agentdesk::api::model::{
    CancelRequest, CloseRequest, OneOrMany, PlatformClose, PlatformOrder, TradeSignal,
};
use agentdesk::api::{ApiError, Client, Scope};
use agentdesk::sandbox::keys::prefix_of;
use agentdesk::sandbox::store::Store;
use agentdesk::secret::Secret;
use serde_json::Value;

/// Every operation the sandbox serves now.
const SERVED: [&str; 17] = [
    "whoami",
    "get_usage",
    "get_usage_v1",
    "get_positions",
    "pnl_summary",
    "list_audit_logs",
    "list_tools",
    "list_open_orders",
    "list_proposals",
    "get_openapi",
    "propose_trade",
    "confirm_trade",
    "close_position",
    "place_order",
    "platform_place_order",
    "platform_close_position",
    "platform_cancel_order",
];

/// The seed's table (Authentication, rule 5), written out independently of the catalog.
fn seed_allows(op: &str, scope: Scope) -> bool {
    match op {
        "place_order" => matches!(scope, Scope::WebhookAlerts | Scope::Legacy),
        "platform_place_order" | "platform_close_position" | "platform_cancel_order" => {
            matches!(scope, Scope::PlatformTrade | Scope::Legacy)
        }
        _ => true,
    }
}

fn btc_long() -> TradeSignal {
    TradeSignal {
        strategy: Some("Agent".into()),
        a: Some("BTCUSDT".into()),
        d: Some("long".into()),
        o: Some("market".into()),
        ..Default::default()
    }
}

fn platform_order(pair: &str) -> PlatformOrder {
    PlatformOrder {
        pair: pair.into(),
        side: "long".into(),
        order_type: Some("market".into()),
        sizing_mode: Some("account".into()),
        account_percentage: Some(2.0),
        leverage: Some(2),
        exchange: Some("venue".into()),
        ..Default::default()
    }
}

fn resting_platform_order() -> PlatformOrder {
    PlatformOrder {
        pair: "ETH-USD".into(),
        side: "long".into(),
        order_type: Some("limit".into()),
        limit_price: Some(100.0),
        sizing_mode: Some("usd".into()),
        usd_amount: Some(500.0),
        leverage: Some(2),
        ..Default::default()
    }
}

/// Drops the success value: the matrix only asks "refused for scope, or not".
fn outcome<T>(r: Result<T, ApiError>) -> Result<(), ApiError> {
    r.map(|_| ())
}

/// Calls `op` with `client` (a key of `scope`), with a valid body whenever the key may call it, so
/// that allowed calls succeed.
async fn call(
    server: &TestServer,
    client: &Client,
    scope: Scope,
    op: &str,
) -> Result<(), ApiError> {
    let allowed = seed_allows(op, scope);
    match op {
        "whoami" => outcome(client.whoami(true).await),
        "get_usage" => outcome(client.get_usage().await),
        "get_usage_v1" => outcome(client.get_usage_v1().await),
        "get_positions" => outcome(client.get_positions().await),
        "pnl_summary" => outcome(client.pnl_summary().await),
        "list_audit_logs" => outcome(client.list_audit_logs(Some(10)).await),
        "list_tools" => outcome(client.list_tools().await),
        "list_open_orders" => outcome(client.list_open_orders(None).await),
        "list_proposals" => outcome(client.list_proposals(None).await),
        "get_openapi" => outcome(client.get_openapi().await),
        "propose_trade" => outcome(client.propose_trade(&btc_long()).await),
        "confirm_trade" => {
            // Confirm must use the key that proposed: stage with this very key.
            let staged = client.propose_trade(&btc_long()).await.unwrap();
            outcome(client.confirm_trade(&staged.proposal_id).await)
        }
        "close_position" => {
            let open = client.propose_trade(&btc_long()).await.unwrap();
            client.confirm_trade(&open.proposal_id).await.unwrap();
            let close = client
                .propose_trade(&TradeSignal {
                    action: Some("close".into()),
                    a: Some("BTCUSDT".into()),
                    ..Default::default()
                })
                .await
                .unwrap();
            outcome(
                client
                    .close_position(&CloseRequest {
                        proposal_id: Some(close.proposal_id),
                        action: Some("close".into()),
                    })
                    .await,
            )
        }
        "place_order" => outcome(
            client
                .place_order(&TradeSignal {
                    fanout: Some(false),
                    ..btc_long()
                })
                .await,
        ),
        "platform_place_order" => outcome(
            client
                .platform_place_order(&platform_order("SOL-USD"), None)
                .await,
        ),
        "platform_close_position" => {
            if allowed {
                client
                    .platform_place_order(&platform_order("XRP-USD"), None)
                    .await
                    .unwrap();
            }
            outcome(
                client
                    .platform_close_position(&PlatformClose {
                        pair: Some("XRP-USD".into()),
                        percentage: Some(100.0),
                        exchange: Some("venue".into()),
                        ..Default::default()
                    })
                    .await,
            )
        }
        "platform_cancel_order" => {
            let oid = if allowed {
                let placed = client
                    .platform_place_order(&resting_platform_order(), None)
                    .await
                    .unwrap();
                placed.execution.resting[0].oid
            } else {
                // A real resting order, placed with the legacy key, that this key may not cancel.
                let placed = server
                    .legacy()
                    .platform_place_order(&resting_platform_order(), None)
                    .await
                    .unwrap();
                placed.execution.resting[0].oid
            };
            outcome(
                client
                    .platform_cancel_order(&CancelRequest {
                        oid: OneOrMany::One(oid),
                        coin: "ETH".into(),
                        exchange: None,
                        venue_api_key: None,
                        venue_wallet: None,
                    })
                    .await,
            )
        }
        other => panic!("no call prepared for {other}"),
    }
}

async fn check_matrix(scope: Scope) {
    let server = common::start().await;
    let client = server.client(scope);
    for op in SERVED {
        let allowed = seed_allows(op, scope);
        assert_eq!(
            catalog::op(op).scope.allows(scope),
            allowed,
            "the catalog disagrees with the seed on {op} for {scope}"
        );
        match (allowed, call(&server, &client, scope, op).await) {
            (true, Ok(())) => {}
            (true, Err(e)) => panic!("{op} with a {scope} key should succeed: {e:?}"),
            (false, Ok(())) => panic!("{op} with a {scope} key should be refused"),
            (false, Err(ApiError::Forbidden { code, message })) => {
                assert_eq!(code, "insufficient_scope", "{op}/{scope}: {message}");
                assert!(message.contains(op), "the 403 names {op}: {message}");
                assert!(
                    message.contains(scope.as_str()),
                    "the 403 names the key's scope {scope}: {message}"
                );
            }
            (false, Err(e)) => panic!("{op} with a {scope} key: expected 403, got {e:?}"),
        }
    }
}

#[tokio::test]
async fn scope_matrix_legacy_key_may_call_everything() {
    check_matrix(Scope::Legacy).await;
}

#[tokio::test]
async fn scope_matrix_webhook_alerts_key() {
    check_matrix(Scope::WebhookAlerts).await;
}

#[tokio::test]
async fn scope_matrix_mcp_mutate_key() {
    check_matrix(Scope::McpMutate).await;
}

#[tokio::test]
async fn scope_matrix_platform_trade_key() {
    check_matrix(Scope::PlatformTrade).await;
}

#[tokio::test]
async fn insufficient_scope_is_a_403_body_on_the_wire_for_each_refused_pair() {
    let server = common::start().await;
    for scope in Scope::ALL {
        for op in SERVED.iter().filter(|op| !seed_allows(op, scope)) {
            let op = catalog::op(op);
            assert_eq!(op.method, Method::Post);
            let resp = server
                .http()
                .post(server.url(op.path))
                .header("x-api-key", server.key(scope).expose())
                .header("content-type", "application/json")
                // Even a body that would be refused does not get past the scope check.
                .body("{not json")
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status().as_u16(), 403, "{} / {scope}", op.name);
            let body: Value = resp.json().await.unwrap();
            assert_eq!(body["success"], false);
            assert_eq!(body["error"]["code"], "insufficient_scope", "{body}");
        }
    }
}

#[tokio::test]
async fn refused_mutations_are_audited_and_do_not_use_quota() {
    let server = common::start().await;
    let mcp = server.client(Scope::McpMutate);
    let err = mcp
        .place_order(&TradeSignal {
            fanout: Some(false),
            ..btc_long()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("insufficient_scope"));
    let platform = server.client(Scope::PlatformTrade);
    let err = platform.place_order(&btc_long()).await.unwrap_err();
    assert_eq!(err.code(), Some("insufficient_scope"));

    let logs = server.legacy().list_audit_logs(None).await.unwrap().logs;
    assert_eq!(logs.len(), 2, "{logs:?}");
    for row in &logs {
        assert_eq!(row.operation, "place_order");
        assert_eq!(row.outcome, "error");
        assert_eq!(row.http_status, 403);
        assert_eq!(row.error_code.as_deref(), Some("insufficient_scope"));
        assert!(row.message.as_deref().unwrap_or("").contains("place_order"));
    }
    // The refused attempt changed nothing: no position, and the POST cap is untouched.
    assert!(mcp.get_positions().await.unwrap().positions.is_empty());
    assert_eq!(mcp.get_usage().await.unwrap().api_post_quota.used, 0);
    // The mcp:mutate key's advice points at the staged route.
    let ApiError::Forbidden { message, .. } = mcp.place_order(&btc_long()).await.unwrap_err()
    else {
        panic!("expected a 403")
    };
    assert!(message.contains("propose"), "{message}");
}

// ---- 401 -----------------------------------------------------------------------------------------

async fn assert_401(server: &TestServer, key: Option<&str>, what: &str) {
    for name in SERVED {
        let op = catalog::op(name);
        let args: Vec<&str> = op.path_params().iter().map(|_| "x").collect();
        let url = server.url(&op.path_with(&args));
        let mut req = match op.method {
            Method::Get => server.http().get(&url),
            Method::Post => server
                .http()
                .post(&url)
                .header("content-type", "application/json")
                .body("{}"),
        };
        if let Some(key) = key {
            req = req.header("x-api-key", key);
        }
        let resp = req.send().await.unwrap();
        // Usage also accepts an x402 payment: with no credential at all it asks for one (402).
        let no_credential = key.is_none_or(|k| k.trim().is_empty());
        let (status, code) = if no_credential && name.starts_with("get_usage") {
            assert!(resp.headers().contains_key("payment-required"), "{name}");
            (402, "payment_required")
        } else {
            (401, "unauthorized")
        };
        assert_eq!(resp.status().as_u16(), status, "{name} with {what}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["success"], false, "{name} with {what}");
        assert_eq!(body["error"]["code"], code, "{name} with {what}: {body}");
    }
}

#[tokio::test]
async fn a_missing_key_is_401_unauthorized() {
    let server = common::start().await;
    assert_401(&server, None, "no key").await;
    assert_401(&server, Some(""), "an empty key").await;
    assert_401(&server, Some("   "), "a blank key").await;
    let anonymous = Client::new(&server.base_url(), None).unwrap();
    let err = anonymous.whoami(false).await.unwrap_err();
    assert!(matches!(err, ApiError::Unauthorized { .. }), "{err:?}");
    let err = anonymous.propose_trade(&btc_long()).await.unwrap_err();
    assert!(matches!(err, ApiError::Unauthorized { .. }), "{err:?}");
    // Nothing was staged or audited for the anonymous attempt.
    assert!(
        server
            .legacy()
            .list_audit_logs(None)
            .await
            .unwrap()
            .logs
            .is_empty()
    );
}

#[tokio::test]
async fn an_invalid_key_is_401_unauthorized() {
    let server = common::start().await;
    let real = server.key(Scope::Legacy);
    // A well-formed key that was never issued, and the real key with one character changed.
    let mut altered = real.expose().to_string();
    let last = altered.pop().unwrap();
    altered.push(if last == '0' { '1' } else { '0' });
    for bogus in [
        "adk_000000000000000000000000000000000000000000000000",
        altered.as_str(),
        "not-a-key",
    ] {
        assert_401(&server, Some(bogus), bogus).await;
        let client = Client::new(&server.base_url(), Some(Secret::new(bogus))).unwrap();
        let err = client.whoami(false).await.unwrap_err();
        assert!(matches!(err, ApiError::Unauthorized { .. }), "{err:?}");
    }
    // The key header is matched exactly; the real key still works.
    server.legacy().whoami(false).await.unwrap();
}

#[tokio::test]
async fn a_revoked_key_is_401_while_other_keys_keep_working() {
    let server = common::start().await;
    let key = server.key(Scope::WebhookAlerts);
    let client = server.client(Scope::WebhookAlerts);
    client.whoami(false).await.unwrap();

    // Revoked through the store while the server runs (SQLite WAL allows a second connection).
    let revoked = Store::open(&server.db)
        .unwrap()
        .revoke_key(&prefix_of(key.expose()), common::t0())
        .unwrap();
    assert_eq!(revoked, 1);

    let err = client.whoami(false).await.unwrap_err();
    assert!(matches!(err, ApiError::Unauthorized { .. }), "{err:?}");
    let err = client.place_order(&btc_long()).await.unwrap_err();
    assert!(matches!(err, ApiError::Unauthorized { .. }), "{err:?}");
    assert_401(&server, Some(key.expose()), "a revoked key").await;

    for other in [Scope::Legacy, Scope::McpMutate, Scope::PlatformTrade] {
        server.client(other).whoami(false).await.unwrap();
    }
}
