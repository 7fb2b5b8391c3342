//! The MCP tool list: the upstream's own capability catalog (`list_mcp_capabilities`), read when
//! a session first lists tools and again every [`REFRESH`] while sessions are open, with the tiers said as MCP annotations. Only tools the
//! gateway would forward are listed (both catalogs have them, byte for byte); a change is
//! announced to every open session with `notifications/tools/list_changed`.

use super::state::{McpState, lock};
use crate::api::catalog::{self as ops, Operation, Tier};
use crate::api::model::{Capabilities, ToolCapability};
use crate::gateway::model::error::{GateError, Kind};
use crate::secret::Secret;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the catalog is read again. A service changes its tools with a deployment; a minute
/// is soon enough for an agent to hear of it and cheap for the service.
pub const REFRESH: Duration = Duration::from_secs(60);

/// The argument a mutate tool's second call carries upstream; the gateway makes that call itself.
const CONFIRM_TOKEN: &str = "confirmToken";

fn tier_of(t: &ToolCapability, mutate: bool) -> Tier {
    if mutate {
        Tier::Mutate
    } else if t.tier.eq_ignore_ascii_case("observe") {
        Tier::Observe
    } else {
        Tier::Experiment
    }
}

/// Text for an agent: the service's description without its confirm-token instructions (the
/// gateway does that exchange), plus what the call does through the gateway.
fn description(t: &ToolCapability, op: &Operation, tier: Tier) -> String {
    let own: Vec<&str> = t
        .description
        .split(". ")
        .filter(|s| !s.contains(CONFIRM_TOKEN) && !s.trim().is_empty())
        .collect();
    let mut out = own.join(". ");
    let note = match (op.name, tier) {
        ("confirm_trade", _) => {
            " Through agentdesk: waits for the human supervisor's decision on a proposal staged \
             through this gateway (with progress), then returns the execution, the rejection \
             reason, or that it expired. When one call cannot wait long enough it says so: call \
             it again with the same proposalId."
        }
        (_, Tier::Mutate) => {
            " Through agentdesk: nothing executes now. The call stages the action for a human \
             supervisor's approval and returns a proposalId and when it expires; then call \
             service_confirm_trade with that proposalId to wait for the decision. Never send \
             confirmToken."
        }
        _ => "",
    };
    out.push_str(note);
    out
}

/// The service's schema as MCP's `inputSchema` (an object schema), without `confirmToken`.
fn input_schema(schema: &Value) -> JsonObject {
    // A schema that is no object (or none) is an object that takes anything: `type` is added below.
    let mut obj = match schema {
        Value::Object(o) => o.clone(),
        _ => JsonObject::new(),
    };
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        props.remove(CONFIRM_TOKEN);
    }
    if let Some(Value::Array(req)) = obj.get_mut("required") {
        req.retain(|r| r != CONFIRM_TOKEN);
    }
    obj.entry("type")
        .or_insert_with(|| Value::String("object".into()));
    obj
}

/// The MCP tools of a capability answer: those the gateway forwards, with annotations by tier.
pub fn mcp_tools(caps: &Capabilities) -> Vec<Tool> {
    let mut seen = std::collections::HashSet::new();
    caps.tools
        .iter()
        .filter_map(|t| {
            let op = ops::tool_op(&t.name)?;
            seen.insert(t.name.clone()).then_some(())?;
            // Destructive when either catalog says it changes the account.
            let changes = t.tier.eq_ignore_ascii_case("mutate")
                || t.requires_confirmation
                || op.tier == crate::api::catalog::Tier::Mutate;
            Some(mcp_tool(t, op, changes))
        })
        .collect()
}

pub fn mcp_tool(t: &ToolCapability, op: &Operation, mutate: bool) -> Tool {
    let tier = tier_of(t, mutate || op.tier == Tier::Mutate);
    let annotations = match tier {
        Tier::Observe => ToolAnnotations::new().read_only(true).destructive(false),
        Tier::Experiment => ToolAnnotations::new().read_only(false).destructive(false),
        Tier::Mutate => ToolAnnotations::new().read_only(false).destructive(true),
    }
    .open_world(true);
    let mut tool = Tool::new(
        t.name.clone(),
        description(t, op, tier),
        input_schema(&t.input_schema),
    );
    tool.annotations = Some(annotations);
    tool
}

async fn fetch(state: &McpState, key: Option<&Secret>) -> Result<Vec<Tool>, GateError> {
    let answer = state
        .gate
        .upstream
        .get_json_as(ops::op("list_mcp_capabilities"), key)
        .await?;
    let unusable = |why: String| {
        GateError::new(
            Kind::Upstream,
            "tool_catalog_unavailable",
            format!("the service's tool catalog (GET /api/delegated/mcp/capabilities) {why}"),
        )
    };
    if !answer.is_success() {
        return Err(unusable(format!(
            "answered HTTP {}",
            answer.status.as_u16()
        )));
    }
    let caps: Capabilities = serde_json::from_slice(&answer.body)
        .map_err(|e| unusable(format!("does not read as a catalog ({e})")))?;
    Ok(mcp_tools(&caps))
}

impl McpState {
    /// The tools, from the last read while fresh, else read now with this key.
    pub async fn tools(&self, key: &Secret) -> Result<Vec<Tool>, GateError> {
        if let Some((at, tools)) = &*lock(&self.catalog.tools)
            && at.elapsed() < REFRESH
        {
            return Ok(tools.clone());
        }
        self.refresh(Some(key)).await
    }

    /// Reads the catalog and, when it changed, tells every open session.
    async fn refresh(&self, key: Option<&Secret>) -> Result<Vec<Tool>, GateError> {
        let tools = fetch(self, key).await?;
        let changed = {
            let mut known = lock(&self.catalog.tools);
            let changed = known.as_ref().is_some_and(|(_, old)| *old != tools);
            *known = Some((Instant::now(), tools.clone()));
            changed
        };
        if changed {
            let peers: Vec<_> = {
                let mut peers = lock(&self.catalog.peers);
                peers.retain(|p| !p.is_transport_closed());
                peers.clone()
            };
            tracing::info!(sessions = peers.len(), "the service's tool catalog changed");
            for peer in peers {
                let _ = peer.notify_tool_list_changed().await;
            }
        }
        Ok(tools)
    }
}

/// While MCP sessions are open, reads the catalog every [`REFRESH`] so they hear of a change,
/// with the gateway's own key or, lacking one, a key an agent connected with (the interface asks
/// a key for every operation). A session's first `tools/list` reads it at once; a gateway no one
/// reaches over MCP never asks.
pub fn spawn_refresh(state: Arc<McpState>) {
    let stop = state.gate.connections.stop.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(REFRESH) => {}
            }
            let listening = {
                let mut peers = lock(&state.catalog.peers);
                peers.retain(|p| !p.is_transport_closed());
                !peers.is_empty()
            };
            if !listening {
                continue;
            }
            let key = state.gate.upstream.key.clone().or_else(|| {
                state
                    .gate
                    .lock_keys()
                    .values()
                    .next()
                    .map(|(k, _)| k.clone())
            });
            if let Err(e) = state.refresh(key.as_ref()).await {
                tracing::debug!("MCP tool catalog not read: {}", e.message);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tiers_become_annotations_and_the_confirm_token_leaves_the_schema() {
        let caps: Capabilities = serde_json::from_value(json!({"tools": [
            {"name": "service_get_positions", "tier": "observe", "description": "Open positions",
             "inputSchema": {"type": "object", "properties": {}}},
            {"name": "service_run_backtest", "tier": "experiment", "inputSchema": {}},
            {"name": "service_place_order", "tier": "mutate", "requiresConfirmation": true,
             "description": "Place a trade. Mutate tool: the first call answers a confirmToken",
             "inputSchema": {"type": "object", "properties": {"a": {"type": "string"},
                             "confirmToken": {"type": "string"}}, "required": ["a", "confirmToken"]}},
            {"name": "service_not_ours", "tier": "observe"},
            {"name": " service_get_usage", "tier": "observe"},
        ]}))
        .unwrap();
        let tools = mcp_tools(&caps);
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "service_get_positions",
                "service_run_backtest",
                "service_place_order"
            ]
        );
        let a = |i: usize| tools[i].annotations.clone().unwrap();
        assert_eq!(a(0).read_only_hint, Some(true));
        assert_eq!(a(1).read_only_hint, Some(false));
        assert_eq!(a(2).destructive_hint, Some(true));
        let schema = &tools[2].input_schema;
        assert!(schema["properties"].get("confirmToken").is_none());
        assert_eq!(schema["required"], json!(["a"]));
        let text = tools[2].description.as_deref().unwrap();
        assert!(!text.contains("first call answers"), "{text}");
        assert!(text.contains("human supervisor's approval"), "{text}");
        assert_eq!(tools[1].input_schema["type"], json!("object"));
    }
}
