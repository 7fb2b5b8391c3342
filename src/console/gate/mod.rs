//! The console on a supervision gateway: whether the service is one, every agent's items from its
//! inbox (`GET /gate/v1/inbox`), its agents, and the inbox's agent filter. Approvals of a gateway
//! go through its supervisor API. Lower layer: the data, which the approval inbox owns (what the
//! gateway holds is merged into it, `inbox/gateway.rs`); App's guardrails read it (`app/guard.rs`).

pub mod agents;
pub mod guard;
pub mod policy;

use super::action::Effect;
use super::poll::Poll;
use super::theme::Theme;
use crate::api::ApiError;
use crate::api::model::{
    GateAgent, GateAgents, GateItem, GateKillSwitch, GatePolicy, GateStanding, ItemStatus,
};
use chrono::{DateTime, Duration as TimeDelta, Utc};
use ratatui::text::Span;
use std::collections::HashMap;
use std::time::Duration;

/// How long the console asks a gateway to hold an inbox poll while nothing changes: an idle
/// console then asks about twice a minute instead of every second (see `?wait=` in docs/gateway.md).
pub const HOLD: Duration = Duration::from_secs(25);

/// While nothing changes, the agents and the kill switch and standing approvals are still asked
/// this often (a long-polled gateway tells of every other change at once).
pub const QUIET_EVERY: TimeDelta = TimeDelta::seconds(60);

/// Decided items stay in the inbox this long after their decision, so an outcome is seen.
pub const RECENT: TimeDelta = TimeDelta::minutes(30);

/// How soon the inbox is polled again while an item this console approved has not executed yet.
pub const AWAIT: TimeDelta = TimeDelta::seconds(1);

/// How often the gateway's agents are asked beside its inbox: labels and connections change
/// rarely, and each request wakes the gateway and the console.
const AGENTS_EVERY: TimeDelta = TimeDelta::seconds(5);

/// A held poll that came back sooner than this with the version it was sent is taken as not held.
const HELD_AT_LEAST: Duration = Duration::from_millis(500);

/// How often the kill switch and the standing approvals are asked. They change only by a
/// supervisor's decision: this console's own is asked after at once, another supervisor's shows
/// within this. Asked with every 1 s inbox poll they doubled the console's requests to the
/// gateway and most of its idle CPU; the gateway refuses what the kill switch forbids either way.
pub const GUARD_EVERY: TimeDelta = TimeDelta::seconds(5);

/// The reason sent with `x` (no reason typed); `/reject <id> <reason>` sends one.
pub const DEFAULT_REJECT_REASON: &str = "rejected by the supervisor in the agentdesk console";

/// Whether the service is a gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Detected {
    /// Not asked yet, or no answer yet.
    #[default]
    Unknown,
    /// `/gate/v1` is not there: an ordinary service.
    No,
    /// `/gate/v1` answered.
    Yes,
}

/// How a user's own agent joins the embedded gateway (the "Connect an agent" panel).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectInfo {
    /// The gateway's base URL, for the agent.
    pub base_url: String,
    /// The embedded sandbox's database, where `agentdesk keys create` mints agent keys.
    pub sandbox_db: std::path::PathBuf,
    /// The demo agent's name, when it runs.
    pub demo_agent: Option<String>,
}

impl ConnectInfo {
    /// The command that mints a key for a new agent on the embedded sandbox's account.
    pub fn mint_command(&self) -> String {
        format!(
            "agentdesk keys create --db {} --scope mcp:mutate --label my-agent",
            shell_quote(&self.sandbox_db.display().to_string())
        )
    }

    /// The "Connect an agent" panel's lines: where agents point, how to mint a key, a staging to
    /// try it.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![
            format!(
                "Base URL  {}   (your agent's base URL, with its own key; nothing else changes)",
                self.base_url
            ),
            "1. Mint an agent key in the embedded sandbox (from the source tree: cargo run -- keys create ...):".into(),
            format!(
                "   KEY=$(agentdesk keys create --db {} \\",
                shell_quote(&self.sandbox_db.display().to_string())
            ),
            "         --scope mcp:mutate --label my-agent)".into(),
            "2. Stage a trade through the gateway:".into(),
            format!(
                "   curl -s -X POST {}/api/delegated/propose -H \"x-api-key: $KEY\" \\",
                self.base_url
            ),
            r#"     -d '{"strategy":"my-agent","a":"BTCUSDT","d":"long","o":"market","sizeUsd":"500","leverage":2}'"#.into(),
            "3. It shows in the inbox (tab 2) with its Agent; a then y executes it. The agent's own".into(),
            "   confirm is refused (403 human_approval_required) until you approve; then it answers the execution.".into(),
        ];
        if let Some(demo) = &self.demo_agent {
            out.push(format!(
                "The demo agent ({demo}) stages a proposal every couple of minutes; --no-demo-agent turns it off."
            ));
        }
        out
    }
}

fn shell_quote(s: &str) -> String {
    if s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A gateway's data as this console last read it, and the schedule of its polls. Its fields are
/// this file's: the inbox changes them through the methods below, so what a poll, a decision or
/// the agent filter may change is said once, here.
#[derive(Debug, Clone)]
pub struct GateState {
    detected: Detected,
    poll: Poll,
    interval: Duration,
    /// Why the last poll failed (a 401 says the supervisor token is missing or refused).
    error: Option<ApiError>,
    /// The gateway's items by inbox id (a trade's proposalId, else the item's own id).
    items: HashMap<String, GateItem>,
    agents: Vec<GateAgent>,
    /// Show only this agent's items (its name or fingerprint, as typed in `/agent`).
    filter: Option<String>,
    /// Why the gateway last refused to approve or reject an item (by inbox id), shown with it
    /// until a decision goes through.
    refused: HashMap<String, String>,
    connect: Option<ConnectInfo>,
    /// The kill switch as last polled (None: not known yet).
    kill: Option<GateKillSwitch>,
    /// The live standing approvals as last polled.
    standing: Vec<GateStanding>,
    /// When the agents were last asked (None: with the next poll).
    agents_asked: Option<DateTime<Utc>>,
    /// When the kill switch and standing approvals were last asked (None: ask with the next poll).
    guard_asked: Option<DateTime<Utc>>,
    /// Items this console approved whose execution the gateway had not reported in its answer
    /// (approved, executing, waiting for the agent): their outcome is journaled when a poll
    /// says it, and the inbox is polled soon until then.
    awaiting: std::collections::HashSet<String>,
    /// An approve or reject was answered while a poll was in flight: that poll's answer may
    /// predate the decision, so another is asked for at once.
    refresh: bool,
    /// The policy in force, read while `/policy` is open.
    policy: policy::PolicyState,
    /// The rules this console's approval of an item overrode, so its answer says so.
    overridden: HashMap<String, Vec<String>>,
    /// The supervisor token's role (`viewer`, `approver`, `admin`), when the gateway says it.
    role: Option<String>,
    /// The gateway's count of changes in its last inbox answer: sent back as `since`, the next
    /// poll is held until something changes (None: a gateway that cannot be long-polled).
    version: Option<u64>,
    /// The `since` of the poll out now, so an answer that came back at once unchanged is seen.
    asked_since: Option<u64>,
    /// The version when the agents, and the kill switch and standing approvals, were last
    /// asked: a change asks them again.
    agents_version: Option<u64>,
    guard_version: Option<u64>,
}

impl GateState {
    pub fn new(interval: Duration, now: DateTime<Utc>) -> GateState {
        GateState {
            detected: Detected::Unknown,
            poll: Poll::due_now(now),
            interval,
            error: None,
            items: HashMap::new(),
            agents: Vec::new(),
            filter: None,
            refused: HashMap::new(),
            connect: None,
            kill: None,
            standing: Vec::new(),
            guard_asked: None,
            agents_asked: None,
            awaiting: std::collections::HashSet::new(),
            refresh: false,
            policy: policy::PolicyState::default(),
            overridden: HashMap::new(),
            role: None,
            version: None,
            asked_since: None,
            agents_version: None,
            guard_version: None,
        }
    }

    /// Starts the gate poll when it is due; true when it went out. A long-polled gateway says
    /// when anything changed: the agents are asked then, and otherwise rarely. Until the gateway
    /// answered, every poll asks both: the agents say it is one.
    pub fn schedule(&mut self, now: DateTime<Utc>, fx: &mut Vec<Effect>) -> bool {
        let polled = self.detected != Detected::No && self.poll.start(now);
        if polled {
            let every = match self.version {
                Some(_) => QUIET_EVERY,
                None => AGENTS_EVERY,
            };
            let agents_due = self.detected != Detected::Yes
                || self.version != self.agents_version
                || due_again(self.agents_asked, now, every);
            if agents_due {
                self.agents_asked = Some(now);
                self.asked_since = None;
                fx.push(Effect::FetchGate);
            } else {
                self.asked_since = self.version;
                fx.push(Effect::FetchGateInbox {
                    since: self.version,
                });
            }
        }
        polled
    }

    /// Whether the kill switch and the standing approvals are asked with the gate poll that just
    /// went out (`polled`): at most every [`GUARD_EVERY`], or, long-polled, when the version
    /// moved (a change to either moves it).
    pub fn guard_due(&mut self, now: DateTime<Utc>, polled: bool) -> bool {
        let due = match self.version {
            Some(v) => {
                self.guard_version != Some(v) || due_again(self.guard_asked, now, QUIET_EVERY)
            }
            None => due_again(self.guard_asked, now, GUARD_EVERY),
        };
        if polled && self.is_gateway() && due {
            self.guard_asked = Some(now);
            self.guard_version = self.version;
            return true;
        }
        false
    }

    /// The kill switch and the standing approvals are asked with the next gate poll, which is
    /// asked for at `at`.
    pub fn ask_guard_at(&mut self, at: DateTime<Utc>) {
        self.guard_asked = None;
        self.poll.ask_at(at);
    }

    /// The gateway answered the poll: the schedule of the next one. Long-polled, the next poll
    /// goes out at once and the gateway holds it; one that came back at once with nothing
    /// changed (a gateway not holding it) waits the interval, so nothing is asked in a loop.
    pub fn answered(
        &mut self,
        version: Option<u64>,
        agents: Option<GateAgents>,
        latency: Duration,
        at: DateTime<Utc>,
    ) {
        self.poll.settled();
        self.detected = Detected::Yes;
        self.error = None;
        let held = version.is_some()
            && !(self.asked_since.is_some()
                && self.asked_since == version
                && latency < HELD_AT_LEAST);
        let next = if held { Duration::ZERO } else { self.interval };
        self.poll.succeeded(at, latency, next);
        self.version = version;
        if let Some(agents) = agents {
            self.role = agents.you.map(|y| y.role);
            self.agents = agents.agents;
            self.agents_version = version;
        }
    }

    /// After an answer was merged: one that may have been asked before a decision it does not
    /// show yet is asked again at once, and an approved item's execution is shown as soon as the
    /// gateway reports it.
    pub fn merged(&mut self, at: DateTime<Utc>) {
        if std::mem::take(&mut self.refresh) {
            self.poll.probe_by(at);
        } else if !self.awaiting.is_empty() {
            self.poll.probe_by(at + AWAIT);
        }
    }

    /// The poll failed. No /gate/v1 here: an ordinary service (a 404, or whatever else a service
    /// answers for a path it does not know: an HTML page, a 405, a 500); never asked again. Only
    /// a 401, a "wait" (429, or a 503 with Retry-After: a gateway starting or behind a proxy in
    /// maintenance) or no answer at all leaves the question open.
    pub fn failed(&mut self, e: ApiError, at: DateTime<Utc>) {
        self.poll.settled();
        if self.detected != Detected::Yes
            && !matches!(
                e,
                ApiError::Unauthorized { .. } | ApiError::QuotaExceeded { .. }
            )
            && !e.is_transient()
        {
            self.detected = Detected::No;
            self.error = None;
            self.poll.stop();
            return;
        }
        // A 401 comes from a gateway that wants a supervisor token: it is one.
        if matches!(e, ApiError::Unauthorized { .. }) {
            self.detected = Detected::Yes;
        }
        self.poll.failed(at, self.interval, &e);
        self.error = Some(e);
    }

    /// A decision was answered: the inbox is asked again at `at`, and once more if a poll out
    /// now may predate the decision.
    pub fn decided(&mut self, at: DateTime<Utc>) {
        self.poll.ask_at(at);
        if self.poll.in_flight {
            self.refresh = true;
        }
    }

    // What the rest of the console reads, and the changes the inbox and App make.

    pub fn detected(&self) -> Detected {
        self.detected
    }

    /// When the inbox poll is due next, for the clock's sleep.
    pub fn wakeup(&self) -> Option<DateTime<Utc>> {
        self.poll.wakeup()
    }

    /// The inbox is asked again at `at` (`r`, or a decision answered).
    pub fn ask_at(&mut self, at: DateTime<Utc>) {
        self.poll.ask_at(at);
    }

    /// The inbox is asked by `at` at the latest.
    pub fn probe_by(&mut self, at: DateTime<Utc>) {
        self.poll.probe_by(at);
    }

    /// The gateway's item listed under inbox id `id`.
    pub fn item(&self, id: &str) -> Option<&GateItem> {
        self.items.get(id)
    }

    /// The gateway's item as its last answer (a poll's or a decision's) had it; the one it
    /// replaces.
    pub fn record(&mut self, id: String, item: GateItem) -> Option<GateItem> {
        self.items.insert(id, item)
    }

    /// The agent filter (`/agent NAME`), as typed.
    pub fn filter(&self) -> Option<&str> {
        self.filter.as_deref()
    }

    /// A new agent filter; the inbox puts aside the items it hides.
    pub fn set_filter(&mut self, filter: Option<String>) {
        self.filter = filter;
    }

    /// Why the gateway last refused to approve or reject `id`.
    pub fn refusal(&self, id: &str) -> Option<&str> {
        self.refused.get(id).map(String::as_str)
    }

    pub fn refused(&mut self, id: &str, why: String) {
        self.refused.insert(id.to_string(), why);
    }

    /// A decision on `id` went through: an earlier refusal no longer stands.
    pub fn forget_refusal(&mut self, id: &str) {
        self.refused.remove(id);
    }

    pub fn connect(&self) -> Option<&ConnectInfo> {
        self.connect.as_ref()
    }

    pub fn set_connect(&mut self, connect: Option<ConnectInfo>) {
        self.connect = connect;
    }

    /// The kill switch as last read (None: not known yet).
    pub fn kill(&self) -> Option<&GateKillSwitch> {
        self.kill.as_ref()
    }

    pub fn set_kill(&mut self, kill: GateKillSwitch) {
        self.kill = Some(kill);
    }

    /// The gateway's agents as last read, with their state.
    pub fn agents(&self) -> &[GateAgent] {
        &self.agents
    }

    /// The live standing approvals as last read.
    pub fn standing(&self) -> &[GateStanding] {
        &self.standing
    }

    pub fn set_standing(&mut self, standing: Vec<GateStanding>) {
        self.standing = standing;
    }

    /// Whether this console approved `id` and waits for the gateway to say how it ended.
    pub fn awaits(&self, id: &str) -> bool {
        self.awaiting.contains(id)
    }

    /// Nothing this console approved waits for its outcome.
    pub fn awaits_nothing(&self) -> bool {
        self.awaiting.is_empty()
    }

    pub fn await_outcome(&mut self, id: &str) {
        self.awaiting.insert(id.to_string());
    }

    pub fn stop_awaiting(&mut self, id: &str) {
        self.awaiting.remove(id);
    }

    /// The policy panel's state.
    pub fn policy(&self) -> &policy::PolicyState {
        &self.policy
    }

    /// A read of the policy is to go out: true unless one is out already.
    pub fn ask_policy(&mut self) -> bool {
        !std::mem::replace(&mut self.policy.in_flight, true)
    }

    /// The policy read answered. A 404 settles what the service is, as the gate poll's own 404
    /// does.
    pub fn policy_loaded(&mut self, result: Result<GatePolicy, ApiError>, at: DateTime<Utc>) {
        let state = &mut self.policy;
        state.in_flight = false;
        match result {
            Ok(p) => {
                state.policy = Some(p);
                state.read_at = Some(at);
                state.error = None;
            }
            Err(e) => {
                if matches!(e, ApiError::NotFound { .. }) && self.detected != Detected::Yes {
                    self.detected = Detected::No;
                    state.policy = None;
                }
                state.error = Some(policy::error_text(&e));
            }
        }
    }

    /// The rules this console's approval of `id` overrode.
    pub fn overrides(&self, id: &str) -> Option<&[String]> {
        self.overridden.get(id).map(Vec::as_slice)
    }

    pub fn overriding(&mut self, id: &str, rules: Vec<String>) {
        self.overridden.insert(id.to_string(), rules);
    }

    /// The supervisor token's role, when the gateway says it.
    pub fn role(&self) -> Option<&str> {
        self.role.as_deref()
    }

    /// Why this console's supervisor token may not do `what`, which needs the `needed` role
    /// (`approver`, `admin`): the console does not offer what the gateway would refuse. None
    /// when it may, and when the role is unknown (an older gateway: everything is offered).
    pub fn role_refusal(&self, needed: &str, what: &str) -> Option<String> {
        let rank = |r: &str| match r {
            "viewer" => 0,
            "approver" => 1,
            _ => 2,
        };
        let role = self.role.as_deref()?;
        if !self.is_gateway() || rank(role) >= rank(needed) {
            return None;
        }
        Some(format!(
            "{what} needs the {needed} role; this console's supervisor token is a {role} \
             (agentdesk gate token --role {needed})"
        ))
    }

    /// The live re-check an approve dialog on `id` asks for: a gateway's item's verdicts.
    pub fn approve_check(&self, id: &str) -> Option<guard::ApproveCheck> {
        (self.is_gateway() && self.items.contains_key(id)).then(|| guard::ApproveCheck::new(id))
    }

    /// A long-polled gateway: its answers say when anything changed.
    pub fn long_polled(&self) -> bool {
        self.version.is_some()
    }

    /// Whether `/agent NAME` names an agent of the gateway (by label, or a prefix of its key's
    /// fingerprint) or the agent of one of its items.
    pub fn knows_agent(&self, name: &str) -> bool {
        self.agents.iter().any(|a| {
            a.agent.eq_ignore_ascii_case(name)
                || a.fingerprint
                    .to_ascii_lowercase()
                    .starts_with(&name.to_ascii_lowercase())
        }) || self.items.values().any(|i| agent_matches(i, name))
    }

    pub fn agent_names(&self) -> Vec<&str> {
        self.agents.iter().map(|a| a.agent.as_str()).collect()
    }

    /// The header's GATE badge: nothing unless the service is a gateway; says so when its
    /// supervisor API refuses the token.
    pub fn badge(&self, theme: &Theme) -> Span<'static> {
        if self.kill.as_ref().is_some_and(|k| k.on) {
            return Span::styled(
                " KILL SWITCH ",
                theme.bad.add_modifier(ratatui::style::Modifier::BOLD),
            );
        }
        match (&self.detected, &self.error) {
            (Detected::Yes, Some(ApiError::Unauthorized { .. })) => Span::styled(
                " GATE: no supervisor token (AGENTDESK_GATE_TOKEN) ",
                theme.badge_live,
            ),
            (Detected::Yes, _) => match self.role.as_deref() {
                // An admin (or a gateway older than roles) may do everything: nothing to say.
                Some(role) if role != "admin" => {
                    Span::styled(format!(" GATE · {role} "), theme.badge_sandbox)
                }
                _ => Span::styled(" GATE ", theme.badge_sandbox),
            },
            _ => Span::raw(""),
        }
    }

    pub fn is_gateway(&self) -> bool {
        self.detected == Detected::Yes
    }

    /// How an agent (by its label or fingerprint, as items name it) connects now: "via MCP
    /// (claude-code 1.2.0)", "via REST"; None when the gateway has not said.
    pub fn connection_of(&self, agent: &str) -> Option<String> {
        let a = self
            .agents
            .iter()
            .find(|a| a.agent == agent || a.fingerprint == agent)?;
        let via = match a.transport.as_deref()? {
            "mcp" => "MCP",
            "rest" => "REST",
            other => other,
        };
        let client = match (&a.client_name, &a.client_version) {
            (Some(n), Some(v)) => format!(" ({n} {v})"),
            (Some(n), None) => format!(" ({n})"),
            _ => String::new(),
        };
        Some(format!("via {via}{client}"))
    }

    /// An agent's suspension (by its label or fingerprint, as items name it), when the gateway
    /// said it is suspended.
    pub fn suspension_of(&self, agent: &str) -> Option<&crate::api::model::GateSuspension> {
        self.agents
            .iter()
            .find(|a| a.agent == agent || a.fingerprint == agent)?
            .suspension
            .as_ref()
    }

    /// Agents as a suspend or a resume answered them: shown at once, not at the next poll.
    pub fn set_agents_state(&mut self, changed: &[GateAgent]) {
        for new in changed {
            match self
                .agents
                .iter_mut()
                .find(|a| a.fingerprint == new.fingerprint)
            {
                Some(a) => *a = new.clone(),
                None => self.agents.push(new.clone()),
            }
        }
    }

    /// The agent that staged this inbox item, when the gateway knows it.
    pub fn agent_of(&self, id: &str) -> Option<&str> {
        self.items.get(id).map(|i| i.agent.as_str())
    }

    /// The Agent column's text: the agent's label, or "this console" for what this console staged
    /// with its own (unnamed) key or what the gateway does not list.
    pub fn agent_label<'a>(&'a self, id: &str, own_fingerprint: &str) -> &'a str {
        match self.items.get(id) {
            Some(g) if g.agent == own_fingerprint && g.agent_fingerprint == own_fingerprint => {
                "this console"
            }
            Some(g) => &g.agent,
            None => "this console",
        }
    }

    /// Whether the filter hides this inbox item: it shows only the chosen agent's items (items the
    /// gateway does not list have no agent and are hidden too while a filter is set).
    pub fn hides(&self, id: &str) -> bool {
        let Some(filter) = &self.filter else {
            return false;
        };
        match self.items.get(id) {
            Some(item) => !agent_matches(item, filter),
            None => true,
        }
    }
}

/// Whether something asked at `last` is due again `every` later; a clock that stepped back
/// behind `last` makes it due at once rather than frozen for the length of the step.
pub fn due_again(last: Option<DateTime<Utc>>, now: DateTime<Utc>, every: TimeDelta) -> bool {
    last.is_none_or(|t| now - t >= every || t > now)
}

/// `/agent NAME` matches the agent's label or its key fingerprint (a prefix of it will do),
/// case-insensitively.
pub fn agent_matches(item: &GateItem, filter: &str) -> bool {
    let f = filter.to_ascii_lowercase();
    item.agent.to_ascii_lowercase() == f
        || (!f.is_empty() && item.agent_fingerprint.to_ascii_lowercase().starts_with(&f))
}

/// The inbox id of a gateway item: a trade's proposalId (the id the service's own proposals list
/// uses too), else the item's id.
pub fn inbox_id(item: &GateItem) -> String {
    item.proposal_id
        .clone()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| item.id.clone())
}

/// Whether the inbox lists the item: undecided, or decided within [`RECENT`].
pub fn is_listed(item: &GateItem, now: DateTime<Utc>) -> bool {
    matches!(
        item.status,
        ItemStatus::Pending | ItemStatus::Approved | ItemStatus::Executing
    ) || item
        .decided_at
        .or(item.created_at)
        .is_some_and(|t| now - t <= RECENT)
}
