//! What the gateway lets through: the `[gate]` table of the config file (connection settings and
//! the agents allowed immediate trades), and the supervisor's `[policy]`: rules every staging and
//! every immediate trade is checked against, each giving a [`Verdict`].
//!
//! Immediate trades (`place_order` and the platform order, close and cancel operations) bypass the
//! inbox, so they are refused unless the agent is allowed them (`gate.allow_immediate`, or
//! `allow_immediate = true` in its policy), and even then the rules apply.

use super::controls::{self, Controls};
use super::step_up::{self, StepUp};
pub use super::verdict::{Figure, Verdict};
use super::verdict::{ceiling, money, near, reducing, times, verdict};
use crate::api::symbol::coin_of;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// The operations that trade without staging.
pub const IMMEDIATE: [&str; 4] = [
    "place_order",
    "platform_place_order",
    "platform_close_position",
    "platform_cancel_order",
];

/// The `[gate]` table of the config file. Every key is optional.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GateSettings {
    /// Agents (by name given with `agentdesk gate agent name`, or by key fingerprint) whose
    /// immediate trades are forwarded instead of refused.
    pub allow_immediate: Vec<String>,
    /// Seconds to wait for a TCP connection to the upstream.
    pub connect_timeout_secs: u64,
    /// Seconds an upstream exchange may take, from sending to the end of the answer.
    pub timeout_secs: u64,
    /// Request bodies larger than this are refused with 413 before anything is forwarded.
    pub max_body_bytes: usize,
    /// Where the gateway keeps its state: a `postgres://` URL (several instances share it) or a
    /// SQLite file path. `--store`/`--db` on the command line win over it.
    pub store: Option<String>,
    /// The service's defaults for what a trade request leaves out (`[gate.defaults]`).
    pub defaults: crate::gateway::model::trade::Defaults,
    /// Requests a second each caller may make (by its key, else by its address); 0: no limit.
    pub rate_limit_per_second: u32,
    /// How many requests above that pace a caller may make at once.
    pub rate_limit_burst: u32,
}

impl Default for GateSettings {
    fn default() -> Self {
        GateSettings {
            allow_immediate: Vec::new(),
            connect_timeout_secs: 5,
            timeout_secs: 30,
            max_body_bytes: 1 << 20,
            store: None,
            defaults: Default::default(),
            // Well above what one agent or console needs (a console polls a few times a
            // second), well below what a runaway loop sends.
            rate_limit_per_second: 50,
            rate_limit_burst: 100,
        }
    }
}

/// A `[gate]` or `[policy]` table the gateway refuses.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error(transparent)]
    Toml(#[from] toml::de::Error),
    #[error("gate.timeout_secs and gate.connect_timeout_secs must be at least 1")]
    Timeout,
    #[error("gate.max_body_bytes must be at least 1")]
    MaxBody,
    #[error("gate.rate_limit_per_second must be at most 1000000 (0 turns the limit off), got {0}")]
    RateLimit(u32),
    #[error(transparent)]
    Defaults(#[from] crate::gateway::model::trade::DefaultsError),
    #[error("gate.store must be a postgres:// URL or a SQLite file path, not empty")]
    EmptyStore,
    /// The `[policy]` table as TOML did not become the JSON the policy is read from.
    #[error(transparent)]
    PolicyJson(#[from] serde_json::Error),
    #[error(transparent)]
    Policy(#[from] PolicyError),
}

#[derive(Deserialize, Default)]
struct ConfigFile {
    #[serde(default)]
    gate: Option<GateSettings>,
    #[serde(default)]
    policy: Option<toml::Value>,
}

impl GateSettings {
    /// The `[gate]` table of a config file; the file's other tables belong to the console and the
    /// sandbox and are not read here.
    pub fn from_toml(text: &str) -> Result<GateSettings, SettingsError> {
        let file: ConfigFile = toml::from_str(text)?;
        let settings = file.gate.unwrap_or_default();
        settings.validate()?;
        Ok(settings)
    }

    /// The `[gate]` and `[policy]` tables of a config file (no `[policy]`: no rules).
    pub fn with_policy_from_toml(text: &str) -> Result<(GateSettings, Policy), SettingsError> {
        let file: ConfigFile = toml::from_str(text)?;
        let settings = file.gate.unwrap_or_default();
        settings.validate()?;
        let policy = match file.policy {
            None => Policy::default(),
            Some(v) => {
                let v = serde_json::to_value(v)?;
                Policy::from_json(&v)?
            }
        };
        Ok((settings, policy))
    }

    pub fn validate(&self) -> Result<(), SettingsError> {
        if self.timeout_secs == 0 || self.connect_timeout_secs == 0 {
            return Err(SettingsError::Timeout);
        }
        if self.max_body_bytes == 0 {
            return Err(SettingsError::MaxBody);
        }
        if self.rate_limit_per_second > 1_000_000 {
            return Err(SettingsError::RateLimit(self.rate_limit_per_second));
        }
        self.defaults.validate()?;
        if self.store.as_deref().is_some_and(|s| s.trim().is_empty()) {
            return Err(SettingsError::EmptyStore);
        }
        Ok(())
    }

    pub fn connect_timeout(&self) -> Duration {
        Duration::from_secs(self.connect_timeout_secs)
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs)
    }

    /// Whether this agent may trade immediately: listed by name or by (a prefix of at least 8 hex
    /// digits of) its key fingerprint.
    pub fn allows_immediate(&self, name: Option<&str>, key_hash: &str) -> bool {
        self.allow_immediate.iter().any(|entry| {
            let entry = entry.trim();
            Some(entry) == name
                || (entry.len() >= 8 && key_hash.starts_with(&entry.to_ascii_lowercase()))
        })
    }
}

/// The rules, in the order verdicts are listed: the policy's first, then the pre-trade controls
/// ([`controls::CONTROLS`]).
pub const RULES: [&str; 13] = [
    "allowed_coins",
    "max_notional_usd",
    "max_leverage",
    "require_stop_loss",
    "max_open_positions",
    "max_daily_notional_usd",
    "daily_loss_limit_usd",
    controls::CONTROLS[0],
    controls::CONTROLS[1],
    controls::CONTROLS[2],
    controls::CONTROLS[3],
    controls::CONTROLS[4],
    controls::CONTROLS[5],
];

/// One set of rules; unset means no limit. The policy's top level and each agent's table.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Rules {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_coins: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_notional_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_leverage: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub require_stop_loss: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_open_positions: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_daily_notional_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub daily_loss_limit_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_immediate: Option<bool>,
    /// The pre-trade controls, written beside the other keys.
    #[serde(flatten)]
    pub controls: Controls,
    /// How many supervisors approve a large item.
    #[serde(flatten)]
    pub step_up: StepUp,
}

impl Rules {
    /// `over`'s set keys replace these.
    fn merged(&self, over: &Rules) -> Rules {
        Rules {
            allowed_coins: over
                .allowed_coins
                .clone()
                .or_else(|| self.allowed_coins.clone()),
            max_notional_usd: over.max_notional_usd.or(self.max_notional_usd),
            max_leverage: over.max_leverage.or(self.max_leverage),
            require_stop_loss: over.require_stop_loss.or(self.require_stop_loss),
            max_open_positions: over.max_open_positions.or(self.max_open_positions),
            max_daily_notional_usd: over.max_daily_notional_usd.or(self.max_daily_notional_usd),
            daily_loss_limit_usd: over.daily_loss_limit_usd.or(self.daily_loss_limit_usd),
            allow_immediate: over.allow_immediate.or(self.allow_immediate),
            controls: self.controls.merged(&over.controls),
            step_up: self.step_up.merged(&over.step_up),
        }
    }

    /// Whether checking these rules needs the account's positions or PnL.
    pub fn needs_account(&self) -> bool {
        self.max_open_positions.is_some() || self.daily_loss_limit_usd.is_some()
    }

    fn from_map(map: &Map<String, Value>, prefix: &str, top: bool) -> Result<Rules, PolicyError> {
        let mut r = Rules::default();
        for (key, v) in map {
            let name = format!("{prefix}{key}");
            if let Some(read) = r.controls.read(key, &name, v) {
                read.map_err(|(key, message)| PolicyError { key, message })?;
                continue;
            }
            if let Some(read) = r.step_up.read(key, &name, v) {
                read.map_err(|message| PolicyError {
                    key: name.clone(),
                    message,
                })?;
                continue;
            }
            let bad = |what: &str| PolicyError {
                key: name.clone(),
                message: format!("{name} must be {what}, got {v}"),
            };
            let positive = |v: &Value| match v.as_f64() {
                Some(x) if x > 0.0 && x.is_finite() => Ok(x),
                _ => Err(bad("a positive number")),
            };
            match key.as_str() {
                "allowed_coins" => {
                    let coins = v
                        .as_array()
                        .and_then(|a| {
                            a.iter()
                                .map(|c| c.as_str().map(coin_of).filter(|c| !c.is_empty()))
                                .collect::<Option<Vec<String>>>()
                        })
                        .ok_or_else(|| bad("a list of coin names, e.g. [\"BTC\", \"ETH\"]"))?;
                    r.allowed_coins = Some(coins);
                }
                "max_notional_usd" => r.max_notional_usd = Some(positive(v)?),
                "max_leverage" => r.max_leverage = Some(positive(v)?),
                "max_daily_notional_usd" => r.max_daily_notional_usd = Some(positive(v)?),
                "daily_loss_limit_usd" => r.daily_loss_limit_usd = Some(positive(v)?),
                "max_open_positions" => {
                    r.max_open_positions = Some(v.as_u64().ok_or_else(|| bad("a whole number"))?)
                }
                "require_stop_loss" => {
                    r.require_stop_loss = Some(v.as_bool().ok_or_else(|| bad("true or false"))?)
                }
                "allow_immediate" => {
                    r.allow_immediate = Some(v.as_bool().ok_or_else(|| bad("true or false"))?)
                }
                "agents" if top => {}
                _ => {
                    return Err(PolicyError {
                        message: format!(
                            "{name} is not a policy key; the keys are {}, allow_immediate, {}{}",
                            RULES.join(", "),
                            step_up::KEYS.join(", "),
                            if top {
                                " and [policy.agents.<label>]"
                            } else {
                                ""
                            }
                        ),
                        key: name,
                    });
                }
            }
        }
        Ok(r)
    }
}

/// The supervisor's policy: rules for every agent, and per-agent overrides by label (the name given
/// with `agentdesk gate agent name`, or the key fingerprint).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Policy {
    #[serde(flatten)]
    pub rules: Rules,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub agents: BTreeMap<String, Rules>,
}

/// A policy refused whole, with the key that is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyError {
    pub key: String,
    pub message: String,
}

impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PolicyError {}

impl Policy {
    /// Reads a policy from the JSON of `PUT /gate/v1/policy` or the `[policy]` table, refusing
    /// unknown keys and wrong values.
    pub fn from_json(v: &Value) -> Result<Policy, PolicyError> {
        let map = v.as_object().ok_or_else(|| PolicyError {
            key: "policy".into(),
            message: "the policy must be an object of rules".into(),
        })?;
        let rules = Rules::from_map(map, "policy.", true)?;
        let mut agents = BTreeMap::new();
        if let Some(a) = map.get("agents") {
            let a = a.as_object().ok_or_else(|| PolicyError {
                key: "policy.agents".into(),
                message: "policy.agents must be a table of agent labels".into(),
            })?;
            for (label, table) in a {
                let prefix = format!("policy.agents.{label}.");
                let table = table.as_object().ok_or_else(|| PolicyError {
                    key: format!("policy.agents.{label}"),
                    message: format!("policy.agents.{label} must be a table of rules"),
                })?;
                agents.insert(label.clone(), Rules::from_map(table, &prefix, false)?);
            }
        }
        Ok(Policy { rules, agents })
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| Value::Object(Map::new()))
    }

    /// The rules for an agent known by these labels (name first, then fingerprint): its table
    /// over the top level.
    pub fn for_agent(&self, labels: &[&str]) -> Rules {
        labels
            .iter()
            .find_map(|l| self.agents.get(*l))
            .map(|over| self.rules.merged(over))
            .unwrap_or_else(|| self.rules.clone())
    }

    pub fn needs_account(&self) -> bool {
        self.rules.needs_account() || self.agents.values().any(Rules::needs_account)
    }
}

pub use crate::gateway::model::trade::Trade;

/// What the account looks like now, read upstream with the gateway's own key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Account {
    /// Coins with an open position.
    pub open: Vec<String>,
    pub pnl_today: f64,
}

/// Every configured rule's verdict. `account` is the live account (needed when
/// [`Rules::needs_account`]); `executed_today` is the agent's executed notional this UTC day.
pub fn verdicts(
    rules: &Rules,
    trade: &Trade,
    account: Option<&Account>,
    executed_today: f64,
) -> Vec<Verdict> {
    let mut out = Vec::new();
    // A cancel that takes a stop away opens nothing: only the stop-loss rule (and the kill
    // switch) speak to it.
    let opens_nothing = trade.reduces || trade.removes_stop_loss;
    if let Some(coins) = &rules.allowed_coins {
        let limit = Figure::Coins(coins.clone());
        out.push(if opens_nothing {
            reducing("allowed_coins", limit)
        } else {
            let ok = trade.coin.as_ref().is_some_and(|c| coins.contains(c));
            verdict(
                "allowed_coins",
                ok,
                limit,
                trade.coin.clone().map(Figure::Coin),
                false,
                match &trade.coin {
                    Some(c) if ok => format!("{c} is in allowed_coins"),
                    Some(c) => format!("{c} is not in allowed_coins = [{}]", coins.join(", ")),
                    None => "the request names no coin the gateway can check against allowed_coins"
                        .into(),
                },
            )
        });
    }
    if let Some(limit) = rules.max_notional_usd {
        out.push(if opens_nothing {
            reducing("max_notional_usd", Figure::Amount(limit))
        } else {
            ceiling(
                "max_notional_usd",
                limit,
                trade.notional,
                "notional",
                trade.why_unknown("notional"),
                money,
            )
        });
    }
    if let Some(limit) = rules.max_leverage {
        out.push(if opens_nothing {
            reducing("max_leverage", Figure::Amount(limit))
        } else {
            ceiling(
                "max_leverage",
                limit,
                trade.leverage,
                "leverage",
                trade.why_unknown("leverage"),
                times,
            )
        });
    }
    if rules.require_stop_loss == Some(true) {
        out.push(if trade.removes_stop_loss {
            verdict(
                "require_stop_loss",
                false,
                Figure::Flag(true),
                Some(Figure::Flag(false)),
                false,
                format!(
                    "require_stop_loss is on and this cancel takes a stop loss away (or the gateway \
                     cannot tell that it does not{})",
                    trade
                        .why_unknown("stop_loss")
                        .map(|w| format!(": {w}"))
                        .unwrap_or_default()
                ),
            )
        } else if trade.reduces {
            reducing("require_stop_loss", Figure::Flag(true))
        } else {
            verdict(
                "require_stop_loss",
                trade.stop_loss,
                Figure::Flag(true),
                Some(Figure::Flag(trade.stop_loss)),
                false,
                if trade.stop_loss {
                    "the request sets a stop loss".into()
                } else {
                    "require_stop_loss is on and the trade sets no stop loss (sl, or slEnabled with slPercentage)".into()
                },
            )
        });
    }
    if let Some(limit) = rules.max_open_positions {
        out.push(match account {
            _ if opens_nothing => reducing("max_open_positions", Figure::Count(limit)),
            None => verdict(
                "max_open_positions",
                false,
                Figure::Count(limit),
                None,
                false,
                "the account's positions could not be read".into(),
            ),
            Some(acc) => {
                let adds = trade.coin.as_ref().is_none_or(|c| !acc.open.contains(c));
                let after = acc.open.len() as u64 + u64::from(adds);
                let ok = after <= limit;
                verdict(
                    "max_open_positions",
                    ok,
                    Figure::Count(limit),
                    Some(Figure::Count(after)),
                    near(ok, after as f64, limit as f64),
                    format!(
                        "{after} open positions with this trade {} the limit max_open_positions = {limit}",
                        if ok { "is within" } else { "exceeds" }
                    ),
                )
            }
        });
    }
    if let Some(limit) = rules.max_daily_notional_usd {
        out.push(if opens_nothing {
            reducing("max_daily_notional_usd", Figure::Amount(limit))
        } else {
            ceiling(
                "max_daily_notional_usd",
                limit,
                trade.notional.map(|n| n + executed_today),
                "today's executed notional with this trade",
                trade.why_unknown("notional"),
                money,
            )
        });
    }
    if let Some(limit) = rules.daily_loss_limit_usd {
        out.push(match account {
            _ if trade.reduces => reducing("daily_loss_limit_usd", Figure::Amount(limit)),
            None => verdict(
                "daily_loss_limit_usd",
                false,
                Figure::Amount(limit),
                None,
                false,
                "the account's PnL could not be read".into(),
            ),
            Some(acc) => {
                let loss = (-acc.pnl_today).max(0.0);
                let ok = loss < limit;
                let message = format!(
                    "today's PnL {} {} the limit daily_loss_limit_usd = {}",
                    money(acc.pnl_today),
                    if ok {
                        "is within"
                    } else {
                        "is past (only reducing trades pass)"
                    },
                    money(limit)
                );
                verdict(
                    "daily_loss_limit_usd",
                    ok,
                    Figure::Amount(limit),
                    Some(Figure::Amount(acc.pnl_today)),
                    near(ok, loss, limit),
                    message,
                )
            }
        });
    }
    out
}

/// A verdict list as stored on an item and shown by the supervisor API.
pub fn verdicts_json(verdicts: &[Verdict]) -> Value {
    serde_json::to_value(verdicts).unwrap_or_else(|_| Value::Array(Vec::new()))
}

/// Where the policy's day begins (`max_daily_notional_usd`, the agents' "today"): UTC midnight.
pub fn day_start(now: chrono::DateTime<chrono::Utc>) -> chrono::DateTime<chrono::Utc> {
    now.date_naive()
        .and_hms_opt(0, 0, 0)
        .expect("midnight exists")
        .and_utc()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_gate_table_and_ignores_the_others() {
        let s = GateSettings::from_toml(
            "[sandbox]\nx = 1\n[gate]\nallow_immediate = [\"alice\", \"0123abcd\"]\ntimeout_secs = 9\n",
        )
        .unwrap();
        assert_eq!(s.allow_immediate, vec!["alice", "0123abcd"]);
        assert_eq!(s.timeout_secs, 9);
        assert_eq!(s.connect_timeout_secs, 5);
        assert!(s.allows_immediate(Some("alice"), "ffff"));
        assert!(s.allows_immediate(None, "0123abcdeeee"));
        assert!(!s.allows_immediate(Some("bob"), "0123abceeeee"));
        assert!(GateSettings::from_toml("[gate]\nallow_imediate = []\n").is_err());
        assert!(GateSettings::from_toml("[gate]\ntimeout_secs = 0\n").is_err());
        assert_eq!(
            GateSettings::from_toml("").unwrap(),
            GateSettings::default()
        );
    }

    #[test]
    fn a_policy_is_refused_whole_naming_the_bad_key_and_agents_override_the_top() {
        let p = Policy::from_json(&json!({
            "max_notional_usd": 1000, "allowed_coins": ["btc", "ETH-USD"],
            "agents": {"bob": {"max_notional_usd": 5000, "allow_immediate": true}}
        }))
        .unwrap();
        assert_eq!(
            p.rules.allowed_coins,
            Some(vec!["BTC".into(), "ETH".into()])
        );
        let bob = p.for_agent(&["bob", "0123abcd"]);
        assert_eq!(bob.max_notional_usd, Some(5000.0));
        assert_eq!(bob.allowed_coins, p.rules.allowed_coins);
        assert_eq!(p.for_agent(&["carol"]).max_notional_usd, Some(1000.0));
        assert_eq!(Policy::from_json(&p.to_json()).unwrap(), p);

        let e = Policy::from_json(&json!({"agents": {"bob": {"max_levrage": 3}}})).unwrap_err();
        assert_eq!(e.key, "policy.agents.bob.max_levrage");
        let e = Policy::from_json(&json!({"max_leverage": -2})).unwrap_err();
        assert_eq!(e.key, "policy.max_leverage");
        assert!(e.message.contains("positive"), "{e}");
    }

    #[test]
    fn verdicts_name_the_limit_and_the_value_and_reducing_trades_pass() {
        let rules = Rules {
            max_notional_usd: Some(1000.0),
            max_daily_notional_usd: Some(10_000.0),
            ..Default::default()
        };
        let t = Trade {
            coin: Some("BTC".into()),
            notional: Some(900.0),
            ..Default::default()
        };
        let vs = verdicts(&rules, &t, None, 9_500.0);
        assert!(vs[0].ok && vs[0].near, "{vs:?}");
        assert!(!vs[1].ok);
        assert!(
            vs[1].message.contains("10400.00 USD") && vs[1].message.contains("10000.00 USD"),
            "{}",
            vs[1].message
        );
        let close = Trade {
            reduces: true,
            ..Default::default()
        };
        assert!(verdicts(&rules, &close, None, 1e9).iter().all(|v| v.ok));
        let unknown = verdicts(&rules, &Trade::default(), None, 0.0);
        assert!(unknown.iter().all(|v| !v.ok), "{unknown:?}");
        assert_eq!(coin_of("eth-perp"), "ETH");
    }
}
