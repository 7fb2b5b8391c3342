//! Research runs: a lead agent and the agents it spawns, each a tokio task over the sandbox's own
//! engine.
//!
//! The lead plans deterministically from the task's words ([`plan_task`]), posts the plan to the
//! transcript and spawns one agent per strategy (when the task names one family, or names
//! strategies) or per family (otherwise). Each agent optimizes a parameter grid on an in-sample
//! window and backtests its best sets on the out-of-sample window that follows, then reports its
//! evidence in the transcript. When every agent has reported (or "stop after N" is met) the lead
//! writes a ranked report (`report.md`, `report.json`) and the run is `completed`.
//!
//! SQLite is the source of truth: every state change is a write under the core lock, and every
//! write an agent makes is conditional on the run being `active` and on the agent's `attempt`, so
//! an agent that was stopped, dropped or restarted (or left over from a sandbox that stopped)
//! simply finds its writes refused and ends. In memory there are only wake-ups for the lead and
//! cancellation flags, checked between grid chunks, so cancelled agents stop computing soon.

mod agents;
pub mod live;
pub mod planner;
mod report;
mod steering;

use super::caller::Caller;
use super::core::{Core, Shared};
use super::error::AppError;
use super::quota;
use super::store::DbResult;
use super::store::research::{self as db, AgentRow, RunRow};
use crate::api::model::ResearchRun;
use agents::spawn_lead;
use chrono::{DateTime, Utc};
pub use planner::{DEFAULT_COIN, DEFAULT_DAYS, DEFAULT_TIMEFRAME, Plan, oos_days, plan_task};
use report::Report;
use rusqlite::Connection;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::sync::Arc;
use steering::steer;
pub use steering::{Steering, parse_steering};

/// Parameter sets per strategy in an agent's grid (as discovery's optimizer combos).
pub const GRID_POINTS: usize = 125;
/// Grid points per compute chunk; cancellation is checked between chunks.
pub const CHUNK: usize = 16;
/// In-sample best sets an agent backtests out of sample.
pub const TOP_SETS: usize = 3;
/// Agents of one run computing at the same time; the rest wait `queued`.
pub const PARALLEL_AGENTS: usize = 2;
/// In-sample trades a parameter set needs to be picked (unless no set has that many).
pub const MIN_TRADES: usize = 3;
/// Longest task or message accepted.
pub const MAX_TEXT: usize = 2_000;
/// Fewest bars a window needs to be worth optimizing on / testing on.
const MIN_IN_SAMPLE_BARS: usize = 20;
const MIN_OUT_OF_SAMPLE_BARS: usize = 5;
/// How often the lead looks at the run even without a wake-up.
const LEAD_POLL: std::time::Duration = std::time::Duration::from_millis(500);

fn new_run_id() -> String {
    use rand::RngExt;
    let bytes: [u8; 8] = rand::rng().random();
    format!("run_{}", hex::encode(bytes))
}

// ---- operations ------------------------------------------------------------------------------------

fn not_found(run_id: &str) -> AppError {
    AppError::not_found(format!(
        "no research run {run_id:?} on this account; GET /api/terminal/research/runs/active shows yours"
    ))
}

fn not_active(run: &RunRow) -> AppError {
    AppError::conflict(
        "research_run_not_active",
        format!(
            "research run {} is {}, not active; its transcript and artifacts remain readable, \
             and a new run starts with POST /api/terminal/research/runs",
            run.id, run.status
        ),
    )
}

fn check_text(text: &str, field: &str) -> Result<String, AppError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(AppError::invalid(
            field,
            format!("{field} must not be empty"),
        ));
    }
    if text.chars().count() > MAX_TEXT {
        return Err(AppError::invalid(
            field,
            format!("{field} is longer than {MAX_TEXT} characters"),
        ));
    }
    Ok(text.to_string())
}

fn strategy_label(ids: &[String]) -> String {
    ids.join(", ")
}

fn agent_task_text(strategies: &[String], plan: &Plan) -> String {
    format!(
        "Optimize {} on {} (grid of up to {GRID_POINTS} parameter sets per strategy), then \
         backtest the best {TOP_SETS} out of sample",
        strategy_label(strategies),
        plan.window_text()
    )
}

/// `research_start`: plans, charges one unit of compute, persists the run with its lead and
/// agents, and starts the lead. 409 `research_run_active` while the account has an active run.
pub async fn start(shared: &Arc<Shared>, caller: &Caller, task: &str) -> Result<Value, AppError> {
    let task = check_text(task, "task")?;
    let plan = plan_task(&task).map_err(|e| AppError::invalid("task", e.to_string()))?;
    let caller = caller.clone();
    let (run_id, value) = shared
        .run_raw(move |core, now| create_run(core, &caller, &task, plan, now))
        .await
        .map_err(AppError::internal)??;
    spawn_lead(shared.clone(), run_id);
    Ok(value)
}

fn create_run(
    core: &mut Core,
    caller: &Caller,
    task: &str,
    plan: Plan,
    now: DateTime<Utc>,
) -> Result<(String, Value), AppError> {
    if let Some(id) = db::active_run(&core.store.conn, caller.account_id)? {
        return Err(AppError::conflict(
            "research_run_active",
            format!(
                "research run {id} is still active on this account; message it, stop it (POST \
                 /api/terminal/research/runs/{id}/stop) or wait for it to finish"
            ),
        ));
    }
    quota::charge_compute(core, caller, now)?;
    let id = new_run_id();
    let tx = core.store.conn.transaction()?;
    db::insert_run(&tx, &id, caller.account_id, caller.key_id, task, &plan, now)?;
    db::insert_agent(
        &tx,
        &id,
        &AgentRow {
            agent_id: "lead".into(),
            seq: 0,
            name: "Lead".into(),
            role: "lead".into(),
            parent: None,
            status: "running".into(),
            task: task.to_string(),
            progress: 0,
            summary: None,
            strategies: Vec::new(),
            attempt: 0,
            result: None,
        },
    )?;
    let mut names = Vec::new();
    for (i, (label, ids)) in plan.groups.iter().enumerate() {
        let agent_id = format!("agent-{}", i + 1);
        names.push(format!("{agent_id} ({label})"));
        db::insert_agent(
            &tx,
            &id,
            &AgentRow {
                agent_id,
                seq: i as i64 + 1,
                name: format!("{label} agent"),
                role: "worker".into(),
                parent: Some("lead".into()),
                status: "queued".into(),
                task: agent_task_text(ids, &plan),
                progress: 0,
                summary: None,
                strategies: ids.clone(),
                attempt: 0,
                result: None,
            },
        )?;
    }
    db::say(&tx, &id, now, "user", task)?;
    let mut text = format!(
        "Planner: deterministic (rules over the task's words; no LLM is used for research in \
         this sandbox). Plan: test {} on {}. Each agent optimizes a grid of up to {GRID_POINTS} \
         parameter sets per strategy on the in-sample window, backtests its {TOP_SETS} best sets \
         (by in-sample Sharpe) on the out-of-sample window that follows, and reports. I rank by \
         out-of-sample return. Spawning {} agent{} ({} at a time): {}.",
        match plan.grouping.as_str() {
            "strategy" => "one agent per strategy",
            _ => "one agent per strategy family",
        },
        plan.window_text(),
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        PARALLEL_AGENTS,
        names.join(", ")
    );
    if !plan.defaults.is_empty() {
        let _ = write!(
            text,
            " Defaults (not in the task): {}.",
            plan.defaults.join(", ")
        );
    }
    if let Some(n) = plan.stop_after {
        let _ = write!(text, " I will finish after {n} agent(s) report.");
    }
    db::say(&tx, &id, now, "lead", &text)?;
    tx.commit()?;
    let run = db::load_run(&core.store.conn, &id, None)?
        .ok_or_else(|| AppError::internal("research run vanished"))?;
    Ok((id, db::run_json(&core.store.conn, &run)?))
}

/// `research_status`: the account's active run, else its most recent one, else none.
pub async fn status(shared: &Arc<Shared>, caller: &Caller) -> Result<Option<Value>, AppError> {
    let account = caller.account_id;
    shared
        .run_raw(move |core, _| -> Result<Option<Value>, AppError> {
            let conn = &core.store.conn;
            match db::latest_run(conn, account)? {
                Some(run) => Ok(Some(db::run_json(conn, &run)?)),
                None => Ok(None),
            }
        })
        .await
        .map_err(AppError::internal)?
}

/// `research_message`: the user's message and the lead's answer go into the transcript, and the
/// changes it asks for are applied (see [`steer`]).
pub async fn message(
    shared: &Arc<Shared>,
    caller: &Caller,
    run_id: &str,
    text: &str,
) -> Result<Value, AppError> {
    let text = check_text(text, "message")?;
    let account = caller.account_id;
    let id = run_id.to_string();
    let (value, cancels) = shared
        .run_raw(move |core, now| -> Result<(Value, Vec<String>), AppError> {
            let conn = &mut core.store.conn;
            let run = db::load_run(conn, &id, Some(account))?.ok_or_else(|| not_found(&id))?;
            if run.status != "active" {
                return Err(not_active(&run));
            }
            let agents = db::load_agents(conn, &id)?;
            let steering = parse_steering(&text);
            let outcome = steer(&run.plan, &agents, &steering);
            let tx = conn.transaction()?;
            db::say(&tx, &id, now, "user", &text)?;
            for a in &outcome.changed_agents {
                db::save_agent(&tx, &id, a)?;
            }
            for a in &outcome.new_agents {
                db::insert_agent(&tx, &id, a)?;
            }
            db::save_plan(&tx, &id, &outcome.plan)?;
            db::say(&tx, &id, now, "lead", &outcome.reply)?;
            tx.commit()?;
            let run = db::load_run(conn, &id, None)?.ok_or_else(|| not_found(&id))?;
            let mut value = db::run_json(conn, &run)?;
            if let Some(obj) = value.as_object_mut() {
                obj.insert("reply".into(), json!(outcome.reply));
                obj.insert("applied".into(), json!(outcome.applied));
            }
            Ok((value, outcome.cancel))
        })
        .await
        .map_err(AppError::internal)??;
    shared.research.cancel(run_id, &cancels);
    shared.research.wake(run_id);
    Ok(value)
}

/// `research_stop`: the run becomes `stopped`, unfinished agents `stopped`, and the lead writes a
/// partial report from what has been reported. 409 `research_run_not_active` if it already ended.
pub async fn stop(shared: &Arc<Shared>, caller: &Caller, run_id: &str) -> Result<Value, AppError> {
    let account = caller.account_id;
    let id = run_id.to_string();
    let (value, cancels) = shared
        .run_raw(move |core, now| -> Result<(Value, Vec<String>), AppError> {
            let conn = &mut core.store.conn;
            let run = db::load_run(conn, &id, Some(account))?.ok_or_else(|| not_found(&id))?;
            if run.status != "active" {
                return Err(not_active(&run));
            }
            let cancels = finish(
                conn,
                &run,
                Ending::Stopped("Stopped at the user's request."),
                now,
            )?;
            let run = db::load_run(conn, &id, None)?.ok_or_else(|| not_found(&id))?;
            Ok((db::run_json(conn, &run)?, cancels))
        })
        .await
        .map_err(AppError::internal)??;
    shared.research.cancel(run_id, &cancels);
    shared.research.wake(run_id);
    Ok(value)
}

/// How a run ends.
enum Ending<'a> {
    /// Every agent reported, or "stop after N" was met.
    Completed,
    /// Stopped by the user or by a sandbox restart; the note says which.
    Stopped(&'a str),
}

/// Ends an active run in one transaction: unfinished agents are stopped, the report is written,
/// the lead says so. Returns the agents whose computation must be cancelled.
fn finish(
    conn: &mut Connection,
    run: &RunRow,
    ending: Ending,
    now: DateTime<Utc>,
) -> DbResult<Vec<String>> {
    let mut agents = db::load_agents(conn, &run.id)?;
    let mut cancels = Vec::new();
    let (stopped_note, run_status) = match &ending {
        Ending::Stopped(note) => (format!("stopped before it finished: {note}"), "stopped"),
        Ending::Completed => (
            format!(
                "not needed: the run finished after {} agent(s) reported",
                run.plan.stop_after.unwrap_or(0)
            ),
            "completed",
        ),
    };
    for a in agents
        .iter_mut()
        .filter(|a| a.role != "lead" && a.unfinished())
    {
        if a.status == "running" {
            cancels.push(a.agent_id.clone());
        }
        a.status = "stopped".into();
        a.summary = Some(stopped_note.clone());
    }
    let workers: Vec<&AgentRow> = agents.iter().filter(|a| a.role != "lead").collect();
    let done = workers.iter().filter(|a| a.status == "done").count();
    let failed = workers.iter().filter(|a| a.status == "failed").count();
    let run_status = if run_status == "completed" && done == 0 && failed > 0 {
        "failed"
    } else {
        run_status
    };
    let report = Report::build(run, &agents, run_status, now);
    let mut lead_text = match &ending {
        Ending::Stopped(note) => format!(
            "{note} {done} of {} agents had reported; the partial report (report.md, \
             report.json) ranks what finished.",
            workers.len()
        ),
        Ending::Completed if run_status == "failed" => {
            "Every agent failed; report.md and report.json say why.".to_string()
        }
        Ending::Completed => format!(
            "All done: {done} of {} agents reported. The ranked report is in report.md and \
             report.json.",
            workers.len()
        ),
    };
    let top = report.top_lines(3);
    if !top.is_empty() {
        let _ = write!(lead_text, " Top: {}", top.join(" "));
    } else if run_status != "failed" {
        lead_text.push_str(" No strategy produced a result to rank.");
    }
    let lead_summary = match report.rows.first() {
        Some(best) => format!("{run_status}: best {}", best.short()),
        None => format!("{run_status}: nothing to rank"),
    };
    let tx = conn.transaction()?;
    if !db::end_run(&tx, &run.id, run_status, now)? {
        return Ok(Vec::new());
    }
    for a in agents.iter_mut() {
        if a.role == "lead" {
            a.status = if run_status == "stopped" {
                "stopped"
            } else {
                "done"
            }
            .into();
            a.progress = 100;
            a.summary = Some(lead_summary.clone());
        }
        db::save_agent(&tx, &run.id, a)?;
    }
    for (name, kind, content) in [
        ("report.md", "markdown", report.markdown()),
        ("report.json", "json", report.json_text()),
    ] {
        db::save_artifact(&tx, &run.id, name, kind, &content, now)?;
    }
    db::say(&tx, &run.id, now, "lead", &lead_text)?;
    tx.commit()?;
    Ok(cancels)
}

// ---- startup -------------------------------------------------------------------------------------

/// At sandbox start: runs a stopped sandbox left `active` become `stopped` with a note from the
/// lead and a partial report. Returns how many were stopped.
pub fn recover(conn: &mut Connection, now: DateTime<Utc>) -> DbResult<usize> {
    let runs = db::active_runs(conn)?;
    for run in &runs {
        finish(
            conn,
            run,
            Ending::Stopped(
                "The sandbox stopped while this run was active, so it was marked stopped when \
                 the sandbox started again.",
            ),
            now,
        )?;
    }
    Ok(runs.len())
}

// ---- text for the CLI ----------------------------------------------------------------------------

/// A run as the command line shows it.
pub fn run_text(run: &ResearchRun) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Research run {} — {} (planner: {})",
        run.run_id, run.status, run.planner
    );
    let _ = writeln!(out, "Task: {}", run.task);
    let _ = writeln!(out, "Agents:");
    for a in &run.agents {
        let _ = writeln!(
            out,
            "  {:<9} {:<8} {:>3}%  {}",
            a.agent_id,
            a.status,
            a.progress,
            a.summary.as_deref().unwrap_or(&a.name)
        );
    }
    let _ = writeln!(out, "Transcript:");
    let skip = run.transcript.len().saturating_sub(12);
    if skip > 0 {
        let _ = writeln!(out, "  … {skip} earlier message(s)");
    }
    for m in &run.transcript[skip..] {
        let _ = writeln!(
            out,
            "  [{}] {}: {}",
            m.time.format("%H:%M:%S"),
            m.author,
            m.text
        );
    }
    if run.artifacts.is_empty() {
        let _ = writeln!(out, "Artifacts: none yet");
    } else {
        let names: Vec<&str> = run.artifacts.iter().map(|a| a.name.as_str()).collect();
        let _ = writeln!(out, "Artifacts: {}", names.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_and_recovery_on_a_fresh_store() {
        let mut store = crate::sandbox::store::Store::open_in_memory().unwrap();
        assert_eq!(recover(&mut store.conn, Utc::now()).unwrap(), 0);
    }
}
