//! The slash-command grammar of the console's command line.
//!
//! ```text
//! /propose <coin> <long|short|buy|sell> <size> [tp=PX] [sl=PX] [lev=N] [limit=PX] [ex=venue|venue2]
//! /propose <coin> <long|short|buy|sell> usd=AMOUNT [options…]
//! /confirm <proposalId>
//! /reject <id> [reason]
//! /agent <name|all>
//! /kill <reason> | /kill off
//! /auto <agent|*> <coins,...|*> <maxNotionalUsd> <minutes> [reason] | /auto revoke <id> | /auto
//! /policy
//! /close <coin|all>
//! /backtest <strategyId> <pair> <timeframe> <days> [param=N ...]
//! /top <backtests|live|combos> [key=value ...]
//! /job <jobId>
//! /research [start <task> | say <message> | stop]   (service commands: sent as typed)
//! /chat <message>
//! /tool <name> [json args]
//! /refresh   /help   /quit (alias /q)
//! ```
//!
//! Conventions (documented for users in the README):
//! - The leading `/` is optional, surrounding whitespace is ignored, command names, sides, option
//!   keys and exchange names are case-insensitive. Proposal ids are kept as typed.
//! - Coins are normalised to the bare upper-case symbol: `btc`, `BTCUSDT`, `BTC-USD`, `btc/usdt` and
//!   `BTC-PERP` all mean `BTC`. A concatenated `USDT`/`USDC`/`USD` suffix is always stripped, so a
//!   coin whose own name ends in `USD` cannot be named (none is listed by the venue today).
//! - `/close all` closes everything, so a coin literally named `ALL` cannot be closed one by one.
//! - Size is positional, in coin units (`0.01`), or USD notional when marked with `$` or `usd`
//!   (`$500`, `500$`, `500usd`); `usd=500` may replace the positional size.
//! - Numbers are plain decimals (`72000`, `0.5`, `.5`), may group digits with `_` (`72_000`) and may
//!   end in `k` (thousand) or `m` (million): `72k`, `1.5m`. The suffix is applied by moving the
//!   decimal point in the text, so `1.1k` is exactly `1100`. No signs, exponents, `inf` or `nan`.
//! - Leverage is a whole number from 1 to 100, optionally written with an `x` (`lev=10x`);
//!   `leverage=` is an alias of `lev=`, `exchange=` of `ex=`.
//! - Options come after the positional arguments, in any order, each at most once.
//! - Whether tp/sl lie on the right side of the entry price is for the server to judge: the console
//!   does not know the price when it parses.
//! - `/backtest` pairs are written as the discovery operations write them: `BTC`, `btc-usd`,
//!   `BTCUSDT` all mean `BTC-USD`. Timeframes are a whole number and a unit `m`, `h`, `d` or `w`
//!   (`5m`, `1h`); days are 1 to 3650. Strategy parameters are `name=number` (the number may be
//!   negative, no `k`/`m` suffix); which names a strategy takes is for the server to judge.
//! - `/top` sets the query of one Discovery view and shows it: given keys replace the current
//!   value, `key=default` returns it to the server's default, keys not given stay as they were.
//!   Keys (case-insensitive, written in the wire's camelCase): backtests `filter=good|excellent|all`
//!   `includeAll=true|false`; live `windowDays=N` `limit=N`; combos `pair=` `timeframe=` (alias
//!   `tf=`) `days=N` `perStrategy=N` `limit=N` `filter=good|all` `minReturnPct=X` `minTrades=N`.

mod args;
mod complete;
mod guard;
mod parse;
mod spec;
#[cfg(test)]
mod tests;
mod values;

use std::fmt;

use crate::api::model::TradeSignal;
use crate::console::suggest::closest;
use args::*;
use parse::*;
use values::*;

pub use complete::{complete, complete_with};
pub use guard::{AutoArgs, AutoCommand, DEFAULT_AUTO_REASON};
pub use parse::parse;
use spec::*;
pub use spec::{COMMANDS, CommandSpec};
pub use values::{normalize_pair, normalize_timeframe, parse_number};

/// A parsed command line.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Propose(ProposeArgs),
    /// Execute a trade now, without staging (`place_order`).
    Trade(TradeArgs),
    /// Open the builder-fee panel.
    BuilderFee,
    /// Confirm (execute) a staged proposal by id.
    Confirm(String),
    /// Reject an inbox item, with the reason the gateway gives the agent.
    Reject {
        id: String,
        reason: Option<String>,
    },
    /// The inbox's agent filter: an agent's name or fingerprint, or None for every agent.
    Agent(Option<String>),
    /// The gateway's kill switch on (with the reason agents are told) or off; asked first.
    Kill {
        on: bool,
        reason: String,
    },
    /// The gateway's standing approvals: list, create, revoke.
    Auto(AutoCommand),
    /// The gateway's agents with their state.
    Agents,
    /// Suspend one agent on the gateway (with the reason it is told); asked first.
    Suspend {
        agent: String,
        reason: String,
    },
    /// End an agent's suspension (admin); asked first.
    Resume(String),
    /// The gateway's policy in force.
    Policy,
    Close(CloseTarget),
    /// Submit a backtest job.
    Backtest(BacktestArgs),
    /// Show (and re-query) a Discovery view with changed parameters.
    Top(TopArgs),
    /// Follow a backtest job by id on the Backtests tab.
    Job(String),
    /// A service command (`/research …`), sent as typed to the service's command line.
    Service(String),
    /// A message to the service's agent.
    Chat(String),
    /// Call a tool: its name and, when given, its JSON arguments as typed.
    Tool {
        name: String,
        args: Option<String>,
    },
    Refresh,
    Help,
    Quit,
}

/// Arguments of `/backtest`.
#[derive(Debug, Clone, PartialEq)]
pub struct BacktestArgs {
    pub strategy: String,
    /// `BTC-USD` form.
    pub pair: String,
    pub timeframe: String,
    pub days: u32,
    /// Strategy parameters in the order given.
    pub params: Vec<(String, f64)>,
}

/// The ranked Discovery views `/top` can query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopView {
    Backtests,
    Live,
    Combos,
}

impl TopView {
    pub fn name(self) -> &'static str {
        match self {
            TopView::Backtests => "backtests",
            TopView::Live => "live",
            TopView::Combos => "combos",
        }
    }

    /// The query keys this view takes, in canonical spelling.
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            TopView::Backtests => &["filter", "includeAll"],
            TopView::Live => &["windowDays", "limit"],
            TopView::Combos => &[
                "pair",
                "timeframe",
                "days",
                "perStrategy",
                "limit",
                "filter",
                "minReturnPct",
                "minTrades",
            ],
        }
    }
}

/// One `key=value` of `/top`; `None` returns the key to the server's default.
#[derive(Debug, Clone, PartialEq)]
pub enum TopParam {
    /// `good`, `excellent` (top backtests only) or `all`.
    Filter(Option<String>),
    IncludeAll(Option<bool>),
    WindowDays(Option<u32>),
    Limit(Option<u32>),
    /// `BTC-USD` form.
    Pair(Option<String>),
    Timeframe(Option<String>),
    Days(Option<u32>),
    PerStrategy(Option<u32>),
    MinReturnPct(Option<f64>),
    MinTrades(Option<u32>),
}

impl TopParam {
    pub fn key(&self) -> &'static str {
        match self {
            TopParam::Filter(_) => "filter",
            TopParam::IncludeAll(_) => "includeAll",
            TopParam::WindowDays(_) => "windowDays",
            TopParam::Limit(_) => "limit",
            TopParam::Pair(_) => "pair",
            TopParam::Timeframe(_) => "timeframe",
            TopParam::Days(_) => "days",
            TopParam::PerStrategy(_) => "perStrategy",
            TopParam::MinReturnPct(_) => "minReturnPct",
            TopParam::MinTrades(_) => "minTrades",
        }
    }

    /// The value as the command line and the wire write it; `None` for the server's default.
    pub fn value(&self) -> Option<String> {
        match self {
            TopParam::Filter(v) | TopParam::Pair(v) | TopParam::Timeframe(v) => v.clone(),
            TopParam::IncludeAll(v) => v.map(|b| b.to_string()),
            TopParam::WindowDays(v)
            | TopParam::Limit(v)
            | TopParam::Days(v)
            | TopParam::PerStrategy(v)
            | TopParam::MinTrades(v) => v.map(|n| n.to_string()),
            TopParam::MinReturnPct(v) => v.map(|x| x.to_string()),
        }
    }
}

/// Arguments of `/top`.
#[derive(Debug, Clone, PartialEq)]
pub struct TopArgs {
    pub view: TopView,
    pub params: Vec<TopParam>,
}

/// What `/close` closes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseTarget {
    Coin(String),
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Long,
    Short,
}

/// Position size: in coin units, or as USD notional that the server converts at its price.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Size {
    Coin(f64),
    Usd(f64),
}

/// Arguments of `/propose`. Every number is finite and greater than zero; leverage is 1..=100.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposeArgs {
    /// Bare upper-case symbol, e.g. `BTC`.
    pub coin: String,
    pub side: Side,
    pub size: Size,
    pub tp: Option<f64>,
    pub sl: Option<f64>,
    pub leverage: Option<u32>,
    /// Limit price; `None` means a market order.
    pub limit: Option<f64>,
    /// `venue` or `venue2` (lower case); `None` leaves the choice to the server.
    pub exchange: Option<String>,
}

/// What `/trade` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TradeAction {
    Long,
    Short,
    Close,
}

impl fmt::Display for TradeAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TradeAction::Long => "long",
            TradeAction::Short => "short",
            TradeAction::Close => "close",
        })
    }
}

/// Arguments of `/trade`. `size` is required to open, optional to close (the whole position).
/// `fanout: None` takes the console's default (toggled on the Signals tab).
#[derive(Debug, Clone, PartialEq)]
pub struct TradeArgs {
    pub coin: String,
    pub action: TradeAction,
    pub size: Option<Size>,
    pub tp: Option<f64>,
    pub sl: Option<f64>,
    pub fanout: Option<bool>,
}

impl TradeArgs {
    /// The signal sent to `POST /api/v1/trades`, fanning out as decided.
    pub fn to_signal(&self, fanout: bool) -> TradeSignal {
        let (size, size_usd) = match self.size {
            Some(Size::Coin(x)) => (Some(x), None),
            Some(Size::Usd(x)) => (None, Some(x)),
            None => (None, None),
        };
        TradeSignal {
            strategy: Some(STRATEGY.to_string()),
            a: Some(pair(&self.coin)),
            d: Some(self.action.to_string()),
            o: Some("market".to_string()),
            tp: self.tp,
            sl: self.sl,
            size,
            size_usd,
            fanout: Some(fanout),
            ..TradeSignal::default()
        }
    }
}

impl fmt::Display for TradeArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/trade {} {}", self.coin, self.action)?;
        if let Some(size) = self.size {
            write!(f, " {size}")?;
        }
        if let Some(tp) = self.tp {
            write!(f, " tp={tp}")?;
        }
        if let Some(sl) = self.sl {
            write!(f, " sl={sl}")?;
        }
        if let Some(on) = self.fanout {
            write!(f, " fanout={}", if on { "on" } else { "off" })?;
        }
        Ok(())
    }
}

/// Why a command line was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// One sentence naming the problem, suitable for the status line.
    pub message: String,
    /// Char (not byte) offset in the input where the offending text starts, so the UI can put a
    /// caret under it. For a missing argument it is the end of the trimmed input.
    pub position: usize,
}

impl ParseError {
    fn new(message: impl Into<String>, position: usize) -> Self {
        // Messages quote what the user typed and are drawn on the status line; a pasted control
        // character (an escape sequence) must show as text, not reach the terminal.
        let message: String = message.into();
        let message = if message.chars().any(char::is_control) {
            message
                .chars()
                .map(|c| {
                    if c.is_control() {
                        c.escape_debug().to_string()
                    } else {
                        c.to_string()
                    }
                })
                .collect()
        } else {
            message
        };
        Self { message, position }
    }
}

/// The canonical text form, which [`parse`] reads back to an equal command.
impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::Propose(p) => write!(f, "{p}"),
            Command::Trade(t) => write!(f, "{t}"),
            Command::BuilderFee => f.write_str("/builder-fee"),
            Command::Confirm(id) => write!(f, "/confirm {id}"),
            Command::Reject { id, reason } => match reason {
                Some(r) => write!(f, "/reject {id} {r}"),
                None => write!(f, "/reject {id}"),
            },
            Command::Agent(Some(name)) => write!(f, "/agent {name}"),
            Command::Agent(None) => f.write_str("/agent all"),
            Command::Kill { on: false, .. } => f.write_str("/kill off"),
            Command::Kill { on: true, reason } => write!(f, "/kill {reason}"),
            Command::Auto(a) => write!(f, "{a}"),
            Command::Suspend { agent, reason } => write!(f, "/suspend {agent} {reason}"),
            Command::Resume(agent) => write!(f, "/resume {agent}"),
            Command::Agents => f.write_str("/agents"),
            Command::Policy => f.write_str("/policy"),
            Command::Close(CloseTarget::Coin(coin)) => write!(f, "/close {coin}"),
            Command::Close(CloseTarget::All) => f.write_str("/close all"),
            Command::Backtest(b) => {
                write!(
                    f,
                    "/backtest {} {} {} {}",
                    b.strategy, b.pair, b.timeframe, b.days
                )?;
                for (k, v) in &b.params {
                    write!(f, " {k}={v}")?;
                }
                Ok(())
            }
            Command::Top(t) => {
                write!(f, "/top {}", t.view.name())?;
                for p in &t.params {
                    write!(
                        f,
                        " {}={}",
                        p.key(),
                        p.value().unwrap_or_else(|| "default".into())
                    )?;
                }
                Ok(())
            }
            Command::Job(id) => write!(f, "/job {id}"),
            Command::Service(text) => f.write_str(text),
            Command::Chat(text) => write!(f, "/chat {text}"),
            Command::Tool { name, args } => match args {
                Some(a) => write!(f, "/tool {name} {a}"),
                None => write!(f, "/tool {name}"),
            },
            Command::Refresh => f.write_str("/refresh"),
            Command::Help => f.write_str("/help"),
            Command::Quit => f.write_str("/quit"),
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Long => "long",
            Side::Short => "short",
        })
    }
}

impl fmt::Display for Size {
    // f64's Display never uses exponents and prints the shortest text that reads back to the same
    // value, which is exactly what the grammar accepts.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Size::Coin(x) => write!(f, "{x}"),
            Size::Usd(x) => write!(f, "${x}"),
        }
    }
}

impl fmt::Display for ProposeArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/propose {} {} {}", self.coin, self.side, self.size)?;
        if let Some(tp) = self.tp {
            write!(f, " tp={tp}")?;
        }
        if let Some(sl) = self.sl {
            write!(f, " sl={sl}")?;
        }
        if let Some(lev) = self.leverage {
            write!(f, " lev={lev}")?;
        }
        if let Some(limit) = self.limit {
            write!(f, " limit={limit}")?;
        }
        if let Some(ex) = &self.exchange {
            write!(f, " ex={ex}")?;
        }
        Ok(())
    }
}

/// Tag on every signal the console sends, so the audit log tells hand-typed trades from agents'.
const STRATEGY: &str = "console";

fn pair(coin: &str) -> String {
    format!("{coin}USDT")
}

impl ProposeArgs {
    /// The trade signal sent to the propose endpoint.
    pub fn to_signal(&self) -> TradeSignal {
        let (size, size_usd) = match self.size {
            Size::Coin(x) => (Some(x), None),
            Size::Usd(x) => (None, Some(x)),
        };
        TradeSignal {
            strategy: Some(STRATEGY.to_string()),
            a: Some(pair(&self.coin)),
            d: Some(self.side.to_string()),
            o: Some(
                if self.limit.is_some() {
                    "limit"
                } else {
                    "market"
                }
                .to_string(),
            ),
            p: self.limit,
            tp: self.tp,
            sl: self.sl,
            size,
            size_usd,
            leverage: self.leverage,
            exchange: self.exchange.clone(),
            ..TradeSignal::default()
        }
    }
}

impl CloseTarget {
    /// The trade signal that closes this target.
    pub fn to_signal(&self) -> TradeSignal {
        match self {
            CloseTarget::Coin(coin) => TradeSignal {
                strategy: Some(STRATEGY.to_string()),
                a: Some(pair(coin)),
                d: Some("close".to_string()),
                ..TradeSignal::default()
            },
            CloseTarget::All => TradeSignal {
                strategy: Some(STRATEGY.to_string()),
                action: Some("close_all".to_string()),
                ..TradeSignal::default()
            },
        }
    }
}
