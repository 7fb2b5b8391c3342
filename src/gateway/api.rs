//! The supervisor API under `/gate/v1`, for the console and for scripts. Every call carries a
//! supervisor token (`agentdesk gate token`) in `x-api-key`.

use super::store::{Agent, Item, Status, Token};
use super::{Gate, GateError, inbox, json_response, sha256_hex};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// Most items one listing answers.
const LIST_LIMIT: usize = 500;

pub fn router(gate: Arc<Gate>) -> Router {
    Router::new()
        .route("/gate/v1/inbox", get(list))
        .route("/gate/v1/inbox/{id}/approve", post(approve))
        .route("/gate/v1/inbox/{id}/reject", post(reject))
        .route("/gate/v1/agents", get(agents))
        .with_state(gate)
}

/// The token's row when `x-api-key` holds a supervisor token of this gateway.
pub async fn supervisor(gate: &Gate, headers: &HeaderMap) -> Result<Token, GateError> {
    let unauthorized = |message: &str| {
        GateError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            message.to_string(),
        )
    };
    let token = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            unauthorized("send a supervisor token (agentdesk gate token) in the x-api-key header")
        })?;
    gate.store
        .token(&sha256_hex(token))
        .await
        .map_err(GateError::store)?
        .ok_or_else(|| unauthorized("x-api-key is not a supervisor token of this gateway"))
}

fn who(token: &Token) -> String {
    if token.label.is_empty() {
        format!("token {}", token.id)
    } else {
        token.label.clone()
    }
}

fn time(t: DateTime<Utc>) -> Value {
    json!(t.to_rfc3339_opts(SecondsFormat::Secs, true))
}

fn item_json(gate: &Gate, item: &Item, agents: &HashMap<String, Agent>) -> Value {
    let agent = agents.get(&item.agent);
    let mut v = json!({
        "id": item.id,
        "agent": agent.map(Agent::label).unwrap_or(&item.agent[..8]),
        "agentFingerprint": &item.agent[..8],
        "account": item.account,
        "kind": item.kind,
        "status": item.status.as_str(),
        "proposalId": item.proposal_id,
        "request": item.request,
        "preview": item.preview,
        "expiresAt": time(item.expires_at),
        "createdAt": time(item.created_at),
        "decidedAt": item.decided_at.map(time),
        "decidedBy": item.decided_by,
        "reason": item.reason,
        "result": item.result,
    });
    let note = match (item.status, &item.note) {
        (Status::Approved, _) if gate.key_of(&item.agent).is_none() => {
            Some("waiting for the agent to reconnect".to_string())
        }
        (_, note) => note.clone(),
    };
    if let Some(note) = note {
        v["note"] = json!(note);
    }
    v
}

async fn agent_map(gate: &Gate) -> Result<HashMap<String, Agent>, GateError> {
    Ok(gate
        .store
        .agents()
        .await
        .map_err(GateError::store)?
        .into_iter()
        .map(|a| (a.key_hash.clone(), a))
        .collect())
}

async fn list(
    State(gate): State<Arc<Gate>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, GateError> {
    supervisor(&gate, &headers).await?;
    let wanted = query.get("status").map(String::as_str).unwrap_or("pending");
    let status = match wanted {
        "all" => None,
        s => Some(Status::parse(s).ok_or_else(|| {
            GateError::new(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                format!(
                    "status must be pending, approved, executing, executed, failed, rejected, expired or all, got {s:?}"
                ),
            )
            .with_field("status")
        })?),
    };
    gate.store
        .expire_due(gate.now())
        .await
        .map_err(GateError::store)?;
    let items = gate
        .store
        .items(status, LIST_LIMIT)
        .await
        .map_err(GateError::store)?;
    let agents = agent_map(&gate).await?;
    let items: Vec<Value> = items.iter().map(|i| item_json(&gate, i, &agents)).collect();
    Ok(json_response(
        StatusCode::OK,
        &json!({"success": true, "items": items}),
    ))
}

async fn approve(
    State(gate): State<Arc<Gate>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, GateError> {
    let token = supervisor(&gate, &headers).await?;
    let item = inbox::approve(&gate, &id, &who(&token)).await?;
    let agents = agent_map(&gate).await?;
    Ok(json_response(
        StatusCode::OK,
        &json!({"success": true, "item": item_json(&gate, &item, &agents)}),
    ))
}

async fn reject(
    State(gate): State<Arc<Gate>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, GateError> {
    let token = supervisor(&gate, &headers).await?;
    let reason = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        let v: Value = serde_json::from_slice(&body).map_err(|e| {
            GateError::new(
                StatusCode::BAD_REQUEST,
                "invalid_body",
                format!("the body must be a JSON object like {{\"reason\": \"...\"}} ({e})"),
            )
        })?;
        match v.get("reason") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
            Some(_) => {
                return Err(GateError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_body",
                    "reason must be a string",
                )
                .with_field("reason"));
            }
        }
    };
    let reason = reason.unwrap_or_else(|| "no reason given".into());
    let item = inbox::reject(&gate, &id, &who(&token), reason).await?;
    let agents = agent_map(&gate).await?;
    Ok(json_response(
        StatusCode::OK,
        &json!({"success": true, "item": item_json(&gate, &item, &agents)}),
    ))
}

async fn agents(State(gate): State<Arc<Gate>>, headers: HeaderMap) -> Result<Response, GateError> {
    supervisor(&gate, &headers).await?;
    gate.store
        .expire_due(gate.now())
        .await
        .map_err(GateError::store)?;
    let pending = gate
        .store
        .items(Some(Status::Pending), LIST_LIMIT)
        .await
        .map_err(GateError::store)?;
    let agents: Vec<Value> = gate
        .store
        .agents()
        .await
        .map_err(GateError::store)?
        .iter()
        .map(|a| {
            json!({
                "agent": a.label(),
                "fingerprint": a.fingerprint,
                "name": a.name,
                "account": a.account,
                "firstSeen": time(a.first_seen),
                "lastSeen": time(gate.last_seen(&a.key_hash).unwrap_or(a.last_seen)),
                "connected": gate.key_of(&a.key_hash).is_some(),
                "pending": pending.iter().filter(|i| i.agent == a.key_hash).count(),
            })
        })
        .collect();
    Ok(json_response(
        StatusCode::OK,
        &json!({
            "success": true,
            "gateway": {"version": env!("CARGO_PKG_VERSION"), "upstream": gate.upstream},
            "agents": agents,
        }),
    ))
}

/// The interface's OpenAPI document with the supervisor API added.
pub fn openapi(gate: &Gate) -> Value {
    let mut doc = crate::api::openapi::document(&gate.base_url());
    let supervisor = json!([{"supervisorToken": []}]);
    let item_ref = json!({"$ref": "#/components/schemas/InboxItem"});
    let id_param = json!([{"name": "id", "in": "path", "required": true,
        "description": "The item's id, or a trade item's proposalId", "schema": {"type": "string"}}]);
    let errors = json!({
        "401": {"$ref": "#/components/responses/Unauthorized"},
        "404": {"description": "No such item", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
        "409": {"description": "The item was already decided otherwise", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
    });
    let one_item = json!({"description": "The item after the decision",
        "content": {"application/json": {"schema": {"type": "object",
            "properties": {"success": {"type": "boolean"}, "item": item_ref}}}}});
    let mut approve_responses = errors.clone();
    approve_responses["200"] = one_item.clone();
    let mut reject_responses = errors;
    reject_responses["200"] = one_item;
    let paths = doc["paths"].as_object_mut().expect("paths is an object");
    paths.insert("/gate/v1/inbox".into(), json!({"get": {
        "operationId": "gate_inbox", "tags": ["gateway"], "x-extension": true,
        "summary": "Items agents staged through this gateway (default: pending, newest first)",
        "security": supervisor,
        "parameters": [{"name": "status", "in": "query", "required": false, "schema": {"type": "string",
            "default": "pending",
            "enum": ["pending", "approved", "executing", "executed", "failed", "rejected", "expired", "all"]}}],
        "responses": {"200": {"description": "The items", "content": {"application/json": {"schema": {
            "type": "object", "properties": {"success": {"type": "boolean"},
            "items": {"type": "array", "items": item_ref}}}}}},
            "401": {"$ref": "#/components/responses/Unauthorized"}},
    }}));
    paths.insert("/gate/v1/inbox/{id}/approve".into(), json!({"post": {
        "operationId": "gate_approve", "tags": ["gateway"], "x-extension": true,
        "summary": "Approve an item: the gateway executes it upstream with the proposing agent's key, once",
        "security": supervisor, "parameters": id_param, "responses": approve_responses,
    }}));
    paths.insert("/gate/v1/inbox/{id}/reject".into(), json!({"post": {
        "operationId": "gate_reject", "tags": ["gateway"], "x-extension": true,
        "summary": "Reject an item; the agent's confirm then answers 403 rejected_by_supervisor with the reason",
        "security": supervisor, "parameters": id_param,
        "requestBody": {"required": false, "content": {"application/json": {"schema": {"type": "object",
            "properties": {"reason": {"type": "string"}}}, "example": {"reason": "too large"}}}},
        "responses": reject_responses,
    }}));
    paths.insert("/gate/v1/agents".into(), json!({"get": {
        "operationId": "gate_agents", "tags": ["gateway"], "x-extension": true,
        "summary": "Agents seen by this gateway, by label and key fingerprint",
        "security": supervisor,
        "responses": {"200": {"description": "The agents", "content": {"application/json": {"schema": {"type": "object"}}}},
            "401": {"$ref": "#/components/responses/Unauthorized"}},
    }}));
    doc["components"]["securitySchemes"]["supervisorToken"] = json!({
        "type": "apiKey", "in": "header", "name": "x-api-key",
        "description": "A supervisor token minted with `agentdesk gate token`",
    });
    let nullable_string = json!({"type": "string", "nullable": true});
    doc["components"]["schemas"]["InboxItem"] = json!({"type": "object", "properties": {
        "id": {"type": "string"}, "agent": {"type": "string"}, "agentFingerprint": {"type": "string"},
        "account": nullable_string, "kind": {"type": "string"},
        "status": {"type": "string", "enum": ["pending", "approved", "executing", "executed", "failed", "rejected", "expired"]},
        "proposalId": nullable_string, "request": {"type": "object"}, "preview": {"type": "object"},
        "expiresAt": {"type": "string", "format": "date-time"},
        "createdAt": {"type": "string", "format": "date-time"},
        "decidedAt": {"type": "string", "format": "date-time", "nullable": true},
        "decidedBy": nullable_string, "reason": nullable_string,
        "result": {"type": "object", "nullable": true,
            "description": "The upstream's answer to the execution: {status, body}"},
        "note": {"type": "string"},
    }});
    doc
}
