//! The Tools tab: the service's tool catalog by tier, the argument editor (a modal) checked against
//! each tool's JSON schema, and the last call's result as a foldable tree. A mutate tool's confirm
//! token goes to the approval inbox.

mod update;
pub mod view;

use crate::api::model::ToolCapability;
use crate::console::poll::Poll;
use crate::console::widgets::jsontree::JsonTree;
use chrono::{DateTime, Utc};
use serde_json::Value;

pub use crate::console::forms::schema;
pub use crate::console::forms::tool_editor::ToolEditor;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Observe,
    Experiment,
    Mutate,
    Other,
}

impl Tier {
    pub fn of(name: &str) -> Tier {
        match name {
            "observe" => Tier::Observe,
            "experiment" => Tier::Experiment,
            "mutate" => Tier::Mutate,
            _ => Tier::Other,
        }
    }
}

/// What the result panel shows.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub tool: String,
    pub args: Value,
    pub at: DateTime<Utc>,
    pub result: Result<JsonTree, String>,
    /// Set when the answer was a confirm token, now waiting in the inbox under this id.
    pub awaiting: Option<String>,
}

#[derive(Default)]
pub struct ToolsState {
    /// Sorted by tier (observe, experiment, mutate), then name.
    pub tools: Vec<ToolCapability>,
    /// The catalog is asked for when the tab is first shown, and on `r` there; never on an
    /// interval.
    pub catalog: Poll,
    pub error: Option<String>,
    /// Tool executions sent and not answered.
    pub running: usize,
    pub outcome: Option<ToolOutcome>,
    /// `/tool` typed before the catalog arrived: (name, args text).
    pub pending: Option<(String, Option<String>)>,
}

impl ToolsState {
    pub fn set_tools(&mut self, mut tools: Vec<ToolCapability>) {
        let rank = |t: &ToolCapability| match Tier::of(&t.tier) {
            Tier::Observe => 0,
            Tier::Experiment => 1,
            Tier::Mutate => 2,
            Tier::Other => 3,
        };
        tools.sort_by(|a, b| rank(a).cmp(&rank(b)).then(a.name.cmp(&b.name)));
        self.tools = tools;
    }

    /// The service answered with its catalog.
    pub fn loaded(&self) -> bool {
        self.catalog.updated_at.is_some()
    }

    pub fn find(&self, name: &str) -> Option<usize> {
        let bare = name.strip_prefix("service_").unwrap_or(name);
        self.tools.iter().position(|t| {
            t.name == name || t.name.strip_prefix("service_") == Some(bare) || t.operation == bare
        })
    }
}

/// Parses `expiresAt` as RFC 3339 or epoch milliseconds.
pub fn parse_time(v: &Value) -> Option<DateTime<Utc>> {
    match v {
        Value::String(s) => DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|t| t.with_timezone(&Utc))
            .or_else(|| {
                s.parse::<i64>()
                    .ok()
                    .and_then(DateTime::from_timestamp_millis)
            }),
        Value::Number(n) => n.as_i64().and_then(|ms| {
            if ms < 100_000_000_000 {
                DateTime::from_timestamp(ms, 0)
            } else {
                DateTime::from_timestamp_millis(ms)
            }
        }),
        _ => None,
    }
}
