//! One folder per tab: its state (`mod.rs`), its update — its keys and the answers of its
//! requests (`update.rs`) — and its view (`view.rs`). The tabs are named in `tab.rs`; `app.rs`
//! sends each its keys and its moments (shown, refreshed).

pub mod backtests;
pub mod chat;
pub mod desk;
pub mod discovery;
pub mod logs;
pub mod proposals;
pub mod research;
pub mod signals;
pub mod tools;
