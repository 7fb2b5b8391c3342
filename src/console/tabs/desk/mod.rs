//! The Desk tab: positions, open orders, the PnL summary with its equity chart, and the strip of
//! proposals that can still be approved. Its data are the account feeds and the inbox the App
//! keeps, as the header, the risk preview and completion read them too, so the component owns no
//! state and its view reads `App`.

pub mod rows;
mod update;
pub mod view;

#[derive(Debug, Clone, Default)]
pub struct DeskTab;
