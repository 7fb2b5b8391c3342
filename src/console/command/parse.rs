//! `parse`: a command line to a [`Command`], through tokens and the argument parsers.

use super::*;

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
        "reject" => {
            let id = args
                .first()
                .ok_or_else(|| missing("<id>", REJECT_USAGE, end))?;
            let reason = input[id.start + id.text.len()..].trim();
            Ok(Command::Reject {
                id: id.text.to_string(),
                reason: (!reason.is_empty()).then(|| reason.to_string()),
            })
        }
        "agent" => {
            let name = args
                .first()
                .ok_or_else(|| missing("<name|all>", AGENT_USAGE, end))?;
            no_more(&args[1..], AGENT_USAGE)?;
            Ok(Command::Agent(
                (!name.text.eq_ignore_ascii_case("all")).then(|| name.text.to_string()),
            ))
        }
        "kill" => guard::parse_kill(input, args, end),
        "suspend" => guard::parse_suspend(input, args, end),
        "resume" => guard::parse_resume(args, end),
        "auto" => guard::parse_auto(input, args, end),
        "policy" => no_more(args, "/policy").map(|()| Command::Policy),
        "agents" => no_more(args, "/agents").map(|()| Command::Agents),
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
pub(super) struct Token<'a> {
    pub(super) text: &'a str,
    /// Byte offset, for slicing the input when completing.
    pub(super) start: usize,
    /// Char offset, for error positions.
    pub(super) pos: usize,
}

pub(super) fn tokenize(input: &str) -> Vec<Token<'_>> {
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

pub(super) fn unknown_command(token: &Token<'_>) -> ParseError {
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

pub(super) fn missing(what: &str, usage: &str, end: usize) -> ParseError {
    ParseError::new(format!("missing {what}; usage: {usage}"), end)
}

pub(super) fn no_more(rest: &[Token<'_>], usage: &str) -> Result<(), ParseError> {
    match rest.first() {
        None => Ok(()),
        Some(t) => Err(ParseError::new(
            format!("unexpected argument `{}`; usage: {usage}", t.text),
            t.pos,
        )),
    }
}
