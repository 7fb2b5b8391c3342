//! Secrets (API keys, signing secrets, wallet keys) never reach a screen or a log by accident: their
//! Debug and Display are redacted, and reading the value is an explicit `expose()`.

use sha2::{Digest, Sha256};

#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// A short, stable fingerprint that identifies the secret without revealing it: the first 8
    /// hex digits of its SHA-256, which is also what `agentdesk keys list` shows from the stored
    /// hash (see [`fingerprint_of_hash`]), so the console's header and the CLI agree.
    pub fn fingerprint(&self) -> String {
        fingerprint_of_hash(&key_hash(&self.0))
    }
}

/// The hex SHA-256 of a key's plain text: how the sandbox stores keys.
pub fn key_hash(plain: &str) -> String {
    hex::encode(Sha256::digest(plain.as_bytes()))
}

/// The fingerprint of a key from its stored hash (see [`Secret::fingerprint`]).
pub fn fingerprint_of_hash(hash: &str) -> String {
    hash.chars().take(8).collect()
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret(<redacted {}>)", self.fingerprint())
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<redacted {}>", self.fingerprint())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_never_show_the_value() {
        let s = Secret::new("adk_supersecretvalue");
        assert!(!format!("{s:?}").contains("supersecret"));
        assert!(!format!("{s}").contains("supersecret"));
        assert_eq!(s.fingerprint().len(), 8);
        assert_eq!(s.expose(), "adk_supersecretvalue");
    }
}
