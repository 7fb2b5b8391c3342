//! The gateway: the interface, path for path, in front of an upstream (the real service or the
//! sandbox). Agents use it as their base URL with their own keys. Reads and everything that cannot
//! change the account are forwarded unchanged and streamed; stagings are captured into the
//! supervisor's inbox ([`inbox`]); an agent's own confirm waits for a human; immediate trades are
//! refused unless the config allows them ([`policy`]). The supervisor API lives under `/gate/v1`
//! ([`api`]).
//!
//! Agents' keys are held in memory only, by the SHA-256 of the key, from their last accepted
//! request: the store and the log see that hash or its first 8 hex digits (the project's key
//! fingerprint), never a key.

// Layers, bottom up; each imports only those above it in this list (the structure tests hold
// it): the vocabulary, the supervisor's rules, the two ports (the store, the upstream), the
// gate's wired state, the flow of a request through them, and the edge that serves it.
pub mod flow;
pub mod gate;
mod http;
pub mod model;
pub mod rules;
pub mod store;
pub mod upstream;

/// The supervisor API's bodies, read strictly (also what the fuzz target reads).
pub use http::bodies as supervisor_bodies;

// What the rest of the program names the gateway's parts by.
pub use flow::link;
pub use gate::{AgentKey, Gate, GateDb, Now, OpenError, TOKEN_PREFIX, mint_token, sha256_hex};
pub use http::{GATEWAY_HEADER, ReadsError, api, page};
pub use model::error::{GateError, Kind};
pub use model::{journal, request, trade};
pub use rules::policy;
pub use upstream::notify;
pub use upstream::{Buffered, Incoming};

use crate::secret::Secret;
use chrono::Utc;
use flow::{guard, reconcile};
use policy::{GateSettings, Policy, PolicyError, SettingsError};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use upstream::Upstream;

pub struct GateConfig {
    pub addr: SocketAddr,
    /// Base URL of the upstream service, e.g. `http://127.0.0.1:8787`.
    pub upstream: String,
    pub db: GateDb,
    /// The gateway's own key for the account, used for the supervisor's reads.
    pub upstream_key: Option<Secret>,
    pub settings: GateSettings,
    /// The `[policy]` of the config; it replaces the stored one at start (journaled when it
    /// differs).
    pub policy: Policy,
    /// The `[[notify]]` destinations.
    pub notify: Vec<notify::Destination>,
    /// The top-level `public_url`: approval links are built on it, and notifications carry one
    /// only when it is set.
    pub public_url: Option<String>,
    pub now: Now,
}

impl GateConfig {
    pub fn new(addr: SocketAddr, upstream: impl Into<String>, db: GateDb) -> Self {
        GateConfig {
            addr,
            upstream: upstream.into(),
            db,
            upstream_key: None,
            settings: GateSettings::default(),
            policy: Policy::default(),
            notify: Vec::new(),
            public_url: None,
            now: Arc::new(Utc::now),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("invalid upstream URL {0:?}: it must start with http:// or https://")]
    Upstream(String),
    #[error("invalid gateway settings: {0}")]
    Settings(#[from] SettingsError),
    #[error("invalid gateway settings: {0}")]
    Policy(#[from] PolicyError),
    #[error("invalid gateway settings: {0}")]
    Notify(#[from] notify::DestinationError),
    #[error("invalid gateway settings: {0}")]
    PublicUrl(#[from] link::PublicUrlError),
    #[error("invalid gateway settings: {0}")]
    Client(#[source] reqwest::Error),
    #[error("invalid gateway settings: {0}")]
    Service(#[from] ReadsError),
    #[error("cannot open the gateway database {path}: {source}")]
    Open { path: String, source: OpenError },
    #[error("cannot open the gateway database {path}: {source}")]
    Recover {
        path: String,
        source: store::StoreError,
    },
    /// The stored policy or the recovered items, as the gateway answers their errors.
    #[error("cannot open the gateway database {path}: {}", .error.message)]
    Prepare { path: String, error: GateError },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// A policy a reload did not put in force; the old one stays.
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// As the gateway answers it.
    #[error("{}", .0.message)]
    Store(GateError),
}

pub struct Gateway;

/// A running gateway.
pub struct Running {
    pub addr: SocketAddr,
    gate: Arc<Gate>,
    shutdown: Option<oneshot::Sender<()>>,
    server: JoinHandle<()>,
    poller: Option<JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(p) = &self.poller {
            p.abort();
        }
    }
}

impl Gateway {
    pub async fn start(config: GateConfig) -> Result<Running, StartError> {
        config.settings.validate()?;
        guard::validate(&config.policy, config.upstream_key.is_some())?;
        for d in &config.notify {
            d.validate()?;
        }
        let public_url = config
            .public_url
            .as_deref()
            .map(link::validate_public_url)
            .transpose()?;
        let upstream = config.upstream.trim().trim_end_matches('/').to_string();
        if !(upstream.starts_with("http://") || upstream.starts_with("https://")) {
            return Err(StartError::Upstream(config.upstream));
        }
        let Ok(upstream_url) = reqwest::Url::parse(&upstream) else {
            return Err(StartError::Upstream(config.upstream));
        };
        let path = path_for_errors(&config.db);
        let store = config.db.open().await.map_err(|source| StartError::Open {
            path: path.clone(),
            source,
        })?;
        // A confirm a stopped gateway had in flight is tried again; the upstream runs a proposal
        // once, so a second confirm cannot execute it twice. On a shared store other instances
        // may be executing right now: only claims older than any live execution are taken over.
        let stale = store
            .shared()
            .then(|| (config.now)() - flow::poll::stale_after(&config.settings));
        store
            .recover_executing(store::Hold::Recovered, stale)
            .await
            .map_err(|source| StartError::Recover { path, source })?;
        let http = reqwest::Client::builder()
            .connect_timeout(config.settings.connect_timeout())
            .user_agent(format!("agentdesk-gateway/{}", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(StartError::Client)?;
        let listener = tokio::net::TcpListener::bind(config.addr)
            .await
            .map_err(|source| StartError::Bind {
                addr: config.addr,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| StartError::Bind {
            addr: config.addr,
            source,
        })?;
        let gate = Arc::new(Gate {
            store,
            upstream: Upstream::new(
                http,
                upstream,
                upstream_url,
                config.upstream_key,
                config.settings.timeout(),
            ),
            settings: config.settings,
            now: config.now,
            addr,
            notifier: notify::Notifier::new(config.notify),
            public_url,
            keys: Mutex::new(HashMap::new()),
            tools: Default::default(),
            connections: Default::default(),
            derived: Default::default(),
            listings: Default::default(),
            stagings: Default::default(),
        });
        guard::set_policy(&gate, &config.policy, "config")
            .await
            .map_err(|error| StartError::Prepare {
                path: path_for_errors(&config.db),
                error,
            })?;
        // Before the first request: an agent's confirm or a supervisor's look at the inbox must
        // meet what the service did, not the stopped gateway's last word.
        reconcile::settle_recovered(&gate)
            .await
            .map_err(|error| StartError::Prepare {
                path: path_for_errors(&config.db),
                error,
            })?;
        let app = http::service(gate.clone())?;
        let (tx, rx) = oneshot::channel::<()>();
        let limits = crate::edge::serve::Limits {
            header_timeout: gate.settings.timeout(),
            max_connections: crate::edge::serve::MAX_CONNECTIONS,
        };
        let server = tokio::spawn(crate::edge::serve::serve(
            listener,
            app,
            limits,
            async move {
                let _ = rx.await;
            },
        ));
        let poller = gate
            .store
            .shared()
            .then(|| tokio::spawn(flow::poll::poll(gate.clone())));
        Ok(Running {
            addr,
            gate,
            shutdown: Some(tx),
            server,
            poller,
        })
    }
}

fn path_for_errors(db: &GateDb) -> String {
    db.shown()
}

impl Running {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Puts a policy in force (a config reload on SIGHUP): refused whole, keeping the old one,
    /// when it is not valid for this gateway.
    pub async fn set_policy(&self, policy: &Policy, by: &str) -> Result<bool, ReloadError> {
        guard::validate(policy, self.gate.upstream.key.is_some())?;
        guard::set_policy(&self.gate, policy, by)
            .await
            .map_err(ReloadError::Store)
    }

    /// Mints a supervisor token (stored hashed; the plain token is returned this once).
    pub async fn mint_token(&self, label: &str) -> Result<Secret, store::StoreError> {
        self.mint_token_as(label, store::Role::Admin).await
    }

    /// Mints a supervisor token with this role.
    pub async fn mint_token_as(
        &self,
        label: &str,
        role: store::Role,
    ) -> Result<Secret, store::StoreError> {
        mint_token(self.gate.store.as_ref(), label, role, self.gate.now()).await
    }

    /// Stops at once, as a `kill -9` would: connections are dropped mid-request, nothing is
    /// cleaned up, and items this instance had claimed stay claimed until another instance (or
    /// the next start) takes them over.
    pub async fn abort(mut self) {
        self.gate.connections.stop.cancel();
        if let Some(p) = self.poller.take() {
            p.abort();
            let _ = p.await;
        }
        self.server.abort();
        let _ = (&mut self.server).await;
    }

    /// Stops accepting requests, lets in-flight ones finish, and closes the database.
    pub async fn shutdown(mut self) {
        // Open MCP streams would hold a graceful shutdown forever.
        self.gate.connections.stop.cancel();
        if let Some(p) = self.poller.take() {
            p.abort();
            let _ = p.await;
        }
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let _ = (&mut self.server).await;
    }
}
