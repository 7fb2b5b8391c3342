//! Paper-trading model of a perpetual-futures venue: a deterministic price
//! feed ([`market`]) and per-account books with isolated margin
//! ([`exchange`]). Prices and sizes are `f64` because nothing here settles
//! real money; the rounding helpers below keep the numbers shaped like the
//! venue's so clients see familiar values.

mod error;
pub mod exchange;
mod fills;
pub mod market;
mod orders;
mod triggers;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use exchange::{
    Book, Fill, FillCause, FillKind, LimitOutcome, Order, OrderKind, Position, PositionView,
    VenueError,
};
pub use market::{ASSETS, AssetSpec, Candle, Market, asset};

/// The two simulated exchanges. They share one price feed but keep separate
/// positions, so an account can hold a long on one and a short on the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Exchange {
    Venue,
    Venue2,
}

impl Exchange {
    /// Every exchange, primary venue first so listings have a stable order.
    pub const ALL: [Exchange; 2] = [Exchange::Venue, Exchange::Venue2];

    pub fn as_str(self) -> &'static str {
        match self {
            Exchange::Venue => "venue",
            Exchange::Venue2 => "venue2",
        }
    }

    /// Case-insensitive, surrounding whitespace ignored; `None` for anything else.
    pub fn parse(s: &str) -> Option<Exchange> {
        let s = s.trim();
        Exchange::ALL
            .into_iter()
            .find(|e| e.as_str().eq_ignore_ascii_case(s))
    }
}

impl fmt::Display for Exchange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Quote suffixes that clients glue onto the coin ("BTCUSDT"). USDT/USDC are
/// tried before USD so "BTCUSDT" does not leave a dangling "T".
const QUOTE_SUFFIXES: [&str; 4] = ["USDT", "USDC", "PERP", "USD"];

/// Maps the many ways agents spell a market ("btc", "BTCUSDT", "BTC-USD",
/// "BTC/USD", "BTC-PERP", ...) to the canonical coin of the asset table.
pub fn normalize_coin(symbol: &str) -> Option<&'static str> {
    let upper = symbol.trim().to_ascii_uppercase();
    // In pair notation the coin always comes first.
    let base = upper
        .split(['-', '/', '_', ':', ' '])
        .next()
        .unwrap_or_default();
    if let Some(spec) = asset(base) {
        return Some(spec.coin);
    }
    QUOTE_SUFFIXES
        .iter()
        .filter_map(|suffix| base.strip_suffix(suffix))
        .filter(|stripped| !stripped.is_empty())
        .find_map(asset)
        .map(|spec| spec.coin)
}

/// Fees charged on every fill and the slippage a taker pays against the mark.
#[derive(Debug, Clone, Copy)]
pub struct FeeConfig {
    pub taker_fee_rate: f64,
    pub maker_fee_rate: f64,
    pub slippage_bps: f64,
}

impl Default for FeeConfig {
    /// The venue's base-tier fees and a slippage typical of a liquid book.
    fn default() -> Self {
        FeeConfig {
            taker_fee_rate: 0.00045,
            maker_fee_rate: 0.00015,
            slippage_bps: 5.0,
        }
    }
}

/// Formats a number the way the venue's API writes decimals: plain notation,
/// at most `max_decimals` decimals, trailing zeros trimmed, "0" for zero and
/// never "-0". Non-finite values keep Rust's spelling ("NaN", "inf") so a bug
/// upstream stays visible instead of turning into a plausible "0".
pub fn fmt_decimal(x: f64, max_decimals: u32) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    // Rounding through a fixed-precision string and then printing the shortest
    // round-trip form avoids binary noise such as "0.10000000000000001".
    let rounded = round_decimals(x, max_decimals);
    let s = rounded.to_string();
    if rounded == 0.0 { "0".to_string() } else { s }
}

/// Rounds to `decimals` places via the decimal formatter, which rounds the
/// exact binary value correctly and so never drifts like `(x * 10^d).round()`.
fn round_decimals(x: f64, decimals: u32) -> f64 {
    format!("{:.*}", decimals as usize, x).parse().unwrap_or(x)
}

/// The venue's price rule: at most 5 significant figures and at most
/// `6 - sz_decimals` decimals, with integer prices always allowed. The decimal
/// cap only bites for unusual inputs but keeps prices acceptable to the real
/// venue. Unknown coins get the significant-figure rule alone.
pub fn round_px(coin: &str, px: f64) -> f64 {
    if !px.is_finite() || px == 0.0 {
        return px;
    }
    let magnitude = px.abs().log10().floor() as i32;
    let max_decimals = asset(coin).map_or(6, |a| 6 - a.sz_decimals as i32);
    let decimals = (4 - magnitude).min(max_decimals).max(0);
    round_decimals(px, decimals as u32)
}

/// Rounds a size toward zero to the asset's `sz_decimals` (the venue never
/// fills more than asked). Unknown coins keep 8 decimals.
pub fn round_sz(coin: &str, sz: f64) -> f64 {
    if !sz.is_finite() {
        return sz;
    }
    let decimals = asset(coin).map_or(8, |a| a.sz_decimals);
    let scale = 10f64.powi(decimals as i32);
    // `0.3 * 10` is 2.9999999999999996: nudge by a few ulps so sizes that are
    // exact in decimal are not truncated a whole step.
    let steps = ((sz.abs() * scale) * (1.0 + 16.0 * f64::EPSILON)).floor();
    round_decimals((steps / scale).copysign(sz), decimals)
}

/// Rounds a size to the nearest step; used to stop accumulated float error in
/// position sizes, never for user input (which is truncated by [`round_sz`]).
fn snap_sz(coin: &str, sz: f64) -> f64 {
    let decimals = asset(coin).map_or(8, |a| a.sz_decimals);
    round_decimals(sz, decimals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exchange_names_round_trip() {
        assert_eq!(Exchange::ALL, [Exchange::Venue, Exchange::Venue2]);
        for e in Exchange::ALL {
            assert_eq!(Exchange::parse(e.as_str()), Some(e));
            assert_eq!(Exchange::parse(&e.as_str().to_uppercase()), Some(e));
        }
        assert_eq!(Exchange::parse(" Venue2 "), Some(Exchange::Venue2));
        assert_eq!(Exchange::parse("venue3"), None);
        assert_eq!(Exchange::parse(""), None);
    }

    #[test]
    fn normalize_coin_accepts_common_spellings() {
        for s in [
            "BTC", "btc", " Btc ", "BTCUSDT", "btcusdt", "BTC-USD", "BTC/USD", "BTCUSD",
            "BTC-PERP", "BTCPERP", "BTC_USDC", "BTC:USDT", "BTCUSDC", "btc/usdt",
        ] {
            assert_eq!(normalize_coin(s), Some("BTC"), "{s}");
        }
        assert_eq!(normalize_coin("eth-usd"), Some("ETH"));
        assert_eq!(normalize_coin("SOLUSDT"), Some("SOL"));
        assert_eq!(normalize_coin("doge"), Some("DOGE"));
        assert_eq!(normalize_coin("SUI-PERP"), Some("SUI"));
        for s in ["", "USD", "USDT", "FOO", "FOOUSDT", "-BTC", "PEPE/USD"] {
            assert_eq!(normalize_coin(s), None, "{s}");
        }
    }

    #[test]
    fn fmt_decimal_matches_venue_style() {
        assert_eq!(fmt_decimal(0.0, 6), "0");
        assert_eq!(fmt_decimal(-0.0, 6), "0");
        assert_eq!(fmt_decimal(-0.0000001, 4), "0");
        assert_eq!(fmt_decimal(65000.0, 2), "65000");
        assert_eq!(fmt_decimal(65000.5, 2), "65000.5");
        assert_eq!(fmt_decimal(1.23456789, 4), "1.2346");
        assert_eq!(fmt_decimal(0.1 + 0.2, 10), "0.3");
        assert_eq!(fmt_decimal(-12.3400, 6), "-12.34");
        assert_eq!(fmt_decimal(1e-7, 8), "0.0000001");
        assert_eq!(fmt_decimal(1e21, 2), "1000000000000000000000");
        assert_eq!(fmt_decimal(2.5, 0), "2");
        assert_eq!(fmt_decimal(0.000123, 2), "0");
    }

    #[test]
    fn round_px_keeps_five_significant_figures() {
        assert_eq!(round_px("BTC", 65432.7), 65433.0);
        assert_eq!(round_px("BTC", 123456.7), 123457.0);
        assert_eq!(round_px("ETH", 3412.345), 3412.3);
        assert_eq!(round_px("SOL", 151.23456), 151.23);
        assert_eq!(round_px("DOGE", 0.1234567), 0.12346);
        assert_eq!(round_px("XRP", 0.5), 0.5);
        // The decimal cap: BTC (5 size decimals) allows one price decimal.
        assert_eq!(round_px("BTC", 1.234567), 1.2);
        assert_eq!(round_px("BTC", 0.0), 0.0);
    }

    #[test]
    fn round_sz_truncates_to_size_decimals() {
        assert_eq!(round_sz("BTC", 0.123456789), 0.12345);
        assert_eq!(round_sz("SOL", 1.239), 1.23);
        assert_eq!(round_sz("DOGE", 99.9), 99.0);
        assert_eq!(round_sz("LINK", 0.3), 0.3);
        assert_eq!(round_sz("BTC", 0.000001), 0.0);
        assert_eq!(round_sz("ETH", -1.23456), -1.2345);
    }
}
