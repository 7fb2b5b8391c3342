//! Reading the service's tool catalog (`list_mcp_capabilities`) when the gate's copy is not fresh,
//! and classifying a tool call by it ([`crate::gateway::rules::tools`] says how).

use crate::api::catalog::{self, Operation};
use crate::gateway::gate::Gate;
use crate::gateway::model::error::GateError;
use crate::gateway::rules::tools::{ToolClass, class_of, confirms_first};
use crate::secret::Secret;
use serde_json::Value;
use std::collections::HashMap;

/// Why the service's catalog was not read; it completes "cannot read the service's tool catalog".
#[derive(Debug, thiserror::Error)]
enum CatalogError {
    #[error("{}", .0.message)]
    Unreachable(GateError),
    /// Only the status: the answer was to one caller's key and the error reaches others.
    #[error("it answered HTTP {}", .0.as_u16())]
    Status(reqwest::StatusCode),
    #[error("its answer does not read as a capability catalog ({0})")]
    NotCatalog(#[source] serde_json::Error),
    #[error("its catalog lists no tools")]
    NoTools,
}

async fn fetch(gate: &Gate, key: Option<&Secret>) -> Result<HashMap<String, bool>, CatalogError> {
    let op = catalog::op("list_mcp_capabilities");
    let answer = gate
        .upstream
        .get_json_as(op, key)
        .await
        .map_err(CatalogError::Unreachable)?;
    if !answer.is_success() {
        return Err(CatalogError::Status(answer.status));
    }
    let caps: Value = serde_json::from_slice(&answer.body).map_err(CatalogError::NotCatalog)?;
    let tools = confirms_first(&caps);
    if tools.is_empty() {
        return Err(CatalogError::NoTools);
    }
    Ok(tools)
}

/// The service's catalog: the gate's copy while fresh, else read again.
async fn service_tools(
    gate: &Gate,
    key: Option<&Secret>,
) -> Result<HashMap<String, bool>, GateError> {
    if let Some(answer) = gate.tools.cached() {
        return answer;
    }
    match fetch(gate, key).await {
        Ok(tools) => {
            gate.tools.learned(tools.clone());
            Ok(tools)
        }
        Err(why) => {
            tracing::warn!("cannot read the service's tool catalog: {why}");
            gate.tools.failed(why.to_string())
        }
    }
}

/// How a call of this tool is handled, from the service's catalog and ours. `key` reads the catalog
/// (the interface wants none, a deployment may): the gateway's own key when it has one, so no
/// caller's key decides what every agent's catalog is.
pub async fn classify(
    gate: &Gate,
    op: &'static Operation,
    key: Option<&Secret>,
) -> Result<ToolClass, GateError> {
    class_of(op, &service_tools(gate, key).await?)
}
