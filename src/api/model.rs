//! Wire types, shared by the client (which reads them) and the sandbox (which writes them).
//!
//! Decoding is tolerant on purpose: the real deployment's shapes are only partly known, so every
//! response type keeps unknown fields in `extra`, defaults missing ones, and accepts numbers written as
//! JSON numbers or as numeric text. Venue rows are written with decimal strings, as the venue does.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub type Extra = Map<String, Value>;

/// Number-or-numeric-text (de)serializers.
pub mod num {
    use serde::de::{self, Deserializer, Visitor};
    use serde::{Deserialize, Serializer};
    use std::fmt;

    struct NumVisitor;

    impl<'de> Visitor<'de> for NumVisitor {
        type Value = f64;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a number or numeric text")
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
            Ok(v)
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
            Ok(v as f64)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
            Ok(v as f64)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
            let t = v.trim();
            match t.parse::<f64>() {
                Ok(x) if x.is_finite() => Ok(x),
                _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
            }
        }
    }

    /// Accepts `1.5` or `"1.5"`.
    pub fn de<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        d.deserialize_any(NumVisitor)
    }

    /// Accepts `1.5`, `"1.5"`, `null`, `""` or a missing field.
    pub fn de_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(f64),
            Text(String),
        }
        match Option::<Raw>::deserialize(d)? {
            None => Ok(None),
            Some(Raw::Num(x)) => Ok(Some(x)),
            Some(Raw::Text(s)) if s.trim().is_empty() => Ok(None),
            Some(Raw::Text(s)) => match s.trim().parse::<f64>() {
                Ok(x) if x.is_finite() => Ok(Some(x)),
                _ => Err(de::Error::invalid_value(
                    de::Unexpected::Str(&s),
                    &"a number or numeric text",
                )),
            },
        }
    }

    /// Writes a decimal string the way the venue does: no exponent, trailing zeros trimmed.
    pub fn ser_dec<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::fmt_decimal(*x))
    }

    pub fn ser_dec_opt<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match x {
            Some(x) => s.serialize_str(&super::fmt_decimal(*x)),
            None => s.serialize_none(),
        }
    }

    /// Numeric text in requests (the seed's trade signal writes prices as strings).
    pub fn ser_text_opt<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        ser_dec_opt(x, s)
    }
}

/// Decimal text: up to 8 decimals, trailing zeros trimmed, never an exponent or `-0`.
pub fn fmt_decimal(x: f64) -> String {
    if !x.is_finite() {
        return "0".into();
    }
    let mut s = format!("{x:.8}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    if s == "-0" { "0".into() } else { s }
}

/// One of, or a list of; the cancel body's `oid` takes either.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: Clone> OneOrMany<T> {
    pub fn to_vec(&self) -> Vec<T> {
        match self {
            OneOrMany::One(x) => vec![x.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

// ---- errors --------------------------------------------------------------------------------------

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub success: bool,
    pub error: ErrorDetail,
}

// ---- identity and usage --------------------------------------------------------------------------

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Whoami {
    #[serde(default)]
    pub messenger_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wallet_address: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Legacy compatibility flags.
    #[serde(default)]
    pub is_legacy_key: bool,
    #[serde(default)]
    pub can_use_trades: bool,
    #[serde(default)]
    pub can_use_platform_orders: bool,
    #[serde(default)]
    pub must_stage: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<WhoamiSummary>,
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

/// Readiness flags for the venue (`include=summary`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WhoamiSummary {
    #[serde(default)]
    pub venue_ready: bool,
    #[serde(default)]
    pub wallet_connected: bool,
    #[serde(default)]
    pub builder_fee_approved: bool,
    #[serde(default)]
    pub paper_trading: bool,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub equity: Option<f64>,
    #[serde(default)]
    pub open_positions: u32,
    #[serde(default)]
    pub staged_proposals: u32,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaCounter {
    #[serde(default)]
    pub used: u64,
    #[serde(default)]
    pub limit: u64,
    #[serde(default)]
    pub remaining: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub output: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentUsage {
    #[serde(default)]
    pub paid_requests: u64,
    #[serde(default, deserialize_with = "num::de")]
    pub amount_usd: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// The UTC day the counters cover (YYYY-MM-DD).
    #[serde(default)]
    pub period: String,
    #[serde(default)]
    pub api_post_quota: QuotaCounter,
    #[serde(default)]
    pub compute: QuotaCounter,
    #[serde(default)]
    pub tokens: TokenUsage,
    #[serde(default)]
    pub payment: PaymentUsage,
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

// ---- positions, PnL, orders ----------------------------------------------------------------------

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Leverage {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub value: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CumFunding {
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub all_time: f64,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub since_open: f64,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub since_change: f64,
}

/// A position in the venue's shape (decimal strings), plus `exchange`, `side`, `markPx` and
/// `positionId` (ours).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PositionRow {
    #[serde(default)]
    pub exchange: String,
    #[serde(default)]
    pub position_id: String,
    #[serde(default)]
    pub coin: String,
    #[serde(default)]
    pub side: String,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub szi: f64,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub entry_px: f64,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub mark_px: f64,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub position_value: f64,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub unrealized_pnl: f64,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub return_on_equity: f64,
    #[serde(
        default,
        serialize_with = "num::ser_dec_opt",
        deserialize_with = "num::de_opt"
    )]
    pub liquidation_px: Option<f64>,
    #[serde(default)]
    pub leverage: Leverage,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub margin_used: f64,
    #[serde(default)]
    pub max_leverage: u32,
    #[serde(default)]
    pub cum_funding: CumFunding,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Positions {
    #[serde(default)]
    pub positions: Vec<PositionRow>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PnlPeriods {
    #[serde(default, deserialize_with = "num::de")]
    pub total: f64,
    #[serde(default, deserialize_with = "num::de")]
    pub today: f64,
    #[serde(default, deserialize_with = "num::de")]
    pub week: f64,
    #[serde(default, deserialize_with = "num::de")]
    pub month: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExchangeBreakdown {
    #[serde(default)]
    pub exchange: String,
    #[serde(default, deserialize_with = "num::de")]
    pub account_value: f64,
    #[serde(default, deserialize_with = "num::de")]
    pub unrealized_pnl: f64,
    #[serde(default, deserialize_with = "num::de")]
    pub margin_used: f64,
    #[serde(default)]
    pub positions: u32,
}

/// The venue's margin summary (decimal strings).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MarginSummary {
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub account_value: f64,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub total_margin_used: f64,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub total_ntl_pos: f64,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub total_raw_usd: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PnlSummary {
    #[serde(default, deserialize_with = "num::de")]
    pub total_portfolio_value: f64,
    #[serde(rename = "totalUnrealizedPnL", default, deserialize_with = "num::de")]
    pub total_unrealized_pnl: f64,
    #[serde(rename = "totalRealizedPnL", default, deserialize_with = "num::de")]
    pub total_realized_pnl: f64,
    #[serde(default)]
    pub total_positions: u32,
    #[serde(default)]
    pub pnl: PnlPeriods,
    #[serde(default)]
    pub exchange_breakdown: Vec<ExchangeBreakdown>,
    #[serde(default)]
    pub margin_summary: MarginSummary,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub withdrawable: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<DateTime<Utc>>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A resting order in the venue's frontend shape, plus `exchange`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenOrderRow {
    #[serde(default)]
    pub exchange: String,
    #[serde(default)]
    pub oid: u64,
    #[serde(default)]
    pub coin: String,
    /// "B" (bid, buy) or "A" (ask, sell).
    #[serde(default)]
    pub side: String,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub limit_px: f64,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub sz: f64,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub orig_sz: f64,
    #[serde(default)]
    pub order_type: String,
    #[serde(
        default,
        serialize_with = "num::ser_dec_opt",
        deserialize_with = "num::de_opt"
    )]
    pub trigger_px: Option<f64>,
    #[serde(default)]
    pub trigger_condition: String,
    #[serde(default)]
    pub is_trigger: bool,
    #[serde(default)]
    pub is_position_tpsl: bool,
    #[serde(default)]
    pub reduce_only: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tif: Option<String>,
    /// Milliseconds since the epoch.
    #[serde(default)]
    pub timestamp: i64,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OpenOrders {
    #[serde(default)]
    pub exchange: String,
    #[serde(default)]
    pub orders: Vec<OpenOrderRow>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// An execution, in the venue's user-fill shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FillRow {
    #[serde(default)]
    pub exchange: String,
    #[serde(default)]
    pub oid: u64,
    #[serde(default)]
    pub coin: String,
    #[serde(default)]
    pub side: String,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub px: f64,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub sz: f64,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub fee: f64,
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub closed_pnl: f64,
    #[serde(default)]
    pub dir: String,
    /// Milliseconds since the epoch.
    #[serde(default)]
    pub time: i64,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    #[serde(default)]
    pub id: i64,
    pub time: DateTime<Utc>,
    #[serde(default)]
    pub operation: String,
    /// `ok` or `error`.
    #[serde(default)]
    pub outcome: String,
    #[serde(default)]
    pub http_status: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oid: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AuditLogs {
    #[serde(default)]
    pub logs: Vec<AuditEntry>,
    #[serde(flatten)]
    pub extra: Extra,
}

// ---- trading requests ----------------------------------------------------------------------------

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
    #[serde(default)]
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

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proposal {
    #[serde(default)]
    pub proposal_id: String,
    /// `staged`, `executed`, `expired` or `failed`.
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<DateTime<Utc>>,
    #[serde(default)]
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
    #[serde(default)]
    pub proposals: Vec<Proposal>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// What an execution did: fills, and TP/SL trigger orders it placed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Execution {
    #[serde(default)]
    pub fills: Vec<FillRow>,
    #[serde(default)]
    pub resting: Vec<OpenOrderRow>,
    #[serde(default)]
    pub triggers: Vec<OpenOrderRow>,
    /// The venue's order statuses: `{"filled": {totalSz, avgPx, oid}}` or `{"resting": {oid}}`.
    #[serde(default)]
    pub statuses: Vec<Value>,
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
    #[serde(default)]
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

// ---- discovery, backtests, signals, tools, research ----------------------------------------------
// Their sandbox side lands in later work; the client already speaks them, keeping whatever the server
// sends in `extra` so nothing is lost before the typed fields exist.

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BacktestRequest {
    pub strategy_id: String,
    pub pair: String,
    pub timeframe: String,
    pub days: u32,
    #[serde(default)]
    pub parameters: Map<String, Value>,
}

/// A number that may be absent or undefined (no trades → no win rate): `null` on the wire.
pub type Metric = Option<f64>;

/// Backtest statistics, backtesting.py-grade; percentages are in percent. The seed-observed
/// summary fields (`totalReturn`, `totalTrades`, `winRate`, `maxDrawdown`, `sharpeRatio`,
/// `profitFactor`, `startDate`, `endDate`) sit beside the full set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BacktestStats {
    #[serde(default, deserialize_with = "num::de_opt")]
    pub total_return: Metric,
    #[serde(default)]
    pub total_trades: u32,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub win_rate: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub max_drawdown: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub sharpe_ratio: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub profit_factor: Metric,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_date: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_date: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub buy_hold_return: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub return_ann: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub volatility_ann: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub sortino_ratio: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub calmar_ratio: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub avg_drawdown: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub max_drawdown_duration_days: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub best_trade: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub worst_trade: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub avg_trade: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub expectancy: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub sqn: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub exposure_time: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub avg_trade_duration_days: Metric,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub equity_final: Metric,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EquityPoint {
    /// Unix seconds.
    pub t: i64,
    #[serde(deserialize_with = "num::de")]
    pub equity: f64,
    /// Drawdown from the running peak, in percent (≤ 0).
    #[serde(deserialize_with = "num::de")]
    pub drawdown: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BacktestTrade {
    pub entry_time: DateTime<Utc>,
    pub exit_time: DateTime<Utc>,
    /// `long` or `short`.
    pub direction: String,
    #[serde(deserialize_with = "num::de")]
    pub entry_px: f64,
    #[serde(deserialize_with = "num::de")]
    pub exit_px: f64,
    #[serde(deserialize_with = "num::de")]
    pub size: f64,
    #[serde(deserialize_with = "num::de")]
    pub pnl: f64,
    #[serde(deserialize_with = "num::de")]
    pub return_pct: f64,
    /// `signal`, `stop_loss`, `take_profit` or `end_of_data`.
    pub exit_reason: String,
    #[serde(default)]
    pub bars: u32,
}

/// What a finished job carries in `data`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BacktestData {
    #[serde(flatten)]
    pub stats: BacktestStats,
    #[serde(default)]
    pub strategy_id: String,
    #[serde(default)]
    pub pair: String,
    #[serde(default)]
    pub timeframe: String,
    #[serde(default)]
    pub days: u32,
    #[serde(default)]
    pub parameters: Map<String, Value>,
    #[serde(default)]
    pub bars: u32,
    #[serde(default)]
    pub equity: Vec<EquityPoint>,
    #[serde(default)]
    pub trades: Vec<BacktestTrade>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BacktestJob {
    #[serde(default)]
    pub job_id: String,
    #[serde(default)]
    pub poll_url: String,
    /// `queued`, `running`, `done` or `failed`.
    #[serde(default)]
    pub status: String,
    /// 0-100.
    #[serde(default)]
    pub progress: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<BacktestRequest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<BacktestData>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorDetail>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StrategyParam {
    pub name: String,
    /// `integer` or `number`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(deserialize_with = "num::de")]
    pub default: f64,
    #[serde(deserialize_with = "num::de")]
    pub min: f64,
    #[serde(deserialize_with = "num::de")]
    pub max: f64,
    #[serde(deserialize_with = "num::de")]
    pub step: f64,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StrategyEntry {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub category: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub entry_summary: String,
    #[serde(default)]
    pub exit_summary: String,
    #[serde(default)]
    pub indicator_summary: String,
    #[serde(default)]
    pub parameters: Vec<StrategyParam>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Strategies {
    #[serde(default)]
    pub strategies: Vec<StrategyEntry>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A ranked discovery row: a strategy with parameters on a pair and timeframe, and its results.
/// Top backtests, top live and optimized combos all use it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveryRow {
    #[serde(default)]
    pub id: String,
    pub strategy_id: String,
    #[serde(default)]
    pub strategy_name: String,
    #[serde(default)]
    pub category: String,
    #[serde(default)]
    pub pair: String,
    #[serde(default)]
    pub timeframe: String,
    #[serde(default)]
    pub days: u32,
    #[serde(default)]
    pub parameters: Map<String, Value>,
    #[serde(default)]
    pub param_hash: String,
    /// `good`, `excellent` or `poor`, by the documented thresholds.
    #[serde(default)]
    pub quality: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_within_strategy: Option<u32>,
    #[serde(flatten)]
    pub stats: BacktestStats,
}

/// Answer of the three ranked discovery operations. `computing` is true while the cache behind it
/// is still being filled: the rows are what is ready.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Discovery {
    /// Written as `results` (top backtests, top live) or `combos` (optimized combos, as the
    /// deployment names it); read from either.
    #[serde(default, rename = "results", alias = "rows", alias = "combos")]
    pub rows: Vec<DiscoveryRow>,
    #[serde(default)]
    pub count: u32,
    #[serde(default)]
    pub computing: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub computed_at: Option<DateTime<Utc>>,
    #[serde(flatten)]
    pub extra: Extra,
}

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
    #[serde(default)]
    pub total: u64,
    #[serde(default)]
    pub pending: u64,
    #[serde(default)]
    pub retrying: u64,
    #[serde(default)]
    pub delivered: u64,
    #[serde(default)]
    pub failed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
    #[serde(default)]
    pub id: i64,
    #[serde(default)]
    pub webhook_id: String,
    /// `pending`, `retrying`, `delivered` or `failed`.
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub attempts: u32,
    #[serde(default)]
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
    pub deliveries: Vec<SignalDelivery>,
    #[serde(flatten)]
    pub extra: Extra,
}

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
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
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

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

// ---- tool access, chat, research ------------------------------------------------------------

/// One tool of `list_mcp_capabilities`: a catalog operation as `service_<operation>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCapability {
    pub name: String,
    #[serde(default)]
    pub operation: String,
    #[serde(default)]
    pub description: String,
    /// `observe`, `experiment` or `mutate`.
    #[serde(default)]
    pub tier: String,
    #[serde(default)]
    pub method: String,
    #[serde(default)]
    pub path: String,
    /// JSON Schema (draft 2020-12) of `args`.
    #[serde(default)]
    pub input_schema: Value,
    /// Mutate tools answer with a `confirmToken` first.
    #[serde(default)]
    pub requires_confirmation: bool,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Capabilities {
    #[serde(default)]
    pub tools: Vec<ToolCapability>,
    /// Tool names by tier: `{"observe": [...], "experiment": [...], "mutate": [...]}`.
    #[serde(default)]
    pub tiers: Map<String, Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// What `execute_mcp_tool` answers: `{ "result": { ... } }`. For a mutate tool's first call the
/// result carries `confirmToken`, `expiresAt` and a `preview`; re-submitting with
/// `args.confirmToken` runs it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    #[serde(default)]
    pub tool: String,
    #[serde(default)]
    pub result: Value,
    #[serde(default)]
    pub requires_confirmation: bool,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A tool call the chat loop made, and what it returned.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub name: String,
    #[serde(default)]
    pub args: Value,
    #[serde(default)]
    pub result: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorDetail>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatReply {
    /// The assistant's final message.
    #[serde(default)]
    pub reply: String,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Confirm tokens of mutate tools the loop prepared but did not run.
    #[serde(default)]
    pub confirm_tokens: Vec<Value>,
    /// `llm` (the account's provider) or `router` (the deterministic intent router).
    #[serde(default)]
    pub mode: String,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CliReply {
    #[serde(default)]
    pub output: String,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResearchAgent {
    pub agent_id: String,
    #[serde(default)]
    pub name: String,
    /// `lead` or `worker`.
    #[serde(default)]
    pub role: String,
    /// The lead's id for workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// `planning`, `running`, `done`, `failed`, `stopped`.
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub task: String,
    #[serde(default)]
    pub progress: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResearchMessage {
    pub time: DateTime<Utc>,
    /// `user`, `lead` or an agent id.
    pub author: String,
    pub text: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResearchArtifact {
    pub name: String,
    /// `markdown` or `json`.
    pub kind: String,
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResearchRun {
    pub run_id: String,
    #[serde(default)]
    pub task: String,
    /// `active`, `completed`, `stopped` or `failed`.
    #[serde(default)]
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<DateTime<Utc>>,
    /// How the lead planned: `deterministic` or `llm`.
    #[serde(default)]
    pub planner: String,
    #[serde(default)]
    pub agents: Vec<ResearchAgent>,
    #[serde(default)]
    pub transcript: Vec<ResearchMessage>,
    #[serde(default)]
    pub artifacts: Vec<ResearchArtifact>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `research_status`: the account's active (or latest) run, if any.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResearchStatus {
    #[serde(default)]
    pub run: Option<ResearchRun>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A body whose typed fields are not settled yet: everything is kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Loose {
    #[serde(flatten)]
    pub fields: Extra,
}

// ---- catalog -------------------------------------------------------------------------------------

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolEntry {
    pub name: String,
    pub description: String,
    pub method: String,
    pub path: String,
    pub auth: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_params: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub example_body: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCatalog {
    #[serde(default)]
    pub success: bool,
    #[serde(default)]
    pub platform: String,
    #[serde(default)]
    pub tools: Vec<ToolEntry>,
    #[serde(default)]
    pub openapi_url: String,
    #[serde(default)]
    pub onboarding: Value,
    #[serde(flatten)]
    pub extra: Extra,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_plain_text() {
        assert_eq!(fmt_decimal(65000.0), "65000");
        assert_eq!(fmt_decimal(0.00012), "0.00012");
        assert_eq!(fmt_decimal(-1.5), "-1.5");
        assert_eq!(fmt_decimal(-0.000000001), "0");
        assert_eq!(fmt_decimal(1e21), "1000000000000000000000");
    }

    #[test]
    fn numbers_decode_from_text_or_numbers() {
        let a: PnlSummary =
            serde_json::from_str(r#"{"totalPortfolioValue":"100.5","pnl":{"today":-2}}"#).unwrap();
        assert_eq!(a.total_portfolio_value, 100.5);
        assert_eq!(a.pnl.today, -2.0);
        let bad = serde_json::from_str::<PnlSummary>(r#"{"totalPortfolioValue":"abc"}"#);
        assert!(bad.is_err());
    }

    #[test]
    fn unknown_fields_are_kept() {
        let w: Whoami = serde_json::from_str(r#"{"messengerId":"m1","future":{"x":1}}"#).unwrap();
        assert_eq!(w.messenger_id, "m1");
        assert_eq!(w.extra["future"]["x"], 1);
    }

    #[test]
    fn trade_signal_writes_prices_as_text_and_reads_either() {
        let s = TradeSignal {
            a: Some("BTCUSDT".into()),
            p: Some(65000.5),
            ..Default::default()
        };
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["p"], "65000.5");
        let back: TradeSignal = serde_json::from_str(r#"{"p":65000.5,"tp":"70000"}"#).unwrap();
        assert_eq!(back.p, Some(65000.5));
        assert_eq!(back.tp, Some(70000.0));
    }
}
