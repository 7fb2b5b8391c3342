//! The gateway's own HTTP/1.1 front for the requests most agents send most: a GET of a catalog
//! read with an agent's key and no body. A connection is served here while its requests are such
//! reads; at the first that is not (a body, a supervisor's token, another method, path or version,
//! an upgrade, a head that does not parse), the connection and every byte read from it go to
//! hyper, which serves it from that request on ([`crate::edge::serve`]). The reads are served on
//! a thread of their own, one event loop as nginx's worker is. A forwarded read costs about 5 µs
//! of user CPU here, against 13-15 µs through hyper's server and client (benches/README.md).
//!
//! Why this is safe to write by hand: a request is taken only when its framing cannot be read two
//! ways. It has no `Content-Length`, no `Transfer-Encoding`, no `Expect` and no `Upgrade`, so its
//! body is empty (RFC 9112 §6.3) and the next byte is the next request's, exactly as hyper would
//! read it. Its head is parsed once, by hyper's own parser (`httparse`), and what goes upstream is
//! a head written from the parsed pieces, never the bytes that came: the upstream sees one GET
//! per read, whatever was sent.

use super::super::upstream::not_forwarded;
use super::GATEWAY_HEADER;
use super::pool::{Answer, Failed, Pool, Streamed};
use super::read::{Call, KeyMemo, Outcome, Reads, agent_key_of, line};
use crate::api::catalog::Operation;
use crate::edge::{self, REQUEST_ID};
use axum::http::StatusCode;
use axum::http::uri::PathAndQuery;
use axum::response::Response;
use bytes::{Buf, Bytes, BytesMut};
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// A head larger than this is left to hyper, which answers it.
const MAX_HEAD: usize = 16 * 1024;
/// Headers a read may have here; one with more is left to hyper.
const MAX_HEADERS: usize = 64;
/// A body up to this size is sent in the same write as its head.
const ONE_WRITE: usize = 64 * 1024;
/// The gateway's own answers are a sentence of JSON.
const OWN_BODY: usize = 1024 * 1024;

pub struct Lane {
    reads: Arc<Reads>,
    /// The gateway's timeout: for a request head, from the connection's start or its previous
    /// answer (hyper's `header_read_timeout`, which the rest of the connection has), and for each
    /// part of an answer from the upstream and each write of it to the client.
    header_timeout: Duration,
    /// The runtime of the thread the reads are served on, and its upstream connections.
    runtime: tokio::runtime::Handle,
    pool: Arc<Pool>,
    /// Dropped with the lane, which ends its thread.
    _end: tokio::sync::oneshot::Sender<()>,
}

/// Whether the buffer holds a head's end: a line feed and then an empty line (a bare line feed
/// ends a line for `httparse`, as for hyper). What ends there is parsed; what does not parse whole
/// is hyper's.
fn head_ended(buf: &[u8]) -> bool {
    buf.iter()
        .enumerate()
        .any(|(i, &b)| b == b'\n' && matches!(&buf[i + 1..], [b'\n', ..] | [b'\r', b'\n', ..]))
}

/// A request this front takes.
struct Taken<'a> {
    op: &'static Operation,
    key: &'a str,
    id: Option<&'a [u8]>,
    target: &'a str,
}

impl Lane {
    /// Starts the thread the reads are served on.
    pub fn new(reads: Arc<Reads>, header_timeout: Duration) -> Result<Lane, String> {
        let (handle_tx, handle_rx) = std::sync::mpsc::channel();
        let (end, ended) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("agentdesk-reads".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                let runtime = match runtime {
                    Ok(runtime) => runtime,
                    Err(e) => return drop(handle_tx.send(Err(e.to_string()))),
                };
                let _ = handle_tx.send(Ok(runtime.handle().clone()));
                runtime.block_on(async {
                    let _ = ended.await;
                });
            })
            .map_err(|e| format!("cannot start the thread that serves reads: {e}"))?;
        let runtime = handle_rx
            .recv()
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("cannot start the runtime that serves reads: {e}"))?;
        Ok(Lane {
            pool: reads.pool(),
            reads,
            header_timeout,
            runtime,
            _end: end,
        })
    }

    /// Serves the connection's reads on the lane's own thread: one event loop, as nginx's worker,
    /// so that a read and its upstream's answer wake no other thread, and a supervisor's heavier
    /// requests (an inbox of thousands, an approval's store writes) on the gateway's runtime do
    /// not hold agents' reads back. Answers the connection and all that was read of the first
    /// request it does not take, for hyper to serve; `None` once the connection is closed.
    pub async fn serve(
        self: Arc<Self>,
        io: TcpStream,
        peer: SocketAddr,
        stop: watch::Receiver<bool>,
    ) -> Option<(TcpStream, Bytes)> {
        // A socket is woken by the runtime it is registered with: it moves with the connection.
        let io = io.into_std().ok()?;
        let lane = self.clone();
        let (io, read) = self
            .runtime
            .spawn(async move {
                let io = TcpStream::from_std(io).ok()?;
                let (io, read) = lane.serve_here(io, peer, stop).await?;
                Some((io.into_std().ok()?, read))
            })
            .await
            .ok()??;
        Some((TcpStream::from_std(io).ok()?, read))
    }

    async fn serve_here(
        &self,
        mut io: TcpStream,
        peer: SocketAddr,
        mut stop: watch::Receiver<bool>,
    ) -> Option<(TcpStream, Bytes)> {
        let mut buf = BytesMut::with_capacity(4096);
        let mut out = Vec::with_capacity(4096);
        let mut memo = KeyMemo::default();
        // The connection's start, then its previous answer's end: a head's deadline runs from it.
        let mut since = Instant::now();
        loop {
            let deadline = tokio::time::Instant::from_std(since) + self.header_timeout;
            // Where the head's end was looked for already (a head that comes a byte at a time
            // is not scanned again from its start on each byte).
            let mut seen = 0usize;
            while !head_ended(&buf[seen.saturating_sub(2)..]) {
                seen = buf.len();
                if buf.len() > MAX_HEAD {
                    return Some((io, buf.freeze()));
                }
                if buf.capacity() - buf.len() < 1024 {
                    buf.reserve(4096);
                }
                // An idle connection, or a head that stops arriving, is closed, as hyper closes
                // it; so is one that waits for its next request when the server stops.
                tokio::select! {
                    read = tokio::time::timeout_at(deadline, io.read_buf(&mut buf)) => match read {
                        Ok(Ok(n)) if n > 0 => {}
                        _ => return None,
                    },
                    () = crate::edge::serve::stopped(&mut stop) => return None,
                }
            }
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut req = httparse::Request::new(&mut headers);
            let len = match req.parse(&buf) {
                Ok(httparse::Status::Complete(len)) => len,
                _ => return Some((io, buf.freeze())),
            };
            let Some(taken) = self.take(&req) else {
                return Some((io, buf.freeze()));
            };
            let answered = self
                .answer(&taken, req.headers, peer, &mut out, &mut io, &mut memo)
                .await;
            match answered {
                Some(end) => since = end,
                None => return None,
            }
            buf.advance(len);
        }
    }

    /// The read, if this front takes it.
    fn take<'b>(&self, req: &httparse::Request<'_, 'b>) -> Option<Taken<'b>> {
        if req.method != Some("GET") || req.version != Some(1) {
            return None;
        }
        let target = req.path?;
        // As hyper reads a request target: an origin-form path that `http` accepts whole.
        let pq: PathAndQuery = target.parse().ok()?;
        if !target.starts_with('/') || pq.as_str() != target {
            return None;
        }
        let mut key = None;
        let mut id = None;
        for h in req.headers.iter() {
            let name = h.name.as_bytes();
            if [
                b"content-length".as_slice(),
                b"transfer-encoding",
                b"expect",
                b"upgrade",
            ]
            .iter()
            .any(|n| name.eq_ignore_ascii_case(n))
            {
                return None;
            }
            if name.eq_ignore_ascii_case(b"connection") {
                // Only a connection that stays open: a close is hyper's to do.
                let keep_alive = h
                    .value
                    .split(|&b| b == b',')
                    .all(|t| t.trim_ascii().eq_ignore_ascii_case(b"keep-alive"));
                if !keep_alive {
                    return None;
                }
            } else if name.eq_ignore_ascii_case(b"x-api-key") {
                if key.is_some() {
                    return None;
                }
                key = Some(h.value);
            } else if name.eq_ignore_ascii_case(REQUEST_ID.as_bytes()) && id.is_none() {
                id = Some(h.value);
            }
        }
        let key = agent_key_of(key?)?;
        let op = self.reads.route(pq.path(), key)?;
        Some(Taken {
            op,
            key,
            id: id.filter(|id| edge::sane_id(id)),
            target,
        })
    }

    /// Forwards the read and writes its answer; when the answer was written, or `None` when
    /// the connection is to be closed.
    async fn answer(
        &self,
        taken: &Taken<'_>,
        headers: &[httparse::Header<'_>],
        peer: SocketAddr,
        out: &mut Vec<u8>,
        io: &mut TcpStream,
        memo: &mut KeyMemo,
    ) -> Option<Instant> {
        let start = Instant::now();
        let fresh;
        let id = match taken.id {
            Some(id) => id,
            None => {
                fresh = edge::fresh_id();
                fresh.as_bytes()
            }
        };
        let call = Call {
            start,
            op: taken.op,
            peer,
            key: taken.key,
            id,
            target: taken.target,
        };
        let forwarded = headers.iter().map(|h| (h.name.as_bytes(), h.value));
        let outcome = self.reads.forward(call, forwarded, &self.pool, memo).await;
        out.clear();
        let (status, mut body, at) = match outcome {
            Outcome::Upstream(answer, at) => {
                match upstream_head(out, answer, self.header_timeout).await {
                    Ok((status, body)) => (status, body, at),
                    Err(e) => {
                        out.clear();
                        let failed = self.reads.failed(taken.op, id, taken.target, &e);
                        let (status, body) = own_head(out, failed).await;
                        (status, body, Instant::now())
                    }
                }
            }
            Outcome::Own(resp) => {
                let (status, body) = own_head(out, resp).await;
                (status, body, Instant::now())
            }
        };
        line(out, REQUEST_ID.as_bytes(), id);
        line(out, GATEWAY_HEADER.as_bytes(), b"1");
        let close = matches!(body, Body::Closing(_));
        if close {
            line(out, b"connection", b"close");
        }
        out.extend_from_slice(b"\r\n");
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
        edge::record("gateway", taken.op.name, status, at.duration_since(start));
        let mut sink = Sink {
            io,
            wait: self.header_timeout,
        };
        match body.send(out, &mut sink).await {
            // The next head's wait runs from here: a long answer does not shorten it.
            Ok(()) if !close => Some(Instant::now()),
            _ => None,
        }
    }
}

/// An answer's body, as this front sends it.
enum Body {
    /// All of it, framed by a length.
    Whole(Bytes),
    /// All of it, and the connection closes after it.
    Closing(Bytes),
    /// The first part, framed by the length given, and the rest as it comes.
    Length(Bytes, Streamed),
    /// The first part and the rest as it comes, sent chunked: the upstream gave no length.
    Chunked(Bytes, Streamed),
}

/// The client's side of a connection, each write given the gateway's timeout (as nginx's
/// `send_timeout`): a client that stops reading does not hold its connection for good.
struct Sink<'a> {
    io: &'a mut TcpStream,
    wait: Duration,
}

impl Sink<'_> {
    async fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        // Most answers fit in the socket's buffer: written at once, with no timer to set.
        let rest = match self.io.try_write(bytes) {
            Ok(n) if n == bytes.len() => return Ok(()),
            Ok(n) => &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => bytes,
            Err(e) => return Err(e),
        };
        within(self.wait, self.io.write_all(rest)).await
    }

    /// Where a body part goes: after the head in one write when it is small, else on its own.
    async fn part(&mut self, out: &mut Vec<u8>, part: &[u8]) -> std::io::Result<()> {
        if out.len() + part.len() <= ONE_WRITE {
            out.extend_from_slice(part);
            return Ok(());
        }
        self.flush(out).await?;
        self.write(part).await
    }

    async fn flush(&mut self, out: &mut Vec<u8>) -> std::io::Result<()> {
        if !out.is_empty() {
            self.write(out).await?;
            out.clear();
        }
        Ok(())
    }
}

async fn within<T>(
    wait: Duration,
    f: impl Future<Output = std::io::Result<T>>,
) -> std::io::Result<T> {
    tokio::time::timeout(wait, f)
        .await
        .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
}

/// The body's next part, given the gateway's timeout from the one before (as nginx's
/// `proxy_read_timeout`): an upstream that stalls within its answer does not hold it for good.
async fn next_part(rest: &mut Streamed, wait: Duration) -> std::io::Result<Option<Bytes>> {
    within(wait, async {
        rest.next().await.map_err(std::io::Error::other)
    })
    .await
}

impl Body {
    /// Writes the head in `out` and the body. An upstream that fails within its body leaves an
    /// answer cut short, and the connection is closed (as hyper does).
    async fn send(&mut self, out: &mut Vec<u8>, sink: &mut Sink<'_>) -> std::io::Result<()> {
        match self {
            Body::Whole(body) | Body::Closing(body) => sink.part(out, body).await?,
            Body::Length(first, rest) => {
                sink.part(out, first).await?;
                sink.flush(out).await?;
                while let Some(part) = next_part(rest, sink.wait).await? {
                    sink.write(&part).await?;
                }
            }
            Body::Chunked(first, rest) => {
                let mut part = std::mem::take(first);
                loop {
                    if !part.is_empty() {
                        let _ = write!(out, "{:x}\r\n", part.len());
                        sink.part(out, &part).await?;
                        out.extend_from_slice(b"\r\n");
                    }
                    if rest.ended() {
                        out.extend_from_slice(b"0\r\n\r\n");
                        break;
                    }
                    sink.flush(out).await?;
                    part = next_part(rest, sink.wait).await?.unwrap_or_default();
                }
            }
        }
        sink.flush(out).await
    }
}

/// The status line and headers of an upstream's answer (less its id and framing, which are the
/// gateway's), and its body: what came with the head, and the rest to stream when more is to come.
async fn upstream_head(
    out: &mut Vec<u8>,
    answer: Answer,
    wait: Duration,
) -> Result<(u16, Body), Failed> {
    let status = answer.status;
    status_line(out, status);
    for (name, value) in answer.headers() {
        if !name.eq_ignore_ascii_case(REQUEST_ID.as_bytes())
            && !name.eq_ignore_ascii_case(GATEWAY_HEADER.as_bytes())
        {
            line(out, name, value);
        }
    }
    let mut rest = answer.body;
    // What came with the head (most answers, whole), so that a small answer goes in one write.
    let first = match rest.ended() {
        true => Bytes::new(),
        false => next_part(&mut rest, wait)
            .await
            .map_err(Failed::Io)?
            .unwrap_or_default(),
    };
    Ok((
        status,
        match rest.length_left() {
            Some(0) => {
                length(out, status, first.len());
                Body::Whole(first)
            }
            Some(left) => {
                length(out, status, first.len() + left);
                Body::Length(first, rest)
            }
            None => {
                line(out, b"transfer-encoding", b"chunked");
                Body::Chunked(first, rest)
            }
        },
    ))
}

/// The same of the gateway's own answer, and whether it closes the connection.
async fn own_head(out: &mut Vec<u8>, resp: Response) -> (u16, Body) {
    let (parts, body) = resp.into_parts();
    // The gateway's own answers are short JSON; one that cannot be read is a fault of its own.
    let (status, body) = match axum::body::to_bytes(body, OWN_BODY).await {
        Ok(body) => (parts.status.as_u16(), body),
        Err(_) => (500, Bytes::new()),
    };
    status_line(out, status);
    if !parts.headers.contains_key(axum::http::header::DATE) {
        let now = httpdate::fmt_http_date(std::time::SystemTime::now());
        line(out, b"date", now.as_bytes());
    }
    let mut close = false;
    for (name, value) in &parts.headers {
        if name == axum::http::header::CONNECTION {
            close = value.as_bytes().eq_ignore_ascii_case(b"close");
        } else if !not_forwarded(name.as_str().as_bytes())
            && name != REQUEST_ID
            && name.as_str() != GATEWAY_HEADER
        {
            line(out, name.as_str().as_bytes(), value.as_bytes());
        }
    }
    length(out, status, body.len());
    (
        status,
        if close {
            Body::Closing(body)
        } else {
            Body::Whole(body)
        },
    )
}

fn status_line(out: &mut Vec<u8>, status: u16) {
    let reason = StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    // Written into the buffer, not formatted into a string of its own: once per answer.
    let _ = write!(out, "HTTP/1.1 {status} {reason}\r\n");
}

/// The answer's framing: a length, except where an answer has no body by its status.
fn length(out: &mut Vec<u8>, status: u16, len: usize) {
    if !(status < 200 || status == 204 || status == 304) {
        let _ = write!(out, "content-length: {len}\r\n");
    }
}
