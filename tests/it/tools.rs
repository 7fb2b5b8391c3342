//! MCP tool access over loopback: the capabilities catalog, execute_mcp_tool through the same path
//! as the HTTP operations (scopes, quotas, audit), and the confirm-token flow of mutate tools.

use crate::common;
use agentdesk::api::ApiError;
use agentdesk::api::Scope;
use agentdesk::api::model::ToolResult;
use agentdesk::sandbox::Settings;
use chrono::Duration;
use serde_json::{Value, json};

fn long_btc() -> Value {
    json!({"a": "BTCUSDT", "d": "long", "o": "market", "sizeUsd": 2000, "strategy": "Agent"})
}

fn with_token(args: &Value, token: &str) -> Value {
    let mut args = args.clone();
    args["confirmToken"] = json!(token);
    args
}

fn token_of(r: &ToolResult) -> String {
    assert!(r.requires_confirmation, "{r:?}");
    r.result["confirmToken"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn capabilities_list_tools_with_tiers_and_schemas() {
    let s = common::start().await;
    let caps = s.legacy().list_mcp_capabilities().await.unwrap();
    let tool = |name: &str| {
        caps.tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} missing"))
    };
    assert!(caps.tools.len() >= 29, "{}", caps.tools.len());
    assert!(caps.tools.iter().all(|t| t.name.starts_with("service_")));
    assert!(
        !caps
            .tools
            .iter()
            .any(|t| t.name == "service_execute_mcp_tool")
    );

    let propose = tool("service_propose_trade");
    assert_eq!(propose.tier, "mutate");
    assert!(propose.requires_confirmation);
    assert_eq!(
        (propose.method.as_str(), propose.path.as_str()),
        ("POST", "/api/delegated/propose")
    );
    for field in ["a", "d", "tp", "sl", "confirmToken"] {
        assert!(
            propose.input_schema["properties"][field].is_object(),
            "{field}: {}",
            propose.input_schema
        );
    }
    let job = tool("service_get_backtest_job");
    assert_eq!(job.tier, "experiment");
    assert_eq!(job.input_schema["required"], json!(["jobId"]));
    let backtest = tool("service_run_backtest");
    assert_eq!(backtest.tier, "experiment");
    assert!(!backtest.requires_confirmation);
    assert!(backtest.input_schema["properties"]["strategyId"].is_object());
    let positions = tool("service_get_positions");
    assert_eq!(positions.tier, "observe");
    assert_eq!(positions.input_schema["type"], "object");
    let logs = tool("service_list_audit_logs");
    assert_eq!(logs.input_schema["properties"]["limit"]["type"], "integer");

    let in_tier = |tier: &str, name: &str| {
        caps.tiers[tier]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == name)
    };
    assert!(in_tier("observe", "service_pnl_summary"));
    assert!(in_tier("experiment", "service_run_backtest"));
    for name in [
        "service_place_order",
        "service_confirm_trade",
        "service_platform_cancel_order",
        "service_create_signal_destination",
        "service_approve_builder_fee",
    ] {
        assert!(in_tier("mutate", name), "{name}");
        assert!(tool(name).requires_confirmation, "{name}");
    }
    for t in &caps.tools {
        assert!(in_tier(&t.tier, &t.name), "{} in tiers.{}", t.name, t.tier);
    }
}

#[tokio::test]
async fn disabled_mcp_answers_404_mcp_disabled() {
    let s = common::start_with(Settings {
        mcp_enabled: false,
        ..Settings::default()
    })
    .await;
    let c = s.legacy();
    for err in [
        c.list_mcp_capabilities().await.unwrap_err(),
        c.execute_mcp_tool("service_get_positions", json!({}))
            .await
            .unwrap_err(),
    ] {
        match err {
            ApiError::NotFound { code, message } => {
                assert_eq!(code, "mcp_disabled");
                assert!(message.contains("/api/delegated/tools"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
    // The operations themselves stay available.
    c.get_positions().await.unwrap();
}

#[tokio::test]
async fn observe_and_experiment_tools_run_at_once() {
    let s = common::start().await;
    let c = s.legacy();
    c.place_order(&serde_json::from_value(long_btc()).unwrap())
        .await
        .unwrap();
    let r = c
        .execute_mcp_tool("service_get_positions", json!({}))
        .await
        .unwrap();
    assert_eq!(r.tool, "service_get_positions");
    assert!(!r.requires_confirmation);
    assert_eq!(r.result["positions"][0]["coin"], "BTC");

    let r = c
        .execute_mcp_tool(
            "service_run_backtest",
            json!({"strategyId": "sma_cross", "pair": "BTC-USD", "timeframe": "1h", "days": 30}),
        )
        .await
        .unwrap();
    let job_id = r.result["jobId"].as_str().unwrap().to_string();
    assert!(job_id.starts_with("bt_"), "{}", r.result);
    let polled = c
        .execute_mcp_tool("service_get_backtest_job", json!({"jobId": job_id}))
        .await
        .unwrap();
    assert_eq!(polled.result["jobId"], json!(job_id));
    // The same job through the plain operation.
    assert_eq!(c.get_backtest_job(&job_id).await.unwrap().job_id, job_id);

    // GET args become query parameters, numbers stringified; the operation validates them.
    let logs = c
        .execute_mcp_tool("service_list_audit_logs", json!({"limit": 1}))
        .await
        .unwrap();
    assert_eq!(logs.result["logs"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn bad_args_and_unknown_tools_are_named() {
    let s = common::start().await;
    let c = s.legacy();
    match c
        .execute_mcp_tool("get_positions", json!({}))
        .await
        .unwrap_err()
    {
        ApiError::NotFound { code, message } => {
            assert_eq!(code, "unknown_tool");
            assert!(message.contains("service_get_positions"), "{message}");
            assert!(message.contains("/api/delegated/mcp/capabilities"));
        }
        other => panic!("{other:?}"),
    }
    let field = |e: ApiError| match e {
        ApiError::Invalid { field, .. } => field.unwrap_or_default(),
        other => panic!("{other:?}"),
    };
    // The operation's own 400, before any token exists.
    let e = c
        .execute_mcp_tool("service_propose_trade", json!({"a": "NOPE", "d": "long"}))
        .await
        .unwrap_err();
    assert_eq!(field(e), "a");
    let e = c
        .execute_mcp_tool(
            "service_run_backtest",
            json!({"strategyId": "nope", "pair": "BTC-USD", "timeframe": "1h", "days": 30}),
        )
        .await
        .unwrap_err();
    assert_eq!(field(e), "strategyId");
    let e = c
        .execute_mcp_tool("service_run_backtest", json!({"pair": "BTC-USD"}))
        .await
        .unwrap_err();
    assert_eq!(field(e), "strategyId");
    let e = c
        .execute_mcp_tool("service_list_audit_logs", json!({"limit": "many"}))
        .await
        .unwrap_err();
    assert_eq!(field(e), "limit");
    let e = c
        .execute_mcp_tool("service_get_positions", json!({"coin": "BTC"}))
        .await
        .unwrap_err();
    assert_eq!(field(e), "coin");
    let e = c
        .execute_mcp_tool("service_get_backtest_job", json!({}))
        .await
        .unwrap_err();
    assert_eq!(field(e), "jobId");
    let e = c
        .execute_mcp_tool("service_get_positions", json!([1]))
        .await
        .unwrap_err();
    assert_eq!(field(e), "args");
    assert!(
        c.list_proposals(None).await.unwrap().proposals.is_empty(),
        "nothing was staged"
    );
}

#[tokio::test]
async fn mutate_tools_confirm_then_run_once_with_audit() {
    let s = common::start().await;
    let c = s.client(Scope::McpMutate);
    let first = c
        .execute_mcp_tool("service_propose_trade", long_btc())
        .await
        .unwrap();
    assert_eq!(first.tool, "service_propose_trade");
    let token = token_of(&first);
    assert!(token.starts_with("ct_"), "{token}");
    let preview = &first.result["preview"];
    assert_eq!(preview["coin"], "BTC");
    assert_eq!(preview["direction"], "long");
    assert!(first.result["expiresAt"].is_string());
    assert!(
        first.result["summary"].as_str().unwrap().contains("BTC"),
        "{}",
        first.result
    );
    assert!(
        c.list_proposals(None).await.unwrap().proposals.is_empty(),
        "the first call runs nothing"
    );

    let run = c
        .execute_mcp_tool("service_propose_trade", with_token(&long_btc(), &token))
        .await
        .unwrap();
    assert!(!run.requires_confirmation);
    let proposal_id = run.result["proposalId"].as_str().unwrap().to_string();
    assert_eq!(run.result["status"], "staged");
    assert_eq!(c.list_proposals(None).await.unwrap().proposals.len(), 1);

    // A used token is refused, and nothing runs twice.
    match c
        .execute_mcp_tool("service_propose_trade", with_token(&long_btc(), &token))
        .await
        .unwrap_err()
    {
        ApiError::Conflict { code, .. } => assert_eq!(code, "confirm_token_used"),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.list_proposals(None).await.unwrap().proposals.len(), 1);

    // Confirming the proposal is a mutate tool too; its preview shows the staged trade.
    let args = json!({"proposalId": proposal_id});
    let first = c
        .execute_mcp_tool("service_confirm_trade", args.clone())
        .await
        .unwrap();
    assert_eq!(
        first.result["preview"]["proposal"]["preview"]["coin"],
        "BTC"
    );
    let token = token_of(&first);
    assert!(c.get_positions().await.unwrap().positions.is_empty());
    let done = c
        .execute_mcp_tool("service_confirm_trade", with_token(&args, &token))
        .await
        .unwrap();
    assert_eq!(done.result["status"], "executed");
    let positions = c.get_positions().await.unwrap().positions;
    assert_eq!(positions.len(), 1);
    assert_eq!(positions[0].coin, "BTC");

    let logs = c.list_audit_logs(Some(50)).await.unwrap().logs;
    let ok = |op: &str| {
        logs.iter()
            .any(|l| l.operation == op && l.outcome == "ok" && l.http_status == 200)
    };
    assert!(ok("propose_trade"), "{logs:?}");
    assert!(ok("confirm_trade"), "{logs:?}");
    assert!(
        logs.iter().any(|l| l.operation == "propose_trade"
            && l.error_code.as_deref() == Some("confirm_token_used")),
        "{logs:?}"
    );
}

#[tokio::test]
async fn scope_errors_pass_through_after_confirm() {
    let s = common::start().await;
    let c = s.client(Scope::McpMutate);
    let first = c
        .execute_mcp_tool("service_place_order", long_btc())
        .await
        .unwrap();
    let warning = first.result["scopeWarning"].as_str().unwrap_or_default();
    assert!(warning.contains("insufficient_scope"), "{}", first.result);
    let token = token_of(&first);
    match c
        .execute_mcp_tool("service_place_order", with_token(&long_btc(), &token))
        .await
        .unwrap_err()
    {
        ApiError::Forbidden { code, message } => {
            assert_eq!(code, "insufficient_scope");
            assert!(message.contains("propose"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(c.get_positions().await.unwrap().positions.is_empty());
    let logs = c.list_audit_logs(None).await.unwrap().logs;
    assert!(
        logs.iter().any(|l| l.operation == "place_order"
            && l.error_code.as_deref() == Some("insufficient_scope")),
        "{logs:?}"
    );
    // The token was spent on that attempt.
    match c
        .execute_mcp_tool("service_place_order", with_token(&long_btc(), &token))
        .await
        .unwrap_err()
    {
        ApiError::Conflict { code, message } => {
            assert_eq!(code, "confirm_token_used");
            assert!(message.contains("403"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // A legacy key runs the same tool.
    let legacy = s.legacy();
    let token = token_of(
        &legacy
            .execute_mcp_tool("service_place_order", long_btc())
            .await
            .unwrap(),
    );
    let done = legacy
        .execute_mcp_tool("service_place_order", with_token(&long_btc(), &token))
        .await
        .unwrap();
    assert_eq!(done.result["status"], "filled", "{}", done.result);
    assert_eq!(legacy.get_positions().await.unwrap().positions.len(), 1);
}

#[tokio::test]
async fn tokens_expire_and_bind_key_tool_and_args() {
    let s = common::start().await;
    let c = s.legacy();
    let token = token_of(
        &c.execute_mcp_tool("service_propose_trade", long_btc())
            .await
            .unwrap(),
    );
    // Another key.
    match s
        .client(Scope::McpMutate)
        .execute_mcp_tool("service_propose_trade", with_token(&long_btc(), &token))
        .await
        .unwrap_err()
    {
        ApiError::Forbidden { code, .. } => assert_eq!(code, "confirm_token_key_mismatch"),
        other => panic!("{other:?}"),
    }
    // Other args.
    let mut other = long_btc();
    other["sizeUsd"] = json!(50_000);
    match c
        .execute_mcp_tool("service_propose_trade", with_token(&other, &token))
        .await
        .unwrap_err()
    {
        ApiError::Invalid { code, field, .. } => {
            assert_eq!(code, "confirm_token_args_mismatch");
            assert_eq!(field.as_deref(), Some("confirmToken"));
        }
        other => panic!("{other:?}"),
    }
    // Another tool.
    match c
        .execute_mcp_tool("service_place_order", with_token(&long_btc(), &token))
        .await
        .unwrap_err()
    {
        ApiError::Invalid { code, .. } => assert_eq!(code, "confirm_token_tool_mismatch"),
        other => panic!("{other:?}"),
    }
    // Unknown token.
    match c
        .execute_mcp_tool("service_propose_trade", with_token(&long_btc(), "ct_nope"))
        .await
        .unwrap_err()
    {
        ApiError::NotFound { code, .. } => assert_eq!(code, "confirm_token_not_found"),
        other => panic!("{other:?}"),
    }
    // Key order of the args does not matter.
    let reordered: Value = serde_json::from_str(
        r#"{"strategy":"Agent","sizeUsd":2000,"o":"market","d":"long","a":"BTCUSDT"}"#,
    )
    .unwrap();
    let token2 = token_of(
        &c.execute_mcp_tool("service_propose_trade", long_btc())
            .await
            .unwrap(),
    );
    c.execute_mcp_tool("service_propose_trade", with_token(&reordered, &token2))
        .await
        .unwrap();
    // The refused attempts spent nothing: the first token still works within 5 minutes...
    s.clock.advance(Duration::minutes(4));
    c.execute_mcp_tool("service_propose_trade", with_token(&long_btc(), &token))
        .await
        .unwrap();
    // ...and a new one is gone after them.
    let token3 = token_of(
        &c.execute_mcp_tool("service_propose_trade", long_btc())
            .await
            .unwrap(),
    );
    s.clock.advance(Duration::minutes(6));
    match c
        .execute_mcp_tool("service_propose_trade", with_token(&long_btc(), &token3))
        .await
        .unwrap_err()
    {
        ApiError::Expired { code, .. } => assert_eq!(code, "confirm_token_expired"),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.list_proposals(None).await.unwrap().proposals.len(), 2);
}

#[tokio::test]
async fn fifty_concurrent_resubmits_of_one_token_run_once() {
    let s = common::start().await;
    let c = s.legacy();
    let token = token_of(
        &c.execute_mcp_tool("service_place_order", long_btc())
            .await
            .unwrap(),
    );
    let args = with_token(&long_btc(), &token);
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let (c, args) = (c.clone(), args.clone());
            tokio::spawn(async move { c.execute_mcp_tool("service_place_order", args).await })
        })
        .collect();
    let mut ok = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(r) => {
                assert_eq!(r.result["status"], "filled");
                ok += 1;
            }
            Err(ApiError::Conflict { code, .. }) => assert_eq!(code, "confirm_token_used"),
            Err(other) => panic!("{other:?}"),
        }
    }
    assert_eq!(ok, 1);
    let positions = c.get_positions().await.unwrap().positions;
    assert_eq!(positions.len(), 1);
    let notional: f64 = positions[0].position_value;
    assert!(
        (notional - 2_000.0).abs() < 100.0,
        "one fill of ~2000 USDC, got {notional}"
    );
}

#[tokio::test]
async fn one_execute_counts_one_post() {
    let s = common::start().await;
    let c = s.legacy();
    let before = c.get_usage().await.unwrap();
    c.execute_mcp_tool("service_get_positions", json!({}))
        .await
        .unwrap();
    c.execute_mcp_tool(
        "service_run_backtest",
        json!({"strategyId": "sma_cross", "pair": "BTC-USD", "timeframe": "1h", "days": 30}),
    )
    .await
    .unwrap();
    let token = token_of(
        &c.execute_mcp_tool("service_propose_trade", long_btc())
            .await
            .unwrap(),
    );
    c.execute_mcp_tool("service_propose_trade", with_token(&long_btc(), &token))
        .await
        .unwrap();
    let after = c.get_usage().await.unwrap();
    assert_eq!(
        after.api_post_quota.used - before.api_post_quota.used,
        4,
        "four execute_mcp_tool calls; the operations they ran did not count again"
    );
    assert_eq!(
        after.compute.used - before.compute.used,
        1,
        "the backtest's compute"
    );
}

#[tokio::test]
async fn execute_is_refused_when_the_post_cap_is_used_up() {
    let s = common::start_with(Settings {
        daily_post_cap: 1,
        ..Settings::default()
    })
    .await;
    let c = s.legacy();
    c.execute_mcp_tool("service_get_positions", json!({}))
        .await
        .unwrap();
    match c
        .execute_mcp_tool("service_get_positions", json!({}))
        .await
        .unwrap_err()
    {
        ApiError::QuotaExceeded { .. } => {}
        other => panic!("{other:?}"),
    }
}
