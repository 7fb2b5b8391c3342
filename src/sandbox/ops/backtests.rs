//! Backtests: `run_backtest` queues a job, `get_backtest_job` reports it.

use super::{AppError, Call, ErrorKind, Reply};
use crate::api::model::{BacktestJob, BacktestRequest, ErrorDetail};
use crate::sandbox::backtests::{self, Standing};
use crate::sandbox::core::{Core, View};
use crate::sandbox::quota;

use rand::RngExt;
use std::sync::Arc;
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
    // A place in the queue first, so a full queue refuses before anything is written or charged.
    let permit = tx.try_reserve().map_err(|e| match e {
        TrySendError::Full(()) => AppError::new(
            ErrorKind::Invalid,
            "QUEUE_FULL",
            format!(
                "the backtest queue is full ({} jobs waiting); poll your running jobs and retry shortly",
                backtests::QUEUE_CAP
            ),
        ),
        TrySendError::Closed(()) => AppError::new(
            ErrorKind::Unavailable,
            "backtests_unavailable",
            "the backtest workers have stopped",
        ),
    })?;
    let id = format!("bt_{}", hex::encode(rand::rng().random::<[u8; 8]>()));
    let request = serde_json::to_string(&req).map_err(AppError::internal)?;
    let c = &call.caller;
    // The job and its compute charge are one commit; dropped uncommitted on error.
    core.store.conn.execute_batch("BEGIN IMMEDIATE")?;
    let written = core
        .store
        .insert_job(&id, c.account_id, c.key_id, &request, call.now)
        .map_err(AppError::from)
        .and_then(|()| quota::charge_compute(core, c, call.now));
    let committed = written.and_then(|()| Ok(core.store.conn.execute_batch("COMMIT")?));
    if let Err(e) = committed {
        let _ = core.store.conn.execute_batch("ROLLBACK");
        return Err(e);
    }
    permit.send(id.clone());
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
    let mut row = core
        .store
        .job(id)?
        .filter(|j| j.account_id == call.caller.account_id)
        .ok_or_else(|| AppError::not_found(format!("no backtest job {id:?} for this account")))?;
    // A job running in this process is `queued` in the store until its outcome is written; its
    // progress, then its outcome, are kept in memory until then.
    let standing = (row.status == "queued")
        .then(|| core.backtests.standing(&row.id))
        .flatten();
    let mut running = None;
    // The result as the worker serialized it, kept as text: it is the largest part of the
    // answer (up to 2,000 trades), and goes into it without being parsed and written again.
    let mut result: Option<Arc<str>> = row.result.take().map(Arc::from);
    match standing {
        Some(Standing::Running(progress)) => running = Some(progress),
        Some(Standing::Ended { ok, text, at }) => {
            row.status = if ok { "done" } else { "failed" }.into();
            row.progress = 100;
            row.finished_at = Some(at);
            match ok {
                true => result = Some(text),
                false => row.error = Some(text.to_string()),
            }
        }
        None => {}
    }
    let job = BacktestJob {
        poll_url: poll_url(&row.id),
        job_id: row.id,
        status: if running.is_some() {
            "running".into()
        } else {
            row.status
        },
        progress: running.unwrap_or(row.progress),
        request: serde_json::from_str(&row.request).ok(),
        created_at: Some(row.created_at),
        finished_at: row.finished_at,
        error: row
            .error
            .as_deref()
            .and_then(|e| serde_json::from_str::<ErrorDetail>(e).ok()),
        ..Default::default()
    };
    let mut reply = Reply::ok(job)?;
    reply.data_json = result;
    Ok(reply)
}
