//! The accept loop of both servers. `axum::serve` has no header-read timeout and no connection cap,
//! so a client that opens connections and sends half a request could hold them forever; this loop
//! serves each connection with hyper's own builder (the one axum uses) with both. Every request
//! carries its peer's address (`ConnectInfo`), which the gateway's rate limits key on.

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::Request;
use axum::response::Response;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tower::Layer;

/// The gateway's connection cap (the sandbox's is its `max_connections` setting).
pub const MAX_CONNECTIONS: usize = 1024;

/// Connections one address may hold at once: a quarter of the cap, at most 256. A client that
/// opens half requests by the thousand (slowloris) holds these, and the rest serve everyone else.
/// Far above what an agent, or a gateway's pool in front of a sandbox, keeps open. (A cap under
/// 8, a test's, is all one address's.)
pub fn per_address(max_connections: usize) -> usize {
    match max_connections {
        0..8 => max_connections,
        n => (n / 4).min(256),
    }
}

/// HTTP/2 streams one connection may have open at once: a few h2c connections opening streams
/// whose bodies never come cannot take every request permit.
pub const MAX_STREAMS: u32 = 32;

pub struct Limits {
    /// For a request head, from the connection's start or its previous response.
    pub header_timeout: Duration,
    pub max_connections: usize,
}

type WithPeer = <axum::Extension<ConnectInfo<SocketAddr>> as Layer<Router>>::Service;

/// A router served as it is, with each request carrying its peer's address.
pub fn with_peer(app: Router) -> impl Fn(SocketAddr) -> WithPeer {
    move |peer| axum::Extension(ConnectInfo(peer)).layer(app.clone())
}

/// Serves what `service_for` makes for each connection (from its peer's address) until
/// `shutdown` resolves, then lets open connections finish their requests.
pub async fn serve<M, S>(
    listener: TcpListener,
    service_for: M,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) where
    M: Fn(SocketAddr) -> S,
    S: tower::Service<Request<Incoming>, Response = Response, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // Since hyper 1.6 this timer also runs while a keep-alive connection waits for its next
    // request, so it is the idle timeout as well.
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_STREAMS)
        .keep_alive_interval(limits.header_timeout)
        .keep_alive_timeout(limits.header_timeout);
    let builder = Arc::new(builder);
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let by_address = Arc::new(crate::edge::ByAddress::new(per_address(
        limits.max_connections,
    )));
    let (stopping, stop) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        // A connection is accepted only with a permit, so past the cap new ones wait in the
        // kernel's listen queue rather than being served by nobody.
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: pause rather than spin.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // One address past its share is closed at once: its connections wait for nothing, and
        // cost the others nothing.
        let Some(held) = by_address.take(peer.ip()) else {
            metrics::counter!("agentdesk_http_refused_connections_total", "why" => "per_address")
                .increment(1);
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(service_for(peer));
        let (builder, mut stop) = (builder.clone(), stop.clone());
        tokio::spawn(async move {
            let io = TokioIo::new(stream);
            let conn = builder.serve_connection_with_upgrades(io, service);
            let mut conn = std::pin::pin!(conn);
            let served = tokio::select! {
                served = conn.as_mut() => served,
                () = stopped(&mut stop) => {
                    // Stopping: the request being served is answered, and no other is read.
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = served {
                tracing::debug!("connection closed: {e}");
            }
            drop(held);
            drop(permit);
        });
    }
    drop(listener);
    let _ = stopping.send(true);
    // Every connection holds a permit until it is closed: all of them back, all are closed. One
    // still busy after the header timeout (an answer to a client that stopped reading) is not
    // waited for: it ends with the runtime.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(limits.header_timeout, permits.acquire_many(all)).await;
}

/// Resolves once the server stops.
pub async fn stopped(stop: &mut watch::Receiver<bool>) {
    // An error is a server that went away: stopped as well.
    let _ = stop.wait_for(|stopped| *stopped).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_holds_its_share_and_gives_it_back() {
        let by = Arc::new(crate::edge::ByAddress::new(2));
        let (a, b): (std::net::IpAddr, std::net::IpAddr) =
            ("127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap());
        let first = by.take(a).unwrap();
        let _second = by.take(a).unwrap();
        assert!(by.take(a).is_none(), "past its share");
        assert!(by.take(b).is_some(), "another address is not held up");
        drop(first);
        assert!(by.take(a).is_some(), "given back");
    }
}
