//! The gateway's decision error: what kind of refusal or failure, the interface's snake_case code,
//! one sentence, and the field it names. The domain (rules, inbox, execution) speaks only this;
//! `http/` turns it into an answer, and the approval page into a page.

use serde_json::Value;

/// What kind of refusal or failure an error is. Each kind has one status on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The request cannot be read as its operation; `field` names what is wrong.
    Invalid,
    /// No key, or a supervisor credential that is not valid.
    Unauthorized,
    /// Refused: a rule, the kill switch, an approval that is missing, a tool not in the catalog.
    Forbidden,
    NotFound,
    /// The method is not an operation at that path.
    NotAllowed,
    /// The item is not in a state that allows this (already decided, cannot be judged).
    Conflict,
    /// Was valid once, is not any more (an expired item or link).
    Expired,
    TooLarge,
    /// The request's body stopped arriving.
    Timeout,
    /// A fault of the gateway itself.
    Internal,
    /// A caller sent more than its rate limit allows.
    RateLimited,
    /// The upstream answered nothing usable, or could not be reached.
    Upstream,
    /// The upstream did not answer in time.
    UpstreamTimeout,
    /// A part of the gateway is down (its store), or the outcome is not known yet.
    Unavailable,
}

impl Kind {
    /// The status this kind has on the wire. The number belongs here so the approval page and the
    /// API agree on it.
    pub fn status(self) -> u16 {
        match self {
            Kind::Invalid => 400,
            Kind::Unauthorized => 401,
            Kind::Forbidden => 403,
            Kind::NotFound => 404,
            Kind::NotAllowed => 405,
            Kind::Conflict => 409,
            Kind::Expired => 410,
            Kind::Timeout => 408,
            Kind::TooLarge => 413,
            Kind::RateLimited => 429,
            Kind::Internal => 500,
            Kind::Upstream => 502,
            Kind::Unavailable => 503,
            Kind::UpstreamTimeout => 504,
        }
    }
}

/// An error the gateway answers itself, in the project's wire convention.
#[derive(Debug, Clone)]
pub struct GateError {
    pub kind: Kind,
    pub code: &'static str,
    pub message: String,
    pub field: Option<String>,
    /// More members of the error object (a `policy_violation`'s `rule`, `rules`, `verdicts`).
    pub extra: Option<Box<Value>>,
    /// Seconds for a `Retry-After` header: when this call can be made again with a chance.
    pub retry_after: Option<u64>,
}

impl GateError {
    pub fn new(kind: Kind, code: &'static str, message: impl Into<String>) -> Self {
        GateError {
            kind,
            code,
            message: message.into(),
            field: None,
            extra: None,
            retry_after: None,
        }
    }

    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    pub fn status(&self) -> u16 {
        self.kind.status()
    }

    /// The error object of the wire convention: `{"success": false, "error": {...}}`.
    pub fn body(&self) -> Value {
        let extra = match self.extra.as_deref() {
            Some(Value::Object(extra)) => extra.clone(),
            _ => Default::default(),
        };
        let body = Body {
            success: false,
            error: ErrorObject {
                code: self.code,
                message: &self.message,
                field: self.field.as_deref(),
                extra,
            },
        };
        serde_json::to_value(body).expect("an error object always serialises")
    }
}

#[derive(serde::Serialize)]
struct Body<'a> {
    success: bool,
    error: ErrorObject<'a>,
}

#[derive(serde::Serialize)]
struct ErrorObject<'a> {
    code: &'a str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
    /// What a kind of error adds (a policy violation's verdicts); a key here wins over the
    /// fields above, as it always has.
    #[serde(flatten)]
    extra: serde_json::Map<String, Value>,
}
