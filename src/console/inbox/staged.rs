//! A staged trade as the views show it: the computation is [`crate::api::staged`], shared with
//! the gateway's approval page.

pub use crate::api::staged::*;
