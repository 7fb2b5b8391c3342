//! The supervisor API of a gateway (`/gate/v1`): its inbox items and agents, as the gateway writes
//! them (README "The supervisor API"). Not catalog operations: they exist only on a gateway.

use super::{Extra, Preview};
use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The note of a gateway item approved but not yet run because the upstream asked to wait (a quota
/// or rate limit: nothing was done, the proposal is still staged), followed by the time it may run
/// again in RFC 3339 ([`Hold::RateLimited`]).
pub const RATE_LIMITED_NOTE: &str = "rate limited by the service — retry after";

pub fn rate_limited_note(until: DateTime<Utc>) -> String {
    Hold::RateLimited { until }.to_string()
}

/// The time in a [`RATE_LIMITED_NOTE`] note.
pub fn rate_limited_until(note: &str) -> Option<DateTime<Utc>> {
    match Hold::from(note) {
        Hold::RateLimited { until } => Some(until),
        _ => None,
    }
}

const WAITING_FOR_KEY: &str = "waiting for the agent to reconnect";
const RECOVERED: &str =
    "the gateway stopped while executing this item; it runs again with the agent's key";
const OUTCOME_UNKNOWN: &str = "outcome unknown: the gateway stopped while executing it; it asks \
     the service again (which runs it at most once) on the agent's next request";
const NOT_RUN: &str = "not executed: the gateway stopped before the service ran it; it runs on \
     the agent's next request";
const EXECUTED_BEFORE_STOP: &str =
    "executed before the gateway stopped (the service's proposals say so)";
const ASKING_AGAIN: (&str, &str) = ("outcome unknown, asking the service again (", ")");
const TOKEN_USED: (&str, &str) = (
    "outcome unknown: the service says the confirm token was used and not how that call ended (",
    ")",
);
const EXECUTED_EARLIER: (&str, &str) = (
    "executed by an earlier attempt whose answer was lost (the service says: ",
    ")",
);

/// Why an approved item has not run, or what the gateway knows of an execution whose answer did
/// not say plainly how it ended. The gateway decides on it (who runs an item, when, whether to ask
/// the service again); on the wire and in the store it is the item's `note`, in the words
/// [`Hold`]'s `Display` writes, which [`Hold::from`] reads back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hold {
    /// Approved while no instance held the agent's key: it runs on the agent's next request, or on
    /// the instance that holds the key.
    WaitingForKey,
    /// The service asked to wait (a quota or rate limit); nothing was done, and nobody's call
    /// reaches the service for it before `until`.
    RateLimited { until: DateTime<Utc> },
    /// A gateway stopped while executing it; reconciliation asks the service what happened.
    Recovered,
    /// Reconciled: the service never ran it; it runs on the agent's next request.
    NotRun,
    /// Reconciled: the service could not tell; the next attempt asks it again (it runs a proposal
    /// at most once).
    OutcomeUnknown,
    /// The execution's answer was lost (`code`: `message` of the error); the gateway asks again
    /// until it knows or the item expires.
    AskingAgain { code: String, message: String },
    /// The service says the tool's confirm token was used, not how that call ended (its words).
    TokenUsed { said: String },
    /// Executed by an earlier attempt whose answer was lost; the service's words.
    ExecutedEarlier { said: String },
    /// Reconciled as executed: the service's proposals say so.
    ExecutedBeforeStop,
    /// A note this version does not write (another version's gateway): shown as it is, never
    /// decided on.
    Other(String),
}

impl std::fmt::Display for Hold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let wrapped = |f: &mut std::fmt::Formatter<'_>,
                       (open, close): (&str, &str),
                       inner: &str| { write!(f, "{open}{inner}{close}") };
        match self {
            Hold::WaitingForKey => f.write_str(WAITING_FOR_KEY),
            Hold::RateLimited { until } => write!(
                f,
                "{RATE_LIMITED_NOTE} {}",
                until.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ),
            Hold::Recovered => f.write_str(RECOVERED),
            Hold::NotRun => f.write_str(NOT_RUN),
            Hold::OutcomeUnknown => f.write_str(OUTCOME_UNKNOWN),
            Hold::AskingAgain { code, message } => {
                wrapped(f, ASKING_AGAIN, &format!("{code}: {message}"))
            }
            Hold::TokenUsed { said } => wrapped(f, TOKEN_USED, said),
            Hold::ExecutedEarlier { said } => wrapped(f, EXECUTED_EARLIER, said),
            Hold::ExecutedBeforeStop => f.write_str(EXECUTED_BEFORE_STOP),
            Hold::Other(text) => f.write_str(text),
        }
    }
}

impl From<&str> for Hold {
    /// Reads a note back; a text no variant writes is [`Hold::Other`].
    fn from(note: &str) -> Hold {
        let inner = |(open, close): (&str, &str)| {
            note.strip_prefix(open)
                .and_then(|rest| rest.strip_suffix(close))
                .map(str::to_string)
        };
        let fixed = [
            (WAITING_FOR_KEY, Hold::WaitingForKey),
            (RECOVERED, Hold::Recovered),
            (NOT_RUN, Hold::NotRun),
            (OUTCOME_UNKNOWN, Hold::OutcomeUnknown),
            (EXECUTED_BEFORE_STOP, Hold::ExecutedBeforeStop),
        ];
        if let Some((_, hold)) = fixed.into_iter().find(|(text, _)| *text == note) {
            return hold;
        }
        if let Some(until) = note
            .strip_prefix(RATE_LIMITED_NOTE)
            .and_then(|rest| DateTime::parse_from_rfc3339(rest.trim()).ok())
        {
            return Hold::RateLimited {
                until: until.with_timezone(&Utc),
            };
        }
        if let Some((code, message)) = inner(ASKING_AGAIN)
            .as_deref()
            .and_then(|s| s.split_once(": "))
        {
            return Hold::AskingAgain {
                code: code.to_string(),
                message: message.to_string(),
            };
        }
        if let Some(said) = inner(TOKEN_USED) {
            return Hold::TokenUsed { said };
        }
        if let Some(said) = inner(EXECUTED_EARLIER) {
            return Hold::ExecutedEarlier { said };
        }
        Hold::Other(note.to_string())
    }
}

impl Serialize for Hold {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Hold {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        Ok(Hold::from(text.as_ref()))
    }
}

impl schemars::JsonSchema for Hold {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Hold".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(g)
    }
}

/// Where a gateway item is in its life (its `status` on the wire). `Executing` is the claim that makes the upstream confirm happen once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ItemStatus {
    Pending,
    Approved,
    Executing,
    /// The upstream answered the execution with a success.
    Executed,
    /// The upstream answered the execution with an error; `result` holds it.
    Failed,
    Rejected,
    Expired,
    /// A state this version does not know (a newer gateway's): shown, never acted on. The store
    /// never holds one ([`ItemStatus::parse`] does not read it), and a console does not offer to
    /// decide it.
    #[serde(other)]
    Unknown,
}

impl std::fmt::Display for ItemStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ItemStatus {
    pub const ALL: [ItemStatus; 7] = [
        ItemStatus::Pending,
        ItemStatus::Approved,
        ItemStatus::Executing,
        ItemStatus::Executed,
        ItemStatus::Failed,
        ItemStatus::Rejected,
        ItemStatus::Expired,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ItemStatus::Pending => "pending",
            ItemStatus::Approved => "approved",
            ItemStatus::Executing => "executing",
            ItemStatus::Executed => "executed",
            ItemStatus::Failed => "failed",
            ItemStatus::Rejected => "rejected",
            ItemStatus::Expired => "expired",
            ItemStatus::Unknown => "unknown",
        }
    }

    pub fn parse(s: &str) -> Option<ItemStatus> {
        ItemStatus::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// One staging an agent made through the gateway.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "InboxItem")]
pub struct GateItem {
    pub id: String,
    /// The agent's name, else its key fingerprint.
    #[serde(default)]
    pub agent: String,
    #[serde(default)]
    pub agent_fingerprint: String,
    /// The agent's messengerId.
    #[serde(default)]
    pub account: Option<String>,
    /// `trade`, `close`, `close_all` or `tool:<name>`.
    #[serde(default)]
    pub kind: String,
    /// Required: an item whose state is not said is not one a console may act on.
    pub status: ItemStatus,
    #[serde(default)]
    pub proposal_id: Option<String>,
    #[serde(default)]
    pub request: Value,
    #[serde(default)]
    pub preview: Value,
    #[serde(default)]
    pub expires_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub created_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub decided_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub decided_by: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    /// The upstream's answer to the execution: `{"status", "body"}`.
    #[serde(default)]
    pub result: Option<Value>,
    /// Why an approved item has not run, and the like; absent when there is nothing to say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<Hold>,
    /// Every policy rule's verdict at staging time.
    #[serde(default)]
    pub verdicts: Vec<GateVerdict>,
    /// The standing approval that approved the item, when one did.
    #[serde(default)]
    pub standing_approval: Option<i64>,
    /// USD notional of the trade that will execute, as the rules and the daily counter use it.
    #[serde(default)]
    pub notional: Option<f64>,
    /// The trade that will execute (the service's preview wins over the request), as the rules
    /// judge it; absent for an item that does not trade.
    #[serde(default)]
    pub trade: Option<GateTrade>,
    /// Why the item cannot be judged (its stored request does not read as its operation's): no
    /// one may approve it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trade_error: Option<String>,
    /// The digest an approval binds to (journaled with the decision).
    #[serde(default)]
    pub trade_digest: Option<String>,
    /// The supervisors' approvals so far, in order; the item executes on the one that reaches
    /// `approvalsRequired`.
    #[serde(default)]
    pub approvals: Vec<GateApproval>,
    /// How many distinct supervisors must approve: 1, or the policy's `step_up_approvals` for an
    /// item above `step_up_notional_usd`. A gateway before step-up approvals sends none: 1.
    #[serde(default = "one")]
    pub approvals_required: u32,
    /// The supervisor (token label) who staged it from a console: its approval never counts
    /// towards a step-up item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staged_by: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

fn one() -> u32 {
    1
}

/// Where a step-up item's approvals stand ("1 of 2 approvals (alice)"); `None` for an item one
/// approval executes. The gateway's answers and pages and the console say it in these words.
pub fn quorum(approvals: &[GateApproval], required: u32) -> Option<String> {
    if required <= 1 {
        return None;
    }
    let by: Vec<&str> = approvals.iter().map(|a| a.by.as_str()).collect();
    Some(format!(
        "{} of {required} approvals{}",
        by.len(),
        match by.is_empty() {
            true => String::new(),
            false => format!(" ({})", by.join(", ")),
        }
    ))
}

/// One supervisor's approval of an item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GateApproval {
    /// The token's label.
    pub by: String,
    pub at: DateTime<Utc>,
    /// The rules this approval overrode (an admin's). Each approval of a step-up item overrides
    /// for itself what the trade breaks when it is given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
}

/// The canonical trade of an item (README "The strict reading"): what the gateway judged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateTrade {
    #[serde(default)]
    pub operation: String,
    #[serde(default)]
    pub coin: Option<String>,
    /// `long`, `short`, `close` or `cancel`.
    #[serde(default)]
    pub side: Option<String>,
    /// Coins.
    #[serde(default)]
    pub size: Option<f64>,
    /// USD.
    #[serde(default)]
    pub notional: Option<f64>,
    #[serde(default)]
    pub leverage: Option<f64>,
    #[serde(default)]
    pub stop_loss: bool,
    #[serde(default)]
    pub reduces: bool,
    #[serde(default)]
    pub removes_stop_loss: bool,
    /// `preview` (the service priced it) or `request` (the checked request with the stated
    /// defaults).
    #[serde(default)]
    pub priced_by: String,
    /// Values nobody states, with why.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub unknown: std::collections::BTreeMap<String, String>,
    /// Where the service's preview says other than the request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disagreements: Vec<String>,
}

impl GateItem {
    /// The trade preview, when the item is a trade or a close the upstream previewed.
    pub fn trade_preview(&self) -> Preview {
        super::lenient::preview(self.preview.clone())
    }

    /// The upstream's answer body to the execution, when it ran.
    pub fn result_body(&self) -> Option<&Value> {
        self.result.as_ref().and_then(|r| r.get("body"))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GateInbox {
    #[serde(default)]
    pub items: Vec<GateItem>,
    /// The gateway's count of changes when it answered: sent back as `since`, a long poll is
    /// answered once it moves. Absent from gateways that cannot be long-polled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
}

/// The answer to an approve or a reject: the item after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GateDecision {
    pub item: GateItem,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateAgent {
    /// The name, else the fingerprint.
    #[serde(default)]
    pub agent: String,
    #[serde(default)]
    pub fingerprint: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub account: Option<String>,
    #[serde(default)]
    pub first_seen: Option<DateTime<Utc>>,
    #[serde(default)]
    pub last_seen: Option<DateTime<Utc>>,
    /// The gateway holds the agent's key now (it can execute an approval at once).
    #[serde(default)]
    pub connected: bool,
    #[serde(default)]
    pub pending: u64,
    /// How the agent connects now: `rest` or `mcp` (absent: not since the gateway started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// The MCP client the agent named in its `initialize` (`clientInfo.name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_version: Option<String>,
    /// Absent from gateways older than suspensions, whose agents are all active.
    #[serde(default)]
    pub state: GateAgentState,
    /// While the agent is suspended: why, by whom, since when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspension: Option<GateSuspension>,
    /// Its trades executed since UTC midnight (items and immediate trades that added exposure),
    /// and their USD notional: what `max_executions_per_hour` and `max_daily_notional_usd` count.
    #[serde(default)]
    pub executions_today: u64,
    #[serde(default)]
    pub notional_today: f64,
}

/// Whether an agent may add exposure: a suspended one's stagings, immediate trades and pending
/// items are refused (403 `agent_suspended`) until an admin resumes it; its closes and cancels
/// pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GateAgentState {
    #[default]
    Active,
    Suspended,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GateSuspension {
    pub reason: String,
    /// The supervisor's label, or `policy` when a policy rule suspended the agent.
    pub by: String,
    pub at: DateTime<Utc>,
}

/// `POST /gate/v1/agents/{label}/suspend`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateSuspendRequest {
    /// Why: the agent is told it with every refusal, and the journal keeps it.
    #[schemars(length(min = 1, max = 500))]
    pub reason: String,
}

/// The answer to a suspend or a resume: the agents the label named, as they are now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GateAgentsChanged {
    /// Whether this call changed anything (false: each was suspended, or active, already).
    pub changed: bool,
    pub agents: Vec<GateAgent>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GateInfo {
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub upstream: String,
}

/// The supervisor token that asked, and what it may do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GateSupervisor {
    #[serde(default)]
    pub label: String,
    /// `viewer`, `approver` or `admin`.
    #[serde(default)]
    pub role: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GateAgents {
    #[serde(default)]
    pub gateway: Option<GateInfo>,
    /// Absent from gateways older than roles (every token could do everything).
    #[serde(default)]
    pub you: Option<GateSupervisor>,
    #[serde(default)]
    pub agents: Vec<GateAgent>,
}

/// One policy rule's answer for one trade (`verdicts` of an item or of a check).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GateVerdict {
    pub rule: String,
    pub ok: bool,
    #[serde(default)]
    pub limit: Value,
    #[serde(default)]
    pub value: Value,
    /// Passes, at or past 80% of its limit.
    #[serde(default)]
    pub near: bool,
    #[serde(default)]
    pub message: String,
}

/// The kill switch as the gateway holds it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct GateKillSwitch {
    #[serde(default)]
    pub on: bool,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub by: Option<String>,
    #[serde(default)]
    pub at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateKillSwitchAnswer {
    pub kill_switch: GateKillSwitch,
}

/// `GET /gate/v1/inbox/{id}/check`: the verdicts an approval would meet now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateCheck {
    #[serde(default)]
    pub id: String,
    pub status: ItemStatus,
    #[serde(default)]
    pub verdicts: Vec<GateVerdict>,
    /// The rules an approval now has to override.
    #[serde(default)]
    pub needs_override: Vec<String>,
    #[serde(default)]
    pub kill_switch: GateCheckKill,
    /// The approvals so far, and how many an approval now needs (the step judged on the trade
    /// as it is now, never fewer than at staging).
    #[serde(default)]
    pub approvals: Vec<GateApproval>,
    #[serde(default = "one")]
    pub approvals_required: u32,
    /// The asking supervisor (its token's label): whether its approval counts, and is the one
    /// that executes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub you: Option<String>,
    /// The agent's suspension, when it refuses this item's approval (the item adds exposure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspension: Option<GateSuspension>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct GateCheckKill {
    #[serde(default)]
    pub on: bool,
    #[serde(default)]
    pub reason: Option<String>,
    /// The kill switch refuses this item's approval (it adds exposure).
    #[serde(default)]
    pub blocks: bool,
}

/// What a standing approval approved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateStandingItem {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub proposal_id: Option<String>,
    #[serde(default)]
    pub kind: String,
    pub status: ItemStatus,
    #[serde(default)]
    pub notional: Option<f64>,
    #[serde(default)]
    pub created_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateStanding {
    pub id: i64,
    /// An agent's label, or `*` for every agent.
    #[serde(default)]
    pub agent: String,
    /// Empty: every coin.
    #[serde(default)]
    pub coins: Vec<String>,
    #[serde(default)]
    pub max_notional_usd: f64,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub created_by: Option<String>,
    #[serde(default)]
    pub created_at: Option<DateTime<Utc>>,
    pub expires_at: DateTime<Utc>,
    /// Seconds left when the gateway answered.
    #[serde(default)]
    pub remaining_secs: Option<i64>,
    #[serde(default)]
    pub approved: Vec<GateStandingItem>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateStandingList {
    #[serde(default)]
    pub standing_approvals: Vec<GateStanding>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateStandingCreated {
    pub standing_approval: GateStanding,
}

/// A standing approval to create: `POST /gate/v1/standing-approvals`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GateStandingRequest {
    /// An agent's label (name or fingerprint), or `*` for every agent.
    #[schemars(length(min = 1))]
    pub agent: String,
    /// Coins it covers (`BTC`, `btc-perp`); none: every coin.
    #[serde(default)]
    pub coins: Vec<String>,
    /// The largest USD notional a staging it approves may have.
    #[schemars(extend("minimum" = 0, "exclusiveMinimum" = true))]
    pub max_notional_usd: f64,
    /// How long it lasts, at most a week.
    #[schemars(range(min = 1, max = 10080))]
    pub minutes: u64,
    /// Why trades of this kind need no click; journaled.
    #[schemars(length(min = 1))]
    pub reason: String,
}

/// One set of policy rules as the gateway writes them (snake_case, as in `[policy]`); unset means
/// no limit (at the top level) or "as the default" (in an agent's table).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct GateRules {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_coins: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_notional_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_leverage: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_stop_loss: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_open_positions: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_daily_notional_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_loss_limit_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_immediate: Option<bool>,
    /// Rules a newer gateway knows and this console does not: shown as written, never dropped.
    #[serde(flatten)]
    pub other: std::collections::BTreeMap<String, Value>,
}

/// The policy in force: the default rules and each agent's overrides (by label).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct GatePolicyRules {
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub agents: std::collections::BTreeMap<String, GateRules>,
    #[serde(flatten)]
    pub rules: GateRules,
}

/// One agent's notional executed this UTC day, against its daily limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateDailyUse {
    pub agent: String,
    #[serde(default)]
    pub fingerprint: String,
    pub executed_notional_usd: f64,
    #[serde(default)]
    pub max_daily_notional_usd: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GateToday {
    /// The start of the UTC day the amounts count from.
    pub since: DateTime<Utc>,
    #[serde(default)]
    pub agents: Vec<GateDailyUse>,
}

/// `GET /gate/v1/policy`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GatePolicy {
    pub policy: GatePolicyRules,
    #[serde(default)]
    pub rules: Vec<String>,
    /// Absent from gateways older than the daily-use report.
    #[serde(default)]
    pub today: Option<GateToday>,
}

/// `PUT /gate/v1/policy`: the policy now in force, and whether the request changed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GatePolicyChanged {
    pub changed: bool,
    pub policy: GatePolicyRules,
}

/// `DELETE /gate/v1/standing-approvals/{id}`: the id of the standing approval that ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GateRevoked {
    pub revoked: i64,
}

/// `POST /gate/v1/inbox/{id}/link`: a single-use approval link for a pending item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateLink {
    /// `<public url>/gate/approve/<token>`.
    pub url: String,
    pub item_id: String,
    /// The item's expiry, which the link shares (RFC 3339, whole seconds).
    #[schemars(extend("format" = "date-time"))]
    pub expires_at: String,
}

/// `GET /gate/v1/journal`: records oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GateJournal {
    pub records: Vec<GateJournalRecord>,
}

/// One record of the gateway's hash-chained journal of decisions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateJournalRecord {
    pub seq: i64,
    /// When it was written, as the chain hashed it.
    pub at: String,
    /// `approve`, `reject`, `auto_approve`, `kill_switch_on`, `policy_change`, and the like.
    pub kind: String,
    /// The supervisor's label, `standing approval N`, or `gateway`.
    pub actor: String,
    pub item: Option<String>,
    /// What the decision was about, as journaled (text when it was not JSON).
    pub detail: Value,
    pub prev_hash: String,
    pub hash: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The notes stored and served before holds were types: the wire and the databases keep
    /// them, so each must read back as its hold and be written again word for word.
    #[test]
    fn every_hold_reads_back_from_the_words_it_is_written_in() {
        let until: DateTime<Utc> = "2026-06-01T12:00:42Z".parse().unwrap();
        let cases = [
            (Hold::WaitingForKey, "waiting for the agent to reconnect"),
            (
                Hold::RateLimited { until },
                "rate limited by the service — retry after 2026-06-01T12:00:42Z",
            ),
            (
                Hold::Recovered,
                "the gateway stopped while executing this item; it runs again with the agent's key",
            ),
            (
                Hold::NotRun,
                "not executed: the gateway stopped before the service ran it; it runs on the \
                 agent's next request",
            ),
            (
                Hold::OutcomeUnknown,
                "outcome unknown: the gateway stopped while executing it; it asks the service \
                 again (which runs it at most once) on the agent's next request",
            ),
            (
                Hold::AskingAgain {
                    code: "upstream_timeout".into(),
                    message: "the upstream did not answer: within 30 s".into(),
                },
                "outcome unknown, asking the service again (upstream_timeout: the upstream did \
                 not answer: within 30 s)",
            ),
            (
                Hold::TokenUsed {
                    said: "token already used (x)".into(),
                },
                "outcome unknown: the service says the confirm token was used and not how that \
                 call ended (token already used (x))",
            ),
            (
                Hold::ExecutedEarlier {
                    said: "already executed".into(),
                },
                "executed by an earlier attempt whose answer was lost (the service says: already \
                 executed)",
            ),
            (
                Hold::ExecutedBeforeStop,
                "executed before the gateway stopped (the service's proposals say so)",
            ),
            (
                Hold::Other("a newer gateway's note".into()),
                "a newer gateway's note",
            ),
        ];
        for (hold, text) in cases {
            assert_eq!(hold.to_string(), text);
            assert_eq!(Hold::from(text), hold, "{text}");
            let json = serde_json::to_value(&hold).unwrap();
            assert_eq!(json, serde_json::json!(text));
            assert_eq!(serde_json::from_value::<Hold>(json).unwrap(), hold);
        }
        assert_eq!(rate_limited_until(&rate_limited_note(until)), Some(until));
    }

    /// A newer gateway's state reads as Unknown, so one item cannot make a console drop the
    /// whole inbox; the store never reads it back as a state of its own.
    #[test]
    fn a_status_this_version_does_not_know_is_unknown_not_an_error() {
        let item: GateItem =
            serde_json::from_value(serde_json::json!({"id": "gi_1", "status": "archived"}))
                .unwrap();
        assert_eq!(item.status, ItemStatus::Unknown);
        assert_eq!(ItemStatus::parse("unknown"), None);
        assert_eq!(ItemStatus::parse("executed"), Some(ItemStatus::Executed));
        let missing = serde_json::from_value::<GateItem>(serde_json::json!({"id": "gi_1"}));
        assert!(missing.is_err(), "an item without a status is refused");
    }
}
