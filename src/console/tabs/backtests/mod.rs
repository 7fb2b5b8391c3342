//! Backtest jobs this console follows, and the form that submits one.
//!
//! A job is polled every second while it is queued or running and never again once it is done or
//! failed. The form is prefilled from a Discovery row; every field is checked before anything is
//! sent, and a bad field says why under itself.

pub mod rows;
mod update;
pub mod view;
pub use view::stats_max_scroll;

use crate::api::model::BacktestJob;
use crate::console::poll::Poll;
use chrono::{DateTime, Utc};
use std::time::Duration;

pub use crate::console::forms::backtest::{BacktestForm, FieldKind, FormField, number_value};
pub use crate::console::widgets::fmt_number;

/// Poll interval of a queued or running job.
pub const JOB_POLL: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Default)]
pub struct BacktestsTab {
    /// Jobs this console follows, newest first.
    jobs: Vec<JobEntry>,
    /// Submissions not answered yet.
    submitting: usize,
}

impl BacktestsTab {
    /// Newest first; the Jobs pane's rows.
    pub fn jobs(&self) -> &[JobEntry] {
        &self.jobs
    }

    pub fn job(&self, row: usize) -> Option<&JobEntry> {
        self.jobs.get(row)
    }

    /// Submissions not answered yet.
    pub fn submitting(&self) -> usize {
        self.submitting
    }

    /// Rows of the Trades pane when the Jobs cursor is on `row`.
    pub fn trades(&self, row: usize) -> usize {
        self.job(row)
            .and_then(|j| j.job.data.as_ref())
            .map_or(0, |d| d.trades.len())
    }

    /// When the next poll of a job still running is due.
    pub fn wakeup(&self) -> Option<DateTime<Utc>> {
        self.jobs
            .iter()
            .filter(|j| j.active())
            .filter_map(|j| j.poll.wakeup())
            .min()
    }

    /// A job to show before any answer, as tests set the screen up.
    #[cfg(test)]
    pub fn insert(&mut self, entry: JobEntry) {
        self.jobs.insert(0, entry);
    }
}

#[derive(Debug, Clone)]
pub struct JobEntry {
    pub job: BacktestJob,
    pub poll: Poll,
    /// Why the last poll failed, or that the service no longer knows the job.
    pub error: Option<String>,
    /// The service answered 404: polling stopped.
    pub gone: bool,
    pub first_seen: DateTime<Utc>,
}

impl JobEntry {
    pub fn new(job: BacktestJob, now: DateTime<Utc>) -> Self {
        JobEntry {
            job,
            poll: Poll::due_now(now),
            error: None,
            gone: false,
            first_seen: now,
        }
    }

    pub fn id(&self) -> &str {
        &self.job.job_id
    }

    /// Done or failed (observed deployments also say `error`): nothing more will change.
    pub fn finished(&self) -> bool {
        matches!(self.job.status.as_str(), "done" | "failed" | "error")
    }

    /// Still polled.
    pub fn active(&self) -> bool {
        !self.finished() && !self.gone
    }

    pub fn failed(&self) -> bool {
        matches!(self.job.status.as_str(), "failed" | "error") || self.gone
    }

    /// Strategy, pair, timeframe and days, from the request or the result.
    pub fn describe(&self) -> (String, String, String, Option<u32>) {
        if let Some(r) = &self.job.request {
            return (
                r.strategy_id.clone(),
                r.pair.clone(),
                r.timeframe.clone(),
                Some(r.days),
            );
        }
        if let Some(d) = &self.job.data {
            return (
                d.strategy_id.clone(),
                d.pair.clone(),
                d.timeframe.clone(),
                Some(d.days),
            );
        }
        (String::new(), String::new(), String::new(), None)
    }
}
