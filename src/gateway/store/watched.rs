//! Every change to the store, counted, so the supervisor's inbox can be long-polled: `GET
//! /gate/v1/inbox?since=N&wait=S` answers as soon as what it shows may have changed, instead of
//! the console asking every second. A decorator around the real store, so a write path added later
//! cannot forget to tell: each call that changed something (an item staged, decided, executed or
//! expired, an agent named, the kill switch or policy set, a standing approval added or revoked,
//! a journal record) moves the count once it succeeded. Reads, and `agent_seen` (written on every
//! agent request), do not.
//!
//! The count is this process's: on a shared store (PostgreSQL) another instance's writes do not
//! move it, so there a wait is cut short (see `http/api.rs`).

use super::{
    Agent, Counts, Held, Item, ItemRef, JournalRow, Link, Listed, Record, Role, Standing, Status,
    Store, StoreResult, Suspension, Token, Transition,
};
use crate::api::model::Hold;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::watch;

pub struct Watched {
    inner: Arc<dyn Store>,
    version: watch::Sender<u64>,
}

impl Watched {
    pub fn new(inner: Arc<dyn Store>) -> Watched {
        Watched {
            inner,
            version: watch::Sender::new(0),
        }
    }

    fn bump(&self) {
        self.version.send_modify(|v| *v += 1);
    }
}

impl Store for Watched {
    fn shared(&self) -> bool {
        self.inner.shared()
    }

    fn changes(&self) -> Option<watch::Receiver<u64>> {
        Some(self.version.subscribe())
    }

    fn insert_item(&self, item: Item) -> BoxFuture<'_, StoreResult<bool>> {
        let pending = self.inner.insert_item(item);
        Box::pin(async move {
            let changed = pending.await?;
            if changed {
                self.bump();
            }
            Ok(changed)
        })
    }

    fn item(&self, which: ItemRef<'_>) -> BoxFuture<'_, StoreResult<Option<Item>>> {
        self.inner.item(which)
    }

    fn items(&self, status: Option<Status>, limit: usize) -> BoxFuture<'_, StoreResult<Vec<Item>>> {
        self.inner.items(status, limit)
    }

    fn listing(
        &self,
        status: Option<Status>,
        limit: usize,
        held: Held,
    ) -> BoxFuture<'_, StoreResult<Vec<Listed>>> {
        self.inner.listing(status, limit, held)
    }

    fn next_expiry(&self) -> BoxFuture<'_, StoreResult<Option<DateTime<Utc>>>> {
        self.inner.next_expiry()
    }

    fn counts(&self) -> BoxFuture<'_, StoreResult<Counts>> {
        self.inner.counts()
    }

    fn approved_of(&self, agent: &str) -> BoxFuture<'_, StoreResult<Vec<Item>>> {
        self.inner.approved_of(agent)
    }

    fn transition(&self, id: &str, t: Transition) -> BoxFuture<'_, StoreResult<bool>> {
        let pending = self.inner.transition(id, t);
        Box::pin(async move {
            let changed = pending.await?;
            if changed {
                self.bump();
            }
            Ok(changed)
        })
    }

    fn expire_due(&self, now: DateTime<Utc>) -> BoxFuture<'_, StoreResult<usize>> {
        let pending = self.inner.expire_due(now);
        Box::pin(async move {
            let n = pending.await?;
            if n > 0 {
                tracing::info!(expired = n, "items expired before anyone decided them");
                self.bump();
            }
            Ok(n)
        })
    }

    fn recover_executing(
        &self,
        note: Hold,
        claimed_before: Option<DateTime<Utc>>,
    ) -> BoxFuture<'_, StoreResult<usize>> {
        let pending = self.inner.recover_executing(note, claimed_before);
        Box::pin(async move {
            let n = pending.await?;
            if n > 0 {
                tracing::info!(expired = n, "items expired before anyone decided them");
                self.bump();
            }
            Ok(n)
        })
    }

    fn agent_seen(
        &self,
        key_hash: &str,
        fingerprint: &str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'_, StoreResult<Agent>> {
        self.inner.agent_seen(key_hash, fingerprint, now)
    }

    fn set_agent_account(&self, key_hash: &str, account: &str) -> BoxFuture<'_, StoreResult<()>> {
        let pending = self.inner.set_agent_account(key_hash, account);
        Box::pin(async move {
            pending.await?;
            self.bump();
            Ok(())
        })
    }

    fn agents(&self) -> BoxFuture<'_, StoreResult<Vec<Agent>>> {
        self.inner.agents()
    }

    fn name_agent(&self, fingerprint: &str, name: &str) -> BoxFuture<'_, StoreResult<usize>> {
        let pending = self.inner.name_agent(fingerprint, name);
        Box::pin(async move {
            let n = pending.await?;
            if n > 0 {
                tracing::info!(expired = n, "items expired before anyone decided them");
                self.bump();
            }
            Ok(n)
        })
    }

    fn add_token(
        &self,
        hash: &str,
        label: &str,
        role: Role,
        now: DateTime<Utc>,
    ) -> BoxFuture<'_, StoreResult<i64>> {
        self.inner.add_token(hash, label, role, now)
    }

    fn token(&self, hash: &str) -> BoxFuture<'_, StoreResult<Option<Token>>> {
        self.inner.token(hash)
    }

    fn state(&self, key: &str) -> BoxFuture<'_, StoreResult<Option<Value>>> {
        self.inner.state(key)
    }

    fn set_state(&self, key: &str, value: Value, record: Record) -> BoxFuture<'_, StoreResult<()>> {
        let pending = self.inner.set_state(key, value, record);
        Box::pin(async move {
            pending.await?;
            self.bump();
            Ok(())
        })
    }

    fn append(&self, record: Record) -> BoxFuture<'_, StoreResult<JournalRow>> {
        let pending = self.inner.append(record);
        Box::pin(async move {
            let done = pending.await?;
            self.bump();
            Ok(done)
        })
    }

    fn journal(&self, after: i64, limit: usize) -> BoxFuture<'_, StoreResult<Vec<JournalRow>>> {
        self.inner.journal(after, limit)
    }

    fn executed_since(&self, agent: &str, since: DateTime<Utc>) -> BoxFuture<'_, StoreResult<f64>> {
        self.inner.executed_since(agent, since)
    }

    fn executions_since(
        &self,
        agent: &str,
        since: DateTime<Utc>,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        self.inner.executions_since(agent, since)
    }

    fn executed_by_agent(
        &self,
        since: DateTime<Utc>,
    ) -> BoxFuture<'_, StoreResult<Vec<super::Executed>>> {
        self.inner.executed_by_agent(since)
    }

    fn add_executed(
        &self,
        agent: &str,
        at: DateTime<Utc>,
        notional: f64,
    ) -> BoxFuture<'_, StoreResult<()>> {
        let pending = self.inner.add_executed(agent, at, notional);
        Box::pin(async move {
            pending.await?;
            self.bump();
            Ok(())
        })
    }

    fn add_standing(&self, standing: Standing, record: Record) -> BoxFuture<'_, StoreResult<i64>> {
        let pending = self.inner.add_standing(standing, record);
        Box::pin(async move {
            let done = pending.await?;
            self.bump();
            Ok(done)
        })
    }

    fn standings(&self, now: DateTime<Utc>) -> BoxFuture<'_, StoreResult<Vec<Standing>>> {
        self.inner.standings(now)
    }

    fn revoke_standing(&self, id: i64, record: Record) -> BoxFuture<'_, StoreResult<bool>> {
        let pending = self.inner.revoke_standing(id, record);
        Box::pin(async move {
            let changed = pending.await?;
            if changed {
                self.bump();
            }
            Ok(changed)
        })
    }

    fn items_of_standing(&self, id: i64) -> BoxFuture<'_, StoreResult<Vec<Item>>> {
        self.inner.items_of_standing(id)
    }

    fn suspend(&self, s: Suspension, record: Record) -> BoxFuture<'_, StoreResult<bool>> {
        let pending = self.inner.suspend(s, record);
        Box::pin(async move {
            let changed = pending.await?;
            if changed {
                self.bump();
            }
            Ok(changed)
        })
    }

    fn resume(&self, agent: &str, record: Record) -> BoxFuture<'_, StoreResult<bool>> {
        let pending = self.inner.resume(agent, record);
        Box::pin(async move {
            let changed = pending.await?;
            if changed {
                self.bump();
            }
            Ok(changed)
        })
    }

    fn suspensions(&self, agent: Option<&str>) -> BoxFuture<'_, StoreResult<Vec<Suspension>>> {
        self.inner.suspensions(agent)
    }

    fn insert_link(&self, link: Link) -> BoxFuture<'_, StoreResult<()>> {
        self.inner.insert_link(link)
    }

    fn link(&self, token_hash: &str) -> BoxFuture<'_, StoreResult<Option<Link>>> {
        self.inner.link(token_hash)
    }

    fn spend_link(&self, token_hash: &str, now: DateTime<Utc>) -> BoxFuture<'_, StoreResult<bool>> {
        self.inner.spend_link(token_hash, now)
    }

    fn unspend_link(&self, token_hash: &str) -> BoxFuture<'_, StoreResult<()>> {
        self.inner.unspend_link(token_hash)
    }
}
