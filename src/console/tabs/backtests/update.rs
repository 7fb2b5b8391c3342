//! The Backtests tab's update: submitting (from `/backtest` or the form), following jobs until they
//! finish, the form's keys, and re-running the selected job with `b`.

use crate::api::ApiError;

use crate::console::action::{Effect, Resource};
use crate::console::app::{App, ToastLevel};
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use crate::console::poll::to_delta;
use crate::console::tab::Tab;
use crate::console::tabs::discovery::Selected;
use chrono::{DateTime, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::time::Duration;

use super::{BacktestForm, JOB_POLL, JobEntry};

impl App {
    pub(crate) fn schedule_jobs(&mut self, fx: &mut Vec<Effect>) {
        let now = self.now;
        for job in &mut self.backtests.jobs {
            if job.active() && job.poll.start(now) {
                fx.push(Effect::FetchJob(job.id().to_string()));
            }
        }
    }

    pub(crate) fn submit_backtest(
        &mut self,
        request: crate::api::model::BacktestRequest,
        fx: &mut Vec<Effect>,
    ) {
        if self.posts_held() {
            return;
        }
        self.backtests.submitting += 1;
        fx.push(Effect::RunBacktest(Box::new(request)));
        self.set_tab(Tab::Backtests);
    }

    pub(crate) fn on_backtest_submitted(
        &mut self,
        request: &crate::api::model::BacktestRequest,
        result: Result<Box<crate::api::model::BacktestJob>, ApiError>,
        at: DateTime<Utc>,
    ) {
        self.backtests.submitting = self.backtests.submitting.saturating_sub(1);
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
                if !self.backtests.jobs.iter().any(|j| j.id() == id) {
                    let mut entry = JobEntry::new(job, at);
                    entry.poll.ask_at(at + to_delta(JOB_POLL));
                    self.backtests.jobs.insert(0, entry);
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

    pub(crate) fn on_job_loaded(
        &mut self,
        id: &str,
        result: Result<Box<crate::api::model::BacktestJob>, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
    ) {
        self.dirty = true;
        let Some(entry) = self.backtests.jobs.iter_mut().find(|j| j.id() == id) else {
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
        self.backtests.jobs.get(self.selected(Pane::Jobs))
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

    pub(crate) fn on_backtests_key(&mut self, action: KeyAction) -> bool {
        if action != KeyAction::Backtest {
            return false;
        }
        self.open_backtest_form();
        true
    }
}
