//! The Tools tab: the service's tool catalog by tier, the argument editor (a modal) checked against
//! each tool's JSON schema, and the last call's result as a foldable tree. A mutate tool's confirm
//! token goes to the approval inbox.

pub mod rows;
pub mod update;
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
pub struct ToolsTab {
    /// Sorted by tier (observe, experiment, mutate), then name.
    tools: Vec<ToolCapability>,
    /// The catalog is asked for when the tab is first shown, and on `r` there; never on an
    /// interval.
    catalog: Poll,
    error: Option<String>,
    /// Tool executions sent and not answered.
    running: usize,
    outcome: Option<ToolOutcome>,
    /// `/tool` typed before the catalog arrived.
    pending: Option<update::Pending>,
}

impl ToolsTab {
    /// Sorted by tier (observe, experiment, mutate), then name.
    pub fn tools(&self) -> &[ToolCapability] {
        &self.tools
    }

    /// What the result panel shows.
    pub fn outcome(&self) -> Option<&ToolOutcome> {
        self.outcome.as_ref()
    }

    /// The input schema of the tool named `name` (Null when the catalog does not list it).
    pub fn schema_of(&self, name: &str) -> Value {
        self.find(name)
            .map(|i| self.tools[i].input_schema.clone())
            .unwrap_or(Value::Null)
    }

    /// Rows of the Result pane: the folded tree's visible rows.
    pub fn result_rows(&self) -> usize {
        self.outcome
            .as_ref()
            .and_then(|o| o.result.as_ref().ok())
            .map_or(0, |t| t.rows().len())
    }

    /// A call went out that the tab did not send (an approved confirm token, from the inbox).
    pub fn sent_one(&mut self) {
        self.running += 1;
    }

    /// A call answered.
    pub fn answered_one(&mut self) {
        self.running = self.running.saturating_sub(1);
    }

    /// An inbox item was renamed (a gateway took it over): the result panel follows it.
    pub fn renamed(&mut self, old: &str, id: &str) {
        if let Some(o) = self.outcome.as_mut()
            && o.awaiting.as_deref() == Some(old)
        {
            o.awaiting = Some(id.to_string());
        }
    }

    fn set_tools(&mut self, mut tools: Vec<ToolCapability>) {
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
