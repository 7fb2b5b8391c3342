//! One rule's answer for one trade, as every rule (the policy's and the pre-trade controls') gives
//! it and the supervisor API shows it.

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// A passing verdict is "near" its limit from this share of it.
pub const NEAR: f64 = 0.8;

/// Whether a figure that passes is near its limit (at or past [`NEAR`] of it): what the console
/// and the notifications warn of. One definition for every rule.
pub fn near(ok: bool, value: f64, limit: f64) -> bool {
    ok && value >= NEAR * limit
}

/// One rule's answer for one trade.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub rule: &'static str,
    pub ok: bool,
    pub limit: Figure,
    /// The trade's figure; `None` (null) when it is not known, or the trade reduces exposure.
    pub value: Option<Figure>,
    /// Passes, at or past 80% of its limit.
    pub near: bool,
    pub message: String,
}

/// A rule's limit or a trade's figure, written as the bare JSON value (the supervisor API's
/// `limit` and `value`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Figure {
    /// USD, or a leverage.
    Amount(f64),
    /// Open positions.
    Count(u64),
    /// A stop loss required, or set.
    Flag(bool),
    Coin(String),
    Coins(Vec<String>),
    /// A limit per coin.
    Sizes(BTreeMap<String, f64>),
}

impl Verdict {
    /// The verdict as the supervisor API writes it.
    pub fn model(&self) -> crate::api::model::GateVerdict {
        let json = |f: &Figure| serde_json::to_value(f).unwrap_or(Value::Null);
        crate::api::model::GateVerdict {
            rule: self.rule.to_string(),
            ok: self.ok,
            limit: json(&self.limit),
            value: self.value.as_ref().map_or(Value::Null, json),
            near: self.near,
            message: self.message.clone(),
        }
    }
}

pub fn money(x: f64) -> String {
    format!("{x:.2} USD")
}

pub fn times(x: f64) -> String {
    format!("{x}x")
}

pub fn verdict(
    rule: &'static str,
    ok: bool,
    limit: Figure,
    value: Option<Figure>,
    near: bool,
    message: String,
) -> Verdict {
    Verdict {
        rule,
        ok,
        limit,
        value,
        near,
        message,
    }
}

pub fn reducing(rule: &'static str, limit: Figure) -> Verdict {
    verdict(
        rule,
        true,
        limit,
        None,
        false,
        "reduces exposure: passes".into(),
    )
}

/// A rule that caps a number: an unknown value does not pass, since the gateway cannot vouch for it.
pub fn ceiling(
    rule: &'static str,
    limit: f64,
    value: Option<f64>,
    what: &str,
    why_unknown: Option<&str>,
    unit: fn(f64) -> String,
) -> Verdict {
    match value {
        None => verdict(
            rule,
            false,
            Figure::Amount(limit),
            None,
            false,
            format!(
                "{rule} is {} and the {what} of this trade is not known ({}), so it cannot pass",
                unit(limit),
                why_unknown.unwrap_or("nothing states it")
            ),
        ),
        Some(x) => {
            let ok = x <= limit;
            verdict(
                rule,
                ok,
                Figure::Amount(limit),
                Some(Figure::Amount(x)),
                near(ok, x, limit),
                format!(
                    "{what} {} {} the limit {rule} = {}",
                    unit(x),
                    if ok { "is within" } else { "exceeds" },
                    unit(limit)
                ),
            )
        }
    }
}
