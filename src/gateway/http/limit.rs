//! Per-caller inbound rate limits (governor): a caller is its credential (an agent's key or a
//! supervisor token, by its SHA-256: the limiter holds no secret), else its address; and every
//! address has a limit of its own, four times a caller's, so a sender that makes up a new key for
//! each request (none checked yet at this point) is held by its address. Refusals are the
//! project's 429 shape with `Retry-After`.
//!
//! One [`Limits`] serves both ways in: the router's middleware and the pass-through reads
//! ([`super::read`]), so a caller has one bucket whichever way its requests take.

use super::super::model::error::{GateError, Kind};
use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};
use sha2::{Digest, Sha256};
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

/// A caller as the limiter keys it: fixed-size values, so finding its bucket allocates nothing
/// (this runs on every request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Who {
    /// The SHA-256 of the credential.
    Key([u8; 32]),
    Ip(Option<IpAddr>),
}

/// The one credential a request carries, read the same way by the rate limiter and the MCP edge:
/// its `x-api-key`, or its `Authorization: Bearer` token (trimmed; the scheme in any case). The
/// same key sent both ways, or twice, counts once; two different ones are refused, never one
/// picked: the limiter and the edge would otherwise read different keys and a junk header beside
/// the real one would open a fresh bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential<'a> {
    Absent,
    Key(&'a str),
    Conflicting,
}

pub fn credential(headers: &HeaderMap) -> Credential<'_> {
    let keys = headers
        .get_all("x-api-key")
        .iter()
        .map(|v| v.to_str().map(str::trim).unwrap_or("\u{0}"));
    let bearers = headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .filter_map(|v| {
            let (scheme, rest) = v.to_str().ok()?.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        });
    let mut found = None;
    for k in keys.chain(bearers).filter(|k| !k.is_empty()) {
        match found {
            None => found = Some(k),
            Some(f) if f == k => {}
            Some(_) => return Credential::Conflicting,
        }
    }
    found.map_or(Credential::Absent, Credential::Key)
}

/// What a request with two different credentials is told.
pub const CONFLICTING: &str = "the request carries two different credentials (x-api-key and \
     Authorization: Bearer, or one of them twice); send your key once";

pub fn digest(credential: &str) -> [u8; 32] {
    Sha256::digest(credential.as_bytes()).into()
}

/// The gateway's two limits, by caller and by address. `None` when the config turns them off
/// (0 a second).
pub struct Limits {
    caller: Arc<DefaultKeyedRateLimiter<Who>>,
    address: Arc<DefaultKeyedRateLimiter<Who>>,
}

impl Limits {
    pub fn new(per_second: u32, burst: u32) -> Option<Arc<Limits>> {
        if per_second == 0 {
            return None;
        }
        let quota = |per_second: u32, burst: u32| {
            let period = Duration::from_nanos(1_000_000_000 / u64::from(per_second.max(1)));
            Quota::with_period(period)
                .expect("a positive period makes a valid quota")
                .allow_burst(NonZeroU32::new(burst.max(1)).expect("at least one"))
        };
        let limits = Arc::new(Limits {
            caller: Arc::new(DefaultKeyedRateLimiter::keyed(quota(per_second, burst))),
            address: Arc::new(DefaultKeyedRateLimiter::keyed(quota(
                per_second.saturating_mul(4),
                burst.saturating_mul(4),
            ))),
        });
        // Buckets of callers gone quiet are dropped, so the maps do not grow with every key.
        let (caller, address) = (
            Arc::downgrade(&limits.caller),
            Arc::downgrade(&limits.address),
        );
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(60));
            tick.tick().await;
            loop {
                tick.tick().await;
                let (Some(caller), Some(address)) = (caller.upgrade(), address.upgrade()) else {
                    break;
                };
                caller.retain_recent();
                address.retain_recent();
            }
        });
        Some(limits)
    }

    /// [`Limits::check`], with a refusal as it is answered: the 429 with `Retry-After`, closing
    /// its connection (requests pipelined behind it are dropped unread). Both ways in answer it.
    pub fn refused(&self, ip: Option<IpAddr>, credential: Option<[u8; 32]>) -> Option<Response> {
        let e = self.check(ip, credential).err()?;
        Some(crate::edge::closing(e.into_response()))
    }

    /// The address's limit first: a made-up key gets no bucket of its own past it.
    pub fn check(&self, ip: Option<IpAddr>, credential: Option<[u8; 32]>) -> Result<(), GateError> {
        let who = match credential {
            Some(d) => Who::Key(d),
            None => Who::Ip(ip),
        };
        for (limiter, key) in [(&self.address, Who::Ip(ip)), (&self.caller, who)] {
            if let Err(not_until) = limiter.check_key(&key) {
                let wait = not_until.wait_time_from(DefaultClock::default().now());
                return Err(refused(wait.as_secs()));
            }
        }
        Ok(())
    }
}

fn refused(wait_secs: u64) -> GateError {
    let secs = wait_secs.max(1);
    let mut e = GateError::new(
        Kind::RateLimited,
        "rate_limited",
        format!(
            "too many requests from this caller; this gateway allows a burst and then a \
             steady pace ([gate] rate_limit_per_second); try again in {secs} s"
        ),
    );
    e.retry_after = Some(secs);
    e
}

/// What the limits answer a request of the router's instead of serving it, if anything: the
/// caller's two credentials, or its limit reached (the 429 carries `Retry-After` and closes the
/// connection).
pub fn refusal(limits: &Limits, req: &Request) -> Option<Response> {
    let ip = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip());
    let credential = match credential(req.headers()) {
        Credential::Absent => None,
        Credential::Key(k) => Some(digest(k)),
        Credential::Conflicting => {
            return Some(
                GateError::new(Kind::Unauthorized, "unauthorized", CONFLICTING).into_response(),
            );
        }
    };
    limits.refused(ip, credential)
}
