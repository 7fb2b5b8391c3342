//! The client against a service that is not our sandbox: the stand-in of the real deployment
//! (`agentdesk::standin`), in its deployment shape and in a minimal one. A shape change that the
//! console cannot read shows up here, not in front of a supervisor.

use agentdesk::api::model::TradeSignal;
use agentdesk::api::{ApiError, Client};
use agentdesk::secret::Secret;
use agentdesk::standin::{self, ErrorPlace, Running, Shape, StandInConfig};

const KEY: &str = "live_contract_key";

async fn start(shape: Shape, errors: ErrorPlace) -> (Running, Client) {
    let mut config = StandInConfig::new("127.0.0.1:0".parse().unwrap(), KEY);
    config.shape = shape;
    config.errors = errors;
    let running = standin::start(config).await.unwrap();
    let client = Client::new(&running.base_url(), Some(Secret::new(KEY))).unwrap();
    (running, client)
}

fn btc_long() -> TradeSignal {
    serde_json::from_value(serde_json::json!({
        "strategy": "Agent", "a": "BTCUSDT", "d": "long", "o": "market",
        "sizeUsd": "2000", "leverage": 5, "tp": "70000", "sl": "58000",
    }))
    .unwrap()
}

#[tokio::test]
async fn account_reads_decode_in_both_shapes() {
    for shape in [Shape::Deployment, Shape::Minimal] {
        let (_s, client) = start(shape, ErrorPlace::Message).await;
        let who = client.whoami(true).await.unwrap();
        assert_eq!(who.messenger_id, "tg_700100", "{shape:?}");
        client.get_usage().await.unwrap();
        assert!(client.get_positions().await.unwrap().positions.is_empty());
        let pnl = client.pnl_summary().await.unwrap();
        assert_eq!(pnl.total_portfolio_value, 100_000.0, "{shape:?}");
        client.list_open_orders(None).await.unwrap();
    }
}

#[tokio::test]
async fn a_staged_trade_confirms_and_shows_up_as_a_position() {
    for shape in [Shape::Deployment, Shape::Minimal] {
        let (_s, client) = start(shape, ErrorPlace::Message).await;
        let proposal = client.propose_trade(&btc_long()).await.unwrap();
        assert!(!proposal.proposal_id.is_empty());
        assert!(proposal.expires_at.is_some(), "{shape:?}: expiresAt read");
        assert_eq!(proposal.preview.coin, "BTC");
        assert!(
            (proposal.preview.notional - 2000.0).abs() < 1e-6,
            "{shape:?}: notional as text"
        );
        let executed = client.confirm_trade(&proposal.proposal_id).await.unwrap();
        // The deployment's answer carries the venue's statuses under result.response.data.
        let raw = serde_json::to_value(&executed).unwrap();
        assert!(raw.to_string().contains("\"filled\""), "{shape:?}: {raw}");
        let positions = client.get_positions().await.unwrap();
        assert_eq!(positions.positions.len(), 1, "{shape:?}");
        assert_eq!(positions.positions[0].coin, "BTC");
        let pnl = client.pnl_summary().await.unwrap();
        assert_eq!(pnl.total_positions, 1, "{shape:?}: totalPositions as text");
    }
}

#[tokio::test]
async fn errors_on_http_200_are_errors_wherever_the_message_sits() {
    for place in [
        ErrorPlace::ErrorString,
        ErrorPlace::ErrorMessage,
        ErrorPlace::ResultError,
        ErrorPlace::Message,
    ] {
        let (_s, client) = start(Shape::Deployment, place).await;
        let e = client.confirm_trade("no-such-proposal").await.unwrap_err();
        assert_eq!(e.to_string(), "Proposal not found or expired", "{place:?}");
    }
}

#[tokio::test]
async fn a_refused_key_is_recognized_although_the_status_is_200() {
    for place in [
        ErrorPlace::Message,
        ErrorPlace::ErrorString,
        ErrorPlace::ErrorMessage,
    ] {
        let (s, _) = start(Shape::Deployment, place).await;
        let wrong = Client::new(&s.base_url(), Some(Secret::new("live_wrong"))).unwrap();
        match wrong.whoami(true).await {
            Err(ApiError::Unauthorized { message }) => assert_eq!(message, "Invalid API key"),
            other => panic!("{place:?}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn the_deployment_has_no_proposals_list() {
    let (_s, client) = start(Shape::Deployment, ErrorPlace::Message).await;
    let e = client.list_proposals(None).await.unwrap_err();
    assert!(matches!(e, ApiError::NotFound { .. }), "{e:?}");
}

#[tokio::test]
async fn tp_sl_rest_as_triggers_and_a_staged_close_flattens_in_both_shapes() {
    for shape in [Shape::Deployment, Shape::Minimal] {
        let (_s, client) = start(shape, ErrorPlace::Message).await;
        let p = client.propose_trade(&btc_long()).await.unwrap();
        client.confirm_trade(&p.proposal_id).await.unwrap();
        let orders = client.list_open_orders(None).await.unwrap().orders;
        let mut triggers: Vec<(f64, bool)> = orders
            .iter()
            .map(|o| (o.trigger_px.unwrap(), o.reduce_only))
            .collect();
        triggers.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert_eq!(triggers, [(58000.0, true), (70000.0, true)], "{shape:?}");
        let close: TradeSignal =
            serde_json::from_value(serde_json::json!({"a": "BTCUSDT", "d": "close"})).unwrap();
        let staged = client.propose_trade(&close).await.unwrap();
        assert_eq!(staged.preview.closes.len(), 1, "{shape:?}");
        assert_eq!(staged.preview.closes[0].coin, "BTC");
        let done = client.confirm_trade(&staged.proposal_id).await.unwrap();
        assert_eq!(done.status, "ok", "{shape:?}");
        assert_eq!(done.execution.statuses.len(), 1, "{shape:?}");
        assert!(client.get_positions().await.unwrap().positions.is_empty());
        assert!(
            client
                .list_open_orders(None)
                .await
                .unwrap()
                .orders
                .is_empty()
        );
        // Two POSTs staged and two confirmed: the deployment's usage counts them.
        let usage = client.get_usage().await.unwrap();
        assert_eq!(usage.api_post_quota.used, 4, "{shape:?}");
    }
}

// ---- fixtures: every operation in every shape, through the real client -------------------------

mod fixtures {
    use agentdesk::api::catalog::OPERATIONS;
    use agentdesk::api::model::*;
    use agentdesk::api::{ApiError, Client};
    use axum::Router;
    use serde_json::{Value, json};
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::{Arc, Mutex};

    /// The shapes every operation's answer is tried in: ours (the sandbox's), the deployment's
    /// (`shared/observed-shapes.md`, and where it names nothing its general habits: a `success`
    /// envelope, a request id, numbers as text, fields we never saw), and a minimal one with only
    /// the documented fields, numbers as text.
    pub const SHAPES: [&str; 3] = ["ours", "deployment", "minimal"];

    /// Operations, or operation × shape, with no fixture, and why. Anything else of the catalog
    /// without a fixture fails `every_operation_has_a_fixture_in_every_shape`.
    pub const EXCLUDED: &[(&str, Option<&str>, &str)] = &[
        (
            "list_proposals",
            Some("deployment"),
            "the deployment has no proposals-list extension (404; the_deployment_has_no_proposals_list)",
        ),
        (
            "list_proposals",
            Some("minimal"),
            "an extension of ours: no documented fields",
        ),
        (
            "get_openapi",
            None,
            "a document read as raw JSON, never decoded into types",
        ),
        (
            "list_tools",
            None,
            "read as raw JSON by agents; the console never decodes it",
        ),
        (
            "approve_builder_fee_payload",
            None,
            "EIP-712 payload signed byte for byte: a changed shape must fail, not be tolerated",
        ),
        (
            "approve_builder_fee",
            None,
            "answers only after a signed EIP-712 approval; covered by tests/it/builder_fee.rs",
        ),
        (
            "list_signal_destinations",
            None,
            "our signal-destination extension; the deployment's shape is unknown",
        ),
        (
            "create_signal_destination",
            None,
            "our signal-destination extension; the deployment's shape is unknown",
        ),
        (
            "list_signal_deliveries",
            None,
            "our signal-destination extension; the deployment's shape is unknown",
        ),
    ];

    pub fn dir() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/contract")
    }

    /// `(operation, shape) → body`, from `<operation>.<shape>.json`.
    pub fn load() -> BTreeMap<(String, String), Value> {
        let mut out = BTreeMap::new();
        for entry in std::fs::read_dir(dir()).expect("tests/fixtures/contract exists") {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            let Some(stem) = name.strip_suffix(".json") else {
                continue;
            };
            let (op, shape) = stem
                .rsplit_once('.')
                .unwrap_or_else(|| panic!("{name}: expected <operation>.<shape>.json"));
            assert!(SHAPES.contains(&shape), "{name}: unknown shape {shape}");
            assert!(
                OPERATIONS.iter().any(|o| o.name == op),
                "{name}: no operation {op} in the catalog"
            );
            let body: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            out.insert((op.to_string(), shape.to_string()), body);
        }
        out
    }

    fn excluded(op: &str, shape: &str) -> bool {
        EXCLUDED
            .iter()
            .any(|(o, s, _)| *o == op && s.is_none_or(|s| s == shape))
    }

    /// Calls `op` with the real client and returns what it decoded, as JSON.
    async fn call(c: &Client, op: &str) -> Result<Value, ApiError> {
        fn v<T: serde::Serialize>(t: T) -> Value {
            serde_json::to_value(t).unwrap()
        }
        let signal = TradeSignal {
            a: Some("BTCUSDT".into()),
            d: Some("long".into()),
            ..Default::default()
        };
        Ok(match op {
            "whoami" => v(c.whoami(true).await?),
            "get_usage" => v(c.get_usage().await?),
            "get_usage_v1" => v(c.get_usage_v1().await?),
            "get_positions" => v(c.get_positions().await?),
            "pnl_summary" => v(c.pnl_summary().await?),
            "list_audit_logs" => v(c.list_audit_logs(Some(50)).await?),
            "list_open_orders" => v(c.list_open_orders(None).await?),
            "list_proposals" => v(c.list_proposals(None).await?),
            "discover_top_backtests" => v(c.discover_top_backtests(None, None).await?),
            "discover_top_live" => v(c.discover_top_live(None, None).await?),
            "discover_top_optimized_combos" => v(c.discover_top_optimized_combos(&[]).await?),
            "discover_strategies" => v(c.discover_strategies().await?),
            "run_backtest" => v(c
                .run_backtest(&BacktestRequest {
                    strategy_id: "ema_cross".into(),
                    pair: "ETH-USD".into(),
                    timeframe: "1h".into(),
                    days: 30,
                    parameters: Default::default(),
                })
                .await?),
            "get_backtest_job" => v(c.get_backtest_job("bt_7a").await?),
            "propose_trade" => v(c.propose_trade(&signal).await?),
            "confirm_trade" => v(c.confirm_trade("prop_1").await?),
            "close_position" => v(c
                .close_position(&CloseRequest {
                    proposal_id: Some("prop_1".into()),
                    action: None,
                })
                .await?),
            "place_order" => v(c.place_order(&signal).await?),
            "platform_place_order" => v(c
                .platform_place_order(
                    &PlatformOrder {
                        pair: "BTC-USD".into(),
                        side: "buy".into(),
                        ..serde_json::from_value(json!({"pair": "BTC-USD", "side": "buy"})).unwrap()
                    },
                    None,
                )
                .await?),
            "platform_close_position" => v(c
                .platform_close_position(&PlatformClose {
                    pair: Some("BTC-USD".into()),
                    ..Default::default()
                })
                .await?),
            "platform_cancel_order" => v(c
                .platform_cancel_order(&CancelRequest {
                    oid: OneOrMany::One(4242),
                    coin: "BTC".into(),
                    exchange: None,
                    venue_api_key: None,
                    venue_wallet: None,
                })
                .await?),
            "list_mcp_capabilities" => v(c.list_mcp_capabilities().await?),
            "execute_mcp_tool" => v(c
                .execute_mcp_tool("service_propose_trade", json!({"coin": "ETH"}))
                .await?),
            "mcp_agent_chat" => v(c
                .mcp_agent_chat(&[ChatMessage {
                    role: "user".into(),
                    content: "positions?".into(),
                }])
                .await?),
            "mcp_cli" => v(c.mcp_cli("/research").await?),
            "research_status" => v(c.research_status().await?),
            "research_start" => v(c.research_start("find a trend strategy").await?),
            "research_message" => v(c.research_message("run_3c", "prefer drawdown").await?),
            "research_stop" => v(c.research_stop("run_3c").await?),
            other => panic!("no call for {other}: add it here and fixtures for it"),
        })
    }

    /// Every leaf value of a body, in one comparable form: numbers and numeric text as the same
    /// number, times (RFC 3339 or milliseconds) as milliseconds, other text as is.
    fn leaves(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) => m.values().for_each(|x| leaves(x, out)),
            Value::Array(a) => a.iter().for_each(|x| leaves(x, out)),
            Value::Null => {}
            Value::Bool(b) => {
                out.insert(b.to_string());
            }
            Value::Number(n) => {
                out.insert(format!("{}", n.as_f64().unwrap()));
            }
            Value::String(s) => {
                let t = s.trim();
                if let Ok(x) = t.parse::<f64>() {
                    out.insert(format!("{x}"));
                } else if let Ok(time) = chrono::DateTime::parse_from_rfc3339(t) {
                    out.insert(format!("{}", time.timestamp_millis() as f64));
                } else {
                    out.insert(s.clone());
                }
            }
        }
    }

    #[test]
    fn every_operation_has_a_fixture_in_every_shape() {
        let fixtures = load();
        let mut missing = Vec::new();
        for op in OPERATIONS {
            for shape in SHAPES {
                let have = fixtures.contains_key(&(op.name.to_string(), shape.to_string()));
                if !have && !excluded(op.name, shape) {
                    missing.push(format!("{}.{shape}.json", op.name));
                }
                assert!(
                    !(have && excluded(op.name, shape)),
                    "{}.{shape}: both a fixture and an exclusion",
                    op.name
                );
            }
        }
        assert!(
            missing.is_empty(),
            "fixtures missing in tests/fixtures/contract: {missing:?}"
        );
    }

    /// Each fixture served over loopback HTTP, read by the real client: it decodes, and no leaf
    /// value of the answer is lost (a field we do not know lands in an `extra` map, which the
    /// views show as `key=value`).
    #[tokio::test]
    async fn every_fixture_decodes_through_the_client_and_loses_nothing() {
        let body = Arc::new(Mutex::new(Value::Null));
        let served = body.clone();
        let app = Router::new().fallback(move || {
            let served = served.clone();
            async move { axum::Json(served.lock().unwrap().clone()) }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let client = Client::new(
            &format!("http://{addr}"),
            Some(agentdesk::secret::Secret::new("live_contract_key")),
        )
        .unwrap();
        let mut failures = Vec::new();
        for ((op, shape), fixture) in load() {
            *body.lock().unwrap() = fixture.clone();
            match call(&client, &op).await {
                Err(e) => failures.push(format!("{op}.{shape}: {e}")),
                Ok(decoded) => {
                    let (mut want, mut got) = (BTreeSet::new(), BTreeSet::new());
                    leaves(&fixture, &mut want);
                    leaves(&decoded, &mut got);
                    // `ok: true|false` is read as the outcome `ok` / `error` (README).
                    if got.contains("ok") {
                        got.insert("true".into());
                    }
                    if got.contains("error") {
                        got.insert("false".into());
                    }
                    let lost: Vec<_> = want.difference(&got).collect();
                    if !lost.is_empty() {
                        failures.push(format!("{op}.{shape}: lost {lost:?} in {decoded}"));
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}

/// The deployment answers a rate limit as it answers every error (HTTP 200, `success:false`):
/// the client still reads it as a wait, with the wait the answer names, wherever its message sits.
/// Nothing was executed.
#[tokio::test]
async fn a_rate_limited_confirm_in_the_deployment_shape_is_a_wait_not_a_failure() {
    for place in [
        ErrorPlace::ErrorString,
        ErrorPlace::ErrorMessage,
        ErrorPlace::ResultError,
        ErrorPlace::Message,
        ErrorPlace::Code,
    ] {
        let mut config = StandInConfig::new("127.0.0.1:0".parse().unwrap(), KEY);
        config.errors = place;
        config.confirms_per_minute = Some(1);
        let running = standin::start(config).await.unwrap();
        let client = Client::new(&running.base_url(), Some(Secret::new(KEY))).unwrap();
        let first = client.propose_trade(&btc_long()).await.unwrap();
        let second = client.propose_trade(&btc_long()).await.unwrap();
        client.confirm_trade(&first.proposal_id).await.unwrap();
        match client.confirm_trade(&second.proposal_id).await {
            Err(ApiError::QuotaExceeded { retry_after, .. }) => {
                assert!(
                    (1..=60).contains(&retry_after.as_secs()),
                    "{place:?}: {retry_after:?}"
                );
            }
            other => panic!("{place:?}: {other:?}"),
        }
        // Only the first executed.
        let positions = client.get_positions().await.unwrap();
        assert_eq!(positions.positions.len(), 1, "{place:?}");
        assert!(
            (positions.positions[0].szi - first.preview.size).abs() < 1e-9,
            "{place:?}: {:?}",
            positions.positions[0]
        );
    }
}
