//! The SQLite store's journal chain and the time format every one of its tables uses: here so the
//! store's parts (the inbox's tables in `sqlite.rs`, suspensions in `sqlite_suspensions.rs`) write
//! to one chain the same way.

use super::{JournalRow, Record};
use crate::gateway::model::journal;
use chrono::{DateTime, SecondsFormat, Utc};
use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};

pub(super) fn ts(t: DateTime<Utc>) -> String {
    // Fixed width, so text order is time order in SQL comparisons.
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

pub(super) fn parse_ts(s: &str) -> rusqlite::Result<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, e.into())
        })
}

/// Runs `f` in a write transaction taken at its start (BEGIN IMMEDIATE), so a read-then-write
/// such as a journal append cannot interleave with another writer's.
pub(super) fn write_tx<T>(
    c: &Connection,
    f: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let tx = Transaction::new_unchecked(c, TransactionBehavior::Immediate)?;
    let out = f(&tx)?;
    tx.commit()?;
    Ok(out)
}

/// Appends to the chain; the caller holds a write transaction.
pub(super) fn append_in(c: &Connection, r: &Record) -> rusqlite::Result<JournalRow> {
    let (seq, prev): (i64, String) = c
        .query_row(
            "SELECT seq, hash FROM journal ORDER BY seq DESC LIMIT 1",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?
        .unwrap_or((0, journal::GENESIS.to_string()));
    let row = r.linked(seq, prev);
    c.execute(
        "INSERT INTO journal (seq, at, kind, actor, item, detail, prev_hash, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            row.seq,
            row.at,
            row.kind,
            row.actor,
            row.item,
            row.detail,
            row.prev_hash,
            row.hash
        ],
    )?;
    Ok(row)
}

pub(super) fn journal_row(r: &Row<'_>) -> rusqlite::Result<JournalRow> {
    Ok(JournalRow {
        seq: r.get(0)?,
        at: r.get(1)?,
        kind: r.get(2)?,
        actor: r.get(3)?,
        item: r.get(4)?,
        detail: r.get(5)?,
        prev_hash: r.get(6)?,
        hash: r.get(7)?,
    })
}
