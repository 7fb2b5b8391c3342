use agentdesk::api::Scope;
use agentdesk::sandbox::keys;
use agentdesk::sandbox::store::Store;
use agentdesk::sandbox::{DbLocation, Sandbox, SandboxConfig, Settings};
use clap::{Parser, Subcommand};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Parser)]
#[command(
    name = "agentdesk",
    version,
    about = "A terminal console for agent trading, and a sandbox of the same interface on a simulated venue"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Config file (default: the config directory's config.toml; env AGENTDESK_CONFIG).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Named profile of the config file to connect to (env AGENTDESK_PROFILE).
    #[arg(long)]
    profile: Option<String>,
    /// Service base URL (env AGENTDESK_BASE_URL). With none configured, agentdesk starts the
    /// embedded sandbox, a gateway in front of it (127.0.0.1:8788 or the next free port) and a
    /// demo agent, and the console on the gateway.
    #[arg(long)]
    base_url: Option<String>,
    /// API key (env AGENTDESK_API_KEY; prefer the environment or a profile's api_key_env: a key on
    /// the command line is visible to other users of this machine).
    #[arg(long)]
    api_key: Option<String>,
    /// With the embedded sandbox: no demo agent staging proposals through the embedded gateway
    /// (also `[console] demo_agent = false`).
    #[arg(long)]
    no_demo_agent: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Run the sandbox server alone, for agents developing offline.
    Serve(ServeArgs),
    /// Manage the sandbox's API keys.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// Copy a leader account's `/api/v1/trades` signals into a follower's paper account (sandbox):
    /// every signal with this strategy label (or any label with `--strategy '*'`) that fans out is
    /// executed on the follower's book too.
    Follow {
        #[arg(long)]
        db: Option<PathBuf>,
        /// The follower account's messengerId.
        #[arg(long)]
        follower: String,
        /// The leader account's messengerId.
        #[arg(long)]
        leader: String,
        /// The strategy label (the signal's `strategy`) to follow, or `*` for every label.
        #[arg(long)]
        strategy: String,
        /// Stop following instead.
        #[arg(long)]
        remove: bool,
    },
    /// Run a stand-in of the real deployment (its answer shapes: errors as HTTP 200 with
    /// `success:false`, numbers as strings, no proposals list) to try the console against
    /// something that is not our sandbox. Prints its key and `listening on URL`.
    #[command(hide = true)]
    Standin {
        #[arg(long, default_value = "127.0.0.1:8790")]
        addr: SocketAddr,
        /// Only the documented fields, instead of the deployment's extra ones.
        #[arg(long)]
        minimal: bool,
        /// Rate-limit confirm_trade to N a minute, answered as the deployment does (200 with
        /// success:false and the wait), to try the console's handling of it.
        #[arg(long, value_name = "N")]
        confirms_per_minute: Option<u32>,
    },
    /// Account settings of the sandbox.
    Account {
        #[command(subcommand)]
        command: AccountCommand,
    },
    /// Run the supervision gateway in front of a service (or a sandbox): agents use its URL with
    /// their own keys; their stagings land in the supervisor's inbox (`/gate/v1`).
    Gate(GateArgs),
    /// Print a shell completion script: `agentdesk completions bash > /etc/bash_completion.d/agentdesk`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `agentdesk man > agentdesk.1 && man ./agentdesk.1`.
    Man,
}

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
struct GateArgs {
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
enum GateCommand {
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
enum GateJournalCommand {
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
enum GateAgentCommand {
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

#[derive(Subcommand)]
enum AccountCommand {
    /// Set (or --clear) the OpenAI-compatible LLM provider that mcp_agent_chat uses for the
    /// account. The API key is read from an environment variable so it never appears in shell
    /// history; it is stored in the sandbox database and never returned by any endpoint.
    Llm {
        #[arg(long)]
        db: Option<PathBuf>,
        /// The account's messengerId (default: the demo account).
        #[arg(long)]
        account: Option<String>,
        /// Base URL of the provider; chat POSTs {base-url}/chat/completions
        /// (e.g. https://api.openai.com/v1).
        #[arg(long, required_unless_present = "clear")]
        base_url: Option<String>,
        /// Model name sent to the provider.
        #[arg(long, required_unless_present = "clear")]
        model: Option<String>,
        /// Name of the environment variable that holds the provider's API key.
        #[arg(long, required_unless_present = "clear")]
        api_key_env: Option<String>,
        /// Remove the account's provider: chat falls back to the deterministic router.
        #[arg(long, conflicts_with_all = ["base_url", "model", "api_key_env"])]
        clear: bool,
    },
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8787")]
    addr: SocketAddr,
    /// SQLite database; created with a demo account if missing. Default: the data directory.
    #[arg(long)]
    db: Option<PathBuf>,
    #[arg(long, value_enum, env = "AGENTDESK_LOG_FORMAT", default_value = "text")]
    log_format: LogFormat,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum TokenRole {
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

/// How a server writes its log lines (to stderr).
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per line, with the request's span (its id) on every line: for a collector.
    Json,
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Create a key and print it alone on stdout (it is shown only this once).
    Create {
        #[arg(long)]
        db: Option<PathBuf>,
        /// legacy, webhook:alerts, mcp:mutate or platform:trade
        #[arg(long)]
        scope: String,
        /// The account's messengerId (default: the demo account).
        #[arg(long)]
        account: Option<String>,
        #[arg(long, default_value = "")]
        label: String,
        /// Bind the key to the account of this venue wallet (0x + 40 hex digits): a new account
        /// with the paper balance of the demo account, or the existing account of that wallet.
        #[arg(long, conflicts_with = "account")]
        wallet: Option<String>,
    },
    /// List keys (prefix, scope, account, created, revoked).
    List {
        #[arg(long)]
        db: Option<PathBuf>,
    },
    /// Revoke the key(s) with this prefix (the 8 characters after `adk_`).
    Revoke {
        #[arg(long)]
        db: Option<PathBuf>,
        prefix: String,
    },
}

fn default_db() -> Result<PathBuf, String> {
    let dirs = directories::ProjectDirs::from("dev", "agentdesk", "agentdesk")
        .ok_or("cannot find a home directory for the data directory; pass --db PATH")?;
    let dir = dirs.data_dir();
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create the data directory {}: {e}", dir.display()))?;
    Ok(dir.join("sandbox.db"))
}

fn db_path(db: Option<PathBuf>) -> Result<PathBuf, String> {
    match db {
        Some(p) => Ok(p),
        None => default_db(),
    }
}

fn load_settings(config: Option<&Path>) -> Result<Settings, String> {
    match config {
        None => Ok(Settings::default()),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read config {}: {e}", path.display()))?;
            Settings::from_toml(&text).map_err(|e| format!("config {}: {e}", path.display()))
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => console(agentdesk::config::Flags {
            config: cli.config,
            profile: cli.profile,
            base_url: cli.base_url,
            api_key: cli.api_key,
            no_demo_agent: cli.no_demo_agent,
        }),
        Some(Command::Serve(args)) => serve(args, cli.config),
        Some(Command::Standin {
            addr,
            minimal,
            confirms_per_minute,
        }) => standin(addr, minimal, confirms_per_minute),
        Some(Command::Keys { command }) => keys_command(command),
        Some(Command::Account { command }) => account_command(command),
        Some(Command::Follow {
            db,
            follower,
            leader,
            strategy,
            remove,
        }) => follow_command(db, &follower, &leader, &strategy, remove),
        Some(Command::Gate(args)) => gate_command(args, cli.config),
        Some(Command::Completions { shell }) => {
            use clap::CommandFactory;
            use std::io::Write;
            let mut cmd = Cli::command();
            // Into a buffer first: the generator panics on a write error (a closed pipe).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "agentdesk", &mut script);
            let _ = std::io::stdout().write_all(&script);
            Ok(())
        }
        Some(Command::Man) => {
            use clap::CommandFactory;
            use std::io::Write;
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .render(&mut page)
                .map_err(|e| format!("cannot write the manual page: {e}"))
                .map(|()| {
                    let _ = std::io::stdout().write_all(&page);
                })
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agentdesk: {e}");
            ExitCode::FAILURE
        }
    }
}

fn console(flags: agentdesk::config::Flags) -> Result<(), String> {
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
                    gate_config(cfg.config_path.as_deref())?;
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
            Ok(prepared) => agentdesk::console::run(prepared).await,
            Err(e) => Err(e),
        };
        if let Some(e) = embedded {
            e.shutdown().await;
        }
        result
    })
}

fn serve(args: ServeArgs, config: Option<PathBuf>) -> Result<(), String> {
    // Warnings, and one line for every mutation (staging, execution, order, cancel).
    log_to_stderr("warn,agentdesk::sandbox::ops=info", args.log_format);
    let settings = load_settings(config.as_deref())?;
    let db = db_path(args.db)?;
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let mut config = SandboxConfig::new(args.addr, DbLocation::File(db.clone()));
        config.settings = settings;
        let running = Sandbox::start(config).await.map_err(|e| e.to_string())?;
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
        let stop = shutdown_signal();
        let _ = writeln!(out, "listening on {}", running.base_url());
        let _ = out.flush();
        drop(out);
        stop.await;
        running.shutdown().await;
        Ok(())
    })
}

fn standin(
    addr: SocketAddr,
    minimal: bool,
    confirms_per_minute: Option<u32>,
) -> Result<(), String> {
    use agentdesk::standin::{self, Shape, StandInConfig};
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let key = format!("live_{}", hex::encode(rand::random::<[u8; 16]>()));
        let mut config = StandInConfig::new(addr, key.clone());
        if minimal {
            config.shape = Shape::Minimal;
        }
        config.confirms_per_minute = confirms_per_minute;
        let running = standin::start(config)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "key {key}");
        let stop = shutdown_signal();
        let _ = writeln!(out, "listening on {}", running.base_url());
        let _ = out.flush();
        drop(out);
        stop.await;
        running.shutdown().await;
        Ok(())
    })
}

/// Registers SIGTERM and SIGINT at once and resolves on either. Called before `listening on` is
/// printed: until a handler is registered the default action ends the process without the
/// graceful shutdown, and a supervisor may stop the server as soon as it reads that line.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
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

fn open_existing(db: Option<PathBuf>) -> Result<Store, String> {
    let path = db_path(db)?;
    if !path.exists() {
        return Err(format!(
            "no database at {}; run `agentdesk serve --db {}` once to create it",
            path.display(),
            path.display()
        ));
    }
    Store::open(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))
}

fn keys_command(command: KeysCommand) -> Result<(), String> {
    let now = chrono::Utc::now();
    match command {
        KeysCommand::Create {
            db,
            scope,
            account,
            label,
            wallet,
        } => {
            let scope = Scope::parse(&scope).ok_or_else(|| {
                format!(
                    "unknown scope {scope:?}; use one of: {}",
                    Scope::ALL.map(|s| s.as_str()).join(", ")
                )
            })?;
            let mut store = open_existing(db)?;
            let account = match wallet {
                None => account,
                Some(wallet) => {
                    let wallet = wallet.trim();
                    agentdesk::api::eip712::parse_address(wallet).map_err(|e| {
                        format!("--wallet must be 0x followed by 40 hex digits ({e})")
                    })?;
                    let equity = store
                        .accounts()
                        .map_err(|e| e.to_string())?
                        .first()
                        .map(|a| a.initial_equity)
                        .ok_or_else(|| keys::KeyError::NoAccount.to_string())?;
                    let (row, _) = keys::account_for_wallet(&mut store, wallet, equity, now)
                        .map_err(|e| e.to_string())?;
                    Some(row.messenger_id)
                }
            };
            let key = keys::create_key(&mut store, account.as_deref(), scope, &label, now)
                .map_err(|e| e.to_string())?;
            println!("{}", key.expose());
            Ok(())
        }
        KeysCommand::List { db } => {
            let store = open_existing(db)?;
            let accounts = store.accounts().map_err(|e| e.to_string())?;
            println!(
                "{:<10} {:<12} {:<15} {:<12} {:<20} {:<20} label",
                "prefix", "fingerprint", "scope", "account", "created", "revoked"
            );
            for k in store.keys().map_err(|e| e.to_string())? {
                let account = accounts
                    .iter()
                    .find(|a| a.id == k.account_id)
                    .map(|a| a.messenger_id.as_str())
                    .unwrap_or("?");
                println!(
                    "{:<10} {:<12} {:<15} {:<12} {:<20} {:<20} {}",
                    k.prefix,
                    k.fingerprint,
                    k.scope.as_str(),
                    account,
                    k.created_at.format("%Y-%m-%d %H:%M:%S"),
                    k.revoked_at
                        .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
                        .unwrap_or_else(|| "-".into()),
                    k.label
                );
            }
            Ok(())
        }
        KeysCommand::Revoke { db, prefix } => {
            let store = open_existing(db)?;
            let n = store
                .revoke_key(prefix.trim_start_matches("adk_"), now)
                .map_err(|e| e.to_string())?;
            if n == 0 {
                return Err(format!("no active key with prefix {prefix:?}"));
            }
            println!("revoked {n} key(s)");
            Ok(())
        }
    }
}

fn follow_command(
    db: Option<PathBuf>,
    follower: &str,
    leader: &str,
    strategy: &str,
    remove: bool,
) -> Result<(), String> {
    let store = open_existing(db)?;
    let changed = agentdesk::sandbox::signals::set_follow(
        &store.conn,
        follower,
        leader,
        strategy,
        remove,
        chrono::Utc::now(),
    )?;
    let what = match (remove, changed) {
        (false, true) => "now follows",
        (false, false) => "already follows",
        (true, true) => "no longer follows",
        (true, false) => "was not following",
    };
    println!("{follower} {what} {leader} for strategy label {strategy:?}");
    Ok(())
}

fn account_command(command: AccountCommand) -> Result<(), String> {
    use agentdesk::sandbox::store::chat;
    let AccountCommand::Llm {
        db,
        account,
        base_url,
        model,
        api_key_env,
        clear,
    } = command;
    let store = open_existing(db)?;
    let account = match account {
        Some(id) => store
            .account_by_messenger_id(&id)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("no account with messengerId {id:?}"))?,
        None => store
            .accounts()
            .map_err(|e| e.to_string())?
            .into_iter()
            .next()
            .ok_or("the database has no account yet; run `agentdesk serve` once")?,
    };
    if clear {
        let removed = chat::clear_llm(&store.conn, account.id).map_err(|e| e.to_string())?;
        println!(
            "{} the LLM provider of account {}; mcp_agent_chat uses the deterministic router",
            if removed { "removed" } else { "there was no" },
            account.messenger_id
        );
        return Ok(());
    }
    let (Some(base_url), Some(model), Some(var)) = (base_url, model, api_key_env) else {
        return Err("--base-url, --model and --api-key-env are required (or --clear)".into());
    };
    let base_url = base_url.trim().trim_end_matches('/').to_string();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(format!(
            "--base-url {base_url:?} must start with http:// or https://"
        ));
    }
    if model.trim().is_empty() {
        return Err("--model must not be empty".into());
    }
    let key = std::env::var(&var)
        .ok()
        .filter(|k| !k.trim().is_empty())
        .ok_or_else(|| format!("the environment variable {var} is not set (or empty); export the provider's API key in it"))?;
    let key = agentdesk::secret::Secret::new(key.trim());
    let llm = chat::LlmSettings {
        base_url: base_url.clone(),
        model: model.trim().to_string(),
        api_key: key.clone(),
    };
    chat::set_llm(&store.conn, account.id, &llm, chrono::Utc::now()).map_err(|e| e.to_string())?;
    println!(
        "account {} now chats through {base_url}/chat/completions with model {} (key from ${var}, fingerprint {})",
        account.messenger_id,
        llm.model,
        key.fingerprint()
    );
    Ok(())
}

/// Where the gateway's state is: `--store URL`, else `--db PATH`, else the config's
/// `[gate] store`, else the data directory's gateway.db.
fn gate_db(
    db: Option<PathBuf>,
    store: Option<String>,
    config: Option<&std::path::Path>,
) -> Result<agentdesk::gateway::GateDb, String> {
    use agentdesk::gateway::GateDb;
    if let Some(url) = store {
        let url = url.trim();
        if !agentdesk::gateway::store::postgres::is_url(url) {
            return Err(format!(
                "--store takes a postgres:// URL, not {url:?}; a SQLite file is --db PATH"
            ));
        }
        return Ok(GateDb::Postgres(url.to_string()));
    }
    if let Some(p) = db {
        return Ok(GateDb::File(p));
    }
    if let Some(path) = config.filter(|p| p.exists()) {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read config {}: {e}", path.display()))?;
        let settings = agentdesk::gateway::policy::GateSettings::from_toml(&text)
            .map_err(|e| format!("config {}: {e}", path.display()))?;
        if let Some(store) = settings.store {
            return Ok(GateDb::parse(store.trim()));
        }
    }
    Ok(GateDb::File(default_db()?.with_file_name("gateway.db")))
}

/// A gateway store that must exist already (naming agents, verifying the journal).
fn open_gate_store(
    runtime: &tokio::runtime::Runtime,
    db: &agentdesk::gateway::GateDb,
) -> Result<std::sync::Arc<dyn agentdesk::gateway::store::Store>, String> {
    if let agentdesk::gateway::GateDb::File(path) = db
        && !path.exists()
    {
        return Err(format!("no gateway database at {}", path.display()));
    }
    runtime
        .block_on(db.open())
        .map_err(|e| format!("cannot open {}: {e}", db.shown()))
}

/// The config file the gateway reads: --config, else $AGENTDESK_CONFIG, else the config
/// directory's config.toml if there is one.
fn gate_config_path(config: Option<PathBuf>) -> Option<PathBuf> {
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

fn gate_command(args: GateArgs, config: Option<PathBuf>) -> Result<(), String> {
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let config = gate_config_path(config);
    match args.command {
        Some(GateCommand::Token {
            db,
            store,
            label,
            role,
        }) => {
            let db = gate_db(db, store, config.as_deref())?;
            let store = runtime
                .block_on(db.open())
                .map_err(|e| format!("cannot open {}: {e}", db.shown()))?;
            let token = runtime.block_on(agentdesk::gateway::mint_token(
                store.as_ref(),
                label.trim(),
                role.into(),
                chrono::Utc::now(),
            ))?;
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
                return Err(format!(
                    "{fingerprint:?} is not a key fingerprint (8 hex digits, as the inbox and GET /gate/v1/agents show)"
                ));
            }
            let name = name.trim();
            if name.is_empty() {
                return Err("the name must not be empty".into());
            }
            let db = gate_db(db, store, config.as_deref())?;
            let store = open_gate_store(&runtime, &db)?;
            let n = runtime
                .block_on(store.name_agent(&fingerprint, name))
                .map_err(|e| e.to_string())?;
            match n {
                0 => Err(format!(
                    "no agent with fingerprint {fingerprint} has used this gateway yet"
                )),
                1 => {
                    println!("agent {fingerprint} is now {name:?}");
                    Ok(())
                }
                n => Err(format!(
                    "{n} agents match {fingerprint}; all are now named {name:?}, give more digits to tell them apart"
                )),
            }
        }
        Some(GateCommand::Journal {
            command: GateJournalCommand::Verify { db, store },
        }) => {
            let db = gate_db(db, store, config.as_deref())?;
            let store = open_gate_store(&runtime, &db)?;
            let rows = runtime
                .block_on(store.journal(0, usize::MAX >> 1))
                .map_err(|e| e.to_string())?;
            match agentdesk::gateway::journal::verify(&rows) {
                Ok(n) => {
                    println!("journal ok: {n} records");
                    Ok(())
                }
                Err(broken) => Err(broken.to_string()),
            }
        }
        None => gate_serve(args, config, runtime),
    }
}

/// The `[gate]`, `[policy]` and `[[notify]]` tables of the config file, if there is one.
fn gate_config(
    path: Option<&std::path::Path>,
) -> Result<
    (
        agentdesk::gateway::policy::GateSettings,
        agentdesk::gateway::policy::Policy,
        Vec<agentdesk::gateway::notify::Destination>,
        Option<String>,
    ),
    String,
> {
    let Some(path) = path else {
        return Ok(Default::default());
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read config {}: {e}", path.display()))?;
    let (settings, policy) = agentdesk::gateway::policy::GateSettings::with_policy_from_toml(&text)
        .map_err(|e| format!("config {}: {e}", path.display()))?;
    let notify = agentdesk::gateway::notify::from_toml(&text)
        .map_err(|e| format!("config {}: {e}", path.display()))?;
    let public_url = agentdesk::gateway::link::public_url_from_toml(&text)
        .map_err(|e| format!("config {}: {e}", path.display()))?;
    Ok((settings, policy, notify, public_url))
}

fn gate_serve(
    args: GateArgs,
    config: Option<PathBuf>,
    runtime: tokio::runtime::Runtime,
) -> Result<(), String> {
    use agentdesk::gateway::{GateConfig, Gateway};
    // rmcp logs each session id at INFO: a session id is a credential of its own, kept out of the log.
    log_to_stderr("info,rmcp=warn", args.log_format);
    let upstream = args.upstream.ok_or(
        "--upstream URL is required: the service (or sandbox) the gateway stands in front of",
    )?;
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
                .ok_or_else(|| format!("the environment variable {var} is not set (or empty)"))?,
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
        let running = Arc::new(Gateway::start(config).await.map_err(|e| e.to_string())?);
        // SIGHUP is caught before `listening on` is printed: until then its default action
        // ends the process, and a supervisor may reload as soon as it reads that line.
        #[cfg(unix)]
        let hup = config_path.clone().and_then(|path| {
            use tokio::signal::unix::{SignalKind, signal};
            signal(SignalKind::hangup()).ok().map(|hup| (path, hup))
        });
        let stop = shutdown_signal();
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening on {}", running.base_url());
        let _ = out.flush();
        drop(out);
        #[cfg(unix)]
        let reload = hup.map(|(path, mut hup)| {
            let running = running.clone();
            tokio::spawn(async move {
                while hup.recv().await.is_some() {
                    // A bad file keeps the policy in force: the supervisor fixes it and sends
                    // SIGHUP again.
                    let result = match gate_config(Some(&path)) {
                        Ok((_, policy, _, _)) => {
                            running.set_policy(&policy, "config reload (SIGHUP)").await
                        }
                        Err(e) => Err(e),
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

/// The servers (`serve`, `gate`) log to stderr; stdout carries what scripts read.
fn log_to_stderr(default: &str, format: LogFormat) {
    agentdesk::logging::to_stderr(default, matches!(format, LogFormat::Json));
}
