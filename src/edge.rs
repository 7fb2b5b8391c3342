//! The HTTP edge both servers share (the sandbox and the gateway), built of tower and tower-http
//! layers: a request id on every request (the caller's `x-request-id` when it is a sane one, else
//! a new one), answered in the response and carried on every log line of the request through one
//! tower-http span; request counts and latencies by operation and status for `/metrics`, and the
//! Prometheus registry behind it; a body limit and a body timeout; and a cap on requests in
//! flight past which new ones are refused at once (load shedding) rather than queued. Its
//! refusals are answered in each server's own error shape ([`Edge::refuse`]). The accept loop,
//! with its header timeout and connection cap, is [`serve`].

pub mod serve;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

pub use crate::api::request_id::HEADER as REQUEST_ID;

pub use crate::api::request_id::{request_id, with_request_id};

/// The catalog operation a response answered, set by the catalog router, for the metrics label.
#[derive(Debug, Clone, Copy)]
pub struct OperationName(pub &'static str);

/// A new request id: `req_` and 16 hex digits.
pub fn fresh_id() -> HeaderValue {
    use rand::RngExt;
    let bytes: [u8; 8] = rand::rng().random();
    let mut id = [0u8; 20];
    id[..4].copy_from_slice(b"req_");
    hex::encode_to_slice(bytes, &mut id[4..]).expect("16 hex digits fit");
    HeaderValue::from_bytes(&id).expect("ascii is a valid header value")
}

/// A caller's id is kept when it is short printable text; anything else (a megabyte, control
/// characters that would forge log lines) is replaced by a new one.
pub fn sane(v: &HeaderValue) -> bool {
    sane_id(v.as_bytes())
}

/// [`sane`], of the id's bytes.
pub fn sane_id(b: &[u8]) -> bool {
    !b.is_empty() && b.len() <= 128 && b.iter().all(|c| c.is_ascii_graphic())
}

type Handles = (metrics::Counter, metrics::Histogram);
type HandlesBy = std::collections::HashMap<(&'static str, &'static str, u16), Handles>;

/// Counts a request of a catalog operation and records its latency. The handles are registered
/// once per (server, operation, status): the `counter!` macro builds and hashes its labels on
/// every call, and this runs on every request.
pub fn record(server: &'static str, operation: &'static str, status: StatusCode, took: Duration) {
    static HANDLES: OnceLock<std::sync::RwLock<HandlesBy>> = OnceLock::new();
    let handles = HANDLES.get_or_init(Default::default);
    let key = (server, operation, status.as_u16());
    let seconds = took.as_secs_f64();
    if let Some((count, histogram)) = handles.read().unwrap_or_else(|p| p.into_inner()).get(&key) {
        count.increment(1);
        latency(histogram, seconds);
        return;
    }
    let status = status.as_u16().to_string();
    let made = (
        metrics::counter!("agentdesk_http_requests_total", "server" => server, "operation" => operation, "status" => status),
        metrics::histogram!("agentdesk_http_request_duration_seconds", "server" => server, "operation" => operation),
    );
    made.0.increment(1);
    latency(&made.1, seconds);
    handles
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, made);
}

/// A request refused because [`Edge::in_flight`] are being served, counted.
pub fn shed(server: &'static str) {
    metrics::counter!("agentdesk_http_shed_total", "server" => server).increment(1);
    static SHED: Sampled = Sampled::new();
    if let Some(skipped) = SHED.take() {
        tracing::warn!(
            server,
            not_logged_since = skipped,
            "overloaded: requests refused with 503 (agentdesk_http_shed_total counts each)"
        );
    }
}

/// At most one log line a second for one kind of event, saying how many were not logged since:
/// a flood of refusals costs a counter each, not a line each (one client once wrote 1,881 ERROR
/// lines in 8 s). The metrics still count every one.
pub struct Sampled {
    /// Milliseconds since the process's first sample when one was last logged, plus one (0: never).
    last: std::sync::atomic::AtomicU64,
    skipped: std::sync::atomic::AtomicU64,
}

impl Sampled {
    pub const fn new() -> Sampled {
        Sampled {
            last: std::sync::atomic::AtomicU64::new(0),
            skipped: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Some(how many were not logged since the last line) when this one is to be logged.
    pub fn take(&self) -> Option<u64> {
        use std::sync::atomic::Ordering;
        static EPOCH: OnceLock<Instant> = OnceLock::new();
        let now = EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1;
        let last = self.last.load(Ordering::Relaxed);
        if last != 0 && now - last < 1000
            || self
                .last
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            self.skipped.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Some(self.skipped.swap(0, Ordering::Relaxed))
    }
}

impl Default for Sampled {
    fn default() -> Self {
        Sampled::new()
    }
}

/// What each address holds (connections, requests in flight), against a cap per address: one
/// address never holds everything, whatever it sends.
pub struct ByAddress {
    cap: usize,
    held: std::sync::Mutex<std::collections::HashMap<std::net::IpAddr, usize>>,
}

/// One of an address's shares: given back when dropped.
pub struct Held {
    of: Arc<ByAddress>,
    ip: std::net::IpAddr,
}

impl ByAddress {
    pub fn new(cap: usize) -> ByAddress {
        ByAddress {
            cap,
            held: std::sync::Mutex::default(),
        }
    }

    pub fn take(self: &Arc<Self>, ip: std::net::IpAddr) -> Option<Held> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let n = held.entry(ip).or_insert(0);
        if *n >= self.cap {
            return None;
        }
        *n += 1;
        Some(Held {
            of: self.clone(),
            ip,
        })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut held = self.of.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = held.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.ip);
            }
        }
    }
}

/// Requests one address may have in flight at once: a quarter of [`IN_FLIGHT`]. HTTP/2 streams
/// whose bodies never come, from one address with a valid key, hold these and not the server.
pub const IN_FLIGHT_PER_ADDRESS: usize = IN_FLIGHT / 4;

/// Requests each server serves at once before it sheds load. Far above what a desk's agents send
/// (a few per second each), and below what would exhaust memory or file descriptors.
pub const IN_FLIGHT: usize = 1024;

/// What the edge refuses on a server's behalf, before the server's own code reads the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The body is larger than [`Edge::body_limit`] (413).
    TooLarge(usize),
    /// The body did not arrive whole within [`Edge::body_timeout`] (408); the connection is
    /// closed.
    Timeout(Duration),
    /// [`Edge::in_flight`] requests are being served already (503).
    Overloaded,
}

impl Refusal {
    /// The server's answer to this refusal (`refuse`, its own error shape), closing the connection
    /// where the rest of it must not be read: after a body that stalled (what is left of it is not
    /// a request), and after an overload (a caller sending too much has what it pipelined behind
    /// dropped unread, not refused one request at a time).
    pub fn answer(self, refuse: fn(Refusal) -> Response) -> Response {
        match self {
            Refusal::TooLarge(_) => refuse(self),
            Refusal::Timeout(_) | Refusal::Overloaded => closing(refuse(self)),
        }
    }
}

/// One server's edge.
#[derive(Clone, Copy)]
pub struct Edge {
    /// Labels the metrics (`sandbox`, `gateway`): one process may run both.
    pub server: &'static str,
    /// Request bodies larger than this are refused, by their `Content-Length` before they are
    /// read, or as soon as more arrives.
    pub body_limit: usize,
    /// A body that has not arrived whole this long after the server started reading it is
    /// refused (and one that sends nothing for this long, whoever reads it). A head that does not
    /// arrive is the accept loop's: [`serve::Limits::header_timeout`].
    pub body_timeout: Duration,
    /// Requests served at once; one more is answered 503 at once. A queue would only hold it until
    /// the caller's own timeout, with every request behind it waiting as well.
    pub in_flight: usize,
    /// The server's answer to a refusal, in its own error shape.
    pub refuse: fn(Refusal) -> Response,
}

/// The whole body of a request that went through the edge, or what the edge refuses about it.
/// `None`: the caller went away mid-body, and nobody reads the answer.
pub async fn read_body(edge: &Edge, body: Body) -> Result<Bytes, Option<Refusal>> {
    // The whole body within the timeout, not each part of it: a body that trickles one byte
    // just inside each part's deadline would hold its permit (and an HTTP/2 stream) for good.
    let whole = tokio::time::timeout(edge.body_timeout, axum::body::to_bytes(body, usize::MAX));
    let Ok(read) = whole.await else {
        return Err(Some(Refusal::Timeout(edge.body_timeout)));
    };
    read.map_err(|e| {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        while let Some(s) = source {
            if s.is::<tower_http::timeout::TimeoutError>() {
                return Some(Refusal::Timeout(edge.body_timeout));
            }
            if s.is::<http_body_util::LengthLimitError>() {
                return Some(Refusal::TooLarge(edge.body_limit));
            }
            source = s.source();
        }
        None
    })
}

/// A refusal closes its connection (HTTP/1.1; hyper drops the header on HTTP/2, whose streams are
/// capped per connection instead). A 408: the rest of a body that stalled must not be read as a
/// request. A 429 or a 503: a caller that sends too much has its requests pipelined behind this
/// one dropped unread, instead of each answered with another refusal; it reconnects, through the
/// per-address cap on connections (one address flooding pipelined reads cost an honest agent's
/// reads 33 ms at the median while each was answered, `benches/attack_bench.sh`).
pub fn closing(mut resp: Response) -> Response {
    resp.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

/// The target of a line as each request starts and as it is answered, at debug: its own, as the
/// request span's target is always on (`logging::filter`).
pub const REQUESTS: &str = "agentdesk::edge::requests";

/// The route's template, for the metrics label of an answer that is not a catalog operation's
/// (those carry [`OperationName`]).
#[derive(Debug, Clone)]
struct RouteName(MatchedPath);

/// Names the answers of `router`'s routes by their templates in the metrics. For the routes that
/// are not catalog operations (health, metrics, the supervisor's API): the catalog's name
/// themselves, and each layer on a route is a boxed service cloned for every request.
pub fn named(router: Router) -> Router {
    router.route_layer(middleware::from_fn(|req: Request, next: Next| async move {
        let path = req.extensions().get::<MatchedPath>().cloned();
        let mut resp = next.run(req).await;
        if let Some(path) = path {
            resp.extensions_mut().insert(RouteName(path));
        }
        resp
    }))
}

/// The edge's layers around a server's routes.
pub fn layers(router: Router, edge: Edge) -> Router {
    let in_flight = Arc::new(Semaphore::new(edge.in_flight));
    let by_address = Arc::new(ByAddress::new(IN_FLIGHT_PER_ADDRESS));
    layers_sharing(router, edge, in_flight, by_address)
}

/// The same, with the permits of requests in flight taken from `in_flight`, which another way
/// into the same server (the gateway's pass-through reads) takes from as well.
///
/// One service around the router as a whole, not a stack of layers on each route: every layer on
/// a route is a boxed service cloned and a future boxed for every request, and the stack of
/// tower-http layers this replaces (request id set and propagated, trace span, load shedding,
/// body limit and timeout, and four middlewares) cost the sandbox's reads two fifths of their
/// rate (benches/http_bench.sh).
pub fn layers_sharing(
    router: Router,
    edge: Edge,
    in_flight: Arc<Semaphore>,
    by_address: Arc<ByAddress>,
) -> Router {
    prometheus();
    Router::new().fallback_service(EdgeService {
        inner: router,
        shared: Arc::new(Shared {
            edge,
            in_flight,
            by_address,
        }),
    })
}

struct Shared {
    edge: Edge,
    in_flight: Arc<Semaphore>,
    by_address: Arc<ByAddress>,
}

#[derive(Clone)]
struct EdgeService {
    inner: Router,
    shared: Arc<Shared>,
}

impl tower::Service<Request> for EdgeService {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Response, std::convert::Infallible>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        // A router is always ready; the permits are taken per request, refused at once.
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let inner = self.inner.clone();
        let shared = self.shared.clone();
        Box::pin(async move { Ok(edge_call(inner, &shared, req).await) })
    }
}

/// One request through the edge: its id, its span, the permits (the server's and its
/// address's), the body's limits, and on the way out its metrics and its id.
async fn edge_call(inner: Router, shared: &Shared, mut req: Request) -> Response {
    use tower::ServiceExt as _;
    use tracing::Instrument as _;
    let start = Instant::now();
    let edge = shared.edge;
    // The caller's id when it is a sane one, else a new one.
    let id = match req.headers().get(REQUEST_ID) {
        Some(v) if sane(v) => v.clone(),
        _ => {
            let id = fresh_id();
            req.headers_mut()
                .insert(HeaderName::from_static(REQUEST_ID), id.clone());
            id
        }
    };
    let id_text = id.to_str().unwrap_or_default();
    let span = tracing::info_span!(
        "request",
        server = edge.server,
        request_id = %id_text,
        method = %req.method(),
        path = %req.uri().path(),
    );
    let task_id = id_text.to_string();
    // Err: refused here, before the server's code: counted by `shed` or the too-large counter,
    // not in the requests' metrics, so a flood of refusals costs a counter each.
    let served = async {
        tracing::debug!(target: REQUESTS, "started");
        let ip = req
            .extensions()
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|c| c.0.ip());
        // Refused at once past either cap: a queue would only hold a request until its caller's
        // own timeout, with every request behind it waiting as well.
        let Ok(_permit) = shared.in_flight.clone().try_acquire_owned() else {
            shed(edge.server);
            return Err(Refusal::Overloaded.answer(edge.refuse));
        };
        let _share = match ip.map(|ip| shared.by_address.take(ip)) {
            Some(None) => {
                shed(edge.server);
                return Err(Refusal::Overloaded.answer(edge.refuse));
            }
            held => held.flatten(),
        };
        // Declared too large: refused before a byte of it is read. Else the body is cut at the
        // limit and at the deadline as it is read.
        let declared = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n > edge.body_limit as u64) {
            metrics::counter!("agentdesk_http_too_large_total", "server" => edge.server)
                .increment(1);
            return Err(Refusal::TooLarge(edge.body_limit).answer(edge.refuse));
        }
        let req = req.map(|body| {
            Body::new(tower_http::timeout::TimeoutBody::new(
                edge.body_timeout,
                http_body_util::Limited::new(body, edge.body_limit),
            ))
        });
        let resp = with_request_id(Some(task_id), inner.oneshot(req))
            .await
            .unwrap_or_else(|never| match never {});
        Ok(own_413(edge, resp))
    }
    .instrument(span.clone())
    .await;
    let mut resp = match served {
        Ok(resp) => resp,
        Err(mut refused) => {
            refused
                .headers_mut()
                .insert(HeaderName::from_static(REQUEST_ID), id);
            return refused;
        }
    };
    let status = resp.status();
    let took = start.elapsed();
    match (
        resp.extensions().get::<OperationName>(),
        resp.extensions().get::<RouteName>(),
    ) {
        (Some(op), _) => record(edge.server, op.0, status, took),
        (None, route) => {
            let operation: metrics::SharedString =
                route.map_or("unmatched".into(), |r| r.0.as_str().to_string().into());
            let code = status.as_u16().to_string();
            metrics::counter!("agentdesk_http_requests_total", "server" => edge.server, "operation" => operation.clone(), "status" => code).increment(1);
            latency(
                &metrics::histogram!("agentdesk_http_request_duration_seconds", "server" => edge.server, "operation" => operation),
                took.as_secs_f64(),
            );
        }
    }
    let _in = span.enter();
    // A 5xx is logged once a second at most (a shed 503 by `shed`, an upstream's 503 not at all),
    // never a line per request a flood can fill the log with.
    if status.is_server_error() && status != StatusCode::SERVICE_UNAVAILABLE {
        static FAILED: Sampled = Sampled::new();
        if let Some(skipped) = FAILED.take() {
            tracing::error!(
                status = status.as_u16(),
                latency_ms = took.as_millis() as u64,
                not_logged_since = skipped,
                "request failed"
            );
        }
    }
    tracing::debug!(
        target: REQUESTS,
        status = status.as_u16(),
        latency_us = took.as_micros() as u64,
        "answered"
    );
    resp.headers_mut()
        .insert(HeaderName::from_static(REQUEST_ID), id);
    resp
}

/// An answer of 413 in plain text (axum's extractors', for a body cut at the limit) is replaced
/// by the server's own shape.
fn own_413(edge: Edge, resp: Response) -> Response {
    let plain = resp.status() == StatusCode::PAYLOAD_TOO_LARGE
        && resp
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/plain"));
    if plain {
        Refusal::TooLarge(edge.body_limit).answer(edge.refuse)
    } else {
        resp
    }
}

/// The process's Prometheus registry, installed on first use. Latencies are histograms (with
/// buckets from 0.5 ms to 10 s) so a dashboard can take any quantile over any set of instances.
pub fn prometheus() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let buckets = [
            0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
        ];
        let builder = PrometheusBuilder::new()
            .set_buckets(&buckets)
            .expect("the buckets are not empty");
        match builder.install_recorder() {
            Ok(handle) => handle,
            // Another recorder is installed (a test harness): render what this one records.
            Err(_) => PrometheusBuilder::new().build_recorder().handle(),
        }
    })
}

/// Samples recorded into histograms between two drains. The exporter keeps each sample until its
/// histogram is drained (by a scrape, or its upkeep); a process nobody scrapes kept every one for
/// good: 16-32 bytes a request, 8 MB per 250,000 forwarded reads (benches/HISTORY.md).
const DRAIN_EVERY: u64 = 4096;

/// Records a latency, and drains every histogram's samples into its buckets once every
/// [`DRAIN_EVERY`] samples, as a scrape does. Driven by the samples, not a timer: an idle process
/// has nothing to drain and is not woken for it. Whether this call drained.
pub fn latency(histogram: &metrics::Histogram, seconds: f64) -> bool {
    static SAMPLES: Samples = Samples(std::sync::atomic::AtomicU64::new(0));
    histogram.record(seconds);
    let due = SAMPLES.note();
    if due {
        prometheus().run_upkeep();
    }
    due
}

/// Counts samples; says when a drain is due.
struct Samples(std::sync::atomic::AtomicU64);

impl Samples {
    fn note(&self) -> bool {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % DRAIN_EVERY == DRAIN_EVERY - 1
    }
}

/// The Prometheus text exposition, with its content type.
pub fn metrics_response() -> Response {
    use axum::response::IntoResponse;
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        prometheus().render(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::response::IntoResponse;
    use futures::StreamExt;
    use std::sync::Arc;
    use tower::ServiceExt;

    #[test]
    fn histograms_are_drained_every_few_thousand_samples_without_a_scrape() {
        let samples = Samples(std::sync::atomic::AtomicU64::new(0));
        let drains = (0..3 * DRAIN_EVERY).filter(|_| samples.note()).count();
        assert_eq!(drains, 3);
        // Many threads at once: still one drain per DRAIN_EVERY samples, none lost.
        let samples = Arc::new(Samples(std::sync::atomic::AtomicU64::new(0)));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let samples = samples.clone();
                std::thread::spawn(move || (0..DRAIN_EVERY).filter(|_| samples.note()).count())
            })
            .collect();
        let drains: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(drains, 4);
        // And the real one records and drains through the process's registry (other tests
        // record at the same time, so this call may not be the one that lands on the count).
        let h = metrics::histogram!("agentdesk_test_drain_seconds");
        let drained = (0..2 * DRAIN_EVERY).filter(|_| latency(&h, 0.001)).count();
        assert!((1..=3).contains(&drained), "{drained}");
    }

    fn refuse(r: Refusal) -> Response {
        let (status, code) = match r {
            Refusal::TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "too_large"),
            Refusal::Timeout(_) => (StatusCode::REQUEST_TIMEOUT, "timeout"),
            Refusal::Overloaded => (StatusCode::SERVICE_UNAVAILABLE, "overloaded"),
        };
        (status, axum::Json(serde_json::json!({ "code": code }))).into_response()
    }

    fn edge(in_flight: usize) -> Edge {
        Edge {
            server: "test",
            body_limit: 16,
            body_timeout: Duration::from_millis(100),
            in_flight,
            refuse,
        }
    }

    async fn code(resp: Response) -> (StatusCode, serde_json::Value) {
        let status = resp.status();
        let body = axum::body::to_bytes(resp.into_body(), 1 << 16)
            .await
            .unwrap();
        (status, serde_json::from_slice(&body).unwrap_or_default())
    }

    /// A caller turned away for load, or for a body that stalled, is not read further on that
    /// connection; one too large is (its connection is still in step).
    #[test]
    fn refusals_for_load_and_stalls_close_their_connection() {
        let closes = |r: Refusal| {
            r.answer(refuse)
                .headers()
                .get(header::CONNECTION)
                .is_some_and(|v| v == "close")
        };
        assert!(closes(Refusal::Overloaded));
        assert!(closes(Refusal::Timeout(Duration::from_secs(1))));
        assert!(!closes(Refusal::TooLarge(16)));
    }

    #[tokio::test]
    async fn past_the_cap_a_request_is_refused_at_once_in_the_servers_shape() {
        let release = Arc::new(tokio::sync::Notify::new());
        let held = release.clone();
        let router = Router::new().route(
            "/slow",
            axum::routing::get(move || {
                let held = held.clone();
                async move {
                    held.notified().await;
                    "done"
                }
            }),
        );
        let app = layers(router, edge(1));
        let req = || Request::builder().uri("/slow").body(Body::empty()).unwrap();
        let first = tokio::spawn(app.clone().oneshot(req()));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let refused = app.clone().oneshot(req()).await.unwrap();
        assert!(
            refused.headers().get(REQUEST_ID).is_some_and(sane),
            "a refusal is answered with its request id too"
        );
        let (status, body) = code(refused).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body["code"], "overloaded");
        release.notify_one();
        assert_eq!(first.await.unwrap().unwrap().status(), StatusCode::OK);
        // The permit is back: the next one is served.
        release.notify_one();
        let resp = app.oneshot(req()).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn bodies_over_the_limit_or_stalled_are_refused_in_the_servers_shape() {
        let read = |edge: Edge| {
            Router::new().route(
                "/echo",
                axum::routing::post(move |req: Request| async move {
                    match read_body(&edge, req.into_body()).await {
                        Ok(b) => b.len().to_string().into_response(),
                        Err(Some(r)) => r.answer(edge.refuse),
                        Err(None) => StatusCode::BAD_REQUEST.into_response(),
                    }
                }),
            )
        };
        let app = layers(read(edge(8)), edge(8));
        let post = |body: Body| {
            Request::builder()
                .method("POST")
                .uri("/echo")
                .body(body)
                .unwrap()
        };
        // Declared too large: refused before it is read.
        let mut declared = post(Body::from("x".repeat(17)));
        declared
            .headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from(17));
        let (status, body) = code(app.clone().oneshot(declared).await.unwrap()).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::PAYLOAD_TOO_LARGE, Some("too_large"))
        );
        // Streamed past the limit with no length said.
        let chunks =
            futures::stream::iter(["0123456789", "0123456789"].map(Ok::<_, std::io::Error>));
        let (status, body) = code(
            app.clone()
                .oneshot(post(Body::from_stream(chunks)))
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::PAYLOAD_TOO_LARGE, Some("too_large"))
        );
        // A body that stops arriving.
        let stalled = futures::stream::once(async { Ok::<_, std::io::Error>("01") })
            .chain(futures::stream::pending());
        let (status, body) = code(
            app.clone()
                .oneshot(post(Body::from_stream(stalled)))
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(
            (status, body["code"].as_str()),
            (StatusCode::REQUEST_TIMEOUT, Some("timeout"))
        );
        // Within both: read whole.
        let resp = app.oneshot(post(Body::from("0123456789"))).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
    }
}

#[cfg(test)]
mod sampled_tests {
    use super::Sampled;

    #[test]
    fn a_flood_is_one_line_that_counts_the_rest() {
        let s = Sampled::new();
        assert_eq!(s.take(), Some(0), "the first is logged");
        let logged = (0..1000).filter(|_| s.take().is_some()).count();
        assert!(logged <= 1, "{logged} lines for a thousand refusals");
    }
}
