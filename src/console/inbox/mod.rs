//! The approval inbox, shared by the tabs: staged trade proposals (listed by the service, or staged
//! and named here) and tool confirm tokens (from the Tools and Chat tabs) wait here for a human.
//! The Desk strip and the Proposals tab show it; approving or rejecting works from any tab; every
//! decision goes to the history and the journal. Lower layer: the items, what this console staged
//! (`staged.rs`: the request completing a sparse preview) and the risk preview (`risk.rs`, pure);
//! `update.rs` is App's part.

pub mod risk;
pub mod staged;
mod update;

use crate::api::model::{Preview, Proposal, TradeSignal};
use chrono::{DateTime, Duration as TimeDelta, Utc};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Listed by the service's proposals extension.
    Service,
    /// Staged from this console, or named with `/confirm`.
    Console,
}

/// What this console did with a proposal.
#[derive(Debug, Clone, PartialEq)]
pub enum LocalState {
    None,
    Confirming,
    Approved(String),
    Rejected,
    Failed(String),
}

/// A mutate tool's confirm token waiting for a human: approving it re-submits the tool with
/// `args.confirmToken`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolApproval {
    pub tool: String,
    /// The arguments of the first call (without the token).
    pub args: serde_json::Value,
    pub confirm_token: String,
    pub summary: String,
    pub preview: serde_json::Value,
    /// Where it came from: `tools` (this console's call) or `chat`.
    pub origin: &'static str,
    /// The operation's answer once approved.
    pub result: Option<serde_json::Value>,
}

#[derive(Debug, Clone)]
pub struct InboxItem {
    /// For a tool approval, a synthetic proposal: its id (`tool-N`), `staged`, and the token's
    /// expiry, so countdowns, expiry and the strip work the same for both kinds.
    pub proposal: Proposal,
    pub source: Source,
    pub local: LocalState,
    pub first_seen: DateTime<Utc>,
    /// Expiry already recorded in the decision history.
    pub expiry_noted: bool,
    /// Set for a tool's confirm token; None for a trade proposal.
    pub tool: Option<Box<ToolApproval>>,
    /// What this console sent to propose_trade, when it staged the proposal: kept for the views
    /// and the journal, and to fill what the service's preview leaves out.
    pub request: Option<Box<TradeSignal>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Staged,
    Confirming,
    Approved,
    Rejected,
    Expired,
    Failed,
    /// Executed, but not by this console.
    Executed,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Staged => "staged",
            Status::Confirming => "confirming",
            Status::Approved => "approved",
            Status::Rejected => "rejected",
            Status::Expired => "expired",
            Status::Failed => "failed",
            Status::Executed => "executed",
        }
    }
}

impl InboxItem {
    pub fn id(&self) -> &str {
        &self.proposal.proposal_id
    }

    pub fn status(&self, now: DateTime<Utc>) -> Status {
        match &self.local {
            LocalState::Confirming => return Status::Confirming,
            LocalState::Approved(_) => return Status::Approved,
            LocalState::Rejected => return Status::Rejected,
            LocalState::Failed(_) => return Status::Failed,
            LocalState::None => {}
        }
        match self.proposal.status.as_str() {
            "executed" => Status::Executed,
            "failed" => Status::Failed,
            "expired" => Status::Expired,
            _ if self.remaining(now).is_some_and(|r| r <= TimeDelta::zero()) => Status::Expired,
            _ => Status::Staged,
        }
    }

    /// Time left to approve, when the expiry is known.
    pub fn remaining(&self, now: DateTime<Utc>) -> Option<TimeDelta> {
        self.proposal.expires_at.map(|e| e - now)
    }

    pub fn can_approve(&self, now: DateTime<Utc>) -> bool {
        self.status(now) == Status::Staged
    }

    /// One line: what the proposal does.
    pub fn describe(&self) -> String {
        if let Some(t) = &self.tool {
            return if t.summary.is_empty() {
                format!("{} (tool)", t.tool)
            } else {
                t.summary.clone()
            };
        }
        describe_preview(&self.proposal.preview, self.id())
    }

    /// Takes the service's view of the proposal (a poll of the proposals extension) without
    /// losing what this console staged: the request fills what the new preview leaves out.
    pub fn merge(&mut self, p: Proposal) {
        self.proposal = p;
        if let Some(r) = &self.request {
            self.proposal.preview = staged::complete(r, &self.proposal.preview);
        }
    }
}

pub fn describe_preview(p: &Preview, id: &str) -> String {
    use crate::api::model::fmt_decimal;
    match p.kind.as_str() {
        "trade" => {
            let size = if p.size > 0.0 {
                fmt_decimal(p.size)
            } else if p.notional > 0.0 {
                format!("${}", fmt_decimal(p.notional))
            } else {
                "?".into()
            };
            let mut text = format!("{} {size} {}", p.direction, p.coin);
            if p.leverage > 0 {
                text.push_str(&format!(" {}x", p.leverage));
            }
            text
        }
        "close" => format!("close {}", p.coin),
        "close_all" => "close all positions".to_string(),
        _ => format!("proposal {id}"),
    }
}

/// A trade's price levels in one cell: `@3215 TP 3050 SL 3290`, `-` without any.
pub fn levels(p: &Preview) -> String {
    use crate::api::model::fmt_decimal;
    let mut parts = Vec::new();
    if let Some(l) = p.limit_px {
        parts.push(format!("@{}", fmt_decimal(l)));
    }
    if let Some(tp) = p.tp {
        parts.push(format!("TP {}", fmt_decimal(tp)));
    }
    if let Some(sl) = p.sl {
        parts.push(format!("SL {}", fmt_decimal(sl)));
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(" ")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionKind {
    Approved,
    Rejected,
    Expired,
    Failed,
}

impl DecisionKind {
    pub fn label(self) -> &'static str {
        match self {
            DecisionKind::Approved => "approved",
            DecisionKind::Rejected => "rejected",
            DecisionKind::Expired => "expired",
            DecisionKind::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Decision {
    pub proposal_id: String,
    pub kind: DecisionKind,
    pub at: DateTime<Utc>,
    pub summary: String,
    pub result: String,
}

/// "bought 0.01 BTC at 65000 (oid 1234)" for each fill, or what rests.
pub fn execution_summary(done: &crate::api::model::ExecutionResult) -> String {
    use crate::api::model::fmt_decimal;
    let mut parts: Vec<String> = done
        .execution
        .fills
        .iter()
        .map(|f| {
            format!(
                "{} {} {} at {} (oid {})",
                if f.side == "B" { "bought" } else { "sold" },
                fmt_decimal(f.sz),
                f.coin,
                fmt_decimal(f.px),
                f.oid
            )
        })
        .collect();
    parts.extend(done.execution.resting.iter().map(|o| {
        format!(
            "limit resting at {} (oid {})",
            fmt_decimal(o.limit_px),
            o.oid
        )
    }));
    // The venue's own statuses, when the service passed them on without fills (the
    // deployment's `result.response.data.statuses`).
    if parts.is_empty() {
        parts.extend(
            done.execution
                .statuses
                .iter()
                .map(crate::api::model::lenient::order_status),
        );
    }
    if let Some(oid) = done.extra.get("oid").filter(|_| parts.is_empty()) {
        parts.push(format!(
            "oid {}",
            oid.as_str().map_or(oid.to_string(), str::to_string)
        ));
    }
    match (parts.is_empty(), done.status.is_empty()) {
        (false, true) => parts.join("; "),
        (false, false) if !matches!(done.status.as_str(), "ok" | "executed" | "filled") => {
            format!("{}: {}", done.status, parts.join("; "))
        }
        (false, false) => parts.join("; "),
        (true, false) => done.status.clone(),
        // No shape we know: the answer itself, compactly, rather than nothing.
        (true, true) => {
            let raw = serde_json::Value::Object(done.extra.clone());
            let text = crate::api::model::lenient::compact(&raw, 120);
            if text.is_empty() {
                "done (empty answer)".into()
            } else {
                text
            }
        }
    }
}
