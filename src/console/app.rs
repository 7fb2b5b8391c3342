//! The console's state and `update`, the only place it changes. `update` is pure — it returns
//! Effects for the runner to perform — so every behaviour is testable with an injected clock.
//!
//! `App` is the router and what the tabs share: the account feeds, the inbox, the request log, the
//! service, toasts, the tab and focus, the pane cursors, the modal slot — and one value per tab.
//! `update` routes an Action to the modal, the input router, or the answer's owner, and sends the
//! tab on screen its keys and its moments (shown, refreshed). A component tab gets a `Ctx`
//! (`component.rs`) and returns what it asks of App, which `perform` does. The approval inbox is
//! a component too (`inbox::Inbox`: its items, the gateway's state, approve and reject, the
//! merges): it gets an `InboxCtx` through `with_inbox!` and asks the same way. App's fields are
//! private to this module: the rest of `impl App` is in `app/` — `feeds.rs`, `inbox.rs` (the
//! routes to the inbox), `guard.rs`, `input.rs`, `clock.rs`, `command_line.rs`, `route.rs` and
//! `signal_modals.rs` — and everything else reads through the accessors below.

mod clock;
mod command_line;
mod feeds;
mod guard;
mod inbox;
mod input;
mod market;
mod pages;
mod route;
mod signal_modals;
mod tables;

use super::action::{Action, Answer, Effect, Resource};
use super::component::{Ask, Shown, posts_held_text};
pub use super::component::{Message, RequestLogEntry, ServiceInfo, ToastLevel};
use super::deliberate::{Held, Keyboard};
use super::feeds::{self as feed, Account, Feed, Options};
use super::gate::GateState;
use super::inbox::Inbox;
use super::keymap::KeyAction;
use super::keymap::Keymap;
use super::layout::{Pane, Shape};
use super::modal::{Decision, Modal};
use super::tab::Tab;
use super::tabs::Tabs;
use super::tabs::discovery::DView;
use super::tabs::proposals::shown::InboxShown;
use super::tabs::signals;
use crate::api::ApiError;
use chrono::{DateTime, Duration as TimeDelta, Utc};
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

const REQUEST_LOG: usize = 500;
const TOAST_FOR: TimeDelta = TimeDelta::seconds(4);
/// Messages the Logs tab keeps (toasts, command errors), newest first.
const MESSAGES: usize = 500;
#[derive(Debug, Clone)]
pub struct Toast {
    pub text: String,
    pub level: ToastLevel,
    pub until: DateTime<Utc>,
}

pub struct App {
    now: DateTime<Utc>,
    service: ServiceInfo,
    options: Options,
    keymap: Keymap,
    feeds: BTreeMap<Resource, Feed>,
    account: Account,
    /// The approval inbox: its items, decisions and selections, owned by `inbox/`.
    inbox: Inbox,
    /// Newest first.
    request_log: VecDeque<RequestLogEntry>,
    tab: Tab,
    /// Index into `tab.panes()`.
    focus: usize,
    /// The pane `z` put on the whole screen.
    zoom: Option<Pane>,
    /// Each table's cursor; a text pane's (`Pane::is_text`) first line shown.
    selected: BTreeMap<Pane, usize>,
    /// Every table's filter and order, and the rows each shows (`table.rs`, `app/tables.rs`).
    tables: crate::console::table::Tables,
    /// When the tables were last rebuilt on a tick (a second).
    tables_second: i64,
    /// The table the filter line is open on.
    filter_pane: Option<Pane>,
    /// The dialog, form or line that has the keys, if any.
    modal: Option<Modal>,
    /// The keys outside dialogs: whether the person is typing (`deliberate.rs`).
    keyboard: Keyboard,
    /// A decision a deliberate key took, carried out once its hold passed with no other
    /// key (`deliberate::Held`).
    held: Option<Held<Decision>>,
    /// Kept when the line closes, so Up recalls earlier commands.
    history: Vec<String>,
    command_error: Option<String>,
    toasts: Vec<Toast>,
    /// Every toast and command error, newest first, whatever the Logs filter.
    messages: VecDeque<Message>,
    auth_failed: Option<String>,
    quota_until: Option<DateTime<Utc>>,
    /// One value per tab.
    tabs: Tabs,
    /// Reads the wallet's private key for the builder-fee signature, when asked to sign (the
    /// environment by default; tests inject a fixed key). Never stored.
    wallet_key: fn() -> Option<crate::secret::Secret>,
    size: (u16, u16),
    should_quit: bool,
    /// Something visible changed since the last draw.
    dirty: bool,
    /// A poll's answer changed the screen; drawn with the clock's next tick.
    pending_draw: bool,
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
        let gate_interval = options
            .poll
            .get(&Resource::Proposals)
            .copied()
            .unwrap_or(Duration::from_secs(1));
        App {
            now,
            service,
            options,
            keymap,
            feeds,
            account: Account::default(),
            inbox: Inbox::started(now, gate_interval),
            request_log: VecDeque::new(),
            tab: Tab::Desk,
            focus: 0,
            zoom: None,
            selected: BTreeMap::new(),
            tables: Default::default(),
            tables_second: 0,
            filter_pane: None,
            modal: None,
            keyboard: Keyboard::default(),
            held: None,
            history: Vec::new(),
            command_error: None,
            toasts: Vec::new(),
            messages: VecDeque::new(),
            auth_failed: None,
            quota_until: None,
            tabs: Tabs::new(now),
            wallet_key: signals::wallet_key_from_env,
            size: (120, 40),
            should_quit: false,
            dirty: true,
            pending_draw: false,
        }
    }

    // What the frame, the event loop and the tests read of the state. Nothing outside App's own
    // module changes a field: it sends an Action, or a tab asks (`component::Ask`).

    pub fn now(&self) -> DateTime<Utc> {
        self.now
    }

    pub fn tab(&self) -> Tab {
        self.tab
    }

    pub fn tabs(&self) -> &Tabs {
        &self.tabs
    }

    pub fn service(&self) -> &ServiceInfo {
        &self.service
    }

    pub fn keymap(&self) -> &Keymap {
        &self.keymap
    }

    pub fn feeds(&self) -> &BTreeMap<Resource, Feed> {
        &self.feeds
    }

    pub fn account(&self) -> &Account {
        &self.account
    }

    pub fn inbox(&self) -> &Inbox {
        &self.inbox
    }

    pub fn gate(&self) -> &GateState {
        self.inbox.gate()
    }

    pub fn modal(&self) -> Option<&Modal> {
        self.modal.as_ref()
    }

    pub fn request_log(&self) -> &VecDeque<RequestLogEntry> {
        &self.request_log
    }

    pub fn messages(&self) -> &VecDeque<Message> {
        &self.messages
    }

    pub fn toasts(&self) -> &[Toast] {
        &self.toasts
    }

    pub fn command_error(&self) -> Option<&str> {
        self.command_error.as_deref()
    }

    pub fn auth_failed(&self) -> Option<&str> {
        self.auth_failed.as_deref()
    }

    pub fn quota_until(&self) -> Option<DateTime<Utc>> {
        self.quota_until
    }

    /// A decision a deliberate key took waits for its hold to pass.
    pub fn deciding(&self) -> bool {
        self.held.is_some()
    }

    pub fn size(&self) -> (u16, u16) {
        self.size
    }

    pub fn should_quit(&self) -> bool {
        self.should_quit
    }

    /// Something visible changed since the last draw.
    pub fn dirty(&self) -> bool {
        self.dirty
    }

    /// The frame on screen shows the state.
    pub fn drawn(&mut self) {
        self.dirty = false;
    }

    /// The terminal's size at start (later ones come as `Action::Resize`).
    pub fn set_size(&mut self, width: u16, height: u16) {
        self.size = (width, height);
    }

    /// Moves the clock without a tick: input and results move it too, so countdowns never lag
    /// an event.
    pub fn set_clock(&mut self, now: DateTime<Utc>) {
        self.now = now;
    }

    /// What the console starts with besides its configuration: the embedded gateway's "Connect an
    /// agent" panel, the journal's last decisions, and the configuration's warnings, which stay
    /// on the status line until the first command replaces them.
    pub fn start_with(
        &mut self,
        connect: Option<super::gate::ConnectInfo>,
        history: Vec<super::inbox::Decision>,
        warnings: &[String],
    ) {
        self.inbox.gate_mut().set_connect(connect);
        self.inbox.restore_decisions(history);
        if !warnings.is_empty() {
            self.command_error = Some(warnings.join(" · "));
        }
    }

    // Fixtures: for tests and benches that build a screen directly, bypassing `update` (as
    // `Inbox::fixture_items` does). The console itself never calls them.

    #[doc(hidden)]
    pub fn account_mut(&mut self) -> &mut Account {
        &mut self.account
    }

    #[doc(hidden)]
    pub fn feeds_mut(&mut self) -> &mut BTreeMap<Resource, Feed> {
        &mut self.feeds
    }

    #[doc(hidden)]
    pub fn inbox_mut(&mut self) -> &mut Inbox {
        &mut self.inbox
    }

    /// Puts `pane`'s cursor on `row`, as the keys would.
    #[doc(hidden)]
    pub fn select(&mut self, pane: Pane, row: usize) {
        self.selected.insert(pane, row);
    }

    /// The tab on screen, without what coming on screen asks for (`set_tab`).
    #[doc(hidden)]
    pub fn show(&mut self, tab: Tab) {
        self.tab = tab;
        self.focus = 0;
    }

    pub fn focused_pane(&self) -> Pane {
        if self.tab == Tab::Discovery {
            return self.tabs.discovery.view().pane();
        }
        let panes = self.tab.panes();
        panes[self.focus.min(panes.len() - 1)]
    }

    /// What the layout needs to know of the state (see `layout::compute`).
    pub fn shape(&self) -> Shape {
        let (staged, approvable) = self.inbox.counts(self.now);
        Shape {
            tab: self.tab,
            staged,
            approvable,
            inbox: self.inbox.items().len(),
            positions: self.account.positions.len(),
            orders: self.account.orders.len(),
            discovery_view: self.tabs.discovery.view(),
            jobs: self.tabs.backtests.jobs().len(),
            agents: self.tabs.research.tree().len(),
            artifacts: self.tabs.research.artifacts(),
            tools: self.tabs.tools.tools().len(),
            schema: self
                .tabs
                .tools
                .tools()
                .get(self.row(Pane::Tools).unwrap_or(usize::MAX))
                .map_or(1, |t| {
                    1 + crate::console::forms::schema::properties(&t.input_schema)
                        .len()
                        .max(1)
                }),
            destinations: self.tabs.signals.destinations().len(),
            zoom: self.zoomed(),
        }
    }

    /// `z`: the focused pane on the whole screen, or (zoomed already) the layout back.
    pub(crate) fn toggle_zoom(&mut self) {
        let focused = self.focused_pane();
        self.zoom = match self.zoom {
            Some(z) if z == focused => None,
            _ => Some(focused),
        };
    }

    /// The pane zoomed to the whole screen, if one is.
    pub fn zoomed(&self) -> Option<Pane> {
        self.zoom.filter(|z| self.shape_panes().contains(z))
    }

    fn shape_panes(&self) -> Vec<Pane> {
        if self.tab == Tab::Discovery {
            return vec![self.tabs.discovery.view().pane()];
        }
        self.tab.panes().to_vec()
    }

    /// The row of the pane's data under its cursor (through its filter and sort).
    pub fn row(&self, pane: Pane) -> Option<usize> {
        self.tables.row(pane, self.selected(pane))
    }

    pub fn selected(&self, pane: Pane) -> usize {
        if let Some(row) = self.inbox_row(pane) {
            return row;
        }
        self.selected.get(&pane).copied().unwrap_or(0)
    }

    /// Rows the pane shows: its data's, through its filter.
    pub fn pane_len(&self, pane: Pane) -> usize {
        self.tables.len(pane, self.data_len(pane))
    }

    fn data_len(&self, pane: Pane) -> usize {
        match pane {
            Pane::Positions => self.account.positions.len(),
            Pane::Orders => self.account.orders.len(),
            Pane::Strip => self.strip_items().len(),
            Pane::Inbox => self.inbox.items().len(),
            Pane::Decisions => self.inbox.decisions().len(),
            Pane::Audit => self.tabs.logs.audit_rows(),
            Pane::Requests => self.request_log.len(),
            Pane::Messages => self.messages.len(),
            Pane::Strategies | Pane::TopBacktests | Pane::TopLive | Pane::Combos => {
                DView::of_pane(pane).map_or(0, |v| self.tabs.discovery.len(v))
            }
            Pane::Jobs => self.tabs.backtests.jobs().len(),
            Pane::Trades => self
                .tabs
                .backtests
                .trades(self.row(Pane::Jobs).unwrap_or(usize::MAX)),
            Pane::Agents => self.tabs.research.tree().len(),
            Pane::Artifacts => self.tabs.research.artifacts(),
            Pane::Tools => self.tabs.tools.tools().len(),
            Pane::Result => self.tabs.tools.result_rows(),
            Pane::Destinations => self.tabs.signals.destinations().len(),
            Pane::Deliveries => self.tabs.signals.deliveries(),
            // Scrolled, not selected: see `move_selection`.
            Pane::Transcript | Pane::ChatLog | Pane::Detail | Pane::Schema | Pane::Stats => 0,
        }
    }

    pub fn update(&mut self, action: Action) -> Vec<Effect> {
        // The terminal reports every move of the mouse: nothing of the console changes with one,
        // and the work after an update (every table's view, the inbox's selections) would run
        // tens of times a second for nothing.
        if let Action::Mouse(m) = &action
            && matches!(
                m.kind,
                crossterm::event::MouseEventKind::Moved | crossterm::event::MouseEventKind::Drag(_)
            )
        {
            return Vec::new();
        }
        let mut fx = Vec::new();
        let by_user = matches!(action, Action::Key(_) | Action::Paste(_) | Action::Mouse(_));
        let tick = matches!(action, Action::Tick(_));
        let error_before = self.command_error.clone();
        if let Action::Tick(now) = action {
            self.now = now;
        }
        // A decision held is carried out once its hold passed; a key or a
        // paste decides that itself (it may be the burst's next key).
        if !matches!(action, Action::Key(_) | Action::Paste(_)) {
            self.settle_held(&mut fx);
        }
        match action {
            Action::Tick(now) => {
                self.now = now;
                let toasts = self.toasts.len();
                self.toasts.retain(|t| t.until > now);
                with_inbox!(self, &mut fx, |inbox, ctx| inbox.note_expiries(ctx));
                let pending = std::mem::take(&mut self.pending_draw);
                if self.toasts.len() != toasts || self.needs_clock() || pending {
                    self.dirty = true;
                }
            }
            Action::Key(key) => self.on_key(key, &mut fx),
            Action::Paste(text) => self.on_paste(text, &mut fx),
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
                let polled = answer.is_poll();
                self.on_answer(*answer, latency, at, &mut fx);
                // A poll's answer is drawn with the clock's next second when one comes anyway
                // (the header's age ticks once anything answered), so an idle console draws once
                // a second rather than once per answer. What the user waits for, and any toast,
                // is drawn at once.
                if polled && self.needs_clock() {
                    self.pending_draw = true;
                } else {
                    self.dirty = true;
                }
            }
            Action::Terminate => self.quit(&mut fx),
        }
        if self.command_error != error_before
            && let Some(text) = self.command_error.clone()
        {
            self.note_message(text, ToastLevel::Error);
        }
        self.rebuild_tables(tick);
        self.schedule(&mut fx);
        self.sync_inbox_selection(by_user, &mut fx);
        // The next draw shows everything, a waiting poll answer too.
        if self.dirty {
            self.pending_draw = false;
        }
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
            Answer::Proposed { signal, result } => {
                with_inbox!(self, fx, |inbox, ctx| inbox
                    .on_proposed(&signal, result, at, ctx));
            }
            Answer::Confirmed { id, result } => {
                with_inbox!(self, fx, |inbox, ctx| inbox
                    .on_confirmed(&id, result, at, ctx));
            }
            Answer::Reconciled { evidence } => {
                with_inbox!(self, fx, |inbox, ctx| inbox
                    .on_reconciled(&evidence, at, ctx));
            }
            Answer::Discovered { query, result } => {
                with_ctx!(self, fx, |ctx| self
                    .tabs
                    .discovery
                    .on_discovered(query, result, latency, at, ctx));
            }
            Answer::BacktestSubmitted { request, result } => {
                self.on_backtest_submitted(&request, result, at, fx)
            }
            Answer::CandlesLoaded { coin, result } => {
                self.account.market.answered(&coin, at, result.map(|c| *c));
            }
            Answer::JobLoaded { id, result } => {
                with_ctx!(self, fx, |ctx| self
                    .tabs
                    .backtests
                    .on_job_loaded(&id, result, latency, at, ctx));
            }
            Answer::ResearchLoaded { result } => {
                with_ctx!(self, fx, |ctx| self
                    .tabs
                    .research
                    .on_loaded(result, latency, at, ctx));
            }
            Answer::ResearchStopped { run_id, result } => {
                with_ctx!(self, fx, |ctx| self
                    .tabs
                    .research
                    .on_stopped(&run_id, result, at, ctx));
            }
            Answer::CliAnswered { command, result } => {
                with_ctx!(self, fx, |ctx| self
                    .tabs
                    .research
                    .on_cli_answered(&command, result, at, ctx));
            }
            Answer::CapabilitiesLoaded { result } => {
                self.on_capabilities_loaded(result, latency, at, fx)
            }
            Answer::ToolExecuted {
                name,
                args,
                approval,
                result,
            } => self.on_tool_executed(name, args, approval, result, at, fx),
            Answer::ChatAnswered { result } => self.on_chat_answered(result, at, fx),
            Answer::Traded { signal, result } => {
                with_ctx!(self, fx, |ctx| self
                    .tabs
                    .signals
                    .on_traded(&signal, result, at, ctx));
                self.poll_now(&Resource::TRADED, at);
                self.poll_now(&[Resource::Usage], at);
            }
            Answer::DestinationsLoaded { result } => {
                with_ctx!(self, fx, |ctx| self
                    .tabs
                    .signals
                    .on_destinations_loaded(result, latency, at, ctx));
            }
            Answer::DestinationCreated { name, result } => {
                self.on_destination_created(&name, result, at)
            }
            Answer::DeliveriesLoaded { id, result } => {
                with_ctx!(self, fx, |ctx| self
                    .tabs
                    .signals
                    .on_deliveries_loaded(&id, result, latency, at, ctx));
            }
            Answer::BuilderFeeLoaded { wallet, result } => {
                self.on_builder_fee_loaded(&wallet, result)
            }
            Answer::BuilderFeeApproved { result } => self.on_builder_fee_approved(result, at),
            Answer::GateLoaded { result } => {
                with_inbox!(self, fx, |inbox, ctx| inbox
                    .on_gate_loaded(result, latency, at, ctx));
                self.note_staging_marks();
            }
            Answer::GateDecided {
                id,
                approve,
                result,
            } => {
                with_inbox!(self, fx, |inbox, ctx| inbox
                    .on_gate_decided(&id, approve, result, at, ctx));
            }
            Answer::GuardLoaded { kill, standing } => self.on_guard_loaded(kill, standing),
            Answer::GateChecked { id, result } => self.on_gate_checked(&id, result),
            Answer::KillSwitchSet { on, result } => self.on_kill_switch_set(on, result, at),
            Answer::StandingChanged { what, result } => self.on_standing_changed(&what, result, at),
            Answer::AgentStateSet {
                agent,
                suspend,
                result,
            } => self.on_agent_state_set(&agent, suspend, result),
            Answer::PolicyLoaded { result } => self.on_policy_loaded(result, at),
        }
    }

    /// Starts the fetches that are due.
    fn schedule(&mut self, fx: &mut Vec<Effect>) {
        if self.auth_failed.is_some() {
            return;
        }
        let now = self.now;
        let decider = self.decider();
        for (resource, feed) in self.feeds.iter_mut() {
            if feed::polled(*resource, feed, decider) && feed.poll.start(now) {
                fx.push(Effect::Fetch(*resource));
            }
        }
        let shown = self.tab;
        for (tab, component) in self.tabs.each_mut() {
            component.schedule(now, tab == shown, fx);
        }
        with_inbox!(self, fx, |inbox, ctx| inbox.schedule_recheck(ctx));
        let polled = self.inbox.gate_mut().schedule(now, fx);
        self.schedule_guard(polled, fx);
        self.schedule_candles(fx);
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
    }

    /// Starts what a tab asked for and performs its asks, in order (see `component.rs`).
    pub(crate) fn perform(&mut self, done: (Vec<Effect>, Vec<Ask>), fx: &mut Vec<Effect>) {
        let (effects, asks) = done;
        fx.extend(effects);
        for ask in asks {
            match ask {
                Ask::Open(modal) => self.modal = Some(*modal),
                Ask::Toast(text, level) => self.toast(text, level),
                Ask::Show(tab) => self.set_tab(tab),
                Ask::Prefill(text) => self.prefill(&text),
                Ask::HoldPosts(until) => self.quota_until = Some(until),
                Ask::Redraw => self.dirty = true,
                Ask::CommandError(text) => self.command_error = Some(text),
                Ask::Focus(pane) => {
                    if let Some(i) = self.tab.panes().iter().position(|p| *p == pane) {
                        self.focus = i;
                    }
                }
                Ask::Poll(resources, at) => self.poll_now(resources, at),
                Ask::ToolSent => self.tabs.tools.sent_one(),
                Ask::ToolRenamed { from, to } => self.tabs.tools.renamed(&from, &to),
                Ask::ToolOutcome {
                    tool,
                    args,
                    at,
                    result,
                } => self.set_tool_outcome(tool, args, at, result, None),
                Ask::AuthFailed(message) => self.auth_failed = Some(message),
                Ask::BacktestForm => self.open_backtest_form(),
                Ask::ShowProposal(id) => {
                    self.set_tab(Tab::Proposals);
                    self.select_proposal(Pane::Inbox, &id);
                }
                Ask::ShowSelected(pane) => {
                    if let Some(id) = self.selection(pane).id.clone() {
                        self.set_tab(Tab::Proposals);
                        self.select_proposal(Pane::Inbox, &id);
                    }
                }
            }
        }
    }

    /// What a tab reads of the shared console while it draws.
    pub fn shown<'a>(
        &'a self,
        theme: &'a super::theme::Theme,
        screen: &'a super::layout::Screen,
    ) -> Shown<'a> {
        Shown {
            theme,
            keymap: &self.keymap,
            screen,
            now: self.now,
            feeds: &self.feeds,
            account: &self.account,
            focused: self.focused_pane(),
            selected: &self.selected,
            tables: &self.tables,
        }
    }

    /// What the inbox's views and questions read (see `tabs/proposals/shown.rs`).
    pub fn inbox_shown(&self) -> InboxShown<'_> {
        InboxShown {
            now: self.now,
            inbox: &self.inbox,
            gate: self.inbox.gate(),
            service: &self.service,
            account: &self.account,
            feeds: &self.feeds,
            modal: self.modal.as_ref(),
            size: self.size,
            selected: &self.selected,
            tables: &self.tables,
            focused: self.focused_pane(),
            yes_key: self.yes_key(),
            deciding: self.held.is_some(),
        }
    }

    /// The key that decides in a final question, as the keymap binds it (the first one).
    pub fn yes_key(&self) -> String {
        self.keymap
            .keys_for(KeyAction::ConfirmYes)
            .into_iter()
            .next()
            .unwrap_or_else(|| "y".into())
    }

    pub(crate) fn toast(&mut self, text: impl Into<String>, level: ToastLevel) {
        let text = text.into();
        self.note_message(text.clone(), level);
        self.toasts.push(Toast {
            text,
            level,
            until: self.now + TOAST_FOR,
        });
        self.dirty = true;
    }

    /// Kept in the Logs tab's messages list, so nothing shown briefly is lost.
    pub(crate) fn note_message(&mut self, text: String, level: ToastLevel) {
        self.messages.push_front(Message {
            at: self.now,
            level,
            text,
        });
        self.messages.truncate(MESSAGES);
        self.clamp(Pane::Messages);
    }

    // ---- input ---------------------------------------------------------------------------------

    pub(crate) fn set_tab(&mut self, tab: Tab) {
        if self.tab != tab {
            self.tab = tab;
            self.focus = 0;
            // A zoom is of a pane on screen: another tab comes in its own layout.
            self.zoom = None;
            self.entered_tab();
        }
    }

    pub(crate) fn clamp(&mut self, pane: Pane) {
        let len = self.pane_len(pane);
        if let Some(sel) = self.selected.get_mut(&pane) {
            *sel = (*sel).min(len.saturating_sub(1));
        }
    }

    pub fn refresh(&mut self) {
        // A refused key may have been replaced; `r` tries again.
        self.auth_failed = None;
        for feed in self.feeds.values_mut() {
            feed.poll.ask_at(self.now);
        }
        if self.inbox.gate().detected() != super::gate::Detected::No {
            self.inbox.gate_mut().ask_at(self.now);
        }
        let shown = self.tab;
        for (tab, component) in self.tabs.each_mut() {
            component.refresh(self.now, tab == shown);
        }
    }

    /// After a 429 the service refuses POSTs until the quota resets: say so instead of sending.
    pub(crate) fn posts_held(&mut self) -> bool {
        match posts_held_text(self.quota_until, self.now) {
            Some(text) => {
                self.toast(text, ToastLevel::Error);
                true
            }
            None => false,
        }
    }

    // ---- command line --------------------------------------------------------------------------

    // ---- discovery and backtests ---------------------------------------------------------------

    // ---- mouse ---------------------------------------------------------------------------------

    // ---- the tabs ----------------------------------------------------------------------------

    /// The tab on screen's own keys; true when handled.
    pub(crate) fn on_tab_key(
        &mut self,
        action: KeyAction,
        pane: Pane,
        fx: &mut Vec<Effect>,
    ) -> bool {
        let tab = self.tab;
        with_ctx!(self, fx, |ctx| self
            .tabs
            .get_mut(tab)
            .on_key(action, pane, ctx))
    }

    /// The tab just came on screen: what it shows is asked for now.
    pub(crate) fn entered_tab(&mut self) {
        // The audit feed is App's, asked rarely while the Logs tab is off screen (see
        // `app/feeds.rs`).
        if self.tab == Tab::Logs {
            self.poll_now(&[Resource::Audit], self.now);
        }
        self.tabs.get_mut(self.tab).entered(self.now);
    }
}

/// What only the console's own tests change directly, to set a scene `update` would take many
/// steps to reach.
#[cfg(test)]
impl App {
    pub fn toasts_mut(&mut self) -> &mut Vec<Toast> {
        &mut self.toasts
    }

    pub fn service_mut(&mut self) -> &mut ServiceInfo {
        &mut self.service
    }

    pub fn gate_mut(&mut self) -> &mut GateState {
        self.inbox.gate_mut()
    }

    pub fn tabs_mut(&mut self) -> &mut Tabs {
        &mut self.tabs
    }

    pub fn modal_mut(&mut self) -> Option<&mut Modal> {
        self.modal.as_mut()
    }

    pub fn set_modal(&mut self, modal: Option<Modal>) {
        self.modal = modal;
    }

    pub fn held_mut(&mut self) -> Option<&mut Held<Decision>> {
        self.held.as_mut()
    }

    pub fn keyboard_mut(&mut self) -> &mut Keyboard {
        &mut self.keyboard
    }

    pub fn set_wallet_key(&mut self, key: fn() -> Option<crate::secret::Secret>) {
        self.wallet_key = key;
    }

    pub fn history(&self) -> &[String] {
        &self.history
    }

    pub fn pending_draw(&self) -> bool {
        self.pending_draw
    }

    pub fn selected_rows(&self) -> &BTreeMap<Pane, usize> {
        &self.selected
    }
}
