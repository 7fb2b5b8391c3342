//! State of the Signals tab: the account's signal destinations, the delivery log of the selected
//! one (an extension, feature-detected), the create form, the signing secret shown once, the
//! fan-out default of `/trade`, and the builder-fee panel. The logic that changes it lives in
//! `update.rs`; drawing in `view.rs`.

mod update;
pub mod view;

use crate::api::ApiError;
use crate::api::model::{BuilderFeePayload, SignalDelivery, SignalDestination};
use crate::console::poll::Poll;
use crate::secret::Secret;
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
    pub destinations: Vec<SignalDestination>,
    /// Polled while the tab is on screen.
    pub dest_poll: Poll,
    pub dest_error: Option<String>,
    /// Deliveries of `deliveries_for`, newest first.
    pub deliveries: Vec<SignalDelivery>,
    pub deliveries_for: Option<String>,
    pub deliv_poll: Poll,
    pub deliv_error: Option<String>,
    /// False once the service answered 404/501 to the delivery log (an extension).
    pub deliveries_unsupported: bool,
    /// `/trade` fans out when it does not say `fanout=`.
    pub fanout_default: bool,
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

/// The builder-fee payload as the panel uses it: the typed data decoded, and the nonce and chain id
/// the approval must repeat (from the payload, else from the typed data they sign).
pub fn builder_payload(body: &BuilderFeePayload) -> BuilderPayload {
    let typed: Option<crate::api::eip712::TypedData> = body
        .typed_data
        .as_ref()
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let nonce = body.nonce.or_else(|| {
        let message = &typed.as_ref()?.message;
        ["nonce", "time"]
            .iter()
            .find_map(|k| message.get(*k)?.as_u64())
    });
    let chain_id_hex = body.signature_chain_id.clone().or_else(|| {
        typed.as_ref().and_then(|t| match t.domain.get("chainId")? {
            Value::Number(n) => n.as_u64().map(|n| format!("0x{n:x}")),
            Value::String(s) if s.starts_with("0x") => Some(s.clone()),
            Value::String(s) => s.parse::<u64>().ok().map(|n| format!("0x{n:x}")),
            _ => None,
        })
    });
    BuilderPayload {
        typed,
        authorized: body.authorized,
        nonce,
        chain_id_hex,
    }
}

/// What a delivery carried, in a few words (strategy, direction, pair).
pub fn delivery_signal(d: &SignalDelivery) -> String {
    let e = &d.event;
    [
        e.strategy_id.as_deref(),
        Some(e.direction.as_str()),
        e.pair.as_deref(),
    ]
    .into_iter()
    .flatten()
    .filter(|w| !w.is_empty())
    .collect::<Vec<_>>()
    .join(" ")
}

/// Typed-data values as one line each: strings as written, numbers and the rest as JSON.
pub fn show_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
