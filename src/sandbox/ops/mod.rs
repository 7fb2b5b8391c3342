//! The request pipeline every caller uses — HTTP, MCP tools, the chat loop and the CLI:
//! authenticate (401) → scope (403) → quota (429) → venue sync → handler → audit. The handlers of
//! the operations, one file per catalog section, are named after the operations.
//!
//! Reads ([`Handler::Read`]) take a shorter way when they can ([`read`]): authenticate → scope →
//! handler on a committed view, without the writer's lock. They have no quota and no audit row,
//! and the venue's catch-up is the tick's (or the writer's, when the venue is behind).

pub mod account;
pub mod auth;
pub mod backtests;
pub mod builder_fee;
pub mod capabilities;
pub mod chat;
pub mod chat_agent;
pub mod cli;
pub mod discovery;
pub mod immediate;
pub mod mcp;
pub mod research;
pub mod signals;
pub mod staged;
pub mod tools;

pub use super::caller::Caller;
use super::core::{Core, Shared, View};
pub use super::error::{AppError, ErrorKind};
use super::store::AuditRow;
use crate::api::catalog::{Operation, Tier};
use axum::body::Bytes;
use axum::http::HeaderMap;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// One authenticated request, as a handler sees it.
pub struct Call {
    pub op: &'static Operation,
    pub caller: Caller,
    pub now: DateTime<Utc>,
    pub query: HashMap<String, String>,
    pub path: Vec<String>,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// Run by `execute_mcp_tool` (or the chat loop) on the caller's behalf: that call already
    /// counted against the POST cap, so this one does not count again.
    pub via_tool: bool,
}

impl Call {
    /// Parses the JSON body; a body that does not fit is a 400 naming the offending field.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, AppError> {
        parse_json(&self.body)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn query(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }
}

pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, AppError> {
    let body: &[u8] = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        body
    };
    // Every body of the interface is an object. serde would otherwise read an array as a struct's
    // fields in order, so `["prop_…"]` would confirm a proposal.
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(AppError::invalid(
            "body",
            "the body must be a JSON object, e.g. {\"proposalId\": \"prop_…\"}",
        ));
    }
    // Syntax first, for the whole body: trailing data is an error of the body, not of a field.
    let mut whole = serde_json::Deserializer::from_slice(body);
    serde::de::IgnoredAny::deserialize(&mut whole)
        .and_then(|_| whole.end())
        .map_err(|e| AppError::invalid("body", format!("the body is not valid JSON: {e}")))?;
    let de = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let inner = e.inner().to_string();
        let mut path = e.path().to_string();
        // serde reports a missing field at its parent; name the field itself.
        if let Some(rest) = inner.strip_prefix("missing field `")
            && let Some(name) = rest.split('`').next()
        {
            path = if path == "." {
                name.to_string()
            } else {
                format!("{path}.{name}")
            };
        }
        if e.inner().is_syntax() || e.inner().is_eof() {
            return AppError::invalid("body", format!("the body is not valid JSON: {inner}"));
        }
        let field = if path == "." {
            "body".to_string()
        } else {
            path
        };
        let message = format!("{field}: {}", strip_position(&inner));
        AppError::invalid(field, message)
    })
}

/// serde_json appends " at line 1 column 17" to its messages; the field name says more.
fn strip_position(message: &str) -> &str {
    message
        .rfind(" at line ")
        .map(|i| &message[..i])
        .unwrap_or(message)
}

/// A handler's success.
pub struct Reply {
    /// The status the interface answers with (an idempotent replay repeats the first one's).
    pub status: u16,
    pub body: Value,
    pub proposal_id: Option<String>,
    pub oid: Option<u64>,
    /// The stored answer of an earlier call, given again (an idempotent replay): audited as a
    /// replay, so the log does not show one order twice.
    pub replay: bool,
    /// The answer's `data` as JSON text the sandbox wrote itself (a backtest's result): the
    /// HTTP answer carries it as it is, [`Reply::into_body`] parses it into the value.
    pub data_json: Option<Arc<str>>,
}

impl Reply {
    /// HTTP 200 with `success: true` put first.
    pub fn ok(body: impl serde::Serialize) -> Result<Reply, AppError> {
        let value = serde_json::to_value(body).map_err(AppError::internal)?;
        let mut out = serde_json::Map::new();
        out.insert("success".into(), Value::Bool(true));
        if let Value::Object(map) = value {
            for (k, v) in map {
                if k != "success" {
                    out.insert(k, v);
                }
            }
        }
        Ok(Reply {
            status: 200,
            body: Value::Object(out),
            proposal_id: None,
            oid: None,
            replay: false,
            data_json: None,
        })
    }

    /// The answer as one value, its `data` text parsed into it.
    pub fn into_body(self) -> Value {
        let mut body = self.body;
        if let Some(text) = self.data_json
            && let Some(fields) = body.as_object_mut()
        {
            match serde_json::from_str::<Value>(&text) {
                Ok(data) => {
                    fields.insert("data".into(), data);
                }
                Err(e) => tracing::warn!("an answer's data is not JSON, left out: {e}"),
            }
        }
        body
    }

    pub fn with_proposal(mut self, id: impl Into<String>) -> Self {
        self.proposal_id = Some(id.into());
        self
    }

    pub fn with_oid(mut self, oid: Option<u64>) -> Self {
        self.oid = oid;
        self
    }
}

pub type SyncHandler = fn(&mut Core, &Call) -> Result<Reply, AppError>;
/// Handlers that only read committed state; they run on a reader when they can.
pub type ReadHandler = fn(&View, &Call) -> Result<Reply, AppError>;
/// Handlers that wait (on background work) run outside the core lock.
pub type AsyncHandler =
    fn(Arc<Shared>, Call) -> futures::future::BoxFuture<'static, Result<Reply, AppError>>;

#[derive(Clone, Copy)]
pub enum Handler {
    Read(ReadHandler),
    Sync(SyncHandler),
    Async(AsyncHandler),
}

/// The handler of each catalog operation, by its seed name.
pub fn handler_for(name: &str) -> Option<Handler> {
    let asynchronous: Option<AsyncHandler> = match name {
        "discover_top_backtests" => Some(|s, c| Box::pin(discovery::discover_top_backtests(s, c))),
        "discover_top_live" => Some(|s, c| Box::pin(discovery::discover_top_live(s, c))),
        "discover_top_optimized_combos" => {
            Some(|s, c| Box::pin(discovery::discover_top_optimized_combos(s, c)))
        }
        "research_start" => Some(|s, c| Box::pin(research::research_start(s, c))),
        "research_status" => Some(|s, c| Box::pin(research::research_status(s, c))),
        "research_message" => Some(|s, c| Box::pin(research::research_message(s, c))),
        "research_stop" => Some(|s, c| Box::pin(research::research_stop(s, c))),
        "mcp_cli" => Some(|s, c| Box::pin(cli::mcp_cli(s, c))),
        "execute_mcp_tool" => Some(|s, c| Box::pin(tools::execute_mcp_tool(s, c))),
        "mcp_agent_chat" => Some(|s, c| Box::pin(chat::mcp_agent_chat(s, c))),
        "create_signal_destination" => {
            Some(|s, c| Box::pin(signals::create_signal_destination(s, c)))
        }
        _ => None,
    };
    if let Some(h) = asynchronous {
        return Some(Handler::Async(h));
    }
    if let Some(h) = read_handler(name) {
        return Some(Handler::Read(h));
    }
    sync_handler(name).map(Handler::Sync)
}

fn read_handler(name: &str) -> Option<ReadHandler> {
    Some(match name {
        "whoami" => account::whoami,
        "get_usage" | "get_usage_v1" => account::get_usage,
        "get_positions" => account::get_positions,
        "pnl_summary" => account::pnl_summary,
        "list_audit_logs" => account::list_audit_logs,
        "list_tools" => account::list_tools,
        "list_open_orders" => account::list_open_orders,
        "list_proposals" => staged::list_proposals,
        "discover_strategies" => discovery::discover_strategies,
        "get_backtest_job" => backtests::get_backtest_job,
        "get_openapi" => account::get_openapi,
        "list_mcp_capabilities" => tools::list_mcp_capabilities,
        "list_signal_destinations" => signals::list_signal_destinations,
        "list_signal_deliveries" => signals::list_signal_deliveries,
        _ => return None,
    })
}

fn sync_handler(name: &str) -> Option<SyncHandler> {
    Some(match name {
        "run_backtest" => backtests::run_backtest,
        "propose_trade" => staged::propose_trade,
        "confirm_trade" => staged::confirm_trade,
        "close_position" => staged::close_position,
        "place_order" => immediate::place_order,
        "platform_place_order" => immediate::platform_place_order,
        "platform_close_position" => immediate::platform_close_position,
        "platform_cancel_order" => immediate::platform_cancel_order,
        "approve_builder_fee_payload" => builder_fee::approve_builder_fee_payload,
        "approve_builder_fee" => builder_fee::approve_builder_fee,
        _ => return None,
    })
}

/// What is left after the part of a request that runs under the core lock.
pub enum Step {
    Done(Result<Reply, AppError>),
    /// Checks passed; the handler continues outside the lock.
    Wait(AsyncHandler, Call),
}

/// Authenticates a request and runs what of it runs under the core lock (see [`step`]); the
/// second value is the `PAYMENT-RESPONSE` of a paid call.
pub fn pipeline(core: &mut Core, now: DateTime<Utc>, request: Request) -> (Step, Option<String>) {
    let Request {
        op,
        headers,
        query,
        path,
        body,
    } = request;
    let (caller, paid) = match auth::authenticate(core, &headers, op, now) {
        Ok(c) => c,
        Err(e) => return (Step::Done(Err(e)), None),
    };
    let step = step(
        core,
        Call {
            op,
            caller,
            now,
            query,
            path,
            headers,
            body,
            via_tool: false,
        },
    );
    (step, paid)
}

/// The part of a call that runs under the core lock: checks, then a sync handler (with its audit
/// row), or the admission of an async one.
fn step(core: &mut Core, call: Call) -> Step {
    if let Some(Handler::Async(handler)) = handler_for(call.op.name) {
        return match admit(core, &call) {
            Ok(()) => Step::Wait(handler, call),
            Err(e) => Step::Done(Err(e)),
        };
    }
    let result = run(core, &call);
    if call.op.tier == Tier::Mutate {
        let row = match &result {
            Ok(reply) => AuditRow {
                outcome: if reply.replay { "replay" } else { "ok" }.into(),
                http_status: reply.status,
                proposal_id: reply.proposal_id.clone(),
                oid: reply.oid,
                ..audit_base(&call)
            },
            Err(e) => AuditRow {
                outcome: "error".into(),
                http_status: e.status(),
                proposal_id: e.proposal_id.clone(),
                error_code: Some(e.code.to_string()),
                message: Some(e.message.clone()),
                ..audit_base(&call)
            },
        };
        audit(core, &row, call.now);
    }
    Step::Done(result)
}

/// A mutation's audit row, written to the store and said in the log: one line for every staging,
/// execution, order and cancel, with the request id of the span it runs in (the operator follows
/// the service's side of a trade in its log, not only in its database).
pub(super) fn audit(core: &mut Core, row: &AuditRow, now: chrono::DateTime<chrono::Utc>) {
    if let Err(e) = core.store.insert_audit(row, now) {
        tracing::error!("audit write failed for {}: {e}", row.operation);
    }
    tracing::info!(
        op = %row.operation,
        account = row.account_id,
        key = row.key_id,
        outcome = %row.outcome,
        status = row.http_status,
        proposal = row.proposal_id.as_deref().unwrap_or(""),
        oid = row.oid.unwrap_or(0),
        code = row.error_code.as_deref().unwrap_or(""),
        "mutation"
    );
}

/// Serves a read on a reader, without the writer's lock: authenticate by key → scope → handler.
/// Gives the request back when it must take the [`pipeline`]: not a read, a read with a
/// quota, no `x-api-key` (a payment is spent, which is a write), or the venue is behind.
pub fn read(shared: &Arc<Shared>, request: Request) -> Read {
    let Some(Handler::Read(handler)) = handler_for(request.op.name) else {
        return Read::Writer(request);
    };
    if request.op.quota.post
        || request.op.quota.compute
        || auth::api_key(&request.headers).is_none()
    {
        return Read::Writer(request);
    }
    match shared.read_view((request, handler), |view, now, (request, handler)| {
        let Request {
            op,
            headers,
            query,
            path,
            body,
        } = request;
        let key = auth::api_key(&headers).unwrap_or_default();
        let caller = auth::by_key(view.store, key)?;
        auth::check_scope(op, &caller)?;
        check_query(op, &query)?;
        let call = Call {
            op,
            caller,
            now,
            query,
            path,
            headers,
            body,
            via_tool: false,
        };
        handler(view, &call)
    }) {
        Ok(result) => Read::Answered(result),
        Err((request, _)) => Read::Writer(request),
    }
}

/// Where a read went.
pub enum Read {
    Answered(Result<Reply, AppError>),
    /// It must take the [`pipeline`].
    Writer(Request),
}

/// A request as it arrives, before it is authenticated.
#[derive(Clone)]
pub struct Request {
    pub op: &'static Operation,
    pub headers: HeaderMap,
    pub query: HashMap<String, String>,
    pub path: Vec<String>,
    pub body: Bytes,
}

/// Runs an operation for an already authenticated caller through the same checks, handler and
/// audit as an HTTP request. `execute_mcp_tool` and the chat loop reach operations this way, so a
/// tool can do nothing its operation could not.
pub async fn dispatch(shared: &Arc<Shared>, call: Call) -> Result<Reply, AppError> {
    let step = shared
        .run_raw(move |core, now| {
            let mut call = call;
            call.now = now;
            step(core, call)
        })
        .await
        .map_err(AppError::internal)?;
    match step {
        Step::Done(result) => result,
        Step::Wait(handler, call) => handler(shared.clone(), call).await,
    }
}

fn audit_base(call: &Call) -> AuditRow {
    AuditRow {
        account_id: call.caller.account_id,
        key_id: call.caller.key_id,
        operation: call.op.name.to_string(),
        ..Default::default()
    }
}

/// Scope, quota and the venue's catch-up: what every call passes before its handler.
fn admit(core: &mut Core, call: &Call) -> Result<(), AppError> {
    auth::check_scope(call.op, &call.caller)?;
    check_query(call.op, &call.query)?;
    super::quota::charge(core, &call.caller, call.op, call.now, !call.via_tool)?;
    core.sync(call.now)?;
    Ok(())
}

/// `?status=` is a mistake — a value was meant and lost — not a request for the default, which
/// leaving the parameter out asks for.
fn check_query(op: &Operation, query: &HashMap<String, String>) -> Result<(), AppError> {
    for param in op.query {
        if query.get(param.name).is_some_and(|v| v.trim().is_empty()) {
            let default = param
                .default
                .map(|d| format!(" (default {d})"))
                .unwrap_or_default();
            return Err(AppError::invalid_query(
                param.name,
                format!(
                    "{0} is empty: give it a value, or leave {0} out for the default{default}",
                    param.name
                ),
            ));
        }
    }
    Ok(())
}

fn run(core: &mut Core, call: &Call) -> Result<Reply, AppError> {
    admit(core, call)?;
    match handler_for(call.op.name) {
        Some(Handler::Sync(handler)) => handler(core, call),
        Some(Handler::Read(handler)) => handler(&core.view(), call),
        _ => Err(AppError::new(
            ErrorKind::NotImplemented,
            "not_implemented",
            format!(
                "{} is in the interface but this sandbox build does not serve it yet",
                call.op.name
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::catalog::OPERATIONS;
    use crate::api::model::PlatformOrder;

    #[test]
    fn bad_bodies_name_the_field() {
        let e = parse_json::<PlatformOrder>(br#"{"side":"long"}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("pair"));
        let e = parse_json::<PlatformOrder>(br#"{"pair":"BTC-USD","side":"long","leverage":"x"}"#)
            .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("leverage"));
        assert!(
            e.message.starts_with("leverage: invalid type"),
            "{}",
            e.message
        );
        let e = parse_json::<PlatformOrder>(b"{not json").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("body"));
        assert_eq!(e.kind, ErrorKind::Invalid);
    }

    #[test]
    fn every_catalog_operation_has_a_handler() {
        for op in OPERATIONS {
            assert!(handler_for(op.name).is_some(), "{} has no handler", op.name);
        }
    }
}
