//! API keys: generated here, shown once, stored only as a SHA-256 hash.

use super::store::Store;
use crate::api::Scope;
use crate::secret::Secret;
use chrono::{DateTime, Utc};
use rand::RngExt;

/// The plain key's visible prefix length after `adk_`, used to list and revoke keys.
const PREFIX_LEN: usize = 8;

pub fn hash_key(plain: &str) -> String {
    crate::secret::key_hash(plain)
}

pub fn generate_key() -> Secret {
    let bytes: [u8; 24] = rand::rng().random();
    Secret::new(format!("adk_{}", hex::encode(bytes)))
}

pub fn prefix_of(plain: &str) -> String {
    plain
        .trim_start_matches("adk_")
        .chars()
        .take(PREFIX_LEN)
        .collect()
}

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("no account with messengerId {0:?}")]
    UnknownAccount(String),
    #[error(
        "the database has no account yet: start `agentdesk serve` once to create the demo account"
    )]
    NoAccount,
    #[error("storage error: {0}")]
    Db(#[from] rusqlite::Error),
}

/// Creates a key for the account with `messenger_id` (or the first account) and returns it; the
/// plain text exists only in the return value.
pub fn create_key(
    store: &mut Store,
    messenger_id: Option<&str>,
    scope: Scope,
    label: &str,
    now: DateTime<Utc>,
) -> Result<Secret, KeyError> {
    let account = match messenger_id {
        Some(m) => store
            .account_by_messenger_id(m)?
            .ok_or_else(|| KeyError::UnknownAccount(m.to_string()))?,
        None => store
            .accounts()?
            .into_iter()
            .next()
            .ok_or(KeyError::NoAccount)?,
    };
    let key = generate_key();
    store.insert_key(
        account.id,
        &hash_key(key.expose()),
        &prefix_of(key.expose()),
        scope,
        label,
        now,
    )?;
    Ok(key)
}

pub fn random_messenger_id() -> String {
    let n: u64 = rand::rng().random_range(1_000_000_000..10_000_000_000);
    format!("{n}")
}

pub fn random_wallet() -> String {
    let bytes: [u8; 20] = rand::rng().random();
    format!("0x{}", hex::encode(bytes))
}

/// A fresh secp256k1 paper wallet: its private key (`0x` + 64 hex digits, shown once) and its
/// address (lowercase `0x` hex, as accounts store wallets).
pub fn new_paper_wallet() -> (Secret, String) {
    loop {
        let bytes: [u8; 32] = rand::rng().random();
        // Nearly every 32-byte string is a valid scalar; zero or one past the group order is not.
        if let Ok(key) = k256::ecdsa::SigningKey::from_slice(&bytes) {
            let address = hex::encode(crate::api::eip712::address_of(&key));
            return (
                Secret::new(format!("0x{}", hex::encode(bytes))),
                format!("0x{address}"),
            );
        }
    }
}

/// The account bound to `wallet` (compared case-insensitively), created with `initial_equity`
/// paper USDC when there is none. Returns the account and whether it was created.
pub fn account_for_wallet(
    store: &mut Store,
    wallet: &str,
    initial_equity: f64,
    now: DateTime<Utc>,
) -> Result<(super::store::AccountRow, bool), KeyError> {
    let wallet = wallet.to_ascii_lowercase();
    if let Some(id) = store.account_id_by_wallet(&wallet)?
        && let Some(account) = store.account(id)?
    {
        return Ok((account, false));
    }
    let account = store.create_account(&random_messenger_id(), &wallet, initial_equity, now)?;
    Ok((account, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_only_their_hash_is_stored() {
        let mut store = Store::open_in_memory().unwrap();
        let now = Utc::now();
        store.create_account("123", "0x00", 1.0, now).unwrap();
        let a = create_key(&mut store, None, Scope::Legacy, "", now).unwrap();
        let b = create_key(&mut store, Some("123"), Scope::McpMutate, "", now).unwrap();
        assert_ne!(a, b);
        let row = store.key_by_hash(&hash_key(b.expose())).unwrap().unwrap();
        assert_eq!(row.scope, Scope::McpMutate);
        // `keys list` and the console's header name a key by one fingerprint.
        assert_eq!(row.fingerprint, b.fingerprint());
        let listed: Vec<String> = store
            .keys()
            .unwrap()
            .into_iter()
            .map(|k| k.fingerprint)
            .collect();
        assert_eq!(listed, [a.fingerprint(), b.fingerprint()]);
        let plain_in_db: i64 = store
            .conn
            .query_row(
                "SELECT COUNT(*) FROM api_keys WHERE key_hash = ?1 OR prefix = ?1",
                [a.expose()],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(plain_in_db, 0);
        assert!(matches!(
            create_key(&mut store, Some("nope"), Scope::Legacy, "", now),
            Err(KeyError::UnknownAccount(_))
        ));
    }
}
