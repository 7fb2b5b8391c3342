//! What an operator's tools ask of a gateway, outside the catalog and without an agent's key:
//! `/healthz` (the process answers), `/readyz` (its store answers and the upstream was reached
//! lately), `/metrics` (Prometheus; behind a supervisor token once `public_url` says the gateway
//! faces a network), and `/sandbox/v1/candles` (a sandbox upstream's market data, passed through
//! for the console's price charts; a real service answers it 404, and so then does the gateway).

use super::super::flow::halt;
use super::super::gate::Gate;
use super::super::model::error::GateError;
use super::super::upstream::Buffered;
use super::api;
use crate::api::catalog::encode_segment;
use crate::api::percent::percent_decode;
use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

/// An upstream answer this recent proves it reachable without asking it again.
const SEEN_LATELY: chrono::Duration = chrono::Duration::seconds(30);
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Serialize)]
struct Health {
    status: &'static str,
}

/// Each part as `ok` or `unavailable`.
#[derive(Serialize)]
struct Ready {
    status: &'static str,
    store: &'static str,
    upstream: &'static str,
}

pub fn router(gate: Arc<Gate>) -> Router {
    Router::new()
        .route(
            "/healthz",
            get(|| async { axum::Json(Health { status: "ok" }) }),
        )
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route(CANDLES, get(candles))
        .with_state(gate)
}

const CANDLES: &str = "/sandbox/v1/candles";

/// The upstream's candles, as it answers them. A read of market data, no account's: the query is
/// rebuilt from the three parameters the sandbox reads (nothing else of the caller's reaches the
/// upstream) and no key is sent. Behind a supervisor token once the gateway faces a network, as
/// `/metrics` is.
async fn candles(
    State(gate): State<Arc<Gate>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, GateError> {
    if gate.public_url.is_some() {
        api::supervisor(&gate, &headers).await?;
    }
    let mut path = CANDLES.to_string();
    let mut sep = '?';
    for pair in query.as_deref().unwrap_or_default().split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let k = percent_decode(k, true);
        if matches!(k.as_str(), "coin" | "interval" | "limit") {
            let v = encode_segment(&percent_decode(v, true));
            path.push_str(&format!("{sep}{k}={v}"));
            sep = '&';
        }
    }
    let resp = gate
        .upstream
        .send(
            reqwest::Method::GET,
            &path,
            &HeaderMap::new(),
            None,
            axum::body::Bytes::new(),
        )
        .await?;
    let answer = Buffered::read(&gate.upstream, resp).await?;
    let mut out = (answer.status, answer.body).into_response();
    out.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    Ok(out)
}

/// Why a readiness probe failed, for the log.
#[derive(Debug, thiserror::Error)]
enum NotReady {
    #[error(transparent)]
    Store(#[from] super::super::store::StoreError),
    #[error("{}", .0.message)]
    Upstream(GateError),
    #[error("no answer within {} s", PROBE_TIMEOUT.as_secs())]
    Timeout,
}

async fn store_ready(gate: &Gate) -> Result<(), NotReady> {
    match tokio::time::timeout(PROBE_TIMEOUT, gate.store.counts()).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e.into()),
        Err(_) => Err(NotReady::Timeout),
    }
}

/// Reached lately, or reachable now: any HTTP answer counts (the question is the network, not
/// the service's opinion of a request without a key).
async fn upstream_ready(gate: &Gate) -> Result<(), NotReady> {
    let seen = gate.upstream.last_seen_ms();
    if seen > 0 && chrono::Utc::now().timestamp_millis() - seen < SEEN_LATELY.num_milliseconds() {
        return Ok(());
    }
    let op = crate::api::catalog::op("get_openapi");
    match tokio::time::timeout(PROBE_TIMEOUT, gate.upstream.get_json_as(op, None)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(NotReady::Upstream(e)),
        Err(_) => Err(NotReady::Timeout),
    }
}

async fn readyz(State(gate): State<Arc<Gate>>) -> Response {
    let (store, upstream) = tokio::join!(store_ready(&gate), upstream_ready(&gate));
    // The probe answers anyone: it says what is down, the log says why (the reasons name the
    // upstream's address and the store's errors).
    let word = |what: &str, r: &Result<(), NotReady>| match r {
        Ok(()) => "ok",
        Err(e) => {
            tracing::warn!("not ready: {what}: {e}");
            "unavailable"
        }
    };
    let ready = store.is_ok() && upstream.is_ok();
    let body = Ready {
        status: if ready { "ready" } else { "not_ready" },
        store: word("store", &store),
        upstream: word("upstream", &upstream),
    };
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, axum::Json(body)).into_response()
}

async fn metrics(State(gate): State<Arc<Gate>>, headers: HeaderMap) -> Result<Response, GateError> {
    if gate.public_url.is_some() {
        api::supervisor(&gate, &headers).await?;
    }
    // Read from the store at scrape time, so every instance on a shared store reports the same
    // inbox, and a restart does not reset the decision counts.
    let counts = gate.store.counts().await.map_err(GateError::store)?;
    for status in super::super::store::Status::ALL {
        let n = counts
            .items
            .iter()
            .find(|(s, _)| s == status.as_str())
            .map_or(0, |(_, n)| *n);
        metrics::gauge!("agentdesk_gateway_items", "status" => status.as_str()).set(n as f64);
    }
    for (kind, n) in &counts.journal {
        metrics::counter!("agentdesk_gateway_decisions_total", "kind" => kind.clone())
            .absolute(*n as u64);
    }
    let killed = halt::killed(&gate).await?.is_some();
    metrics::gauge!("agentdesk_gateway_kill_switch").set(if killed { 1.0 } else { 0.0 });
    metrics::gauge!("agentdesk_gateway_connected_agents").set(gate.lock_keys().len() as f64);
    Ok(crate::edge::metrics_response())
}
