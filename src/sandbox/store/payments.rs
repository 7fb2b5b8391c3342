//! x402 payments: each authorization's nonce, spent once, with what it paid for.

use super::{DbResult, Store, ts};
use chrono::{DateTime, Utc};
use rusqlite::params;

/// One accepted payment authorization.
pub struct PaymentNonce<'a> {
    pub payer: &'a str,
    pub nonce: &'a str,
    pub valid_before: i64,
    pub account_id: i64,
    pub amount: &'a str,
    pub operation: &'a str,
}

impl Store {
    /// Records a payment's nonce; false if that payer already used it.
    pub fn spend_payment_nonce(&self, p: &PaymentNonce, now: DateTime<Utc>) -> DbResult<bool> {
        let inserted = self.conn.execute(
            "INSERT INTO payment_nonces (payer, nonce, valid_before, account_id, amount, operation, used_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(payer, nonce) DO NOTHING",
            params![
                p.payer,
                p.nonce,
                p.valid_before,
                p.account_id,
                p.amount,
                p.operation,
                ts(now)
            ],
        )?;
        Ok(inserted == 1)
    }

    /// The amounts (base units, as text) the account paid on the UTC day `day` (YYYY-MM-DD).
    pub fn payment_amounts(&self, account_id: i64, day: &str) -> DbResult<Vec<String>> {
        let mut stmt = self.conn.prepare(
            "SELECT amount FROM payment_nonces WHERE account_id = ?1 AND substr(used_at, 1, 10) = ?2",
        )?;
        let rows = stmt.query_map(params![account_id, day], |r| r.get::<_, String>(0))?;
        rows.collect()
    }
}
