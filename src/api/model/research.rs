//! Research runs, their agents, messages and artifacts.

use super::{Extra, lenient, num};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResearchAgent {
    #[serde(default)]
    pub agent_id: String,
    #[serde(default)]
    pub name: String,
    /// `lead` or `worker`.
    #[serde(default)]
    pub role: String,
    /// The lead's id for workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// `planning`, `running`, `done`, `failed`, `stopped`.
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub task: String,
    #[serde(default, deserialize_with = "num::int")]
    pub progress: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResearchMessage {
    #[serde(default, deserialize_with = "num::time")]
    pub time: DateTime<Utc>,
    /// `user`, `lead` or an agent id.
    #[serde(default)]
    pub author: String,
    #[serde(default)]
    pub text: String,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResearchArtifact {
    #[serde(default)]
    pub name: String,
    /// `markdown` or `json`.
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResearchRun {
    #[serde(default)]
    pub run_id: String,
    #[serde(default)]
    pub task: String,
    /// `active`, `completed`, `stopped` or `failed`.
    #[serde(default)]
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<DateTime<Utc>>,
    /// How the lead planned: `deterministic` or `llm`.
    #[serde(default)]
    pub planner: String,
    #[serde(default, deserialize_with = "lenient::rows")]
    pub agents: Vec<ResearchAgent>,
    #[serde(default, deserialize_with = "lenient::rows")]
    pub transcript: Vec<ResearchMessage>,
    #[serde(default, deserialize_with = "lenient::rows")]
    pub artifacts: Vec<ResearchArtifact>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `research_status`: the account's active (or latest) run, if any.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResearchStatus {
    #[serde(default, deserialize_with = "lenient::opt_row")]
    pub run: Option<ResearchRun>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Body of `research_start`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ResearchStartRequest {
    /// What the research run should find out, e.g. "find the best trend strategy for ETH on 1h".
    pub task: String,
}

/// Body of `research_message`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ResearchMessageRequest {
    /// A message to the run's lead agent.
    pub message: String,
}

super::account::lenient_rows!(
    ResearchAgent,
    ResearchMessage,
    ResearchArtifact,
    ResearchRun
);
