//! `agentdesk account` and `agentdesk follow`: a sandbox account's settings.

use super::{SetupError, open_existing};
use clap::Subcommand;
use std::path::PathBuf;

#[derive(Subcommand)]
pub(crate) enum AccountCommand {
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

/// Why `agentdesk account` or `agentdesk follow` changed nothing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AccountError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("{0}")]
    Db(#[from] rusqlite::Error),
    #[error("no account with messengerId {0:?}")]
    UnknownAccount(String),
    #[error("the database has no account yet; run `agentdesk serve` once")]
    NoAccount,
    #[error("--base-url, --model and --api-key-env are required (or --clear)")]
    LlmFlagsMissing,
    #[error("--base-url {0:?} must start with http:// or https://")]
    BaseUrlScheme(String),
    #[error("--model must not be empty")]
    EmptyModel,
    #[error(
        "the environment variable {0} is not set (or empty); export the provider's API key in it"
    )]
    NoApiKey(String),
    #[error(transparent)]
    Follow(#[from] agentdesk::sandbox::signals::FollowError),
}

pub(crate) fn run(command: AccountCommand) -> Result<(), AccountError> {
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
            .account_by_messenger_id(&id)?
            .ok_or(AccountError::UnknownAccount(id))?,
        None => store
            .accounts()?
            .into_iter()
            .next()
            .ok_or(AccountError::NoAccount)?,
    };
    if clear {
        let removed = chat::clear_llm(&store.conn, account.id)?;
        println!(
            "{} the LLM provider of account {}; mcp_agent_chat uses the deterministic router",
            if removed { "removed" } else { "there was no" },
            account.messenger_id
        );
        return Ok(());
    }
    let (Some(base_url), Some(model), Some(var)) = (base_url, model, api_key_env) else {
        return Err(AccountError::LlmFlagsMissing);
    };
    let base_url = base_url.trim().trim_end_matches('/').to_string();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(AccountError::BaseUrlScheme(base_url));
    }
    if model.trim().is_empty() {
        return Err(AccountError::EmptyModel);
    }
    let key = std::env::var(&var)
        .ok()
        .filter(|k| !k.trim().is_empty())
        .ok_or_else(|| AccountError::NoApiKey(var.clone()))?;
    let key = agentdesk::secret::Secret::new(key.trim());
    let llm = chat::LlmSettings {
        base_url: base_url.clone(),
        model: model.trim().to_string(),
        api_key: key.clone(),
    };
    chat::set_llm(&store.conn, account.id, &llm, chrono::Utc::now())?;
    println!(
        "account {} now chats through {base_url}/chat/completions with model {} (key from ${var}, fingerprint {})",
        account.messenger_id,
        llm.model,
        key.fingerprint()
    );
    Ok(())
}

pub(crate) fn follow(
    db: Option<PathBuf>,
    follower: &str,
    leader: &str,
    strategy: &str,
    remove: bool,
) -> Result<(), AccountError> {
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
