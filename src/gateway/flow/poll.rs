//! Several instances on one shared store (PostgreSQL): what each does besides serving requests.

use super::execute;
use crate::gateway::gate::Gate;
use crate::gateway::model::error::GateError;
use crate::gateway::rules::policy::GateSettings;
use crate::gateway::store;
use crate::gateway::store::Hold;
use std::sync::Arc;

/// How often an instance on a shared store looks for approvals made on other instances (it runs
/// those of agents whose key it holds) and for executions a dead instance left claimed.
const POLL: std::time::Duration = std::time::Duration::from_millis(500);

/// How long a claim may last before its instance is presumed dead: an execution ends, or gives
/// up waiting, within the upstream timeout plus the margin [`super::execute::execute`] allows.
pub fn stale_after(settings: &GateSettings) -> chrono::Duration {
    chrono::Duration::from_std(settings.timeout()).unwrap_or_default()
        + chrono::Duration::seconds(10)
}

/// On a shared store: approvals made on another instance for an agent whose key this one holds
/// run here (the approving instance could not: it has no key), and executions a killed instance
/// left claimed go back to approved. Polling, not LISTEN/NOTIFY, so it needs no connection of its
/// own and misses nothing while the database restarts.
pub async fn poll(gate: Arc<Gate>) {
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Err(e) = poll_once(&gate).await {
            tracing::warn!("polling the shared store: {}", e.message);
        }
    }
}

async fn poll_once(gate: &Arc<Gate>) -> Result<(), GateError> {
    let stale = gate.now() - stale_after(&gate.settings);
    let recovered = gate
        .store
        .recover_executing(Hold::Recovered, Some(stale))
        .await
        .map_err(GateError::store)?;
    if recovered > 0 {
        super::reconcile::settle_recovered(gate).await?;
    }
    if gate.lock_keys().is_empty() {
        return Ok(());
    }
    let approved = gate
        .store
        .items(Some(store::Status::Approved), 1000)
        .await
        .map_err(GateError::store)?;
    // Only items the approving instance left for want of the key: those it holds it is running
    // itself, and those that failed upstream run on the agent's next request, as on a single
    // instance, rather than being retried every poll.
    for item in approved
        .iter()
        .filter(|i| i.note == Some(Hold::WaitingForKey) && gate.key_of(&i.agent).is_some())
    {
        if let Err(e) = execute::execute(gate, &item.id).await {
            tracing::warn!(item = %item.id, "approved item did not run: {}", e.message);
        }
    }
    Ok(())
}
