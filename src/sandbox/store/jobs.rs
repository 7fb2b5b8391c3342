//! Backtest jobs and the discovery cache.

use super::{DbResult, Store, opt_ts, parse_ts, ts};
use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

/// A persisted discovery answer: kind, key, when it was computed, and its rows as JSON.
pub type CachedAnswer = (String, String, DateTime<Utc>, String);

#[derive(Debug, Clone)]
pub struct JobRow {
    pub id: String,
    pub account_id: i64,
    pub request: String,
    pub status: String,
    pub progress: u8,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    pub result: Option<String>,
    pub error: Option<String>,
}

impl Store {
    pub fn insert_job(
        &self,
        id: &str,
        account_id: i64,
        key_id: i64,
        request: &str,
        now: DateTime<Utc>,
    ) -> DbResult<()> {
        self.conn.execute(
            "INSERT INTO backtest_jobs (id, account_id, key_id, request, status, created_at)
             VALUES (?1, ?2, ?3, ?4, 'queued', ?5)",
            params![id, account_id, key_id, request, ts(now)],
        )?;
        Ok(())
    }

    pub fn finish_job(
        &self,
        id: &str,
        status: &str,
        result: Option<&str>,
        error: Option<&str>,
        now: DateTime<Utc>,
    ) -> DbResult<()> {
        self.conn.execute(
            "UPDATE backtest_jobs SET status = ?2, progress = 100, result = ?3, error = ?4,
                                      finished_at = ?5
             WHERE id = ?1",
            params![id, status, result, error, ts(now)],
        )?;
        Ok(())
    }

    pub fn job(&self, id: &str) -> DbResult<Option<JobRow>> {
        self.conn
            .query_row(
                "SELECT id, account_id, request, status, progress, created_at, finished_at, result,
                        error
                 FROM backtest_jobs WHERE id = ?1",
                [id],
                |r| {
                    Ok(JobRow {
                        id: r.get(0)?,
                        account_id: r.get(1)?,
                        request: r.get(2)?,
                        status: r.get(3)?,
                        progress: r.get::<_, i64>(4)?.clamp(0, 100) as u8,
                        created_at: parse_ts(r.get(5)?),
                        finished_at: opt_ts(r.get(6)?),
                        result: r.get(7)?,
                        error: r.get(8)?,
                    })
                },
            )
            .optional()
    }

    /// Jobs a stopped sandbox left unfinished, oldest first, to run again. A running job is
    /// `queued` in the store (its progress is kept in memory); rows an older version marked
    /// `running` go back to queued too, so none stays running after a restart.
    pub fn requeue_jobs(&self) -> DbResult<Vec<String>> {
        self.conn.execute(
            "UPDATE backtest_jobs SET status = 'queued', progress = 0 WHERE status = 'running'",
            [],
        )?;
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM backtest_jobs WHERE status = 'queued' ORDER BY created_at")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        rows.collect()
    }

    pub fn cache_put(
        &self,
        kind: &str,
        key: &str,
        at: DateTime<Utc>,
        payload: &str,
    ) -> DbResult<()> {
        self.conn.execute(
            "INSERT INTO discovery_cache (kind, key, computed_at, payload) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(kind, key) DO UPDATE SET computed_at = excluded.computed_at,
                                                  payload = excluded.payload",
            params![kind, key, ts(at), payload],
        )?;
        Ok(())
    }

    pub fn cache_all(&self) -> DbResult<Vec<CachedAnswer>> {
        let mut stmt = self
            .conn
            .prepare("SELECT kind, key, computed_at, payload FROM discovery_cache")?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, parse_ts(r.get(2)?), r.get(3)?))
        })?;
        rows.collect()
    }
}
