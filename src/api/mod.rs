//! The interface, shared by the console and the sandbox: the catalog, wire types, the client, and
//! the protocols' signing code (EIP-712, x402 payments, Standard Webhooks) both sides use.

pub mod catalog;
pub mod client;
pub mod eip712;
pub mod error;
pub mod model;
pub mod openapi;
pub mod payment;
pub mod routes;
pub mod ssrf;
pub mod webhook_sig;

pub use catalog::{OPERATIONS, Operation, Scope};
pub use client::Client;
pub use error::ApiError;
