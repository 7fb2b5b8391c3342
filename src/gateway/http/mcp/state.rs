//! What every MCP session of this gateway shares ([`McpState`]): the gate, the REST edge's handle,
//! the keys the upstream accepted, the sessions' owners and the tool catalog. Below every other file
//! of the MCP edge.

use super::super::super::gate::{AgentKey, Gate};
use super::super::super::model::error::{GateError, Kind};
use crate::api::catalog as ops;
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use rmcp::model::Tool;
use rmcp::{Peer, RoleServer};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The REST edge's handling of one catalog request. The edge hands it over, so this module sends
/// tool calls down the very same path without importing the edge back.
pub type Handle = fn(
    Arc<Gate>,
    &'static ops::Operation,
    Request,
) -> futures::future::BoxFuture<'static, Response>;

/// Marks a request the MCP edge sends through the REST path, so the agent is recorded as
/// connected over MCP, not REST.
#[derive(Clone, Copy)]
pub struct ViaMcp;

/// How long a key the upstream accepted is trusted before it is asked again. A revoked key stops
/// opening sessions within this time; asking on every request would double each call.
pub const KEY_FRESH_FOR: Duration = Duration::from_secs(60);
/// A session's owner is forgotten once the session went unused this long (rmcp ends idle
/// sessions well before); a session in use keeps its owner for as long as it lives.
pub const OWNER_KEPT_FOR: Duration = Duration::from_secs(24 * 3600);
pub const SESSION_HEADER: &str = "mcp-session-id";

/// What every MCP session of this gateway shares.
pub struct McpState {
    pub(super) gate: Arc<Gate>,
    pub(super) handle: Handle,
    /// Keys the upstream accepted, by hash, with when.
    pub(super) verified: Mutex<HashMap<String, Instant>>,
    /// Session id → the hash of the key that opened it, and when the session was last used.
    pub(super) owners: Mutex<HashMap<String, (String, Instant)>>,
    pub(super) catalog: Catalog,
}

pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[derive(Default)]
pub struct Catalog {
    pub(super) tools: Mutex<Option<(Instant, Vec<Tool>)>>,
    /// Sessions that hear of a change.
    pub(super) peers: Mutex<Vec<Peer<RoleServer>>>,
}

impl Catalog {
    pub fn listen(&self, peer: Peer<RoleServer>) {
        let mut peers = lock(&self.peers);
        peers.retain(|p| !p.is_transport_closed());
        peers.push(peer);
    }
}

/// The tier the service gives a tool (any of its fields saying mutate is enough).
pub fn unauthorized(message: impl Into<String>) -> Response {
    let mut resp = GateError::new(Kind::Unauthorized, "unauthorized", message).into_response();
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"agentdesk\""),
    );
    resp
}

impl McpState {
    /// Asks the upstream whether it accepts this key (whoami), unless it did a moment ago.
    pub(super) async fn verify(&self, agent: &AgentKey) -> Result<(), Response> {
        if lock(&self.verified)
            .get(&agent.hash)
            .is_some_and(|at| at.elapsed() < KEY_FRESH_FOR)
        {
            return Ok(());
        }
        let answer = self
            .gate
            .upstream
            .get_json(ops::op("whoami"), &agent.secret)
            .await
            .map_err(IntoResponse::into_response)?;
        if answer.is_success() {
            {
                let mut verified = lock(&self.verified);
                verified.retain(|_, at| at.elapsed() < KEY_FRESH_FOR);
                verified.insert(agent.hash.clone(), Instant::now());
            }
            crate::gateway::flow::forward::remember(&self.gate, agent).await;
            return Ok(());
        }
        let status = answer.status.as_u16();
        if status == 401 || status == 403 || answer.status.is_success() {
            return Err(unauthorized(
                "the service does not accept this API key (whoami refused it)",
            ));
        }
        Err(GateError::new(
            Kind::Upstream,
            "upstream_error",
            format!("the service could not check this key (whoami answered HTTP {status})"),
        )
        .into_response())
    }
}
