//! A tool call (or a resource read) as the REST request it stands for, sent through the REST
//! edge's own handling ([`super::Handle`]): the strict reading, the default-deny rule for
//! tool names, the policy, the kill switch, standing approvals and the journal are that path's,
//! not copies. What is MCP's own: one call for a staging the service takes in two, and a confirm
//! that waits for the human instead of failing while the item is pending.

use super::state::{McpState, ViaMcp};
use crate::api::catalog::{self as ops, Method as OpMethod, Operation};
use crate::api::model::ExecuteToolRequest;
use crate::gateway::gate::AgentKey;
use crate::gateway::model::error::{GateError, Kind};
use crate::gateway::model::request::{self, Parsed};
use crate::gateway::store::{Exec, Item, ItemRef, Status};
use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, header};
use chrono::SecondsFormat;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, ProgressNotificationParam,
    ReadResourceResult, Resource, ResourceContents,
};
use rmcp::service::{RequestContext, RoleServer};
use serde::Serialize;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long one confirm call waits for the human by default: under the 60 s request timeout
/// MCP clients commonly apply, so the agent hears "still waiting, ask again" rather than a
/// timeout it cannot tell from a failure.
const DEFAULT_WAIT: Duration = Duration::from_secs(50);
/// A call may ask for another wait in `_meta` (seconds), up to [`MAX_WAIT`].
const WAIT_META: &str = "agentdesk/waitSeconds";
const MAX_WAIT: Duration = Duration::from_secs(600);
const POLL: Duration = Duration::from_millis(250);
const PROGRESS_EVERY: Duration = Duration::from_secs(2);
const CONFIRM_TOKEN: &str = "confirmToken";
const CONFIRM_TOOL: &str = "service_confirm_trade";
/// Answers are read whole to be turned into a tool result; the REST edge streams them instead.
const MAX_ANSWER_BYTES: usize = 32 << 20;

/// An answer of the REST path, read whole.
struct Reply {
    status: u16,
    body: Value,
}

impl Reply {
    fn ok(&self) -> bool {
        (200..300).contains(&self.status) && self.body.get("success") != Some(&Value::Bool(false))
    }

    fn code(&self) -> Option<&str> {
        self.body.pointer("/error/code").and_then(Value::as_str)
    }

    /// The message of an error in any of the places the service puts it (observed-shapes.md).
    fn message(&self) -> String {
        let b = &self.body;
        [
            b.pointer("/error/message"),
            b.get("error"),
            b.pointer("/result/error"),
            b.get("message"),
            b.get("code"),
        ]
        .into_iter()
        .flatten()
        .find_map(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| format!("the request failed (HTTP {}): {}", self.status, self.body))
    }
}

/// Sends the REST request `op` stands for, with the agent's key, through the REST edge.
async fn through(
    state: &McpState,
    op: &'static Operation,
    agent: &AgentKey,
    body: Option<&Value>,
) -> Reply {
    let method = match op.method {
        OpMethod::Post => Method::POST,
        _ => Method::GET,
    };
    let req = Request::builder()
        .method(method)
        .uri(op.path)
        .header("x-api-key", agent.secret.expose())
        .header(header::CONTENT_TYPE, "application/json")
        .extension(ViaMcp)
        .body(Body::from(body.map(Value::to_string).unwrap_or_default()));
    let Ok(req) = req else {
        let refused = GateError::new(
            Kind::Unauthorized,
            "unauthorized",
            "the API key holds characters a key cannot have",
        );
        return Reply {
            status: refused.status(),
            body: refused.body(),
        };
    };
    let resp = (state.handle)(state.gate.clone(), op, req).await;
    let status = resp.status().as_u16();
    let body = match axum::body::to_bytes(resp.into_body(), MAX_ANSWER_BYTES).await {
        Ok(b) => serde_json::from_slice(&b)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&b).into_owned())),
        Err(e) => GateError::new(
            Kind::Upstream,
            "upstream_error",
            format!("the answer could not be read ({e})"),
        )
        .body(),
    };
    Reply { status, body }
}

/// Looks a field up at the top of an answer and in its usual wrappers.
fn lookup_str(v: &Value, name: &str) -> Option<String> {
    [Some(v), v.get("result"), v.get("data"), v.get("proposal")]
        .into_iter()
        .flatten()
        .find_map(|scope| match scope.get(name)? {
            Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        })
}

/// The service's answer without confirm tokens: the agent has no use for one here, and a model
/// that sees one tends to try it.
fn without_token(mut v: Value) -> Value {
    for scope in ["", "/result", "/data"] {
        if let Some(Value::Object(o)) = v.pointer_mut(scope) {
            o.remove(CONFIRM_TOKEN);
        }
    }
    v
}

/// Structured content is an object: any other answer is given as its `result`.
fn object(v: Value) -> Value {
    match v {
        Value::Object(_) => v,
        other => Value::Object(Map::from_iter([("result".to_string(), other)])),
    }
}

fn success(body: Value) -> CallToolResult {
    CallToolResult::structured(object(without_token(body)))
}

fn failure(reply: &Reply) -> CallToolResult {
    let mut r = CallToolResult::error(vec![ContentBlock::text(reply.message())]);
    r.structured_content = Some(object(reply.body.clone()));
    r
}

/// What a tool result says beside its text, for a program: where the proposal stands and the
/// call to make next. Fields that do not apply are left out.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct Outcome<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    proposal_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    inbox_item: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expires_at: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    requires_human_approval: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<Next<'a>>,
    /// The service's answer to the staging.
    #[serde(skip_serializing_if = "Option::is_none")]
    service: Option<Value>,
    /// The service's answer to the execution.
    #[serde(skip_serializing_if = "Option::is_none")]
    execution: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
}

/// The confirm call that gets a proposal's outcome.
#[derive(Serialize)]
struct Next<'a> {
    tool: &'static str,
    arguments: ProposalArgs<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProposalArgs<'a> {
    proposal_id: &'a str,
}

impl<'a> Next<'a> {
    fn confirm(id: &'a str) -> Self {
        Next {
            tool: CONFIRM_TOOL,
            arguments: ProposalArgs { proposal_id: id },
        }
    }
}

/// The argument at fault: the `error` of an outcome, or the data of an invalid-params error
/// (whose code is MCP's own).
#[derive(Serialize)]
struct Culprit {
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<&'static str>,
    field: String,
}

fn said(text: String, structured: &Outcome, error: bool) -> CallToolResult {
    let mut r = match error {
        true => CallToolResult::error(vec![ContentBlock::text(text)]),
        false => CallToolResult::success(vec![ContentBlock::text(text)]),
    };
    // Text, booleans and JSON values: nothing here fails to serialize.
    r.structured_content = serde_json::to_value(structured).ok();
    r
}

fn internal(e: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(e.to_string(), None)
}

fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

pub async fn tool(
    state: &Arc<McpState>,
    agent: &AgentKey,
    req: CallToolRequestParams,
    ctx: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let op = ops::op("execute_mcp_tool");
    let body = tool_call(&req.name, req.arguments.clone().unwrap_or_default());
    // What the call is, as the strict reading sees it; a call it refuses is answered below by
    // the same reading on the REST path.
    let reading = request::read(op, body.to_string().as_bytes()).ok();
    let call = match reading.as_ref().map(|c| &c.parsed) {
        Some(Parsed::Tool(call)) => Some(call),
        _ => None,
    };
    if let Some(call) = call {
        if call.confirm_token.is_some() {
            return Ok(said(
                "Leave confirmToken out: through agentdesk the gateway makes the confirm-token \
                 exchange itself. Call the tool with its own arguments; a change is staged for a \
                 human and service_confirm_trade waits for the decision."
                    .into(),
                &Outcome {
                    error: serde_json::to_value(Culprit {
                        code: Some("confirm_token_not_accepted"),
                        field: "args.confirmToken".into(),
                    })
                    .ok(),
                    ..Default::default()
                },
                true,
            ));
        }
        let executes = call.op.name == "confirm_trade"
            || matches!(&call.body, Parsed::Close(c) if c.proposal_id.is_some());
        if executes {
            return wait(state, agent, call.op, &call.args, ctx).await;
        }
    }
    let reply = through(state, op, agent, Some(&body)).await;
    if !reply.ok() {
        return Ok(failure(&reply));
    }
    let (Some(call), Some(token)) = (call, lookup_str(&reply.body, CONFIRM_TOKEN)) else {
        return Ok(success(reply.body));
    };
    if call.op.name == "propose_trade" || call.op.name == "close_position" {
        // The service stages a proposal in two calls (a confirm token first); the agent asked
        // once, so the gateway makes the second, which is the staging the inbox captures.
        let mut args = call.args.clone();
        args.insert(CONFIRM_TOKEN.into(), Value::String(token));
        let body = tool_call(&req.name, args);
        let reply = through(state, op, agent, Some(&body)).await;
        if !reply.ok() {
            return Ok(failure(&reply));
        }
        return match lookup_str(&reply.body, "proposalId") {
            Some(p) => staged(state, ItemRef::Proposal(&p), reply.body).await,
            None => Ok(success(reply.body)),
        };
    }
    staged(state, ItemRef::ConfirmToken(&token), reply.body).await
}

/// The REST body of a tool call.
fn tool_call(name: &str, args: Map<String, Value>) -> Value {
    serde_json::to_value(ExecuteToolRequest {
        name: name.to_string(),
        args: Value::Object(args),
    })
    .unwrap_or_default()
}

/// The answer to a staging: in words a model acts on, what happened and what to call next.
async fn staged(
    state: &McpState,
    which: ItemRef<'_>,
    service: Value,
) -> Result<CallToolResult, ErrorData> {
    let gate = &state.gate;
    let Some(item) = gate.store.item(which).await.map_err(internal)? else {
        return Ok(success(service));
    };
    let id = confirm_id(&item);
    let expires = rfc3339(item.expires_at);
    let left = (item.expires_at - gate.now()).num_seconds().max(0);
    let (status, text) = match item.status {
        Status::Pending => (
            "staged",
            format!(
                "STAGED, NOT EXECUTED. Proposal {id} waits for a human supervisor to approve it \
                 in agentdesk; nothing has been traded yet. It expires at {expires} (in {left} s) \
                 unless a human approves it first. To get the outcome, call {CONFIRM_TOOL} with \
                 {{\"proposalId\": \"{id}\"}}: it waits for the human's decision and returns the \
                 execution, the rejection reason, or that it expired."
            ),
        ),
        _ => (
            "approved",
            format!(
                "APPROVED at once by a standing approval of the supervisor (proposal {id}). Call \
                 {CONFIRM_TOOL} with {{\"proposalId\": \"{id}\"}} to receive the execution."
            ),
        ),
    };
    let structured = Outcome {
        status: Some(status),
        proposal_id: Some(&id),
        inbox_item: Some(&item.id),
        expires_at: Some(&expires),
        requires_human_approval: Some(item.status == Status::Pending),
        next: Some(Next::confirm(&id)),
        service: Some(without_token(service)),
        ..Default::default()
    };
    Ok(said(text, &structured, false))
}

/// The id the agent confirms with: the service's proposal id, else (a tool's staging, which the
/// service identifies by a confirm token the agent never sees) the inbox item's.
fn confirm_id(item: &Item) -> String {
    item.proposal_id.clone().unwrap_or_else(|| item.id.clone())
}

/// How long a confirm call waits for the human: `_meta.agentdesk/waitSeconds` when sent (a number
/// of seconds from 0 to 600; anything else is refused naming it, never turned into a duration
/// unchecked), else the default.
fn budget(ctx: &RequestContext<RoleServer>) -> Result<Duration, ErrorData> {
    let Some(v) = ctx.meta.get(WAIT_META) else {
        return Ok(DEFAULT_WAIT);
    };
    match v.as_f64() {
        Some(s) if s.is_finite() && (0.0..=MAX_WAIT.as_secs_f64()).contains(&s) => {
            Ok(Duration::from_secs_f64(s))
        }
        _ => Err(ErrorData::invalid_params(
            format!(
                "_meta.{WAIT_META} must be a number of seconds from 0 to {}; got {v}",
                MAX_WAIT.as_secs()
            ),
            serde_json::to_value(Culprit {
                code: None,
                field: format!("_meta.{WAIT_META}"),
            })
            .ok(),
        )),
    }
}

/// The confirm tool: the agent's own confirm, as `POST /api/delegated/confirm` (or the close
/// path) takes it, asked again until the human decided, the item expired, the call's wait is
/// over or the client cancels it.
async fn wait(
    state: &Arc<McpState>,
    agent: &AgentKey,
    op: &'static Operation,
    args: &Map<String, Value>,
    ctx: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let gate = &state.gate;
    let id = args
        .get("proposalId")
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or_default()
        .to_string();
    let item = match id.is_empty() {
        true => None,
        false => gate
            .store
            .item(ItemRef::IdOrProposal(&id))
            .await
            .map_err(internal)?,
    };
    // A tool's staging is confirmed as a REST agent does it: the same tool call again with its
    // confirm token, which the gateway holds for the agent.
    let (op, body) = match &item {
        Some(i) if i.exec == Exec::Tool && i.agent == agent.hash => {
            let mut call = i.request.clone();
            if let (Some(Value::Object(a)), Some(t)) = (call.get_mut("args"), &i.confirm_token) {
                a.insert(CONFIRM_TOKEN.into(), Value::String(t.clone()));
            }
            (ops::op("execute_mcp_tool"), call)
        }
        _ => (op, Value::Object(args.clone())),
    };
    let budget = budget(ctx)?;
    let started = Instant::now();
    let progress = ctx.meta.get_progress_token();
    let mut next_progress = started;
    loop {
        let reply = through(state, op, agent, Some(&body)).await;
        let waiting = matches!(
            reply.code(),
            Some("human_approval_required" | "execution_pending")
        );
        let current = match (&item, waiting) {
            (Some(i), true) if i.agent == agent.hash => gate
                .store
                .item(ItemRef::IdOrProposal(&i.id))
                .await
                .map_err(internal)?
                .filter(|i| {
                    matches!(
                        i.status,
                        Status::Pending | Status::Approved | Status::Executing
                    )
                }),
            _ => None,
        };
        let Some(current) = current else {
            return Ok(outcome(&reply, &id));
        };
        let left = (current.expires_at - gate.now()).num_seconds().max(0);
        if started.elapsed() >= budget {
            return Ok(still_waiting(&current, &id, left));
        }
        if let Some(token) = &progress
            && Instant::now() >= next_progress
        {
            let note =
                ProgressNotificationParam::new(token.clone(), started.elapsed().as_secs_f64())
                    .with_total(budget.as_secs_f64())
                    .with_message(format!(
                        "waiting for a human supervisor's decision on {id}{}; it expires in \
                         {left} s",
                        waits_for(&current)
                    ));
            let _ = ctx.peer.notify_progress(note).await;
            next_progress = Instant::now() + PROGRESS_EVERY;
        }
        tokio::select! {
            _ = ctx.ct.cancelled() => {
                return Ok(said(
                    format!("Cancelled by the client: stopped waiting; nothing changed, {id} still waits for the supervisor."),
                    &Outcome {
                        status: Some("cancelled"),
                        proposal_id: Some(&id),
                        ..Default::default()
                    },
                    true,
                ));
            }
            _ = tokio::time::sleep(POLL) => {}
        }
    }
}

/// A step-up item's approvals so far (" (1 of 2 approvals)"), for the agent waiting on it: how
/// many, never who (the supervisors' names are not the agent's to know).
fn waits_for(item: &Item) -> String {
    match item.approvals_required {
        0 | 1 => String::new(),
        n => format!(" ({} of {n} approvals)", item.approvals.len()),
    }
}

fn still_waiting(item: &Item, id: &str, left: i64) -> CallToolResult {
    let expires = rfc3339(item.expires_at);
    said(
        format!(
            "STILL WAITING, NOT EXECUTED. No human has decided on proposal {id} yet{}; it \
             expires at {expires} (in {left} s). This call waited as long as it may. Call {CONFIRM_TOOL} \
             again with {{\"proposalId\": \"{id}\"}} to keep waiting for the decision.",
            waits_for(item)
        ),
        &Outcome {
            status: Some("pending"),
            proposal_id: Some(id),
            expires_at: Some(&expires),
            next: Some(Next::confirm(id)),
            ..Default::default()
        },
        false,
    )
}

fn outcome(reply: &Reply, id: &str) -> CallToolResult {
    if reply.ok() {
        let text = format!(
            "EXECUTED. A human supervisor approved proposal {id} and the gateway executed it. \
             The service answered: {}",
            reply.body
        );
        let structured = Outcome {
            status: Some("executed"),
            proposal_id: Some(id),
            execution: Some(reply.body.clone()),
            ..Default::default()
        };
        return said(text, &structured, false);
    }
    let (status, lead) = match reply.code() {
        Some("rejected_by_supervisor") => ("rejected", "REJECTED, NOT EXECUTED. "),
        Some("proposal_expired") => ("expired", "EXPIRED, NOT EXECUTED. "),
        _ => ("error", ""),
    };
    said(
        format!("{lead}{}", reply.message()),
        &Outcome {
            status: Some(status),
            proposal_id: Some(id),
            error: Some(
                reply
                    .body
                    .get("error")
                    .cloned()
                    .unwrap_or_else(|| reply.body.clone()),
            ),
            ..Default::default()
        },
        true,
    )
}

/// Account state as MCP resources: URI, name, the operation read, what it is.
const RESOURCES: [(&str, &str, &str, &str); 3] = [
    (
        "agentdesk://account/positions",
        "positions",
        "get_positions",
        "Open positions of this key's account, venue first",
    ),
    (
        "agentdesk://account/open-orders",
        "open-orders",
        "list_open_orders",
        "Resting orders of this key's account",
    ),
    (
        "agentdesk://account/pnl",
        "pnl-summary",
        "pnl_summary",
        "Equity, unrealized PnL and period PnL of this key's account",
    ),
];

pub fn resources() -> Vec<Resource> {
    RESOURCES
        .iter()
        .map(|(uri, name, _, what)| {
            Resource::new(*uri, *name)
                .with_description(*what)
                .with_mime_type("application/json")
        })
        .collect()
}

/// A resource read as the GET it stands for, through the REST edge like any observe call.
pub async fn read_resource(
    state: &Arc<McpState>,
    agent: &AgentKey,
    uri: &str,
) -> Result<ReadResourceResult, ErrorData> {
    let Some((_, _, op, _)) = RESOURCES.iter().find(|(u, ..)| *u == uri) else {
        return Err(ErrorData::resource_not_found(
            format!("no resource {uri:?}; resources/list names them"),
            None,
        ));
    };
    let reply = through(state, ops::op(op), agent, None).await;
    if !reply.ok() {
        return Err(ErrorData::internal_error(reply.message(), Some(reply.body)));
    }
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(reply.body.to_string(), uri).with_mime_type("application/json"),
    ]))
}
