//! The keep-alive connections pass-through reads take to the upstream, and the one exchange they
//! make on them: a GET head the gateway wrote itself, and the answer, whose body is streamed on as
//! it arrives. A read drives its connection from its own task, so the answer crosses no other task
//! and wakes no other thread (as in nginx's event loop). The answer is read by hyper's parser
//! (`httparse`) with the framing rules of RFC 9112 §6.3, and a connection goes back to the pool
//! only once its answer ended where its framing said, with nothing after it.

use super::super::upstream::not_forwarded;
use bytes::{Buf, Bytes, BytesMut};
use hyper::Uri;
use hyper::body::{Frame, SizeHint};
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use std::ops::Range;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio_util::io::poll_read_buf;
use tower::Service;

type Io = TokioIo<MaybeHttpsStream<TokioIo<TcpStream>>>;

/// Idle connections kept at most; past it a connection given back is closed.
const MAX_IDLE: usize = 256;
/// An idle connection older than this is closed rather than used: the upstream may have closed
/// it already (the sandbox closes idle ones after its request timeout, 10 s by default).
const IDLE_FOR: Duration = Duration::from_secs(8);
/// An answer's head larger than this is refused (hyper's client allows about as much).
const MAX_HEAD: usize = 64 * 1024;
/// Headers an answer may have (hyper's client allows 100).
const MAX_HEADERS: usize = 100;
/// A chunk-size line longer than this is not one.
const MAX_CHUNK_LINE: usize = 1024;

/// An upstream's answer: its head read, its body to come.
pub struct Answer {
    pub status: u16,
    /// The answer's head as it came: the headers below point into it.
    head: Bytes,
    /// The answer's headers that are passed on (name and value ranges in `head`): not those of
    /// its hop, nor its framing, which the gateway's own answer sets.
    headers: Vec<(Range<usize>, Range<usize>)>,
    pub body: Streamed,
}

impl Answer {
    /// The headers that are passed on, as (name, value).
    pub fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.headers
            .iter()
            .map(|(n, v)| (&self.head[n.clone()], &self.head[v.clone()]))
    }

    /// A header's value, shared with the head rather than copied.
    pub fn value(&self, range: &Range<usize>) -> Bytes {
        self.head.slice(range.clone())
    }

    pub fn header_ranges(&self) -> &[(Range<usize>, Range<usize>)] {
        &self.headers
    }
}

#[derive(Debug)]
pub enum Failed {
    Connect(Box<dyn std::error::Error + Send + Sync>),
    Io(std::io::Error),
    /// The connection ended before the answer did.
    Closed,
    /// What came is not an HTTP/1.1 answer the gateway can pass on.
    Malformed(String),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Connect(e) => {
                write!(f, "cannot connect: {e}")?;
                let mut source = e.source();
                while let Some(s) = source {
                    write!(f, ": {s}")?;
                    source = s.source();
                }
                Ok(())
            }
            Failed::Io(e) => write!(f, "connection error: {e}"),
            Failed::Closed => f.write_str("the connection closed before the answer ended"),
            Failed::Malformed(why) => write!(f, "the answer is not valid HTTP/1.1: {why}"),
        }
    }
}

pub struct Pool {
    idle: Mutex<Vec<(Box<Conn>, Instant)>>,
    connector: HttpsConnector<HttpConnector>,
    /// The upstream's scheme and authority, for connecting.
    target: Uri,
}

impl Pool {
    pub fn new(connector: HttpsConnector<HttpConnector>, target: Uri) -> Pool {
        Pool {
            idle: Mutex::new(Vec::new()),
            connector,
            target,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Box<Conn>, Instant)>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends a GET's head (a read: the upstream may be asked twice) and reads its answer's head.
    pub async fn get(self: &Arc<Self>, head: &[u8]) -> Result<Answer, Failed> {
        // A connection the upstream closed while it sat idle fails before any answer: the read
        // is sent again, once, on a new one.
        if let Some(mut conn) = self.checkout() {
            match conn.exchange(head).await {
                Ok(parsed) => return Ok(self.answer(conn, parsed)),
                Err(Exchange::Stale) => {}
                Err(Exchange::Failed(e)) => return Err(e),
            }
        }
        let mut conn = self.connect().await?;
        match conn.exchange(head).await {
            Ok(parsed) => Ok(self.answer(conn, parsed)),
            Err(Exchange::Stale) => Err(Failed::Closed),
            Err(Exchange::Failed(e)) => Err(e),
        }
    }

    fn answer(self: &Arc<Self>, conn: Box<Conn>, parsed: Head) -> Answer {
        let mut body = Streamed {
            conn: Some(conn),
            pool: self.clone(),
            left: parsed.framing,
            keep: parsed.keep,
            held: Bytes::new(),
        };
        // An answer with no body leaves its connection free at once.
        body.end_if_done();
        Answer {
            status: parsed.status,
            head: parsed.head,
            headers: parsed.headers,
            body,
        }
    }

    /// The most recently used idle connection that is still open.
    fn checkout(&self) -> Option<Box<Conn>> {
        loop {
            let (mut conn, since) = self.lock().pop()?;
            if since.elapsed() > IDLE_FOR {
                // Older ones sit below it: all of them are too old.
                self.lock().clear();
                return None;
            }
            if conn.open() {
                return Some(conn);
            }
        }
    }

    async fn connect(&self) -> Result<Box<Conn>, Failed> {
        let io = self
            .connector
            .clone()
            .call(self.target.clone())
            .await
            .map_err(Failed::Connect)?;
        // Boxed: its TLS state is a kilobyte, moved with every answer and every return to the pool.
        Ok(Box::new(Conn {
            io: TokioIo::new(io),
            buf: BytesMut::with_capacity(8 * 1024),
            served: false,
        }))
    }

    fn give_back(&self, conn: Box<Conn>) {
        let mut idle = self.lock();
        if idle.len() < MAX_IDLE {
            idle.push((conn, Instant::now()));
        }
    }
}

struct Conn {
    io: Io,
    /// What was read and not yet taken; empty between exchanges.
    buf: BytesMut,
    /// Whether it answered a request already: a connection that did may have been closed by the
    /// upstream while it sat idle.
    served: bool,
}

enum Exchange {
    /// Nothing of an answer came on a connection that served one before: it was closed while it
    /// sat idle, and the request can be sent again.
    Stale,
    Failed(Failed),
}

impl From<std::io::Error> for Exchange {
    fn from(e: std::io::Error) -> Exchange {
        Exchange::Failed(Failed::Io(e))
    }
}

/// How an answer's body ends (RFC 9112 §6.3), and what is left of it.
enum Framing {
    /// Ended, or none.
    Empty,
    Length(usize),
    Chunked(Chunk),
    /// Read until the upstream closes the connection.
    Close,
}

/// Where a chunked body is.
enum Chunk {
    /// Before a chunk's size line.
    Size,
    /// In a chunk's data, with this much left.
    Data(usize),
    /// After a chunk's data, before its CRLF.
    End,
    /// After the last chunk, in the trailer section.
    Trailers,
}

impl Conn {
    /// Whether the connection is still open and has nothing unasked for on it: a close (or
    /// anything else) the upstream sent while it sat idle is read now, without waiting.
    fn open(&mut self) -> bool {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut byte = [0u8; 1];
        let mut buf = ReadBuf::new(&mut byte);
        matches!(
            Pin::new(&mut self.io).poll_read(&mut cx, &mut buf),
            Poll::Pending
        )
    }

    /// Reads more into the buffer; `false` when the connection ended.
    async fn fill(&mut self) -> Result<bool, std::io::Error> {
        self.spare();
        Ok(self.io.read_buf(&mut self.buf).await? > 0)
    }

    fn spare(&mut self) {
        if self.buf.capacity() - self.buf.len() < 4096 {
            self.buf.reserve(16 * 1024);
        }
    }

    /// Sends the head and reads the answer's head.
    async fn exchange(&mut self, head: &[u8]) -> Result<Head, Exchange> {
        let reused = self.served;
        self.served = true;
        self.buf.clear();
        if let Err(e) = self.write(head).await {
            return Err(if reused { Exchange::Stale } else { e.into() });
        }
        let mut first = true;
        loop {
            match parse_head(&self.buf)? {
                // A switch of protocols was not asked for: what follows is not HTTP/1.1.
                Some((101, ..)) => {
                    return Err(malformed(
                        "it switches protocols, which a read never asks".into(),
                    ));
                }
                // An interim answer (a GET asks for none, but may get one) is skipped.
                Some((status, len, ..)) if (100..200).contains(&status) => {
                    self.buf.advance(len);
                    continue;
                }
                Some((status, len, headers, framing, keep)) => {
                    return Ok(Head {
                        status,
                        head: self.buf.split_to(len).freeze(),
                        headers,
                        framing,
                        keep,
                    });
                }
                None if self.buf.len() > MAX_HEAD => {
                    return Err(malformed(format!("its head is over {MAX_HEAD} bytes")));
                }
                None => {}
            }
            match self.fill().await {
                Ok(true) => first = false,
                Ok(false) | Err(_) if first && reused => return Err(Exchange::Stale),
                Ok(false) => return Err(Exchange::Failed(Failed::Closed)),
                Err(e) => return Err(e.into()),
            }
        }
    }

    async fn write(&mut self, head: &[u8]) -> Result<(), std::io::Error> {
        self.io.write_all(head).await?;
        self.io.flush().await
    }

    /// Reads more into the buffer; `false` when the connection ended.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<Result<bool, Failed>> {
        self.spare();
        let n =
            ready!(poll_read_buf(Pin::new(&mut self.io), cx, &mut self.buf)).map_err(Failed::Io)?;
        Poll::Ready(Ok(n > 0))
    }
}

/// An answer's head, read.
struct Head {
    status: u16,
    head: Bytes,
    headers: Vec<(Range<usize>, Range<usize>)>,
    framing: Framing,
    keep: bool,
}

/// An answer's body as it arrives, read from its connection by whoever reads the body. The
/// connection goes back to the pool at the body's end; dropped before it (the caller went away),
/// the connection is closed, for the rest of this answer is still on it.
pub struct Streamed {
    conn: Option<Box<Conn>>,
    pool: Arc<Pool>,
    /// What is left of the body.
    left: Framing,
    /// Whether the connection serves another request after this answer.
    keep: bool,
    /// What was read ahead ([`Streamed::read_ahead`]) and not yet taken.
    held: Bytes,
}

impl Streamed {
    /// Reads the body ahead: its first part as it comes, then what has arrived already, until it
    /// ends or `limit` bytes of it are held (what reads the body after takes them first). Whether
    /// it ended: whole, it can be judged. An answer the upstream streams is not held back for it.
    pub async fn read_ahead(&mut self, limit: usize) -> Result<bool, Failed> {
        let mut held = bytes::BytesMut::from(std::mem::take(&mut self.held));
        let mut first = true;
        while held.len() <= limit {
            let part = if std::mem::take(&mut first) {
                self.next_part().await?
            } else {
                let mut cx = Context::from_waker(std::task::Waker::noop());
                match self.poll_next(&mut cx) {
                    Poll::Ready(part) => part?,
                    Poll::Pending => break,
                }
            };
            match part {
                Some(part) => held.extend_from_slice(&part),
                None => break,
            }
        }
        self.held = held.freeze();
        Ok(matches!(self.left, Framing::Empty))
    }

    /// What was read ahead: the whole body when [`Streamed::read_ahead`] said it ended.
    pub fn held(&self) -> &[u8] {
        &self.held
    }

    async fn next_part(&mut self) -> Result<Option<Bytes>, Failed> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }

    /// The next part of the body as it arrives; `None` at its end.
    pub async fn next(&mut self) -> Result<Option<Bytes>, Failed> {
        if !self.held.is_empty() {
            return Ok(Some(std::mem::take(&mut self.held)));
        }
        self.next_part().await
    }

    /// Whether the body has ended (all of it was taken).
    pub fn ended(&self) -> bool {
        self.held.is_empty() && matches!(self.left, Framing::Empty)
    }

    /// The body's length still to come, when its framing says it.
    pub fn length_left(&self) -> Option<usize> {
        match self.left {
            Framing::Empty => Some(self.held.len()),
            Framing::Length(n) => Some(self.held.len() + n),
            _ => None,
        }
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, Failed>> {
        let result = self.poll_part(cx);
        if matches!(result, Poll::Ready(Err(_))) {
            // Where the answer stopped is not known: the connection is not used again.
            self.conn = None;
            self.left = Framing::Empty;
        }
        self.end_if_done();
        result
    }

    fn poll_part(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, Failed>> {
        loop {
            let Some(conn) = &mut self.conn else {
                return Poll::Ready(Ok(None));
            };
            let buf = &mut conn.buf;
            match &mut self.left {
                Framing::Empty => return Poll::Ready(Ok(None)),
                Framing::Length(left) | Framing::Chunked(Chunk::Data(left)) if !buf.is_empty() => {
                    let n = (*left).min(buf.len());
                    *left -= n;
                    let part = buf.split_to(n).freeze();
                    if *left == 0 {
                        self.left = match self.left {
                            Framing::Length(_) => Framing::Empty,
                            _ => Framing::Chunked(Chunk::End),
                        };
                    }
                    return Poll::Ready(Ok(Some(part)));
                }
                Framing::Close if !buf.is_empty() => {
                    return Poll::Ready(Ok(Some(buf.split().freeze())));
                }
                Framing::Chunked(Chunk::Size) => match httparse::parse_chunk_size(buf) {
                    Ok(httparse::Status::Complete((skip, size))) => {
                        buf.advance(skip);
                        self.left = Framing::Chunked(match usize::try_from(size) {
                            Ok(0) => Chunk::Trailers,
                            Ok(size) => Chunk::Data(size),
                            Err(_) => return Poll::Ready(Err(bad("a chunk's size is too large"))),
                        });
                        continue;
                    }
                    Ok(httparse::Status::Partial) if buf.len() < MAX_CHUNK_LINE => {}
                    Ok(httparse::Status::Partial) | Err(_) => {
                        return Poll::Ready(Err(bad("a chunk's size line is not valid")));
                    }
                },
                Framing::Chunked(Chunk::End) if buf.len() >= 2 => {
                    if &buf[..2] != b"\r\n" {
                        return Poll::Ready(Err(bad("a chunk does not end with CRLF")));
                    }
                    buf.advance(2);
                    self.left = Framing::Chunked(Chunk::Size);
                    continue;
                }
                Framing::Chunked(Chunk::Trailers) => {
                    // The trailer section, which no read's answer needs, is read past.
                    if let Some(end) = buf.windows(2).position(|w| w == b"\r\n") {
                        buf.advance(end + 2);
                        if end == 0 {
                            self.left = Framing::Empty;
                            return Poll::Ready(Ok(None));
                        }
                        continue;
                    }
                    if buf.len() > MAX_HEAD {
                        return Poll::Ready(Err(bad("its trailers are too large")));
                    }
                }
                _ => {}
            }
            if !ready!(conn.poll_fill(cx))? {
                if matches!(self.left, Framing::Close) {
                    self.keep = false;
                    self.left = Framing::Empty;
                    return Poll::Ready(Ok(None));
                }
                return Poll::Ready(Err(Failed::Closed));
            }
        }
    }

    /// At the body's end, the connection goes back to the pool if it serves another request:
    /// it said it would, and nothing came after the answer.
    fn end_if_done(&mut self) {
        if matches!(self.left, Framing::Empty)
            && let Some(conn) = self.conn.take()
            && self.keep
            && conn.buf.is_empty()
        {
            self.pool.give_back(conn);
        }
    }
}

impl hyper::body::Body for Streamed {
    type Data = Bytes;
    type Error = Failed;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Failed>>> {
        let this = self.get_mut();
        if !this.held.is_empty() {
            return Poll::Ready(Some(Ok(Frame::data(std::mem::take(&mut this.held)))));
        }
        let part = ready!(this.poll_next(cx));
        Poll::Ready(part.transpose().map(|p| p.map(Frame::data)))
    }

    fn is_end_stream(&self) -> bool {
        self.ended()
    }

    fn size_hint(&self) -> SizeHint {
        match self.length_left() {
            Some(n) => SizeHint::with_exact(n as u64),
            None => SizeHint::default(),
        }
    }
}

impl std::error::Error for Failed {}

fn bad(why: &str) -> Failed {
    Failed::Malformed(why.to_string())
}

fn malformed(why: String) -> Exchange {
    Exchange::Failed(Failed::Malformed(why))
}

type Parsed = (u16, usize, Vec<(Range<usize>, Range<usize>)>, Framing, bool);

/// An answer's head: its status, its length, the headers passed on, how its body ends, and
/// whether the connection stays open after it. `None` while it is incomplete.
fn parse_head(buf: &[u8]) -> Result<Option<Parsed>, Exchange> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(malformed(e.to_string())),
    };
    let status = resp.code.unwrap_or(0);
    if status < 100 {
        return Err(malformed(format!("its status {status} is not one")));
    }
    let mut keep = resp.version == Some(1);
    let mut length: Option<usize> = None;
    let mut chunked = None;
    let mut kept = Vec::with_capacity(resp.headers.len());
    let base = buf.as_ptr() as usize;
    for h in resp.headers.iter() {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            let n = std::str::from_utf8(h.value)
                .ok()
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<usize>().ok())
                .ok_or_else(|| malformed("its Content-Length is not a number".into()))?;
            if length.is_some_and(|l| l != n) {
                return Err(malformed("it has two different Content-Lengths".into()));
            }
            length = Some(n);
            continue;
        }
        if name.eq_ignore_ascii_case(b"transfer-encoding") {
            // Chunked only when it is the last coding; a coding the gateway cannot undo
            // leaves the body to end at the close.
            let last = h.value.rsplit(|&b| b == b',').next().unwrap_or_default();
            chunked = Some(last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            continue;
        }
        if name.eq_ignore_ascii_case(b"connection") {
            keep &= !h
                .value
                .split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"));
            continue;
        }
        if not_forwarded(name) {
            continue;
        }
        let n = name.as_ptr() as usize - base;
        let v = h.value.as_ptr() as usize - base;
        kept.push((n..n + name.len(), v..v + h.value.len()));
    }
    let framing = if (100..200).contains(&status) || status == 204 || status == 304 {
        Framing::Empty
    } else {
        match (chunked, length) {
            (Some(true), _) => Framing::Chunked(Chunk::Size),
            (Some(false), _) => Framing::Close,
            (None, Some(0)) => Framing::Empty,
            (None, Some(n)) => Framing::Length(n),
            (None, None) => Framing::Close,
        }
    };
    // Two framings (RFC 9112 §6.3: read as chunked, then the connection closed): a server that
    // sends both may frame the next answer its own way too.
    if matches!(framing, Framing::Close) || (chunked.is_some() && length.is_some()) {
        keep = false;
    }
    Ok(Some((status, len, kept, framing, keep)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const GET: &[u8] = b"GET /api/delegated/positions HTTP/1.1\r\nhost: upstream\r\n\r\n";

    /// An upstream that answers each request, on whichever connection, with the next of
    /// `answers` (raw bytes, and whether it closes the connection after it); it counts the
    /// connections it accepted.
    async fn upstream(answers: Vec<(&'static [u8], bool)>) -> (Uri, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counted = accepted.clone();
        let answers = Arc::new(Mutex::new(std::collections::VecDeque::from(answers)));
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let answers = answers.clone();
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    let mut buf = vec![0u8; 4096];
                    loop {
                        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                            match sock.read(&mut buf).await {
                                Ok(0) | Err(_) => return,
                                Ok(k) => got.extend_from_slice(&buf[..k]),
                            }
                        }
                        let end = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
                        got.drain(..end + 4);
                        let Some((answer, close)) = answers.lock().unwrap().pop_front() else {
                            return;
                        };
                        if sock.write_all(answer).await.is_err() || close {
                            return;
                        }
                    }
                });
            }
        });
        (format!("http://{addr}/").parse().unwrap(), accepted)
    }

    fn pool_for(target: Uri) -> Arc<Pool> {
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

    /// The answer's status, its headers passed on, and its whole body.
    async fn whole(pool: &Arc<Pool>) -> Result<(u16, Vec<String>, String), Failed> {
        tokio::time::timeout(Duration::from_secs(10), read_whole(pool))
            .await
            .expect("the answer ends")
    }

    async fn read_whole(pool: &Arc<Pool>) -> Result<(u16, Vec<String>, String), Failed> {
        let mut answer = pool.get(GET).await?;
        let headers = answer
            .headers()
            .map(|(n, v)| {
                format!(
                    "{}: {}",
                    String::from_utf8_lossy(n),
                    String::from_utf8_lossy(v)
                )
            })
            .collect();
        let mut body = Vec::new();
        while let Some(part) = answer.body.next().await? {
            body.extend_from_slice(&part);
        }
        Ok((answer.status, headers, String::from_utf8(body).unwrap()))
    }

    #[tokio::test]
    async fn a_connection_the_upstream_closed_while_idle_is_not_an_error() {
        let ok: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
        let (target, accepted) = upstream(vec![(ok, true); 3]).await;
        let pool = pool_for(target);
        for i in 1..=3 {
            let (status, _, body) = whole(&pool).await.unwrap();
            assert_eq!((status, body.as_str()), (200, "ok"));
            // The close arrives while the connection sits idle, or as the next read is sent.
            if i == 2 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn each_framing_is_read_to_its_end_and_the_connection_used_again() {
        let (target, accepted) = upstream(vec![
            (&b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"[..], false),
            (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nx-a: 1\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nx-trailer: t\r\n\r\n", false),
            (b"HTTP/1.1 204 No Content\r\nconnection: keep-alive\r\n\r\n", false),
            (b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n", false),
            (b"HTTP/1.1 200 OK\r\n\r\nuntil the close", true),
        ])
        .await;
        let pool = pool_for(target);
        let (status, headers, body) = whole(&pool).await.unwrap();
        assert_eq!((status, body.as_str()), (200, "{}"));
        assert_eq!(
            headers,
            ["content-type: application/json"],
            "framing is not passed on"
        );
        let (status, headers, body) = whole(&pool).await.unwrap();
        assert_eq!((status, body.as_str()), (200, "abcde"));
        assert_eq!(headers, ["x-a: 1"]);
        let (status, headers, body) = whole(&pool).await.unwrap();
        assert_eq!((status, body.as_str()), (204, ""));
        assert!(headers.is_empty(), "{headers:?}");
        let (status, _, body) = whole(&pool).await.unwrap();
        assert_eq!((status, body.as_str()), (404, ""));
        // Framed by the close: read to the end, and the connection is not used again.
        let (status, _, body) = whole(&pool).await.unwrap();
        assert_eq!((status, body.as_str()), (200, "until the close"));
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        assert!(pool.lock().is_empty());
    }

    #[tokio::test]
    async fn an_answer_that_cannot_be_framed_one_way_is_refused_and_its_connection_dropped() {
        for answer in [
            &b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nabc"[..],
            b"HTTP/1.1 200 OK\r\ncontent-length: +2\r\n\r\nab",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort",
            b"HTTP/1.1 2000 OK\r\ncontent-length: 0\r\n\r\n",
            b"not http at all\r\n\r\n",
        ] {
            let (target, _) = upstream(vec![(answer, true)]).await;
            let pool = pool_for(target);
            let failed = whole(&pool)
                .await
                .expect_err(&String::from_utf8_lossy(answer));
            assert!(
                matches!(failed, Failed::Malformed(_) | Failed::Closed),
                "{failed}"
            );
            assert!(
                pool.lock().is_empty(),
                "{}",
                String::from_utf8_lossy(answer)
            );
        }
    }

    #[tokio::test]
    async fn an_answer_framed_two_ways_is_read_chunked_and_its_connection_not_used_again() {
        let both: &[u8] =
            b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n";
        let switch: &[u8] = b"HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\n\r\n";
        let (target, accepted) = upstream(vec![(both, false), (switch, false)]).await;
        let pool = pool_for(target);
        let (_, _, body) = whole(&pool).await.unwrap();
        assert_eq!(body, "ok");
        assert!(pool.lock().is_empty());
        let failed = whole(&pool)
            .await
            .expect_err("a switch of protocols is not an answer");
        assert!(matches!(failed, Failed::Malformed(_)), "{failed}");
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn bytes_after_an_answer_or_an_answer_dropped_before_its_end_close_the_connection() {
        let (target, accepted) = upstream(vec![(
            &b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nno"[..],
            false,
        )])
        .await;
        let pool = pool_for(target);
        let (_, _, body) = whole(&pool).await.unwrap();
        assert_eq!(body, "ok");
        assert!(
            pool.lock().is_empty(),
            "an answer nobody asked for is not read as the next"
        );
        assert_eq!(accepted.load(Ordering::SeqCst), 1);

        let (target, accepted) = upstream(vec![
            (
                &b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n"[..],
                false,
            ),
            (b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", true),
        ])
        .await;
        let pool = pool_for(target);
        let mut answer = pool.get(GET).await.unwrap();
        assert_eq!(answer.body.next().await.unwrap().unwrap(), "ok");
        drop(answer);
        let (_, _, body) = whole(&pool).await.unwrap();
        assert_eq!(body, "ok");
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }
}
