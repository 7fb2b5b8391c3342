//! The sandbox's domain error: what went wrong (its kind), the interface's snake_case code, one
//! clear sentence, and the offending field. Every caller of an operation — HTTP, MCP tools, chat,
//! the CLI — gets this error; only `http/` turns it into a response.

use crate::api::model::{ErrorBody, ErrorDetail};
use serde_json::Value;

/// What kind of failure an error is. Each kind has one status in the interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad input; `field` names it.
    Invalid,
    /// No credential, or one that is not valid.
    Unauthorized,
    /// x402: the call must be paid for, or its payment was refused.
    PaymentRequired,
    /// The caller may not do this (scope, another key's proposal or token).
    Forbidden,
    NotFound,
    /// The resource is not in a state that allows this (already executed, insufficient margin).
    Conflict,
    /// Was valid once, is not any more (an expired proposal or confirm token).
    Expired,
    PayloadTooLarge,
    /// The request did not arrive in time (a body that stopped coming).
    Timeout,
    /// An Idempotency-Key re-used with another body.
    IdempotencyReused,
    /// A daily cap is reached; `retry_after` says for how many seconds.
    Quota,
    /// A fault of the sandbox itself, never of the input.
    Internal,
    NotImplemented,
    /// A service the sandbox calls on the caller's behalf (an LLM provider) failed.
    Upstream,
    /// A part of the sandbox is down (audit log, backtest workers).
    Unavailable,
}

impl ErrorKind {
    /// The status the interface gives this kind. The number belongs to the domain: audit rows,
    /// tool outcomes and idempotent replays record it, and `http/` answers with it.
    pub fn status(self) -> u16 {
        match self {
            ErrorKind::Invalid => 400,
            ErrorKind::Unauthorized => 401,
            ErrorKind::PaymentRequired => 402,
            ErrorKind::Forbidden => 403,
            ErrorKind::NotFound => 404,
            ErrorKind::Conflict => 409,
            ErrorKind::Expired => 410,
            ErrorKind::Timeout => 408,
            ErrorKind::PayloadTooLarge => 413,
            ErrorKind::IdempotencyReused => 422,
            ErrorKind::Quota => 429,
            ErrorKind::Internal => 500,
            ErrorKind::NotImplemented => 501,
            ErrorKind::Upstream => 502,
            ErrorKind::Unavailable => 503,
        }
    }

    /// A refusal the caller can fix by changing the request (4xx).
    pub fn is_caller_fault(self) -> bool {
        (400..500).contains(&self.status())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct AppError {
    pub kind: ErrorKind,
    pub code: &'static str,
    pub message: String,
    pub field: Option<String>,
    /// Seconds until a refused call may succeed (quota).
    pub retry_after: Option<u64>,
    /// For the audit row: what the failed attempt was about.
    pub proposal_id: Option<String>,
}

impl AppError {
    pub fn new(kind: ErrorKind, code: &'static str, message: impl Into<String>) -> Self {
        AppError {
            kind,
            code,
            message: message.into(),
            field: None,
            retry_after: None,
            proposal_id: None,
        }
    }

    /// `invalid_body`, naming the field.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Invalid, "invalid_body", message).with_field(field)
    }

    pub fn invalid_query(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Invalid, "invalid_query", message).with_field(field)
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unauthorized, "unauthorized", message)
    }

    pub fn forbidden(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Forbidden, code, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, "not_found", message)
    }

    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conflict, code, message)
    }

    pub fn quota(message: impl Into<String>, retry_after: u64) -> Self {
        let mut e = Self::new(ErrorKind::Quota, "quota_exceeded", message);
        e.retry_after = Some(retry_after);
        e
    }

    pub fn payload_too_large(limit: usize) -> Self {
        Self::new(
            ErrorKind::PayloadTooLarge,
            "payload_too_large",
            format!("the request body exceeds {limit} bytes"),
        )
    }

    pub fn internal(what: impl std::fmt::Display) -> Self {
        tracing::error!("internal error: {what}");
        Self::new(
            ErrorKind::Internal,
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

    pub fn status(&self) -> u16 {
        self.kind.status()
    }

    /// The interface's error body: `{"success": false, "error": {code, message, field?}}`.
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
