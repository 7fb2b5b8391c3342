//! The gateway's vocabulary, its lowest layer: what an agent's request, a trade, an error and a
//! journal row are. Plain data and pure functions; imports nothing else of the gateway, so every
//! layer above can use it.

pub mod connections;
pub mod error;
pub mod journal;
pub mod key;
pub mod request;
pub mod trade;
