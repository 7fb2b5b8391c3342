//! Accounts, their API keys, and the daily quota counters of each key.

use super::{DbResult, Store, opt_ts, parse_ts, ts};
use crate::api::Scope;
use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};

#[derive(Debug, Clone)]
pub struct AccountRow {
    pub id: i64,
    pub messenger_id: String,
    pub wallet: String,
    pub initial_equity: f64,
    pub created_at: DateTime<Utc>,
}

/// An active key and its account (id, messenger id, wallet), as a request authenticates.
#[derive(Debug, Clone)]
pub struct KeyWithAccount {
    pub key_id: i64,
    pub scope: Scope,
    pub account: Option<(i64, String, String)>,
}

#[derive(Debug, Clone)]
pub struct KeyRow {
    pub id: i64,
    pub account_id: i64,
    pub prefix: String,
    /// What the console's header shows for this key (`Secret::fingerprint`).
    pub fingerprint: String,
    pub scope: Scope,
    pub label: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

impl Store {
    /// The first account bound to `wallet` (lower case; stored wallets compare case-insensitively).
    pub fn account_id_by_wallet(&self, wallet: &str) -> DbResult<Option<i64>> {
        self.conn
            .query_row(
                "SELECT id FROM accounts WHERE lower(wallet) = ?1 ORDER BY id LIMIT 1",
                [wallet],
                |r| r.get(0),
            )
            .optional()
    }

    pub fn set_wallet(&self, account_id: i64, wallet: &str) -> DbResult<()> {
        self.conn.execute(
            "UPDATE accounts SET wallet = ?1 WHERE id = ?2",
            params![wallet, account_id],
        )?;
        Ok(())
    }

    /// The id of the key stored under `hash`, revoked or not.
    pub fn key_id_by_hash(&self, hash: &str) -> DbResult<Option<i64>> {
        self.conn
            .query_row("SELECT id FROM api_keys WHERE key_hash = ?1", [hash], |r| {
                r.get(0)
            })
            .optional()
    }

    // ---- accounts and keys ------------------------------------------------------------------------

    pub fn create_account(
        &mut self,
        messenger_id: &str,
        wallet: &str,
        initial_equity: f64,
        now: DateTime<Utc>,
    ) -> DbResult<AccountRow> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO accounts (messenger_id, wallet, initial_equity, created_at)
             VALUES (?1, ?2, ?3, ?4)",
            params![messenger_id, wallet, initial_equity, ts(now)],
        )?;
        let id = tx.last_insert_rowid();
        tx.execute(
            "INSERT INTO balances (account_id, cash) VALUES (?1, ?2)",
            params![id, initial_equity],
        )?;
        tx.execute(
            "INSERT INTO equity_snapshots (account_id, time, equity) VALUES (?1, ?2, ?3)",
            params![id, ts(now), initial_equity],
        )?;
        tx.commit()?;
        Ok(AccountRow {
            id,
            messenger_id: messenger_id.to_string(),
            wallet: wallet.to_string(),
            initial_equity,
            created_at: now,
        })
    }

    fn account_from_row(r: &rusqlite::Row) -> DbResult<AccountRow> {
        Ok(AccountRow {
            id: r.get(0)?,
            messenger_id: r.get(1)?,
            wallet: r.get(2)?,
            initial_equity: r.get(3)?,
            created_at: parse_ts(r.get(4)?),
        })
    }

    pub fn account(&self, id: i64) -> DbResult<Option<AccountRow>> {
        // Cached: an account's read is among the most frequent.
        self.conn
            .prepare_cached(
                "SELECT id, messenger_id, wallet, initial_equity, created_at FROM accounts WHERE id = ?1",
            )?
            .query_row([id], Self::account_from_row)
            .optional()
    }

    pub fn account_by_messenger_id(&self, messenger_id: &str) -> DbResult<Option<AccountRow>> {
        self.conn
            .query_row(
                "SELECT id, messenger_id, wallet, initial_equity, created_at FROM accounts
                 WHERE messenger_id = ?1",
                [messenger_id],
                Self::account_from_row,
            )
            .optional()
    }

    pub fn accounts(&self) -> DbResult<Vec<AccountRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, messenger_id, wallet, initial_equity, created_at FROM accounts ORDER BY id",
        )?;
        let rows = stmt.query_map([], Self::account_from_row)?;
        rows.collect()
    }

    pub fn insert_key(
        &self,
        account_id: i64,
        key_hash: &str,
        prefix: &str,
        scope: Scope,
        label: &str,
        now: DateTime<Utc>,
    ) -> DbResult<i64> {
        self.conn.execute(
            "INSERT INTO api_keys (account_id, key_hash, prefix, scope, label, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![account_id, key_hash, prefix, scope.as_str(), label, ts(now)],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    fn key_from_row(r: &rusqlite::Row) -> DbResult<KeyRow> {
        let scope: String = r.get(3)?;
        Ok(KeyRow {
            id: r.get(0)?,
            account_id: r.get(1)?,
            prefix: r.get(2)?,
            scope: Scope::parse(&scope).unwrap_or(Scope::McpMutate),
            label: r.get(4)?,
            created_at: parse_ts(r.get(5)?),
            revoked_at: opt_ts(r.get(6)?),
            fingerprint: crate::secret::fingerprint_of_hash(&r.get::<_, String>(7)?),
        })
    }

    /// An active (not revoked) key by the hash of its plain text.
    pub fn key_by_hash(&self, key_hash: &str) -> DbResult<Option<KeyRow>> {
        self.conn
            .prepare_cached(
                "SELECT id, account_id, prefix, scope, label, created_at, revoked_at, key_hash FROM api_keys
                 WHERE key_hash = ?1 AND revoked_at IS NULL",
            )?
            .query_row([key_hash], Self::key_from_row)
            .optional()
    }

    /// What a request's key authenticates, in one statement (every request runs it): the active
    /// key's id and scope, and its account's id, messenger id and wallet (`None` for an account
    /// that no longer exists). `None` for a key that is not active.
    pub fn key_with_account(&self, key_hash: &str) -> DbResult<Option<KeyWithAccount>> {
        self.conn
            .prepare_cached(
                // Not a join: SQLite re-prepared a join's statement at every step (its plan
                // depends on the key bound, as SQLite sees it), parsing the SQL per request.
                "SELECT id, scope, account_id,
                        (SELECT messenger_id FROM accounts WHERE id = api_keys.account_id),
                        (SELECT wallet FROM accounts WHERE id = api_keys.account_id)
                 FROM api_keys WHERE key_hash = ?1 AND revoked_at IS NULL",
            )?
            .query_row([key_hash], |r| {
                let scope: String = r.get(1)?;
                // The account's messenger id is never NULL: NULL here is no account.
                let account = match r.get::<_, Option<String>>(3)? {
                    Some(messenger_id) => Some((r.get(2)?, messenger_id, r.get(4)?)),
                    None => None,
                };
                Ok(KeyWithAccount {
                    key_id: r.get(0)?,
                    scope: Scope::parse(&scope).unwrap_or(Scope::McpMutate),
                    account,
                })
            })
            .optional()
    }

    pub fn keys(&self) -> DbResult<Vec<KeyRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, account_id, prefix, scope, label, created_at, revoked_at, key_hash FROM api_keys
             ORDER BY id",
        )?;
        let rows = stmt.query_map([], Self::key_from_row)?;
        rows.collect()
    }

    /// Revokes the active keys whose prefix is `prefix`; returns how many.
    pub fn revoke_key(&self, prefix: &str, now: DateTime<Utc>) -> DbResult<usize> {
        self.conn.execute(
            "UPDATE api_keys SET revoked_at = ?2 WHERE prefix = ?1 AND revoked_at IS NULL",
            params![prefix, ts(now)],
        )
    }

    // ---- quotas -----------------------------------------------------------------------------------

    /// Counts one unit against a daily cap if it is not exhausted. Returns the new count, or `None`
    /// when the cap is reached (nothing is counted then). One statement, so concurrent calls never
    /// exceed the cap.
    pub fn charge_quota(
        &self,
        key_id: i64,
        day: &str,
        column: QuotaColumn,
        cap: u64,
    ) -> DbResult<Option<u64>> {
        let col = column.name();
        let sql = format!(
            "INSERT INTO quota_usage (key_id, day, {col}) SELECT ?1, ?2, 1 WHERE ?3 > 0
             ON CONFLICT(key_id, day) DO UPDATE SET {col} = {col} + 1 WHERE {col} < ?3
             RETURNING {col}"
        );
        self.conn
            .query_row(&sql, params![key_id, day, cap as i64], |r| {
                r.get::<_, i64>(0)
            })
            .optional()
            .map(|v| v.map(|n| n as u64))
    }

    pub fn quota_used(&self, key_id: i64, day: &str) -> DbResult<(u64, u64)> {
        self.conn
            .query_row(
                "SELECT posts, compute FROM quota_usage WHERE key_id = ?1 AND day = ?2",
                params![key_id, day],
                |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
            )
            .optional()
            .map(|v| v.unwrap_or((0, 0)))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaColumn {
    Posts,
    Compute,
}

impl QuotaColumn {
    fn name(self) -> &'static str {
        match self {
            QuotaColumn::Posts => "posts",
            QuotaColumn::Compute => "compute",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_charge_stops_at_the_cap() {
        let mut s = Store::open_in_memory().unwrap();
        let now = Utc::now();
        let a = s.create_account("m1", "0xabc", 1000.0, now).unwrap();
        let k = s
            .insert_key(a.id, "h", "p", Scope::Legacy, "", now)
            .unwrap();
        assert_eq!(
            s.charge_quota(k, "d", QuotaColumn::Posts, 2).unwrap(),
            Some(1)
        );
        assert_eq!(
            s.charge_quota(k, "d", QuotaColumn::Posts, 2).unwrap(),
            Some(2)
        );
        assert_eq!(s.charge_quota(k, "d", QuotaColumn::Posts, 2).unwrap(), None);
        assert_eq!(s.quota_used(k, "d").unwrap(), (2, 0));
        assert_eq!(
            s.charge_quota(k, "e", QuotaColumn::Posts, 2).unwrap(),
            Some(1)
        );
        assert_eq!(
            s.charge_quota(k, "e", QuotaColumn::Compute, 0).unwrap(),
            None
        );
    }
}
