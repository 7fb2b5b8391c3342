//! What stops an agent's trade whatever the rules say: the kill switch, for every agent, and a
//! suspension, for one. Apart from the guard so that the policy's own checks may suspend an
//! agent (`suspend`) without the two importing each other.

use super::suspend;
use crate::api::model::GateKillSwitch;
use crate::gateway::gate::Gate;
use crate::gateway::model::error::{GateError, Kind};
use crate::gateway::model::trade::Trade;
use crate::gateway::store::{Record, detail};

const KILL_SWITCH: &str = "kill_switch";

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
            Some(t) if !t.reduces => killed(gate).await,
            _ => Ok(None),
        }
    };
    let (killed, suspended) = tokio::try_join!(killed, suspend::refusal(gate, agent, trade))?;
    Ok(killed
        .map(|reason| kill_switch_error(&reason))
        .or(suspended))
}

/// The kill switch's state. A stored state that does not read as one counts as on: the switch
/// fails closed.
pub async fn kill_switch(gate: &Gate) -> Result<GateKillSwitch, GateError> {
    let stored = gate
        .store
        .state(KILL_SWITCH)
        .await
        .map_err(GateError::store)?;
    Ok(match stored {
        None => GateKillSwitch::default(),
        Some(v) => serde_json::from_value(v.clone()).unwrap_or_else(|e| GateKillSwitch {
            on: true,
            reason: Some(format!("the stored kill switch does not read ({e}): {v}")),
            ..Default::default()
        }),
    })
}

/// The reason, while the kill switch is on.
pub async fn killed(gate: &Gate) -> Result<Option<String>, GateError> {
    let ks = kill_switch(gate).await?;
    Ok(ks.on.then(|| ks.reason.unwrap_or_default()))
}

pub async fn set_kill_switch(
    gate: &Gate,
    on: bool,
    reason: &str,
    by: &str,
) -> Result<GateKillSwitch, GateError> {
    let now = gate.now();
    let ks = GateKillSwitch {
        on,
        reason: Some(reason.to_string()),
        by: Some(by.to_string()),
        at: Some(now),
    };
    let value = serde_json::to_value(&ks)
        .map_err(|e| GateError::new(Kind::Internal, "internal", format!("kill switch: {e}")))?;
    let kind = if on {
        "kill_switch_on"
    } else {
        "kill_switch_off"
    };
    let record = Record::new(kind, by, now, detail::Reason { reason });
    gate.store
        .set_state(KILL_SWITCH, value, record)
        .await
        .map_err(GateError::store)?;
    tracing::warn!(on, by, reason, "kill switch");
    Ok(ks)
}

pub fn kill_switch_error(reason: &str) -> GateError {
    GateError::new(
        Kind::Forbidden,
        "kill_switch",
        format!(
            "the supervisor's kill switch is on ({reason}): nothing that adds exposure passes; \
             closes, cancels and reduce-only orders still do"
        ),
    )
}
