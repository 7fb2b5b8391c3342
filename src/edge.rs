//! The HTTP edge both servers share (the sandbox and the gateway): a request id on every request
//! (the caller's `x-request-id` when it is a sane one, else a new one), answered in the response
//! and carried on every log line of the request through one tower-http span; request counts and
//! latencies by operation and status for `/metrics`; and the Prometheus registry behind it.

use axum::Router;
use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::{self, Next};
use axum::response::Response;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;
use std::time::Instant;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::trace::TraceLayer;

pub use crate::api::request_id::HEADER as REQUEST_ID;

pub use crate::api::request_id::{request_id, with_request_id};

/// The catalog operation a response answered, set by the catalog router, for the metrics label.
#[derive(Debug, Clone, Copy)]
pub struct OperationName(pub &'static str);

#[derive(Clone, Copy)]
struct NewId;

impl MakeRequestId for NewId {
    fn make_request_id<B>(&mut self, _: &axum::http::Request<B>) -> Option<RequestId> {
        use rand::RngExt;
        let bytes: [u8; 8] = rand::rng().random();
        HeaderValue::from_str(&format!("req_{}", hex::encode(bytes)))
            .ok()
            .map(RequestId::new)
    }
}

/// A caller's id is kept when it is short printable text; anything else (a megabyte, control
/// characters that would forge log lines) is replaced by a new one.
fn sane(v: &HeaderValue) -> bool {
    let b = v.as_bytes();
    !b.is_empty() && b.len() <= 128 && b.iter().all(|c| c.is_ascii_graphic())
}

async fn drop_insane_id(mut req: Request, next: Next) -> Response {
    if req.headers().get(REQUEST_ID).is_some_and(|v| !sane(v)) {
        req.headers_mut().remove(REQUEST_ID);
    }
    next.run(req).await
}

async fn observe(server: &'static str, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string());
    let id = req
        .headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let resp = with_request_id(id, next.run(req)).await;
    let operation = match resp.extensions().get::<OperationName>() {
        Some(op) => op.0.to_string(),
        None => route.unwrap_or_else(|| "unmatched".into()),
    };
    let status = resp.status().as_u16().to_string();
    let labels = [
        ("server", server.to_string()),
        ("operation", operation),
        ("status", status),
    ];
    metrics::counter!("agentdesk_http_requests_total", &labels).increment(1);
    metrics::histogram!("agentdesk_http_request_duration_seconds", &labels[..2])
        .record(start.elapsed().as_secs_f64());
    resp
}

/// The edge's layers around a server's routes. `server` labels its metrics (`sandbox`,
/// `gateway`): one process may run both.
pub fn layers(router: Router, server: &'static str) -> Router {
    prometheus();
    let header = HeaderName::from_static(REQUEST_ID);
    router
        .layer(middleware::from_fn(move |req, next| {
            observe(server, req, next)
        }))
        .layer(
            TraceLayer::new_for_http().make_span_with(move |req: &axum::http::Request<_>| {
                let id = req
                    .headers()
                    .get(REQUEST_ID)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                tracing::info_span!(
                    "request",
                    server,
                    request_id = %id,
                    method = %req.method(),
                    path = %req.uri().path(),
                )
            }),
        )
        .layer(PropagateRequestIdLayer::new(header.clone()))
        .layer(SetRequestIdLayer::new(header, NewId))
        .layer(middleware::from_fn(drop_insane_id))
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
