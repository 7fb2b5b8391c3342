//! The Discovery views as tables: the strategy catalog and the ranked rows (top backtests, top
//! live, optimized combos), with the columns they are drawn with and what the filter and the sort
//! read. Listed in the service's order (its rank) until `s` or a header chooses another; numbers
//! sort best first (the largest; for drawdowns, which are ≤ 0, the shallowest), text
//! alphabetically.

use super::{params_text, quality_rank, row_name, timeframe_minutes};
use crate::api::model::{DiscoveryRow, StrategyEntry};
use crate::console::table::{Field, Key, Rows, amount, field};
use crate::console::widgets::{Col, col, fill_col, num_col};

pub const STRATEGY_COLS: &[Col] = &[
    col("Id", 20, 1),
    col("Name", 24, 0),
    col("Category", 14, 2),
    num_col("Params", 6, 3),
    fill_col("Parameters (defaults)", 16, 1),
];

const STRATEGY_FIELDS: &[Field] = &[
    field("id", "Id"),
    field("name", "Name"),
    field("category", "Category"),
    amount("params", "Params"),
    field("parameters", "Parameters (defaults)"),
];

pub const RANKED_COLS: &[Col] = &[
    col("Strategy", 22, 0),
    col("Pair", 8, 1),
    col("TF", 4, 1),
    num_col("Days", 4, 4),
    num_col("Return %", 9, 0),
    num_col("Win %", 6, 2),
    num_col("Max DD %", 8, 2),
    num_col("Sharpe", 6, 1),
    num_col("PF", 5, 3),
    num_col("Trades", 6, 2),
    col("Quality", 9, 3),
    fill_col("Params", 10, 5),
];

const RANKED_FIELDS: &[Field] = &[
    field("strategy", "Strategy"),
    field("pair", "Pair"),
    field("tf", "TF"),
    field("days", "Days"),
    amount("return", "Return %"),
    amount("win", "Win %"),
    amount("dd", "Max DD %"),
    amount("sharpe", "Sharpe"),
    amount("pf", "PF"),
    amount("trades", "Trades"),
    amount("quality", "Quality"),
    field("params", "Params"),
    field("category", ""),
];

pub const COMBO_COLS: &[Col] = &[
    col("Strategy", 22, 0),
    num_col("Rank", 4, 1),
    fill_col("Params", 14, 1),
    num_col("Return %", 9, 0),
    num_col("Trades", 6, 2),
    num_col("Win %", 6, 2),
    num_col("Max DD %", 8, 2),
    num_col("Sharpe", 6, 1),
    col("Pair", 8, 3),
    col("TF", 4, 3),
];

const COMBO_FIELDS: &[Field] = &[
    field("strategy", "Strategy"),
    field("rank", "Rank"),
    field("params", "Params"),
    amount("return", "Return %"),
    amount("trades", "Trades"),
    amount("win", "Win %"),
    amount("dd", "Max DD %"),
    amount("sharpe", "Sharpe"),
    field("pair", "Pair"),
    field("tf", "TF"),
    field("quality", ""),
    field("category", ""),
];

pub enum DiscoveryRows<'a> {
    Strategies(&'a [StrategyEntry]),
    Ranked(&'a [DiscoveryRow]),
    Combos(&'a [DiscoveryRow]),
}

/// A timeframe, ordered by its length.
fn tf(r: &DiscoveryRow) -> Key<'_> {
    Key::Labeled(
        timeframe_minutes(&r.timeframe) as f64,
        r.timeframe.as_str().into(),
    )
}

fn num(x: Option<f64>) -> Key<'static> {
    x.filter(|v| v.is_finite()).map_or(Key::None, Key::Num)
}

impl Rows for DiscoveryRows<'_> {
    fn cols(&self) -> &[Col] {
        match self {
            DiscoveryRows::Strategies(_) => STRATEGY_COLS,
            DiscoveryRows::Ranked(_) => RANKED_COLS,
            DiscoveryRows::Combos(_) => COMBO_COLS,
        }
    }

    fn fields(&self) -> &'static [Field] {
        match self {
            DiscoveryRows::Strategies(_) => STRATEGY_FIELDS,
            DiscoveryRows::Ranked(_) => RANKED_FIELDS,
            DiscoveryRows::Combos(_) => COMBO_FIELDS,
        }
    }

    fn len(&self) -> usize {
        match self {
            DiscoveryRows::Strategies(s) => s.len(),
            DiscoveryRows::Ranked(r) | DiscoveryRows::Combos(r) => r.len(),
        }
    }

    fn key(&self, row: usize, field: usize) -> Key<'_> {
        match self {
            DiscoveryRows::Strategies(list) => {
                let s = &list[row];
                match field {
                    0 => Key::Text(s.id.as_str().into()),
                    1 => Key::Text(s.name.as_str().into()),
                    2 => Key::Text(s.category.as_str().into()),
                    3 => Key::Num(s.parameters.len() as f64),
                    _ => Key::text(
                        s.parameters
                            .iter()
                            .map(|p| p.name.as_str())
                            .collect::<Vec<_>>()
                            .join(" "),
                    ),
                }
            }
            DiscoveryRows::Ranked(rows) => {
                let r = &rows[row];
                match field {
                    0 => Key::Text(row_name(r).into()),
                    1 => Key::Text(r.pair.as_str().into()),
                    2 => tf(r),
                    3 if r.days > 0 => Key::Num(f64::from(r.days)),
                    3 => Key::None,
                    4 => num(r.stats.total_return),
                    5 => num(r.stats.win_rate_pct()),
                    6 => num(r.stats.max_drawdown),
                    7 => num(r.stats.sharpe_ratio),
                    8 => num(r.stats.profit_factor),
                    9 => Key::Num(r.stats.total_trades as f64),
                    // Best first: excellent, good, poor, then words this console does not know.
                    10 => Key::Labeled(
                        -f64::from(quality_rank(&r.quality)),
                        r.quality.as_str().into(),
                    ),
                    11 => Key::text(params_text(&r.parameters)),
                    _ => Key::Text(r.category.as_str().into()),
                }
            }
            DiscoveryRows::Combos(rows) => {
                let r = &rows[row];
                match field {
                    0 => Key::Text(row_name(r).into()),
                    1 => r
                        .rank_within_strategy
                        .map_or(Key::None, |n| Key::Num(f64::from(n))),
                    2 => Key::text(params_text(&r.parameters)),
                    3 => num(r.stats.total_return),
                    4 => Key::Num(r.stats.total_trades as f64),
                    5 => num(r.stats.win_rate_pct()),
                    6 => num(r.stats.max_drawdown),
                    7 => num(r.stats.sharpe_ratio),
                    8 => Key::Text(r.pair.as_str().into()),
                    9 => tf(r),
                    10 => Key::Text(r.quality.as_str().into()),
                    _ => Key::Text(r.category.as_str().into()),
                }
            }
        }
    }

    fn id(&self, row: usize) -> Option<String> {
        match self {
            DiscoveryRows::Strategies(list) => Some(list[row].id.clone()),
            // A strategy has many rows (pairs, parameters): the row's own id, else what tells it.
            DiscoveryRows::Ranked(rows) | DiscoveryRows::Combos(rows) => {
                let r = &rows[row];
                Some(if r.id.is_empty() {
                    format!(
                        "{} {} {} {}",
                        r.strategy_id, r.pair, r.timeframe, r.param_hash
                    )
                } else {
                    r.id.clone()
                })
            }
        }
    }
}
