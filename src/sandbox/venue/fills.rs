//! Executing a trade against a book: margin and input checks, the fill, and the position it leaves.

use super::error::VenueError;
use super::exchange::{Book, Fill, FillCause, MARGIN_EPSILON, Position};
use super::market::{AssetSpec, Market, asset};
use super::{Exchange, FeeConfig, fmt_decimal, normalize_coin, round_sz, snap_sz};
use chrono::{DateTime, Utc};
/// Everything needed to apply one fill to the book.
pub(super) struct Trade {
    pub(super) oid: u64,
    pub(super) exchange: Exchange,
    pub(super) coin: &'static str,
    pub(super) is_buy: bool,
    pub(super) sz: f64,
    pub(super) px: f64,
    pub(super) fee_rate: f64,
    pub(super) leverage: u32,
    pub(super) reduce_only: bool,
    pub(super) cause: FillCause,
    pub(super) time: DateTime<Utc>,
}

/// Margin check for fills the user asks for now. Fills of resting orders skip
/// it: their margin was reserved when they were placed, and triggers and
/// liquidations only ever reduce.
#[derive(Clone, Copy)]
pub(super) struct MarginCheck {
    pub(super) available: f64,
    pub(super) mark: f64,
}

pub(super) fn check_margin(
    check: Option<MarginCheck>,
    required: f64,
    extra: f64,
) -> Result<(), VenueError> {
    match check {
        Some(c) if required > c.available + extra + MARGIN_EPSILON => {
            Err(VenueError::InsufficientMargin {
                required,
                available: c.available + extra,
            })
        }
        _ => Ok(()),
    }
}

pub(super) fn resolve_coin(coin: &str) -> Result<(&'static str, &'static AssetSpec), VenueError> {
    normalize_coin(coin)
        .and_then(|c| asset(c).map(|spec| (c, spec)))
        .ok_or_else(|| VenueError::UnknownCoin(coin.to_string()))
}

pub(super) fn validate_leverage(spec: &AssetSpec, leverage: u32) -> Result<(), VenueError> {
    if (1..=spec.max_leverage).contains(&leverage) {
        Ok(())
    } else {
        Err(VenueError::LeverageOutOfRange {
            coin: spec.coin.to_string(),
            requested: leverage,
            max: spec.max_leverage,
        })
    }
}

pub(super) fn validate_size(spec: &AssetSpec, sz: f64) -> Result<f64, VenueError> {
    if !sz.is_finite() || sz <= 0.0 {
        return Err(VenueError::InvalidSize(format!(
            "size {sz} must be a positive number"
        )));
    }
    let rounded = round_sz(spec.coin, sz);
    if rounded <= 0.0 {
        return Err(VenueError::InvalidSize(format!(
            "size {} rounds to zero at {} decimals for {}",
            fmt_decimal(sz, 12),
            spec.sz_decimals,
            spec.coin
        )));
    }
    Ok(rounded)
}

/// Half a size step: anything smaller is float residue, not a position.
pub(super) fn dust(spec: &AssetSpec) -> f64 {
    0.5 * 10f64.powi(-(spec.sz_decimals as i32))
}

pub(super) fn slipped(px: f64, is_buy: bool, fees: &FeeConfig) -> f64 {
    let slip = fees.slippage_bps / 10_000.0;
    if is_buy {
        px * (1.0 + slip)
    } else {
        px * (1.0 - slip)
    }
}

pub(super) fn mark_of(
    m: &Market,
    coin: &'static str,
    now: DateTime<Utc>,
) -> Result<f64, VenueError> {
    m.mark(coin, now)
        .ok_or_else(|| VenueError::UnknownCoin(coin.to_string()))
}

pub(super) fn open_dir(is_buy: bool) -> &'static str {
    if is_buy { "Open Long" } else { "Open Short" }
}

pub(super) fn close_dir(position_long: bool) -> &'static str {
    if position_long {
        "Close Long"
    } else {
        "Close Short"
    }
}

impl Book {
    /// Applies a fill to the position it concerns: open, add, reduce, close
    /// or flip.
    pub(super) fn execute(
        &mut self,
        t: Trade,
        check: Option<MarginCheck>,
    ) -> Result<Fill, VenueError> {
        let spec = asset(t.coin).ok_or_else(|| VenueError::UnknownCoin(t.coin.to_string()))?;
        let dust = dust(spec);
        let index = self.position_index(t.exchange, t.coin);
        let mut sz = t.sz;
        if t.reduce_only {
            let p = index
                .map(|i| &self.positions[i])
                .ok_or_else(|| VenueError::NoPosition {
                    exchange: t.exchange,
                    coin: t.coin.to_string(),
                })?;
            if p.is_long() == t.is_buy {
                return Err(VenueError::ReduceOnlyWouldIncrease {
                    exchange: t.exchange,
                    coin: t.coin.to_string(),
                });
            }
            sz = sz.min(p.szi.abs());
        }
        let side = if t.is_buy { 1.0 } else { -1.0 };

        let (dir, closed_pnl, fee) = match index {
            None => {
                let fee = sz * t.px * t.fee_rate;
                let margin = sz * t.px / f64::from(t.leverage);
                check_margin(check, margin + fee, 0.0)?;
                self.positions.push(Position {
                    exchange: t.exchange,
                    coin: t.coin.to_string(),
                    szi: side * sz,
                    entry_px: t.px,
                    leverage: t.leverage,
                    margin,
                    opened_at: t.time,
                });
                (open_dir(t.is_buy).to_string(), 0.0, fee)
            }
            Some(i) if self.positions[i].is_long() == t.is_buy => {
                let fee = sz * t.px * t.fee_rate;
                let p = &mut self.positions[i];
                let margin = sz * t.px / f64::from(p.leverage);
                check_margin(check, margin + fee, 0.0)?;
                let held = p.szi.abs();
                p.entry_px = (held * p.entry_px + sz * t.px) / (held + sz);
                p.szi = snap_sz(t.coin, p.szi + side * sz);
                p.margin += margin;
                (open_dir(t.is_buy).to_string(), 0.0, fee)
            }
            Some(i) => {
                let p = &self.positions[i];
                let long = p.is_long();
                let held = p.szi.abs();
                let sign = if long { 1.0 } else { -1.0 };
                if sz - held > dust {
                    let fee = sz * t.px * t.fee_rate;
                    let pnl = held * (t.px - p.entry_px) * sign;
                    let open_sz = snap_sz(t.coin, sz - held);
                    let margin = open_sz * t.px / f64::from(t.leverage);
                    // Closing first frees the old margin and swaps its
                    // unrealized PnL at the mark for the realized PnL.
                    let freed = check.map_or(0.0, |c| p.margin + pnl - p.unrealized_pnl(c.mark));
                    check_margin(check, margin + fee, freed)?;
                    self.positions[i] = Position {
                        exchange: t.exchange,
                        coin: t.coin.to_string(),
                        szi: side * open_sz,
                        entry_px: t.px,
                        leverage: t.leverage,
                        margin,
                        opened_at: t.time,
                    };
                    // The old side's TP/SL would now point the wrong way.
                    self.cancel_reduce_only(t.exchange, t.coin);
                    let dir = if long { "Long > Short" } else { "Short > Long" };
                    (dir.to_string(), pnl, fee)
                } else {
                    sz = sz.min(held);
                    let fee = sz * t.px * t.fee_rate;
                    let pnl = sz * (t.px - p.entry_px) * sign;
                    let left = held - sz;
                    if left < dust {
                        self.positions.remove(i);
                        self.cancel_reduce_only(t.exchange, t.coin);
                    } else {
                        let p = &mut self.positions[i];
                        p.margin -= p.margin * sz / held;
                        p.szi = snap_sz(t.coin, sign * left);
                    }
                    (close_dir(long).to_string(), pnl, fee)
                }
            }
        };
        self.cash += closed_pnl - fee;
        self.refresh_position_tpsl(t.exchange, t.coin);
        Ok(Fill {
            oid: t.oid,
            exchange: t.exchange,
            coin: t.coin.to_string(),
            is_buy: t.is_buy,
            px: t.px,
            sz,
            fee,
            closed_pnl,
            time: t.time,
            dir,
            cause: t.cause,
        })
    }

    /// Drops every reduce-only order of a position that is gone or flipped:
    /// none of them can do anything useful any more.
    pub(super) fn cancel_reduce_only(&mut self, exchange: Exchange, coin: &str) {
        self.orders
            .retain(|o| !(o.reduce_only && o.exchange == exchange && o.coin == coin));
    }

    /// Keeps whole-position TP/SL sizes equal to the position, as the venue shows them.
    pub(super) fn refresh_position_tpsl(&mut self, exchange: Exchange, coin: &str) {
        let Some(held) = self
            .position_index(exchange, coin)
            .map(|i| self.positions[i].szi.abs())
        else {
            return;
        };
        for o in self
            .orders
            .iter_mut()
            .filter(|o| o.is_position_tpsl && o.exchange == exchange && o.coin == coin)
        {
            o.sz = held;
            o.orig_sz = held;
        }
    }
}
