//! The Desk tab: positions, open orders, the PnL summary with its equity chart, and the strip of
//! proposals that can still be approved. Its data are the account feeds the App keeps, as the
//! header, the risk preview and completion read them too.

mod update;
pub mod view;
