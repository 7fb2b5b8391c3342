//! App's side of the tabs that are components (`component.rs`): what an answer or a command
//! changes beyond one tab — the inbox every tab shares, the feeds, the tab on screen — around the
//! tab's own part, and the modals one tab's key opens with another's data (the backtest form,
//! prefilled from a Discovery row or a job, with the Discovery catalog's parameters). A tool
//! call's confirm token and an approved token's outcome are the inbox's (`inbox/tools.rs`).

use crate::api::ApiError;
use crate::api::model::SignalDestination;
use crate::api::model::{BacktestJob, BacktestRequest, Capabilities, ChatReply, ToolResult};
use crate::console::action::{Effect, Resource};
use crate::console::app::{App, ToastLevel};
use crate::console::command::TradeArgs;
use crate::console::inbox::Source;
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use crate::console::poll::to_delta;
use crate::console::tab::Tab;
use crate::console::tabs::backtests::{BacktestForm, JobEntry};
use crate::console::tabs::discovery::Selected;
use chrono::{DateTime, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::Value;
use std::time::Duration;

impl App {
    /// `/chat <text>`: the Chat tab comes on screen and sends it.
    pub(crate) fn send_chat(&mut self, text: String, fx: &mut Vec<Effect>) {
        self.set_tab(Tab::Chat);
        with_ctx!(self, fx, |ctx| self.tabs.chat.send(text, ctx));
    }

    /// The confirm tokens of the agent's reply go to the inbox; the chat shows their ids.
    pub(crate) fn on_chat_answered(
        &mut self,
        result: Result<Box<ChatReply>, ApiError>,
        at: DateTime<Utc>,
        fx: &mut Vec<Effect>,
    ) {
        self.dirty = true;
        let mut ids = Vec::new();
        if let Ok(reply) = &result {
            for t in &reply.confirm_tokens {
                let tool = t.get("tool").and_then(Value::as_str).unwrap_or("tool");
                let args = t.get("args").cloned().unwrap_or(Value::Null);
                if let Some(id) = self.add_tool_approval(tool, &args, t, Source::Service, fx) {
                    ids.push(id);
                }
            }
        }
        if !ids.is_empty() {
            self.toast(
                format!(
                    "{} sent to the inbox: approve with a, then y",
                    ids.join(", ")
                ),
                ToastLevel::Info,
            );
        }
        with_ctx!(self, fx, |ctx| self
            .tabs
            .chat
            .on_answered(result, ids, at, ctx));
    }

    pub(crate) fn submit_backtest(&mut self, request: BacktestRequest, fx: &mut Vec<Effect>) {
        with_ctx!(self, fx, |ctx| self.tabs.backtests.submit(request, ctx));
    }

    /// A submission answered: the usage it counted against is asked for again.
    pub(crate) fn on_backtest_submitted(
        &mut self,
        request: &BacktestRequest,
        result: Result<Box<BacktestJob>, ApiError>,
        at: DateTime<Utc>,
        fx: &mut Vec<Effect>,
    ) {
        with_ctx!(self, fx, |ctx| self
            .tabs
            .backtests
            .on_submitted(request, result, at, ctx));
        self.poll_now(&[Resource::Usage], at);
    }

    pub fn selected_job(&self) -> Option<&JobEntry> {
        self.row(Pane::Jobs)
            .and_then(|r| self.tabs.backtests.job(r))
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
                    self.tabs.discovery.strategy(&r.strategy_id),
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
                    self.tabs.discovery.strategy(&r.strategy_id),
                ))
            }),
            _ => None,
        };
        if let Some(form) = form {
            self.modal = Some(Modal::BacktestForm(form));
        }
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

    /// `/tool <name> [json]`: on the Tools tab.
    pub(crate) fn run_tool_command(
        &mut self,
        name: String,
        args: Option<String>,
        fx: &mut Vec<Effect>,
    ) {
        self.set_tab(Tab::Tools);
        with_ctx!(self, fx, |ctx| self.tabs.tools.run_command(name, args, ctx));
    }

    /// The catalog arrived: a `/tool` that waited for it runs now.
    pub(crate) fn on_capabilities_loaded(
        &mut self,
        result: Result<Box<Capabilities>, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
        fx: &mut Vec<Effect>,
    ) {
        let pending = with_ctx!(self, fx, |ctx| self
            .tabs
            .tools
            .on_capabilities_loaded(result, latency, at, ctx));
        if let Some((name, args)) = pending {
            self.run_tool_command(name, args, fx);
        }
    }

    fn execute_tool(&mut self, name: &str, args: Value, fx: &mut Vec<Effect>) {
        with_ctx!(self, fx, |ctx| self.tabs.tools.execute(name, args, ctx));
    }

    pub(crate) fn set_tool_outcome(
        &mut self,
        tool: String,
        args: Value,
        at: DateTime<Utc>,
        result: Result<Value, String>,
        awaiting: Option<String>,
    ) {
        let mut none = Vec::new();
        with_ctx!(self, &mut none, |ctx| self
            .tabs
            .tools
            .set_outcome(tool, args, at, result, awaiting, ctx));
        debug_assert!(none.is_empty(), "showing a result starts nothing");
    }

    /// Keys of the argument editor: ctrl-s sends (only when the arguments are valid), esc closes,
    /// everything else edits.
    pub(crate) fn on_editor_key(&mut self, key: KeyEvent, fx: &mut Vec<Effect>) {
        let Some(Modal::ToolEditor(editor)) = &self.modal else {
            return;
        };
        let tool = editor.tool.clone();
        let schema = self.tabs.tools.schema_of(&tool);
        let Some(Modal::ToolEditor(editor)) = self.modal.as_mut() else {
            return;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => self.modal = None,
            KeyCode::Char('s') if ctrl => match editor.check(&schema) {
                Some(args) => {
                    let name = editor.tool.clone();
                    self.modal = None;
                    self.execute_tool(&name, args, fx);
                }
                None => editor.refused = true,
            },
            _ => {
                if !crate::console::readline::edit(&mut editor.input, &key) {
                    editor.input.input(key);
                }
                editor.refused = false;
                editor.check(&schema);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_tool_executed(
        &mut self,
        name: String,
        args: Value,
        approval: Option<String>,
        result: Result<Box<ToolResult>, ApiError>,
        at: DateTime<Utc>,
        fx: &mut Vec<Effect>,
    ) {
        self.tabs.tools.answered_one();
        self.dirty = true;
        if let Err(ApiError::QuotaExceeded { retry_after, .. }) = &result {
            self.quota_until = Some(at + to_delta(*retry_after));
        }
        if let Some(id) = approval {
            with_inbox!(self, fx, |inbox, ctx| inbox
                .on_tool_approved(&id, name, args, result, at, ctx));
            return;
        }
        match result {
            Ok(res) => {
                let token = res.result.get("confirmToken").is_some();
                if res.requires_confirmation || token {
                    let id = self.add_tool_approval(&name, &args, &res.result, Source::Console, fx);
                    let mut shown = res.result.clone();
                    if let Value::Object(m) = &mut shown {
                        // The token is a credential for one execution: not for the screen.
                        m.remove("confirmToken");
                    }
                    self.set_tool_outcome(name.clone(), args, at, Ok(shown), id.clone());
                    match id {
                        Some(id) => self.toast(
                            format!("{name} needs approval: {id} is in the inbox (a, then y)"),
                            ToastLevel::Info,
                        ),
                        None => self.toast(
                            format!("{name} asked for confirmation without a token"),
                            ToastLevel::Error,
                        ),
                    }
                } else {
                    self.set_tool_outcome(name, args, at, Ok(res.result), None);
                }
            }
            Err(e) => {
                self.toast(format!("{name} failed: {e}"), ToastLevel::Error);
                self.set_tool_outcome(name, args, at, Err(e.to_string()), None);
            }
        }
    }

    /// The Discovery row under the cursor.
    pub fn selected_row(&self) -> Option<Selected<'_>> {
        let view = self.tabs.discovery.view();
        self.tabs.discovery.selected_row(self.row(view.pane()))
    }

    /// `p` in the Details overlay: as on the tab.
    pub(crate) fn propose_from_row(&mut self, fx: &mut Vec<Effect>) {
        with_ctx!(self, fx, |ctx| self.tabs.discovery.propose(ctx));
    }

    /// The cursor moved in the destinations: the delivery log follows it.
    pub(crate) fn destination_selected(&mut self) {
        let mut none = Vec::new();
        with_ctx!(self, &mut none, |ctx| self
            .tabs
            .signals
            .destination_selected(ctx));
        debug_assert!(none.is_empty(), "following starts nothing");
    }

    /// The destination under the cursor.
    pub fn selected_destination(&self) -> Option<&SignalDestination> {
        self.tabs
            .signals
            .destination(self.row(Pane::Destinations).unwrap_or(usize::MAX))
    }

    /// `/trade` typed: on paper it executes at once; where real money may move (LIVE, or not known
    /// yet) it is asked first, as every final answer is.
    pub(crate) fn ask_trade(&mut self, args: TradeArgs, fx: &mut Vec<Effect>) {
        use crate::console::feeds::Badge;
        use crate::console::modal::{Confirm, Deciding};
        match self.account.badge(self.service.sandbox) {
            Badge::Sandbox | Badge::Paper => self.trade(&args, fx),
            Badge::Live | Badge::Unknown => {
                self.modal = Some(Modal::Confirm(Confirm::new(
                    Deciding::Trade(Box::new(args)),
                    self.now,
                )))
            }
        }
    }

    /// `/trade`, executed now.
    pub(crate) fn trade(&mut self, args: &TradeArgs, fx: &mut Vec<Effect>) {
        with_ctx!(self, fx, |ctx| self.tabs.signals.trade(args, ctx));
    }
}
