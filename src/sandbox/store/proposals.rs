//! Staged proposals, idempotent orders, the audit log and the trade signals received.

use super::{DbResult, Store, opt_ts, parse_ts, ts};
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Transaction, params};

#[derive(Debug, Clone)]
pub struct ProposalRow {
    pub id: String,
    pub account_id: i64,
    pub key_id: i64,
    pub kind: String,
    pub signal: String,
    pub plan: String,
    pub preview: String,
    pub status: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub decided_at: Option<DateTime<Utc>>,
    pub execution: Option<String>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct AuditRow {
    pub account_id: i64,
    pub key_id: i64,
    pub operation: String,
    pub outcome: String,
    pub http_status: u16,
    pub proposal_id: Option<String>,
    pub oid: Option<u64>,
    pub error_code: Option<String>,
    pub message: Option<String>,
}

impl Store {
    // ---- proposals --------------------------------------------------------------------------------

    pub fn insert_proposal(&self, p: &ProposalRow) -> DbResult<()> {
        self.conn.execute(
            "INSERT INTO proposals (id, account_id, key_id, kind, signal, plan, preview, status,
                                    created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                p.id,
                p.account_id,
                p.key_id,
                p.kind,
                p.signal,
                p.plan,
                p.preview,
                p.status,
                ts(p.created_at),
                ts(p.expires_at)
            ],
        )?;
        Ok(())
    }

    fn proposal_from_row(r: &rusqlite::Row) -> DbResult<ProposalRow> {
        Ok(ProposalRow {
            id: r.get(0)?,
            account_id: r.get(1)?,
            key_id: r.get(2)?,
            kind: r.get(3)?,
            signal: r.get(4)?,
            plan: r.get(5)?,
            preview: r.get(6)?,
            status: r.get(7)?,
            created_at: parse_ts(r.get(8)?),
            expires_at: parse_ts(r.get(9)?),
            decided_at: opt_ts(r.get(10)?),
            execution: r.get(11)?,
            error: r.get(12)?,
        })
    }

    const PROPOSAL_COLUMNS: &str = "id, account_id, key_id, kind, signal, plan, preview, status,
        created_at, expires_at, decided_at, execution, error";

    pub fn proposal(&self, id: &str) -> DbResult<Option<ProposalRow>> {
        self.conn
            .query_row(
                &format!(
                    "SELECT {} FROM proposals WHERE id = ?1",
                    Self::PROPOSAL_COLUMNS
                ),
                [id],
                Self::proposal_from_row,
            )
            .optional()
    }

    /// The account's proposals, newest first.
    pub fn proposals(&self, account_id: i64, limit: usize) -> DbResult<Vec<ProposalRow>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {} FROM proposals WHERE account_id = ?1 ORDER BY created_at DESC, rowid DESC LIMIT ?2",
            Self::PROPOSAL_COLUMNS
        ))?;
        let rows = stmt.query_map(params![account_id, limit as i64], Self::proposal_from_row)?;
        rows.collect()
    }

    /// Claims a staged, unexpired proposal for execution: the single conditional UPDATE that makes
    /// confirm exactly-once. Returns false when the proposal is not claimable by this key now.
    pub fn claim_proposal(
        tx: &Transaction,
        id: &str,
        key_id: i64,
        now: DateTime<Utc>,
    ) -> DbResult<bool> {
        let n = tx.execute(
            "UPDATE proposals SET status = 'executed', decided_at = ?3
             WHERE id = ?1 AND key_id = ?2 AND status = 'staged' AND expires_at > ?3",
            params![id, key_id, ts(now)],
        )?;
        Ok(n == 1)
    }

    pub fn set_proposal_execution(tx: &Connection, id: &str, execution: &str) -> DbResult<()> {
        tx.execute(
            "UPDATE proposals SET execution = ?2 WHERE id = ?1",
            params![id, execution],
        )?;
        Ok(())
    }

    pub fn fail_proposal(&self, id: &str, error: &str, now: DateTime<Utc>) -> DbResult<()> {
        self.conn.execute(
            "UPDATE proposals SET status = 'failed', decided_at = ?3, error = ?2
             WHERE id = ?1 AND status = 'staged'",
            params![id, error, ts(now)],
        )?;
        Ok(())
    }

    // ---- idempotency ------------------------------------------------------------------------------

    pub fn idempotent_response(
        &self,
        key_id: i64,
        idem_key: &str,
    ) -> DbResult<Option<(String, u16, String)>> {
        self.conn
            .query_row(
                "SELECT body_hash, status, response FROM idempotency
                 WHERE key_id = ?1 AND idem_key = ?2",
                params![key_id, idem_key],
                |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u16, r.get(2)?)),
            )
            .optional()
    }

    pub fn save_idempotent_response(
        tx: &Connection,
        key_id: i64,
        idem_key: &str,
        body_hash: &str,
        status: u16,
        response: &str,
        now: DateTime<Utc>,
    ) -> DbResult<()> {
        tx.execute(
            "INSERT INTO idempotency (key_id, idem_key, body_hash, status, response, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                key_id,
                idem_key,
                body_hash,
                status as i64,
                response,
                ts(now)
            ],
        )?;
        Ok(())
    }

    // ---- audit ------------------------------------------------------------------------------------

    pub fn insert_audit(&self, row: &AuditRow, now: DateTime<Utc>) -> DbResult<()> {
        self.conn.execute(
            "INSERT INTO audit_logs (account_id, key_id, time, operation, outcome, http_status,
                                     proposal_id, oid, error_code, message)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                row.account_id,
                row.key_id,
                ts(now),
                row.operation,
                row.outcome,
                row.http_status as i64,
                row.proposal_id,
                row.oid.map(|o| o as i64),
                row.error_code,
                row.message
            ],
        )?;
        Ok(())
    }

    /// The account's audit rows, newest first, with their ids and times.
    pub fn audit(
        &self,
        account_id: i64,
        limit: usize,
    ) -> DbResult<Vec<(i64, DateTime<Utc>, AuditRow)>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, time, account_id, key_id, operation, outcome, http_status, proposal_id,
                    oid, error_code, message
             FROM audit_logs WHERE account_id = ?1 ORDER BY id DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![account_id, limit as i64], |r| {
            Ok((
                r.get(0)?,
                parse_ts(r.get(1)?),
                AuditRow {
                    account_id: r.get(2)?,
                    key_id: r.get(3)?,
                    operation: r.get(4)?,
                    outcome: r.get(5)?,
                    http_status: r.get::<_, i64>(6)? as u16,
                    proposal_id: r.get(7)?,
                    oid: r.get::<_, Option<i64>>(8)?.map(|o| o as u64),
                    error_code: r.get(9)?,
                    message: r.get(10)?,
                },
            ))
        })?;
        rows.collect()
    }

    // ---- trade signals ----------------------------------------------------------------------------

    pub fn insert_trade_signal(
        tx: &Connection,
        account_id: i64,
        key_id: i64,
        route: &str,
        body: &str,
        fanout: bool,
        now: DateTime<Utc>,
    ) -> DbResult<()> {
        tx.execute(
            "INSERT INTO trade_signals (account_id, key_id, received_at, route, body, fanout)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![account_id, key_id, ts(now), route, body, fanout],
        )?;
        Ok(())
    }
}
