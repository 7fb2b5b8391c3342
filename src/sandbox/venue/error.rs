//! What the venue refuses, with the code and field the interface reports.

use super::exchange::{MESSAGE_DECIMALS, OrderKind};
use super::market::ASSETS;
use super::{Exchange, fmt_decimal};
use std::fmt;
#[derive(Debug, Clone, PartialEq)]
pub enum VenueError {
    UnknownCoin(String),
    InvalidSize(String),
    InvalidPrice(String),
    InvalidTrigger(String),
    /// A close fraction outside (0, 1].
    InvalidFraction(f64),
    LeverageOutOfRange {
        coin: String,
        requested: u32,
        max: u32,
    },
    InsufficientMargin {
        required: f64,
        available: f64,
    },
    NoPosition {
        exchange: Exchange,
        coin: String,
    },
    /// A reduce-only order on the same side as the position.
    ReduceOnlyWouldIncrease {
        exchange: Exchange,
        coin: String,
    },
    UnknownOrder {
        oid: u64,
    },
    TriggerOnWrongSide {
        coin: String,
        kind: OrderKind,
        trigger_px: f64,
        mark_px: f64,
        position_long: bool,
    },
}

impl VenueError {
    /// Stable machine-readable code for API error bodies.
    pub fn code(&self) -> &'static str {
        match self {
            VenueError::UnknownCoin(_) => "unknown_coin",
            VenueError::InvalidSize(_) | VenueError::InvalidFraction(_) => "invalid_size",
            VenueError::InvalidPrice(_) => "invalid_price",
            VenueError::InvalidTrigger(_) | VenueError::TriggerOnWrongSide { .. } => {
                "invalid_trigger"
            }
            VenueError::LeverageOutOfRange { .. } => "leverage_out_of_range",
            VenueError::InsufficientMargin { .. } => "insufficient_margin",
            VenueError::NoPosition { .. } => "no_position",
            VenueError::ReduceOnlyWouldIncrease { .. } => "reduce_only_would_increase",
            VenueError::UnknownOrder { .. } => "unknown_order",
        }
    }

    /// The request-body field at fault, where one field clearly is.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            VenueError::UnknownCoin(_) | VenueError::NoPosition { .. } => Some("coin"),
            VenueError::InvalidSize(_) => Some("sz"),
            VenueError::InvalidFraction(_) => Some("fraction"),
            VenueError::InvalidPrice(_) => Some("limit_px"),
            VenueError::InvalidTrigger(_) | VenueError::TriggerOnWrongSide { .. } => {
                Some("trigger_px")
            }
            VenueError::LeverageOutOfRange { .. } => Some("leverage"),
            VenueError::ReduceOnlyWouldIncrease { .. } => Some("reduce_only"),
            VenueError::UnknownOrder { .. } => Some("oid"),
            VenueError::InsufficientMargin { .. } => None,
        }
    }
}

pub(super) fn usd(x: f64) -> String {
    fmt_decimal(x, 2)
}

impl fmt::Display for VenueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VenueError::UnknownCoin(coin) => {
                let known: Vec<&str> = ASSETS.iter().map(|a| a.coin).collect();
                write!(
                    f,
                    "unknown coin {coin:?}; supported coins are {}",
                    known.join(", ")
                )
            }
            VenueError::InvalidSize(why) => write!(f, "invalid order size: {why}"),
            VenueError::InvalidPrice(why) => write!(f, "invalid limit price: {why}"),
            VenueError::InvalidTrigger(why) => write!(f, "invalid trigger: {why}"),
            VenueError::InvalidFraction(x) => write!(
                f,
                "close fraction {} must be greater than 0 and at most 1",
                fmt_decimal(*x, MESSAGE_DECIMALS)
            ),
            VenueError::LeverageOutOfRange {
                coin,
                requested,
                max,
            } => write!(
                f,
                "leverage {requested}x is out of range for {coin}; allowed is 1x to {max}x"
            ),
            VenueError::InsufficientMargin {
                required,
                available,
            } => write!(
                f,
                "insufficient margin: the order needs {} USDC but only {} USDC is available",
                usd(*required),
                usd(*available)
            ),
            VenueError::NoPosition { exchange, coin } => {
                write!(f, "there is no open {coin} position on {exchange}")
            }
            VenueError::ReduceOnlyWouldIncrease { exchange, coin } => write!(
                f,
                "a reduce-only order must be on the opposite side of the {coin} position on {exchange}"
            ),
            VenueError::UnknownOrder { oid } => write!(
                f,
                "order {oid} is not open: it was never placed, already filled, or cancelled"
            ),
            VenueError::TriggerOnWrongSide {
                coin,
                kind,
                trigger_px,
                mark_px,
                position_long,
            } => {
                let side = if *position_long { "long" } else { "short" };
                let must_be = if (*kind == OrderKind::StopMarket) == *position_long {
                    "below"
                } else {
                    "above"
                };
                write!(
                    f,
                    "{kind} trigger {} for the {side} {coin} position must be {must_be} the current mark {}",
                    fmt_decimal(*trigger_px, MESSAGE_DECIMALS),
                    fmt_decimal(*mark_px, MESSAGE_DECIMALS)
                )
            }
        }
    }
}

impl std::error::Error for VenueError {}
