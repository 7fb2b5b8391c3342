//! The forms and editors a modal shows on a tab's behalf (lower layer: they import nothing from
//! `tabs/`, so `modal.rs` can hold them and the tabs can open them).

pub mod backtest;
pub mod schema;
pub mod signals;
pub mod tool_editor;
