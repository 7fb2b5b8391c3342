//! The shared store: one PostgreSQL database behind several gateway instances (tokio-postgres with a
//! deadpool pool, over TLS as the URL's `sslmode` says: see [`tls`]).
//!
//! Everything that must happen once is decided by the database, never by a lock in this process:
//! a status change is a conditional `UPDATE ... WHERE status IN (...)` (a concurrent one waits for
//! the row and then finds the status changed), and a journal append locks the chain's head row
//! (`journal_head ... FOR UPDATE`), so appends from every instance queue and the chain never forks.
//! Lock order is always item rows first, the chain head last, so these cannot deadlock.

mod inbox;
mod pipelined;
mod rows;
mod schema;
mod suspensions;
pub mod tls;

use crate::api::model::Hold;
use rows::*;
pub use rows::{is_url, redact};

use super::{
    Agent, Counts, Executed, Held, Item, ItemRef, JournalRow, Link, Listed, Record, Role, Standing,
    Status, Store, StoreError, StoreResult, Suspension, Token, Transition,
};
use crate::gateway::model::journal;
use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use futures::future::BoxFuture;
use schema::MIGRATIONS;
pub use schema::{FreshSchemaError, fresh_schema};
use serde_json::Value;

/// Connections per instance: enough for a burst of concurrent decisions, few enough that several
/// instances stay under the server's default `max_connections` (100).
const POOL_SIZE: usize = 16;

#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
}

/// The pool's settings that could not be used.
fn config(e: impl std::fmt::Display) -> StoreError {
    StoreError::Config(e.to_string())
}

impl PostgresStore {
    /// Connects (the pool opens connections as they are needed; one is opened now to migrate) and
    /// brings the schema to this version. Several instances starting at once migrate one at a time.
    pub async fn connect(url: &str) -> StoreResult<PostgresStore> {
        let target = tls::target(url).map_err(StoreError::Target)?;
        let manager = Manager::from_config(
            target.config,
            target.tls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .create_timeout(Some(std::time::Duration::from_secs(10)))
            .wait_timeout(Some(std::time::Duration::from_secs(30)))
            .build()
            .map_err(config)?;
        let store = PostgresStore { pool };
        store.migrate().await?;
        Ok(store)
    }

    async fn migrate(&self) -> StoreResult<()> {
        let mut c = self.pool.get().await?;
        let tx = c.transaction().await?;
        // Per schema, so databases holding several gateways' schemas migrate them independently.
        tx.execute(
            &tx.prepare_cached(
                "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.agentdesk_gateway'))",
            )
            .await?,
            &[],
        )
        .await?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (
                 version INTEGER PRIMARY KEY,
                 applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
             )",
        )
        .await?;
        let version: i32 = tx
            .query_one(
                &tx.prepare_cached("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
                    .await?,
                &[],
            )
            .await?
            .try_get(0)?;
        if version as usize > MIGRATIONS.len() {
            return Err(StoreError::NewerSchema {
                found: i64::from(version),
                known: MIGRATIONS.len(),
            });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            tx.batch_execute(sql).await?;
            tx.execute(
                &tx.prepare_cached("INSERT INTO schema_migrations (version) VALUES ($1)")
                    .await?,
                &[&((i + 1) as i32)],
            )
            .await?;
        }
        tx.execute(
            &tx.prepare_cached("INSERT INTO journal_head (one, seq, hash) VALUES (TRUE, 0, $1) ON CONFLICT DO NOTHING").await?,
            &[&journal::GENESIS],
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    fn run<'a, T, F, Fut>(&'a self, f: F) -> BoxFuture<'a, StoreResult<T>>
    where
        T: Send + 'a,
        F: FnOnce(deadpool_postgres::Object) -> Fut + Send + 'a,
        Fut: std::future::Future<Output = StoreResult<T>> + Send + 'a,
    {
        Box::pin(async move {
            let c = self.pool.get().await?;
            f(c).await
        })
    }
}

impl Store for PostgresStore {
    fn shared(&self) -> bool {
        true
    }

    fn insert_item(&self, item: Item) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c| async move {
            let n = c
                .execute(
                    &c.prepare_cached(&format!(
                        "INSERT INTO items ({ITEM_COLUMNS}) VALUES \
                         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
                          $17, $18, $19, $20, $21, $22, $23) ON CONFLICT DO NOTHING"
                    ))
                    .await?,
                    &[
                        &item.id,
                        &item.agent,
                        &item.account,
                        &item.kind,
                        &item.exec.as_str(),
                        &item.proposal_id,
                        &item.confirm_token,
                        &item.request,
                        &item.preview,
                        &item.expires_at,
                        &item.created_at,
                        &item.status.as_str(),
                        &item.decided_at,
                        &item.decided_by,
                        &item.reason,
                        &item.result.as_ref().map(super::Execution::json),
                        &item.note.as_ref().map(Hold::to_string),
                        &item.notional,
                        &serde_json::to_value(&item.verdicts).unwrap_or_default(),
                        &item.standing,
                        &serde_json::to_value(&item.approvals).unwrap_or_default(),
                        &i32::try_from(item.approvals_required).unwrap_or(i32::MAX),
                        &item.staged_by,
                    ],
                )
                .await?;
            Ok(n == 1)
        })
    }

    fn item(&self, which: ItemRef<'_>) -> BoxFuture<'_, StoreResult<Option<Item>>> {
        let (clause, value) = match which {
            ItemRef::IdOrProposal(v) => ("id = $1 OR proposal_id = $1", v.to_string()),
            ItemRef::Proposal(v) => ("proposal_id = $1", v.to_string()),
            ItemRef::ConfirmToken(v) => ("confirm_token = $1", v.to_string()),
        };
        self.run(move |c| async move {
            c.query_opt(
                &c.prepare_cached(&format!(
                    "SELECT {ITEM_COLUMNS} FROM items WHERE {clause} LIMIT 1"
                ))
                .await?,
                &[&value],
            )
            .await?
            .as_ref()
            .map(item_row)
            .transpose()
        })
    }

    fn items(&self, status: Option<Status>, limit: usize) -> BoxFuture<'_, StoreResult<Vec<Item>>> {
        self.run(move |c| async move {
            let status = status.map(Status::as_str);
            items_of(
                c.query(
                    &c.prepare_cached(&format!(
                        "SELECT {ITEM_COLUMNS} FROM items WHERE $1::text IS NULL OR status = $1
                         ORDER BY created_at DESC, seq DESC LIMIT $2"
                    ))
                    .await?,
                    &[&status, &(limit.min(i64::MAX as usize) as i64)],
                )
                .await?,
            )
        })
    }

    fn listing(
        &self,
        status: Option<Status>,
        limit: usize,
        held: Held,
    ) -> BoxFuture<'_, StoreResult<Vec<Listed>>> {
        self.run(move |c| inbox::listing(c, status, limit, held))
    }

    fn next_expiry(&self) -> BoxFuture<'_, StoreResult<Option<DateTime<Utc>>>> {
        self.run(inbox::next_expiry)
    }

    fn counts(&self) -> BoxFuture<'_, StoreResult<Counts>> {
        self.run(|c| async move {
            let mut counts = Counts::default();
            for (sql, into) in [
                (
                    "SELECT status, COUNT(*) FROM items GROUP BY status",
                    &mut counts.items,
                ),
                (
                    "SELECT kind, COUNT(*) FROM journal GROUP BY kind",
                    &mut counts.journal,
                ),
            ] {
                for row in c.query(&c.prepare_cached(sql).await?, &[]).await? {
                    into.push((row.get(0), row.get(1)));
                }
            }
            Ok(counts)
        })
    }

    fn approved_of(&self, agent: &str) -> BoxFuture<'_, StoreResult<Vec<Item>>> {
        let agent = agent.to_string();
        self.run(move |c| async move {
            items_of(
                c.query(
                    &c.prepare_cached(&format!(
                        "SELECT {ITEM_COLUMNS} FROM items WHERE agent = $1 AND status = 'approved'
                         ORDER BY created_at, seq"
                    ))
                    .await?,
                    &[&agent],
                )
                .await?,
            )
        })
    }

    fn transition(&self, id: &str, t: Transition) -> BoxFuture<'_, StoreResult<bool>> {
        let id = id.to_string();
        self.run(move |c| pipelined::transition(c, id, t))
    }

    fn expire_due(&self, now: DateTime<Utc>) -> BoxFuture<'_, StoreResult<usize>> {
        self.run(move |mut c| async move {
            // Most calls find nothing: look before locking anything.
            let due: i64 = c
                .query_one(
                    &c.prepare_cached(
                        "SELECT COUNT(*) FROM items
                     WHERE status IN ('pending', 'approved') AND expires_at <= $1",
                    )
                    .await?,
                    &[&now],
                )
                .await?
                .try_get(0)?;
            if due == 0 {
                return Ok(0);
            }
            let tx = c.transaction().await?;
            // The rows are locked in one order; an instance expiring at the same time waits, then
            // re-checks each row and skips those this one expired, so each is journaled once.
            let rows = tx
                .query(
                    &tx.prepare_cached(
                        "WITH due AS (
                         SELECT id, status, expires_at, seq FROM items
                         WHERE status IN ('pending', 'approved') AND expires_at <= $1
                         ORDER BY expires_at, seq FOR UPDATE
                     )
                     UPDATE items SET status = 'expired', decided_at = items.expires_at, note = NULL
                     FROM due WHERE items.id = due.id
                     RETURNING due.id, due.status, due.expires_at, due.seq",
                    )
                    .await?,
                    &[&now],
                )
                .await?;
            let mut expired: Vec<(String, String, DateTime<Utc>, i64)> = rows
                .iter()
                .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?)))
                .collect::<StoreResult<_>>()?;
            expired.sort_by_key(|(_, _, at, seq)| (*at, *seq));
            for (id, was, at, _) in &expired {
                let record =
                    Record::new("expire", "gateway", *at, super::detail::Expired { was }).item(id);
                append_in(&tx, &record).await?;
            }
            tx.commit().await?;
            Ok(expired.len())
        })
    }

    fn recover_executing(
        &self,
        note: Hold,
        claimed_before: Option<DateTime<Utc>>,
    ) -> BoxFuture<'_, StoreResult<usize>> {
        self.run(move |c| async move {
            let n = c
                .execute(
                    &c.prepare_cached(
                        "UPDATE items SET status = 'approved', note = $1
                     WHERE status = 'executing'
                       AND ($2::timestamptz IS NULL OR claimed_at IS NULL OR claimed_at < $2)",
                    )
                    .await?,
                    &[&note.to_string(), &claimed_before],
                )
                .await?;
            Ok(n as usize)
        })
    }

    fn agent_seen(
        &self,
        key_hash: &str,
        fingerprint: &str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'_, StoreResult<Agent>> {
        let (key_hash, fingerprint) = (key_hash.to_string(), fingerprint.to_string());
        self.run(move |c| async move {
            let row = c
                .query_one(
                    &c.prepare_cached(&format!(
                        "INSERT INTO agents (key_hash, fingerprint, first_seen, last_seen)
                         VALUES ($1, $2, $3, $3)
                         ON CONFLICT (key_hash) DO UPDATE SET last_seen = excluded.last_seen
                         RETURNING {AGENT_COLUMNS}"
                    ))
                    .await?,
                    &[&key_hash, &fingerprint, &now],
                )
                .await?;
            agent_row(&row)
        })
    }

    fn set_agent_account(&self, key_hash: &str, account: &str) -> BoxFuture<'_, StoreResult<()>> {
        let (key_hash, account) = (key_hash.to_string(), account.to_string());
        self.run(move |c| async move {
            c.execute(
                &c.prepare_cached("UPDATE agents SET account = $2 WHERE key_hash = $1")
                    .await?,
                &[&key_hash, &account],
            )
            .await?;
            c.execute(
                &c.prepare_cached(
                    "UPDATE items SET account = $2 WHERE agent = $1 AND account IS NULL",
                )
                .await?,
                &[&key_hash, &account],
            )
            .await?;
            Ok(())
        })
    }

    fn agents(&self) -> BoxFuture<'_, StoreResult<Vec<Agent>>> {
        self.run(|c| async move {
            c.query(
                &c.prepare_cached(&format!(
                    "SELECT {AGENT_COLUMNS} FROM agents ORDER BY first_seen, fingerprint"
                ))
                .await?,
                &[],
            )
            .await?
            .iter()
            .map(agent_row)
            .collect()
        })
    }

    fn name_agent(&self, fingerprint: &str, name: &str) -> BoxFuture<'_, StoreResult<usize>> {
        let (fingerprint, name) = (fingerprint.to_ascii_lowercase(), name.to_string());
        self.run(move |c| async move {
            let n = c
                .execute(
                    &c.prepare_cached(
                        "UPDATE agents SET name = $2 WHERE left(key_hash, length($1)) = $1",
                    )
                    .await?,
                    &[&fingerprint, &name],
                )
                .await?;
            Ok(n as usize)
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
        self.run(move |c| async move {
            Ok(c.query_one(
                &c.prepare_cached("INSERT INTO supervisor_tokens (token_hash, label, role, created_at) VALUES ($1, $2, $3, $4)
                 RETURNING id").await?,
                &[&hash, &label, &role.as_str(), &now],
            )
            .await?
            .try_get(0)?)
        })
    }

    fn token(&self, hash: &str) -> BoxFuture<'_, StoreResult<Option<Token>>> {
        let hash = hash.to_string();
        self.run(move |c| async move {
            c.query_opt(
                &c.prepare_cached(
                    "SELECT id, label, created_at, role FROM supervisor_tokens WHERE token_hash = $1",
                )
                .await?,
                &[&hash],
            )
            .await?
            .map(|r| {
                Ok(Token {
                    id: r.try_get(0)?,
                    label: r.try_get(1)?,
                    created_at: r.try_get(2)?,
                    // A role this binary does not know (a newer one's) gets the least power.
                    role: Role::parse(r.try_get::<_, &str>(3)?).unwrap_or(Role::Viewer),
                })
            })
            .transpose()
        })
    }

    fn state(&self, key: &str) -> BoxFuture<'_, StoreResult<Option<Value>>> {
        let key = key.to_string();
        self.run(move |c| async move {
            c.query_opt(
                &c.prepare_cached("SELECT value FROM gate_state WHERE key = $1")
                    .await?,
                &[&key],
            )
            .await?
            .map(|r| Ok(r.try_get(0)?))
            .transpose()
        })
    }

    fn set_state(&self, key: &str, value: Value, record: Record) -> BoxFuture<'_, StoreResult<()>> {
        let key = key.to_string();
        self.run(move |mut c| async move {
            let tx = c.transaction().await?;
            tx.execute(
                &tx.prepare_cached(
                    "INSERT INTO gate_state (key, value) VALUES ($1, $2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                )
                .await?,
                &[&key, &value],
            )
            .await?;
            append_in(&tx, &record).await?;
            tx.commit().await?;
            Ok(())
        })
    }

    fn append(&self, record: Record) -> BoxFuture<'_, StoreResult<JournalRow>> {
        self.run(move |mut c| async move {
            let tx = c.transaction().await?;
            let row = append_in(&tx, &record).await?;
            tx.commit().await?;
            Ok(row)
        })
    }

    fn journal(&self, after: i64, limit: usize) -> BoxFuture<'_, StoreResult<Vec<JournalRow>>> {
        self.run(move |c| async move {
            c.query(
                &c.prepare_cached(
                    "SELECT seq, at, kind, actor, item, detail, prev_hash, hash FROM journal
                 WHERE seq > $1 ORDER BY seq LIMIT $2",
                )
                .await?,
                &[&after, &(limit.min(i64::MAX as usize) as i64)],
            )
            .await?
            .iter()
            .map(journal_row)
            .collect()
        })
    }

    fn executed_since(&self, agent: &str, since: DateTime<Utc>) -> BoxFuture<'_, StoreResult<f64>> {
        let agent = agent.to_string();
        self.run(move |c| async move {
            Ok(c.query_one(
                &c.prepare_cached(
                    "SELECT COALESCE(SUM(notional), 0)::DOUBLE PRECISION FROM executed
                 WHERE agent = $1 AND at >= $2",
                )
                .await?,
                &[&agent, &since],
            )
            .await?
            .try_get(0)?)
        })
    }

    fn executions_since(
        &self,
        agent: &str,
        since: DateTime<Utc>,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        let agent = agent.to_string();
        self.run(move |c| async move {
            let n: i64 = c
                .query_one(
                    &c.prepare_cached(
                        "SELECT COUNT(*) FROM executed WHERE agent = $1 AND at >= $2",
                    )
                    .await?,
                    &[&agent, &since],
                )
                .await?
                .try_get(0)?;
            Ok(n.max(0) as u64)
        })
    }

    fn executed_by_agent(&self, since: DateTime<Utc>) -> BoxFuture<'_, StoreResult<Vec<Executed>>> {
        self.run(move |c| async move {
            let sql = "SELECT agent, COUNT(*), COALESCE(SUM(notional), 0)::DOUBLE PRECISION
                 FROM executed WHERE at >= $1 GROUP BY agent";
            let rows = c.query(&c.prepare_cached(sql).await?, &[&since]).await?;
            rows.iter()
                .map(|r| {
                    Ok(Executed {
                        agent: r.try_get(0)?,
                        count: r.try_get::<_, i64>(1)?.max(0) as u64,
                        notional: r.try_get(2)?,
                    })
                })
                .collect()
        })
    }

    fn add_executed(
        &self,
        agent: &str,
        at: DateTime<Utc>,
        notional: f64,
    ) -> BoxFuture<'_, StoreResult<()>> {
        let agent = agent.to_string();
        self.run(move |c| async move {
            c.execute(
                &c.prepare_cached("INSERT INTO executed (agent, at, notional) VALUES ($1, $2, $3)")
                    .await?,
                &[&agent, &at, &notional],
            )
            .await?;
            Ok(())
        })
    }

    fn add_standing(&self, st: Standing, record: Record) -> BoxFuture<'_, StoreResult<i64>> {
        self.run(move |mut c| async move {
            let tx = c.transaction().await?;
            let coins = Value::from(st.coins.clone());
            let id: i64 = tx
                .query_one(
                    &tx.prepare_cached(
                        "INSERT INTO standing_approvals
                     (agent, coins, max_notional_usd, expires_at, reason, created_by, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
                    )
                    .await?,
                    &[
                        &st.agent,
                        &coins,
                        &st.max_notional_usd,
                        &st.expires_at,
                        &st.reason,
                        &st.created_by,
                        &st.created_at,
                    ],
                )
                .await?
                .try_get(0)?;
            let mut record = record;
            record.detail["id"] = Value::from(id);
            append_in(&tx, &record).await?;
            tx.commit().await?;
            Ok(id)
        })
    }

    fn standings(&self, now: DateTime<Utc>) -> BoxFuture<'_, StoreResult<Vec<Standing>>> {
        self.run(move |c| async move {
            c.query(
                &c.prepare_cached(&format!(
                    "SELECT {STANDING_COLUMNS} FROM standing_approvals
                     WHERE revoked_at IS NULL AND expires_at > $1 ORDER BY id"
                ))
                .await?,
                &[&now],
            )
            .await?
            .iter()
            .map(standing_row)
            .collect()
        })
    }

    fn revoke_standing(&self, id: i64, record: Record) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |mut c| async move {
            let tx = c.transaction().await?;
            let n = tx
                .execute(
                    &tx.prepare_cached(
                        "UPDATE standing_approvals SET revoked_at = $2
                     WHERE id = $1 AND revoked_at IS NULL AND expires_at > $2",
                    )
                    .await?,
                    &[&id, &record.at],
                )
                .await?;
            if n == 1 {
                append_in(&tx, &record).await?;
            }
            tx.commit().await?;
            Ok(n == 1)
        })
    }

    fn items_of_standing(&self, id: i64) -> BoxFuture<'_, StoreResult<Vec<Item>>> {
        self.run(move |c| async move {
            items_of(
                c.query(
                    &c.prepare_cached(&format!(
                        "SELECT {ITEM_COLUMNS} FROM items WHERE standing = $1
                         ORDER BY created_at DESC, seq DESC"
                    ))
                    .await?,
                    &[&id],
                )
                .await?,
            )
        })
    }

    fn suspend(&self, s: Suspension, record: Record) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c| suspensions::suspend(c, s, record))
    }

    fn resume(&self, agent: &str, record: Record) -> BoxFuture<'_, StoreResult<bool>> {
        let agent = agent.to_string();
        self.run(move |c| suspensions::resume(c, agent, record))
    }

    fn suspensions(&self, agent: Option<&str>) -> BoxFuture<'_, StoreResult<Vec<Suspension>>> {
        let agent = agent.map(str::to_string);
        self.run(move |c| suspensions::suspensions(c, agent))
    }

    fn insert_link(&self, link: Link) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c| async move {
            c.execute(
                &c.prepare_cached(
                    "INSERT INTO approval_links (token_hash, item_id, label, csrf, expires_at, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .await?,
                &[
                    &link.token_hash,
                    &link.item_id,
                    &link.label,
                    &link.csrf,
                    &link.expires_at,
                    &link.created_at,
                ],
            )
            .await?;
            Ok(())
        })
    }

    fn link(&self, token_hash: &str) -> BoxFuture<'_, StoreResult<Option<Link>>> {
        let hash = token_hash.to_string();
        self.run(move |c| async move {
            c.query_opt(
                &c.prepare_cached(
                    "SELECT token_hash, item_id, label, csrf, expires_at, created_at, spent_at
                     FROM approval_links WHERE token_hash = $1",
                )
                .await?,
                &[&hash],
            )
            .await?
            .map(|r| {
                Ok(Link {
                    token_hash: r.try_get(0)?,
                    item_id: r.try_get(1)?,
                    label: r.try_get(2)?,
                    csrf: r.try_get(3)?,
                    expires_at: r.try_get(4)?,
                    created_at: r.try_get(5)?,
                    spent_at: r.try_get(6)?,
                })
            })
            .transpose()
        })
    }

    fn spend_link(&self, token_hash: &str, now: DateTime<Utc>) -> BoxFuture<'_, StoreResult<bool>> {
        let hash = token_hash.to_string();
        // One conditional UPDATE: of concurrent spends on any instance, the database lets one win.
        self.run(move |c| async move {
            Ok(c.execute(
                &c.prepare_cached(
                    "UPDATE approval_links SET spent_at = $2 WHERE token_hash = $1 AND spent_at IS NULL",
                )
                .await?,
                &[&hash, &now],
            )
            .await?
                == 1)
        })
    }

    fn unspend_link(&self, token_hash: &str) -> BoxFuture<'_, StoreResult<()>> {
        let hash = token_hash.to_string();
        self.run(move |c| async move {
            c.execute(
                &c.prepare_cached(
                    "UPDATE approval_links SET spent_at = NULL WHERE token_hash = $1",
                )
                .await?,
                &[&hash],
            )
            .await?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_kept_out_of_messages() {
        assert_eq!(
            redact("postgres://gate:s3cret@db.internal:5432/desk?sslmode=disable"),
            "postgres://gate:***@db.internal:5432/desk?sslmode=disable"
        );
        assert_eq!(
            redact("postgres://gate@127.0.0.1/desk"),
            "postgres://gate@127.0.0.1/desk"
        );
        assert_eq!(redact("postgresql://a:b@h"), "postgresql://a:***@h");
        assert!(is_url("postgresql://h/db") && !is_url("/var/lib/gateway.db"));
    }
}
