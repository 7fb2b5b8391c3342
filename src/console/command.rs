//! The slash-command grammar of the console's command line.
//!
//! ```text
//! /propose <coin> <long|short|buy|sell> <size> [tp=PX] [sl=PX] [lev=N] [limit=PX] [ex=venue|venue2]
//! /propose <coin> <long|short|buy|sell> usd=AMOUNT [options…]
//! /confirm <proposalId>
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

use std::fmt;

use crate::api::model::TradeSignal;

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

fn parse_trade(args: &[Token<'_>], end: usize) -> Result<TradeArgs, ParseError> {
    let coin = parse_coin(
        args.first()
            .ok_or_else(|| missing("<coin>", TRADE_USAGE, end))?,
    )?;
    let action_token = args
        .get(1)
        .ok_or_else(|| missing("<long|short|close>", TRADE_USAGE, end))?;
    let action = match action_token.text.to_ascii_lowercase().as_str() {
        "long" | "buy" => TradeAction::Long,
        "short" | "sell" => TradeAction::Short,
        "close" => TradeAction::Close,
        _ => {
            return Err(ParseError::new(
                format!(
                    "invalid action `{}`; expected long, short or close",
                    action_token.text
                ),
                action_token.pos,
            ));
        }
    };
    let mut rest = args.get(2..).unwrap_or_default();
    let mut out = TradeArgs {
        coin,
        action,
        size: None,
        tp: None,
        sl: None,
        fanout: None,
    };
    if let Some(token) = rest.first().filter(|t| !t.text.contains('=')) {
        out.size = Some(parse_size(token)?);
        rest = &rest[1..];
    }
    let mut seen: Vec<String> = Vec::new();
    for token in rest {
        let Some((key, value)) = token.text.split_once('=') else {
            return Err(ParseError::new(
                format!(
                    "unexpected argument `{}`; options are tp=, sl= and fanout=on|off",
                    token.text
                ),
                token.pos,
            ));
        };
        let lower = key.to_ascii_lowercase();
        if seen.contains(&lower) {
            return Err(ParseError::new(
                format!("duplicate option `{key}=`"),
                token.pos,
            ));
        }
        let value_pos = token.pos + key.chars().count() + 1;
        match lower.as_str() {
            "tp" => out.tp = Some(amount("tp", value, value_pos)?),
            "sl" => out.sl = Some(amount("sl", value, value_pos)?),
            "fanout" => {
                out.fanout = Some(match value.to_ascii_lowercase().as_str() {
                    "on" | "true" | "yes" | "1" => true,
                    "off" | "false" | "no" | "0" => false,
                    _ => {
                        return Err(ParseError::new(
                            format!("invalid fanout `{value}`; expected on or off"),
                            value_pos,
                        ));
                    }
                })
            }
            _ => {
                return Err(ParseError::new(
                    format!("unknown option `{key}=`; options are tp=, sl= and fanout=on|off"),
                    token.pos,
                ));
            }
        }
        seen.push(lower);
    }
    if out.size.is_none() && action != TradeAction::Close {
        return Err(missing("<size>", TRADE_USAGE, end));
    }
    Ok(out)
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

/// One entry of the help overlay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandSpec {
    pub name: &'static str,
    pub usage: &'static str,
    pub summary: &'static str,
    /// Answered by the service (sent as typed to its command line), not by the console.
    pub service: bool,
}

const PROPOSE_USAGE: &str =
    "/propose <coin> <long|short> <size> [tp=PX] [sl=PX] [lev=N] [limit=PX] [ex=venue|venue2]";
const TRADE_USAGE: &str = "/trade <coin> <long|short|close> <size> [tp=PX] [sl=PX] [fanout=on|off]";
const CONFIRM_USAGE: &str = "/confirm <proposalId>";
const CLOSE_USAGE: &str = "/close <coin|all>";
const BACKTEST_USAGE: &str = "/backtest <strategyId> <pair> <timeframe> <days> [param=N ...]";
const TOP_USAGE: &str = "/top <backtests|live|combos> [key=value ...]";
const JOB_USAGE: &str = "/job <jobId>";

/// Every command, in the order the help overlay lists them.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "propose",
        usage: PROPOSE_USAGE,
        summary: "Stage a trade proposal for approval; size in coins (0.01) or USD ($500, usd=500)",
        service: false,
    },
    CommandSpec {
        name: "trade",
        usage: TRADE_USAGE,
        summary: "Trade NOW, without approval (webhook:alerts or legacy keys); fanout= overrides the Signals tab's default",
        service: false,
    },
    CommandSpec {
        name: "builder-fee",
        usage: "/builder-fee",
        summary: "Show the builder-fee typed data for the account's wallet; y signs it with AGENTDESK_WALLET_KEY",
        service: false,
    },
    CommandSpec {
        name: "confirm",
        usage: CONFIRM_USAGE,
        summary: "Open the approve dialog for a staged proposal (y executes it)",
        service: false,
    },
    CommandSpec {
        name: "close",
        usage: CLOSE_USAGE,
        summary: "Stage a close of one coin, or of every position, for approval",
        service: false,
    },
    CommandSpec {
        name: "backtest",
        usage: BACKTEST_USAGE,
        summary: "Run a backtest (e.g. /backtest ema_cross BTC 1h 30 fast=9); follow it on tab 5",
        service: false,
    },
    CommandSpec {
        name: "top",
        usage: TOP_USAGE,
        summary: "Query a Discovery view, e.g. /top combos pair=ETH-USD timeframe=1h days=60; key=default resets",
        service: false,
    },
    CommandSpec {
        name: "job",
        usage: JOB_USAGE,
        summary: "Follow a backtest job by id on the Backtests tab",
        service: false,
    },
    CommandSpec {
        name: "research",
        usage: "/research",
        summary: "Show the research run's status (tab 6)",
        service: true,
    },
    CommandSpec {
        name: "research start",
        usage: "/research start <task>",
        summary: "Start a research run: a lead plans, agents backtest and report",
        service: true,
    },
    CommandSpec {
        name: "research say",
        usage: "/research say <message>",
        summary: "Message the active run's lead",
        service: true,
    },
    CommandSpec {
        name: "research stop",
        usage: "/research stop",
        summary: "Stop the active run (X on tab 6 asks first)",
        service: true,
    },
    CommandSpec {
        name: "chat",
        usage: "/chat <message>",
        summary: "Ask the service's agent; its tool calls and confirm tokens show on tab 8",
        service: false,
    },
    CommandSpec {
        name: "tool",
        usage: "/tool <name> [json args]",
        summary: "Call a tool (tab 7): with valid args it runs, else the editor opens; mutate tools go to the inbox",
        service: false,
    },
    CommandSpec {
        name: "refresh",
        usage: "/refresh",
        summary: "Reload every pane now",
        service: false,
    },
    CommandSpec {
        name: "help",
        usage: "/help",
        summary: "Show commands and key bindings",
        service: false,
    },
    CommandSpec {
        name: "quit",
        usage: "/quit",
        summary: "Leave the console (alias /q)",
        service: false,
    },
];

/// Short names accepted in place of a command name.
const ALIASES: &[(&str, &str)] = &[("q", "quit")];

/// Upper bounds keep numbers printable and within what any venue accepts; they are far beyond any
/// real order, so they only catch typos and garbage.
const MAX_LEVERAGE: u32 = 100;

/// Parses one command line.
pub fn parse(input: &str) -> Result<Command, ParseError> {
    let tokens = tokenize(input);
    let end = input.trim_end().chars().count();
    let Some(first) = tokens.first() else {
        return Err(ParseError::new(
            "empty command; type /help for the list of commands",
            0,
        ));
    };
    let name = command_name(first.text);
    if name.is_empty() {
        return Err(ParseError::new(
            "missing command name after `/`; type /help for the list of commands",
            first.pos,
        ));
    }
    let Some(name) = resolve_name(&name) else {
        return Err(unknown_command(first));
    };
    let args = &tokens[1..];
    match name {
        "propose" => parse_propose(args, end).map(Command::Propose),
        "trade" => parse_trade(args, end).map(Command::Trade),
        "builder-fee" => no_more(args, "/builder-fee").map(|()| Command::BuilderFee),
        "confirm" => {
            let id = args
                .first()
                .ok_or_else(|| missing("<proposalId>", CONFIRM_USAGE, end))?;
            no_more(&args[1..], CONFIRM_USAGE)?;
            Ok(Command::Confirm(id.text.to_string()))
        }
        "close" => {
            let target = args
                .first()
                .ok_or_else(|| missing("<coin|all>", CLOSE_USAGE, end))?;
            no_more(&args[1..], CLOSE_USAGE)?;
            if target.text.eq_ignore_ascii_case("all") {
                Ok(Command::Close(CloseTarget::All))
            } else {
                Ok(Command::Close(CloseTarget::Coin(parse_coin(target)?)))
            }
        }
        "backtest" => parse_backtest(args, end).map(Command::Backtest),
        "top" => parse_top(args, end).map(Command::Top),
        "job" => {
            let id = args
                .first()
                .ok_or_else(|| missing("<jobId>", JOB_USAGE, end))?;
            no_more(&args[1..], JOB_USAGE)?;
            if !valid_id(id.text) {
                return Err(ParseError::new(
                    format!(
                        "invalid job id `{}`; expected letters, digits, `_`, `-` or `.`",
                        id.text
                    ),
                    id.pos,
                ));
            }
            Ok(Command::Job(id.text.to_string()))
        }
        "research" => {
            let text = input.trim();
            let text = if text.starts_with('/') {
                text.to_string()
            } else {
                format!("/{text}")
            };
            match args.first().map(|t| t.text.to_ascii_lowercase()) {
                Some(sub) if (sub == "start" || sub == "say") && args.len() < 2 => {
                    let what = if sub == "start" {
                        "<task>"
                    } else {
                        "<message>"
                    };
                    Err(missing(what, &format!("/research {sub} {what}"), end))
                }
                _ => Ok(Command::Service(text)),
            }
        }
        "chat" => {
            let rest = input[first.start + first.text.len()..].trim();
            if rest.is_empty() {
                return Err(missing("<message>", "/chat <message>", end));
            }
            Ok(Command::Chat(rest.to_string()))
        }
        "tool" => {
            let name = args
                .first()
                .ok_or_else(|| missing("<name>", "/tool <name> [json args]", end))?;
            let rest = input[name.start + name.text.len()..].trim();
            Ok(Command::Tool {
                name: name.text.to_string(),
                args: (!rest.is_empty()).then(|| rest.to_string()),
            })
        }
        "refresh" => no_more(args, "/refresh").map(|()| Command::Refresh),
        "help" => no_more(args, "/help").map(|()| Command::Help),
        "quit" => no_more(args, "/quit").map(|()| Command::Quit),
        // resolve_name only returns names from COMMANDS, all matched above; answering with the
        // generic error keeps this path panic-free if a name is added to COMMANDS but not here.
        _ => Err(unknown_command(first)),
    }
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    text: &'a str,
    /// Byte offset, for slicing the input when completing.
    start: usize,
    /// Char offset, for error positions.
    pos: usize,
}

fn tokenize(input: &str) -> Vec<Token<'_>> {
    let mut tokens = Vec::new();
    let mut start: Option<(usize, usize)> = None;
    for (ci, (bi, ch)) in input.char_indices().enumerate() {
        if ch.is_whitespace() {
            if let Some((sb, sc)) = start.take() {
                tokens.push(Token {
                    text: &input[sb..bi],
                    start: sb,
                    pos: sc,
                });
            }
        } else if start.is_none() {
            start = Some((bi, ci));
        }
    }
    if let Some((sb, sc)) = start {
        tokens.push(Token {
            text: &input[sb..],
            start: sb,
            pos: sc,
        });
    }
    tokens
}

fn command_name(token: &str) -> String {
    token.strip_prefix('/').unwrap_or(token).to_lowercase()
}

/// Maps a lower-case name or alias to the canonical name from [`COMMANDS`].
fn resolve_name(name: &str) -> Option<&'static str> {
    COMMANDS
        .iter()
        .map(|c| c.name)
        .find(|n| *n == name)
        .or_else(|| {
            ALIASES
                .iter()
                .find(|(alias, _)| *alias == name)
                .map(|(_, n)| *n)
        })
}

fn unknown_command(token: &Token<'_>) -> ParseError {
    let name = command_name(token.text);
    let names = COMMANDS
        .iter()
        .map(|c| c.name)
        .filter(|n| !n.contains(' '))
        .chain(ALIASES.iter().map(|(a, _)| *a));
    let message = match closest(&name, names) {
        Some(best) => {
            let best = resolve_name(best).unwrap_or(best);
            format!("unknown command `{}`; did you mean `/{best}`?", token.text)
        }
        None => format!(
            "unknown command `{}`; type /help for the list of commands",
            token.text
        ),
    };
    ParseError::new(message, token.pos)
}

/// The candidate the user most plausibly meant: one the word is a prefix of, else the nearest within
/// two edits (and fewer edits than the word has characters, so `x` does not suggest `q`).
pub(crate) fn closest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let word = word.to_lowercase();
    if word.is_empty() {
        return None;
    }
    let candidates: Vec<&str> = candidates.into_iter().collect();
    if let Some(c) = candidates.iter().find(|c| c.starts_with(&word)) {
        return Some(c);
    }
    let len = word.chars().count();
    candidates
        .into_iter()
        .map(|c| (edit_distance(&word, c), c))
        .filter(|(d, _)| *d <= 2 && *d < len)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = Vec::with_capacity(b.len() + 1);
        cur.push(i + 1);
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

fn missing(what: &str, usage: &str, end: usize) -> ParseError {
    ParseError::new(format!("missing {what}; usage: {usage}"), end)
}

fn no_more(rest: &[Token<'_>], usage: &str) -> Result<(), ParseError> {
    match rest.first() {
        None => Ok(()),
        Some(t) => Err(ParseError::new(
            format!("unexpected argument `{}`; usage: {usage}", t.text),
            t.pos,
        )),
    }
}

/// Quote currencies stripped from pair-style symbols.
const QUOTES: &[&str] = &["USDT", "USDC", "USD"];
/// Longest bare symbol accepted; real ones are far shorter, so longer text is a typo or garbage.
const MAX_COIN_LEN: usize = 15;

fn parse_coin(token: &Token<'_>) -> Result<String, ParseError> {
    normalize_coin(token.text).ok_or_else(|| {
        ParseError::new(
            format!(
                "invalid coin `{}`; expected a symbol like BTC, ETHUSDT or SOL-USD",
                token.text
            ),
            token.pos,
        )
    })
}

fn normalize_coin(raw: &str) -> Option<String> {
    let upper = raw.to_ascii_uppercase();
    let base = match upper.split_once(['-', '/', '_']) {
        Some((base, quote)) if QUOTES.contains(&quote) || quote == "PERP" => base,
        Some(_) => return None,
        None => QUOTES
            .iter()
            .find_map(|q| upper.strip_suffix(q).filter(|b| !b.is_empty()))
            .unwrap_or(&upper),
    };
    let valid = !base.is_empty()
        && base.len() <= MAX_COIN_LEN
        && base.chars().all(|c| c.is_ascii_alphanumeric());
    valid.then(|| base.to_string())
}

fn parse_side(token: &Token<'_>) -> Result<Side, ParseError> {
    match token.text.to_ascii_lowercase().as_str() {
        "long" | "buy" => Ok(Side::Long),
        "short" | "sell" => Ok(Side::Short),
        _ => Err(ParseError::new(
            format!(
                "invalid side `{}`; expected long, short, buy or sell",
                token.text
            ),
            token.pos,
        )),
    }
}

#[derive(Debug, PartialEq, Eq)]
enum AmountError {
    NotANumber,
    NotPositive,
    TooLarge,
}

/// Parses a positive decimal as described in the module docs.
fn parse_amount(text: &str) -> Result<f64, AmountError> {
    if let Some(rest) = text.strip_prefix('-')
        && !rest.starts_with('-')
    {
        // A well-formed negative number deserves "must be positive", not "not a number".
        return match parse_amount(rest) {
            Ok(_) | Err(AmountError::NotPositive) | Err(AmountError::TooLarge) => {
                Err(AmountError::NotPositive)
            }
            Err(AmountError::NotANumber) => Err(AmountError::NotANumber),
        };
    }
    let (digits, shift) = match text.char_indices().last() {
        Some((i, 'k' | 'K')) => (&text[..i], 3),
        Some((i, 'm' | 'M')) => (&text[..i], 6),
        _ => (text, 0),
    };
    let chars: Vec<char> = digits.chars().collect();
    let mut seen_digit = false;
    let mut seen_dot = false;
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '0'..='9' => seen_digit = true,
            '.' if !seen_dot => seen_dot = true,
            '_' => {
                let between_digits = i > 0
                    && chars[i - 1].is_ascii_digit()
                    && chars.get(i + 1).is_some_and(char::is_ascii_digit);
                if !between_digits {
                    return Err(AmountError::NotANumber);
                }
            }
            _ => return Err(AmountError::NotANumber),
        }
    }
    if !seen_digit {
        return Err(AmountError::NotANumber);
    }
    let plain: String = digits.chars().filter(|&c| c != '_').collect();
    let (int, frac) = plain.split_once('.').unwrap_or((&plain, ""));
    // Shift the decimal point in the text so `1.1k` is exactly 1100 rather than 1.1 * 1000.
    let moved = frac.len().min(shift);
    let mut text = String::with_capacity(plain.len() + shift + 1);
    text.push_str(int);
    text.push_str(&frac[..moved]);
    text.extend(std::iter::repeat_n('0', shift - moved));
    text.push('.');
    text.push_str(&frac[moved..]);
    text.push('0');
    let value: f64 = text.parse().map_err(|_| AmountError::NotANumber)?;
    if !value.is_finite() {
        Err(AmountError::TooLarge)
    } else if value <= 0.0 {
        Err(AmountError::NotPositive)
    } else {
        Ok(value)
    }
}

fn amount(what: &str, text: &str, pos: usize) -> Result<f64, ParseError> {
    parse_amount(text).map_err(|e| {
        let message = match e {
            AmountError::NotANumber => format!(
                "invalid {what} `{text}`; expected a positive number like 72000, 72_000, 72k or 0.5"
            ),
            AmountError::NotPositive => format!("{what} must be greater than zero (got `{text}`)"),
            AmountError::TooLarge => format!("{what} `{text}` is too large"),
        };
        ParseError::new(message, pos)
    })
}

fn parse_size(token: &Token<'_>) -> Result<Size, ParseError> {
    let text = token.text;
    let usd_suffix = text
        .len()
        .checked_sub(3)
        .filter(|&i| text.is_char_boundary(i) && text[i..].eq_ignore_ascii_case("usd"));
    if let Some(rest) = text.strip_prefix('$') {
        amount("size", rest, token.pos + 1).map(Size::Usd)
    } else if let Some(rest) = text.strip_suffix('$') {
        amount("size", rest, token.pos).map(Size::Usd)
    } else if let Some(i) = usd_suffix {
        amount("size", &text[..i], token.pos).map(Size::Usd)
    } else {
        amount("size", text, token.pos).map(Size::Coin)
    }
}

fn parse_leverage(text: &str, pos: usize) -> Result<u32, ParseError> {
    let body = text.strip_suffix(['x', 'X']).unwrap_or(text);
    let (negative, digits) = match body.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, body),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(ParseError::new(
            format!("invalid leverage `{text}`; expected a whole number from 1 to {MAX_LEVERAGE}"),
            pos,
        ));
    }
    match digits.parse::<u32>() {
        Ok(n) if !negative && (1..=MAX_LEVERAGE).contains(&n) => Ok(n),
        // Overflowing u32 is out of range too, not "not a number".
        _ => Err(ParseError::new(
            format!("leverage must be between 1 and {MAX_LEVERAGE} (got `{text}`)"),
            pos,
        )),
    }
}

fn parse_exchange(text: &str, pos: usize) -> Result<String, ParseError> {
    let lower = text.to_ascii_lowercase();
    if lower == "venue" || lower == "venue2" {
        Ok(lower)
    } else {
        Err(ParseError::new(
            format!("invalid exchange `{text}`; expected venue or venue2"),
            pos,
        ))
    }
}

/// Option keys of `/propose` in canonical spelling, in the order `Display` writes them.
const OPTION_KEYS: &[&str] = &["tp", "sl", "lev", "limit", "ex", "usd"];

fn canonical_option(key: &str) -> Option<&'static str> {
    match key.to_ascii_lowercase().as_str() {
        "tp" => Some("tp"),
        "sl" => Some("sl"),
        "lev" | "leverage" => Some("lev"),
        "limit" => Some("limit"),
        "ex" | "exchange" => Some("ex"),
        "usd" => Some("usd"),
        _ => None,
    }
}

fn parse_propose(args: &[Token<'_>], end: usize) -> Result<ProposeArgs, ParseError> {
    let coin = parse_coin(
        args.first()
            .ok_or_else(|| missing("<coin>", PROPOSE_USAGE, end))?,
    )?;
    let side = parse_side(
        args.get(1)
            .ok_or_else(|| missing("<long|short>", PROPOSE_USAGE, end))?,
    )?;
    let mut rest = args.get(2..).unwrap_or_default();
    let mut size = None;
    if let Some(token) = rest.first().filter(|t| !t.text.contains('=')) {
        size = Some(parse_size(token)?);
        rest = &rest[1..];
    }

    let mut args = ProposeArgs {
        coin,
        side,
        size: Size::Coin(0.0),
        tp: None,
        sl: None,
        leverage: None,
        limit: None,
        exchange: None,
    };
    let mut seen: Vec<&str> = Vec::new();
    for token in rest {
        let Some((key, value)) = token.text.split_once('=') else {
            return Err(ParseError::new(
                format!(
                    "unexpected argument `{}`; options are written key=value, e.g. tp=72000",
                    token.text
                ),
                token.pos,
            ));
        };
        let Some(canonical) = canonical_option(key) else {
            let hint = closest(key, OPTION_KEYS.iter().copied())
                .map(|k| format!("did you mean `{k}=`? "))
                .unwrap_or_default();
            return Err(ParseError::new(
                format!(
                    "unknown option `{key}=`; {hint}options are tp=, sl=, lev=, limit=, ex= and usd="
                ),
                token.pos,
            ));
        };
        if seen.contains(&canonical) {
            return Err(ParseError::new(
                format!("duplicate option `{key}=`"),
                token.pos,
            ));
        }
        seen.push(canonical);
        let value_pos = token.pos + key.chars().count() + 1;
        if value.is_empty() {
            return Err(ParseError::new(
                format!("missing value after `{key}=`"),
                value_pos,
            ));
        }
        match canonical {
            "tp" => args.tp = Some(amount("tp", value, value_pos)?),
            "sl" => args.sl = Some(amount("sl", value, value_pos)?),
            "limit" => args.limit = Some(amount("limit", value, value_pos)?),
            "lev" => args.leverage = Some(parse_leverage(value, value_pos)?),
            "ex" => args.exchange = Some(parse_exchange(value, value_pos)?),
            _ => {
                if size.is_some() {
                    return Err(ParseError::new(
                        "size given twice: use either a positional size or usd=, not both",
                        token.pos,
                    ));
                }
                size = Some(Size::Usd(amount("usd", value, value_pos)?));
            }
        }
    }
    args.size = size.ok_or_else(|| missing("<size>", PROPOSE_USAGE, end))?;
    Ok(args)
}

/// The canonical text form, which [`parse`] reads back to an equal command.
impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::Propose(p) => write!(f, "{p}"),
            Command::Trade(t) => write!(f, "{t}"),
            Command::BuilderFee => f.write_str("/builder-fee"),
            Command::Confirm(id) => write!(f, "/confirm {id}"),
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

/// Timeframes offered by completion (any `<N><m|h|d|w>` parses).
const TIMEFRAMES: &[&str] = &["1m", "5m", "15m", "30m", "1h", "4h", "1d"];
const MAX_DAYS: u32 = 3650;

/// Ids (strategy, job) as the service writes them: kept as typed, but only characters that cannot
/// break the command line or a URL path.
fn valid_id(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 64
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// `BTC`, `btc-usd`, `BTCUSDT` → `BTC-USD`.
pub fn normalize_pair(raw: &str) -> Option<String> {
    normalize_coin(raw).map(|c| format!("{c}-USD"))
}

/// `5m`, `1H` → `5m`, `1h`: a whole number from 1 to 999 and a unit m, h, d or w.
pub fn normalize_timeframe(raw: &str) -> Option<String> {
    let lower = raw.to_ascii_lowercase();
    let unit = lower.chars().last()?;
    let digits = &lower[..lower.len() - unit.len_utf8()];
    let valid = matches!(unit, 'm' | 'h' | 'd' | 'w')
        && !digits.is_empty()
        && digits.len() <= 3
        && digits.chars().all(|c| c.is_ascii_digit())
        && !digits.starts_with('0');
    valid.then_some(lower)
}

/// A finite decimal that may be negative or zero: `-2.5`, `0`, `14`. No suffixes or exponents.
pub fn parse_number(text: &str) -> Option<f64> {
    let body = text.strip_prefix('-').unwrap_or(text);
    let mut dots = 0;
    let mut digits = 0;
    for c in body.chars() {
        match c {
            '0'..='9' => digits += 1,
            '.' => dots += 1,
            _ => return None,
        }
    }
    if digits == 0 || dots > 1 || digits > 18 {
        return None;
    }
    let x: f64 = text.parse().ok()?;
    // `-0` reads back as 0, so the canonical text of every accepted number parses to itself.
    x.is_finite().then_some(if x == 0.0 { 0.0 } else { x })
}

fn parse_uint(key: &str, text: &str, min: u32, max: u32, pos: usize) -> Result<u32, ParseError> {
    let out_of_range = || {
        ParseError::new(
            format!("{key} must be a whole number from {min} to {max} (got `{text}`)"),
            pos,
        )
    };
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(ParseError::new(
            format!("invalid {key} `{text}`; expected a whole number from {min} to {max}"),
            pos,
        ));
    }
    if text.starts_with('-') {
        return Err(out_of_range());
    }
    match digits.parse::<u32>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(out_of_range()),
    }
}

fn parse_backtest(args: &[Token<'_>], end: usize) -> Result<BacktestArgs, ParseError> {
    let strategy = args
        .first()
        .ok_or_else(|| missing("<strategyId>", BACKTEST_USAGE, end))?;
    if !valid_id(strategy.text) {
        return Err(ParseError::new(
            format!(
                "invalid strategy id `{}`; expected letters, digits, `_`, `-` or `.`",
                strategy.text
            ),
            strategy.pos,
        ));
    }
    let pair = args
        .get(1)
        .ok_or_else(|| missing("<pair>", BACKTEST_USAGE, end))?;
    let pair_text = normalize_pair(pair.text).ok_or_else(|| {
        ParseError::new(
            format!(
                "invalid pair `{}`; expected BTC, BTC-USD or BTCUSDT",
                pair.text
            ),
            pair.pos,
        )
    })?;
    let tf = args
        .get(2)
        .ok_or_else(|| missing("<timeframe>", BACKTEST_USAGE, end))?;
    let timeframe = normalize_timeframe(tf.text).ok_or_else(|| {
        ParseError::new(
            format!(
                "invalid timeframe `{}`; expected a number and m, h, d or w, like 5m or 1h",
                tf.text
            ),
            tf.pos,
        )
    })?;
    let days = args
        .get(3)
        .ok_or_else(|| missing("<days>", BACKTEST_USAGE, end))?;
    let days = parse_uint("days", days.text, 1, MAX_DAYS, days.pos)?;
    let mut params: Vec<(String, f64)> = Vec::new();
    for token in &args[4..] {
        let Some((key, value)) = token.text.split_once('=') else {
            return Err(ParseError::new(
                format!(
                    "unexpected argument `{}`; strategy parameters are written name=number, e.g. fast=9",
                    token.text
                ),
                token.pos,
            ));
        };
        let valid_key = key.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && key.len() <= 64
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid_key {
            return Err(ParseError::new(
                format!("invalid parameter name `{key}`"),
                token.pos,
            ));
        }
        if params.iter().any(|(k, _)| k == key) {
            return Err(ParseError::new(
                format!("duplicate parameter `{key}=`"),
                token.pos,
            ));
        }
        let value_pos = token.pos + key.chars().count() + 1;
        let Some(x) = parse_number(value) else {
            return Err(ParseError::new(
                format!("invalid value `{value}` for {key}; expected a number like 14, 0.5 or -2"),
                value_pos,
            ));
        };
        params.push((key.to_string(), x));
    }
    Ok(BacktestArgs {
        strategy: strategy.text.to_string(),
        pair: pair_text,
        timeframe,
        days,
        params,
    })
}

fn top_view(text: &str) -> Option<TopView> {
    match text.to_ascii_lowercase().as_str() {
        "backtests" | "backtest" | "bt" => Some(TopView::Backtests),
        "live" => Some(TopView::Live),
        "combos" | "combo" | "optimized" => Some(TopView::Combos),
        _ => None,
    }
}

fn parse_top(args: &[Token<'_>], end: usize) -> Result<TopArgs, ParseError> {
    let first = args
        .first()
        .ok_or_else(|| missing("<backtests|live|combos>", TOP_USAGE, end))?;
    let view = top_view(first.text).ok_or_else(|| {
        ParseError::new(
            format!(
                "unknown view `{}`; expected backtests, live or combos",
                first.text
            ),
            first.pos,
        )
    })?;
    let keys = view.keys();
    let mut params: Vec<TopParam> = Vec::new();
    for token in &args[1..] {
        let Some((key, value)) = token.text.split_once('=') else {
            return Err(ParseError::new(
                format!(
                    "unexpected argument `{}`; options are written key=value, e.g. limit=20",
                    token.text
                ),
                token.pos,
            ));
        };
        let lower = key.to_ascii_lowercase();
        let lower = if lower == "tf" {
            "timeframe".into()
        } else {
            lower
        };
        let Some(canonical) = keys.iter().find(|k| k.to_ascii_lowercase() == lower) else {
            let lowered: Vec<String> = keys.iter().map(|k| k.to_ascii_lowercase()).collect();
            let hint = closest(key, lowered.iter().map(String::as_str))
                .and_then(|l| keys.iter().find(|k| k.eq_ignore_ascii_case(l)))
                .map(|k| format!("did you mean `{k}=`? "))
                .unwrap_or_default();
            return Err(ParseError::new(
                format!(
                    "unknown option `{key}=` for /top {}; {hint}options are {}",
                    view.name(),
                    keys.iter()
                        .map(|k| format!("{k}="))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                token.pos,
            ));
        };
        if params.iter().any(|p| p.key() == *canonical) {
            return Err(ParseError::new(
                format!("duplicate option `{key}=`"),
                token.pos,
            ));
        }
        let pos = token.pos + key.chars().count() + 1;
        if value.is_empty() {
            return Err(ParseError::new(
                format!("missing value after `{key}=`; write {canonical}=default to reset it"),
                pos,
            ));
        }
        let reset = value.eq_ignore_ascii_case("default");
        let param = match *canonical {
            "filter" => {
                let allowed: &[&str] = if view == TopView::Backtests {
                    &["good", "excellent", "all"]
                } else {
                    &["good", "all"]
                };
                let v = value.to_ascii_lowercase();
                if !reset && !allowed.contains(&v.as_str()) {
                    return Err(ParseError::new(
                        format!("invalid filter `{value}`; expected {}", allowed.join(", ")),
                        pos,
                    ));
                }
                TopParam::Filter((!reset).then_some(v))
            }
            "includeAll" => TopParam::IncludeAll(if reset {
                None
            } else {
                Some(match value.to_ascii_lowercase().as_str() {
                    "true" | "yes" | "1" | "on" => true,
                    "false" | "no" | "0" | "off" => false,
                    _ => {
                        return Err(ParseError::new(
                            format!("invalid includeAll `{value}`; expected true or false"),
                            pos,
                        ));
                    }
                })
            }),
            "pair" => TopParam::Pair(if reset {
                None
            } else {
                Some(normalize_pair(value).ok_or_else(|| {
                    ParseError::new(
                        format!("invalid pair `{value}`; expected BTC, BTC-USD or BTCUSDT"),
                        pos,
                    )
                })?)
            }),
            "timeframe" => TopParam::Timeframe(if reset {
                None
            } else {
                Some(normalize_timeframe(value).ok_or_else(|| {
                    ParseError::new(
                        format!(
                            "invalid timeframe `{value}`; expected a number and m, h, d or w, like 5m or 1h"
                        ),
                        pos,
                    )
                })?)
            }),
            "minReturnPct" => TopParam::MinReturnPct(if reset {
                None
            } else {
                Some(parse_number(value).ok_or_else(|| {
                    ParseError::new(
                        format!("invalid minReturnPct `{value}`; expected a number like 5 or -2.5"),
                        pos,
                    )
                })?)
            }),
            other => {
                let (min, max) = match other {
                    "days" | "windowDays" => (1, MAX_DAYS),
                    "minTrades" => (0, 1_000_000),
                    _ => (1, 10_000),
                };
                let n = if reset {
                    None
                } else {
                    Some(parse_uint(other, value, min, max, pos)?)
                };
                match other {
                    "windowDays" => TopParam::WindowDays(n),
                    "limit" => TopParam::Limit(n),
                    "days" => TopParam::Days(n),
                    "perStrategy" => TopParam::PerStrategy(n),
                    _ => TopParam::MinTrades(n),
                }
            }
        };
        params.push(param);
    }
    Ok(TopArgs { view, params })
}

/// Commands whose name is followed by arguments; completing them adds a space so typing continues.
fn takes_arguments(name: &str) -> bool {
    matches!(
        name,
        "propose"
            | "trade"
            | "confirm"
            | "close"
            | "backtest"
            | "top"
            | "job"
            | "research"
            | "chat"
            | "tool"
    )
}

/// Tab-completion candidates for the whole line: each is the full replacement line, sorted and
/// without duplicates. Text before the token being completed is kept as typed. Completed words end
/// in a space when another argument follows, option keys in `=`.
pub fn complete(input: &str, coins: &[&str]) -> Vec<String> {
    complete_with(input, coins, &[])
}

/// Completion with the tool names of the catalog (for `/tool`).
pub fn complete_with(input: &str, coins: &[&str], tools: &[&str]) -> Vec<String> {
    let tokens = tokenize(input);
    let at_new_token = input.is_empty() || input.ends_with(char::is_whitespace);
    let (done, partial, prefix) = if at_new_token {
        (&tokens[..], "", input)
    } else {
        // Not at a new token means the input ends inside the last token, so there is one.
        let Some((last, done)) = tokens.split_last() else {
            return Vec::new();
        };
        (done, last.text, &input[..last.start])
    };
    let mut out: Vec<String> = Vec::new();
    let mut push = |word: &str, suffix: &str| out.push(format!("{prefix}{word}{suffix}"));
    let starts = |word: &str| word.to_lowercase().starts_with(&partial.to_lowercase());

    match done.first() {
        None => {
            let typed = command_name(partial);
            for spec in COMMANDS.iter().filter(|s| !s.name.contains(' ')) {
                if spec.name.starts_with(&typed) {
                    let suffix = if takes_arguments(spec.name) { " " } else { "" };
                    push(&format!("/{}", spec.name), suffix);
                }
            }
            if let Some(alias) = ALIASES
                .iter()
                .find(|(alias, _)| *alias == typed)
                .map(|(_, name)| *name)
            {
                push(&format!("/{alias}"), "");
            }
        }
        Some(first) => {
            let index = done.len();
            match resolve_name(&command_name(first.text)) {
                Some("propose") => match index {
                    1 => coins
                        .iter()
                        .filter(|c| starts(c))
                        .for_each(|c| push(c, " ")),
                    2 => ["long", "short"]
                        .into_iter()
                        .filter(|s| starts(s))
                        .for_each(|s| push(s, " ")),
                    _ => {
                        let options = &done[3.min(done.len())..];
                        let positional_size = done.get(3).is_some_and(|t| !t.text.contains('='));
                        let used: Vec<&str> = options
                            .iter()
                            .filter_map(|t| t.text.split_once('='))
                            .filter_map(|(k, _)| canonical_option(k))
                            .collect();
                        if let Some((key, value)) = partial.split_once('=') {
                            if canonical_option(key) == Some("ex") {
                                for venue in ["venue", "venue2"] {
                                    if venue.starts_with(&value.to_ascii_lowercase()) {
                                        push(&format!("{key}={venue}"), " ");
                                    }
                                }
                            }
                        } else if index > 3 || !partial.is_empty() {
                            // At the size position an empty partial means a number comes next, so
                            // offering option keys there would suggest skipping the size.
                            let size_given = positional_size || used.contains(&"usd");
                            for key in OPTION_KEYS {
                                let offered = !used.contains(key) && (*key != "usd" || !size_given);
                                if offered && starts(key) {
                                    push(key, "=");
                                }
                            }
                        }
                    }
                },
                Some("research") if index == 1 => ["start", "say", "stop"]
                    .into_iter()
                    .filter(|s| starts(s))
                    .for_each(|s| push(s, if *s == *"stop" { "" } else { " " })),
                Some("tool") if index == 1 => tools
                    .iter()
                    .filter(|t| starts(t))
                    .for_each(|t| push(t, " ")),
                Some("close") if index == 1 => coins
                    .iter()
                    .copied()
                    .chain(["all"])
                    .filter(|c| starts(c))
                    .for_each(|c| push(c, "")),
                Some("backtest") => match index {
                    2 => coins
                        .iter()
                        .map(|c| format!("{c}-USD"))
                        .filter(|c| starts(c))
                        .for_each(|c| push(&c, " ")),
                    3 => TIMEFRAMES
                        .iter()
                        .filter(|t| starts(t))
                        .for_each(|t| push(t, " ")),
                    _ => {}
                },
                Some("top") => {
                    if index == 1 {
                        [TopView::Backtests, TopView::Live, TopView::Combos]
                            .into_iter()
                            .map(TopView::name)
                            .filter(|v| starts(v))
                            .for_each(|v| push(v, " "));
                    } else if let Some(view) = done.get(1).and_then(|t| top_view(t.text)) {
                        let used: Vec<String> = done[2..]
                            .iter()
                            .filter_map(|t| t.text.split_once('='))
                            .map(|(k, _)| k.to_ascii_lowercase())
                            .collect();
                        if !partial.contains('=') {
                            for key in view.keys() {
                                if !used.contains(&key.to_ascii_lowercase()) && starts(key) {
                                    push(key, "=");
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn propose(coin: &str, side: Side, size: Size) -> ProposeArgs {
        ProposeArgs {
            coin: coin.to_string(),
            side,
            size,
            tp: None,
            sl: None,
            leverage: None,
            limit: None,
            exchange: None,
        }
    }

    fn ok(input: &str) -> Command {
        parse(input).unwrap_or_else(|e| panic!("{input:?} failed: {e} at {}", e.position))
    }

    fn err(input: &str) -> ParseError {
        match parse(input) {
            Ok(c) => panic!("{input:?} parsed as {c:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn valid_inputs() {
        let btc = |size| Command::Propose(propose("BTC", Side::Long, size));
        let cases: Vec<(&str, Command)> = vec![
            ("/propose BTC long 0.01", btc(Size::Coin(0.01))),
            ("propose btc buy 0.01", btc(Size::Coin(0.01))),
            ("  /PROPOSE  BTCUSDT  LONG  0.01  ", btc(Size::Coin(0.01))),
            ("/propose BTC-USD long $500", btc(Size::Usd(500.0))),
            ("/propose btc/usdt long 500usd", btc(Size::Usd(500.0))),
            ("/propose BTC-PERP long 500$", btc(Size::Usd(500.0))),
            ("/propose BTC long 500USD", btc(Size::Usd(500.0))),
            ("/propose BTC long usd=1_500", btc(Size::Usd(1500.0))),
            ("/propose BTC long $1.5k", btc(Size::Usd(1500.0))),
            ("/propose BTC long .5", btc(Size::Coin(0.5))),
            (
                "/propose eth sell 2 tp=3k sl=3_600.5 lev=10x limit=3.1K ex=Venue2",
                Command::Propose(ProposeArgs {
                    tp: Some(3000.0),
                    sl: Some(3600.5),
                    leverage: Some(10),
                    limit: Some(3100.0),
                    exchange: Some("venue2".into()),
                    ..propose("ETH", Side::Short, Size::Coin(2.0))
                }),
            ),
            (
                "/propose SOL short usd=250 leverage=100 exchange=venue",
                Command::Propose(ProposeArgs {
                    leverage: Some(100),
                    exchange: Some("venue".into()),
                    ..propose("SOL", Side::Short, Size::Usd(250.0))
                }),
            ),
            ("/confirm prop_7f3A", Command::Confirm("prop_7f3A".into())),
            (
                "/close eth",
                Command::Close(CloseTarget::Coin("ETH".into())),
            ),
            ("/close ALL", Command::Close(CloseTarget::All)),
            ("refresh", Command::Refresh),
            ("/Help", Command::Help),
            ("/quit", Command::Quit),
            ("/q", Command::Quit),
        ];
        for (input, expected) in cases {
            assert_eq!(ok(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_amount("72000"), Ok(72000.0));
        assert_eq!(parse_amount("72_000"), Ok(72000.0));
        assert_eq!(parse_amount("72k"), Ok(72000.0));
        assert_eq!(parse_amount("1.1k"), Ok(1100.0));
        assert_eq!(parse_amount("1.23456k"), Ok(1234.56));
        assert_eq!(parse_amount("1.5m"), Ok(1_500_000.0));
        assert_eq!(parse_amount("5."), Ok(5.0));
        assert_eq!(parse_amount("0"), Err(AmountError::NotPositive));
        assert_eq!(parse_amount("0.0k"), Err(AmountError::NotPositive));
        assert_eq!(parse_amount("-3"), Err(AmountError::NotPositive));
        for bad in [
            "", ".", "k", "1e5", "inf", "NaN", "+1", "1__0", "_1", "1_", "1._5", "1.2.3", "--1",
            "1kk", "0x10", "١٢",
        ] {
            assert_eq!(parse_amount(bad), Err(AmountError::NotANumber), "{bad:?}");
        }
        assert_eq!(parse_amount(&"9".repeat(400)), Err(AmountError::TooLarge));
    }

    #[test]
    fn invalid_inputs() {
        let cases: &[(&str, &str, usize)] = &[
            ("", "empty command; type /help for the list of commands", 0),
            (
                "   /",
                "missing command name after `/`; type /help for the list of commands",
                3,
            ),
            (
                "/propse BTC",
                "unknown command `/propse`; did you mean `/propose`?",
                0,
            ),
            ("/qu", "unknown command `/qu`; did you mean `/quit`?", 0),
            ("/exit", "unknown command `/exit`; did you mean `/quit`?", 0),
            (
                "/zzz",
                "unknown command `/zzz`; type /help for the list of commands",
                0,
            ),
            (
                "/propose BTC long",
                "missing <size>; usage: /propose <coin> <long|short> <size> [tp=PX] [sl=PX] [lev=N] [limit=PX] [ex=venue|venue2]",
                17,
            ),
            (
                "/propose  ",
                "missing <coin>; usage: /propose <coin> <long|short> <size> [tp=PX] [sl=PX] [lev=N] [limit=PX] [ex=venue|venue2]",
                8,
            ),
            (
                "/propose BTC up 1",
                "invalid side `up`; expected long, short, buy or sell",
                13,
            ),
            (
                "/propose B$C long 1",
                "invalid coin `B$C`; expected a symbol like BTC, ETHUSDT or SOL-USD",
                9,
            ),
            (
                "/propose BTC long 1 tp=abc",
                "invalid tp `abc`; expected a positive number like 72000, 72_000, 72k or 0.5",
                23,
            ),
            (
                "/propose BTC long -1",
                "size must be greater than zero (got `-1`)",
                18,
            ),
            (
                "/propose BTC long $0",
                "size must be greater than zero (got `0`)",
                19,
            ),
            (
                "/propose BTC long 1 sl=-5",
                "sl must be greater than zero (got `-5`)",
                23,
            ),
            (
                "/propose BTC long 1 lev=0",
                "leverage must be between 1 and 100 (got `0`)",
                24,
            ),
            (
                "/propose BTC long 1 lev=101",
                "leverage must be between 1 and 100 (got `101`)",
                24,
            ),
            (
                "/propose BTC long 1 lev=-2",
                "leverage must be between 1 and 100 (got `-2`)",
                24,
            ),
            (
                "/propose BTC long 1 lev=2.5",
                "invalid leverage `2.5`; expected a whole number from 1 to 100",
                24,
            ),
            (
                "/propose BTC long 1 tpp=5",
                "unknown option `tpp=`; did you mean `tp=`? options are tp=, sl=, lev=, limit=, ex= and usd=",
                20,
            ),
            (
                "/propose BTC long 1 tp=5 TP=6",
                "duplicate option `TP=`",
                25,
            ),
            (
                "/propose BTC long 1 lev=5 leverage=6",
                "duplicate option `leverage=`",
                26,
            ),
            ("/propose BTC long 1 tp=", "missing value after `tp=`", 23),
            (
                "/propose BTC long 1 usd=5",
                "size given twice: use either a positional size or usd=, not both",
                20,
            ),
            (
                "/propose BTC long 1 72000",
                "unexpected argument `72000`; options are written key=value, e.g. tp=72000",
                20,
            ),
            (
                "/propose BTC long 1 ex=binance",
                "invalid exchange `binance`; expected venue or venue2",
                23,
            ),
            (
                "/confirm",
                "missing <proposalId>; usage: /confirm <proposalId>",
                8,
            ),
            (
                "/confirm a b",
                "unexpected argument `b`; usage: /confirm <proposalId>",
                11,
            ),
            ("/close", "missing <coin|all>; usage: /close <coin|all>", 6),
            ("/quit now", "unexpected argument `now`; usage: /quit", 6),
        ];
        for (input, message, position) in cases {
            let e = err(input);
            assert_eq!(e.message, *message, "input {input:?}");
            assert_eq!(e.position, *position, "position for {input:?}");
            assert_eq!(e.to_string(), *message);
        }
    }

    #[test]
    fn backtest_command() {
        for input in [
            "/backtest ema_cross BTC 1h 30 fast=9 slow=21.5",
            "backtest ema_cross btc-usd 1H 30 fast=9 slow=21.5",
            "/BACKTEST ema_cross BTCUSDT 1h 30 fast=9.0 slow=21.50",
        ] {
            assert_eq!(
                ok(input),
                Command::Backtest(BacktestArgs {
                    strategy: "ema_cross".into(),
                    pair: "BTC-USD".into(),
                    timeframe: "1h".into(),
                    days: 30,
                    params: vec![("fast".into(), 9.0), ("slow".into(), 21.5)],
                }),
                "{input}"
            );
        }
        assert_eq!(
            ok("/backtest rsi ETH 5m 7 lower=-2 upper=0").to_string(),
            "/backtest rsi ETH-USD 5m 7 lower=-2 upper=0"
        );
        let cases: &[(&str, &str, usize)] = &[
            (
                "/backtest",
                "missing <strategyId>; usage: /backtest <strategyId> <pair> <timeframe> <days> [param=N ...]",
                9,
            ),
            (
                "/backtest x BTC 1h",
                "missing <days>; usage: /backtest <strategyId> <pair> <timeframe> <days> [param=N ...]",
                18,
            ),
            (
                "/backtest x BTC-EUR 1h 3",
                "invalid pair `BTC-EUR`; expected BTC, BTC-USD or BTCUSDT",
                12,
            ),
            (
                "/backtest x BTC 1y 3",
                "invalid timeframe `1y`; expected a number and m, h, d or w, like 5m or 1h",
                16,
            ),
            (
                "/backtest x BTC 1h 0",
                "days must be a whole number from 1 to 3650 (got `0`)",
                19,
            ),
            (
                "/backtest x BTC 1h 3.5",
                "invalid days `3.5`; expected a whole number from 1 to 3650",
                19,
            ),
            (
                "/backtest x BTC 1h 3 fast=abc",
                "invalid value `abc` for fast; expected a number like 14, 0.5 or -2",
                26,
            ),
            (
                "/backtest x BTC 1h 3 fast=1 fast=2",
                "duplicate parameter `fast=`",
                28,
            ),
            (
                "/backtest x BTC 1h 3 9",
                "unexpected argument `9`; strategy parameters are written name=number, e.g. fast=9",
                21,
            ),
            (
                "/backtest a/b BTC 1h 3",
                "invalid strategy id `a/b`; expected letters, digits, `_`, `-` or `.`",
                10,
            ),
        ];
        for (input, message, position) in cases {
            let e = err(input);
            assert_eq!(e.message, *message, "input {input:?}");
            assert_eq!(e.position, *position, "position for {input:?}");
        }
    }

    #[test]
    fn top_command() {
        assert_eq!(
            ok("/top combos pair=eth tf=1H days=60 perStrategy=2 minreturnpct=-1.5 filter=default"),
            Command::Top(TopArgs {
                view: TopView::Combos,
                params: vec![
                    TopParam::Pair(Some("ETH-USD".into())),
                    TopParam::Timeframe(Some("1h".into())),
                    TopParam::Days(Some(60)),
                    TopParam::PerStrategy(Some(2)),
                    TopParam::MinReturnPct(Some(-1.5)),
                    TopParam::Filter(None),
                ],
            })
        );
        assert_eq!(
            ok("top combos pair=eth tf=1H filter=DEFAULT").to_string(),
            "/top combos pair=ETH-USD timeframe=1h filter=default"
        );
        assert_eq!(
            ok("/top backtests filter=Excellent includeall=yes").to_string(),
            "/top backtests filter=excellent includeAll=true"
        );
        assert_eq!(
            ok("/top live"),
            Command::Top(TopArgs {
                view: TopView::Live,
                params: vec![],
            })
        );
        let cases: &[(&str, &str, usize)] = &[
            (
                "/top",
                "missing <backtests|live|combos>; usage: /top <backtests|live|combos> [key=value ...]",
                4,
            ),
            (
                "/top best",
                "unknown view `best`; expected backtests, live or combos",
                5,
            ),
            (
                "/top live windowdays=0",
                "windowDays must be a whole number from 1 to 3650 (got `0`)",
                21,
            ),
            (
                "/top combos filter=excellent",
                "invalid filter `excellent`; expected good, all",
                19,
            ),
            (
                "/top live pair=BTC",
                "unknown option `pair=` for /top live; options are windowDays=, limit=",
                10,
            ),
            (
                "/top combos perstrat=2",
                "unknown option `perstrat=` for /top combos; did you mean `perStrategy=`? options are pair=, timeframe=, days=, perStrategy=, limit=, filter=, minReturnPct=, minTrades=",
                12,
            ),
            ("/top combos days=3 DAYS=4", "duplicate option `DAYS=`", 19),
            (
                "/top combos limit=",
                "missing value after `limit=`; write limit=default to reset it",
                18,
            ),
            (
                "/top backtests includeAll=maybe",
                "invalid includeAll `maybe`; expected true or false",
                26,
            ),
        ];
        for (input, message, position) in cases {
            let e = err(input);
            assert_eq!(e.message, *message, "input {input:?}");
            assert_eq!(e.position, *position, "position for {input:?}");
        }
        assert_eq!(ok("/job job_12ab").to_string(), "/job job_12ab");
        assert_eq!(err("/job a/b").position, 5);
    }

    #[test]
    fn control_characters_are_not_echoed_raw() {
        let e = err("/propose BTC long 1 tp=\u{1b}[2J");
        assert_eq!(
            e.message,
            "invalid tp `\\u{1b}[2J`; expected a positive number like 72000, 72_000, 72k or 0.5"
        );
    }

    #[test]
    fn positions_count_chars_not_bytes() {
        let e = err("/propose é long 1");
        assert_eq!(e.position, 9);
        let e = err("/propose BTC long 1 tp=€");
        assert_eq!(e.position, 23);
    }

    #[test]
    fn coin_normalisation() {
        for (raw, want) in [
            ("btc", Some("BTC")),
            ("BTCUSDT", Some("BTC")),
            ("ethusdc", Some("ETH")),
            ("BTC-USD", Some("BTC")),
            ("sol_usdt", Some("SOL")),
            ("1000PEPE", Some("1000PEPE")),
            ("USDT", Some("USDT")),
            ("BTC-EUR", None),
            ("-USD", None),
            ("bitcoin!", None),
            ("ÄBC", None),
        ] {
            assert_eq!(normalize_coin(raw).as_deref(), want, "{raw:?}");
        }
    }

    #[test]
    fn propose_to_signal() {
        let Command::Propose(args) =
            ok("/propose btc short $500 tp=60k sl=70000 lev=5 limit=65000 ex=venue2")
        else {
            panic!("not a propose");
        };
        assert_eq!(
            args.to_signal(),
            TradeSignal {
                strategy: Some("console".into()),
                a: Some("BTCUSDT".into()),
                d: Some("short".into()),
                o: Some("limit".into()),
                p: Some(65000.0),
                tp: Some(60000.0),
                sl: Some(70000.0),
                size_usd: Some(500.0),
                leverage: Some(5),
                exchange: Some("venue2".into()),
                ..TradeSignal::default()
            }
        );
        let market = propose("ETH", Side::Long, Size::Coin(0.25)).to_signal();
        assert_eq!(market.o.as_deref(), Some("market"));
        assert_eq!(market.d.as_deref(), Some("long"));
        assert_eq!(market.size, Some(0.25));
        assert_eq!(
            (market.p, market.size_usd, market.leverage),
            (None, None, None)
        );
    }

    #[test]
    fn close_to_signal() {
        let coin = CloseTarget::Coin("ETH".into()).to_signal();
        assert_eq!(coin.a.as_deref(), Some("ETHUSDT"));
        assert_eq!(coin.d.as_deref(), Some("close"));
        assert_eq!(coin.action, None);
        let all = CloseTarget::All.to_signal();
        assert_eq!(all.action.as_deref(), Some("close_all"));
        assert_eq!((all.a, all.d), (None, None));
    }

    #[test]
    fn display_is_canonical() {
        assert_eq!(
            ok("propose btcusdt BUY 500usd lev=3x EX=VENUE tp=72_000").to_string(),
            "/propose BTC long $500 tp=72000 lev=3 ex=venue"
        );
        assert_eq!(ok("/q").to_string(), "/quit");
        assert_eq!(ok("close All").to_string(), "/close all");
    }

    #[test]
    fn commands_table_matches_parser() {
        for spec in COMMANDS {
            assert!(spec.usage.starts_with(&format!("/{}", spec.name)));
            // Every listed name parses as a command: the error, if any, is about its arguments.
            if let Err(e) = parse(spec.name) {
                assert!(
                    e.message.starts_with("missing"),
                    "{}: {}",
                    spec.name,
                    e.message
                );
            }
        }
    }

    #[test]
    fn completion() {
        let coins = ["BTC", "ETH", "BNB", "SOL"];
        let cases: &[(&str, &[&str])] = &[
            ("/pro", &["/propose "]),
            ("pro", &["/propose "]),
            ("/c", &["/chat ", "/close ", "/confirm "]),
            ("/re", &["/refresh", "/research "]),
            (
                "/research s",
                &["/research say ", "/research start ", "/research stop"],
            ),
            ("/research st", &["/research start ", "/research stop"]),
            ("/q", &["/quit"]),
            ("/REF", &["/refresh"]),
            ("/zzz", &[]),
            ("/propose b", &["/propose BNB ", "/propose BTC "]),
            (
                "/propose ",
                &[
                    "/propose BNB ",
                    "/propose BTC ",
                    "/propose ETH ",
                    "/propose SOL ",
                ],
            ),
            ("/propose BTC l", &["/propose BTC long "]),
            (
                "/propose BTC ",
                &["/propose BTC long ", "/propose BTC short "],
            ),
            ("/propose BTC long ", &[]),
            ("/propose BTC long u", &["/propose BTC long usd="]),
            (
                "/propose BTC long 0.1 ",
                &[
                    "/propose BTC long 0.1 ex=",
                    "/propose BTC long 0.1 lev=",
                    "/propose BTC long 0.1 limit=",
                    "/propose BTC long 0.1 sl=",
                    "/propose BTC long 0.1 tp=",
                ],
            ),
            (
                "/propose BTC long 0.1 tp=1 l",
                &[
                    "/propose BTC long 0.1 tp=1 lev=",
                    "/propose BTC long 0.1 tp=1 limit=",
                ],
            ),
            ("/propose BTC long usd=5 u", &[]),
            (
                "/propose BTC long 1 leverage=2 l",
                &["/propose BTC long 1 leverage=2 limit="],
            ),
            (
                "/propose BTC long 1 ex=",
                &[
                    "/propose BTC long 1 ex=venue ",
                    "/propose BTC long 1 ex=venue2 ",
                ],
            ),
            (
                "/propose BTC long 1 ex=venue2",
                &["/propose BTC long 1 ex=venue2 "],
            ),
            (
                "/close ",
                &[
                    "/close BNB",
                    "/close BTC",
                    "/close ETH",
                    "/close SOL",
                    "/close all",
                ],
            ),
            ("/close a", &["/close all"]),
            ("/close e", &["/close ETH"]),
            ("/confirm ", &[]),
            ("/quit ", &[]),
            ("/t", &["/tool ", "/top ", "/trade "]),
            ("/top c", &["/top combos "]),
            ("/top live ", &["/top live limit=", "/top live windowDays="]),
            ("/top live limit=5 ", &["/top live limit=5 windowDays="]),
            (
                "/top combos p",
                &["/top combos pair=", "/top combos perStrategy="],
            ),
            ("/backtest rsi e", &["/backtest rsi ETH-USD "]),
            (
                "/backtest rsi ETH-USD 1",
                &[
                    "/backtest rsi ETH-USD 15m ",
                    "/backtest rsi ETH-USD 1d ",
                    "/backtest rsi ETH-USD 1h ",
                    "/backtest rsi ETH-USD 1m ",
                ],
            ),
        ];
        for (input, want) in cases {
            assert_eq!(complete(input, &coins), *want, "input {input:?}");
        }
        let all = complete("", &coins);
        // One entry per command name (the research subcommands complete after `/research `).
        assert_eq!(
            all.len(),
            COMMANDS.iter().filter(|c| !c.name.contains(' ')).count()
        );
        assert!(all.contains(&"/propose ".to_string()));
        assert_eq!(complete("/c", &["BTC", "BTC"]), complete("/c", &[]));
        assert_eq!(complete("/close b", &["BTC", "BTC"]), vec!["/close BTC"]);
    }

    fn coin() -> impl Strategy<Value = String> {
        "[A-Z][A-Z0-9]{0,7}".prop_filter("must be a fixed point of normalisation", |c| {
            normalize_coin(c).as_deref() == Some(c.as_str()) && c != "ALL"
        })
    }

    fn positive() -> impl Strategy<Value = f64> {
        prop_oneof![
            proptest::num::f64::POSITIVE | proptest::num::f64::NORMAL,
            (1u64..100_000_000, 0u32..9).prop_map(|(m, e)| m as f64 / 10f64.powi(e as i32)),
        ]
    }

    fn command() -> impl Strategy<Value = Command> {
        let size = prop_oneof![
            positive().prop_map(Size::Coin),
            positive().prop_map(Size::Usd)
        ];
        let side = prop_oneof![Just(Side::Long), Just(Side::Short)];
        let exchange = proptest::option::of(prop_oneof![Just("venue"), Just("venue2")]);
        let propose = (
            coin(),
            side,
            size,
            proptest::option::of(positive()),
            proptest::option::of(positive()),
            proptest::option::of(1u32..=100),
            proptest::option::of(positive()),
            exchange,
        )
            .prop_map(|(coin, side, size, tp, sl, leverage, limit, exchange)| {
                Command::Propose(ProposeArgs {
                    coin,
                    side,
                    size,
                    tp,
                    sl,
                    leverage,
                    limit,
                    exchange: exchange.map(str::to_string),
                })
            });
        let param = (
            "[a-z][a-zA-Z0-9_]{0,10}",
            (-100_000_000i64..100_000_000, 0u32..6)
                .prop_map(|(m, e)| m as f64 / 10f64.powi(e as i32)),
        );
        let backtest = (
            "[a-z][a-z0-9_.-]{0,20}",
            coin(),
            (
                1u32..1000,
                prop_oneof![Just('m'), Just('h'), Just('d'), Just('w')],
            ),
            1u32..=3650,
            proptest::collection::vec(param, 0..4),
        )
            .prop_map(|(strategy, coin, (n, unit), days, params)| {
                let mut seen = Vec::new();
                let params = params
                    .into_iter()
                    .filter(|(k, _)| {
                        let new = !seen.contains(k);
                        seen.push(k.clone());
                        new
                    })
                    .collect();
                Command::Backtest(BacktestArgs {
                    strategy,
                    pair: format!("{coin}-USD"),
                    timeframe: format!("{n}{unit}"),
                    days,
                    params,
                })
            });
        let top = prop_oneof![
            (
                proptest::option::of(prop_oneof![Just("good"), Just("excellent"), Just("all")]),
                proptest::option::of(any::<bool>()),
            )
                .prop_map(|(filter, include_all)| TopArgs {
                    view: TopView::Backtests,
                    params: vec![
                        TopParam::IncludeAll(include_all),
                        TopParam::Filter(filter.map(str::to_string)),
                    ],
                }),
            (
                proptest::option::of(1u32..=3650),
                proptest::option::of(1u32..=10_000)
            )
                .prop_map(|(w, l)| TopArgs {
                    view: TopView::Live,
                    params: vec![TopParam::Limit(l), TopParam::WindowDays(w)],
                }),
            (
                proptest::option::of(coin()),
                proptest::option::of(1u32..=3650),
                proptest::option::of(1u32..=10_000),
                proptest::option::of((-100_000i64..100_000).prop_map(|m| m as f64 / 100.0)),
                proptest::option::of(0u32..=1_000_000),
                proptest::option::of(prop_oneof![Just("good"), Just("all")]),
            )
                .prop_map(|(pair, days, per, min_ret, min_trades, filter)| TopArgs {
                    view: TopView::Combos,
                    params: vec![
                        TopParam::MinTrades(min_trades),
                        TopParam::Pair(pair.map(|c| format!("{c}-USD"))),
                        TopParam::Timeframe(Some("15m".into())),
                        TopParam::Days(days),
                        TopParam::PerStrategy(per),
                        TopParam::MinReturnPct(min_ret),
                        TopParam::Filter(filter.map(str::to_string)),
                    ],
                }),
        ]
        .prop_map(Command::Top);
        prop_oneof![
            propose,
            backtest,
            top,
            "[A-Za-z0-9_.-]{1,24}".prop_map(Command::Job),
            "[A-Za-z0-9_-]{1,24}".prop_map(Command::Confirm),
            coin().prop_map(|c| Command::Close(CloseTarget::Coin(c))),
            Just(Command::Close(CloseTarget::All)),
            Just(Command::Refresh),
            Just(Command::Help),
            Just(Command::Quit),
        ]
    }

    /// Lines made of grammar fragments reach deep into the parser, where random text rarely gets.
    fn grammar_soup() -> impl Strategy<Value = String> {
        let fragment = prop_oneof![
            Just("/propose".to_string()),
            Just("close".to_string()),
            Just("/confirm".to_string()),
            Just("all".to_string()),
            Just("BTC".to_string()),
            Just("long".to_string()),
            Just("$".to_string()),
            Just("=".to_string()),
            "(tp|sl|lev|leverage|limit|ex|usd|x)=[-0-9_.kKmMxé$]{0,6}",
            "[-$0-9_.kKmMuUsSdD]{0,8}",
            "\\PC{0,4}",
        ];
        proptest::collection::vec(fragment, 0..8).prop_map(|v| v.join(" "))
    }

    proptest! {
        #[test]
        fn parse_never_panics(input in any::<String>()) {
            let _ = parse(&input);
            let _ = complete(&input, &["BTC", "ÉTH"]);
        }

        #[test]
        fn parse_never_panics_on_near_misses(input in grammar_soup()) {
            if let Err(e) = parse(&input) {
                prop_assert!(e.position <= input.chars().count());
            }
            for line in complete(&input, &["BTC", "ETH"]) {
                prop_assert!(!line.is_empty());
            }
        }

        #[test]
        fn display_round_trips(cmd in command()) {
            let text = cmd.to_string();
            prop_assert_eq!(parse(&text), Ok(cmd), "text {:?}", text);
        }
    }
}
