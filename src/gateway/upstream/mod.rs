//! The client to the upstream service: one request with the agent's key, answers read whole (for
//! what the gateway inspects) or handed back to the edge to stream (for what it forwards).
//! No server types here: the edge turns an [`Answer`] into its response.

use super::model::error::{GateError, Kind};
use super::model::key::AgentKey;
use super::model::request;
use crate::api::catalog::Operation;
use crate::secret::Secret;
use bytes::Bytes;
use reqwest::StatusCode;
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

pub mod notify;

/// A request to a catalog path as the edge read it: for a POST, its body is the checked request
/// serialised again, and its headers are those allowed to go upstream with it.
pub struct Incoming {
    pub op: &'static Operation,
    pub method: reqwest::Method,
    pub path_and_query: String,
    pub headers: HeaderMap,
    /// For a POST, the checked request serialised again: what goes upstream.
    pub body: Bytes,
    pub agent: Option<AgentKey>,
    /// The strict reading of a POST's body ([`request::read`]).
    pub checked: Option<request::Checked>,
    /// The supervisor (token label) whose console sent it, when it said so with a token of
    /// this gateway in `x-agentdesk-supervisor`; never sent upstream.
    pub supervisor: Option<String>,
}

impl Incoming {
    pub fn parsed(&self) -> &request::Parsed {
        static OTHER: request::Parsed = request::Parsed::Other;
        self.checked.as_ref().map(|c| &c.parsed).unwrap_or(&OTHER)
    }

    pub fn canonical(&self) -> Value {
        self.checked
            .as_ref()
            .map(|c| c.canonical.clone())
            .unwrap_or(Value::Null)
    }
}

/// What the agent gets back for a request the gateway let through or answered from its inbox.
pub enum Answer {
    /// The upstream's answer, not read: the edge streams it back.
    Streamed(reqwest::Response),
    /// The upstream's answer, read whole (the gateway inspected it).
    Read(Buffered),
    /// An answer the inbox kept: an execution's, given again to the agent's confirm.
    Stored { status: u16, body: Value },
}

/// The service behind the gateway: one client, one base URL, and the gateway's own key. The only
/// way the domain reaches the service.
pub struct Upstream {
    http: reqwest::Client,
    /// The base URL as configured, for messages.
    base: String,
    /// `base` parsed once: each request sets its path and query on a copy instead of parsing
    /// (and IDNA-checking the host of) a whole URL again.
    url: reqwest::Url,
    /// The gateway's own key for the account, for the supervisor's reads.
    pub key: Option<Secret>,
    timeout: Duration,
    /// When the upstream last answered anything (milliseconds since the epoch; 0: never), for
    /// readiness.
    seen: AtomicI64,
}

impl Upstream {
    pub fn new(
        http: reqwest::Client,
        base: String,
        url: reqwest::Url,
        key: Option<Secret>,
        timeout: Duration,
    ) -> Upstream {
        Upstream {
            http,
            base,
            url,
            key,
            timeout,
            seen: AtomicI64::new(0),
        }
    }

    /// The base URL as configured.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// When the upstream last answered anything, in milliseconds since the epoch (0: never).
    pub fn last_seen_ms(&self) -> i64 {
        self.seen.load(Ordering::Relaxed)
    }

    /// Notes an answer the edge read from the upstream by another way.
    pub fn saw(&self) {
        self.seen
            .store(chrono::Utc::now().timestamp_millis(), Ordering::Relaxed);
    }

    /// Forwards with this key instead of the caller's (the supervisor's reads).
    pub async fn forward(&self, incoming: &Incoming, key: &Secret) -> Result<Answer, GateError> {
        let resp = self
            .send(
                incoming.method.clone(),
                &incoming.path_and_query,
                &incoming.headers,
                Some(key),
                incoming.body.clone(),
            )
            .await?;
        Ok(Answer::Streamed(resp))
    }
}

impl Upstream {
    /// One request to the upstream. `headers` are the caller's, filtered; the key is `key`.
    pub async fn send(
        &self,
        method: reqwest::Method,
        path_and_query: &str,
        headers: &HeaderMap,
        key: Option<&Secret>,
        body: Bytes,
    ) -> Result<reqwest::Response, GateError> {
        let url = self.url_of(path_and_query);
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
                    Kind::Unauthorized,
                    "unauthorized",
                    "the x-api-key header holds characters a key cannot have",
                )
            })?;
            v.set_sensitive(true);
            out.insert("x-api-key", v);
        }
        // One request can be followed from the caller to the service: the id of the request
        // this task serves goes along (an agent's own id is already among its headers).
        if !out.contains_key(crate::api::request_id::HEADER)
            && let Some(id) = crate::api::request_id::request_id()
            && let Ok(v) = HeaderValue::from_str(&id)
        {
            out.insert(crate::api::request_id::HEADER, v);
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
            .request(method.clone(), url)
            .headers(out)
            .timeout(self.timeout);
        if method == reqwest::Method::POST {
            req = req.body(body);
        }
        let start = std::time::Instant::now();
        let sent = req.send().await;
        let method_label = if method == reqwest::Method::POST {
            "POST"
        } else {
            "GET"
        };
        match &sent {
            Ok(_) => {
                self.saw();
                crate::edge::latency(
                    &metrics::histogram!("agentdesk_gateway_upstream_duration_seconds", "method" => method_label),
                    start.elapsed().as_secs_f64(),
                );
            }
            Err(e) => {
                let kind = if e.is_timeout() {
                    "timeout"
                } else {
                    "unreachable"
                };
                metrics::counter!("agentdesk_gateway_upstream_errors_total", "kind" => kind)
                    .increment(1);
            }
        }
        sent.map_err(|e| self.transport_error(&e))
    }

    /// The upstream's URL for a catalog path (and query), under the upstream's own base path.
    fn url_of(&self, path_and_query: &str) -> reqwest::Url {
        let (path, query) = match path_and_query.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (path_and_query, None),
        };
        let mut url = self.url.clone();
        let base = url.path().trim_end_matches('/');
        if base.is_empty() {
            url.set_path(path);
        } else {
            let joined = format!("{base}{path}");
            url.set_path(&joined);
        }
        url.set_query(query);
        url
    }

    pub fn transport_error(&self, e: &reqwest::Error) -> GateError {
        if e.is_timeout() {
            return self.timed_out();
        }
        let mut reason = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            reason = format!("{reason}: {s}");
            source = s.source();
        }
        self.unreachable(&reason)
    }

    /// The upstream did not answer within the gateway's timeout (504).
    pub fn timed_out(&self) -> GateError {
        GateError::new(
            Kind::UpstreamTimeout,
            "upstream_timeout",
            format!(
                "the upstream {} did not answer within {} s",
                self.base,
                self.timeout.as_secs()
            ),
        )
    }

    /// No answer from the upstream at all, for `reason` (502).
    pub fn unreachable(&self, reason: &str) -> GateError {
        GateError::new(
            Kind::Upstream,
            "upstream_unreachable",
            format!("the upstream {} is unreachable ({reason})", self.base),
        )
    }

    /// A POST of a JSON body to a catalog operation with an agent's key, answer read whole.
    pub async fn post_json(
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

    pub async fn get_json(&self, op: &Operation, key: &Secret) -> Result<Buffered, GateError> {
        self.get_json_as(op, Some(key)).await
    }

    /// A GET with this key, or with none.
    pub async fn get_json_as(
        &self,
        op: &Operation,
        key: Option<&Secret>,
    ) -> Result<Buffered, GateError> {
        let resp = self
            .send(
                reqwest::Method::GET,
                op.path,
                &HeaderMap::new(),
                key,
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
    pub async fn read(upstream: &Upstream, resp: reqwest::Response) -> Result<Buffered, GateError> {
        let status = resp.status();
        let headers = response_headers(resp.headers());
        let body = resp
            .bytes()
            .await
            .map_err(|e| upstream.transport_error(&e))?;
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
        succeeded(self.status.as_u16(), &self.body)
    }
}

/// [`Buffered::is_success`], of a status and a whole body.
pub fn succeeded(status: u16, body: &[u8]) -> bool {
    (200..300).contains(&status)
        && serde_json::from_slice::<Value>(body)
            .unwrap_or(Value::Null)
            .get("success")
            != Some(&Value::Bool(false))
}

/// Headers of one connection, never passed on.
pub const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// What is not forwarded of a message the gateway reads whole: its hop's headers, and its
/// `Host` and `Content-Length`, which the new message has of its own.
fn is_hop_by_hop(name: &HeaderName) -> bool {
    not_forwarded(name.as_str().as_bytes())
}

/// [`is_hop_by_hop`], of a name as it was read off the wire (in any case).
pub fn not_forwarded(name: &[u8]) -> bool {
    HOP_BY_HOP
        .iter()
        .chain(&["host", "content-length"])
        .any(|h| name.eq_ignore_ascii_case(h.as_bytes()))
}

pub fn response_headers(from: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, value) in from {
        if !is_hop_by_hop(name) {
            out.append(name.clone(), value.clone());
        }
    }
    out
}
