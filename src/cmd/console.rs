//! `agentdesk` with no command: the console, on the embedded picture or a configured service.

use super::gate::GateConfigError;
use super::{SetupError, load_settings, runtime};
use agentdesk::console::{PrepareError, TerminalError};
use agentdesk::embedded::EmbeddedError;
use std::path::PathBuf;

/// Why the console did not run, or stopped other than by the user's quitting.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConsoleError {
    #[error("{0}")]
    Config(#[from] agentdesk::config::ConfigError),
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("cannot open the log file {}: {source}", .path.display())]
    LogFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    GateConfig(#[from] GateConfigError),
    #[error(transparent)]
    Embedded(#[from] EmbeddedError),
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    #[error(transparent)]
    Terminal(#[from] TerminalError),
}

pub(crate) fn run(flags: agentdesk::config::Flags) -> Result<(), ConsoleError> {
    use agentdesk::config;
    let cfg = config::resolve(&flags, &config::process_env)?;
    std::fs::create_dir_all(&cfg.data_dir).map_err(|source| SetupError::DataDir {
        dir: cfg.data_dir.clone(),
        source,
    })?;
    // Logs go to a file: the terminal belongs to the console.
    let log_path = cfg.data_dir.join("agentdesk.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|source| ConsoleError::LogFile {
            path: log_path.clone(),
            source,
        })?;
    tracing_subscriber::fmt()
        .with_env_filter(agentdesk::logging::filter("info"))
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(log))
        .init();
    let settings = load_settings(cfg.config_path.as_deref())?;
    let runtime = runtime()?;
    runtime.block_on(async move {
        // No service configured: the whole picture in-process — the sandbox, the gateway in
        // front of it, the demo agent — and the console on the gateway.
        let embedded = match cfg.service {
            config::Service::Embedded => {
                use agentdesk::embedded::{Embedded, EmbeddedConfig};
                let mut ec = EmbeddedConfig::new(cfg.data_dir.clone(), settings);
                ec.demo_agent = cfg.demo_agent.then_some(cfg.demo_agent_interval);
                (ec.gate_settings, ec.policy, ec.notify, ec.public_url) =
                    super::gate::gate_config(cfg.config_path.as_deref())?;
                Some(Embedded::start(ec).await?)
            }
            config::Service::Remote { .. } => None,
        };
        let attach = embedded.as_ref().map(|e| agentdesk::console::Attach {
            base_url: e.gateway_url(),
            api_key: e.console_key.clone(),
            gate_token: e.gate_token.clone(),
            connect: agentdesk::console::gate::ConnectInfo {
                base_url: e.gateway_url(),
                sandbox_db: e.sandbox_db.clone(),
                demo_agent: e.demo_agent().map(str::to_string),
            },
        });
        let result = match agentdesk::console::prepare(&cfg, attach).await {
            Ok(prepared) => agentdesk::console::run(prepared).await.map_err(Into::into),
            Err(e) => Err(e.into()),
        };
        if let Some(e) = embedded {
            e.shutdown().await;
        }
        result
    })
}
