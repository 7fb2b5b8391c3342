//! Single values of a command line: coins, sides, amounts and sizes, leverage, venues, pairs,
//! timeframes, ids and bounded numbers.

use super::*;

/// Upper bounds keep numbers printable and within what any venue accepts; they are far beyond any
/// real order, so they only catch typos and garbage.
pub(super) const MAX_LEVERAGE: u32 = 100;

/// Quote currencies stripped from pair-style symbols.
pub(super) const QUOTES: &[&str] = &["USDT", "USDC", "USD"];
/// Longest bare symbol accepted; real ones are far shorter, so longer text is a typo or garbage.
pub(super) const MAX_COIN_LEN: usize = 15;

pub(super) fn parse_coin(token: &Token<'_>) -> Result<String, ParseError> {
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

pub(super) fn normalize_coin(raw: &str) -> Option<String> {
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

pub(super) fn parse_side(token: &Token<'_>) -> Result<Side, ParseError> {
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
pub(super) enum AmountError {
    NotANumber,
    NotPositive,
    TooLarge,
}

/// Parses a positive decimal as described in the module docs.
pub(super) fn parse_amount(text: &str) -> Result<f64, AmountError> {
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

pub(super) fn amount(what: &str, text: &str, pos: usize) -> Result<f64, ParseError> {
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

pub(super) fn parse_size(token: &Token<'_>) -> Result<Size, ParseError> {
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

pub(super) fn parse_leverage(text: &str, pos: usize) -> Result<u32, ParseError> {
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

pub(super) fn parse_exchange(text: &str, pos: usize) -> Result<String, ParseError> {
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
pub(super) const OPTION_KEYS: &[&str] = &["tp", "sl", "lev", "limit", "ex", "usd"];

pub(super) fn canonical_option(key: &str) -> Option<&'static str> {
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

/// Timeframes offered by completion (any `<N><m|h|d|w>` parses).
pub(super) const TIMEFRAMES: &[&str] = &["1m", "5m", "15m", "30m", "1h", "4h", "1d"];
pub(super) const MAX_DAYS: u32 = 3650;

/// Ids (strategy, job) as the service writes them: kept as typed, but only characters that cannot
/// break the command line or a URL path.
pub(super) fn valid_id(text: &str) -> bool {
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

pub(super) fn parse_uint(
    key: &str,
    text: &str,
    min: u32,
    max: u32,
    pos: usize,
) -> Result<u32, ParseError> {
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
