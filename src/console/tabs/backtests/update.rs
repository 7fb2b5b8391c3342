//! The Backtests tab's update: submitting (from `/backtest` or the form), following jobs until they
//! finish, and re-running the selected job with `b`.

use super::rows::{Jobs, Trades};
use super::{BacktestsTab, JOB_POLL, JobEntry};
use crate::api::ApiError;
use crate::api::model::{BacktestJob, BacktestRequest};
use crate::console::action::Effect;
use crate::console::component::{Ask, Ctx, TabComponent, ToastLevel};
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;
use crate::console::poll::to_delta;
use crate::console::tab::Tab;
use crate::console::table::Rows;
use chrono::{DateTime, Utc};
use std::time::Duration;

impl BacktestsTab {
    /// `/job <id>`: the job is followed (from now, if it was not); its row.
    pub fn follow(&mut self, id: &str, now: DateTime<Utc>) -> usize {
        if !self.jobs.iter().any(|j| j.id() == id) {
            let job = BacktestJob {
                job_id: id.to_string(),
                ..Default::default()
            };
            self.jobs.insert(0, JobEntry::new(job, now));
        }
        let i = self
            .jobs
            .iter()
            .position(|j| j.id() == id)
            .expect("followed above");
        self.jobs[i].poll.ask_at(now);
        i
    }

    pub fn submit(&mut self, request: BacktestRequest, ctx: &mut Ctx) {
        if ctx.posts_held() {
            return;
        }
        self.submitting += 1;
        ctx.fx.push(Effect::RunBacktest(Box::new(request)));
        ctx.ask(Ask::Show(Tab::Backtests));
    }

    pub fn on_submitted(
        &mut self,
        request: &BacktestRequest,
        result: Result<Box<BacktestJob>, ApiError>,
        at: DateTime<Utc>,
        ctx: &mut Ctx,
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
                ctx.toast(
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
                    ctx.select(Pane::Jobs, 0);
                    ctx.select(Pane::Trades, 0);
                }
            }
            Err(e) => {
                if let ApiError::QuotaExceeded { retry_after, .. } = &e {
                    ctx.ask(Ask::HoldPosts(at + to_delta(*retry_after)));
                }
                ctx.toast(
                    format!("Backtest {} failed: {e}", request.strategy_id),
                    ToastLevel::Error,
                );
            }
        }
        ctx.ask(Ask::Redraw);
    }

    pub fn on_job_loaded(
        &mut self,
        id: &str,
        result: Result<Box<BacktestJob>, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
        ctx: &mut Ctx,
    ) {
        ctx.ask(Ask::Redraw);
        let Some(entry) = self.jobs.iter_mut().find(|j| j.id() == id) else {
            return;
        };
        entry.poll.settled();
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
                    if entry.failed() {
                        let why = entry
                            .job
                            .error
                            .as_ref()
                            .map(|e| e.message.clone())
                            .unwrap_or_else(|| "no reason given".into());
                        ctx.toast(format!("Backtest {id} failed: {why}"), ToastLevel::Error);
                    } else {
                        let ret = entry
                            .job
                            .data
                            .as_ref()
                            .and_then(|d| d.stats.total_return)
                            .map(|r| format!(": return {}%", crate::console::widgets::signed(r, 2)))
                            .unwrap_or_default();
                        ctx.toast(format!("Backtest {id} done{ret}"), ToastLevel::Info);
                    }
                }
            }
            Err(ApiError::NotFound { .. }) => {
                entry.gone = true;
                entry.error = Some("the service does not know this job".into());
            }
            Err(ApiError::Unauthorized { message }) => {
                entry.error = Some(message.clone());
                ctx.ask(Ask::AuthFailed(message));
            }
            Err(e) => {
                entry.poll.failed(at, JOB_POLL, &e);
                entry.error = Some(e.to_string());
            }
        }
        let trades = ctx.row(Pane::Jobs).map_or(0, |r| self.trades(r));
        ctx.clamp(Pane::Trades, trades);
    }
}

impl TabComponent for BacktestsTab {
    fn rows(
        &self,
        pane: Pane,
        _now: DateTime<Utc>,
        master: Option<usize>,
    ) -> Option<Box<dyn Rows + '_>> {
        match pane {
            Pane::Jobs => Some(Box::new(Jobs(&self.jobs))),
            Pane::Trades => {
                let trades = master
                    .and_then(|r| self.job(r))
                    .and_then(|j| j.job.data.as_deref())
                    .map(|d| d.trades.as_slice())
                    .unwrap_or_default();
                Some(Box::new(Trades(trades)))
            }
            _ => None,
        }
    }

    fn schedule(&mut self, now: DateTime<Utc>, _shown: bool, fx: &mut Vec<Effect>) {
        for job in &mut self.jobs {
            if job.active() && job.poll.start(now) {
                fx.push(Effect::FetchJob(job.id().to_string()));
            }
        }
    }

    /// `r`: every job is asked for again.
    fn refresh(&mut self, now: DateTime<Utc>, _shown: bool) {
        for job in &mut self.jobs {
            job.poll.ask_at(now);
        }
    }

    /// `b` re-runs the job under the cursor: its form, prefilled, is App's to open (it reads the
    /// Discovery catalog too).
    fn on_key(&mut self, action: KeyAction, _pane: Pane, ctx: &mut Ctx) -> bool {
        if action != KeyAction::Backtest {
            return false;
        }
        ctx.ask(Ask::BacktestForm);
        true
    }
}
