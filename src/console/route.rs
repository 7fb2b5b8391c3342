//! App's side of the tabs that are components (`component.rs`): what an answer or a command
//! changes beyond one tab — the inbox every tab shares, the feeds, the tab on screen — around the
//! tab's own part, and the modals one tab's key opens with another's data (the backtest form,
//! prefilled from a Discovery row or a job, with the Discovery catalog's parameters).

use crate::api::ApiError;
use crate::api::model::{BacktestJob, BacktestRequest, ChatReply};
use crate::console::action::{Effect, Resource};
use crate::console::app::{App, ToastLevel};
use crate::console::component::Ctx;
use crate::console::inbox::Source;
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use crate::console::tab::Tab;
use crate::console::tabs::backtests::{BacktestForm, JobEntry};
use crate::console::tabs::discovery::Selected;
use chrono::{DateTime, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::Value;

impl App {
    /// `/chat <text>`: the Chat tab comes on screen and sends it.
    pub(crate) fn send_chat(&mut self, text: String, fx: &mut Vec<Effect>) {
        self.set_tab(Tab::Chat);
        let mut ctx = Ctx::new(self.now, self.tab, self.quota_until, &mut self.selected);
        self.chat.send(text, &mut ctx);
        let done = ctx.finish();
        self.perform(done, fx);
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
        let mut ctx = Ctx::new(self.now, self.tab, self.quota_until, &mut self.selected);
        self.chat.on_answered(result, ids, at, &mut ctx);
        let done = ctx.finish();
        self.perform(done, fx);
    }

    pub(crate) fn submit_backtest(&mut self, request: BacktestRequest, fx: &mut Vec<Effect>) {
        let mut ctx = Ctx::new(self.now, self.tab, self.quota_until, &mut self.selected);
        self.backtests.submit(request, &mut ctx);
        let done = ctx.finish();
        self.perform(done, fx);
    }

    /// A submission answered: the usage it counted against is asked for again.
    pub(crate) fn on_backtest_submitted(
        &mut self,
        request: &BacktestRequest,
        result: Result<Box<BacktestJob>, ApiError>,
        at: DateTime<Utc>,
        fx: &mut Vec<Effect>,
    ) {
        let mut ctx = Ctx::new(self.now, self.tab, self.quota_until, &mut self.selected);
        self.backtests.on_submitted(request, result, at, &mut ctx);
        let done = ctx.finish();
        self.perform(done, fx);
        self.poll_now(&[Resource::Usage], at);
    }

    pub fn selected_job(&self) -> Option<&JobEntry> {
        self.backtests.job(self.selected(Pane::Jobs))
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
}
