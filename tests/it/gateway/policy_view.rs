//! The console's `/policy` over loopback: `api::Client::gate_policy` reads the policy a gateway was
//! started with (default rules and two agents' overrides), each agent's notional executed today,
//! and a `PUT` change; a refused token and an answer that is not a policy fail with words that name
//! what failed.

use super::guard::{guarded, propose, trade};
use agentdesk::api::model::GateRules;
use agentdesk::api::{ApiError, Client, Scope};
use agentdesk::console::gate::policy::error_text;
use agentdesk::gateway::rules::policy::Policy;
use agentdesk::gateway::store::{SqliteStore, Store};
use agentdesk::secret::Secret;
use reqwest::{Method, StatusCode};
use serde_json::json;

#[tokio::test]
async fn the_console_reads_the_policy_it_was_started_with_todays_use_and_a_put_change() {
    let s = guarded(|c| {
        c.policy = Policy::from_json(&json!({
            "allowed_coins": ["BTC", "ETH"],
            "max_notional_usd": 3000,
            "max_leverage": 5,
            "require_stop_loss": true,
            "max_daily_notional_usd": 10000,
            "agents": {
                "bot": {"max_leverage": 3, "max_daily_notional_usd": 2000, "allow_immediate": true},
                "scout": {"allowed_coins": ["BTC"], "max_notional_usd": 500},
            },
        }))
        .unwrap();
    })
    .await;
    let console = Client::new(&s.gate.base_url(), Some(s.sandbox.key(Scope::Legacy)))
        .unwrap()
        .with_gate_token(Some(s.token.clone()));

    let read = console.gate_policy().await.unwrap();
    let p = &read.policy;
    assert_eq!(
        p.rules,
        GateRules {
            allowed_coins: Some(vec!["BTC".into(), "ETH".into()]),
            max_notional_usd: Some(3000.0),
            max_leverage: Some(5.0),
            require_stop_loss: Some(true),
            max_daily_notional_usd: Some(10000.0),
            ..GateRules::default()
        }
    );
    assert_eq!(p.agents.len(), 2, "{p:?}");
    assert_eq!(p.agents["bot"].max_leverage, Some(3.0));
    assert_eq!(p.agents["bot"].allow_immediate, Some(true));
    assert_eq!(
        p.agents["bot"].max_notional_usd, None,
        "only what bot overrides"
    );
    assert_eq!(
        p.agents["scout"].allowed_coins,
        Some(vec!["BTC".to_string()])
    );
    assert!(read.rules.iter().any(|r| r == "daily_loss_limit_usd"));
    let today = read
        .today
        .as_ref()
        .expect("the gateway reports today's use");
    assert!(today.agents.is_empty(), "no agent yet: {today:?}");

    // An agent named bot stages 500 USD; approved, it counts against bot's daily 2000.
    let key = s.sandbox.key(Scope::McpMutate);
    let (st, body) = propose(&s, &key, trade("BTC", 500.0)).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let id = body["proposalId"].as_str().unwrap().to_string();
    let store = SqliteStore::open(&s.gate_db).unwrap();
    assert_eq!(
        store.name_agent(&key.fingerprint(), "bot").await.unwrap(),
        1
    );
    let done = console.gate_approve(&id, &[]).await.unwrap().item;
    assert_eq!(
        done.status,
        agentdesk::api::model::ItemStatus::Executed,
        "{done:?}"
    );
    let read = console.gate_policy().await.unwrap();
    let today = read.today.unwrap();
    let bot = today
        .agents
        .iter()
        .find(|a| a.agent == "bot")
        .expect("bot is listed");
    assert_eq!(bot.fingerprint, key.fingerprint());
    // Counted as the service priced it (its preview), not as the request worded it.
    let priced = done.trade_preview().notional;
    assert_eq!(bot.executed_notional_usd, priced);
    assert!((490.0..=510.0).contains(&priced), "{priced}");
    assert_eq!(bot.max_daily_notional_usd, Some(2000.0));

    // A PUT replaces it; the console's next read shows the change.
    let (st, body) = s
        .supervisor(
            Method::PUT,
            "/gate/v1/policy",
            Some(json!({"max_notional_usd": 1500, "agents": {"bot": {"max_leverage": 2}}})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let read = console.gate_policy().await.unwrap();
    assert_eq!(read.policy.rules.max_notional_usd, Some(1500.0));
    assert_eq!(read.policy.rules.allowed_coins, None);
    assert_eq!(read.policy.agents.len(), 1);
    assert_eq!(read.policy.agents["bot"].max_leverage, Some(2.0));
    let bot = &read.today.unwrap().agents[0];
    assert_eq!(
        (bot.executed_notional_usd, bot.max_daily_notional_usd),
        (priced, None),
        "the daily limit went with the PUT; the use stays"
    );
}

#[tokio::test]
async fn a_refused_token_and_a_plain_service_fail_with_words_that_name_what_failed() {
    let s = guarded(|_| {}).await;
    let wrong = Client::new(&s.gate.base_url(), None)
        .unwrap()
        .with_gate_token(Some(Secret::new(
            "gst_not_a_token_of_this_gateway".to_string(),
        )));
    let e = wrong.gate_policy().await.unwrap_err();
    assert!(matches!(e, ApiError::Unauthorized { .. }), "{e:?}");
    let text = error_text(&e);
    assert!(
        text.starts_with("GET /gate/v1/policy: the gateway refused the supervisor token"),
        "{text}"
    );

    let plain = s.sandbox.legacy().with_gate_token(Some(s.token.clone()));
    let e = plain.gate_policy().await.unwrap_err();
    assert!(matches!(e, ApiError::NotFound { .. }), "{e:?}");
    assert!(
        error_text(&e).contains("not a gateway"),
        "{}",
        error_text(&e)
    );
}

#[tokio::test]
async fn an_answer_that_is_not_a_policy_names_the_field() {
    // A server that answers /gate/v1/policy with a wrong type where a limit should be.
    let app = axum::Router::new().route(
        "/gate/v1/policy",
        axum::routing::get(|| async {
            axum::Json(json!({"success": true, "policy": {"max_notional_usd": "lots"}}))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let c = Client::new(&format!("http://{addr}"), None)
        .unwrap()
        .with_gate_token(Some(Secret::new("gst_x".to_string())));
    let e = c.gate_policy().await.unwrap_err();
    assert!(matches!(e, ApiError::Decode(_)), "{e:?}");
    let text = error_text(&e);
    assert!(
        text.contains("GET /gate/v1/policy: the gateway's answer is not a policy"),
        "{text}"
    );
    assert!(text.contains("lots"), "{text}");
}
