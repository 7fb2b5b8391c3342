//! Agents suspended one at a time: the kill switch's stop for a single agent, made by a
//! supervisor (or by a policy rule) and ended only by an admin. Kept in the store and read there
//! on every decision, so every instance sharing the store refuses from the suspension's commit on,
//! and a restart changes nothing.
//!
//! What stops: whatever the gateway cannot tell reduces the agent's exposure. Its closes and
//! cancels pass, as under the kill switch, so a supervisor who suspends an agent mid-trade can
//! still have it unwind.

use crate::api::model::{GateAgent, GateAgentState, GateSuspension};
use crate::gateway::gate::Gate;
use crate::gateway::model::error::{GateError, Kind};
use crate::gateway::model::trade::Trade;
use crate::gateway::rules::policy::day_start;
use crate::gateway::store::{Agent, Executed, Record, Status, Suspension, detail};
use std::collections::HashMap;

/// Most pending items counted per agent: as many as the inbox lists.
const PENDING_LIMIT: usize = 500;

/// The agents `label` names, as the gateway names agents: the name given with `agentdesk gate
/// agent name` (every key given it), else the key's fingerprint; case-insensitive. 404 naming the
/// label when it names none.
pub async fn resolve(gate: &Gate, label: &str) -> Result<Vec<Agent>, GateError> {
    let label = label.trim();
    let all = gate.store.agents().await.map_err(GateError::store)?;
    let named: Vec<Agent> = all
        .iter()
        .filter(|a| {
            a.name
                .as_deref()
                .is_some_and(|n| n.eq_ignore_ascii_case(label))
        })
        .cloned()
        .collect();
    let found = if named.is_empty() {
        all.into_iter()
            .filter(|a| !label.is_empty() && a.fingerprint.eq_ignore_ascii_case(label))
            .collect()
    } else {
        named
    };
    if found.is_empty() {
        return Err(GateError::new(
            Kind::NotFound,
            "unknown_agent",
            format!(
                "no agent {label:?} has been seen by this gateway; name an agent by its name or its \
                 key fingerprint, as GET /gate/v1/agents lists them"
            ),
        ));
    }
    Ok(found)
}

/// The suspension in force for this agent (by key hash), read from the store each time.
pub async fn suspension(gate: &Gate, agent: &str) -> Result<Option<Suspension>, GateError> {
    Ok(gate
        .store
        .suspensions(Some(agent))
        .await
        .map_err(GateError::store)?
        .into_iter()
        .next())
}

/// The refusal of a suspended agent's request: `None` when the agent is not suspended, or when
/// the trade reduces its exposure. A request the gateway cannot read as a trade (`None`) is not
/// known to reduce, so it is refused too.
pub async fn refusal(
    gate: &Gate,
    agent: &str,
    trade: Option<&Trade>,
) -> Result<Option<GateError>, GateError> {
    if trade.is_some_and(|t| t.reduces) {
        return Ok(None);
    }
    let Some(s) = suspension(gate, agent).await? else {
        return Ok(None);
    };
    let label = gate
        .store
        .agents()
        .await
        .map_err(GateError::store)?
        .into_iter()
        .find(|a| a.key_hash == agent)
        .map_or_else(
            || agent[..8.min(agent.len())].to_string(),
            |a| a.label().to_string(),
        );
    Ok(Some(suspended_error(&label, &s)))
}

pub fn suspended_error(label: &str, s: &Suspension) -> GateError {
    GateError::new(
        Kind::Forbidden,
        "agent_suspended",
        format!(
            "agent {label} is suspended by {} since {} ({}): nothing of its that adds exposure \
             passes or is approved until an admin resumes it; its closes and cancels still do",
            s.by,
            s.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            s.reason
        ),
    )
}

/// Suspends the agent with this key unless it is suspended already (the first suspension's
/// reason stands), journaled as `agent_suspend`. True when this call suspended it. For the
/// policy, `by` is `policy` and the reason names the rule.
pub async fn suspend_agent(
    gate: &Gate,
    agent: &Agent,
    reason: &str,
    by: &str,
) -> Result<bool, GateError> {
    let now = gate.now();
    let record = Record::new(
        "agent_suspend",
        by,
        now,
        detail::Suspension {
            agent: agent.label(),
            fingerprint: &agent.fingerprint,
            reason: Some(reason),
        },
    );
    let s = Suspension {
        agent: agent.key_hash.clone(),
        reason: reason.to_string(),
        by: by.to_string(),
        at: now,
    };
    let done = gate
        .store
        .suspend(s, record)
        .await
        .map_err(GateError::store)?;
    if done {
        tracing::warn!(agent = agent.label(), by, reason, "agent suspended");
    }
    Ok(done)
}

/// Suspends the agent with this key (hash), as a rule that counts by key does: true when this
/// call suspended it. A key the gateway has not recorded yet is suspended all the same, by its
/// fingerprint.
pub async fn suspend_key(
    gate: &Gate,
    key_hash: &str,
    reason: &str,
    by: &str,
) -> Result<bool, GateError> {
    let agents = gate.store.agents().await.map_err(GateError::store)?;
    let agent = agents
        .into_iter()
        .find(|a| a.key_hash == key_hash)
        .unwrap_or_else(|| Agent {
            key_hash: key_hash.to_string(),
            fingerprint: key_hash.chars().take(8).collect(),
            name: None,
            account: None,
            first_seen: gate.now(),
            last_seen: gate.now(),
        });
    suspend_agent(gate, &agent, reason, by).await
}

/// Suspends every agent `label` names ([`resolve`]). True when any was not suspended before.
pub async fn suspend(
    gate: &Gate,
    label: &str,
    reason: &str,
    by: &str,
) -> Result<(bool, Vec<Agent>), GateError> {
    let agents = resolve(gate, label).await?;
    let mut changed = false;
    for a in &agents {
        changed |= suspend_agent(gate, a, reason, by).await?;
    }
    Ok((changed, agents))
}

/// Ends the suspension of every agent `label` names, journaled as `agent_resume`. True when any
/// was suspended.
pub async fn resume(gate: &Gate, label: &str, by: &str) -> Result<(bool, Vec<Agent>), GateError> {
    let agents = resolve(gate, label).await?;
    let mut changed = false;
    for a in &agents {
        let record = Record::new(
            "agent_resume",
            by,
            gate.now(),
            detail::Suspension {
                agent: a.label(),
                fingerprint: &a.fingerprint,
                reason: None,
            },
        );
        let done = gate
            .store
            .resume(&a.key_hash, record)
            .await
            .map_err(GateError::store)?;
        if done {
            tracing::warn!(agent = a.label(), by, "agent resumed");
        }
        changed |= done;
    }
    Ok((changed, agents))
}

/// The agents as the supervisor API lists them: each with its pending items, how it connects and
/// whether it is suspended.
pub async fn models(gate: &Gate, agents: &[Agent]) -> Result<Vec<GateAgent>, GateError> {
    let pending = gate
        .store
        .items(Some(Status::Pending), PENDING_LIMIT)
        .await
        .map_err(GateError::store)?;
    let suspended: HashMap<String, Suspension> = gate
        .store
        .suspensions(None)
        .await
        .map_err(GateError::store)?
        .into_iter()
        .map(|s| (s.agent.clone(), s))
        .collect();
    let today: HashMap<String, Executed> = gate
        .store
        .executed_by_agent(day_start(gate.now()))
        .await
        .map_err(GateError::store)?
        .into_iter()
        .map(|e| (e.agent.clone(), e))
        .collect();
    Ok(agents
        .iter()
        .map(|a| {
            let via = gate.connections.of(&a.key_hash);
            let client = via.as_ref().and_then(|c| c.client.clone());
            let suspension = suspended.get(&a.key_hash).map(|s| GateSuspension {
                reason: s.reason.clone(),
                by: s.by.clone(),
                at: s.at,
            });
            GateAgent {
                agent: a.label().to_string(),
                fingerprint: a.fingerprint.clone(),
                name: a.name.clone(),
                account: a.account.clone(),
                first_seen: Some(a.first_seen),
                last_seen: Some(gate.last_seen(&a.key_hash).unwrap_or(a.last_seen)),
                connected: gate.key_of(&a.key_hash).is_some(),
                pending: pending.iter().filter(|i| i.agent == a.key_hash).count() as u64,
                transport: via.map(|c| c.transport.as_str().to_string()),
                client_name: client.as_ref().map(|c| c.0.clone()),
                client_version: client.map(|c| c.1),
                state: match suspension {
                    Some(_) => GateAgentState::Suspended,
                    None => GateAgentState::Active,
                },
                suspension,
                executions_today: today.get(&a.key_hash).map_or(0, |e| e.count),
                notional_today: today.get(&a.key_hash).map_or(0.0, |e| e.notional),
            }
        })
        .collect())
}
