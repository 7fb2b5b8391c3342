//! `/mcp`: the Model Context Protocol's Streamable HTTP transport (rmcp's), in front of the same
//! routes as REST. An MCP tool call is turned into the REST request it stands for and sent through
//! the REST edge's own handling (given to [`router`] as a [`Handle`]), so it is read, judged, staged and journaled exactly as that request would be;
//! this module adds only what the protocol needs (sessions, tool listing, waiting for a decision).
//!
//! The agent authenticates with its own service key on every HTTP request, checked against the
//! upstream before rmcp sees the request, so no MCP session exists for a key the service refuses;
//! a session answers only the key that opened it.

mod call;
mod catalog;
mod server;
mod state;

use state::{Catalog, McpState, OWNER_KEPT_FOR, SESSION_HEADER, lock, unauthorized};
pub use state::{Handle, ViaMcp};

use super::super::gate::{AgentKey, Gate, TOKEN_PREFIX};
use super::super::model::error::{GateError, Kind};
use super::super::model::request::strict_json;
use crate::secret::Secret;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub fn router(gate: Arc<Gate>, handle: Handle) -> Router {
    let state = Arc::new(McpState {
        gate: gate.clone(),
        handle,
        verified: Mutex::default(),
        owners: Mutex::default(),
        catalog: Catalog::default(),
    });
    catalog::spawn_refresh(state.clone());
    let config = StreamableHttpServerConfig::default()
        // Every request carries the agent's key, checked before rmcp sees it: the DNS-rebinding
        // guard (a Host allowlist) protects keyless local servers, and would refuse every
        // gateway reached by a name.
        .disable_allowed_hosts()
        .with_max_request_body_bytes(gate.settings.max_body_bytes)
        .with_cancellation_token(gate.connections.stop.child_token());
    let service = {
        let state = state.clone();
        StreamableHttpService::new(
            move || Ok(server::Server::new(state.clone())),
            Arc::new(LocalSessionManager::default()),
            config,
        )
    };
    Router::new()
        .route_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(state, authenticate))
}

async fn authenticate(State(state): State<Arc<McpState>>, req: Request, next: Next) -> Response {
    // Read as the rate limiter reads it (`limit::credential`), so both see the same key.
    let key = match super::limit::credential(req.headers()) {
        super::limit::Credential::Key(k) => k.to_string(),
        super::limit::Credential::Absent => {
            return unauthorized(
                "send your service API key: Authorization: Bearer <key> (or the x-api-key header)",
            );
        }
        super::limit::Credential::Conflicting => {
            return unauthorized(super::limit::CONFLICTING);
        }
    };
    if key.starts_with(TOKEN_PREFIX) {
        return unauthorized(
            "a supervisor token is not an agent's key; agents connect with their own service API key",
        );
    }
    let agent = AgentKey::new(Secret::new(key));
    if let Err(e) = state.verify(&agent).await {
        return e.into_response();
    }
    let session = req
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if let Some(id) = &session {
        // A session is used only by the key that opened it. One whose owner is not known (never
        // opened here, or forgotten) is refused like another key's: as one that does not exist.
        let mut owners = lock(&state.owners);
        match owners.get_mut(id) {
            Some((owner, used)) if *owner == agent.hash => *used = Instant::now(),
            _ => {
                return GateError::new(
                    Kind::NotFound,
                    "session_not_found",
                    "no MCP session with this id for this key; initialize a new one",
                )
                .into_response();
            }
        }
    }
    let deleting = req.method() == Method::DELETE;
    let mut req = match strictly_read(req, state.gate.settings.max_body_bytes).await {
        Ok(req) => req,
        Err(refused) => return refused,
    };
    req.extensions_mut().insert(agent.clone());
    let mut resp = next.run(req).await;
    // rmcp ends a session with 202; the Python SDK counts only 200/204 as ended and warns.
    if deleting && resp.status() == axum::http::StatusCode::ACCEPTED {
        *resp.status_mut() = axum::http::StatusCode::NO_CONTENT;
    }
    match (&session, resp.headers().get(SESSION_HEADER)) {
        (None, Some(id)) => {
            if let Ok(id) = id.to_str() {
                let mut owners = lock(&state.owners);
                owners.retain(|_, (_, at)| at.elapsed() < OWNER_KEPT_FOR);
                owners.insert(id.to_string(), (agent.hash.clone(), Instant::now()));
                metrics::gauge!("agentdesk_gateway_mcp_sessions").set(owners.len() as f64);
            }
        }
        (Some(id), _) if deleting && resp.status().is_success() => {
            let mut owners = lock(&state.owners);
            owners.remove(id);
            metrics::gauge!("agentdesk_gateway_mcp_sessions").set(owners.len() as f64);
        }
        _ => {}
    }
    resp
}

/// A message's body is read here, strictly, before rmcp parses it: rmcp's JSON reading keeps the
/// last of a key given twice (`{"proposalId": "a", "proposalId": "b"}` in a tool's arguments),
/// where REST refuses it, so an agent could have one value checked and another logged. The same
/// strict reading as REST's bodies ([`strict_json`]) refuses it with 400 naming the key, and rmcp
/// gets the very bytes that were checked.
async fn strictly_read(req: Request, max: usize) -> Result<Request, Response> {
    if req.method() != Method::POST {
        return Ok(req);
    }
    let (parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, max).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return Err(GateError::new(
                Kind::TooLarge,
                "payload_too_large",
                format!("an MCP message is at most {max} bytes ([gate] max_body_bytes)"),
            )
            .into_response());
        }
    };
    if let Err(e) = strict_json(&bytes) {
        return Err(super::error::read_error(e).into_response());
    }
    Ok(Request::from_parts(parts, axum::body::Body::from(bytes)))
}
