//! The argument lists of `/propose`, `/trade`, `/backtest` and `/top`.

use super::*;

pub(super) fn parse_propose(args: &[Token<'_>], end: usize) -> Result<ProposeArgs, ParseError> {
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

pub(super) fn parse_trade(args: &[Token<'_>], end: usize) -> Result<TradeArgs, ParseError> {
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

pub(super) fn parse_backtest(args: &[Token<'_>], end: usize) -> Result<BacktestArgs, ParseError> {
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

pub(super) fn top_view(text: &str) -> Option<TopView> {
    match text.to_ascii_lowercase().as_str() {
        "backtests" | "backtest" | "bt" => Some(TopView::Backtests),
        "live" => Some(TopView::Live),
        "combos" | "combo" | "optimized" => Some(TopView::Combos),
        _ => None,
    }
}

pub(super) fn parse_top(args: &[Token<'_>], end: usize) -> Result<TopArgs, ParseError> {
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
