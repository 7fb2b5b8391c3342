//! The gateway's HTTP/1.1, byte by byte: hyper reads every request, and a read takes the
//! pass-through way while the rest go through the router. What an agent can send to make the
//! gateway and the service disagree on where a request ends (a body on a GET, two framings,
//! folded or spaced headers, bare line feeds, an old version) must not get a request to the
//! service the gateway did not judge: the verdict is read from the sandbox's database.

use super::attacks::{Executed, armed, executed, judge, policy, policy_limits, trade, with};
use super::{Setup, gateway_before};
use agentdesk::api::Scope;
use agentdesk::gateway::GATEWAY_HEADER;
use agentdesk::gateway::rules::policy::GateSettings;
use agentdesk::secret::Secret;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// An answer as it came: status, headers (lower-case names, the last of each), body.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// A connection that reads answers one by one, by their framing.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    async fn open(addr: SocketAddr) -> Conn {
        Conn {
            stream: TcpStream::connect(addr).await.unwrap(),
            buf: Vec::new(),
        }
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    /// More bytes; `false` at the close.
    async fn more(&mut self) -> bool {
        let mut chunk = [0u8; 8192];
        let n = tokio::time::timeout(Duration::from_secs(20), self.stream.read(&mut chunk))
            .await
            .expect("the gateway answers")
            .unwrap_or(0);
        self.buf.extend_from_slice(&chunk[..n]);
        n > 0
    }

    /// The next answer; `None` if the connection closed first.
    async fn answer(&mut self) -> Option<Answer> {
        let (status, head_len, headers) = loop {
            let mut h = [httparse::EMPTY_HEADER; 64];
            let mut resp = httparse::Response::new(&mut h);
            if let httparse::Status::Complete(n) = resp.parse(&self.buf).unwrap() {
                let headers: HashMap<String, String> = resp
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_ascii_lowercase(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect();
                break (resp.code.unwrap(), n, headers);
            }
            if !self.more().await {
                return None;
            }
        };
        self.buf.drain(..head_len);
        let body = if let Some(n) = headers.get("content-length") {
            let n: usize = n.parse().unwrap();
            while self.buf.len() < n {
                assert!(self.more().await, "the body ends early");
            }
            self.buf.drain(..n).collect()
        } else if headers
            .get("transfer-encoding")
            .is_some_and(|t| t == "chunked")
        {
            let mut body = Vec::new();
            loop {
                let (skip, size) = loop {
                    if let Ok(httparse::Status::Complete(found)) =
                        httparse::parse_chunk_size(&self.buf)
                    {
                        break found;
                    }
                    assert!(self.more().await, "the chunked body ends early");
                };
                let size = size as usize;
                while self.buf.len() < skip + size + 2 {
                    assert!(self.more().await, "the chunked body ends early");
                }
                body.extend_from_slice(&self.buf[skip..skip + size]);
                self.buf.drain(..skip + size + 2);
                if size == 0 {
                    break body;
                }
            }
        } else {
            Vec::new()
        };
        Some(Answer {
            status,
            headers,
            body,
        })
    }

    /// Every answer until the gateway closes the connection.
    async fn answers_to_the_close(&mut self) -> Vec<Answer> {
        let mut all = Vec::new();
        while let Some(a) = self.answer().await {
            all.push(a);
        }
        all
    }
}

fn get(path: &str, key: &str, extra: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nhost: gateway\r\nx-api-key: {key}\r\n{extra}\r\n").into_bytes()
}

#[tokio::test]
async fn reads_on_one_connection_are_answered_in_order_before_and_after_a_write() {
    let s = super::setup().await;
    let key = s.sandbox.key(Scope::McpMutate);
    let key = key.expose();
    let mut c = Conn::open(s.gate.addr).await;
    // Two reads in one write (pipelined), with the caller's ids.
    let mut two = get("/api/delegated/whoami", key, "x-request-id: first-1\r\n");
    two.extend(get(
        "/api/delegated/positions",
        key,
        "x-request-id: second-2\r\n",
    ));
    c.send(&two).await;
    let first = c.answer().await.unwrap();
    let second = c.answer().await.unwrap();
    assert_eq!((first.status, second.status), (200, 200));
    assert_eq!(first.headers["x-request-id"], "first-1");
    assert_eq!(second.headers["x-request-id"], "second-2");
    assert_eq!(first.headers[GATEWAY_HEADER], "1");
    assert!(first.json()["success"] == true, "{:?}", first.json());
    assert!(second.json()["positions"].is_array(), "{:?}", second.json());
    // A write on the same connection is judged by the gateway: staged, in the inbox.
    let body = json!({"strategy": "Agent", "a": "ETHUSDT", "d": "long", "o": "market",
                      "sizeUsd": 100, "leverage": 2, "sl": "1"})
    .to_string();
    c.send(
        format!(
            "POST /api/delegated/propose HTTP/1.1\r\nhost: gateway\r\nx-api-key: {key}\r\n\
             content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
    .await;
    let staged = c.answer().await.unwrap();
    assert_eq!(staged.status, 200, "{:?}", staged.json());
    assert_eq!(s.inbox("pending").await.len(), 1);
    // And reads after it on that connection are still answered, an insane id replaced.
    c.send(&get(
        "/api/delegated/positions",
        key,
        "x-request-id: a\tb\r\n",
    ))
    .await;
    let third = c.answer().await.unwrap();
    assert_eq!(third.status, 200);
    assert!(
        third.headers["x-request-id"].starts_with("req_"),
        "{third:?}"
    );
    assert_eq!(third.headers[GATEWAY_HEADER], "1");
    assert!(third.json()["positions"].is_array());
}

#[tokio::test]
async fn requests_the_fast_path_does_not_take_are_answered_as_the_router_answers_them() {
    let s = super::setup().await;
    let key = s.sandbox.key(Scope::McpMutate);
    let key = key.expose();
    for (label, request, status) in [
        (
            "HTTP/1.0",
            format!("GET /api/delegated/whoami HTTP/1.0\r\nx-api-key: {key}\r\n\r\n"),
            200,
        ),
        (
            "a close",
            format!(
                "GET /api/delegated/whoami HTTP/1.1\r\nhost: g\r\nx-api-key: {key}\r\nconnection: close\r\n\r\n"
            ),
            200,
        ),
        (
            "two keys",
            format!(
                "GET /api/delegated/whoami HTTP/1.1\r\nhost: g\r\nx-api-key: {key}\r\nx-api-key: adk_other\r\n\r\n"
            ),
            200,
        ),
        (
            "no key",
            "GET /api/delegated/whoami HTTP/1.1\r\nhost: g\r\n\r\n".to_string(),
            401,
        ),
        (
            "a spaced header name",
            format!("GET /api/delegated/whoami HTTP/1.1\r\nhost: g\r\nx-api-key : {key}\r\n\r\n"),
            400,
        ),
        (
            "not a path the service has",
            format!("GET /api/delegated/nope HTTP/1.1\r\nhost: g\r\nx-api-key: {key}\r\n\r\n"),
            404,
        ),
    ] {
        let mut c = Conn::open(s.gate.addr).await;
        c.send(request.as_bytes()).await;
        let a = c
            .answer()
            .await
            .unwrap_or_else(|| panic!("{label}: no answer"));
        assert_eq!(a.status, status, "{label}: {a:?}");
    }
}

/// An upstream stand-in that answers every request with `answer` (raw bytes) and then closes
/// when `close` says so.
async fn stand_in(answer: &'static [u8], close: bool) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    while let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                        got.drain(..end + 4);
                        if sock.write_all(answer).await.is_err() || close {
                            return;
                        }
                    }
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
            });
        }
    });
    addr
}

#[tokio::test]
async fn an_answer_chunked_or_ended_by_the_close_reaches_the_agent_whole() {
    for (answer, close) in [
        (
            &b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n3\r\n 1}\r\n0\r\n\r\n"[..],
            false,
        ),
        (
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{\"a\": 1}",
            true,
        ),
    ] {
        let upstream = stand_in(answer, close).await;
        let (gate, _dir) = gateway_before(upstream, GateSettings::default()).await;
        let mut c = Conn::open(gate.addr).await;
        // Twice on one connection: the first answer's end was found, and the second is whole.
        for _ in 0..2 {
            c.send(&get("/api/delegated/positions", "adk_any", "")).await;
            let a = c.answer().await.unwrap();
            assert_eq!(a.status, 200);
            assert_eq!(a.json(), json!({"a": 1}), "{a:?}");
            assert_eq!(a.headers["content-type"], "application/json");
        }
    }
}

/// A trade the agent's key executes when it reaches the sandbox, as the raw request an agent
/// would smuggle past the gateway.
fn smuggled(key: &str) -> Vec<u8> {
    let body = trade().to_string();
    format!(
        "POST /api/v1/trades HTTP/1.1\r\nhost: sandbox\r\nx-api-key: {key}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A read that carries the smuggled request where a reader that disagrees on framing would take it
/// for the next request.
fn carriers(key: &str) -> Vec<(&'static str, Vec<u8>)> {
    let inner = smuggled(key);
    let n = inner.len();
    let head = |extra: &str| get("/api/delegated/positions", key, extra);
    let cat = |mut a: Vec<u8>, b: &[u8]| {
        a.extend_from_slice(b);
        a
    };
    let chunked = cat(
        format!("{n:x}\r\n").into_bytes(),
        &cat(inner.clone(), b"\r\n0\r\n\r\n"),
    );
    let mut out = vec![
        ("a GET with a length", cat(head(&format!("content-length: {n}\r\n")), &inner)),
        ("a GET chunked", cat(head("transfer-encoding: chunked\r\n"), &chunked)),
        (
            "a GET with a length and chunked",
            cat(
                head(&format!("content-length: {}\r\ntransfer-encoding: chunked\r\n", chunked.len())),
                &chunked,
            ),
        ),
        ("a spaced Transfer-Encoding", cat(head("transfer-encoding : chunked\r\n"), &chunked)),
        ("a folded header", cat(head("x-a: 1\r\n transfer-encoding: chunked\r\n"), &chunked)),
        ("xchunked", cat(head("transfer-encoding: xchunked\r\n"), &chunked)),
        ("chunked, identity", cat(head("transfer-encoding: chunked, identity\r\n"), &chunked)),
        ("a signed length", cat(head(&format!("content-length: +{n}\r\n")), &inner)),
        ("a listed length", cat(head(&format!("content-length: {n}, {n}\r\n")), &inner)),
        ("two lengths", cat(head(&format!("content-length: 0\r\ncontent-length: {n}\r\n")), &inner)),
        ("an expectation", cat(head(&format!("expect: 100-continue\r\ncontent-length: {n}\r\n")), &inner)),
        ("an upgrade", cat(head("connection: upgrade\r\nupgrade: h2c\r\n"), &inner)),
        (
            "bare line feeds",
            cat(
                format!("GET /api/delegated/positions HTTP/1.1\nhost: g\nx-api-key: {key}\ncontent-length: {n}\n\n")
                    .into_bytes(),
                &inner,
            ),
        ),
        (
            "HTTP/1.0 with a length",
            cat(
                format!("GET /api/delegated/positions HTTP/1.0\r\nconnection: keep-alive\r\nx-api-key: {key}\r\ncontent-length: {n}\r\n\r\n")
                    .into_bytes(),
                &inner,
            ),
        ),
        (
            "a line feed in the path",
            format!("GET /api/delegated/positions\r\nx: HTTP/1.1\r\nx-api-key: {key}\r\n\r\n")
                .into_bytes(),
        ),
        (
            "an encoded line break in the path",
            cat(
                get("/api/delegated/positions%0d%0a%0d%0aPOST%20/api/v1/trades", key, ""),
                &inner,
            ),
        ),
    ];
    // Pipelined after a read that is whole: the gateway's to judge, as any request.
    out.push(("pipelined after a read", cat(head(""), &inner)));
    out
}

#[tokio::test]
async fn a_trade_smuggled_in_a_read_does_not_reach_the_service() {
    let s: Setup = armed(with(&policy(), json!({"allow_immediate": false}))).await;
    // A key the service lets trade at once: only the gateway stands between it and a fill.
    let key = s.sandbox.key(Scope::WebhookAlerts);
    let key = key.expose();
    // The control: the smuggled request, sent to the sandbox itself, executes.
    let before: Executed = executed(&s);
    let mut direct = Conn::open(s.sandbox.running.addr).await;
    direct.send(&smuggled(key)).await;
    let executed_there = direct.answer().await.unwrap();
    assert_eq!(executed_there.status, 200, "{:?}", executed_there.json());
    let breaches = judge(&s, &before, &policy_limits(), false).await;
    assert!(
        !breaches.is_empty(),
        "the control executes and is seen: {breaches:?}"
    );

    let mut through = Vec::new();
    for (label, bytes) in carriers(key) {
        let before = executed(&s);
        let mut c = Conn::open(s.gate.addr).await;
        c.send(&bytes).await;
        // A read that closes the connection ends what the gateway does with these bytes.
        c.send(b"GET /api/delegated/whoami HTTP/1.1\r\nhost: g\r\nconnection: close\r\n\r\n")
            .await;
        let answers = c.answers_to_the_close().await;
        assert!(!answers.is_empty(), "{label}: not answered");
        let breaches = judge(&s, &before, &policy_limits(), false).await;
        if !breaches.is_empty() {
            through.push(format!("{label}: {}", breaches.join("; ")));
        }
    }
    assert!(
        through.is_empty(),
        "executed at the sandbox:\n  {}",
        through.join("\n  ")
    );
}

#[tokio::test]
async fn the_gateways_own_answer_to_a_read_is_whole_and_the_connection_goes_on() {
    // An upstream that is not there: the gateway answers for itself.
    let gone = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let (gate, _dir) = gateway_before(gone, GateSettings::default()).await;
    let mut c = Conn::open(gate.addr).await;
    for id in ["one", "two"] {
        c.send(&get(
            "/api/delegated/positions",
            "adk_any",
            &format!("x-request-id: {id}\r\n"),
        ))
        .await;
        let a = c.answer().await.unwrap();
        assert_eq!(a.status, 502, "{a:?}");
        assert_eq!(a.json()["error"]["code"], "upstream_unreachable", "{a:?}");
        assert_eq!(a.headers["x-request-id"], id);
        assert_eq!(a.headers[GATEWAY_HEADER], "1");
        assert!(a.headers.contains_key("date"), "{a:?}");
    }
}

#[tokio::test]
async fn an_upstream_that_stalls_within_its_answer_is_given_the_gateways_timeout() {
    // A head, and then nothing: the read is answered 502 once the timeout has passed, rather
    // than held open for as long as the upstream keeps the connection.
    let upstream = stand_in(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n", false).await;
    let settings = GateSettings {
        timeout_secs: 1,
        ..GateSettings::default()
    };
    let (gate, _dir) = gateway_before(upstream, settings).await;
    let mut c = Conn::open(gate.addr).await;
    c.send(&get("/api/delegated/positions", "adk_any", ""))
        .await;
    let a = c.answer().await.unwrap();
    assert_eq!(a.status, 502, "{a:?}");
    assert!(
        a.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("timed out"),
        "{a:?}"
    );
}

#[tokio::test]
async fn an_answer_streamed_for_longer_than_the_timeout_leaves_its_connection_open() {
    // Each part comes within the timeout, the whole answer takes longer than it: the agent's
    // next read on the connection is served, its wait counted from the answer's end.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut got, mut buf, mut served) = (Vec::new(), [0u8; 4096], 0);
                loop {
                    while let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                        got.drain(..end + 4);
                        let head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 9\r\n\r\n";
                        if sock.write_all(head).await.is_err() {
                            return;
                        }
                        for part in [&b"{\"a\""[..], b": ", b"1}\n"] {
                            if served == 0 {
                                tokio::time::sleep(std::time::Duration::from_millis(450)).await;
                            }
                            if sock.write_all(part).await.is_err() {
                                return;
                            }
                        }
                        served += 1;
                    }
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
            });
        }
    });
    let settings = GateSettings {
        timeout_secs: 1,
        ..GateSettings::default()
    };
    let (gate, _dir) = gateway_before(upstream, settings).await;
    let mut c = Conn::open(gate.addr).await;
    for n in 0..2 {
        c.send(&get("/api/delegated/positions", "adk_any", ""))
            .await;
        let a = c
            .answer()
            .await
            .unwrap_or_else(|| panic!("read {n}: the connection closed"));
        assert_eq!(
            (a.status, a.json()),
            (200, json!({"a": 1})),
            "read {n}: {a:?}"
        );
    }
}

#[tokio::test]
async fn a_path_an_upstream_could_normalise_elsewhere_is_refused_not_sent() {
    let s = super::setup().await;
    let key = s.sandbox.key(Scope::McpMutate);
    let key = key.expose();
    for path in [
        "/api/delegated/backtests/..",
        "/api/delegated/backtests/.",
        "/api/delegated/backtests/..%2Fpositions",
        "/api/delegated/backtests/%2e%2e",
        "/api/delegated/backtests/a%5Cb",
    ] {
        let mut c = Conn::open(s.gate.addr).await;
        c.send(&get(path, key, "")).await;
        let a = c.answer().await.unwrap();
        assert_eq!(
            (a.status, &a.json()["error"]["code"]),
            (400, &json!("invalid_path")),
            "{path}: {a:?}"
        );
    }
    // A plain identifier is still sent on (the upstream does not know it).
    let mut c = Conn::open(s.gate.addr).await;
    c.send(&get("/api/delegated/backtests/job_missing", key, ""))
        .await;
    assert_eq!(c.answer().await.unwrap().status, 404);
}

#[tokio::test]
async fn a_key_the_deployment_refuses_with_a_200_is_not_taken_for_an_agent() {
    use agentdesk::standin::{self, StandInConfig};
    let key = "live_0123456789abcdef0123456789abcdef";
    let upstream = standin::start(StandInConfig::new("127.0.0.1:0".parse().unwrap(), key))
        .await
        .unwrap();
    let (gate, _dir) = gateway_before(upstream.addr, GateSettings::default()).await;
    let token = gate.mint_token("alice").await.unwrap();
    for k in [key, "adk_made_up"] {
        let mut c = Conn::open(gate.addr).await;
        c.send(&get("/api/delegated/positions", k, "")).await;
        let a = c.answer().await.unwrap();
        // The answer is passed on as the deployment gave it, whole.
        assert_eq!(a.status, 200, "{a:?}");
        assert_eq!(a.json()["success"], json!(k == key), "{a:?}");
    }
    let agents: Value = reqwest::Client::new()
        .get(format!("{}/gate/v1/agents", gate.base_url()))
        .header("x-api-key", token.expose())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let agents = agents["agents"].as_array().unwrap();
    assert_eq!(
        agents.len(),
        1,
        "only the accepted key is an agent: {agents:?}"
    );
    assert_eq!(
        agents[0]["fingerprint"],
        Secret::new(key.to_string()).fingerprint()
    );
}

/// Issue 34: the credential is checked before any body is read. A staging with no key whose body
/// never comes is refused at once, not after the body's deadline (a client that holds request
/// permits with bodies it never sends gets nothing for them).
#[tokio::test]
async fn a_post_with_no_key_is_refused_before_its_body_is_read() {
    let upstream = stand_in(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}", false).await;
    let (gate, _dir) = gateway_before(upstream, GateSettings::default()).await;
    let mut c = Conn::open(gate.addr).await;
    c.send(
        b"POST /api/delegated/propose HTTP/1.1\r\nhost: gate\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n",
    )
    .await;
    let a = tokio::time::timeout(std::time::Duration::from_secs(10), c.answer())
        .await
        .expect("answered without waiting for the body")
        .unwrap();
    assert_eq!(a.status, 401, "{a:?}");
    assert_eq!(a.json()["error"]["code"], "unauthorized", "{a:?}");
}

/// Issue 34: HTTP/2 streams whose bodies never come, from one address with a key, hold that
/// address's share of the requests in flight and no more: another address is still served, and
/// the streams past the share are refused at once (503), not queued.
#[tokio::test]
async fn h2_streams_whose_bodies_never_come_leave_the_gateway_to_everyone_else() {
    use http_body_util::StreamBody;
    use hyper::body::{Bytes, Frame};
    let upstream = stand_in(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}", false).await;
    // The rate limits off: they would refuse most of the streams (429) before any of this.
    let settings = GateSettings {
        rate_limit_per_second: 0,
        ..GateSettings::default()
    };
    let (gate, _dir) = gateway_before(upstream, settings).await;
    type Never =
        StreamBody<futures::stream::Pending<Result<Frame<Bytes>, std::convert::Infallible>>>;
    let mut held = Vec::new();
    let mut refused = 0;
    let mut pending = Vec::new();
    // 36 connections of 32 streams: more than every request permit of the gateway (1,024).
    for _ in 0..36 {
        let tcp = tokio::net::TcpStream::connect(gate.addr).await.unwrap();
        let (mut send, conn) = hyper::client::conn::http2::handshake::<_, _, Never>(
            hyper_util::rt::TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(tcp),
        )
        .await
        .unwrap();
        held.push(tokio::spawn(conn));
        for _ in 0..32 {
            if send.ready().await.is_err() {
                break;
            }
            let req = hyper::Request::post(format!("http://{}/api/delegated/propose", gate.addr))
                .header("x-api-key", "adk_h2_attacker")
                .header("content-type", "application/json")
                .body(StreamBody::new(futures::stream::pending()))
                .unwrap();
            pending.push(Box::pin(send.send_request(req)));
        }
        held.push(tokio::spawn(async move {
            let _keep = send;
            futures::future::pending::<()>().await;
            Ok(())
        }));
    }
    // What is refused is refused at once; the rest wait for bodies that never come. (A stream's
    // future is kept: dropping it would cancel the stream and free what it holds.)
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    for r in &mut pending {
        use futures::FutureExt as _;
        if let Some(Ok(resp)) = r.as_mut().now_or_never()
            && resp.status() == 503
        {
            refused += 1;
        }
    }
    assert!(
        refused > 0,
        "every stream was taken: nothing was left to refuse"
    );
    let honest = reqwest::Client::builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .timeout(std::time::Duration::from_secs(5))
        .build()
        .unwrap();
    for path in ["/healthz", "/api/delegated/positions"] {
        let resp = honest
            .get(format!("http://{}{path}", gate.addr))
            .header("x-api-key", "adk_honest")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(resp.status(), 200, "{path}");
    }
    drop(pending);
    for h in held {
        h.abort();
    }
}

/// Issue 34: a caller past its rate limit gets one 429 and its connection closed: the reads it
/// pipelined behind are dropped unread, not answered one refusal each (what a flood costs the
/// gateway, and so every honest agent beside it). The same on the router's way (a write).
#[tokio::test]
async fn a_rate_limited_connection_gets_one_429_and_is_closed() {
    let upstream = stand_in(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}", false).await;
    let settings = GateSettings {
        rate_limit_per_second: 1,
        rate_limit_burst: 3,
        ..GateSettings::default()
    };
    let (gate, _dir) = gateway_before(upstream, settings).await;
    let mut c = Conn::open(gate.addr).await;
    let ten: Vec<u8> = (0..10)
        .flat_map(|_| get("/api/delegated/positions", "adk_flood", ""))
        .collect();
    c.send(&ten).await;
    let answers = c.answers_to_the_close().await;
    let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
    assert_eq!(statuses, [200, 200, 200, 429], "{answers:?}");
    let refused = &answers[3];
    assert_eq!(refused.headers["connection"], "close", "{refused:?}");
    assert_eq!(
        refused.json()["error"]["code"],
        "rate_limited",
        "{refused:?}"
    );
    assert!(refused.headers.contains_key("retry-after"), "{refused:?}");
    // A write from the same caller, on a new connection, is refused and closed the same way.
    let mut c = Conn::open(gate.addr).await;
    let body = "{}";
    let mut two = format!(
        "POST /api/delegated/propose HTTP/1.1\r\nhost: gateway\r\nx-api-key: adk_flood\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes();
    two.extend(get("/api/delegated/positions", "adk_flood", ""));
    c.send(&two).await;
    let answers = c.answers_to_the_close().await;
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0].status, 429, "{answers:?}");
}
