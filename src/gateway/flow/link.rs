//! Single-use approval links: a supervisor (or a notification) mints one for an item that waits
//! for a human, and the edge's approval page serves it. The token in the URL is 256 random bits (base64url); the
//! store keeps only its SHA-256, so a copy of the database approves nothing. A link is bound to one
//! item, lives as long as the item, and is spent by the first decision made with it.

use super::halt;
use crate::gateway::gate::{Gate, sha256_hex};
use crate::gateway::model::error::{GateError, Kind};
use crate::gateway::store::{Item, Link, Status};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Where the page lives, under the gateway's base URL.
pub const PAGE_PATH: &str = "/gate/approve/";
/// The label of links minted for `[[notify]]` deliveries (no supervisor token minted them).
pub const NOTIFICATION_LABEL: &str = "notification";

// reqwest names the URL parser's error only through this.
type UrlError = <reqwest::Url as std::str::FromStr>::Err;

/// A `public_url` approval links cannot be built on; each names the URL as given (trimmed).
#[derive(Debug, thiserror::Error)]
pub enum PublicUrlError {
    #[error(transparent)]
    Toml(#[from] toml::de::Error),
    #[error("public_url must be a string like \"https://gate.example.com\", got {0}")]
    NotString(toml::Value),
    #[error("public_url {url:?} is not a URL ({source})")]
    NotUrl { url: String, source: UrlError },
    #[error("public_url {0:?} must not have a query or a fragment")]
    QueryOrFragment(String),
    #[error("public_url {0:?} must not hold credentials")]
    Credentials(String),
    #[error(
        "public_url {0:?} must start with https:// (plain http:// only for 127.0.0.1 or localhost)"
    )]
    PlainHttp(String),
    #[error("public_url {0:?} must start with https://")]
    NotHttps(String),
}

/// Reads the top-level `public_url` of the gateway's config file, validated.
pub fn public_url_from_toml(text: &str) -> Result<Option<String>, PublicUrlError> {
    #[derive(serde::Deserialize)]
    struct File {
        public_url: Option<toml::Value>,
    }
    let file: File = toml::from_str(text)?;
    match file.public_url {
        None => Ok(None),
        Some(toml::Value::String(s)) => validate_public_url(&s).map(Some),
        Some(other) => Err(PublicUrlError::NotString(other)),
    }
}

/// `https://` anywhere; plain `http://` only on this machine (a link sent to a phone over plain
/// HTTP would carry a live approval in clear). Returns the URL without a trailing slash.
pub fn validate_public_url(url: &str) -> Result<String, PublicUrlError> {
    let url = url.trim().trim_end_matches('/');
    let parsed = reqwest::Url::parse(url).map_err(|source| PublicUrlError::NotUrl {
        url: url.to_string(),
        source,
    })?;
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(PublicUrlError::QueryOrFragment(url.to_string()));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(PublicUrlError::Credentials(url.to_string()));
    }
    let host = parsed.host_str().unwrap_or("");
    match parsed.scheme() {
        "https" if !host.is_empty() => Ok(url.to_string()),
        "http" if matches!(host, "127.0.0.1" | "localhost" | "[::1]") => Ok(url.to_string()),
        "http" => Err(PublicUrlError::PlainHttp(url.to_string())),
        _ => Err(PublicUrlError::NotHttps(url.to_string())),
    }
}

/// A new token: 32 random bytes, base64url without padding (43 characters).
fn new_secret() -> String {
    use rand::RngExt;
    let bytes: [u8; 32] = rand::rng().random();
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Equal strings, compared in time that does not depend on where they differ.
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The base links are built on: `public_url` when the config sets it, else the gateway's own.
pub fn base(gate: &Gate) -> String {
    gate.public_url.clone().unwrap_or_else(|| gate.base_url())
}

/// Mints a link for a pending item; returns its URL.
pub async fn mint(gate: &Gate, item: &Item, label: &str) -> Result<String, GateError> {
    if item.status != Status::Pending || item.expires_at <= gate.now() {
        return Err(not_pending(item));
    }
    if let Some(reason) = halt::killed(gate).await? {
        return Err(GateError::new(
            Kind::Forbidden,
            "kill_switch",
            format!("the supervisor's kill switch is on ({reason}): approval links are disabled"),
        ));
    }
    let token = new_secret();
    gate.store
        .insert_link(Link {
            token_hash: sha256_hex(&token),
            item_id: item.id.clone(),
            label: label.to_string(),
            csrf: new_secret(),
            expires_at: item.expires_at,
            created_at: gate.now(),
            spent_at: None,
        })
        .await
        .map_err(GateError::store)?;
    Ok(format!("{}{PAGE_PATH}{token}", base(gate)))
}

fn not_pending(item: &Item) -> GateError {
    if item.status == Status::Expired || item.status == Status::Pending {
        return GateError::new(
            Kind::Expired,
            "proposal_expired",
            format!("item {} has expired; it gets no approval link", item.id),
        );
    }
    GateError::new(
        Kind::Conflict,
        "not_pending",
        format!(
            "item {} is {}: only items waiting for a human get approval links",
            item.id,
            item.status.as_str()
        ),
    )
}

/// The link a notification carries, when the config sets `public_url` (a link on the gateway's
/// loopback address would be useless in a chat message). Failures only cost the link.
pub async fn for_notification(gate: &Gate, item: &Item) -> Option<String> {
    gate.public_url.as_ref()?;
    match mint(gate, item, NOTIFICATION_LABEL).await {
        Ok(url) => Some(url),
        Err(e) => {
            tracing::warn!(item = %item.id, "no approval link in the notification: {}", e.message);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_urls_are_https_or_this_machine() {
        assert_eq!(
            validate_public_url("https://gate.example.com/").unwrap(),
            "https://gate.example.com"
        );
        assert_eq!(
            validate_public_url("https://example.com/desk").unwrap(),
            "https://example.com/desk"
        );
        assert!(validate_public_url("http://127.0.0.1:8790").is_ok());
        assert!(validate_public_url("http://localhost:8790").is_ok());
        let e = validate_public_url("http://gate.example.com").unwrap_err();
        assert!(e.to_string().contains("https://"), "{e}");
        assert!(validate_public_url("ftp://example.com").is_err());
        assert!(validate_public_url("gate.example.com").is_err());
        assert!(validate_public_url("https://u:p@example.com").is_err());
        assert!(validate_public_url("https://example.com/?a=1").is_err());
        assert_eq!(public_url_from_toml("[gate]\n").unwrap(), None);
        let e = public_url_from_toml("public_url = 3\n").unwrap_err();
        assert!(e.to_string().contains("public_url"), "{e}");
    }

    #[test]
    fn tokens_are_long_url_safe_and_distinct() {
        let (a, b) = (new_secret(), new_secret());
        assert_eq!(a.len(), 43);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
        assert_ne!(a, b);
        assert!(same(&a, &a.clone()));
        assert!(!same(&a, &b));
        assert!(!same(&a, &a[..42]));
    }
}
