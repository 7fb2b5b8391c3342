//! `/kill` and `/auto`: the gateway's kill switch and standing approvals.

use super::*;

pub(super) const KILL_USAGE: &str = "/kill <reason> | /kill off";
pub(super) const SUSPEND_USAGE: &str = "/suspend <agent> <reason>";
pub(super) const RESUME_USAGE: &str = "/resume <agent>";

/// An agent as the gateway names one (a name given with `gate agent name`, or a fingerprint):
/// nothing a URL path would read otherwise.
fn agent_name<'a>(t: &Token<'a>) -> Result<&'a str, ParseError> {
    let ok = t.text.len() <= 64
        && t.text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    if ok {
        Ok(t.text)
    } else {
        Err(ParseError::new(
            format!(
                "invalid agent `{}`; expected an agent's name or fingerprint",
                t.text
            ),
            t.pos,
        ))
    }
}

/// `/suspend <agent> <reason>`: the reason is required, the agent is told it.
pub(super) fn parse_suspend(
    input: &str,
    args: &[Token<'_>],
    end: usize,
) -> Result<Command, ParseError> {
    let first = args
        .first()
        .ok_or_else(|| missing("<agent>", SUSPEND_USAGE, end))?;
    let agent = agent_name(first)?.to_string();
    let reason = input[first.start + first.text.len()..].trim();
    if reason.is_empty() {
        return Err(missing("<reason>", SUSPEND_USAGE, end));
    }
    Ok(Command::Suspend {
        agent,
        reason: reason.to_string(),
    })
}

pub(super) fn parse_resume(args: &[Token<'_>], end: usize) -> Result<Command, ParseError> {
    let first = args
        .first()
        .ok_or_else(|| missing("<agent>", RESUME_USAGE, end))?;
    no_more(&args[1..], RESUME_USAGE)?;
    Ok(Command::Resume(agent_name(first)?.to_string()))
}
pub(super) const AUTO_USAGE: &str =
    "/auto <agent|*> <coins,...|*> <maxNotionalUsd> <minutes> [reason] | /auto revoke <id> | /auto";

/// The reason a standing approval gets when none is typed (the gateway requires one).
pub const DEFAULT_AUTO_REASON: &str = "set by the supervisor in the agentdesk console";

/// What `/auto` does.
#[derive(Debug, Clone, PartialEq)]
pub enum AutoCommand {
    /// `/auto` alone: the live standing approvals with their countdown.
    List,
    Create(AutoArgs),
    Revoke(i64),
}

/// A standing approval to create.
#[derive(Debug, Clone, PartialEq)]
pub struct AutoArgs {
    /// An agent's name or fingerprint, or `*`.
    pub agent: String,
    /// Bare coin symbols; empty means every coin (`*`).
    pub coins: Vec<String>,
    pub max_notional_usd: f64,
    pub minutes: u64,
    pub reason: String,
}

/// A standing approval lasts at most a week (the gateway's bound too).
pub const MAX_AUTO_MINUTES: u64 = 7 * 24 * 60;

pub(super) fn parse_kill(
    input: &str,
    args: &[Token<'_>],
    end: usize,
) -> Result<Command, ParseError> {
    let first = args
        .first()
        .ok_or_else(|| missing("<reason> (or off)", KILL_USAGE, end))?;
    if first.text.eq_ignore_ascii_case("off") && args.len() == 1 {
        return Ok(Command::Kill {
            on: false,
            reason: String::new(),
        });
    }
    let reason = input[first.start..].trim().to_string();
    Ok(Command::Kill { on: true, reason })
}

pub(super) fn parse_auto(
    input: &str,
    args: &[Token<'_>],
    end: usize,
) -> Result<Command, ParseError> {
    let Some(first) = args.first() else {
        return Ok(Command::Auto(AutoCommand::List));
    };
    if first.text.eq_ignore_ascii_case("list") {
        no_more(&args[1..], AUTO_USAGE)?;
        return Ok(Command::Auto(AutoCommand::List));
    }
    if first.text.eq_ignore_ascii_case("revoke") {
        let id = args
            .get(1)
            .ok_or_else(|| missing("<id>", "/auto revoke <id>", end))?;
        no_more(&args[2..], "/auto revoke <id>")?;
        let n = id
            .text
            .trim_start_matches('#')
            .parse::<i64>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                ParseError::new(
                    format!(
                        "invalid standing approval id `{}`; expected its number, as /auto lists it",
                        id.text
                    ),
                    id.pos,
                )
            })?;
        return Ok(Command::Auto(AutoCommand::Revoke(n)));
    }
    let agent = first.text;
    let valid_agent = agent == "*"
        || (agent.len() <= 64
            && agent
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)));
    if !valid_agent {
        return Err(ParseError::new(
            format!(
                "invalid agent `{agent}`; expected an agent's name or fingerprint, or * for every agent"
            ),
            first.pos,
        ));
    }
    let coins_tok = args
        .get(1)
        .ok_or_else(|| missing("<coins,...|*>", AUTO_USAGE, end))?;
    let coins = if coins_tok.text == "*" {
        Vec::new()
    } else {
        let mut coins = Vec::new();
        for raw in coins_tok.text.split(',') {
            let coin = normalize_coin(raw).ok_or_else(|| {
                ParseError::new(
                    format!(
                        "invalid coin `{raw}` in `{}`; expected symbols like BTC,ETH separated by commas, or * for every coin",
                        coins_tok.text
                    ),
                    coins_tok.pos,
                )
            })?;
            if !coins.contains(&coin) {
                coins.push(coin);
            }
        }
        coins
    };
    let max_tok = args
        .get(2)
        .ok_or_else(|| missing("<maxNotionalUsd>", AUTO_USAGE, end))?;
    let max = parse_amount(max_tok.text.trim_start_matches('$'))
        .ok()
        .filter(|x| *x > 0.0)
        .ok_or_else(|| {
            ParseError::new(
                format!(
                    "invalid maxNotionalUsd `{}`; expected a positive USD amount like 1000 or 1.5k",
                    max_tok.text
                ),
                max_tok.pos,
            )
        })?;
    let minutes_tok = args
        .get(3)
        .ok_or_else(|| missing("<minutes>", AUTO_USAGE, end))?;
    let minutes = minutes_tok
        .text
        .parse::<u64>()
        .ok()
        .filter(|m| (1..=MAX_AUTO_MINUTES).contains(m))
        .ok_or_else(|| {
            ParseError::new(
                format!(
                    "invalid minutes `{}`; expected a whole number from 1 to {MAX_AUTO_MINUTES} (a week)",
                    minutes_tok.text
                ),
                minutes_tok.pos,
            )
        })?;
    let reason = input[minutes_tok.start + minutes_tok.text.len()..].trim();
    Ok(Command::Auto(AutoCommand::Create(AutoArgs {
        agent: agent.to_string(),
        coins,
        max_notional_usd: max,
        minutes,
        reason: if reason.is_empty() {
            DEFAULT_AUTO_REASON.to_string()
        } else {
            reason.to_string()
        },
    })))
}

impl fmt::Display for AutoCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AutoCommand::List => f.write_str("/auto"),
            AutoCommand::Revoke(n) => write!(f, "/auto revoke {n}"),
            AutoCommand::Create(a) => {
                let coins = if a.coins.is_empty() {
                    "*".to_string()
                } else {
                    a.coins.join(",")
                };
                write!(
                    f,
                    "/auto {} {coins} {} {} {}",
                    a.agent, a.max_notional_usd, a.minutes, a.reason
                )
            }
        }
    }
}
