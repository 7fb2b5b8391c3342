//! All console state, and `update`: the only place it changes. `update` is pure — it returns Effects
//! for the runner to perform — so every behaviour here is testable with an injected clock.

use super::action::{Action, Answer, Effect, Payload, Resource};
use super::agents::{ChatState, ResearchState, ToolsState};
use super::backtests::{BacktestForm, JOB_POLL, JobEntry};
use super::command::{self, Command};
use super::discovery::{DView, DiscoveryPayload, DiscoveryQuery, DiscoveryState, Selected};
use super::keymap::{KeyAction, Keymap};
use super::layout::{self, Pane};
use super::modal::Modal;
use super::poll::{Poll, to_delta};
use super::tabs::signals::{self, SignalsState};
use crate::api::ApiError;
use crate::api::model::{
    AuditEntry, OpenOrderRow, PnlSummary, PositionRow, Preview, Proposal, TradeSignal, Usage,
    Whoami,
};
use crate::config::PollIntervals;
use chrono::{DateTime, Duration as TimeDelta, Utc};
use crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEventKind,
};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::time::Duration;

mod agents_update;

const EQUITY_POINTS: usize = 600;
const REQUEST_LOG: usize = 500;
const TOAST_FOR: TimeDelta = TimeDelta::seconds(4);
/// Completion's coins before the service has named any.
const FALLBACK_COINS: [&str; 10] = [
    "BTC", "ETH", "SOL", "XRP", "DOGE", "AVAX", "LINK", "BNB", "ARB", "SUI",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Desk,
    Proposals,
    Logs,
    Discovery,
    Backtests,
    Research,
    Tools,
    Chat,
    Signals,
}

impl Tab {
    pub const ALL: [Tab; 9] = [
        Tab::Desk,
        Tab::Proposals,
        Tab::Logs,
        Tab::Discovery,
        Tab::Backtests,
        Tab::Research,
        Tab::Tools,
        Tab::Chat,
        Tab::Signals,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Tab::Desk => "Desk",
            Tab::Proposals => "Proposals",
            Tab::Logs => "Logs",
            Tab::Discovery => "Discovery",
            Tab::Backtests => "Backtests",
            Tab::Research => "Research",
            Tab::Tools => "Tools",
            Tab::Chat => "Chat",
            Tab::Signals => "Signals",
        }
    }

    /// The panes of this tab, in focus order.
    pub fn panes(self) -> &'static [Pane] {
        match self {
            Tab::Desk => &[Pane::Positions, Pane::Orders, Pane::Strip],
            Tab::Proposals => &[Pane::Inbox, Pane::Decisions],
            Tab::Logs => &[Pane::Audit, Pane::Requests],
            // One table at a time: the view selected with h/l (see `App::focused_pane`).
            Tab::Discovery => &[
                Pane::Strategies,
                Pane::TopBacktests,
                Pane::TopLive,
                Pane::Combos,
            ],
            Tab::Backtests => &[Pane::Jobs, Pane::Trades],
            Tab::Research => &[Pane::Agents, Pane::Artifacts, Pane::Transcript],
            Tab::Tools => &[Pane::Tools, Pane::Result],
            Tab::Chat => &[Pane::ChatLog],
            Tab::Signals => &[Pane::Destinations, Pane::Deliveries],
        }
    }
}

/// How one polled resource is doing.
#[derive(Debug, Clone)]
pub struct Feed {
    pub interval: Duration,
    pub poll: Poll,
    pub error: Option<ApiError>,
    /// False once the service showed it does not offer this resource (an extension).
    pub supported: bool,
}

impl Feed {
    fn new(interval: Duration, now: DateTime<Utc>) -> Self {
        Feed {
            interval,
            poll: Poll::due_now(now),
            error: None,
            supported: true,
        }
    }

    pub fn age(&self, now: DateTime<Utc>) -> Option<Duration> {
        self.poll.age(now)
    }

    /// Data older than three intervals is stale: shown, but marked with its age.
    pub fn is_stale(&self, now: DateTime<Utc>) -> bool {
        self.age(now).is_some_and(|a| a > self.interval * 3)
    }
}

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
}

pub fn describe_preview(p: &Preview, id: &str) -> String {
    use crate::api::model::fmt_decimal;
    match p.kind.as_str() {
        "trade" => format!(
            "{} {} {} {}x",
            p.direction,
            fmt_decimal(p.size),
            p.coin,
            p.leverage
        ),
        "close" => format!("close {}", p.coin),
        "close_all" => "close all positions".to_string(),
        _ => format!("proposal {id}"),
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

#[derive(Debug, Clone)]
pub struct RequestLogEntry {
    pub at: DateTime<Utc>,
    pub operation: &'static str,
    /// `ok`, or the error code.
    pub status: String,
    pub latency: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToastLevel {
    Info,
    Error,
}

#[derive(Debug, Clone)]
pub struct Toast {
    pub text: String,
    pub level: ToastLevel,
    pub until: DateTime<Utc>,
}

/// Where the console's data comes from, for the header.
#[derive(Debug, Clone)]
pub struct ServiceInfo {
    pub host: String,
    pub sandbox: bool,
    pub key_fingerprint: String,
}

#[derive(Debug, Clone)]
pub struct Options {
    pub poll: BTreeMap<Resource, Duration>,
    pub bell: bool,
}

impl Default for Options {
    fn default() -> Self {
        let ms = |n| Duration::from_millis(n);
        let poll = BTreeMap::from([
            (Resource::Whoami, ms(60_000)),
            (Resource::Positions, ms(2_000)),
            (Resource::Orders, ms(2_000)),
            (Resource::Pnl, ms(2_000)),
            (Resource::Proposals, ms(1_000)),
            (Resource::Usage, ms(15_000)),
            (Resource::Audit, ms(10_000)),
        ]);
        Options { poll, bell: true }
    }
}

impl Options {
    /// The configured intervals in place of the defaults (`Whoami` is not configurable).
    pub fn with_poll(mut self, config: &PollIntervals) -> Options {
        for (resource, interval) in [
            (Resource::Positions, config.positions),
            (Resource::Orders, config.orders),
            (Resource::Pnl, config.pnl),
            (Resource::Proposals, config.proposals),
            (Resource::Usage, config.usage),
            (Resource::Audit, config.audit),
        ] {
            self.poll.insert(resource, interval);
        }
        self
    }
}

pub struct App {
    pub now: DateTime<Utc>,
    pub service: ServiceInfo,
    pub options: Options,
    pub keymap: Keymap,
    pub feeds: BTreeMap<Resource, Feed>,
    pub whoami: Option<Whoami>,
    pub positions: Vec<PositionRow>,
    /// Indices into `positions` by coin, rebuilt when positions arrive, so a risk preview drawn
    /// every frame never scans a large book.
    position_index: std::collections::HashMap<String, Vec<usize>>,
    pub orders: Vec<OpenOrderRow>,
    pub pnl: Option<PnlSummary>,
    pub usage: Option<Usage>,
    pub audit: Vec<AuditEntry>,
    /// Indices into `audit` / `request_log` that pass the filter, computed when either changes.
    pub audit_view: Vec<usize>,
    pub request_view: Vec<usize>,
    pub equity_history: VecDeque<(DateTime<Utc>, f64)>,
    /// Newest first.
    pub inbox: Vec<InboxItem>,
    /// Newest first.
    pub decisions: Vec<Decision>,
    /// Newest first.
    pub request_log: VecDeque<RequestLogEntry>,
    pub tab: Tab,
    /// Index into `tab.panes()`.
    pub focus: usize,
    pub selected: BTreeMap<Pane, usize>,
    /// The dialog, form or line that has the keys, if any.
    pub modal: Option<Modal>,
    /// Kept when the line closes, so Up recalls earlier commands.
    pub history: Vec<String>,
    pub command_error: Option<String>,
    pub filter: String,
    pub toasts: Vec<Toast>,
    pub auth_failed: Option<String>,
    pub quota_until: Option<DateTime<Utc>>,
    pub discovery: DiscoveryState,
    /// Backtest jobs this console follows, newest first.
    pub jobs: Vec<JobEntry>,
    /// Backtest submissions not answered yet.
    pub submitting: usize,
    pub research: ResearchState,
    pub tools: ToolsState,
    pub chat: ChatState,
    pub signals: SignalsState,
    /// Reads the wallet's private key for the builder-fee signature, when asked to sign (the
    /// environment by default; tests inject a fixed key). Never stored.
    pub wallet_key: fn() -> Option<crate::secret::Secret>,
    /// Numbers the tool approvals of the inbox (`tool-1`, `tool-2`).
    tool_seq: u32,
    pub size: (u16, u16),
    pub should_quit: bool,
    /// Something visible changed since the last draw.
    pub dirty: bool,
    seen: HashSet<String>,
}

impl App {
    pub fn new(service: ServiceInfo, options: Options, keymap: Keymap, now: DateTime<Utc>) -> App {
        let feeds = Resource::ALL
            .iter()
            .map(|r| {
                let interval = options
                    .poll
                    .get(r)
                    .copied()
                    .unwrap_or(Duration::from_secs(2));
                (*r, Feed::new(interval, now))
            })
            .collect();
        App {
            now,
            service,
            options,
            keymap,
            feeds,
            whoami: None,
            positions: Vec::new(),
            position_index: Default::default(),
            orders: Vec::new(),
            pnl: None,
            usage: None,
            audit: Vec::new(),
            audit_view: Vec::new(),
            request_view: Vec::new(),
            equity_history: VecDeque::new(),
            inbox: Vec::new(),
            decisions: Vec::new(),
            request_log: VecDeque::new(),
            tab: Tab::Desk,
            focus: 0,
            selected: BTreeMap::new(),
            modal: None,
            history: Vec::new(),
            command_error: None,
            filter: String::new(),
            toasts: Vec::new(),
            auth_failed: None,
            quota_until: None,
            discovery: DiscoveryState::default(),
            jobs: Vec::new(),
            submitting: 0,
            research: ResearchState {
                // Checked once at start; polled on only while a run exists.
                poll: Poll::due_now(now),
                ..Default::default()
            },
            tools: ToolsState::default(),
            chat: ChatState::default(),
            signals: SignalsState::new(),
            wallet_key: signals::wallet_key_from_env,
            tool_seq: 0,
            size: (120, 40),
            should_quit: false,
            dirty: true,
            seen: HashSet::new(),
        }
    }

    pub fn focused_pane(&self) -> Pane {
        if self.tab == Tab::Discovery {
            return self.discovery.view.pane();
        }
        let panes = self.tab.panes();
        panes[self.focus.min(panes.len() - 1)]
    }

    pub fn selected(&self, pane: Pane) -> usize {
        self.selected.get(&pane).copied().unwrap_or(0)
    }

    pub fn pane_len(&self, pane: Pane) -> usize {
        match pane {
            Pane::Positions => self.positions.len(),
            Pane::Orders => self.orders.len(),
            Pane::Strip => self.strip_items().len(),
            Pane::Inbox => self.inbox.len(),
            Pane::Decisions => self.decisions.len(),
            Pane::Audit => self.audit_view.len(),
            Pane::Requests => self.request_view.len(),
            Pane::Strategies | Pane::TopBacktests | Pane::TopLive | Pane::Combos => {
                DView::of_pane(pane).map_or(0, |v| self.discovery.len(v))
            }
            Pane::Jobs => self.jobs.len(),
            Pane::Trades => self
                .selected_job()
                .and_then(|j| j.job.data.as_ref())
                .map_or(0, |d| d.trades.len()),
            Pane::Agents => self.research.tree().len(),
            Pane::Artifacts => self.research.run.as_ref().map_or(0, |r| r.artifacts.len()),
            Pane::Tools => self.tools.tools.len(),
            Pane::Result => self.result_rows(),
            Pane::Destinations => self.signals.destinations.len(),
            Pane::Deliveries => self.signals.deliveries.len(),
            // Scrolled, not selected: see `move_selection`.
            Pane::Transcript | Pane::ChatLog => 0,
        }
    }

    /// The inbox item under the cursor (the Proposals list, or the Desk strip).
    pub fn selected_item(&self) -> Option<&InboxItem> {
        match self.focused_pane() {
            Pane::Strip => self
                .strip_items()
                .get(self.selected(Pane::Strip))
                .map(|i| &self.inbox[*i]),
            _ => self.inbox.get(self.selected(Pane::Inbox)),
        }
    }

    /// Inbox indices of the proposals the Desk strip shows: those that can still be approved.
    pub fn strip_items(&self) -> Vec<usize> {
        (0..self.inbox.len())
            .filter(|i| self.inbox[*i].can_approve(self.now))
            .collect()
    }

    pub fn item(&self, id: &str) -> Option<&InboxItem> {
        self.inbox.iter().find(|i| i.id() == id)
    }

    fn item_mut(&mut self, id: &str) -> Option<&mut InboxItem> {
        self.inbox.iter_mut().find(|i| i.id() == id)
    }

    pub fn confirm_in_flight(&self) -> bool {
        self.inbox.iter().any(|i| i.local == LocalState::Confirming)
    }

    /// Polls these resources at `at` instead of at their next scheduled time: what an action just
    /// changed shows up now.
    pub(crate) fn poll_now(&mut self, resources: &[Resource], at: DateTime<Utc>) {
        for r in resources {
            if let Some(f) = self.feeds.get_mut(r) {
                f.poll.ask_at(at);
            }
        }
    }

    /// The risk preview of a proposal against the live positions and equity.
    pub fn risk_of(&self, preview: &Preview) -> Risk {
        let held: Vec<PositionRow> = self
            .position_index
            .get(&preview.coin)
            .into_iter()
            .flatten()
            .filter_map(|i| self.positions.get(*i))
            .cloned()
            .collect();
        let equity = self.pnl.as_ref().map(|s| s.total_portfolio_value);
        risk(preview, &held, equity)
    }

    /// Countdowns or ages are on screen: time alone changes what is drawn, so the loop ticks
    /// every second. Otherwise it sleeps until the next poll, toast end or event.
    pub fn needs_clock(&self) -> bool {
        self.header_shows_time() || self.tab_shows_time() || self.modal_shows_time()
    }

    /// "ok 3s ago", "last ok 12s ago, retrying in 4s", or the quota countdown. A refused key is
    /// a fixed message.
    fn header_shows_time(&self) -> bool {
        let quota = self.quota_until.is_some_and(|t| t > self.now);
        let connection = self.auth_failed.is_none()
            && self
                .feeds
                .values()
                .any(|f| f.poll.updated_at.is_some() || f.poll.failures > 0);
        quota || connection
    }

    fn tab_shows_time(&self) -> bool {
        let loaded = |r: Resource| self.feeds[&r].poll.updated_at.is_some();
        let counting = || {
            self.inbox
                .iter()
                .any(|i| i.proposal.expires_at.is_some() && i.status(self.now) == Status::Staged)
        };
        match self.tab {
            // Countdowns in the strip, order ages, stale markers.
            Tab::Desk => counting() || loaded(Resource::Positions) || loaded(Resource::Orders),
            Tab::Proposals => counting(),
            Tab::Logs => loaded(Resource::Audit),
            Tab::Discovery => {
                let view = self.discovery.view;
                self.discovery.state(view).feed.poll.updated_at.is_some()
            }
            Tab::Research => self.research.active(),
            Tab::Signals => {
                self.signals.dest_poll.updated_at.is_some()
                    || self
                        .signals
                        .deliveries
                        .iter()
                        .any(|d| d.next_attempt_at.is_some_and(|t| t > self.now))
            }
            Tab::Backtests | Tab::Tools | Tab::Chat => false,
        }
    }

    fn modal_shows_time(&self) -> bool {
        matches!(&self.modal, Some(Modal::Approve(id)) if self.item(id).is_some_and(|i| i.remaining(self.now).is_some()))
    }

    /// When the runner should wake up next if nothing happens: the next poll, the next whole second
    /// while a countdown or age is shown, or a toast's end.
    pub fn next_wakeup(&self) -> DateTime<Utc> {
        let mut next = self.now + TimeDelta::seconds(3600);
        if self.auth_failed.is_none() {
            for feed in self.feeds.values().filter(|f| f.supported) {
                next = next.min(feed.poll.wakeup().unwrap_or(next));
            }
        }
        if self.needs_clock() {
            let ms = self.now.timestamp_subsec_millis() as i64;
            next = next.min(self.now + TimeDelta::milliseconds(1000 - ms));
        }
        for t in &self.toasts {
            next = next.min(t.until);
        }
        if self.auth_failed.is_none() {
            if self.tab == Tab::Discovery {
                for v in self.discovery_due_views() {
                    if let Some(due) = self.discovery.state(v).feed.poll.wakeup() {
                        next = next.min(due);
                    }
                }
            }
            for j in self.jobs.iter().filter(|j| j.active()) {
                next = next.min(j.poll.wakeup().unwrap_or(next));
            }
            if !self.research.unsupported
                && let Some(due) = self.research.poll.wakeup()
            {
                next = next.min(due);
            }
            if let Some(due) = self.signals_next_due() {
                next = next.min(due);
            }
        }
        next.max(self.now)
    }

    pub fn update(&mut self, action: Action) -> Vec<Effect> {
        let mut fx = Vec::new();
        match action {
            Action::Tick(now) => {
                self.now = now;
                let toasts = self.toasts.len();
                self.toasts.retain(|t| t.until > now);
                self.note_expiries(&mut fx);
                if self.toasts.len() != toasts || self.needs_clock() {
                    self.dirty = true;
                }
            }
            Action::Key(key) => self.on_key(key, &mut fx),
            Action::Mouse(m) => self.on_mouse(m),
            Action::Resize(w, h) => {
                self.size = (w, h);
                self.dirty = true;
            }
            Action::Answered {
                at,
                latency,
                answer,
            } => {
                self.log_request(answer.operation(), answer.error(), latency, at);
                self.dirty = true;
                self.on_answer(*answer, latency, at, &mut fx);
            }
            Action::Terminate => {
                self.should_quit = true;
                fx.push(Effect::Quit);
            }
        }
        self.schedule(&mut fx);
        fx
    }

    fn on_answer(
        &mut self,
        answer: Answer,
        latency: Duration,
        at: DateTime<Utc>,
        fx: &mut Vec<Effect>,
    ) {
        match answer {
            Answer::Loaded { resource, result } => {
                self.on_loaded(resource, result, latency, at, fx)
            }
            Answer::Proposed { signal, result } => self.on_proposed(&signal, result, at),
            Answer::Confirmed { id, result } => self.on_confirmed(&id, result, at, fx),
            Answer::Discovered { query, result } => self.on_discovered(query, result, latency, at),
            Answer::BacktestSubmitted { request, result } => {
                self.on_backtest_submitted(&request, result, at)
            }
            Answer::JobLoaded { id, result } => self.on_job_loaded(&id, result, latency, at),
            Answer::ResearchLoaded { result } => self.on_research_loaded(result, latency, at),
            Answer::ResearchStopped { run_id, result } => {
                self.on_research_stopped(&run_id, result, at)
            }
            Answer::CliAnswered { command, result } => self.on_cli_answered(&command, result, at),
            Answer::CapabilitiesLoaded { result } => self.on_capabilities_loaded(result, fx),
            Answer::ToolExecuted {
                name,
                args,
                approval,
                result,
            } => self.on_tool_executed(name, args, approval, result, at, fx),
            Answer::ChatAnswered { result } => self.on_chat_answered(result, at, fx),
            Answer::Traded { signal, result } => self.on_traded(&signal, result, at),
            Answer::DestinationsLoaded { result } => {
                self.on_destinations_loaded(result, latency, at)
            }
            Answer::DestinationCreated { name, result } => {
                self.on_destination_created(&name, result, at)
            }
            Answer::DeliveriesLoaded { id, result } => {
                self.on_deliveries_loaded(&id, result, latency, at)
            }
            Answer::BuilderFeeLoaded { wallet, result } => {
                self.on_builder_fee_loaded(&wallet, result)
            }
            Answer::BuilderFeeApproved { result } => self.on_builder_fee_approved(result, at),
        }
    }

    /// Starts the fetches that are due.
    fn schedule(&mut self, fx: &mut Vec<Effect>) {
        if self.auth_failed.is_some() {
            return;
        }
        let now = self.now;
        for (resource, feed) in self.feeds.iter_mut() {
            if feed.supported && feed.poll.start(now) {
                fx.push(Effect::Fetch(*resource));
            }
        }
        // Discovery is fetched only while its tab is on screen.
        if self.tab == Tab::Discovery {
            for view in self.discovery_due_views() {
                let query = self.discovery.query(view);
                let feed = &mut self.discovery.state_mut(view).feed;
                if feed.poll.start(now) {
                    fx.push(Effect::FetchDiscovery(query));
                }
            }
        }
        for job in &mut self.jobs {
            if job.active() && job.poll.start(now) {
                fx.push(Effect::FetchJob(job.id().to_string()));
            }
        }
        self.schedule_agents(fx);
        self.schedule_signals(fx);
    }

    fn log_request(
        &mut self,
        operation: &'static str,
        error: Option<&ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
    ) {
        let status = match error {
            None => "ok".to_string(),
            Some(e) => e.code().unwrap_or("transport").to_string(),
        };
        self.request_log.push_front(RequestLogEntry {
            at,
            operation,
            status,
            latency,
        });
        self.request_log.truncate(REQUEST_LOG);
        self.refilter();
    }

    pub(crate) fn toast(&mut self, text: impl Into<String>, level: ToastLevel) {
        self.toasts.push(Toast {
            text: text.into(),
            level,
            until: self.now + TOAST_FOR,
        });
        self.dirty = true;
    }

    fn on_loaded(
        &mut self,
        resource: Resource,
        result: Result<Payload, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
        fx: &mut Vec<Effect>,
    ) {
        let Some(feed) = self.feeds.get_mut(&resource) else {
            return;
        };
        feed.poll.settled();
        feed.poll.latency = Some(latency);
        match result {
            Ok(payload) => {
                feed.error = None;
                feed.poll.succeeded(at, latency, feed.interval);
                self.apply(payload, at, fx);
            }
            Err(ApiError::Unauthorized { message }) => {
                feed.error = Some(ApiError::Unauthorized {
                    message: message.clone(),
                });
                self.auth_failed = Some(message);
            }
            Err(ApiError::NotFound { .. }) if resource == Resource::Proposals => {
                // The service has no proposals extension: the inbox shows what this console staged.
                feed.supported = false;
                feed.error = None;
            }
            Err(e) => {
                if let ApiError::QuotaExceeded { retry_after, .. } = &e {
                    self.quota_until = Some(at + to_delta(*retry_after));
                }
                feed.poll.failed(at, feed.interval, &e);
                feed.error = Some(e);
            }
        }
    }

    fn apply(&mut self, payload: Payload, at: DateTime<Utc>, fx: &mut Vec<Effect>) {
        match payload {
            Payload::Whoami(w) => self.whoami = Some(*w),
            Payload::Positions(rows) => {
                self.position_index.clear();
                for (i, p) in rows.iter().enumerate() {
                    self.position_index
                        .entry(p.coin.clone())
                        .or_default()
                        .push(i);
                }
                self.positions = rows;
                self.clamp(Pane::Positions);
            }
            Payload::Orders(rows) => {
                self.orders = rows;
                self.clamp(Pane::Orders);
            }
            Payload::Pnl(p) => {
                self.equity_history.push_back((at, p.total_portfolio_value));
                while self.equity_history.len() > EQUITY_POINTS {
                    self.equity_history.pop_front();
                }
                self.pnl = Some(*p);
            }
            Payload::Usage(u) => self.usage = Some(*u),
            Payload::Audit(rows) => {
                self.audit = rows;
                self.refilter();
            }
            Payload::Proposals(list) => self.merge_proposals(list, fx),
        }
    }

    fn merge_proposals(&mut self, list: Vec<Proposal>, fx: &mut Vec<Effect>) {
        let now = self.now;
        let mut fresh = 0;
        for p in list {
            if let Some(item) = self.item_mut(&p.proposal_id) {
                // A confirm this console is waiting for decides the local state, not a poll.
                item.proposal = p;
                continue;
            }
            let new = self.seen.insert(p.proposal_id.clone());
            let item = InboxItem {
                proposal: p,
                source: Source::Service,
                local: LocalState::None,
                first_seen: now,
                expiry_noted: false,
                tool: None,
            };
            if new && item.status(now) == Status::Staged {
                fresh += 1;
                self.toast(
                    format!("New proposal: {}", item.describe()),
                    ToastLevel::Info,
                );
            }
            self.inbox.push(item);
        }
        if fresh > 0 && self.options.bell {
            fx.push(Effect::Bell);
        }
        self.sort_inbox();
    }

    fn sort_inbox(&mut self) {
        self.inbox.sort_by(|a, b| {
            b.proposal
                .created_at
                .unwrap_or(b.first_seen)
                .cmp(&a.proposal.created_at.unwrap_or(a.first_seen))
        });
        self.clamp(Pane::Inbox);
        self.clamp(Pane::Strip);
    }

    fn note_expiries(&mut self, fx: &mut Vec<Effect>) {
        let now = self.now;
        let mut expired = Vec::new();
        for item in &mut self.inbox {
            if !item.expiry_noted && item.status(now) == Status::Expired {
                item.expiry_noted = true;
                expired.push((item.id().to_string(), item.describe()));
            }
        }
        for (id, summary) in expired {
            self.decide(
                &id,
                DecisionKind::Expired,
                summary,
                "not approved in time".into(),
                fx,
            );
        }
    }

    pub(crate) fn decide(
        &mut self,
        id: &str,
        kind: DecisionKind,
        summary: String,
        result: String,
        fx: &mut Vec<Effect>,
    ) {
        let preview = self
            .item(id)
            .map(|i| serde_json::to_value(&i.proposal.preview).unwrap_or_default());
        let line = json!({
            "time": self.now.to_rfc3339(),
            "proposalId": id,
            "decision": kind.label(),
            "summary": summary,
            "result": result,
            "service": self.service.host,
            "preview": preview,
        });
        fx.push(Effect::Journal(line.to_string()));
        self.decisions.insert(
            0,
            Decision {
                proposal_id: id.to_string(),
                kind,
                at: self.now,
                summary,
                result,
            },
        );
        self.dirty = true;
    }

    fn on_proposed(
        &mut self,
        signal: &TradeSignal,
        result: Result<Box<Proposal>, ApiError>,
        at: DateTime<Utc>,
    ) {
        match result {
            Ok(p) => {
                let text = format!(
                    "Staged {}: {}",
                    p.proposal_id,
                    describe_preview(&p.preview, &p.proposal_id)
                );
                self.seen.insert(p.proposal_id.clone());
                if self.item(&p.proposal_id).is_none() {
                    self.inbox.push(InboxItem {
                        proposal: *p,
                        source: Source::Console,
                        local: LocalState::None,
                        first_seen: at,
                        expiry_noted: false,
                        tool: None,
                    });
                    self.sort_inbox();
                }
                self.toast(text, ToastLevel::Info);
            }
            Err(e) => {
                let what = signal
                    .a
                    .clone()
                    .or(signal.action.clone())
                    .unwrap_or_default();
                self.toast(format!("Propose {what} failed: {e}"), ToastLevel::Error);
            }
        }
        self.poll_now(&[Resource::Proposals, Resource::Usage], at);
    }

    fn on_confirmed(
        &mut self,
        id: &str,
        result: Result<Box<crate::api::model::ExecutionResult>, ApiError>,
        at: DateTime<Utc>,
        fx: &mut Vec<Effect>,
    ) {
        let summary = self
            .item(id)
            .map(|i| i.describe())
            .unwrap_or_else(|| id.to_string());
        match result {
            Ok(done) => {
                let text = execution_summary(&done);
                if let Some(item) = self.item_mut(id) {
                    item.local = LocalState::Approved(text.clone());
                    item.proposal.status = "executed".into();
                }
                self.toast(format!("Approved {id}: {text}"), ToastLevel::Info);
                self.decide(id, DecisionKind::Approved, summary, text, fx);
            }
            Err(e) => {
                if let ApiError::QuotaExceeded { retry_after, .. } = &e {
                    self.quota_until = Some(at + to_delta(*retry_after));
                }
                let text = e.to_string();
                if let Some(item) = self.item_mut(id) {
                    item.local = LocalState::Failed(text.clone());
                }
                self.toast(format!("Confirm {id} failed: {text}"), ToastLevel::Error);
                self.decide(id, DecisionKind::Failed, summary, text, fx);
            }
        }
        // What the confirm changed shows up now, not at the next scheduled poll.
        self.poll_now(
            &[
                Resource::Positions,
                Resource::Orders,
                Resource::Pnl,
                Resource::Proposals,
                Resource::Audit,
                Resource::Usage,
            ],
            at,
        );
    }

    // ---- input ---------------------------------------------------------------------------------

    fn on_key(&mut self, key: KeyEvent, fx: &mut Vec<Effect>) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        self.dirty = true;
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            self.request_quit(fx);
            return;
        }
        if self.modal.is_some() {
            self.on_modal_key(key, fx);
            return;
        }
        let Some(action) = self.keymap.action(&key) else {
            return;
        };
        let pane = self.focused_pane();
        if self.on_agents_key(action, pane) {
            return;
        }
        if self.on_signals_key(action, pane, fx) {
            return;
        }
        if self.tab == Tab::Discovery {
            let view = self.discovery.view;
            match action {
                KeyAction::Left | KeyAction::FocusPrev => return self.switch_view(view.step(-1)),
                KeyAction::Right | KeyAction::FocusNext => return self.switch_view(view.step(1)),
                KeyAction::SortNext | KeyAction::SortReverse => {
                    let st = self.discovery.state_mut(view);
                    if action == KeyAction::SortNext {
                        st.sort = (st.sort + 1) % view.sort_keys().len();
                        st.reverse = false;
                    } else {
                        st.reverse = !st.reverse;
                    }
                    return self.rebuild_view(view);
                }
                KeyAction::Select => {
                    if self.discovery.get(view, self.selected(pane)).is_some() {
                        self.modal = Some(Modal::Details { scroll: 0 });
                    }
                    return;
                }
                _ => {}
            }
        }
        match action {
            KeyAction::Quit => self.request_quit(fx),
            KeyAction::Help => self.modal = Some(Modal::Help { scroll: 0 }),
            KeyAction::CommandLine => self.open_command_line(),
            KeyAction::NextTab => self.set_tab(next_of(&Tab::ALL, self.tab, 1)),
            KeyAction::PrevTab => self.set_tab(next_of(&Tab::ALL, self.tab, -1)),
            KeyAction::GoTab(n) => {
                if let Some(tab) = Tab::ALL.get((n as usize).wrapping_sub(1)) {
                    self.set_tab(*tab);
                }
            }
            KeyAction::FocusNext => self.focus = (self.focus + 1) % self.tab.panes().len(),
            KeyAction::FocusPrev => {
                let n = self.tab.panes().len();
                self.focus = (self.focus + n - 1) % n;
            }
            KeyAction::Up | KeyAction::Left => self.move_selection(pane, -1),
            KeyAction::Down | KeyAction::Right => self.move_selection(pane, 1),
            KeyAction::PageUp => self.move_selection(pane, -(self.page() as i64)),
            KeyAction::PageDown => self.move_selection(pane, self.page() as i64),
            KeyAction::Top => {
                self.selected.insert(pane, 0);
            }
            KeyAction::Bottom => {
                let len = self.pane_len(pane);
                self.selected.insert(pane, len.saturating_sub(1));
            }
            KeyAction::Select => {
                if pane == Pane::Strip
                    && let Some(i) = self.strip_items().get(self.selected(Pane::Strip)).copied()
                {
                    self.set_tab(Tab::Proposals);
                    self.selected.insert(Pane::Inbox, i);
                }
            }
            KeyAction::Approve => {
                if let Some(item) = self.selected_item() {
                    let id = item.id().to_string();
                    self.start_approval(&id);
                }
            }
            KeyAction::Reject => {
                if let Some(item) = self.selected_item() {
                    let id = item.id().to_string();
                    self.reject(&id, fx);
                }
            }
            KeyAction::Refresh => self.refresh(),
            KeyAction::Filter => {
                if matches!(self.tab, Tab::Logs | Tab::Discovery) {
                    self.modal = Some(Modal::Filter);
                }
            }
            KeyAction::Backtest => self.open_backtest_form(),
            KeyAction::Propose => self.propose_from_row(),
            KeyAction::ConfirmYes
            | KeyAction::Cancel
            | KeyAction::SortNext
            | KeyAction::SortReverse
            | KeyAction::NewRun
            | KeyAction::Message
            | KeyAction::StopRun
            | KeyAction::Toggle
            | KeyAction::Fanout
            | KeyAction::Copy => {}
            KeyAction::BuilderFee => self.open_builder_fee(fx),
        }
    }

    pub(crate) fn page(&self) -> usize {
        (self.size.1 as usize / 3).max(1)
    }

    fn set_tab(&mut self, tab: Tab) {
        if self.tab != tab {
            self.tab = tab;
            self.focus = 0;
            if tab == Tab::Discovery {
                self.discovery_due_now();
            }
            self.entered_agents_tab();
            self.entered_signals_tab();
        }
    }

    fn move_selection(&mut self, pane: Pane, delta: i64) {
        if matches!(pane, Pane::Transcript | Pane::ChatLog) {
            // Text panes scroll: up (negative) goes back in time, away from the newest line.
            let max = self.text_pane_max_scroll(pane);
            let scroll = match pane {
                Pane::Transcript => &mut self.research.scroll,
                _ => &mut self.chat.scroll,
            };
            *scroll = (*scroll as i64 - delta).clamp(0, max as i64) as usize;
            return;
        }
        let len = self.pane_len(pane) as i64;
        if len == 0 {
            return;
        }
        let cur = self.selected(pane) as i64;
        self.selected
            .insert(pane, (cur + delta).clamp(0, len - 1) as usize);
        if pane == Pane::Jobs {
            // Another job: its trades start from the top.
            self.selected.insert(Pane::Trades, 0);
        }
        if pane == Pane::Destinations {
            self.destination_selected();
        }
    }

    pub(crate) fn clamp(&mut self, pane: Pane) {
        let len = self.pane_len(pane);
        if let Some(sel) = self.selected.get_mut(&pane) {
            *sel = (*sel).min(len.saturating_sub(1));
        }
    }

    fn request_quit(&mut self, fx: &mut Vec<Effect>) {
        if self.confirm_in_flight() {
            self.modal = Some(Modal::QuitConfirm);
        } else {
            self.should_quit = true;
            fx.push(Effect::Quit);
        }
    }

    pub fn refresh(&mut self) {
        // A refused key may have been replaced; `r` tries again.
        self.auth_failed = None;
        for feed in self.feeds.values_mut() {
            feed.poll.ask_at(self.now);
        }
        if self.tab == Tab::Discovery {
            self.discovery_due_now();
        }
        for job in &mut self.jobs {
            job.poll.ask_at(self.now);
        }
        self.refresh_agents();
        self.refresh_signals();
    }

    fn start_approval(&mut self, id: &str) {
        let now = self.now;
        match self.item(id) {
            Some(item) if item.can_approve(now) => {
                self.modal = Some(Modal::Approve(id.to_string()))
            }
            Some(item) => {
                let status = item.status(now).label();
                self.toast(
                    format!("{id} is {status}: it can no longer be approved"),
                    ToastLevel::Error,
                );
            }
            None => self.toast(format!("no proposal {id} in the inbox"), ToastLevel::Error),
        }
    }

    /// After a 429 the service refuses POSTs until the quota resets: say so instead of sending.
    pub(crate) fn posts_held(&mut self) -> bool {
        let now = self.now;
        match self.quota_until {
            Some(until) if until > now => {
                let secs = (until - now).num_seconds();
                self.toast(
                    format!("daily POST quota used up: POSTs are held for {secs}s"),
                    ToastLevel::Error,
                );
                true
            }
            _ => false,
        }
    }

    pub(crate) fn approve(&mut self, id: &str, fx: &mut Vec<Effect>) {
        let now = self.now;
        if self.posts_held() {
            return;
        }
        let Some(item) = self.item_mut(id) else {
            return;
        };
        // Re-checked here: the countdown may have run out while the dialog was open.
        if !item.can_approve(now) {
            let status = item.status(now).label();
            self.toast(
                format!("{id} is {status}: not confirmed"),
                ToastLevel::Error,
            );
            return;
        }
        item.local = LocalState::Confirming;
        if let Some(t) = &item.tool {
            let mut args = match &t.args {
                serde_json::Value::Object(m) => m.clone(),
                _ => serde_json::Map::new(),
            };
            args.insert("confirmToken".into(), json!(t.confirm_token));
            fx.push(Effect::ExecuteTool {
                name: t.tool.clone(),
                args: serde_json::Value::Object(args),
                approval: Some(id.to_string()),
            });
            self.tools.running += 1;
            return;
        }
        fx.push(Effect::Confirm(id.to_string()));
    }

    fn reject(&mut self, id: &str, fx: &mut Vec<Effect>) {
        let now = self.now;
        let Some(item) = self.item_mut(id) else {
            return;
        };
        if item.status(now) != Status::Staged {
            let status = item.status(now).label();
            self.toast(
                format!("{id} is {status}: nothing to reject"),
                ToastLevel::Error,
            );
            return;
        }
        item.local = LocalState::Rejected;
        let summary = item.describe();
        let result = if item.tool.is_some() {
            "dismissed; the confirm token expires unused"
        } else {
            "dismissed; the proposal will expire on the service"
        };
        self.decide(id, DecisionKind::Rejected, summary, result.into(), fx);
    }

    // ---- command line --------------------------------------------------------------------------

    pub(crate) fn on_command_key(&mut self, key: KeyEvent, fx: &mut Vec<Effect>) {
        let coins = if key.code == KeyCode::Tab {
            self.known_coins()
        } else {
            Vec::new()
        };
        let Some(Modal::CommandLine(line)) = self.modal.as_mut() else {
            return;
        };
        match key.code {
            KeyCode::Esc => {
                self.modal = None;
                return;
            }
            KeyCode::Enter => {
                let text = line.text().trim().to_string();
                self.modal = None;
                if text.is_empty() {
                    return;
                }
                if self.history.last() != Some(&text) {
                    self.history.push(text.clone());
                }
                match command::parse(&text) {
                    Ok(cmd) => self.run_command(cmd, fx),
                    Err(e) => self.command_error = Some(format!("{text}: {e}")),
                }
                return;
            }
            KeyCode::Up | KeyCode::Down => {
                if line.history.is_empty() {
                    return;
                }
                let last = line.history.len() - 1;
                let pos = match (key.code, line.history_pos) {
                    (KeyCode::Up, None) => Some(last),
                    (KeyCode::Up, Some(p)) => Some(p.saturating_sub(1)),
                    (KeyCode::Down, Some(p)) if p < last => Some(p + 1),
                    _ => None,
                };
                line.history_pos = pos;
                let text = pos.map(|p| line.history[p].clone()).unwrap_or_default();
                line.set_text(&text);
                return;
            }
            KeyCode::Tab => {
                if line.completions.is_empty() {
                    let refs: Vec<&str> = coins.iter().map(String::as_str).collect();
                    let tools: Vec<&str> =
                        self.tools.tools.iter().map(|t| t.name.as_str()).collect();
                    line.completions = command::complete_with(&line.text(), &refs, &tools);
                    line.completion_pos = 0;
                } else {
                    line.completion_pos = (line.completion_pos + 1) % line.completions.len();
                }
                if let Some(c) = line.completions.get(line.completion_pos).cloned() {
                    line.set_text(&c);
                }
                return;
            }
            _ => {}
        }
        line.completions.clear();
        line.input.input(key);
    }

    /// Coins for completion: the venue's, plus any seen in positions.
    /// Coins for completion: those the service named (positions, open orders, proposals,
    /// Discovery rows). Until it has named any, the majors every venue lists.
    pub fn known_coins(&self) -> Vec<String> {
        let rows = [
            &self.discovery.top,
            &self.discovery.live,
            &self.discovery.combos,
        ];
        let from_rows = rows.into_iter().flatten().filter_map(|r| {
            command::normalize_pair(&r.pair)?
                .strip_suffix("-USD")
                .map(str::to_string)
        });
        let coins: BTreeSet<String> = self
            .positions
            .iter()
            .map(|p| p.coin.clone())
            .chain(self.orders.iter().map(|o| o.coin.clone()))
            .chain(self.inbox.iter().map(|i| i.proposal.preview.coin.clone()))
            .chain(from_rows)
            .filter(|c| !c.is_empty())
            .collect();
        if coins.is_empty() {
            return FALLBACK_COINS.iter().map(|c| c.to_string()).collect();
        }
        coins.into_iter().collect()
    }

    fn run_command(&mut self, cmd: Command, fx: &mut Vec<Effect>) {
        match cmd {
            Command::Propose(_) | Command::Close(_) | Command::Trade(_) if self.posts_held() => {}
            Command::Propose(args) => fx.push(Effect::Propose(Box::new(args.to_signal()))),
            Command::Trade(args) => self.trade(&args, fx),
            Command::BuilderFee => self.open_builder_fee(fx),
            Command::Close(target) => fx.push(Effect::Propose(Box::new(target.to_signal()))),
            Command::Confirm(id) => {
                if self.item(&id).is_none() {
                    // Named by hand: the details arrive with the next proposals poll, if the
                    // service lists them; the confirm itself needs only the id.
                    self.inbox.insert(
                        0,
                        InboxItem {
                            proposal: Proposal {
                                proposal_id: id.clone(),
                                status: "staged".into(),
                                ..Default::default()
                            },
                            source: Source::Console,
                            local: LocalState::None,
                            first_seen: self.now,
                            expiry_noted: false,
                            tool: None,
                        },
                    );
                    self.seen.insert(id.clone());
                }
                self.set_tab(Tab::Proposals);
                if let Some(i) = self.inbox.iter().position(|i| i.id() == id) {
                    self.selected.insert(Pane::Inbox, i);
                }
                self.start_approval(&id);
            }
            Command::Backtest(args) => {
                let request = crate::api::model::BacktestRequest {
                    strategy_id: args.strategy,
                    pair: args.pair,
                    timeframe: args.timeframe,
                    days: args.days,
                    parameters: args
                        .params
                        .iter()
                        .map(|(k, v)| (k.clone(), super::backtests::number_value(*v)))
                        .collect(),
                };
                self.submit_backtest(request, fx);
            }
            Command::Top(args) => {
                let view = match args.view {
                    command::TopView::Backtests => DView::TopBacktests,
                    command::TopView::Live => DView::TopLive,
                    command::TopView::Combos => DView::Combos,
                };
                self.set_tab(Tab::Discovery);
                self.discovery.view = view;
                if self.discovery.apply(view, &args.params) {
                    self.selected.insert(view.pane(), 0);
                }
                self.discovery.state_mut(view).feed.poll.ask_at(self.now);
            }
            Command::Job(id) => {
                if !self.jobs.iter().any(|j| j.id() == id) {
                    let job = crate::api::model::BacktestJob {
                        job_id: id.clone(),
                        ..Default::default()
                    };
                    self.jobs.insert(0, JobEntry::new(job, self.now));
                }
                self.set_tab(Tab::Backtests);
                if let Some(i) = self.jobs.iter().position(|j| j.id() == id) {
                    self.selected.insert(Pane::Jobs, i);
                    self.jobs[i].poll.ask_at(self.now);
                }
            }
            Command::Service(text) => self.run_service_command(text, fx),
            Command::Chat(text) => self.send_chat(text, fx),
            Command::Tool { name, args } => self.run_tool_command(name, args, fx),
            Command::Refresh => self.refresh(),
            Command::Help => self.modal = Some(Modal::Help { scroll: 0 }),
            Command::Quit => self.request_quit(fx),
        }
    }

    /// One character typed into (Some) or erased from (None) the filter of the tab on screen.
    pub(crate) fn edit_filter(&mut self, edit: Option<char>) {
        if self.tab == Tab::Discovery {
            let view = self.discovery.view;
            let filter = &mut self.discovery.state_mut(view).filter;
            match edit {
                Some(c) => filter.push(c),
                None => {
                    filter.pop();
                }
            }
            self.rebuild_view(view);
        } else {
            match edit {
                Some(c) => self.filter.push(c),
                None => {
                    self.filter.pop();
                }
            }
            self.refilter();
        }
    }

    fn refilter(&mut self) {
        let needle = self.filter.to_lowercase();
        let matches = |hay: String| needle.is_empty() || hay.to_lowercase().contains(&needle);
        self.audit_view = self
            .audit
            .iter()
            .enumerate()
            .filter(|(_, e)| {
                matches(format!(
                    "{} {} {} {}",
                    e.operation,
                    e.outcome,
                    e.error_code.as_deref().unwrap_or(""),
                    e.proposal_id.as_deref().unwrap_or("")
                ))
            })
            .map(|(i, _)| i)
            .collect();
        self.request_view = self
            .request_log
            .iter()
            .enumerate()
            .filter(|(_, e)| matches(format!("{} {}", e.operation, e.status)))
            .map(|(i, _)| i)
            .collect();
        self.clamp(Pane::Audit);
        self.clamp(Pane::Requests);
    }

    // ---- discovery and backtests ---------------------------------------------------------------

    /// The Discovery views fetched while the tab shows: the visible one, and the strategy catalog
    /// until it has loaded once (the backtest form takes parameter types and bounds from it).
    pub fn discovery_due_views(&self) -> Vec<DView> {
        let view = self.discovery.view;
        let mut views = vec![view];
        if view != DView::Strategies
            && self
                .discovery
                .state(DView::Strategies)
                .feed
                .poll
                .updated_at
                .is_none()
        {
            views.push(DView::Strategies);
        }
        views
    }

    /// Entering the tab or `r`: the visible view is fetched now.
    fn discovery_due_now(&mut self) {
        let now = self.now;
        let view = self.discovery.view;
        for v in self.discovery_due_views() {
            let feed = &mut self.discovery.state_mut(v).feed;
            if v == view || feed.poll.next_due.is_none() {
                feed.poll.ask_at(now);
            }
        }
    }

    fn switch_view(&mut self, view: DView) {
        self.discovery.view = view;
        let now = self.now;
        for v in self.discovery_due_views() {
            let feed = &mut self.discovery.state_mut(v).feed;
            // A view never fetched is fetched now; one fetched before keeps its schedule (and is
            // fetched now if that has passed).
            if feed.poll.next_due.is_none() {
                feed.poll.ask_at(now);
            }
        }
    }

    /// Rebuilds a view's index after a sort or filter change, keeping the cursor on the same row
    /// when it is still shown.
    fn rebuild_view(&mut self, view: DView) {
        let before = self.row_under_cursor(view);
        self.discovery.rebuild(view);
        self.reselect(view, before);
    }

    /// The data row the cursor is on in a Discovery view.
    fn row_under_cursor(&self, view: DView) -> Option<usize> {
        self.discovery
            .state(view)
            .index
            .get(self.selected(view.pane()))
            .copied()
    }

    /// After a view's index changed, puts the cursor back on the row it was on (or the top).
    fn reselect(&mut self, view: DView, before: Option<usize>) {
        let pane = view.pane();
        let pos = before
            .and_then(|i| {
                self.discovery
                    .state(view)
                    .index
                    .iter()
                    .position(|x| *x == i)
            })
            .unwrap_or(0);
        self.selected.insert(pane, pos);
        self.clamp(pane);
    }

    fn on_discovered(
        &mut self,
        query: DiscoveryQuery,
        result: Result<DiscoveryPayload, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
    ) {
        self.dirty = true;
        let view = query.view();
        let current = query == self.discovery.query(view);
        let now = self.now;
        match result {
            Ok(payload) => {
                let before = self.row_under_cursor(view);
                self.discovery.store(&query, payload);
                let feed = &mut self.discovery.state_mut(view).feed;
                if current {
                    feed.answered(at, latency);
                    self.reselect(view, before);
                } else {
                    // The answer is for parameters changed since: ask again with the new ones.
                    feed.poll.settled();
                    feed.poll.latency = Some(latency);
                    feed.poll.ask_at(now.min(at));
                }
            }
            Err(ApiError::Unauthorized { message }) => {
                let feed = &mut self.discovery.state_mut(view).feed;
                feed.poll.settled();
                feed.error = Some(ApiError::Unauthorized {
                    message: message.clone(),
                });
                self.auth_failed = Some(message);
            }
            Err(e) => {
                let quota = match &e {
                    ApiError::QuotaExceeded { retry_after, .. } => Some(*retry_after),
                    _ => None,
                };
                let feed = &mut self.discovery.state_mut(view).feed;
                if current {
                    feed.failed(at, e);
                } else {
                    feed.poll.settled();
                    feed.poll.ask_at(now.min(at));
                }
                if let Some(wait) = quota {
                    self.quota_until = Some(at + to_delta(wait));
                }
            }
        }
    }

    fn submit_backtest(
        &mut self,
        request: crate::api::model::BacktestRequest,
        fx: &mut Vec<Effect>,
    ) {
        if self.posts_held() {
            return;
        }
        self.submitting += 1;
        fx.push(Effect::RunBacktest(Box::new(request)));
        self.set_tab(Tab::Backtests);
    }

    fn on_backtest_submitted(
        &mut self,
        request: &crate::api::model::BacktestRequest,
        result: Result<Box<crate::api::model::BacktestJob>, ApiError>,
        at: DateTime<Utc>,
    ) {
        self.submitting = self.submitting.saturating_sub(1);
        match result {
            Ok(job) => {
                let mut job = *job;
                if job.request.is_none() {
                    job.request = Some(request.clone());
                }
                if job.status.is_empty() {
                    job.status = "queued".into();
                }
                let id = job.job_id.clone();
                self.toast(
                    format!(
                        "Backtest {id} {}: {} {}",
                        job.status, request.strategy_id, request.pair
                    ),
                    ToastLevel::Info,
                );
                if !self.jobs.iter().any(|j| j.id() == id) {
                    let mut entry = JobEntry::new(job, at);
                    entry.poll.ask_at(at + to_delta(JOB_POLL));
                    self.jobs.insert(0, entry);
                    self.selected.insert(Pane::Jobs, 0);
                    self.selected.insert(Pane::Trades, 0);
                }
            }
            Err(e) => {
                if let ApiError::QuotaExceeded { retry_after, .. } = &e {
                    self.quota_until = Some(at + to_delta(*retry_after));
                }
                self.toast(
                    format!("Backtest {} failed: {e}", request.strategy_id),
                    ToastLevel::Error,
                );
            }
        }
        self.dirty = true;
        self.poll_now(&[Resource::Usage], at);
    }

    fn on_job_loaded(
        &mut self,
        id: &str,
        result: Result<Box<crate::api::model::BacktestJob>, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
    ) {
        self.dirty = true;
        let Some(entry) = self.jobs.iter_mut().find(|j| j.id() == id) else {
            return;
        };
        entry.poll.settled();
        let mut notice = None;
        match result {
            Ok(job) => {
                let was_active = entry.active();
                let request = entry.job.request.take();
                entry.job = *job;
                if entry.job.request.is_none() {
                    entry.job.request = request;
                }
                if entry.job.job_id.is_empty() {
                    entry.job.job_id = id.to_string();
                }
                entry.error = None;
                entry.poll.succeeded(at, latency, JOB_POLL);
                if was_active && entry.finished() {
                    notice = Some(if entry.failed() {
                        let why = entry
                            .job
                            .error
                            .as_ref()
                            .map(|e| e.message.clone())
                            .unwrap_or_else(|| "no reason given".into());
                        (format!("Backtest {id} failed: {why}"), ToastLevel::Error)
                    } else {
                        let ret = entry
                            .job
                            .data
                            .as_ref()
                            .and_then(|d| d.stats.total_return)
                            .map(|r| format!(": return {r:+.2}%"))
                            .unwrap_or_default();
                        (format!("Backtest {id} done{ret}"), ToastLevel::Info)
                    });
                }
            }
            Err(ApiError::NotFound { .. }) => {
                entry.gone = true;
                entry.error = Some("the service does not know this job".into());
            }
            Err(ApiError::Unauthorized { message }) => {
                entry.error = Some(message.clone());
                self.auth_failed = Some(message);
            }
            Err(e) => {
                entry.poll.failed(at, JOB_POLL, &e);
                entry.error = Some(e.to_string());
            }
        }
        if let Some((text, level)) = notice {
            self.toast(text, level);
        }
        self.clamp(Pane::Trades);
    }

    pub fn selected_job(&self) -> Option<&JobEntry> {
        self.jobs.get(self.selected(Pane::Jobs))
    }

    /// The Discovery row under the cursor.
    pub fn selected_row(&self) -> Option<Selected<'_>> {
        let view = self.discovery.view;
        self.discovery.get(view, self.selected(view.pane()))
    }

    /// `b`: the backtest form, prefilled from the Discovery row or the job under the cursor.
    pub(crate) fn open_backtest_form(&mut self) {
        let form = match self.tab {
            Tab::Discovery => match self.selected_row() {
                Some(Selected::Row(r)) => Some(BacktestForm::new(
                    &r.strategy_id,
                    if r.pair.is_empty() {
                        "BTC-USD"
                    } else {
                        &r.pair
                    },
                    if r.timeframe.is_empty() {
                        "5m"
                    } else {
                        &r.timeframe
                    },
                    if r.days == 0 { 30 } else { r.days },
                    &r.parameters,
                    self.discovery.strategy(&r.strategy_id),
                )),
                Some(Selected::Strategy(s)) => Some(BacktestForm::new(
                    &s.id,
                    "BTC-USD",
                    "5m",
                    30,
                    &serde_json::Map::new(),
                    Some(s),
                )),
                None => None,
            },
            Tab::Backtests => self.selected_job().and_then(|j| {
                let r = j.job.request.as_ref()?;
                Some(BacktestForm::new(
                    &r.strategy_id,
                    &r.pair,
                    &r.timeframe,
                    r.days,
                    &r.parameters,
                    self.discovery.strategy(&r.strategy_id),
                ))
            }),
            _ => None,
        };
        if let Some(form) = form {
            self.modal = Some(Modal::BacktestForm(form));
        }
    }

    /// `p`: the command line, prefilled with a proposal for the row's coin, to edit and run. The
    /// direction is the row's latest signal when the service sends one (`lastSignal`), else long.
    pub(crate) fn propose_from_row(&mut self) {
        if self.tab != Tab::Discovery {
            return;
        }
        let (pair, signal) = match self.selected_row() {
            Some(Selected::Row(r)) => (
                r.pair.clone(),
                r.stats
                    .extra
                    .get("lastSignal")
                    .and_then(|v| v.as_str())
                    .map(str::to_ascii_lowercase),
            ),
            Some(Selected::Strategy(_)) => ("BTC-USD".to_string(), None),
            None => return,
        };
        let coin = command::normalize_pair(&pair)
            .and_then(|p| p.strip_suffix("-USD").map(str::to_string))
            .unwrap_or_else(|| "BTC".into());
        let side = match signal.as_deref() {
            Some("short" | "sell") => "short",
            _ => "long",
        };
        self.prefill(&format!("/propose {coin} {side} $1000 "));
    }

    pub(crate) fn on_form_key(&mut self, key: KeyEvent, fx: &mut Vec<Effect>) {
        let Some(Modal::BacktestForm(form)) = self.modal.as_mut() else {
            return;
        };
        match key.code {
            KeyCode::Esc => self.modal = None,
            KeyCode::Tab | KeyCode::Down => form.next(1),
            KeyCode::BackTab | KeyCode::Up => form.next(-1),
            KeyCode::Backspace => form.backspace(),
            KeyCode::Enter => {
                if let Some(request) = form.validate() {
                    self.modal = None;
                    self.submit_backtest(request, fx);
                }
            }
            KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                if let Some(f) = form.fields.get_mut(form.focus) {
                    f.value.clear();
                }
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => form.type_char(c),
            _ => {}
        }
    }

    // ---- mouse ---------------------------------------------------------------------------------

    fn on_mouse(&mut self, m: crossterm::event::MouseEvent) {
        let screen = layout::compute(self.size.0, self.size.1, self);
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                if let Some(tab) = screen.tab_at(m.column, m.row) {
                    self.set_tab(tab);
                    self.dirty = true;
                    return;
                }
                if let Some(view) = screen.view_at(m.column, m.row) {
                    self.switch_view(view);
                    self.dirty = true;
                    return;
                }
                if let Some((pane, row)) = screen.row_at(m.column, m.row) {
                    if let Some(i) = self.tab.panes().iter().position(|p| *p == pane) {
                        self.focus = i;
                    }
                    let offset = layout::offset(self.selected(pane), screen.rows(pane));
                    let idx = offset + row;
                    if idx < self.pane_len(pane) {
                        self.selected.insert(pane, idx);
                        if pane == Pane::Destinations {
                            self.destination_selected();
                        }
                    }
                    self.dirty = true;
                }
            }
            MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
                let delta = if m.kind == MouseEventKind::ScrollDown {
                    3
                } else {
                    -3
                };
                let pane = screen
                    .pane_at(m.column, m.row)
                    .unwrap_or_else(|| self.focused_pane());
                self.move_selection(pane, delta);
                self.dirty = true;
            }
            _ => {}
        }
    }
}

fn next_of(all: &[Tab], cur: Tab, step: i64) -> Tab {
    let i = all.iter().position(|t| *t == cur).unwrap_or(0) as i64;
    let n = all.len() as i64;
    all[((i + step).rem_euclid(n)) as usize]
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
    if parts.is_empty() {
        done.status.clone()
    } else {
        parts.join("; ")
    }
}

/// The risk of a proposal, from its preview and live data.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Risk {
    pub mark: f64,
    pub notional: f64,
    pub margin: f64,
    pub est_liquidation: Option<f64>,
    pub sl_pct: Option<f64>,
    pub sl_usd: Option<f64>,
    pub tp_pct: Option<f64>,
    pub tp_usd: Option<f64>,
    pub reward_risk: Option<f64>,
    /// Share of equity lost if the stop-loss fills (or the margin, without one), in %.
    pub equity_at_risk_pct: Option<f64>,
    pub existing: Option<PositionRow>,
}

pub fn risk(preview: &Preview, positions: &[PositionRow], equity: Option<f64>) -> Risk {
    let existing = positions
        .iter()
        .find(|p| {
            p.coin == preview.coin
                && (preview.exchange.is_empty() || p.exchange == preview.exchange)
        })
        .cloned();
    let mark = existing
        .as_ref()
        .map(|p| p.mark_px)
        .filter(|m| *m > 0.0)
        .unwrap_or(preview.mark_px);
    let entry = preview.limit_px.unwrap_or(mark);
    let notional = preview.size * entry;
    let leverage = preview.leverage.max(1) as f64;
    let margin = notional / leverage;
    let dist = |level: Option<f64>| {
        level.filter(|_| entry > 0.0).map(|l| {
            let pct = (l - entry).abs() / entry * 100.0;
            (pct, (l - entry).abs() * preview.size)
        })
    };
    let sl = dist(preview.sl);
    let tp = dist(preview.tp);
    let reward_risk = match (tp, sl) {
        (Some((_, reward)), Some((_, risk))) if risk > 0.0 => Some(reward / risk),
        _ => None,
    };
    let at_risk = sl.map(|(_, usd)| usd).unwrap_or(margin);
    Risk {
        mark,
        notional,
        margin,
        est_liquidation: preview.est_liquidation_px,
        sl_pct: sl.map(|s| s.0),
        sl_usd: sl.map(|s| s.1),
        tp_pct: tp.map(|t| t.0),
        tp_usd: tp.map(|t| t.1),
        reward_risk,
        equity_at_risk_pct: equity.filter(|e| *e > 0.0).map(|e| at_risk / e * 100.0),
        existing,
    }
}
