//! What every part of the gateway shares: its state ([`Gate`]), the agents' keys it holds in
//! memory, its clock and its database.

use super::notify;
use super::policy::GateSettings;
use super::store::{self, SqliteStore, Store};
use crate::secret::Secret;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
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
    pub async fn open(&self) -> Result<Arc<dyn Store>, String> {
        let store: Arc<dyn Store> = match self.clone() {
            GateDb::Postgres(url) => Arc::new(
                store::PostgresStore::connect(&url)
                    .await
                    .map_err(|e| e.to_string())?,
            ),
            db => tokio::task::spawn_blocking(move || match db {
                GateDb::File(p) => SqliteStore::open(&p),
                _ => SqliteStore::open_in_memory(),
            })
            .await
            .map_err(|e| e.to_string())?
            .map(Arc::new)
            .map_err(|e| e.to_string())?,
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

/// A caller's key, as the gateway holds it.
#[derive(Clone)]
pub struct AgentKey {
    pub secret: Secret,
    /// SHA-256 (hex) of the key: the agent's identity in the store.
    pub hash: String,
}

impl AgentKey {
    pub fn new(secret: Secret) -> Self {
        let hash = sha256_hex(secret.expose());
        AgentKey { secret, hash }
    }

    /// The project's key fingerprint (the same value as [`Secret::fingerprint`]).
    pub fn fingerprint(&self) -> &str {
        &self.hash[..8]
    }
}

pub fn sha256_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

/// State shared by every request.
pub struct Gate {
    pub store: Arc<dyn Store>,
    pub(super) http: reqwest::Client,
    pub(super) upstream: String,
    /// `upstream` parsed once: each request sets its path and query on a copy instead of parsing
    /// (and IDNA-checking the host of) a whole URL again.
    pub(super) upstream_url: reqwest::Url,
    pub(super) upstream_key: Option<Secret>,
    pub settings: GateSettings,
    pub(super) now: Now,
    pub(super) addr: SocketAddr,
    pub(super) notifier: notify::Notifier,
    pub(super) public_url: Option<String>,
    /// Agents' keys by hash, with when each last made an accepted request. Memory only.
    pub(super) keys: Mutex<HashMap<String, (Secret, DateTime<Utc>)>>,
    /// When the upstream last answered anything (milliseconds since the epoch; 0: never), for
    /// readiness.
    pub(super) upstream_seen: std::sync::atomic::AtomicI64,
    /// The service's tool catalog, as last read.
    pub(super) tools: super::tools::ToolCatalog,
    /// How each agent connects (REST or MCP), memory only.
    pub(super) connections: super::connections::Connections,
    /// What inbox items' models derive from what never changes in them, memory only.
    pub(super) derived: super::items::Derived,
    /// Each listed inbox item's JSON, memory only.
    pub(super) listings: Arc<super::listing::Listings>,
}

impl Gate {
    pub fn now(&self) -> DateTime<Utc> {
        (self.now)()
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
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
    /// store's). False when the agent is not known yet ([`Gate::remember`] it).
    pub(super) fn touch(&self, agent: &str, at: DateTime<Utc>) -> bool {
        match self.lock_keys().get_mut(agent) {
            Some(entry) => {
                entry.1 = at;
                true
            }
            None => false,
        }
    }

    /// Holds the key of an agent whose request the upstream accepted. The first time after a start the agent
    /// is recorded (so the supervisor sees who is connected), and items a supervisor approved while
    /// the key was unknown run now.
    pub(super) async fn remember(self: &Arc<Self>, agent: &AgentKey) {
        let now = self.now();
        {
            let mut keys = self.lock_keys();
            if let Some(entry) = keys.get_mut(&agent.hash) {
                entry.1 = now;
                return;
            }
            keys.insert(agent.hash.clone(), (agent.secret.clone(), now));
        }
        if let Err(e) = self
            .store
            .agent_seen(&agent.hash, agent.fingerprint(), now)
            .await
        {
            tracing::warn!(agent = agent.fingerprint(), "cannot record the agent: {e}");
        }
        let gate = self.clone();
        let hash = agent.hash.clone();
        tokio::spawn(async move {
            if let Err(e) = super::execute::run_waiting(&gate, &hash).await {
                tracing::warn!(
                    agent = &hash[..8],
                    "approved items did not run: {}",
                    e.message
                );
            }
        });
    }
}

/// A new supervisor token: `gst_` + 32 hex digits, stored as its SHA-256.
pub async fn mint_token(
    store: &dyn Store,
    label: &str,
    role: super::store::Role,
    now: DateTime<Utc>,
) -> Result<Secret, String> {
    use rand::RngExt;
    let bytes: [u8; 16] = rand::rng().random();
    let token = format!("{TOKEN_PREFIX}{}", hex::encode(bytes));
    store
        .add_token(&sha256_hex(&token), label, role, now)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Secret::new(token))
}
