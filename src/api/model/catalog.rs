//! The tool catalog (`GET /api/delegated/tools`).

use super::Extra;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolEntry {
    pub name: String,
    pub description: String,
    pub method: String,
    pub path: String,
    pub auth: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_params: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub example_body: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCatalog {
    #[serde(default)]
    pub success: bool,
    #[serde(default)]
    pub platform: String,
    #[serde(default)]
    pub tools: Vec<ToolEntry>,
    #[serde(default)]
    pub openapi_url: String,
    #[serde(default)]
    pub onboarding: Value,
    #[serde(flatten)]
    pub extra: Extra,
}
