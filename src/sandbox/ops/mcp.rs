//! MCP-style tool access: every catalog operation as a tool `service_<operation>` (its schema is in
//! [`super::capabilities`]), and one way to run a tool — through [`super::dispatch`], the same checks,
//! handler and audit as the HTTP operation, so a tool can do nothing its operation could not.
//!
//! Mutate tools run in two steps. The first call stores a confirm token (5 minutes, bound to the
//! key, the tool and a hash of the arguments) and answers with a preview; re-submitting the same
//! tool and arguments plus `args.confirmToken` runs the operation exactly once (one conditional
//! UPDATE claims the token).

use super::auth;
use super::{AppError, Call, Caller, ErrorKind, parse_json};
use crate::api::catalog::{self, Method, Operation, Tier};
use crate::api::model::{
    BuilderFeeApproval, CancelRequest, CloseRequest, ConfirmRequest, PlatformClose, PlatformOrder,
    Preview, SignalDestinationRequest, ToolResult, TradeSignal,
};
use crate::sandbox::core::{Core, Shared};
use crate::sandbox::store::AuditRow;
use crate::sandbox::store::mcp as db;
use crate::sandbox::trading;
use axum::body::Bytes;
use axum::http::HeaderMap;
use chrono::{DateTime, Duration, Utc};
use rand::RngExt;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Arc;

pub use crate::api::catalog::{TOOL_PREFIX, is_tool, tool_op};
/// The argument that carries a mutate tool's confirm token on the second call.
pub const CONFIRM_TOKEN_ARG: &str = "confirmToken";
/// Lifetime of a confirm token.
pub const CONFIRM_TTL: Duration = Duration::minutes(5);

pub fn tier_name(tier: Tier) -> &'static str {
    match tier {
        Tier::Observe => "observe",
        Tier::Experiment => "experiment",
        Tier::Mutate => "mutate",
    }
}

// ---- execution ------------------------------------------------------------------------------------

/// How a mutate tool may be used by the caller of [`execute_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `execute_mcp_tool`: the first call stages a confirm token, a call with the token runs.
    Run,
    /// The chat loop: a mutate tool only ever gets its confirm token (a `confirmToken` in the args
    /// is dropped), so a model can prepare a trade for a human but never run one.
    PrepareOnly,
}

pub fn unknown_tool(name: &str) -> AppError {
    let hint = match catalog::find(name.strip_prefix(TOOL_PREFIX).unwrap_or(name)) {
        Some(op) if is_tool(op) => format!(" (did you mean {}?)", op.tool_name()),
        Some(op) => format!(
            " ({} is part of the tool mechanism itself, not a tool)",
            op.name
        ),
        None => String::new(),
    };
    AppError::new(
        ErrorKind::NotFound,
        "unknown_tool",
        format!(
            "no tool named {name:?}{hint}; GET /api/delegated/mcp/capabilities lists every tool \
             (service_<operation>, e.g. service_get_positions) with its tier and JSON Schema"
        ),
    )
    .with_field("name")
}

/// Runs one tool for an authenticated caller, as `execute_mcp_tool` does.
pub async fn execute(
    shared: &Arc<Shared>,
    caller: &Caller,
    name: &str,
    args: Value,
    now: DateTime<Utc>,
) -> Result<ToolResult, AppError> {
    execute_with(
        shared,
        caller,
        name,
        args,
        now,
        &HeaderMap::new(),
        Mode::Run,
    )
    .await
}

/// [`execute`], with the outer request's headers (its `host` is passed on, for operations that
/// answer addresses) and a [`Mode`].
pub async fn execute_with(
    shared: &Arc<Shared>,
    caller: &Caller,
    name: &str,
    args: Value,
    now: DateTime<Utc>,
    headers: &HeaderMap,
    mode: Mode,
) -> Result<ToolResult, AppError> {
    let op = tool_op(name).ok_or_else(|| unknown_tool(name))?;
    let mut args = match args {
        Value::Null => Map::new(),
        Value::Object(map) => map,
        other => {
            return Err(AppError::invalid(
                "args",
                format!(
                    "args must be a JSON object of the tool's arguments, got {}",
                    kind_of(&other)
                ),
            ));
        }
    };
    let token = args.remove(CONFIRM_TOKEN_ARG);
    let mut claimed = None;
    if op.tier == Tier::Mutate {
        let token = match (mode, token) {
            (Mode::PrepareOnly, _) | (Mode::Run, None | Some(Value::Null)) => {
                return prepare(shared, caller, op, args).await;
            }
            (Mode::Run, Some(Value::String(t))) if !t.trim().is_empty() => t.trim().to_string(),
            (Mode::Run, Some(_)) => {
                return Err(AppError::invalid(
                    CONFIRM_TOKEN_ARG,
                    "confirmToken must be the ct_… string a first call of this tool answered",
                ));
            }
        };
        claim(shared, caller, op, &token, &args).await?;
        claimed = Some(token);
    } else if token.is_some() {
        return Err(AppError::invalid(
            CONFIRM_TOKEN_ARG,
            format!(
                "{} is an {} tool and runs without confirmation; leave confirmToken out",
                op.tool_name(),
                tier_name(op.tier)
            ),
        ));
    }
    let call = build_call(op, caller, now, headers, args)?;
    let result = super::dispatch(shared, call).await;
    if let Some(token) = claimed {
        let outcome = match &result {
            Ok(reply) => format!("ok {}", reply.status),
            Err(e) => format!("error {} {}", e.status(), e.code),
        };
        let _ = shared
            .run_raw(move |core, _| db::set_token_outcome(&core.store.conn, &token, &outcome))
            .await;
    }
    let reply = result?;
    Ok(ToolResult {
        tool: op.tool_name(),
        result: reply.into_body(),
        requires_confirmation: false,
        extra: Default::default(),
    })
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The operation's call: for a GET the args are its query and path parameters (stringified), for a
/// POST its path parameters and JSON body.
fn build_call(
    op: &'static Operation,
    caller: &Caller,
    now: DateTime<Utc>,
    headers: &HeaderMap,
    mut args: Map<String, Value>,
) -> Result<Call, AppError> {
    let mut path = Vec::new();
    for name in op.path_params() {
        let value = args
            .remove(name)
            .and_then(|v| scalar_text(&v))
            .filter(|v| !v.trim().is_empty())
            .ok_or_else(|| {
                AppError::invalid(
                    name,
                    format!(
                        "{name} is required: {} needs it as a string",
                        op.tool_name()
                    ),
                )
            })?;
        path.push(value);
    }
    let mut query = HashMap::new();
    let body = match op.method {
        Method::Get => {
            for (name, value) in args {
                if !op.query.iter().any(|q| q.name == name) {
                    let takes: Vec<&str> = op
                        .path_params()
                        .into_iter()
                        .chain(op.query.iter().map(|q| q.name))
                        .collect();
                    return Err(AppError::invalid_query(
                        name.clone(),
                        format!(
                            "{} has no argument {name:?}; it takes {}",
                            op.tool_name(),
                            if takes.is_empty() {
                                "none".to_string()
                            } else {
                                takes.join(", ")
                            }
                        ),
                    ));
                }
                if value.is_null() {
                    continue;
                }
                let text = scalar_text(&value).ok_or_else(|| {
                    AppError::invalid_query(
                        name.clone(),
                        format!("{name} must be a string, number or boolean"),
                    )
                })?;
                query.insert(name, text);
            }
            Bytes::new()
        }
        Method::Post => Bytes::from(serde_json::to_vec(&args).map_err(AppError::internal)?),
    };
    let mut inner_headers = HeaderMap::new();
    if let Some(host) = headers.get("host") {
        inner_headers.insert("host", host.clone());
    }
    Ok(Call {
        op,
        caller: caller.clone(),
        now,
        query,
        path,
        headers: inner_headers,
        body,
        via_tool: true,
    })
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

// ---- confirm tokens -------------------------------------------------------------------------------

pub use crate::api::canonical_json;

pub fn args_hash(args: &Map<String, Value>) -> String {
    let text = canonical_json(&Value::Object(args.clone()));
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn new_token() -> String {
    let bytes: [u8; 16] = rand::rng().random();
    format!("ct_{}", hex::encode(bytes))
}

/// First call of a mutate tool: checks the args as the operation would, prices a preview, and
/// stores a confirm token. Nothing is executed.
async fn prepare(
    shared: &Arc<Shared>,
    caller: &Caller,
    op: &'static Operation,
    args: Map<String, Value>,
) -> Result<ToolResult, AppError> {
    let caller = caller.clone();
    let result = shared
        .run_raw(move |core, now| -> Result<Value, AppError> {
            core.sync(now)?;
            let (preview, summary) = preview_for(core, &caller, op, &args, now)?;
            let token = new_token();
            let expires_at = now + CONFIRM_TTL;
            let conn = &core.store.conn;
            db::delete_tokens_expired_before(conn, now - Duration::days(1))?;
            db::insert_token(
                conn,
                &db::NewToken {
                    token: &token,
                    account_id: caller.account_id,
                    key_id: caller.key_id,
                    tool: &op.tool_name(),
                    args_hash: &args_hash(&args),
                    args: &canonical_json(&Value::Object(args.clone())),
                    preview: &preview.to_string(),
                    expires_at,
                },
                now,
            )?;
            let mut result = json!({
                "confirmToken": token,
                "expiresAt": expires_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                "preview": preview,
                "summary": summary,
                "howToConfirm": format!(
                    "Nothing ran. After a human approves, call execute_mcp_tool again with name {} and the \
                     same args plus \"confirmToken\": \"{token}\" before {}; the token runs the tool once.",
                    op.tool_name(),
                    expires_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                ),
            });
            if let Err(e) = auth::check_scope(op, &caller) {
                result["scopeWarning"] = json!(format!(
                    "running it will be refused with 403 {}: {}",
                    e.code, e.message
                ));
            }
            Ok(result)
        })
        .await
        .map_err(AppError::internal)??;
    Ok(ToolResult {
        tool: op.tool_name(),
        result,
        requires_confirmation: true,
        extra: Default::default(),
    })
}

fn body_bytes(args: &Map<String, Value>) -> Result<Vec<u8>, AppError> {
    serde_json::to_vec(args).map_err(AppError::internal)
}

/// What a mutate tool will do, checked against the operation's own body type (a bad body is the
/// operation's 400 naming the field), and a one-line summary.
fn preview_for(
    core: &Core,
    caller: &Caller,
    op: &Operation,
    args: &Map<String, Value>,
    now: DateTime<Utc>,
) -> Result<(Value, String), AppError> {
    let mut body_args = args.clone();
    for p in op.path_params() {
        body_args.remove(p);
    }
    let body = body_bytes(&body_args)?;
    let describe = |what: String| {
        let preview = json!({
            "operation": op.name,
            "method": op.method.as_str(),
            "path": op.path,
            "args": Value::Object(args.clone()),
        });
        (preview, format!("{} will {what}", op.tool_name()))
    };
    match op.name {
        "propose_trade" | "place_order" => {
            let signal: TradeSignal = parse_json(&body)?;
            let plan =
                trading::plan_signal(core, caller.account_id, &caller.messenger_id, &signal, now)?;
            let preview = trading::preview(core, caller.account_id, &plan, now)?;
            let what = trading::summarize_preview(&preview);
            let summary = if op.name == "propose_trade" {
                format!(
                    "service_propose_trade will stage (not execute) {what}; the staged proposal then \
                     needs confirm_trade within 5 minutes"
                )
            } else {
                format!("service_place_order will execute {what} immediately on this account")
            };
            Ok((
                serde_json::to_value(&preview).map_err(AppError::internal)?,
                summary,
            ))
        }
        "confirm_trade" | "close_position" => {
            let id = if op.name == "confirm_trade" {
                Some(parse_json::<ConfirmRequest>(&body)?.proposal_id)
            } else {
                parse_json::<CloseRequest>(&body)?.proposal_id
            };
            let id = id.unwrap_or_default();
            let staged = core
                .store
                .proposal(id.trim())?
                .filter(|p| p.account_id == caller.account_id);
            let (mut preview, summary) = describe(format!("execute staged proposal {id:?}"));
            if let Some(row) = staged {
                preview["proposal"] = json!({
                    "proposalId": row.id,
                    "kind": row.kind,
                    "status": row.status,
                    "expiresAt": row.expires_at,
                    "preview": serde_json::from_str::<Value>(&row.preview).unwrap_or_default(),
                });
                if let Ok(p) = serde_json::from_str::<Preview>(&row.preview) {
                    let summary = format!(
                        "{} will execute staged proposal {}: {}",
                        op.tool_name(),
                        row.id,
                        trading::summarize_preview(&p)
                    );
                    return Ok((preview, summary));
                }
            }
            Ok((preview, summary))
        }
        other => {
            match other {
                "platform_place_order" => parse_json::<PlatformOrder>(&body).map(drop)?,
                "platform_close_position" => parse_json::<PlatformClose>(&body).map(drop)?,
                "platform_cancel_order" => parse_json::<CancelRequest>(&body).map(drop)?,
                "approve_builder_fee" => parse_json::<BuilderFeeApproval>(&body).map(drop)?,
                "create_signal_destination" => {
                    parse_json::<SignalDestinationRequest>(&body).map(drop)?
                }
                _ => parse_json::<Map<String, Value>>(&body).map(drop)?,
            }
            Ok(describe(format!(
                "call {} {} ({}) with these args",
                op.method.as_str(),
                op.path,
                op.summary
            )))
        }
    }
}

/// Spends a confirm token: one conditional UPDATE, so of any number of concurrent re-submits
/// exactly one runs the tool. A refusal is written to the audit log under the operation's name.
async fn claim(
    shared: &Arc<Shared>,
    caller: &Caller,
    op: &'static Operation,
    token: &str,
    args: &Map<String, Value>,
) -> Result<(), AppError> {
    let (caller, token, hash) = (caller.clone(), token.to_string(), args_hash(args));
    shared
        .run_raw(move |core, now| {
            let result = claim_in(core, &caller, op, &token, &hash, now);
            if let Err(e) = &result {
                let row = AuditRow {
                    account_id: caller.account_id,
                    key_id: caller.key_id,
                    operation: op.name.to_string(),
                    outcome: "error".into(),
                    http_status: e.status(),
                    error_code: Some(e.code.to_string()),
                    message: Some(e.message.clone()),
                    ..Default::default()
                };
                super::audit(core, &row, now);
            }
            result
        })
        .await
        .map_err(AppError::internal)?
}

fn claim_in(
    core: &mut Core,
    caller: &Caller,
    op: &Operation,
    token: &str,
    hash: &str,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let tool = op.tool_name();
    let row = db::token(&core.store.conn, token)?;
    let again = format!("call {tool} without confirmToken for a new one");
    let refuse = |status: ErrorKind, code: &'static str, message: String| {
        Err(AppError::new(status, code, message).with_field(CONFIRM_TOKEN_ARG))
    };
    let Some(row) = row else {
        return refuse(
            ErrorKind::NotFound,
            "confirm_token_not_found",
            format!("no confirm token {token:?}; {again}"),
        );
    };
    if row.key_id != caller.key_id {
        return refuse(
            ErrorKind::Forbidden,
            "confirm_token_key_mismatch",
            format!(
                "confirm token {token} was issued to another API key; only that key can use it"
            ),
        );
    }
    if row.tool != tool {
        return refuse(
            ErrorKind::Invalid,
            "confirm_token_tool_mismatch",
            format!(
                "confirm token {token} was issued for {}, not {tool}",
                row.tool
            ),
        );
    }
    if row.args_hash != hash {
        return refuse(
            ErrorKind::Invalid,
            "confirm_token_args_mismatch",
            format!(
                "confirm token {token} was issued for other args of {tool}; re-submit exactly the \
                 args of the first call (plus confirmToken), or {again}"
            ),
        );
    }
    if let Some(used) = row.used_at {
        return refuse(
            ErrorKind::Conflict,
            "confirm_token_used",
            format!(
                "confirm token {token} was already used at {}{}; it runs the tool only once; {again}",
                used.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                row.outcome
                    .map(|o| format!(" (that call answered: {o})"))
                    .unwrap_or_default()
            ),
        );
    }
    if row.expires_at <= now {
        return refuse(
            ErrorKind::Expired,
            "confirm_token_expired",
            format!(
                "confirm token {token} expired at {} ({}s ago); {again}",
                row.expires_at
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                (now - row.expires_at).num_seconds()
            ),
        );
    }
    if !db::spend_token(&core.store.conn, token, caller.key_id, &tool, hash, now)? {
        return refuse(
            ErrorKind::Conflict,
            "confirm_token_used",
            format!("confirm token {token} was already used; {again}"),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::catalog::OPERATIONS;

    #[test]
    fn tiers_follow_what_operations_do() {
        for op in OPERATIONS.iter().filter(|o| is_tool(o)) {
            if op.method == Method::Get {
                assert_ne!(op.tier, Tier::Mutate, "{} reads", op.name);
            }
            let changes_account = [
                "propose", "confirm", "close", "place", "cancel", "create", "approve",
            ]
            .iter()
            .any(|w| op.name.contains(w))
                && op.method == Method::Post;
            assert_eq!(
                op.tier == Tier::Mutate,
                changes_account,
                "{} tier {:?}",
                op.name,
                op.tier
            );
            if matches!(
                op.section,
                catalog::Section::Backtests | catalog::Section::Research
            ) {
                assert_eq!(op.tier, Tier::Experiment, "{}", op.name);
            }
        }
    }

    #[test]
    fn args_hash_ignores_key_order() {
        let a: Map<String, Value> =
            serde_json::from_str(r#"{"a":"BTC","d":"long","x":{"q":1,"p":2}}"#).unwrap();
        let b: Map<String, Value> =
            serde_json::from_str(r#"{"x":{"p":2,"q":1},"d":"long","a":"BTC"}"#).unwrap();
        assert_eq!(args_hash(&a), args_hash(&b));
        let c: Map<String, Value> = serde_json::from_str(r#"{"a":"ETH","d":"long"}"#).unwrap();
        assert_ne!(args_hash(&a), args_hash(&c));
    }

    #[test]
    fn unknown_tools_point_at_the_catalog() {
        assert!(tool_op("service_get_positions").is_some());
        assert!(tool_op("get_positions").is_none());
        let e = unknown_tool("get_positions");
        assert_eq!(e.kind, ErrorKind::NotFound);
        assert!(e.message.contains("service_get_positions"), "{}", e.message);
        assert!(e.message.contains("/api/delegated/mcp/capabilities"));
    }
}
