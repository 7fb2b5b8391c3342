//! `mcp_agent_chat`: one chat turn (see [`super::chat_agent`]).

use super::chat_agent;
use super::tools::check_enabled;
use super::{AppError, Call, Reply};
use crate::api::model::ChatRequest;
use crate::sandbox::core::Shared;
use crate::sandbox::quota;
use std::sync::Arc;

/// Messages per turn at most.
const MAX_MESSAGES: usize = 100;

pub async fn mcp_agent_chat(shared: Arc<Shared>, call: Call) -> Result<Reply, AppError> {
    check_enabled(&shared.settings)?;
    let req: ChatRequest = call.json()?;
    if req.messages.is_empty() || req.messages.len() > MAX_MESSAGES {
        return Err(AppError::invalid(
            "messages",
            format!(
                "messages must hold 1 to {MAX_MESSAGES} messages, e.g. [{{\"role\": \"user\", \"content\": \"show my positions\"}}]"
            ),
        ));
    }
    for (i, m) in req.messages.iter().enumerate() {
        if !["user", "assistant", "system"].contains(&m.role.as_str()) {
            return Err(AppError::invalid(
                format!("messages[{i}].role"),
                format!(
                    "messages[{i}].role must be user, assistant or system, got {:?}",
                    m.role
                ),
            ));
        }
    }
    if !req.messages.iter().any(|m| m.role == "user") {
        return Err(AppError::invalid(
            "messages",
            "messages must contain at least one message with role user",
        ));
    }
    // One unit of compute per accepted turn, whatever its tools do (a backtest a tool queues is
    // charged by run_backtest itself).
    let caller = call.caller.clone();
    shared
        .run_raw(move |core, now| quota::charge_compute(core, &caller, now))
        .await
        .map_err(AppError::internal)??;
    let reply = chat_agent::turn(&shared, &call.caller, req.messages, &call.headers).await?;
    Reply::ok(reply)
}
