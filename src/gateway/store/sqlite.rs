//! The default store: one SQLite file (rusqlite, bundled), WAL and synchronous=FULL so a decision the
//! supervisor was told about survives a kill -9. rusqlite is synchronous, so every call runs on the
//! blocking pool behind a mutex held only for that statement.

use super::{
    Agent, Counts, Exec, Executed, Held, Item, ItemRef, JournalRow, Link, Listed, Record, Role,
    Standing, Status, Store, StoreError, StoreResult, Suspension, Token, Transition,
    sqlite_suspensions,
};
use crate::api::model::Hold;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};
use serde_json::Value;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::sqlite_journal::{append_in, journal_row, parse_ts, ts, write_tx};
use super::sqlite_schema::MIGRATIONS;

#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
}

fn opt_ts(s: Option<String>) -> rusqlite::Result<Option<DateTime<Utc>>> {
    s.as_deref().map(parse_ts).transpose()
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or(serde_json::Value::Null)
}

const ITEM_COLUMNS: &str = "id, agent, account, kind, exec, proposal_id, confirm_token, request, preview, \
     expires_at, created_at, status, decided_at, decided_by, reason, result, note, notional, verdicts, \
     standing, approvals, approvals_required, staged_by";

fn item_row(r: &Row<'_>) -> rusqlite::Result<Item> {
    let conv = |i: usize, what: &str| {
        rusqlite::Error::FromSqlConversionFailure(
            i,
            rusqlite::types::Type::Text,
            format!("unknown {what}").into(),
        )
    };
    Ok(Item {
        id: r.get(0)?,
        agent: r.get(1)?,
        account: r.get(2)?,
        kind: r.get(3)?,
        exec: Exec::parse(&r.get::<_, String>(4)?).ok_or_else(|| conv(4, "exec"))?,
        proposal_id: r.get(5)?,
        confirm_token: r.get(6)?,
        request: json(&r.get::<_, String>(7)?),
        preview: json(&r.get::<_, String>(8)?),
        expires_at: parse_ts(&r.get::<_, String>(9)?)?,
        created_at: parse_ts(&r.get::<_, String>(10)?)?,
        status: Status::parse(&r.get::<_, String>(11)?).ok_or_else(|| conv(11, "status"))?,
        decided_at: opt_ts(r.get(12)?)?,
        decided_by: r.get(13)?,
        reason: r.get(14)?,
        result: match r.get::<_, Option<String>>(15)? {
            Some(text) => Some(serde_json::from_str(&text).map_err(|_| conv(15, "result"))?),
            None => None,
        },
        note: r
            .get::<_, Option<String>>(16)?
            .map(|n| Hold::from(n.as_str())),
        notional: r.get(17)?,
        verdicts: super::verdicts_of(serde_json::from_str(&r.get::<_, String>(18)?)),
        standing: r.get(19)?,
        approvals: serde_json::from_str(&r.get::<_, String>(20)?)
            .map_err(|_| conv(20, "approvals"))?,
        approvals_required: r.get(21)?,
        staged_by: r.get(22)?,
    })
}

const STANDING_COLUMNS: &str =
    "id, agent, coins, max_notional_usd, expires_at, reason, created_by, created_at, revoked_at";

fn standing_row(r: &Row<'_>) -> rusqlite::Result<Standing> {
    Ok(Standing {
        id: r.get(0)?,
        agent: r.get(1)?,
        coins: serde_json::from_str(&r.get::<_, String>(2)?).unwrap_or_default(),
        max_notional_usd: r.get(3)?,
        expires_at: parse_ts(&r.get::<_, String>(4)?)?,
        reason: r.get(5)?,
        created_by: r.get(6)?,
        created_at: parse_ts(&r.get::<_, String>(7)?)?,
        revoked_at: opt_ts(r.get(8)?)?,
    })
}

fn agent_row(r: &Row<'_>) -> rusqlite::Result<Agent> {
    Ok(Agent {
        key_hash: r.get(0)?,
        fingerprint: r.get(1)?,
        name: r.get(2)?,
        account: r.get(3)?,
        first_seen: parse_ts(&r.get::<_, String>(4)?)?,
        last_seen: parse_ts(&r.get::<_, String>(5)?)?,
    })
}

const AGENT_COLUMNS: &str = "key_hash, fingerprint, name, account, first_seen, last_seen";

fn status_list(statuses: &[Status]) -> String {
    statuses
        .iter()
        .map(|s| format!("'{}'", s.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

impl SqliteStore {
    pub fn open(path: &Path) -> StoreResult<SqliteStore> {
        Self::init(Connection::open(path)?)
    }

    pub fn open_in_memory() -> StoreResult<SqliteStore> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(mut conn: Connection) -> StoreResult<SqliteStore> {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version as usize > MIGRATIONS.len() {
            return Err(StoreError::NewerSchema {
                found: version,
                known: MIGRATIONS.len(),
            });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let tx = conn.transaction()?;
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
            tx.commit()?;
        }
        Ok(SqliteStore {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Runs `f` on the connection on the blocking pool.
    fn run<T, F>(&self, f: F) -> BoxFuture<'_, StoreResult<T>>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let conn = self.conn.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let conn = conn.lock().unwrap_or_else(|p| p.into_inner());
                f(&conn).map_err(StoreError::from)
            })
            .await
            .map_err(StoreError::from)?
        })
    }
}

impl Store for SqliteStore {
    fn insert_item(&self, item: Item) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c| {
            let n = c.execute(
                &format!(
                    "INSERT INTO items ({ITEM_COLUMNS}) VALUES \
                     (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
                      ?18, ?19, ?20, ?21, ?22, ?23) \
                     ON CONFLICT DO NOTHING"
                ),
                params![
                    item.id,
                    item.agent,
                    item.account,
                    item.kind,
                    item.exec.as_str(),
                    item.proposal_id,
                    item.confirm_token,
                    item.request.to_string(),
                    item.preview.to_string(),
                    ts(item.expires_at),
                    ts(item.created_at),
                    item.status.as_str(),
                    item.decided_at.map(ts),
                    item.decided_by,
                    item.reason,
                    item.result.as_ref().map(|e| e.json().to_string()),
                    item.note.as_ref().map(Hold::to_string),
                    item.notional,
                    serde_json::to_string(&item.verdicts).unwrap_or_else(|_| "[]".into()),
                    item.standing,
                    serde_json::to_string(&item.approvals).unwrap_or_else(|_| "[]".into()),
                    item.approvals_required,
                    item.staged_by,
                ],
            )?;
            Ok(n == 1)
        })
    }

    fn item(&self, which: ItemRef<'_>) -> BoxFuture<'_, StoreResult<Option<Item>>> {
        let (clause, value) = match which {
            ItemRef::IdOrProposal(v) => ("id = ?1 OR proposal_id = ?1", v.to_string()),
            ItemRef::Proposal(v) => ("proposal_id = ?1", v.to_string()),
            ItemRef::ConfirmToken(v) => ("confirm_token = ?1", v.to_string()),
        };
        self.run(move |c| {
            c.query_row(
                &format!("SELECT {ITEM_COLUMNS} FROM items WHERE {clause} LIMIT 1"),
                params![value],
                item_row,
            )
            .optional()
        })
    }

    fn items(&self, status: Option<Status>, limit: usize) -> BoxFuture<'_, StoreResult<Vec<Item>>> {
        self.run(move |c| {
            let (clause, arg) = match status {
                Some(s) => ("WHERE status = ?1", s.as_str()),
                None => ("WHERE ?1 = ?1", ""),
            };
            let mut stmt = c.prepare(&format!(
                "SELECT {ITEM_COLUMNS} FROM items {clause} ORDER BY created_at DESC, rowid DESC LIMIT ?2"
            ))?;
            let rows = stmt.query_map(params![arg, limit as i64], item_row)?;
            rows.collect()
        })
    }

    fn listing(
        &self,
        status: Option<Status>,
        limit: usize,
        held: Held,
    ) -> BoxFuture<'_, StoreResult<Vec<Listed>>> {
        self.run(move |c| {
            let (clause, arg) = match status {
                Some(s) => ("WHERE status = ?1", s.as_str()),
                None => ("WHERE ?1 = ?1", ""),
            };
            // One read transaction, so both reads see one snapshot: the ids and revisions (most
            // rows are held: their JSON columns are neither read nor parsed), then the others.
            let tx = Transaction::new_unchecked(c, TransactionBehavior::Deferred)?;
            let mut heads = tx.prepare_cached(&format!(
                "SELECT id, rev FROM items {clause} ORDER BY created_at DESC, rowid DESC LIMIT ?2"
            ))?;
            let mut listed = heads
                .query_map(params![arg, limit as i64], |r| {
                    Ok(Listed {
                        id: r.get(0)?,
                        rev: r.get(1)?,
                        item: None,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut row =
                tx.prepare_cached(&format!("SELECT {ITEM_COLUMNS} FROM items WHERE id = ?1"))?;
            for l in listed.iter_mut().filter(|l| !held(&l.id, l.rev)) {
                l.item = Some(row.query_row(params![l.id], item_row)?);
            }
            drop((heads, row));
            tx.commit()?;
            Ok(listed)
        })
    }

    fn next_expiry(&self) -> BoxFuture<'_, StoreResult<Option<DateTime<Utc>>>> {
        self.run(|c| {
            // Each MIN is one step into items_due; MIN over `status IN (...)` walks the range.
            let soonest: Option<String> = c.query_row(
                "SELECT MIN(t) FROM (
                     SELECT MIN(expires_at) AS t FROM items WHERE status = 'pending'
                     UNION ALL
                     SELECT MIN(expires_at) FROM items WHERE status = 'approved')",
                [],
                |r| r.get(0),
            )?;
            opt_ts(soonest)
        })
    }

    fn counts(&self) -> BoxFuture<'_, StoreResult<Counts>> {
        self.run(|c| {
            let grouped = |sql: &str| -> rusqlite::Result<Vec<(String, i64)>> {
                let mut stmt = c.prepare(sql)?;
                let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
                rows.collect()
            };
            Ok(Counts {
                items: grouped("SELECT status, COUNT(*) FROM items GROUP BY status")?,
                journal: grouped("SELECT kind, COUNT(*) FROM journal GROUP BY kind")?,
            })
        })
    }

    fn approved_of(&self, agent: &str) -> BoxFuture<'_, StoreResult<Vec<Item>>> {
        let agent = agent.to_string();
        self.run(move |c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {ITEM_COLUMNS} FROM items WHERE agent = ?1 AND status = 'approved' ORDER BY created_at, rowid"
            ))?;
            let rows = stmt.query_map(params![agent], item_row)?;
            rows.collect()
        })
    }

    fn transition(&self, id: &str, t: Transition) -> BoxFuture<'_, StoreResult<bool>> {
        let id = id.to_string();
        self.run(move |c| {
            let decided = t.decided_by.is_some();
            write_tx(c, |c| {
                let n = c.execute(
                    &format!(
                        "UPDATE items SET status = ?2,
                         decided_at = CASE WHEN ?3 THEN ?4 ELSE decided_at END,
                         decided_by = CASE WHEN ?3 THEN ?5 ELSE decided_by END,
                         reason = COALESCE(?6, reason),
                         result = COALESCE(?7, result),
                         note = ?8,
                         standing = COALESCE(?10, standing),
                         claimed_at = CASE WHEN ?2 = 'executing' THEN ?4 ELSE claimed_at END,
                         approvals = COALESCE(?12, approvals),
                         approvals_required = MAX(approvals_required, COALESCE(?13, 0))
                     WHERE id = ?1 AND status IN ({}) AND (?9 IS NULL OR expires_at > ?9)
                       AND (?11 IS NULL OR json_array_length(approvals) = ?11)",
                        status_list(t.from)
                    ),
                    params![
                        id,
                        t.to.as_str(),
                        decided,
                        ts(t.now),
                        t.decided_by,
                        t.reason,
                        t.result.as_ref().map(|e| e.json().to_string()),
                        t.note.as_ref().map(Hold::to_string),
                        t.unexpired_at.map(ts),
                        t.standing,
                        t.approvals.as_ref().map(|a| a.seen as i64),
                        t.approvals.as_ref().map(|a| a.json()),
                        t.approvals.as_ref().map(|a| a.required),
                    ],
                )?;
                if n == 1
                    && let Some(record) = &t.record
                {
                    append_in(c, record)?;
                }
                Ok(n == 1)
            })
        })
    }

    fn expire_due(&self, now: DateTime<Utc>) -> BoxFuture<'_, StoreResult<usize>> {
        self.run(move |c| {
            // Most calls find nothing: look before taking the write lock.
            let due: i64 = c.query_row(
                "SELECT COUNT(*) FROM items WHERE status IN ('pending', 'approved') AND expires_at <= ?1",
                params![ts(now)],
                |r| r.get(0),
            )?;
            if due == 0 {
                return Ok(0);
            }
            write_tx(c, |c| {
                let mut stmt = c.prepare(
                    "SELECT id, status, expires_at FROM items
                     WHERE status IN ('pending', 'approved') AND expires_at <= ?1
                     ORDER BY expires_at, rowid",
                )?;
                let rows: Vec<(String, String, String)> = stmt
                    .query_map(params![ts(now)], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect::<rusqlite::Result<_>>()?;
                for (id, status, expires_at) in &rows {
                    c.execute(
                        "UPDATE items SET status = 'expired', decided_at = expires_at, note = NULL
                         WHERE id = ?1",
                        params![id],
                    )?;
                    let record = Record::new(
                        "expire",
                        "gateway",
                        parse_ts(expires_at)?,
                        super::detail::Expired { was: status },
                    )
                    .item(id);
                    append_in(c, &record)?;
                }
                Ok(rows.len())
            })
        })
    }

    fn recover_executing(
        &self,
        note: Hold,
        claimed_before: Option<DateTime<Utc>>,
    ) -> BoxFuture<'_, StoreResult<usize>> {
        self.run(move |c| {
            c.execute(
                "UPDATE items SET status = 'approved', note = ?1 WHERE status = 'executing'
                 AND (?2 IS NULL OR claimed_at IS NULL OR claimed_at < ?2)",
                params![note.to_string(), claimed_before.map(ts)],
            )
        })
    }

    fn agent_seen(
        &self,
        key_hash: &str,
        fingerprint: &str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'_, StoreResult<Agent>> {
        let (key_hash, fingerprint) = (key_hash.to_string(), fingerprint.to_string());
        self.run(move |c| {
            c.execute(
                "INSERT INTO agents (key_hash, fingerprint, first_seen, last_seen) VALUES (?1, ?2, ?3, ?3)
                 ON CONFLICT(key_hash) DO UPDATE SET last_seen = excluded.last_seen",
                params![key_hash, fingerprint, ts(now)],
            )?;
            c.query_row(
                &format!("SELECT {AGENT_COLUMNS} FROM agents WHERE key_hash = ?1"),
                params![key_hash],
                agent_row,
            )
        })
    }

    fn set_agent_account(&self, key_hash: &str, account: &str) -> BoxFuture<'_, StoreResult<()>> {
        let (key_hash, account) = (key_hash.to_string(), account.to_string());
        self.run(move |c| {
            c.execute(
                "UPDATE agents SET account = ?2 WHERE key_hash = ?1",
                params![key_hash, account],
            )?;
            c.execute(
                "UPDATE items SET account = ?2 WHERE agent = ?1 AND account IS NULL",
                params![key_hash, account],
            )?;
            Ok(())
        })
    }

    fn agents(&self) -> BoxFuture<'_, StoreResult<Vec<Agent>>> {
        self.run(|c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {AGENT_COLUMNS} FROM agents ORDER BY first_seen, fingerprint"
            ))?;
            let rows = stmt.query_map([], agent_row)?;
            rows.collect()
        })
    }

    fn name_agent(&self, fingerprint: &str, name: &str) -> BoxFuture<'_, StoreResult<usize>> {
        let (fingerprint, name) = (fingerprint.to_ascii_lowercase(), name.to_string());
        self.run(move |c| {
            c.execute(
                "UPDATE agents SET name = ?2 WHERE substr(key_hash, 1, length(?1)) = ?1",
                params![fingerprint, name],
            )
        })
    }

    fn add_token(
        &self,
        hash: &str,
        label: &str,
        role: Role,
        now: DateTime<Utc>,
    ) -> BoxFuture<'_, StoreResult<i64>> {
        let (hash, label) = (hash.to_string(), label.to_string());
        self.run(move |c| {
            c.execute(
                "INSERT INTO supervisor_tokens (token_hash, label, role, created_at) VALUES (?1, ?2, ?3, ?4)",
                params![hash, label, role.as_str(), ts(now)],
            )?;
            Ok(c.last_insert_rowid())
        })
    }

    fn token(&self, hash: &str) -> BoxFuture<'_, StoreResult<Option<Token>>> {
        let hash = hash.to_string();
        self.run(move |c| {
            c.query_row(
                "SELECT id, label, created_at, role FROM supervisor_tokens WHERE token_hash = ?1",
                params![hash],
                |r| {
                    Ok(Token {
                        id: r.get(0)?,
                        label: r.get(1)?,
                        created_at: parse_ts(&r.get::<_, String>(2)?)?,
                        // A role this binary does not know (a newer one's) gets the least power.
                        role: Role::parse(&r.get::<_, String>(3)?).unwrap_or(Role::Viewer),
                    })
                },
            )
            .optional()
        })
    }

    fn state(&self, key: &str) -> BoxFuture<'_, StoreResult<Option<Value>>> {
        let key = key.to_string();
        self.run(move |c| {
            c.query_row(
                "SELECT value FROM gate_state WHERE key = ?1",
                params![key],
                |r| r.get::<_, String>(0),
            )
            .optional()
            .map(|v| v.as_deref().map(json))
        })
    }

    fn set_state(&self, key: &str, value: Value, record: Record) -> BoxFuture<'_, StoreResult<()>> {
        let key = key.to_string();
        self.run(move |c| {
            write_tx(c, |c| {
                Self::put_state(c, &key, &value)?;
                append_in(c, &record)?;
                Ok(())
            })
        })
    }

    fn append(&self, record: Record) -> BoxFuture<'_, StoreResult<JournalRow>> {
        self.run(move |c| write_tx(c, |c| append_in(c, &record)))
    }

    fn journal(&self, after: i64, limit: usize) -> BoxFuture<'_, StoreResult<Vec<JournalRow>>> {
        self.run(move |c| {
            let mut stmt = c.prepare(
                "SELECT seq, at, kind, actor, item, detail, prev_hash, hash FROM journal
                 WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![after, limit as i64], journal_row)?;
            rows.collect()
        })
    }

    fn executed_since(&self, agent: &str, since: DateTime<Utc>) -> BoxFuture<'_, StoreResult<f64>> {
        let agent = agent.to_string();
        self.run(move |c| {
            c.query_row(
                "SELECT COALESCE(SUM(notional), 0) FROM executed WHERE agent = ?1 AND at >= ?2",
                params![agent, ts(since)],
                |r| r.get(0),
            )
        })
    }

    fn executions_since(
        &self,
        agent: &str,
        since: DateTime<Utc>,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        let agent = agent.to_string();
        self.run(move |c| {
            c.query_row(
                "SELECT COUNT(*) FROM executed WHERE agent = ?1 AND at >= ?2",
                params![agent, ts(since)],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n.max(0) as u64)
        })
    }

    fn executed_by_agent(&self, since: DateTime<Utc>) -> BoxFuture<'_, StoreResult<Vec<Executed>>> {
        self.run(move |c| {
            let mut stmt = c.prepare(
                "SELECT agent, COUNT(*), COALESCE(SUM(notional), 0) FROM executed
                 WHERE at >= ?1 GROUP BY agent",
            )?;
            let rows = stmt.query_map(params![ts(since)], |r| {
                Ok(Executed {
                    agent: r.get(0)?,
                    count: r.get::<_, i64>(1)?.max(0) as u64,
                    notional: r.get(2)?,
                })
            })?;
            rows.collect()
        })
    }

    fn add_executed(
        &self,
        agent: &str,
        at: DateTime<Utc>,
        notional: f64,
    ) -> BoxFuture<'_, StoreResult<()>> {
        let agent = agent.to_string();
        self.run(move |c| {
            c.execute(
                "INSERT INTO executed (agent, at, notional) VALUES (?1, ?2, ?3)",
                params![agent, ts(at), notional],
            )?;
            Ok(())
        })
    }

    fn add_standing(&self, st: Standing, record: Record) -> BoxFuture<'_, StoreResult<i64>> {
        self.run(move |c| {
            write_tx(c, |c| {
                c.execute(
                    "INSERT INTO standing_approvals
                     (agent, coins, max_notional_usd, expires_at, reason, created_by, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![
                        st.agent,
                        serde_json::to_string(&st.coins).unwrap_or_else(|_| "[]".into()),
                        st.max_notional_usd,
                        ts(st.expires_at),
                        st.reason,
                        st.created_by,
                        ts(st.created_at),
                    ],
                )?;
                let id = c.last_insert_rowid();
                let mut record = record;
                record.detail["id"] = Value::from(id);
                append_in(c, &record)?;
                Ok(id)
            })
        })
    }

    fn standings(&self, now: DateTime<Utc>) -> BoxFuture<'_, StoreResult<Vec<Standing>>> {
        self.run(move |c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {STANDING_COLUMNS} FROM standing_approvals
                 WHERE revoked_at IS NULL AND expires_at > ?1 ORDER BY id"
            ))?;
            let rows = stmt.query_map(params![ts(now)], standing_row)?;
            rows.collect()
        })
    }

    fn revoke_standing(&self, id: i64, record: Record) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c| {
            write_tx(c, |c| {
                let n = c.execute(
                    "UPDATE standing_approvals SET revoked_at = ?2
                     WHERE id = ?1 AND revoked_at IS NULL AND expires_at > ?2",
                    params![id, ts(record.at)],
                )?;
                if n == 1 {
                    append_in(c, &record)?;
                }
                Ok(n == 1)
            })
        })
    }

    fn items_of_standing(&self, id: i64) -> BoxFuture<'_, StoreResult<Vec<Item>>> {
        self.run(move |c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {ITEM_COLUMNS} FROM items WHERE standing = ?1 ORDER BY created_at DESC, rowid DESC"
            ))?;
            let rows = stmt.query_map(params![id], item_row)?;
            rows.collect()
        })
    }

    fn suspend(&self, s: Suspension, record: Record) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c| sqlite_suspensions::suspend(c, &s, &record))
    }

    fn resume(&self, agent: &str, record: Record) -> BoxFuture<'_, StoreResult<bool>> {
        let agent = agent.to_string();
        self.run(move |c| sqlite_suspensions::resume(c, &agent, &record))
    }

    fn suspensions(&self, agent: Option<&str>) -> BoxFuture<'_, StoreResult<Vec<Suspension>>> {
        let agent = agent.map(str::to_string);
        self.run(move |c| sqlite_suspensions::suspensions(c, agent.as_deref()))
    }

    fn insert_link(&self, link: Link) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c| {
            c.execute(
                "INSERT INTO approval_links (token_hash, item_id, label, csrf, expires_at, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    link.token_hash,
                    link.item_id,
                    link.label,
                    link.csrf,
                    ts(link.expires_at),
                    ts(link.created_at)
                ],
            )?;
            Ok(())
        })
    }

    fn link(&self, token_hash: &str) -> BoxFuture<'_, StoreResult<Option<Link>>> {
        let hash = token_hash.to_string();
        self.run(move |c| {
            c.query_row(
                "SELECT token_hash, item_id, label, csrf, expires_at, created_at, spent_at
                 FROM approval_links WHERE token_hash = ?1",
                params![hash],
                Self::link_row,
            )
            .optional()
        })
    }

    fn spend_link(&self, token_hash: &str, now: DateTime<Utc>) -> BoxFuture<'_, StoreResult<bool>> {
        let hash = token_hash.to_string();
        self.run(move |c| {
            Ok(c.execute(
                "UPDATE approval_links SET spent_at = ?2 WHERE token_hash = ?1 AND spent_at IS NULL",
                params![hash, ts(now)],
            )? == 1)
        })
    }

    fn unspend_link(&self, token_hash: &str) -> BoxFuture<'_, StoreResult<()>> {
        let hash = token_hash.to_string();
        self.run(move |c| {
            c.execute(
                "UPDATE approval_links SET spent_at = NULL WHERE token_hash = ?1",
                params![hash],
            )?;
            Ok(())
        })
    }
}

impl SqliteStore {
    fn link_row(r: &Row<'_>) -> rusqlite::Result<Link> {
        Ok(Link {
            token_hash: r.get(0)?,
            item_id: r.get(1)?,
            label: r.get(2)?,
            csrf: r.get(3)?,
            expires_at: parse_ts(&r.get::<_, String>(4)?)?,
            created_at: parse_ts(&r.get::<_, String>(5)?)?,
            spent_at: opt_ts(r.get(6)?)?,
        })
    }

    fn put_state(c: &Connection, key: &str, value: &Value) -> rusqlite::Result<usize> {
        c.execute(
            "INSERT INTO gate_state (key, value) VALUES (?1, ?2)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value.to_string()],
        )
    }
}

#[cfg(test)]
mod tests {
    // The behaviour every store shares is tested against both in store/conformance.rs.
    use super::*;

    #[test]
    fn a_database_from_a_newer_agentdesk_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        drop(SqliteStore::open(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
        drop(conn);
        let err = SqliteStore::open(&path).err().unwrap();
        assert!(
            matches!(err, super::StoreError::NewerSchema { found: 99, .. }),
            "{err}"
        );
        assert!(
            err.to_string().contains("newer than this agentdesk"),
            "{err}"
        );
    }
}
