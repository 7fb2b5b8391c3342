//! Research runs, their agents, transcript and artifacts.

use super::{DbResult, parse_ts, ts};
use crate::api::model::{ResearchAgent, ResearchArtifact, ResearchMessage, ResearchRun};
use crate::sandbox::research::planner::Plan;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone)]
pub struct RunRow {
    pub id: String,
    pub task: String,
    pub status: String,
    pub planner: String,
    pub plan: Plan,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone)]
pub struct AgentRow {
    pub agent_id: String,
    pub seq: i64,
    pub name: String,
    pub role: String,
    pub parent: Option<String>,
    pub status: String,
    pub task: String,
    pub progress: u8,
    pub summary: Option<String>,
    pub strategies: Vec<String>,
    pub attempt: i64,
    pub result: Option<AgentResult>,
}

impl AgentRow {
    pub fn unfinished(&self) -> bool {
        matches!(self.status.as_str(), "queued" | "running" | "planning")
    }
}

/// An agent's evidence: one row per strategy, pair and timeframe it tested.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentResult {
    pub rows: Vec<ResultRow>,
    #[serde(default)]
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultRow {
    pub strategy_id: String,
    pub pair: String,
    pub timeframe: String,
    pub days: u32,
    pub out_of_sample_days: u32,
    /// Parameter sets the optimizer tried.
    pub candidates: usize,
    /// The in-sample best (by Sharpe), then the next best.
    pub sets: Vec<Candidate>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    pub parameters: serde_json::Map<String, Value>,
    pub in_sample: Evidence,
    pub out_of_sample: Evidence,
}

/// The numbers a trader reads first; undefined ones (no trades, no variance) are null.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    pub return_pct: Option<f64>,
    pub sharpe: Option<f64>,
    pub max_drawdown_pct: Option<f64>,
    pub trades: usize,
    pub win_rate_pct: Option<f64>,
    pub profit_factor: Option<f64>,
    pub start: Option<DateTime<Utc>>,
    pub end: Option<DateTime<Utc>>,
    pub bars: usize,
}

pub fn load_run(conn: &Connection, id: &str, account_id: Option<i64>) -> DbResult<Option<RunRow>> {
    conn.query_row(
        "SELECT id, account_id, task, status, planner, plan, created_at, finished_at
         FROM research_runs WHERE id = ?1 AND (?2 IS NULL OR account_id = ?2)",
        params![id, account_id],
        run_from_row,
    )
    .optional()
}

pub fn run_from_row(r: &rusqlite::Row) -> DbResult<RunRow> {
    let plan: String = r.get(5)?;
    let plan = serde_json::from_str(&plan).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(5, rusqlite::types::Type::Text, Box::new(e))
    })?;
    Ok(RunRow {
        id: r.get(0)?,
        task: r.get(2)?,
        status: r.get(3)?,
        planner: r.get(4)?,
        plan,
        created_at: parse_ts(r.get(6)?),
        finished_at: r.get::<_, Option<String>>(7)?.map(parse_ts),
    })
}

pub fn load_agents(conn: &Connection, run_id: &str) -> DbResult<Vec<AgentRow>> {
    let mut stmt = conn.prepare(
        "SELECT agent_id, seq, name, role, parent, status, task, progress, summary, strategies,
                attempt, result
         FROM research_agents WHERE run_id = ?1 ORDER BY seq",
    )?;
    let rows = stmt.query_map([run_id], |r| {
        let strategies: String = r.get(9)?;
        let result: Option<String> = r.get(11)?;
        Ok(AgentRow {
            agent_id: r.get(0)?,
            seq: r.get(1)?,
            name: r.get(2)?,
            role: r.get(3)?,
            parent: r.get(4)?,
            status: r.get(5)?,
            task: r.get(6)?,
            progress: r.get::<_, i64>(7)?.clamp(0, 100) as u8,
            summary: r.get(8)?,
            strategies: serde_json::from_str(&strategies).unwrap_or_default(),
            attempt: r.get(10)?,
            result: result.and_then(|s| serde_json::from_str(&s).ok()),
        })
    })?;
    rows.collect()
}

pub fn insert_agent(conn: &Connection, run_id: &str, a: &AgentRow) -> DbResult<()> {
    conn.execute(
        "INSERT INTO research_agents (run_id, agent_id, seq, name, role, parent, status, task,
                                      progress, summary, strategies, attempt)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        params![
            run_id,
            a.agent_id,
            a.seq,
            a.name,
            a.role,
            a.parent,
            a.status,
            a.task,
            a.progress as i64,
            a.summary,
            serde_json::to_string(&a.strategies).unwrap_or_else(|_| "[]".into()),
            a.attempt,
        ],
    )?;
    Ok(())
}

/// Writes an agent's status, task, progress, summary and strategies as they are in `a`.
pub fn save_agent(conn: &Connection, run_id: &str, a: &AgentRow) -> DbResult<()> {
    conn.execute(
        "UPDATE research_agents SET status = ?3, task = ?4, progress = ?5, summary = ?6,
                strategies = ?7, attempt = ?8
         WHERE run_id = ?1 AND agent_id = ?2",
        params![
            run_id,
            a.agent_id,
            a.status,
            a.task,
            a.progress as i64,
            a.summary,
            serde_json::to_string(&a.strategies).unwrap_or_else(|_| "[]".into()),
            a.attempt,
        ],
    )?;
    Ok(())
}

pub fn say(
    conn: &Connection,
    run_id: &str,
    now: DateTime<Utc>,
    author: &str,
    text: &str,
) -> DbResult<()> {
    conn.execute(
        "INSERT INTO research_messages (run_id, time, author, text) VALUES (?1, ?2, ?3, ?4)",
        params![run_id, ts(now), author, text],
    )?;
    Ok(())
}

pub fn save_plan(conn: &Connection, run_id: &str, plan: &Plan) -> DbResult<()> {
    conn.execute(
        "UPDATE research_runs SET plan = ?2 WHERE id = ?1",
        params![run_id, serde_json::to_string(plan).unwrap_or_default()],
    )?;
    Ok(())
}

/// The run as the wire shows it: agents (with their `strategies` and `result`), transcript,
/// artifacts, and the lead's `plan`.
pub fn run_json(conn: &Connection, run: &RunRow) -> DbResult<Value> {
    let agents = load_agents(conn, &run.id)?;
    let mut stmt = conn.prepare(
        "SELECT time, author, text FROM research_messages WHERE run_id = ?1 ORDER BY id",
    )?;
    let transcript = stmt
        .query_map([&run.id], |r| {
            Ok(ResearchMessage {
                time: parse_ts(r.get(0)?),
                author: r.get(1)?,
                text: r.get(2)?,
                extra: Default::default(),
            })
        })?
        .collect::<DbResult<Vec<_>>>()?;
    let mut stmt = conn.prepare(
        "SELECT name, kind, content, created_at FROM research_artifacts WHERE run_id = ?1
         ORDER BY name DESC",
    )?;
    let artifacts = stmt
        .query_map([&run.id], |r| {
            Ok(ResearchArtifact {
                name: r.get(0)?,
                kind: r.get(1)?,
                content: r.get(2)?,
                created_at: Some(parse_ts(r.get(3)?)),
                extra: Default::default(),
            })
        })?
        .collect::<DbResult<Vec<_>>>()?;
    let mut extra = serde_json::Map::new();
    extra.insert("plan".into(), run.plan.wire());
    let wire = ResearchRun {
        run_id: run.id.clone(),
        task: run.task.clone(),
        status: run.status.clone(),
        created_at: Some(run.created_at),
        finished_at: run.finished_at,
        planner: run.planner.clone(),
        agents: agents
            .iter()
            .map(|a| ResearchAgent {
                agent_id: a.agent_id.clone(),
                name: a.name.clone(),
                role: a.role.clone(),
                parent: a.parent.clone(),
                status: a.status.clone(),
                task: a.task.clone(),
                progress: a.progress,
                summary: a.summary.clone(),
                extra: Default::default(),
            })
            .collect(),
        transcript,
        artifacts,
        extra,
    };
    let mut value = serde_json::to_value(wire).unwrap_or(Value::Null);
    if let Some(list) = value.get_mut("agents").and_then(Value::as_array_mut) {
        for (v, a) in list.iter_mut().zip(&agents) {
            if let Some(obj) = v.as_object_mut() {
                obj.insert("strategies".into(), json!(a.strategies));
                obj.insert(
                    "result".into(),
                    a.result
                        .as_ref()
                        .and_then(|r| serde_json::to_value(r).ok())
                        .unwrap_or(Value::Null),
                );
            }
        }
    }
    Ok(value)
}

/// The account's active run, if any.
pub fn active_run(conn: &Connection, account_id: i64) -> DbResult<Option<String>> {
    conn.query_row(
        "SELECT id FROM research_runs WHERE account_id = ?1 AND status = 'active'",
        [account_id],
        |r| r.get(0),
    )
    .optional()
}

/// The account's active run, else its most recent one.
pub fn latest_run(conn: &Connection, account_id: i64) -> DbResult<Option<RunRow>> {
    conn.query_row(
        "SELECT id, account_id, task, status, planner, plan, created_at, finished_at
         FROM research_runs WHERE account_id = ?1
         ORDER BY status = 'active' DESC, created_at DESC, rowid DESC LIMIT 1",
        [account_id],
        run_from_row,
    )
    .optional()
}

pub fn active_runs(conn: &Connection) -> DbResult<Vec<RunRow>> {
    let mut stmt = conn.prepare(
        "SELECT id, account_id, task, status, planner, plan, created_at, finished_at
         FROM research_runs WHERE status = 'active'",
    )?;
    stmt.query_map([], run_from_row)?.collect()
}

pub fn insert_run(
    conn: &Connection,
    id: &str,
    account_id: i64,
    key_id: i64,
    task: &str,
    plan: &Plan,
    now: DateTime<Utc>,
) -> DbResult<()> {
    conn.execute(
        "INSERT INTO research_runs (id, account_id, key_id, task, status, planner, plan, created_at)
         VALUES (?1, ?2, ?3, ?4, 'active', 'deterministic', ?5, ?6)",
        params![
            id,
            account_id,
            key_id,
            task,
            serde_json::to_string(plan).unwrap_or_default(),
            ts(now)
        ],
    )?;
    Ok(())
}

/// Ends an active run; false if it was not active any more.
pub fn end_run(conn: &Connection, id: &str, status: &str, now: DateTime<Utc>) -> DbResult<bool> {
    Ok(conn.execute(
        "UPDATE research_runs SET status = ?2, finished_at = ?3 WHERE id = ?1 AND status = 'active'",
        params![id, status, ts(now)],
    )? > 0)
}

pub fn save_artifact(
    conn: &Connection,
    run_id: &str,
    name: &str,
    kind: &str,
    content: &str,
    now: DateTime<Utc>,
) -> DbResult<()> {
    conn.execute(
        "INSERT INTO research_artifacts (run_id, name, kind, content, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(run_id, name) DO UPDATE SET kind = excluded.kind,
             content = excluded.content, created_at = excluded.created_at",
        params![run_id, name, kind, content, ts(now)],
    )?;
    Ok(())
}

pub fn set_lead_progress(conn: &Connection, run_id: &str, progress: i64) -> DbResult<()> {
    conn.execute(
        "UPDATE research_agents SET progress = ?2 WHERE run_id = ?1 AND agent_id = 'lead'",
        params![run_id, progress],
    )?;
    Ok(())
}

/// A queued agent becomes running.
pub fn start_agent(conn: &Connection, run_id: &str, agent_id: &str) -> DbResult<()> {
    conn.execute(
        "UPDATE research_agents SET status = 'running', progress = 0
         WHERE run_id = ?1 AND agent_id = ?2 AND status = 'queued'",
        params![run_id, agent_id],
    )?;
    Ok(())
}

/// Which attempt of which agent: every write an agent makes is conditional on it.
#[derive(Debug, Clone)]
pub struct AgentKey {
    pub run_id: String,
    pub agent_id: String,
    pub attempt: i64,
}

/// Writes an agent's progress if the agent is still the current attempt of an active run; false
/// means the agent was stopped, dropped or restarted and should end.
pub fn agent_progress(conn: &Connection, job: &AgentKey, progress: u8) -> DbResult<bool> {
    Ok(conn.execute(
        "UPDATE research_agents SET progress = ?4
         WHERE run_id = ?1 AND agent_id = ?2 AND attempt = ?3 AND status = 'running'
           AND EXISTS (SELECT 1 FROM research_runs WHERE id = ?1 AND status = 'active')",
        params![job.run_id, job.agent_id, job.attempt, progress as i64],
    )? > 0)
}

/// Records an agent's end (done with its result, or failed) and its message in the transcript, if
/// the agent is still current.
pub fn agent_report(
    conn: &mut Connection,
    job: &AgentKey,
    status: &str,
    summary: &str,
    result: Option<&AgentResult>,
    message: &str,
    now: DateTime<Utc>,
) -> DbResult<()> {
    let tx = conn.transaction()?;
    let updated = tx.execute(
        "UPDATE research_agents SET status = ?4, progress = 100, summary = ?5, result = ?6
         WHERE run_id = ?1 AND agent_id = ?2 AND attempt = ?3 AND status = 'running'
           AND EXISTS (SELECT 1 FROM research_runs WHERE id = ?1 AND status = 'active')",
        params![
            job.run_id,
            job.agent_id,
            job.attempt,
            status,
            summary,
            result.and_then(|r| serde_json::to_string(r).ok())
        ],
    )?;
    if updated > 0 {
        say(&tx, &job.run_id, now, &job.agent_id, message)?;
        tx.commit()?;
    }
    Ok(())
}
