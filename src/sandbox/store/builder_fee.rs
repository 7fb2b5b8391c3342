//! Builder-fee approvals, the nonces issued for them, and the platform orders that owe the fee.

use super::{DbResult, ts};
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

/// A recorded approval.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    pub wallet: String,
    pub builder: String,
    pub max_fee_rate: String,
    pub nonce: u64,
    pub approved_at: String,
}

pub fn approval(conn: &Connection, account_id: i64) -> DbResult<Option<Approval>> {
    conn.query_row(
        "SELECT wallet, builder, max_fee_rate, nonce, approved_at FROM builder_fee_approvals
         WHERE account_id = ?1",
        [account_id],
        |r| {
            Ok(Approval {
                wallet: r.get(0)?,
                builder: r.get(1)?,
                max_fee_rate: r.get(2)?,
                nonce: r.get::<_, i64>(3)? as u64,
                approved_at: r.get(4)?,
            })
        },
    )
    .optional()
}

/// Records the approval (replacing the account's previous one) with the signature that made it.
pub fn save_approval(
    conn: &Connection,
    account_id: i64,
    a: &Approval,
    signature: &str,
) -> DbResult<()> {
    conn.execute(
        "INSERT INTO builder_fee_approvals (account_id, wallet, builder, max_fee_rate, nonce, signature, approved_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT(account_id) DO UPDATE SET wallet = ?2, builder = ?3, max_fee_rate = ?4,
             nonce = ?5, signature = ?6, approved_at = ?7",
        params![
            account_id,
            a.wallet,
            a.builder,
            a.max_fee_rate,
            a.nonce as i64,
            signature,
            a.approved_at
        ],
    )?;
    Ok(())
}

pub fn last_nonce(conn: &Connection, account_id: i64) -> DbResult<Option<i64>> {
    conn.query_row(
        "SELECT MAX(nonce) FROM builder_fee_nonces WHERE account_id = ?1",
        [account_id],
        |r| r.get(0),
    )
}

pub fn issue_nonce(
    conn: &Connection,
    account_id: i64,
    nonce: i64,
    wallet: &str,
    now: DateTime<Utc>,
) -> DbResult<()> {
    conn.execute(
        "INSERT INTO builder_fee_nonces (account_id, nonce, wallet, issued_at) VALUES (?1, ?2, ?3, ?4)",
        params![account_id, nonce, wallet, ts(now)],
    )?;
    Ok(())
}

/// `None` if the nonce was never issued to the account, `Some(None)` while it is unused, else
/// when it was used.
pub fn nonce_used_at(
    conn: &Connection,
    account_id: i64,
    nonce: i64,
) -> DbResult<Option<Option<String>>> {
    conn.query_row(
        "SELECT used_at FROM builder_fee_nonces WHERE account_id = ?1 AND nonce = ?2",
        params![account_id, nonce],
        |r| r.get(0),
    )
    .optional()
}

/// Marks an unused nonce used; false if it was used already.
pub fn spend_nonce(
    conn: &Connection,
    account_id: i64,
    nonce: i64,
    now: DateTime<Utc>,
) -> DbResult<bool> {
    Ok(conn.execute(
        "UPDATE builder_fee_nonces SET used_at = ?3 WHERE account_id = ?1 AND nonce = ?2 AND used_at IS NULL",
        params![account_id, nonce, ts(now)],
    )? == 1)
}

/// Remembers that a platform order's resting or trigger order owes the builder fee when it fills.
pub fn track_order(conn: &Connection, account_id: i64, oid: u64, rate: f64) -> DbResult<()> {
    conn.execute(
        "INSERT OR REPLACE INTO builder_fee_orders (oid, account_id, rate) VALUES (?1, ?2, ?3)",
        params![oid as i64, account_id, rate],
    )?;
    Ok(())
}

/// The fee rate a platform order's later fills owe, if the order is one.
pub fn order_fee_rate(conn: &Connection, oid: u64) -> DbResult<Option<f64>> {
    conn.query_row(
        "SELECT rate FROM builder_fee_orders WHERE oid = ?1",
        [oid as i64],
        |r| r.get(0),
    )
    .optional()
}
