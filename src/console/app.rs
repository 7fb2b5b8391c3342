//! All console state, and `update`: the only place it changes. `update` is pure — it returns Effects
//! for the runner to perform — so every behaviour here is testable with an injected clock.

use super::action::{Action, Answer, Effect, Payload, Resource};
use super::command::{self, Command};
use super::inbox::{Decision, InboxItem, LocalState, Source, Status};
use super::keymap::{KeyAction, Keymap};
use super::layout::{self, Pane};
use super::modal::Modal;
use super::poll::{Poll, to_delta};
use super::tabs::Tab;
use super::tabs::backtests::{BacktestsState, JobEntry};
use super::tabs::chat::{self, ChatState};
use super::tabs::discovery::{DView, DiscoveryState};
use super::tabs::logs::LogsState;
use super::tabs::research::{self, ResearchState};
use super::tabs::signals::{self, SignalsState};
use super::tabs::tools::ToolsState;
use crate::api::ApiError;
use crate::api::model::{OpenOrderRow, PnlSummary, PositionRow, Proposal, Usage, Whoami};
use crate::config::PollIntervals;
use chrono::{DateTime, Duration as TimeDelta, Utc};
use crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEventKind,
};
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::time::Duration;

const EQUITY_POINTS: usize = 600;
const REQUEST_LOG: usize = 500;
const TOAST_FOR: TimeDelta = TimeDelta::seconds(4);
/// Completion's coins before the service has named any.
const FALLBACK_COINS: [&str; 10] = [
    "BTC", "ETH", "SOL", "XRP", "DOGE", "AVAX", "LINK", "BNB", "ARB", "SUI",
];

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
    pub(crate) position_index: std::collections::HashMap<String, Vec<usize>>,
    pub orders: Vec<OpenOrderRow>,
    pub pnl: Option<PnlSummary>,
    pub usage: Option<Usage>,
    pub logs: LogsState,
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
    pub backtests: BacktestsState,
    pub research: ResearchState,
    pub tools: ToolsState,
    pub chat: ChatState,
    pub signals: SignalsState,
    /// Reads the wallet's private key for the builder-fee signature, when asked to sign (the
    /// environment by default; tests inject a fixed key). Never stored.
    pub wallet_key: fn() -> Option<crate::secret::Secret>,
    /// Numbers the tool approvals of the inbox (`tool-1`, `tool-2`).
    pub(crate) tool_seq: u32,
    pub size: (u16, u16),
    pub should_quit: bool,
    /// Something visible changed since the last draw.
    pub dirty: bool,
    /// Proposal ids seen before, so a proposal rings the bell once.
    pub(crate) seen: HashSet<String>,
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
            logs: LogsState::default(),
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
            backtests: BacktestsState::default(),
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
            Pane::Audit => self.logs.audit_view.len(),
            Pane::Requests => self.logs.request_view.len(),
            Pane::Strategies | Pane::TopBacktests | Pane::TopLive | Pane::Combos => {
                DView::of_pane(pane).map_or(0, |v| self.discovery.len(v))
            }
            Pane::Jobs => self.backtests.jobs.len(),
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

    /// Polls these resources at `at` instead of at their next scheduled time: what an action just
    /// changed shows up now.
    pub(crate) fn poll_now(&mut self, resources: &[Resource], at: DateTime<Utc>) {
        for r in resources {
            if let Some(f) = self.feeds.get_mut(r) {
                f.poll.ask_at(at);
            }
        }
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
            for j in self.backtests.jobs.iter().filter(|j| j.active()) {
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
            self.schedule_discovery(fx);
        }
        self.schedule_jobs(fx);
        self.schedule_research(fx);
        self.schedule_tools(fx);
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
                self.logs.audit = rows;
                self.refilter();
            }
            Payload::Proposals(list) => self.merge_proposals(list, fx),
        }
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
        if self.on_global_key(action, fx) {
            return;
        }
        let pane = self.focused_pane();
        if self.on_tab_key(action, pane) {
            return;
        }
        self.on_navigation_key(action, pane);
    }

    /// Keys that mean the same on every tab.
    fn on_global_key(&mut self, action: KeyAction, fx: &mut Vec<Effect>) -> bool {
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
            KeyAction::Refresh => self.refresh(),
            // The inbox item under the cursor: the Desk strip's, else the Proposals list's.
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
            KeyAction::BuilderFee => self.open_builder_fee(fx),
            _ => return false,
        }
        true
    }

    /// Focus and cursor movement in the focused pane, for keys the tab left alone.
    fn on_navigation_key(&mut self, action: KeyAction, pane: Pane) {
        match action {
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
            _ => {}
        }
    }

    pub(crate) fn page(&self) -> usize {
        (self.size.1 as usize / 3).max(1)
    }

    pub(crate) fn set_tab(&mut self, tab: Tab) {
        if self.tab != tab {
            self.tab = tab;
            self.focus = 0;
            self.entered_tab();
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

    /// How far a text pane can scroll up: its wrapped lines beyond one screenful.
    pub(crate) fn text_pane_max_scroll(&self, pane: Pane) -> usize {
        let screen = layout::compute(self.size.0, self.size.1, self);
        let r = screen.pane(pane);
        let width = r.width.saturating_sub(2) as usize;
        let lines = match pane {
            Pane::Transcript => research::transcript_lines(&self.research, width).len(),
            _ => chat::chat_lines(&self.chat, width).len(),
        };
        lines.saturating_sub(layout::text_rows(r))
    }
    /// Top (the oldest line) or Bottom (follow the newest) of a text pane, as its scroll offset.
    pub(crate) fn scroll_end(&self, pane: Pane, action: KeyAction) -> usize {
        if action == KeyAction::Top {
            self.text_pane_max_scroll(pane)
        } else {
            0
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
        for job in &mut self.backtests.jobs {
            job.poll.ask_at(self.now);
        }
        self.refresh_research();
        self.refresh_tab();
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
                        .map(|(k, v)| (k.clone(), super::tabs::backtests::number_value(*v)))
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
                if !self.backtests.jobs.iter().any(|j| j.id() == id) {
                    let job = crate::api::model::BacktestJob {
                        job_id: id.clone(),
                        ..Default::default()
                    };
                    self.backtests.jobs.insert(0, JobEntry::new(job, self.now));
                }
                self.set_tab(Tab::Backtests);
                if let Some(i) = self.backtests.jobs.iter().position(|j| j.id() == id) {
                    self.selected.insert(Pane::Jobs, i);
                    self.backtests.jobs[i].poll.ask_at(self.now);
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

    // ---- discovery and backtests ---------------------------------------------------------------

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
