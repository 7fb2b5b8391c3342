//! The pre-trade controls MiFID II RTS 6 article 15 asks of a firm that trades by algorithm: price
//! collars, maximum order volume and position, a loss bounded per trade, a message limit and a
//! repeated-execution throttle. Each is a policy key beside the older rules and gives a
//! [`Verdict`] the same way; what they judge the trade against (the mark, the account's equity
//! and position, the agent's recent stagings and executions) the caller reads and brings as
//! [`Live`].

use super::verdict::{Figure, Verdict, money, near, reducing, verdict};
use crate::api::symbol::coin_of;
use crate::gateway::model::trade::{Needs, Trade};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The controls, in the order their verdicts follow the older rules'.
pub const CONTROLS: [&str; 6] = [
    "price_collar_pct",
    "max_order_size",
    "max_position_usd",
    "max_loss_per_trade_pct",
    "max_stagings_per_minute",
    "max_executions_per_hour",
];

/// The controls of one set of rules; unset means no limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Controls {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price_collar_pct: Option<f64>,
    /// Coin → the largest order in coin units; a coin not listed has no size limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_order_size: Option<BTreeMap<String, f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_position_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_loss_per_trade_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_stagings_per_minute: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_executions_per_hour: Option<u64>,
}

impl Controls {
    /// `over`'s set keys replace these (a `max_order_size` table replaces the whole table: an
    /// agent's table that lists only BTC trades ETH without a size limit, as it says).
    pub fn merged(&self, over: &Controls) -> Controls {
        Controls {
            price_collar_pct: over.price_collar_pct.or(self.price_collar_pct),
            max_order_size: over
                .max_order_size
                .clone()
                .or_else(|| self.max_order_size.clone()),
            max_position_usd: over.max_position_usd.or(self.max_position_usd),
            max_loss_per_trade_pct: over.max_loss_per_trade_pct.or(self.max_loss_per_trade_pct),
            max_stagings_per_minute: over
                .max_stagings_per_minute
                .or(self.max_stagings_per_minute),
            max_executions_per_hour: over
                .max_executions_per_hour
                .or(self.max_executions_per_hour),
        }
    }

    /// Reads `key` (written `name` in messages) into these controls: `None` when it is not a
    /// control's key, else whether its value reads: the key at fault (`name`, or a coin's entry
    /// under it) and what is wrong.
    pub fn read(
        &mut self,
        key: &str,
        name: &str,
        v: &Value,
    ) -> Option<Result<(), (String, String)>> {
        let positive = |v: &Value| match v.as_f64() {
            Some(x) if x > 0.0 && x.is_finite() => Ok(x),
            _ => Err((
                name.to_string(),
                format!("{name} must be a positive number, got {v}"),
            )),
        };
        let count = |v: &Value| match v.as_u64() {
            Some(n) if n > 0 => Ok(n),
            _ => Err((
                name.to_string(),
                format!("{name} must be a whole number of at least 1, got {v}"),
            )),
        };
        let read = match key {
            "price_collar_pct" => positive(v).map(|x| self.price_collar_pct = Some(x)),
            "max_position_usd" => positive(v).map(|x| self.max_position_usd = Some(x)),
            "max_loss_per_trade_pct" => positive(v).map(|x| self.max_loss_per_trade_pct = Some(x)),
            "max_stagings_per_minute" => count(v).map(|n| self.max_stagings_per_minute = Some(n)),
            "max_executions_per_hour" => count(v).map(|n| self.max_executions_per_hour = Some(n)),
            "max_order_size" => sizes(name, v).map(|t| self.max_order_size = Some(t)),
            _ => return None,
        };
        Some(read)
    }

    /// Whether any control reads the mark (directly, or to turn a notional into coins).
    fn needs_mark(&self) -> bool {
        self.price_collar_pct.is_some()
            || self.max_order_size.is_some()
            || self.max_position_usd.is_some()
            || self.max_loss_per_trade_pct.is_some()
    }

    /// The live facts these controls judge a trade against: the positions (each with its coin's
    /// mark, when no preview priced the trade) and the account's equity.
    pub fn needs(&self) -> Needs {
        Needs {
            account_value: self.max_loss_per_trade_pct.is_some(),
            positions: self.needs_mark(),
            ..Needs::default()
        }
    }

    /// Whether a trade without a mark of its own (no preview priced it) should be priced by the
    /// service before it is judged.
    pub fn wants_preview(&self) -> bool {
        self.needs_mark()
    }
}

/// `{BTC = 0.5, ETH = 10}`: coins as the service spells them in any form (`BTC-USD` is BTC), each
/// with a positive size.
fn sizes(name: &str, v: &Value) -> Result<BTreeMap<String, f64>, (String, String)> {
    let table = v.as_object().ok_or_else(|| {
        (
            name.to_string(),
            format!(
                "{name} must be a table of coin = size in coin units, e.g. {{BTC = 0.5}}, got {v}"
            ),
        )
    })?;
    let mut out = BTreeMap::new();
    for (coin, size) in table {
        let c = coin_of(coin);
        let key = format!("{name}.{coin}");
        let Some(size) = size.as_f64().filter(|x| *x > 0.0 && x.is_finite()) else {
            let message = format!("{key} must be a positive size in coin units, got {size}");
            return Err((key, message));
        };
        if c.is_empty() || out.insert(c.clone(), size).is_some() {
            let message = format!("{key} is not a coin, or names {c} a second time");
            return Err((key, message));
        }
    }
    Ok(out)
}

/// Why a figure a control needs is not known, as a part of the refusal's sentence ("of BTC is
/// not known: …"). A control never passes on one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Unread(pub String);

impl From<String> for Unread {
    fn from(why: String) -> Unread {
        Unread(why)
    }
}

impl From<Unread> for String {
    fn from(why: Unread) -> String {
        why.0
    }
}

impl From<&str> for Unread {
    fn from(why: &str) -> Unread {
        Unread(why.to_string())
    }
}

/// What the controls judge a trade against, read by the caller. An `Err` holds why a figure is
/// not known; a control that needs it fails.
#[derive(Debug, Clone, PartialEq)]
pub struct Live {
    /// The coin's mark price.
    pub mark: Result<f64, Unread>,
    /// The account's equity in USD.
    pub equity: Result<f64, Unread>,
    /// The account's net position in the coin now, in coins (negative: short).
    pub position: Result<f64, Unread>,
    /// The agent's stagings and immediate trades in the last 60 s before this one; `None` where
    /// the check is not of a staging (an approval).
    pub stagings: Option<u64>,
    /// The agent's executions in the last hour.
    pub executions: Result<u64, Unread>,
}

impl Default for Live {
    fn default() -> Self {
        let unread = Unread::from("not read");
        Live {
            mark: Err(unread.clone()),
            equity: Err(unread.clone()),
            position: Err(unread.clone()),
            stagings: None,
            executions: Err(unread),
        }
    }
}

fn px(x: f64) -> String {
    // Prices run from fractions of a cent to tens of thousands: significant digits, not cents.
    if x.abs() >= 1000.0 {
        format!("{x:.2}")
    } else {
        format!("{x}")
    }
}

/// A control that cannot judge this trade: it does not pass.
fn unknown(rule: &'static str, limit: Figure, why: impl Into<String>) -> Verdict {
    let why: String = why.into();
    verdict(
        rule,
        false,
        limit,
        None,
        false,
        format!("{rule} cannot judge this trade: {why}"),
    )
}

/// The entry price: a limit order's price, else the mark.
fn entry(trade: &Trade, live: &Live) -> Result<f64, Unread> {
    match trade.limit_price {
        Some(p) => Ok(p),
        None => live
            .mark
            .clone()
            .map_err(|e| Unread(format!("the mark {e}"))),
    }
}

/// The order's size in coins: as stated, else its notional at the entry price.
fn size(trade: &Trade, live: &Live) -> Result<f64, Unread> {
    if let Some(s) = trade.size {
        return Ok(s);
    }
    let notional = trade.notional.ok_or_else(|| {
        format!(
            "its size is not known ({})",
            trade.why_unknown("notional").unwrap_or("nothing states it")
        )
    })?;
    Ok(notional / entry(trade, live)?)
}

/// Every set control's verdict, in [`CONTROLS`] order.
pub fn verdicts(c: &Controls, trade: &Trade, live: &Live) -> Vec<Verdict> {
    let opens_nothing = trade.reduces || trade.removes_stop_loss;
    let mut out = Vec::new();
    if let Some(pct) = c.price_collar_pct {
        let limit = Figure::Amount(pct);
        out.push(match opens_nothing {
            true => reducing("price_collar_pct", limit),
            false => collar(pct, trade, live),
        });
    }
    if let Some(table) = &c.max_order_size {
        out.push(match opens_nothing {
            true => reducing("max_order_size", Figure::Sizes(table.clone())),
            false => order_size(table, trade, live),
        });
    }
    if let Some(max) = c.max_position_usd {
        out.push(match opens_nothing {
            true => reducing("max_position_usd", Figure::Amount(max)),
            false => position(max, trade, live),
        });
    }
    if let Some(max) = c.max_loss_per_trade_pct {
        out.push(match opens_nothing {
            true => reducing("max_loss_per_trade_pct", Figure::Amount(max)),
            false => loss(max, trade, live),
        });
    }
    if let (Some(max), Some(before)) = (c.max_stagings_per_minute, live.stagings) {
        out.push(match opens_nothing {
            true => reducing("max_stagings_per_minute", Figure::Count(max)),
            false => {
                let with = before + 1;
                let ok = with <= max;
                verdict(
                    "max_stagings_per_minute",
                    ok,
                    Figure::Count(max),
                    Some(Figure::Count(with)),
                    near(ok, with as f64, max as f64),
                    format!(
                        "{with} stagings and immediate trades in the last 60 s with this one {} \
                         max_stagings_per_minute = {max}",
                        if ok { "is within" } else { "exceeds" }
                    ),
                )
            }
        });
    }
    if let Some(max) = c.max_executions_per_hour {
        out.push(match opens_nothing {
            true => reducing("max_executions_per_hour", Figure::Count(max)),
            false => execution_throttle(max, live.executions.clone()),
        });
    }
    out
}

/// The repeated-execution throttle: `executed` is the agent's executions in the last hour, and
/// one more is allowed while that is below `max`. Not ok means the agent is at its limit.
pub fn execution_throttle(max: u64, executed: Result<u64, Unread>) -> Verdict {
    let rule = "max_executions_per_hour";
    match executed {
        Err(why) => unknown(
            rule,
            Figure::Count(max),
            format!("the agent's executions in the last hour could not be counted ({why})"),
        ),
        Ok(n) => {
            let ok = n < max;
            verdict(
                rule,
                ok,
                Figure::Count(max),
                Some(Figure::Count(n + 1)),
                near(ok, (n + 1) as f64, max as f64),
                if ok {
                    format!(
                        "{n} executions in the last hour, this would be execution {}: within \
                         max_executions_per_hour = {max}",
                        n + 1
                    )
                } else {
                    format!(
                        "{n} executions in the last hour reach max_executions_per_hour = {max}: \
                         no further execution until the hour's oldest ages out"
                    )
                },
            )
        }
    }
}

fn collar(pct: f64, trade: &Trade, live: &Live) -> Verdict {
    let rule = "price_collar_pct";
    let limit = Figure::Amount(pct);
    if trade.limit_price.is_none() && trade.stop_loss_price.is_none() {
        return verdict(
            rule,
            true,
            limit,
            Some(Figure::Amount(0.0)),
            false,
            "a market order without a stop-loss price: it fills at the mark, nothing to collar"
                .into(),
        );
    }
    let mark = match &live.mark {
        Ok(m) => *m,
        Err(e) => return unknown(rule, limit, format!("the mark {e}")),
    };
    if let Some(sl) = trade.stop_loss_price {
        let wrong = match trade.buys() {
            Some(true) => sl >= mark,
            Some(false) => sl <= mark,
            None => {
                return unknown(
                    rule,
                    limit,
                    format!(
                        "the trade's side {:?} is neither long nor short",
                        trade.side
                    ),
                );
            }
        };
        if wrong {
            let (side, where_) = match trade.buys() {
                Some(true) => ("long", "at or above"),
                _ => ("short", "at or below"),
            };
            return verdict(
                rule,
                false,
                limit,
                Some(Figure::Amount(sl)),
                false,
                format!(
                    "the stop loss {} of a {side} is {where_} the mark {}: it would trigger at once",
                    px(sl),
                    px(mark)
                ),
            );
        }
    }
    let Some(price) = trade.limit_price else {
        return verdict(
            rule,
            true,
            limit,
            Some(Figure::Amount(0.0)),
            false,
            format!(
                "a market order with its stop loss on the right side of the mark {}",
                px(mark)
            ),
        );
    };
    let off = (price - mark).abs() / mark * 100.0;
    let ok = off <= pct;
    verdict(
        rule,
        ok,
        limit,
        Some(Figure::Amount(off)),
        near(ok, off, pct),
        format!(
            "price {} is {off:.2} % from mark {}; collar {pct} %",
            px(price),
            px(mark)
        ),
    )
}

fn order_size(table: &BTreeMap<String, f64>, trade: &Trade, live: &Live) -> Verdict {
    let rule = "max_order_size";
    let Some(coin) = &trade.coin else {
        return unknown(
            rule,
            Figure::Sizes(table.clone()),
            "the trade names no coin",
        );
    };
    let Some(&max) = table.get(coin) else {
        return verdict(
            rule,
            true,
            Figure::Sizes(table.clone()),
            None,
            false,
            format!("{coin} has no entry in max_order_size"),
        );
    };
    let limit = Figure::Amount(max);
    match size(trade, live) {
        Err(why) => unknown(rule, limit, why),
        Ok(sz) => {
            let ok = sz <= max;
            verdict(
                rule,
                ok,
                limit,
                Some(Figure::Amount(sz)),
                near(ok, sz, max),
                format!(
                    "size {sz:.6} {coin} {} max_order_size.{coin} = {max} {coin}",
                    if ok { "is within" } else { "exceeds" }
                ),
            )
        }
    }
}

fn position(max: f64, trade: &Trade, live: &Live) -> Verdict {
    let rule = "max_position_usd";
    let limit = Figure::Amount(max);
    let coin = trade.coin.as_deref().unwrap_or("?");
    let figures = || -> Result<(f64, f64, f64, bool), Unread> {
        let buys = trade.buys().ok_or_else(|| {
            format!(
                "the trade's side {:?} is neither long nor short",
                trade.side
            )
        })?;
        let before = live
            .position
            .clone()
            .map_err(|e| format!("the position {e}"))?;
        let mark = live.mark.clone().map_err(|e| format!("the mark {e}"))?;
        Ok((before, size(trade, live)?, mark, buys))
    };
    match figures() {
        Err(why) => unknown(rule, limit, why),
        Ok((before, sz, mark, buys)) => {
            let after = before + if buys { sz } else { -sz };
            let usd = after.abs() * mark;
            // A trade that brings the position down is let through even over the limit: it is
            // what the limit wants.
            let shrinks = after.abs() < before.abs();
            let ok = usd <= max || shrinks;
            verdict(
                rule,
                ok,
                limit,
                Some(Figure::Amount(usd)),
                near(ok, usd, max),
                format!(
                    "net {coin} position after the fill {after:.6} {coin} = {} at mark {} {} \
                     max_position_usd = {}",
                    money(usd),
                    px(mark),
                    if shrinks {
                        "is smaller than now, so it passes"
                    } else if ok {
                        "is within"
                    } else {
                        "exceeds"
                    },
                    money(max)
                ),
            )
        }
    }
}

fn loss(max: f64, trade: &Trade, live: &Live) -> Verdict {
    let rule = "max_loss_per_trade_pct";
    let limit = Figure::Amount(max);
    if !trade.stop_loss {
        return verdict(
            rule,
            false,
            limit,
            None,
            false,
            "the trade sets no stop loss, so its loss is not bounded; max_loss_per_trade_pct needs one"
                .into(),
        );
    }
    let loss_usd = || -> Result<f64, Unread> {
        if let Some(pct) = trade.stop_loss_pct {
            let notional = trade.notional.ok_or_else(|| {
                format!(
                    "its notional is not known ({})",
                    trade.why_unknown("notional").unwrap_or("nothing states it")
                )
            })?;
            return Ok(notional * pct / 100.0);
        }
        let sl = trade
            .stop_loss_price
            .ok_or("the stop loss is neither a price nor a percentage")?;
        let entry = entry(trade, live)?;
        let sz = size(trade, live)?;
        let per_coin = match trade.buys() {
            Some(true) => entry - sl,
            Some(false) => sl - entry,
            None => {
                return Err(Unread(format!(
                    "the trade's side {:?} is neither long nor short",
                    trade.side
                )));
            }
        };
        Ok(per_coin.max(0.0) * sz)
    };
    let figures = loss_usd().and_then(|l| {
        live.equity
            .clone()
            .map(|e| (l, e))
            .map_err(|e| Unread(format!("the account's equity {e}")))
    });
    match figures {
        Err(why) => unknown(rule, limit, why),
        Ok((usd, equity)) => {
            let pct = usd / equity * 100.0;
            let ok = pct <= max;
            verdict(
                rule,
                ok,
                limit,
                Some(Figure::Amount(pct)),
                near(ok, pct, max),
                format!(
                    "the loss at the stop loss {} is {pct:.2} % of equity {}; \
                     max_loss_per_trade_pct = {max} %",
                    money(usd),
                    money(equity)
                ),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn long(size: f64, limit: Option<f64>, sl: Option<f64>) -> Trade {
        Trade {
            coin: Some("BTC".into()),
            side: Some("long".into()),
            size: Some(size),
            notional: Some(size * limit.unwrap_or(68_000.0)),
            limit_price: limit,
            stop_loss: sl.is_some(),
            stop_loss_price: sl,
            ..Default::default()
        }
    }

    fn live() -> Live {
        Live {
            mark: Ok(68_000.0),
            equity: Ok(100_000.0),
            position: Ok(0.0),
            stagings: Some(0),
            executions: Ok(0),
        }
    }

    #[test]
    fn keys_read_strictly_naming_the_key() {
        let mut c = Controls::default();
        assert_eq!(
            c.read("max_leverage", "policy.max_leverage", &json!(1)),
            None
        );
        let bad = c.read(
            "max_order_size",
            "policy.max_order_size",
            &json!({"BTC": "big"}),
        );
        assert_eq!(bad.unwrap().unwrap_err().0, "policy.max_order_size.BTC");
        let bad = c.read(
            "max_order_size",
            "policy.max_order_size",
            &json!({"BTC": -1}),
        );
        assert!(bad.unwrap().is_err());
        let bad = c.read("price_collar_pct", "policy.price_collar_pct", &json!(-2));
        assert!(
            bad.unwrap()
                .unwrap_err()
                .1
                .contains("policy.price_collar_pct")
        );
        let bad = c.read("max_stagings_per_minute", "x", &json!(1.5));
        assert!(bad.unwrap().is_err());
        let twice = c.read("max_order_size", "m", &json!({"BTC": 1, "BTC-USD": 2}));
        assert!(twice.unwrap().is_err());
        c.read("max_order_size", "m", &json!({"btc": 0.5, "ETH": 10}))
            .unwrap()
            .unwrap();
        assert_eq!(c.max_order_size.unwrap()["BTC"], 0.5);
    }

    #[test]
    fn the_collar_measures_the_limit_price_and_the_stop_loss_side_against_the_mark() {
        let c = Controls {
            price_collar_pct: Some(2.0),
            ..Default::default()
        };
        let far = verdicts(&c, &long(0.1, Some(71_000.0), None), &live());
        assert!(!far[0].ok, "{far:?}");
        assert!(
            far[0].message.contains("4.41 % from mark 68000.00"),
            "{}",
            far[0].message
        );
        let near = verdicts(&c, &long(0.1, Some(69_300.0), None), &live());
        assert!(near[0].ok && near[0].near, "{near:?}");
        let wrong_sl = verdicts(&c, &long(0.1, None, Some(68_500.0)), &live());
        assert!(!wrong_sl[0].ok, "{wrong_sl:?}");
        let mut short = long(0.1, None, Some(67_000.0));
        short.side = Some("short".into());
        assert!(!verdicts(&c, &short, &live())[0].ok);
        let blind = Live {
            mark: Err("could not be read".into()),
            ..live()
        };
        assert!(!verdicts(&c, &long(0.1, Some(68_000.0), None), &blind)[0].ok);
    }

    #[test]
    fn size_position_and_loss_are_measured_in_coins_usd_and_equity() {
        let c = Controls {
            max_order_size: Some(BTreeMap::from([("BTC".into(), 0.5)])),
            max_position_usd: Some(50_000.0),
            max_loss_per_trade_pct: Some(1.0),
            ..Default::default()
        };
        // 0.5 BTC at 68,000 with the stop 2,000 below: 1,000 USD lost, 1 % of 100,000.
        let ok = verdicts(&c, &long(0.5, None, Some(66_000.0)), &live());
        assert!(ok.iter().all(|v| v.ok), "{ok:?}");
        let long_already = Live {
            position: Ok(0.5),
            ..live()
        };
        let over = verdicts(&c, &long(0.3, None, Some(67_000.0)), &long_already);
        assert!(
            !over[1].ok && over[1].message.contains("54400.00 USD"),
            "{over:?}"
        );
        let held = Live {
            position: Ok(-0.5),
            ..live()
        };
        let vs = verdicts(&c, &long(0.6, None, Some(66_000.0)), &held);
        assert!(!vs[0].ok && vs[1].ok && !vs[2].ok, "{vs:?}");
        let no_sl = verdicts(&c, &long(0.1, None, None), &live());
        assert!(!no_sl[2].ok && no_sl[2].message.contains("no stop loss"));
    }

    #[test]
    fn counts_allow_up_to_the_limit() {
        let c = Controls {
            max_stagings_per_minute: Some(3),
            max_executions_per_hour: Some(2),
            ..Default::default()
        };
        let t = long(0.1, None, None);
        let at = |stagings, executions| {
            let l = Live {
                stagings: Some(stagings),
                executions: Ok(executions),
                ..live()
            };
            verdicts(&c, &t, &l)
                .iter()
                .map(|v| v.ok)
                .collect::<Vec<_>>()
        };
        assert_eq!(at(2, 1), [true, true]);
        assert_eq!(at(3, 2), [false, false]);
        let approval = Live {
            stagings: None,
            ..live()
        };
        assert_eq!(verdicts(&c, &t, &approval).len(), 1);
    }
}
