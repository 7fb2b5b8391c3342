//! Pass-through reads: an agent's GET of a catalog operation, with its key and no body, which
//! the gateway forwards as it came (reads are never parsed or judged). They are most of what
//! agents send, so they take a short way: routed by one lookup in the catalog's paths, limited
//! by the same buckets and in-flight permits as every other request, and sent upstream with the
//! caller's own headers ([`Reads::forward`]) on a keep-alive connection of hyper-util's pool; what
//! of the answer arrived with its head goes back whole, with its length, and the rest is streamed
//! as it arrives. Everything else (a body, a supervisor token, no
//! key, another path or method) goes to the full router, whose edge ([`crate::edge`]) does what
//! this does for it.
//!
//! Both ends are hyper's: the request is read by hyper's server (through [`Front`], which every
//! connection is served by) and sent on by hyper's client (hyper-util's pool), so no HTTP is
//! parsed or framed by this crate's own code.
//!
//! What this path keeps of the edge: the request id (the caller's when sane, else a new one; sent
//! upstream and answered), the request and latency metrics by operation and status, the cap on
//! requests in flight, and the gateway's header. What it leaves out: a tracing span per request.
//! A forwarded read logs nothing when it goes well; when the upstream fails, the line names the
//! request id, the operation and the path.

use super::super::gate::{AgentKey, Gate, TOKEN_PREFIX};
use super::super::model::error::{GateError, Kind};
use super::super::upstream::{not_forwarded, succeeded};
use super::answer::GATEWAY_HEADER;
use super::limit::{self, Limits};
use crate::api::catalog::{Method as OpMethod, OPERATIONS, Operation};
use crate::edge::{self, REQUEST_ID, Refusal};
use crate::secret::Secret;
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderValue, Method, Request, Uri};
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures::StreamExt as _;
use futures::future::{BoxFuture, Either};
use http_body_util::{BodyExt as _, Empty, StreamBody};
use hyper::body::{Body as _, Frame, Incoming};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::sync::Semaphore;

/// An unknown agent's answer longer than this is not a refusal of its key.
const JUDGED: usize = 64 * 1024;
/// A known agent's answer is read ahead this far (what has arrived with the head), so that a
/// small answer goes back whole; past it the rest is streamed.
const READ_AHEAD: usize = 64 * 1024;
/// Idle upstream connections kept at most.
const MAX_IDLE: usize = 256;
/// An idle upstream connection is closed after this long, before the upstream closes it (the
/// sandbox closes idle ones after its request timeout, 10 s by default).
const IDLE_FOR: std::time::Duration = std::time::Duration::from_secs(8);

/// What every connection's [`Front`] shares.
pub struct Reads {
    gate: Arc<Gate>,
    /// The catalog's GET operations by path template, matched as the router matches them.
    routes: matchit::Router<&'static Operation>,
    limits: Option<Arc<Limits>>,
    in_flight: Arc<Semaphore>,
    /// The share of requests in flight each address may hold.
    by_address: Arc<crate::edge::ByAddress>,
    /// hyper's client, with its pool of keep-alive connections to the upstream.
    client: Client<HttpsConnector<HttpConnector>, Empty<Bytes>>,
    /// The gateway's runtime, where the work that outlives a read runs.
    runtime: tokio::runtime::Handle,
    /// The upstream's scheme, authority and base path (no trailing slash): what a read's path and
    /// query are appended to.
    base: String,
    /// The upstream's authority, the `Host` of every read sent to it.
    host: HeaderValue,
    refuse: fn(Refusal) -> Response,
}

/// Why the short way for reads could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ReadsError {
    #[error("catalog path {path}: {source}")]
    Route {
        path: &'static str,
        source: matchit::InsertError,
    },
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    #[error("upstream {base}: {source}")]
    Upstream {
        base: String,
        source: axum::http::uri::InvalidUri,
    },
    #[error("upstream {0} names no host")]
    NoHost(String),
    #[error(transparent)]
    Host(#[from] axum::http::header::InvalidHeaderValue),
    #[error("the gateway is not started on a runtime: {0}")]
    Runtime(#[source] tokio::runtime::TryCurrentError),
}

/// Why a read could not be put to the upstream as a request.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("the read's path: {0}")]
    Path(#[source] axum::http::uri::InvalidUri),
    #[error(transparent)]
    Header(#[from] axum::http::header::InvalidHeaderValue),
}

impl Reads {
    pub fn new(
        gate: Arc<Gate>,
        limits: Option<Arc<Limits>>,
        in_flight: Arc<Semaphore>,
        by_address: Arc<crate::edge::ByAddress>,
        refuse: fn(Refusal) -> Response,
    ) -> Result<Reads, ReadsError> {
        let mut routes = matchit::Router::new();
        for op in OPERATIONS.iter().filter(|op| op.method == OpMethod::Get) {
            // The service's own description is the gateway's to answer, not the upstream's.
            if op.name != "get_openapi" {
                routes
                    .insert(op.path, op)
                    .map_err(|source| ReadsError::Route {
                        path: op.path,
                        source,
                    })?;
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
        let upstream: Uri =
            gate.upstream
                .base()
                .parse()
                .map_err(|source| ReadsError::Upstream {
                    base: gate.upstream.base().to_string(),
                    source,
                })?;
        let authority = upstream
            .authority()
            .ok_or_else(|| ReadsError::NoHost(gate.upstream.base().to_string()))?;
        let host = HeaderValue::from_str(authority.as_str())?;
        let base = format!(
            "{}://{}{}",
            upstream.scheme_str().unwrap_or("http"),
            authority,
            upstream.path().trim_end_matches('/')
        );
        let client = Client::builder(TokioExecutor::new())
            // Under the sandbox's 10 s: an idle connection is closed here before the upstream
            // closes it under a request.
            .pool_idle_timeout(IDLE_FOR)
            .pool_timer(TokioTimer::new())
            .pool_max_idle_per_host(MAX_IDLE)
            .build(connector);
        Ok(Reads {
            gate,
            routes,
            limits,
            in_flight,
            by_address,
            client,
            runtime: tokio::runtime::Handle::try_current().map_err(ReadsError::Runtime)?,
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
        self.route(req.uri().path(), agent_key(req.headers())?)
    }

    /// The read at `path` for an agent's `key`, as the router would route it; `None` for a
    /// supervisor's token, which the router's supervisor API reads.
    pub(super) fn route(&self, path: &str, key: &str) -> Option<&'static Operation> {
        // A path that is not plain is the router's to refuse.
        if key.starts_with(TOKEN_PREFIX) || !super::super::model::request::plain_path(path) {
            return None;
        }
        self.routes.at(path).ok().map(|m| *m.value)
    }
}

/// The trimmed `x-api-key`, as the full router reads it.
fn agent_key(headers: &HeaderMap) -> Option<&str> {
    agent_key_of(headers.get("x-api-key")?.as_bytes())
}

/// A key's value, trimmed, if it is one: text a header can hold (as `HeaderValue::to_str` reads
/// it), not empty.
pub(super) fn agent_key_of(value: &[u8]) -> Option<&str> {
    if !value.iter().all(|&b| b == b'\t' || (32..127).contains(&b)) {
        return None;
    }
    let key = std::str::from_utf8(value).ok()?.trim();
    (!key.is_empty()).then_some(key)
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
    let (axum::http::request::Parts { uri, headers, .. }, _) = req.into_parts();
    let id = headers
        .get(REQUEST_ID)
        .filter(|v| edge::sane(v))
        .cloned()
        .unwrap_or_else(edge::fresh_id);
    // `classify` let it through for its key; should that ever differ, it is refused, not sent.
    let value = headers.get("x-api-key").cloned();
    let mut resp = match value.as_ref().and_then(|v| agent_key_of(v.as_bytes())) {
        Some(key) => {
            let target = uri
                .path_and_query()
                .map_or_else(|| uri.path(), |p| p.as_str());
            let call = Call {
                start,
                op,
                peer,
                key,
                id: &id,
                target,
            };
            reads.forward(call, headers).await
        }
        None => unauthorized(),
    };
    edge::record("gateway", op.name, resp.status(), start.elapsed());
    let headers = resp.headers_mut();
    headers.insert(REQUEST_ID, id);
    headers.insert(GATEWAY_HEADER, HeaderValue::from_static("1"));
    Ok(resp)
}

fn unauthorized() -> Response {
    GateError::new(Kind::Unauthorized, "unauthorized", "no x-api-key header").into_response()
}

/// A read: an agent's GET of a catalog operation.
pub(super) struct Call<'a> {
    /// When its head was read: the start of its latency and of the wait for its upstream.
    pub start: Instant,
    pub op: &'static Operation,
    pub peer: SocketAddr,
    /// The trimmed `x-api-key`.
    pub key: &'a str,
    /// The request's id, sane ([`edge::sane`]).
    pub id: &'a HeaderValue,
    /// The path and query, as they came.
    pub target: &'a str,
}

impl Reads {
    /// Checks the read's limits and credential, sends it upstream with the caller's headers
    /// (those of its hop and its credentials are replaced) and keeps what is remembered of its
    /// agent; the upstream's answer goes back as it arrives.
    async fn forward(&self, call: Call<'_>, headers: HeaderMap) -> Response {
        let gate = &self.gate;
        let op = call.op;
        let id = call.id.as_bytes();
        let Some(in_flight) = self.in_flight.clone().try_acquire_owned().ok() else {
            edge::shed("gateway");
            return Refusal::Overloaded.answer(self.refuse);
        };
        let Some(share) = self.by_address.take(call.peer.ip()) else {
            edge::shed("gateway");
            return Refusal::Overloaded.answer(self.refuse);
        };
        let digest = limit::digest(call.key);
        if let Some(limits) = &self.limits
            && let Some(refused) = limits.refused(Some(call.peer.ip()), Some(digest))
        {
            return refused;
        }
        // On the stack: the agent's name is looked up on every read, and kept only when new.
        let mut hex_digest = [0u8; 64];
        hex::encode_to_slice(digest, &mut hex_digest).expect("64 hex digits fit");
        let hash = std::str::from_utf8(&hex_digest).expect("hex is ascii");
        let known = gate.knows(hash);
        // The key is kept only for an agent the gateway does not know yet, and only if accepted.
        let new_key = (!known).then(|| Secret::new(call.key.to_string()));
        let req = match self.request(&call, headers) {
            Ok(req) => req,
            Err(e) => return self.failed(op, id, call.target, &e.to_string()),
        };
        // Deadlines from the read's start.
        let timeout = gate.settings.timeout();
        let deadline = tokio::time::Instant::from_std(call.start) + timeout;
        let sent = tokio::time::timeout_at(deadline, self.client.request(req)).await;
        drop((in_flight, share));
        let answer = match sent {
            Ok(Ok(answer)) => {
                // The wall clock, as readiness reads it (the gateway's own clock may be a test's).
                gate.upstream.saw();
                edge::latency(upstream_latency(), call.start.elapsed().as_secs_f64());
                answer
            }
            Ok(Err(e)) => return self.failed(op, id, call.target, &e.to_string()),
            Err(_) => return timed_out(gate, op, id, call.target),
        };
        let (mut parts, mut body) = answer.into_parts();
        let status = parts.status.as_u16();
        // What has arrived with the head is read here for every caller, so that an answer that
        // came whole goes back whole, with its length (a streamed one goes back chunked). A key
        // not known yet is known once the upstream accepts it, and the real deployment refuses
        // one with a 200 that says `success: false`: an unknown agent's answer is read ahead
        // further (a refusal is short) and judged whole, as the gateway's other calls judge
        // theirs.
        let limit = if known { READ_AHEAD } else { JUDGED };
        let (held, rest) = match tokio::time::timeout(timeout, read_ahead(&mut body, limit)).await {
            Ok(Ok((held, true))) => (held, None),
            Ok(Ok((held, false))) => (held, Some(body)),
            Ok(Err(e)) => return self.failed(op, id, call.target, &e.to_string()),
            // The head came and the body stalls: the upstream failed within its answer.
            Err(_) => {
                let why = "timed out within the answer";
                return self.failed(op, id, call.target, why);
            }
        };
        let accepted = if known || rest.is_some() {
            (200..300).contains(&status)
        } else {
            succeeded(status, &held)
        };
        let now = gate.now();
        if accepted
            && !gate.touch(hash, now)
            && let Some(secret) = new_key
        {
            // On the gateway's runtime: remembering an agent writes its row and starts the runs
            // of its approved items, which outlive the read.
            let gate = gate.clone();
            let remembered = self.runtime.spawn(async move {
                crate::gateway::flow::forward::remember(&gate, &AgentKey::new(secret)).await
            });
            if let Err(e) = remembered.await {
                tracing::warn!(operation = op.name, "remembering the agent failed: {e}");
            }
        }
        if accepted || known {
            gate.connections.rest(hash, now);
        }
        // The upstream's head is answered as it came, less what belongs to its hop.
        strip(&mut parts.headers, &[]);
        parts.extensions.clear();
        Response::from_parts(parts, streamed(held, rest, timeout))
    }

    /// The answer to a read whose upstream failed.
    pub(super) fn failed(&self, op: &Operation, id: &[u8], target: &str, e: &str) -> Response {
        let path = target.split('?').next().unwrap_or_default();
        unreachable_upstream(&self.gate, op, id, path, e)
    }

    /// The request the upstream is sent: the caller's headers but one credential (the key this
    /// gateway identified), the request's id, and nothing that belongs to the caller's hop.
    fn request(
        &self,
        call: &Call<'_>,
        mut headers: HeaderMap,
    ) -> Result<Request<Empty<Bytes>>, RequestError> {
        let uri: Uri = format!("{}{}", self.base, call.target)
            .parse()
            .map_err(RequestError::Path)?;
        // The caller's own headers go on as they came, in place, less those of its hop and its
        // credentials and request id, which are the gateway's to set.
        strip(
            &mut headers,
            &["authorization", "x-api-key", "x-request-id"],
        );
        headers.insert(axum::http::header::HOST, self.host.clone());
        headers.insert("x-api-key", HeaderValue::from_str(call.key)?);
        headers.insert(REQUEST_ID, call.id.clone());
        // What the gateway's other client (reqwest) sends when the caller said nothing.
        if !headers.contains_key(axum::http::header::USER_AGENT) {
            headers.insert(
                axum::http::header::USER_AGENT,
                HeaderValue::from_static(concat!("agentdesk-gateway/", env!("CARGO_PKG_VERSION"))),
            );
        }
        if !headers.contains_key(axum::http::header::ACCEPT) {
            headers.insert(axum::http::header::ACCEPT, HeaderValue::from_static("*/*"));
        }
        let mut req = Request::new(Empty::new());
        *req.uri_mut() = uri;
        *req.headers_mut() = headers;
        Ok(req)
    }
}

/// Removes, in place, the headers that are not forwarded ([`not_forwarded`]) and those named in
/// `also`. Most heads hold one or two of them: each is found by a scan of the names, and
/// removed by its name (every value of it).
fn strip(headers: &mut HeaderMap, also: &[&str]) {
    let doomed = |name: &axum::http::HeaderName| {
        let n = name.as_str().as_bytes();
        not_forwarded(n) || also.iter().any(|h| n.eq_ignore_ascii_case(h.as_bytes()))
    };
    while let Some(name) = headers.keys().find(|n| doomed(n)).cloned() {
        headers.remove(&name);
    }
}

/// An answer's first part, and what has arrived with it, up to `limit` bytes: what was read, and
/// whether the body ended within it. A streamed answer is not held back: only what is there
/// already is read past the first part.
async fn read_ahead(body: &mut Incoming, limit: usize) -> Result<(Bytes, bool), hyper::Error> {
    use futures::FutureExt as _;
    let mut held = Held::default();
    let mut first = true;
    while held.len() < limit {
        let next = body.frame();
        let frame = if first {
            first = false;
            next.await
        } else {
            match next.now_or_never() {
                Some(frame) => frame,
                None => break,
            }
        };
        match frame {
            None => return Ok((held.freeze(), true)),
            Some(frame) => {
                if let Ok(data) = frame?.into_data() {
                    held.push(data);
                }
            }
        }
    }
    Ok((held.freeze(), false))
}

/// What was read ahead: most answers arrive as one frame, which is kept as it came; a second
/// one is copied after it.
#[derive(Default)]
enum Held {
    #[default]
    Nothing,
    One(Bytes),
    More(BytesMut),
}

impl Held {
    fn len(&self) -> usize {
        match self {
            Held::Nothing => 0,
            Held::One(b) => b.len(),
            Held::More(b) => b.len(),
        }
    }

    fn push(&mut self, data: Bytes) {
        *self = match std::mem::take(self) {
            Held::Nothing => Held::One(data),
            Held::One(first) => {
                let mut more = BytesMut::with_capacity(first.len() + data.len());
                more.extend_from_slice(&first);
                more.extend_from_slice(&data);
                Held::More(more)
            }
            Held::More(mut more) => {
                more.extend_from_slice(&data);
                Held::More(more)
            }
        };
    }

    fn freeze(self) -> Bytes {
        match self {
            Held::Nothing => Bytes::new(),
            Held::One(b) => b,
            Held::More(b) => b.freeze(),
        }
    }
}

/// The answer's body as it goes on: what was read ahead, then the rest as it arrives, each part
/// within the gateway's timeout (a stall ends the answer rather than holding the agent's
/// connection for as long as the upstream keeps its own).
fn streamed(held: Bytes, rest: Option<Incoming>, timeout: std::time::Duration) -> Body {
    let Some(rest) = rest else {
        return Body::from(held);
    };
    let first = (!held.is_empty()).then(|| Ok::<_, axum::BoxError>(Frame::data(held)));
    let rest = futures::stream::unfold(Some(rest), move |rest| async move {
        let mut body = rest?;
        match tokio::time::timeout(timeout, body.frame()).await {
            Ok(Some(Ok(frame))) => Some((Ok(frame), Some(body))),
            Ok(Some(Err(e))) => Some((Err(axum::BoxError::from(e)), None)),
            Ok(None) => None,
            Err(_) => Some((
                Err(axum::BoxError::from(
                    "the upstream stalled within its answer",
                )),
                None,
            )),
        }
    });
    Body::new(StreamBody::new(futures::stream::iter(first).chain(rest)))
}

fn upstream_latency() -> &'static metrics::Histogram {
    static LATENCY: std::sync::OnceLock<metrics::Histogram> = std::sync::OnceLock::new();
    LATENCY.get_or_init(
        || metrics::histogram!("agentdesk_gateway_upstream_duration_seconds", "method" => "GET"),
    )
}

fn unreachable_upstream(gate: &Gate, op: &Operation, id: &[u8], path: &str, e: &str) -> Response {
    metrics::counter!("agentdesk_gateway_upstream_errors_total", "kind" => "unreachable")
        .increment(1);
    let reason = e.to_string();
    tracing::warn!(
        request_id = std::str::from_utf8(id).unwrap_or(""),
        operation = op.name,
        path,
        "the upstream is unreachable: {reason}"
    );
    gate.upstream.unreachable(&reason).into_response()
}

fn timed_out(gate: &Gate, op: &Operation, id: &[u8], target: &str) -> Response {
    let path = target.split('?').next().unwrap_or_default();
    metrics::counter!("agentdesk_gateway_upstream_errors_total", "kind" => "timeout").increment(1);
    tracing::warn!(
        request_id = std::str::from_utf8(id).unwrap_or(""),
        operation = op.name,
        path,
        "the upstream did not answer within {} s",
        gate.settings.timeout_secs
    );
    gate.upstream.timed_out().into_response()
}
