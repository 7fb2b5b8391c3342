//! The venue's builder-fee approval.

use super::{Extra, num};
use serde::{Deserialize, Serialize};
use serde_json::Value;
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BuilderFeeApproval {
    pub venue_wallet: String,
    pub nonce: u64,
    pub signature: Value,
    pub signature_chain_id: String,
}

/// Answer of `approve_builder_fee_payload`: the EIP-712 typed data to sign with the venue wallet and
/// the nonce it carries, or `authorized: true` (then there is nothing to sign).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BuilderFeePayload {
    #[serde(default)]
    pub authorized: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typed_data: Option<Value>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "num::int_opt"
    )]
    pub nonce: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature_chain_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builder: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_fee_rate: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub venue_wallet: Option<String>,
    #[serde(
        rename = "json_summary",
        alias = "jsonSummary",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub json_summary: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Answer of `approve_builder_fee`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BuilderFeeStatus {
    #[serde(default)]
    pub authorized: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub venue_wallet: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builder: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_fee_rate: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "num::int_opt"
    )]
    pub nonce: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_at: Option<String>,
    #[serde(
        rename = "json_summary",
        alias = "jsonSummary",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub json_summary: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}
