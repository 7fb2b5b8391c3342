//! The commands of the `agentdesk` binary, one module each; what they share is here.

pub(crate) mod account;
pub(crate) mod console;
pub(crate) mod gate;
pub(crate) mod keys;
pub(crate) mod serve;

use agentdesk::sandbox::store::Store;
use agentdesk::sandbox::{Settings, SettingsError};
use std::path::{Path, PathBuf};

/// What the commands share failing at: the data directory, the config file, the sandbox's
/// database, the runtime.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SetupError {
    #[error("cannot find a home directory for the data directory; pass --db PATH")]
    NoHome,
    #[error("cannot create the data directory {}: {source}", .dir.display())]
    DataDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read config {}: {source}", .path.display())]
    ReadConfig {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config {}: {source}", .path.display())]
    Settings {
        path: PathBuf,
        source: SettingsError,
    },
    #[error(
        "no database at {}; run `agentdesk serve --db {}` once to create it",
        .0.display(),
        .0.display()
    )]
    NoDatabase(PathBuf),
    #[error("cannot open {}: {source}", .path.display())]
    OpenDatabase {
        path: PathBuf,
        source: rusqlite::Error,
    },
    /// The tokio runtime could not be built.
    #[error("{0}")]
    Runtime(std::io::Error),
}

pub(crate) fn default_db() -> Result<PathBuf, SetupError> {
    let dirs = directories::ProjectDirs::from("dev", "agentdesk", "agentdesk")
        .ok_or(SetupError::NoHome)?;
    let dir = dirs.data_dir();
    std::fs::create_dir_all(dir).map_err(|source| SetupError::DataDir {
        dir: dir.to_path_buf(),
        source,
    })?;
    Ok(dir.join("sandbox.db"))
}

pub(crate) fn db_path(db: Option<PathBuf>) -> Result<PathBuf, SetupError> {
    match db {
        Some(p) => Ok(p),
        None => default_db(),
    }
}

pub(crate) fn load_settings(config: Option<&Path>) -> Result<Settings, SetupError> {
    match config {
        None => Ok(Settings::default()),
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| SetupError::ReadConfig {
                path: path.to_path_buf(),
                source,
            })?;
            Settings::from_toml(&text).map_err(|source| SetupError::Settings {
                path: path.to_path_buf(),
                source,
            })
        }
    }
}

pub(crate) fn open_existing(db: Option<PathBuf>) -> Result<Store, SetupError> {
    let path = db_path(db)?;
    if !path.exists() {
        return Err(SetupError::NoDatabase(path));
    }
    Store::open(&path).map_err(|source| SetupError::OpenDatabase { path, source })
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, SetupError> {
    tokio::runtime::Runtime::new().map_err(SetupError::Runtime)
}

/// How a server writes its log lines (to stderr).
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per line, with the request's span (its id) on every line: for a collector.
    Json,
}

/// The servers (`serve`, `gate`) log to stderr; stdout carries what scripts read.
pub(crate) fn log_to_stderr(default: &str, format: LogFormat) {
    agentdesk::logging::to_stderr(default, matches!(format, LogFormat::Json));
}

/// Says `listening on URL` on stdout (after what `out` holds already), once the stop signals are
/// registered, and returns the wait for one: a supervisor may stop the server as soon as it
/// reads that line.
pub(crate) fn listening(
    mut out: std::io::StdoutLock<'_>,
    url: &str,
) -> impl std::future::Future<Output = ()> + use<> {
    use std::io::Write;
    let stop = shutdown_signal();
    let _ = writeln!(out, "listening on {url}");
    let _ = out.flush();
    stop
}

/// Registers SIGTERM and SIGINT at once and resolves on either. Called before `listening on` is
/// printed: until a handler is registered the default action ends the process without the
/// graceful shutdown, and a supervisor may stop the server as soon as it reads that line.
pub(crate) fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{Signal, SignalKind, signal};
        let term = signal(SignalKind::terminate()).ok();
        let int = signal(SignalKind::interrupt()).ok();
        async fn next(signal: Option<Signal>) {
            match signal {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        async move {
            if term.is_none() && int.is_none() {
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
            tokio::select! {
                _ = next(term) => {}
                _ = next(int) => {}
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}
