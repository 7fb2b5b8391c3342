//! Suspended agents in the SQLite store: one row each while it lasts, written in the same
//! transaction as its journal record, so a suspension the supervisor was told about is on record.

use super::sqlite_journal::{append_in, parse_ts, ts, write_tx};
use super::{Record, Suspension};
use rusqlite::{Connection, Row, params};

fn suspension_row(r: &Row<'_>) -> rusqlite::Result<Suspension> {
    Ok(Suspension {
        agent: r.get(0)?,
        reason: r.get(1)?,
        by: r.get(2)?,
        at: parse_ts(&r.get::<_, String>(3)?)?,
    })
}

pub(super) fn suspend(c: &Connection, s: &Suspension, record: &Record) -> rusqlite::Result<bool> {
    write_tx(c, |tx| {
        let n = tx.execute(
            "INSERT INTO suspensions (agent, reason, suspended_by, at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (agent) DO NOTHING",
            params![s.agent, s.reason, s.by, ts(s.at)],
        )?;
        if n == 1 {
            append_in(tx, record)?;
        }
        Ok(n == 1)
    })
}

pub(super) fn resume(c: &Connection, agent: &str, record: &Record) -> rusqlite::Result<bool> {
    write_tx(c, |tx| {
        let n = tx.execute("DELETE FROM suspensions WHERE agent = ?1", params![agent])?;
        if n == 1 {
            append_in(tx, record)?;
        }
        Ok(n == 1)
    })
}

pub(super) fn suspensions(
    c: &Connection,
    agent: Option<&str>,
) -> rusqlite::Result<Vec<Suspension>> {
    c.prepare_cached(
        "SELECT agent, reason, suspended_by, at FROM suspensions
         WHERE ?1 IS NULL OR agent = ?1 ORDER BY at, agent",
    )?
    .query_map(params![agent], suspension_row)?
    .collect()
}
