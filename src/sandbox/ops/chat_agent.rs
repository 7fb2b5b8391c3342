//! `mcp_agent_chat`: one chat turn. With an LLM provider saved in the account's settings
//! (`agentdesk account llm`), the server runs an OpenAI-compatible tool loop over the MCP tool
//! catalog; without one, a deterministic intent router answers the common requests. Both reach
//! the account only through [`mcp::execute_with`], and mutate tools only ever get a confirm token
//! ([`Mode::PrepareOnly`]): a model can prepare a trade for a human, never place one.

use super::mcp::{self, Mode};
use super::{AppError, Caller, ErrorKind};
use crate::api::model::{ChatMessage, ChatReply, ErrorDetail, ToolCall};
use crate::sandbox::core::Shared;
use crate::sandbox::engine::strategies::STRATEGIES;
use crate::sandbox::quota::day_of;
use crate::sandbox::store::chat::{LlmSettings, llm_for, record_tokens};
use crate::sandbox::venue::market::ASSETS;
use axum::http::HeaderMap;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// Model calls per turn at most; a model still asking for tools after that gets no more.
pub const MAX_ROUNDS: usize = 6;
/// Timeout of one request to the provider.
pub const LLM_TIMEOUT: Duration = Duration::from_secs(60);
/// A tool result sent back to the model is cut to this many bytes.
const TOOL_RESULT_MAX: usize = 12_000;

const SYSTEM_PROMPT: &str = "You are the trading assistant of an agentdesk account on a paper-trading \
venue. Use the service_* tools to read positions, PnL, orders and strategy discovery, and to run \
backtests (service_run_backtest, then poll service_get_backtest_job). Tools of the mutate tier \
(trading, closing, cancelling) are never executed in this chat: calling one only prepares it and \
returns a confirmToken with a preview for a human to approve. Say so plainly when you prepare one, \
and never claim a trade was placed. Answer briefly with the numbers the tools returned.";

// ---- the turn -------------------------------------------------------------------------------------

/// One chat turn for an authenticated caller whose request was admitted (and compute charged).
pub async fn turn(
    shared: &Arc<Shared>,
    caller: &Caller,
    messages: Vec<ChatMessage>,
    headers: &HeaderMap,
) -> Result<ChatReply, AppError> {
    let account_id = caller.account_id;
    let llm = shared
        .run_raw(move |core, _| llm_for(&core.store.conn, account_id))
        .await
        .map_err(AppError::internal)??;
    let session = Session {
        shared: shared.clone(),
        caller: caller.clone(),
        headers: headers.clone(),
        tool_calls: Vec::new(),
        confirm_tokens: Vec::new(),
    };
    match llm {
        Some(llm) => session.llm(llm, messages).await,
        None => session.router(messages).await,
    }
}

struct Session {
    shared: Arc<Shared>,
    caller: Caller,
    headers: HeaderMap,
    tool_calls: Vec<ToolCall>,
    confirm_tokens: Vec<Value>,
}

impl Session {
    /// Runs one tool (mutate tools only prepare) and records the call. Returns the result, or
    /// the operation's error.
    async fn tool(&mut self, name: &str, args: Value) -> Result<Value, ErrorDetail> {
        let now = self.shared.clock.now();
        let outcome = mcp::execute_with(
            &self.shared,
            &self.caller,
            name,
            args.clone(),
            now,
            &self.headers,
            Mode::PrepareOnly,
        )
        .await;
        let (result, error) = match outcome {
            Ok(done) => {
                if done.requires_confirmation {
                    let mut entry = json!({"tool": done.tool, "args": args});
                    if let (Some(e), Some(r)) = (entry.as_object_mut(), done.result.as_object()) {
                        for (k, v) in r {
                            e.insert(k.clone(), v.clone());
                        }
                    }
                    self.confirm_tokens.push(entry);
                }
                (done.result, None)
            }
            Err(e) => (
                Value::Null,
                Some(ErrorDetail {
                    code: e.code.to_string(),
                    message: e.message,
                    field: e.field,
                }),
            ),
        };
        self.tool_calls.push(ToolCall {
            name: name.to_string(),
            args,
            result: result.clone(),
            error: error.clone(),
            extra: Default::default(),
        });
        match error {
            None => Ok(result),
            Some(e) => Err(e),
        }
    }

    fn reply(self, reply: String, mode: &str) -> ChatReply {
        ChatReply {
            reply,
            tool_calls: self.tool_calls,
            confirm_tokens: self.confirm_tokens,
            mode: mode.into(),
            extra: Default::default(),
        }
    }

    // ---- LLM mode ---------------------------------------------------------------------------------

    async fn llm(
        mut self,
        llm: LlmSettings,
        messages: Vec<ChatMessage>,
    ) -> Result<ChatReply, AppError> {
        let tools: Vec<Value> = super::capabilities::capabilities()
            .tools
            .iter()
            .map(|t| {
                let mut parameters = t.input_schema.clone();
                if let Some(p) = parameters.as_object_mut() {
                    p.remove("$schema");
                }
                json!({
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": parameters},
                })
            })
            .collect();
        let mut convo = vec![json!({"role": "system", "content": SYSTEM_PROMPT})];
        convo.extend(
            messages
                .iter()
                .map(|m| json!({"role": m.role, "content": m.content})),
        );
        let http = reqwest::Client::builder()
            .timeout(LLM_TIMEOUT)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(AppError::internal)?;
        let url = format!("{}/chat/completions", llm.base_url.trim_end_matches('/'));
        for _ in 0..MAX_ROUNDS {
            let body = json!({
                "model": llm.model,
                "messages": convo,
                "tools": tools,
                "tool_choice": "auto",
            });
            let answer = complete(&http, &url, &llm, &body).await?;
            self.record_usage(&answer).await?;
            let message = answer
                .pointer("/choices/0/message")
                .cloned()
                .filter(Value::is_object)
                .ok_or_else(|| {
                    provider_error(
                        &llm,
                        "its answer has no choices[0].message (is it OpenAI-compatible?)".into(),
                    )
                })?;
            let calls: Vec<Value> = message
                .get("tool_calls")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if calls.is_empty() {
                let text = message
                    .get("content")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                return Ok(self.reply(text, "llm"));
            }
            let mut assistant = message.clone();
            if assistant.get("content").is_none() {
                assistant["content"] = Value::Null;
            }
            convo.push(assistant);
            for call in calls {
                let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
                let name = call
                    .pointer("/function/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let raw = call
                    .pointer("/function/arguments")
                    .cloned()
                    .unwrap_or(Value::Null);
                // OpenAI sends the arguments as JSON text; some compatible servers as an object.
                let args = match raw {
                    Value::String(s) if s.trim().is_empty() => Ok(json!({})),
                    Value::String(s) => serde_json::from_str::<Value>(&s),
                    Value::Null => Ok(json!({})),
                    other => Ok(other),
                };
                let content = match args {
                    Err(e) => json!({"error": {"code": "invalid_arguments",
                        "message": format!("the tool arguments are not valid JSON: {e}")}}),
                    Ok(args) => match self.tool(&name, args).await {
                        Ok(result)
                            if mcp::tool_op(&name)
                                .is_some_and(|op| op.tier == crate::api::catalog::Tier::Mutate) =>
                        {
                            json!({
                                "notExecuted": "Mutate tools are never executed in chat. This prepared it: a human \
                                                must approve it with the confirmToken (execute_mcp_tool with the same \
                                                args plus confirmToken).",
                                "result": result,
                            })
                        }
                        Ok(result) => result,
                        Err(e) => json!({"error": e}),
                    },
                };
                convo.push(json!({
                    "role": "tool",
                    "tool_call_id": id,
                    "content": truncate(&content.to_string(), TOOL_RESULT_MAX),
                }));
            }
        }
        let reply = format!(
            "I stopped after {MAX_ROUNDS} rounds of tool calls without a final answer; the tool \
             results so far are in toolCalls."
        );
        Ok(self.reply(reply, "llm"))
    }

    async fn record_usage(&self, answer: &Value) -> Result<(), AppError> {
        let tokens = |name: &str| {
            answer
                .pointer(&format!("/usage/{name}"))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        let (input, output) = (tokens("prompt_tokens"), tokens("completion_tokens"));
        if input == 0 && output == 0 {
            return Ok(());
        }
        let key_id = self.caller.key_id;
        self.shared
            .run_raw(move |core, now| {
                record_tokens(&core.store.conn, key_id, &day_of(now), input, output)
            })
            .await
            .map_err(AppError::internal)??;
        Ok(())
    }

    // ---- router mode ------------------------------------------------------------------------------

    async fn router(mut self, messages: Vec<ChatMessage>) -> Result<ChatReply, AppError> {
        let text = messages
            .iter()
            .rev()
            .find(|m| m.role == "user")
            .map(|m| m.content.clone())
            .unwrap_or_default();
        let intent = parse_intent(&text);
        let answer = self.answer(intent).await;
        let reply = format!(
            "{answer}\n\n(No LLM is configured for this account, so a deterministic router answered. To use \
             your own model, run: agentdesk account llm --db PATH --base-url URL --model MODEL \
             --api-key-env VAR, with any OpenAI-compatible provider.)"
        );
        Ok(self.reply(reply, "router"))
    }

    async fn answer(&mut self, intent: Intent) -> String {
        let failed = |e: ErrorDetail| format!("That did not work: {} ({}).", e.message, e.code);
        match intent {
            Intent::Positions => match self.tool("service_get_positions", json!({})).await {
                Ok(r) => describe_positions(&r),
                Err(e) => failed(e),
            },
            Intent::Pnl => match self.tool("service_pnl_summary", json!({})).await {
                Ok(r) => describe_pnl(&r),
                Err(e) => failed(e),
            },
            Intent::Orders => match self.tool("service_list_open_orders", json!({})).await {
                Ok(r) => describe_orders(&r),
                Err(e) => failed(e),
            },
            Intent::Usage => match self.tool("service_get_usage", json!({})).await {
                Ok(r) => r
                    .get("json_summary")
                    .and_then(Value::as_str)
                    .unwrap_or("Usage read.")
                    .to_string(),
                Err(e) => failed(e),
            },
            Intent::TopStrategies { coin } => self.top_strategies(coin).await,
            Intent::Backtest(args) => {
                let request = args.clone();
                match self.tool("service_run_backtest", args).await {
                    Ok(r) => format!(
                        "Queued backtest job {} ({} on {} {}, {} days). Poll it with \
                         service_get_backtest_job {{\"jobId\": \"{}\"}} (GET {}).",
                        r["jobId"].as_str().unwrap_or("?"),
                        request["strategyId"].as_str().unwrap_or("?"),
                        request["pair"].as_str().unwrap_or("?"),
                        request["timeframe"].as_str().unwrap_or("?"),
                        request["days"],
                        r["jobId"].as_str().unwrap_or("?"),
                        r["pollUrl"].as_str().unwrap_or("?"),
                    ),
                    Err(e) => failed(e),
                }
            }
            Intent::Stage(args) => match self.tool("service_propose_trade", args).await {
                Ok(r) => format!(
                    "Prepared, not executed: {}. Confirm token {} (expires {}) — a human approves it by \
                     calling execute_mcp_tool with name service_propose_trade, the same args and \
                     confirmToken; that stages the proposal, which then needs confirm_trade.",
                    r["summary"].as_str().unwrap_or("a trade"),
                    r["confirmToken"].as_str().unwrap_or("?"),
                    r["expiresAt"].as_str().unwrap_or("?"),
                ),
                Err(e) => failed(e),
            },
            Intent::Incomplete(what) => what,
            Intent::Help => HELP.to_string(),
        }
    }

    async fn top_strategies(&mut self, coin: Option<&'static str>) -> String {
        let coin = coin.unwrap_or("BTC");
        let pair = format!("{coin}-USD");
        let scan = self
            .tool(
                "service_discover_top_backtests",
                json!({"filter": "all", "includeAll": true}),
            )
            .await;
        let mut computing = false;
        let mut rows: Vec<Value> = match scan {
            Ok(r) => {
                computing |= r["computing"].as_bool().unwrap_or(false);
                rows_of(&r)
                    .into_iter()
                    .filter(|row| row["pair"].as_str() == Some(pair.as_str()))
                    .collect()
            }
            Err(e) => return format!("That did not work: {} ({}).", e.message, e.code),
        };
        let mut source = "cached backtests (60 days, 15m/1h/4h)";
        if rows.is_empty() {
            match self
                .tool(
                    "service_discover_top_optimized_combos",
                    json!({"pair": pair, "filter": "all"}),
                )
                .await
            {
                Ok(r) => {
                    computing |= r["computing"].as_bool().unwrap_or(false);
                    rows = rows_of(&r);
                    source = "optimizer parameter sets (5m, 30 days)";
                }
                Err(e) => return format!("That did not work: {} ({}).", e.message, e.code),
            }
        }
        // Good and excellent rows first (the documented quality thresholds), then by return.
        rows.sort_by(|a, b| {
            let q = |v: &Value| match v["quality"].as_str() {
                Some("excellent") => 2,
                Some("good") => 1,
                _ => 0,
            };
            let r = |v: &Value| v["totalReturn"].as_f64().unwrap_or(f64::NEG_INFINITY);
            q(b).cmp(&q(a)).then(r(b).total_cmp(&r(a)))
        });
        if rows.is_empty() {
            return if computing {
                format!(
                    "The strategy rankings for {pair} are still being computed; ask again in a minute."
                )
            } else {
                format!("No ranked strategies for {pair} yet.")
            };
        }
        let lines: Vec<String> = rows
            .iter()
            .take(5)
            .enumerate()
            .map(|(i, r)| {
                format!(
                    "{}. {} {} ({}) — return {}%, win rate {}%, max drawdown {}%, {} trades",
                    i + 1,
                    r["strategyId"].as_str().unwrap_or("?"),
                    r["timeframe"].as_str().unwrap_or(""),
                    r["quality"].as_str().unwrap_or("unrated"),
                    pct(&r["totalReturn"]),
                    pct(&r["winRate"]),
                    pct(&r["maxDrawdown"]),
                    r["totalTrades"]
                )
            })
            .collect();
        format!(
            "Best strategies for {pair} by {source}{}:\n{}\nBacktest one with e.g. \"backtest {} on {coin} 1h 30 days\".",
            if computing {
                " (still computing; more rows will come)"
            } else {
                ""
            },
            lines.join("\n"),
            rows[0]["strategyId"].as_str().unwrap_or("sma_cross"),
        )
    }
}

fn rows_of(r: &Value) -> Vec<Value> {
    ["results", "combos", "rows"]
        .iter()
        .find_map(|k| r.get(*k).and_then(Value::as_array))
        .cloned()
        .unwrap_or_default()
}

fn pct(v: &Value) -> String {
    match v.as_f64() {
        Some(x) => format!("{:.1}", x),
        None => "n/a".into(),
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…(truncated)", &s[..end])
}

/// Sends one completion request; any failure is a 502 naming the provider's status and message.
async fn complete(
    http: &reqwest::Client,
    url: &str,
    llm: &LlmSettings,
    body: &Value,
) -> Result<Value, AppError> {
    let resp = http
        .post(url)
        .bearer_auth(llm.api_key.expose())
        .json(body)
        .send()
        .await
        .map_err(|e| {
            let what = if e.is_timeout() {
                format!("it did not answer within {}s", LLM_TIMEOUT.as_secs())
            } else {
                format!("it could not be reached ({})", e.without_url())
            };
            provider_error(llm, what)
        })?;
    let status = resp.status();
    let text = resp
        .text()
        .await
        .map_err(|e| provider_error(llm, format!("its answer could not be read ({e})")))?;
    if !status.is_success() {
        let parsed = serde_json::from_str::<Value>(&text).ok();
        let message = parsed
            .as_ref()
            .and_then(|v| {
                v.pointer("/error/message")
                    .or_else(|| v.get("message"))
                    .or_else(|| v.get("error"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_else(|| truncate(text.trim(), 300));
        return Err(provider_error(
            llm,
            format!("it answered HTTP {}: {message}", status.as_u16()),
        ));
    }
    serde_json::from_str(&text)
        .map_err(|e| provider_error(llm, format!("its answer is not JSON ({e})")))
}

fn provider_error(llm: &LlmSettings, what: String) -> AppError {
    let mut message = format!(
        "the account's LLM provider ({}, model {}) failed: {what}",
        llm.base_url, llm.model
    );
    // Providers sometimes echo the credential; it never leaves the server.
    let key = llm.api_key.expose();
    if !key.is_empty() {
        message = message.replace(key, "<redacted>");
    }
    AppError::new(ErrorKind::Upstream, "llm_provider_error", message)
}

// ---- the deterministic router ---------------------------------------------------------------------

const HELP: &str = "I understand:\n\
- \"show my positions\"\n\
- \"what is my PnL\" (equity, unrealized and period PnL)\n\
- \"open orders\"\n\
- \"usage\" (today's quota)\n\
- \"best strategies for ETH\"\n\
- \"backtest sma_cross on BTC 1h 30 days\" (strategies: sma_cross, ema_cross, rsi_reversion, \
bollinger_reversion, donchian_breakout, macd, supertrend, keltner_breakout)\n\
- \"go long 0.01 BTC\", \"short $500 of ETH at 5x\", \"close my BTC position\", \"close all\" — \
prepared with a confirm token for a human, never executed here";

#[derive(Debug, Clone, PartialEq)]
enum Intent {
    Positions,
    Pnl,
    Orders,
    Usage,
    TopStrategies {
        coin: Option<&'static str>,
    },
    Backtest(Value),
    Stage(Value),
    /// Understood, but something is missing: the reply says what.
    Incomplete(String),
    Help,
}

fn words(text: &str) -> Vec<String> {
    text.to_ascii_lowercase()
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '?' | '!' | ';' | '(' | ')'))
        .map(|w| w.trim_end_matches('.').to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

fn coin_in(words: &[String]) -> Option<&'static str> {
    let alias = |w: &str| match w {
        "bitcoin" => Some("BTC"),
        "ether" | "ethereum" => Some("ETH"),
        "solana" => Some("SOL"),
        _ => None,
    };
    words.iter().find_map(|w| {
        alias(w).or_else(|| {
            let upper = w.to_ascii_uppercase();
            let base = upper
                .split(['-', '/'])
                .next()
                .unwrap_or_default()
                .trim_end_matches("USDT")
                .trim_end_matches("USD");
            ASSETS.iter().find(|a| a.coin == base).map(|a| a.coin)
        })
    })
}

fn number(w: &str) -> Option<f64> {
    w.trim_start_matches('$')
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x > 0.0)
}

fn has(words: &[String], any: &[&str]) -> bool {
    words.iter().any(|w| any.contains(&w.as_str()))
}

fn parse_intent(text: &str) -> Intent {
    let w = words(text);
    let coin = coin_in(&w);
    let mentions = |stem: &str| w.iter().any(|x| x.starts_with(stem));
    if mentions("backtest") {
        return parse_backtest(&w, coin);
    }
    if (has(&w, &["best", "top"]) && mentions("strateg")) || mentions("strateg") && coin.is_some() {
        return Intent::TopStrategies { coin };
    }
    if has(&w, &["close", "flatten", "exit"]) {
        if has(&w, &["all", "everything"]) {
            return Intent::Stage(json!({"action": "close_all"}));
        }
        return match coin {
            Some(c) => Intent::Stage(json!({"action": "close", "a": c})),
            None => Intent::Incomplete(
                "Which position should I close? Say e.g. \"close my BTC position\" or \"close all\"."
                    .into(),
            ),
        };
    }
    let direction = if has(&w, &["long", "buy"]) {
        Some("long")
    } else if has(&w, &["short", "sell"]) {
        Some("short")
    } else {
        None
    };
    if let Some(d) = direction {
        return parse_trade(&w, d, coin);
    }
    if mentions("position") {
        return Intent::Positions;
    }
    if has(
        &w,
        &[
            "pnl",
            "p&l",
            "profit",
            "profits",
            "equity",
            "balance",
            "performance",
        ],
    ) {
        return Intent::Pnl;
    }
    if mentions("order") {
        return Intent::Orders;
    }
    if has(&w, &["usage", "quota", "limits"]) {
        return Intent::Usage;
    }
    Intent::Help
}

fn parse_backtest(w: &[String], coin: Option<&'static str>) -> Intent {
    let strategy = w.iter().find_map(|x| {
        STRATEGIES
            .iter()
            .find(|s| s.id == x.as_str() || s.id.replace('_', "-") == *x)
            .map(|s| s.id)
    });
    let Some(strategy) = strategy else {
        return Intent::Incomplete(format!(
            "Which strategy should I backtest? One of: {}. Say e.g. \"backtest sma_cross on BTC 1h 30 days\".",
            STRATEGIES
                .iter()
                .map(|s| s.id)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    let timeframe = w
        .iter()
        .find(|x| ["1m", "5m", "15m", "1h", "4h", "1d"].contains(&x.as_str()))
        .cloned()
        .unwrap_or_else(|| "1h".into());
    // "30 days" first, then "30d" (but not the timeframe "1d").
    let days = w
        .iter()
        .enumerate()
        .find_map(|(i, x)| {
            let n = x.parse::<u32>().ok()?;
            w.get(i + 1)
                .filter(|next| next.starts_with("day"))
                .map(|_| n)
        })
        .or_else(|| {
            w.iter()
                .filter(|x| **x != timeframe)
                .find_map(|x| x.strip_suffix('d').and_then(|n| n.parse::<u32>().ok()))
        })
        .unwrap_or(30);
    Intent::Backtest(json!({
        "strategyId": strategy,
        "pair": format!("{}-USD", coin.unwrap_or("BTC")),
        "timeframe": timeframe,
        "days": days,
        "parameters": {},
    }))
}

fn parse_trade(w: &[String], direction: &str, coin: Option<&'static str>) -> Intent {
    let Some(coin) = coin else {
        return Intent::Incomplete(format!(
            "Which coin should I {direction}? Say e.g. \"go {direction} 0.01 BTC\". Coins: {}.",
            ASSETS.iter().map(|a| a.coin).collect::<Vec<_>>().join(", ")
        ));
    };
    let mut args = json!({"a": coin, "d": direction, "strategy": "Agent"});
    for (i, x) in w.iter().enumerate() {
        if let Some(lev) = x.strip_suffix('x').and_then(|n| n.parse::<u32>().ok()) {
            args["leverage"] = json!(lev);
            continue;
        }
        let Some(n) = number(x) else { continue };
        let next = w.get(i + 1).map(String::as_str).unwrap_or("");
        if x.starts_with('$') || ["usd", "usdc", "usdt", "dollars"].contains(&next) {
            args["sizeUsd"] = json!(n);
        } else if coin_in(&[next.to_string()]) == Some(coin) {
            args["size"] = json!(n);
        }
    }
    Intent::Stage(args)
}

fn describe_positions(r: &Value) -> String {
    let rows = r["positions"].as_array().cloned().unwrap_or_default();
    if rows.is_empty() {
        return "You have no open positions.".into();
    }
    let lines: Vec<String> = rows
        .iter()
        .map(|p| {
            format!(
                "- {} {} {} on {} at {} (mark {}, unrealized PnL {} USDC, {}x)",
                p["side"].as_str().unwrap_or(""),
                p["szi"].as_str().unwrap_or("?").trim_start_matches('-'),
                p["coin"].as_str().unwrap_or("?"),
                p["exchange"].as_str().unwrap_or("?"),
                p["entryPx"].as_str().unwrap_or("?"),
                p["markPx"].as_str().unwrap_or("?"),
                p["unrealizedPnl"].as_str().unwrap_or("?"),
                p["leverage"]["value"],
            )
        })
        .collect();
    format!(
        "You have {} open position{}:\n{}",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" },
        lines.join("\n")
    )
}

fn money(v: &Value) -> String {
    v.as_f64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .map(|x| format!("{x:.2}"))
        .unwrap_or_else(|| "?".into())
}

fn describe_pnl(r: &Value) -> String {
    format!(
        "Equity {} USDC; unrealized PnL {} USDC, realized {} USDC across {} open position(s). PnL today {}, \
         7 days {}, 30 days {}, total {} USDC.",
        money(&r["totalPortfolioValue"]),
        money(&r["totalUnrealizedPnL"]),
        money(&r["totalRealizedPnL"]),
        r["totalPositions"],
        money(&r["pnl"]["today"]),
        money(&r["pnl"]["week"]),
        money(&r["pnl"]["month"]),
        money(&r["pnl"]["total"]),
    )
}

fn describe_orders(r: &Value) -> String {
    let rows = r["orders"].as_array().cloned().unwrap_or_default();
    if rows.is_empty() {
        return "You have no resting orders.".into();
    }
    let lines: Vec<String> = rows
        .iter()
        .take(20)
        .map(|o| {
            format!(
                "- {} {} {} {} at {} (oid {}, {})",
                o["orderType"].as_str().unwrap_or("?"),
                if o["side"] == "B" { "buy" } else { "sell" },
                o["sz"].as_str().unwrap_or("?"),
                o["coin"].as_str().unwrap_or("?"),
                o["triggerPx"]
                    .as_str()
                    .or(o["limitPx"].as_str())
                    .unwrap_or("?"),
                o["oid"],
                o["exchange"].as_str().unwrap_or("?"),
            )
        })
        .collect();
    format!("{} resting order(s):\n{}", rows.len(), lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn router_understands_the_common_requests() {
        assert_eq!(parse_intent("show my positions"), Intent::Positions);
        assert_eq!(parse_intent("What's my PnL?"), Intent::Pnl);
        assert_eq!(parse_intent("open orders please"), Intent::Orders);
        assert_eq!(
            parse_intent("best strategies for ETH"),
            Intent::TopStrategies { coin: Some("ETH") }
        );
        assert_eq!(
            parse_intent("backtest sma_cross on BTC 1h 30 days"),
            Intent::Backtest(json!({"strategyId": "sma_cross", "pair": "BTC-USD",
                "timeframe": "1h", "days": 30, "parameters": {}}))
        );
        assert_eq!(
            parse_intent("backtest macd on eth 4h 90d"),
            Intent::Backtest(json!({"strategyId": "macd", "pair": "ETH-USD",
                "timeframe": "4h", "days": 90, "parameters": {}}))
        );
        assert_eq!(
            parse_intent("backtest ema_cross on SOL 1d 120 days"),
            Intent::Backtest(json!({"strategyId": "ema_cross", "pair": "SOL-USD",
                "timeframe": "1d", "days": 120, "parameters": {}}))
        );
        assert_eq!(
            parse_intent("go long 0.01 BTC"),
            Intent::Stage(json!({"a": "BTC", "d": "long", "strategy": "Agent", "size": 0.01}))
        );
        assert_eq!(
            parse_intent("short $500 of ETH at 3x"),
            Intent::Stage(
                json!({"a": "ETH", "d": "short", "strategy": "Agent", "sizeUsd": 500.0, "leverage": 3})
            )
        );
        assert_eq!(
            parse_intent("close my BTC position"),
            Intent::Stage(json!({"action": "close", "a": "BTC"}))
        );
        assert_eq!(
            parse_intent("close all"),
            Intent::Stage(json!({"action": "close_all"}))
        );
        assert!(matches!(parse_intent("go long"), Intent::Incomplete(_)));
        assert!(matches!(
            parse_intent("backtest BTC"),
            Intent::Incomplete(_)
        ));
        assert_eq!(parse_intent("tell me a joke"), Intent::Help);
    }

    #[test]
    fn provider_errors_never_carry_the_key() {
        let llm = LlmSettings {
            base_url: "http://127.0.0.1:9".into(),
            model: "m".into(),
            api_key: crate::secret::Secret::new("sk-topsecret"),
        };
        let e = provider_error(&llm, "it answered HTTP 401: bad key sk-topsecret".into());
        assert_eq!(e.kind, ErrorKind::Upstream);
        assert_eq!(e.code, "llm_provider_error");
        assert!(!e.message.contains("sk-topsecret"), "{}", e.message);
        assert!(e.message.contains("401"));
    }
}
