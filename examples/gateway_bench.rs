//! The gateway's figures that wrk cannot take, for `benches/gateway_bench.sh` (issue #22, points 4
//! and 5). Two modes, both against a running sandbox (`agentdesk serve`):
//!
//! `gateway_bench approval SANDBOX_URL AGENT_KEY STORE N` — from the supervisor's approve to the
//! upstream receiving the confirm. A recording proxy stands between an in-process gateway (on
//! `STORE`: `sqlite` for a fresh file, or a PostgreSQL URL for a fresh schema in it) and the
//! sandbox, and notes the instant each `POST /api/delegated/confirm` arrives, before it forwards
//! it. N proposals (and 100 more, approved first and not measured) are staged, then approved one
//! at a time (so no approval waits behind another); each one's figure is the arrival of its
//! confirm minus the instant its approve was sent. Where that time goes is read from the
//! gateway's own "approved" line (its `read_ms`, `rules_ms`, `commit_ms`, and the instant it was
//! written): `in` (the approve's HTTP and the supervisor's token, up to the handler), `read` (the
//! store's reads), `rules`, `commit` (the decision and its journal, one commit), and `out` (from
//! the commit to the confirm arriving upstream).
//!
//! `gateway_bench inbox GATEWAY_URL GATE_DB KEYS_FILE ITEMS` — the supervisor's inbox at scale,
//! against a gateway process on the SQLite file `GATE_DB`. Each key of `KEYS_FILE` (one a line,
//! one agent each) stages one real proposal through the gateway; each of those items is then
//! copied straight into the store (fresh ids, one millisecond apart) until the agents have ITEMS
//! pending between them. Then the inbox is asked as the console asks it (`?status=all`) and with
//! the default (`pending`), 200 times each, one at a time; then long-polled as the console does
//! (`?status=all&since=&wait=25`), answered at once with an old `since` 200 times, and held until
//! a decision 100 times (100 items rejected through the gateway).
//!
//! `gateway_bench staging SANDBOX_URL AGENT_KEY N` — what the pre-trade controls (issue #36) cost
//! a staging. An in-process gateway on a fresh SQLite file in front of the sandbox; N proposals
//! staged one at a time with no policy and N with every control set (limits no bench trade
//! reaches, so each one reads what it measures against: the mark, the positions, the equity, the
//! execution count), in 10 alternating rounds so both sides share the machine's moments; each
//! figure is one propose through the gateway, sent to answered.
//!
//! Each prints one `key=value` line per figure for the script.

use agentdesk::api::Client;
use agentdesk::api::model::TradeSignal;
use agentdesk::gateway::store::{Role, Status};
use agentdesk::gateway::{GateConfig, GateDb, Gateway};
use agentdesk::secret::Secret;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn arg(n: usize) -> String {
    std::env::args().nth(n).unwrap_or_else(|| {
        eprintln!(
            "usage: gateway_bench approval SANDBOX_URL AGENT_KEY sqlite|POSTGRES_URL N\n       gateway_bench inbox GATEWAY_URL GATE_DB KEYS_FILE ITEMS\n       gateway_bench staging SANDBOX_URL AGENT_KEY N"
        );
        std::process::exit(2)
    })
}

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1000.0
}

fn summary(name: &str, mut v: Vec<Duration>) {
    v.sort();
    println!(
        "{name}_n={} {name}_p50_ms={:.3} {name}_p99_ms={:.3} {name}_max_ms={:.3}",
        v.len(),
        quantile(&v, 0.5),
        quantile(&v, 0.99),
        quantile(&v, 1.0)
    );
}

fn signal(messenger_id: &str) -> TradeSignal {
    TradeSignal {
        id: Some(messenger_id.to_string()),
        strategy: Some("Bench".into()),
        a: Some("BTCUSDT".into()),
        d: Some("long".into()),
        o: Some("market".into()),
        size_usd: Some(20.0),
        ..Default::default()
    }
}

/// What the gateway's "approved" line says of one approval: when it was written (the decision
/// committed) and its phases.
struct Approved {
    at: Instant,
    read: Duration,
    rules: Duration,
    commit: Duration,
}

static APPROVALS: std::sync::LazyLock<Mutex<std::collections::HashMap<String, Approved>>> =
    std::sync::LazyLock::new(Default::default);

/// Reads the gateway's "approved" lines as they are written, in this process.
struct Capture;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Capture {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        #[derive(Default)]
        struct Fields {
            message: String,
            item: String,
            ms: [f64; 3],
        }
        impl tracing::field::Visit for Fields {
            fn record_f64(&mut self, f: &tracing::field::Field, v: f64) {
                match f.name() {
                    "read_ms" => self.ms[0] = v,
                    "rules_ms" => self.ms[1] = v,
                    "commit_ms" => self.ms[2] = v,
                    _ => {}
                }
            }
            fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                match f.name() {
                    "message" => self.message = format!("{v:?}"),
                    "item" => self.item = format!("{v:?}"),
                    _ => {}
                }
            }
        }
        let at = Instant::now();
        let mut fields = Fields::default();
        event.record(&mut fields);
        if fields.message == "approved" {
            let d = |ms: f64| Duration::from_secs_f64(ms / 1000.0);
            APPROVALS.lock().unwrap().insert(
                fields.item,
                Approved {
                    at,
                    read: d(fields.ms[0]),
                    rules: d(fields.ms[1]),
                    commit: d(fields.ms[2]),
                },
            );
        }
    }
}

struct Proxy {
    upstream: String,
    http: reqwest::Client,
    confirms: Mutex<Vec<Instant>>,
}

/// Forwards anything to the sandbox; a confirm's arrival is noted before anything else is done.
async fn relay(State(proxy): State<Arc<Proxy>>, req: Request) -> Response {
    if req.method() == axum::http::Method::POST && req.uri().path() == "/api/delegated/confirm" {
        proxy.confirms.lock().unwrap().push(Instant::now());
    }
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, 1 << 24)
        .await
        .unwrap_or_default();
    let mut headers = HeaderMap::new();
    for (name, value) in &parts.headers {
        if name != "host" && name != "content-length" {
            headers.append(name.clone(), value.clone());
        }
    }
    let url = format!(
        "{}{}",
        proxy.upstream,
        parts.uri.path_and_query().map_or("/", |p| p.as_str())
    );
    let sent = proxy
        .http
        .request(parts.method, url)
        .headers(headers)
        .body(body)
        .send()
        .await;
    match sent {
        Ok(resp) => {
            let status = resp.status();
            let mut headers = resp.headers().clone();
            headers.remove("content-length");
            headers.remove("transfer-encoding");
            let bytes: Bytes = resp.bytes().await.unwrap_or_default();
            (status, headers, bytes).into_response()
        }
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

/// Approvals made and not measured first: a store's first writes after its schema is made (its
/// statements prepared, its pages first read and written) are not its steady pace; on
/// PostgreSQL the first few took 5-13 ms where the rest take 2-3.
const WARM: usize = 100;

async fn approval(sandbox: String, key: Secret, store: String, n: usize) {
    {
        use tracing_subscriber::prelude::*;
        tracing_subscriber::registry()
            .with(Capture.with_filter(tracing_subscriber::filter::LevelFilter::INFO))
            .init();
    }
    let proxy = Arc::new(Proxy {
        upstream: sandbox.trim_end_matches('/').to_string(),
        http: reqwest::Client::new(),
        confirms: Mutex::new(Vec::new()),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_url = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new()
        .fallback(relay)
        .with_state(proxy.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let dir = tempfile::tempdir().unwrap();
    let (db, label) = if store == "sqlite" {
        (GateDb::File(dir.path().join("gate.db")), "sqlite")
    } else {
        let url = agentdesk::gateway::store::postgres::fresh_schema(&store, "bench")
            .await
            .unwrap_or_else(|e| panic!("postgres: {e}"));
        (GateDb::Postgres(url), "postgres")
    };
    let mut config = GateConfig::new("127.0.0.1:0".parse().unwrap(), &proxy_url, db);
    // The per-caller limit stays on (its cost is part of every request) but high enough that
    // staging N proposals back to back is not refused.
    config.settings.rate_limit_per_second = 1_000_000;
    config.settings.rate_limit_burst = 1_000_000;
    let gate = Gateway::start(config).await.expect("gateway starts");
    let agent = Client::new(&gate.base_url(), Some(key)).unwrap();
    let who = agent
        .whoami(false)
        .await
        .expect("whoami through the gateway");
    let mut staged = Vec::with_capacity(WARM + n);
    for _ in 0..WARM + n {
        let p = agent
            .propose_trade(&signal(&who.messenger_id))
            .await
            .expect("staging");
        staged.push(p.proposal_id);
    }
    let token = gate.mint_token("bench").await.unwrap();
    let http = reqwest::Client::new();
    let base = gate.base_url();
    let approve = |id: &str| {
        http.post(format!("{base}/gate/v1/inbox/{id}/approve"))
            .header("x-api-key", token.expose())
            .send()
    };
    let (mut to_confirm, mut answered) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut parts: [Vec<Duration>; 5] = Default::default();
    for (i, id) in staged.iter().enumerate() {
        let before = proxy.confirms.lock().unwrap().len();
        let sent = Instant::now();
        let resp = approve(id).await.expect("approve");
        let body: serde_json::Value = resp.json().await.expect("a JSON answer");
        let took = sent.elapsed();
        assert_eq!(body["item"]["status"], "executed", "{body}");
        let confirms = proxy.confirms.lock().unwrap();
        assert_eq!(confirms.len(), before + 1, "one confirm per approval");
        if i >= WARM {
            let arrived = confirms[before];
            to_confirm.push(arrived - sent);
            answered.push(took);
            let item = body["item"]["id"].as_str().expect("the item's id");
            let logged = APPROVALS.lock().unwrap().remove(item);
            let Some(Approved {
                at,
                read,
                rules,
                commit,
            }) = logged
            else {
                panic!("no 'approved' line for {item}")
            };
            let handled = read + rules + commit;
            // The approve's way in (HTTP, the supervisor's token) is what is left before the
            // handler's own phases; the way out, from the commit to the confirm's arrival.
            parts[0].push((at - sent).saturating_sub(handled));
            parts[1].push(read);
            parts[2].push(rules);
            parts[3].push(commit);
            parts[4].push(arrived.saturating_duration_since(at));
        }
    }
    summary(&format!("approve_to_confirm_{label}"), to_confirm);
    summary(&format!("approve_answered_{label}"), answered);
    for (name, v) in ["in", "read", "rules", "commit", "out"].iter().zip(parts) {
        summary(&format!("approval_{name}_{label}"), v);
    }
    gate.shutdown().await;
}

async fn inbox(gateway: String, gate_db: String, keys_file: String, items: usize) {
    let keys: Vec<Secret> = std::fs::read_to_string(&keys_file)
        .expect("the keys file")
        .lines()
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(|k| Secret::new(k.to_string()))
        .collect();
    assert!(!keys.is_empty(), "no keys in {keys_file}");
    let started = Instant::now();
    for key in &keys {
        let agent = Client::new(&gateway, Some(key.clone())).unwrap();
        let who = agent
            .whoami(false)
            .await
            .expect("whoami through the gateway");
        agent
            .propose_trade(&signal(&who.messenger_id))
            .await
            .expect("staging");
    }
    let store = GateDb::File(gate_db.into())
        .open()
        .await
        .expect("the gate db");
    let real = store
        .items(Some(Status::Pending), keys.len() * 2)
        .await
        .unwrap();
    assert_eq!(real.len(), keys.len(), "one pending item per agent");
    let copies = items.div_ceil(real.len()).saturating_sub(1);
    for k in 1..=copies {
        for item in &real {
            let mut copy = item.clone();
            copy.id = format!("{}c{k}", item.id);
            copy.proposal_id = item.proposal_id.as_ref().map(|p| format!("{p}c{k}"));
            copy.confirm_token = None;
            copy.created_at = item.created_at - chrono::Duration::milliseconds(k as i64);
            store.insert_item(copy).await.unwrap();
        }
    }
    let pending = real.len() * (copies + 1);
    println!(
        "inbox_agents={} inbox_pending={pending} inbox_seed_s={:.1}",
        keys.len(),
        started.elapsed().as_secs_f64()
    );
    let token =
        agentdesk::gateway::mint_token(store.as_ref(), "bench", Role::Viewer, chrono::Utc::now())
            .await
            .unwrap();
    let http = reqwest::Client::new();
    for (name, query) in [("inbox_all", "?status=all"), ("inbox_pending", "")] {
        let url = format!("{gateway}/gate/v1/inbox{query}");
        let mut times = Vec::with_capacity(200);
        let (mut listed, mut size) = (0, 0);
        for i in 0..220 {
            let sent = Instant::now();
            let resp = http
                .get(&url)
                .header("x-api-key", token.expose())
                .send()
                .await
                .expect("inbox");
            assert!(resp.status().is_success(), "{}", resp.status());
            let body = resp.bytes().await.unwrap();
            // The first twenty warm the connection and the store's caches.
            if i >= 20 {
                times.push(sent.elapsed());
            }
            size = body.len();
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            listed = v["items"].as_array().map_or(0, Vec::len);
        }
        println!("{name}_listed={listed} {name}_bytes={size}");
        summary(name, times);
    }
    long_polls(&http, &gateway, store.as_ref()).await;
}

/// The console's long poll (`?status=all&since=&wait=25`), both ways it is answered: at once when
/// `since` is behind (the console's first ask after a change it has not seen), and held until a
/// change, here a decision made through the gateway (from the decision sent to the poll's answer).
async fn long_polls(
    http: &reqwest::Client,
    gateway: &str,
    store: &dyn agentdesk::gateway::store::Store,
) {
    let token = agentdesk::gateway::mint_token(store, "bench", Role::Approver, chrono::Utc::now())
        .await
        .unwrap();
    let get = |query: String| {
        http.get(format!("{gateway}/gate/v1/inbox?status=all{query}"))
            .header("x-api-key", token.expose())
            .send()
    };
    // The whole body, read as the other figures are: parsing it is the client's time.
    let body = |resp: reqwest::Response| async move {
        assert!(resp.status().is_success(), "{}", resp.status());
        resp.bytes().await.unwrap()
    };
    let parse = |b: &[u8]| serde_json::from_slice::<serde_json::Value>(b).unwrap();
    let first = parse(&body(get(String::new()).await.unwrap()).await);
    let mut version = first["version"].as_u64().expect("a long-polled gateway");
    let mut times = Vec::with_capacity(200);
    for i in 0..220 {
        let sent = Instant::now();
        let answer = body(
            get(format!("&since={}&wait=25", version.wrapping_sub(1)))
                .await
                .unwrap(),
        )
        .await;
        if i >= 20 {
            times.push(sent.elapsed());
        }
        assert!(parse(&answer)["items"].is_array());
    }
    summary("inbox_poll_behind", times);
    let pending: Vec<String> = first["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["status"] == "pending")
        .filter_map(|i| i["id"].as_str().map(str::to_string))
        .collect();
    let (mut held, mut decided) = (Vec::new(), Vec::new());
    for id in pending.iter().take(100) {
        let poll = tokio::spawn(get(format!("&since={version}&wait=25")));
        // Long enough for the poll to be held before the change it waits for.
        tokio::time::sleep(Duration::from_millis(30)).await;
        let sent = Instant::now();
        let resp = http
            .post(format!("{gateway}/gate/v1/inbox/{id}/reject"))
            .header("x-api-key", token.expose())
            .json(&serde_json::json!({"reason": "bench"}))
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success(), "{}", resp.status());
        decided.push(sent.elapsed());
        let answer = body(poll.await.unwrap().unwrap()).await;
        held.push(sent.elapsed());
        version = parse(&answer)["version"].as_u64().unwrap();
    }
    summary("inbox_poll_held", held);
    summary("inbox_poll_decision", decided);
}

/// Every pre-trade control and the step-up, with limits the bench's 20 USD BTC longs stay far
/// within (the step is judged on every staging though none needs a second approval).
const EVERY_CONTROL: &str = r#"{"price_collar_pct": 50, "max_order_size": {"BTC": 1000},
    "max_position_usd": 1e12, "max_loss_per_trade_pct": 100,
    "max_stagings_per_minute": 1000000000, "max_executions_per_hour": 1000000000,
    "step_up_notional_usd": 1000000, "step_up_approvals": 2}"#;

async fn staging(sandbox: String, key: Secret, n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = GateConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        &sandbox,
        GateDb::File(dir.path().join("gate.db")),
    );
    config.settings.rate_limit_per_second = 1_000_000;
    config.settings.rate_limit_burst = 1_000_000;
    let gate = Gateway::start(config).await.expect("gateway starts");
    let agent = Client::new(&gate.base_url(), Some(key)).unwrap();
    let who = agent
        .whoami(false)
        .await
        .expect("whoami through the gateway");
    let mut sig = signal(&who.messenger_id);
    // A stop loss far under any mark: max_loss_per_trade_pct has one to measure.
    sig.sl = Some(1.0);
    let token = gate.mint_token("bench").await.unwrap();
    let http = reqwest::Client::new();
    let put = |policy: &str| {
        http.put(format!("{}/gate/v1/policy", gate.base_url()))
            .header("x-api-key", token.expose())
            .header("content-type", "application/json")
            .body(policy.to_string())
            .send()
    };
    let (mut none, mut every) = (Vec::with_capacity(n), Vec::with_capacity(n));
    const ROUNDS: usize = 10;
    for round in 0..ROUNDS * 2 {
        let controls = round % 2 == 1;
        let resp = put(if controls { EVERY_CONTROL } else { "{}" })
            .await
            .expect("policy");
        assert!(resp.status().is_success(), "{:?}", resp.text().await);
        // The first stagings of each side warm it (connections, prepared statements).
        for i in 0..WARM / ROUNDS + n / ROUNDS {
            let sent = Instant::now();
            let p = agent.propose_trade(&sig).await.expect("staging passes");
            let took = sent.elapsed();
            assert!(!p.proposal_id.is_empty());
            if i >= WARM / ROUNDS {
                if controls { &mut every } else { &mut none }.push(took);
            }
        }
    }
    let p99 = |v: &mut Vec<Duration>| {
        v.sort();
        quantile(v, 0.99)
    };
    let diff = p99(&mut every) - p99(&mut none);
    summary("staging_none", none);
    summary("staging_every_control", every);
    println!("staging_p99_diff_ms={diff:.3}");
    gate.shutdown().await;
}

#[tokio::main]
async fn main() {
    match arg(1).as_str() {
        "approval" => {
            let n = arg(5).parse().expect("N is a whole number");
            approval(arg(2), Secret::new(arg(3)), arg(4), n).await
        }
        "inbox" => {
            let items = arg(5).parse().expect("ITEMS is a whole number");
            inbox(arg(2), arg(3), arg(4), items).await
        }
        "staging" => {
            let n = arg(4).parse().expect("N is a whole number");
            staging(arg(2), Secret::new(arg(3)), n).await
        }
        other => {
            eprintln!("unknown mode {other:?}: approval, inbox or staging");
            std::process::exit(2)
        }
    }
}
