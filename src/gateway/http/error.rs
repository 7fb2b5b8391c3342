//! Errors and answers as the wire has them.

use super::super::model::error::{GateError, Kind};
use super::super::model::request;
use super::super::upstream::{Answer, Buffered, response_headers};
use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

pub fn status_of(e: &GateError) -> StatusCode {
    StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

impl IntoResponse for GateError {
    fn into_response(self) -> Response {
        let mut resp = (status_of(&self), axum::Json(self.body())).into_response();
        if let Some(secs) = self.retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}

impl IntoResponse for Answer {
    fn into_response(self) -> Response {
        match self {
            Answer::Streamed(resp) => stream_back(resp),
            Answer::Read(b) => buffered(b),
            Answer::Stored { status, body } => {
                let mut resp = Response::new(Body::from(body.to_string()));
                *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
                resp.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                resp
            }
        }
    }
}

fn buffered(b: Buffered) -> Response {
    let mut resp = Response::new(Body::from(b.body));
    *resp.status_mut() = b.status;
    *resp.headers_mut() = b.headers;
    resp
}

/// A request the strict reading refused, as the agent is told.
pub fn read_error(e: request::ReadError) -> GateError {
    match e {
        request::ReadError::Invalid { field, message } => {
            GateError::new(Kind::Invalid, "invalid_body", message).with_field(field)
        }
        request::ReadError::Query { name, message } => {
            GateError::new(Kind::Invalid, "invalid_query", message).with_field(name)
        }
        request::ReadError::UnknownTool { name } => {
            let hint = request::near_tool(&name)
                .map(|op| {
                    format!(
                        " (the catalog's name is {:?}, byte for byte)",
                        op.tool_name()
                    )
                })
                .unwrap_or_default();
            GateError::new(
                Kind::Forbidden,
                "unknown_tool",
                format!(
                    "no tool is named {name:?}{hint}; the gateway forwards only tools of the \
                         catalog (GET /api/delegated/mcp/capabilities), matched exactly"
                ),
            )
            .with_field("name")
        }
    }
}

fn stream_back(resp: reqwest::Response) -> Response {
    let status = resp.status();
    let mut headers = response_headers(resp.headers());
    // Streamed, yet framed as the upstream framed it: a client that reads Content-Length (to
    // size a buffer, to show progress) gets it, and the answer is not re-chunked. Hyper frames
    // the stream by this header; the gateway does not decode the body, so the length holds.
    if let Some(len) = resp.content_length() {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    }
    // The upstream's body as it comes, frame by frame, with no stream adapter in between.
    let mut out = Response::new(Body::new(reqwest::Body::from(resp)));
    *out.status_mut() = status;
    *out.headers_mut() = headers;
    out
}
