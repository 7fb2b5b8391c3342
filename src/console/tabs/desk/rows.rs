//! The Desk's positions and open orders as tables: their columns, and what the filter and the
//! sort read of them.

use crate::api::model::{OpenOrderRow, PositionRow};
use crate::console::table::{Field, Key, Rows, amount, field};
use crate::console::widgets::{Col, col, num_col};

pub const POSITION_COLS: &[Col] = &[
    col("Exch", 6, 1),
    col("Coin", 5, 0),
    col("Side", 5, 0),
    num_col("Size", 10, 0),
    num_col("Entry", 10, 1),
    num_col("Mark", 10, 1),
    num_col("uPnL", 10, 0),
    num_col("uPnL %", 7, 2),
    num_col("Lev", 4, 1),
    num_col("Liq", 10, 2),
    num_col("Margin", 10, 3),
];

const POSITION_FIELDS: &[Field] = &[
    field("exchange", "Exch"),
    field("coin", "Coin"),
    field("side", "Side"),
    amount("size", "Size"),
    amount("entry", "Entry"),
    amount("mark", "Mark"),
    amount("upnl", "uPnL"),
    amount("roe", "uPnL %"),
    amount("leverage", "Lev"),
    amount("liquidation", "Liq"),
    amount("margin", "Margin"),
    amount("notional", ""),
];

pub struct Positions<'a>(pub &'a [PositionRow]);

/// Unrealized PnL as a share of the margin, in percent.
pub fn roe(p: &PositionRow) -> f64 {
    if p.margin_used > 0.0 {
        p.unrealized_pnl / p.margin_used * 100.0
    } else {
        0.0
    }
}

impl Rows for Positions<'_> {
    fn cols(&self) -> &[Col] {
        POSITION_COLS
    }

    fn fields(&self) -> &'static [Field] {
        POSITION_FIELDS
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn key(&self, row: usize, field: usize) -> Key<'_> {
        let p = &self.0[row];
        match field {
            0 => Key::Text(p.exchange.as_str().into()),
            1 => Key::Text(p.coin.as_str().into()),
            2 => Key::Text(if p.szi >= 0.0 { "long" } else { "short" }.into()),
            3 => Key::Num(p.szi.abs()),
            4 => Key::Num(p.entry_px),
            5 => Key::Num(p.mark_px),
            6 => Key::Num(p.unrealized_pnl),
            7 => Key::Num(roe(p)),
            8 => Key::Num(f64::from(p.leverage.value)),
            9 => p.liquidation_px.map_or(Key::None, Key::Num),
            10 => Key::Num(p.margin_used),
            _ => Key::Num((p.szi * p.mark_px).abs()),
        }
    }

    /// A position is named by its coin on its exchange (what `/close` takes).
    fn id(&self, row: usize) -> Option<String> {
        let p = &self.0[row];
        Some(if p.position_id.is_empty() {
            p.coin.clone()
        } else {
            p.position_id.clone()
        })
    }
}

pub const ORDER_COLS: &[Col] = &[
    col("Exch", 6, 1),
    col("Coin", 5, 0),
    col("Side", 4, 0),
    col("Type", 18, 0),
    num_col("Price/Trigger", 13, 0),
    num_col("Size", 10, 0),
    num_col("Orig", 10, 3),
    col("RO", 3, 2),
    num_col("Oid", 10, 1),
    num_col("Age", 7, 2),
];

const ORDER_FIELDS: &[Field] = &[
    field("exchange", "Exch"),
    field("coin", "Coin"),
    field("side", "Side"),
    field("type", "Type"),
    amount("price", "Price/Trigger"),
    amount("size", "Size"),
    amount("orig", "Orig"),
    field("ro", "RO"),
    field("oid", "Oid"),
    field("age", "Age"),
];

pub struct Orders<'a> {
    pub rows: &'a [OpenOrderRow],
    pub now_ms: i64,
}

impl Rows for Orders<'_> {
    fn cols(&self) -> &[Col] {
        ORDER_COLS
    }

    fn fields(&self) -> &'static [Field] {
        ORDER_FIELDS
    }

    fn len(&self) -> usize {
        self.rows.len()
    }

    fn key(&self, row: usize, field: usize) -> Key<'_> {
        let o = &self.rows[row];
        match field {
            0 => Key::Text(o.exchange.as_str().into()),
            1 => Key::Text(o.coin.as_str().into()),
            2 => Key::Text(if o.side == "B" { "buy" } else { "sell" }.into()),
            3 => Key::Text(o.order_type.as_str().into()),
            4 => Key::Num(o.trigger_px.filter(|_| o.is_trigger).unwrap_or(o.limit_px)),
            5 => Key::Num(o.sz),
            6 => Key::Num(o.orig_sz),
            7 => Key::Text(if o.reduce_only { "ro" } else { "" }.into()),
            8 => Key::Num(o.oid as f64),
            _ => Key::Num(((self.now_ms - o.timestamp).max(0) / 1000) as f64),
        }
    }

    fn id(&self, row: usize) -> Option<String> {
        Some(self.rows[row].oid.to_string())
    }
}
