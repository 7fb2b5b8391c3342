//! Identity, usage, positions, PnL, open orders, fills and the audit log.

use super::{Extra, lenient, num};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

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
    /// Whether the account trades on a paper venue: `true`/`false`, or the text `"true"` /
    /// `"false"` (any case); absent or anything else is None (not said). Never fails the whoami.
    #[serde(default, deserialize_with = "flag_opt")]
    pub paper_trading: Option<bool>,
    #[serde(default, deserialize_with = "num::de_opt")]
    pub equity: Option<f64>,
    #[serde(default, deserialize_with = "num::int")]
    pub open_positions: u32,
    #[serde(default, deserialize_with = "num::int")]
    pub staged_proposals: u32,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaCounter {
    #[serde(default, deserialize_with = "num::int")]
    pub used: u64,
    #[serde(default, deserialize_with = "num::int")]
    pub limit: u64,
    #[serde(default, deserialize_with = "num::int")]
    pub remaining: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    #[serde(default, deserialize_with = "num::int")]
    pub input: u64,
    #[serde(default, deserialize_with = "num::int")]
    pub output: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentUsage {
    #[serde(default, deserialize_with = "num::int")]
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
    #[serde(default, deserialize_with = "num::int")]
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
    #[serde(default, deserialize_with = "num::int")]
    pub max_leverage: u32,
    #[serde(default)]
    pub cum_funding: CumFunding,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Positions {
    #[serde(default, deserialize_with = "lenient::rows")]
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
    #[serde(default, deserialize_with = "num::int")]
    pub positions: u32,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The venue's margin summary (decimal strings).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MarginSummary {
    #[serde(default, serialize_with = "num::ser_dec", deserialize_with = "num::de")]
    pub account_value: f64,
    /// None when the service did not send it: a pane shows that, not a margin of 0.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "num::ser_dec_opt",
        deserialize_with = "num::de_opt"
    )]
    pub total_margin_used: Option<f64>,
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
    /// None when the service did not send it (the deployment does not).
    #[serde(
        rename = "totalRealizedPnL",
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "num::de_opt"
    )]
    pub total_realized_pnl: Option<f64>,
    #[serde(default, deserialize_with = "num::int")]
    pub total_positions: u32,
    #[serde(default)]
    pub pnl: PnlPeriods,
    #[serde(default, deserialize_with = "lenient::rows")]
    pub exchange_breakdown: Vec<ExchangeBreakdown>,
    #[serde(default)]
    pub margin_summary: MarginSummary,
    /// None when the service did not send it (the deployment does not).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "num::ser_dec_opt",
        deserialize_with = "num::de_opt"
    )]
    pub withdrawable: Option<f64>,
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
    #[serde(default, deserialize_with = "num::int")]
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
    #[serde(default, deserialize_with = "num::int")]
    pub timestamp: i64,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OpenOrders {
    #[serde(default)]
    pub exchange: String,
    #[serde(default, deserialize_with = "lenient::rows")]
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
    #[serde(default, deserialize_with = "num::int")]
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
    #[serde(default, deserialize_with = "num::int")]
    pub time: i64,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    #[serde(default, deserialize_with = "num::int")]
    pub id: i64,
    /// The epoch when the service sent no time we could read.
    #[serde(
        default,
        alias = "createdAt",
        alias = "timestamp",
        deserialize_with = "num::time"
    )]
    pub time: DateTime<Utc>,
    #[serde(default, alias = "action")]
    pub operation: String,
    /// `ok` or `error` (the deployment: `ok: true|false`).
    #[serde(default, alias = "ok", deserialize_with = "num::outcome")]
    pub outcome: String,
    #[serde(default, deserialize_with = "num::int")]
    pub http_status: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal_id: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "num::int_opt"
    )]
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
    #[serde(default, deserialize_with = "lenient::rows")]
    pub logs: Vec<AuditEntry>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A flag the service may write as a bool or as text; what is neither is not said.
fn flag_opt<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::Bool(b) => Some(b),
        serde_json::Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        },
        _ => None,
    })
}

macro_rules! lenient_rows {
    ($($t:ty),*) => {$(
        impl $crate::api::model::Lenient for $t {
            fn extra_mut(&mut self) -> &mut $crate::api::model::Extra {
                &mut self.extra
            }
        }
    )*};
}
pub(crate) use lenient_rows;

lenient_rows!(
    PositionRow,
    OpenOrderRow,
    FillRow,
    AuditEntry,
    Usage,
    ExchangeBreakdown,
    Whoami,
    PnlSummary
);
