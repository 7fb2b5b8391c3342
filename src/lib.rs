//! agentdesk: a terminal console for agent trading, and a sandbox that implements the same interface
//! on a simulated venue.

pub mod api;
pub mod config;
pub mod console;
pub mod edge;
pub mod embedded;
pub mod gateway;
pub mod logging;
pub mod sandbox;
pub mod secret;
pub mod standin;
pub mod tls;
