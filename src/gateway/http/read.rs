//! Pass-through reads: an agent's GET of a catalog operation, with its key and no body, which
//! the gateway forwards as it came (reads are never parsed or judged). They are most of what
//! agents send, so they take a short way: routed by one lookup in the catalog's paths, limited
//! by the same buckets and in-flight permits as every other request, and sent upstream on a
//! plain HTTP/1 client whose answer is streamed back as the upstream framed it. Everything else
//! (a body, a supervisor token, no key, another path or method) goes to the full router, whose
//! edge ([`crate::edge`]) does what this does for it.
//!
//! What this path keeps of the edge: the request id (the caller's when sane, else a new one; sent
//! upstream and answered), the request and latency metrics by operation and status, the cap on
//! requests in flight, and the gateway's header. What it leaves out: a tracing span per request.
//! A forwarded read logs nothing when it goes well; when the upstream fails, the line names the
//! request id, the operation and the path.

use super::super::core::{AgentKey, Gate, TOKEN_PREFIX};
use super::super::error::{GateError, Kind};
use super::super::upstream::HOP_BY_HOP;
use super::GATEWAY_HEADER;
use super::limit::{self, Limits};
use super::pool::{Failed, Pool};
use crate::api::catalog::{Method as OpMethod, OPERATIONS, Operation};
use crate::edge::{self, REQUEST_ID, Refusal};
use crate::secret::Secret;
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri, header};
use axum::response::{IntoResponse, Response};
use futures::future::{BoxFuture, Either};
use http_body_util::Empty;
use hyper::body::{Body as _, Incoming};
use hyper_util::client::legacy::connect::HttpConnector;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::sync::Semaphore;

/// What every connection's [`Front`] shares.
pub struct Reads {
    gate: Arc<Gate>,
    /// The catalog's GET operations by path template, matched as the router matches them.
    routes: matchit::Router<&'static Operation>,
    limits: Option<Arc<Limits>>,
    in_flight: Arc<Semaphore>,
    pool: Arc<Pool>,
    /// The upstream's base path, with no trailing slash (often empty).
    base: String,
    /// The upstream's authority, the `Host` of every read sent to it.
    host: HeaderValue,
    refuse: fn(Refusal) -> Response,
}

impl Reads {
    pub fn new(
        gate: Arc<Gate>,
        limits: Option<Arc<Limits>>,
        in_flight: Arc<Semaphore>,
        refuse: fn(Refusal) -> Response,
    ) -> Result<Reads, String> {
        let mut routes = matchit::Router::new();
        for op in OPERATIONS.iter().filter(|op| op.method == OpMethod::Get) {
            // The service's own description is the gateway's to answer, not the upstream's.
            if op.name != "get_openapi" {
                routes
                    .insert(op.path, op)
                    .map_err(|e| format!("catalog path {}: {e}", op.path))?;
            }
        }
        let mut http = HttpConnector::new();
        http.set_connect_timeout(Some(gate.settings.connect_timeout()));
        http.set_nodelay(true);
        http.enforce_http(false);
        let tls = crate::tls::client_config(&[])?;
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let upstream: Uri = gate
            .upstream
            .parse()
            .map_err(|e| format!("upstream {}: {e}", gate.upstream))?;
        let authority = upstream
            .authority()
            .ok_or_else(|| format!("upstream {} names no host", gate.upstream))?;
        let host = HeaderValue::from_str(authority.as_str()).map_err(|e| e.to_string())?;
        let target = Uri::builder()
            .scheme(upstream.scheme_str().unwrap_or("http"))
            .authority(authority.clone())
            .path_and_query("/")
            .build()
            .map_err(|e| e.to_string())?;
        let base = upstream.path().trim_end_matches('/').to_string();
        Ok(Reads {
            gate,
            routes,
            limits,
            in_flight,
            pool: Arc::new(Pool::new(connector, target)),
            base,
            host,
            refuse,
        })
    }

    /// The operation of a request this path serves: a GET of a catalog read with an agent's key
    /// and no body. `None` sends it to the full router.
    fn classify(&self, req: &Request<Incoming>) -> Option<&'static Operation> {
        if req.method() != Method::GET || !req.body().is_end_stream() {
            return None;
        }
        let key = agent_key(req.headers())?;
        if key.starts_with(TOKEN_PREFIX) {
            return None;
        }
        self.routes.at(req.uri().path()).ok().map(|m| *m.value)
    }
}

/// The trimmed `x-api-key`, as the full router reads it.
fn agent_key(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|k| !k.is_empty())
}

/// One connection's service: its reads take the short way, the rest the full router.
#[derive(Clone)]
pub struct Front {
    reads: Arc<Reads>,
    full: Router,
    peer: SocketAddr,
}

impl Front {
    pub fn new(reads: Arc<Reads>, full: Router, peer: SocketAddr) -> Front {
        Front { reads, full, peer }
    }
}

impl tower::Service<Request<Incoming>> for Front {
    type Response = Response;
    type Error = Infallible;
    type Future = Either<
        BoxFuture<'static, Result<Response, Infallible>>,
        <Router as tower::Service<Request<Incoming>>>::Future,
    >;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<Incoming>) -> Self::Future {
        match self.reads.classify(&req) {
            Some(op) => Either::Left(Box::pin(read(self.reads.clone(), op, self.peer, req))),
            None => {
                req.extensions_mut().insert(ConnectInfo(self.peer));
                Either::Right(tower::Service::call(&mut self.full, req))
            }
        }
    }
}

async fn read(
    reads: Arc<Reads>,
    op: &'static Operation,
    peer: SocketAddr,
    req: Request<Incoming>,
) -> Result<Response, Infallible> {
    let start = Instant::now();
    let id = req
        .headers()
        .get(REQUEST_ID)
        .filter(|v| edge::sane(v))
        .cloned()
        .unwrap_or_else(edge::fresh_id);
    let mut resp = match reads.in_flight.clone().try_acquire_owned() {
        Ok(_permit) => forward(&reads, op, peer, &id, req).await,
        Err(_) => {
            edge::shed("gateway");
            (reads.refuse)(Refusal::Overloaded)
        }
    };
    edge::record("gateway", op.name, resp.status(), start.elapsed());
    let headers = resp.headers_mut();
    headers.insert(REQUEST_ID, id);
    headers.insert(GATEWAY_HEADER, HeaderValue::from_static("1"));
    Ok(resp)
}

async fn forward(
    reads: &Reads,
    op: &'static Operation,
    peer: SocketAddr,
    id: &HeaderValue,
    req: Request<Incoming>,
) -> Response {
    let gate = &reads.gate;
    let (parts, _) = req.into_parts();
    // `classify` let it through for its key; should that ever differ, it is refused, not sent.
    let Some(key) = agent_key(&parts.headers) else {
        return GateError::new(Kind::Unauthorized, "unauthorized", "no x-api-key header")
            .into_response();
    };
    let digest = limit::digest(key);
    if let Some(limits) = &reads.limits
        && let Err(e) = limits.check(Some(peer.ip()), Some(digest))
    {
        return e.into_response();
    }
    let mut hash = [0u8; 64];
    hex::encode_to_slice(digest, &mut hash).expect("64 hex digits fit");
    let hash = std::str::from_utf8(&hash).expect("hex is ascii");
    let Ok(mut key_value) = HeaderValue::from_str(key) else {
        return GateError::new(
            Kind::Unauthorized,
            "unauthorized",
            "the x-api-key header holds characters a key cannot have",
        )
        .into_response();
    };
    key_value.set_sensitive(true);
    let known = gate.knows(hash);
    // The key is kept only for an agent the gateway does not know yet, and only if accepted.
    let new_key = (!known).then(|| Secret::new(key.to_string()));
    let mut headers = upstream_headers(parts.headers, key_value, id);
    headers.insert(header::HOST, reads.host.clone());
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path(), |p| p.as_str());
    let mut uri = String::with_capacity(reads.base.len() + path.len());
    uri.push_str(&reads.base);
    uri.push_str(path);
    let Ok(uri) = Uri::try_from(uri) else {
        return GateError::new(
            Kind::Invalid,
            "invalid_path",
            "the request's path cannot be sent to the upstream",
        )
        .into_response();
    };
    let mut out = Request::new(Empty::new());
    *out.uri_mut() = uri;
    *out.headers_mut() = headers;
    let sent_at = Instant::now();
    let sent = tokio::time::timeout(gate.settings.timeout(), reads.pool.get(out)).await;
    let resp = match sent {
        Ok(Ok(resp)) => {
            gate.upstream_seen.store(
                chrono::Utc::now().timestamp_millis(),
                std::sync::atomic::Ordering::Relaxed,
            );
            upstream_latency().record(sent_at.elapsed().as_secs_f64());
            resp
        }
        Ok(Err(e)) => return unreachable_upstream(gate, op, id, &parts.uri, &e),
        Err(_) => return timed_out(gate, op, id, &parts.uri),
    };
    let accepted = resp.status().is_success();
    let now = gate.now();
    if accepted
        && !gate.touch(hash, now)
        && let Some(secret) = new_key
    {
        gate.remember(&AgentKey::new(secret)).await;
    }
    if accepted || known {
        gate.connections.rest(hash, now);
    }
    let (mut head, body) = resp.into_parts();
    strip_hop_by_hop(&mut head.headers);
    Response::from_parts(head, Body::new(body))
}

/// The caller's headers as they go upstream: one credential (the key this gateway identified),
/// the request's id, and nothing that belongs to the caller's hop.
fn upstream_headers(mut headers: HeaderMap, key: HeaderValue, id: &HeaderValue) -> HeaderMap {
    for name in HOP_BY_HOP
        .iter()
        .chain(&["host", "content-length", header::AUTHORIZATION.as_str()])
    {
        headers.remove(*name);
    }
    headers.insert(HeaderName::from_static("x-api-key"), key);
    headers.insert(REQUEST_ID, id.clone());
    // What the gateway's other client (reqwest) sends when the caller said nothing.
    if !headers.contains_key(header::USER_AGENT) {
        headers.insert(
            header::USER_AGENT,
            HeaderValue::from_static(concat!("agentdesk-gateway/", env!("CARGO_PKG_VERSION"))),
        );
    }
    if !headers.contains_key(header::ACCEPT) {
        headers.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
    }
    headers
}

/// An answer's headers as they go back. (`Content-Length` is kept: the body is passed on
/// unchanged, and hyper frames it by that header.)
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
}

fn upstream_latency() -> &'static metrics::Histogram {
    static LATENCY: std::sync::OnceLock<metrics::Histogram> = std::sync::OnceLock::new();
    LATENCY.get_or_init(
        || metrics::histogram!("agentdesk_gateway_upstream_duration_seconds", "method" => "GET"),
    )
}

fn unreachable_upstream(
    gate: &Gate,
    op: &Operation,
    id: &HeaderValue,
    uri: &Uri,
    e: &Failed,
) -> Response {
    metrics::counter!("agentdesk_gateway_upstream_errors_total", "kind" => "unreachable")
        .increment(1);
    let reason = e.to_string();
    tracing::warn!(
        request_id = id.to_str().unwrap_or(""),
        operation = op.name,
        path = uri.path(),
        "the upstream is unreachable: {reason}"
    );
    gate.upstream_unreachable(&reason).into_response()
}

fn timed_out(gate: &Gate, op: &Operation, id: &HeaderValue, uri: &Uri) -> Response {
    metrics::counter!("agentdesk_gateway_upstream_errors_total", "kind" => "timeout").increment(1);
    tracing::warn!(
        request_id = id.to_str().unwrap_or(""),
        operation = op.name,
        path = uri.path(),
        "the upstream did not answer within {} s",
        gate.settings.timeout_secs
    );
    gate.upstream_timed_out().into_response()
}
