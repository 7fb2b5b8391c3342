//! The approval inbox, shared by the tabs: staged trade proposals (listed by the service, or staged
//! and named here) and tool confirm tokens (from the Tools and Chat tabs) wait here for a human.
//! The Desk strip and the Proposals tab show it; approving or rejecting works from any tab; every
//! decision goes to the history and the journal. Lower layer: the items, what this console staged
//! (`staged.rs`: the request completing a sparse preview) and the risk preview (`risk.rs`, pure).
//! [`Inbox`] is a component: it owns the items, the gateway's state (`gate/`) and the decisions,
//! and changes them itself when App routes it a key, an answer or a moment with an `InboxCtx`
//! (`context.rs`): approve, reject and undo (`decisions.rs`), the service's proposals and
//! confirms (`service.rs`), a gateway's items and decisions (`gateway.rs`), tool confirm tokens
//! (`tools.rs`), the journal's record of each decision (`decide.rs`). Its fields are this file's;
//! those files are its own methods, and the rest of the console reads through the accessors.

pub mod context;
mod decide;
pub mod decisions;
pub mod dialog;
pub mod evidence;
mod gateway;
mod recheck;
pub mod risk;
mod selection;
mod service;
pub mod staged;
mod tools;

pub use evidence::Evidence;

use crate::api::model::{AuditEntry, Preview, Proposal, ProposalStatus, TradeSignal};
use crate::console::decider::Decider;
use crate::console::gate::GateState;
use crate::console::layout::Pane;
use crate::console::poll::Poll;
use chrono::{DateTime, Duration as TimeDelta, Utc};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Listed by the service's proposals extension.
    Service,
    /// Staged from this console, or named with `/confirm`.
    Console,
    /// Listed by the supervision gateway's inbox: any agent's, approved through `/gate/v1`.
    Gateway,
}

/// What this console did with a proposal.
#[derive(Debug, Clone, PartialEq)]
pub enum LocalState {
    None,
    Confirming,
    Approved(String),
    Rejected,
    Failed(String),
    /// The confirm never got an answer (refused, timed out, reset): it may or may not have
    /// executed. `error` is why; `checking` is false once the service can no longer tell (its
    /// audit log names no proposals and the proposal's time is over).
    Unknown {
        error: String,
        checking: bool,
    },
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
    /// Executed, but not by this console; or, on a gateway, executed by the gateway once this
    /// console approved it (there the approval and the execution are two steps, and the row says
    /// which one the gateway reports).
    Executed,
    /// A confirm went out and no answer came back: being reconciled with the service.
    Unknown,
    /// The service says a status this console does not know ([`ProposalStatus::Other`]): shown
    /// in its words, never approved, rejected or expired here.
    Unrecognised,
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
            Status::Unknown => "outcome unknown",
            Status::Unrecognised => "in a state this console does not know",
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
            // A gateway approves first and executes after (at once, or once the agent is back):
            // "approved" there is not yet an execution.
            LocalState::Approved(_)
                if self.source == Source::Gateway
                    && self.proposal.status == ProposalStatus::Executed =>
            {
                return Status::Executed;
            }
            LocalState::Approved(_) => return Status::Approved,
            LocalState::Rejected => return Status::Rejected,
            LocalState::Failed(_) => return Status::Failed,
            LocalState::Unknown { .. } => return Status::Unknown,
            LocalState::None => {}
        }
        self.service_status(now)
    }

    /// What the service's side says, whatever this console did: a dismissal is only local, so
    /// this is what undoing it returns to.
    pub fn service_status(&self, now: DateTime<Utc>) -> Status {
        match &self.proposal.status {
            ProposalStatus::Executed => Status::Executed,
            ProposalStatus::Failed => Status::Failed,
            ProposalStatus::Expired => Status::Expired,
            ProposalStatus::Staged
                if self.remaining(now).is_some_and(|r| r <= TimeDelta::zero()) =>
            {
                Status::Expired
            }
            ProposalStatus::Staged => Status::Staged,
            ProposalStatus::Other(_) => Status::Unrecognised,
        }
    }

    /// The status as a row shows it: for a confirm that got no answer, whether it is still
    /// being checked; a status this console does not know, in the service's words.
    pub fn status_text(&self, now: DateTime<Utc>) -> std::borrow::Cow<'_, str> {
        match (&self.local, self.status(now)) {
            (LocalState::Unknown { checking: true, .. }, _) => "unknown — checking".into(),
            (_, Status::Unrecognised) if self.proposal.status.is_unsaid() => "no status".into(),
            (_, Status::Unrecognised) => self.proposal.status.as_str().into(),
            (_, status) => status.label().into(),
        }
    }

    /// Time left to approve, when the expiry is known.
    pub fn remaining(&self, now: DateTime<Utc>) -> Option<TimeDelta> {
        self.proposal.expires_at.map(|e| e - now)
    }

    /// How long it had to be approved in all, when the service said when it was staged: what a
    /// countdown bar is a share of.
    pub fn lifetime(&self) -> Option<TimeDelta> {
        match (self.proposal.created_at, self.proposal.expires_at) {
            (Some(c), Some(e)) if e > c => Some(e - c),
            _ => None,
        }
    }

    pub fn can_approve(&self, now: DateTime<Utc>) -> bool {
        self.status(now) == Status::Staged
    }

    /// One line: what the proposal does.
    pub fn describe(&self) -> String {
        if let Some(t) = &self.tool {
            if !t.summary.is_empty() {
                return t.summary.clone();
            }
            // The trade first, as a proposal's row reads; the tool that carries it after.
            for v in [&t.preview, &t.args] {
                let p = crate::api::model::lenient::preview(v.clone());
                if p.kind == "trade" && !p.coin.is_empty() {
                    return format!("{} · via {}", describe_preview(&p, self.id()), t.tool);
                }
            }
            return format!("{} (tool)", t.tool);
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
    use crate::console::widgets::size as fmt_decimal;
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

/// A trade's price levels in one cell: `@3,215 TP 3,050 SL 3,290`, `-` without any.
pub fn levels(p: &Preview) -> String {
    use crate::console::widgets::size as fmt_decimal;
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
    /// A dismissal taken back while the proposal was live.
    Undone,
    /// What a gateway did with an item this console approved, once it says so.
    Executed,
}

impl DecisionKind {
    pub const ALL: [DecisionKind; 6] = [
        DecisionKind::Approved,
        DecisionKind::Rejected,
        DecisionKind::Expired,
        DecisionKind::Failed,
        DecisionKind::Undone,
        DecisionKind::Executed,
    ];

    /// The kind a journal line names: every label this console writes reads back.
    pub fn from_label(label: &str) -> Option<DecisionKind> {
        Self::ALL.into_iter().find(|k| k.label() == label)
    }

    pub fn label(self) -> &'static str {
        match self {
            DecisionKind::Approved => "approved",
            DecisionKind::Rejected => "rejected",
            DecisionKind::Expired => "expired",
            DecisionKind::Failed => "failed",
            DecisionKind::Undone => "undone",
            DecisionKind::Executed => "executed",
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
    execution_summary_in(done, None)
}

/// [`execution_summary`] of a trade in `coin`: a venue status that does not name its coin (the
/// deployment's `statuses`) is said with it.
pub fn execution_summary_in(
    done: &crate::api::model::ExecutionResult,
    coin: Option<&str>,
) -> String {
    use crate::console::widgets::size as fmt_decimal;
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
                .map(|st| crate::api::model::lenient::order_status_in(st, coin)),
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

/// How long after the selection moved by itself (its proposal left the list, or the first one
/// arrived) the keys that act on it refuse: a key pressed in that moment was aimed at what was
/// selected before, which the supervisor may not have seen change.
/// How far before this console's start a staging still counts as new: the service's clock and
/// ours may differ a little.
pub const START_SLACK: TimeDelta = TimeDelta::seconds(5);

pub const SETTLE: TimeDelta = TimeDelta::seconds(1);

/// While a confirm's outcome is unknown, the service is asked again this often: one or two cheap
/// GETs, each given up after [`RECHECK_TIMEOUT`].
pub const RECHECK: TimeDelta = TimeDelta::seconds(2);
pub const RECHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// The audit rows asked for when reconciling. A log that fills them may not reach back to the
/// confirm, so then the absence of a row proves nothing.
pub const AUDIT_WINDOW: u32 = 200;

/// What one inbox pane (the Proposals list, the Desk strip) has selected: a proposal id, never a
/// row, so an arrival, an expiry or a re-sort never changes what `a`, `x` and `enter` act on. The
/// row drawn is derived from it.
#[derive(Debug, Clone, Default)]
pub struct PaneSelection {
    pub id: Option<String>,
    /// The pane's ids when last synced, newest first: where the selected one was, so its
    /// neighbour is known once it leaves.
    rows: Vec<String>,
    /// When the selection last moved by itself, and from which id (the one that left).
    pub moved: Option<(DateTime<Utc>, Option<String>)>,
}

impl PaneSelection {
    /// Follows the id through `rows`, the pane's ids now. When the selected proposal left, the
    /// one that took its place (the next older) is selected, or else the one above it. True when
    /// the selection changed without a key saying so.
    pub fn sync(&mut self, rows: Vec<String>) -> bool {
        let changed = match &self.id {
            Some(id) if rows.contains(id) => false,
            // Nothing left to move to: it stays named, so a key says why it cannot act on it.
            Some(_) if rows.is_empty() => false,
            Some(id) => {
                let at = self.rows.iter().position(|r| r == id);
                let survivor = at.and_then(|p| {
                    self.rows[p + 1..]
                        .iter()
                        .find(|r| rows.contains(r))
                        .or_else(|| self.rows[..p].iter().rev().find(|r| rows.contains(r)))
                });
                self.id = survivor.cloned().or_else(|| rows.first().cloned());
                true
            }
            None => {
                self.id = rows.first().cloned();
                self.id.is_some()
            }
        };
        self.rows = rows;
        changed
    }
}

/// The approval inbox's state, owned here: the items newest first, the decisions taken, the
/// panes' selections, the dismissals that can still be undone and the schedule of the checks of
/// confirms whose outcome is unknown, and the gateway's state. Its fields are this file's own: the
/// inbox's other files change them through the methods below, and the rest of the console reads
/// through the accessors.
#[derive(Debug, Clone)]
pub struct Inbox {
    /// Newest first.
    items: Vec<InboxItem>,
    /// Items the gateway's agent filter hides, kept out of `items` so every index into it still
    /// means what the screen shows; they come back when the filter changes.
    hidden: Vec<InboxItem>,
    /// The supervision gateway's data, when the service is one: its items decide this inbox's.
    gate: GateState,
    /// Newest first.
    decisions: Vec<Decision>,
    list: PaneSelection,
    strip: PaneSelection,
    /// Dismissed proposal ids, the latest last: what `u` restores.
    dismissed: Vec<String>,
    /// Proposals whose confirm from this console got no answer: a later "already executed"
    /// may be that confirm's doing.
    unanswered: std::collections::HashSet<String>,
    /// Proposals whose confirm from this console the service answered "already executed": they
    /// executed, and the records are read only for what they did.
    said_executed: std::collections::HashSet<String>,
    recheck: Poll,
    /// Proposals whose confirm the service refused for now (a quota or rate limit, a 503 with
    /// `Retry-After`): until when, and what it said. Nothing executed; they stay staged, and
    /// approving them waits until then. Never re-sent on their own.
    limited: std::collections::HashMap<String, (DateTime<Utc>, String)>,
    /// Numbers the tool approvals (`tool-1`, `tool-2`).
    tool_seq: u32,
    /// When this console started: what was staged before was waiting, not new.
    started_at: DateTime<Utc>,
    /// Proposal ids seen before, so a proposal rings the bell once.
    seen: std::collections::HashSet<String>,
    /// What the journal said last of each proposal when this console started (newest wins), and
    /// which it recorded as expired: a decision survives a restart (`reapply`).
    journaled: std::collections::HashMap<String, DecisionKind>,
    journaled_expired: std::collections::HashSet<String>,
}

impl Inbox {
    /// Newest first.
    pub fn items(&self) -> &[InboxItem] {
        &self.items
    }

    /// Newest first.
    pub fn decisions(&self) -> &[Decision] {
        &self.decisions
    }

    pub fn item(&self, id: &str) -> Option<&InboxItem> {
        self.items.iter().find(|i| i.id() == id)
    }

    /// For the gateway's merge, which settles an item's state from the gateway's record.
    pub(crate) fn item_mut(&mut self, id: &str) -> Option<&mut InboxItem> {
        self.items.iter_mut().find(|i| i.id() == id)
    }

    /// The inbox of a console started at `now`, polling a gateway (if the service is one) every
    /// `gate_interval`.
    pub fn started(now: DateTime<Utc>, gate_interval: std::time::Duration) -> Inbox {
        Inbox {
            items: Vec::new(),
            hidden: Vec::new(),
            gate: GateState::new(gate_interval, now),
            decisions: Vec::new(),
            list: PaneSelection::default(),
            strip: PaneSelection::default(),
            dismissed: Vec::new(),
            unanswered: Default::default(),
            said_executed: Default::default(),
            recheck: Poll::default(),
            limited: Default::default(),
            tool_seq: 0,
            started_at: now,
            seen: Default::default(),
            journaled: Default::default(),
            journaled_expired: Default::default(),
        }
    }

    /// The gateway's data (nothing while the service is not one).
    pub fn gate(&self) -> &GateState {
        &self.gate
    }

    pub(crate) fn gate_mut(&mut self) -> &mut GateState {
        &mut self.gate
    }

    /// How decisions on inbox item `id` are made: through the gateway when the service is one
    /// and the gateway decides the item (every trade it lists; a tool call once it is its item),
    /// else through the service.
    pub fn decider_for(&self, id: &str) -> Decider {
        let gateway_decides = self
            .item(id)
            .or_else(|| self.hidden_item(id))
            .is_none_or(|i| i.tool.is_none() || i.source == Source::Gateway);
        Decider::of(self.gate.is_gateway(), gateway_decides)
    }

    /// How this console decides, for what is not one item's (the feeds it polls).
    pub fn decider(&self) -> Decider {
        Decider::of(self.gate.is_gateway(), true)
    }

    /// An item the agent filter hides.
    pub fn hidden_item(&self, id: &str) -> Option<&InboxItem> {
        self.hidden.iter().find(|i| i.id() == id)
    }

    pub(crate) fn hide(&mut self, item: InboxItem) {
        self.hidden.push(item);
    }

    /// The hidden items, taken out to be sorted again by a new filter.
    pub(crate) fn take_hidden(&mut self) -> Vec<InboxItem> {
        std::mem::take(&mut self.hidden)
    }

    pub(crate) fn set_hidden(&mut self, hidden: Vec<InboxItem>) {
        self.hidden = hidden;
    }

    /// When this console started: what was staged before was waiting, not new.
    pub fn started_at(&self) -> DateTime<Utc> {
        self.started_at
    }

    #[doc(hidden)]
    pub fn fixture_started_at(&mut self, at: DateTime<Utc>) {
        self.started_at = at;
    }

    /// Every item, to change in place (never to add or remove one: `push`, `replace_items`).
    pub(crate) fn items_mut(&mut self) -> &mut [InboxItem] {
        &mut self.items
    }

    pub(crate) fn push(&mut self, item: InboxItem) {
        self.items.push(item);
    }

    /// Every item, taken out to be filtered and put back with `replace_items`.
    pub(crate) fn take_items(&mut self) -> Vec<InboxItem> {
        std::mem::take(&mut self.items)
    }

    pub(crate) fn replace_items(&mut self, items: Vec<InboxItem>) {
        self.items = items;
    }

    /// A decision taken, newest first.
    pub(crate) fn record(&mut self, decision: Decision) {
        self.decisions.insert(0, decision);
    }

    /// True the first time `key` is seen (so a proposal rings the bell once).
    pub(crate) fn first_sight(&mut self, key: String) -> bool {
        self.seen.insert(key)
    }

    /// A confirm from this console got no answer: a later "already executed" may be its doing.
    pub(crate) fn note_unanswered(&mut self, id: &str) {
        self.unanswered.insert(id.to_string());
    }

    pub(crate) fn unanswered(&self, id: &str) -> bool {
        self.unanswered.contains(id)
    }

    pub(crate) fn forget_unanswered(&mut self, id: &str) {
        self.unanswered.remove(id);
    }

    /// The service answered this console's confirm "already executed".
    pub(crate) fn note_said_executed(&mut self, id: &str) {
        self.said_executed.insert(id.to_string());
    }

    pub(crate) fn said_executed(&self, id: &str) -> bool {
        self.said_executed.contains(id)
    }

    pub(crate) fn forget_said_executed(&mut self, id: &str) {
        self.said_executed.remove(id);
    }

    /// A confirm's outcome is unknown from `at`: the service is asked then.
    pub(crate) fn recheck_at(&mut self, at: DateTime<Utc>) {
        self.recheck.ask_at(at);
    }

    /// The service was asked again at `at`: still unreachable, or not settled yet, it is asked
    /// again soon, not after a growing backoff.
    pub(crate) fn rechecked(&mut self, at: DateTime<Utc>) {
        self.recheck.settled();
        self.recheck.ask_at(at + RECHECK);
    }

    /// The service refused `id`'s confirm until `until`, saying `message`.
    pub(crate) fn limit(&mut self, id: &str, until: DateTime<Utc>, message: String) {
        self.limited.insert(id.to_string(), (until, message));
    }

    pub(crate) fn unlimit(&mut self, id: &str) {
        self.limited.remove(id);
    }

    /// `id` was dismissed last: `u` restores it first.
    pub(crate) fn dismiss(&mut self, id: &str) {
        self.dismissed.retain(|d| d != id);
        self.dismissed.push(id.to_string());
    }

    pub(crate) fn undismiss(&mut self, id: &str) {
        self.dismissed.retain(|d| d != id);
    }

    /// The dismissals, the latest last.
    pub(crate) fn dismissed(&self) -> &[String] {
        &self.dismissed
    }

    /// The next tool approval's id (`tool-1`, `tool-2`).
    pub(crate) fn next_tool_id(&mut self) -> String {
        self.tool_seq += 1;
        format!("tool-{}", self.tool_seq)
    }

    /// The items as a vector, bypassing the inbox's bookkeeping (selection, sorting, the bell):
    /// for fixtures in tests and benches that build a screen directly.
    #[doc(hidden)]
    pub fn fixture_items(&mut self) -> &mut Vec<InboxItem> {
        &mut self.items
    }

    #[doc(hidden)]
    pub fn fixture_clear(&mut self) {
        self.items.clear();
        self.decisions.clear();
    }

    /// Whole seconds left of the wait the service asked for before `id` is confirmed again;
    /// None when there is none (any more).
    pub fn wait_left(&self, id: &str, now: DateTime<Utc>) -> Option<i64> {
        let (until, _) = self.limited.get(id)?;
        let ms = (*until - now).num_milliseconds();
        (ms > 0).then(|| (ms + 999) / 1000)
    }

    /// What the service said when it refused `id`'s confirm for now, while it waits.
    pub fn limited_note(&self, id: &str) -> Option<&str> {
        self.limited.get(id).map(|(_, said)| said.as_str())
    }

    /// When the next check of an unknown outcome is due, for the clock's sleep.
    pub fn recheck_due(&self) -> Option<DateTime<Utc>> {
        self.recheck.wakeup()
    }

    /// Inbox indices of the proposals the Desk strip shows: those that can still be approved,
    /// and those whose confirm got no answer, until the service says what became of them.
    pub fn strip_items(&self, now: DateTime<Utc>) -> Vec<usize> {
        (0..self.items.len())
            .filter(|i| on_strip(&self.items[*i], now))
            .collect()
    }

    pub fn selection(&self, pane: Pane) -> &PaneSelection {
        match pane {
            Pane::Strip => &self.strip,
            _ => &self.list,
        }
    }

    fn selection_mut(&mut self, pane: Pane) -> &mut PaneSelection {
        match pane {
            Pane::Strip => &mut self.strip,
            _ => &mut self.list,
        }
    }

    /// How many items the Desk strip shows, and how many can be approved now: what the layout
    /// needs, in one pass.
    pub fn counts(&self, now: DateTime<Utc>) -> (usize, usize) {
        self.items.iter().fold((0, 0), |(strip, approvable), i| {
            let can = i.can_approve(now);
            (
                strip + usize::from(can || matches!(i.local, LocalState::Unknown { .. })),
                approvable + usize::from(can),
            )
        })
    }

    /// A gateway item took the place of `from` (the id this console staged it under): the
    /// panes that had it selected follow it.
    pub(crate) fn rename_selected(&mut self, from: &str, to: &str) {
        for sel in [&mut self.list, &mut self.strip] {
            if sel.id.as_deref() == Some(from) {
                sel.id = Some(to.to_string());
            }
        }
    }

    /// `/confirm <id>` of an id the inbox does not hold: the details arrive with the next
    /// proposals poll, if the service lists them; the confirm itself needs only the id.
    pub(crate) fn name_by_hand(&mut self, id: &str, now: DateTime<Utc>) {
        if self.item(id).is_some() {
            return;
        }
        self.items.insert(
            0,
            InboxItem {
                proposal: Proposal {
                    proposal_id: id.to_string(),
                    status: ProposalStatus::Staged,
                    ..Default::default()
                },
                source: Source::Console,
                local: LocalState::None,
                first_seen: now,
                expiry_noted: false,
                tool: None,
                request: None,
            },
        );
        self.seen.insert(id.to_string());
    }

    /// The journal's decisions, read at start (newest first): the history the Proposals tab
    /// shows, and what was decided, re-applied to each proposal as it is listed again.
    pub fn restore_decisions(&mut self, history: Vec<Decision>) {
        for d in &history {
            self.journaled
                .entry(d.proposal_id.clone())
                .or_insert(d.kind);
            if d.kind == DecisionKind::Expired {
                self.journaled_expired.insert(d.proposal_id.clone());
            }
        }
        self.decisions = history;
    }

    /// A proposal listed for the first time since this console started, as the journal left it:
    /// one dismissed here (on a service, where a dismissal is this console's own) stays dismissed
    /// and `u` can still restore it; an expiry already recorded is not recorded again. What a
    /// gateway decided is the gateway's to say, so only the expiry applies there.
    pub(crate) fn reapply(&mut self, item: &mut InboxItem) {
        let id = item.id().to_string();
        if self.journaled_expired.contains(&id) {
            item.expiry_noted = true;
        }
        if item.source != Source::Gateway
            && self.journaled.get(&id) == Some(&DecisionKind::Rejected)
            && item.local == LocalState::None
        {
            item.local = LocalState::Rejected;
            self.dismissed.retain(|d| *d != id);
            self.dismissed.push(id);
        }
    }

    pub fn confirm_in_flight(&self) -> bool {
        self.items.iter().any(|i| i.local == LocalState::Confirming)
    }

    pub(crate) fn sort(&mut self) {
        // Newest first, at full precision; a service that stamps whole seconds leaves ties,
        // which the later expiry, then the later arrival, then the id settle, so the order is
        // the same on every poll.
        self.items.sort_by(|a, b| {
            let created = |i: &InboxItem| i.proposal.created_at.unwrap_or(i.first_seen);
            created(b)
                .cmp(&created(a))
                .then_with(|| b.proposal.expires_at.cmp(&a.proposal.expires_at))
                .then_with(|| b.first_seen.cmp(&a.first_seen))
                .then_with(|| b.id().cmp(a.id()))
        });
    }
}

/// The Desk strip shows what can still be approved, and what a confirm got no answer for until
/// the service says what became of it.
fn on_strip(item: &InboxItem, now: DateTime<Utc>) -> bool {
    item.can_approve(now) || matches!(item.local, LocalState::Unknown { .. })
}

/// What the service's records say became of a proposal.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// It executed: what it did, as far as the records say.
    Executed(String),
    /// The service tried and failed; nothing was traded.
    Failed(String),
    /// It did not execute: still staged, or expired (the clock says which).
    NotExecuted,
    /// The records do not say.
    Unknown,
}

/// Reads the evidence for proposal `id`, staged at `staged_at`: the proposals list when it has
/// the proposal, else the audit log (every delegated execute attempt, with the proposal it named,
/// or — the deployment's log names none — at least when). Positions and open orders cannot say
/// which proposal made them, so they are not evidence.
pub fn outcome(id: &str, staged_at: DateTime<Utc>, evidence: &Evidence) -> Outcome {
    if let Some(Ok(list)) = &evidence.proposals
        && let Some(p) = list.iter().find(|p| p.proposal_id == id)
    {
        return outcome_of(p);
    }
    match &evidence.audit {
        Ok(rows) => outcome_in_audit(id, staged_at, rows),
        Err(_) => Outcome::Unknown,
    }
}

/// What a listed proposal's status says. A word this console does not know says nothing it can
/// act on: the question stays open, as when the records do not say.
pub fn outcome_of(p: &Proposal) -> Outcome {
    match &p.status {
        ProposalStatus::Executed => Outcome::Executed(match &p.execution {
            Some(e) => execution_summary(&crate::api::model::ExecutionResult {
                status: ProposalStatus::Executed.to_string(),
                execution: e.clone(),
                ..Default::default()
            }),
            None => ProposalStatus::Executed.to_string(),
        }),
        ProposalStatus::Failed => Outcome::Failed(
            p.error
                .as_ref()
                .map(|e| e.message.clone())
                .unwrap_or_else(|| "the service marked it failed".into()),
        ),
        ProposalStatus::Staged | ProposalStatus::Expired => Outcome::NotExecuted,
        ProposalStatus::Other(_) => Outcome::Unknown,
    }
}

/// What the audit log says became of a mutate tool's re-submission whose answer never came: the
/// tool runs its operation as an ordinary call (`service_place_order` runs `place_order`), which
/// the log records, while the first call (the one that got the token, at `staged_at`) only
/// staged. A run of that operation since then is taken as this one. Absence proves something only
/// in a log that is not full; should a service not log tool runs, approving again is harmless: a
/// confirm token runs once, and a used one is refused.
pub fn tool_outcome(tool: &str, staged_at: DateTime<Utc>, evidence: &Evidence) -> Outcome {
    let Ok(rows) = &evidence.audit else {
        return Outcome::Unknown;
    };
    let op = tool.strip_prefix("service_").unwrap_or(tool);
    let since = staged_at - CLOCK_SLACK;
    let ran = rows.iter().find(|r| {
        (r.operation == op || r.operation == tool)
            && r.outcome == "ok"
            && (r.time == DateTime::<Utc>::default() || r.time >= since)
    });
    if let Some(r) = ran {
        return Outcome::Executed(format!(
            "executed ({} ok in the audit log{})",
            r.operation,
            r.oid.map(|o| format!(", oid {o}")).unwrap_or_default()
        ));
    }
    if rows.len() >= AUDIT_WINDOW as usize {
        Outcome::Unknown
    } else {
        Outcome::NotExecuted
    }
}

/// How far before its staging an audit row may be stamped and still be about the proposal: the
/// service's clock and this console's may differ.
const CLOCK_SLACK: TimeDelta = TimeDelta::seconds(60);

fn outcome_in_audit(id: &str, staged_at: DateTime<Utc>, rows: &[AuditEntry]) -> Outcome {
    let mine = || rows.iter().filter(|r| r.proposal_id.as_deref() == Some(id));
    if let Some(ok) = mine().find(|r| r.outcome == "ok" && r.operation != "propose_trade") {
        return Outcome::Executed(format!(
            "executed ({} ok in the audit log{})",
            ok.operation,
            ok.oid.map(|o| format!(", oid {o}")).unwrap_or_default()
        ));
    }
    // Absence proves something only in a log that reaches back far enough.
    if rows.len() >= AUDIT_WINDOW as usize {
        return Outcome::Unknown;
    }
    if rows.iter().any(|r| r.proposal_id.is_some()) {
        return Outcome::NotExecuted;
    }
    // A log that names no proposal (the deployment's) still tells whether any execution was
    // attempted since the staging: none means the confirm never arrived. One that was cannot be
    // told from another proposal's, so the question stays open. Should this be wrong (a clock far
    // off), approving again is harmless: the service executes a proposal once and answers 409.
    let since = staged_at - CLOCK_SLACK;
    let attempted = rows.iter().any(|r| {
        let op = r.operation.to_ascii_lowercase();
        let executes = op.contains("confirm") || op.contains("execute") || op.contains("close");
        // A row without a readable time may be recent.
        executes && (r.time == DateTime::<Utc>::default() || r.time >= since)
    });
    if attempted {
        Outcome::Unknown
    } else {
        Outcome::NotExecuted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ApiError;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn selection_follows_its_id_and_falls_to_a_neighbour() {
        let mut sel = PaneSelection::default();
        assert!(sel.sync(ids(&["a", "b", "c"])), "the first row is selected");
        assert_eq!(sel.id.as_deref(), Some("a"));
        sel.id = Some("b".into());
        // Arrivals on top and a re-sort: still b.
        assert!(!sel.sync(ids(&["z", "y", "a", "b", "c"])));
        assert_eq!(sel.id.as_deref(), Some("b"));
        // b leaves: the one that took its place (the next older).
        assert!(sel.sync(ids(&["z", "y", "a", "c"])));
        assert_eq!(sel.id.as_deref(), Some("c"));
        // c, the last, leaves with a: the nearest above that is still there.
        assert!(sel.sync(ids(&["z", "y"])));
        assert_eq!(sel.id.as_deref(), Some("y"));
        // An emptied list keeps the last selected; the next arrival takes over from it.
        assert!(!sel.sync(vec![]));
        assert_eq!(sel.id.as_deref(), Some("y"));
        assert!(sel.sync(ids(&["n"])));
        assert_eq!(sel.id.as_deref(), Some("n"));
    }

    fn t() -> DateTime<Utc> {
        "2026-06-01T12:00:00Z".parse().unwrap()
    }

    /// A word the service uses that this console does not know may mean anything, an execution
    /// included: it is shown as said and offered for no decision, before or after its expiry.
    #[test]
    fn a_status_this_console_does_not_know_is_shown_and_never_approvable() {
        let item = |status: ProposalStatus| InboxItem {
            proposal: Proposal {
                proposal_id: "p1".into(),
                status,
                expires_at: Some(t() + TimeDelta::minutes(5)),
                ..Proposal::default()
            },
            source: Source::Service,
            local: LocalState::None,
            first_seen: t(),
            expiry_noted: false,
            tool: None,
            request: None,
        };
        assert!(item(ProposalStatus::Staged).can_approve(t()));
        for (word, shown) in [("filled", "filled"), ("", "no status")] {
            let odd = item(ProposalStatus::from(word));
            for now in [t(), t() + TimeDelta::minutes(10)] {
                assert_eq!(odd.status(now), Status::Unrecognised, "{word:?}");
                assert!(!odd.can_approve(now), "{word:?}");
                assert_eq!(odd.status_text(now), shown);
            }
            assert_eq!(outcome_of(&odd.proposal), Outcome::Unknown, "{word:?}");
        }
    }

    #[test]
    fn a_log_that_names_no_proposal_proves_absence_when_nothing_executed_since_the_staging() {
        let audit = |rows: Vec<AuditEntry>| Evidence {
            proposals: None,
            audit: Ok(rows),
        };
        let at = |op: &str, secs: i64| AuditEntry {
            operation: op.into(),
            outcome: "ok".into(),
            time: t() + TimeDelta::seconds(secs),
            ..AuditEntry::default()
        };
        // The deployment's log: the staging and nothing after it.
        let staged_only = audit(vec![at("propose_trade", 0)]);
        assert_eq!(outcome("p1", t(), &staged_only), Outcome::NotExecuted);
        // An execution long before the staging is another proposal's.
        let old = audit(vec![at("confirm_trade", -3_600), at("propose_trade", 0)]);
        assert_eq!(outcome("p1", t(), &old), Outcome::NotExecuted);
        // One since, or one whose time cannot be read, may be this proposal's.
        let since = audit(vec![at("propose_trade", 0), at("confirm_trade", 5)]);
        assert_eq!(outcome("p1", t(), &since), Outcome::Unknown);
        let untimed = audit(vec![AuditEntry {
            operation: "confirm_trade".into(),
            outcome: "ok".into(),
            ..AuditEntry::default()
        }]);
        assert_eq!(outcome("p1", t(), &untimed), Outcome::Unknown);
    }

    fn row(id: Option<&str>, op: &str, outcome: &str) -> AuditEntry {
        AuditEntry {
            operation: op.into(),
            outcome: outcome.into(),
            proposal_id: id.map(String::from),
            oid: Some(9),
            ..AuditEntry::default()
        }
    }

    #[test]
    fn the_audit_log_proves_absence_only_when_it_names_proposals_and_is_not_full() {
        let audit = |rows: Vec<AuditEntry>| Evidence {
            proposals: None,
            audit: Ok(rows),
        };
        let executed = outcome(
            "p1",
            t(),
            &audit(vec![row(Some("p1"), "confirm_trade", "ok")]),
        );
        assert_eq!(
            executed,
            Outcome::Executed("executed (confirm_trade ok in the audit log, oid 9)".into())
        );
        // Its staging is not its execution; a failed attempt is not one either.
        let staged = audit(vec![
            row(Some("p1"), "propose_trade", "ok"),
            row(Some("p1"), "confirm_trade", "error"),
        ]);
        assert_eq!(outcome("p1", t(), &staged), Outcome::NotExecuted);
        assert_eq!(
            outcome("p1", t(), &audit(vec![row(None, "confirm_trade", "ok")])),
            Outcome::Unknown
        );
        let full: Vec<AuditEntry> = (0..AUDIT_WINDOW)
            .map(|_| row(Some("other"), "confirm_trade", "ok"))
            .collect();
        assert_eq!(outcome("p1", t(), &audit(full)), Outcome::Unknown);
        // The list, when it has the proposal, decides over the log.
        let mut p = Proposal {
            proposal_id: "p1".into(),
            status: ProposalStatus::Staged,
            ..Proposal::default()
        };
        let both = |p: Proposal| Evidence {
            proposals: Some(Ok(vec![p])),
            audit: Ok(vec![row(Some("p1"), "confirm_trade", "ok")]),
        };
        assert_eq!(outcome("p1", t(), &both(p.clone())), Outcome::NotExecuted);
        p.status = ProposalStatus::Failed;
        assert_eq!(
            outcome("p1", t(), &both(p)),
            Outcome::Failed("the service marked it failed".into())
        );
        assert!(
            Evidence {
                proposals: Some(Err(ApiError::Transport("refused".into()))),
                audit: Err(ApiError::Transport("refused".into())),
            }
            .unreachable()
        );
        assert!(
            !Evidence {
                proposals: None,
                audit: Err(ApiError::AuditUnavailable {
                    message: "down".into()
                }),
            }
            .unreachable()
        );
    }
}
