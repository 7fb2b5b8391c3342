//! The pre-trade controls over loopback, judged on the sandbox's own database: what breaks a
//! control never executes and what stays under it does, on proposals, immediate orders and MCP
//! tool calls alike.

use super::guard::{approve, guarded, passed, propose, put_policy, refused, trade};
use super::mcp::{call, connect, text};
use super::{Setup, send, upstream_count};
use agentdesk::api::Scope;
use agentdesk::secret::Secret;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

fn sandbox_count(s: &Setup, sql: &str) -> i64 {
    agentdesk::sandbox::store::Store::open(&s.sandbox.db)
        .unwrap()
        .conn
        .query_row(sql, [], |r| r.get(0))
        .unwrap()
}

fn executed(s: &Setup) -> i64 {
    sandbox_count(
        s,
        "SELECT COUNT(*) FROM proposals WHERE status = 'executed'",
    )
}

fn num(v: &Value) -> f64 {
    v.as_f64()
        .or_else(|| v.as_str().and_then(|t| t.parse().ok()))
        .unwrap_or_else(|| panic!("not a number: {v}"))
}

/// BTC's mark as the sandbox prices it (its clock stands still, so the mark does too), from a
/// staging made at the sandbox directly.
async fn btc_mark(s: &Setup, key: &Secret) -> f64 {
    let (st, body) = send(
        &s.sandbox.base_url(),
        Method::POST,
        "/api/delegated/propose",
        Some(key.expose()),
        Some(trade("BTC", 100.0)),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    num(&body["preview"]["markPx"])
}

/// A BTC long sized in USD, with its stop loss at `sl` (a price).
fn long(size_usd: f64, sl: f64) -> Value {
    json!({"strategy": "Agent", "a": "BTCUSDT", "d": "long", "o": "market",
           "sizeUsd": size_usd, "leverage": 3, "sl": sl.to_string()})
}

async fn approved_runs(s: &Setup, id: &str) {
    let (st, body) = approve(s, id, None).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["status"], "executed", "{body}");
}

async fn set(s: &Setup, policy: Value) {
    let (st, body) = put_policy(s, policy).await;
    assert_eq!(st, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn collar_size_loss_and_position_refuse_over_the_limit_and_pass_under_it_on_proposals() {
    let s = guarded(|_| {}).await;
    let key = s.sandbox.key(Scope::McpMutate);
    let mark = btc_mark(&s, &key).await;
    let equity = s
        .sandbox
        .legacy()
        .pnl_summary()
        .await
        .unwrap()
        .total_portfolio_value;
    assert!(equity > 10_000.0, "{equity}");
    // A BTC position, so the account states BTC's mark before the service prices a staging.
    approved_runs(
        &s,
        &passed(&propose(&s, &key, long(1000.0, mark * 0.9)).await),
    )
    .await;
    let mut done = executed(&s);
    assert_eq!(done, 1);

    set(&s, json!({"price_collar_pct": 2})).await;
    let limit = |px: f64| {
        json!({"strategy": "Agent", "a": "BTCUSDT", "d": "long", "o": "limit", "p": px.to_string(),
               "size": 0.001, "leverage": 3})
    };
    let before = upstream_count(&s, "propose_trade");
    refused(
        &propose(&s, &key, limit(mark * 0.97)).await,
        "price_collar_pct",
        &["% from mark", "collar 2 %"],
    );
    refused(
        &propose(&s, &key, long(500.0, mark * 1.01)).await,
        "price_collar_pct",
        &["stop loss", "of a long is at or above the mark"],
    );
    assert_eq!(
        upstream_count(&s, "propose_trade"),
        before,
        "nothing staged"
    );
    approved_runs(&s, &passed(&propose(&s, &key, limit(mark * 0.985)).await)).await;
    done += 1;
    assert_eq!(executed(&s), done);

    set(&s, json!({"max_order_size": {"BTC": 0.02, "ETH": 1}})).await;
    let sized = |size: f64| {
        json!({"strategy": "Agent", "a": "BTCUSDT", "d": "long", "o": "market", "size": size,
               "leverage": 3})
    };
    refused(
        &propose(&s, &key, sized(0.021)).await,
        "max_order_size",
        &["0.021000 BTC", "max_order_size.BTC = 0.02 BTC"],
    );
    // In USD the size in coins comes from the mark: 0.021 BTC's worth is refused too.
    refused(
        &propose(&s, &key, long(0.021 * mark, mark * 0.9)).await,
        "max_order_size",
        &["max_order_size.BTC"],
    );
    approved_runs(&s, &passed(&propose(&s, &key, sized(0.019)).await)).await;
    done += 1;
    assert_eq!(executed(&s), done);

    set(&s, json!({"max_loss_per_trade_pct": 1})).await;
    // A stop 2 % under the mark loses 2 % of the notional: 0.6 × equity loses 1.2 % of it.
    refused(
        &propose(&s, &key, long(0.6 * equity, mark * 0.98)).await,
        "max_loss_per_trade_pct",
        &["% of equity", "max_loss_per_trade_pct = 1 %"],
    );
    let mut bare = long(1000.0, 1.0);
    bare.as_object_mut().unwrap().remove("sl");
    refused(
        &propose(&s, &key, bare).await,
        "max_loss_per_trade_pct",
        &["no stop loss"],
    );
    approved_runs(
        &s,
        &passed(&propose(&s, &key, long(0.45 * equity, mark * 0.98)).await),
    )
    .await;
    done += 1;
    assert_eq!(executed(&s), done);

    // The position is read from the account: its USD value now, and the limit 1,000 above it.
    let held: f64 = s
        .sandbox
        .legacy()
        .get_positions()
        .await
        .unwrap()
        .positions
        .iter()
        .filter(|p| p.coin == "BTC")
        .map(|p| p.szi * mark)
        .sum();
    set(&s, json!({"max_position_usd": held + 1000.0})).await;
    refused(
        &propose(&s, &key, long(1100.0, mark * 0.9)).await,
        "max_position_usd",
        &["net BTC position after the fill", "max_position_usd"],
    );
    approved_runs(
        &s,
        &passed(&propose(&s, &key, long(900.0, mark * 0.9)).await),
    )
    .await;
    done += 1;
    assert_eq!(executed(&s), done);
    // A close passes every control.
    set(
        &s,
        json!({"max_position_usd": 1, "price_collar_pct": 0.1, "max_order_size": {"BTC": 0.0001},
               "max_loss_per_trade_pct": 0.01}),
    )
    .await;
    let close = passed(&propose(&s, &key, json!({"a": "BTCUSDT", "d": "close"})).await);
    approved_runs(&s, &close).await;
    assert_eq!(
        sandbox_count(&s, "SELECT COUNT(*) FROM positions WHERE coin = 'BTC'"),
        0
    );
}

#[tokio::test]
async fn stagings_per_minute_and_executions_per_hour_count_per_agent() {
    let s = guarded(|_| {}).await;
    let key = s.sandbox.key(Scope::McpMutate);
    set(&s, json!({"max_stagings_per_minute": 3})).await;
    let mut staged = Vec::new();
    for _ in 0..3 {
        staged.push(passed(&propose(&s, &key, trade("BTC", 500.0)).await));
    }
    let before = upstream_count(&s, "propose_trade");
    refused(
        &propose(&s, &key, trade("BTC", 500.0)).await,
        "max_stagings_per_minute",
        &["4 stagings", "max_stagings_per_minute = 3"],
    );
    assert_eq!(upstream_count(&s, "propose_trade"), before);
    // Another agent has a window of its own.
    let other = s.sandbox.key(Scope::Legacy);
    passed(&propose(&s, &other, trade("ETH", 500.0)).await);
    // Sliding: a minute later the window is empty again.
    s.sandbox.clock.advance(chrono::Duration::seconds(61));
    staged.push(passed(&propose(&s, &key, trade("BTC", 500.0)).await));

    set(&s, json!({"max_executions_per_hour": 2})).await;
    approved_runs(&s, &staged[1]).await;
    approved_runs(&s, &staged[2]).await;
    // Reaching the limit suspends the agent, saying why: its next approval and its next staging
    // are refused as suspended, and nothing else executes.
    let (st, agents) = s.supervisor(Method::GET, "/gate/v1/agents", None).await;
    assert_eq!(st, StatusCode::OK, "{agents}");
    let fp = key.fingerprint();
    let me = agents["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["fingerprint"] == fp.as_str())
        .unwrap_or_else(|| panic!("{fp} in {agents}"))
        .clone();
    assert_eq!(me["state"], "suspended", "{me}");
    assert_eq!(me["suspension"]["by"], "policy", "{me}");
    assert!(
        me["suspension"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("max_executions_per_hour")),
        "{me}"
    );
    let (st, body) = approve(&s, &staged[3], None).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "agent_suspended", "{body}");
    let (st, body) = propose(&s, &key, trade("BTC", 500.0)).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "agent_suspended", "{body}");
    assert_eq!(executed(&s), 2);
    // Another agent is not suspended with it.
    passed(&propose(&s, &other, trade("ETH", 500.0)).await);
    // An admin resumes it; within the hour the throttle still refuses a third execution, and a
    // staging.
    let (st, body) = s
        .supervisor(Method::POST, &format!("/gate/v1/agents/{fp}/resume"), None)
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let (st, body) = approve(&s, &staged[3], None).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["rule"], "max_executions_per_hour", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("2 executions in the last hour reach max_executions_per_hour = 2"),
        "{body}"
    );
    refused(
        &propose(&s, &key, trade("BTC", 500.0)).await,
        "max_executions_per_hour",
        &["max_executions_per_hour = 2"],
    );
    assert_eq!(executed(&s), 2);
    s.sandbox.clock.advance(chrono::Duration::minutes(61));
    approved_runs(&s, &passed(&propose(&s, &key, trade("BTC", 500.0)).await)).await;
    assert_eq!(executed(&s), 3);
}

#[tokio::test]
async fn immediate_orders_are_priced_by_the_service_and_held_to_the_controls() {
    let s = guarded(|c| {
        c.policy = agentdesk::gateway::rules::policy::Policy::from_json(&json!({
            "allow_immediate": true, "price_collar_pct": 2, "max_order_size": {"BTC": 0.02},
            "max_stagings_per_minute": 7, "max_position_usd": 1e9,
        }))
        .unwrap();
    })
    .await;
    // The agent's first requests through the gateway are these orders: the position is read
    // with the key each brings, not one the gateway kept from an earlier request.
    let key = s.sandbox.key(Scope::Legacy);
    let mark = btc_mark(&s, &key).await;
    let who = s.sandbox.legacy().whoami(false).await.unwrap();
    let order = |o: &str, size: f64, px: Option<f64>| {
        let mut v = json!({"id": who.messenger_id, "strategy": "Agent", "a": "BTCUSDT",
                           "d": "long", "o": o, "size": size, "leverage": 3});
        if let Some(px) = px {
            v["p"] = json!(px.to_string());
        }
        v
    };
    let post = |body: Value| {
        let (base, key) = (s.gate.base_url(), key.expose().to_string());
        async move {
            send(
                &base,
                Method::POST,
                "/api/v1/trades",
                Some(&key),
                Some(body),
            )
            .await
        }
    };
    let fills = || sandbox_count(&s, "SELECT COUNT(*) FROM fills");
    let orders = || sandbox_count(&s, "SELECT COUNT(*) FROM orders");
    let (fills0, orders0) = (fills(), orders());
    refused(
        &post(order("limit", 0.01, Some(mark * 0.97))).await,
        "price_collar_pct",
        &["% from mark", "collar 2 %"],
    );
    refused(
        &post(order("market", 0.03, None)).await,
        "max_order_size",
        &["0.030000 BTC"],
    );
    assert_eq!(
        (fills(), orders()),
        (fills0, orders0),
        "nothing reached the venue"
    );
    let (st, body) = post(order("limit", 0.01, Some(mark * 0.985))).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(orders(), orders0 + 1, "the resting order is the sandbox's");
    let (st, body) = post(order("market", 0.019, None)).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert!(fills() > fills0, "the market order filled");

    // A platform order has no preview: the mark is the account's, for a coin it holds.
    let platform = |pair: &str, px: f64| {
        json!({"pair": pair, "side": "long", "orderType": "limit", "limitPrice": px,
               "sizingMode": "usd", "usdAmount": 500, "leverage": 3, "exchange": "venue"})
    };
    let post_order = |body: Value| {
        let (base, key) = (s.gate.base_url(), key.expose().to_string());
        async move {
            send(
                &base,
                Method::POST,
                "/api/v1/orders",
                Some(&key),
                Some(body),
            )
            .await
        }
    };
    let placed = upstream_count(&s, "platform_place_order");
    refused(
        &post_order(platform("BTC-USD", mark * 0.97)).await,
        "price_collar_pct",
        &["% from mark"],
    );
    refused(
        &post_order(platform("ETH-USD", 2000.0)).await,
        "price_collar_pct",
        &["mark of ETH is not known", "holds no ETH position"],
    );
    assert_eq!(upstream_count(&s, "platform_place_order"), placed);
    let orders_before = orders();
    let (st, body) = post_order(platform("BTC-USD", mark * 0.985)).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(
        orders(),
        orders_before + 1,
        "the platform order rests at the sandbox"
    );
    // Immediate trades count against the message limit as stagings do: seven so far.
    refused(
        &post(order("market", 0.01, None)).await,
        "max_stagings_per_minute",
        &["8 stagings"],
    );
}

#[tokio::test]
async fn mcp_tool_calls_meet_the_same_controls() {
    let s = guarded(|c| {
        c.policy = agentdesk::gateway::rules::policy::Policy::from_json(&json!({
            "price_collar_pct": 2, "max_order_size": {"BTC": 0.02},
        }))
        .unwrap();
    })
    .await;
    let key = s.sandbox.key(Scope::Legacy);
    let mark = btc_mark(&s, &key).await;
    let c = connect(&s, &key).await;
    let signal = |size: f64, px: f64| {
        json!({"id": s.sandbox.running.messenger_id, "strategy": "Agent", "a": "BTCUSDT",
               "d": "long", "o": "limit", "p": px.to_string(), "size": size, "leverage": 3})
    };
    for tool in ["service_propose_trade", "service_place_order"] {
        let r = call(&c, tool, signal(0.01, mark * 0.97)).await;
        assert_eq!(r.is_error, Some(true), "{tool}: {}", text(&r));
        assert!(text(&r).contains("collar 2 %"), "{tool}: {}", text(&r));
        let r = call(&c, tool, signal(0.03, mark)).await;
        assert_eq!(r.is_error, Some(true), "{tool}: {}", text(&r));
        assert!(text(&r).contains("max_order_size"), "{tool}: {}", text(&r));
        let r = call(&c, tool, signal(0.019, mark * 0.985)).await;
        assert_eq!(r.is_error, Some(false), "{tool}: {}", text(&r));
    }
    let pending = s.inbox("pending").await;
    assert_eq!(pending.len(), 2, "{pending:?}");
    for item in &pending {
        approved_runs(&s, item["id"].as_str().unwrap()).await;
    }
    assert_eq!(
        sandbox_count(&s, "SELECT COUNT(*) FROM orders"),
        2,
        "both resting limit orders are the sandbox's"
    );
}

#[tokio::test]
async fn control_keys_are_read_strictly_naming_the_key() {
    let s = guarded(|_| {}).await;
    for (policy, field) in [
        (
            json!({"max_order_size": {"BTC": "half"}}),
            "policy.max_order_size.BTC",
        ),
        (json!({"max_order_size": [0.5]}), "policy.max_order_size"),
        (json!({"price_collar_pct": -2}), "policy.price_collar_pct"),
        (json!({"max_position_usd": 0}), "policy.max_position_usd"),
        (
            json!({"max_loss_per_trade_pct": "1"}),
            "policy.max_loss_per_trade_pct",
        ),
        (
            json!({"max_stagings_per_minute": 2.5}),
            "policy.max_stagings_per_minute",
        ),
        (
            json!({"agents": {"bot": {"max_executions_per_hour": -1}}}),
            "policy.agents.bot.max_executions_per_hour",
        ),
        (
            json!({"agents": {"bot": {"max_order_size": {"ETH": -1}}}}),
            "policy.agents.bot.max_order_size.ETH",
        ),
    ] {
        let (st, body) = put_policy(&s, policy.clone()).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{policy}: {body}");
        assert_eq!(body["error"]["field"], field, "{policy}: {body}");
    }
    let e = agentdesk::gateway::rules::policy::GateSettings::with_policy_from_toml(
        "[policy]\nmax_order_size = { BTC = 0.5, ETH = \"ten\" }\n",
    )
    .unwrap_err();
    assert!(e.to_string().contains("policy.max_order_size.ETH"), "{e}");
}

#[tokio::test]
async fn an_agents_first_request_is_judged_with_its_own_key_where_the_gateway_has_none() {
    // No key of the gateway's own: the account is read with the agent's, which the gateway has
    // not kept yet (it keeps a key once the upstream accepted it).
    let s = super::setup().await;
    let key = s.sandbox.key(Scope::Legacy);
    let mark = btc_mark(&s, &key).await;
    let who = s.sandbox.legacy().whoami(false).await.unwrap();
    // With no BTC position and no preview yet, the collar cannot measure this stop loss, and the
    // size can: the rule named is the one the agent must change.
    set(
        &s,
        json!({"price_collar_pct": 2, "max_order_size": {"BTC": 0.02}}),
    )
    .await;
    let before = upstream_count(&s, "propose_trade");
    let answer = propose(
        &s,
        &key,
        json!({"a": "BTCUSDT", "d": "long", "o": "market", "size": 0.03, "leverage": 3,
               "sl": (mark * 0.99).to_string()}),
    )
    .await;
    refused(&answer, "max_order_size", &["0.030000 BTC"]);
    assert_eq!(
        answer.1["error"]["rules"],
        json!(["max_order_size", "price_collar_pct"])
    );
    assert_eq!(upstream_count(&s, "propose_trade"), before);
    set(
        &s,
        json!({"allow_immediate": true, "max_position_usd": 1e9, "max_loss_per_trade_pct": 50}),
    )
    .await;
    let fills = sandbox_count(&s, "SELECT COUNT(*) FROM fills");
    let (st, body) = send(
        &s.gate.base_url(),
        Method::POST,
        "/api/v1/trades",
        Some(key.expose()),
        Some(
            json!({"id": who.messenger_id, "strategy": "Agent", "a": "BTCUSDT", "d": "long",
                    "o": "market", "sizeUsd": 500, "leverage": 3,
                    "sl": (mark * 0.95).to_string()}),
        ),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert!(sandbox_count(&s, "SELECT COUNT(*) FROM fills") > fills);
}
