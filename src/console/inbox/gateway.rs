//! The inbox on a gateway: the gateway's items merged into the approval inbox (this console's
//! own tool calls adopted as the gateway's items), the answers to approvals and rejections made
//! through its supervisor API, and the agent filter. The gateway's data is `gate/`.

use super::context::InboxCtx;
use super::{
    DecisionKind, Inbox, InboxItem, LocalState, START_SLACK, Source, Status, execution_summary_in,
};
use crate::api::ApiError;
use crate::api::model::{
    GateAgents, GateDecision, GateInbox, GateItem, Hold, ItemStatus, Proposal, ProposalStatus,
    TradeSignal,
};
use crate::console::action::{Effect, Resource};
use crate::console::component::{Ask, ToastLevel};
use crate::console::decider::{Answered, Decider};
use crate::console::gate::{inbox_id, is_listed};
use chrono::{DateTime, Utc};
use std::time::Duration;

/// The gateway's item as the inbox's proposal: its status in the words the inbox knows.
fn to_proposal(g: &GateItem, id: &str) -> Proposal {
    let status = match status_of(g) {
        ItemStatus::Executed => ProposalStatus::Executed,
        ItemStatus::Failed => ProposalStatus::Failed,
        ItemStatus::Expired => ProposalStatus::Expired,
        // Rejected and approved items are told apart by the local state (see `local_of`), and an
        // unknown one is never offered for a decision there.
        ItemStatus::Pending
        | ItemStatus::Approved
        | ItemStatus::Executing
        | ItemStatus::Rejected
        | ItemStatus::Unknown => ProposalStatus::Staged,
    };
    let mut preview = g.trade_preview();
    if preview.kind.is_empty() {
        preview.kind = g.kind.clone();
    }
    Proposal {
        proposal_id: id.to_string(),
        status,
        kind: g.kind.clone(),
        created_at: g.created_at,
        expires_at: g.expires_at,
        decided_at: g.decided_at,
        preview,
        ..Default::default()
    }
}

/// What the gateway's status says beyond the proposal's: a decision made there.
fn local_of(g: &GateItem) -> Option<LocalState> {
    match status_of(g) {
        ItemStatus::Rejected => Some(LocalState::Rejected),
        ItemStatus::Approved | ItemStatus::Executing => Some(LocalState::Approved(
            g.note
                .as_ref()
                .map(approved_note)
                .unwrap_or_else(|| "approved; executing".into()),
        )),
        ItemStatus::Executed => Some(LocalState::Approved(executed_text(g))),
        ItemStatus::Failed => Some(LocalState::Failed(failed_text(g))),
        // Approved, then expired while it waited (for the agent's key, or a rate limit): the row
        // must not go on saying approved. A pending one that expired shows as expired.
        // (An expiry stamps `decidedAt` too; only an approval names who decided.)
        ItemStatus::Expired if g.decided_by.is_some() => {
            Some(LocalState::Failed(APPROVED_EXPIRED.into()))
        }
        ItemStatus::Expired | ItemStatus::Pending => None,
        // Never offered for a decision: the row says why instead of "staged".
        ItemStatus::Unknown => Some(LocalState::Failed(UNKNOWN_STATE.into())),
    }
}

const UNKNOWN_STATE: &str =
    "the gateway reports a state this console does not know: decide it there or upgrade agentdesk";

const APPROVED_EXPIRED: &str =
    "not executed: approved, but it expired before the gateway could execute it";

/// The gateway's hold on an approved item that has not run, in the row's words. A rate-limited one
/// says it is approved and when it runs, so the row does not look stuck.
fn approved_note(hold: &Hold) -> String {
    match hold {
        Hold::RateLimited { until } => format!(
            "approved — rate limited by the service, retry after {} UTC",
            until.format("%H:%M:%S")
        ),
        other => other.to_string(),
    }
}

/// "bought 0.01 BTC at 65000 (oid 1234)" from the upstream's answer to the execution.
fn executed_text(g: &GateItem) -> String {
    // A tool's answer wraps what its operation answered in `result`.
    let body = g.result_body().map(|b| match b.get("result") {
        Some(r) if g.kind.starts_with("tool:") && r.is_object() => r,
        _ => b,
    });
    // Executed by an earlier attempt whose answer was lost: the answer kept is the service's
    // "already executed", which says nothing of the fills; the gateway's note says what happened.
    if body.is_some_and(|b| b.get("success") == Some(&serde_json::Value::Bool(false)))
        || said_already_executed(g)
    {
        let text = g.note.as_ref().map_or_else(
            || "executed by an earlier attempt whose answer was lost".into(),
            Hold::to_string,
        );
        return match g.standing_approval {
            Some(n) => format!("{text} · auto-approved by standing approval {n}"),
            None => text,
        };
    }
    let text = body
        .and_then(|b| crate::api::model::lenient::execution(b.clone()))
        .map(|done| {
            let coin = g.trade.as_ref().and_then(|t| t.coin.as_deref());
            execution_summary_in(&done, coin)
        })
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "executed".into());
    // Nobody clicked: the outcome says which standing approval let it through.
    match g.standing_approval {
        Some(n) => format!("{text} · auto-approved by standing approval {n}"),
        None => text,
    }
}

/// A "failed" execution whose answer was the service's "already executed": it did execute (an
/// attempt whose answer was lost ran it). Gateways before the one that records this as executed
/// marked it failed while the position was open; the console reads it for what it is.
fn said_already_executed(g: &GateItem) -> bool {
    let Some(body) = g.result_body() else {
        return false;
    };
    let text = body.to_string().to_ascii_lowercase();
    !g.kind.starts_with("tool:")
        && (text.contains("already_executed") || text.contains("already executed"))
}

/// The gateway's status, with an "already executed" failure read as the execution it was.
fn status_of(g: &GateItem) -> ItemStatus {
    if g.status == ItemStatus::Failed && said_already_executed(g) {
        ItemStatus::Executed
    } else {
        g.status
    }
}

/// The decision's result for an execution: "executed: bought 0.25 ETH at 2117.2 (oid 1)".
fn executed_line(g: &GateItem) -> String {
    let text = executed_text(g);
    if text.starts_with("executed") {
        text
    } else {
        format!("executed: {text}")
    }
}

/// What became of an item this console approved, once the gateway says: None while it has not
/// run yet.
fn outcome_of_approved(g: &GateItem) -> Option<(DecisionKind, String)> {
    match status_of(g) {
        ItemStatus::Executed => Some((DecisionKind::Executed, executed_line(g))),
        ItemStatus::Failed => Some((DecisionKind::Failed, failed_text(g))),
        ItemStatus::Rejected => Some((
            DecisionKind::Failed,
            format!(
                "not executed: rejected on the gateway ({})",
                g.reason.as_deref().unwrap_or("no reason given")
            ),
        )),
        ItemStatus::Expired if g.decided_by.is_some() => {
            Some((DecisionKind::Failed, APPROVED_EXPIRED.into()))
        }
        ItemStatus::Expired
        | ItemStatus::Pending
        | ItemStatus::Approved
        | ItemStatus::Executing
        | ItemStatus::Unknown => None,
    }
}

fn failed_text(g: &GateItem) -> String {
    let body = g.result_body();
    let message = body
        .and_then(|b| {
            b.pointer("/error/message")
                .or_else(|| b.get("message"))
                // A tool's failure is inside its `result`.
                .or_else(|| b.pointer("/result/message"))
        })
        .and_then(|m| m.as_str());
    let status = g
        .result
        .as_ref()
        .and_then(|r| r.get("status"))
        .and_then(|s| s.as_u64());
    match (status, message) {
        (Some(s), Some(m)) => format!("upstream {s}: {m}"),
        (None, Some(m)) => m.to_string(),
        (Some(s), None) => format!("upstream answered {s}"),
        (None, None) => "the execution failed".into(),
    }
}

impl Inbox {
    pub(crate) fn on_gate_loaded(
        &mut self,
        result: Result<Box<(GateInbox, Option<GateAgents>)>, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
        ctx: &mut InboxCtx,
    ) {
        match result {
            Ok(answer) => {
                let (inbox, agents) = *answer;
                self.gate.answered(inbox.version, agents, latency, at);
                self.merge_gate(inbox.items, ctx);
                self.gate.merged(at);
            }
            Err(e) => self.gate.failed(e, at),
        }
    }

    fn merge_gate(&mut self, items: Vec<GateItem>, ctx: &mut InboxCtx) {
        let now = ctx.now;
        let mut fresh = 0;
        let mut waiting = 0;
        let mut outcomes = Vec::new();
        let mut executed = false;
        for g in items.into_iter().filter(|g| is_listed(g, now)) {
            let id = inbox_id(&g);
            if g.kind.starts_with("tool:") {
                self.adopt_tool_approval(&g, &id, ctx);
            }
            // An approval this console sent that got no clear answer: this poll is the answer.
            let awaited = self.gate.awaits(&id);
            if awaited {
                if let Some((kind, text)) = outcome_of_approved(&g) {
                    outcomes.push((id.clone(), kind, text));
                } else if g.status == ItemStatus::Expired {
                    // The approval never reached the gateway: it expired pending, which the
                    // inbox journals as an expiry, not as an approval that failed.
                    self.gate.stop_awaiting(&id);
                }
            }
            let proposal = to_proposal(&g, &id);
            let local = local_of(&g);
            let agent = g.agent.clone();
            let g_created = g.created_at;
            let policy_refused = (g.status == ItemStatus::Rejected
                && g.decided_by.as_deref() == Some("policy"))
            .then(|| g.reason.clone().unwrap_or_else(|| "no reason given".into()));
            // Nobody clicked: a standing approval's execution is said once, as an approval's is.
            if let Some(n) = g.standing_approval
                && !self.gate.awaits(&id)
                && matches!(status_of(&g), ItemStatus::Executed | ItemStatus::Failed)
                && g.decided_at
                    .is_none_or(|t| t >= self.started_at() - START_SLACK)
                && self.first_sight(format!("standing-outcome:{id}"))
            {
                let (text, level) = if status_of(&g) == ItemStatus::Executed {
                    (executed_text(&g), ToastLevel::Info)
                } else {
                    (
                        format!("{} · standing approval {n}", failed_text(&g)),
                        ToastLevel::Error,
                    )
                };
                ctx.toast(format!("{id} ({agent}), auto-approved: {text}"), level);
            }
            // What the agent staged completes a sparse upstream preview, as for this console's
            // own stagings.
            let request = (g.kind == "trade")
                .then(|| serde_json::from_value::<TradeSignal>(g.request.clone()).ok())
                .flatten()
                .map(Box::new);
            let mut proposal = proposal;
            if let Some(r) = &request {
                proposal.preview = crate::console::inbox::staged::complete(r, &proposal.preview);
            }
            let executes = status_of(&g) == ItemStatus::Executed;
            let was = self.gate.record(id.clone(), g);
            // Whoever approved it (this console, another supervisor, a standing approval), an
            // execution changes the account: asked now, not at its next (maybe quiet) poll.
            executed |= executes && was.is_none_or(|w| status_of(&w) != ItemStatus::Executed);
            let existing = match self.items.iter_mut().find(|i| i.id() == id) {
                Some(item) => Some(item),
                None => self.hidden.iter_mut().find(|i| i.id() == id),
            };
            if let Some(item) = existing {
                item.source = Source::Gateway;
                if item.proposal.preview.kind.is_empty() {
                    item.proposal.preview = proposal.preview;
                }
                // A poll sent before the approval was answered must not take an execution back.
                let settled = match item.proposal.status {
                    ProposalStatus::Executed | ProposalStatus::Failed => true,
                    ProposalStatus::Staged | ProposalStatus::Expired | ProposalStatus::Other(_) => {
                        false
                    }
                };
                if !(settled && proposal.status == ProposalStatus::Staged) {
                    item.proposal.status = proposal.status;
                }
                item.proposal.expires_at = item.proposal.expires_at.or(proposal.expires_at);
                // An answer this console waits for decides, not a poll; for an approval whose
                // answer never came, the poll is all there is.
                let unanswered = awaited && item.local == LocalState::Confirming;
                match local {
                    Some(local) if item.local != LocalState::Confirming || unanswered => {
                        item.local = local;
                    }
                    // Still undecided there (or expired undecided): the approval did not land,
                    // and the item is the supervisor's to decide again.
                    None if unanswered => item.local = LocalState::None,
                    _ => {}
                }
                continue;
            }
            let mut item = InboxItem {
                proposal,
                request,
                source: Source::Gateway,
                local: local.unwrap_or(LocalState::None),
                first_seen: now,
                expiry_noted: false,
                tool: None,
            };
            // An expiry is journaled once: not again for one this console recorded before a
            // restart, nor for one first seen already expired (never this console's to decide).
            item.expiry_noted = item.status(now) == Status::Expired;
            self.reapply(&mut item);
            let first = self.first_sight(id.clone());
            // Staged before this console started (a restart): it was waiting, not new — said
            // once for all of them, without the bell.
            let before_start = g_created.is_some_and(|c| c < self.started_at() - START_SLACK);
            if first && item.status(now) == Status::Staged && before_start {
                waiting += 1;
            } else if first && item.status(now) == Status::Staged {
                fresh += 1;
                ctx.toast(
                    format!("New proposal from {agent}: {}", item.describe()),
                    ToastLevel::Info,
                );
            }
            // A staging the policy refused never waits in the inbox: without this it would be
            // invisible that an agent's proposals stop at a rule.
            if first && let Some(reason) = &policy_refused {
                ctx.toast(
                    format!(
                        "Refused by policy: {agent}'s {} ({reason})",
                        item.describe()
                    ),
                    ToastLevel::Error,
                );
            }
            if self.gate.hides(&id) {
                self.hide(item);
            } else {
                self.push(item);
            }
        }
        if fresh > 0 && ctx.bell {
            ctx.fx.push(Effect::Bell);
        }
        self.say_waiting(waiting, ctx);
        self.sort();
        if executed {
            ctx.ask(Ask::Poll(&Resource::TRADED, now));
        }
        for (id, kind, text) in outcomes {
            self.gate.stop_awaiting(&id);
            let summary = self
                .item(&id)
                .or_else(|| self.hidden_item(&id))
                .map(|i| i.describe())
                .unwrap_or_else(|| id.clone());
            let level = if kind == DecisionKind::Executed {
                ToastLevel::Info
            } else {
                ToastLevel::Error
            };
            ctx.toast(format!("{id}: {text}"), level);
            self.decide(&id, kind, summary, text, ctx);
        }
    }

    /// A mutate tool this console's Tools or Chat tab called through the gateway: the gateway
    /// captured its confirm token as an inbox item of kind `tool:<name>`, and refuses the token's
    /// re-submission until a supervisor approves that item. So the console's own item becomes the
    /// gateway's (one item, under the gateway's id), approved and rejected through the
    /// supervisor API like any agent's. Matched on this console's key, the tool and its arguments;
    /// the oldest such item of the console's that the gateway has not been matched to yet.
    fn adopt_tool_approval(&mut self, g: &GateItem, id: &str, ctx: &mut InboxCtx) {
        if self.items().iter().any(|i| i.id() == id) {
            return;
        }
        let own = &ctx.service.key_fingerprint;
        // Only a waiting item can be this console's waiting call: an executed or rejected one
        // with the same tool and arguments is an earlier call (before a restart, say).
        if g.agent_fingerprint != *own || g.status != ItemStatus::Pending {
            return;
        }
        let tool = g.request.get("name").and_then(|n| n.as_str());
        let args = g
            .request
            .get("args")
            .cloned()
            .unwrap_or(serde_json::Value::Null);
        let args = match args {
            serde_json::Value::Object(mut m) => {
                m.remove("confirmToken");
                serde_json::Value::Object(m)
            }
            other => other,
        };
        let now = ctx.now;
        // Captured when this console's call went through: not before the call was made (the
        // clocks may differ by a minute).
        let made_after = |i: &InboxItem| {
            g.created_at
                .is_none_or(|c| c >= i.first_seen - chrono::TimeDelta::seconds(60))
        };
        let Some(item) = self
            .items_mut()
            .iter_mut()
            .filter(|i| i.source == Source::Console && i.status(now) == Status::Staged)
            .filter(|i| made_after(i))
            .filter(|i| {
                i.tool
                    .as_ref()
                    .is_some_and(|t| Some(t.tool.as_str()) == tool && t.args == args)
            })
            .min_by_key(|i| i.first_seen)
        else {
            return;
        };
        let old = item.id().to_string();
        item.proposal.proposal_id = id.to_string();
        item.source = Source::Gateway;
        self.first_sight(id.to_string());
        self.rename_selected(&old, id);
        ctx.ask(Ask::ToolRenamed {
            from: old,
            to: id.to_string(),
        });
    }

    pub(crate) fn on_gate_decided(
        &mut self,
        id: &str,
        approve: bool,
        result: Result<Box<GateDecision>, ApiError>,
        at: DateTime<Utc>,
        ctx: &mut InboxCtx,
    ) {
        let summary = self.described(id);
        let verb = if approve { "Approve" } else { "Reject" };
        match result {
            Ok(decision) => {
                let g = decision.item;
                let agent = g.agent.clone();
                let (kind, text, level) = match (approve, status_of(&g)) {
                    (false, _) => {
                        // An earlier approve that got no answer did not go through after all.
                        self.gate.stop_awaiting(id);
                        (
                            DecisionKind::Rejected,
                            format!(
                                "rejected on the gateway: {}",
                                g.reason.clone().unwrap_or_default()
                            ),
                            ToastLevel::Info,
                        )
                    }
                    (true, ItemStatus::Executed) => {
                        self.gate.stop_awaiting(id);
                        (DecisionKind::Approved, executed_line(&g), ToastLevel::Info)
                    }
                    (true, ItemStatus::Failed) => {
                        self.gate.stop_awaiting(id);
                        (DecisionKind::Failed, failed_text(&g), ToastLevel::Error)
                    }
                    (true, ItemStatus::Pending) => {
                        // One approval of a step-up item's quorum: it still waits, for others;
                        // what becomes of it (another's approval runs it) is journaled when a
                        // poll says it.
                        self.gate.await_outcome(id);
                        let quorum = crate::console::gate::guard::quorum_text(&g)
                            .unwrap_or_else(|| "it still waits".into());
                        (
                            DecisionKind::Approved,
                            format!("your approval is recorded ({quorum}); not executed yet"),
                            ToastLevel::Info,
                        )
                    }
                    (true, _) => {
                        // Not run yet: its outcome is journaled when a poll reports it.
                        self.gate.await_outcome(id);
                        (
                            DecisionKind::Approved,
                            g.note.as_ref().map(approved_note).unwrap_or_else(|| {
                                format!("approved ({}); not executed yet", g.status)
                            }),
                            ToastLevel::Info,
                        )
                    }
                };
                // An override is not a plain approval: the answer and the journal say which
                // rules it overrode.
                let text = match self.gate.overrides(id).filter(|_| approve) {
                    Some(rules) => format!("overriding {}: {text}", rules.join(", ")),
                    None => text,
                };
                let proposal = to_proposal(&g, id);
                if let Some(item) = self.item_mut(id) {
                    item.proposal.status = proposal.status;
                    item.local = match kind {
                        DecisionKind::Rejected => LocalState::Rejected,
                        DecisionKind::Failed => LocalState::Failed(text.clone()),
                        // Still pending: approvable by the other supervisors, as before.
                        _ if status_of(&g) == ItemStatus::Pending => LocalState::None,
                        // The row's words, as a poll of the same item would set them.
                        _ => local_of(&g).unwrap_or_else(|| LocalState::Approved(text.clone())),
                    };
                }
                self.gate.record(id.to_string(), g);
                self.gate.forget_refusal(id);
                let done = if approve { "Approved" } else { "Rejected" };
                ctx.toast(format!("{done} {id} ({agent}): {text}"), level);
                self.decide(id, kind, summary, text, ctx);
            }
            // No clear answer (none, a 5xx, the upstream's timeout, "already decided"): the
            // approval may have gone through and executed. Nothing is journaled as failed; the
            // gateway establishes the outcome (it asks the service again itself) and the next
            // polls say it, journaled then as for an approval that ran later.
            Err(e) if approve && Decider::Gateway.read_error(&e) == Answered::Open => {
                // The row stays "confirming" until a poll says what the gateway did (see
                // `merge_gate`): showing it staged again read as an approval that was lost, while
                // the gateway was executing it.
                self.gate.await_outcome(id);
                ctx.toast(Decider::Gateway.open_outcome(id, &e), ToastLevel::Error);
            }
            Err(e) => {
                // Refused (policy_violation, kill_switch, already decided...): the item stays
                // as the gateway has it; its next poll shows that.
                if let Some(item) = self.item_mut(id)
                    && item.local == LocalState::Confirming
                {
                    item.local = LocalState::None;
                }
                let text = match e.code() {
                    Some(code) if matches!(e, ApiError::Forbidden { .. }) => {
                        format!("refused by the gateway ({code}): {e}")
                    }
                    _ => e.to_string(),
                };
                self.gate.refused(id, format!("{verb}: {text}"));
                ctx.toast(format!("{verb} {id} failed: {text}"), ToastLevel::Error);
                self.decide(id, DecisionKind::Failed, summary, text, ctx);
            }
        }
        self.gate.decided(at);
        // Executed with the agent's key: the console key's usage has not changed.
        ctx.ask(Ask::Poll(&Resource::TRADED, at));
    }

    /// `/agent NAME|all`: the inbox shows one agent's items, or every agent's.
    pub(crate) fn set_agent_filter(&mut self, filter: Option<String>, ctx: &mut InboxCtx) {
        if !self.gate.is_gateway() {
            ctx.toast(
                "not on a gateway: /agent filters a gateway's inbox by agent",
                ToastLevel::Error,
            );
            return;
        }
        if let Some(f) = &filter
            && !self.gate.knows_agent(f)
        {
            let names = self.gate.agent_names();
            ctx.toast(
                format!(
                    "no agent {f:?} on this gateway; agents: {}",
                    if names.is_empty() {
                        "none yet".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
                ToastLevel::Error,
            );
            return;
        }
        self.gate.set_filter(filter);
        let mut all: Vec<InboxItem> = self.take_items();
        all.append(&mut self.take_hidden());
        let mut seen = std::collections::HashSet::new();
        all.retain(|i| seen.insert(i.id().to_string()));
        let (hidden, shown): (Vec<_>, Vec<_>) =
            all.into_iter().partition(|i| self.gate.hides(i.id()));
        self.replace_items(shown);
        self.set_hidden(hidden);
        self.sort();
        let text = match self.gate.filter() {
            Some(f) => format!("inbox: {f}'s items only (/agent all shows every agent's)"),
            None => "inbox: every agent's items".into(),
        };
        ctx.toast(text, ToastLevel::Info);
    }
}
