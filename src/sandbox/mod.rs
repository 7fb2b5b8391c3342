//! The sandbox: the whole interface on a simulated venue (paper trading), over real HTTP and SQLite.
//! The console starts it in-process when no service is configured; `agentdesk serve` runs it alone.

pub mod backtests;
pub mod bar_cache;
pub mod builder_fee;
pub mod caller;
pub mod clock;
pub mod core;
pub mod data;
pub mod discovery;
pub mod engine;
pub mod error;
pub mod http;
pub mod keys;
pub mod ops;
pub mod payments;
pub mod quota;
pub mod research;
pub mod settings;
pub mod signals;
pub mod store;
pub mod trading;
pub mod venue;

use self::core::{Core, Shared};
use crate::api::Scope;
use crate::secret::Secret;
pub use clock::{Clock, SystemClock, TestClock};
pub use settings::{Settings, SettingsError};
use std::net::SocketAddr;
use std::sync::Arc;
pub use store::DbLocation;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub struct SandboxConfig {
    pub addr: SocketAddr,
    pub db: DbLocation,
    pub settings: Settings,
    pub clock: Arc<dyn Clock>,
}

impl SandboxConfig {
    pub fn new(addr: SocketAddr, db: DbLocation) -> Self {
        SandboxConfig {
            addr,
            db,
            settings: Settings::default(),
            clock: Arc::new(SystemClock),
        }
    }
}

/// A running sandbox.
pub struct Running {
    pub addr: SocketAddr,
    /// The demo account's messengerId.
    pub messenger_id: String,
    /// The demo account's paper wallet address.
    pub wallet: String,
    /// One key per scope, created when the database was new; empty when it already existed (keys
    /// are stored hashed and cannot be shown again).
    pub new_keys: Vec<(Scope, Secret)>,
    /// The private key (`0x` + 64 hex digits) of the demo account's paper wallet, a real secp256k1
    /// key so its owner can sign the builder-fee approval; only when the database was new.
    pub demo_wallet_key: Option<Secret>,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    server: JoinHandle<()>,
    ticker: JoinHandle<()>,
    /// Signal delivery and live strategy evaluation.
    signal_tasks: [JoinHandle<()>; 2],
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot open the database {path}: {source}")]
    Database {
        path: String,
        source: rusqlite::Error,
    },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("invalid sandbox settings: {0}")]
    Settings(SettingsError),
    #[error("cannot create the demo account's keys: {0}")]
    Keys(keys::KeyError),
    /// Reading or repairing what a previous run left (research runs, backtest jobs, the
    /// discovery cache) failed.
    #[error("cannot restore the {what} from the database: {source}")]
    Restore {
        what: &'static str,
        source: rusqlite::Error,
    },
    /// A start-up step panicked or was cancelled.
    #[error("the sandbox failed while starting ({what}): {reason}")]
    Task { what: &'static str, reason: String },
}

impl StartError {
    fn task(what: &'static str) -> impl FnOnce(tokio::task::JoinError) -> StartError {
        move |e| StartError::Task {
            what,
            reason: e.to_string(),
        }
    }

    fn restore(what: &'static str) -> impl FnOnce(rusqlite::Error) -> StartError {
        move |source| StartError::Restore { what, source }
    }
}

pub struct Sandbox;

/// A core just opened (see [`core::Opened`]) and, on a new database, the demo wallet's key.
type OpenedWithWallet = (
    Core,
    store::AccountRow,
    Vec<(Scope, Secret)>,
    Option<Secret>,
);

/// Opens the core; on a new database the demo account gets a real paper wallet, whose private key
/// is returned this once.
fn open_core(
    db: &DbLocation,
    settings: Settings,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<OpenedWithWallet, keys::KeyError> {
    let (core, mut demo, new_keys) = Core::open(db, settings, now)?;
    if new_keys.is_empty() {
        return Ok((core, demo, new_keys, None));
    }
    let (key, address) = keys::new_paper_wallet();
    core.store.set_wallet(demo.id, &address)?;
    demo.wallet = address;
    Ok((core, demo, new_keys, Some(key)))
}

impl Sandbox {
    pub async fn start(config: SandboxConfig) -> Result<Running, StartError> {
        config.settings.validate().map_err(StartError::Settings)?;
        let db = config.db.clone();
        let settings = config.settings.clone();
        let clock = config.clock.clone();
        let (core, demo, new_keys, demo_wallet_key) =
            tokio::task::spawn_blocking(move || open_core(&db, settings, clock.now()))
                .await
                .map_err(StartError::task("opening the database"))?
                .map_err(|e| match e {
                    keys::KeyError::Db(source) => StartError::Database {
                        path: match &config.db {
                            DbLocation::File(p) => p.display().to_string(),
                            DbLocation::Memory => ":memory:".into(),
                        },
                        source,
                    },
                    other => StartError::Keys(other),
                })?;
        let db_path = match &config.db {
            DbLocation::File(p) => p.display().to_string(),
            DbLocation::Memory => ":memory:".into(),
        };
        let shared = Arc::new(
            Shared::new(core, config.clock.clone(), config.settings.clone()).map_err(|source| {
                StartError::Database {
                    path: db_path,
                    source,
                }
            })?,
        );
        // Runs a stopped sandbox left active become stopped.
        shared
            .run_raw(|core, now| research::recover(&mut core.store.conn, now))
            .await
            .map_err(StartError::task("restoring research runs"))?
            .map_err(StartError::restore("research runs"))?;
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
        let app = http::router(shared.clone());
        let limits = crate::edge::serve::Limits {
            header_timeout: std::time::Duration::from_millis(config.settings.request_timeout_ms),
            max_connections: config.settings.max_connections,
        };
        let (tx, rx) = oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            crate::edge::serve::serve(
                listener,
                crate::edge::serve::with_peer(app),
                limits,
                async move {
                    let _ = rx.await;
                },
            )
            .await;
        });
        let ticker = tokio::spawn(core::tick_forever(shared.clone()));
        let signal_tasks = [
            tokio::spawn(signals::delivery_loop(shared.clone())),
            tokio::spawn(signals::strategy_loop(shared.clone())),
        ];
        let jobs = backtests::start_workers(shared.clone(), config.settings.backtest_workers);
        let pending = {
            let jobs = jobs.clone();
            shared
                .run_raw(move |core, _| {
                    core.jobs = Some(jobs);
                    core.store.requeue_jobs()
                })
                .await
                .map_err(StartError::task("requeueing backtest jobs"))?
                .map_err(StartError::restore("backtest jobs"))?
        };
        let cached = shared
            .run_raw(|core, _| core.store.cache_all())
            .await
            .map_err(StartError::task("loading the discovery cache"))?
            .map_err(StartError::restore("discovery cache"))?;
        shared.discovery.load(cached);
        // The default discovery answers are computed ahead of the first request.
        let warm = shared.clone();
        let warmup = config.settings.discovery_warmup;
        tokio::spawn(async move {
            if !warmup {
                return;
            }
            use discovery::{Kind, compute_combos, compute_top_backtests, compute_top_live};
            let _ = discovery::get(
                &warm,
                Kind::TopBacktests,
                "scan".into(),
                compute_top_backtests,
            )
            .await;
            let _ = discovery::get(&warm, Kind::TopLive, "7".into(), compute_top_live).await;
            let _ = discovery::get(&warm, Kind::Combos, "BTC:5m:30".into(), compute_combos).await;
        });
        // Jobs a previous run accepted are finished now; the queue takes what fits, the rest
        // are picked up as it drains.
        tokio::spawn(async move {
            for id in pending {
                if jobs.send(id).await.is_err() {
                    break;
                }
            }
        });
        Ok(Running {
            addr,
            messenger_id: demo.messenger_id,
            wallet: demo.wallet,
            new_keys,
            demo_wallet_key,
            shared,
            shutdown: Some(tx),
            server,
            ticker,
            signal_tasks,
        })
    }
}

/// A sandbox dropped without [`Running::shutdown`] (a test's end, a failed start of what embeds
/// it) still ends its discovery computations, which would otherwise hold a blocking thread, and
/// the runtime's shutdown with it, for as long as a year-long grid takes.
impl Drop for Running {
    fn drop(&mut self) {
        self.shared.discovery.stop();
    }
}

/// Why [`Running::create_key`] made no key.
#[derive(Debug, thiserror::Error)]
pub enum CreateKeyError {
    #[error("{0}")]
    Create(keys::KeyError),
    /// The work under the core's lock panicked or was cancelled.
    #[error("{0}")]
    Task(#[from] tokio::task::JoinError),
}

impl Running {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Creates another key on the demo account (the embedded console uses one with all rights);
    /// `label` shows in `agentdesk keys list`.
    pub async fn create_key(
        &self,
        scope: Scope,
        label: &'static str,
    ) -> Result<Secret, CreateKeyError> {
        let messenger_id = self.messenger_id.clone();
        self.shared
            .run_raw(move |core, now| {
                keys::create_key(&mut core.store, Some(&messenger_id), scope, label, now)
                    .map_err(CreateKeyError::Create)
            })
            .await?
    }

    /// Stops accepting requests, lets in-flight ones finish, and closes the database.
    pub async fn shutdown(mut self) {
        self.shared.discovery.stop();
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.ticker.abort();
        for task in &self.signal_tasks {
            task.abort();
        }
        let _ = (&mut self.server).await;
    }
}
