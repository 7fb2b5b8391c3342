//! The typed client: one async method per catalog operation, each named as the seed names it. Paths
//! come from the catalog, never from string literals here.

use super::catalog::{self, Method, Operation};
use super::error::ApiError;
use super::model::lenient;
use super::model::*;
use crate::secret::Secret;
use rand::RngExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct ClientOptions {
    pub timeout: Duration,
    /// Extra attempts for requests that are safe to repeat (GETs, and POSTs carrying an
    /// Idempotency-Key) after a transport error or a 502/503/504.
    pub retries: u32,
    pub user_agent: String,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            timeout: Duration::from_secs(10),
            retries: 2,
            user_agent: format!("agentdesk/{}", env!("CARGO_PKG_VERSION")),
        }
    }
}

#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    key: Option<Secret>,
    /// An x402 `PAYMENT-SIGNATURE` sent instead of the key (see [`Client::paying`]).
    payment: Option<Secret>,
    retries: u32,
    /// A gateway's supervisor token, for `/gate/v1` (see [`Client::with_gate_token`]).
    gate_token: Option<Secret>,
    timeout: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base)
            .field("key", &self.key)
            .finish()
    }
}

/// A request before it is sent: what [`Client::call`] needs besides the operation.
#[derive(Debug, Default, Clone)]
pub struct Request {
    pub path_args: Vec<String>,
    pub query: Vec<(String, String)>,
    pub body: Option<Value>,
    pub headers: Vec<(String, String)>,
    /// How long the server may hold the request before it answers (a long poll): added to the
    /// client's timeout for this request.
    pub hold: Option<Duration>,
}

/// The header a console's stagings carry its gateway supervisor token in.
pub const SUPERVISOR_HEADER: &str = "x-agentdesk-supervisor";

pub fn new_idempotency_key() -> String {
    let bytes: [u8; 16] = rand::rng().random();
    format!("idem_{}", hex::encode(bytes))
}

impl Client {
    pub fn new(base_url: &str, api_key: Option<Secret>) -> Result<Self, ApiError> {
        Self::with_options(base_url, api_key, ClientOptions::default())
    }

    pub fn with_options(
        base_url: &str,
        api_key: Option<Secret>,
        options: ClientOptions,
    ) -> Result<Self, ApiError> {
        let base = base_url.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(ApiError::Invalid {
                code: "invalid_base_url".into(),
                field: Some("base_url".into()),
                message: format!("base URL {base_url:?} must start with http:// or https://"),
            });
        }
        let http = reqwest::Client::builder()
            .timeout(options.timeout)
            .connect_timeout(options.timeout.min(Duration::from_secs(5)))
            .user_agent(options.user_agent)
            .build()
            .map_err(|e| ApiError::Transport(e.to_string()))?;
        Ok(Client {
            http,
            base,
            key: api_key,
            payment: None,
            retries: options.retries,
            gate_token: None,
            timeout: options.timeout,
        })
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// A copy of this client that authenticates with an x402 `PAYMENT-SIGNATURE` header (a base64
    /// `PaymentPayload`) instead of `x-api-key`. A payment is spent by the first call that carries
    /// it, so use the copy for one call (research runs and usage accept payments).
    pub fn paying(&self, payment_signature: impl Into<String>) -> Client {
        Client {
            key: None,
            payment: Some(Secret::new(payment_signature)),
            ..self.clone()
        }
    }

    /// A copy of this client that sends `token` (a supervisor token, `agentdesk gate token`) to the
    /// gateway's `/gate/v1` API; the interface's operations keep the API key.
    pub fn with_gate_token(mut self, token: Option<Secret>) -> Client {
        self.gate_token = token;
        self
    }

    pub fn has_gate_token(&self) -> bool {
        self.gate_token.is_some()
    }

    pub fn key_fingerprint(&self) -> Option<String> {
        self.key.as_ref().map(Secret::fingerprint)
    }

    /// Calls any catalog operation and returns the decoded JSON body. Every typed method goes
    /// through here.
    pub async fn call(&self, op: &Operation, req: Request) -> Result<Value, ApiError> {
        let args: Vec<&str> = req.path_args.iter().map(String::as_str).collect();
        let url = format!("{}{}", self.base, op.path_with(&args));
        self.send(op.method, url, self.key.as_ref(), req).await
    }

    /// Sends one request to `url` with `key` in `x-api-key`: the catalog's operations and a
    /// gateway's `/gate/v1` paths (which are not operations of the interface) alike.
    async fn send(
        &self,
        method: Method,
        url: String,
        key: Option<&Secret>,
        req: Request,
    ) -> Result<Value, ApiError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = key {
            let mut v = HeaderValue::from_str(key.expose()).map_err(|_| ApiError::Invalid {
                code: "invalid_api_key".into(),
                field: Some("api_key".into()),
                message: "the API key contains characters that cannot be sent in a header".into(),
            })?;
            v.set_sensitive(true);
            headers.insert("x-api-key", v);
        }
        if let Some(payment) = &self.payment {
            let mut v = HeaderValue::from_str(payment.expose()).map_err(|_| ApiError::Invalid {
                code: "invalid_payment".into(),
                field: Some("payment_signature".into()),
                message:
                    "the payment signature contains characters that cannot be sent in a header"
                        .into(),
            })?;
            v.set_sensitive(true);
            headers.insert("payment-signature", v);
        }
        if method == Method::Post {
            headers.insert(
                "x-requested-with",
                HeaderValue::from_static("XMLHttpRequest"),
            );
        }
        let mut idempotent = method == Method::Get;
        for (name, value) in &req.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ApiError::Decode(format!("bad header name {name}")))?;
            idempotent |= name.as_str() == "idempotency-key";
            let value = HeaderValue::from_str(value)
                .map_err(|_| ApiError::Decode(format!("bad header value for {name}")))?;
            headers.insert(name, value);
        }
        let attempts = if idempotent { self.retries + 1 } else { 1 };
        let mut last = ApiError::Transport("no attempt made".into());
        for attempt in 0..attempts {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(200 << attempt.min(5))).await;
            }
            let mut builder = match method {
                Method::Get => self.http.get(&url),
                Method::Post => self.http.post(&url),
            }
            .headers(headers.clone());
            if !req.query.is_empty() {
                builder = builder.query(&req.query);
            }
            if let Some(hold) = req.hold {
                builder = builder.timeout(self.timeout + hold);
            }
            if method == Method::Post {
                builder = builder.json(req.body.as_ref().unwrap_or(&json!({})));
            }
            match self.exchange(builder).await {
                Err(e) if e.is_transient() => last = e,
                other => return other,
            }
        }
        Err(last)
    }

    async fn exchange(&self, builder: reqwest::RequestBuilder) -> Result<Value, ApiError> {
        let resp = builder.send().await.map_err(transport)?;
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let retry_after = header("retry-after").and_then(|v| v.trim().parse::<u64>().ok());
        let payment_required = header("payment-required");
        let bytes = resp.bytes().await.map_err(transport)?;
        let body: Value = if bytes.is_empty() {
            Value::Null
        } else {
            match serde_json::from_slice(&bytes) {
                Ok(v) => v,
                Err(_) if !(200..300).contains(&status) => {
                    json!({"message": String::from_utf8_lossy(&bytes).chars().take(300).collect::<String>()})
                }
                Err(e) => return Err(ApiError::Decode(format!("body is not JSON: {e}"))),
            }
        };
        let failed = body.get("success") == Some(&Value::Bool(false));
        if !(200..300).contains(&status) || failed {
            return Err(ApiError::from_response(
                status,
                &body,
                retry_after,
                payment_required,
            ));
        }
        Ok(body)
    }

    async fn typed<T: DeserializeOwned>(&self, name: &str, req: Request) -> Result<T, ApiError> {
        let op = catalog::op(name);
        let value = self.call(op, req).await?;
        decode(name, value)
    }

    /// As [`Client::typed`], for an answer that must never be lost to one odd field (a staged
    /// proposal, an execution): fields that cannot be read land in the answer's `extra`.
    async fn typed_row<T: Lenient>(&self, name: &str, req: Request) -> Result<T, ApiError> {
        let op = catalog::op(name);
        let value = self.call(op, req).await?;
        Ok(decode_row(name, value))
    }

    async fn get<T: DeserializeOwned>(
        &self,
        name: &str,
        query: Vec<(String, String)>,
    ) -> Result<T, ApiError> {
        self.typed(
            name,
            Request {
                query,
                ..Default::default()
            },
        )
        .await
    }

    async fn post<T: DeserializeOwned, B: Serialize>(
        &self,
        name: &str,
        body: &B,
    ) -> Result<T, ApiError> {
        self.typed(name, Request::json(body)?).await
    }

    // ---- account and observation ---------------------------------------------------------------

    pub async fn whoami(&self, include_summary: bool) -> Result<Whoami, ApiError> {
        let query = if include_summary {
            vec![("include".into(), "summary".into())]
        } else {
            vec![]
        };
        let req = Request {
            query,
            ..Default::default()
        };
        self.typed_row("whoami", req).await
    }

    pub async fn get_usage(&self) -> Result<Usage, ApiError> {
        self.typed_row("get_usage", Request::default()).await
    }

    /// The same payload on the platform path (`GET /api/v1/usage`).
    pub async fn get_usage_v1(&self) -> Result<Usage, ApiError> {
        self.get("get_usage_v1", vec![]).await
    }

    pub async fn get_positions(&self) -> Result<Positions, ApiError> {
        self.get("get_positions", vec![]).await
    }

    pub async fn pnl_summary(&self) -> Result<PnlSummary, ApiError> {
        self.typed_row("pnl_summary", Request::default()).await
    }

    pub async fn list_audit_logs(&self, limit: Option<u32>) -> Result<AuditLogs, ApiError> {
        let query = limit
            .map(|l| vec![("limit".into(), l.to_string())])
            .unwrap_or_default();
        self.get("list_audit_logs", query).await
    }

    pub async fn list_tools(&self) -> Result<ToolCatalog, ApiError> {
        self.get("list_tools", vec![]).await
    }

    /// `exchange`: `venue`, `venue2` or `all` (the server's default).
    pub async fn list_open_orders(&self, exchange: Option<&str>) -> Result<OpenOrders, ApiError> {
        let query = exchange
            .map(|e| vec![("exchange".into(), e.to_string())])
            .unwrap_or_default();
        self.get("list_open_orders", query).await
    }

    /// Extension: staged and recently decided proposals. `status`: staged, executed, expired,
    /// failed or all.
    pub async fn list_proposals(&self, status: Option<&str>) -> Result<Proposals, ApiError> {
        let query = status
            .map(|s| vec![("status".into(), s.to_string())])
            .unwrap_or_default();
        self.get("list_proposals", query).await
    }

    pub async fn get_openapi(&self) -> Result<Value, ApiError> {
        self.get("get_openapi", vec![]).await
    }

    // ---- discovery -----------------------------------------------------------------------------

    pub async fn discover_top_backtests(
        &self,
        filter: Option<&str>,
        include_all: Option<bool>,
    ) -> Result<Discovery, ApiError> {
        let mut query = vec![];
        push(&mut query, "filter", filter);
        push(&mut query, "includeAll", include_all);
        self.get("discover_top_backtests", query).await
    }

    pub async fn discover_top_live(
        &self,
        window_days: Option<u32>,
        limit: Option<u32>,
    ) -> Result<Discovery, ApiError> {
        let mut query = vec![];
        push(&mut query, "windowDays", window_days);
        push(&mut query, "limit", limit);
        self.get("discover_top_live", query).await
    }

    /// `params`: any of the operation's query parameters (pair, timeframe, days, perStrategy,
    /// limit, filter, minReturnPct, minTrades); the server applies the seed's defaults.
    pub async fn discover_top_optimized_combos(
        &self,
        params: &[(&str, String)],
    ) -> Result<Discovery, ApiError> {
        let query = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        self.get("discover_top_optimized_combos", query).await
    }

    pub async fn discover_strategies(&self) -> Result<Strategies, ApiError> {
        self.get("discover_strategies", vec![]).await
    }

    // ---- backtests -----------------------------------------------------------------------------

    pub async fn run_backtest(&self, req: &BacktestRequest) -> Result<BacktestJob, ApiError> {
        self.post("run_backtest", req).await
    }

    pub async fn get_backtest_job(&self, job_id: &str) -> Result<BacktestJob, ApiError> {
        self.typed(
            "get_backtest_job",
            Request {
                path_args: vec![job_id.to_string()],
                ..Default::default()
            },
        )
        .await
    }

    // ---- staged trading ------------------------------------------------------------------------

    pub async fn propose_trade(&self, signal: &TradeSignal) -> Result<Proposal, ApiError> {
        let p: Proposal = self
            .typed_row("propose_trade", self.staged_by(Request::json(signal)?))
            .await?;
        // Without an id nothing can be confirmed: that answer is not a staged proposal.
        if p.proposal_id.is_empty() {
            let raw = serde_json::Value::Object(p.extra);
            return Err(ApiError::Decode(format!(
                "propose_trade: no proposalId in the answer ({})",
                lenient::compact(&raw, 160)
            )));
        }
        Ok(p)
    }

    pub async fn confirm_trade(&self, proposal_id: &str) -> Result<ExecutionResult, ApiError> {
        let body = ConfirmRequest {
            proposal_id: proposal_id.to_string(),
        };
        self.typed_row("confirm_trade", Request::json(&body)?).await
    }

    pub async fn close_position(&self, req: &CloseRequest) -> Result<ExecutionResult, ApiError> {
        self.typed_row("close_position", self.staged_by(Request::json(req)?))
            .await
    }

    /// A staging from a console on a gateway says which supervisor made it (its gateway token),
    /// so that supervisor is never counted among its step-up approvers. Sent by a client that
    /// holds a gateway token (a console given one: the embedded console, or
    /// AGENTDESK_GATE_TOKEN); the gateway never forwards it upstream.
    fn staged_by(&self, mut req: Request) -> Request {
        if let Some(token) = &self.gate_token {
            req.headers
                .push((SUPERVISOR_HEADER.to_string(), token.expose().to_string()));
        }
        req
    }

    // ---- immediate trading ---------------------------------------------------------------------

    /// `POST /api/v1/trades`. `fanout: false` is sent both in the body and as
    /// `X-Service-Fanout: 0`, so either convention of the server is honoured.
    pub async fn place_order(&self, signal: &TradeSignal) -> Result<ExecutionResult, ApiError> {
        let mut req = Request::json(signal)?;
        if signal.fanout == Some(false) {
            req.headers.push(("x-service-fanout".into(), "0".into()));
        }
        self.typed_row("place_order", req).await
    }

    /// `POST /api/v1/orders` with an Idempotency-Key: the caller's, or a fresh one. Retries after a
    /// transport error reuse the same key, so the order is placed at most once.
    pub async fn platform_place_order(
        &self,
        order: &PlatformOrder,
        idempotency_key: Option<&str>,
    ) -> Result<ExecutionResult, ApiError> {
        let mut req = Request::json(order)?;
        let key = idempotency_key
            .map(str::to_string)
            .unwrap_or_else(new_idempotency_key);
        req.headers.push(("idempotency-key".into(), key));
        self.typed_row("platform_place_order", req).await
    }

    pub async fn platform_close_position(
        &self,
        req: &PlatformClose,
    ) -> Result<ExecutionResult, ApiError> {
        self.typed_row("platform_close_position", Request::json(req)?)
            .await
    }

    pub async fn platform_cancel_order(
        &self,
        req: &CancelRequest,
    ) -> Result<CancelResult, ApiError> {
        self.post("platform_cancel_order", req).await
    }

    pub async fn approve_builder_fee_payload(
        &self,
        venue_wallet: &str,
    ) -> Result<BuilderFeePayload, ApiError> {
        self.get(
            "approve_builder_fee_payload",
            vec![("venueWallet".into(), venue_wallet.to_string())],
        )
        .await
    }

    pub async fn approve_builder_fee(
        &self,
        req: &BuilderFeeApproval,
    ) -> Result<BuilderFeeStatus, ApiError> {
        self.post("approve_builder_fee", req).await
    }

    // ---- signal destinations -------------------------------------------------------------------

    pub async fn list_signal_destinations(&self) -> Result<SignalDestinations, ApiError> {
        self.get("list_signal_destinations", vec![]).await
    }

    /// The answer carries `signingSecret`, which no later call shows again.
    pub async fn create_signal_destination(
        &self,
        req: &SignalDestinationRequest,
    ) -> Result<SignalDestination, ApiError> {
        self.post("create_signal_destination", req).await
    }

    /// Extension: the delivery log of one destination, newest first.
    pub async fn list_signal_deliveries(
        &self,
        destination_id: &str,
        limit: Option<u32>,
    ) -> Result<SignalDeliveries, ApiError> {
        let mut query = Vec::new();
        push(&mut query, "limit", limit);
        self.typed(
            "list_signal_deliveries",
            Request {
                path_args: vec![destination_id.to_string()],
                query,
                ..Default::default()
            },
        )
        .await
    }

    // ---- tool access ---------------------------------------------------------------------------

    pub async fn list_mcp_capabilities(&self) -> Result<Capabilities, ApiError> {
        self.get("list_mcp_capabilities", vec![]).await
    }

    pub async fn execute_mcp_tool(&self, name: &str, args: Value) -> Result<ToolResult, ApiError> {
        let body = ExecuteToolRequest {
            name: name.to_string(),
            args,
        };
        // A mutate tool stages: the console's supervisor is named as for a proposal.
        self.typed("execute_mcp_tool", self.staged_by(Request::json(&body)?))
            .await
    }

    pub async fn mcp_agent_chat(&self, messages: &[ChatMessage]) -> Result<ChatReply, ApiError> {
        self.post(
            "mcp_agent_chat",
            &ChatRequest {
                messages: messages.to_vec(),
            },
        )
        .await
    }

    pub async fn mcp_cli(&self, command: &str) -> Result<CliReply, ApiError> {
        self.post(
            "mcp_cli",
            &CliRequest {
                command: command.to_string(),
            },
        )
        .await
    }

    // ---- research ------------------------------------------------------------------------------

    pub async fn research_status(&self) -> Result<ResearchStatus, ApiError> {
        self.get("research_status", vec![]).await
    }

    pub async fn research_start(&self, task: &str) -> Result<ResearchRun, ApiError> {
        self.post(
            "research_start",
            &ResearchStartRequest {
                task: task.to_string(),
            },
        )
        .await
    }

    pub async fn research_message(
        &self,
        run_id: &str,
        message: &str,
    ) -> Result<ResearchRun, ApiError> {
        let mut req = Request::json(&ResearchMessageRequest {
            message: message.to_string(),
        })?;
        req.path_args = vec![run_id.to_string()];
        self.typed("research_message", req).await
    }

    pub async fn research_stop(&self, run_id: &str) -> Result<ResearchRun, ApiError> {
        let mut req = Request::json(&json!({}))?;
        req.path_args = vec![run_id.to_string()];
        self.typed("research_stop", req).await
    }

    /// A sandbox's recent closed candles of `coin` (`GET /sandbox/v1/candles`), for the console's
    /// price charts. Not an operation of the interface: a real service answers 404 (README
    /// "Interface notes"). Market data is no account's, so no API key is sent; a gateway token
    /// is, as a gateway that faces a network passes the read on only for its supervisors.
    pub async fn sandbox_candles(
        &self,
        coin: &str,
        interval: &str,
        limit: u32,
    ) -> Result<Candles, ApiError> {
        let url = format!("{}/sandbox/v1/candles", self.base);
        let req = Request {
            query: vec![
                ("coin".into(), coin.to_string()),
                ("interval".into(), interval.to_string()),
                ("limit".into(), limit.to_string()),
            ],
            ..Default::default()
        };
        let value = self
            .send(Method::Get, url, self.gate_token.as_ref(), req)
            .await?;
        serde_json::from_value(value).map_err(|e| ApiError::Decode(format!("candles: {e}")))
    }
}

/// A gateway's supervisor API (`/gate/v1`, README "The supervisor API"). With no gate token the
/// API key is sent, which a gateway refuses with 401 unless it is a supervisor token.
impl Client {
    async fn gate<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        req: Request,
    ) -> Result<T, ApiError> {
        let url = format!("{}/gate/v1{path}", self.base);
        let key = self.gate_token.as_ref().or(self.key.as_ref());
        let value = self.send(method, url, key, req).await?;
        serde_json::from_value(value).map_err(|e| ApiError::Decode(format!("gate{path}: {e}")))
    }

    /// `GET /gate/v1/inbox?status=...`: pending, approved, executing, executed, failed, rejected,
    /// expired or all (the gateway's default is pending).
    pub async fn gate_inbox(&self, status: Option<&str>) -> Result<GateInbox, ApiError> {
        self.gate_inbox_since(status, None, Duration::ZERO).await
    }

    /// The inbox as a long poll: with `since` (the `version` of an earlier answer) the gateway
    /// holds the request up to `wait` while nothing changed.
    pub async fn gate_inbox_since(
        &self,
        status: Option<&str>,
        since: Option<u64>,
        wait: Duration,
    ) -> Result<GateInbox, ApiError> {
        let mut query = Vec::new();
        push(&mut query, "status", status);
        let held = since.filter(|_| !wait.is_zero());
        if let Some(since) = held {
            query.push(("since".into(), since.to_string()));
            query.push(("wait".into(), wait.as_secs().to_string()));
        }
        let req = Request {
            query,
            hold: held.map(|_| wait),
            ..Default::default()
        };
        self.gate(Method::Get, "/inbox", req).await
    }

    /// `POST /gate/v1/inbox/{id}/approve`: the gateway executes the item upstream with the
    /// proposing agent's key and answers the item after it. `overrides` names policy rules the
    /// supervisor overrides for this item.
    pub async fn gate_approve(
        &self,
        id: &str,
        overrides: &[String],
    ) -> Result<GateDecision, ApiError> {
        let body = if overrides.is_empty() {
            json!({})
        } else {
            json!({ "override": overrides })
        };
        let path = format!("/inbox/{}/approve", catalog::encode_segment(id));
        self.gate(Method::Post, &path, Request::json(&body)?).await
    }

    /// `POST /gate/v1/inbox/{id}/reject` with the reason the agent's confirm will be refused with.
    pub async fn gate_reject(&self, id: &str, reason: &str) -> Result<GateDecision, ApiError> {
        let path = format!("/inbox/{}/reject", catalog::encode_segment(id));
        self.gate(
            Method::Post,
            &path,
            Request::json(&json!({ "reason": reason }))?,
        )
        .await
    }

    /// `GET /gate/v1/agents`: who has used the gateway; answering at all means the service is a
    /// gateway and the token is a supervisor's.
    pub async fn gate_agents(&self) -> Result<GateAgents, ApiError> {
        self.gate(Method::Get, "/agents", Request::default()).await
    }

    /// `GET /gate/v1/inbox/{id}/check`: the verdicts an approval of the item would meet now
    /// (live positions and PnL, the policy and the kill switch in force).
    pub async fn gate_check(&self, id: &str) -> Result<GateCheck, ApiError> {
        let path = format!("/inbox/{}/check", catalog::encode_segment(id));
        self.gate(Method::Get, &path, Request::default()).await
    }

    /// `GET /gate/v1/policy`: the policy in force, and each agent's notional executed today.
    pub async fn gate_policy(&self) -> Result<GatePolicy, ApiError> {
        self.gate(Method::Get, "/policy", Request::default()).await
    }

    /// `GET /gate/v1/kill-switch`.
    pub async fn gate_kill_switch(&self) -> Result<GateKillSwitch, ApiError> {
        let answer: GateKillSwitchAnswer = self
            .gate(Method::Get, "/kill-switch", Request::default())
            .await?;
        Ok(answer.kill_switch)
    }

    /// `POST /gate/v1/kill-switch` `{"on", "reason"}`; a reason is required to turn it on.
    pub async fn gate_set_kill_switch(
        &self,
        on: bool,
        reason: &str,
    ) -> Result<GateKillSwitch, ApiError> {
        let body = json!({ "on": on, "reason": reason });
        let answer: GateKillSwitchAnswer = self
            .gate(Method::Post, "/kill-switch", Request::json(&body)?)
            .await?;
        Ok(answer.kill_switch)
    }

    /// `POST /gate/v1/agents/{label}/suspend` `{"reason"}` (approver or admin): the agent's
    /// stagings, immediate trades and pending items that add exposure are refused until resumed.
    pub async fn gate_suspend_agent(
        &self,
        label: &str,
        reason: &str,
    ) -> Result<GateAgentsChanged, ApiError> {
        let path = format!("/agents/{}/suspend", catalog::encode_segment(label));
        let body = GateSuspendRequest {
            reason: reason.to_string(),
        };
        self.gate(Method::Post, &path, Request::json(&body)?).await
    }

    /// `POST /gate/v1/agents/{label}/resume` (admin).
    pub async fn gate_resume_agent(&self, label: &str) -> Result<GateAgentsChanged, ApiError> {
        let path = format!("/agents/{}/resume", catalog::encode_segment(label));
        self.gate(Method::Post, &path, Request::default()).await
    }

    /// `GET /gate/v1/standing-approvals`: the live ones, with what each approved.
    pub async fn gate_standing_approvals(&self) -> Result<Vec<GateStanding>, ApiError> {
        let answer: GateStandingList = self
            .gate(Method::Get, "/standing-approvals", Request::default())
            .await?;
        Ok(answer.standing_approvals)
    }

    /// `POST /gate/v1/standing-approvals`.
    pub async fn gate_create_standing_approval(
        &self,
        request: &GateStandingRequest,
    ) -> Result<GateStanding, ApiError> {
        let answer: GateStandingCreated = self
            .gate(Method::Post, "/standing-approvals", Request::json(request)?)
            .await?;
        Ok(answer.standing_approval)
    }

    /// `DELETE /gate/v1/standing-approvals/{id}`.
    pub async fn gate_delete_standing_approval(&self, id: i64) -> Result<(), ApiError> {
        // DELETE is no catalog method (no operation uses it): sent here, once, not retried.
        let url = format!("{}/gate/v1/standing-approvals/{id}", self.base);
        let mut builder = self.http.delete(&url);
        if let Some(key) = self.gate_token.as_ref().or(self.key.as_ref()) {
            builder = builder.header("x-api-key", key.expose());
        }
        self.exchange(builder).await.map(|_| ())
    }

    /// `GET /gate/v1/journal?after=N&limit=N`: the gateway's decision records, as it writes them.
    pub async fn gate_journal(&self, after: Option<i64>) -> Result<Value, ApiError> {
        let mut query = Vec::new();
        push(&mut query, "after", after);
        let req = Request {
            query,
            ..Default::default()
        };
        self.gate(Method::Get, "/journal", req).await
    }
}

/// Reads the answer of operation `name` as `T`: the deployment's known shapes are reshaped into
/// ours first ([`lenient::normalize`]), and lists are read row by row by the types themselves.
pub fn decode<T: DeserializeOwned>(name: &str, value: Value) -> Result<T, ApiError> {
    serde_json::from_value(lenient::normalize(name, value))
        .map_err(|e| ApiError::Decode(format!("{name}: {e}")))
}

/// As [`decode`], leniently: never fails, fields it cannot read are kept in `extra`.
pub fn decode_row<T: Lenient>(name: &str, value: Value) -> T {
    lenient::row(lenient::normalize(name, value))
}

impl Request {
    pub fn json<B: Serialize>(body: &B) -> Result<Request, ApiError> {
        let body = serde_json::to_value(body).map_err(|e| ApiError::Decode(e.to_string()))?;
        Ok(Request {
            body: Some(body),
            ..Default::default()
        })
    }
}

fn push<T: ToString>(query: &mut Vec<(String, String)>, name: &str, value: Option<T>) {
    if let Some(v) = value {
        query.push((name.to_string(), v.to_string()));
    }
}

fn transport(e: reqwest::Error) -> ApiError {
    if e.is_timeout() {
        ApiError::Transport(format!("request timed out: {e}"))
    } else {
        ApiError::Transport(e.to_string())
    }
}
