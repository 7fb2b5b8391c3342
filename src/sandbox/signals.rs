//! Outbound signals: signal destinations, their signed HTTPS deliveries (with persisted retries),
//! strategies firing on the live feed, and the fan-out of `/api/v1/trades` signals to followers.
//!
//! Deliveries are rows of `signal_deliveries`: a signal that matches a destination is inserted as
//! `pending`, due now; the delivery loop picks due rows up on every tick (and at once when woken),
//! POSTs each in its own task (short timeout, bounded concurrency), and writes the outcome back:
//! `delivered`, or `retrying` with the next attempt scheduled on the sandbox clock, or `failed` after
//! the last attempt. Every attempt of one delivery carries the same `webhook-id`, so receivers can
//! deduplicate. Because the schedule is in SQLite, retries survive a restart.

use super::core::{Core, Shared};
use super::data::{self, Timeframe};
use super::discovery::MAIN_PAIRS;
use super::engine::strategies::{self, Params, STRATEGIES};
use super::error::{AppError, ErrorKind};
use super::store::DbResult;
use super::store::signals::{self as db, Destination};
use super::trading;
use crate::api::model::{ExecutionResult, TradeSignal};
use crate::api::{ssrf, webhook_sig};
use chrono::{DateTime, Duration, DurationRound, Utc};
use rand::RngExt;
use rusqlite::Connection;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

/// Delays before attempts 2, 3, … (seconds); each gets ±10 % jitter. With the first attempt at
/// once, that is 6 attempts over about 37 minutes.
pub const RETRY_DELAYS_SECS: [i64; 5] = [30, 120, 300, 600, 1_200];
/// Attempts before a delivery is `failed`.
pub const MAX_ATTEMPTS: i64 = RETRY_DELAYS_SECS.len() as i64 + 1;
/// One POST may take this long (connect + TLS + answer) before it counts as failed.
pub const DELIVERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// Deliveries in flight at once, over all destinations.
pub const MAX_IN_FLIGHT: usize = 32;
/// Days of 5m bars each live evaluation looks at (indicator warm-up).
pub const LIVE_DAYS: u32 = 3;
pub const LIVE_TIMEFRAME: Timeframe = Timeframe::M5;
/// Longest `name` of a destination.
pub const MAX_NAME_CHARS: usize = 100;
pub const DIRECTIONS: [&str; 3] = ["BUY", "SELL", "CLOSE"];

// ---- destinations -----------------------------------------------------------------------------

impl Destination {
    pub fn matches(&self, strategy: Option<&str>, direction: &str) -> bool {
        let strategy_ok = self
            .strategy_ids
            .iter()
            .any(|s| s == "*" || Some(s.as_str()) == strategy);
        strategy_ok && self.directions.iter().any(|d| d == direction)
    }
}

pub fn new_destination_id() -> String {
    let bytes: [u8; 8] = rand::rng().random();
    format!("dst_{}", hex::encode(bytes))
}

// ---- SSRF guard: the rules are `api::ssrf`, shared with the gateway's notifications ----------

/// A URL the sandbox may deliver to: https, a host, and addresses checked.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: reqwest::Url,
    pub host: String,
    /// The checked addresses the delivery connects to (pinned, so a second DNS answer cannot
    /// point the connection elsewhere).
    pub addrs: Vec<SocketAddr>,
}

/// Parses and checks a destination URL: 400 `invalid_body` (field url) when it is not an https URL
/// with a host, 400 `destination_not_allowed` when the host (or any address it resolves to) is
/// internal and not in `allow_hosts`.
pub async fn check_url(url: &str, allow_hosts: &[String]) -> Result<Target, AppError> {
    let parsed = reqwest::Url::parse(url.trim()).map_err(|e| {
        AppError::invalid(
            "url",
            format!("url must be an https URL, e.g. https://example.com/hook ({e})"),
        )
    })?;
    if parsed.scheme() != "https" {
        return Err(AppError::invalid(
            "url",
            format!(
                "url must use https, got {}:// (signals carry trading intent and are sent only over TLS)",
                parsed.scheme()
            ),
        ));
    }
    let host = match parsed.host_str() {
        Some(h) if !h.is_empty() => h
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase(),
        _ => return Err(AppError::invalid("url", "url must name a host")),
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(AppError::invalid(
            "url",
            "url must not carry credentials; authenticate deliveries with the signing secret",
        ));
    }
    let port = parsed.port_or_known_default().unwrap_or(443);
    let allowed = allow_hosts.iter().any(|h| h.eq_ignore_ascii_case(&host));
    let refuse = |what: String| {
        AppError::new(ErrorKind::Invalid, "destination_not_allowed", what).with_field("url")
    };
    if !allowed && ssrf::METADATA_HOSTS.contains(&host.trim_end_matches('.')) {
        return Err(refuse(format!(
            "url host {host} is a cloud metadata service; signals are never sent there"
        )));
    }
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::time::timeout(
            std::time::Duration::from_secs(5),
            tokio::net::lookup_host((host.as_str(), port)),
        )
        .await
        .map_err(|_| refuse(format!("url host {host} did not resolve in time")))?
        .map_err(|e| refuse(format!("url host {host} does not resolve: {e}")))?
        .collect(),
    };
    if addrs.is_empty() {
        return Err(refuse(format!("url host {host} resolves to no address")));
    }
    if !allowed {
        for a in &addrs {
            if let Some(reason) = ssrf::forbidden_reason(a.ip()) {
                return Err(refuse(format!(
                    "url host {host} resolves to {}, {reason}; signals are only sent to public addresses (a local receiver needs sandbox.webhook_allow_hosts)",
                    a.ip()
                )));
            }
        }
    }
    Ok(Target {
        url: parsed,
        host,
        addrs,
    })
}

// ---- queueing signals -------------------------------------------------------------------------

/// A signal as sent to destinations (the body documented in the README).
#[derive(Debug, Clone)]
pub struct Event {
    pub source: &'static str,
    pub strategy_id: Option<String>,
    pub pair: Option<String>,
    pub direction: &'static str,
    pub price: Option<f64>,
    pub time: DateTime<Utc>,
    pub account: Option<String>,
    pub extra: serde_json::Map<String, Value>,
}

impl Event {
    fn body(&self, id: &str) -> Value {
        let mut body = json!({
            "type": "signal",
            "id": id,
            "source": self.source,
            "strategyId": self.strategy_id,
            "pair": self.pair,
            "direction": self.direction,
            "price": self.price,
            "time": self.time,
        });
        if let Some(a) = &self.account {
            body["account"] = json!(a);
        }
        for (k, v) in &self.extra {
            body[k] = v.clone();
        }
        body
    }
}

/// Queues one delivery per matching destination (of `account_id`, or of every account when None).
/// Returns how many were queued; the caller wakes the loop.
pub fn enqueue(
    conn: &Connection,
    account_id: Option<i64>,
    event: &Event,
    now: DateTime<Utc>,
) -> DbResult<usize> {
    let mut n = 0;
    let signal_id = format!("sig_{}", hex::encode(rand::rng().random::<[u8; 8]>()));
    let body = event.body(&signal_id).to_string();
    for d in db::destinations(conn, account_id)? {
        if !d.matches(event.strategy_id.as_deref(), event.direction) {
            continue;
        }
        let webhook_id = format!("msg_{}", hex::encode(rand::rng().random::<[u8; 12]>()));
        db::insert_delivery(conn, &d.id, &webhook_id, &body, now)?;
        n += 1;
    }
    Ok(n)
}

/// BUY / SELL / CLOSE of a trade signal.
fn trade_direction(signal: &TradeSignal) -> &'static str {
    let d = signal.d.as_deref().unwrap_or("").to_ascii_lowercase();
    if signal.action.is_some() || d == "close" {
        "CLOSE"
    } else if d == "short" || d == "sell" {
        "SELL"
    } else {
        "BUY"
    }
}

/// The fan-out of a `/api/v1/trades` signal that executed on the leader's account (and committed):
/// the trade is copied into each follower's book, and queued to the leader's matching destinations.
/// Nothing here can fail the leader's trade: a follower's refusal (no margin, nothing to close) and
/// a store error are logged.
pub fn fan_out_trade(
    core: &mut Core,
    leader_id: i64,
    leader_messenger_id: &str,
    signal: &TradeSignal,
    result: &ExecutionResult,
    now: DateTime<Utc>,
) {
    let label = signal.strategy.clone();
    match db::followers(&core.store.conn, leader_id, label.as_deref()) {
        Ok(list) => {
            for (follower_id, follower_mid) in list {
                if let Err(e) = copy_trade(core, follower_id, &follower_mid, signal, now) {
                    tracing::warn!(
                        "fan-out of {leader_messenger_id}'s trade to follower {follower_mid} not executed: {} ({})",
                        e.message,
                        e.code
                    );
                }
            }
        }
        Err(e) => tracing::error!("cannot read followers of account {leader_id}: {e}"),
    }
    let pair = signal
        .a
        .as_deref()
        .and_then(|a| trading::parse_coin(a, "a").ok())
        .map(str::to_string)
        .or_else(|| result.execution.fills.first().map(|f| f.coin.clone()));
    let price = result.execution.fills.first().map(|f| f.px).or(signal.p);
    let mut extra = serde_json::Map::new();
    if let Some(d) = &signal.d {
        extra.insert("d".into(), json!(d));
    }
    if let Some(tp) = signal.tp {
        extra.insert("tp".into(), json!(tp));
    }
    if let Some(sl) = signal.sl {
        extra.insert("sl".into(), json!(sl));
    }
    let event = Event {
        source: "trade",
        strategy_id: label,
        pair,
        direction: trade_direction(signal),
        price,
        time: now,
        account: Some(leader_messenger_id.to_string()),
        extra,
    };
    match enqueue(&core.store.conn, Some(leader_id), &event, now) {
        Ok(n) if n > 0 => core.signal_wake.notify_waiters(),
        Ok(_) => {}
        Err(e) => tracing::error!("cannot queue signal deliveries: {e}"),
    }
}

fn copy_trade(
    core: &mut Core,
    follower_id: i64,
    follower_mid: &str,
    signal: &TradeSignal,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let copy = TradeSignal {
        id: Some(follower_mid.to_string()),
        fanout: Some(false),
        ..signal.clone()
    };
    let plan = trading::plan_signal(core, follower_id, follower_mid, &copy, now)?;
    let (book, _, fills) = trading::execute(core, follower_id, &plan, now)?;
    core.commit(follower_id, book, &fills, now, |_| Ok(()))
}

/// Why a follow was not set or removed.
#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    #[error("{0}")]
    Db(#[from] rusqlite::Error),
    /// `role` is `follower` or `leader`.
    #[error("no {role} account with messengerId {messenger_id:?}")]
    UnknownAccount {
        role: &'static str,
        messenger_id: String,
    },
    #[error("an account cannot follow itself")]
    SelfFollow,
    #[error("--strategy must not be empty (use * for every label)")]
    EmptyLabel,
}

/// Followers of `leader_id` for this strategy label (follows of `*` follow every label).
pub fn set_follow(
    conn: &Connection,
    follower: &str,
    leader: &str,
    label: &str,
    remove: bool,
    now: DateTime<Utc>,
) -> Result<bool, FollowError> {
    let id = |mid: &str, role: &'static str| -> Result<i64, FollowError> {
        db::account_id_by_messenger_id(conn, mid)?.ok_or_else(|| FollowError::UnknownAccount {
            role,
            messenger_id: mid.to_string(),
        })
    };
    let (f, l) = (id(follower, "follower")?, id(leader, "leader")?);
    if f == l {
        return Err(FollowError::SelfFollow);
    }
    let label = label.trim();
    if label.is_empty() {
        return Err(FollowError::EmptyLabel);
    }
    Ok(if remove {
        db::unfollow(conn, f, l, label)
    } else {
        db::follow(conn, f, l, label, now)
    }?)
}

// ---- delivery ---------------------------------------------------------------------------------

/// A due delivery with what it takes to send it.
/// The delay before the attempt after `attempts` attempts, with ±10 % jitter.
pub fn backoff(attempts: i64) -> Option<Duration> {
    let i = usize::try_from(attempts - 1).ok()?;
    let base = *RETRY_DELAYS_SECS.get(i)? as f64;
    let jitter: f64 = rand::rng().random_range(-0.1..=0.1);
    Some(Duration::milliseconds(
        (base * (1.0 + jitter) * 1_000.0) as i64,
    ))
}

/// Outcome of one attempt: the HTTP status (if an answer came) and the error.
struct Outcome {
    status: Option<u16>,
    error: Option<String>,
}

fn record(conn: &Connection, id: i64, attempts: i64, out: &Outcome, now: DateTime<Utc>) {
    let result = match &out.error {
        None => db::delivered(conn, id, attempts, out.status, now),
        Some(error) => {
            let next = backoff(attempts).map(|delay| now + delay);
            db::attempt_failed(conn, id, attempts, out.status, error, next)
        }
    };
    if let Err(e) = result {
        tracing::error!("cannot record signal delivery {id}: {e}");
    }
}

/// The TLS configuration of deliveries: the web's roots plus what `webhook_ca_file` lists (see
/// [`crate::tls`]). A file that cannot be read is logged and adds nothing.
fn tls_config(settings: &super::settings::Settings) -> Option<rustls::ClientConfig> {
    let listed = match &settings.webhook_ca_file {
        None => Vec::new(),
        Some(path) => crate::tls::read_pem(path).unwrap_or_else(|e| {
            tracing::error!("webhook_ca_file {e}");
            Vec::new()
        }),
    };
    crate::tls::client_config(&listed)
        .map_err(|e| tracing::error!("webhook TLS: {e}"))
        .ok()
}

async fn attempt(
    d: &db::Due,
    allow_hosts: &[String],
    tls: Option<&rustls::ClientConfig>,
    timestamp: i64,
) -> Outcome {
    let fail = |status: Option<u16>, e: String| Outcome {
        status,
        error: Some(e),
    };
    // Checked again at every attempt: the name may point somewhere else by now (DNS rebinding);
    // the connection then goes to the checked addresses only.
    let target = match check_url(&d.url, allow_hosts).await {
        Ok(t) => t,
        Err(e) => return fail(None, e.message),
    };
    let mut builder = reqwest::Client::builder()
        .timeout(DELIVERY_TIMEOUT)
        .connect_timeout(DELIVERY_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .use_rustls_tls()
        .user_agent(concat!("agentdesk-sandbox/", env!("CARGO_PKG_VERSION")));
    if target.host.parse::<IpAddr>().is_err() {
        builder = builder.resolve_to_addrs(&target.host, &target.addrs);
    }
    if let Some(tls) = tls {
        builder = builder.use_preconfigured_tls(tls.clone());
    }
    let client = match builder.build() {
        Ok(c) => c,
        Err(e) => return fail(None, format!("cannot build the HTTP client: {e}")),
    };
    let headers =
        match webhook_sig::signed_headers(&d.secret, &d.webhook_id, timestamp, d.body.as_bytes()) {
            Ok(h) => h,
            Err(e) => return fail(None, e.to_string()),
        };
    let mut req = client
        .post(target.url)
        .header("content-type", "application/json")
        .body(d.body.clone());
    for (k, v) in headers {
        req = req.header(k, v);
    }
    match req.send().await {
        Ok(resp) if resp.status().is_success() => Outcome {
            status: Some(resp.status().as_u16()),
            error: None,
        },
        Ok(resp) => {
            let status = resp.status();
            fail(
                Some(status.as_u16()),
                format!("the destination answered HTTP {status}"),
            )
        }
        Err(e) => {
            let what = if e.is_timeout() {
                format!("no answer within {} s", DELIVERY_TIMEOUT.as_secs())
            } else if e.is_connect() {
                format!("cannot connect: {}", root_cause(&e))
            } else {
                root_cause(&e)
            };
            fail(None, what)
        }
    }
}

fn root_cause(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        msg = format!("{msg}: {s}");
        src = s.source();
    }
    msg
}

/// Sends due deliveries, each in its own task, until the sandbox stops.
pub async fn delivery_loop(shared: Arc<Shared>) {
    let tls = Arc::new(tls_config(&shared.settings));
    let allow = Arc::new(shared.settings.webhook_allow_hosts.clone());
    let permits = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let in_flight: Arc<Mutex<HashSet<i64>>> = Default::default();
    let tick = std::time::Duration::from_millis(shared.settings.tick_ms.min(1_000));
    loop {
        let woken = shared.signal_wake.notified();
        let skip = in_flight.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let found = shared
            .run_raw(move |core, now| -> rusqlite::Result<(Vec<db::Due>, bool)> {
                let due = db::due(&core.store.conn, now, &skip)?;
                Ok((due, db::any_waiting(&core.store.conn)?))
            })
            .await;
        let (list, waiting) = match found {
            Ok(Ok(found)) => found,
            Ok(Err(e)) => {
                tracing::warn!("cannot read due signal deliveries: {e}");
                (Vec::new(), true)
            }
            Err(_) => (Vec::new(), true),
        };
        // Nothing queued, due later or being attempted: only a queued signal (which wakes this
        // loop) can give it work, so an idle sandbox does not read the database every tick.
        let idle = list.is_empty()
            && !waiting
            && in_flight
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .is_empty();
        for d in list {
            in_flight
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(d.id);
            let (shared, tls, allow, permits, in_flight) = (
                shared.clone(),
                tls.clone(),
                allow.clone(),
                permits.clone(),
                in_flight.clone(),
            );
            tokio::spawn(async move {
                let _permit = permits.acquire_owned().await;
                let timestamp = shared.clock.now().timestamp();
                let out = attempt(&d, &allow, tls.as_ref().as_ref(), timestamp).await;
                let (id, attempts) = (d.id, d.attempts + 1);
                let _ = shared
                    .run_raw(move |core, now| record(&core.store.conn, id, attempts, &out, now))
                    .await;
                in_flight
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&id);
            });
        }
        if idle {
            woken.await;
            continue;
        }
        tokio::select! {
            _ = woken => {}
            _ = tokio::time::sleep(tick) => {}
        }
    }
}

// ---- strategies on the live feed --------------------------------------------------------------

/// Direction of a change to `target`.
pub fn direction_of(target: i8) -> &'static str {
    match target {
        1 => "BUY",
        -1 => "SELL",
        _ => "CLOSE",
    }
}

/// Evaluates every strategy (default parameters) on each newly closed 5m bar of the main pairs, and
/// queues a signal wherever a target changed. Runs on the sandbox clock: a tick checks `now`.
/// While no destination listens it waits for one to be added, with no tick: an idle sandbox is
/// not woken every second to count none.
pub async fn strategy_loop(shared: Arc<Shared>) {
    let tick = std::time::Duration::from_millis(shared.settings.tick_ms);
    let mut done: Option<i64> = None;
    loop {
        let now = shared.clock.now();
        let step = Duration::minutes(i64::from(LIVE_TIMEFRAME.minutes()));
        // The open time of the last bar that has closed by now.
        let bar = now
            .duration_trunc(step)
            .map(|t| (t - step).timestamp())
            .ok();
        if bar.is_some() && bar != done {
            match evaluate(&shared, now).await {
                Ok(true) => done = bar,
                // A destination added since the count left a permit: this returns at once.
                Ok(false) => {
                    shared.destination_added.notified().await;
                    continue;
                }
                Err(e) => tracing::warn!("live strategy evaluation failed: {e}"),
            }
        }
        tokio::time::sleep(tick).await;
    }
}

type Target8 = (&'static str, &'static str, i64, i8, f64);

/// Why an evaluation of the live strategies failed; the next tick tries again.
#[derive(Debug, thiserror::Error)]
enum EvaluateError {
    /// Work on a blocking thread panicked or was cancelled.
    #[error("{0}")]
    Task(#[from] tokio::task::JoinError),
    #[error("{0}")]
    Db(#[from] rusqlite::Error),
    #[error(transparent)]
    Bars(#[from] data::CsvError),
}

/// Evaluates the bar that closed last by `now`; false when nobody listens (nothing was done).
async fn evaluate(shared: &Arc<Shared>, now: DateTime<Utc>) -> Result<bool, EvaluateError> {
    // Nobody listens: nothing to compute. State is first recorded (without firing) once a
    // destination exists, so a destination never receives a change that predates it.
    let (market, listeners) = shared
        .run_raw(|core, _| {
            // A count that fails is an error, not "nobody": the loop would wait for a destination
            // that exists already, and try again at the next tick instead.
            let n = db::count_all_destinations(&core.store.conn);
            n.map(|n| (core.market.clone(), n))
        })
        .await??;
    if listeners == 0 {
        return Ok(false);
    }
    let csv_dir = shared.settings.csv_dir.clone();
    let targets = tokio::task::spawn_blocking(move || -> Result<Vec<Target8>, data::CsvError> {
        let mut targets: Vec<Target8> = Vec::new();
        let mut out = Vec::new();
        for pair in MAIN_PAIRS {
            let bars = data::bars(
                &market,
                csv_dir.as_deref(),
                pair,
                LIVE_TIMEFRAME,
                LIVE_DAYS,
                now,
            )?;
            let Some(last) = bars.last() else { continue };
            for spec in STRATEGIES {
                strategies::signals(spec, &Params::defaults(spec), &bars, &mut out);
                let target = out.last().copied().unwrap_or(0);
                targets.push((spec.id, pair, last.time, target, last.close));
            }
        }
        Ok(targets)
    })
    .await??;
    Ok(shared
        .run_raw(move |core, now| -> DbResult<bool> {
            let tx = core.store.conn.transaction()?;
            let mut queued = 0;
            for (strategy, pair, bar, target, close) in targets {
                let prev = db::strategy_state(&tx, strategy, pair, LIVE_TIMEFRAME.as_str())?;
                if let Some((last_bar, _)) = prev
                    && last_bar >= bar
                {
                    continue;
                }
                db::set_strategy_state(
                    &tx,
                    strategy,
                    pair,
                    LIVE_TIMEFRAME.as_str(),
                    bar,
                    i64::from(target),
                )?;
                if let Some((_, last_target)) = prev
                    && last_target != i64::from(target)
                {
                    let mut extra = serde_json::Map::new();
                    extra.insert("timeframe".into(), json!(LIVE_TIMEFRAME.as_str()));
                    extra.insert(
                        "bar".into(),
                        json!(DateTime::from_timestamp(bar, 0).unwrap_or_default()),
                    );
                    extra.insert("previousTarget".into(), json!(last_target));
                    extra.insert("target".into(), json!(target));
                    let event = Event {
                        source: "strategy",
                        strategy_id: Some(strategy.to_string()),
                        pair: Some(pair.to_string()),
                        direction: direction_of(target),
                        price: Some(close),
                        time: now,
                        account: None,
                        extra,
                    };
                    queued += enqueue(&tx, None, &event, now)?;
                }
            }
            tx.commit()?;
            if queued > 0 {
                core.signal_wake.notify_waiters();
            }
            Ok(true)
        })
        .await??)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_refused() {
        for ip in [
            "127.0.0.1",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "169.254.169.254",
            "169.254.1.1",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd00:ec2::254",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(ssrf::forbidden_reason(ip).is_some(), "{ip}");
        }
        for ip in ["93.184.216.34", "1.1.1.1", "2606:4700::1111", "100.128.0.1"] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(ssrf::forbidden_reason(ip).is_none(), "{ip}");
        }
    }

    #[tokio::test]
    async fn urls_are_checked_before_any_lookup_leaves() {
        let e = check_url("http://example.com/x", &[]).await.unwrap_err();
        assert_eq!(e.field.as_deref(), Some("url"));
        assert_eq!(e.code, "invalid_body");
        let e = check_url("https://metadata.google.internal/x", &[])
            .await
            .unwrap_err();
        assert_eq!(e.code, "destination_not_allowed");
        let e = check_url("https://[::1]:8443/x", &[]).await.unwrap_err();
        assert_eq!(e.code, "destination_not_allowed");
        assert!(e.message.contains("::1"), "{}", e.message);
        let ok = check_url("https://127.0.0.1:8443/x", &["127.0.0.1".into()])
            .await
            .unwrap();
        assert_eq!(ok.addrs, vec!["127.0.0.1:8443".parse().unwrap()]);
    }

    #[test]
    fn backoff_grows_and_ends() {
        let d1 = backoff(1).unwrap().num_milliseconds();
        assert!((27_000..=33_000).contains(&d1), "{d1}");
        let d5 = backoff(5).unwrap().num_milliseconds();
        assert!((1_080_000..=1_320_000).contains(&d5), "{d5}");
        assert!(backoff(MAX_ATTEMPTS).is_none());
        let total: i64 = RETRY_DELAYS_SECS.iter().sum();
        assert!(MAX_ATTEMPTS >= 5 && total >= 600);
    }

    #[test]
    fn destinations_match_strategy_and_direction() {
        let d = Destination {
            id: "dst_1".into(),
            account_id: 1,
            name: "n".into(),
            url: "https://x".into(),
            strategy_ids: vec!["ema_cross".into()],
            directions: vec!["BUY".into()],
            created_at: Utc::now(),
        };
        assert!(d.matches(Some("ema_cross"), "BUY"));
        assert!(!d.matches(Some("ema_cross"), "SELL"));
        assert!(!d.matches(Some("other"), "BUY"));
        assert!(!d.matches(None, "BUY"));
        let all = Destination {
            strategy_ids: vec!["*".into()],
            ..d
        };
        assert!(all.matches(None, "BUY"));
    }
}
