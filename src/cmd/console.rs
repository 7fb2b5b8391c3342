//! `agentdesk` with no command: the console, on the embedded picture or a configured service.

use super::load_settings;

pub(crate) fn run(flags: agentdesk::config::Flags) -> Result<(), String> {
    use agentdesk::config;
    let cfg = config::resolve(&flags, &config::process_env).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&cfg.data_dir).map_err(|e| {
        format!(
            "cannot create the data directory {}: {e}",
            cfg.data_dir.display()
        )
    })?;
    // Logs go to a file: the terminal belongs to the console.
    let log_path = cfg.data_dir.join("agentdesk.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| format!("cannot open the log file {}: {e}", log_path.display()))?;
    tracing_subscriber::fmt()
        .with_env_filter(agentdesk::logging::filter("info"))
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(log))
        .init();
    let settings = load_settings(cfg.config_path.as_deref())?;
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
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
                Some(Embedded::start(ec).await.map_err(|e| e.to_string())?)
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
            Ok(prepared) => agentdesk::console::run(prepared)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Some(e) = embedded {
            e.shutdown().await;
        }
        result
    })
}
