//! The supervisor API under `/gate/v1`, for the console and for scripts. Every call carries a
//! supervisor token (`agentdesk gate token`) in `x-api-key`.

use super::super::flow::changes::{self, WAIT_MAX};
use super::super::flow::guard;
use super::super::flow::inbox;
use super::super::flow::items::{self, agent_map};
use super::super::flow::listing;
use super::super::gate::{Gate, sha256_hex};
use super::super::model::error::{GateError, Kind};
use super::super::model::journal;
use super::super::store::{Record, Role, Standing, Status, Token};
use super::json_response;
use super::policy;
use crate::api::model::{
    GateAgent, GateAgents, GateCheck, GateCheckKill, GateDecision, GateInfo, GateKillSwitchAnswer,
    GatePolicy, GateStanding, GateStandingCreated, GateStandingList, GateSupervisor,
};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
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
        .route("/gate/v1/inbox/{id}/check", get(check))
        .route("/gate/v1/agents", get(agents))
        .route("/gate/v1/policy", get(get_policy).put(put_policy))
        .route(
            "/gate/v1/kill-switch",
            get(get_kill_switch).post(post_kill_switch),
        )
        .route(
            "/gate/v1/standing-approvals",
            get(list_standing).post(add_standing),
        )
        .route("/gate/v1/standing-approvals/{id}", delete(revoke_standing))
        .route("/gate/v1/journal", get(get_journal))
        .with_state(gate)
}

/// The token's row when `x-api-key` holds a supervisor token of this gateway.
pub async fn supervisor(gate: &Gate, headers: &HeaderMap) -> Result<Token, GateError> {
    let unauthorized =
        |message: &str| GateError::new(Kind::Unauthorized, "unauthorized", message.to_string());
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

/// The token's row when it may do what needs `needed`; otherwise 403 `insufficient_role` naming
/// the role needed, journaled (a refused attempt is part of the record).
pub async fn supervisor_as(
    gate: &Gate,
    headers: &HeaderMap,
    needed: Role,
    what: &str,
) -> Result<Token, GateError> {
    let token = supervisor(gate, headers).await?;
    if token.role >= needed {
        return Ok(token);
    }
    let message = format!(
        "{what} needs the {} role; this token ({}) is a {}",
        needed.as_str(),
        who(&token),
        token.role.as_str()
    );
    let record = Record::new(
        "insufficient_role",
        &who(&token),
        gate.now(),
        json!({"needed": needed.as_str(), "role": token.role.as_str(), "what": what}),
    );
    gate.store.append(record).await.map_err(GateError::store)?;
    let mut e = GateError::new(Kind::Forbidden, "insufficient_role", message);
    e.extra = Some(Box::new(json!({"needed": needed.as_str()})));
    Err(e)
}

/// The role each route of the supervisor API needs beyond a viewer's, and how a refusal names
/// what was tried. One table, read by [`Supervisor`], so no handler can forget its check.
const NEEDS: &[(&str, &str, Role, &str)] = &[
    (
        "POST",
        "/gate/v1/inbox/{id}/approve",
        Role::Approver,
        "approving an item",
    ),
    (
        "POST",
        "/gate/v1/inbox/{id}/reject",
        Role::Approver,
        "rejecting an item",
    ),
    (
        "POST",
        "/gate/v1/inbox/{id}/link",
        Role::Admin,
        "minting an approval link",
    ),
    ("PUT", "/gate/v1/policy", Role::Admin, "changing the policy"),
    (
        "POST",
        "/gate/v1/kill-switch",
        Role::Admin,
        "switching the kill switch",
    ),
    (
        "POST",
        "/gate/v1/standing-approvals",
        Role::Admin,
        "adding a standing approval",
    ),
    (
        "DELETE",
        "/gate/v1/standing-approvals/{id}",
        Role::Admin,
        "revoking a standing approval",
    ),
];

/// The supervisor's token of a request, checked against the role its route needs ([`NEEDS`],
/// else a viewer's) before anything else of the request is read.
pub struct Supervisor(pub Token);

impl axum::extract::FromRequestParts<Arc<Gate>> for Supervisor {
    type Rejection = GateError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        gate: &Arc<Gate>,
    ) -> Result<Self, GateError> {
        let route = parts
            .extensions
            .get::<axum::extract::MatchedPath>()
            .map(|p| p.as_str())
            .unwrap_or_default();
        let needs = NEEDS
            .iter()
            .find(|(method, path, ..)| *method == parts.method.as_str() && *path == route);
        match needs {
            Some((_, _, role, what)) => supervisor_as(gate, &parts.headers, *role, what).await,
            None => supervisor(gate, &parts.headers).await,
        }
        .map(Supervisor)
    }
}

pub fn who(token: &Token) -> String {
    if token.label.is_empty() {
        format!("token {}", token.id)
    } else {
        token.label.clone()
    }
}

async fn list(
    State(gate): State<Arc<Gate>>,
    _: Supervisor,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, GateError> {
    let wanted = query.get("status").map(String::as_str).unwrap_or("pending");
    let status = match wanted {
        "all" => None,
        s => Some(Status::parse(s).ok_or_else(|| {
            GateError::new(
                Kind::Invalid,
                "invalid_query",
                format!(
                    "status must be pending, approved, executing, executed, failed, rejected, expired or all, got {s:?}"
                ),
            )
            .with_field("status")
        })?),
    };
    let (since, wait) = changes::long_poll(&query)?;
    if let (Some(since), false) = (since, wait.is_zero()) {
        changes::wait_for_change(&gate, since, wait).await?;
    }
    // Read before the items: a change after this moves it, so the next poll answers at once.
    let version = gate.store.changes().map(|rx| *rx.borrow());
    gate.store
        .expire_due(gate.now())
        .await
        .map_err(GateError::store)?;
    let body = listing::inbox(&gate, status, LIST_LIMIT, version).await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

async fn approve(
    State(gate): State<Arc<Gate>>,
    Supervisor(token): Supervisor,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, GateError> {
    let overrides = super::bodies::approve(&body)?.overrides;
    let item = inbox::approve(&gate, &id, &who(&token), &overrides).await?;
    let agents = agent_map(&gate).await?;
    Ok(super::success(GateDecision {
        item: items::model(&gate, &item, &agents),
    }))
}

/// The verdicts an approval would meet now (live account, policy in force, kill switch), so an
/// approve dialog shows what an override would cover before anyone confirms.
async fn check(
    State(gate): State<Arc<Gate>>,
    _: Supervisor,
    Path(id): Path<String>,
) -> Result<Response, GateError> {
    let item = items::find(&gate, &id).await?;
    let trade = guard::item_trade(&gate, &item).await.map_err(|why| {
        GateError::new(
            Kind::Conflict,
            "unclassifiable_item",
            format!("item {} cannot be judged ({why})", item.id),
        )
    })?;
    let verdicts = match &trade {
        Some(t) => guard::check(&gate, &item.agent, t).await?,
        None => Vec::new(),
    };
    let killed = guard::killed(&gate).await?;
    let blocked_by_kill_switch = killed.is_some() && trade.as_ref().is_some_and(|t| !t.reduces);
    Ok(super::success(GateCheck {
        id: item.id,
        status: item.status.as_str().to_string(),
        verdicts: verdicts.iter().map(policy::Verdict::model).collect(),
        needs_override: verdicts
            .iter()
            .filter(|v| !v.ok)
            .map(|v| v.rule.to_string())
            .collect(),
        kill_switch: GateCheckKill {
            on: killed.is_some(),
            reason: killed,
            blocks: blocked_by_kill_switch,
        },
    }))
}

async fn reject(
    State(gate): State<Arc<Gate>>,
    Supervisor(token): Supervisor,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, GateError> {
    let reason = super::bodies::reject(&body)?;

    let reason = reason.unwrap_or_else(|| "no reason given".into());
    let item = inbox::reject(&gate, &id, &who(&token), reason).await?;
    let agents = agent_map(&gate).await?;
    Ok(super::success(GateDecision {
        item: items::model(&gate, &item, &agents),
    }))
}

async fn agents(
    State(gate): State<Arc<Gate>>,
    Supervisor(token): Supervisor,
) -> Result<Response, GateError> {
    gate.store
        .expire_due(gate.now())
        .await
        .map_err(GateError::store)?;
    let pending = gate
        .store
        .items(Some(Status::Pending), LIST_LIMIT)
        .await
        .map_err(GateError::store)?;
    let agents = gate
        .store
        .agents()
        .await
        .map_err(GateError::store)?
        .iter()
        .map(|a| {
            let via = gate.connections.of(&a.key_hash);
            let client = via.as_ref().and_then(|c| c.client.clone());
            GateAgent {
                agent: a.label().to_string(),
                fingerprint: a.fingerprint.clone(),
                name: a.name.clone(),
                account: a.account.clone(),
                first_seen: Some(a.first_seen),
                last_seen: Some(gate.last_seen(&a.key_hash).unwrap_or(a.last_seen)),
                connected: gate.key_of(&a.key_hash).is_some(),
                pending: pending.iter().filter(|i| i.agent == a.key_hash).count() as u64,
                transport: via.map(|c| c.transport.as_str().to_string()),
                client_name: client.as_ref().map(|c| c.0.clone()),
                client_version: client.map(|c| c.1),
            }
        })
        .collect();
    Ok(super::success(GateAgents {
        gateway: Some(GateInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            upstream: gate.upstream.base().to_string(),
        }),
        you: Some(GateSupervisor {
            label: who(&token),
            role: token.role.as_str().to_string(),
        }),
        agents,
    }))
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
            "enum": ["pending", "approved", "executing", "executed", "failed", "rejected", "expired", "all"]}},
            {"name": "since", "in": "query", "required": false,
             "description": "The version of an earlier answer: with wait, a long poll held while nothing changed",
             "schema": {"type": "integer", "minimum": 0}},
            {"name": "wait", "in": "query", "required": false,
             "description": "Seconds to hold the answer while the version is still since",
             "schema": {"type": "integer", "minimum": 0, "maximum": WAIT_MAX, "default": 0}}],
        "responses": {"200": {"description": "The items", "content": {"application/json": {"schema": {
            "type": "object", "properties": {"success": {"type": "boolean"},
            "items": {"type": "array", "items": item_ref},
            "version": {"type": "integer", "description": "The gateway's count of changes"}}}}}},
            "400": {"description": "Invalid since or wait, naming the field", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
            "401": {"$ref": "#/components/responses/Unauthorized"}},
    }}));
    paths.insert("/gate/v1/inbox/{id}/approve".into(), json!({"post": {
        "operationId": "gate_approve", "tags": ["gateway"], "x-extension": true,
        "summary": "Approve an item: the gateway executes it upstream with the proposing agent's key, once",
        "security": supervisor, "parameters": id_param, "responses": approve_responses,
        "requestBody": {"required": false, "content": {"application/json": {"schema": {"type": "object",
            "properties": {"override": {"type": "array", "items": {"type": "string"},
                "description": "Rules the item now breaks that the supervisor approves anyway"}}},
            "example": {"override": ["max_open_positions"]}}}},
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
    let ok_object = |what: &str| {
        json!({"200": {"description": what, "content": {"application/json": {"schema": {"type": "object"}}}},
               "400": {"description": "Invalid body, naming the field", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
               "401": {"$ref": "#/components/responses/Unauthorized"}})
    };
    let gate_op = |id: &str, summary: &str, body: Option<Value>, what: &str| {
        let mut op = json!({"operationId": id, "tags": ["gateway"], "x-extension": true,
            "summary": summary, "security": supervisor, "responses": ok_object(what)});
        if let Some(example) = body {
            op["requestBody"] = json!({"required": true, "content": {"application/json": {
                "schema": {"type": "object"}, "example": example}}});
        }
        op
    };
    paths.insert("/gate/v1/inbox/{id}/check".into(), json!({
        "get": {"operationId": "gate_check", "tags": ["gateway"], "x-extension": true,
            "summary": "The verdicts an approval would meet now: live account, policy in force, kill switch",
            "security": supervisor, "parameters": id_param,
            "responses": ok_object("{id, status, verdicts, needsOverride, killSwitch: {on, reason, blocks}}")},
    }));
    paths.insert("/gate/v1/inbox/{id}/link".into(), json!({
        "post": {"operationId": "gate_link", "tags": ["gateway"], "x-extension": true,
            "summary": "A single-use approval link (/gate/approve/<token>) for a pending item, valid until it expires",
            "security": supervisor, "parameters": id_param,
            "responses": ok_object("{url, itemId, expiresAt}")},
    }));
    paths.insert("/gate/v1/policy".into(), json!({
        "get": gate_op("gate_policy",
            "The policy in force, every rule's name, and each agent's notional executed this UTC day against its max_daily_notional_usd",
            None, "{policy, rules, today: {since, agents: [{agent, fingerprint, executedNotionalUsd, maxDailyNotionalUsd}]}}"),
        "put": gate_op("gate_policy_put",
            "Replace the policy; refused whole (400 invalid_policy, field = the wrong key) when any key is wrong",
            Some(json!({"max_notional_usd": 3000, "allowed_coins": ["BTC"], "agents": {"bot": {"max_leverage": 3}}})),
            "{changed, policy}"),
    }));
    paths.insert("/gate/v1/kill-switch".into(), json!({
        "get": gate_op("gate_kill_switch", "The kill switch: {on, reason, by, at}", None, "{killSwitch}"),
        "post": gate_op("gate_kill_switch_set",
            "Turn the kill switch on (a reason is required) or off; it persists across restarts",
            Some(json!({"on": true, "reason": "venue incident"})), "{killSwitch}"),
    }));
    paths.insert("/gate/v1/standing-approvals".into(), json!({
        "get": gate_op("gate_standing_approvals",
            "Live standing approvals, each with remainingSecs and the items it approved", None,
            "{standingApprovals}"),
        "post": gate_op("gate_standing_approval_add",
            "Approve fitting stagings automatically for a while",
            Some(json!({"agent": "*", "coins": ["BTC"], "maxNotionalUsd": 500, "minutes": 60, "reason": "small entries"})),
            "{standingApproval}"),
    }));
    paths.insert("/gate/v1/standing-approvals/{id}".into(), json!({
        "delete": {"operationId": "gate_standing_approval_revoke", "tags": ["gateway"], "x-extension": true,
            "summary": "End a standing approval now", "security": supervisor,
            "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
            "responses": ok_object("{revoked}")},
    }));
    paths.insert("/gate/v1/journal".into(), json!({
        "get": {"operationId": "gate_journal", "tags": ["gateway"], "x-extension": true,
            "summary": "The hash-chained journal of decisions, oldest first", "security": supervisor,
            "parameters": [
                {"name": "after", "in": "query", "required": false, "schema": {"type": "integer", "default": 0}},
                {"name": "limit", "in": "query", "required": false, "schema": {"type": "integer", "default": 500, "maximum": 1000}}],
            "responses": ok_object("{records: [{seq, at, kind, actor, item, detail, prevHash, hash}]}")},
    }));
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
        "verdicts": {"type": "array", "description": "Every policy rule's verdict at staging",
            "items": {"type": "object", "properties": {"rule": {"type": "string"}, "ok": {"type": "boolean"},
                "limit": {}, "value": {}, "near": {"type": "boolean"}, "message": {"type": "string"}}}},
        "notional": {"type": "number", "nullable": true},
        "standingApproval": {"type": "integer", "nullable": true},
    }});
    doc
}

async fn get_policy(State(gate): State<Arc<Gate>>, _: Supervisor) -> Result<Response, GateError> {
    let policy = guard::policy(&gate).await?;
    let today = guard::today(&gate, &policy).await?;
    Ok(super::success(GatePolicy {
        // Lossless: rules this model does not name are kept in its `other`.
        policy: serde_json::from_value(policy.to_json()).unwrap_or_default(),
        rules: policy::RULES.iter().map(|r| r.to_string()).collect(),
        today: Some(today),
    }))
}

async fn put_policy(
    State(gate): State<Arc<Gate>>,
    Supervisor(token): Supervisor,
    body: Bytes,
) -> Result<Response, GateError> {
    let invalid = |e: policy::PolicyError| {
        GateError::new(Kind::Invalid, "invalid_policy", e.message).with_field(e.key)
    };
    let policy = super::bodies::policy(&body)?;
    guard::validate(&policy, gate.upstream.key.is_some()).map_err(invalid)?;
    let changed = guard::set_policy(&gate, &policy, &who(&token)).await?;
    Ok(json_response(
        StatusCode::OK,
        &json!({"success": true, "changed": changed, "policy": policy.to_json()}),
    ))
}

async fn get_kill_switch(
    State(gate): State<Arc<Gate>>,
    _: Supervisor,
) -> Result<Response, GateError> {
    let kill_switch = guard::kill_switch(&gate).await?;
    Ok(super::success(GateKillSwitchAnswer { kill_switch }))
}

async fn post_kill_switch(
    State(gate): State<Arc<Gate>>,
    Supervisor(token): Supervisor,
    body: Bytes,
) -> Result<Response, GateError> {
    let super::bodies::Kill { on, reason } = super::bodies::kill(&body)?;
    let kill_switch = guard::set_kill_switch(&gate, on, &reason, &who(&token)).await?;
    Ok(super::success(GateKillSwitchAnswer { kill_switch }))
}

async fn standing_models(gate: &Gate, list: &[Standing]) -> Result<Vec<GateStanding>, GateError> {
    let now = gate.now();
    let mut out = Vec::new();
    for s in list {
        let approved = gate
            .store
            .items_of_standing(s.id)
            .await
            .map_err(GateError::store)?;
        out.push(guard::standing_model(s, now, &approved));
    }
    Ok(out)
}

async fn list_standing(
    State(gate): State<Arc<Gate>>,
    _: Supervisor,
) -> Result<Response, GateError> {
    let list = gate
        .store
        .standings(gate.now())
        .await
        .map_err(GateError::store)?;
    let standing_approvals = standing_models(&gate, &list).await?;
    Ok(super::success(GateStandingList { standing_approvals }))
}

async fn add_standing(
    State(gate): State<Arc<Gate>>,
    Supervisor(token): Supervisor,
    body: Bytes,
) -> Result<Response, GateError> {
    let super::bodies::Standing {
        agent,
        coins,
        max_notional_usd: max,
        minutes,
        reason,
    } = super::bodies::standing(&body)?;
    let now = gate.now();
    let by = who(&token);
    let standing = Standing {
        id: 0,
        agent,
        coins,
        max_notional_usd: max,
        expires_at: now + chrono::Duration::minutes(minutes as i64),
        reason,
        created_by: by.clone(),
        created_at: now,
        revoked_at: None,
    };
    let record = Record::new(
        "standing_approval_add",
        &by,
        now,
        json!({"agent": standing.agent, "coins": standing.coins, "maxNotionalUsd": max,
               "minutes": minutes, "reason": standing.reason}),
    );
    let id = gate
        .store
        .add_standing(standing.clone(), record)
        .await
        .map_err(GateError::store)?;
    let standing = Standing { id, ..standing };
    Ok(super::success(GateStandingCreated {
        standing_approval: guard::standing_model(&standing, now, &[]),
    }))
}

async fn revoke_standing(
    State(gate): State<Arc<Gate>>,
    Supervisor(token): Supervisor,
    Path(id): Path<String>,
) -> Result<Response, GateError> {
    let not_found = || {
        GateError::new(
            Kind::NotFound,
            "not_found",
            format!("no live standing approval {id}"),
        )
    };
    let n: i64 = id.trim().parse().map_err(|_| not_found())?;
    let record = Record::new(
        "standing_approval_revoke",
        &who(&token),
        gate.now(),
        json!({"id": n}),
    );
    if !gate
        .store
        .revoke_standing(n, record)
        .await
        .map_err(GateError::store)?
    {
        return Err(not_found());
    }
    Ok(json_response(
        StatusCode::OK,
        &json!({"success": true, "revoked": n}),
    ))
}

async fn get_journal(
    State(gate): State<Arc<Gate>>,
    _: Supervisor,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, GateError> {
    let num = |name: &'static str, default: i64, max: i64| -> Result<i64, GateError> {
        match query.get(name) {
            None => Ok(default),
            Some(v) => v
                .parse::<i64>()
                .ok()
                .filter(|n| (0..=max).contains(n))
                .ok_or_else(|| {
                    GateError::new(
                        Kind::Invalid,
                        "invalid_query",
                        format!("{name} must be a whole number from 0 to {max}"),
                    )
                    .with_field(name)
                }),
        }
    };
    let after = num("after", 0, i64::MAX)?;
    let limit = num("limit", 500, 1000)?;
    let rows = gate
        .store
        .journal(after, limit as usize)
        .await
        .map_err(GateError::store)?;
    let records: Vec<Value> = rows.iter().map(journal::row_json).collect();
    Ok(json_response(
        StatusCode::OK,
        &json!({"success": true, "records": records}),
    ))
}
