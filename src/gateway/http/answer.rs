//! How the gateway's own answers are written: the header every answer carries and the wire
//! convention's success object. Below every other file of the edge.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// Every answer of a gateway carries this header, so a client can tell it talks to one.
pub const GATEWAY_HEADER: &str = "x-agentdesk-gateway";

pub fn json_response(status: StatusCode, body: &Value) -> Response {
    (status, axum::Json(body)).into_response()
}

/// An answer of the supervisor API in the wire convention: `{"success": true, ...}`.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[schemars(inline, description = "")]
pub struct Success<T> {
    /// Always true: a refusal is an error object with `success: false`.
    #[schemars(extend("enum" = [true]))]
    success: bool,
    #[serde(flatten)]
    body: T,
}

pub fn success<T: serde::Serialize>(body: T) -> Response {
    (
        StatusCode::OK,
        axum::Json(Success {
            success: true,
            body,
        }),
    )
        .into_response()
}
