//! One folder per tab: its state (`mod.rs`), its update — its keys and the answers of its
//! requests (`update.rs`) — and its view (`view.rs`). The tabs are named in `tab.rs`; `app.rs`
//! sends each its keys and its moments (shown, refreshed).
//!
//! A converted tab is a component (`console/component.rs`): a struct whose fields are private to
//! its folder, changed only by its own methods with a `Ctx`, drawn by its own `draw` with a
//! `Shown` — every tab but proposals. Proposals
//! is a view of the inbox, which every tab acts on and App keeps (`console/inbox/`). The modals a
//! tab opens own their state in the modal slot; App's side of them is in `route.rs` and, for
//! the Signals modals, `signals/modals.rs`.

pub mod backtests;
pub mod chat;
pub mod desk;
pub mod discovery;
pub mod logs;
pub mod proposals;
pub mod research;
pub mod signals;
pub mod tools;
