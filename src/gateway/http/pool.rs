//! The keep-alive connections pass-through reads take to the upstream. A read drives its
//! connection itself, from the request to the answer's last byte, and then gives it back: the
//! answer crosses no other task and wakes no other thread (as in nginx's event loop), where a
//! pooled client's connections each run as a task of their own that every request and every
//! frame of an answer must wake.

use bytes::Bytes;
use http_body_util::Empty;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::http1::{self, Connection, SendRequest};
use hyper::{Request, Response, Uri};
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tower::Service;

type Io = MaybeHttpsStream<TokioIo<TcpStream>>;

/// Idle connections kept at most; past it a connection given back is closed.
const MAX_IDLE: usize = 256;
/// An idle connection older than this is closed rather than used: the upstream may have closed
/// it already (the sandbox closes idle ones after its request timeout, 10 s by default).
const IDLE_FOR: Duration = Duration::from_secs(8);

struct Conn {
    send: SendRequest<Empty<Bytes>>,
    conn: Connection<Io, Empty<Bytes>>,
}

pub struct Pool {
    idle: Mutex<Vec<(Conn, Instant)>>,
    connector: HttpsConnector<HttpConnector>,
    /// The upstream's scheme and authority, for connecting.
    target: Uri,
}

#[derive(Debug)]
pub enum Failed {
    Connect(Box<dyn std::error::Error + Send + Sync>),
    Exchange(hyper::Error),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut reason = match self {
            Failed::Connect(e) => format!("cannot connect: {e}"),
            Failed::Exchange(e) => e.to_string(),
        };
        let mut source = match self {
            Failed::Connect(e) => e.source(),
            Failed::Exchange(e) => std::error::Error::source(e),
        };
        while let Some(s) = source {
            reason = format!("{reason}: {s}");
            source = s.source();
        }
        f.write_str(&reason)
    }
}

impl Pool {
    pub fn new(connector: HttpsConnector<HttpConnector>, target: Uri) -> Pool {
        Pool {
            idle: Mutex::new(Vec::new()),
            connector,
            target,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Conn, Instant)>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends a GET (a read: the upstream may be asked twice) and answers its response, whose body
    /// drives the connection until it ends.
    pub async fn get(
        self: &Arc<Self>,
        req: Request<Empty<Bytes>>,
    ) -> Result<Response<Driven>, Failed> {
        let mut req = req;
        // A connection the upstream closed while it sat idle fails before any answer: the read
        // is sent again, once, on a new one.
        if let Some(mut conn) = self.checkout() {
            let again = same_request(&req);
            match conn.exchange(req).await {
                Ok(resp) => return Ok(self.driven(resp, conn)),
                Err(e) if e.is_canceled() || e.is_incomplete_message() || e.is_closed() => {
                    req = again;
                }
                Err(e) => return Err(Failed::Exchange(e)),
            }
        }
        let mut conn = self.connect().await?;
        let resp = conn.exchange(req).await.map_err(Failed::Exchange)?;
        Ok(self.driven(resp, conn))
    }

    fn driven(self: &Arc<Self>, resp: Response<Incoming>, conn: Conn) -> Response<Driven> {
        resp.map(|body| Driven {
            body,
            conn: Some(conn),
            pool: self.clone(),
        })
    }

    /// The most recently used idle connection that is still open and ready for a request.
    fn checkout(&self) -> Option<Conn> {
        loop {
            let (mut conn, since) = self.lock().pop()?;
            if since.elapsed() > IDLE_FOR {
                // Older ones sit below it: all of them are too old.
                self.lock().clear();
                return None;
            }
            if conn.ready() {
                return Some(conn);
            }
        }
    }

    async fn connect(&self) -> Result<Conn, Failed> {
        let io = self
            .connector
            .clone()
            .call(self.target.clone())
            .await
            .map_err(Failed::Connect)?;
        let (send, conn) = http1::Builder::new()
            .handshake(io)
            .await
            .map_err(Failed::Exchange)?;
        Ok(Conn { send, conn })
    }

    fn give_back(&self, conn: Conn) {
        let mut idle = self.lock();
        if idle.len() < MAX_IDLE {
            idle.push((conn, Instant::now()));
        }
    }
}

/// A GET has no body, so it can be made again for a second attempt.
fn same_request(req: &Request<Empty<Bytes>>) -> Request<Empty<Bytes>> {
    let mut copy = Request::new(Empty::new());
    *copy.method_mut() = req.method().clone();
    *copy.uri_mut() = req.uri().clone();
    *copy.headers_mut() = req.headers().clone();
    copy
}

impl Conn {
    /// Whether the connection takes a request now. It is driven once first, so that it reads
    /// a close the upstream sent while it sat idle, and finishes with its previous answer.
    fn ready(&mut self) -> bool {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        if Pin::new(&mut self.conn).poll(&mut cx).is_ready() {
            return false;
        }
        matches!(self.send.poll_ready(&mut cx), Poll::Ready(Ok(())))
    }

    /// Sends the request and drives the connection until the response's head has come.
    async fn exchange(
        &mut self,
        req: Request<Empty<Bytes>>,
    ) -> Result<Response<Incoming>, hyper::Error> {
        let mut answer = std::pin::pin!(self.send.send_request(req));
        let conn = &mut self.conn;
        // A connection that ended is not polled again; the answer it still owed is failed by
        // its dispatcher, and that failure is what the answer resolves to.
        let mut ended = false;
        std::future::poll_fn(|cx| {
            if !ended {
                ended = Pin::new(&mut *conn).poll(cx).is_ready();
            }
            answer.as_mut().poll(cx)
        })
        .await
    }
}

/// An answer's body that drives its connection, and gives the connection back to the pool once
/// the body has ended. Dropped before its end (the caller went away), the connection is closed.
pub struct Driven {
    body: Incoming,
    conn: Option<Conn>,
    pool: Arc<Pool>,
}

impl Body for Driven {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        if let Some(c) = &mut this.conn
            && Pin::new(&mut c.conn).poll(cx).is_ready()
        {
            // Closed: what it read is in the body already, and nothing more comes.
            this.conn = None;
        }
        let frame = ready!(Pin::new(&mut this.body).poll_frame(cx));
        if frame.is_none() || this.body.is_end_stream() {
            this.give_back();
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Driven {
    fn give_back(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool.give_back(conn);
        }
    }
}

impl Drop for Driven {
    fn drop(&mut self) {
        // An empty body may never be polled; its connection is as reusable as any other.
        if self.body.is_end_stream() {
            self.give_back();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// An upstream that answers each connection's first request and then closes it, as a server
    /// closes an idle keep-alive connection, without saying so in the answer.
    async fn one_answer_per_connection() -> (Uri, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counted = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let mut got = Vec::new();
                    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                        let Ok(k) = sock.read(&mut buf).await else {
                            return;
                        };
                        if k == 0 {
                            return;
                        }
                        got.extend_from_slice(&buf[..k]);
                    }
                    let body = format!("connection {n}");
                    let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len());
                    let _ = sock.write_all(format!("{head}{body}").as_bytes()).await;
                });
            }
        });
        (format!("http://{addr}/").parse().unwrap(), accepted)
    }

    fn pool(target: Uri) -> Arc<Pool> {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        let tls = crate::tls::client_config(&[]).unwrap();
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        Arc::new(Pool::new(connector, target))
    }

    fn get(host: &str) -> Request<Empty<Bytes>> {
        Request::builder()
            .uri("/api/delegated/positions")
            .header("host", host)
            .body(Empty::new())
            .unwrap()
    }

    #[tokio::test]
    async fn a_connection_the_upstream_closed_while_idle_is_not_an_error() {
        let (target, accepted) = one_answer_per_connection().await;
        let host = target.authority().unwrap().to_string();
        let pool = pool(target);
        for i in 1..=3 {
            let resp = pool.get(get(&host)).await.unwrap();
            assert_eq!(resp.status(), 200);
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(body, format!("connection {i}").as_bytes());
            // The close arrives while the connection sits idle, or as the next read is sent.
            if i == 2 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_connection_is_used_again_once_its_answer_is_read() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counted = accepted.clone();
        let app = axum::Router::new().route(
            "/api/delegated/positions",
            axum::routing::get(|| async { "{}" }),
        );
        tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let app = hyper_util::service::TowerToHyperService::new(app.clone());
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(sock), app),
                );
            }
        });
        let pool = pool(format!("http://{addr}/").parse().unwrap());
        for _ in 0..5 {
            let resp = pool.get(get(&addr.to_string())).await.unwrap();
            assert_eq!(
                resp.into_body().collect().await.unwrap().to_bytes(),
                "{}".as_bytes()
            );
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        // An answer dropped before it is read closes its connection rather than leave half an
        // answer on it for the next read.
        drop(pool.get(get(&addr.to_string())).await.unwrap());
        let resp = pool.get(get(&addr.to_string())).await.unwrap();
        assert_eq!(
            resp.into_body().collect().await.unwrap().to_bytes(),
            "{}".as_bytes()
        );
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }
}
