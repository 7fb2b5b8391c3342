//! The default store: one SQLite file (rusqlite, bundled), WAL and synchronous=FULL so a decision the
//! supervisor was told about survives a kill -9. rusqlite is synchronous, so every call runs on the
//! blocking pool behind a mutex held only for that statement.

use super::{
    Agent, Exec, Item, ItemRef, Status, Store, StoreError, StoreResult, Token, Transition,
};
use chrono::{DateTime, SecondsFormat, Utc};
use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, Row, params};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Applied in order; `PRAGMA user_version` counts the applied ones. Append, never edit.
const MIGRATIONS: &[&str] = &[r#"
CREATE TABLE items (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    account TEXT,
    kind TEXT NOT NULL,
    exec TEXT NOT NULL,
    proposal_id TEXT,
    confirm_token TEXT,
    request TEXT NOT NULL,
    preview TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    created_at TEXT NOT NULL,
    status TEXT NOT NULL,
    decided_at TEXT,
    decided_by TEXT,
    reason TEXT,
    result TEXT,
    note TEXT
);
CREATE UNIQUE INDEX items_proposal ON items(proposal_id) WHERE proposal_id IS NOT NULL;
CREATE UNIQUE INDEX items_token ON items(confirm_token) WHERE confirm_token IS NOT NULL;
CREATE INDEX items_status ON items(status, created_at);
CREATE INDEX items_agent ON items(agent, status);
CREATE TABLE agents (
    key_hash TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    name TEXT,
    account TEXT,
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL
);
CREATE INDEX agents_fingerprint ON agents(fingerprint);
CREATE TABLE supervisor_tokens (
    id INTEGER PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
"#];

#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
}

fn ts(t: DateTime<Utc>) -> String {
    // Fixed width, so text order is time order in SQL comparisons.
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

fn parse_ts(s: &str) -> rusqlite::Result<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, e.into())
        })
}

fn opt_ts(s: Option<String>) -> rusqlite::Result<Option<DateTime<Utc>>> {
    s.as_deref().map(parse_ts).transpose()
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or(serde_json::Value::Null)
}

const ITEM_COLUMNS: &str = "id, agent, account, kind, exec, proposal_id, confirm_token, request, preview, \
     expires_at, created_at, status, decided_at, decided_by, reason, result, note";

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
        result: r.get::<_, Option<String>>(15)?.as_deref().map(json),
        note: r.get(16)?,
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
            return Err(StoreError(format!(
                "the database is at schema version {version}, newer than this agentdesk ({}); upgrade agentdesk",
                MIGRATIONS.len()
            )));
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
            .map_err(|e| StoreError(format!("store task failed: {e}")))?
        })
    }
}

impl Store for SqliteStore {
    fn insert_item(&self, item: Item) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c| {
            let n = c.execute(
                &format!(
                    "INSERT INTO items ({ITEM_COLUMNS}) VALUES \
                     (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17) \
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
                    item.result.as_ref().map(|v| v.to_string()),
                    item.note,
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
            let n = c.execute(
                &format!(
                    "UPDATE items SET status = ?2,
                         decided_at = CASE WHEN ?3 THEN ?4 ELSE decided_at END,
                         decided_by = CASE WHEN ?3 THEN ?5 ELSE decided_by END,
                         reason = COALESCE(?6, reason),
                         result = COALESCE(?7, result),
                         note = ?8
                     WHERE id = ?1 AND status IN ({}) AND (?9 IS NULL OR expires_at > ?9)",
                    status_list(t.from)
                ),
                params![
                    id,
                    t.to.as_str(),
                    decided,
                    ts(t.now),
                    t.decided_by,
                    t.reason,
                    t.result.as_ref().map(|v| v.to_string()),
                    t.note,
                    t.unexpired_at.map(ts),
                ],
            )?;
            Ok(n == 1)
        })
    }

    fn expire_due(&self, now: DateTime<Utc>) -> BoxFuture<'_, StoreResult<usize>> {
        self.run(move |c| {
            c.execute(
                "UPDATE items SET status = 'expired', decided_at = expires_at, note = NULL
                 WHERE status IN ('pending', 'approved') AND expires_at <= ?1",
                params![ts(now)],
            )
        })
    }

    fn recover_executing(&self, note: String) -> BoxFuture<'_, StoreResult<usize>> {
        self.run(move |c| {
            c.execute(
                "UPDATE items SET status = 'approved', note = ?1 WHERE status = 'executing'",
                params![note],
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
        now: DateTime<Utc>,
    ) -> BoxFuture<'_, StoreResult<i64>> {
        let (hash, label) = (hash.to_string(), label.to_string());
        self.run(move |c| {
            c.execute(
                "INSERT INTO supervisor_tokens (token_hash, label, created_at) VALUES (?1, ?2, ?3)",
                params![hash, label, ts(now)],
            )?;
            Ok(c.last_insert_rowid())
        })
    }

    fn token(&self, hash: &str) -> BoxFuture<'_, StoreResult<Option<Token>>> {
        let hash = hash.to_string();
        self.run(move |c| {
            c.query_row(
                "SELECT id, label, created_at FROM supervisor_tokens WHERE token_hash = ?1",
                params![hash],
                |r| {
                    Ok(Token {
                        id: r.get(0)?,
                        label: r.get(1)?,
                        created_at: parse_ts(&r.get::<_, String>(2)?)?,
                    })
                },
            )
            .optional()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(id: &str, proposal: &str, at: DateTime<Utc>) -> Item {
        Item {
            id: id.into(),
            agent: "ab".repeat(32),
            account: None,
            kind: "trade".into(),
            exec: Exec::Confirm,
            proposal_id: Some(proposal.into()),
            confirm_token: None,
            request: json!({"a": "BTCUSDT"}),
            preview: json!({"coin": "BTC"}),
            expires_at: at + chrono::Duration::minutes(5),
            created_at: at,
            status: Status::Pending,
            decided_at: None,
            decided_by: None,
            reason: None,
            result: None,
            note: None,
        }
    }

    #[tokio::test]
    async fn one_item_per_proposal_one_winner_per_transition_and_expiry() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        let t0: DateTime<Utc> = "2026-06-01T12:00:00Z".parse().unwrap();
        let store = SqliteStore::open(&path).unwrap();
        assert!(store.insert_item(item("gi_1", "p1", t0)).await.unwrap());
        assert!(!store.insert_item(item("gi_2", "p1", t0)).await.unwrap());
        assert!(store.insert_item(item("gi_3", "p3", t0)).await.unwrap());

        let approve = || Transition {
            unexpired_at: Some(t0),
            decided_by: Some("alice".into()),
            ..Transition::new(&[Status::Pending], Status::Approved, t0)
        };
        assert!(store.transition("gi_1", approve()).await.unwrap());
        assert!(!store.transition("gi_1", approve()).await.unwrap());
        let claim = || Transition::new(&[Status::Approved], Status::Executing, t0);
        assert!(store.transition("gi_1", claim()).await.unwrap());
        assert!(!store.transition("gi_1", claim()).await.unwrap());
        let got = store.item(ItemRef::Proposal("p1")).await.unwrap().unwrap();
        assert_eq!(
            (got.status, got.decided_by.as_deref()),
            (Status::Executing, Some("alice"))
        );
        assert_eq!(got.decided_at, Some(t0));

        // A restart puts an interrupted execution back to approved; expiry takes pending ones.
        drop(store);
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.recover_executing("again".into()).await.unwrap(), 1);
        let later = t0 + chrono::Duration::minutes(6);
        assert_eq!(store.expire_due(later).await.unwrap(), 2);
        let all = store.items(None, 10).await.unwrap();
        assert_eq!(all.len(), 2);
        assert!(all.iter().all(|i| i.status == Status::Expired));
        // Newest first, by insertion when the times are equal.
        assert_eq!(all[0].id, "gi_3");
    }

    #[test]
    fn a_database_from_a_newer_agentdesk_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        drop(SqliteStore::open(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
        drop(conn);
        let err = SqliteStore::open(&path).err().unwrap();
        assert!(err.0.contains("newer"), "{err}");
    }
}
