//! The interface, shared by the console and the sandbox: the catalog, wire types, the client, and
//! the protocols' signing code (EIP-712, x402 payments, Standard Webhooks) both sides use.

pub mod catalog;
pub mod client;
pub mod eip712;
pub mod error;
pub mod model;
pub mod openapi;
pub mod payment;
pub mod percent;
pub mod request_id;
pub mod risk;
pub mod routes;
pub mod ssrf;
pub mod staged;
pub mod symbol;
pub mod webhook_sig;

pub use catalog::{OPERATIONS, Operation, Scope};
pub use client::Client;
pub use error::ApiError;

/// JSON with object keys sorted at every level, so equal arguments hash equally whatever their
/// order on the wire.
pub fn canonical_json(v: &serde_json::Value) -> String {
    fn sorted(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                let mut out = serde_json::Map::new();
                for k in keys {
                    out.insert(k.clone(), sorted(&map[k]));
                }
                serde_json::Value::Object(out)
            }
            serde_json::Value::Array(items) => {
                serde_json::Value::Array(items.iter().map(sorted).collect())
            }
            other => other.clone(),
        }
    }
    // With serde_json's default map the insertion above is already sorted; with `preserve_order`
    // it keeps the sorted insertion order. Either way the text is canonical.
    sorted(v).to_string()
}
