//! The gateway's edge: the routes, the credentials, the strict reading of each request, and the
//! answers. It decides nothing itself: what may execute is the domain's ([`super::inbox`],
//! [`super::guard`]); what goes upstream is [`super::upstream`]'s.

mod answer;
pub mod api;
mod auth;
pub mod bodies;
mod error;
mod limit;
pub mod mcp;
mod openapi;
mod ops;
pub mod page;
mod read;
pub use read::ReadsError;

use super::flow::{guard, inbox, suspend};
use super::gate::{AgentKey, Gate, TOKEN_PREFIX};
use super::model::error::{GateError, Kind};
use super::model::{request, trade};
use super::rules::policy;
use super::store;
use super::upstream::{Answer, Incoming};
use crate::api::catalog::{Method as OpMethod, Operation};
use crate::api::routes::catalog_router;
use crate::edge::{Edge, Refusal};
use crate::secret::Secret;
pub use answer::GATEWAY_HEADER;
use answer::json_response;
use axum::Router;
use axum::body::Bytes;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// The gateway's service for each connection (by its peer's address): agents' reads take the
/// short way ([`read`]), everything else the router. Both are hyper's: no HTTP is read or written
/// by this crate's own code.
pub fn service(gate: Arc<Gate>) -> Result<impl Fn(SocketAddr) -> read::Front, read::ReadsError> {
    let limits = limit::Limits::new(
        gate.settings.rate_limit_per_second,
        gate.settings.rate_limit_burst,
    );
    let in_flight = Arc::new(Semaphore::new(crate::edge::IN_FLIGHT));
    let by_address = Arc::new(crate::edge::ByAddress::new(
        crate::edge::IN_FLIGHT_PER_ADDRESS,
    ));
    let full = router(
        gate.clone(),
        limits.clone(),
        in_flight.clone(),
        by_address.clone(),
    );
    let reads = Arc::new(read::Reads::new(
        gate, limits, in_flight, by_address, refuse,
    )?);
    Ok(move |peer| read::Front::new(reads.clone(), full.clone(), peer))
}

fn router(
    gate: Arc<Gate>,
    limits: Option<Arc<limit::Limits>>,
    in_flight: Arc<Semaphore>,
    by_address: Arc<crate::edge::ByAddress>,
) -> Router {
    let gate_settings = gate.settings.clone();
    let catalog = {
        let gate = gate.clone();
        catalog_router(move |op, req| handle(gate.clone(), op, req))
    };
    let own = api::router(gate.clone())
        .merge(mcp::router(gate.clone(), |gate, op, req| {
            Box::pin(handle(gate, op, req))
        }))
        .merge(page::router(gate.clone()))
        .merge(ops::router(gate));
    let routes = catalog
        .merge(crate::edge::named(own))
        .fallback(|req: Request| async move {
            GateError::new(
                Kind::NotFound,
                "not_found",
                format!(
                    "no operation at {} {}; GET /api/agent/openapi.json lists them",
                    req.method(),
                    req.uri().path()
                ),
            )
        })
        .method_not_allowed_fallback(|req: Request| async move {
            GateError::new(
                Kind::NotAllowed,
                "method_not_allowed",
                format!(
                    "{} is not an operation at {}",
                    req.method(),
                    req.uri().path()
                ),
            )
        })
        // One layer for both: each layer on a route is a boxed service cloned per request.
        .layer(axum::middleware::from_fn(
            move |req: Request, next: axum::middleware::Next| {
                let refused = limits.as_deref().and_then(|l| limit::refusal(l, &req));
                async move {
                    if let Some(refused) = refused {
                        return refused;
                    }
                    let mut resp = next.run(req).await;
                    resp.headers_mut()
                        .insert(GATEWAY_HEADER, HeaderValue::from_static("1"));
                    resp
                }
            },
        ));
    crate::edge::layers_sharing(routes, edge_of(&gate_settings), in_flight, by_address)
}

fn edge_of(settings: &policy::GateSettings) -> Edge {
    Edge {
        server: "gateway",
        body_limit: settings.max_body_bytes,
        body_timeout: settings.timeout(),
        in_flight: crate::edge::IN_FLIGHT,
        refuse,
    }
}

/// The edge's refusals in the gateway's error shape.
fn refuse(r: Refusal) -> Response {
    match r {
        Refusal::TooLarge(limit) => too_large(limit),
        Refusal::Timeout(after) => GateError::new(
            Kind::Timeout,
            "request_timeout",
            format!(
                "the request body did not arrive within {} s",
                after.as_secs()
            ),
        )
        .into_response(),
        Refusal::Overloaded => GateError::new(
            Kind::Unavailable,
            "overloaded",
            format!(
                "this gateway is serving {} requests already; try again shortly",
                crate::edge::IN_FLIGHT
            ),
        )
        .into_response(),
    }
}

fn too_large(limit: usize) -> Response {
    GateError::new(
        Kind::TooLarge,
        "payload_too_large",
        format!("request bodies are limited to {limit} bytes"),
    )
    .into_response()
}

/// The headers of a POST that go upstream with the checked body: those that say something about
/// the operation the interface defines. Anything else (a `Content-Encoding` that would make the
/// service read other bytes, a header the gateway never judged) stays here.
const POST_HEADERS: [&str; 7] = [
    "idempotency-key",
    "x-service-fanout",
    "payment-signature",
    "x-request-id",
    "accept",
    "accept-language",
    "user-agent",
];

fn post_headers(from: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for name in POST_HEADERS {
        for v in from.get_all(name) {
            out.append(HeaderName::from_static(name), v.clone());
        }
    }
    out.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    out
}

async fn handle(gate: Arc<Gate>, op: &'static Operation, req: Request) -> Response {
    if !request::plain_path(req.uri().path()) {
        return GateError::new(
            Kind::Invalid,
            "invalid_path",
            format!(
                "{} has a segment that is not an identifier (`.`, `..`, or an encoded `/`, `\\` \
                 or `.`); it is not sent on",
                req.uri().path()
            ),
        )
        .into_response();
    }
    // The credential before any body is read: a caller with none is refused without the
    // server reading (or waiting for) what it sends.
    if op.method == OpMethod::Post {
        let paid = op.auth == crate::api::catalog::Auth::ApiKeyOrPayment
            && req.headers().contains_key("payment-signature");
        match limit::credential(req.headers()) {
            limit::Credential::Key(_) => {}
            limit::Credential::Absent if paid => {}
            limit::Credential::Absent => {
                return GateError::new(
                    Kind::Unauthorized,
                    "unauthorized",
                    "send your API key in the x-api-key header",
                )
                .into_response();
            }
            limit::Credential::Conflicting => {
                return GateError::new(Kind::Unauthorized, "unauthorized", limit::CONFLICTING)
                    .into_response();
            }
        }
    }
    let (parts, body) = req.into_parts();
    let body = match crate::edge::read_body(&edge_of(&gate.settings), body).await {
        Ok(b) => b,
        Err(Some(refusal)) => return refusal.answer(refuse),
        Err(None) => return StatusCode::BAD_REQUEST.into_response(),
    };
    if op.name == "get_openapi" {
        return json_response(
            StatusCode::OK,
            &openapi::document(&gate.base_url(), api::ROUTES),
        );
    }
    let supervisor = match op.method {
        OpMethod::Post => match api::staged_by(&gate, &parts.headers).await {
            Ok(s) => s,
            Err(e) => return e.into_response(),
        },
        _ => None,
    };
    let (checked, body, headers) = if op.method == OpMethod::Post {
        let checked = match request::check_query(op, parts.uri.query())
            .and_then(|()| request::read(op, &body))
        {
            Ok(c) => c,
            Err(e) => return error::read_error(e).into_response(),
        };
        let bytes = Bytes::from(checked.bytes());
        let mut headers = post_headers(&parts.headers);
        if let Some(v) = parts.headers.get("x-api-key") {
            headers.insert("x-api-key", v.clone());
        }
        (Some(checked), bytes, headers)
    } else {
        // A read goes on with the caller's own headers, moved rather than copied; a supervisor
        // token a console sent never leaves the gateway.
        let mut headers = parts.headers;
        headers.remove(api::STAGED_BY);
        (None, Bytes::new(), headers)
    };
    let key = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(|k| Secret::new(k.to_string()));
    let incoming = Incoming {
        op,
        method: if op.method == OpMethod::Post {
            reqwest::Method::POST
        } else {
            reqwest::Method::GET
        },
        path_and_query: parts
            .uri
            .path_and_query()
            .map(|p| p.as_str().to_string())
            .unwrap_or_else(|| parts.uri.path().to_string()),
        headers,
        body,
        agent: key.map(AgentKey::new),
        checked,
        supervisor,
    };
    let rest_agent = incoming
        .agent
        .as_ref()
        .filter(|_| parts.extensions.get::<mcp::ViaMcp>().is_none())
        .map(|a| a.hash.clone());
    let fingerprint = incoming.agent.as_ref().map(|a| a.fingerprint().to_string());
    let via_mcp = parts.extensions.get::<mcp::ViaMcp>().is_some();
    let result = match &incoming.agent {
        Some(agent) if agent.secret.expose().starts_with(TOKEN_PREFIX) => {
            // A token that is not ours is refused here rather than sent to the upstream: it is
            // some gateway's secret, never an upstream key.
            match api::supervisor(&gate, &incoming.headers).await {
                Ok(_) => supervisor_read(&gate, incoming).await,
                Err(e) => Err(e),
            }
        }
        _ => route(&gate, incoming).await,
    };
    let resp = match result {
        Ok(answer) => answer.into_response(),
        Err(e) => e.into_response(),
    };
    // One line for every mutation an agent sent, whatever became of it (staged, executed,
    // forwarded as an immediate trade, an order or a cancel, refused), in the request's span.
    // An MCP confirm waiting for the human asks again every 250 ms: its "not yet" answers are
    // not lines of their own.
    let waiting = via_mcp
        && matches!(
            op.name,
            "confirm_trade" | "close_position" | "execute_mcp_tool"
        )
        && !resp.status().is_success();
    if op.tier == crate::api::catalog::Tier::Mutate && !waiting {
        tracing::info!(
            op = op.name,
            status = resp.status().as_u16(),
            agent = fingerprint.as_deref().unwrap_or(""),
            "mutation answered"
        );
    }
    // Only a key the upstream accepted is recorded: a stranger's garbage keys cost no memory.
    if let Some(hash) = rest_agent
        && gate.knows(&hash)
    {
        gate.connections.rest(&hash, gate.now());
    }
    resp
}

/// The supervisor's console reads the account with the gateway's own key.
async fn supervisor_read(gate: &Arc<Gate>, incoming: Incoming) -> Result<Answer, GateError> {
    if incoming.op.method != OpMethod::Get {
        return Err(GateError::new(
            Kind::Forbidden,
            "supervisor_token_read_only",
            "a supervisor token reads the account through the gateway; changes go through the inbox (/gate/v1)",
        ));
    }
    let Some(key) = gate.upstream.key.clone() else {
        return Err(GateError::new(
            Kind::Unavailable,
            "upstream_key_not_configured",
            "this gateway has no key of its own for the account; start it with --upstream-key-env VAR",
        ));
    };
    gate.upstream.forward(&incoming, &key).await
}

async fn route(gate: &Arc<Gate>, incoming: Incoming) -> Result<Answer, GateError> {
    let name = incoming.op.name;
    match (name, incoming.parsed()) {
        ("confirm_trade", _) => inbox::confirm(gate, &incoming).await,
        ("close_position", request::Parsed::Close(c)) if c.proposal_id.is_some() => {
            inbox::confirm(gate, &incoming).await
        }
        ("propose_trade", _) => inbox::stage(gate, &incoming, store::Exec::Confirm).await,
        ("close_position", _) => inbox::stage(gate, &incoming, store::Exec::Close).await,
        ("execute_mcp_tool", _) => inbox::tool(gate, &incoming).await,
        _ if policy::IMMEDIATE.contains(&name) => {
            let (agent, trade) = immediate(gate, &incoming).await?;
            let resp = crate::gateway::flow::forward::pass_through(gate, &incoming).await?;
            if matches!(&resp, Answer::Streamed(r) if r.status().is_success()) && !trade.reduces {
                guard::count_execution(gate, &agent, gate.now(), trade.notional).await?;
            }
            Ok(resp)
        }
        _ => crate::gateway::flow::forward::pass_through(gate, &incoming).await,
    }
}

/// Refuses an immediate trade unless the config lets this agent trade without staging, neither
/// its suspension nor the kill switch stops it, and the trade that will execute keeps to every
/// rule. Returns the agent and that trade.
async fn immediate(
    gate: &Arc<Gate>,
    incoming: &Incoming,
) -> Result<(String, trade::Trade), GateError> {
    let refuse = || {
        GateError::new(
            Kind::Forbidden,
            "staging_required_by_supervisor",
            format!(
                "{} trades without a human's approval, and this gateway's supervisor requires one: \
                 stage it with POST /api/delegated/propose and the supervisor approves it in agentdesk",
                incoming.op.name
            ),
        )
    };
    let Some(agent) = &incoming.agent else {
        return Err(refuse());
    };
    if !guard::allows_immediate(gate, &agent.hash).await? {
        return Err(refuse());
    }
    let trade = guard::immediate_trade(gate, agent, incoming).await?;
    if let Some(e) = suspend::refusal(gate, &agent.hash, Some(&trade)).await? {
        return Err(e);
    }
    guard::judge(gate, agent, &trade).await?;
    Ok((agent.hash.clone(), trade))
}
