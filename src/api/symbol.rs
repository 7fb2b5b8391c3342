//! Symbols as agents and services spell them. The same market arrives as `BTC`, `btc`,
//! `BTCUSDT`, `BTC-USD`, `BTC/USDC`, `BTC-PERP` or `BTC:USDT`; positions name the bare coin. Every
//! place that matches a proposal to a position goes through [`coin_of`], so a spelling never
//! decides whether a holding is seen.

/// Quotes glued onto the coin. USDT and USDC come before USD so `BTCUSDT` leaves no `T`.
const QUOTES: [&str; 4] = ["USDT", "USDC", "USD", "PERP"];

/// The coin of a symbol, upper case: `BTCUSDT`, `btc-usd`, `BTC/USDC`, `BTC-PERP` → `BTC`. A quote
/// alone (`USDT`) stays itself rather than becoming empty.
pub fn coin_of(symbol: &str) -> String {
    let upper = symbol.trim().to_ascii_uppercase();
    // In pair notation the coin comes first.
    let base = upper
        .split(['-', '/', '_', ':', ' '])
        .find(|s| !s.is_empty())
        .unwrap_or_default();
    // `BTCUSDTPERP`-style spellings stack a quote and a contract suffix.
    let mut coin = base;
    for _ in 0..2 {
        match QUOTES
            .iter()
            .find_map(|q| coin.strip_suffix(q).filter(|c| !c.is_empty()))
        {
            Some(c) => coin = c,
            None => break,
        }
    }
    coin.to_string()
}

/// Whether two symbols name the same coin, however each is spelled.
pub fn same_coin(a: &str, b: &str) -> bool {
    let (a, b) = (coin_of(a), coin_of(b));
    !a.is_empty() && a == b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_is_one_coin() {
        for s in [
            "BTC",
            "btc",
            " Btc ",
            "BTCUSDT",
            "btcusdt",
            "BTC-USD",
            "BTC/USD",
            "BTCUSD",
            "BTC-PERP",
            "BTCPERP",
            "BTC_USDC",
            "BTC:USDT",
            "BTC/USDC",
            "BTCUSDC",
            "btc/usdt",
            "BTC-USDT-PERP",
            "BTCUSDTPERP",
        ] {
            assert_eq!(coin_of(s), "BTC", "{s}");
        }
        assert_eq!(coin_of("eth-usd"), "ETH");
        assert_eq!(coin_of("SOLUSDT"), "SOL");
        assert_eq!(coin_of("USDT"), "USDT");
        assert_eq!(coin_of(""), "");
        assert!(same_coin("BTCUSDT", "BTC"));
        assert!(!same_coin("ETH", "BTC"));
        assert!(!same_coin("", ""));
    }
}
