//! What stops an agent's trade whatever the rules say: the kill switch, for every agent, and a
//! suspension, for one. Apart from the guard so that the policy's own checks may suspend an
//! agent (`suspend`) without the two importing each other.

use super::guard;
use super::suspend;
use crate::gateway::gate::Gate;
use crate::gateway::model::error::GateError;
use crate::gateway::model::trade::Trade;

/// The refusal, when the kill switch or the agent's suspension stops this trade; the kill switch
/// is named first. Both are read at once (each a round trip on a shared store). A trade the
/// gateway cannot tell (`None`) passes the kill switch, as it always has, and not a suspension.
pub async fn halted(
    gate: &Gate,
    agent: &str,
    trade: Option<&Trade>,
) -> Result<Option<GateError>, GateError> {
    let killed = async {
        match trade {
            Some(t) if !t.reduces => guard::killed(gate).await,
            _ => Ok(None),
        }
    };
    let (killed, suspended) = tokio::try_join!(killed, suspend::refusal(gate, agent, trade))?;
    Ok(killed
        .map(|reason| guard::kill_switch_error(&reason))
        .or(suspended))
}
