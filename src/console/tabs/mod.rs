//! One folder per tab: its state (`mod.rs`), its update — its keys and the answers of its
//! requests, as `impl App` blocks (`update.rs`) — and its view (`view.rs`).

pub mod signals;
