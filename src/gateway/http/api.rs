//! The supervisor API under `/gate/v1`, for the console and for scripts. Every call carries a
//! supervisor token (`agentdesk gate token`) in `x-api-key`.

use super::super::flow::decide;
use super::super::flow::execute;
use super::super::flow::guard;
use super::super::flow::halt;
use super::super::flow::items::{self, agent_map};
use super::super::flow::link;
use super::super::flow::listing;
use super::super::flow::suspend;
use super::super::gate::Gate;
use super::super::model::error::{GateError, Kind};
use super::super::model::journal::JournalRow;
use super::super::rules::policy;
use super::super::rules::policy::Policy;
use super::super::store::{Record, Role, Standing, Token, detail};
use super::answer::success;
use super::auth::insufficient;
pub use super::auth::{STAGED_BY, staged_by, supervisor, supervisor_as, who};
use super::bodies::{Approve, InboxQuery, JournalQuery, Kill, Params, Reject, Strict};
use super::openapi::{self, Doc, Param, Route};
use crate::api::model::{
    GateAgents, GateAgentsChanged, GateCheck, GateCheckKill, GateDecision, GateInbox, GateInfo,
    GateJournal, GateJournalRecord, GateKillSwitchAnswer, GateLink, GatePolicy, GatePolicyChanged,
    GatePolicyRules, GateRevoked, GateStanding, GateStandingCreated, GateStandingList,
    GateStandingRequest, GateSupervisor, GateSuspendRequest, GateSuspension,
};
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{Method, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, on};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

/// Most items one listing answers.
const LIST_LIMIT: usize = 500;

/// The `{id}` of an item's path.
#[derive(Deserialize, JsonSchema)]
pub struct ItemPath {
    /// The item's id, or a trade item's proposalId.
    pub id: String,
}

/// The `{id}` of a standing approval's path: read as text, so an id that is no number is a 404
/// like any id that names nothing.
#[derive(Deserialize, JsonSchema)]
pub struct StandingPath {
    #[schemars(with = "i64")]
    pub id: String,
}

/// The `{label}` of an agent's path.
#[derive(Deserialize, JsonSchema)]
pub struct AgentPath {
    /// The agent's name (`agentdesk gate agent name`) or its key fingerprint.
    pub label: String,
}

const NO_ITEM: (u16, &str) = (404, "No such item");
const NO_AGENT: (u16, &str) = (404, "No agent has this name or fingerprint");
const DECIDED: (u16, &str) = (409, "The item was already decided otherwise");
const NOT_COUNTED: (u16, &str) = (
    409,
    "The item was already decided otherwise, or this supervisor's approval does not count \
     (already given: already_approved; its own staging of a step-up item: own_staging)",
);

pub const ROUTES: &[Route] = &[
    Route {
        method: Method::GET,
        path: "/gate/v1/inbox",
        serve: |m| on(m, list),
        needs: None,
        doc: Doc {
            id: "gate_inbox",
            summary: "Items agents staged through this gateway (default: pending, newest first)",
            params: Some(Param::Query(openapi::schema::<InboxQuery>)),
            body: None,
            answer: ("The items", openapi::answer::<GateInbox>),
            refusals: &[],
        },
    },
    Route {
        method: Method::POST,
        path: "/gate/v1/inbox/{id}/approve",
        serve: |m| on(m, approve),
        needs: Some((Role::Approver, "approving an item")),
        doc: Doc {
            id: "gate_approve",
            summary: "Approve an item: the gateway executes it upstream with the proposing agent's key, once",
            params: Some(Param::Path(openapi::schema::<ItemPath>)),
            body: Some(openapi::body::<Approve>()),
            answer: (
                "The item after the decision",
                openapi::answer::<GateDecision>,
            ),
            refusals: &[NO_ITEM, NOT_COUNTED],
        },
    },
    Route {
        method: Method::POST,
        path: "/gate/v1/inbox/{id}/reject",
        serve: |m| on(m, reject),
        needs: Some((Role::Approver, "rejecting an item")),
        doc: Doc {
            id: "gate_reject",
            summary: "Reject an item; the agent's confirm then answers 403 rejected_by_supervisor with the reason",
            params: Some(Param::Path(openapi::schema::<ItemPath>)),
            body: Some(openapi::body::<Reject>()),
            answer: (
                "The item after the decision",
                openapi::answer::<GateDecision>,
            ),
            refusals: &[NO_ITEM, DECIDED],
        },
    },
    Route {
        method: Method::GET,
        path: "/gate/v1/inbox/{id}/check",
        serve: |m| on(m, check),
        needs: None,
        doc: Doc {
            id: "gate_check",
            summary: "The verdicts an approval would meet now: live account, policy in force, kill switch",
            params: Some(Param::Path(openapi::schema::<ItemPath>)),
            body: None,
            answer: ("What an approval would meet", openapi::answer::<GateCheck>),
            refusals: &[NO_ITEM, (409, "The item cannot be judged")],
        },
    },
    Route {
        method: Method::POST,
        path: "/gate/v1/inbox/{id}/link",
        serve: |m| on(m, mint_link),
        needs: Some((Role::Admin, "minting an approval link")),
        doc: Doc {
            id: "gate_link",
            summary: "A single-use approval link (/gate/approve/<token>) for a pending item, valid until it expires",
            params: Some(Param::Path(openapi::schema::<ItemPath>)),
            body: None,
            answer: ("The link", openapi::answer::<GateLink>),
            refusals: &[NO_ITEM],
        },
    },
    Route {
        method: Method::GET,
        path: "/gate/v1/agents",
        serve: |m| on(m, agents),
        needs: None,
        doc: Doc {
            id: "gate_agents",
            summary: "Agents seen by this gateway, by label and key fingerprint",
            params: None,
            body: None,
            answer: ("The agents", openapi::answer::<GateAgents>),
            refusals: &[],
        },
    },
    Route {
        method: Method::POST,
        path: "/gate/v1/agents/{label}/suspend",
        serve: |m| on(m, suspend_agent),
        needs: Some((Role::Approver, "suspending an agent")),
        doc: Doc {
            id: "gate_agent_suspend",
            summary: "Suspend an agent: its stagings, immediate trades and pending items that add exposure are refused (403 agent_suspended) until an admin resumes it; its closes and cancels pass",
            params: Some(Param::Path(openapi::schema::<AgentPath>)),
            body: Some(openapi::body::<GateSuspendRequest>()),
            answer: (
                "The agents the label names",
                openapi::answer::<GateAgentsChanged>,
            ),
            refusals: &[NO_AGENT],
        },
    },
    Route {
        method: Method::POST,
        path: "/gate/v1/agents/{label}/resume",
        serve: |m| on(m, resume_agent),
        needs: Some((Role::Admin, "resuming a suspended agent")),
        doc: Doc {
            id: "gate_agent_resume",
            summary: "End an agent's suspension",
            params: Some(Param::Path(openapi::schema::<AgentPath>)),
            body: None,
            answer: (
                "The agents the label names",
                openapi::answer::<GateAgentsChanged>,
            ),
            refusals: &[NO_AGENT],
        },
    },
    Route {
        method: Method::GET,
        path: "/gate/v1/policy",
        serve: |m| on(m, get_policy),
        needs: None,
        doc: Doc {
            id: "gate_policy",
            summary: "The policy in force, every rule's name, and each agent's notional executed this UTC day against its max_daily_notional_usd",
            params: None,
            body: None,
            answer: ("The policy", openapi::answer::<GatePolicy>),
            refusals: &[],
        },
    },
    Route {
        method: Method::PUT,
        path: "/gate/v1/policy",
        serve: |m| on(m, put_policy),
        needs: Some((Role::Admin, "changing the policy")),
        doc: Doc {
            id: "gate_policy_put",
            summary: "Replace the policy; refused whole (400 invalid_policy, field = the wrong key) when any key is wrong",
            params: None,
            body: Some(openapi::body::<Policy>()),
            answer: (
                "The policy now in force",
                openapi::answer::<GatePolicyChanged>,
            ),
            refusals: &[],
        },
    },
    Route {
        method: Method::GET,
        path: "/gate/v1/kill-switch",
        serve: |m| on(m, get_kill_switch),
        needs: None,
        doc: Doc {
            id: "gate_kill_switch",
            summary: "The kill switch: {on, reason, by, at}",
            params: None,
            body: None,
            answer: ("The kill switch", openapi::answer::<GateKillSwitchAnswer>),
            refusals: &[],
        },
    },
    Route {
        method: Method::POST,
        path: "/gate/v1/kill-switch",
        serve: |m| on(m, post_kill_switch),
        needs: Some((Role::Admin, "switching the kill switch")),
        doc: Doc {
            id: "gate_kill_switch_set",
            summary: "Turn the kill switch on (a reason is required) or off; it persists across restarts",
            params: None,
            body: Some(openapi::body::<Kill>()),
            answer: ("The kill switch", openapi::answer::<GateKillSwitchAnswer>),
            refusals: &[],
        },
    },
    Route {
        method: Method::GET,
        path: "/gate/v1/standing-approvals",
        serve: |m| on(m, list_standing),
        needs: None,
        doc: Doc {
            id: "gate_standing_approvals",
            summary: "Live standing approvals, each with remainingSecs and the items it approved",
            params: None,
            body: None,
            answer: (
                "The live standing approvals",
                openapi::answer::<GateStandingList>,
            ),
            refusals: &[],
        },
    },
    Route {
        method: Method::POST,
        path: "/gate/v1/standing-approvals",
        serve: |m| on(m, add_standing),
        needs: Some((Role::Admin, "adding a standing approval")),
        doc: Doc {
            id: "gate_standing_approval_add",
            summary: "Approve fitting stagings automatically for a while",
            params: None,
            body: Some(openapi::body::<GateStandingRequest>()),
            answer: (
                "The standing approval",
                openapi::answer::<GateStandingCreated>,
            ),
            refusals: &[],
        },
    },
    Route {
        method: Method::DELETE,
        path: "/gate/v1/standing-approvals/{id}",
        serve: |m| on(m, revoke_standing),
        needs: Some((Role::Admin, "revoking a standing approval")),
        doc: Doc {
            id: "gate_standing_approval_revoke",
            summary: "End a standing approval now",
            params: Some(Param::Path(openapi::schema::<StandingPath>)),
            body: None,
            answer: (
                "The id of the standing approval ended",
                openapi::answer::<GateRevoked>,
            ),
            refusals: &[(404, "No live standing approval has this id")],
        },
    },
    Route {
        method: Method::GET,
        path: "/gate/v1/journal",
        serve: |m| on(m, get_journal),
        needs: None,
        doc: Doc {
            id: "gate_journal",
            summary: "The hash-chained journal of decisions, oldest first",
            params: Some(Param::Query(openapi::schema::<JournalQuery>)),
            body: None,
            answer: ("The records", openapi::answer::<GateJournal>),
            refusals: &[],
        },
    },
];

pub fn router(gate: Arc<Gate>) -> Router {
    ROUTES
        .iter()
        .fold(Router::new(), |router, r| {
            let filter = MethodFilter::try_from(r.method.clone())
                .unwrap_or_else(|e| panic!("{} {}: {e}", r.method, r.path));
            router.route(r.path, (r.serve)(filter))
        })
        .with_state(gate)
}

/// The supervisor's token of a request, checked against the role its route needs ([`ROUTES`])
/// before anything else of the request is read.
pub struct Supervisor(pub Token);

impl axum::extract::FromRequestParts<Arc<Gate>> for Supervisor {
    type Rejection = GateError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        gate: &Arc<Gate>,
    ) -> Result<Self, GateError> {
        let route = parts
            .extensions
            .get::<axum::extract::MatchedPath>()
            .map(|p| p.as_str())
            .unwrap_or_default();
        let needs = ROUTES
            .iter()
            .find(|r| r.method == parts.method && r.path == route)
            .and_then(|r| r.needs);
        match needs {
            Some((role, what)) => supervisor_as(gate, &parts.headers, role, what).await,
            None => supervisor(gate, &parts.headers).await,
        }
        .map(Supervisor)
    }
}

async fn list(
    State(gate): State<Arc<Gate>>,
    _: Supervisor,
    Params(query): Params<InboxQuery>,
) -> Result<Response, GateError> {
    let status = query.status()?;
    let (since, wait) = query.long_poll()?;
    if let (Some(since), false) = (since, wait.is_zero()) {
        super::super::flow::changes::wait_for_change(&gate, since, wait).await?;
    }
    // Read before the items: a change after this moves it, so the next poll answers at once.
    let version = gate.store.changes().map(|rx| *rx.borrow());
    gate.store
        .expire_due(gate.now())
        .await
        .map_err(GateError::store)?;
    let body = listing::inbox(&gate, status, LIST_LIMIT, version).await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

async fn approve(
    State(gate): State<Arc<Gate>>,
    Supervisor(token): Supervisor,
    Path(ItemPath { id }): Path<ItemPath>,
    Strict(Approve { overrides }): Strict<Approve>,
) -> Result<Response, GateError> {
    // Approving is an approver's; approving past a rule is an admin's.
    if !overrides.is_empty() && token.role < Role::Admin {
        return Err(insufficient(&gate, &token, Role::Admin, "overriding a policy rule").await);
    }
    let label = who(&token);
    let by = decide::Decider {
        label: &label,
        via_link: false,
        named: true,
    };
    let item = decide::approve(&gate, &id, by, &overrides).await?;
    let agents = agent_map(&gate).await?;
    Ok(success(GateDecision {
        item: items::model(&gate, &item, &agents),
    }))
}

/// The verdicts an approval would meet now (live account, policy in force, kill switch), so an
/// approve dialog shows what an override would cover before anyone confirms.
async fn check(
    State(gate): State<Arc<Gate>>,
    Supervisor(token): Supervisor,
    Path(ItemPath { id }): Path<ItemPath>,
) -> Result<Response, GateError> {
    let item = items::find(&gate, &id).await?;
    let trade = guard::item_trade(&gate, &item).await.map_err(|why| {
        GateError::new(
            Kind::Conflict,
            "unclassifiable_item",
            format!("item {} cannot be judged ({why})", item.id),
        )
    })?;
    let (verdicts, approvals_required) = match &trade {
        Some(t) => {
            let judged = guard::check(&gate, &item.agent, t, guard::Phase::Approval).await?;
            (
                judged.verdicts,
                judged.approvals_required.max(item.approvals_required),
            )
        }
        None => (Vec::new(), item.approvals_required),
    };
    let killed = halt::killed(&gate).await?;
    let blocked_by_kill_switch = killed.is_some() && trade.as_ref().is_some_and(|t| !t.reduces);
    // As an approval judges it: a trade that reduces passes a suspension, any other does not.
    let suspension = match trade.as_ref().is_some_and(|t| t.reduces) {
        true => None,
        false => suspend::suspension(&gate, &item.agent).await?,
    };
    Ok(success(GateCheck {
        id: item.id,
        status: item.status,
        verdicts: verdicts.iter().map(policy::Verdict::model).collect(),
        needs_override: verdicts
            .iter()
            .filter(|v| !v.ok)
            .map(|v| v.rule.to_string())
            .collect(),
        kill_switch: GateCheckKill {
            on: killed.is_some(),
            reason: killed,
            blocks: blocked_by_kill_switch,
        },
        approvals: item.approvals,
        approvals_required,
        you: Some(who(&token)),
        suspension: suspension.map(|s| GateSuspension {
            reason: s.reason,
            by: s.by,
            at: s.at,
        }),
    }))
}

async fn reject(
    State(gate): State<Arc<Gate>>,
    Supervisor(token): Supervisor,
    Path(ItemPath { id }): Path<ItemPath>,
    Strict(Reject { reason }): Strict<Reject>,
) -> Result<Response, GateError> {
    let reason = reason.unwrap_or_else(|| "no reason given".into());
    let label = who(&token);
    let by = decide::Decider {
        label: &label,
        via_link: false,
        named: true,
    };
    let item = decide::reject(&gate, &id, by, reason).await?;
    let agents = agent_map(&gate).await?;
    Ok(success(GateDecision {
        item: items::model(&gate, &item, &agents),
    }))
}

async fn agents(
    State(gate): State<Arc<Gate>>,
    Supervisor(token): Supervisor,
) -> Result<Response, GateError> {
    gate.store
        .expire_due(gate.now())
        .await
        .map_err(GateError::store)?;
    let all = gate.store.agents().await.map_err(GateError::store)?;
    Ok(success(GateAgents {
        gateway: Some(GateInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            upstream: gate.upstream.base().to_string(),
        }),
        you: Some(GateSupervisor {
            label: who(&token),
            role: token.role.as_str().to_string(),
        }),
        agents: suspend::models(&gate, &all).await?,
    }))
}

async fn suspend_agent(
    State(gate): State<Arc<Gate>>,
    Supervisor(token): Supervisor,
    Path(AgentPath { label }): Path<AgentPath>,
    Strict(GateSuspendRequest { reason }): Strict<GateSuspendRequest>,
) -> Result<Response, GateError> {
    let (changed, named) = suspend::suspend(&gate, &label, &reason, &who(&token)).await?;
    let agents = suspend::models(&gate, &named).await?;
    Ok(success(GateAgentsChanged { changed, agents }))
}

async fn resume_agent(
    State(gate): State<Arc<Gate>>,
    Supervisor(token): Supervisor,
    Path(AgentPath { label }): Path<AgentPath>,
) -> Result<Response, GateError> {
    let (changed, named) = suspend::resume(&gate, &label, &who(&token)).await?;
    // What was approved before the suspension and held since (waiting for the agent's key)
    // runs now, as it would have without the suspension; in the background, as after an agent's
    // first request.
    for agent in named.iter().filter(|_| changed) {
        let (gate, key_hash) = (gate.clone(), agent.key_hash.clone());
        tokio::spawn(async move {
            if let Err(e) = execute::run_waiting(&gate, &key_hash).await {
                tracing::warn!("held items of a resumed agent did not run: {}", e.message);
            }
        });
    }
    let agents = suspend::models(&gate, &named).await?;
    Ok(success(GateAgentsChanged { changed, agents }))
}

async fn get_policy(State(gate): State<Arc<Gate>>, _: Supervisor) -> Result<Response, GateError> {
    let policy = guard::policy(&gate).await?;
    let today = guard::today(&gate, &policy).await?;
    Ok(success(GatePolicy {
        policy: policy_model(&policy),
        rules: policy::RULES.iter().map(|r| r.to_string()).collect(),
        today: Some(today),
    }))
}

/// The policy as the wire model has it. Lossless: rules the model does not name are kept in its
/// `other`.
fn policy_model(policy: &Policy) -> GatePolicyRules {
    serde_json::from_value(policy.to_json()).unwrap_or_default()
}

async fn put_policy(
    State(gate): State<Arc<Gate>>,
    Supervisor(token): Supervisor,
    Strict(policy): Strict<Policy>,
) -> Result<Response, GateError> {
    let invalid = |e: policy::PolicyError| {
        GateError::new(Kind::Invalid, "invalid_policy", e.message).with_field(e.key)
    };
    guard::validate(&policy, gate.upstream.key.is_some()).map_err(invalid)?;
    let changed = guard::set_policy(&gate, &policy, &who(&token)).await?;
    Ok(success(GatePolicyChanged {
        changed,
        policy: policy_model(&policy),
    }))
}

async fn get_kill_switch(
    State(gate): State<Arc<Gate>>,
    _: Supervisor,
) -> Result<Response, GateError> {
    let kill_switch = halt::kill_switch(&gate).await?;
    Ok(success(GateKillSwitchAnswer { kill_switch }))
}

async fn post_kill_switch(
    State(gate): State<Arc<Gate>>,
    Supervisor(token): Supervisor,
    Strict(Kill { on, reason }): Strict<Kill>,
) -> Result<Response, GateError> {
    let kill_switch = halt::set_kill_switch(&gate, on, &reason, &who(&token)).await?;
    Ok(success(GateKillSwitchAnswer { kill_switch }))
}

async fn standing_models(gate: &Gate, list: &[Standing]) -> Result<Vec<GateStanding>, GateError> {
    let now = gate.now();
    let mut out = Vec::new();
    for s in list {
        let approved = gate
            .store
            .items_of_standing(s.id)
            .await
            .map_err(GateError::store)?;
        out.push(guard::standing_model(s, now, &approved));
    }
    Ok(out)
}

async fn list_standing(
    State(gate): State<Arc<Gate>>,
    _: Supervisor,
) -> Result<Response, GateError> {
    let list = gate
        .store
        .standings(gate.now())
        .await
        .map_err(GateError::store)?;
    let standing_approvals = standing_models(&gate, &list).await?;
    Ok(success(GateStandingList { standing_approvals }))
}

async fn add_standing(
    State(gate): State<Arc<Gate>>,
    Supervisor(token): Supervisor,
    Strict(request): Strict<GateStandingRequest>,
) -> Result<Response, GateError> {
    let now = gate.now();
    let by = who(&token);
    // The journal keeps the request as read (trimmed, coins as coin names).
    let detail = serde_json::to_value(&request).map_err(|e| {
        GateError::new(
            Kind::Internal,
            "internal",
            format!("the request cannot be journaled: {e}"),
        )
    })?;
    let GateStandingRequest {
        agent,
        coins,
        max_notional_usd,
        minutes,
        reason,
    } = request;
    let standing = Standing {
        id: 0,
        agent,
        coins,
        max_notional_usd,
        expires_at: now + chrono::Duration::minutes(minutes as i64),
        reason,
        created_by: by.clone(),
        created_at: now,
        revoked_at: None,
    };
    let record = Record::new("standing_approval_add", &by, now, detail);
    let id = gate
        .store
        .add_standing(standing.clone(), record)
        .await
        .map_err(GateError::store)?;
    let standing = Standing { id, ..standing };
    Ok(success(GateStandingCreated {
        standing_approval: guard::standing_model(&standing, now, &[]),
    }))
}

async fn revoke_standing(
    State(gate): State<Arc<Gate>>,
    Supervisor(token): Supervisor,
    Path(StandingPath { id }): Path<StandingPath>,
) -> Result<Response, GateError> {
    let not_found = || {
        GateError::new(
            Kind::NotFound,
            "not_found",
            format!("no live standing approval {id}"),
        )
    };
    let n: i64 = id.trim().parse().map_err(|_| not_found())?;
    let record = Record::new(
        "standing_approval_revoke",
        &who(&token),
        gate.now(),
        detail::Revoked { id: n },
    );
    if !gate
        .store
        .revoke_standing(n, record)
        .await
        .map_err(GateError::store)?
    {
        return Err(not_found());
    }
    Ok(success(GateRevoked { revoked: n }))
}

async fn get_journal(
    State(gate): State<Arc<Gate>>,
    _: Supervisor,
    Params(query): Params<JournalQuery>,
) -> Result<Response, GateError> {
    let after = query.after()?;
    let limit = query.limit()?;
    let rows = gate
        .store
        .journal(after, limit as usize)
        .await
        .map_err(GateError::store)?;
    Ok(success(GateJournal {
        records: rows.iter().map(record).collect(),
    }))
}

fn record(r: &JournalRow) -> GateJournalRecord {
    GateJournalRecord {
        seq: r.seq,
        at: r.at.clone(),
        kind: r.kind.clone(),
        actor: r.actor.clone(),
        item: r.item.clone(),
        // A detail that is not JSON (none is written so) is shown as the text it is.
        detail: serde_json::from_str(&r.detail).unwrap_or_else(|_| Value::String(r.detail.clone())),
        prev_hash: r.prev_hash.clone(),
        hash: r.hash.clone(),
    }
}

/// `POST /gate/v1/inbox/{id}/link`: a supervisor mints a single-use approval link for an item
/// that waits for a human ([`crate::gateway::flow::link`] keeps the rules, [`super::page`] serves
/// it).
async fn mint_link(
    State(gate): State<Arc<Gate>>,
    Supervisor(token): Supervisor,
    Path(ItemPath { id }): Path<ItemPath>,
) -> Result<Response, GateError> {
    gate.store
        .expire_due(gate.now())
        .await
        .map_err(GateError::store)?;
    let item = items::find(&gate, &id).await?;
    let url = link::mint(&gate, &item, &who(&token)).await?;
    Ok(success(GateLink {
        url,
        item_id: item.id,
        expires_at: item
            .expires_at
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    }))
}

#[cfg(test)]
mod tests {
    use super::super::super::model::journal;
    use super::*;
    use serde_json::json;

    #[test]
    fn a_journal_record_is_written_as_the_journal_writes_its_row() {
        for detail in [r#"{"n":1}"#, "not json"] {
            let row = JournalRow {
                seq: 7,
                at: "2026-06-01T12:00:07.000000Z".into(),
                kind: "approve".into(),
                actor: "alice".into(),
                item: Some("gi_1".into()),
                detail: detail.into(),
                prev_hash: "p".into(),
                hash: "h".into(),
            };
            let typed = serde_json::to_value(record(&row)).unwrap();
            assert_eq!(typed, journal::row_json(&row));
            let none = JournalRow { item: None, ..row };
            let typed = serde_json::to_value(record(&none)).unwrap();
            assert_eq!(typed, journal::row_json(&none));
        }
    }

    #[test]
    fn a_policy_is_answered_as_it_reads() {
        let p = super::super::bodies::policy(
            br#"{"allowed_coins": ["btc"], "max_notional_usd": 3000, "max_leverage": 2.5,
                "require_stop_loss": true, "max_open_positions": 3, "allow_immediate": false,
                "agents": {"bot": {"max_leverage": 3, "max_daily_notional_usd": 10}}}"#,
        )
        .unwrap();
        assert_eq!(serde_json::to_value(policy_model(&p)).unwrap(), p.to_json());
        let empty = Policy::default();
        assert_eq!(
            serde_json::to_value(policy_model(&empty)).unwrap(),
            empty.to_json()
        );
    }

    #[test]
    fn a_standing_approval_is_journaled_as_it_was_before_it_had_a_type() {
        let request = super::super::bodies::standing(
            br#"{"agent": " * ", "coins": ["btc-perp"], "maxNotionalUsd": 500, "minutes": 60, "reason": " r "}"#,
        )
        .unwrap();
        let before = json!({"agent": "*", "coins": ["BTC"], "maxNotionalUsd": 500.0,
                            "minutes": 60, "reason": "r"});
        assert_eq!(serde_json::to_value(&request).unwrap(), before);
    }
}
