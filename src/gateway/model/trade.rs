//! The canonical trade: what will execute, the one thing the rules judge, standing approvals match,
//! the daily counter adds and every screen shows. Pure: no I/O, no HTTP.
//!
//! Built from the strictly read request ([`super::request`]) with the service's defaults the
//! supervisor states (`[gate.defaults]`), and replaced by the upstream's own preview of the staging
//! where one exists: the preview is the service saying what it will do, so where the two disagree
//! the preview wins and the trade says so. A value nobody states stays unknown, with the reason,
//! and a rule that needs it fails closed.

use super::request::{Parsed, ToolCall};
use crate::api::model::{
    CancelRequest, PlatformClose, PlatformOrder, Preview, TradeSignal, lenient,
};
use crate::api::symbol::coin_of;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The service's defaults for what a request leaves out (`[gate.defaults]`). Unset: unknown, and a
/// rule that needs the value refuses the trade, saying which key to set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Defaults {
    /// USD notional of a trade signal with neither `size` nor `sizeUsd`.
    pub trade_usd: Option<f64>,
    /// Leverage of a trade signal without `leverage`.
    pub leverage: Option<f64>,
    /// Leverage of a platform order without `leverage`.
    pub platform_leverage: Option<f64>,
    /// `sizingMode` of a platform order without one (`account`, `usd` or `size`).
    pub platform_sizing_mode: Option<String>,
}

impl Defaults {
    /// These, with what `stated` sets replacing them.
    pub fn over(&self, stated: &Defaults) -> Defaults {
        Defaults {
            trade_usd: stated.trade_usd.or(self.trade_usd),
            leverage: stated.leverage.or(self.leverage),
            platform_leverage: stated.platform_leverage.or(self.platform_leverage),
            platform_sizing_mode: stated
                .platform_sizing_mode
                .clone()
                .or_else(|| self.platform_sizing_mode.clone()),
        }
    }

    pub fn validate(&self) -> Result<(), DefaultsError> {
        for (key, v) in [
            ("trade_usd", self.trade_usd),
            ("leverage", self.leverage),
            ("platform_leverage", self.platform_leverage),
        ] {
            if let Some(x) = v
                && !(x.is_finite() && x > 0.0)
            {
                return Err(DefaultsError::NotPositive { key, value: x });
            }
        }
        if let Some(m) = &self.platform_sizing_mode
            && !["account", "usd", "size"].contains(&m.as_str())
        {
            return Err(DefaultsError::SizingMode(m.clone()));
        }
        Ok(())
    }
}

/// A `[gate.defaults]` value no trade could be priced with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DefaultsError {
    #[error("gate.defaults.{key} must be a positive number, got {value}")]
    NotPositive { key: &'static str, value: f64 },
    #[error("gate.defaults.platform_sizing_mode must be account, usd or size, got {0:?}")]
    SizingMode(String),
}

/// A live fact of the account a trade's meaning depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fact {
    AccountValue,
    OpenOrders,
    Positions,
}

impl Fact {
    /// The past tense the fact's name takes ("the open orders were").
    fn verb(self) -> &'static str {
        match self {
            Fact::AccountValue => "was",
            Fact::OpenOrders | Fact::Positions => "were",
        }
    }
}

impl std::fmt::Display for Fact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Fact::AccountValue => "the account's value",
            Fact::OpenOrders => "the open orders",
            Fact::Positions => "the account's positions",
        })
    }
}

/// Why a live fact is not known; the rules that need it fail closed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FactError {
    #[error("{0} {verb} not read", verb = .0.verb())]
    NotRead(Fact),
    /// The upstream was not reached; `message` is the gateway's error for it.
    #[error("{fact} could not be read ({message})")]
    Unreachable { fact: Fact, message: String },
    #[error("{fact} could not be read (HTTP {status})")]
    Status {
        fact: Fact,
        status: reqwest::StatusCode,
    },
    #[error("the service's PnL summary names no account value")]
    NoAccountValue,
    /// Kept as text: the reading error is neither `Clone` nor `PartialEq`, as facts are.
    #[error("the open orders are in a shape the gateway cannot read ({0})")]
    OrdersShape(String),
    #[error("the positions are in a shape the gateway cannot read ({0})")]
    PositionsShape(String),
}

/// What the service reports that a trade's meaning depends on, read live when needed.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    /// The account's value in USD (account-percentage sizing).
    pub account_value: Result<f64, FactError>,
    /// The agent's resting orders that protect a position (stop losses), by oid; `Err` when they
    /// could not be read.
    pub stop_orders: Result<Vec<u64>, FactError>,
    /// The account's open positions (each with the coin's mark), for the pre-trade controls.
    pub positions: Result<Vec<crate::api::model::PositionRow>, FactError>,
}

impl Default for Facts {
    fn default() -> Self {
        Facts {
            account_value: Err(FactError::NotRead(Fact::AccountValue)),
            stop_orders: Err(FactError::NotRead(Fact::OpenOrders)),
            positions: Err(FactError::NotRead(Fact::Positions)),
        }
    }
}

/// Which live facts a request needs before it can be judged.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Needs {
    pub account_value: bool,
    pub open_orders: bool,
    pub positions: bool,
}

impl Needs {
    /// What either needs.
    pub fn and(self, other: Needs) -> Needs {
        Needs {
            account_value: self.account_value || other.account_value,
            open_orders: self.open_orders || other.open_orders,
            positions: self.positions || other.positions,
        }
    }
}

/// Who priced the trade.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PricedBy {
    /// The service's own preview of the staging.
    Preview,
    /// The checked request, with the stated defaults.
    #[default]
    Request,
}

/// The trade that will execute.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Trade {
    pub operation: String,
    pub coin: Option<String>,
    /// `long`, `short`, `close` or `cancel`.
    pub side: Option<String>,
    /// Coins.
    pub size: Option<f64>,
    /// USD.
    pub notional: Option<f64>,
    pub leverage: Option<f64>,
    pub stop_loss: bool,
    /// The price a limit order rests at; `None` at market.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_price: Option<f64>,
    /// Where the stop loss triggers, when it is given as a price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_loss_price: Option<f64>,
    /// How far below (a long) or above (a short) the entry the stop loss triggers, in %, when it
    /// is given that way (a platform order's `slPercentage`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_loss_pct: Option<f64>,
    /// The mark price the service's preview priced the trade at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mark: Option<f64>,
    /// A close, or a cancel of orders that open nothing: it cannot add exposure.
    pub reduces: bool,
    /// A cancel that takes away a position's stop loss: it adds risk.
    pub removes_stop_loss: bool,
    pub priced_by: PricedBy,
    /// Values nobody states, with why (`notional` → "the mark price is not known ...").
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: BTreeMap<String, String>,
    /// Where the service's preview says other than the request.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disagreements: Vec<String>,
}

impl Trade {
    fn new(operation: &str) -> Trade {
        Trade {
            operation: operation.to_string(),
            ..Default::default()
        }
    }

    fn unknown(&mut self, what: &str, why: impl Into<String>) {
        self.unknown.insert(what.to_string(), why.into());
    }

    /// Why a value is unknown, for a verdict's message.
    pub fn why_unknown(&self, what: &str) -> Option<&str> {
        self.unknown.get(what).map(String::as_str)
    }

    /// Whether the trade buys: a long, or a buy order. `None` for a side the gateway cannot read.
    pub fn buys(&self) -> Option<bool> {
        match self.side.as_deref().map(str::to_ascii_lowercase).as_deref() {
            Some("long" | "buy") => Some(true),
            Some("short" | "sell") => Some(false),
            _ => None,
        }
    }
}

/// The live facts a request needs to be judged.
pub fn needs(parsed: &Parsed, defaults: &Defaults) -> Needs {
    match parsed {
        Parsed::PlatformOrder(o) => Needs {
            account_value: sizing_mode(o, defaults).as_deref() == Some("account"),
            ..Needs::default()
        },
        Parsed::Cancel(_) => Needs {
            open_orders: true,
            ..Needs::default()
        },
        Parsed::Tool(call) => needs(&call.body, defaults),
        _ => Needs::default(),
    }
}

/// The trade a request asks for, if it trades (`None` for what cannot change exposure or is an
/// execution of something staged, which is judged as that staging).
pub fn of_request(op: &str, parsed: &Parsed, defaults: &Defaults, facts: &Facts) -> Option<Trade> {
    match parsed {
        Parsed::Signal(s) => Some(signal(op, s, defaults)),
        Parsed::Close(c) if c.proposal_id.is_none() => Some(staged_close(op, c.action.as_deref())),
        Parsed::PlatformOrder(o) => Some(platform_order(op, o, defaults, facts)),
        Parsed::PlatformClose(c) => Some(platform_close(op, c)),
        Parsed::Cancel(c) => Some(cancel(op, c, facts)),
        Parsed::Tool(call) => of_tool(call, defaults, facts),
        _ => None,
    }
}

fn of_tool(call: &ToolCall, defaults: &Defaults, facts: &Facts) -> Option<Trade> {
    of_request(call.op.name, &call.body, defaults, facts)
}

fn staged_close(op: &str, action: Option<&str>) -> Trade {
    let mut t = Trade::new(op);
    t.side = Some(action.unwrap_or("close").to_string());
    t.reduces = true;
    t
}

fn positive(x: Option<f64>) -> Option<f64> {
    x.filter(|x| x.is_finite() && *x > 0.0)
}

fn signal(op: &str, s: &TradeSignal, defaults: &Defaults) -> Trade {
    let closes = matches!(s.action.as_deref(), Some("close" | "close_all"))
        || s.d.as_deref() == Some("close");
    if closes {
        let mut t = staged_close(op, s.action.as_deref().or(Some("close")));
        t.coin = s.a.as_deref().map(coin_of).filter(|c| !c.is_empty());
        return t;
    }
    let mut t = Trade::new(op);
    t.coin = s.a.as_deref().map(coin_of).filter(|c| !c.is_empty());
    if t.coin.is_none() {
        t.unknown("coin", "the request names no asset (a)");
    }
    t.side = s.d.clone();
    // The service reads a price only for a limit order; a market order fills at the mark.
    let limit = matches!(
        s.o.as_deref().map(str::to_ascii_lowercase).as_deref(),
        Some("limit")
    )
    .then_some(s.p)
    .flatten();
    // The service's precedence: a size in coins wins over a size in USD, which wins over the
    // account's default.
    match (positive(s.size), positive(s.size_usd)) {
        (Some(size), _) => {
            t.size = Some(size);
            match limit {
                Some(px) => t.notional = Some(size * px),
                None => t.unknown(
                    "notional",
                    "the request sizes a market order in coins (size) and the gateway does not know \
                     the mark price: size it in USD (sizeUsd) or stage it so the service prices it",
                ),
            }
        }
        (None, Some(usd)) => t.notional = Some(usd),
        (None, None) => match defaults.trade_usd {
            Some(usd) => t.notional = Some(usd),
            None => t.unknown(
                "notional",
                "the request names no size and the service's default trade size is not stated \
                 ([gate.defaults] trade_usd)",
            ),
        },
    }
    match s.leverage.map(f64::from).or(defaults.leverage) {
        Some(l) => t.leverage = Some(l),
        None => t.unknown(
            "leverage",
            "the request names no leverage and the service's default is not stated \
             ([gate.defaults] leverage)",
        ),
    }
    t.stop_loss = s.sl.is_some();
    t.stop_loss_price = s.sl;
    t.limit_price = limit;
    t
}

fn sizing_mode(o: &PlatformOrder, defaults: &Defaults) -> Option<String> {
    o.sizing_mode
        .clone()
        .or_else(|| defaults.platform_sizing_mode.clone())
}

fn platform_order(op: &str, o: &PlatformOrder, defaults: &Defaults, facts: &Facts) -> Trade {
    let mut t = Trade::new(op);
    let coin = coin_of(&o.pair);
    t.coin = (!coin.is_empty()).then_some(coin);
    t.side = Some(o.side.to_ascii_lowercase());
    let leverage = o.leverage.map(f64::from).or(defaults.platform_leverage);
    match leverage {
        Some(l) => t.leverage = Some(l),
        None => t.unknown(
            "leverage",
            "the order names no leverage and the service's default for platform orders is not \
             stated ([gate.defaults] platform_leverage)",
        ),
    }
    let limit = matches!(
        o.order_type
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Some("limit")
    )
    .then_some(o.limit_price)
    .flatten();
    match sizing_mode(o, defaults).as_deref() {
        Some("usd") => match positive(o.usd_amount) {
            Some(usd) => t.notional = Some(usd),
            None => t.unknown("notional", "sizingMode usd with no usdAmount"),
        },
        Some("size") => match (positive(o.size), limit) {
            (Some(size), Some(px)) => {
                t.size = Some(size);
                t.notional = Some(size * px);
            }
            (Some(size), None) => {
                t.size = Some(size);
                t.unknown(
                    "notional",
                    "the order sizes a market order in coins (sizingMode size) and the gateway does \
                     not know the mark price: size it in USD (sizingMode usd)",
                );
            }
            (None, _) => t.unknown("notional", "sizingMode size with no size"),
        },
        Some("account") => match (&facts.account_value, o.account_percentage, leverage) {
            (Ok(value), Some(pct), Some(lev)) => t.notional = Some(value * pct / 100.0 * lev),
            (Err(why), _, _) => t.unknown(
                "notional",
                format!("the order is sized as a share of the account and {why}"),
            ),
            (_, None, _) => t.unknown("notional", "sizingMode account with no accountPercentage"),
            (_, _, None) => t.unknown(
                "notional",
                "the order is sized as a share of the account times a leverage nobody states",
            ),
        },
        Some(other) => t.unknown(
            "notional",
            format!("sizingMode {other:?} is not one the gateway knows"),
        ),
        None => t.unknown(
            "notional",
            "the order names no sizingMode and the service's default is not stated \
             ([gate.defaults] platform_sizing_mode)",
        ),
    }
    t.stop_loss = o.sl_enabled && o.sl_percentage.is_some();
    t.stop_loss_pct = o.sl_percentage.filter(|_| o.sl_enabled);
    t.limit_price = limit;
    t
}

fn platform_close(op: &str, c: &PlatformClose) -> Trade {
    let mut t = staged_close(op, Some("close"));
    t.coin = c.pair.as_deref().map(coin_of).filter(|c| !c.is_empty());
    t
}

fn cancel(op: &str, c: &CancelRequest, facts: &Facts) -> Trade {
    let mut t = Trade::new(op);
    t.coin = Some(coin_of(&c.coin)).filter(|c| !c.is_empty());
    t.side = Some("cancel".into());
    let oids = c.oid.to_vec();
    match &facts.stop_orders {
        Ok(stops) if !oids.iter().any(|o| stops.contains(o)) => t.reduces = true,
        Ok(_) => t.removes_stop_loss = true,
        Err(why) => {
            // Whether it takes a stop away cannot be told: it is taken to.
            t.removes_stop_loss = true;
            t.unknown("stop_loss", why.to_string());
        }
    }
    t
}

/// The service's preview of a staging, when it is one the gateway can read as a trade.
pub fn preview_of(value: &Value) -> Option<Preview> {
    if !value.is_object() {
        return None;
    }
    let p = lenient::preview(value.clone());
    let known = matches!(p.kind.as_str(), "trade" | "close" | "close_all")
        && (p.kind != "trade" || (!p.coin.is_empty() && p.notional > 0.0));
    known.then_some(p)
}

/// The trade as the service's preview says it will execute, beside what the request asked.
pub fn with_preview(request: Option<Trade>, preview: &Preview, op: &str) -> Trade {
    let mut t = Trade::new(op);
    t.priced_by = PricedBy::Preview;
    t.coin = Some(preview.coin.clone())
        .filter(|c| !c.is_empty())
        .map(|c| coin_of(&c));
    if preview.kind != "trade" {
        t.side = Some(preview.kind.clone());
        t.reduces = true;
    } else {
        t.side = Some(preview.direction.clone()).filter(|d| !d.is_empty());
        t.size = Some(preview.size).filter(|s| *s > 0.0);
        t.notional = Some(preview.notional);
        if preview.leverage > 0 {
            t.leverage = Some(f64::from(preview.leverage));
        } else {
            t.unknown("leverage", "the service's preview names no leverage");
        }
        t.stop_loss = preview.sl.is_some();
        t.stop_loss_price = preview.sl;
        // A preview that does not restate the limit price is not a market order: the request's
        // limit is what the collar measures then.
        t.limit_price = preview
            .limit_px
            .filter(|p| *p > 0.0)
            .or_else(|| request.as_ref().and_then(|r| r.limit_price));
        t.mark = Some(preview.mark_px).filter(|p| p.is_finite() && *p > 0.0);
    }
    if let Some(r) = request {
        t.disagreements = disagreements(&r, &t);
    }
    t
}

fn disagreements(request: &Trade, preview: &Trade) -> Vec<String> {
    let mut out = Vec::new();
    if request.reduces != preview.reduces {
        out.push(format!(
            "the request is {} and the service stages {}",
            if request.reduces {
                "a close"
            } else {
                "a trade"
            },
            if preview.reduces {
                "a close"
            } else {
                "a trade"
            }
        ));
    }
    if let (Some(a), Some(b)) = (&request.coin, &preview.coin)
        && a != b
    {
        out.push(format!("the request names {a} and the service stages {b}"));
    }
    if let (Some(a), Some(b)) = (request.notional, preview.notional)
        && (a - b).abs() > 0.02 * a.max(b)
    {
        out.push(format!(
            "the request asks for {a:.2} USD and the service stages {b:.2} USD"
        ));
    }
    if let (Some(a), Some(b)) = (request.leverage, preview.leverage)
        && a != b
    {
        out.push(format!(
            "the request asks for {a}x and the service stages {b}x"
        ));
    }
    if request.stop_loss != preview.stop_loss {
        out.push(format!(
            "the request {} a stop loss and the service stages {}",
            if request.stop_loss { "sets" } else { "sets no" },
            if preview.stop_loss { "one" } else { "none" }
        ));
    }
    out
}

/// SHA-256 of the trade's canonical form: what an approval binds to.
pub fn digest(request: &Value, preview: &Value) -> String {
    #[derive(Serialize)]
    struct Bound<'a> {
        request: &'a Value,
        preview: &'a Value,
    }
    let bound = serde_json::to_value(Bound { request, preview }).unwrap_or_default();
    let text = crate::api::canonical_json(&bound);
    hex::encode(Sha256::digest(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::super::request;
    use super::*;
    use crate::api::catalog;
    use serde_json::json;

    fn read(op: &str, body: Value) -> Parsed {
        request::read(catalog::op(op), body.to_string().as_bytes())
            .unwrap()
            .parsed
    }

    fn stated() -> Defaults {
        Defaults {
            trade_usd: Some(100.0),
            leverage: Some(1.0),
            platform_leverage: Some(1.0),
            platform_sizing_mode: Some("account".into()),
        }
    }

    #[test]
    fn a_size_in_coins_wins_over_a_size_in_usd_and_a_market_price_is_not_read_from_p() {
        let t = of_request(
            "place_order",
            &read(
                "place_order",
                json!({"a": "ETHUSDT", "d": "long", "size": 1, "sizeUsd": 100, "p": 1}),
            ),
            &stated(),
            &Facts::default(),
        )
        .unwrap();
        assert_eq!(t.size, Some(1.0));
        assert_eq!(t.notional, None);
        assert!(t.why_unknown("notional").unwrap().contains("mark price"));
        let limit = of_request(
            "place_order",
            &read(
                "place_order",
                json!({"a": "ETHUSDT", "d": "long", "size": 2, "o": "limit", "p": 2000}),
            ),
            &stated(),
            &Facts::default(),
        )
        .unwrap();
        assert_eq!(limit.notional, Some(4000.0));
    }

    #[test]
    fn defaults_fill_what_the_request_leaves_out_and_unstated_ones_stay_unknown() {
        let body = read("propose_trade", json!({"a": "BTCUSDT", "d": "long"}));
        let t = of_request("propose_trade", &body, &stated(), &Facts::default()).unwrap();
        assert_eq!((t.notional, t.leverage), (Some(100.0), Some(1.0)));
        let t = of_request(
            "propose_trade",
            &body,
            &Defaults::default(),
            &Facts::default(),
        )
        .unwrap();
        assert_eq!((t.notional, t.leverage), (None, None));
        assert!(
            t.why_unknown("leverage")
                .unwrap()
                .contains("[gate.defaults] leverage")
        );
    }

    #[test]
    fn a_platform_order_is_judged_on_pair_and_its_sizing_mode() {
        let facts = Facts {
            account_value: Ok(10_000.0),
            ..Facts::default()
        };
        let body = read(
            "platform_place_order",
            json!({"pair": "ETH-USD", "side": "long", "sizingMode": "account",
                   "accountPercentage": 50, "leverage": 4}),
        );
        let t = of_request("platform_place_order", &body, &stated(), &facts).unwrap();
        assert_eq!(t.coin.as_deref(), Some("ETH"));
        assert_eq!(t.notional, Some(20_000.0));
        let t = of_request("platform_place_order", &body, &stated(), &Facts::default()).unwrap();
        assert_eq!(t.notional, None);
    }

    #[test]
    fn a_cancel_reduces_unless_it_takes_a_stop_away_or_cannot_tell() {
        let body = read("platform_cancel_order", json!({"oid": 7, "coin": "BTC"}));
        let ok = Facts {
            stop_orders: Ok(vec![9]),
            ..Facts::default()
        };
        assert!(
            of_request("platform_cancel_order", &body, &stated(), &ok)
                .unwrap()
                .reduces
        );
        let stop = Facts {
            stop_orders: Ok(vec![7]),
            ..Facts::default()
        };
        let t = of_request("platform_cancel_order", &body, &stated(), &stop).unwrap();
        assert!(!t.reduces && t.removes_stop_loss);
        let t = of_request("platform_cancel_order", &body, &stated(), &Facts::default()).unwrap();
        assert!(!t.reduces && t.removes_stop_loss);
    }

    #[test]
    fn the_preview_wins_and_the_trade_says_where_it_disagreed() {
        let body = read(
            "propose_trade",
            json!({"a": "ETHUSDT", "d": "long", "sizeUsd": 100, "size": 1}),
        );
        let request = of_request("propose_trade", &body, &stated(), &Facts::default());
        let p = preview_of(&json!({"kind": "trade", "coin": "ETH", "direction": "long",
            "size": 1, "notional": 2160.5, "leverage": 10, "markPx": 2160.5}))
        .unwrap();
        let t = with_preview(request, &p, "propose_trade");
        assert_eq!(t.notional, Some(2160.5));
        assert_eq!(t.leverage, Some(10.0));
        assert_eq!(t.priced_by, PricedBy::Preview);
        assert!(
            t.disagreements.iter().any(|d| d.contains("1x")),
            "{:?}",
            t.disagreements
        );
        assert!(preview_of(&json!({"operation": "platform_place_order"})).is_none());
    }

    #[test]
    fn the_digest_does_not_depend_on_key_order() {
        assert_eq!(
            digest(&json!({"a": 1, "b": 2}), &Value::Null),
            digest(&json!({"b": 2, "a": 1}), &Value::Null)
        );
        assert_ne!(
            digest(&json!({"a": 1}), &Value::Null),
            digest(&json!({"a": 2}), &Value::Null)
        );
    }
}
