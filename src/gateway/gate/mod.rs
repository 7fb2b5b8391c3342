//! The gate: the gateway's parts wired together ([`Gate`]) — the store, the upstream, the
//! settings, the notifier, the clock — and the agents' keys it holds in memory. Holds state, not
//! logic: what happens to a request is [`super::flow`]'s.

pub mod memory;

use super::model::connections::Connections;
pub use super::model::key::{AgentKey, sha256_hex};
use super::rules::policy::GateSettings;
use super::rules::tools::ToolCatalog;
use super::store::{self, SqliteStore, Store};
use super::upstream::Upstream;
use super::upstream::notify;
use crate::secret::Secret;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Supervisor tokens start with this, so an agent's key is never looked up as a token.
pub const TOKEN_PREFIX: &str = "gst_";

/// The gateway's idea of now. Proposals expire by the upstream's clock, so tests that run the
/// sandbox on a test clock give the gateway the same clock.
pub type Now = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

#[derive(Debug, Clone)]
pub enum GateDb {
    File(PathBuf),
    /// Gone when the gateway stops; for tests and throwaway runs.
    Memory,
    /// A PostgreSQL URL (`postgres://user@host/db`): one database shared by several instances.
    Postgres(String),
}

/// Why the store did not open.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// The blocking task that opens a SQLite file died.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
}

impl GateDb {
    /// `postgres://` and `postgresql://` URLs name a PostgreSQL database, anything else a SQLite
    /// file.
    pub fn parse(s: &str) -> GateDb {
        if store::postgres::is_url(s) {
            GateDb::Postgres(s.to_string())
        } else {
            GateDb::File(PathBuf::from(s))
        }
    }

    /// Opens the store and brings its schema to this version.
    pub async fn open(&self) -> Result<Arc<dyn Store>, OpenError> {
        let store: Arc<dyn Store> = match self.clone() {
            GateDb::Postgres(url) => Arc::new(store::PostgresStore::connect(&url).await?),
            db => tokio::task::spawn_blocking(move || match db {
                GateDb::File(p) => SqliteStore::open(&p),
                _ => SqliteStore::open_in_memory(),
            })
            .await?
            .map(Arc::new)?,
        };
        Ok(Arc::new(store::Watched::new(store)))
    }
}

impl GateDb {
    /// The file path or the URL without its password, for messages.
    pub fn shown(&self) -> String {
        match self {
            GateDb::File(p) => p.display().to_string(),
            GateDb::Memory => ":memory:".into(),
            GateDb::Postgres(url) => store::postgres::redact(url),
        }
    }
}

/// State shared by every request.
pub struct Gate {
    pub store: Arc<dyn Store>,
    pub upstream: Upstream,
    pub settings: GateSettings,
    pub(super) now: Now,
    pub(super) addr: SocketAddr,
    pub(super) notifier: notify::Notifier,
    pub(super) public_url: Option<String>,
    /// Agents' keys by hash, with when each last made an accepted request. Memory only.
    pub(super) keys: Mutex<HashMap<String, (Secret, DateTime<Utc>)>>,
    /// The service's tool catalog, as last read.
    pub(super) tools: ToolCatalog,
    /// How each agent connects (REST or MCP), memory only.
    pub(super) connections: Connections,
    /// What inbox items' models derive from what never changes in them, memory only.
    pub(super) derived: memory::Derived,
    /// Each listed inbox item's JSON, memory only.
    pub(super) listings: Arc<memory::Listings>,
    /// Each agent's recent stagings and immediate trades, memory only.
    pub(super) stagings: memory::Stagings,
}

impl Gate {
    pub fn now(&self) -> DateTime<Utc> {
        (self.now)()
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The agent's stagings and immediate trades in the 60 s before `now`; with `record`, this
    /// one is counted from now on.
    pub(super) fn stagings_in_last_minute(&self, agent: &str, record: bool) -> u64 {
        self.stagings.count(agent, self.now(), record)
    }

    pub(super) fn key_of(&self, agent: &str) -> Option<Secret> {
        self.lock_keys().get(agent).map(|(k, _)| k.clone())
    }

    /// Whether the upstream accepted this agent's key since the start; no copy of the key is made.
    pub(super) fn knows(&self, agent: &str) -> bool {
        self.lock_keys().contains_key(agent)
    }

    pub(super) fn last_seen(&self, agent: &str) -> Option<DateTime<Utc>> {
        self.lock_keys().get(agent).map(|(_, t)| *t)
    }

    pub(super) fn lock_keys(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, (Secret, DateTime<Utc>)>> {
        self.keys.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes an accepted request of an agent the gateway knows: its time, updated in place, with
    /// no allocation and no store write (an agent's last request is the memory's, not the
    /// store's). False when the agent is not known yet ([`crate::gateway::flow::forward::remember`] it).
    pub(super) fn touch(&self, agent: &str, at: DateTime<Utc>) -> bool {
        match self.lock_keys().get_mut(agent) {
            Some(entry) => {
                entry.1 = at;
                true
            }
            None => false,
        }
    }
}

impl Gate {
    /// Holds an accepted agent's key, noting the time. True the first time since the start (the
    /// caller records the agent), false when it was held already.
    pub fn hold_key(&self, agent: &AgentKey) -> bool {
        let now = self.now();
        let mut keys = self.lock_keys();
        if let Some(entry) = keys.get_mut(&agent.hash) {
            entry.1 = now;
            return false;
        }
        keys.insert(agent.hash.clone(), (agent.secret.clone(), now));
        true
    }
}

/// A new supervisor token: `gst_` + 32 hex digits, stored as its SHA-256.
pub async fn mint_token(
    store: &dyn Store,
    label: &str,
    role: store::Role,
    now: DateTime<Utc>,
) -> Result<Secret, store::StoreError> {
    use rand::RngExt;
    let bytes: [u8; 16] = rand::rng().random();
    let token = format!("{TOKEN_PREFIX}{}", hex::encode(bytes));
    store
        .add_token(&sha256_hex(&token), label, role, now)
        .await?;
    Ok(Secret::new(token))
}
