//! Research runs, their agents, messages and artifacts.

use super::{Extra, num};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResearchAgent {
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
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResearchMessage {
    pub time: DateTime<Utc>,
    /// `user`, `lead` or an agent id.
    pub author: String,
    pub text: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResearchArtifact {
    pub name: String,
    /// `markdown` or `json`.
    pub kind: String,
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResearchRun {
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
    #[serde(default)]
    pub agents: Vec<ResearchAgent>,
    #[serde(default)]
    pub transcript: Vec<ResearchMessage>,
    #[serde(default)]
    pub artifacts: Vec<ResearchArtifact>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `research_status`: the account's active (or latest) run, if any.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResearchStatus {
    #[serde(default)]
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
