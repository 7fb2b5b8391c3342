//! Signal destinations (webhooks) and their deliveries.

use super::{Extra, num};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignalDestinationRequest {
    pub url: String,
    #[serde(default)]
    pub strategy_ids: Vec<String>,
    #[serde(default)]
    pub directions: Vec<String>,
    #[serde(default)]
    pub name: String,
}

/// Delivery counts of a destination (extension of list_signal_destinations).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryStats {
    #[serde(default, deserialize_with = "num::int")]
    pub total: u64,
    #[serde(default, deserialize_with = "num::int")]
    pub pending: u64,
    #[serde(default, deserialize_with = "num::int")]
    pub retrying: u64,
    #[serde(default, deserialize_with = "num::int")]
    pub delivered: u64,
    #[serde(default, deserialize_with = "num::int")]
    pub failed: u64,
    /// Null until a delivery succeeded.
    #[serde(default)]
    pub last_delivered_at: Option<DateTime<Utc>>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A registered signal destination. `signingSecret` is present only in the answer of
/// create_signal_destination.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalDestination {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub strategy_ids: Vec<String>,
    #[serde(default)]
    pub directions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deliveries: Option<DeliveryStats>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "secret_opt")]
    pub signing_secret: Option<crate::secret::Secret>,
    #[serde(flatten)]
    pub extra: Extra,
}

mod secret_opt {
    use crate::secret::Secret;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<Secret>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(secret) => s.serialize_str(secret.expose()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Secret>, D::Error> {
        Ok(Option::<String>::deserialize(d)?.map(Secret::new))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalDestinations {
    #[serde(default)]
    pub destinations: Vec<SignalDestination>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The JSON body POSTed to a destination (see the README's "Interface notes").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalEvent {
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub id: String,
    /// `strategy` (a strategy fired on the live feed) or `trade` (a signal placed through
    /// `/api/v1/trades`).
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub strategy_id: Option<String>,
    #[serde(default)]
    pub pair: Option<String>,
    /// `BUY`, `SELL` or `CLOSE`.
    #[serde(default)]
    pub direction: String,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub price: Option<f64>,
    #[serde(default)]
    pub time: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One row of a destination's delivery log (extension list_signal_deliveries).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalDelivery {
    #[serde(default, deserialize_with = "num::int")]
    pub id: i64,
    #[serde(default)]
    pub webhook_id: String,
    /// `pending`, `retrying`, `delivered` or `failed`.
    #[serde(default)]
    pub status: String,
    #[serde(default, deserialize_with = "num::int")]
    pub attempts: u32,
    #[serde(default, deserialize_with = "num::int_opt")]
    pub last_status: Option<u16>,
    #[serde(default)]
    pub last_error: Option<String>,
    #[serde(default)]
    pub next_attempt_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub created_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub delivered_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub event: SignalEvent,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalDeliveries {
    #[serde(default)]
    pub destination_id: String,
    #[serde(default)]
    pub deliveries: Vec<SignalDelivery>,
    #[serde(flatten)]
    pub extra: Extra,
}
