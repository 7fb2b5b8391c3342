//! Signal destinations and deliveries: a real HTTPS receiver on loopback (self-signed certificate
//! the sandbox trusts through `webhook_ca_file`) that checks every Standard Webhooks signature
//! itself, with hmac/sha2/base64 directly.

use crate::common::{self, TestServer};
use crate::staged::long_btc;
use agentdesk::api::model::{SignalDestination, SignalDestinationRequest, TradeSignal};
use agentdesk::api::{ApiError, Client, Scope};
use agentdesk::sandbox::Settings;
use agentdesk::sandbox::data::{self, Timeframe};
use agentdesk::sandbox::engine::strategies::{self, Params};
use agentdesk::sandbox::venue::market::Market;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use chrono::Duration;
use hmac::{KeyInit, Mac};
use rusqlite::Connection;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// One request the receiver got.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) path: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }
}

/// An HTTPS receiver: answers the scripted statuses in order (then 200) and records every request.
#[derive(Clone)]
pub(crate) struct Receiver {
    port: u16,
    pub(crate) got: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<VecDeque<u16>>>,
}

impl Receiver {
    pub(crate) fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.port)
    }

    pub(crate) fn got(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    fn at(&self, path: &str) -> Vec<Received> {
        self.got().into_iter().filter(|r| r.path == path).collect()
    }

    pub(crate) async fn wait_for(&self, path: &str, n: usize, secs: u64) -> Vec<Received> {
        let start = Instant::now();
        loop {
            let got = self.at(path);
            if got.len() >= n {
                return got;
            }
            assert!(
                start.elapsed().as_secs() < secs,
                "{path}: {} of {n} deliveries after {secs} s",
                got.len()
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

/// The receiver sees a delivery before the sandbox records its outcome (the row is updated after
/// the answer arrives), so a test that has seen the request waits for the log to say so too.
pub(crate) async fn wait_deliveries(
    c: &Client,
    destination_id: &str,
    n: usize,
    status: &str,
) -> Vec<agentdesk::api::model::SignalDelivery> {
    let start = Instant::now();
    loop {
        let log = c
            .list_signal_deliveries(destination_id, None)
            .await
            .unwrap();
        if log.deliveries.len() >= n && log.deliveries.iter().all(|r| r.status == status) {
            return log.deliveries;
        }
        assert!(
            start.elapsed().as_secs() < 10,
            "{destination_id}: not {n} {status} after 10 s: {:?}",
            log.deliveries
                .iter()
                .map(|r| (&r.status, r.attempts))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// A self-signed certificate for localhost / 127.0.0.1, written as the CA file the sandbox trusts.
fn certificate(dir: &std::path::Path) -> (std::path::PathBuf, Arc<ServerConfig>) {
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let pem = dir.join("receiver.pem");
    std::fs::write(&pem, ck.cert.pem()).unwrap();
    let cert = CertificateDer::from(ck.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    (pem, Arc::new(config))
}

pub(crate) async fn receiver(tls: Arc<ServerConfig>) -> Receiver {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let r = Receiver {
        port: listener.local_addr().unwrap().port(),
        got: Default::default(),
        script: Default::default(),
    };
    let acceptor = TlsAcceptor::from(tls);
    let state = r.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let (acceptor, state) = (acceptor.clone(), state.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                // One HTTP/1.1 request per connection: headers, then content-length bytes.
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                let head_end = loop {
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                    match tls.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                let mut lines = head.split("\r\n");
                let path = lines
                    .next()
                    .and_then(|l| l.split(' ').nth(1))
                    .unwrap_or("")
                    .to_string();
                let headers: Vec<(String, String)> = lines
                    .filter_map(|l| l.split_once(':'))
                    .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                    .collect();
                let len: usize = headers
                    .iter()
                    .find(|(k, _)| k == "content-length")
                    .and_then(|(_, v)| v.parse().ok())
                    .unwrap_or(0);
                while buf.len() < head_end + len {
                    match tls.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let body = String::from_utf8_lossy(&buf[head_end..head_end + len]).into_owned();
                let status = state.script.lock().unwrap().pop_front().unwrap_or(200);
                state.got.lock().unwrap().push(Received {
                    path,
                    headers,
                    body,
                });
                let answer = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
                let _ = tls.write_all(answer.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    r
}

/// A sandbox that may deliver to loopback and trusts the receiver's certificate, and the receiver.
async fn setup() -> (TestServer, Receiver, tempfile::TempDir) {
    setup_with(Settings::default()).await
}

async fn setup_with(settings: Settings) -> (TestServer, Receiver, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let (pem, tls) = certificate(dir.path());
    let rx = receiver(tls).await;
    let s = common::start_with(Settings {
        webhook_allow_hosts: vec!["127.0.0.1".into(), "localhost".into()],
        webhook_ca_file: Some(pem),
        tick_ms: 50,
        ..settings
    })
    .await;
    (s, rx, dir)
}

pub(crate) fn request(
    url: &str,
    strategies: &[&str],
    directions: &[&str],
) -> SignalDestinationRequest {
    SignalDestinationRequest {
        url: url.into(),
        strategy_ids: strategies.iter().map(|s| s.to_string()).collect(),
        directions: directions.iter().map(|s| s.to_string()).collect(),
        name: "test hook".into(),
    }
}

pub(crate) const ALL: [&str; 3] = ["BUY", "SELL", "CLOSE"];

/// Checks a delivery the way a Standard Webhooks receiver does, computed here independently.
fn assert_signed(r: &Received, secret: &str, now: chrono::DateTime<chrono::Utc>) {
    let id = r.header("webhook-id").expect("webhook-id");
    let ts = r.header("webhook-timestamp").expect("webhook-timestamp");
    let sig = r.header("webhook-signature").expect("webhook-signature");
    let key = B64
        .decode(secret.strip_prefix("whsec_").expect("whsec_ secret"))
        .unwrap();
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{ts}.{}", r.body).as_bytes());
    let expected = format!("v1,{}", B64.encode(mac.finalize().into_bytes()));
    assert!(
        sig.split(' ').any(|s| s == expected),
        "signature {sig} is not {expected}"
    );
    let ts: i64 = ts.parse().unwrap();
    assert!(
        (ts - now.timestamp()).abs() <= 300,
        "timestamp {ts} is far from {now}"
    );
    assert_eq!(r.header("content-type"), Some("application/json"));
}

async fn create(c: &Client, req: &SignalDestinationRequest) -> (SignalDestination, String) {
    let d = c.create_signal_destination(req).await.unwrap();
    let secret = d
        .signing_secret
        .clone()
        .expect("signingSecret at creation")
        .expose()
        .to_string();
    (d, secret)
}

fn invalid_field(e: ApiError) -> (String, String) {
    match e {
        ApiError::Invalid {
            code,
            field,
            message,
        } => (code, field.unwrap_or_else(|| message.clone())),
        other => panic!("expected 400, got {other:?}"),
    }
}

#[tokio::test]
async fn create_and_list_show_the_secret_only_once() {
    let (s, rx, _dir) = setup().await;
    let c = s.client(Scope::PlatformTrade);
    let (d, secret) = create(&c, &request(&rx.url("/a"), &["*"], &["BUY", "close"])).await;
    assert!(d.id.starts_with("dst_"));
    assert!(secret.starts_with("whsec_"));
    assert_eq!(d.directions, vec!["BUY", "CLOSE"]);
    let list = c.list_signal_destinations().await.unwrap();
    assert_eq!(list.destinations.len(), 1);
    let row = &list.destinations[0];
    assert_eq!(row.id, d.id);
    assert_eq!(row.url, rx.url("/a"));
    assert_eq!(row.strategy_ids, vec!["*"]);
    assert!(row.signing_secret.is_none());
    assert_eq!(row.deliveries.as_ref().unwrap().total, 0);
    // The raw list answer holds no secret anywhere.
    let raw = s
        .http()
        .get(s.url("/api/v1/signal-destinations"))
        .header("x-api-key", s.key(Scope::PlatformTrade).expose())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!raw.contains(&secret) && !raw.contains("whsec_"), "{raw}");
    // A known strategy id works too.
    let id = strategies::STRATEGIES[0].id;
    let (d2, _) = create(&c, &request(&rx.url("/b"), &[id], &["SELL"])).await;
    assert_eq!(d2.strategy_ids, vec![id]);
}

#[tokio::test]
async fn bad_input_names_each_field_and_the_limit_is_409() {
    let (s, rx, _dir) = setup_with(Settings {
        max_signal_destinations: 1,
        ..Settings::default()
    })
    .await;
    let c = s.client(Scope::PlatformTrade);
    let ok = request(&rx.url("/x"), &["*"], &ALL);
    let cases: Vec<(SignalDestinationRequest, &str)> = vec![
        (
            SignalDestinationRequest {
                url: rx.url("/x").replace("https", "http"),
                ..ok.clone()
            },
            "url",
        ),
        (
            SignalDestinationRequest {
                url: "not a url".into(),
                ..ok.clone()
            },
            "url",
        ),
        (
            SignalDestinationRequest {
                url: "".into(),
                ..ok.clone()
            },
            "url",
        ),
        (
            SignalDestinationRequest {
                strategy_ids: vec![],
                ..ok.clone()
            },
            "strategyIds",
        ),
        (
            SignalDestinationRequest {
                strategy_ids: vec!["no_such_strategy".into()],
                ..ok.clone()
            },
            "strategyIds[0]",
        ),
        (
            SignalDestinationRequest {
                strategy_ids: vec![strategies::STRATEGIES[0].id.into(), "bogus".into()],
                ..ok.clone()
            },
            "strategyIds[1]",
        ),
        (
            SignalDestinationRequest {
                strategy_ids: vec!["*".into(), strategies::STRATEGIES[0].id.into()],
                ..ok.clone()
            },
            "strategyIds",
        ),
        (
            SignalDestinationRequest {
                directions: vec![],
                ..ok.clone()
            },
            "directions",
        ),
        (
            SignalDestinationRequest {
                directions: vec!["BUY".into(), "UP".into()],
                ..ok.clone()
            },
            "directions[1]",
        ),
        (
            SignalDestinationRequest {
                name: "  ".into(),
                ..ok.clone()
            },
            "name",
        ),
        (
            SignalDestinationRequest {
                name: "n".repeat(101),
                ..ok.clone()
            },
            "name",
        ),
    ];
    for (req, field) in cases {
        let e = c.create_signal_destination(&req).await.unwrap_err();
        let (code, got) = invalid_field(e);
        assert_eq!(code, "invalid_body", "{req:?}");
        assert_eq!(got, field, "{req:?}");
    }
    // A body without url names it.
    let resp = s
        .http()
        .post(s.url("/api/v1/signal-destinations"))
        .header("x-api-key", s.key(Scope::PlatformTrade).expose())
        .json(&serde_json::json!({"name": "x", "strategyIds": ["*"], "directions": ["BUY"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["field"], "url");
    // 100 characters is fine; then the per-account limit.
    c.create_signal_destination(&SignalDestinationRequest {
        name: "n".repeat(100),
        ..ok.clone()
    })
    .await
    .unwrap();
    match c.create_signal_destination(&ok).await.unwrap_err() {
        ApiError::Conflict { code, .. } => assert_eq!(code, "destination_limit"),
        other => panic!("expected 409, got {other:?}"),
    }
    assert!(
        c.list_signal_destinations()
            .await
            .unwrap()
            .destinations
            .len()
            == 1
    );
}

#[tokio::test]
async fn internal_addresses_are_refused_unless_allow_listed() {
    let s = common::start().await;
    let c = s.client(Scope::PlatformTrade);
    for (url, shown) in [
        ("https://127.0.0.1/hook", "127.0.0.1"),
        ("https://10.0.0.1/hook", "10.0.0.1"),
        (
            "https://169.254.169.254/latest/meta-data",
            "169.254.169.254",
        ),
        ("https://localhost:8443/hook", "localhost"),
        ("https://[::1]/hook", "::1"),
        ("https://192.168.0.10/hook", "192.168.0.10"),
        ("https://100.64.1.1/hook", "100.64.1.1"),
        (
            "https://metadata.google.internal/x",
            "metadata.google.internal",
        ),
    ] {
        let e = c
            .create_signal_destination(&request(url, &["*"], &ALL))
            .await
            .unwrap_err();
        match e {
            ApiError::Invalid { code, message, .. } => {
                assert_eq!(code, "destination_not_allowed", "{url}");
                assert!(message.contains(shown), "{url}: {message}");
            }
            other => panic!("{url}: expected 400, got {other:?}"),
        }
    }
    assert!(
        c.list_signal_destinations()
            .await
            .unwrap()
            .destinations
            .is_empty()
    );
}

fn with_strategy(label: &str) -> TradeSignal {
    TradeSignal {
        strategy: Some(label.into()),
        ..long_btc()
    }
}

#[tokio::test]
async fn trades_deliver_signed_signals_only_when_they_fan_out() {
    let (s, rx, _dir) = setup().await;
    let c = s.client(Scope::WebhookAlerts);
    let (d, secret) = create(&c, &request(&rx.url("/hook"), &["*"], &ALL)).await;
    // Only SELL: the BUY and CLOSE signals below do not reach it.
    let (momo, _) = create(&c, &request(&rx.url("/momo"), &["*"], &["SELL"])).await;

    // Only trades labelled with this engine strategy id.
    let (labelled, _) = create(&c, &request(&rx.url("/ema"), &["ema_cross"], &ALL)).await;
    // 1. fanout on (default): delivered, signed.
    c.place_order(&long_btc()).await.unwrap();
    let got = rx.wait_for("/hook", 1, 10).await;
    assert_signed(&got[0], &secret, s.clock_now());
    let event = got[0].json();
    assert_eq!(event["type"], "signal");
    assert_eq!(event["source"], "trade");
    assert_eq!(event["direction"], "BUY");
    assert_eq!(event["strategyId"], "Agent");
    assert_eq!(event["pair"], "BTC");
    assert_eq!(event["account"], s.running.messenger_id.as_str());
    assert!(event["price"].as_f64().unwrap() > 0.0);
    assert!(event["id"].as_str().unwrap().starts_with("sig_"));

    // 2. fanout:false in the body (sent raw, without the typed client's header).
    let mut off = long_btc();
    off.fanout = Some(false);
    let resp = s
        .http()
        .post(s.url("/api/v1/trades"))
        .header("x-api-key", s.key(Scope::WebhookAlerts).expose())
        .json(&off)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    // 3. the header alone.
    let resp = s
        .http()
        .post(s.url("/api/v1/trades"))
        .header("x-api-key", s.key(Scope::WebhookAlerts).expose())
        .header("X-Service-Fanout", "0")
        .json(&long_btc())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    // A platform order never fans out (whether or not this build requires a builder fee).
    let order = agentdesk::api::model::PlatformOrder {
        pair: "BTC-USD".into(),
        side: "long".into(),
        order_type: Some("market".into()),
        sizing_mode: Some("usd".into()),
        usd_amount: Some(1_000.0),
        leverage: Some(2),
        ..Default::default()
    };
    match s
        .client(Scope::PlatformTrade)
        .platform_place_order(&order, None)
        .await
    {
        Ok(_) => {}
        Err(ApiError::Conflict { code, .. }) => assert_eq!(code, "builder_fee_not_approved"),
        Err(other) => panic!("platform order: {other:?}"),
    }
    // A close fans out as CLOSE.
    let mut close = long_btc();
    close.d = Some("close".into());
    c.place_order(&close).await.unwrap();
    let got = rx.wait_for("/hook", 2, 10).await;
    assert_eq!(got[1].json()["direction"], "CLOSE");
    assert_signed(&got[1], &secret, s.clock_now());
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(rx.at("/hook").len(), 2, "only the fanned-out trades arrive");
    assert!(rx.at("/momo").is_empty(), "direction filter");
    assert!(rx.at("/ema").is_empty(), "strategy filter");
    // The pause above cannot prove a negative on a slow machine; the queue can: deliveries are
    // queued with the trade, before it is answered, so what is not queued now never goes out.
    for (id, what) in [
        (&momo.id, "direction filter"),
        (&labelled.id, "strategy filter"),
    ] {
        let queued = c.list_signal_deliveries(id, None).await.unwrap().deliveries;
        assert!(queued.is_empty(), "{what}: {} queued", queued.len());
    }

    // The delivery log (extension) of the own account; 404 for another account.
    wait_deliveries(&c, &d.id, 2, "delivered").await;
    let log = c.list_signal_deliveries(&d.id, Some(10)).await.unwrap();
    assert_eq!(log.deliveries.len(), 2);
    assert!(log.deliveries.iter().all(|r| r.status == "delivered"
        && r.attempts == 1
        && r.last_status == Some(200)
        && r.delivered_at.is_some()));
    assert_eq!(log.deliveries[0].event.direction, "CLOSE");
    assert_eq!(
        log.deliveries[1].webhook_id,
        got[0].header("webhook-id").unwrap()
    );
    let (_, other) = new_account(&s);
    match other.list_signal_deliveries(&d.id, None).await.unwrap_err() {
        ApiError::NotFound { .. } => {}
        e => panic!("expected 404, got {e:?}"),
    }
    match c.list_signal_deliveries(&d.id, Some(0)).await.unwrap_err() {
        ApiError::Invalid { field, .. } => assert_eq!(field.as_deref(), Some("limit")),
        e => panic!("expected 400, got {e:?}"),
    }
    // A trade labelled with a strategy id reaches the destination of that id.
    c.place_order(&with_strategy("ema_cross")).await.unwrap();
    let got_ema = rx.wait_for("/ema", 1, 10).await;
    assert_eq!(got_ema[0].json()["strategyId"], "ema_cross");
    let start = Instant::now();
    loop {
        let list = c.list_signal_destinations().await.unwrap();
        let row = list
            .destinations
            .iter()
            .find(|x| x.id == labelled.id)
            .unwrap();
        if row.deliveries.as_ref().unwrap().delivered == 1 {
            break;
        }
        assert!(start.elapsed().as_secs() < 10, "{row:?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Another account on the same database, and a client with a key of it.
fn new_account(s: &TestServer) -> (String, Client) {
    use agentdesk::sandbox::{keys, store::Store};
    let mut store = Store::open(&s.db).unwrap();
    let mid = keys::random_messenger_id();
    store
        .create_account(&mid, &keys::random_wallet(), 100_000.0, s.clock_now())
        .unwrap();
    let key = keys::create_key(
        &mut store,
        Some(&mid),
        Scope::Legacy,
        "follower",
        s.clock_now(),
    )
    .unwrap();
    (mid, Client::new(&s.base_url(), Some(key)).unwrap())
}

#[tokio::test]
async fn followers_copy_the_leaders_trades_only_with_fanout() {
    let (s, _rx, _dir) = setup().await;
    let leader = s.client(Scope::WebhookAlerts);
    let (follower_mid, follower) = new_account(&s);
    let (other_mid, other) = new_account(&s);
    {
        let store = agentdesk::sandbox::store::Store::open(&s.db).unwrap();
        let now = s.clock_now();
        let leader_mid = s.running.messenger_id.clone();
        assert!(
            agentdesk::sandbox::signals::set_follow(
                &store.conn,
                &follower_mid,
                &leader_mid,
                "Momo",
                false,
                now
            )
            .unwrap()
        );
        // Another label: not copied.
        agentdesk::sandbox::signals::set_follow(
            &store.conn,
            &other_mid,
            &leader_mid,
            "Else",
            false,
            now,
        )
        .unwrap();
    }
    // fanout off: the follower's book stays empty.
    let mut off = with_strategy("Momo");
    off.fanout = Some(false);
    leader.place_order(&off).await.unwrap();
    assert!(follower.get_positions().await.unwrap().positions.is_empty());
    // fanout on: copied.
    leader.place_order(&with_strategy("Momo")).await.unwrap();
    let positions = follower.get_positions().await.unwrap().positions;
    assert_eq!(positions.len(), 1, "{positions:?}");
    assert!(other.get_positions().await.unwrap().positions.is_empty());
    // A close is copied too; a trade too large for the follower never fails the leader.
    let mut close = with_strategy("Momo");
    close.d = Some("close".into());
    leader.place_order(&close).await.unwrap();
    assert!(follower.get_positions().await.unwrap().positions.is_empty());
    // A follower lacking margin is skipped (logged); the leader's trade stands. The follower
    // first ties up most of its margin itself.
    let mut own = with_strategy("Own");
    own.a = Some("ETHUSDT".into());
    own.size_usd = Some(450_000.0);
    follower.place_order(&own).await.unwrap();
    let mut big = with_strategy("Momo");
    big.size_usd = Some(200_000.0);
    let done = leader.place_order(&big).await.unwrap();
    assert_eq!(done.status, "filled");
    let positions = follower.get_positions().await.unwrap().positions;
    assert_eq!(
        positions.len(),
        1,
        "only the follower's own ETH: {positions:?}"
    );
}

fn delivery_rows(s: &TestServer) -> Vec<(String, i64, String)> {
    let conn = Connection::open(&s.db).unwrap();
    let mut stmt = conn
        .prepare("SELECT status, attempts, webhook_id FROM signal_deliveries ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

async fn wait_attempts(s: &TestServer, attempts: i64) {
    let start = Instant::now();
    while delivery_rows(s).first().map(|r| r.1) != Some(attempts) {
        assert!(start.elapsed().as_secs() < 10, "{:?}", delivery_rows(s));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn failed_deliveries_retry_with_the_same_webhook_id_and_survive_a_restart() {
    let (s, rx, _dir) = setup().await;
    rx.script.lock().unwrap().extend([500, 500]);
    let c = s.client(Scope::WebhookAlerts);
    let (d, secret) = create(&c, &request(&rx.url("/retry"), &["*"], &ALL)).await;
    c.place_order(&long_btc()).await.unwrap();
    rx.wait_for("/retry", 1, 10).await;
    wait_attempts(&s, 1).await;
    let log = c.list_signal_deliveries(&d.id, None).await.unwrap();
    let row = &log.deliveries[0];
    assert_eq!(row.status, "retrying");
    assert_eq!(row.last_status, Some(500));
    let next = row.next_attempt_at.unwrap();
    let wait = (next - s.clock_now()).num_seconds();
    assert!((26..=34).contains(&wait), "first retry in {wait} s");
    // Nothing is retried before its time.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(rx.at("/retry").len(), 1);
    // The schedule is in the database: a restarted sandbox continues it.
    let s = s.restart().await;
    s.clock.advance(Duration::seconds(40));
    rx.wait_for("/retry", 2, 10).await;
    wait_attempts(&s, 2).await;
    s.clock.advance(Duration::seconds(140));
    let got = rx.wait_for("/retry", 3, 10).await;
    wait_attempts(&s, 3).await;
    let ids: Vec<&str> = got
        .iter()
        .map(|r| r.header("webhook-id").unwrap())
        .collect();
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    for r in &got {
        assert_signed(r, &secret, s.clock_now());
        assert_eq!(r.body, got[0].body);
    }
    let log = s
        .client(Scope::WebhookAlerts)
        .list_signal_deliveries(&d.id, None)
        .await
        .unwrap();
    let row = &log.deliveries[0];
    assert_eq!(
        (row.status.as_str(), row.attempts, row.last_status),
        ("delivered", 3, Some(200))
    );
    assert_eq!(row.webhook_id, ids[0]);
    assert!(row.last_error.is_none() && row.next_attempt_at.is_none());
}

#[tokio::test]
async fn a_dead_destination_does_not_delay_a_healthy_one() {
    let (s, rx, _dir) = setup().await;
    let c = s.client(Scope::WebhookAlerts);
    // Connection refused: a port held, not listening.
    let (_held, refused) = common::refused_port();
    // A black hole: accepts the connection and never answers.
    let hole = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hole_port = hole.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = hole.accept().await {
            held.push(sock);
        }
    });
    let (dead, _) = create(
        &c,
        &request(&format!("https://127.0.0.1:{refused}/x"), &["*"], &ALL),
    )
    .await;
    let (hole_dest, _) = create(
        &c,
        &request(&format!("https://127.0.0.1:{hole_port}/x"), &["*"], &ALL),
    )
    .await;
    create(&c, &request(&rx.url("/healthy"), &["*"], &ALL)).await;
    let start = Instant::now();
    c.place_order(&long_btc()).await.unwrap();
    rx.wait_for("/healthy", 1, 10).await;
    // The black hole's attempt ends only at the delivery timeout: the healthy destination did not
    // wait for it if it got its delivery before that attempt was recorded. (Its state, not a wall
    // clock bound, so a loaded machine cannot fail it.)
    let hole_log = c.list_signal_deliveries(&hole_dest.id, None).await.unwrap();
    assert!(
        hole_log.deliveries.iter().all(|r| r.attempts == 0),
        "the healthy destination was served only after the black hole's attempt ended ({:?}): {:?}",
        start.elapsed(),
        hole_log
            .deliveries
            .iter()
            .map(|r| (&r.status, r.attempts))
            .collect::<Vec<_>>()
    );
    assert!(
        start.elapsed() < agentdesk::sandbox::signals::DELIVERY_TIMEOUT,
        "the healthy destination waited {:?}, as long as a delivery may take",
        start.elapsed()
    );
    // The refused one failed its first attempt and waits for a retry.
    let start = Instant::now();
    loop {
        let log = c.list_signal_deliveries(&dead.id, None).await.unwrap();
        let row = &log.deliveries[0];
        if row.attempts == 1 {
            assert_eq!(row.status, "retrying");
            assert!(row.last_status.is_none());
            assert!(
                row.last_error.as_deref().unwrap().contains("connect"),
                "{:?}",
                row.last_error
            );
            break;
        }
        assert!(start.elapsed().as_secs() < 10);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// The live target of a strategy at `now`, computed here from the same feed.
fn target_at(spec_id: &str, pair: &str, now: chrono::DateTime<chrono::Utc>) -> i8 {
    let spec = strategies::strategy(spec_id).unwrap();
    let market = Market::new(Settings::default().seed);
    let bars = data::bars(&market, None, pair, Timeframe::M5, 3, now).unwrap();
    let mut out = Vec::new();
    strategies::signals(spec, &Params::defaults(spec), &bars, &mut out);
    *out.last().unwrap()
}

/// The live strategies' loop waits, with no tick, while nobody listens: a destination added to a
/// sandbox that has waited for a while must wake it (not only one added before it first looked).
#[tokio::test]
async fn a_destination_added_to_an_idle_sandbox_wakes_the_live_strategies() {
    let (s, rx, _dir) = setup().await;
    let c = s.client(Scope::WebhookAlerts);
    let conn = Connection::open(&s.db).unwrap();
    let rows = |conn: &Connection| -> i64 {
        conn.query_row("SELECT COUNT(*) FROM strategy_signal_state", [], |r| {
            r.get(0)
        })
        .unwrap()
    };
    // Many ticks (50 ms) and bars: the loop has found nobody and waits.
    for _ in 0..4 {
        s.clock.advance(Duration::minutes(5));
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    }
    assert_eq!(rows(&conn), 0, "state recorded with nobody listening");
    create(&c, &request(&rx.url("/late"), &["*"], &ALL)).await;
    let start = Instant::now();
    while rows(&conn) < (strategies::STRATEGIES.len() * 3) as i64 {
        assert!(
            start.elapsed().as_secs() < 20,
            "the loop did not wake for the new destination"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn strategies_fire_on_the_live_feed() {
    let (s, rx, _dir) = setup().await;
    let c = s.client(Scope::WebhookAlerts);
    let (live, secret) = create(&c, &request(&rx.url("/live"), &["*"], &ALL)).await;
    let conn = Connection::open(&s.db).unwrap();
    let expected_rows = (strategies::STRATEGIES.len() * 3) as i64;
    let state = |conn: &Connection| -> (i64, i64) {
        conn.query_row(
            "SELECT COUNT(*), COALESCE(MIN(last_bar), 0) FROM strategy_signal_state",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
    };
    // First sight records the state without firing.
    let start = Instant::now();
    while state(&conn).0 < expected_rows {
        assert!(start.elapsed().as_secs() < 20, "no state recorded");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(rx.at("/live").is_empty());
    // Deliveries are queued with the state, so the queue says so exactly, however slow the
    // delivery would be.
    let queued = c.list_signal_deliveries(&live.id, None).await.unwrap();
    assert!(
        queued.deliveries.is_empty(),
        "first sight fired: {} queued",
        queued.deliveries.len()
    );
    let mut bar = state(&conn).1;
    for _ in 0..288 {
        s.clock.advance(Duration::minutes(5));
        bar += 300;
        let start = Instant::now();
        while state(&conn).1 < bar {
            assert!(start.elapsed().as_secs() < 20, "bar {bar} not evaluated");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        // Deliveries of this bar are queued with the state; give them a moment to arrive.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let btc: Vec<Received> = rx
            .at("/live")
            .into_iter()
            .filter(|r| r.json()["pair"] == "BTC")
            .collect();
        if let Some(r) = btc.first() {
            let event = r.json();
            assert_eq!(event["source"], "strategy");
            assert_eq!(event["timeframe"], "5m");
            let strategy = event["strategyId"].as_str().unwrap();
            let target = event["target"].as_i64().unwrap() as i8;
            assert_ne!(event["previousTarget"].as_i64().unwrap() as i8, target);
            let direction = match target {
                1 => "BUY",
                -1 => "SELL",
                _ => "CLOSE",
            };
            assert_eq!(event["direction"], direction);
            let time: chrono::DateTime<chrono::Utc> =
                serde_json::from_value(event["time"].clone()).unwrap();
            assert_eq!(target_at(strategy, "BTC", time), target, "{event}");
            assert!(event.get("account").is_none());
            assert_signed(r, &secret, time);
            return;
        }
    }
    panic!("no strategy changed its BTC target in a day of 5m bars");
}
