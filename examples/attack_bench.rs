//! One attack on a front (the gateway, or nginx in front of the same sandbox) while an honest
//! agent reads through it, for `benches/attack_bench.sh` (issue #34).
//!
//! `attack_bench ATTACK BASE_URL H2_BASE_URL HONEST_KEY ATTACKER_KEY SECONDS`
//!
//! The attacker sends from 127.0.0.2, the honest agent and the health probe from 127.0.0.1: one
//! address each, as a front that limits by address sees them. ATTACK is one of
//! - `none`: the honest agent alone, the baseline;
//! - `flood`: 16 connections pipelining reads with the attacker's key as fast as the socket takes
//!   them (past any rate limit);
//! - `slowloris`: 1,100 connections that each send half a request head and then one more header
//!   line a second, never ending it; a connection the front closes is opened again;
//! - `h2`: HTTP/2 (prior knowledge, to H2_BASE_URL) connections that each keep as many POST
//!   streams open as the front allows, with the attacker's key and bodies that never come; a stream
//!   answered is replaced by a new one, a connection closed by a new connection;
//! - `churn`: 10,000 connections, 64 at a time, each one read with the attacker's key and closed.
//!
//! The honest agent is open-loop: every 25 ms one read of `GET /api/delegated/positions` with its
//! own key (40 a second, inside the gateway's default per-key limit), each timed from the instant
//! it was due, so a stall counts every read it delays. `/healthz` is asked every 250 ms on a new
//! connection. The figures are one `key=value` line: the honest reads' count, failures (any
//! answer but 200, or none within 5 s), p50, p99 and max in ms; the health probes answered 200 of
//! those sent; and what the attacker got: answers by status, connections the front closed or
//! refused, and for slowloris the most heads held open at once.
//!
//! The raw sockets here are the attacker's: a half head or a pipelined burst is what no HTTP
//! client library sends. Nothing in the product writes HTTP by hand.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const ATTACKER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
const HONEST: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
const READ: &str = "/api/delegated/positions";

fn usage() -> ! {
    eprintln!(
        "usage: attack_bench none|flood|slowloris|h2|churn BASE_URL H2_BASE_URL HONEST_KEY ATTACKER_KEY SECONDS"
    );
    std::process::exit(2)
}

/// What the attacker got, shared by its tasks.
#[derive(Default)]
struct Tally {
    statuses: Mutex<BTreeMap<u16, u64>>,
    /// Connections the front closed (an end of stream or a reset) or refused to open.
    closed: AtomicU64,
    refused: AtomicU64,
    open: AtomicUsize,
    most_open: AtomicUsize,
}

impl Tally {
    fn status(&self, s: u16) {
        *self.statuses.lock().unwrap().entry(s).or_default() += 1;
    }
    fn opened(&self) {
        let now = self.open.fetch_add(1, Ordering::Relaxed) + 1;
        self.most_open.fetch_max(now, Ordering::Relaxed);
    }
    fn lost(&self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
        self.closed.fetch_add(1, Ordering::Relaxed);
    }
}

async fn connect_from(from: IpAddr, to: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(from, 0))?;
    socket.connect(to).await
}

/// Counts the status lines in a stream of HTTP/1.1 answers. Only the start of a head is read:
/// a body could hold the same bytes, but these answers' bodies are JSON of positions and errors.
#[derive(Default)]
struct StatusLines {
    tail: Vec<u8>,
}

impl StatusLines {
    fn feed(&mut self, bytes: &[u8], tally: &Tally) {
        const MARK: &[u8] = b"HTTP/1.1 ";
        self.tail.extend_from_slice(bytes);
        let mut from = 0;
        while let Some(at) = find(&self.tail[from..], MARK) {
            let start = from + at + MARK.len();
            if self.tail.len() < start + 3 {
                from += at;
                break;
            }
            if let Ok(s) = std::str::from_utf8(&self.tail[start..start + 3])
                && let Ok(code) = s.parse()
            {
                tally.status(code);
            }
            from = start + 3;
        }
        let keep = self
            .tail
            .len()
            .saturating_sub(MARK.len() + 3)
            .max(from.min(self.tail.len()));
        self.tail.drain(..keep);
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

async fn flood(addr: SocketAddr, key: String, until: Instant, tally: Arc<Tally>) {
    let request = format!("GET {READ} HTTP/1.1\r\nhost: bench\r\nx-api-key: {key}\r\n\r\n");
    let burst = request.repeat(64).into_bytes();
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let burst = burst.clone();
        let tally = tally.clone();
        tasks.push(tokio::spawn(async move {
            while Instant::now() < until {
                let Ok(stream) = connect_from(ATTACKER, addr).await else {
                    tally.refused.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                tally.opened();
                let (mut r, mut w) = stream.into_split();
                let writer = {
                    let burst = burst.clone();
                    tokio::spawn(async move {
                        while Instant::now() < until {
                            if w.write_all(&burst).await.is_err() {
                                break;
                            }
                        }
                    })
                };
                let mut lines = StatusLines::default();
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let left = until.saturating_duration_since(Instant::now());
                    match tokio::time::timeout(left, r.read(&mut buf)).await {
                        Ok(Ok(n)) if n > 0 => lines.feed(&buf[..n], &tally),
                        Ok(_) => {
                            tally.lost();
                            break;
                        }
                        Err(_) => {
                            tally.open.fetch_sub(1, Ordering::Relaxed);
                            break;
                        }
                    }
                }
                writer.abort();
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

async fn slowloris(addr: SocketAddr, until: Instant, tally: Arc<Tally>) {
    let mut tasks = Vec::new();
    for i in 0..1_100u32 {
        let tally = tally.clone();
        tasks.push(tokio::spawn(async move {
            // Spread over the first second, as a script opening them would.
            tokio::time::sleep(Duration::from_micros(u64::from(i) * 900)).await;
            while Instant::now() < until {
                let Ok(mut s) = connect_from(ATTACKER, addr).await else {
                    tally.refused.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                };
                tally.opened();
                let mut alive = s
                    .write_all(format!("GET {READ} HTTP/1.1\r\nhost: bench\r\n").as_bytes())
                    .await
                    .is_ok();
                let mut n = 0u32;
                let mut buf = [0u8; 1024];
                while alive && Instant::now() < until {
                    // A front that gave up on the head answers (408, 400) or closes.
                    match tokio::time::timeout(Duration::from_secs(1), s.read(&mut buf)).await {
                        Ok(Ok(0)) | Ok(Err(_)) => alive = false,
                        Ok(Ok(got)) => {
                            if let Some(code) = std::str::from_utf8(&buf[..got.min(12)])
                                .ok()
                                .and_then(|h| h.strip_prefix("HTTP/1.1 "))
                                .and_then(|c| c.get(..3)?.parse().ok())
                            {
                                tally.status(code);
                            }
                        }
                        Err(_) => {
                            n += 1;
                            alive = s
                                .write_all(format!("x-slow-{n}: 1\r\n").as_bytes())
                                .await
                                .is_ok();
                        }
                    }
                }
                if alive {
                    tally.open.fetch_sub(1, Ordering::Relaxed);
                } else {
                    tally.lost();
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

async fn h2(addr: SocketAddr, key: String, until: Instant, tally: Arc<Tally>) {
    use http_body_util::StreamBody;
    use hyper::body::{Bytes, Frame};
    type Never =
        StreamBody<futures::stream::Pending<Result<Frame<Bytes>, std::convert::Infallible>>>;
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let tally = tally.clone();
        let key = key.clone();
        tasks.push(tokio::spawn(async move {
            while Instant::now() < until {
                let Ok(tcp) = connect_from(ATTACKER, addr).await else {
                    tally.refused.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let Ok((send, conn)) = hyper::client::conn::http2::handshake::<_, _, Never>(
                    hyper_util::rt::TokioExecutor::new(),
                    hyper_util::rt::TokioIo::new(tcp),
                )
                .await
                else {
                    tally.refused.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                tally.opened();
                let conn = tokio::spawn(conn);
                // Every stream the front allows, each replaced as soon as it is answered.
                let mut streams = futures::stream::FuturesUnordered::new();
                let mut send = send;
                loop {
                    use futures::StreamExt as _;
                    if Instant::now() >= until || conn.is_finished() {
                        break;
                    }
                    // More than the front's stream limit: h2 queues the rest until one frees.
                    if streams.len() < 64 {
                        match tokio::time::timeout(Duration::from_millis(50), send.ready()).await {
                            Ok(Ok(())) => {
                                let req = hyper::Request::post(format!(
                                    "http://{addr}/api/delegated/propose"
                                ))
                                .header("x-api-key", key.as_str())
                                .header("content-type", "application/json")
                                .body(StreamBody::new(futures::stream::pending()))
                                .unwrap();
                                streams.push(send.send_request(req));
                                continue;
                            }
                            Ok(Err(_)) => break,
                            Err(_) => {}
                        }
                    }
                    match tokio::time::timeout(Duration::from_millis(50), streams.next()).await {
                        Ok(Some(Ok(resp))) => tally.status(resp.status().as_u16()),
                        Ok(Some(Err(_))) => tally.status(0),
                        _ => {}
                    }
                }
                drop(streams);
                drop(send);
                conn.abort();
                tally.lost();
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

async fn churn(base: String, key: String, until: Instant, tally: Arc<Tally>) {
    let left = Arc::new(AtomicU64::new(10_000));
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let (base, key, tally, left) = (base.clone(), key.clone(), tally.clone(), left.clone());
        tasks.push(tokio::spawn(async move {
            // No pool: every request its own connection.
            let client = reqwest::Client::builder()
                .local_address(ATTACKER)
                .pool_max_idle_per_host(0)
                .timeout(Duration::from_secs(5))
                .build()
                .unwrap();
            while Instant::now() < until
                && left
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                    .is_ok()
            {
                match client
                    .get(format!("{base}{READ}"))
                    .header("x-api-key", &key)
                    .send()
                    .await
                {
                    Ok(resp) => {
                        tally.status(resp.status().as_u16());
                        let _ = resp.bytes().await;
                    }
                    Err(e) if e.is_connect() => {
                        tally.refused.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => {
                        tally.closed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

/// Reads every 25 ms, open-loop; returns each read's time from when it was due, or None for a
/// failure.
async fn honest(base: String, key: String, until: Instant) -> Vec<Option<Duration>> {
    let client = reqwest::Client::builder()
        .local_address(HONEST)
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let mut tick = tokio::time::interval(Duration::from_millis(25));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut reads = Vec::new();
    while Instant::now() < until {
        let due = tick.tick().await.into_std();
        let (client, url, key) = (client.clone(), format!("{base}{READ}"), key.clone());
        reads.push(tokio::spawn(async move {
            match client.get(url).header("x-api-key", key).send().await {
                Ok(resp) if resp.status() == 200 => resp.bytes().await.ok().map(|_| due.elapsed()),
                _ => None,
            }
        }));
    }
    let mut out = Vec::new();
    for r in reads {
        out.push(r.await.unwrap_or(None));
    }
    out
}

async fn health(base: String, until: Instant) -> (u64, u64) {
    let (mut ok, mut sent) = (0, 0);
    while Instant::now() < until {
        // A new connection each time: the accept path is what a flood of connections fills.
        let client = reqwest::Client::builder()
            .local_address(HONEST)
            .pool_max_idle_per_host(0)
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap();
        sent += 1;
        if let Ok(resp) = client.get(format!("{base}/healthz")).send().await
            && resp.status() == 200
        {
            ok += 1;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    (ok, sent)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [attack, base, h2_base, honest_key, attacker_key, seconds] = &args[..] else {
        usage()
    };
    let Ok(seconds) = seconds.parse::<u64>() else {
        usage()
    };
    let addr_of = |url: &str| -> SocketAddr {
        url.trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .unwrap_or_else(|_| usage())
    };
    let addr = addr_of(base);
    let h2_addr = addr_of(h2_base);
    let tally = Arc::new(Tally::default());
    // The attack starts first and has a second to build up before anything is measured.
    let start = Instant::now();
    let until = start + Duration::from_secs(seconds + 1);
    let attack_task = {
        let tally = tally.clone();
        let (key, base) = (attacker_key.clone(), base.clone());
        match attack.as_str() {
            "none" => tokio::spawn(async {}),
            "flood" => tokio::spawn(flood(addr, key, until, tally)),
            "slowloris" => tokio::spawn(slowloris(addr, until, tally)),
            "h2" => tokio::spawn(h2(h2_addr, key, until, tally)),
            "churn" => tokio::spawn(churn(base, key, until, tally)),
            _ => usage(),
        }
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let measured_until = Instant::now() + Duration::from_secs(seconds);
    let (reads, (health_ok, health_sent)) = tokio::join!(
        honest(base.clone(), honest_key.clone(), measured_until),
        health(base.clone(), measured_until)
    );
    let held_most = tally.most_open.load(Ordering::Relaxed);
    let _ = attack_task.await;

    let failed = reads.iter().filter(|r| r.is_none()).count();
    let mut times: Vec<Duration> = reads.iter().flatten().copied().collect();
    times.sort();
    let q = |p: f64| {
        if times.is_empty() {
            f64::NAN
        } else {
            ms(times[((times.len() as f64 * p).ceil() as usize).clamp(1, times.len()) - 1])
        }
    };
    let statuses = tally.statuses.lock().unwrap();
    let answered: Vec<String> = statuses.iter().map(|(s, n)| format!("{s}:{n}")).collect();
    let refusals: u64 = statuses
        .iter()
        .filter(|(s, _)| matches!(s, 400 | 408 | 429 | 431 | 503))
        .map(|(_, n)| n)
        .sum();
    println!(
        "honest_reads={} honest_failed={failed} honest_p50_ms={:.2} honest_p99_ms={:.2} honest_max_ms={:.2} \
         healthz_ok={health_ok} healthz_sent={health_sent} attacker_answers={} attacker_refusals={refusals} \
         attacker_closed={} attacker_refused={} attacker_most_open={held_most}",
        reads.len(),
        q(0.5),
        q(0.99),
        q(1.0),
        if answered.is_empty() {
            "-".to_string()
        } else {
            answered.join(",")
        },
        tally.closed.load(Ordering::Relaxed),
        tally.refused.load(Ordering::Relaxed),
    );
}
