//! State of the Signals tab: the account's signal destinations, the delivery log of the selected
//! one (an extension, feature-detected), the create form, the signing secret shown once, the
//! fan-out default of `/trade`, and the builder-fee panel. The logic that changes it lives in
//! `app/signals_update.rs`; drawing in `views/signals.rs`.
//!
//! The service's shapes are read tolerantly (camelCase or snake_case, several wrappers), as the
//! typed results of these operations are still being settled on the service side.

use super::poll::Poll;
use crate::api::ApiError;
use crate::secret::Secret;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::time::Duration;

/// Destinations are polled this often while the Signals tab is on screen.
pub const DESTINATIONS_POLL: Duration = Duration::from_secs(15);
/// The selected destination's deliveries are polled this often while the tab is on screen.
pub const DELIVERIES_POLL: Duration = Duration::from_secs(5);
/// The environment variable the builder-fee panel reads the wallet's private key from.
pub const WALLET_KEY_ENV: &str = "AGENTDESK_WALLET_KEY";
/// Directions a destination may filter on.
pub const DIRECTIONS: &[&str] = &["BUY", "SELL", "CLOSE"];

/// One registered destination.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Destination {
    pub id: String,
    pub name: String,
    pub url: String,
    pub strategy_ids: Vec<String>,
    pub directions: Vec<String>,
    pub created_at: Option<DateTime<Utc>>,
    /// Delivery counters as the service names them (`delivered 12 · failed 1`), when it sends any.
    pub stats: Vec<(String, u64)>,
}

/// One delivery of a signal to a destination.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Delivery {
    pub id: String,
    pub status: String,
    pub attempts: u64,
    /// The destination's last HTTP status.
    pub last_status: Option<u64>,
    pub last_error: Option<String>,
    pub next_retry_at: Option<DateTime<Utc>>,
    pub created_at: Option<DateTime<Utc>>,
    /// What was delivered, in a few words (strategy, direction, pair).
    pub signal: String,
}

/// The create form. Every field is checked before anything is sent.
#[derive(Debug, Clone, PartialEq)]
pub struct DestinationForm {
    /// name, url, strategies, directions.
    pub fields: [String; 4],
    pub focus: usize,
    /// Problems found by the last check (or the service's refusal), one per line.
    pub problems: Vec<String>,
    pub sending: bool,
}

pub const FORM_LABELS: [&str; 4] = ["name", "url", "strategies", "directions"];

impl Default for DestinationForm {
    fn default() -> Self {
        DestinationForm {
            fields: [
                String::new(),
                "https://".into(),
                "*".into(),
                DIRECTIONS.join(","),
            ],
            focus: 0,
            problems: Vec::new(),
            sending: false,
        }
    }
}

/// A checked create request.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDestination {
    pub name: String,
    pub url: String,
    pub strategy_ids: Vec<String>,
    pub directions: Vec<String>,
}

impl DestinationForm {
    /// The request, or every problem with the fields.
    pub fn validate(&self) -> Result<NewDestination, Vec<String>> {
        let [name, url, strategies, directions] = &self.fields;
        let mut problems = Vec::new();
        let name = name.trim();
        if name.is_empty() {
            problems.push("name: required".to_string());
        } else if name.chars().count() > 64 {
            problems.push("name: at most 64 characters".to_string());
        }
        let url = url.trim();
        if let Err(why) = check_https_url(url) {
            problems.push(format!("url: {why}"));
        }
        let strategy_ids = split_list(strategies);
        if strategy_ids.is_empty() {
            problems.push("strategies: list strategy ids, or * for all".to_string());
        } else if strategy_ids.len() > 1 && strategy_ids.iter().any(|s| s == "*") {
            problems.push("strategies: * stands alone (it means every strategy)".to_string());
        } else if let Some(bad) = strategy_ids.iter().find(|s| {
            s.as_str() != "*"
                && !s
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        }) {
            problems.push(format!(
                "strategies: `{bad}` is not a strategy id (letters, digits, _ - .)"
            ));
        }
        let mut dirs = Vec::new();
        for d in split_list(directions) {
            let up = d.to_ascii_uppercase();
            if !DIRECTIONS.contains(&up.as_str()) {
                problems.push(format!(
                    "directions: `{d}` is not one of {}",
                    DIRECTIONS.join(", ")
                ));
            } else if !dirs.contains(&up) {
                dirs.push(up);
            }
        }
        if dirs.is_empty() && !problems.iter().any(|p| p.starts_with("directions")) {
            problems.push(format!(
                "directions: at least one of {}",
                DIRECTIONS.join(", ")
            ));
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(NewDestination {
            name: name.to_string(),
            url: url.to_string(),
            strategy_ids,
            directions: dirs,
        })
    }
}

fn split_list(text: &str) -> Vec<String> {
    text.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// An absolute `https://` URL with a host, no spaces and no credentials.
pub fn check_https_url(url: &str) -> Result<(), String> {
    let Some(rest) = url.strip_prefix("https://") else {
        return Err("must start with https://".into());
    };
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must not contain spaces".into());
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err("must not carry credentials (user@host)".into());
    }
    let (host, port) = match authority.find(']') {
        Some(end) => (&authority[..=end], authority[end + 1..].strip_prefix(':')),
        None => match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        },
    };
    if let Some(port) = port
        && port.parse::<u16>().is_err()
    {
        return Err(format!("invalid port `{port}`"));
    }
    if host.is_empty() || host.starts_with('.') || host.starts_with('-') {
        return Err("needs a host, e.g. https://example.com/hook".into());
    }
    Ok(())
}

/// The signing secret of a destination just created, shown once in an overlay. Dropped when the
/// overlay closes.
#[derive(Debug, Clone, PartialEq)]
pub struct Revealed {
    pub name: String,
    pub id: String,
    pub secret: Secret,
    pub copied: bool,
}

/// The builder-fee approval payload, as far as the console reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct BuilderPayload {
    pub typed: Option<crate::api::eip712::TypedData>,
    pub authorized: bool,
    pub nonce: Option<u64>,
    /// `signatureChainId` for the POST (hex), from the payload or the domain's chainId.
    pub chain_id_hex: Option<String>,
}

/// The builder-fee panel (an overlay).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BuilderPanel {
    /// The account's wallet (whoami's `walletAddress`).
    pub wallet: Option<String>,
    pub loading: bool,
    pub payload: Option<BuilderPayload>,
    /// Why the panel cannot go on (no wallet, no key, wrong key, the service's refusal).
    pub error: Option<String>,
    pub sending: bool,
    /// The service's answer to the approval.
    pub result: Option<String>,
    pub scroll: u16,
}

#[derive(Debug, Clone, Default)]
pub struct SignalsState {
    pub destinations: Vec<Destination>,
    /// Polled while the tab is on screen.
    pub dest_poll: Poll,
    pub dest_error: Option<String>,
    /// Deliveries of `deliveries_for`, newest first.
    pub deliveries: Vec<Delivery>,
    pub deliveries_for: Option<String>,
    pub deliv_poll: Poll,
    pub deliv_error: Option<String>,
    /// False once the service answered 404/501 to the delivery log (an extension).
    pub deliveries_unsupported: bool,
    /// `/trade` fans out when it does not say `fanout=`.
    pub fanout_default: bool,
    pub form: Option<DestinationForm>,
    pub revealed: Option<Revealed>,
    pub builder: Option<BuilderPanel>,
}

impl SignalsState {
    pub fn new() -> Self {
        SignalsState {
            fanout_default: true,
            ..Default::default()
        }
    }
}

/// The wallet key from [`WALLET_KEY_ENV`], read only when a signature is asked for.
pub fn wallet_key_from_env() -> Option<Secret> {
    std::env::var(WALLET_KEY_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .map(Secret::new)
}

/// True when an error means "this service does not offer the operation".
pub fn is_unsupported(e: &ApiError) -> bool {
    matches!(e, ApiError::NotFound { .. }) || matches!(e, ApiError::Server { status: 501, .. })
}

// ---- tolerant reading of the service's JSON ------------------------------------------------------

fn field<'a>(v: &'a Value, names: &[&str]) -> Option<&'a Value> {
    names
        .iter()
        .find_map(|n| v.get(*n).filter(|x| !x.is_null()))
}

fn text(v: &Value, names: &[&str]) -> Option<String> {
    field(v, names).map(|x| match x {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

fn number(v: &Value, names: &[&str]) -> Option<u64> {
    field(v, names).and_then(|x| match x {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    })
}

fn strings(v: &Value, names: &[&str]) -> Vec<String> {
    match field(v, names) {
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
            .collect(),
        Some(Value::String(s)) => split_list(s),
        _ => Vec::new(),
    }
}

/// A time as RFC 3339 text or epoch milliseconds/seconds.
fn time(v: &Value, names: &[&str]) -> Option<DateTime<Utc>> {
    match field(v, names)? {
        Value::String(s) => DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|t| t.with_timezone(&Utc)),
        Value::Number(n) => {
            let n = n.as_i64()?;
            if n > 10_000_000_000 {
                DateTime::from_timestamp_millis(n)
            } else {
                DateTime::from_timestamp(n, 0)
            }
        }
        _ => None,
    }
}

/// The list inside a response: the body itself, or its first array under one of `names`.
fn list<'a>(body: &'a Value, names: &[&str]) -> &'a [Value] {
    if let Value::Array(a) = body {
        return a;
    }
    for n in names.iter().chain(["data", "items", "results"].iter()) {
        match body.get(*n) {
            Some(Value::Array(a)) => return a,
            Some(inner @ Value::Object(_)) => {
                let l = list(inner, names);
                if !l.is_empty() {
                    return l;
                }
            }
            _ => {}
        }
    }
    &[]
}

pub fn parse_destination(v: &Value) -> Destination {
    let mut stats = Vec::new();
    if let Some(Value::Object(m)) = field(
        v,
        &["deliveryStats", "delivery_stats", "stats", "deliveries"],
    ) {
        for (k, x) in m {
            if let Some(n) = x.as_u64() {
                stats.push((k.clone(), n));
            }
        }
    }
    Destination {
        id: text(v, &["id", "destinationId", "destination_id"]).unwrap_or_default(),
        name: text(v, &["name", "label"]).unwrap_or_default(),
        url: text(v, &["url"]).unwrap_or_default(),
        strategy_ids: strings(v, &["strategyIds", "strategy_ids", "strategies"]),
        directions: strings(v, &["directions"]),
        created_at: time(v, &["createdAt", "created_at"]),
        stats,
    }
}

pub fn parse_destinations(body: &Value) -> Vec<Destination> {
    list(body, &["destinations", "signalDestinations"])
        .iter()
        .map(parse_destination)
        .collect()
}

pub fn parse_delivery(v: &Value) -> Delivery {
    let signal = field(v, &["signal", "payload", "event"]).unwrap_or(v);
    let words: Vec<String> = [
        text(signal, &["strategy", "strategyId", "strategy_id"]),
        text(signal, &["direction", "d", "side"]),
        text(signal, &["pair", "a", "coin", "symbol"]),
    ]
    .into_iter()
    .flatten()
    .collect();
    Delivery {
        id: text(v, &["id", "deliveryId", "delivery_id"]).unwrap_or_default(),
        status: text(v, &["status", "state"]).unwrap_or_default(),
        attempts: number(v, &["attempts", "attemptCount", "attempt_count"]).unwrap_or(0),
        last_status: number(
            v,
            &[
                "lastStatus",
                "lastStatusCode",
                "last_status",
                "last_status_code",
                "responseStatus",
            ],
        ),
        last_error: text(v, &["lastError", "last_error", "error"]),
        next_retry_at: time(
            v,
            &[
                "nextRetryAt",
                "next_retry_at",
                "nextAttemptAt",
                "next_attempt_at",
            ],
        ),
        created_at: time(v, &["createdAt", "created_at"]),
        signal: words.join(" "),
    }
}

pub fn parse_deliveries(body: &Value) -> Vec<Delivery> {
    list(body, &["deliveries"])
        .iter()
        .map(parse_delivery)
        .collect()
}

/// The answer to create_signal_destination with its signing secret taken out of the JSON at once,
/// so no Debug of an Action or a Value can ever print it.
#[derive(Debug, Clone, PartialEq)]
pub struct Created {
    pub body: Value,
    pub secret: Option<Secret>,
}

/// Takes `signingSecret` out of the answer (top level, or under `destination`/`data`).
pub fn split_secret(mut body: Value) -> Created {
    let mut secret = None;
    let mut take = |v: &mut Value| {
        if let Some(m) = v.as_object_mut() {
            for k in ["signingSecret", "signing_secret"] {
                if let Some(Value::String(s)) = m.remove(k) {
                    secret = Some(Secret::new(s));
                }
            }
        }
    };
    take(&mut body);
    for k in ["destination", "data"] {
        if let Some(inner) = body.get_mut(k) {
            take(inner);
        }
    }
    Created { body, secret }
}

/// The destination just created.
pub fn parse_created(body: &Value) -> Destination {
    let inner = field(body, &["destination", "data"])
        .filter(|v| v.is_object())
        .unwrap_or(body);
    parse_destination(inner)
}

pub fn parse_builder_payload(body: &Value) -> BuilderPayload {
    let typed_value = field(
        body,
        &["typedData", "typed_data", "payload", "eip712", "data"],
    )
    .filter(|v| v.get("types").is_some())
    .or_else(|| body.get("types").map(|_| body));
    let typed: Option<crate::api::eip712::TypedData> =
        typed_value.and_then(|v| serde_json::from_value(v.clone()).ok());
    let nonce = number(body, &["nonce"]).or_else(|| {
        typed
            .as_ref()
            .and_then(|t| number(&t.message, &["nonce", "time"]))
    });
    let chain_id_hex = text(body, &["signatureChainId", "signature_chain_id"]).or_else(|| {
        typed.as_ref().and_then(|t| match t.domain.get("chainId")? {
            Value::Number(n) => n.as_u64().map(|n| format!("0x{n:x}")),
            Value::String(s) if s.starts_with("0x") => Some(s.clone()),
            Value::String(s) => s.parse::<u64>().ok().map(|n| format!("0x{n:x}")),
            _ => None,
        })
    });
    let authorized = field(body, &["authorized", "approved", "isAuthorized"])
        .and_then(Value::as_bool)
        .unwrap_or(false);
    BuilderPayload {
        typed,
        authorized,
        nonce,
        chain_id_hex,
    }
}

/// Typed-data values as one line each: strings as written, numbers and the rest as JSON.
pub fn show_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
