//! What passes straight through: a request forwarded with the caller's own key, and what an
//! accepted request teaches the gateway (the agent's key, so the items approved for it can run).

use super::execute;
use crate::gateway::gate::{AgentKey, Gate};
use crate::gateway::model::error::GateError;
use crate::gateway::upstream::{Answer, Incoming};
use std::sync::Arc;

/// Forwards with the caller's own credentials; the answer is streamed back.
pub async fn pass_through(gate: &Arc<Gate>, incoming: &Incoming) -> Result<Answer, GateError> {
    let resp = gate
        .upstream
        .send(
            incoming.method.clone(),
            &incoming.path_and_query,
            &incoming.headers,
            incoming.agent.as_ref().map(|a| &a.secret),
            incoming.body.clone(),
        )
        .await?;
    // Only an accepted request proves the key: a refused one must not replace a good key in
    // memory, nor add an agent.
    if let Some(agent) = &incoming.agent
        && resp.status().is_success()
    {
        remember(gate, agent).await;
    }
    Ok(Answer::Streamed(resp))
}

/// Holds the key of an agent whose request the upstream accepted. The first time after a start
/// the agent is recorded (so the supervisor sees who is connected), and items a supervisor
/// approved while the key was unknown run now.
pub async fn remember(gate: &Arc<Gate>, agent: &AgentKey) {
    if !gate.hold_key(agent) {
        return;
    }
    let now = gate.now();
    if let Err(e) = gate
        .store
        .agent_seen(&agent.hash, agent.fingerprint(), now)
        .await
    {
        tracing::warn!(agent = agent.fingerprint(), "cannot record the agent: {e}");
    }
    let gate = gate.clone();
    let hash = agent.hash.clone();
    tokio::spawn(async move {
        if let Err(e) = execute::run_waiting(&gate, &hash).await {
            tracing::warn!(
                agent = &hash[..8],
                "approved items did not run: {}",
                e.message
            );
        }
    });
}
