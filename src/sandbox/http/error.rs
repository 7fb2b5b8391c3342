//! AppError: the one place every error body is made.

use crate::api::model::{ErrorBody, ErrorDetail};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct AppError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub field: Option<String>,
    pub retry_after: Option<u64>,
    /// For the audit row: what the failed attempt was about.
    pub proposal_id: Option<String>,
}

impl AppError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        AppError {
            status,
            code,
            message: message.into(),
            field: None,
            retry_after: None,
            proposal_id: None,
        }
    }

    /// 400 `invalid_body`, naming the field.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_body", message).with_field(field)
    }

    pub fn invalid_query(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_query", message).with_field(field)
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub fn forbidden(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, code, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }

    pub fn quota(message: impl Into<String>, retry_after: u64) -> Self {
        let mut e = Self::new(StatusCode::TOO_MANY_REQUESTS, "quota_exceeded", message);
        e.retry_after = Some(retry_after);
        e
    }

    pub fn internal(what: impl std::fmt::Display) -> Self {
        tracing::error!("internal error: {what}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the sandbox failed to complete the request; nothing was changed",
        )
    }

    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    pub fn with_proposal(mut self, id: impl Into<String>) -> Self {
        self.proposal_id = Some(id.into());
        self
    }

    pub fn body(&self) -> Value {
        serde_json::to_value(ErrorBody {
            success: false,
            error: ErrorDetail {
                code: self.code.to_string(),
                message: self.message.clone(),
                field: self.field.clone(),
            },
        })
        .unwrap_or(Value::Null)
    }
}

impl From<rusqlite::Error> for AppError {
    fn from(e: rusqlite::Error) -> Self {
        AppError::internal(e)
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, axum::Json(self.body())).into_response();
        if let Some(secs) = self.retry_after
            && let Ok(v) = HeaderValue::from_str(&secs.to_string())
        {
            resp.headers_mut().insert("retry-after", v);
        }
        resp
    }
}
