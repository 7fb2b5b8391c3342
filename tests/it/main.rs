//! The one integration-test binary: every module talks to a real sandbox over loopback HTTP with the
//! real client.

mod common;

mod account;
mod backtests;
mod bad_input;
mod builder_fee;
mod candles;
mod chat;
mod cli;
mod client;
mod config_example;
mod connections;
mod contract;
mod discovery;
mod documented_errors;
mod e2e;
mod e2e_deliberate;
mod e2e_embedded;
mod e2e_inbox;
mod e2e_research;
mod gateway;
mod immediate;
mod openapi_statuses;
mod operations;
mod payments;
mod quota;
mod reads;
mod research;
mod restart;
mod scopes;
mod signals;
mod staged;
mod structure;
mod tools;
mod tui;
mod venue;
mod webhook_tls;
