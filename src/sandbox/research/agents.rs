//! The lead task and its agents: each agent optimizes in sample and tests out of sample.

use super::live::Live;
use super::report::{evidence_text, pct};
use super::{
    CHUNK, Ending, GRID_POINTS, LEAD_POLL, MIN_IN_SAMPLE_BARS, MIN_OUT_OF_SAMPLE_BARS, MIN_TRADES,
    PARALLEL_AGENTS, TOP_SETS, finish,
};
use crate::sandbox::backtests::{engine_config, params_json};
use crate::sandbox::core::Shared;
use crate::sandbox::data::{self, Timeframe};
use crate::sandbox::engine::backtest::Workspace;
use crate::sandbox::engine::metrics::Stats;
use crate::sandbox::engine::optimizer::{self, RankBy};
use crate::sandbox::engine::strategies::{self, Params, StrategySpec};
use crate::sandbox::store::DbResult;
use crate::sandbox::store::research::{
    self as db, AgentKey, AgentResult, AgentRow, Candidate, Evidence, ResultRow,
};
use chrono::{DateTime, Utc};
use rusqlite::Connection;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub(super) fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some((x * 10_000.0).round() / 10_000.0)
}

pub(super) fn evidence(s: &Stats, bars: usize) -> Evidence {
    let time = |t: i64| DateTime::<Utc>::from_timestamp(t, 0);
    Evidence {
        return_pct: finite(s.return_pct),
        sharpe: finite(s.sharpe),
        max_drawdown_pct: finite(s.max_drawdown_pct),
        trades: s.trades,
        win_rate_pct: finite(s.win_rate_pct),
        profit_factor: finite(s.profit_factor),
        start: time(s.start),
        end: time(s.end),
        bars,
    }
}

/// What the lead decided on one look at the run.
pub(super) enum LeadStep {
    /// Agents to start now (possibly none); keep watching.
    Watch(Vec<AgentJob>),
    /// The run is over.
    Done,
}

pub(super) struct AgentJob {
    key: AgentKey,
    strategies: Vec<&'static StrategySpec>,
    coins: Vec<String>,
    timeframes: Vec<Timeframe>,
    days: u32,
    oos_days: u32,
    /// Data ends where the run started, so a restarted agent sees the same bars.
    end: DateTime<Utc>,
}

pub(super) fn spawn_lead(shared: Arc<Shared>, run_id: String) {
    let handle = Arc::new(Live::default());
    shared.research.insert(&run_id, handle.clone());
    tokio::spawn(async move {
        loop {
            let id = run_id.clone();
            let step = shared
                .run_raw(move |core, now| lead_step(&mut core.store.conn, &id, now))
                .await;
            match step {
                Ok(Ok(LeadStep::Watch(jobs))) => {
                    for job in jobs {
                        let flag = Arc::new(AtomicBool::new(false));
                        handle
                            .cancels
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(job.key.agent_id.clone(), flag.clone());
                        tokio::spawn(agent_task(shared.clone(), job, flag));
                    }
                }
                Ok(Ok(LeadStep::Done)) => break,
                Ok(Err(e)) => tracing::warn!("research lead of {run_id}: {e}"),
                Err(e) => {
                    tracing::error!("research lead of {run_id} failed: {e}");
                    break;
                }
            }
            let _ = tokio::time::timeout(LEAD_POLL, handle.wake.notified()).await;
        }
        {
            let mut cancels = handle.cancels.lock().unwrap_or_else(|e| e.into_inner());
            for flag in cancels.values() {
                flag.store(true, Ordering::Relaxed);
            }
            cancels.clear();
        }
        shared.research.remove(&run_id);
    });
}

/// One look at the run: finish it if every agent is through (or "stop after N" is met), else
/// start queued agents while fewer than [`PARALLEL_AGENTS`] run.
pub(super) fn lead_step(
    conn: &mut Connection,
    run_id: &str,
    now: DateTime<Utc>,
) -> DbResult<LeadStep> {
    let Some(run) = db::load_run(conn, run_id, None)? else {
        return Ok(LeadStep::Done);
    };
    if run.status != "active" {
        return Ok(LeadStep::Done);
    }
    let agents = db::load_agents(conn, run_id)?;
    let workers: Vec<&AgentRow> = agents.iter().filter(|a| a.role != "lead").collect();
    let done = workers.iter().filter(|a| a.status == "done").count();
    let through = workers.iter().filter(|a| !a.unfinished()).count();
    let stop_met = run.plan.stop_after.is_some_and(|n| done >= n as usize);
    if stop_met || through == workers.len() {
        // The lead cancels every agent still running when it sees Done.
        finish(conn, &run, Ending::Completed, now)?;
        return Ok(LeadStep::Done);
    }
    let progress = (through * 100 / workers.len().max(1)) as i64;
    db::set_lead_progress(conn, run_id, progress)?;
    let running = workers.iter().filter(|a| a.status == "running").count();
    let mut jobs = Vec::new();
    for a in workers
        .iter()
        .filter(|a| a.status == "queued")
        .take(PARALLEL_AGENTS.saturating_sub(running))
    {
        db::start_agent(conn, run_id, &a.agent_id)?;
        jobs.push(AgentJob {
            key: AgentKey {
                run_id: run_id.to_string(),
                agent_id: a.agent_id.clone(),
                attempt: a.attempt,
            },
            strategies: a
                .strategies
                .iter()
                .filter_map(|id| strategies::strategy(id))
                .collect(),
            coins: run.plan.coins.clone(),
            timeframes: run
                .plan
                .timeframes
                .iter()
                .filter_map(|t| Timeframe::parse(t))
                .collect(),
            days: run.plan.days,
            oos_days: run.plan.oos_days,
            end: run.created_at,
        });
    }
    Ok(LeadStep::Watch(jobs))
}

pub(super) async fn agent_task(shared: Arc<Shared>, job: AgentJob, cancelled: Arc<AtomicBool>) {
    let outcome = run_agent(&shared, &job, &cancelled).await;
    let report = match outcome {
        Ok(None) => None,
        Ok(Some(result)) => Some((
            "done",
            agent_summary(&result),
            agent_message(&result),
            Some(result),
        )),
        Err(e) => Some((
            "failed",
            format!("failed: {e}"),
            format!("I failed: {e}"),
            None,
        )),
    };
    if let Some((status, summary, message, result)) = report {
        let key = job.key.clone();
        let written = shared
            .run_raw(move |core, now| {
                db::agent_report(
                    &mut core.store.conn,
                    &key,
                    status,
                    &summary,
                    result.as_ref(),
                    &message,
                    now,
                )
            })
            .await;
        match written {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("research agent {}: {e}", job.key.agent_id),
            Err(e) => tracing::error!("research agent {}: {e}", job.key.agent_id),
        }
    }
    shared.research.wake(&job.key.run_id);
}

pub(super) fn agent_summary(result: &AgentResult) -> String {
    let best = result
        .rows
        .iter()
        .filter_map(|r| r.sets.first().map(|c| (r, c)))
        .max_by(|(_, a), (_, b)| {
            let f = |x: Option<f64>| x.unwrap_or(f64::NEG_INFINITY);
            f(a.out_of_sample.return_pct).total_cmp(&f(b.out_of_sample.return_pct))
        });
    match best {
        Some((r, c)) => format!(
            "best {} {} {}: in-sample {} / out-of-sample {} ({} trades out of sample)",
            r.strategy_id,
            r.pair,
            r.timeframe,
            pct(c.in_sample.return_pct),
            pct(c.out_of_sample.return_pct),
            c.out_of_sample.trades
        ),
        None => "no window had enough bars to test".into(),
    }
}

pub(super) fn agent_message(result: &AgentResult) -> String {
    let mut text = String::from("Report:");
    for r in &result.rows {
        let Some(best) = r.sets.first() else { continue };
        let params = best
            .parameters
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = write!(
            text,
            " {} on {} {} — best of {} sets ({params}): in-sample {} over {} days; \
             out-of-sample {} over {} days.",
            r.strategy_id,
            r.pair,
            r.timeframe,
            r.candidates,
            evidence_text(&best.in_sample),
            r.days,
            evidence_text(&best.out_of_sample),
            r.out_of_sample_days
        );
    }
    for n in &result.notes {
        let _ = write!(text, " Note: {n}.");
    }
    text
}

/// Why an agent failed; its report says so in the words of the error.
#[derive(Debug, thiserror::Error)]
pub(super) enum AgentError {
    /// Work on a blocking thread panicked or was cancelled.
    #[error("{0}")]
    Task(#[from] tokio::task::JoinError),
    #[error(transparent)]
    Bars(#[from] data::CsvError),
}

/// The agent's work: for each pair and timeframe, load the bars once, and for each strategy run
/// the grid in chunks on the in-sample part, then backtest the best sets on the out-of-sample
/// part. `Ok(None)` when it was cancelled or superseded.
pub(super) async fn run_agent(
    shared: &Arc<Shared>,
    job: &AgentJob,
    cancelled: &AtomicBool,
) -> Result<Option<AgentResult>, AgentError> {
    let market = shared.run_raw(|core, _| core.market.clone()).await?;
    let csv = shared.settings.csv_dir.clone();
    let cfg = engine_config(&shared.settings);
    let grids: Vec<Arc<Vec<Params>>> = job
        .strategies
        .iter()
        .map(|s| Arc::new(strategies::grid(s, GRID_POINTS)))
        .collect();
    let windows = job.coins.len() * job.timeframes.len();
    let per_window: usize = grids.iter().map(|g| g.len() + TOP_SETS).sum();
    let total = (windows * per_window).max(1);
    let mut units = 0usize;
    let mut result = AgentResult::default();
    for coin in &job.coins {
        for tf in &job.timeframes {
            if cancelled.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let (market, csv, coin_s, tf_v) = (market.clone(), csv.clone(), coin.clone(), *tf);
            let (days, end) = (job.days + job.oos_days, job.end);
            let bars = tokio::task::spawn_blocking(move || {
                data::bars(&market, csv.as_deref(), &coin_s, tf_v, days, end)
            })
            .await??;
            let bars = Arc::new(bars);
            let split = bars.len() * job.days as usize / (job.days + job.oos_days) as usize;
            let pair = format!("{coin}-USD");
            if split < MIN_IN_SAMPLE_BARS || bars.len() - split < MIN_OUT_OF_SAMPLE_BARS {
                result.notes.push(format!(
                    "{pair} {}: only {} bars, too few to split into in-sample and out-of-sample",
                    tf.as_str(),
                    bars.len()
                ));
                units += per_window;
                continue;
            }
            for (spec, grid) in job.strategies.iter().copied().zip(&grids) {
                let mut results: Vec<(Params, Stats)> = Vec::with_capacity(grid.len());
                for start in (0..grid.len()).step_by(CHUNK) {
                    if cancelled.load(Ordering::Relaxed) {
                        return Ok(None);
                    }
                    let end = (start + CHUNK).min(grid.len());
                    let (bars, grid, cfg) = (bars.clone(), grid.clone(), cfg);
                    let chunk = tokio::task::spawn_blocking(move || {
                        optimizer::optimize(spec, &bars[..split], &cfg, &grid[start..end], 1)
                    })
                    .await?;
                    results.extend(chunk);
                    units += end - start;
                    if !still_current(shared, &job.key, units, total).await {
                        return Ok(None);
                    }
                }
                // Best in-sample Sharpe among sets that traded enough to mean something.
                let ranked = optimizer::rank(&results, RankBy::Sharpe);
                let enough: Vec<usize> = ranked
                    .iter()
                    .copied()
                    .filter(|&i| results[i].1.trades >= MIN_TRADES)
                    .collect();
                let order = if enough.is_empty() { ranked } else { enough };
                let top: Vec<(Params, Stats)> = order
                    .iter()
                    .take(TOP_SETS)
                    .map(|&i| results[i].clone())
                    .collect();
                let bars2 = bars.clone();
                let sets = tokio::task::spawn_blocking(move || {
                    let mut sig = Vec::new();
                    let mut ws = Workspace::default();
                    top.iter()
                        .map(|(p, is)| {
                            // Signals over the whole history: the out-of-sample window starts
                            // with warmed-up indicators, and no bar sees its future.
                            strategies::signals(spec, p, &bars2, &mut sig);
                            let oos =
                                ws.stats(&bars2[split..], sig.get(split..).unwrap_or(&[]), &cfg);
                            Candidate {
                                parameters: params_json(spec, p),
                                in_sample: evidence(is, split),
                                out_of_sample: evidence(&oos, bars2.len() - split),
                            }
                        })
                        .collect::<Vec<_>>()
                })
                .await?;
                units += TOP_SETS;
                if !still_current(shared, &job.key, units, total).await {
                    return Ok(None);
                }
                result.rows.push(ResultRow {
                    strategy_id: spec.id.to_string(),
                    pair: pair.clone(),
                    timeframe: tf.as_str().to_string(),
                    days: job.days,
                    out_of_sample_days: job.oos_days,
                    candidates: grid.len(),
                    sets,
                });
            }
        }
    }
    Ok(Some(result))
}

pub(super) async fn still_current(
    shared: &Arc<Shared>,
    key: &AgentKey,
    units: usize,
    total: usize,
) -> bool {
    let progress = ((units * 100 / total).min(99)) as u8;
    let key = key.clone();
    matches!(
        shared
            .run_raw(move |core, _| db::agent_progress(&core.store.conn, &key, progress))
            .await,
        Ok(Ok(true))
    )
}
