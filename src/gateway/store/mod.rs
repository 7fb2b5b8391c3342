//! What the gateway remembers: inbox items and their decisions, agent labels, supervisor tokens.
//!
//! A trait because one gateway keeps it in SQLite and several gateways serving one team will share a
//! PostgreSQL database; everything that must happen exactly once is a conditional update behind
//! [`Store::transition`], so it holds across instances too. Keys are never stored: agents are known
//! by the SHA-256 of their key, supervisor tokens by the SHA-256 of the token.

#[cfg(test)]
mod conformance;
pub mod detail;
pub mod postgres;
pub mod sqlite;
mod sqlite_journal;
mod sqlite_schema;
mod sqlite_suspensions;
pub mod watched;

use super::model::error::{GateError, Kind};
pub use super::model::journal::JournalRow;
pub use crate::api::model::Hold;
use crate::api::model::{GateApproval, GateVerdict};
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde_json::Value;

pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;
pub use watched::Watched;

/// Where an item is in its life: the supervisor API's own type, so the store, the flow and the
/// console name one set of states.
pub use crate::api::model::ItemStatus as Status;

/// How an approved item is executed upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exec {
    /// `POST /api/delegated/confirm {proposalId}`.
    Confirm,
    /// `POST /api/delegated/positions/close {proposalId}`: a close staged through close_position.
    Close,
    /// `POST /api/delegated/mcp/tool` with the first call's args plus `confirmToken`.
    Tool,
}

impl Exec {
    pub fn as_str(self) -> &'static str {
        match self {
            Exec::Confirm => "confirm",
            Exec::Close => "close",
            Exec::Tool => "tool",
        }
    }

    pub fn parse(s: &str) -> Option<Exec> {
        [Exec::Confirm, Exec::Close, Exec::Tool]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

/// Items by status and journal records by kind (see [`Store::counts`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    pub items: Vec<(String, i64)>,
    pub journal: Vec<(String, i64)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub id: String,
    /// SHA-256 (hex) of the proposing agent's key.
    pub agent: String,
    pub account: Option<String>,
    /// `trade`, `close`, `close_all`, or `tool:<tool name>`.
    pub kind: String,
    pub exec: Exec,
    pub proposal_id: Option<String>,
    pub confirm_token: Option<String>,
    pub request: Value,
    pub preview: Value,
    pub expires_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub status: Status,
    pub decided_at: Option<DateTime<Utc>>,
    pub decided_by: Option<String>,
    pub reason: Option<String>,
    /// The upstream's answer to the execution.
    pub result: Option<Execution>,
    /// Why an approved item has not run yet, or what is known of an execution that did not say
    /// how it ended.
    pub note: Option<Hold>,
    /// USD notional the staging asked for, when it named one; counted against the daily limit once
    /// executed.
    pub notional: Option<f64>,
    /// Every policy rule's verdict at staging: `[{"rule", "ok", "limit", "value", "near", "message"}]`.
    pub verdicts: Option<Vec<GateVerdict>>,
    /// The standing approval that approved it, if one did.
    pub standing: Option<i64>,
    /// The supervisors' approvals so far, in order.
    pub approvals: Vec<GateApproval>,
    /// Distinct supervisors' approvals it needs, as judged at staging (an approval judges again
    /// and never asks for fewer).
    pub approvals_required: u32,
    /// The supervisor whose console staged it: never one of its approvers when it needs more
    /// than one.
    pub staged_by: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    pub key_hash: String,
    /// The project's key fingerprint: the first 8 hex digits of the key's SHA-256.
    pub fingerprint: String,
    pub name: Option<String>,
    pub account: Option<String>,
    pub first_seen: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
}

impl Agent {
    /// What people read: the name given with `agentdesk gate agent name`, else the fingerprint.
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.fingerprint)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub id: i64,
    pub label: String,
    pub role: Role,
    pub created_at: DateTime<Utc>,
}

/// What a supervisor token may do. Ordered: each role may do what the ones before it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Reads the inbox, the journal, the policy, agents, standing approvals, the kill switch.
    Viewer,
    /// Also decides items (approve, reject) and uses approval links.
    Approver,
    /// Also changes the policy, standing approvals and the kill switch, and mints links for
    /// others. Tokens minted before roles existed are admins: they keep the powers they had.
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Approver, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Approver => "approver",
            Role::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// One row of an inbox listing ([`Store::listing`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub id: String,
    /// The row's revision: the database moves it on every change to the row, whoever makes it
    /// (a trigger, so another instance, another process on the file or a write path added later
    /// cannot forget to).
    pub rev: i64,
    /// The row, unless the caller said it holds this revision already.
    pub item: Option<Item>,
}

/// Whether the caller holds an item (id) at a revision already: see [`Store::listing`].
pub type Held = std::sync::Arc<dyn Fn(&str, i64) -> bool + Send + Sync>;

/// Which item: by the gateway's id, an upstream proposalId, or a tool's confirmToken.
#[derive(Debug, Clone, Copy)]
pub enum ItemRef<'a> {
    IdOrProposal(&'a str),
    Proposal(&'a str),
    ConfirmToken(&'a str),
}

/// The upstream's answer to an item's execution, as the gateway keeps it and answers the agent's
/// confirm with (stored and listed as `{"status", "body"}`, and `"reconciled": true` when a restart
/// found it in the service's records instead).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Execution {
    /// The HTTP status the upstream answered with.
    pub status: u16,
    #[serde(default)]
    pub body: Value,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reconciled: bool,
}

impl Execution {
    /// As the store keeps it and the supervisor API lists it.
    pub fn json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// What a store could not do. Callers answer each the same way (the store is unavailable, see
/// `GateError::store`); the kinds are for the log and for tests.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("gateway store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The server's own message (constraint, syntax, connection refused) is in the source.
    #[error("gateway store: {}", with_source(.0))]
    Postgres(#[from] tokio_postgres::Error),
    /// The pool gave no connection (timed out, closed).
    #[error("gateway store: {0}")]
    Pool(deadpool_postgres::PoolError),
    /// The pool's settings, as they were read.
    #[error("gateway store: {0}")]
    Config(String),
    #[error("gateway store: {0}")]
    Target(#[source] postgres::tls::TargetError),
    #[error(
        "gateway store: the database is at schema version {found}, newer than this agentdesk \
         ({known}); upgrade agentdesk"
    )]
    NewerSchema { found: i64, known: usize },
    /// A row whose value no version of this store writes.
    #[error("gateway store: unknown {what} {value:?}")]
    Unreadable { what: &'static str, value: String },
    #[error("gateway store: store task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

fn with_source(e: &tokio_postgres::Error) -> String {
    match std::error::Error::source(e) {
        Some(s) => format!("{e}: {s}"),
        None => e.to_string(),
    }
}

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        match e {
            deadpool_postgres::PoolError::Backend(e) => StoreError::Postgres(e),
            other => StoreError::Pool(other),
        }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// An item's stored verdicts as read: a row whose verdicts do not read (no version writes one)
/// lists as judged by no rule, rather than taking the whole inbox down with it; the approval
/// judges the item again anyway.
fn verdicts_of(
    read: Result<Option<Vec<GateVerdict>>, serde_json::Error>,
) -> Option<Vec<GateVerdict>> {
    read.unwrap_or_else(|e| {
        tracing::warn!("an inbox item's stored verdicts do not read ({e}); shown as none");
        None
    })
}

impl GateError {
    /// What every caller answers when the store fails: the details go to the log, the caller
    /// hears the store is unavailable. Here rather than with [`GateError`] because the error
    /// vocabulary sits below the store.
    pub fn store(e: StoreError) -> Self {
        tracing::error!("{e}");
        GateError::new(
            Kind::Unavailable,
            "gateway_store_unavailable",
            "the gateway's database failed; try again",
        )
    }
}

/// A change of status, applied only if the item is in one of `from` (and, with `unexpired_at`, has
/// not expired by then): the single place concurrent deciders race, and exactly one wins.
#[derive(Debug, Clone)]
pub struct Transition {
    pub from: &'static [Status],
    pub to: Status,
    pub now: DateTime<Utc>,
    pub unexpired_at: Option<DateTime<Utc>>,
    /// Sets `decided_at`/`decided_by` (approve, reject).
    pub decided_by: Option<String>,
    pub reason: Option<String>,
    pub result: Option<Execution>,
    pub note: Option<Hold>,
    /// Appended to the journal in the same transaction, only when the change happened.
    pub record: Option<Record>,
    /// Sets `standing` (an auto-approval).
    pub standing: Option<i64>,
    /// An approval added: applied only if the item still has the approvals it was read with.
    pub approvals: Option<Approvals>,
}

/// One agent's executions in a period.
#[derive(Debug, Clone, PartialEq)]
pub struct Executed {
    pub agent: String,
    pub count: u64,
    pub notional: f64,
}

/// The approvals an item will have, written only if it still has `seen` of them: a supervisor
/// approving meanwhile (on any instance) makes the change miss, and the caller reads again, so
/// no approval is lost and the one that reaches the quorum is the one that moves the item.
#[derive(Debug, Clone)]
pub struct Approvals {
    pub seen: usize,
    pub now: Vec<GateApproval>,
    /// What the approval judged it needs (never fewer than stored).
    pub required: u32,
}

impl Approvals {
    pub fn json(&self) -> String {
        serde_json::to_string(&self.now).unwrap_or_else(|_| "[]".into())
    }
}

impl Transition {
    pub fn new(from: &'static [Status], to: Status, now: DateTime<Utc>) -> Self {
        Transition {
            from,
            to,
            now,
            unexpired_at: None,
            decided_by: None,
            reason: None,
            result: None,
            note: None,
            record: None,
            standing: None,
            approvals: None,
        }
    }

    pub fn journaled(mut self, record: Record) -> Self {
        self.record = Some(record);
        self
    }
}

/// A decision, as it goes into the journal.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub at: DateTime<Utc>,
    /// `approve`, `reject`, `auto_approve`, `override`, `expire`, `kill_switch_on`,
    /// `kill_switch_off`, `policy_change`, `standing_approval_add`, `standing_approval_revoke`,
    /// `agent_suspend`, `agent_resume`.
    pub kind: String,
    /// The supervisor's label, `standing approval N`, or `gateway`.
    pub actor: String,
    pub item: Option<String>,
    pub detail: Value,
}

impl Record {
    /// `detail` is one of [`detail`]'s types for the kind.
    pub fn new(kind: &str, actor: &str, at: DateTime<Utc>, detail: impl serde::Serialize) -> Self {
        Record {
            at,
            kind: kind.into(),
            actor: actor.into(),
            item: None,
            // The details are plain structs of strings, numbers and JSON: they always serialise.
            detail: serde_json::to_value(detail).unwrap_or_default(),
        }
    }

    pub fn item(mut self, id: &str) -> Self {
        self.item = Some(id.into());
        self
    }

    /// The record as the chain's link after the one numbered `seq` with hash `prev_hash`: the
    /// row every store writes, hashed one way.
    pub fn linked(&self, seq: i64, prev_hash: String) -> JournalRow {
        let seq = seq + 1;
        let at = self.at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
        let detail = self.detail.to_string();
        let hash = super::model::journal::hash(
            seq,
            &prev_hash,
            &at,
            &self.kind,
            &self.actor,
            self.item.as_deref(),
            &detail,
        );
        JournalRow {
            seq,
            at,
            kind: self.kind.clone(),
            actor: self.actor.clone(),
            item: self.item.clone(),
            detail,
            prev_hash,
            hash,
        }
    }
}

/// A single-use approval link for one item. Only the SHA-256 of its token is kept.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// SHA-256 (hex) of the token in the link's URL.
    pub token_hash: String,
    pub item_id: String,
    /// Who minted it: the supervisor token's label, or `notification`.
    pub label: String,
    /// The page's forms carry this; a POST without it is refused.
    pub csrf: String,
    pub expires_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    /// Set by the first decision made with it.
    pub spent_at: Option<DateTime<Utc>>,
}

/// "Approve this kind of trade for a while", set by a supervisor.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    pub id: i64,
    /// An agent's label (name or fingerprint), or `*` for every agent.
    pub agent: String,
    /// Base coins (`BTC`); empty means any coin the policy allows.
    pub coins: Vec<String>,
    pub max_notional_usd: f64,
    pub expires_at: DateTime<Utc>,
    pub reason: String,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// An agent stopped by a supervisor or by the policy: what would add exposure is refused for it,
/// on every instance sharing the store, until an admin resumes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Suspension {
    /// SHA-256 (hex) of the agent's key: a suspension follows the key, not a name it may be given.
    pub agent: String,
    pub reason: String,
    /// The supervisor's label, or `policy`.
    pub by: String,
    pub at: DateTime<Utc>,
}

pub trait Store: Send + Sync + 'static {
    /// True when other gateway instances may use the same store at the same time (PostgreSQL):
    /// an instance then learns of approvals made elsewhere by polling, and takes over only the
    /// executions another instance left stale.
    fn shared(&self) -> bool {
        false
    }

    /// A count of this process's changes to the store, when it keeps one (the [`Watched`]
    /// decorator every gateway opens its store with): the inbox's long poll waits on it.
    fn changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }

    /// False when an item for the same proposalId or confirmToken exists already (an upstream that
    /// answers a retried staging with the proposal it staged before).
    fn insert_item(&self, item: Item) -> BoxFuture<'_, StoreResult<bool>>;
    fn item(&self, which: ItemRef<'_>) -> BoxFuture<'_, StoreResult<Option<Item>>>;
    /// Newest first; `None` lists every status.
    fn items(&self, status: Option<Status>, limit: usize) -> BoxFuture<'_, StoreResult<Vec<Item>>>;
    /// How many items are in each status, and how many journal records of each kind: what the
    /// gateway's `/metrics` reports, counted by the database so every instance reports the same.
    /// What [`Store::items`] lists, in its order and from one snapshot, each row with its
    /// revision; a row `held` says the caller holds at that revision comes without its content
    /// (neither read nor parsed): the inbox keeps each item's answer and rebuilds only those
    /// that changed.
    fn listing(
        &self,
        status: Option<Status>,
        limit: usize,
        held: Held,
    ) -> BoxFuture<'_, StoreResult<Vec<Listed>>>;
    /// The soonest expiry of a pending or approved item.
    fn next_expiry(&self) -> BoxFuture<'_, StoreResult<Option<DateTime<Utc>>>>;
    fn counts(&self) -> BoxFuture<'_, StoreResult<Counts>>;
    /// Approved items of this agent that have not run.
    fn approved_of(&self, agent: &str) -> BoxFuture<'_, StoreResult<Vec<Item>>>;
    /// True when this call made the change.
    fn transition(&self, id: &str, t: Transition) -> BoxFuture<'_, StoreResult<bool>>;
    /// Pending and approved items past their expiry become expired, each journaled; returns how
    /// many.
    fn expire_due(&self, now: DateTime<Utc>) -> BoxFuture<'_, StoreResult<usize>>;
    /// Items a stopped gateway left mid-execution go back to approved; returns how many. With
    /// `claimed_before`, only those claimed before then (the claimant is presumed dead: a live one
    /// finishes or gives up within its upstream timeout).
    fn recover_executing(
        &self,
        note: Hold,
        claimed_before: Option<DateTime<Utc>>,
    ) -> BoxFuture<'_, StoreResult<usize>>;

    fn agent_seen(
        &self,
        key_hash: &str,
        fingerprint: &str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'_, StoreResult<Agent>>;
    fn set_agent_account(&self, key_hash: &str, account: &str) -> BoxFuture<'_, StoreResult<()>>;
    fn agents(&self) -> BoxFuture<'_, StoreResult<Vec<Agent>>>;
    /// Names every agent whose fingerprint starts with `fingerprint`; returns how many.
    fn name_agent(&self, fingerprint: &str, name: &str) -> BoxFuture<'_, StoreResult<usize>>;

    fn add_token(
        &self,
        hash: &str,
        label: &str,
        role: Role,
        now: DateTime<Utc>,
    ) -> BoxFuture<'_, StoreResult<i64>>;
    fn token(&self, hash: &str) -> BoxFuture<'_, StoreResult<Option<Token>>>;

    /// A piece of shared gateway state (`policy`, `kill_switch`) as JSON.
    fn state(&self, key: &str) -> BoxFuture<'_, StoreResult<Option<Value>>>;
    /// Sets a piece of state and journals the change in one transaction.
    fn set_state(&self, key: &str, value: Value, record: Record) -> BoxFuture<'_, StoreResult<()>>;

    /// Appends one record to the journal's single chain: the previous record's hash is read and
    /// the new one inserted in one write transaction, so concurrent writers (other instances
    /// included) queue behind each other and never fork the chain.
    fn append(&self, record: Record) -> BoxFuture<'_, StoreResult<JournalRow>>;
    /// Records with `seq > after`, oldest first.
    fn journal(&self, after: i64, limit: usize) -> BoxFuture<'_, StoreResult<Vec<JournalRow>>>;

    /// USD notional an agent's trades executed at or after `since`.
    fn executed_since(&self, agent: &str, since: DateTime<Utc>) -> BoxFuture<'_, StoreResult<f64>>;
    /// How many of an agent's trades executed at or after `since` (those counted by
    /// [`Store::executed_since`]).
    fn executions_since(
        &self,
        agent: &str,
        since: DateTime<Utc>,
    ) -> BoxFuture<'_, StoreResult<u64>>;
    /// Every agent's executions at or after `since`, by key hash: how many, and their USD
    /// notional (one read for the agents view, however many agents).
    fn executed_by_agent(&self, since: DateTime<Utc>) -> BoxFuture<'_, StoreResult<Vec<Executed>>>;
    fn add_executed(
        &self,
        agent: &str,
        at: DateTime<Utc>,
        notional: f64,
    ) -> BoxFuture<'_, StoreResult<()>>;

    /// Stores a standing approval (its `id` is assigned) and journals it; returns the id.
    fn add_standing(&self, standing: Standing, record: Record) -> BoxFuture<'_, StoreResult<i64>>;
    /// Standing approvals not revoked and not expired at `now`, oldest first.
    fn standings(&self, now: DateTime<Utc>) -> BoxFuture<'_, StoreResult<Vec<Standing>>>;
    /// True when this call revoked a live one.
    fn revoke_standing(&self, id: i64, record: Record) -> BoxFuture<'_, StoreResult<bool>>;
    /// Items a standing approval approved, newest first.
    fn items_of_standing(&self, id: i64) -> BoxFuture<'_, StoreResult<Vec<Item>>>;

    /// Suspends an agent and journals it in one transaction, unless it is suspended already: the
    /// first suspension's reason stands, so concurrent suspenders (other instances included)
    /// leave one record. True when this call suspended it.
    fn suspend(&self, s: Suspension, record: Record) -> BoxFuture<'_, StoreResult<bool>>;
    /// Ends an agent's suspension and journals it in one transaction; true when it was suspended.
    fn resume(&self, agent: &str, record: Record) -> BoxFuture<'_, StoreResult<bool>>;
    /// The suspensions in force: one agent's (by key hash), or every agent's.
    fn suspensions(&self, agent: Option<&str>) -> BoxFuture<'_, StoreResult<Vec<Suspension>>>;

    /// Stores a new approval link (`spent_at` is ignored: a new link is unspent).
    fn insert_link(&self, link: Link) -> BoxFuture<'_, StoreResult<()>>;
    fn link(&self, token_hash: &str) -> BoxFuture<'_, StoreResult<Option<Link>>>;
    /// Claims the link for a decision: a conditional update (`spent_at IS NULL`), so of concurrent
    /// callers (other instances included) exactly one gets true.
    fn spend_link(&self, token_hash: &str, now: DateTime<Utc>) -> BoxFuture<'_, StoreResult<bool>>;
    /// Gives a claim back when the decision it was for was refused (a rule now broken, the upstream
    /// unreachable before anything was decided), so the link still works.
    fn unspend_link(&self, token_hash: &str) -> BoxFuture<'_, StoreResult<()>>;
}
