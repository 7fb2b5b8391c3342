//! Notifications: each new item that waits for a human is POSTed to every `[[notify]]` destination,
//! signed with Standard Webhooks ([`crate::api::webhook_sig`]), retried with backoff. The body
//! carries a Slack-compatible `text`, so an incoming-webhook URL works as it is.
//!
//! Destinations come from the supervisor's config, yet a URL that resolves inside the gateway's
//! network is still refused unless its host is in `allow_hosts`: the same SSRF rules the sandbox
//! applies to signal destinations, checked at every delivery and pinned to the checked addresses
//! so a second DNS answer cannot move the connection.

use crate::api::{ssrf, webhook_sig};
use crate::tls::TlsError;
use serde::Deserialize;
use serde_json::Value;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

/// One `[[notify]]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Destination {
    /// An `https://` URL.
    pub url: String,
    /// A Standard Webhooks secret, `whsec_` + base64.
    pub secret: String,
    /// Hosts allowed although they are loopback, private or otherwise internal.
    #[serde(default)]
    pub allow_hosts: Vec<String>,
    /// A PEM file of extra root certificates to trust (a receiver with its own CA).
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// Deliveries tried per item, the first included.
    #[serde(default = "default_attempts")]
    pub max_attempts: u32,
}

fn default_attempts() -> u32 {
    5
}

// reqwest names the URL parser's error only through this.
type UrlError = <reqwest::Url as std::str::FromStr>::Err;

/// A `[[notify]]` table the gateway cannot deliver to.
#[derive(Debug, thiserror::Error)]
pub enum DestinationError {
    #[error(transparent)]
    Toml(#[from] toml::de::Error),
    #[error("notify.url {url:?} is not a URL ({source})")]
    NotUrl { url: String, source: UrlError },
    #[error("notify.url must use https, got {0}:// (notifications describe trades)")]
    NotHttps(String),
    #[error("notify.url must name a host")]
    NoHost,
    #[error("notify.url must not carry credentials; the signature authenticates")]
    Credentials,
    #[error("notify.secret must be a whsec_ secret ({0})")]
    Secret(#[source] webhook_sig::Error),
    #[error("notify.max_attempts must be at least 1")]
    NoAttempts,
    #[error("notify.ca_file {0}")]
    CaFile(#[source] TlsError),
}

/// Why a notification did not reach its destination.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    #[error("{0}")]
    Url(#[source] UrlError),
    #[error("{0} is a cloud metadata service")]
    Metadata(String),
    #[error("{0} did not resolve in time")]
    ResolveTimeout(String),
    #[error("{host} does not resolve: {source}")]
    Unresolved {
        host: String,
        source: std::io::Error,
    },
    #[error("{0} resolves to no address")]
    NoAddress(String),
    #[error("{host} resolves to {ip}, {why}; add it to allow_hosts to notify it")]
    Internal {
        host: String,
        ip: IpAddr,
        why: &'static str,
    },
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error(transparent)]
    Http(#[from] reqwest::Error),
    #[error(transparent)]
    Sign(#[from] webhook_sig::Error),
    #[error("HTTP {0}")]
    Status(reqwest::StatusCode),
    /// `last` is `None` only when no attempt was allowed.
    #[error("{attempts} attempts, the last: {}", last.as_ref().map(ToString::to_string).unwrap_or_default())]
    Exhausted {
        attempts: u32,
        last: Option<Box<DeliveryError>>,
    },
}

impl Destination {
    pub fn validate(&self) -> Result<(), DestinationError> {
        let url =
            reqwest::Url::parse(self.url.trim()).map_err(|source| DestinationError::NotUrl {
                url: self.url.clone(),
                source,
            })?;
        if url.scheme() != "https" {
            return Err(DestinationError::NotHttps(url.scheme().to_string()));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(DestinationError::NoHost);
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(DestinationError::Credentials);
        }
        webhook_sig::secret_key(&self.secret).map_err(DestinationError::Secret)?;
        if self.max_attempts == 0 {
            return Err(DestinationError::NoAttempts);
        }
        if let Some(ca) = &self.ca_file {
            crate::tls::read_pem(ca).map_err(DestinationError::CaFile)?;
        }
        Ok(())
    }
}

/// The `[[notify]]` tables of a config file.
pub fn from_toml(text: &str) -> Result<Vec<Destination>, DestinationError> {
    #[derive(Deserialize)]
    struct File {
        #[serde(default)]
        notify: Vec<Destination>,
    }
    let file: File = toml::from_str(text)?;
    for d in &file.notify {
        d.validate()?;
    }
    Ok(file.notify)
}

/// The addresses a delivery may connect to, after the SSRF rules.
async fn resolve(
    d: &Destination,
) -> Result<(reqwest::Url, String, Vec<SocketAddr>), DeliveryError> {
    let url = reqwest::Url::parse(d.url.trim()).map_err(DeliveryError::Url)?;
    let host = url
        .host_str()
        .unwrap_or("")
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let allowed = d.allow_hosts.iter().any(|h| h.eq_ignore_ascii_case(&host));
    if !allowed && ssrf::METADATA_HOSTS.contains(&host.trim_end_matches('.')) {
        return Err(DeliveryError::Metadata(host));
    }
    let port = url.port_or_known_default().unwrap_or(443);
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::time::timeout(
            Duration::from_secs(5),
            tokio::net::lookup_host((host.as_str(), port)),
        )
        .await
        .map_err(|_| DeliveryError::ResolveTimeout(host.clone()))?
        .map_err(|source| DeliveryError::Unresolved {
            host: host.clone(),
            source,
        })?
        .collect(),
    };
    if addrs.is_empty() {
        return Err(DeliveryError::NoAddress(host));
    }
    if !allowed {
        for a in &addrs {
            if let Some(why) = ssrf::forbidden_reason(a.ip()) {
                return Err(DeliveryError::Internal {
                    host,
                    ip: a.ip(),
                    why,
                });
            }
        }
    }
    Ok((url, host, addrs))
}

/// Sends notifications in the background; a slow receiver never holds up an agent.
#[derive(Clone)]
pub struct Notifier {
    destinations: std::sync::Arc<Vec<Destination>>,
    /// First retry delay; doubled at each attempt.
    backoff: Duration,
}

impl Notifier {
    pub fn new(destinations: Vec<Destination>) -> Self {
        Notifier {
            destinations: std::sync::Arc::new(destinations),
            backoff: Duration::from_millis(500),
        }
    }

    /// Delivers `body` (an item waiting for a human) to every destination.
    pub fn send(&self, msg_id: String, body: Value) {
        for d in self.destinations.iter().cloned() {
            let (msg_id, body, backoff) = (msg_id.clone(), body.clone(), self.backoff);
            tokio::spawn(async move {
                if let Err(e) = deliver(&d, &msg_id, &body, backoff).await {
                    tracing::warn!(url = %d.url, "notification not delivered: {e}");
                }
            });
        }
    }
}

async fn deliver(
    d: &Destination,
    msg_id: &str,
    body: &Value,
    backoff: Duration,
) -> Result<(), DeliveryError> {
    let payload = body.to_string();
    let mut delay = backoff;
    let mut last = None;
    for attempt in 1..=d.max_attempts {
        match attempt_once(d, msg_id, payload.as_bytes()).await {
            Ok(()) => return Ok(()),
            Err(e) => last = Some(Box::new(e)),
        }
        if attempt < d.max_attempts {
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(60));
        }
    }
    metrics::counter!("agentdesk_gateway_notification_failures_total").increment(1);
    Err(DeliveryError::Exhausted {
        attempts: d.max_attempts,
        last,
    })
}

async fn attempt_once(d: &Destination, msg_id: &str, payload: &[u8]) -> Result<(), DeliveryError> {
    let (url, host, addrs) = resolve(d).await?;
    let mut client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .resolve_to_addrs(&host, &addrs);
    // The same trust as signal deliveries (crate::tls): the web's roots, the listed
    // certificates as roots, and a listed self-signed certificate as the receiver's own.
    if let Some(ca) = &d.ca_file {
        let listed = crate::tls::read_pem(ca)?;
        client = client.use_preconfigured_tls(crate::tls::client_config(&listed)?);
    }
    let client = client.build()?;
    let headers =
        webhook_sig::signed_headers(&d.secret, msg_id, chrono::Utc::now().timestamp(), payload)?;
    let mut req = client
        .post(url)
        .header("content-type", "application/json")
        .body(payload.to_vec());
    for (name, value) in headers {
        req = req.header(name, value);
    }
    let resp = req.send().await?;
    if resp.status().is_success() {
        Ok(())
    } else {
        Err(DeliveryError::Status(resp.status()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_refused_and_public_ones_pass() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "169.254.169.254",
            "::1",
            "fd00::1",
            "::ffff:192.168.1.1",
        ] {
            assert!(
                ssrf::forbidden_reason(ip.parse().unwrap()).is_some(),
                "{ip}"
            );
        }
        for ip in ["93.184.216.34", "2606:4700::1111"] {
            assert!(
                ssrf::forbidden_reason(ip.parse().unwrap()).is_none(),
                "{ip}"
            );
        }
        let d = |url: &str| Destination {
            url: url.into(),
            secret: webhook_sig::new_secret(),
            allow_hosts: vec![],
            ca_file: None,
            max_attempts: 3,
        };
        assert!(d("https://hooks.example.com/x").validate().is_ok());
        assert!(
            d("http://hooks.example.com/x")
                .validate()
                .unwrap_err()
                .to_string()
                .contains("https")
        );
        let mut bad = d("https://hooks.example.com/x");
        bad.secret = "nope".into();
        assert!(bad.validate().unwrap_err().to_string().contains("whsec_"));
    }

    #[tokio::test]
    async fn a_loopback_receiver_needs_allow_hosts() {
        let mut d = Destination {
            url: "https://127.0.0.1:9/hook".into(),
            secret: webhook_sig::new_secret(),
            allow_hosts: vec![],
            ca_file: None,
            max_attempts: 1,
        };
        assert!(
            resolve(&d)
                .await
                .unwrap_err()
                .to_string()
                .contains("loopback")
        );
        d.allow_hosts = vec!["127.0.0.1".into()];
        assert!(resolve(&d).await.is_ok());
    }
}
