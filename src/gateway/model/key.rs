//! An agent's key as the gateway holds it: the secret, and the SHA-256 that is the agent's identity
//! everywhere else.

use crate::secret::Secret;
use sha2::{Digest, Sha256};

/// A caller's key, as the gateway holds it.
#[derive(Clone)]
pub struct AgentKey {
    pub secret: Secret,
    /// SHA-256 (hex) of the key: the agent's identity in the store.
    pub hash: String,
}

impl AgentKey {
    pub fn new(secret: Secret) -> Self {
        let hash = sha256_hex(secret.expose());
        AgentKey { secret, hash }
    }

    /// The project's key fingerprint (the same value as [`Secret::fingerprint`]).
    pub fn fingerprint(&self) -> &str {
        &self.hash[..8]
    }
}

pub fn sha256_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}
