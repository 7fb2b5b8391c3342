//! The risk of a staged trade against what the console knows now: the computation is
//! [`crate::api::risk`], shared with the gateway's approval page.

use crate::api::model::{PositionRow, Preview};
pub use crate::api::risk::*;

/// The risk of a proposal against the live positions and account value.
pub fn live(preview: &Preview, account: &crate::console::feeds::Account) -> Risk {
    let held: Vec<PositionRow> = account
        .position_index
        .get(&preview_coin(preview))
        .into_iter()
        .flatten()
        .filter_map(|i| account.positions.get(*i))
        .cloned()
        .collect();
    let value = match &account.pnl {
        None => Err("no PnL yet".to_string()),
        Some(s) if s.total_portfolio_value > 0.0 => Ok(s.total_portfolio_value),
        Some(s) if s.margin_summary.account_value > 0.0 => Ok(s.margin_summary.account_value),
        Some(s) => Ok(s.total_portfolio_value),
    };
    risk(preview, &held, value)
}
