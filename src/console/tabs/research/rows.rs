//! A research run's lead and agents (in their tree's order) and its artifacts as tables.

use crate::api::model::{ResearchAgent, ResearchArtifact};
use crate::console::table::{Field, Key, Rows, amount, field};
use crate::console::widgets::{Col, col, fill_col, num_col};

pub const AGENT_COLS: &[Col] = &[
    col("Agent", 22, 0),
    col("Status", 9, 0),
    num_col("Progress", 13, 1),
    fill_col("Task / summary", 12, 2),
];

const AGENT_FIELDS: &[Field] = &[
    field("agent", "Agent"),
    field("status", "Status"),
    amount("progress", "Progress"),
    field("task", "Task / summary"),
    field("role", ""),
];

/// The run's agents, listed in `tree` order: (index into `agents`, depth, last of its parent).
pub struct Agents<'a> {
    pub agents: &'a [ResearchAgent],
    pub tree: Vec<(usize, usize, bool)>,
}

impl Agents<'_> {
    fn agent(&self, row: usize) -> &ResearchAgent {
        &self.agents[self.tree[row].0]
    }
}

/// What the agent's row says it does: its summary once it has one, else its task.
pub fn what(a: &ResearchAgent) -> String {
    let mut what = a.summary.clone().unwrap_or_else(|| a.task.clone());
    for pair in crate::api::model::extra_pairs(&a.extra) {
        what.push_str(&format!(" {pair}"));
    }
    what
}

impl Rows for Agents<'_> {
    fn cols(&self) -> &[Col] {
        AGENT_COLS
    }

    fn fields(&self) -> &'static [Field] {
        AGENT_FIELDS
    }

    fn len(&self) -> usize {
        self.tree.len()
    }

    fn key(&self, row: usize, field: usize) -> Key<'_> {
        let a = self.agent(row);
        match field {
            0 if a.name.is_empty() => Key::Text(a.agent_id.as_str().into()),
            0 => Key::Text(a.name.as_str().into()),
            1 => Key::Text(a.status.as_str().into()),
            2 => Key::Num(f64::from(a.progress)),
            3 => Key::text(what(a)),
            _ => Key::Text(a.role.as_str().into()),
        }
    }

    fn id(&self, row: usize) -> Option<String> {
        Some(self.agent(row).agent_id.clone())
    }
}

pub const ARTIFACT_COLS: &[Col] = &[
    fill_col("Name", 16, 0),
    col("Kind", 8, 1),
    col("Created", 8, 2),
];

const ARTIFACT_FIELDS: &[Field] = &[
    field("name", "Name"),
    field("kind", "Kind"),
    amount("created", "Created"),
];

pub struct Artifacts<'a>(pub &'a [ResearchArtifact]);

impl Rows for Artifacts<'_> {
    fn cols(&self) -> &[Col] {
        ARTIFACT_COLS
    }

    fn fields(&self) -> &'static [Field] {
        ARTIFACT_FIELDS
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn key(&self, row: usize, field: usize) -> Key<'_> {
        let a = &self.0[row];
        match field {
            0 => Key::Text(a.name.as_str().into()),
            1 => Key::Text(a.kind.as_str().into()),
            _ => a
                .created_at
                .map_or(Key::None, |t| Key::Num(t.timestamp_millis() as f64)),
        }
    }

    fn id(&self, row: usize) -> Option<String> {
        Some(self.0[row].name.clone())
    }
}
