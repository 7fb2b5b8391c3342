//! `agentdesk keys`: the sandbox's API keys.

use super::{SetupError, open_existing};
use agentdesk::api::Scope;
use agentdesk::sandbox::keys;
use clap::Subcommand;
use std::path::PathBuf;

#[derive(Subcommand)]
pub(crate) enum KeysCommand {
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

/// Why `agentdesk keys` did nothing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeysError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("unknown scope {0:?}; use one of: {all}", all = Scope::ALL.map(|s| s.as_str()).join(", "))]
    UnknownScope(String),
    #[error("--wallet must be 0x followed by 40 hex digits ({0})")]
    Wallet(agentdesk::api::eip712::Eip712Error),
    #[error("{0}")]
    Db(#[from] rusqlite::Error),
    #[error("{0}")]
    Key(#[from] keys::KeyError),
    #[error("no active key with prefix {0:?}")]
    NoActiveKey(String),
}

pub(crate) fn run(command: KeysCommand) -> Result<(), KeysError> {
    let now = chrono::Utc::now();
    match command {
        KeysCommand::Create {
            db,
            scope,
            account,
            label,
            wallet,
        } => {
            let scope = Scope::parse(&scope).ok_or(KeysError::UnknownScope(scope))?;
            let mut store = open_existing(db)?;
            let account = match wallet {
                None => account,
                Some(wallet) => {
                    let wallet = wallet.trim();
                    agentdesk::api::eip712::parse_address(wallet).map_err(KeysError::Wallet)?;
                    let equity = store
                        .accounts()?
                        .first()
                        .map(|a| a.initial_equity)
                        .ok_or(keys::KeyError::NoAccount)?;
                    let (row, _) = keys::account_for_wallet(&mut store, wallet, equity, now)?;
                    Some(row.messenger_id)
                }
            };
            let key = keys::create_key(&mut store, account.as_deref(), scope, &label, now)?;
            println!("{}", key.expose());
            Ok(())
        }
        KeysCommand::List { db } => {
            let store = open_existing(db)?;
            let accounts = store.accounts()?;
            println!(
                "{:<10} {:<12} {:<15} {:<12} {:<20} {:<20} label",
                "prefix", "fingerprint", "scope", "account", "created", "revoked"
            );
            for k in store.keys()? {
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
            let n = store.revoke_key(prefix.trim_start_matches("adk_"), now)?;
            if n == 0 {
                return Err(KeysError::NoActiveKey(prefix));
            }
            println!("revoked {n} key(s)");
            Ok(())
        }
    }
}
