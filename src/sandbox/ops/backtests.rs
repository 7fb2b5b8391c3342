//! Backtests: `run_backtest` queues a job, `get_backtest_job` reports it.

use super::{AppError, Call, ErrorKind, Reply};
use crate::api::model::{BacktestJob, BacktestRequest, ErrorDetail};
use crate::sandbox::backtests;
use crate::sandbox::core::{Core, View};
use crate::sandbox::quota;

use rand::RngExt;
use tokio::sync::mpsc::error::TrySendError;

fn poll_url(id: &str) -> String {
    crate::api::catalog::op("get_backtest_job").path_with(&[id])
}

pub fn run_backtest(core: &mut Core, call: &Call) -> Result<Reply, AppError> {
    let req: BacktestRequest = call.json()?;
    // Everything is checked before the job exists: a bad request never queues.
    backtests::resolve(&req, &core.settings)?;
    let Some(tx) = core.jobs.clone() else {
        return Err(AppError::new(
            ErrorKind::Unavailable,
            "backtests_unavailable",
            "the backtest workers are not running",
        ));
    };
    let id = format!("bt_{}", hex::encode(rand::rng().random::<[u8; 8]>()));
    let request = serde_json::to_string(&req).map_err(AppError::internal)?;
    let c = &call.caller;
    core.store
        .insert_job(&id, c.account_id, c.key_id, &request, call.now)?;
    match tx.try_send(id.clone()) {
        Ok(()) => {}
        Err(e) => {
            core.store.delete_job(&id)?;
            return Err(match e {
                TrySendError::Full(_) => AppError::new(
                    ErrorKind::Invalid,
                    "QUEUE_FULL",
                    format!(
                        "the backtest queue is full ({} jobs waiting); poll your running jobs and retry shortly",
                        backtests::QUEUE_CAP
                    ),
                ),
                TrySendError::Closed(_) => AppError::new(
                    ErrorKind::Unavailable,
                    "backtests_unavailable",
                    "the backtest workers have stopped",
                ),
            });
        }
    }
    // Compute is charged for accepted work only.
    if let Err(e) = quota::charge_compute(core, c, call.now) {
        core.store.delete_job(&id)?;
        return Err(e);
    }
    Reply::ok(BacktestJob {
        poll_url: poll_url(&id),
        job_id: id,
        status: "queued".into(),
        request: Some(req),
        created_at: Some(call.now),
        ..Default::default()
    })
}

pub fn get_backtest_job(core: &View, call: &Call) -> Result<Reply, AppError> {
    let id = call.path.first().map(String::as_str).unwrap_or_default();
    let row = core
        .store
        .job(id)?
        .filter(|j| j.account_id == call.caller.account_id)
        .ok_or_else(|| AppError::not_found(format!("no backtest job {id:?} for this account")))?;
    let job = BacktestJob {
        poll_url: poll_url(&row.id),
        job_id: row.id,
        status: row.status,
        progress: row.progress,
        request: serde_json::from_str(&row.request).ok(),
        created_at: Some(row.created_at),
        finished_at: row.finished_at,
        data: row
            .result
            .as_deref()
            .and_then(|r| serde_json::from_str(r).ok())
            .map(Box::new),
        error: row
            .error
            .as_deref()
            .and_then(|e| serde_json::from_str::<ErrorDetail>(e).ok()),
        ..Default::default()
    };
    Reply::ok(job)
}
