//! `agentdesk gate`: the supervision gateway, and its tokens, agents and journal.

use super::{LogFormat, SetupError, default_db, listening, log_to_stderr, runtime};
use clap::Subcommand;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct GateArgs {
    #[command(subcommand)]
    command: Option<GateCommand>,
    /// Base URL of the upstream service (the real one, or a sandbox).
    #[arg(long)]
    upstream: Option<String>,
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8788")]
    addr: SocketAddr,
    /// The gateway's SQLite database (inbox, agent names, supervisor tokens). Default: the data
    /// directory's gateway.db.
    #[arg(long)]
    db: Option<PathBuf>,
    /// A PostgreSQL database instead (`postgres://user@host/db`), which several gateway instances
    /// can share; `store = "postgres://..."` in the config's `[gate]` does the same.
    #[arg(long, conflicts_with = "db", value_name = "URL")]
    store: Option<String>,
    /// Name of the environment variable holding the gateway's own key for the account (a
    /// supervisor's mcp:mutate key): the console's reads through the gateway use it.
    #[arg(long)]
    upstream_key_env: Option<String>,
    #[arg(long, value_enum, env = "AGENTDESK_LOG_FORMAT", default_value = "text")]
    log_format: LogFormat,
}

#[derive(Subcommand)]
pub(crate) enum GateCommand {
    /// Mint a supervisor token and print it alone on stdout (it is stored hashed: shown only now).
    Token {
        #[arg(long)]
        db: Option<PathBuf>,
        #[arg(long, conflicts_with = "db", value_name = "URL")]
        store: Option<String>,
        /// Who holds it; shown as the decider of the items it approves or rejects.
        #[arg(long, default_value = "")]
        label: String,
        /// What it may do: a viewer reads; an approver also approves and rejects items; an admin
        /// also mints approval links and changes the policy, standing approvals and the kill
        /// switch. (Whoever opens a link approves through it: the link is the credential.)
        #[arg(long, value_enum, default_value = "approver")]
        role: TokenRole,
    },
    /// Agents seen by the gateway.
    Agent {
        #[command(subcommand)]
        command: GateAgentCommand,
    },
    /// The gateway's hash-chained journal of decisions.
    Journal {
        #[command(subcommand)]
        command: GateJournalCommand,
    },
}

#[derive(Subcommand)]
pub(crate) enum GateJournalCommand {
    /// Check every record's hash and link: prints `journal ok: N records`, or names the first
    /// broken record and exits 1.
    Verify {
        #[arg(long)]
        db: Option<PathBuf>,
        #[arg(long, conflicts_with = "db", value_name = "URL")]
        store: Option<String>,
    },
}

#[derive(Subcommand)]
pub(crate) enum GateAgentCommand {
    /// Give the agent with this key fingerprint (8 hex digits, as the inbox shows) a name.
    Name {
        #[arg(long)]
        db: Option<PathBuf>,
        #[arg(long, conflicts_with = "db", value_name = "URL")]
        store: Option<String>,
        fingerprint: String,
        name: String,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum TokenRole {
    Viewer,
    Approver,
    Admin,
}

impl From<TokenRole> for agentdesk::gateway::store::Role {
    fn from(r: TokenRole) -> Self {
        use agentdesk::gateway::store::Role;
        match r {
            TokenRole::Viewer => Role::Viewer,
            TokenRole::Approver => Role::Approver,
            TokenRole::Admin => Role::Admin,
        }
    }
}

/// Why `agentdesk gate` (or one of its commands) did nothing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GateError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error(transparent)]
    Config(#[from] GateConfigError),
    #[error("--store takes a postgres:// URL, not {0:?}; a SQLite file is --db PATH")]
    StoreNotPostgres(String),
    #[error("no gateway database at {}", .0.display())]
    NoGatewayDatabase(PathBuf),
    #[error("cannot open {store}: {source}")]
    OpenStore {
        store: String,
        source: agentdesk::gateway::OpenError,
    },
    #[error("{0}")]
    Store(#[from] agentdesk::gateway::store::StoreError),
    #[error("{0}")]
    MintToken(#[source] agentdesk::gateway::store::StoreError),
    #[error(
        "{0:?} is not a key fingerprint (8 hex digits, as the inbox and GET /gate/v1/agents show)"
    )]
    NotAFingerprint(String),
    #[error("the name must not be empty")]
    EmptyName,
    #[error("no agent with fingerprint {0} has used this gateway yet")]
    UnknownAgent(String),
    #[error(
        "{matched} agents match {fingerprint}; all are now named {name:?}, give more digits to tell them apart"
    )]
    AmbiguousFingerprint {
        matched: usize,
        fingerprint: String,
        name: String,
    },
    #[error("{0}")]
    JournalBroken(agentdesk::gateway::journal::Broken),
    #[error("--upstream URL is required: the service (or sandbox) the gateway stands in front of")]
    NoUpstream,
    #[error("the environment variable {0} is not set (or empty)")]
    NoUpstreamKey(String),
    #[error("{0}")]
    Start(#[from] agentdesk::gateway::StartError),
}

/// Why the config file's gateway tables could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GateConfigError {
    #[error("cannot read config {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config {}: {source}", .path.display())]
    Invalid { path: PathBuf, source: InvalidTable },
}

/// A gateway table of the config file that does not read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InvalidTable {
    #[error(transparent)]
    Settings(#[from] agentdesk::gateway::policy::SettingsError),
    #[error(transparent)]
    Notify(#[from] agentdesk::gateway::notify::DestinationError),
    #[error(transparent)]
    PublicUrl(#[from] agentdesk::gateway::link::PublicUrlError),
}

/// Why a SIGHUP left the policy as it was.
#[cfg(unix)]
#[derive(Debug, thiserror::Error)]
enum NotReloaded {
    #[error(transparent)]
    Config(#[from] GateConfigError),
    #[error(transparent)]
    Policy(#[from] agentdesk::gateway::ReloadError),
}

/// Where the gateway's state is: `--store URL`, else `--db PATH`, else the config's
/// `[gate] store`, else the data directory's gateway.db.
pub(crate) fn gate_db(
    db: Option<PathBuf>,
    store: Option<String>,
    config: Option<&std::path::Path>,
) -> Result<agentdesk::gateway::GateDb, GateError> {
    use agentdesk::gateway::GateDb;
    if let Some(url) = store {
        let url = url.trim();
        if !agentdesk::gateway::store::postgres::is_url(url) {
            return Err(GateError::StoreNotPostgres(url.to_string()));
        }
        return Ok(GateDb::Postgres(url.to_string()));
    }
    if let Some(p) = db {
        return Ok(GateDb::File(p));
    }
    if let Some(path) = config.filter(|p| p.exists()) {
        let text = read_config(path)?;
        let settings =
            agentdesk::gateway::policy::GateSettings::from_toml(&text).map_err(invalid(path))?;
        if let Some(store) = settings.store {
            return Ok(GateDb::parse(store.trim()));
        }
    }
    Ok(GateDb::File(default_db()?.with_file_name("gateway.db")))
}

/// A gateway store that must exist already (naming agents, verifying the journal).
pub(crate) fn open_gate_store(
    runtime: &tokio::runtime::Runtime,
    db: &agentdesk::gateway::GateDb,
) -> Result<std::sync::Arc<dyn agentdesk::gateway::store::Store>, GateError> {
    if let agentdesk::gateway::GateDb::File(path) = db
        && !path.exists()
    {
        return Err(GateError::NoGatewayDatabase(path.clone()));
    }
    open_store(runtime, db)
}

fn open_store(
    runtime: &tokio::runtime::Runtime,
    db: &agentdesk::gateway::GateDb,
) -> Result<std::sync::Arc<dyn agentdesk::gateway::store::Store>, GateError> {
    runtime
        .block_on(db.open())
        .map_err(|source| GateError::OpenStore {
            store: db.shown(),
            source,
        })
}

/// The config file the gateway reads: --config, else $AGENTDESK_CONFIG, else the config
/// directory's config.toml if there is one.
pub(crate) fn gate_config_path(config: Option<PathBuf>) -> Option<PathBuf> {
    config
        .or_else(|| {
            std::env::var_os(agentdesk::config::ENV_CONFIG)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .or_else(|| {
            agentdesk::config::Dirs::project()
                .and_then(|d| d.config_file)
                .filter(|p| p.exists())
        })
}

pub(crate) fn run(args: GateArgs, config: Option<PathBuf>) -> Result<(), GateError> {
    let runtime = runtime()?;
    let config = gate_config_path(config);
    match args.command {
        Some(GateCommand::Token {
            db,
            store,
            label,
            role,
        }) => {
            let db = gate_db(db, store, config.as_deref())?;
            let store = open_store(&runtime, &db)?;
            let token = runtime
                .block_on(agentdesk::gateway::mint_token(
                    store.as_ref(),
                    label.trim(),
                    role.into(),
                    chrono::Utc::now(),
                ))
                .map_err(GateError::MintToken)?;
            println!("{}", token.expose());
            Ok(())
        }
        Some(GateCommand::Agent {
            command:
                GateAgentCommand::Name {
                    db,
                    store,
                    fingerprint,
                    name,
                },
        }) => {
            let fingerprint = fingerprint.trim().to_ascii_lowercase();
            if fingerprint.len() < 8 || !fingerprint.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(GateError::NotAFingerprint(fingerprint));
            }
            let name = name.trim();
            if name.is_empty() {
                return Err(GateError::EmptyName);
            }
            let db = gate_db(db, store, config.as_deref())?;
            let store = open_gate_store(&runtime, &db)?;
            let n = runtime.block_on(store.name_agent(&fingerprint, name))?;
            match n {
                0 => Err(GateError::UnknownAgent(fingerprint)),
                1 => {
                    println!("agent {fingerprint} is now {name:?}");
                    Ok(())
                }
                matched => Err(GateError::AmbiguousFingerprint {
                    matched,
                    fingerprint,
                    name: name.to_string(),
                }),
            }
        }
        Some(GateCommand::Journal {
            command: GateJournalCommand::Verify { db, store },
        }) => {
            let db = gate_db(db, store, config.as_deref())?;
            let store = open_gate_store(&runtime, &db)?;
            let rows = runtime.block_on(store.journal(0, usize::MAX >> 1))?;
            match agentdesk::gateway::journal::verify(&rows) {
                Ok(n) => {
                    println!("journal ok: {n} records");
                    Ok(())
                }
                Err(broken) => Err(GateError::JournalBroken(broken)),
            }
        }
        None => gate_serve(args, config, runtime),
    }
}

/// The `[gate]`, `[policy]` and `[[notify]]` tables of the config file, if there is one.
pub(crate) fn gate_config(
    path: Option<&std::path::Path>,
) -> Result<
    (
        agentdesk::gateway::rules::policy::GateSettings,
        agentdesk::gateway::rules::policy::Policy,
        Vec<agentdesk::gateway::upstream::notify::Destination>,
        Option<String>,
    ),
    GateConfigError,
> {
    let Some(path) = path else {
        return Ok(Default::default());
    };
    let text = read_config(path)?;
    let (settings, policy) = agentdesk::gateway::policy::GateSettings::with_policy_from_toml(&text)
        .map_err(invalid(path))?;
    let notify = agentdesk::gateway::notify::from_toml(&text).map_err(invalid(path))?;
    let public_url =
        agentdesk::gateway::link::public_url_from_toml(&text).map_err(invalid(path))?;
    Ok((settings, policy, notify, public_url))
}

fn read_config(path: &std::path::Path) -> Result<String, GateConfigError> {
    std::fs::read_to_string(path).map_err(|source| GateConfigError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn invalid<E: Into<InvalidTable>>(
    path: &std::path::Path,
) -> impl FnOnce(E) -> GateConfigError + '_ {
    move |error| GateConfigError::Invalid {
        path: path.to_path_buf(),
        source: error.into(),
    }
}

pub(crate) fn gate_serve(
    args: GateArgs,
    config: Option<PathBuf>,
    runtime: tokio::runtime::Runtime,
) -> Result<(), GateError> {
    use agentdesk::gateway::{GateConfig, Gateway};
    // rmcp logs each session id at INFO: a session id is a credential of its own, kept out of the log.
    log_to_stderr("info,rmcp=warn", args.log_format);
    let upstream = args.upstream.ok_or(GateError::NoUpstream)?;
    // The same file the console reads (resolved by gate_command).
    let (settings, policy, notify, public_url) = gate_config(config.as_deref())?;
    let config_path = config.clone();
    let upstream_key = match args.upstream_key_env {
        None => None,
        Some(var) => Some(agentdesk::secret::Secret::new(
            std::env::var(&var)
                .ok()
                .map(|k| k.trim().to_string())
                .filter(|k| !k.is_empty())
                .ok_or_else(|| GateError::NoUpstreamKey(var.clone()))?,
        )),
    };
    let db = gate_db(args.db, args.store, config.as_deref())?;
    runtime.block_on(async move {
        let mut config = GateConfig::new(args.addr, upstream, db);
        config.settings = settings;
        config.policy = policy;
        config.notify = notify;
        config.public_url = public_url;
        config.upstream_key = upstream_key;
        let running = Arc::new(Gateway::start(config).await?);
        // SIGHUP is caught before `listening on` is printed: until then its default action
        // ends the process, and a supervisor may reload as soon as it reads that line.
        #[cfg(unix)]
        let hup = config_path.clone().and_then(|path| {
            use tokio::signal::unix::{SignalKind, signal};
            signal(SignalKind::hangup()).ok().map(|hup| (path, hup))
        });
        let stop = listening(std::io::stdout().lock(), &running.base_url());
        #[cfg(unix)]
        let reload = hup.map(|(path, mut hup)| {
            let running = running.clone();
            tokio::spawn(async move {
                while hup.recv().await.is_some() {
                    // A bad file keeps the policy in force: the supervisor fixes it and sends
                    // SIGHUP again.
                    let result = match gate_config(Some(&path)) {
                        Ok((_, policy, _, _)) => running
                            .set_policy(&policy, "config reload (SIGHUP)")
                            .await
                            .map_err(NotReloaded::from),
                        Err(e) => Err(NotReloaded::from(e)),
                    };
                    match result {
                        Ok(true) => tracing::info!("policy reloaded from {}", path.display()),
                        Ok(false) => tracing::info!("policy unchanged in {}", path.display()),
                        Err(e) => tracing::error!("policy not reloaded, the old one stays: {e}"),
                    }
                }
            })
        });
        stop.await;
        #[cfg(unix)]
        if let Some(task) = reload {
            task.abort();
            let _ = task.await;
        }
        if let Ok(running) = Arc::try_unwrap(running) {
            running.shutdown().await;
        }
        Ok(())
    })
}
