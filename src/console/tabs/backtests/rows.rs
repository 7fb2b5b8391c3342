//! The backtest jobs and a job's trades as tables: their columns, and what the filter and the
//! sort read of them.

use super::JobEntry;
use crate::api::model::BacktestTrade;
use crate::console::table::{Field, Key, Rows, amount, field};
use crate::console::widgets::{Col, col, fill_col, num_col};

pub const JOB_COLS: &[Col] = &[
    col("Job", 20, 2),
    col("Strategy", 18, 0),
    col("Pair", 8, 1),
    col("TF", 4, 1),
    num_col("Days", 4, 3),
    col("Status", 20, 0),
    num_col("Return %", 9, 0),
    num_col("Trades", 6, 2),
    col("Submitted", 9, 3),
];

const JOB_FIELDS: &[Field] = &[
    field("job", "Job"),
    field("strategy", "Strategy"),
    field("pair", "Pair"),
    field("tf", "TF"),
    amount("days", "Days"),
    field("status", "Status"),
    amount("return", "Return %"),
    amount("trades", "Trades"),
    amount("submitted", "Submitted"),
];

pub struct Jobs<'a>(pub &'a [JobEntry]);

impl Rows for Jobs<'_> {
    fn cols(&self) -> &[Col] {
        JOB_COLS
    }

    fn fields(&self) -> &'static [Field] {
        JOB_FIELDS
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn key(&self, row: usize, field: usize) -> Key<'_> {
        let j = &self.0[row];
        let data = j.job.data.as_deref();
        let (strategy, pair, tf, days) = j.describe();
        match field {
            0 => Key::Text(j.id().into()),
            1 => Key::text(strategy),
            2 => Key::text(pair),
            3 => Key::text(tf),
            4 => days.map_or(Key::None, |d| Key::Num(f64::from(d))),
            5 if j.gone => Key::Text("unknown job".into()),
            5 => Key::Text(j.job.status.as_str().into()),
            6 => data
                .and_then(|d| d.stats.total_return)
                .map_or(Key::None, Key::Num),
            7 => data.map_or(Key::None, |d| Key::Num(d.stats.total_trades as f64)),
            _ => Key::Num(j.job.created_at.unwrap_or(j.first_seen).timestamp_millis() as f64),
        }
    }

    fn id(&self, row: usize) -> Option<String> {
        Some(self.0[row].id().to_string())
    }
}

pub const TRADE_COLS: &[Col] = &[
    num_col("#", 3, 2),
    col("Dir", 5, 0),
    col("Entry time", 11, 1),
    col("Exit time", 11, 2),
    num_col("Entry", 9, 1),
    num_col("Exit", 9, 1),
    num_col("Return %", 8, 0),
    num_col("PnL", 9, 0),
    num_col("Bars", 4, 3),
    fill_col("Exit reason", 11, 2),
];

const TRADE_FIELDS: &[Field] = &[
    field("n", "#"),
    field("dir", "Dir"),
    field("entry_time", "Entry time"),
    field("exit_time", "Exit time"),
    amount("entry", "Entry"),
    amount("exit", "Exit"),
    amount("return", "Return %"),
    amount("pnl", "PnL"),
    amount("bars", "Bars"),
    field("reason", "Exit reason"),
];

pub struct Trades<'a>(pub &'a [BacktestTrade]);

impl Rows for Trades<'_> {
    fn cols(&self) -> &[Col] {
        TRADE_COLS
    }

    fn fields(&self) -> &'static [Field] {
        TRADE_FIELDS
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn key(&self, row: usize, field: usize) -> Key<'_> {
        let t = &self.0[row];
        match field {
            0 => Key::Num((row + 1) as f64),
            1 => Key::Text(t.direction.as_str().into()),
            2 => Key::text(t.entry_time.format("%m-%d %H:%M").to_string()),
            3 => Key::text(t.exit_time.format("%m-%d %H:%M").to_string()),
            4 => Key::Num(t.entry_px),
            5 => Key::Num(t.exit_px),
            6 => Key::Num(t.return_pct),
            7 => Key::Num(t.pnl),
            8 => Key::Num(t.bars as f64),
            _ => Key::text(t.exit_reason.replace('_', " ")),
        }
    }
}
