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
    /// The service asked to wait before trying again: a 429 (a daily quota or a rate limit), a
    /// 503 with `Retry-After`, or the deployment's `success:false` saying so. Nothing was done.
    #[error("rate limited, retry in {}s: {message}", retry_after.as_secs())]
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
        // Where the header is missing (or the deployment answers 200), the body may say how long.
        // At most a day: a wait is added to clock times, and an absurd one (a header of 1e13)
        // would overflow them; a day already says "not today".
        let wait = || {
            Duration::from_secs(
                retry_after
                    .or_else(|| retry_after_in(body, &message))
                    .unwrap_or(60)
                    .min(MAX_WAIT_SECS),
            )
        };
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
                retry_after: wait(),
                message,
            },
            503 if code == "audit_unavailable" => ApiError::AuditUnavailable { message },
            // Busy, and saying when to come back: the request was not handled (RFC 9110 15.6.4),
            // so it is a wait, not an outage to retry through at once.
            503 if retry_after.is_some() => ApiError::QuotaExceeded {
                retry_after: wait(),
                message,
            },
            400 | 422 => ApiError::Invalid {
                code,
                field,
                message,
            },
            // HTTP 200 with success:false, as the real deployment sometimes answers.
            200..=299 if code == "unauthorized" || refuses_the_key(&message) => {
                ApiError::Unauthorized { message }
            }
            200..=299 if says_rate_limited(&code, &message) => ApiError::QuotaExceeded {
                retry_after: wait(),
                message,
            },
            200..=299 => match code.as_str() {
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

/// How long the service asked to wait, when an answer (status, body, `Retry-After` in seconds) is a
/// quota or rate-limit refusal in any of its shapes: a 429, a 503 with `Retry-After`, or HTTP 200
/// `success:false` saying so. None for every other answer. The same reading as [`ApiError`]'s, for
/// callers that hold a raw answer (the gateway's executions) and must not tell a wait from a
/// failure differently.
pub fn rate_limit_wait(status: u16, body: &Value, retry_after: Option<u64>) -> Option<Duration> {
    match ApiError::from_response(status, body, retry_after, None) {
        ApiError::QuotaExceeded { retry_after, .. } => Some(retry_after),
        _ => None,
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

/// The longest wait taken from a `Retry-After` or a body: a day.
pub const MAX_WAIT_SECS: u64 = 86_400;

/// Whether a `success:false` answer on HTTP 200 is a quota or rate limit: the deployment has no 429
/// to say so, only a code (`quota_exceeded`, `RATE_LIMITED`, `too_many_requests`) or a message.
fn says_rate_limited(code: &str, message: &str) -> bool {
    let c = code.to_ascii_lowercase().replace(['-', ' '], "_");
    let m = message.to_ascii_lowercase();
    c.contains("quota_exceeded")
        || c.contains("rate_limit")
        || c == "too_many_requests"
        || m.contains("rate limit")
        || m.contains("rate-limit")
        || m.contains("too many requests")
        || m.contains("quota exceeded")
}

/// The wait a body names: `retryAfter` / `retry_after` (seconds; `retryAfterMs` in milliseconds)
/// at the top, in `error` or in `result`, else "in 30 s" / "after 30 seconds" in the message.
fn retry_after_in(body: &Value, message: &str) -> Option<u64> {
    let number = |v: &Value| match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    for at in ["", "/error", "/result"] {
        let Some(obj) = body.pointer(at).filter(|v| v.is_object()) else {
            continue;
        };
        for key in ["retryAfter", "retry_after", "retryAfterSeconds"] {
            if let Some(s) = obj.get(key).and_then(number).filter(|s| *s >= 0.0) {
                return Some(s.ceil() as u64);
            }
        }
        if let Some(ms) = obj
            .get("retryAfterMs")
            .and_then(number)
            .filter(|s| *s >= 0.0)
        {
            return Some((ms / 1000.0).ceil() as u64);
        }
    }
    // "Too many requests, retry in 30s", "try again after 30 seconds".
    let m = message.to_ascii_lowercase();
    let words: Vec<&str> = m
        .split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')')
        .filter(|w| !w.is_empty())
        .collect();
    for (i, w) in words.iter().enumerate() {
        if !matches!(*w, "in" | "after") {
            continue;
        }
        let Some(next) = words.get(i + 1) else {
            continue;
        };
        let digits: String = next.chars().take_while(char::is_ascii_digit).collect();
        let Ok(n) = digits.parse::<u64>() else {
            continue;
        };
        let unit = next[digits.len()..].trim_end_matches('.');
        let unit = if unit.is_empty() {
            words
                .get(i + 2)
                .map(|u| u.trim_end_matches('.'))
                .unwrap_or("")
        } else {
            unit
        };
        match unit {
            "s" | "sec" | "secs" | "second" | "seconds" => return Some(n),
            "m" | "min" | "mins" | "minute" | "minutes" => return Some(n.saturating_mul(60)),
            "ms" => return Some(n.div_ceil(1000)),
            _ => {}
        }
    }
    None
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

    fn waits(e: &ApiError) -> Option<u64> {
        match e {
            ApiError::QuotaExceeded { retry_after, .. } => Some(retry_after.as_secs()),
            _ => None,
        }
    }

    #[test]
    fn a_rate_limit_is_a_wait_in_every_shape_with_the_wait_from_the_header_or_the_body() {
        // A 503 that says when to come back is a wait; one that does not is an outage.
        let e = ApiError::from_response(503, &json!({"message": "busy"}), Some(7), None);
        assert_eq!(waits(&e), Some(7));
        let e = ApiError::from_response(503, &json!({"message": "busy"}), None, None);
        assert!(e.is_transient() && waits(&e).is_none(), "{e:?}");
        // A 429 without the header: the body's wait.
        let e = ApiError::from_response(429, &json!({"retryAfter": "12"}), None, None);
        assert_eq!(waits(&e), Some(12));
        // The deployment's shape: HTTP 200, success:false, the wait wherever it sits.
        for (body, secs) in [
            (
                json!({"success": false, "code": "RATE_LIMITED", "retryAfter": 30}),
                30,
            ),
            (
                json!({"success": false, "error": "Too many requests, retry in 45s"}),
                45,
            ),
            (
                json!({"success": false, "message": "Rate limit exceeded. Try again in 2 minutes."}),
                120,
            ),
            (
                json!({"success": false, "error": {"code": "quota_exceeded", "message": "daily cap", "retryAfterMs": 1500}}),
                2,
            ),
            (
                json!({"success": false, "result": {"error": "rate limit hit", "retry_after": 9}}),
                9,
            ),
        ] {
            let e = ApiError::from_response(200, &body, None, None);
            assert_eq!(waits(&e), Some(secs), "{body}: {e:?}");
            assert!(!e.is_transient());
        }
        // The header wins over the body; no wait said anywhere is a minute.
        let e = ApiError::from_response(
            200,
            &json!({"success": false, "message": "Too many requests, retry in 45s"}),
            Some(3),
            None,
        );
        assert_eq!(waits(&e), Some(3));
        let e = ApiError::from_response(
            200,
            &json!({"success": false, "code": "too_many_requests"}),
            None,
            None,
        );
        assert_eq!(waits(&e), Some(60));
        assert!(
            e.to_string().starts_with("rate limited, retry in 60s"),
            "{e}"
        );
        // Other failures are not waits.
        let e = ApiError::from_response(
            200,
            &json!({"success": false, "message": "Proposal expired"}),
            None,
            None,
        );
        assert!(waits(&e).is_none());
    }

    #[test]
    fn an_absurd_wait_is_a_day_not_an_overflow() {
        let max = Duration::from_secs(MAX_WAIT_SECS);
        let day = Some(max);
        assert_eq!(
            rate_limit_wait(429, &json!({}), Some(10_000_000_000_000)),
            day
        );
        assert_eq!(
            rate_limit_wait(429, &json!({"retryAfter": 1e300}), None),
            day
        );
        assert_eq!(
            rate_limit_wait(
                200,
                &json!({"success": false, "message": "rate limited, retry in 999999999999999999 minutes"}),
                None
            ),
            day
        );
        // What the gateway and the console do with it: add it to a clock time.
        let _ = chrono::Utc::now() + chrono::Duration::from_std(max).unwrap();
    }

    #[test]
    fn rate_limit_wait_reads_a_raw_answer_as_from_response_does() {
        assert_eq!(
            rate_limit_wait(429, &json!({}), Some(5)),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            rate_limit_wait(
                200,
                &json!({"success": false, "message": "Rate limit exceeded. Try again in 7 seconds."}),
                None
            ),
            Some(Duration::from_secs(7))
        );
        assert_eq!(rate_limit_wait(503, &json!({}), None), None);
        assert_eq!(
            rate_limit_wait(
                200,
                &json!({"success": false, "error": "Proposal expired"}),
                None
            ),
            None
        );
        assert_eq!(
            rate_limit_wait(400, &json!({"error": "bad"}), Some(5)),
            None
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
