//! A sandbox's recent candles (`GET /sandbox/v1/candles`): outside the interface, which has no
//! market-data operation; a real service answers the path 404 (README "Interface notes").

use super::num;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Candles {
    #[serde(default)]
    pub coin: String,
    /// `1m`, `5m`, `15m`, `1h`, `4h` or `1d`.
    #[serde(default)]
    pub interval: String,
    /// Closed candles, oldest first.
    #[serde(default)]
    pub candles: Vec<Candle>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Candle {
    /// When the candle opened.
    pub time: DateTime<Utc>,
    #[serde(deserialize_with = "num::de")]
    pub open: f64,
    #[serde(deserialize_with = "num::de")]
    pub high: f64,
    #[serde(deserialize_with = "num::de")]
    pub low: f64,
    #[serde(deserialize_with = "num::de")]
    pub close: f64,
}
