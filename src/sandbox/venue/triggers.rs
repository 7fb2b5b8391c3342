//! Replaying the price path: resting limits fill, triggers fire and positions are liquidated at
//! the instant the path reaches their level.

use super::exchange::{Book, Fill, FillCause, OrderKind};
use super::fills::{Trade, resolve_coin, slipped};
use super::market::Market;
use super::{Exchange, FeeConfig, round_px};
use chrono::{DateTime, TimeDelta, Utc};
/// One linear piece of the market path.
pub(super) struct Segment {
    ta: DateTime<Utc>,
    pa: f64,
    tb: DateTime<Utc>,
    pb: f64,
}

impl Segment {
    pub(super) fn span_nanos(&self) -> f64 {
        // Knots are at most 400 days apart, well inside i64 nanoseconds.
        (self.tb - self.ta).num_nanoseconds().unwrap_or(i64::MAX) as f64
    }

    pub(super) fn price_at(&self, t: DateTime<Utc>) -> f64 {
        let span = self.span_nanos();
        if span <= 0.0 {
            return self.pb;
        }
        let into = (t - self.ta).num_nanoseconds().unwrap_or(0) as f64;
        self.pa + (self.pb - self.pa) * (into / span)
    }

    /// Earliest instant in `[not_before, tb]` at which the price is at or
    /// beyond `level` (at or below it when `below`).
    pub(super) fn crossing(
        &self,
        level: f64,
        below: bool,
        not_before: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        let start = not_before.max(self.ta);
        if start > self.tb {
            return None;
        }
        let hit = |p: f64| if below { p <= level } else { p >= level };
        if hit(self.price_at(start)) {
            return Some(start);
        }
        if !hit(self.pb) {
            return None;
        }
        // The price at `start` misses and at `tb` hits, so the segment is not
        // flat and the division is safe.
        let frac = ((level - self.pa) / (self.pb - self.pa)).clamp(0.0, 1.0);
        let offset = TimeDelta::nanoseconds((self.span_nanos() * frac).round() as i64);
        Some((self.ta + offset).clamp(start, self.tb))
    }
}

#[derive(Clone, Copy)]
pub(super) enum EventTarget {
    Trigger(u64),
    Limit(u64),
    Liquidation(Exchange),
}

impl EventTarget {
    /// Tie-break for events at the same instant: triggers first so a stop
    /// protects the position before anything else happens to it, then limits,
    /// then liquidation; within a kind, the older order (lower oid) first.
    pub(super) fn rank(self) -> (u8, u64) {
        match self {
            EventTarget::Trigger(oid) => (0, oid),
            EventTarget::Limit(oid) => (1, oid),
            EventTarget::Liquidation(exchange) => (2, exchange as u64),
        }
    }
}

impl Book {
    /// Replays the market path from `from` to `to`, filling resting limits
    /// (as maker, at their price), firing triggers (as taker, at the trigger
    /// plus slippage) and liquidating positions, each at the instant the path
    /// reaches its level and in that order. Orders and positions are only
    /// considered from the time they were placed or opened. Like
    /// [`Market::knots`], only the last 400 days of a longer span are
    /// replayed. Returns the fills sorted by time.
    pub fn sync(
        &mut self,
        m: &Market,
        fees: &FeeConfig,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Vec<Fill> {
        let mut fills = Vec::new();
        if to <= from {
            return fills;
        }
        let mut coins: Vec<String> = self
            .positions
            .iter()
            .map(|p| p.coin.clone())
            .chain(self.orders.iter().map(|o| o.coin.clone()))
            .collect();
        coins.sort();
        coins.dedup();
        // Coins are independent: resting fills and triggers do not check
        // account-wide margin and liquidation is per isolated position.
        for coin in coins {
            let knots = m.knots(&coin, from, to);
            for pair in knots.windows(2) {
                let segment = Segment {
                    ta: pair[0].0,
                    pa: pair[0].1,
                    tb: pair[1].0,
                    pb: pair[1].1,
                };
                let mut cursor = segment.ta;
                // Each event removes an order or a position, so this ends.
                while let Some((time, target)) = self.next_event(&coin, &segment, cursor) {
                    cursor = time;
                    if let Some(fill) = self.fire(&coin, target, time, fees) {
                        fills.push(fill);
                    }
                }
            }
        }
        fills.sort_by_key(|f| f.time);
        fills
    }

    pub(super) fn next_event(
        &self,
        coin: &str,
        segment: &Segment,
        cursor: DateTime<Utc>,
    ) -> Option<(DateTime<Utc>, EventTarget)> {
        let orders = self
            .orders
            .iter()
            .filter(|o| o.coin == coin)
            .filter_map(|o| {
                let (level, below) = o.level()?;
                let time = segment.crossing(level, below, cursor.max(o.timestamp))?;
                let target = if o.kind == OrderKind::Limit {
                    EventTarget::Limit(o.oid)
                } else {
                    EventTarget::Trigger(o.oid)
                };
                Some((time, target))
            });
        let liquidations = self
            .positions
            .iter()
            .filter(|p| p.coin == coin)
            .filter_map(|p| {
                let level = Book::liquidation_px(p)?;
                let time = segment.crossing(level, p.is_long(), cursor.max(p.opened_at))?;
                Some((time, EventTarget::Liquidation(p.exchange)))
            });
        orders
            .chain(liquidations)
            .min_by_key(|(time, target)| (*time, target.rank()))
    }

    pub(super) fn fire(
        &mut self,
        coin: &str,
        target: EventTarget,
        time: DateTime<Utc>,
        fees: &FeeConfig,
    ) -> Option<Fill> {
        let (oid, trigger) = match target {
            EventTarget::Liquidation(exchange) => return self.liquidate(exchange, coin, time),
            EventTarget::Trigger(oid) => (oid, true),
            EventTarget::Limit(oid) => (oid, false),
        };
        let index = self
            .orders
            .iter()
            .position(|o| o.oid == oid && o.coin == coin)?;
        // Whatever happens next, the order is done: filled, or cancelled
        // because the position it was meant to reduce is gone.
        let order = self.orders.remove(index);
        let (coin, _) = resolve_coin(&order.coin).ok()?;
        let trade = if trigger {
            let p = self.position(order.exchange, coin)?;
            if p.is_long() == order.is_buy {
                return None;
            }
            let held = p.szi.abs();
            let trigger_px = order.trigger_px?;
            Trade {
                oid,
                exchange: order.exchange,
                coin,
                is_buy: order.is_buy,
                sz: if order.is_position_tpsl {
                    held
                } else {
                    order.sz.min(held)
                },
                px: round_px(coin, slipped(trigger_px, order.is_buy, fees)),
                fee_rate: fees.taker_fee_rate,
                leverage: p.leverage,
                reduce_only: true,
                cause: if order.kind == OrderKind::StopMarket {
                    FillCause::StopLoss
                } else {
                    FillCause::TakeProfit
                },
                time,
            }
        } else {
            Trade {
                oid,
                exchange: order.exchange,
                coin,
                is_buy: order.is_buy,
                sz: order.sz,
                px: order.limit_px,
                fee_rate: fees.maker_fee_rate,
                leverage: order.leverage,
                reduce_only: order.reduce_only,
                cause: FillCause::LimitCrossed,
                time,
            }
        };
        self.execute(trade, None).ok()
    }

    /// Closes the whole position at its liquidation price. The position's
    /// entire margin is lost: the loss down to the liquidation price plus the
    /// maintenance margin left at that price, which the venue keeps.
    pub(super) fn liquidate(
        &mut self,
        exchange: Exchange,
        coin: &str,
        time: DateTime<Utc>,
    ) -> Option<Fill> {
        let index = self.position_index(exchange, coin)?;
        let liq_px = Book::liquidation_px(&self.positions[index])?;
        let p = self.positions.remove(index);
        self.cancel_reduce_only(exchange, coin);
        self.cash = (self.cash - p.margin).max(0.0);
        Some(Fill {
            oid: 0,
            exchange,
            coin: p.coin.clone(),
            is_buy: !p.is_long(),
            px: round_px(&p.coin, liq_px),
            sz: p.szi.abs(),
            fee: 0.0,
            closed_pnl: -p.margin,
            time,
            dir: "Liquidation".to_string(),
            cause: FillCause::Liquidation,
        })
    }
}
