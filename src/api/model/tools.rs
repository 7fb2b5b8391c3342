//! Tool access and chat.

use super::{ErrorDetail, Extra, lenient};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

/// One tool of `list_mcp_capabilities`: a catalog operation as `service_<operation>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCapability {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub operation: String,
    #[serde(default)]
    pub description: String,
    /// `observe`, `experiment` or `mutate`.
    #[serde(default)]
    pub tier: String,
    #[serde(default)]
    pub method: String,
    #[serde(default)]
    pub path: String,
    /// JSON Schema (draft 2020-12) of `args`.
    #[serde(default)]
    pub input_schema: Value,
    /// Mutate tools answer with a `confirmToken` first.
    #[serde(default)]
    pub requires_confirmation: bool,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Capabilities {
    #[serde(default, deserialize_with = "lenient::rows")]
    pub tools: Vec<ToolCapability>,
    /// Tool names by tier: `{"observe": [...], "experiment": [...], "mutate": [...]}`.
    #[serde(default)]
    pub tiers: Map<String, Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// What `execute_mcp_tool` answers: `{ "result": { ... } }`. For a mutate tool's first call the
/// result carries `confirmToken`, `expiresAt` and a `preview`; re-submitting with
/// `args.confirmToken` runs it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    #[serde(default)]
    pub tool: String,
    #[serde(default)]
    pub result: Value,
    #[serde(default)]
    pub requires_confirmation: bool,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A tool call the chat loop made, and what it returned.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub args: Value,
    #[serde(default)]
    pub result: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorDetail>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatReply {
    /// The assistant's final message.
    #[serde(default)]
    pub reply: String,
    #[serde(default, deserialize_with = "lenient::rows")]
    pub tool_calls: Vec<ToolCall>,
    /// Confirm tokens of mutate tools the loop prepared but did not run.
    #[serde(default)]
    pub confirm_tokens: Vec<Value>,
    /// `llm` (the account's provider) or `router` (the deterministic intent router).
    #[serde(default)]
    pub mode: String,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CliReply {
    #[serde(default)]
    pub output: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Body of `execute_mcp_tool`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExecuteToolRequest {
    /// A tool of list_mcp_capabilities, e.g. `service_get_positions`.
    pub name: String,
    /// The tool's arguments (its input schema); mutate tools take `confirmToken` on the second call.
    #[serde(default)]
    pub args: Value,
}

/// Body of `mcp_agent_chat`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChatRequest {
    /// The conversation so far, oldest first; the last user message is answered.
    pub messages: Vec<ChatMessage>,
}

/// Body of `mcp_cli`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CliRequest {
    /// A slash command: `/research start <task>`, `/research`, `/research say <message>`,
    /// `/research stop`, `/help`.
    pub command: String,
}

super::account::lenient_rows!(ToolCapability, ToolResult, ToolCall);
