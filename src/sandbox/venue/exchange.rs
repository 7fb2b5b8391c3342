//! One account's book on both exchanges: one-way net positions with isolated
//! margin, resting limit orders, position TP/SL triggers and liquidation.
//!
//! The book never reads the clock. Callers pass `now` to act and call
//! [`Book::sync`] to replay the market path between two instants; because the
//! path is piecewise linear, every limit, trigger and liquidation level is
//! found at the exact instant the path reaches it.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use super::error::VenueError;
use super::market::{Market, asset};
use super::{Exchange, fmt_decimal, normalize_coin};

/// Decimals used when numbers appear in messages and trigger conditions.
pub(super) const MESSAGE_DECIMALS: u32 = 8;
/// Slack for comparing USDC amounts, so a request for exactly the available
/// margin is not refused over float noise.
pub(super) const MARGIN_EPSILON: f64 = 1e-9;

/// A net position on one exchange. `margin` is the isolated collateral
/// reserved from the account's cash; it always equals `entry_px * |szi| /
/// leverage` because increases average in at the position's leverage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Position {
    pub exchange: Exchange,
    pub coin: String,
    /// Signed size: positive long, negative short.
    pub szi: f64,
    pub entry_px: f64,
    pub leverage: u32,
    pub margin: f64,
    pub opened_at: DateTime<Utc>,
}

impl Position {
    pub fn is_long(&self) -> bool {
        self.szi > 0.0
    }

    pub fn unrealized_pnl(&self, mark_px: f64) -> f64 {
        self.szi * (mark_px - self.entry_px)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OrderKind {
    Limit,
    StopMarket,
    TakeProfitMarket,
}

impl OrderKind {
    /// The order type as the venue's open-orders endpoint spells it.
    pub fn venue_name(self) -> &'static str {
        match self {
            OrderKind::Limit => "Limit",
            OrderKind::StopMarket => "Stop Market",
            OrderKind::TakeProfitMarket => "Take Profit Market",
        }
    }
}

impl fmt::Display for OrderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.venue_name())
    }
}

/// A resting order. For triggers `limit_px` equals `trigger_px`; slippage is
/// applied when the trigger fires, as for a market order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Order {
    pub oid: u64,
    pub exchange: Exchange,
    pub coin: String,
    pub is_buy: bool,
    pub limit_px: f64,
    pub sz: f64,
    pub orig_sz: f64,
    pub kind: OrderKind,
    pub trigger_px: Option<f64>,
    pub reduce_only: bool,
    /// Tied to the whole position: it closes whatever size the position has
    /// when it fires, and `sz` tracks the position.
    pub is_position_tpsl: bool,
    pub leverage: u32,
    pub timestamp: DateTime<Utc>,
}

impl Order {
    /// The level this order reacts to and whether it fires when the price is
    /// at or below it (`true`) or at or above it (`false`).
    pub(super) fn level(&self) -> Option<(f64, bool)> {
        match self.kind {
            OrderKind::Limit => Some((self.limit_px, self.is_buy)),
            // A stop sells a long when the price falls; a take-profit sells
            // it when the price rises. Buying orders close shorts: reversed.
            OrderKind::StopMarket => self.trigger_px.map(|px| (px, !self.is_buy)),
            OrderKind::TakeProfitMarket => self.trigger_px.map(|px| (px, self.is_buy)),
        }
    }

    /// The venue's wording, e.g. "Price below 64000"; `None` for limits.
    pub fn trigger_condition(&self) -> Option<String> {
        if self.kind == OrderKind::Limit {
            return None;
        }
        let (px, below) = self.level()?;
        let side = if below { "below" } else { "above" };
        Some(format!(
            "Price {side} {}",
            fmt_decimal(px, MESSAGE_DECIMALS)
        ))
    }

    /// Margin a resting order holds back from `available`. Reduce-only orders
    /// and triggers can only shrink a position, so they reserve nothing.
    pub(super) fn reserved_margin(&self) -> f64 {
        if self.kind == OrderKind::Limit && !self.reduce_only {
            self.limit_px * self.sz / f64::from(self.leverage.max(1))
        } else {
            0.0
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FillKind {
    Open,
    Close,
    Flip,
    Liquidation,
}

/// Why a fill happened; lets the caller tell a user's market order from an
/// order that rested and was crossed by the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FillCause {
    Market,
    /// A limit order, whether marketable on arrival or crossed while resting.
    LimitCrossed,
    StopLoss,
    TakeProfit,
    Liquidation,
    Close,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fill {
    /// Liquidations are started by the venue, not by an order: they carry 0.
    pub oid: u64,
    pub exchange: Exchange,
    pub coin: String,
    pub is_buy: bool,
    pub px: f64,
    pub sz: f64,
    pub fee: f64,
    /// Realized PnL of the closed part, before fees (the venue's convention).
    pub closed_pnl: f64,
    pub time: DateTime<Utc>,
    /// "Open Long", "Close Short", "Long > Short", "Liquidation", ...
    pub dir: String,
    pub cause: FillCause,
}

impl Fill {
    pub fn kind(&self) -> FillKind {
        if self.cause == FillCause::Liquidation {
            FillKind::Liquidation
        } else if self.dir.contains('>') {
            FillKind::Flip
        } else if self.dir.starts_with("Open") {
            FillKind::Open
        } else {
            FillKind::Close
        }
    }
}

/// Derived figures for displaying a position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PositionView {
    pub mark_px: f64,
    pub unrealized_pnl: f64,
    /// Unrealized PnL over the position's margin.
    pub return_on_equity: f64,
    /// Absolute notional at the mark.
    pub position_value: f64,
    pub liquidation_px: Option<f64>,
    pub max_leverage: u32,
}

/// Outcome of a limit order: marketable orders fill at once, others rest.
#[derive(Debug, Clone, PartialEq)]
pub enum LimitOutcome {
    Filled(Fill),
    Resting(Order),
}

/// The account's state on both exchanges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Book {
    /// USDC balance: deposits plus realized PnL minus fees. Position margin is
    /// a reservation against it, not a deduction.
    pub cash: f64,
    pub positions: Vec<Position>,
    pub orders: Vec<Order>,
}

impl Book {
    pub fn new(cash: f64) -> Self {
        Book {
            cash,
            positions: Vec::new(),
            orders: Vec::new(),
        }
    }

    pub(super) fn position_index(&self, exchange: Exchange, coin: &str) -> Option<usize> {
        self.positions
            .iter()
            .position(|p| p.exchange == exchange && p.coin == coin)
    }

    /// The position on `exchange` for `coin` (any spelling `normalize_coin` accepts).
    pub fn position(&self, exchange: Exchange, coin: &str) -> Option<&Position> {
        let coin = normalize_coin(coin)?;
        self.position_index(exchange, coin)
            .and_then(|i| self.positions.get(i))
    }

    /// Cash plus unrealized PnL of every position at the mark.
    pub fn equity(&self, m: &Market, now: DateTime<Utc>) -> f64 {
        self.cash
            + self
                .positions
                .iter()
                .map(|p| {
                    m.mark(&p.coin, now)
                        .map_or(0.0, |mark| p.unrealized_pnl(mark))
                })
                .sum::<f64>()
    }

    pub fn margin_used(&self) -> f64 {
        self.positions.iter().map(|p| p.margin).sum()
    }

    /// Margin held back by resting limit orders that could open or grow a position.
    pub fn order_margin(&self) -> f64 {
        self.orders.iter().map(Order::reserved_margin).sum()
    }

    /// What new orders may use. Can be negative when positions are losing.
    pub fn available(&self, m: &Market, now: DateTime<Utc>) -> f64 {
        self.equity(m, now) - self.margin_used() - self.order_margin()
    }

    /// Isolated liquidation price: where the position's margin plus PnL falls
    /// to the maintenance margin, at rate `1 / (2 * max_leverage)`. Uses the
    /// actual margin, which reduces to `entry * (1 - 1/L) / (1 - mmr)` for a
    /// long and `entry * (1 + 1/L) / (1 + mmr)` for a short. `None` when a
    /// long's margin covers a fall to zero (1x): it cannot be liquidated, and
    /// for unknown coins or empty positions.
    pub fn liquidation_px(p: &Position) -> Option<f64> {
        let spec = asset(&p.coin)?;
        let size = p.szi.abs();
        if size == 0.0 || !size.is_finite() {
            return None;
        }
        let mmr = 1.0 / (2.0 * f64::from(spec.max_leverage));
        let margin_per_unit = p.margin / size;
        let px = if p.is_long() {
            (p.entry_px - margin_per_unit) / (1.0 - mmr)
        } else {
            (p.entry_px + margin_per_unit) / (1.0 + mmr)
        };
        (px.is_finite() && px > 0.0).then_some(px)
    }

    pub fn position_view(&self, p: &Position, m: &Market, now: DateTime<Utc>) -> PositionView {
        // A position only exists for a known coin; fall back to the entry
        // price rather than fail a read-only view over a hand-edited book.
        let mark_px = m.mark(&p.coin, now).unwrap_or(p.entry_px);
        let unrealized_pnl = p.unrealized_pnl(mark_px);
        PositionView {
            mark_px,
            unrealized_pnl,
            return_on_equity: if p.margin > 0.0 {
                unrealized_pnl / p.margin
            } else {
                0.0
            },
            position_value: p.szi.abs() * mark_px,
            liquidation_px: Book::liquidation_px(p),
            max_leverage: asset(&p.coin).map_or(0, |a| a.max_leverage),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FeeConfig, round_px};
    use super::*;
    use chrono::TimeDelta;

    const V: Exchange = Exchange::Venue;
    const TAKER: f64 = 0.00045;
    const MAKER: f64 = 0.00015;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().expect("valid RFC 3339 timestamp")
    }

    fn t0() -> DateTime<Utc> {
        at("2024-03-01T12:00:00Z")
    }

    fn approx(a: f64, b: f64) {
        assert!(
            (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
            "{a} != {b}"
        );
    }

    fn mark(m: &Market, coin: &str, t: DateTime<Utc>) -> f64 {
        m.mark(coin, t).expect("known coin")
    }

    fn taker_px(m: &Market, coin: &str, t: DateTime<Utc>, is_buy: bool) -> f64 {
        let slip = if is_buy { 1.0005 } else { 0.9995 };
        round_px(coin, mark(m, coin, t) * slip)
    }

    /// Interpolated instant at which `path` first reaches `level` from above
    /// (`below`) or from below, computed independently of the book.
    fn first_crossing(path: &[(DateTime<Utc>, f64)], level: f64, below: bool) -> DateTime<Utc> {
        let hit = |p: f64| if below { p <= level } else { p >= level };
        let j = path
            .iter()
            .position(|(_, p)| hit(*p))
            .expect("the path reaches the level");
        assert!(j > 0, "level must be away from the start");
        let ((ta, pa), (tb, pb)) = (path[j - 1], path[j]);
        let span = (tb - ta).num_nanoseconds().expect("short segment") as f64;
        ta + TimeDelta::nanoseconds((span * (level - pa) / (pb - pa)).round() as i64)
    }

    fn assert_same_instant(a: DateTime<Utc>, b: DateTime<Utc>) {
        let diff = (a - b).num_nanoseconds().expect("close instants").abs();
        assert!(diff <= 1, "{a} vs {b}");
    }

    #[test]
    fn market_orders_open_increase_reduce_flip_and_close() {
        let m = Market::new(7);
        let f = FeeConfig::default();
        let t = t0();
        let mut b = Book::new(100_000.0);
        let mut cash = 100_000.0;

        // Open.
        let px0 = taker_px(&m, "BTC", t, true);
        let fill = b
            .market_order(&m, &f, t, 1, V, "BTC", true, 0.1, 10, false)
            .expect("open");
        assert_eq!(
            (fill.px, fill.sz, fill.dir.as_str(), fill.cause),
            (px0, 0.1, "Open Long", FillCause::Market)
        );
        assert_eq!(fill.kind(), FillKind::Open);
        approx(fill.fee, 0.1 * px0 * TAKER);
        assert_eq!(fill.closed_pnl, 0.0);
        cash -= fill.fee;
        approx(b.cash, cash);
        let p = b.position(V, "BTC").expect("open position").clone();
        assert_eq!(
            (p.szi, p.entry_px, p.leverage, p.opened_at),
            (0.1, px0, 10, t)
        );
        approx(p.margin, 0.1 * px0 / 10.0);
        let mark0 = mark(&m, "BTC", t);
        approx(b.equity(&m, t), cash + 0.1 * (mark0 - px0));
        approx(b.available(&m, t), cash + 0.1 * (mark0 - px0) - p.margin);

        // Increase: a different leverage does not change an existing position.
        let t1 = t + TimeDelta::hours(1);
        let px1 = taker_px(&m, "BTC", t1, true);
        let fill = b
            .market_order(&m, &f, t1, 2, V, "btc-usd", true, 0.2, 20, false)
            .expect("increase");
        assert_eq!((fill.px, fill.dir.as_str()), (px1, "Open Long"));
        cash -= 0.2 * px1 * TAKER;
        approx(b.cash, cash);
        let entry = (0.1 * px0 + 0.2 * px1) / 0.3;
        let p = b.position(V, "BTC").expect("position").clone();
        assert_eq!((p.szi, p.leverage, p.opened_at), (0.3, 10, t));
        approx(p.entry_px, entry);
        approx(p.margin, (0.1 * px0 + 0.2 * px1) / 10.0);
        approx(p.margin, entry * 0.3 / 10.0);

        // Reduce half: realized PnL on the reduced part, half the margin freed.
        let t2 = t + TimeDelta::hours(3);
        let px2 = taker_px(&m, "BTC", t2, false);
        let fill = b
            .market_order(&m, &f, t2, 3, V, "BTC", false, 0.15, 10, false)
            .expect("reduce");
        assert_eq!(
            (fill.px, fill.sz, fill.dir.as_str()),
            (px2, 0.15, "Close Long")
        );
        assert_eq!(fill.kind(), FillKind::Close);
        approx(fill.closed_pnl, 0.15 * (px2 - entry));
        approx(fill.fee, 0.15 * px2 * TAKER);
        cash += fill.closed_pnl - fill.fee;
        approx(b.cash, cash);
        let p = b.position(V, "BTC").expect("position").clone();
        assert_eq!(p.szi, 0.15);
        approx(p.entry_px, entry);
        approx(p.margin, entry * 0.15 / 10.0);

        // Flip: close the 0.15 long, open a 0.1 short at the order's leverage.
        let t3 = t + TimeDelta::hours(5);
        let px3 = taker_px(&m, "BTC", t3, false);
        let fill = b
            .market_order(&m, &f, t3, 4, V, "BTC", false, 0.25, 5, false)
            .expect("flip");
        assert_eq!(
            (fill.px, fill.sz, fill.dir.as_str()),
            (px3, 0.25, "Long > Short")
        );
        assert_eq!(fill.kind(), FillKind::Flip);
        approx(fill.closed_pnl, 0.15 * (px3 - entry));
        approx(fill.fee, 0.25 * px3 * TAKER);
        cash += fill.closed_pnl - fill.fee;
        approx(b.cash, cash);
        let p = b.position(V, "BTC").expect("position").clone();
        assert_eq!(
            (p.szi, p.entry_px, p.leverage, p.opened_at),
            (-0.1, px3, 5, t3)
        );
        approx(p.margin, 0.1 * px3 / 5.0);

        // Close half, then the rest.
        let t4 = t + TimeDelta::hours(8);
        let px4 = taker_px(&m, "BTC", t4, true);
        let fill = b.close(&m, &f, t4, 5, V, "BTC", 0.5).expect("half close");
        assert_eq!(
            (fill.px, fill.sz, fill.dir.as_str()),
            (px4, 0.05, "Close Short")
        );
        assert_eq!(fill.cause, FillCause::Close);
        approx(fill.closed_pnl, 0.05 * (px3 - px4));
        cash += fill.closed_pnl - fill.fee;
        let fill = b.close(&m, &f, t4, 6, V, "BTC", 1.0).expect("close");
        assert_eq!(fill.sz, 0.05);
        approx(fill.closed_pnl, 0.05 * (px3 - px4));
        approx(fill.fee, 0.05 * px4 * TAKER);
        cash += fill.closed_pnl - fill.fee;
        approx(b.cash, cash);
        assert!(b.positions.is_empty());
        assert_eq!(b.margin_used(), 0.0);
        approx(b.equity(&m, t4), cash);

        let err = b
            .close(&m, &f, t4, 7, V, "BTC", 1.0)
            .expect_err("nothing to close");
        assert_eq!(err.code(), "no_position");
        for bad in [0.0, -0.5, 1.5, f64::NAN] {
            let err = b
                .close(&m, &f, t4, 8, V, "BTC", bad)
                .expect_err("bad fraction");
            assert_eq!(
                (err.code(), err.field()),
                ("invalid_size", Some("fraction"))
            );
        }
    }

    #[test]
    fn exchanges_hold_separate_positions() {
        let m = Market::new(7);
        let f = FeeConfig::default();
        let mut b = Book::new(50_000.0);
        b.market_order(&m, &f, t0(), 1, V, "ETH", true, 1.0, 5, false)
            .expect("long on venue");
        b.market_order(
            &m,
            &f,
            t0(),
            2,
            Exchange::Venue2,
            "ETH",
            false,
            1.0,
            5,
            false,
        )
        .expect("short on venue2");
        assert_eq!(b.position(V, "ETH").map(|p| p.szi), Some(1.0));
        assert_eq!(
            b.position(Exchange::Venue2, "ETH").map(|p| p.szi),
            Some(-1.0)
        );
    }

    #[test]
    fn insufficient_margin_is_refused_without_side_effects() {
        let m = Market::new(7);
        let f = FeeConfig::default();
        let t = t0();
        let mut b = Book::new(1_000.0);
        let px = taker_px(&m, "BTC", t, true);
        let err = b
            .market_order(&m, &f, t, 1, V, "BTC", true, 1.0, 10, false)
            .expect_err("needs ~6.5k");
        match &err {
            VenueError::InsufficientMargin {
                required,
                available,
            } => {
                approx(*required, px / 10.0 + px * TAKER);
                approx(*available, 1_000.0);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!((err.code(), err.field()), ("insufficient_margin", None));
        assert!(err.to_string().contains("insufficient margin"));
        assert_eq!(b, Book::new(1_000.0));
        b.market_order(&m, &f, t, 2, V, "BTC", true, 0.01, 10, false)
            .expect("a small order fits");

        // Resting limits reserve margin that later orders cannot use.
        let mut b = Book::new(10_000.0);
        let limit = round_px("BTC", mark(&m, "BTC", t) * 0.5);
        let resting = b
            .limit_order(&m, &f, t, 3, V, "BTC", true, limit, 0.2, 2, false)
            .expect("rests");
        assert!(matches!(resting, LimitOutcome::Resting(_)));
        approx(b.order_margin(), limit * 0.2 / 2.0);
        approx(b.available(&m, t), 10_000.0 - limit * 0.2 / 2.0);
        let err = b
            .limit_order(&m, &f, t, 4, V, "BTC", true, limit, 0.5, 2, false)
            .expect_err("not enough left");
        assert_eq!(err.code(), "insufficient_margin");
        b.cancel(3, "BTC").expect("cancel");
        approx(b.available(&m, t), 10_000.0);
    }

    #[test]
    fn leverage_and_input_validation() {
        let m = Market::new(7);
        let f = FeeConfig::default();
        let t = t0();
        let mut b = Book::new(1_000_000.0);
        for (coin, lev, max) in [
            ("BTC", 0, 50),
            ("BTC", 51, 50),
            ("SOL", 21, 20),
            ("DOGE", 11, 10),
        ] {
            let err = b
                .market_order(&m, &f, t, 1, V, coin, true, 1.0, lev, false)
                .expect_err("leverage out of range");
            assert_eq!(
                err,
                VenueError::LeverageOutOfRange {
                    coin: coin.to_string(),
                    requested: lev,
                    max
                }
            );
            assert_eq!(
                (err.code(), err.field()),
                ("leverage_out_of_range", Some("leverage"))
            );
        }
        for (coin, lev) in [("BTC", 50), ("SOL", 20), ("DOGE", 10), ("ETH", 1)] {
            b.market_order(&m, &f, t, 2, V, coin, true, 1.0, lev, false)
                .expect("leverage in range");
        }
        for sz in [0.0, -1.0, f64::NAN, f64::INFINITY, 0.000001] {
            let err = b
                .market_order(&m, &f, t, 3, V, "BTC", true, sz, 10, false)
                .expect_err("bad size");
            assert_eq!(
                (err.code(), err.field()),
                ("invalid_size", Some("sz")),
                "{sz}"
            );
        }
        let err = b
            .market_order(&m, &f, t, 4, V, "PEPE", true, 1.0, 5, false)
            .expect_err("unknown coin");
        assert_eq!((err.code(), err.field()), ("unknown_coin", Some("coin")));
        assert!(err.to_string().contains("PEPE"));
        for px in [0.0, -5.0, f64::NAN] {
            let err = b
                .limit_order(&m, &f, t, 5, V, "ETH", true, px, 1.0, 5, false)
                .expect_err("bad price");
            assert_eq!(
                (err.code(), err.field()),
                ("invalid_price", Some("limit_px"))
            );
        }
        // Reduce-only: needs an opposite position and is clipped to it.
        let err = b
            .market_order(&m, &f, t, 6, V, "AVAX", false, 1.0, 5, true)
            .expect_err("no position");
        assert_eq!(
            err,
            VenueError::NoPosition {
                exchange: V,
                coin: "AVAX".to_string()
            }
        );
        let err = b
            .market_order(&m, &f, t, 7, V, "SOL", true, 1.0, 5, true)
            .expect_err("same side");
        assert_eq!(err.code(), "reduce_only_would_increase");
        let fill = b
            .market_order(&m, &f, t, 8, V, "SOL", false, 5.0, 5, true)
            .expect("clipped");
        assert_eq!((fill.sz, fill.dir.as_str()), (1.0, "Close Long"));
        assert!(b.position(V, "SOL").is_none());
    }

    #[test]
    fn marketable_limit_fills_as_taker_never_worse_than_limit() {
        let m = Market::new(7);
        let f = FeeConfig::default();
        let t = t0();
        let mk = mark(&m, "ETH", t);
        let mut b = Book::new(100_000.0);
        let LimitOutcome::Filled(fill) = b
            .limit_order(&m, &f, t, 1, V, "ETH", true, mk * 1.1, 1.0, 5, false)
            .expect("fills")
        else {
            panic!("a buy above the mark must fill");
        };
        assert_eq!(
            (fill.px, fill.cause),
            (taker_px(&m, "ETH", t, true), FillCause::LimitCrossed)
        );
        approx(fill.fee, fill.px * TAKER);
        // A limit inside the slippage band caps the price.
        let limit = round_px("ETH", mk * 1.0002);
        let LimitOutcome::Filled(fill) = b
            .limit_order(&m, &f, t, 2, V, "ETH", true, limit, 1.0, 5, false)
            .expect("fills")
        else {
            panic!("a buy above the mark must fill");
        };
        assert_eq!(fill.px, limit);
        assert!(b.orders.is_empty());
    }

    #[test]
    fn resting_buy_limit_fills_when_the_path_drops_through_it() {
        let m = Market::new(7);
        let f = FeeConfig::default();
        let t = t0();
        let end = t + TimeDelta::days(2);
        let mk = mark(&m, "BTC", t);
        let path = m.knots("BTC", t, end);
        let low = path.iter().map(|k| k.1).fold(f64::MAX, f64::min);
        assert!(low < mk * 0.995, "test window needs a dip");
        let limit = round_px("BTC", (mk + low) / 2.0);

        let mut b = Book::new(100_000.0);
        let LimitOutcome::Resting(order) = b
            .limit_order(&m, &f, t, 11, V, "BTC", true, limit, 0.2, 5, false)
            .expect("placed")
        else {
            panic!("a buy below the mark must rest");
        };
        assert_eq!(
            (order.limit_px, order.kind, order.trigger_condition()),
            (limit, OrderKind::Limit, None)
        );
        // A sell limit far above never fills.
        b.limit_order(&m, &f, t, 12, V, "BTC", false, mk * 1.5, 0.2, 5, false)
            .expect("placed");

        let fills = b.sync(&m, &f, t, end);
        assert_eq!(fills.len(), 1, "{fills:?}");
        let fill = &fills[0];
        assert_eq!((fill.oid, fill.px, fill.sz), (11, limit, 0.2));
        assert_eq!(
            (fill.cause, fill.dir.as_str()),
            (FillCause::LimitCrossed, "Open Long")
        );
        approx(fill.fee, 0.2 * limit * MAKER);
        assert_same_instant(fill.time, first_crossing(&path, limit, true));
        assert!((mark(&m, "BTC", fill.time) / limit - 1.0).abs() < 1e-9);
        let p = b.position(V, "BTC").expect("filled into a position");
        assert_eq!(
            (p.szi, p.entry_px, p.leverage, p.opened_at),
            (0.2, limit, 5, fill.time)
        );
        assert_eq!(b.orders.iter().map(|o| o.oid).collect::<Vec<_>>(), vec![12]);
        approx(b.cash, 100_000.0 - fill.fee);
        // Replaying the same window changes nothing more.
        assert!(b.sync(&m, &f, t, end).is_empty());
    }

    #[test]
    fn stop_loss_on_long_fires_on_the_way_down_and_cancels_take_profit() {
        let m = Market::new(7);
        let f = FeeConfig::default();
        let t = t0();
        let end = t + TimeDelta::days(3);
        let mk = mark(&m, "BTC", t);
        let path = m.knots("BTC", t, end);
        let low = path.iter().map(|k| k.1).fold(f64::MAX, f64::min);
        assert!(low < mk * 0.99, "test window needs a dip");

        let mut b = Book::new(100_000.0);
        let open = b
            .market_order(&m, &f, t, 1, V, "BTC", true, 0.1, 10, false)
            .expect("open");
        let sl = round_px("BTC", (mk + low) / 2.0);
        let tp = round_px("BTC", mk * 1.5);
        let sl_order = b
            .trigger_order(&m, t, 2, V, "BTC", OrderKind::StopMarket, sl, None)
            .expect("stop below a long");
        assert_eq!(
            sl_order.trigger_condition(),
            Some(format!("Price below {}", fmt_decimal(sl, 8)))
        );
        assert!(!sl_order.is_buy && sl_order.reduce_only && sl_order.is_position_tpsl);
        assert_eq!(
            (sl_order.sz, sl_order.kind.venue_name()),
            (0.1, "Stop Market")
        );
        let tp_order = b
            .trigger_order(&m, t, 3, V, "BTC", OrderKind::TakeProfitMarket, tp, None)
            .expect("take profit above a long");
        assert_eq!(
            tp_order.trigger_condition(),
            Some(format!("Price above {}", fmt_decimal(tp, 8)))
        );

        let cash_before = b.cash;
        let fills = b.sync(&m, &f, t, end);
        assert_eq!(fills.len(), 1, "{fills:?}");
        let fill = &fills[0];
        let px = round_px("BTC", sl * 0.9995);
        assert_eq!(
            (fill.oid, fill.cause, fill.px, fill.sz),
            (2, FillCause::StopLoss, px, 0.1)
        );
        assert_eq!((fill.is_buy, fill.dir.as_str()), (false, "Close Long"));
        approx(fill.closed_pnl, 0.1 * (px - open.px));
        approx(fill.fee, 0.1 * px * TAKER);
        assert_same_instant(fill.time, first_crossing(&path, sl, true));
        assert!(b.positions.is_empty());
        assert!(b.orders.is_empty(), "the take-profit must be cancelled");
        approx(b.cash, cash_before + fill.closed_pnl - fill.fee);
    }

    #[test]
    fn partial_take_profit_on_short_fires_and_keeps_the_stop() {
        let m = Market::new(7);
        let f = FeeConfig::default();
        let t = t0();
        let end = t + TimeDelta::days(3);
        let mk = mark(&m, "ETH", t);
        let path = m.knots("ETH", t, end);
        let low = path.iter().map(|k| k.1).fold(f64::MAX, f64::min);
        assert!(low < mk * 0.99, "test window needs a dip");

        let mut b = Book::new(100_000.0);
        let open = b
            .market_order(&m, &f, t, 1, V, "ETH", false, 1.0, 5, false)
            .expect("short");
        let tp = round_px("ETH", (mk + low) / 2.0);
        let tp_order = b
            .trigger_order(
                &m,
                t,
                2,
                V,
                "ETH",
                OrderKind::TakeProfitMarket,
                tp,
                Some(0.4),
            )
            .expect("take profit below a short");
        assert!(tp_order.is_buy && !tp_order.is_position_tpsl);
        assert_eq!(
            tp_order.trigger_condition(),
            Some(format!("Price below {}", fmt_decimal(tp, 8)))
        );
        let sl = round_px("ETH", mk * 1.5);
        b.trigger_order(&m, t, 3, V, "ETH", OrderKind::StopMarket, sl, None)
            .expect("stop above a short");

        let fills = b.sync(&m, &f, t, end);
        assert_eq!(fills.len(), 1, "{fills:?}");
        let fill = &fills[0];
        let px = round_px("ETH", tp * 1.0005);
        assert_eq!(
            (fill.cause, fill.px, fill.sz, fill.is_buy),
            (FillCause::TakeProfit, px, 0.4, true)
        );
        assert_eq!(fill.dir, "Close Short");
        approx(fill.closed_pnl, 0.4 * (open.px - px));
        assert!(fill.closed_pnl > 0.0);
        assert_same_instant(fill.time, first_crossing(&path, tp, true));
        let p = b.position(V, "ETH").expect("remainder stays open");
        assert_eq!(p.szi, -0.6);
        // The whole-position stop survives and now covers the remainder.
        assert_eq!(b.orders.len(), 1);
        assert_eq!((b.orders[0].oid, b.orders[0].sz), (3, 0.6));
    }

    #[test]
    fn high_leverage_long_is_liquidated_at_its_liquidation_price() {
        let m = Market::new(7);
        let f = FeeConfig::default();
        let base = at("2024-03-01T00:00:00Z");
        // A window whose dip is deeper than a 50x long's ~1% cushion.
        let start = (0..500)
            .map(|h| base + TimeDelta::hours(h))
            .find(|&s| {
                let mk = mark(&m, "BTC", s);
                m.knots("BTC", s, s + TimeDelta::days(2))
                    .iter()
                    .any(|(_, p)| *p < mk * 0.985)
            })
            .expect("a dip within the first weeks");
        let end = start + TimeDelta::days(2);

        let mut b = Book::new(10_000.0);
        b.market_order(&m, &f, start, 1, V, "BTC", true, 0.5, 50, false)
            .expect("open at 50x");
        let p = b.position(V, "BTC").expect("position").clone();
        let liq = Book::liquidation_px(&p).expect("a 50x long has a liquidation price");
        approx(liq, p.entry_px * (1.0 - 1.0 / 50.0) / (1.0 - 1.0 / 100.0));
        b.trigger_order(
            &m,
            start,
            2,
            V,
            "BTC",
            OrderKind::TakeProfitMarket,
            p.entry_px * 1.5,
            None,
        )
        .expect("take profit");
        let cash_before = b.cash;

        let fills = b.sync(&m, &f, start, end);
        assert_eq!(fills.len(), 1, "{fills:?}");
        let fill = &fills[0];
        assert_eq!(
            (fill.cause, fill.kind(), fill.dir.as_str()),
            (FillCause::Liquidation, FillKind::Liquidation, "Liquidation")
        );
        assert_eq!(
            (fill.px, fill.sz, fill.is_buy, fill.fee),
            (round_px("BTC", liq), 0.5, false, 0.0)
        );
        approx(fill.closed_pnl, -p.margin);
        let path = m.knots("BTC", start, end);
        assert_same_instant(fill.time, first_crossing(&path, liq, true));
        approx(b.cash, cash_before - p.margin);
        assert!(b.positions.is_empty() && b.orders.is_empty());
    }

    #[test]
    fn liquidation_price_formula() {
        let position = |coin: &str, szi: f64, entry_px: f64, leverage: u32| Position {
            exchange: V,
            coin: coin.to_string(),
            szi,
            entry_px,
            leverage,
            margin: szi.abs() * entry_px / f64::from(leverage),
            opened_at: t0(),
        };
        // SOL: max 20x, so the maintenance rate is 1/40.
        let short = position("SOL", -2.0, 100.0, 10);
        approx(
            Book::liquidation_px(&short).expect("short"),
            100.0 * 1.1 / (1.0 + 1.0 / 40.0),
        );
        let long = position("SOL", 2.0, 100.0, 4);
        approx(
            Book::liquidation_px(&long).expect("long"),
            100.0 * 0.75 / (1.0 - 1.0 / 40.0),
        );
        assert_eq!(Book::liquidation_px(&position("SOL", 2.0, 100.0, 1)), None);
        assert!(Book::liquidation_px(&position("SOL", -2.0, 100.0, 1)).is_some());

        let m = Market::new(7);
        let b = Book::new(0.0);
        let p = position("BTC", 0.1, 60_000.0, 10);
        let view = b.position_view(&p, &m, t0());
        let mk = mark(&m, "BTC", t0());
        assert_eq!((view.mark_px, view.max_leverage), (mk, 50));
        approx(view.unrealized_pnl, 0.1 * (mk - 60_000.0));
        approx(view.return_on_equity, view.unrealized_pnl / 600.0);
        approx(view.position_value, 0.1 * mk);
        assert_eq!(view.liquidation_px, Book::liquidation_px(&p));
    }

    #[test]
    fn triggers_on_the_wrong_side_are_rejected() {
        let m = Market::new(7);
        let f = FeeConfig::default();
        let t = t0();
        let mut b = Book::new(100_000.0);
        b.market_order(&m, &f, t, 1, V, "BTC", true, 0.1, 10, false)
            .expect("long");
        b.market_order(&m, &f, t, 2, V, "ETH", false, 1.0, 10, false)
            .expect("short");
        let btc = mark(&m, "BTC", t);
        let eth = mark(&m, "ETH", t);
        let cases = [
            ("BTC", OrderKind::StopMarket, btc * 1.01, "below"),
            ("BTC", OrderKind::TakeProfitMarket, btc * 0.99, "above"),
            ("ETH", OrderKind::StopMarket, eth * 0.99, "above"),
            ("ETH", OrderKind::TakeProfitMarket, eth * 1.01, "below"),
        ];
        for (coin, kind, px, must_be) in cases {
            let err = b
                .trigger_order(&m, t, 3, V, coin, kind, px, None)
                .expect_err("wrong side");
            assert!(
                matches!(err, VenueError::TriggerOnWrongSide { .. }),
                "{err:?}"
            );
            assert_eq!(
                (err.code(), err.field()),
                ("invalid_trigger", Some("trigger_px"))
            );
            let msg = err.to_string();
            assert!(msg.contains(must_be) && msg.contains(coin), "{msg}");
        }
        for (coin, kind, px) in [
            ("BTC", OrderKind::StopMarket, btc * 0.99),
            ("BTC", OrderKind::TakeProfitMarket, btc * 1.01),
            ("ETH", OrderKind::StopMarket, eth * 1.01),
            ("ETH", OrderKind::TakeProfitMarket, eth * 0.99),
        ] {
            b.trigger_order(&m, t, 4, V, coin, kind, px, None)
                .expect("right side");
        }
        assert_eq!(b.orders.len(), 4);
        let err = b
            .trigger_order(&m, t, 5, V, "BTC", OrderKind::Limit, btc * 0.9, None)
            .expect_err("limit is not a trigger");
        assert_eq!(err.code(), "invalid_trigger");
        let err = b
            .trigger_order(&m, t, 6, V, "BTC", OrderKind::StopMarket, f64::NAN, None)
            .expect_err("nan trigger");
        assert_eq!(err.code(), "invalid_trigger");
        let err = b
            .trigger_order(
                &m,
                t,
                7,
                Exchange::Venue2,
                "BTC",
                OrderKind::StopMarket,
                btc * 0.9,
                None,
            )
            .expect_err("no position there");
        assert_eq!(err.code(), "no_position");
        assert_eq!(b.orders.len(), 4);
    }

    #[test]
    fn cancel_requires_matching_coin() {
        let m = Market::new(7);
        let f = FeeConfig::default();
        let t = t0();
        let mut b = Book::new(100_000.0);
        let px = mark(&m, "BTC", t) * 0.8;
        b.limit_order(&m, &f, t, 42, V, "BTC", true, px, 0.1, 5, false)
            .expect("rests");
        assert_eq!(
            b.cancel(42, "ETH"),
            Err(VenueError::UnknownOrder { oid: 42 })
        );
        assert_eq!(
            b.cancel(43, "BTC"),
            Err(VenueError::UnknownOrder { oid: 43 })
        );
        assert_eq!(
            b.cancel(42, "FOO").map_err(|e| e.code()),
            Err("unknown_coin")
        );
        let order = b.cancel(42, "btc-perp").expect("cancelled");
        assert_eq!((order.oid, order.coin.as_str()), (42, "BTC"));
        assert!(b.orders.is_empty());
        assert_eq!(
            b.cancel(42, "BTC").map_err(|e| e.code()),
            Err("unknown_order")
        );
    }

    #[test]
    fn orders_ignore_the_path_before_they_were_placed() {
        let m = Market::new(7);
        let f = FeeConfig::default();
        let t = t0();
        let end = t + TimeDelta::days(1);
        let path = m.knots("BTC", t, end);
        // Place a buy limit at the window's low, after the low has passed.
        let (low_time, low) = path
            .iter()
            .copied()
            .fold((t, f64::MAX), |acc, k| if k.1 < acc.1 { k } else { acc });
        let placed = low_time + TimeDelta::minutes(1);
        let later_low = m
            .knots("BTC", placed, end)
            .iter()
            .map(|k| k.1)
            .fold(f64::MAX, f64::min);
        let limit = round_px("BTC", low * 1.00001);
        assert!(later_low > limit && mark(&m, "BTC", placed) > limit);
        let mut b = Book::new(100_000.0);
        b.limit_order(&m, &f, placed, 1, V, "BTC", true, limit, 0.1, 5, false)
            .expect("rests");
        assert!(b.sync(&m, &f, t, end).is_empty());
        assert_eq!(b.orders.len(), 1);
    }

    #[test]
    fn error_messages_are_sentences() {
        let errors = [
            VenueError::UnknownCoin("FOO".into()),
            VenueError::InvalidSize("size 0 must be a positive number".into()),
            VenueError::InvalidPrice("limit price -1 must be a positive number".into()),
            VenueError::InvalidTrigger("x".into()),
            VenueError::InvalidFraction(2.0),
            VenueError::LeverageOutOfRange {
                coin: "BTC".into(),
                requested: 60,
                max: 50,
            },
            VenueError::InsufficientMargin {
                required: 100.0,
                available: 12.5,
            },
            VenueError::NoPosition {
                exchange: V,
                coin: "BTC".into(),
            },
            VenueError::ReduceOnlyWouldIncrease {
                exchange: V,
                coin: "BTC".into(),
            },
            VenueError::UnknownOrder { oid: 9 },
        ];
        for e in &errors {
            let msg = e.to_string();
            assert!(!msg.is_empty() && !msg.contains('\n'), "{msg}");
        }
        assert_eq!(
            errors[6].to_string(),
            "insufficient margin: the order needs 100 USDC but only 12.5 USDC is available"
        );
        assert_eq!(
            errors[5].to_string(),
            "leverage 60x is out of range for BTC; allowed is 1x to 50x"
        );
    }
}
