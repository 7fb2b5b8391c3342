//! The client to the upstream service: one request with the agent's key, answers read whole (for
//! what the gateway inspects) or streamed back (for what it forwards).

use super::{Gate, GateError};
use crate::api::catalog::Operation;
use crate::secret::Secret;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::Value;

impl Gate {
    /// One request to the upstream. `headers` are the caller's, filtered; the key is `key`.
    pub(super) async fn send(
        &self,
        method: reqwest::Method,
        path_and_query: &str,
        headers: &HeaderMap,
        key: Option<&Secret>,
        body: Bytes,
    ) -> Result<reqwest::Response, GateError> {
        let url = format!("{}{path_and_query}", self.upstream);
        let mut out = reqwest::header::HeaderMap::new();
        for (name, value) in headers {
            // The upstream hears of one credential only: the key this gateway identified.
            if !is_hop_by_hop(name) && name != "x-api-key" && name != header::AUTHORIZATION {
                out.append(name.clone(), value.clone());
            }
        }
        if let Some(key) = key {
            let mut v = HeaderValue::from_str(key.expose()).map_err(|_| {
                GateError::new(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                    "the x-api-key header holds characters a key cannot have",
                )
            })?;
            v.set_sensitive(true);
            out.insert("x-api-key", v);
        }
        // The deployment guards POSTs against CSRF with this header (observed-shapes.md).
        if method == reqwest::Method::POST && !out.contains_key("x-requested-with") {
            out.insert(
                "x-requested-with",
                HeaderValue::from_static("XMLHttpRequest"),
            );
        }
        let mut req = self
            .http
            .request(method.clone(), &url)
            .headers(out)
            .timeout(self.settings.timeout());
        if method == reqwest::Method::POST {
            req = req.body(body);
        }
        req.send().await.map_err(|e| self.transport_error(&e))
    }

    pub(super) fn transport_error(&self, e: &reqwest::Error) -> GateError {
        if e.is_timeout() {
            return GateError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "upstream_timeout",
                format!(
                    "the upstream {} did not answer within {} s",
                    self.upstream, self.settings.timeout_secs
                ),
            );
        }
        let mut reason = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            reason = format!("{reason}: {s}");
            source = s.source();
        }
        GateError::new(
            StatusCode::BAD_GATEWAY,
            "upstream_unreachable",
            format!("the upstream {} is unreachable ({reason})", self.upstream),
        )
    }

    /// A POST of a JSON body to a catalog operation with an agent's key, answer read whole.
    pub(super) async fn post_json(
        &self,
        op: &Operation,
        key: &Secret,
        body: &Value,
    ) -> Result<Buffered, GateError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let resp = self
            .send(
                reqwest::Method::POST,
                op.path,
                &headers,
                Some(key),
                Bytes::from(body.to_string()),
            )
            .await?;
        Buffered::read(self, resp).await
    }

    pub(super) async fn get_json(
        &self,
        op: &Operation,
        key: &Secret,
    ) -> Result<Buffered, GateError> {
        let resp = self
            .send(
                reqwest::Method::GET,
                op.path,
                &HeaderMap::new(),
                Some(key),
                Bytes::new(),
            )
            .await?;
        Buffered::read(self, resp).await
    }
}

/// An upstream answer read whole (stagings and executions are inspected before they are passed on).
pub struct Buffered {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Buffered {
    pub(super) async fn read(gate: &Gate, resp: reqwest::Response) -> Result<Buffered, GateError> {
        let status = resp.status();
        let headers = response_headers(resp.headers());
        let body = resp.bytes().await.map_err(|e| gate.transport_error(&e))?;
        Ok(Buffered {
            status,
            headers,
            body,
        })
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// A success in the upstream's own terms: a 2xx that does not say `success: false` (the real
    /// deployment answers some errors as 200 with `success: false`).
    pub fn is_success(&self) -> bool {
        self.status.is_success() && self.json().get("success") != Some(&Value::Bool(false))
    }

    pub(super) fn into_response(self) -> Response {
        let mut resp = Response::new(Body::from(self.body));
        *resp.status_mut() = self.status;
        *resp.headers_mut() = self.headers;
        resp
    }
}

/// Connection-level headers that belong to one hop, never forwarded.
fn is_hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "host"
            | "content-length"
    )
}

fn response_headers(from: &reqwest::header::HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, value) in from {
        if !is_hop_by_hop(name) {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

pub(super) fn stream_back(resp: reqwest::Response) -> Response {
    let status = resp.status();
    let headers = response_headers(resp.headers());
    let chunks = futures::stream::unfold(Some(resp), |state| async move {
        let mut resp = state?;
        match resp.chunk().await {
            Ok(Some(chunk)) => Some((Ok(chunk), Some(resp))),
            Ok(None) => None,
            Err(e) => Some((Err(std::io::Error::other(e)), None)),
        }
    });
    let mut out = Response::new(Body::from_stream(chunks));
    *out.status_mut() = status;
    *out.headers_mut() = headers;
    out
}
