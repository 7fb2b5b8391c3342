//! The risk of a staged trade against the live positions and account value: App's inputs to the
//! pure computation in `console::inbox::risk`.

use crate::api::model::{PositionRow, Preview};
use crate::console::app::App;
pub use crate::console::inbox::risk::{Risk, risk};

impl App {
    /// The risk preview of a proposal against the live positions and account value.
    pub fn risk_of(&self, preview: &Preview) -> Risk {
        let held: Vec<PositionRow> = self
            .account
            .position_index
            .get(&crate::console::inbox::risk::preview_coin(preview))
            .into_iter()
            .flatten()
            .filter_map(|i| self.account.positions.get(*i))
            .cloned()
            .collect();
        let value = match &self.account.pnl {
            None => Err("no PnL yet".to_string()),
            Some(s) if s.total_portfolio_value > 0.0 => Ok(s.total_portfolio_value),
            Some(s) if s.margin_summary.account_value > 0.0 => Ok(s.margin_summary.account_value),
            Some(s) => Ok(s.total_portfolio_value),
        };
        risk(preview, &held, value)
    }
}
