//! The supervisor API of a gateway (`/gate/v1`): its inbox items and agents, as the gateway writes
//! them (README "The supervisor API"). Not catalog operations: they exist only on a gateway.

use super::{Extra, Preview};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One staging an agent made through the gateway.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GateItem {
    pub id: String,
    /// The agent's name, else its key fingerprint.
    #[serde(default)]
    pub agent: String,
    #[serde(default)]
    pub agent_fingerprint: String,
    /// The agent's messengerId.
    #[serde(default)]
    pub account: Option<String>,
    /// `trade`, `close`, `close_all` or `tool:<name>`.
    #[serde(default)]
    pub kind: String,
    /// pending, approved, executing, executed, failed, rejected or expired.
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub proposal_id: Option<String>,
    #[serde(default)]
    pub request: Value,
    #[serde(default)]
    pub preview: Value,
    #[serde(default)]
    pub expires_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub created_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub decided_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub decided_by: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    /// The upstream's answer to the execution: `{"status", "body"}`.
    #[serde(default)]
    pub result: Option<Value>,
    /// "waiting for the agent to reconnect", and the like.
    #[serde(default)]
    pub note: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl GateItem {
    /// The trade preview, when the item is a trade or a close the upstream previewed.
    pub fn trade_preview(&self) -> Preview {
        serde_json::from_value(self.preview.clone()).unwrap_or_default()
    }

    /// The upstream's answer body to the execution, when it ran.
    pub fn result_body(&self) -> Option<&Value> {
        self.result.as_ref().and_then(|r| r.get("body"))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateInbox {
    #[serde(default)]
    pub items: Vec<GateItem>,
}

/// The answer to an approve or a reject: the item after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateDecision {
    pub item: GateItem,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GateAgent {
    /// The name, else the fingerprint.
    #[serde(default)]
    pub agent: String,
    #[serde(default)]
    pub fingerprint: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub account: Option<String>,
    #[serde(default)]
    pub first_seen: Option<DateTime<Utc>>,
    #[serde(default)]
    pub last_seen: Option<DateTime<Utc>>,
    /// The gateway holds the agent's key now (it can execute an approval at once).
    #[serde(default)]
    pub connected: bool,
    #[serde(default)]
    pub pending: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateInfo {
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub upstream: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateAgents {
    #[serde(default)]
    pub gateway: Option<GateInfo>,
    #[serde(default)]
    pub agents: Vec<GateAgent>,
}
