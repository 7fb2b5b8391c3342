//! Pass-through reads: an agent's GET of a catalog operation, with its key and no body, which
//! the gateway forwards as it came (reads are never parsed or judged). They are most of what
//! agents send, so they take a short way: routed by one lookup in the catalog's paths, limited
//! by the same buckets and in-flight permits as every other request, and sent upstream as a head
//! written from what was read ([`Reads::forward`]) on a keep-alive connection of [`super::pool`],
//! whose answer is streamed back as it arrives. Everything else (a body, a supervisor token, no
//! key, another path or method) goes to the full router, whose edge ([`crate::edge`]) does what
//! this does for it.
//!
//! Two fronts read these requests: the gateway's own HTTP/1.1 front ([`super::lane`]), which
//! serves a connection while its requests are such reads, and hyper's ([`Front`]), which serves a
//! connection from its first other request on, and every HTTP/2 connection.
//!
//! What this path keeps of the edge: the request id (the caller's when sane, else a new one; sent
//! upstream and answered), the request and latency metrics by operation and status, the cap on
//! requests in flight, and the gateway's header. What it leaves out: a tracing span per request.
//! A forwarded read logs nothing when it goes well; when the upstream fails, the line names the
//! request id, the operation and the path.

use super::super::core::{AgentKey, Gate, TOKEN_PREFIX};
use super::super::error::{GateError, Kind};
use super::super::upstream::{not_forwarded, succeeded};
use super::GATEWAY_HEADER;
use super::limit::{self, Limits};
use super::pool::{Answer, Failed, Pool};
use crate::api::catalog::{Method as OpMethod, OPERATIONS, Operation};
use crate::edge::{self, REQUEST_ID, Refusal};
use crate::secret::Secret;
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures::future::{BoxFuture, Either};
use hyper::body::{Body as _, Incoming};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::sync::Semaphore;

/// An unknown agent's answer longer than this is not a refusal of its key.
const JUDGED: usize = 64 * 1024;

/// What every connection's [`Front`] shares.
pub struct Reads {
    gate: Arc<Gate>,
    /// The catalog's GET operations by path template, matched as the router matches them.
    routes: matchit::Router<&'static Operation>,
    limits: Option<Arc<Limits>>,
    in_flight: Arc<Semaphore>,
    /// The upstream connections of reads served by hyper ([`Front`]), on the gateway's runtime.
    pool: Arc<Pool>,
    /// The gateway's runtime, where the work that outlives a read runs.
    runtime: tokio::runtime::Handle,
    /// The upstream's scheme and authority, and how to connect to it, for another pool.
    connector: HttpsConnector<HttpConnector>,
    target: Uri,
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
            pool: Arc::new(Pool::new(connector.clone(), target.clone())),
            runtime: tokio::runtime::Handle::try_current()
                .map_err(|e| format!("the gateway is not started on a runtime: {e}"))?,
            connector,
            target,
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

    /// A pool of upstream connections of its own, for a front on another runtime: a connection
    /// is woken by the runtime it was opened on.
    pub(super) fn pool(&self) -> Arc<Pool> {
        Arc::new(Pool::new(self.connector.clone(), self.target.clone()))
    }

    /// The read at `path` for an agent's `key`, as the router would route it; `None` for a
    /// supervisor's token, which the router's supervisor API reads.
    pub(super) fn route(&self, path: &str, key: &str) -> Option<&'static Operation> {
        // A path that is not plain is the router's to refuse.
        if key.starts_with(TOKEN_PREFIX) || !super::super::request::plain_path(path) {
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
    let (parts, _) = req.into_parts();
    let id = parts
        .headers
        .get(REQUEST_ID)
        .filter(|v| edge::sane(v))
        .cloned()
        .unwrap_or_else(edge::fresh_id);
    // `classify` let it through for its key; should that ever differ, it is refused, not sent.
    let outcome = match agent_key(&parts.headers) {
        Some(key) => {
            let target = parts
                .uri
                .path_and_query()
                .map_or_else(|| parts.uri.path(), |p| p.as_str());
            let headers = parts
                .headers
                .iter()
                .map(|(n, v)| (n.as_str().as_bytes(), v.as_bytes()));
            let call = Call {
                start,
                op,
                peer,
                key,
                id: id.as_bytes(),
                target,
            };
            let mut memo = KeyMemo::default();
            reads.forward(call, headers, &reads.pool, &mut memo).await
        }
        None => Outcome::Own(
            GateError::new(Kind::Unauthorized, "unauthorized", "no x-api-key header")
                .into_response(),
        ),
    };
    let mut resp = match outcome {
        Outcome::Own(resp) => resp,
        Outcome::Upstream(answer, _) => into_response(answer),
    };
    edge::record("gateway", op.name, resp.status(), start.elapsed());
    let headers = resp.headers_mut();
    headers.insert(REQUEST_ID, id);
    headers.insert(GATEWAY_HEADER, HeaderValue::from_static("1"));
    Ok(resp)
}

/// An upstream's answer as hyper sends it on: its headers are shared with the head it came in.
fn into_response(answer: Answer) -> Response {
    // `pool` passes on no status outside 100-999, all of which are valid.
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut headers = HeaderMap::with_capacity(answer.header_ranges().len() + 2);
    for (name, value) in answer.header_ranges() {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(&answer.value(name)),
            HeaderValue::from_maybe_shared(answer.value(value)),
        ) else {
            continue;
        };
        headers.append(name, value);
    }
    let mut resp = Response::new(Body::new(answer.body));
    *resp.status_mut() = status;
    *resp.headers_mut() = headers;
    resp
}

/// A key's digest (the limiter's bucket) and its hex (the agent's id in the gateway's memory),
/// worked out once for each key a connection sends, not on every read: an agent's connection
/// sends the same key on each of its requests.
pub(super) struct KeyMemo {
    key: Option<Secret>,
    digest: [u8; 32],
    hex: [u8; 64],
}

impl Default for KeyMemo {
    fn default() -> KeyMemo {
        KeyMemo {
            key: None,
            digest: [0; 32],
            hex: [0; 64],
        }
    }
}

impl KeyMemo {
    fn of(&mut self, key: &str) -> ([u8; 32], &str) {
        if self.key.as_ref().is_none_or(|k| k.expose() != key) {
            self.digest = limit::digest(key);
            hex::encode_to_slice(self.digest, &mut self.hex).expect("64 hex digits fit");
            self.key = Some(Secret::new(key));
        }
        (
            self.digest,
            std::str::from_utf8(&self.hex).expect("hex is ascii"),
        )
    }
}

/// A read as either front read it: an agent's GET of a catalog operation.
pub(super) struct Call<'a> {
    /// When its head was read: the start of its latency and of the wait for its upstream.
    pub start: Instant,
    pub op: &'static Operation,
    pub peer: SocketAddr,
    /// The trimmed `x-api-key`.
    pub key: &'a str,
    /// The request's id, sane ([`edge::sane`]).
    pub id: &'a [u8],
    /// The path and query, as they came.
    pub target: &'a str,
}

/// What a read is answered with: the upstream's answer (and when its head came), or the
/// gateway's own.
pub(super) enum Outcome {
    Upstream(Answer, Instant),
    Own(Response),
}

impl Reads {
    /// Checks the read's limits and credential, sends it upstream with the caller's headers
    /// (`(name, value)`; those of its hop and its credentials are replaced) and keeps what is
    /// remembered of its agent.
    pub(super) async fn forward<'a>(
        &self,
        call: Call<'a>,
        headers: impl Iterator<Item = (&'a [u8], &'a [u8])>,
        pool: &Arc<Pool>,
        memo: &mut KeyMemo,
    ) -> Outcome {
        let gate = &self.gate;
        let op = call.op;
        let Some(in_flight) = self.in_flight.clone().try_acquire_owned().ok() else {
            edge::shed("gateway");
            return Outcome::Own((self.refuse)(Refusal::Overloaded));
        };
        let (digest, hash) = memo.of(call.key);
        if let Some(limits) = &self.limits
            && let Err(e) = limits.check(Some(call.peer.ip()), Some(digest))
        {
            return Outcome::Own(e.into_response());
        }
        let known = gate.knows(hash);
        // The key is kept only for an agent the gateway does not know yet, and only if accepted.
        let new_key = (!known).then(|| Secret::new(call.key.to_string()));
        let head = self.head(&call, headers);
        // Deadlines from the read's start, not from a clock read of their own: a read's clock
        // reads are a good part of what it costs here.
        let deadline = tokio::time::Instant::from_std(call.start) + gate.settings.timeout();
        let sent = tokio::time::timeout_at(deadline, pool.get(&head)).await;
        drop(in_flight);
        let answered = Instant::now();
        let mut answer = match sent {
            Ok(Ok(answer)) => {
                // The wall clock, as readiness reads it (the gateway's own clock may be a test's).
                gate.upstream_seen.store(
                    chrono::Utc::now().timestamp_millis(),
                    std::sync::atomic::Ordering::Relaxed,
                );
                edge::latency(
                    upstream_latency(),
                    answered.duration_since(call.start).as_secs_f64(),
                );
                answer
            }
            Ok(Err(e)) => return Outcome::Own(self.failed(op, call.id, call.target, &e)),
            Err(_) => return Outcome::Own(timed_out(gate, op, call.id, call.target)),
        };
        // A key not known yet is known once the upstream accepts it, and the real deployment
        // refuses one with a 200 that says `success: false`: its answer is read ahead (a refusal
        // is short) and judged whole, as the gateway's other calls judge theirs.
        let accepted = if known {
            (200..300).contains(&answer.status)
        } else {
            // A stall within the answer is answered as the front answers one after the head.
            let ahead = answer.body.read_ahead(JUDGED);
            let ahead = tokio::time::timeout(gate.settings.timeout(), ahead)
                .await
                .unwrap_or_else(|_| Err(Failed::Io(std::io::ErrorKind::TimedOut.into())));
            match ahead {
                Ok(true) => succeeded(answer.status, answer.body.held()),
                Ok(false) => (200..300).contains(&answer.status),
                Err(e) => return Outcome::Own(self.failed(op, call.id, call.target, &e)),
            }
        };
        let now = gate.now();
        if accepted
            && !gate.touch(hash, now)
            && let Some(secret) = new_key
        {
            // On the gateway's runtime, whichever front read this: remembering an agent writes
            // its row and starts the runs of its approved items, which outlive any front.
            let gate = gate.clone();
            let remembered = self
                .runtime
                .spawn(async move { gate.remember(&AgentKey::new(secret)).await });
            if let Err(e) = remembered.await {
                tracing::warn!(operation = op.name, "remembering the agent failed: {e}");
            }
        }
        if accepted || known {
            gate.connections.rest(hash, now);
        }
        Outcome::Upstream(answer, answered)
    }

    /// The answer to a read whose upstream failed within its answer.
    pub(super) fn failed(&self, op: &Operation, id: &[u8], target: &str, e: &Failed) -> Response {
        let path = target.split('?').next().unwrap_or_default();
        unreachable_upstream(&self.gate, op, id, path, e)
    }

    /// The head the upstream is sent: the caller's headers but one credential (the key this
    /// gateway identified), the request's id, and nothing that belongs to the caller's hop.
    fn head<'a>(
        &self,
        call: &Call<'_>,
        headers: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    ) -> Vec<u8> {
        let mut head = Vec::with_capacity(512);
        head.extend_from_slice(b"GET ");
        head.extend_from_slice(self.base.as_bytes());
        head.extend_from_slice(call.target.as_bytes());
        head.extend_from_slice(b" HTTP/1.1\r\nhost: ");
        head.extend_from_slice(self.host.as_bytes());
        head.extend_from_slice(b"\r\n");
        let (mut agent, mut accept) = (false, false);
        for (name, value) in headers {
            if not_forwarded(name)
                || [b"authorization".as_slice(), b"x-api-key", b"x-request-id"]
                    .iter()
                    .any(|n| name.eq_ignore_ascii_case(n))
            {
                continue;
            }
            agent |= name.eq_ignore_ascii_case(b"user-agent");
            accept |= name.eq_ignore_ascii_case(b"accept");
            line(&mut head, name, value);
        }
        line(&mut head, b"x-api-key", call.key.as_bytes());
        line(&mut head, REQUEST_ID.as_bytes(), call.id);
        // What the gateway's other client (reqwest) sends when the caller said nothing.
        if !agent {
            line(
                &mut head,
                b"user-agent",
                concat!("agentdesk-gateway/", env!("CARGO_PKG_VERSION")).as_bytes(),
            );
        }
        if !accept {
            line(&mut head, b"accept", b"*/*");
        }
        head.extend_from_slice(b"\r\n");
        head
    }
}

/// One header line: the name and value were read by an HTTP parser (or are the gateway's own),
/// so neither holds a line break.
pub(super) fn line(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
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
    id: &[u8],
    path: &str,
    e: &Failed,
) -> Response {
    metrics::counter!("agentdesk_gateway_upstream_errors_total", "kind" => "unreachable")
        .increment(1);
    let reason = e.to_string();
    tracing::warn!(
        request_id = std::str::from_utf8(id).unwrap_or(""),
        operation = op.name,
        path,
        "the upstream is unreachable: {reason}"
    );
    gate.upstream_unreachable(&reason).into_response()
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
    gate.upstream_timed_out().into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_that_changes_its_key_is_known_by_the_new_one() {
        let mut memo = KeyMemo::default();
        let (a, a_hex) = memo.of("ak_first");
        let a_hex = a_hex.to_string();
        assert_eq!(a, limit::digest("ak_first"));
        assert_eq!(a_hex, crate::gateway::core::sha256_hex("ak_first"));
        let (b, b_hex) = memo.of("ak_second");
        assert_eq!(b, limit::digest("ak_second"));
        assert_eq!(b_hex, crate::gateway::core::sha256_hex("ak_second"));
        let (again, _) = memo.of("ak_first");
        assert_eq!(again, a);
    }
}
