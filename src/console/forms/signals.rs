//! The Signals tab's overlays: the destination create form (every field checked before anything
//! is sent), the signing secret shown once, and the builder-fee panel.

use crate::secret::Secret;

/// Directions a destination may filter on.
pub const DIRECTIONS: &[&str] = &["BUY", "SELL", "CLOSE"];

/// The create form. Every field is checked before anything is sent.
#[derive(Debug, Clone, PartialEq)]
pub struct DestinationForm {
    /// name, url, strategies, directions.
    pub fields: [String; 4],
    pub focus: usize,
    /// Problems found by the last check (or the service's refusal), one per line.
    pub problems: Vec<String>,
    pub sending: bool,
}

pub const FORM_LABELS: [&str; 4] = ["name", "url", "strategies", "directions"];

impl Default for DestinationForm {
    fn default() -> Self {
        DestinationForm {
            fields: [
                String::new(),
                "https://".into(),
                "*".into(),
                DIRECTIONS.join(","),
            ],
            focus: 0,
            problems: Vec::new(),
            sending: false,
        }
    }
}

/// A checked create request.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDestination {
    pub name: String,
    pub url: String,
    pub strategy_ids: Vec<String>,
    pub directions: Vec<String>,
}

impl DestinationForm {
    /// The request, or every problem with the fields.
    pub fn validate(&self) -> Result<NewDestination, Vec<String>> {
        let [name, url, strategies, directions] = &self.fields;
        let mut problems = Vec::new();
        let name = name.trim();
        if name.is_empty() {
            problems.push("name: required".to_string());
        } else if name.chars().count() > 64 {
            problems.push("name: at most 64 characters".to_string());
        }
        let url = url.trim();
        if let Err(why) = check_https_url(url) {
            problems.push(format!("url: {why}"));
        }
        let strategy_ids = split_list(strategies);
        if strategy_ids.is_empty() {
            problems.push("strategies: list strategy ids, or * for all".to_string());
        } else if strategy_ids.len() > 1 && strategy_ids.iter().any(|s| s == "*") {
            problems.push("strategies: * stands alone (it means every strategy)".to_string());
        } else if let Some(bad) = strategy_ids.iter().find(|s| {
            s.as_str() != "*"
                && !s
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        }) {
            problems.push(format!(
                "strategies: `{bad}` is not a strategy id (letters, digits, _ - .)"
            ));
        }
        let mut dirs = Vec::new();
        for d in split_list(directions) {
            let up = d.to_ascii_uppercase();
            if !DIRECTIONS.contains(&up.as_str()) {
                problems.push(format!(
                    "directions: `{d}` is not one of {}",
                    DIRECTIONS.join(", ")
                ));
            } else if !dirs.contains(&up) {
                dirs.push(up);
            }
        }
        if dirs.is_empty() && !problems.iter().any(|p| p.starts_with("directions")) {
            problems.push(format!(
                "directions: at least one of {}",
                DIRECTIONS.join(", ")
            ));
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(NewDestination {
            name: name.to_string(),
            url: url.to_string(),
            strategy_ids,
            directions: dirs,
        })
    }
}

fn split_list(text: &str) -> Vec<String> {
    text.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Why a destination URL is refused; the form shows it after `url: `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("must start with https://")]
    NotHttps,
    #[error("must not contain spaces")]
    Spaces,
    #[error("must not carry credentials (user@host)")]
    Credentials,
    #[error("invalid port `{0}`")]
    Port(String),
    #[error("needs a host, e.g. https://example.com/hook")]
    NoHost,
}

/// An absolute `https://` URL with a host, no spaces and no credentials.
pub fn check_https_url(url: &str) -> Result<(), UrlError> {
    let Some(rest) = url.strip_prefix("https://") else {
        return Err(UrlError::NotHttps);
    };
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(UrlError::Spaces);
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err(UrlError::Credentials);
    }
    let (host, port) = match authority.find(']') {
        Some(end) => (&authority[..=end], authority[end + 1..].strip_prefix(':')),
        None => match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        },
    };
    if let Some(port) = port
        && port.parse::<u16>().is_err()
    {
        return Err(UrlError::Port(port.to_string()));
    }
    if host.is_empty() || host.starts_with('.') || host.starts_with('-') {
        return Err(UrlError::NoHost);
    }
    Ok(())
}

/// The signing secret of a destination just created, shown once in an overlay. Dropped when the
/// overlay closes.
#[derive(Debug, Clone, PartialEq)]
pub struct Revealed {
    pub name: String,
    pub id: String,
    pub secret: Secret,
    pub copied: bool,
}

/// The builder-fee approval payload, as far as the console reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct BuilderPayload {
    pub typed: Option<crate::api::eip712::TypedData>,
    pub authorized: bool,
    pub nonce: Option<u64>,
    /// `signatureChainId` for the POST (hex), from the payload or the domain's chainId.
    pub chain_id_hex: Option<String>,
}

/// The builder-fee panel (an overlay).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BuilderPanel {
    /// The account's wallet (whoami's `walletAddress`).
    pub wallet: Option<String>,
    pub loading: bool,
    pub payload: Option<BuilderPayload>,
    /// Why the panel cannot go on (no wallet, no key, wrong key, the service's refusal).
    pub error: Option<String>,
    pub sending: bool,
    /// The service's answer to the approval.
    pub result: Option<String>,
    pub scroll: u16,
    /// Signing authorizes fees on the account: the guard every final question shares
    /// (`deliberate.rs`), from the panel's opening.
    pub guard: Option<crate::console::deliberate::Deliberate>,
}
