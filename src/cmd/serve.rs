//! `agentdesk serve` (the sandbox alone) and `agentdesk standin` (the deployment's shapes).

use super::{LogFormat, SetupError, db_path, listening, load_settings, log_to_stderr, runtime};
use agentdesk::sandbox::{DbLocation, Sandbox, SandboxConfig};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(clap::Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8787")]
    addr: SocketAddr,
    /// SQLite database; created with a demo account if missing. Default: the data directory.
    #[arg(long)]
    db: Option<PathBuf>,
    #[arg(long, value_enum, env = "AGENTDESK_LOG_FORMAT", default_value = "text")]
    log_format: LogFormat,
}

/// Why `agentdesk serve` or `agentdesk standin` did not serve.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ServeError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("{0}")]
    Sandbox(#[from] agentdesk::sandbox::StartError),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

pub(crate) fn run(args: ServeArgs, config: Option<PathBuf>) -> Result<(), ServeError> {
    // Warnings, and one line for every mutation (staging, execution, order, cancel).
    log_to_stderr("warn,agentdesk::sandbox::ops=info", args.log_format);
    let settings = load_settings(config.as_deref())?;
    let db = db_path(args.db)?;
    let runtime = runtime()?;
    runtime.block_on(async move {
        let mut config = SandboxConfig::new(args.addr, DbLocation::File(db.clone()));
        config.settings = settings;
        let running = Sandbox::start(config).await?;
        let mut out = std::io::stdout().lock();
        if !running.new_keys.is_empty() {
            let _ = writeln!(
                out,
                "new database {}: demo account {} (paper wallet {}) with one key per scope (shown only now):",
                db.display(),
                running.messenger_id,
                running.wallet
            );
            for (scope, key) in &running.new_keys {
                let _ = writeln!(out, "  {:<15} {}", scope.as_str(), key.expose());
            }
            if let Some(wallet_key) = &running.demo_wallet_key {
                let _ = writeln!(
                    out,
                    "  paper wallet {} private key (sandbox only, holds no real funds; signs the builder-fee approval; shown only now):\n  {:<15} {}",
                    running.wallet,
                    "wallet key",
                    wallet_key.expose()
                );
            }
        }
        listening(out, &running.base_url()).await;
        running.shutdown().await;
        Ok(())
    })
}

pub(crate) fn standin(
    addr: SocketAddr,
    minimal: bool,
    confirms_per_minute: Option<u32>,
) -> Result<(), ServeError> {
    use agentdesk::standin::{self, Shape, StandInConfig};
    let runtime = runtime()?;
    runtime.block_on(async move {
        let key = format!("live_{}", hex::encode(rand::random::<[u8; 16]>()));
        let mut config = StandInConfig::new(addr, key.clone());
        if minimal {
            config.shape = Shape::Minimal;
        }
        config.confirms_per_minute = confirms_per_minute;
        let running = standin::start(config)
            .await
            .map_err(|source| ServeError::Listen { addr, source })?;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "key {key}");
        listening(out, &running.base_url()).await;
        running.shutdown().await;
        Ok(())
    })
}
