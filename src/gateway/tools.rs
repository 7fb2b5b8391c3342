//! Which tools the service runs at once and which it holds for a confirmation token, read from the
//! service's own capability catalog (`list_mcp_capabilities`), never assumed from ours.
//!
//! The gateway's staging of a mutate tool relies on the service running nothing on the first call:
//! a deployment that runs a trading tool at once would execute it unjudged. So a tool is let
//! through only when both catalogs have it, byte for byte, and a tool that changes the account
//! (by either catalog) goes through the staging only when the service says it confirms first.
//! Anything else is refused, and so is every tool while the service's catalog cannot be read.

use super::core::Gate;
use super::error::{GateError, Kind};
use crate::api::catalog::{self, Operation, Tier};
use crate::api::model::Capabilities;
use crate::secret::Secret;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a fetched catalog is used before it is read again. A service changes its tiers with a
/// deployment, not between two calls; reading it on every call would double each tool call.
const FRESH_FOR: Duration = Duration::from_secs(300);
/// After a failed read, how long the next tool call waits before the catalog is asked again (a
/// service whose MCP is off answers every tool call with an error anyway).
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// How the gateway handles a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolClass {
    /// Neither catalog says it changes the account: forwarded as checked.
    Reads,
    /// The service holds it for a confirmation token: its first call is a staging, and the
    /// re-submission waits for the supervisor.
    Staged,
}

/// The service's tools by exact name: whether each one confirms before it runs.
#[derive(Default)]
pub struct ToolCatalog {
    state: Mutex<CatalogState>,
}

#[derive(Default)]
struct CatalogState {
    known: Option<(Instant, HashMap<String, bool>)>,
    failed: Option<(Instant, String)>,
}

impl ToolCatalog {
    fn lock(&self) -> std::sync::MutexGuard<'_, CatalogState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Whether each tool of a capability answer confirms first: its `requiresConfirmation`, its
/// `tier`, or the `tiers` lists, whichever says so (any one is enough).
pub fn confirms_first(caps: &Capabilities) -> HashMap<String, bool> {
    let mut out: HashMap<String, bool> = HashMap::new();
    for t in &caps.tools {
        let confirms = t.requires_confirmation || t.tier.eq_ignore_ascii_case("mutate");
        *out.entry(t.name.clone()).or_default() |= confirms;
    }
    for (tier, names) in &caps.tiers {
        for name in names
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n.as_str())
        {
            *out.entry(name.to_string()).or_default() |= tier.eq_ignore_ascii_case("mutate");
        }
    }
    out
}

async fn fetch(gate: &Gate, key: Option<&Secret>) -> Result<HashMap<String, bool>, String> {
    let op = catalog::op("list_mcp_capabilities");
    let answer = gate.get_json_as(op, key).await.map_err(|e| e.message)?;
    if !answer.is_success() {
        return Err(format!(
            "it answered HTTP {}: {}",
            answer.status.as_u16(),
            String::from_utf8_lossy(&answer.body[..answer.body.len().min(300)])
        ));
    }
    let caps: Capabilities = serde_json::from_slice(&answer.body)
        .map_err(|e| format!("its answer does not read as a capability catalog ({e})"))?;
    let tools = confirms_first(&caps);
    if tools.is_empty() {
        return Err("its catalog lists no tools".into());
    }
    Ok(tools)
}

/// The service's catalog: the cached one while fresh, else read again (a failed read keeps the
/// last one read, since tiers do not change between deployments).
async fn service_tools(
    gate: &Gate,
    key: Option<&Secret>,
) -> Result<HashMap<String, bool>, GateError> {
    {
        let state = gate.tools.lock();
        if let Some((at, tools)) = &state.known
            && at.elapsed() < FRESH_FOR
        {
            return Ok(tools.clone());
        }
        if let Some((at, why)) = &state.failed
            && at.elapsed() < RETRY_AFTER
            && state.known.is_none()
        {
            return Err(unavailable(why));
        }
    }
    match fetch(gate, key).await {
        Ok(tools) => {
            let mut state = gate.tools.lock();
            state.known = Some((Instant::now(), tools.clone()));
            state.failed = None;
            Ok(tools)
        }
        Err(why) => {
            tracing::warn!("cannot read the service's tool catalog: {why}");
            let mut state = gate.tools.lock();
            state.failed = Some((Instant::now(), why.clone()));
            match &state.known {
                Some((_, tools)) => Ok(tools.clone()),
                None => Err(unavailable(&why)),
            }
        }
    }
}

fn unavailable(why: &str) -> GateError {
    GateError::new(
        Kind::Unavailable,
        "tool_catalog_unavailable",
        format!(
            "the gateway cannot read the service's tool catalog \
             (GET /api/delegated/mcp/capabilities: {why}), so it cannot tell which tools run at \
             once; no tool call passes until it can"
        ),
    )
}

/// How a call of this tool is handled, from the service's catalog and ours. `key` is the caller's
/// (the catalog needs none by the interface, a deployment may want one).
pub async fn classify(
    gate: &Gate,
    op: &'static Operation,
    key: Option<&Secret>,
) -> Result<ToolClass, GateError> {
    let name = op.tool_name();
    let tools = service_tools(gate, key).await?;
    let Some(&confirms) = tools.get(&name) else {
        return Err(GateError::new(
            Kind::Forbidden,
            "unknown_tool",
            format!(
                "the service's tool catalog has no tool named {name:?}; the gateway forwards \
                 only tools both catalogs have"
            ),
        )
        .with_field("name"));
    };
    match (op.tier == Tier::Mutate, confirms) {
        (_, true) => Ok(ToolClass::Staged),
        (false, false) => Ok(ToolClass::Reads),
        (true, false) => Err(GateError::new(
            Kind::Forbidden,
            "unconfirmed_mutate_tool",
            format!(
                "{name} changes the account, and this service runs it without a confirmation \
                 step, so no supervisor could approve it first; stage the trade with POST \
                 /api/delegated/propose instead"
            ),
        )
        .with_field("name")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_confirms_first_when_any_field_of_the_catalog_says_so() {
        let caps: Capabilities = serde_json::from_value(json!({
            "tools": [
                {"name": "service_place_order", "tier": "observe"},
                {"name": "service_cancel_order", "tier": "observe", "requiresConfirmation": true},
                {"name": "service_get_positions", "tier": "observe"},
            ],
            "tiers": {"mutate": ["service_get_positions"], "observe": ["service_get_usage"]},
        }))
        .unwrap();
        let tools = confirms_first(&caps);
        assert!(!tools["service_place_order"]);
        assert!(tools["service_cancel_order"]);
        assert!(tools["service_get_positions"]);
        assert!(!tools["service_get_usage"]);
        assert_eq!(tools.len(), 4);
    }
}
