//! The risk of a staged trade: the pure computation lives in `console::inbox::risk`, and
//! [`super::shown::InboxShown::risk_of`] gives it the live positions and account value.

pub use crate::console::inbox::risk::{Risk, risk};
