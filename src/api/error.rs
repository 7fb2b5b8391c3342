//! Typed errors of the client. Built from the HTTP status and whatever error body the server sent;
//! the real deployment may answer HTTP 200 with `success: false`, which is an error too.

use serde_json::Value;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApiError {
    #[error("the API key was refused: {message}")]
    Unauthorized { message: String },
    #[error("{message}")]
    Forbidden { code: String, message: String },
    #[error("daily quota exceeded, retry in {}s: {message}", retry_after.as_secs())]
    QuotaExceeded {
        retry_after: Duration,
        message: String,
    },
    #[error("the audit log store is unavailable: {message}")]
    AuditUnavailable { message: String },
    #[error("{message}")]
    NotFound { code: String, message: String },
    #[error("{message}")]
    Conflict { code: String, message: String },
    #[error("{message}")]
    Expired { code: String, message: String },
    #[error("{message}")]
    Invalid {
        code: String,
        field: Option<String>,
        message: String,
    },
    #[error("{message}")]
    PayloadTooLarge { message: String },
    #[error("payment required: {message}")]
    PaymentRequired {
        message: String,
        /// The server's `PAYMENT-REQUIRED` header, as sent (base64 JSON).
        requirements: Option<String>,
    },
    #[error("server error {status}: {message}")]
    Server {
        status: u16,
        code: String,
        message: String,
    },
    #[error("could not reach the service: {0}")]
    Transport(String),
    #[error("unexpected response: {0}")]
    Decode(String),
}

impl ApiError {
    /// The server's error code (`proposal_expired`, ...) when there is one.
    pub fn code(&self) -> Option<&str> {
        match self {
            ApiError::Unauthorized { .. } => Some("unauthorized"),
            ApiError::QuotaExceeded { .. } => Some("quota_exceeded"),
            ApiError::AuditUnavailable { .. } => Some("audit_unavailable"),
            ApiError::PayloadTooLarge { .. } => Some("payload_too_large"),
            ApiError::PaymentRequired { .. } => Some("payment_required"),
            ApiError::Forbidden { code, .. }
            | ApiError::NotFound { code, .. }
            | ApiError::Conflict { code, .. }
            | ApiError::Expired { code, .. }
            | ApiError::Invalid { code, .. }
            | ApiError::Server { code, .. } => Some(code),
            ApiError::Transport(_) | ApiError::Decode(_) => None,
        }
    }

    /// Worth retrying as is, later: the request may not have reached the server, or it was busy.
    pub fn is_transient(&self) -> bool {
        match self {
            ApiError::Transport(_) => true,
            ApiError::Server { status, .. } => matches!(status, 502..=504),
            _ => false,
        }
    }

    /// Builds the error for a response. `retry_after` is the `Retry-After` header in seconds.
    pub fn from_response(
        status: u16,
        body: &Value,
        retry_after: Option<u64>,
        payment_required: Option<String>,
    ) -> ApiError {
        let (code, message, field) = extract(body);
        let code = code.unwrap_or_else(|| default_code(status).to_string());
        let message = message.unwrap_or_else(|| format!("HTTP {status}"));
        match status {
            401 => ApiError::Unauthorized { message },
            402 => ApiError::PaymentRequired {
                message,
                requirements: payment_required,
            },
            403 => ApiError::Forbidden { code, message },
            404 => ApiError::NotFound { code, message },
            409 => ApiError::Conflict { code, message },
            410 => ApiError::Expired { code, message },
            413 => ApiError::PayloadTooLarge { message },
            429 => ApiError::QuotaExceeded {
                retry_after: Duration::from_secs(retry_after.unwrap_or(60)),
                message,
            },
            503 if code == "audit_unavailable" => ApiError::AuditUnavailable { message },
            400 | 422 => ApiError::Invalid {
                code,
                field,
                message,
            },
            // HTTP 200 with success:false, as the real deployment sometimes answers.
            200..=299 if code == "unauthorized" || refuses_the_key(&message) => {
                ApiError::Unauthorized { message }
            }
            200..=299 => match code.as_str() {
                "quota_exceeded" => ApiError::QuotaExceeded {
                    retry_after: Duration::from_secs(retry_after.unwrap_or(60)),
                    message,
                },
                "audit_unavailable" => ApiError::AuditUnavailable { message },
                _ => ApiError::Invalid {
                    code,
                    field,
                    message,
                },
            },
            _ => ApiError::Server {
                status,
                code,
                message,
            },
        }
    }
}

fn default_code(status: u16) -> &'static str {
    match status {
        400 => "invalid_body",
        401 => "unauthorized",
        402 => "payment_required",
        403 => "forbidden",
        404 => "not_found",
        409 => "conflict",
        410 => "gone",
        413 => "payload_too_large",
        422 => "unprocessable",
        429 => "quota_exceeded",
        200..=299 => "request_failed",
        _ => "server_error",
    }
}

/// Whether a `success:false` message on HTTP 200 says the key itself was refused ("Invalid API
/// key", "API key revoked", "Unauthorized"): the deployment has no 401 to say so.
fn refuses_the_key(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    let about_key = m.contains("api key") || m.contains("api-key") || m.contains("apikey");
    let refused = [
        "invalid",
        "revoked",
        "expired",
        "missing",
        "unknown",
        "not valid",
        "required",
    ]
    .iter()
    .any(|w| m.contains(w));
    (about_key && refused) || m.contains("unauthorized") || m.contains("unauthenticated")
}

/// Finds code, message and field wherever the server put them: `error` (string or object),
/// `error.message`, `result.error`, `message`, `code`.
fn extract(body: &Value) -> (Option<String>, Option<String>, Option<String>) {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let mut code = None;
    let mut message = None;
    let mut field = None;
    match body.get("error") {
        Some(Value::String(s)) => message = Some(s.clone()),
        Some(obj @ Value::Object(_)) => {
            code = text(obj.get("code"));
            message = text(obj.get("message"));
            field = text(obj.get("field"));
        }
        _ => {}
    }
    if message.is_none() {
        message = match body.pointer("/result/error") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(obj) => text(obj.get("message")),
            None => None,
        };
    }
    if message.is_none() {
        message = text(body.get("message"));
    }
    if code.is_none() {
        code = text(body.get("code"));
    }
    if message.is_none() {
        message = code.clone();
    }
    (code, message, field)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn our_error_body_maps_to_typed_errors() {
        let e = ApiError::from_response(
            400,
            &json!({"success":false,"error":{"code":"invalid_body","message":"bad","field":"pair"}}),
            None,
            None,
        );
        assert_eq!(
            e,
            ApiError::Invalid {
                code: "invalid_body".into(),
                field: Some("pair".into()),
                message: "bad".into()
            }
        );
        let e = ApiError::from_response(429, &json!({}), Some(42), None);
        assert!(
            matches!(e, ApiError::QuotaExceeded { retry_after, .. } if retry_after.as_secs() == 42)
        );
    }

    #[test]
    fn success_false_on_200_is_an_error_wherever_the_message_sits() {
        for body in [
            json!({"success":false,"error":"nope"}),
            json!({"success":false,"result":{"error":"nope"}}),
            json!({"success":false,"message":"nope"}),
            json!({"success":false,"error":{"message":"nope"}}),
        ] {
            let e = ApiError::from_response(200, &body, None, None);
            assert_eq!(e.to_string(), "nope", "{body}");
        }
        let e = ApiError::from_response(
            200,
            &json!({"success":false,"code":"QUEUE_FULL"}),
            None,
            None,
        );
        assert_eq!(e.code(), Some("QUEUE_FULL"));
    }

    #[test]
    fn a_refused_key_on_200_is_unauthorized_wherever_the_message_sits() {
        for body in [
            json!({"success":false,"message":"Invalid API key"}),
            json!({"success":false,"error":"API key revoked"}),
            json!({"success":false,"error":{"message":"Unauthorized"}}),
            json!({"success":false,"code":"unauthorized"}),
        ] {
            let e = ApiError::from_response(200, &body, None, None);
            assert!(matches!(e, ApiError::Unauthorized { .. }), "{body}: {e:?}");
        }
        // A message that merely mentions a key is not a refusal of this one.
        let e = ApiError::from_response(
            200,
            &json!({"success":false,"message":"Proposal not found or expired"}),
            None,
            None,
        );
        assert!(matches!(e, ApiError::Invalid { .. }), "{e:?}");
    }
}
