//! The sandbox's HTTP surface, axum only: every catalog operation is routed at its catalog path,
//! the request is read into the pipeline's [`Call`](super::ops::Call) (see [`super::ops`]), and
//! the answer or error becomes a response here.

pub mod error;
mod market;

use super::core::Shared;
use super::error::{AppError, ErrorKind};
use super::ops::{self, Reply, Step};
use crate::api::catalog::Operation;
use crate::api::percent::percent_decode;
use crate::api::routes::catalog_router;
use crate::edge::{Edge, Refusal};
use axum::Router;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::sync::Arc;

/// Request bodies larger than this are refused with 413 before they are parsed.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::OK);
        if let Some(text) = &self.data_json
            && let Some(json) = with_data(&self.body, text)
        {
            let json_type = [(
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_static("application/json"),
            )];
            return (status, json_type, json).into_response();
        }
        (status, axum::Json(self.into_body())).into_response()
    }
}

/// `body` (an object) written with `data` as its `data` member, as it is: `None` unless both
/// are what they should be, the text checked to be one JSON value.
fn with_data(body: &serde_json::Value, data: &str) -> Option<Vec<u8>> {
    serde_json::from_str::<&serde_json::value::RawValue>(data).ok()?;
    let mut fields = body.as_object()?.clone();
    fields.remove("data");
    let mut out = serde_json::to_vec(&fields).ok()?;
    out.reserve(data.len() + 9);
    out.pop(); // the closing brace
    if !fields.is_empty() {
        out.push(b',');
    }
    out.extend_from_slice(b"\"data\":");
    out.extend_from_slice(data.as_bytes());
    out.push(b'}');
    Some(out)
}

/// The edge's refusals in the sandbox's error shape.
fn refuse(r: Refusal) -> Response {
    match r {
        Refusal::TooLarge(limit) => AppError::payload_too_large(limit).into_response(),
        Refusal::Timeout(after) => AppError::new(
            ErrorKind::Timeout,
            "request_timeout",
            format!(
                "the request body did not arrive within {} ms",
                after.as_millis()
            ),
        )
        .into_response(),
        Refusal::Overloaded => AppError::new(
            ErrorKind::Unavailable,
            "overloaded",
            format!(
                "the sandbox is serving {} requests already; try again shortly",
                crate::edge::IN_FLIGHT
            ),
        )
        .into_response(),
    }
}

fn edge_of(shared: &Shared) -> Edge {
    Edge {
        server: "sandbox",
        body_limit: MAX_BODY_BYTES,
        body_timeout: std::time::Duration::from_millis(shared.settings.request_timeout_ms),
        in_flight: crate::edge::IN_FLIGHT,
        refuse,
    }
}

pub fn router(shared: Arc<Shared>) -> Router {
    let edge = edge_of(&shared);
    let ready = shared.clone();
    let market = shared.clone();
    let own = Router::new()
        .route("/healthz", axum::routing::get(healthz))
        .route("/readyz", axum::routing::get(move || readyz(ready.clone())))
        .route(
            market::PATH,
            axum::routing::get(move |req: Request| market::candles(market.clone(), req)),
        )
        .route(
            "/metrics",
            axum::routing::get(|| async { crate::edge::metrics_response() }),
        );
    let routes = catalog_router(move |op, req| serve(shared.clone(), op, req))
        .merge(crate::edge::named(own))
        .fallback(|req: Request| async move {
            AppError::not_found(format!(
                "no operation at {} {}; GET /api/delegated/tools lists them",
                req.method(),
                req.uri().path()
            ))
        });
    crate::edge::layers(routes, edge)
}

/// The process answers: for a load balancer's liveness probe. No key, outside the catalog.
async fn healthz() -> Response {
    axum::Json(serde_json::json!({"status": "ok"})).into_response()
}

/// Ready when the store answers within 2 s (a store held by a long write is not ready to serve).
async fn readyz(shared: Arc<Shared>) -> Response {
    let probe = shared.run_raw(|core, _| {
        core.store
            .conn
            .query_row("SELECT 1", [], |r| r.get::<_, i64>(0))
            .map_err(|e| e.to_string())
    });
    let store = match tokio::time::timeout(std::time::Duration::from_secs(2), probe).await {
        Ok(Ok(Ok(_))) => Ok(()),
        Ok(Ok(Err(e))) => Err(e),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("no answer within 2 s".to_string()),
    };
    let (status, body) = match store {
        Ok(()) => (
            StatusCode::OK,
            serde_json::json!({"status": "ready", "store": "ok"}),
        ),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            serde_json::json!({"status": "not_ready", "store": e}),
        ),
    };
    (status, axum::Json(body)).into_response()
}

async fn serve(shared: Arc<Shared>, op: &'static Operation, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let body = match crate::edge::read_body(&edge_of(&shared), body).await {
        Ok(b) => b,
        Err(Some(refusal)) => return refusal.answer(refuse),
        Err(None) => return StatusCode::BAD_REQUEST.into_response(),
    };
    let query = parse_query(parts.uri.query().unwrap_or(""));
    let path = path_params(op.path, parts.uri.path());
    // The resource a 402 names, made only for one.
    let host = parts.headers.get("host").cloned();
    let resource = || {
        format!(
            "http://{}{}",
            host.as_ref()
                .and_then(|v| v.to_str().ok())
                .unwrap_or("localhost"),
            parts.uri.path()
        )
    };
    let request = ops::Request {
        op,
        headers: parts.headers,
        query,
        path,
        body,
    };
    // A status read of a backtest running here is answered when the job ends, or after
    // `BACKTEST_HOLD`: a client polling in a loop learns of the end as it happens, instead of
    // one poll later, without keeping a core busy with answers that say "running" (see
    // docs/interface-notes.md). It waits only once the read has said "running" to the job's
    // own account: a refused or unknown job is answered at once, and the delay tells no one
    // else that a job is running.
    let again = (op.name == "get_backtest_job").then(|| request.clone());
    let (mut result, mut paid) = answer(&shared, request).await;
    if let Some(again) = again
        && paid.is_none()
        && matches!(&result, Ok(reply) if reply.body["status"] == "running")
        && let Some(id) = again.path.first()
    {
        shared.wait_while_backtest_runs(id, BACKTEST_HOLD).await;
        (result, paid) = answer(&shared, again).await;
    }
    let mut response = match result {
        Ok(reply) => reply.into_response(),
        Err(e) if e.kind == ErrorKind::PaymentRequired => {
            // x402: every 402 says what to pay, and why the last attempt was refused.
            let required =
                super::payments::required_header(&shared.settings, &resource(), op, e.code);
            let mut response = e.into_response();
            if let Ok(v) = axum::http::HeaderValue::from_str(&required) {
                response.headers_mut().insert("payment-required", v);
            }
            response
        }
        Err(e) => e.into_response(),
    };
    // The payment was accepted (and spent) when the call was admitted.
    if let Some(paid) = paid
        && let Ok(v) = axum::http::HeaderValue::from_str(&paid)
    {
        response.headers_mut().insert("payment-response", v);
    }
    response
}

/// How long a status read of a running backtest waits for the job to end.
pub const BACKTEST_HOLD: std::time::Duration = std::time::Duration::from_millis(50);

/// The answer to an operation's request and, for a paid call, its `PAYMENT-RESPONSE`.
async fn answer(
    shared: &Arc<Shared>,
    request: ops::Request,
) -> (Result<Reply, AppError>, Option<String>) {
    match ops::read(shared, request) {
        ops::Read::Answered(result) => (result, None),
        ops::Read::Writer(request) => {
            let (step, paid) = match shared
                .run_raw(move |core, now| ops::pipeline(core, now, request))
                .await
            {
                Ok(out) => out,
                Err(e) => return (Err(AppError::internal(e)), None),
            };
            let result = match step {
                Step::Done(result) => result,
                Step::Wait(handler, call) => handler(shared.clone(), call).await,
            };
            (result, paid)
        }
    }
}

fn parse_query(raw: &str) -> HashMap<String, String> {
    raw.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k, true), percent_decode(v, true))
        })
        .collect()
}

/// Values of `{name}` segments of `template` in `path`, in order.
fn path_params(template: &str, path: &str) -> Vec<String> {
    template
        .split('/')
        .zip(path.split('/'))
        .filter(|(t, _)| t.starts_with('{'))
        .map(|(_, v)| percent_decode(v, false))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result's text goes into the answer as its `data`, giving the same value as parsing it
    /// in; text that is not one JSON value is not written as it is.
    #[test]
    fn data_text_goes_in_as_the_data_member() {
        let body = serde_json::json!({"success": true, "jobId": "bt_1", "data": null});
        let text = r#"{"totalTrades": 3, "trades": [{"pnl": -1.5e-3}], "note": "a \"q\" }"}"#;
        let json = with_data(&body, text).expect("spliced");
        let parsed: serde_json::Value = serde_json::from_slice(&json).unwrap();
        let reply = Reply {
            status: 200,
            body: body.clone(),
            proposal_id: None,
            oid: None,
            replay: false,
            data_json: Some(text.into()),
        };
        assert_eq!(parsed, reply.into_body());
        assert_eq!(parsed["data"]["trades"][0]["pnl"], -1.5e-3);
        let empty = with_data(&serde_json::json!({}), "[1]").unwrap();
        assert_eq!(empty, br#"{"data":[1]}"#);
        assert!(with_data(&body, r#"{"a": 1} {"b": 2}"#).is_none());
        assert!(with_data(&body, r#"{"a": 1"#).is_none());
        assert!(with_data(&serde_json::json!([1]), "1").is_none());
    }

    #[test]
    fn query_and_path_decoding() {
        let q = parse_query("a=1&b=x%20y&c");
        assert_eq!(q["b"], "x y");
        assert_eq!(q["c"], "");
        assert_eq!(
            path_params(
                "/api/delegated/backtests/{jobId}",
                "/api/delegated/backtests/j%2F1"
            ),
            vec!["j/1"]
        );
        assert_eq!(percent_decode("100%", true), "100%");
        assert_eq!(percent_decode("%é%4", true), "%é%4");
        assert_eq!(parse_query("q=a+b")["q"], "a b");
        assert_eq!(
            path_params(
                "/api/delegated/backtests/{jobId}",
                "/api/delegated/backtests/a+b"
            ),
            vec!["a+b"]
        );
    }
}
