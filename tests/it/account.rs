//! Account and observation: whoami, usage, positions, PnL, audit logs, the tool catalog, open orders,
//! the OpenAPI document, and the router's coverage of the catalog.

use crate::common::{self, TestServer};
use agentdesk::api::catalog::{Method, OPERATIONS};
use agentdesk::api::model::{PlatformOrder, TradeSignal};
use agentdesk::api::{ApiError, Scope};
use agentdesk::sandbox::Settings;
use agentdesk::sandbox::keys;
use agentdesk::sandbox::store::Store;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// A raw GET with the key of `scope` (or none); returns the status and the JSON body.
async fn get_raw(server: &TestServer, scope: Option<Scope>, path_and_query: &str) -> (u16, Value) {
    let mut req = server.http().get(server.url(path_and_query));
    if let Some(scope) = scope {
        req = req.header("x-api-key", server.key(scope).expose());
    }
    let resp = req.send().await.expect("request is sent");
    let status = resp.status().as_u16();
    let body = resp.json::<Value>().await.expect("the body is JSON");
    (status, body)
}

fn keys_of(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .cloned()
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn long(asset: &str, exchange: Option<&str>) -> TradeSignal {
    TradeSignal {
        strategy: Some("Agent".into()),
        a: Some(asset.into()),
        d: Some("long".into()),
        o: Some("market".into()),
        exchange: exchange.map(str::to_string),
        ..Default::default()
    }
}

fn limit_buy(asset: &str, price: f64, exchange: &str) -> TradeSignal {
    TradeSignal {
        a: Some(asset.into()),
        d: Some("long".into()),
        o: Some("limit".into()),
        p: Some(price),
        exchange: Some(exchange.into()),
        ..Default::default()
    }
}

fn platform_long(pair: &str, exchange: &str) -> PlatformOrder {
    PlatformOrder {
        pair: pair.into(),
        side: "long".into(),
        order_type: Some("market".into()),
        sizing_mode: Some("account".into()),
        account_percentage: Some(5.0),
        leverage: Some(3),
        exchange: Some(exchange.into()),
        ..Default::default()
    }
}

fn assert_close(actual: f64, expected: f64, what: &str) {
    assert!(
        (actual - expected).abs() < 1e-6,
        "{what}: expected {expected}, got {actual}"
    );
}

// ---- whoami --------------------------------------------------------------------------------------

#[tokio::test]
async fn whoami_names_the_account_and_adds_json_summary_only_on_request() {
    let server = common::start().await;
    let client = server.legacy();
    let messenger_id = server.running.messenger_id.clone();

    let plain = client.whoami(false).await.unwrap();
    assert_eq!(plain.messenger_id, messenger_id);
    assert!(!messenger_id.is_empty());
    assert_eq!(plain.json_summary, None);
    assert_eq!(plain.summary, None);

    let rich = client.whoami(true).await.unwrap();
    assert_eq!(rich.messenger_id, messenger_id);
    let text = rich
        .json_summary
        .expect("json_summary with include=summary");
    assert!(text.contains(&messenger_id), "{text}");
    let summary = rich
        .summary
        .expect("readiness summary with include=summary");
    assert!(summary.venue_ready && summary.wallet_connected && summary.paper_trading == Some(true));
    assert_close(summary.equity.unwrap(), 100_000.0, "equity");
    assert_eq!(summary.open_positions, 0);
    assert_eq!(summary.staged_proposals, 0);

    // The wire key is literally `json_summary` (snake case), and absent without include=summary.
    let (status, body) = get_raw(&server, Some(Scope::Legacy), "/api/delegated/whoami").await;
    assert_eq!(status, 200);
    assert_eq!(body["success"], true);
    assert_eq!(body["messengerId"], messenger_id.as_str());
    assert!(body.get("json_summary").is_none(), "{body}");
    assert!(body.get("jsonSummary").is_none(), "{body}");
    let (status, body) = get_raw(
        &server,
        Some(Scope::Legacy),
        "/api/delegated/whoami?include=summary",
    )
    .await;
    assert_eq!(status, 200);
    assert!(body["json_summary"].is_string(), "{body}");
    assert!(body.get("jsonSummary").is_none(), "{body}");
    assert!(body["summary"].is_object(), "{body}");

    // The summary follows the account: a staged proposal and an open position show up.
    client.propose_trade(&long("ETHUSDT", None)).await.unwrap();
    let opened = client.propose_trade(&long("BTCUSDT", None)).await.unwrap();
    client.confirm_trade(&opened.proposal_id).await.unwrap();
    let summary = client.whoami(true).await.unwrap().summary.unwrap();
    assert_eq!(summary.staged_proposals, 1);
    assert_eq!(summary.open_positions, 1);
}

#[tokio::test]
async fn whoami_legacy_flags_follow_the_key_scope() {
    let server = common::start().await;
    // (scope, isLegacyKey, canUseTrades, canUsePlatformOrders, mustStage)
    let table = [
        (Scope::Legacy, true, true, true, false),
        (Scope::WebhookAlerts, false, true, false, false),
        (Scope::McpMutate, false, false, false, true),
        (Scope::PlatformTrade, false, false, true, false),
    ];
    for (scope, legacy, trades, platform, stage) in table {
        let who = server.client(scope).whoami(false).await.unwrap();
        assert_eq!(who.messenger_id, server.running.messenger_id, "{scope}");
        assert_eq!(who.scope.as_deref(), Some(scope.as_str()));
        assert_eq!(who.is_legacy_key, legacy, "{scope} isLegacyKey");
        assert_eq!(who.can_use_trades, trades, "{scope} canUseTrades");
        assert_eq!(
            who.can_use_platform_orders, platform,
            "{scope} canUsePlatformOrders"
        );
        assert_eq!(who.must_stage, stage, "{scope} mustStage");
        // The same flags, under their wire names, as JSON booleans.
        let (_, body) = get_raw(&server, Some(scope), "/api/delegated/whoami").await;
        assert_eq!(body["isLegacyKey"], legacy, "{scope}: {body}");
        assert_eq!(body["canUseTrades"], trades, "{scope}: {body}");
        assert_eq!(body["canUsePlatformOrders"], platform, "{scope}: {body}");
        assert_eq!(body["mustStage"], stage, "{scope}: {body}");
    }
}

#[tokio::test]
async fn whoami_refuses_an_unknown_include() {
    let server = common::start().await;
    for query in [
        "include=other",
        "include=SUMMARY",
        "include=summary,positions",
    ] {
        let (status, body) = get_raw(
            &server,
            Some(Scope::Legacy),
            &format!("/api/delegated/whoami?{query}"),
        )
        .await;
        assert_eq!(status, 400, "{query}: {body}");
        assert_eq!(body["success"], false);
        assert_eq!(body["error"]["code"], "invalid_query", "{body}");
        assert_eq!(body["error"]["field"], "include", "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("include"),
            "{body}"
        );
    }
}

// ---- usage ---------------------------------------------------------------------------------------

#[tokio::test]
async fn usage_is_the_same_payload_on_both_paths_and_counts_posts_per_key() {
    let server = common::start().await;
    let client = server.legacy();

    let a = client.get_usage().await.unwrap();
    let b = client.get_usage_v1().await.unwrap();
    assert_eq!(
        a, b,
        "GET /api/delegated/usage and GET /api/v1/usage differ"
    );
    assert_eq!(a.period, "2026-06-01");
    assert_eq!(a.api_post_quota.used, 0);
    assert_eq!(a.api_post_quota.limit, Settings::default().daily_post_cap);
    assert_eq!(a.api_post_quota.remaining, a.api_post_quota.limit);
    let midnight = "2026-06-02T00:00:00Z".parse().unwrap();
    assert_eq!(a.api_post_quota.resets_at, Some(midnight));
    assert_eq!(a.compute.limit, Settings::default().daily_compute_cap);
    assert_eq!(a.compute.resets_at, Some(midnight));

    // The raw payloads have the same shape on both paths.
    let (_, raw_a) = get_raw(&server, Some(Scope::Legacy), "/api/delegated/usage").await;
    let (_, raw_b) = get_raw(&server, Some(Scope::Legacy), "/api/v1/usage").await;
    assert_eq!(keys_of(&raw_a), keys_of(&raw_b));
    for key in ["apiPostQuota", "compute"] {
        assert_eq!(keys_of(&raw_a[key]), keys_of(&raw_b[key]), "{key}");
        for field in ["used", "limit", "resetsAt"] {
            assert!(raw_a[key].get(field).is_some(), "{key}.{field}: {raw_a}");
        }
    }

    // A POST marked "429 possible" counts against this key's cap; GETs and other keys do not.
    client.propose_trade(&long("BTCUSDT", None)).await.unwrap();
    client.whoami(true).await.unwrap();
    client.get_positions().await.unwrap();
    let a = client.get_usage().await.unwrap();
    assert_eq!(a.api_post_quota.used, 1);
    assert_eq!(a.api_post_quota.remaining, a.api_post_quota.limit - 1);
    assert_eq!(client.get_usage_v1().await.unwrap(), a);
    let other = server.client(Scope::McpMutate).get_usage().await.unwrap();
    assert_eq!(other.api_post_quota.used, 0);
}

// ---- positions and PnL ---------------------------------------------------------------------------

#[tokio::test]
async fn positions_start_empty_and_list_venue_before_venue2() {
    let server = common::start().await;
    let legacy = server.legacy();
    assert!(legacy.get_positions().await.unwrap().positions.is_empty());
    let (_, raw) = get_raw(&server, Some(Scope::Legacy), "/api/delegated/positions").await;
    assert_eq!(raw["positions"], json!([]));

    // venue2 is opened first, so the listing order is the server's, not the creation order.
    let staged = legacy
        .propose_trade(&long("ETHUSDT", Some("venue2")))
        .await
        .unwrap();
    legacy.confirm_trade(&staged.proposal_id).await.unwrap();
    server
        .client(Scope::PlatformTrade)
        .platform_place_order(&platform_long("BTC-USD", "venue"), None)
        .await
        .unwrap();

    let positions = legacy.get_positions().await.unwrap().positions;
    let listed: Vec<(&str, &str)> = positions
        .iter()
        .map(|p| (p.exchange.as_str(), p.coin.as_str()))
        .collect();
    assert_eq!(listed, [("venue", "BTC"), ("venue2", "ETH")]);
    for p in &positions {
        assert_eq!(p.side, "long");
        assert!(p.szi > 0.0 && p.entry_px > 0.0, "{p:?}");
        assert_eq!(p.position_id, format!("{}:{}", p.exchange, p.coin));
    }

    // Venue rows carry decimal strings, as the venue writes them.
    let (_, raw) = get_raw(&server, Some(Scope::Legacy), "/api/delegated/positions").await;
    let rows = raw["positions"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for (row, typed) in rows.iter().zip(&positions) {
        for (field, value) in [("szi", typed.szi), ("entryPx", typed.entry_px)] {
            let text = row[field]
                .as_str()
                .unwrap_or_else(|| panic!("{field} is not a string: {row}"));
            assert!(!text.contains('e') && !text.contains('E'), "{field}={text}");
            assert_eq!(text.parse::<f64>().unwrap(), value, "{field}");
        }
    }
}

#[tokio::test]
async fn pnl_summary_starts_at_initial_equity_and_breaks_down_by_exchange() {
    let server = common::start().await;
    let client = server.legacy();
    let pnl = client.pnl_summary().await.unwrap();
    assert_close(pnl.total_portfolio_value, 100_000.0, "totalPortfolioValue");
    for (name, v) in [
        ("total", pnl.pnl.total),
        ("today", pnl.pnl.today),
        ("week", pnl.pnl.week),
        ("month", pnl.pnl.month),
    ] {
        assert_close(v, 0.0, name);
    }
    assert_eq!(pnl.total_positions, 0);
    let exchanges: Vec<&str> = pnl
        .exchange_breakdown
        .iter()
        .map(|b| b.exchange.as_str())
        .collect();
    assert_eq!(exchanges, ["venue", "venue2"]);
    assert!(pnl.exchange_breakdown.iter().all(|b| b.positions == 0));

    let (_, raw) = get_raw(&server, Some(Scope::Legacy), "/api/delegated/pnl/summary").await;
    for key in [
        "totalPortfolioValue",
        "totalUnrealizedPnL",
        "totalRealizedPnL",
        "pnl",
        "exchangeBreakdown",
        "marginSummary",
    ] {
        assert!(raw.get(key).is_some(), "{key} missing: {raw}");
    }
    assert_eq!(
        keys_of(&raw["pnl"]),
        set(&["total", "today", "week", "month"])
    );

    // A venue2 position shows in venue2's row; fees and slippage cost a little equity.
    let staged = client
        .propose_trade(&long("ETHUSDT", Some("venue2")))
        .await
        .unwrap();
    client.confirm_trade(&staged.proposal_id).await.unwrap();
    let pnl = client.pnl_summary().await.unwrap();
    assert_eq!(pnl.total_positions, 1);
    let venue = &pnl.exchange_breakdown[0];
    let venue2 = &pnl.exchange_breakdown[1];
    assert_eq!((venue.positions, venue2.positions), (0, 1));
    assert!(venue2.margin_used > 0.0, "{venue2:?}");
    assert_close(venue.margin_used, 0.0, "venue margin");
    assert!(
        pnl.total_portfolio_value < 100_000.0 && pnl.total_portfolio_value > 99_000.0,
        "{}",
        pnl.total_portfolio_value
    );
    assert!(pnl.pnl.total < 0.0, "{:?}", pnl.pnl);
}

// ---- audit logs ----------------------------------------------------------------------------------

#[tokio::test]
async fn audit_logs_record_mutate_attempts_newest_first_and_not_reads() {
    let server = common::start().await;
    let client = server.legacy();
    assert!(client.list_audit_logs(None).await.unwrap().logs.is_empty());

    let staged = client.propose_trade(&long("BTCUSDT", None)).await.unwrap();
    let missing = client.confirm_trade("prop_doesnotexist").await.unwrap_err();
    assert!(matches!(missing, ApiError::NotFound { .. }), "{missing:?}");
    // Reads in between are not audited.
    client.whoami(true).await.unwrap();
    client.get_positions().await.unwrap();
    client.get_usage().await.unwrap();
    client.list_open_orders(None).await.unwrap();
    let bad = client
        .place_order(&long("FOOUSDT", None))
        .await
        .unwrap_err();
    assert!(matches!(bad, ApiError::Invalid { .. }), "{bad:?}");
    // Another key of the same account: its attempts are the account's too.
    let done = server
        .client(Scope::PlatformTrade)
        .platform_place_order(&platform_long("ETH-USD", "venue"), None)
        .await
        .unwrap();

    let logs = client.list_audit_logs(None).await.unwrap().logs;
    let ops: Vec<&str> = logs.iter().map(|l| l.operation.as_str()).collect();
    assert_eq!(
        ops,
        [
            "platform_place_order",
            "place_order",
            "confirm_trade",
            "propose_trade"
        ]
    );
    assert!(logs.windows(2).all(|w| w[0].id > w[1].id), "newest first");

    let [platform, place, confirm, propose] = &logs[..] else {
        unreachable!()
    };
    assert_eq!(
        (platform.outcome.as_str(), platform.http_status),
        ("ok", 200)
    );
    assert!(platform.oid.is_some());
    assert_eq!(
        platform.oid,
        done.execution.fills.first().map(|f| f.oid),
        "the audit row names the order"
    );
    assert_eq!((place.outcome.as_str(), place.http_status), ("error", 400));
    assert_eq!(place.error_code.as_deref(), Some("invalid_body"));
    assert!(place.message.as_deref().unwrap_or("").contains("FOOUSDT"));
    assert_eq!(
        (confirm.outcome.as_str(), confirm.http_status),
        ("error", 404)
    );
    assert_eq!(confirm.error_code.as_deref(), Some("not_found"));
    assert_eq!((propose.outcome.as_str(), propose.http_status), ("ok", 200));
    assert_eq!(propose.error_code, None);
    assert_eq!(
        propose.proposal_id.as_deref(),
        Some(staged.proposal_id.as_str())
    );
    assert_eq!(propose.time, common::t0());

    // Every key of the account sees the same rows.
    let via_mcp = server
        .client(Scope::McpMutate)
        .list_audit_logs(None)
        .await
        .unwrap()
        .logs;
    assert_eq!(via_mcp, logs);
}

#[tokio::test]
async fn audit_logs_are_limited_to_the_keys_own_account() {
    let server = common::start().await;
    server
        .legacy()
        .propose_trade(&long("BTCUSDT", None))
        .await
        .unwrap();

    // A second account with its own key, created the way `agentdesk keys` does, while the server runs.
    let other_key = {
        let mut store = Store::open(&server.db).unwrap();
        store
            .create_account(
                "4242424242",
                &keys::random_wallet(),
                100_000.0,
                common::t0(),
            )
            .unwrap();
        keys::create_key(
            &mut store,
            Some("4242424242"),
            Scope::Legacy,
            "test",
            common::t0(),
        )
        .unwrap()
    };
    let other = agentdesk::api::Client::new(&server.base_url(), Some(other_key)).unwrap();
    assert_eq!(
        other.whoami(false).await.unwrap().messenger_id,
        "4242424242"
    );
    assert!(
        other.list_audit_logs(None).await.unwrap().logs.is_empty(),
        "another account's rows leak"
    );

    let failed = other.confirm_trade("prop_nope").await.unwrap_err();
    assert!(matches!(failed, ApiError::NotFound { .. }), "{failed:?}");
    let theirs = other.list_audit_logs(None).await.unwrap().logs;
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0].operation, "confirm_trade");
    let ours = server.legacy().list_audit_logs(None).await.unwrap().logs;
    assert_eq!(ours.len(), 1);
    assert_eq!(ours[0].operation, "propose_trade");

    // No account override is accepted: an extra query parameter changes nothing.
    let (status, body) = get_raw(
        &server,
        Some(Scope::Legacy),
        "/api/delegated/logs?account=4242424242&messengerId=4242424242",
    )
    .await;
    assert_eq!(status, 200);
    let rows = body["logs"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["operation"], "propose_trade");
}

#[tokio::test]
async fn audit_log_limit_defaults_to_50_caps_at_500_and_refuses_bad_values() {
    let server = common::start().await;
    // 520 rows, straight into the store: the listing is what is under test here.
    {
        let store = Store::open(&server.db).unwrap();
        let account = store.accounts().unwrap()[0].clone();
        let key = store.keys().unwrap()[0].clone();
        for i in 0..520u64 {
            let row = agentdesk::sandbox::store::AuditRow {
                account_id: account.id,
                key_id: key.id,
                operation: format!("op_{i}"),
                outcome: "ok".into(),
                http_status: 200,
                ..Default::default()
            };
            store.insert_audit(&row, common::t0()).unwrap();
        }
    }
    let client = server.legacy();
    let default = client.list_audit_logs(None).await.unwrap();
    assert_eq!(default.logs.len(), 50);
    assert_eq!(default.logs[0].operation, "op_519", "newest first");
    assert_eq!(default.extra["limit"], 50);
    assert_eq!(client.list_audit_logs(Some(7)).await.unwrap().logs.len(), 7);
    assert_eq!(client.list_audit_logs(Some(1)).await.unwrap().logs.len(), 1);
    let capped = client.list_audit_logs(Some(10_000)).await.unwrap();
    assert_eq!(capped.logs.len(), 500);
    assert_eq!(capped.extra["limit"], 500);
    assert_eq!(capped.logs[499].operation, "op_20");

    for bad in ["abc", "0", "-1", "1.5", "1e3"] {
        let (status, body) = get_raw(
            &server,
            Some(Scope::Legacy),
            &format!("/api/delegated/logs?limit={bad}"),
        )
        .await;
        assert_eq!(status, 400, "limit={bad}: {body}");
        assert_eq!(body["error"]["field"], "limit", "limit={bad}: {body}");
        assert!(
            body["error"]["code"]
                .as_str()
                .unwrap()
                .starts_with("invalid_"),
            "{body}"
        );
    }
    let err = client.list_audit_logs(Some(0)).await.unwrap_err();
    assert!(
        matches!(&err, ApiError::Invalid { field: Some(f), .. } if f == "limit"),
        "{err:?}"
    );
}

#[tokio::test]
async fn audit_logs_answer_503_when_the_log_store_is_down() {
    let server = common::start_with(Settings {
        audit_log_unavailable: true,
        ..Default::default()
    })
    .await;
    let err = server.legacy().list_audit_logs(None).await.unwrap_err();
    assert!(matches!(err, ApiError::AuditUnavailable { .. }), "{err:?}");
    assert_eq!(err.code(), Some("audit_unavailable"));
    let (status, body) = get_raw(&server, Some(Scope::McpMutate), "/api/delegated/logs").await;
    assert_eq!(status, 503);
    assert_eq!(body["success"], false);
    assert_eq!(body["error"]["code"], "audit_unavailable");
    // Only the log listing is down.
    server.legacy().whoami(false).await.unwrap();
    server
        .legacy()
        .propose_trade(&long("BTCUSDT", None))
        .await
        .unwrap();
}

// ---- tool catalog --------------------------------------------------------------------------------

#[tokio::test]
async fn tool_catalog_has_the_seed_shape_and_every_operation() {
    let server = common::start().await;
    let (status, raw) = get_raw(&server, Some(Scope::McpMutate), "/api/delegated/tools").await;
    assert_eq!(status, 200);
    assert_eq!(
        keys_of(&raw),
        set(&["success", "platform", "tools", "openapiUrl", "onboarding"])
    );
    assert_eq!(raw["success"], true);
    assert!(raw["platform"].is_string());
    assert_eq!(
        keys_of(&raw["onboarding"]),
        set(&[
            "platform",
            "baseUrl",
            "tools",
            "install",
            "onboardingUrl",
            "openapiUrl",
            "recommendedFlow",
            "docs",
            "examplePropose",
        ])
    );
    let install = raw["onboarding"]["install"].to_string();
    for var in ["AGENTDESK_BASE_URL", "AGENTDESK_API_KEY"] {
        assert!(install.contains(var), "install lacks {var}: {install}");
    }
    assert!(
        !install.contains(server.key(Scope::McpMutate).expose()),
        "the install hint must not echo the key"
    );
    assert_eq!(raw["onboarding"]["baseUrl"], server.base_url());
    assert_eq!(
        raw["onboarding"]["examplePropose"]["id"],
        server.running.messenger_id.as_str()
    );
    for tool in raw["tools"].as_array().unwrap() {
        for field in ["name", "description", "method", "path", "auth"] {
            let v = tool[field].as_str().unwrap_or("");
            assert!(!v.is_empty(), "{field} missing or empty: {tool}");
        }
        assert_eq!(tool["status"], "live", "{tool}");
    }

    let catalog = server.client(Scope::McpMutate).list_tools().await.unwrap();
    let openapi_url = server.url("/api/agent/openapi.json");
    assert_eq!(catalog.openapi_url, openapi_url);
    assert_eq!(raw["onboarding"]["openapiUrl"], openapi_url.as_str());
    assert_eq!(catalog.tools.len(), OPERATIONS.len());
    for op in OPERATIONS {
        let tool = catalog
            .tools
            .iter()
            .find(|t| t.name == op.name)
            .unwrap_or_else(|| panic!("{} is not in the tool catalog", op.name));
        assert_eq!(tool.method, op.method.as_str(), "{}", op.name);
        assert_eq!(tool.path, op.path, "{}", op.name);
        assert_eq!(tool.status, "live");
    }
}

// ---- open orders ---------------------------------------------------------------------------------

#[tokio::test]
async fn open_orders_filter_by_exchange_and_default_to_all() {
    let server = common::start().await;
    let client = server.legacy();
    let empty = client.list_open_orders(None).await.unwrap();
    assert_eq!(empty.exchange, "all");
    assert!(empty.orders.is_empty());

    // Limit buys far below the market rest on each exchange.
    let on_venue = client
        .place_order(&limit_buy("BTCUSDT", 1_000.0, "venue"))
        .await
        .unwrap();
    let on_venue2 = client
        .place_order(&limit_buy("ETHUSDT", 100.0, "venue2"))
        .await
        .unwrap();
    let oid = |r: &agentdesk::api::model::ExecutionResult| {
        r.execution
            .resting
            .first()
            .unwrap_or_else(|| panic!("the limit order did not rest: {r:?}"))
            .oid
    };
    let (venue_oid, venue2_oid) = (oid(&on_venue), oid(&on_venue2));

    let all = client.list_open_orders(None).await.unwrap();
    assert_eq!(all.exchange, "all");
    let mut oids: Vec<u64> = all.orders.iter().map(|o| o.oid).collect();
    oids.sort();
    assert_eq!(oids, [venue_oid, venue2_oid]);
    assert_eq!(
        client.list_open_orders(Some("all")).await.unwrap().orders,
        all.orders
    );

    let venue = client.list_open_orders(Some("venue")).await.unwrap();
    assert_eq!(venue.exchange, "venue");
    assert_eq!(venue.orders.len(), 1);
    assert_eq!(
        (
            venue.orders[0].oid,
            venue.orders[0].exchange.as_str(),
            venue.orders[0].coin.as_str()
        ),
        (venue_oid, "venue", "BTC")
    );
    let venue2 = client.list_open_orders(Some("venue2")).await.unwrap();
    assert_eq!(venue2.orders.len(), 1);
    assert_eq!(
        (venue2.orders[0].oid, venue2.orders[0].coin.as_str()),
        (venue2_oid, "ETH")
    );

    // Rows of venue carry an integer oid and the venue's decimal strings.
    let (_, raw) = get_raw(
        &server,
        Some(Scope::Legacy),
        "/api/v1/orders?exchange=venue",
    )
    .await;
    assert_eq!(raw["orders"][0]["oid"], venue_oid);
    assert_eq!(raw["orders"][0]["limitPx"], "1000");

    let err = client.list_open_orders(Some("venue3")).await.unwrap_err();
    assert!(
        matches!(&err, ApiError::Invalid { field: Some(f), .. } if f == "exchange"),
        "{err:?}"
    );
    let (status, body) =
        get_raw(&server, Some(Scope::Legacy), "/api/v1/orders?exchange=nope").await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["field"], "exchange");
}

// ---- OpenAPI and routing -------------------------------------------------------------------------

#[tokio::test]
async fn openapi_document_is_3_0_3_with_an_operation_id_per_catalog_operation() {
    let server = common::start().await;
    let doc = server.legacy().get_openapi().await.unwrap();
    assert_eq!(doc["openapi"], "3.0.3");
    let mut ids = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let id = op["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path} has no operationId"));
            assert!(ids.insert(id.to_string()), "operationId {id} repeats");
        }
    }
    let names: BTreeSet<String> = OPERATIONS.iter().map(|o| o.name.to_string()).collect();
    assert_eq!(ids, names);
    for op in OPERATIONS {
        let method = op.method.as_str().to_ascii_lowercase();
        assert_eq!(
            doc["paths"][op.path][&method]["operationId"],
            op.name,
            "{} {}",
            op.method.as_str(),
            op.path
        );
    }
    // The document is served as is, not wrapped in a success envelope.
    let (status, raw) = get_raw(&server, Some(Scope::Legacy), "/api/agent/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(raw["openapi"], "3.0.3");
    assert!(raw.get("success").is_none());
}

#[tokio::test]
async fn every_catalog_operation_is_routed_and_unknown_paths_get_a_json_404() {
    let server = common::start().await;
    let http = server.http();
    let key = server.key(Scope::Legacy);
    for op in OPERATIONS {
        let args: Vec<&str> = op.path_params().iter().map(|_| "x").collect();
        let url = server.url(&op.path_with(&args));
        let req = match op.method {
            Method::Get => http.get(&url),
            Method::Post => http
                .post(&url)
                .header("content-type", "application/json")
                .body("{}"),
        };
        let resp = req.header("x-api-key", key.expose()).send().await.unwrap();
        let status = resp.status().as_u16();
        assert_ne!(status, 405, "{} {url}: method not routed", op.name);
        let body: Value = resp
            .json()
            .await
            .unwrap_or_else(|e| panic!("{} {url}: body is not JSON: {e}", op.name));
        let message = body["error"]["message"].as_str().unwrap_or("");
        assert!(
            !message.starts_with("no operation at"),
            "{} {url} fell through to the router's fallback: {body}",
            op.name
        );
        assert!(
            status < 500 || status == 501,
            "{} {url}: {status} {body}",
            op.name
        );
    }

    for (method, path) in [
        ("GET", "/api/delegated/nothing-here"),
        ("POST", "/api/v1/nothing-here"),
        ("GET", "/"),
        ("GET", "/api/delegated/whoami/extra"),
    ] {
        let req = if method == "GET" {
            http.get(server.url(path))
        } else {
            http.post(server.url(path)).body("{}")
        };
        // With and without a key: an unknown path is a 404 either way.
        for with_key in [true, false] {
            let req = req.try_clone().unwrap();
            let req = if with_key {
                req.header("x-api-key", key.expose())
            } else {
                req
            };
            let resp = req.send().await.unwrap();
            assert_eq!(resp.status().as_u16(), 404, "{method} {path}");
            let body: Value = resp.json().await.expect("a JSON 404");
            assert_eq!(body["success"], false);
            assert_eq!(body["error"]["code"], "not_found", "{body}");
            assert!(
                body["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("no operation at"),
                "{body}"
            );
        }
    }
}
