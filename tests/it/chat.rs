//! mcp_agent_chat over loopback: the LLM tool loop against a fake OpenAI-compatible provider of our
//! own (also on loopback), and the deterministic router when no provider is configured.

use crate::common::{self, TestServer};
use agentdesk::api::ApiError;
use agentdesk::api::Scope;
use agentdesk::api::model::{ChatMessage, TradeSignal};
use agentdesk::sandbox::store::Store;
use agentdesk::sandbox::store::chat::{self, LlmSettings};
use agentdesk::secret::Secret;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

const FAKE_KEY: &str = "sk-test-0123456789";

/// A scripted OpenAI-compatible provider: answers `/chat/completions` from a queue and keeps
/// every request it got.
#[derive(Default)]
struct Fake {
    requests: Mutex<Vec<Value>>,
    auth: Mutex<Vec<String>>,
    script: Mutex<VecDeque<(u16, Value)>>,
}

async fn completions(
    State(fake): State<Arc<Fake>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    fake.requests.lock().unwrap().push(body);
    fake.auth.lock().unwrap().push(
        headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string(),
    );
    let (status, answer) = fake
        .script
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or((500, json!({"error": {"message": "script exhausted"}})));
    (StatusCode::from_u16(status).unwrap(), Json(answer))
}

async fn fake_llm(script: Vec<(u16, Value)>) -> (Arc<Fake>, String) {
    let fake = Arc::new(Fake {
        script: Mutex::new(script.into()),
        ..Default::default()
    });
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(completions))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (fake, format!("http://{addr}/v1"))
}

fn use_llm(s: &TestServer, base_url: &str) {
    let store = Store::open(&s.db).unwrap();
    let account = store.accounts().unwrap().remove(0);
    chat::set_llm(
        &store.conn,
        account.id,
        &LlmSettings {
            base_url: base_url.into(),
            model: "fake-model".into(),
            api_key: Secret::new(FAKE_KEY),
        },
        s.clock_now(),
    )
    .unwrap();
}

fn tool_call(id: &str, name: &str, args: Value) -> Value {
    json!({
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": id, "type": "function",
                            "function": {"name": name, "arguments": args.to_string()}}]
        }}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    })
}

fn final_answer(text: &str) -> Value {
    json!({
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 150, "completion_tokens": 10, "total_tokens": 160}
    })
}

fn user(text: &str) -> Vec<ChatMessage> {
    vec![ChatMessage {
        role: "user".into(),
        content: text.into(),
    }]
}

#[tokio::test]
async fn llm_loop_runs_tools_and_counts_tokens() {
    let s = common::start().await;
    let (fake, base) = fake_llm(vec![
        (200, tool_call("call_1", "service_pnl_summary", json!({}))),
        (200, final_answer("Your equity is 100000 USDC.")),
    ])
    .await;
    use_llm(&s, &base);
    let c = s.legacy();
    let before = c.get_usage().await.unwrap();
    let reply = c.mcp_agent_chat(&user("how am I doing?")).await.unwrap();
    assert_eq!(reply.mode, "llm");
    assert_eq!(reply.reply, "Your equity is 100000 USDC.");
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].name, "service_pnl_summary");
    assert!(reply.tool_calls[0].result["totalPortfolioValue"].is_number());
    assert!(reply.confirm_tokens.is_empty());

    let requests = fake.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["model"], "fake-model");
    assert_eq!(requests[0]["messages"][0]["role"], "system");
    assert_eq!(requests[0]["messages"][1]["content"], "how am I doing?");
    let tools = requests[0]["tools"].as_array().unwrap();
    let propose = tools
        .iter()
        .find(|t| t["function"]["name"] == "service_propose_trade")
        .expect("the catalog is offered as tools");
    assert!(propose["function"]["parameters"]["properties"]["a"].is_object());
    // The tool's result went back to the model.
    let messages = requests[1]["messages"].as_array().unwrap();
    let tool_msg = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool message");
    assert_eq!(tool_msg["tool_call_id"], "call_1");
    assert!(
        tool_msg["content"]
            .as_str()
            .unwrap()
            .contains("totalPortfolioValue")
    );
    assert!(messages.iter().any(|m| m["role"] == "assistant"
        && m["tool_calls"][0]["function"]["name"] == "service_pnl_summary"));
    assert_eq!(fake.auth.lock().unwrap()[0], format!("Bearer {FAKE_KEY}"));

    let after = c.get_usage().await.unwrap();
    assert_eq!(after.tokens.input - before.tokens.input, 250);
    assert_eq!(after.tokens.output - before.tokens.output, 30);
    assert_eq!(after.compute.used - before.compute.used, 1, "one turn");
    assert_eq!(after.api_post_quota.used - before.api_post_quota.used, 1);
    // Tokens are per key.
    assert_eq!(
        s.client(Scope::McpMutate)
            .get_usage()
            .await
            .unwrap()
            .tokens
            .input,
        0
    );
}

#[tokio::test]
async fn llm_mutate_calls_only_get_a_confirm_token() {
    let s = common::start().await;
    let args = json!({"a": "BTC", "d": "long", "size": 0.01, "confirmToken": "ct_made_up"});
    let (fake, base) = fake_llm(vec![
        (200, tool_call("call_7", "service_propose_trade", args)),
        (
            200,
            final_answer("I prepared a long of 0.01 BTC for your approval."),
        ),
    ])
    .await;
    use_llm(&s, &base);
    let c = s.client(Scope::McpMutate);
    let reply = c.mcp_agent_chat(&user("go long 0.01 BTC")).await.unwrap();
    assert_eq!(reply.mode, "llm");
    assert!(
        c.list_proposals(None).await.unwrap().proposals.is_empty(),
        "nothing staged in the loop"
    );
    assert!(c.get_positions().await.unwrap().positions.is_empty());
    assert_eq!(reply.confirm_tokens.len(), 1);
    let prepared = &reply.confirm_tokens[0];
    assert_eq!(prepared["tool"], "service_propose_trade");
    assert_eq!(prepared["preview"]["coin"], "BTC");
    let token = prepared["confirmToken"].as_str().unwrap().to_string();
    assert!(token.starts_with("ct_"));
    let tool_msg = fake.requests.lock().unwrap()[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    assert!(
        tool_msg["content"]
            .as_str()
            .unwrap()
            .contains("never executed"),
        "{tool_msg}"
    );
    // A human approves it with the token.
    let run = c
        .execute_mcp_tool(
            "service_propose_trade",
            json!({"a": "BTC", "d": "long", "size": 0.01, "confirmToken": token}),
        )
        .await
        .unwrap();
    assert_eq!(run.result["status"], "staged");
    assert_eq!(c.list_proposals(None).await.unwrap().proposals.len(), 1);
}

#[tokio::test]
async fn provider_errors_are_502_without_the_key() {
    let s = common::start().await;
    let (_fake, base) = fake_llm(vec![(
        401,
        json!({"error": {"message": format!("Incorrect API key provided: {FAKE_KEY}"),
                         "type": "invalid_request_error"}}),
    )])
    .await;
    use_llm(&s, &base);
    match s
        .legacy()
        .mcp_agent_chat(&user("positions?"))
        .await
        .unwrap_err()
    {
        ApiError::Server {
            status,
            code,
            message,
        } => {
            assert_eq!(status, 502);
            assert_eq!(code, "llm_provider_error");
            assert!(message.contains("401"), "{message}");
            assert!(message.contains("Incorrect API key"), "{message}");
            assert!(!message.contains(FAKE_KEY), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn router_answers_without_an_llm() {
    let s = common::start().await;
    let c = s.legacy();
    let signal: TradeSignal =
        serde_json::from_value(json!({"a": "BTC", "d": "long", "sizeUsd": 1000})).unwrap();
    c.place_order(&signal).await.unwrap();

    let r = c.mcp_agent_chat(&user("show my positions")).await.unwrap();
    assert_eq!(r.mode, "router");
    assert_eq!(r.tool_calls[0].name, "service_get_positions");
    assert!(r.reply.contains("1 open position"), "{}", r.reply);
    assert!(r.reply.contains("BTC"), "{}", r.reply);
    assert!(r.reply.contains("No LLM is configured"), "{}", r.reply);
    assert!(r.reply.contains("agentdesk account llm"), "{}", r.reply);

    let r = c.mcp_agent_chat(&user("what's my PnL?")).await.unwrap();
    assert_eq!(r.tool_calls[0].name, "service_pnl_summary");
    assert!(r.reply.contains("Equity"), "{}", r.reply);

    let r = c
        .mcp_agent_chat(&user("backtest sma_cross on BTC 1h 30 days"))
        .await
        .unwrap();
    assert_eq!(r.tool_calls[0].name, "service_run_backtest");
    let job_id = r.tool_calls[0].result["jobId"].as_str().unwrap();
    assert!(r.reply.contains(job_id), "{}", r.reply);
    assert_eq!(c.get_backtest_job(job_id).await.unwrap().job_id, job_id);

    let r = c.mcp_agent_chat(&user("go long 0.01 BTC")).await.unwrap();
    assert_eq!(r.tool_calls[0].name, "service_propose_trade");
    assert_eq!(r.confirm_tokens.len(), 1);
    assert_eq!(r.confirm_tokens[0]["preview"]["size"], 0.01);
    assert!(r.reply.contains("not executed"), "{}", r.reply);
    assert!(c.list_proposals(None).await.unwrap().proposals.is_empty());

    let r = c
        .mcp_agent_chat(&user("best strategies for ETH"))
        .await
        .unwrap();
    assert!(r.tool_calls[0].name.starts_with("service_discover_"));
    assert!(r.reply.contains("ETH-USD"), "{}", r.reply);

    let r = c.mcp_agent_chat(&user("tell me a joke")).await.unwrap();
    assert!(r.tool_calls.is_empty());
    assert!(r.reply.contains("backtest sma_cross"), "{}", r.reply);
}

#[tokio::test]
async fn chat_checks_its_body() {
    let s = common::start().await;
    let c = s.legacy();
    for (messages, field) in [
        (vec![], "messages"),
        (
            vec![ChatMessage {
                role: "robot".into(),
                content: "hi".into(),
            }],
            "messages[0].role",
        ),
    ] {
        match c.mcp_agent_chat(&messages).await.unwrap_err() {
            ApiError::Invalid { field: f, .. } => assert_eq!(f.as_deref(), Some(field)),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        c.get_usage().await.unwrap().compute.used,
        0,
        "a refused turn costs no compute"
    );
}

#[tokio::test]
async fn the_cli_sets_and_clears_the_provider() {
    let s = common::start().await;
    let (_fake, base) = fake_llm(vec![(200, final_answer("hello from the model"))]).await;
    let db = s.db.to_str().unwrap().to_string();
    let bin = env!("CARGO_BIN_EXE_agentdesk");
    let out = std::process::Command::new(bin)
        .args(["account", "llm", "--db", &db, "--base-url", &base])
        .args([
            "--model",
            "fake-model",
            "--api-key-env",
            "AGENTDESK_TEST_LLM_KEY",
        ])
        .env("AGENTDESK_TEST_LLM_KEY", FAKE_KEY)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("fake-model"), "{stdout}");
    assert!(!stdout.contains(FAKE_KEY), "{stdout}");
    let r = s.legacy().mcp_agent_chat(&user("hi")).await.unwrap();
    assert_eq!(
        (r.mode.as_str(), r.reply.as_str()),
        ("llm", "hello from the model")
    );

    let out = std::process::Command::new(bin)
        .args([
            "account",
            "llm",
            "--db",
            &db,
            "--model",
            "m",
            "--api-key-env",
            "NOPE_UNSET_VAR",
        ])
        .args(["--base-url", "http://127.0.0.1:9"])
        .env_remove("NOPE_UNSET_VAR")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("NOPE_UNSET_VAR"));

    let out = std::process::Command::new(bin)
        .args(["account", "llm", "--db", &db, "--clear"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let r = s.legacy().mcp_agent_chat(&user("hi")).await.unwrap();
    assert_eq!(r.mode, "router");
}
