//! Which tools the service runs at once and which it holds for a confirmation token, read from the
//! service's own capability catalog (`list_mcp_capabilities`), never assumed from ours.
//!
//! The gateway's staging of a mutate tool relies on the service running nothing on the first call:
//! a deployment that runs a trading tool at once would execute it unjudged. So a tool is let
//! through only when both catalogs have it, byte for byte, and a tool that changes the account
//! (by either catalog) goes through the staging only when the service says it confirms first.
//! Anything else is refused, and so is every tool while the service's catalog cannot be read.

use crate::api::catalog::{Operation, Tier};
use crate::gateway::model::error::{GateError, Kind};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a fetched catalog is used before it is read again. A service changes its tiers with a
/// deployment, not between two calls; reading it on every call would double each tool call.
const FRESH_FOR: Duration = Duration::from_secs(300);
/// After a failed read, how long the next tool call waits before the catalog is asked again (a
/// service whose MCP is off answers every tool call with an error anyway).
const RETRY_AFTER: Duration = Duration::from_secs(5);
/// A catalog older than this is not used while the service cannot be asked again: tiers change
/// with deployments, and a gateway that has not seen the catalog for an hour no longer knows it.
const STALE_AFTER: Duration = Duration::from_secs(3600);

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

/// Whether each tool of a capability answer (read as JSON: an explicit `false` must not read as
/// a missing field) confirms first. A tool's own `requiresConfirmation` decides when the service
/// states it; otherwise the mutate tier (in the tool's `tier` or the `tiers` lists) means it
/// holds for a confirm token, as the interface's mutate tools do. A tool the service says runs at
/// once is one that runs at once, whatever its tier: the gateway then refuses it if it trades.
pub fn confirms_first(caps: &Value) -> HashMap<String, bool> {
    let mut stated: HashMap<String, Option<bool>> = HashMap::new();
    let mut mutate: HashMap<String, bool> = HashMap::new();
    for t in caps["tools"].as_array().into_iter().flatten() {
        let Some(name) = t["name"].as_str() else {
            continue;
        };
        let flag = t
            .get("requiresConfirmation")
            .or_else(|| t.get("requires_confirmation"))
            .map(|v| v.as_bool().unwrap_or(false));
        let entry = stated.entry(name.to_string()).or_default();
        // Two entries that disagree: the one that runs at once wins (fail closed).
        *entry = match (*entry, flag) {
            (Some(a), Some(b)) => Some(a && b),
            (a, b) => a.or(b),
        };
        let tier = t["tier"]
            .as_str()
            .is_some_and(|s| s.eq_ignore_ascii_case("mutate"));
        *mutate.entry(name.to_string()).or_default() |= tier;
    }
    if let Some(tiers) = caps["tiers"].as_object() {
        for (tier, names) in tiers {
            for name in names
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|n| n.as_str())
            {
                stated.entry(name.to_string()).or_default();
                *mutate.entry(name.to_string()).or_default() |= tier.eq_ignore_ascii_case("mutate");
            }
        }
    }
    stated
        .into_iter()
        .map(|(name, flag)| {
            let confirms = flag.unwrap_or_else(|| mutate.get(&name).copied().unwrap_or(false));
            (name, confirms)
        })
        .collect()
}

impl ToolCatalog {
    /// The answer without asking the service: the catalog read less than [`FRESH_FOR`] ago, or,
    /// after a read failed a moment ago, the last catalog read (while not stale) or why there is
    /// none. None: ask the service now.
    pub fn cached(&self) -> Option<Result<HashMap<String, bool>, GateError>> {
        let state = self.lock();
        if let Some((at, tools)) = &state.known
            && at.elapsed() < FRESH_FOR
        {
            return Some(Ok(tools.clone()));
        }
        // Asked a moment ago and failed: not asked again on every call.
        let (at, why) = state.failed.as_ref()?;
        if at.elapsed() >= RETRY_AFTER {
            return None;
        }
        Some(match &state.known {
            Some((known_at, tools)) if known_at.elapsed() < STALE_AFTER => Ok(tools.clone()),
            _ => Err(unavailable(why)),
        })
    }

    /// The service answered with this catalog.
    pub fn learned(&self, tools: HashMap<String, bool>) {
        let mut state = self.lock();
        state.known = Some((Instant::now(), tools));
        state.failed = None;
    }

    /// The service could not be read, for `why`: the last catalog read while it is not stale (tiers
    /// do not change between deployments), else the error every tool call gets.
    pub fn failed(&self, why: String) -> Result<HashMap<String, bool>, GateError> {
        let mut state = self.lock();
        let answer = match &state.known {
            Some((at, tools)) if at.elapsed() < STALE_AFTER => Ok(tools.clone()),
            _ => Err(unavailable(&why)),
        };
        state.failed = Some((Instant::now(), why));
        answer
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

/// How a call of this tool is handled, given the service's catalog (`tools`, by exact name: whether
/// each confirms first) and ours.
pub fn class_of(op: &Operation, tools: &HashMap<String, bool>) -> Result<ToolClass, GateError> {
    let name = op.tool_name();
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
    fn a_tool_confirms_first_only_when_the_service_says_so_or_its_tier_does() {
        let caps = json!({
            "tools": [
                {"name": "service_place_order", "tier": "observe"},
                {"name": "service_cancel_order", "tier": "observe", "requiresConfirmation": true},
                {"name": "service_get_positions", "tier": "observe"},
                // Mutate by tier, but the service says it runs at once: it runs at once.
                {"name": "service_close_position", "tier": "mutate", "requiresConfirmation": false},
                {"name": "service_propose_trade", "tier": "mutate"},
            ],
            "tiers": {"mutate": ["service_get_positions"], "observe": ["service_get_usage"]},
        });
        let tools = confirms_first(&caps);
        assert!(!tools["service_place_order"]);
        assert!(tools["service_cancel_order"]);
        assert!(tools["service_get_positions"]);
        assert!(!tools["service_get_usage"]);
        assert!(!tools["service_close_position"]);
        assert!(tools["service_propose_trade"]);
        assert_eq!(tools.len(), 6);
    }
}
