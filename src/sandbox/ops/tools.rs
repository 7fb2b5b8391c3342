//! Tool access: `list_mcp_capabilities` (see [`super::capabilities`]) and `execute_mcp_tool` (see
//! [`super::mcp`]).

use super::capabilities;
use super::mcp::{self, Mode};
use super::{AppError, Call, ErrorKind, Reply};
use crate::sandbox::core::{Shared, View};
use crate::sandbox::settings::Settings;

use crate::api::model::ExecuteToolRequest;
use std::sync::Arc;

/// 404 `mcp_disabled` when the deployment does not offer delegated MCP (`mcp_enabled = false`).
pub fn check_enabled(settings: &Settings) -> Result<(), AppError> {
    if settings.mcp_enabled {
        return Ok(());
    }
    Err(AppError::new(
        ErrorKind::NotFound,
        "mcp_disabled",
        "delegated MCP tool access (capabilities, tool execution, agent chat) is disabled on this \
         deployment (sandbox setting mcp_enabled = false); every operation is still available over \
         plain HTTP: GET /api/delegated/tools lists them",
    ))
}

pub fn list_mcp_capabilities(core: &View, _call: &Call) -> Result<Reply, AppError> {
    check_enabled(core.settings)?;
    Reply::ok(capabilities::capabilities())
}

pub async fn execute_mcp_tool(shared: Arc<Shared>, call: Call) -> Result<Reply, AppError> {
    check_enabled(&shared.settings)?;
    let req: ExecuteToolRequest = call.json()?;
    let result = mcp::execute_with(
        &shared,
        &call.caller,
        req.name.trim(),
        req.args,
        call.now,
        &call.headers,
        Mode::Run,
    )
    .await?;
    Reply::ok(result)
}
