//! State of the Signals tab: the account's signal destinations, the delivery log of the selected
//! one (an extension, feature-detected), the create form, the signing secret shown once, the
//! fan-out default of `/trade`, and the builder-fee panel. The tab is a component (`update.rs`,
//! `view.rs`); its modals own their state in the modal slot, and App's side of them is
//! `app/signal_modals.rs`.

pub mod rows;
mod update;
pub use update::describe_trade;
pub mod view;

use crate::api::ApiError;
use crate::api::model::{BuilderFeePayload, SignalDelivery, SignalDestination};
use crate::console::poll::Poll;
use crate::secret::Secret;
use serde_json::Value;
use std::time::Duration;

pub use crate::console::forms::signals::{
    BuilderPanel, BuilderPayload, DIRECTIONS, DestinationForm, FORM_LABELS, NewDestination,
    Revealed, check_https_url,
};

/// Destinations are polled this often while the Signals tab is on screen.
pub const DESTINATIONS_POLL: Duration = Duration::from_secs(15);
/// The selected destination's deliveries are polled this often while the tab is on screen.
pub const DELIVERIES_POLL: Duration = Duration::from_secs(5);
/// The environment variable the builder-fee panel reads the wallet's private key from.
pub const WALLET_KEY_ENV: &str = "AGENTDESK_WALLET_KEY";
#[derive(Debug, Clone, Default)]
pub struct SignalsTab {
    destinations: Vec<SignalDestination>,
    /// Polled while the tab is on screen.
    dest_poll: Poll,
    dest_error: Option<String>,
    /// Deliveries of `deliveries_for`, newest first.
    deliveries: Vec<SignalDelivery>,
    deliveries_for: Option<String>,
    deliv_poll: Poll,
    deliv_error: Option<String>,
    /// False once the service answered 404/501 to the delivery log (an extension).
    deliveries_unsupported: bool,
    /// `/trade` fans out when it does not say `fanout=`.
    fanout_default: bool,
}

impl SignalsTab {
    pub fn new() -> Self {
        SignalsTab {
            fanout_default: true,
            ..Default::default()
        }
    }

    pub fn destinations(&self) -> &[SignalDestination] {
        &self.destinations
    }

    /// Rows of the Deliveries pane.
    pub fn deliveries(&self) -> usize {
        self.deliveries.len()
    }

    /// `/trade` fans out when it does not say `fanout=`.
    pub fn fanout_default(&self) -> bool {
        self.fanout_default
    }

    /// False once the service answered 404/501 to the delivery log (an extension).
    pub fn deliveries_supported(&self) -> bool {
        !self.deliveries_unsupported
    }

    /// The destinations answered once (the clock ages them on screen from then).
    pub fn loaded(&self) -> bool {
        self.dest_poll.updated_at.is_some()
    }

    /// A delivery shown waits for a retry after `now` (its countdown is on screen).
    pub fn retry_pending(&self, now: chrono::DateTime<chrono::Utc>) -> bool {
        self.deliveries
            .iter()
            .any(|d| d.next_attempt_at.is_some_and(|t| t > now))
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
