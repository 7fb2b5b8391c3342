//! Per-caller inbound rate limits (tower_governor): a caller is its credential (an agent's key or
//! a supervisor token, by its SHA-256: the limiter holds no secret), else its address; and every
//! address has a limit of its own, four times a caller's, so a sender that makes up a new key for
//! each request (none checked yet at this point) is held by its address. Refusals are the
//! project's 429 shape with `Retry-After`.

use super::super::error::{GateError, Kind};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Request, Response, header};
use axum::response::IntoResponse;
use sha2::{Digest, Sha256};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use tower_governor::GovernorError;
use tower_governor::governor::GovernorConfigBuilder;
use tower_governor::key_extractor::KeyExtractor;

#[derive(Clone)]
pub struct Caller;

#[derive(Clone)]
pub struct Address;

/// A caller as the limiter keys it: fixed-size values, so finding its bucket allocates nothing
/// (this runs on every request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Who {
    /// The SHA-256 of the credential.
    Key([u8; 32]),
    Ip(Option<IpAddr>),
}

impl KeyExtractor for Address {
    type Key = Who;

    fn extract<T>(&self, req: &Request<T>) -> Result<Who, GovernorError> {
        Ok(Who::Ip(
            req.extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(addr)| addr.ip()),
        ))
    }
}

impl KeyExtractor for Caller {
    type Key = Who;

    fn extract<T>(&self, req: &Request<T>) -> Result<Who, GovernorError> {
        let credential = req
            .headers()
            .get("x-api-key")
            .or_else(|| req.headers().get(header::AUTHORIZATION))
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty());
        match credential {
            Some(c) => Ok(Who::Key(Sha256::digest(c.as_bytes()).into())),
            None => Address.extract(req),
        }
    }
}

fn refused(e: GovernorError) -> Response<Body> {
    match e {
        GovernorError::TooManyRequests { wait_time, .. } => {
            let secs = wait_time.max(1);
            let mut e = GateError::new(
                Kind::RateLimited,
                "rate_limited",
                format!(
                    "too many requests from this caller; this gateway allows a burst and then a \
                     steady pace ([gate] rate_limit_per_second); try again in {secs} s"
                ),
            );
            e.retry_after = Some(secs);
            let mut resp = e.into_response();
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            resp
        }
        other => {
            GateError::new(Kind::Internal, "rate_limit_failed", other.to_string()).into_response()
        }
    }
}

/// The routes behind the limits; unchanged when the config turns them off (0 a second).
pub fn limited(routes: axum::Router, per_second: u32, burst: u32) -> axum::Router {
    if per_second == 0 {
        return routes;
    }
    // The address's limit runs first (the outer layer): a made-up key gets no bucket of its own
    // past it.
    let routes = behind!(routes, Caller, per_second, burst);
    behind!(
        routes,
        Address,
        per_second.saturating_mul(4),
        burst.saturating_mul(4)
    )
}

/// A macro, not a function: the limiter's middleware type is private to tower_governor, so it
/// cannot be named in a signature.
macro_rules! behind {
    ($routes:expr, $key:expr, $per_second:expr, $burst:expr) => {{
        let config = GovernorConfigBuilder::default()
            .per_nanosecond(1_000_000_000 / u64::from(($per_second as u32).max(1)))
            .burst_size(($burst as u32).max(1))
            .key_extractor($key)
            .finish()
            .expect("a positive period and burst make a valid limit");
        let config = Arc::new(config);
        // Buckets of callers gone quiet are dropped, so the map does not grow with every key.
        let limiter = config.limiter().clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
            loop {
                tick.tick().await;
                limiter.retain_recent();
            }
        });
        $routes.layer(tower_governor::GovernorLayer::new(config).error_handler(refused))
    }};
}
use behind;
