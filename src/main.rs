mod cmd;

use clap::{Parser, Subcommand};
use cmd::gate::GateArgs;
use cmd::keys::KeysCommand;
use cmd::serve::ServeArgs;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

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
        command: cmd::account::AccountCommand,
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

/// `agentdesk man` could not write the page.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the manual page: {0}")]
struct ManPageError(std::io::Error);

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agentdesk: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the command. Boxed: the commands' errors have nothing in common but being printed.
fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    match cli.command {
        None => cmd::console::run(agentdesk::config::Flags {
            config: cli.config,
            profile: cli.profile,
            base_url: cli.base_url,
            api_key: cli.api_key,
            no_demo_agent: cli.no_demo_agent,
        })?,
        Some(Command::Serve(args)) => cmd::serve::run(args, cli.config)?,
        Some(Command::Standin {
            addr,
            minimal,
            confirms_per_minute,
        }) => cmd::serve::standin(addr, minimal, confirms_per_minute)?,
        Some(Command::Keys { command }) => cmd::keys::run(command)?,
        Some(Command::Account { command }) => cmd::account::run(command)?,
        Some(Command::Follow {
            db,
            follower,
            leader,
            strategy,
            remove,
        }) => cmd::account::follow(db, &follower, &leader, &strategy, remove)?,
        Some(Command::Gate(args)) => cmd::gate::run(args, cli.config)?,
        Some(Command::Completions { shell }) => {
            use clap::CommandFactory;
            use std::io::Write;
            let mut cmd = Cli::command();
            // Into a buffer first: the generator panics on a write error (a closed pipe).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "agentdesk", &mut script);
            let _ = std::io::stdout().write_all(&script);
        }
        Some(Command::Man) => {
            use clap::CommandFactory;
            use std::io::Write;
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .render(&mut page)
                .map_err(ManPageError)?;
            let _ = std::io::stdout().write_all(&page);
        }
    }
    Ok(())
}
