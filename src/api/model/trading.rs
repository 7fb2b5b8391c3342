//! Trading: the staged trade signal, proposals and their execution, platform orders.

use super::{ErrorDetail, Extra, FillRow, OneOrMany, OpenOrderRow, lenient, num};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The seed's trade signal (body of propose and of `/api/v1/trades`), plus sizing extensions
/// (`size`, `sizeUsd`, `leverage`, `exchange`) the seed leaves to account settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TradeSignal {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "num::ser_text_opt",
        deserialize_with = "num::de_opt"
    )]
    pub p: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "num::ser_text_opt",
        deserialize_with = "num::de_opt"
    )]
    pub tp: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "num::ser_text_opt",
        deserialize_with = "num::de_opt"
    )]
    pub sl: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub o: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fanout: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Extension: size in coin units.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "num::ser_text_opt",
        deserialize_with = "num::de_opt"
    )]
    pub size: Option<f64>,
    /// Extension: size as USD notional.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "num::ser_text_opt",
        deserialize_with = "num::de_opt"
    )]
    pub size_usd: Option<f64>,
    /// Extension: leverage (default from the sandbox config).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leverage: Option<u32>,
    /// Extension: `venue` (default) or `venue2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfirmRequest {
    pub proposal_id: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloseRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
}

/// One position a staged close will flatten.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClosePreview {
    #[serde(default)]
    pub exchange: String,
    #[serde(default)]
    pub coin: String,
    #[serde(default, deserialize_with = "num::de")]
    pub szi: f64,
    #[serde(default, deserialize_with = "num::de")]
    pub entry_px: f64,
    #[serde(default, deserialize_with = "num::de")]
    pub mark_px: f64,
    #[serde(default, deserialize_with = "num::de")]
    pub est_pnl: f64,
}

/// What a proposal will execute, priced at staging time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    /// `trade`, `close` or `close_all`.
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub exchange: String,
    #[serde(default)]
    pub coin: String,
    #[serde(default)]
    pub asset: String,
    /// `long`, `short` or `close`.
    #[serde(default)]
    pub direction: String,
    #[serde(default)]
    pub order_type: String,
    #[serde(default, deserialize_with = "num::de")]
    pub size: f64,
    #[serde(default, deserialize_with = "num::de")]
    pub mark_px: f64,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "num::de_opt"
    )]
    pub limit_px: Option<f64>,
    #[serde(default, deserialize_with = "num::de")]
    pub notional: f64,
    #[serde(default, deserialize_with = "num::int")]
    pub leverage: u32,
    #[serde(default, deserialize_with = "num::de")]
    pub margin: f64,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "num::de_opt"
    )]
    pub tp: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "num::de_opt"
    )]
    pub sl: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "num::de_opt"
    )]
    pub est_liquidation_px: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub closes: Vec<ClosePreview>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Where a proposal is in its life, in the service's words (its `status`): the interface names
/// `staged`, `executed` and `expired`, the sandbox adds `failed`. A real deployment may say what
/// neither does, so a word this version does not know is kept as [`ProposalStatus::Other`], written
/// back as it came and shown as it is, and no decision treats it as one it knows: only `Staged`
/// may be approved.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ProposalStatus {
    /// Waiting for a confirm with the key that staged it.
    Staged,
    Executed,
    /// Its five minutes passed without a confirm.
    Expired,
    /// The service tried to execute it and could not; nothing was traded.
    Failed,
    /// A word this version does not know, or none at all (an answer without `status`: the empty
    /// text, as before statuses were types).
    Other(String),
}

impl ProposalStatus {
    pub const KNOWN: [ProposalStatus; 4] = [
        ProposalStatus::Staged,
        ProposalStatus::Executed,
        ProposalStatus::Expired,
        ProposalStatus::Failed,
    ];

    pub fn as_str(&self) -> &str {
        match self {
            ProposalStatus::Staged => "staged",
            ProposalStatus::Executed => "executed",
            ProposalStatus::Expired => "expired",
            ProposalStatus::Failed => "failed",
            ProposalStatus::Other(text) => text,
        }
    }

    /// The answer said no status at all.
    pub fn is_unsaid(&self) -> bool {
        matches!(self, ProposalStatus::Other(text) if text.is_empty())
    }
}

impl Default for ProposalStatus {
    /// What a missing `status` reads as: nothing said, written back as nothing (`""`).
    fn default() -> Self {
        ProposalStatus::Other(String::new())
    }
}

impl std::fmt::Display for ProposalStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for ProposalStatus {
    /// Exactly the service's word: a spelling it does not use (`Executed`) is not taken for one
    /// it does, so it is written back unchanged and never decided on.
    fn from(word: &str) -> ProposalStatus {
        ProposalStatus::KNOWN
            .into_iter()
            .find(|known| known.as_str() == word)
            .unwrap_or_else(|| ProposalStatus::Other(word.to_string()))
    }
}

impl From<String> for ProposalStatus {
    fn from(word: String) -> ProposalStatus {
        match ProposalStatus::from(word.as_str()) {
            ProposalStatus::Other(_) => ProposalStatus::Other(word),
            known => known,
        }
    }
}

/// The status against the service's word for it, as a client reading the wire compares it.
impl PartialEq<str> for ProposalStatus {
    fn eq(&self, word: &str) -> bool {
        self.as_str() == word
    }
}

impl PartialEq<&str> for ProposalStatus {
    fn eq(&self, word: &&str) -> bool {
        self.as_str() == *word
    }
}

impl Serialize for ProposalStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProposalStatus {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(ProposalStatus::from(String::deserialize(d)?))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proposal {
    #[serde(default)]
    pub proposal_id: String,
    #[serde(default)]
    pub status: ProposalStatus,
    #[serde(default)]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient::nested")]
    pub preview: Preview,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<Execution>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorDetail>,
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

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Proposals {
    #[serde(default, deserialize_with = "lenient::rows")]
    pub proposals: Vec<Proposal>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// What an execution did: fills, and TP/SL trigger orders it placed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Execution {
    #[serde(default, deserialize_with = "lenient::rows")]
    pub fills: Vec<FillRow>,
    #[serde(default, deserialize_with = "lenient::rows")]
    pub resting: Vec<OpenOrderRow>,
    #[serde(default, deserialize_with = "lenient::rows")]
    pub triggers: Vec<OpenOrderRow>,
    /// The venue's order statuses: `{"filled": {totalSz, avgPx, oid}}` or `{"resting": {oid}}`.
    #[serde(default, deserialize_with = "statuses")]
    pub statuses: Vec<Value>,
    /// Whether the trade was fanned out to followers and signal destinations (`place_order`
    /// answers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fanout: Option<bool>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Body of confirm, close, trades and platform order answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal_id: Option<String>,
    #[serde(default)]
    pub status: String,
    #[serde(default, deserialize_with = "lenient::nested")]
    pub execution: Execution,
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

/// Body of `/api/v1/orders`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlatformOrder {
    pub pair: String,
    pub side: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizing_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_percentage: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leverage: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange: Option<String>,
    #[serde(default)]
    pub sl_enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sl_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sl_percentage: Option<f64>,
    #[serde(default)]
    pub tp_enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tp_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tp_percentage: Option<f64>,
    /// Extension: limit price when `orderType` is `limit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_price: Option<f64>,
    /// Extension: USD notional when `sizingMode` is `usd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd_amount: Option<f64>,
    /// Extension: coin units when `sizingMode` is `size`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub venue_api_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub venue_wallet: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlatformClose {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentage: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub venue_api_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub venue_wallet: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelRequest {
    pub oid: OneOrMany<u64>,
    pub coin: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub venue_api_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub venue_wallet: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CancelResult {
    /// One per requested oid: `"success"` or `{"error": "..."}`, as the venue answers.
    #[serde(default)]
    pub statuses: Vec<Value>,
    #[serde(default)]
    pub cancelled: Vec<u64>,
    #[serde(flatten)]
    pub extra: Extra,
}

super::account::lenient_rows!(Proposal, Preview, ExecutionResult, Execution);

/// A list of statuses, or `null`.
fn statuses<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Value>, D::Error> {
    Ok(Option::<Vec<Value>>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every word a service sends reads as its status and is written back word for word, an
    /// unknown one (or another spelling of a known one) included: a proposal passed on (the
    /// gateway's reconciliation keeps the service's record) says what the service said.
    #[test]
    fn every_proposal_status_reads_back_from_the_word_it_is_written_in() {
        let cases = [
            (ProposalStatus::Staged, "staged"),
            (ProposalStatus::Executed, "executed"),
            (ProposalStatus::Expired, "expired"),
            (ProposalStatus::Failed, "failed"),
            (ProposalStatus::Other("filled".into()), "filled"),
            (ProposalStatus::Other("Executed".into()), "Executed"),
            (ProposalStatus::Other(String::new()), ""),
        ];
        for (status, word) in cases {
            assert_eq!(status.to_string(), word);
            assert_eq!(ProposalStatus::from(word), status, "{word}");
            assert_eq!(ProposalStatus::from(word.to_string()), status, "{word}");
            let json = serde_json::to_value(&status).unwrap();
            assert_eq!(json, serde_json::json!(word));
            assert_eq!(
                serde_json::from_value::<ProposalStatus>(json).unwrap(),
                status
            );
        }
        assert!(ProposalStatus::default().is_unsaid());
        assert!(!ProposalStatus::Other("pending".into()).is_unsaid());
    }

    /// A proposal written and read again is the same, its status absent or unknown too.
    #[test]
    fn a_proposal_reads_back_as_it_was_written() {
        for text in [
            r#"{"proposalId":"p1","status":"staged","kind":"trade","preview":{"kind":"trade"}}"#,
            r#"{"proposalId":"p1","status":"archived","kind":"","preview":{}}"#,
        ] {
            let p: Proposal = serde_json::from_str(text).unwrap();
            let again: Proposal =
                serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
            assert_eq!(again, p);
        }
        let missing: Proposal = serde_json::from_str(r#"{"proposalId":"p1"}"#).unwrap();
        assert!(missing.status.is_unsaid());
        assert_eq!(
            serde_json::to_value(&missing).unwrap()["status"],
            serde_json::json!("")
        );
    }
}
