//! The orders an account places: market, limit, position TP/SL triggers, cancel and close.

use super::error::VenueError;
use super::exchange::{Book, Fill, FillCause, LimitOutcome, MESSAGE_DECIMALS, Order, OrderKind};
use super::fills::{
    MarginCheck, Trade, check_margin, mark_of, resolve_coin, slipped, validate_leverage,
    validate_size,
};
use super::market::Market;
use super::{Exchange, FeeConfig, fmt_decimal, round_px, round_sz};
use chrono::{DateTime, Utc};
impl Book {
    /// Fills at the mark plus slippage against the taker, with the taker fee.
    // The argument list mirrors the order request one-to-one; bundling it
    // into a struct would only move the same fields around at every call.
    #[allow(clippy::too_many_arguments)]
    pub fn market_order(
        &mut self,
        m: &Market,
        fees: &FeeConfig,
        now: DateTime<Utc>,
        oid: u64,
        exchange: Exchange,
        coin: &str,
        is_buy: bool,
        sz: f64,
        leverage: u32,
        reduce_only: bool,
    ) -> Result<Fill, VenueError> {
        let (coin, spec) = resolve_coin(coin)?;
        validate_leverage(spec, leverage)?;
        let sz = validate_size(spec, sz)?;
        let mark = mark_of(m, coin, now)?;
        let check = MarginCheck {
            available: self.available(m, now),
            mark,
        };
        self.execute(
            Trade {
                oid,
                exchange,
                coin,
                is_buy,
                sz,
                px: round_px(coin, slipped(mark, is_buy, fees)),
                fee_rate: fees.taker_fee_rate,
                leverage,
                reduce_only,
                cause: FillCause::Market,
                time: now,
            },
            Some(check),
        )
    }

    /// A marketable limit (buy at or above the mark, sell at or below) fills
    /// now as a taker, never worse than the limit; otherwise it rests and
    /// reserves its margin.
    #[allow(clippy::too_many_arguments)]
    pub fn limit_order(
        &mut self,
        m: &Market,
        fees: &FeeConfig,
        now: DateTime<Utc>,
        oid: u64,
        exchange: Exchange,
        coin: &str,
        is_buy: bool,
        limit_px: f64,
        sz: f64,
        leverage: u32,
        reduce_only: bool,
    ) -> Result<LimitOutcome, VenueError> {
        let (coin, spec) = resolve_coin(coin)?;
        validate_leverage(spec, leverage)?;
        let sz = validate_size(spec, sz)?;
        if !limit_px.is_finite() || limit_px <= 0.0 {
            return Err(VenueError::InvalidPrice(format!(
                "limit price {limit_px} must be a positive number"
            )));
        }
        let limit_px = round_px(coin, limit_px);
        if limit_px <= 0.0 {
            return Err(VenueError::InvalidPrice(format!(
                "limit price rounds to zero for {coin}"
            )));
        }
        let mark = mark_of(m, coin, now)?;
        let available = self.available(m, now);
        let marketable = if is_buy {
            limit_px >= mark
        } else {
            limit_px <= mark
        };
        if marketable {
            let taker_px = round_px(coin, slipped(mark, is_buy, fees));
            let px = if is_buy {
                limit_px.min(taker_px)
            } else {
                limit_px.max(taker_px)
            };
            let fill = self.execute(
                Trade {
                    oid,
                    exchange,
                    coin,
                    is_buy,
                    sz,
                    px,
                    fee_rate: fees.taker_fee_rate,
                    leverage,
                    reduce_only,
                    cause: FillCause::LimitCrossed,
                    time: now,
                },
                Some(MarginCheck { available, mark }),
            )?;
            return Ok(LimitOutcome::Filled(fill));
        }

        let position = self
            .position_index(exchange, coin)
            .map(|i| &self.positions[i]);
        let mut sz = sz;
        if reduce_only {
            let p = position.ok_or_else(|| VenueError::NoPosition {
                exchange,
                coin: coin.to_string(),
            })?;
            if p.is_long() == is_buy {
                return Err(VenueError::ReduceOnlyWouldIncrease {
                    exchange,
                    coin: coin.to_string(),
                });
            }
            sz = sz.min(p.szi.abs());
        }
        // An order that adds to a position will fill at the position's leverage.
        let leverage = match position {
            Some(p) if p.is_long() == is_buy => p.leverage,
            _ => leverage,
        };
        let order = Order {
            oid,
            exchange,
            coin: coin.to_string(),
            is_buy,
            limit_px,
            sz,
            orig_sz: sz,
            kind: OrderKind::Limit,
            trigger_px: None,
            reduce_only,
            is_position_tpsl: false,
            leverage,
            timestamp: now,
        };
        check_margin(
            Some(MarginCheck { available, mark }),
            order.reserved_margin(),
            0.0,
        )?;
        self.orders.push(order.clone());
        Ok(LimitOutcome::Resting(order))
    }

    /// Places a reduce-only stop-loss (`StopMarket`) or take-profit
    /// (`TakeProfitMarket`) on an existing position. `sz: None` ties it to the
    /// whole position, whatever its size when it fires.
    #[allow(clippy::too_many_arguments)]
    pub fn trigger_order(
        &mut self,
        m: &Market,
        now: DateTime<Utc>,
        oid: u64,
        exchange: Exchange,
        coin: &str,
        kind: OrderKind,
        trigger_px: f64,
        sz: Option<f64>,
    ) -> Result<Order, VenueError> {
        let (coin, spec) = resolve_coin(coin)?;
        if kind == OrderKind::Limit {
            return Err(VenueError::InvalidTrigger(
                "a trigger order must be Stop Market or Take Profit Market".to_string(),
            ));
        }
        if !trigger_px.is_finite() || trigger_px <= 0.0 {
            return Err(VenueError::InvalidTrigger(format!(
                "trigger price {trigger_px} must be a positive number"
            )));
        }
        let trigger_px = round_px(coin, trigger_px);
        let position = self
            .position(exchange, coin)
            .ok_or_else(|| VenueError::NoPosition {
                exchange,
                coin: coin.to_string(),
            })?;
        let long = position.is_long();
        let held = position.szi.abs();
        let leverage = position.leverage;
        let size = match sz {
            None => held,
            Some(s) => validate_size(spec, s)?.min(held),
        };
        let mark = mark_of(m, coin, now)?;
        let must_be_below = (kind == OrderKind::StopMarket) == long;
        let right_side = if must_be_below {
            trigger_px < mark
        } else {
            trigger_px > mark
        };
        if !right_side {
            return Err(VenueError::TriggerOnWrongSide {
                coin: coin.to_string(),
                kind,
                trigger_px,
                mark_px: mark,
                position_long: long,
            });
        }
        let order = Order {
            oid,
            exchange,
            coin: coin.to_string(),
            is_buy: !long,
            limit_px: trigger_px,
            sz: size,
            orig_sz: size,
            kind,
            trigger_px: Some(trigger_px),
            reduce_only: true,
            is_position_tpsl: sz.is_none(),
            leverage,
            timestamp: now,
        };
        self.orders.push(order.clone());
        Ok(order)
    }

    /// Cancels an open order; `coin` must be the order's coin, as on the venue.
    pub fn cancel(&mut self, oid: u64, coin: &str) -> Result<Order, VenueError> {
        let (coin, _) = resolve_coin(coin)?;
        let index = self
            .orders
            .iter()
            .position(|o| o.oid == oid && o.coin == coin)
            .ok_or(VenueError::UnknownOrder { oid })?;
        Ok(self.orders.remove(index))
    }

    /// Market-closes `fraction` (in (0, 1]) of the position.
    #[allow(clippy::too_many_arguments)]
    pub fn close(
        &mut self,
        m: &Market,
        fees: &FeeConfig,
        now: DateTime<Utc>,
        oid: u64,
        exchange: Exchange,
        coin: &str,
        fraction: f64,
    ) -> Result<Fill, VenueError> {
        let (coin, spec) = resolve_coin(coin)?;
        if !(fraction > 0.0 && fraction <= 1.0) {
            return Err(VenueError::InvalidFraction(fraction));
        }
        let p = self
            .position(exchange, coin)
            .ok_or_else(|| VenueError::NoPosition {
                exchange,
                coin: coin.to_string(),
            })?;
        let held = p.szi.abs();
        let is_buy = !p.is_long();
        let leverage = p.leverage;
        // A full close must not leave dust behind through truncation.
        let sz = if fraction == 1.0 {
            held
        } else {
            round_sz(coin, held * fraction)
        };
        if sz <= 0.0 {
            return Err(VenueError::InvalidSize(format!(
                "closing {} of {} {coin} rounds to zero at {} decimals",
                fmt_decimal(fraction, MESSAGE_DECIMALS),
                fmt_decimal(held, MESSAGE_DECIMALS),
                spec.sz_decimals
            )));
        }
        let mark = mark_of(m, coin, now)?;
        self.execute(
            Trade {
                oid,
                exchange,
                coin,
                is_buy,
                sz,
                px: round_px(coin, slipped(mark, is_buy, fees)),
                fee_rate: fees.taker_fee_rate,
                leverage,
                reduce_only: true,
                cause: FillCause::Close,
                time: now,
            },
            None,
        )
    }
}
