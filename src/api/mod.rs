//! The interface, shared by the console and the sandbox.

pub mod catalog;
pub mod client;
pub mod error;
pub mod model;
pub mod openapi;

pub use catalog::{OPERATIONS, Operation, Scope};
pub use client::Client;
pub use error::ApiError;
