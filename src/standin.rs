//! A stand-in of the real deployment: a small in-memory service that answers the interface the way
//! `shared/observed-shapes.md` says the deployment does — errors as HTTP 200 with `success:false`
//! and the message in one of several places, numbers as decimal strings, fields our sandbox never
//! sends, and no proposals-list extension. The sandbox answers in our own shapes; this is what keeps
//! the console honest about the other ones. Contract tests run the client and the views against it,
//! and `agentdesk standin` runs it for trying the console by hand.
//!
//! It models one account with a small book: staged proposals (5 minutes), confirm fills at a fixed
//! mark, positions and PnL follow. Operations it does not model answer like the deployment's
//! errors, never a silent empty success.

use crate::api::catalog::{self, Method, OPERATIONS};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, on};
use chrono::{DateTime, Duration as TimeDelta, Utc};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How the stand-in shapes its answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// What the deployment was seen to send: extra fields, numbers as strings, errors as 200.
    Deployment,
    /// Only the fields the interface documents, numbers as strings, errors as 200.
    Minimal,
}

/// Where a `success:false` answer puts its message; the deployment was seen to use each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorPlace {
    /// `{"success": false, "error": "..."}`
    ErrorString,
    /// `{"success": false, "error": {"message": "..."}}`
    ErrorMessage,
    /// `{"success": false, "result": {"error": "..."}}`
    ResultError,
    /// `{"success": false, "message": "..."}`
    Message,
    /// `{"success": false, "code": "..."}`
    Code,
}

#[derive(Debug, Clone)]
pub struct StandInConfig {
    pub addr: SocketAddr,
    pub shape: Shape,
    pub errors: ErrorPlace,
    /// The one key the stand-in accepts; any other is refused as the deployment refuses it.
    pub key: String,
    pub messenger_id: String,
    /// At most this many confirm_trade calls a minute; beyond it the deployment's rate-limit
    /// answer (HTTP 200, `success:false`, the wait in the message and in `retryAfter`).
    pub confirms_per_minute: Option<u32>,
}

impl StandInConfig {
    pub fn new(addr: SocketAddr, key: impl Into<String>) -> Self {
        StandInConfig {
            addr,
            shape: Shape::Deployment,
            errors: ErrorPlace::Message,
            key: key.into(),
            messenger_id: "tg_700100".into(),
            confirms_per_minute: None,
        }
    }
}

#[derive(Debug, Clone)]
struct Staged {
    id: String,
    request: Value,
    /// A staged close (`d: "close"`, or `action: "close_all"` with an empty coin).
    close: bool,
    coin: String,
    long: bool,
    size: f64,
    leverage: u32,
    tp: Option<f64>,
    sl: Option<f64>,
    expires_at: DateTime<Utc>,
    executed: Option<Value>,
}

#[derive(Debug, Clone)]
struct Held {
    coin: String,
    szi: f64,
    entry: f64,
    leverage: u32,
}

#[derive(Default)]
struct Book {
    next_id: u64,
    proposals: BTreeMap<String, Staged>,
    positions: Vec<Held>,
    /// TP/SL trigger orders a confirm placed: (oid, coin, closing side is ask, size, trigger, tp).
    triggers: Vec<(u64, String, bool, f64, f64, bool)>,
    audit: Vec<Value>,
    realized: f64,
    posts: u64,
    /// When the confirms of the last minute came, for the rate limit.
    confirms: Vec<DateTime<Utc>>,
}

struct Inner {
    config: StandInConfig,
    book: Mutex<Book>,
}

/// A running stand-in; stops when dropped or on [`Running::shutdown`].
pub struct Running {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl Running {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The fixed marks of the stand-in's venue.
fn mark(coin: &str) -> Option<f64> {
    match coin {
        "BTC" => Some(61_250.5),
        "ETH" => Some(3_010.25),
        "SOL" => Some(151.125),
        "BNB" => Some(598.5),
        _ => None,
    }
}

/// Decimal text as the venue writes it: no exponent, no trailing zeros.
fn dec(x: f64) -> String {
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

pub async fn start(config: StandInConfig) -> std::io::Result<Running> {
    let listener = tokio::net::TcpListener::bind(config.addr).await?;
    let addr = listener.local_addr()?;
    let inner = Arc::new(Inner {
        config,
        book: Mutex::new(Book::default()),
    });
    let mut router = Router::new();
    // The deployment has none of our extensions (no proposals list): those paths are 404 there.
    for op in OPERATIONS.iter().filter(|op| !op.extension) {
        let filter = match op.method {
            Method::Get => MethodFilter::GET,
            Method::Post => MethodFilter::POST,
        };
        // axum writes path parameters as `{name}`, as the catalog does.
        router = router.route(
            op.path,
            on(filter, move |s: State<Arc<Inner>>, req: Request| {
                handle(s, op.name, req)
            }),
        );
    }
    let app = router.with_state(inner);
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await;
    });
    Ok(Running {
        addr,
        stop: Some(stop),
        task: Some(task),
    })
}

async fn handle(State(inner): State<Arc<Inner>>, name: &'static str, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let bytes: Bytes = axum::body::to_bytes(body, 64 * 1024)
        .await
        .unwrap_or_default();
    let path_args: Vec<String> = parts
        .uri
        .path()
        .rsplit('/')
        .next()
        .map(|s| vec![s.to_string()])
        .unwrap_or_default();
    let answer = inner.answer(name, &parts.headers, &bytes, &path_args, Utc::now());
    (StatusCode::OK, axum::Json(answer)).into_response()
}

impl Inner {
    fn fail(&self, message: &str) -> Value {
        match self.config.errors {
            ErrorPlace::ErrorString => json!({"success": false, "error": message}),
            ErrorPlace::ErrorMessage => json!({"success": false, "error": {"message": message}}),
            ErrorPlace::ResultError => json!({"success": false, "result": {"error": message}}),
            ErrorPlace::Message => json!({"success": false, "message": message}),
            ErrorPlace::Code => json!({"success": false, "code": message}),
        }
    }

    /// Adds the fields the deployment sends and our sandbox never does.
    fn decorate(&self, mut v: Value) -> Value {
        if self.config.shape == Shape::Deployment
            && let Some(o) = v.as_object_mut()
        {
            o.insert("requestId".into(), json!("req_5f2c"));
            o.insert("serverTime".into(), json!(Utc::now().timestamp_millis()));
        }
        v
    }

    fn answer(
        &self,
        name: &str,
        headers: &HeaderMap,
        body: &[u8],
        path_args: &[String],
        now: DateTime<Utc>,
    ) -> Value {
        let key = headers.get("x-api-key").and_then(|v| v.to_str().ok());
        if key != Some(self.config.key.as_str()) {
            return self.fail("Invalid API key");
        }
        let op = catalog::op(name);
        let parsed: Value = if op.method == Method::Post {
            match serde_json::from_slice(body) {
                Ok(v @ Value::Object(_)) => v,
                _ => return self.fail("Invalid JSON body"),
            }
        } else {
            Value::Null
        };
        let mut book = self.book.lock().expect("stand-in book poisoned");
        book.expire(now);
        if op.method == Method::Post {
            book.posts += 1;
        }
        let answer = match name {
            "whoami" => self.whoami(&book),
            "get_usage" | "get_usage_v1" => json!({"success": true, "usage": {
                "daily": {"used": book.posts.to_string(), "limit": "1000"},
                "compute": {"used": "0", "limit": "200"},
                "resetsAt": (now + TimeDelta::hours(6)).to_rfc3339(),
            }}),
            "get_positions" => self.positions(&book),
            "pnl_summary" => self.pnl(&book),
            "list_audit_logs" => {
                json!({"success": true, "logs": book.audit.iter().rev().cloned().collect::<Vec<_>>()})
            }
            "list_open_orders" => self.orders(&book, now),
            "propose_trade" => self.propose(&mut book, &parsed, now),
            "confirm_trade" => match self.confirm_limited(&mut book, now) {
                Some(refusal) => refusal,
                None => self.confirm(&mut book, &parsed, now),
            },
            "discover_strategies" => json!({"success": true, "strategies": [{
                "id": "sma_cross", "name": "SMA cross", "tier": "free", "type": "trend",
                "category": "trend", "timeframe": "1h", "description": "Fast SMA crosses slow SMA",
                "backtestData": {"totalReturn": "12.5", "winRate": "48.1"},
                "features": ["long", "short"], "riskSettings": {"sl": "2%"},
            }]}),
            "get_backtest_job" => self.fail(&format!("Job {} not found", path_args.join("/"))),
            // The deployment's combos, and top backtests as its tool lists them.
            "discover_top_optimized_combos" => json!({"success": true, "combos": [
                {"strategyId": "sma_cross", "parameters": {"fast": "10", "slow": "30"},
                 "rankWithinStrategy": "1", "paramsHash8": "a1b2c3d4"},
            ], "count": "1"}),
            "discover_top_backtests" => json!({"success": true, "results": [
                {"id": "bt_91", "strategyId": "sma_cross", "pair": "BTC-USD", "timeframe": "15m",
                 "totalReturn": "12.5", "paramHash": "a1b2c3d4", "source": "optimized"},
            ], "optimizationCacheCoverage": {"pairs": "12", "strategies": "9"}}),
            "research_status" => json!({"success": true, "run": null}),
            "list_mcp_capabilities" => json!({"success": true, "tools": [
                {"name": "service_get_positions", "description": "Open positions",
                 "tier": "observe", "version": "2"},
            ]}),
            "execute_mcp_tool" => match parsed.get("name").and_then(Value::as_str) {
                Some("service_get_positions") => {
                    let mut positions = self.positions(&book);
                    positions.as_object_mut().map(|o| o.remove("success"));
                    json!({"success": true, "result": positions})
                }
                Some(other) => self.fail(&format!("Unknown tool {other}")),
                None => self.fail("name is required"),
            },
            _ => self.fail(&format!("{name} is not available on this deployment")),
        };
        if matches!(name, "propose_trade" | "confirm_trade") {
            let ok = answer.get("success") == Some(&Value::Bool(true));
            let id = book.audit.len() + 1;
            book.audit.push(json!({
                "id": id,
                "action": name,
                "ok": ok,
                "createdAt": now.timestamp_millis().to_string(),
                "meta": {"ip": "203.0.113.9"},
            }));
        }
        self.decorate(answer)
    }

    /// The deployment's rate-limit refusal when the minute's confirms are used up; None (and the
    /// confirm counted) otherwise.
    fn confirm_limited(&self, book: &mut Book, now: DateTime<Utc>) -> Option<Value> {
        let limit = self.config.confirms_per_minute?;
        book.confirms.retain(|t| now - *t < TimeDelta::minutes(1));
        if book.confirms.len() < limit as usize {
            book.confirms.push(now);
            return None;
        }
        let oldest = book.confirms.first().copied().unwrap_or(now);
        let wait = (oldest + TimeDelta::minutes(1) - now).num_seconds().max(1);
        let mut v = self.fail(&format!(
            "Rate limit exceeded. Try again in {wait} seconds."
        ));
        v["retryAfter"] = json!(wait.to_string());
        Some(v)
    }

    fn whoami(&self, book: &Book) -> Value {
        let mut v = json!({
            "success": true,
            "messengerId": self.config.messenger_id,
            "isLegacyKey": false,
            "canUseTrades": true,
        });
        if self.config.shape == Shape::Deployment {
            v["telegramId"] = json!(self.config.messenger_id);
            v["summary"] = json!({
                "venueReady": true,
                "walletConnected": true,
                "builderFeeApproved": true,
                "equity": dec(book.equity()),
                "openPositions": book.positions.len().to_string(),
            });
        }
        v
    }

    fn positions(&self, book: &Book) -> Value {
        let rows: Vec<Value> = book
            .positions
            .iter()
            .map(|p| {
                let m = mark(&p.coin).unwrap_or(p.entry);
                let value = p.szi.abs() * m;
                let mut row = json!({
                    "coin": p.coin,
                    "szi": dec(p.szi),
                    "entryPx": dec(p.entry),
                    "positionValue": dec(value),
                    "unrealizedPnl": dec((m - p.entry) * p.szi),
                    "leverage": {"type": "cross", "value": p.leverage.to_string()},
                });
                if self.config.shape == Shape::Deployment {
                    row["returnOnEquity"] =
                        json!(dec((m - p.entry) * p.szi / (value / p.leverage as f64)));
                    row["liquidationPx"] = Value::Null;
                    row["marginUsed"] = json!(dec(value / p.leverage as f64));
                    row["cumFunding"] =
                        json!({"allTime": "0", "sinceOpen": "0", "sinceChange": "0"});
                    row["venueTag"] = json!("perp");
                }
                row
            })
            .collect();
        json!({"success": true, "positions": rows})
    }

    fn pnl(&self, book: &Book) -> Value {
        let unrealized = book.unrealized();
        let mut v = json!({
            "success": true,
            "totalPortfolioValue": dec(book.equity()),
            "totalUnrealizedPnL": dec(unrealized),
            "totalPositions": book.positions.len().to_string(),
            "pnl": {"total": dec(book.realized + unrealized), "today": dec(book.realized), "week": dec(book.realized), "month": dec(book.realized)},
        });
        if self.config.shape == Shape::Deployment {
            v["exchangeBreakdown"] =
                json!([{"exchange": "venue", "accountValue": dec(book.equity()), "note": "cross"}]);
        }
        v
    }

    fn propose(&self, book: &mut Book, body: &Value, now: DateTime<Utc>) -> Value {
        let text = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_string);
        let num = |k: &str| -> Option<f64> {
            match body.get(k)? {
                Value::String(s) => s.trim().parse().ok(),
                v => v.as_f64(),
            }
        };
        let asset = text("a").unwrap_or_default();
        let coin = asset
            .trim_end_matches("USDT")
            .trim_end_matches("-USD")
            .to_uppercase();
        if text("action").as_deref() == Some("close_all") || text("d").as_deref() == Some("close") {
            return self.propose_close(book, body, &coin, now);
        }
        let Some(px) = mark(&coin) else {
            return self.fail(&format!("Unsupported asset {asset}"));
        };
        let long = match text("d").as_deref() {
            Some("long") => true,
            Some("short") => false,
            _ => return self.fail("Direction must be long or short"),
        };
        let size = match (num("size"), num("sizeUsd")) {
            (Some(s), _) if s > 0.0 => s,
            (_, Some(u)) if u > 0.0 => u / px,
            _ => 1_000.0 / px,
        };
        let leverage = num("leverage").map_or(5, |l| l.round().clamp(1.0, 50.0) as u32);
        book.next_id += 1;
        let id = format!(
            "{:08x}-7b1e-4c2a-9d3f-{:012x}",
            book.next_id * 7919,
            book.next_id
        );
        let staged = Staged {
            id: id.clone(),
            request: body.clone(),
            close: false,
            coin: coin.clone(),
            long,
            size,
            leverage,
            tp: num("tp"),
            sl: num("sl"),
            expires_at: now + TimeDelta::minutes(5),
            executed: None,
        };
        let mut preview = json!({
            "coin": coin,
            "side": if long { "B" } else { "A" },
            "sz": dec(size),
            "markPx": dec(px),
            "notional": dec(size * px),
            "leverage": leverage.to_string(),
        });
        if let Some(tp) = staged.tp {
            preview["tp"] = json!(dec(tp));
        }
        if let Some(sl) = staged.sl {
            preview["sl"] = json!(dec(sl));
        }
        let expires = staged.expires_at;
        book.proposals.insert(id.clone(), staged);
        let mut v = json!({
            "success": true,
            "proposalId": id,
            "expiresAt": expires.to_rfc3339(),
            "preview": preview,
        });
        if self.config.shape == Shape::Deployment {
            v["message"] = json!("Trade staged. Confirm within 5 minutes.");
        }
        v
    }

    fn confirm(&self, book: &mut Book, body: &Value, now: DateTime<Utc>) -> Value {
        let Some(id) = body.get("proposalId").and_then(Value::as_str) else {
            return self.fail("proposalId is required");
        };
        let Some(staged) = book.proposals.get(id).cloned() else {
            return self.fail("Proposal not found or expired");
        };
        if let Some(done) = &staged.executed {
            return done.clone();
        }
        if staged.expires_at <= now {
            return self.fail("Proposal expired");
        }
        if staged.close {
            return self.confirm_close(book, &staged);
        }
        let px = mark(&staged.coin).unwrap_or_default();
        let signed = if staged.long {
            staged.size
        } else {
            -staged.size
        };
        match book.positions.iter_mut().find(|p| p.coin == staged.coin) {
            Some(p) => {
                let total = p.szi + signed;
                if total.abs() < 1e-12 {
                    book.realized += (px - p.entry) * p.szi;
                    book.positions.retain(|q| q.coin != staged.coin);
                } else {
                    if total.signum() == p.szi.signum() && signed.signum() == p.szi.signum() {
                        p.entry = (p.entry * p.szi + px * signed) / total;
                    }
                    p.szi = total;
                }
            }
            None => book.positions.push(Held {
                coin: staged.coin.clone(),
                szi: signed,
                entry: px,
                leverage: staged.leverage,
            }),
        }
        book.next_id += 1;
        let oid = 90_000 + book.next_id;
        for (level, tp) in [(staged.tp, true), (staged.sl, false)] {
            if let Some(trigger) = level {
                book.next_id += 1;
                let t = 90_000 + book.next_id;
                book.triggers.push((
                    t,
                    staged.coin.clone(),
                    staged.long,
                    staged.size,
                    trigger,
                    tp,
                ));
            }
        }
        let mut v = json!({
            "success": true,
            "result": {"status": "ok", "response": {"type": "order", "data": {"statuses": [
                {"filled": {"totalSz": dec(staged.size), "avgPx": dec(px), "oid": oid}}
            ]}}},
        });
        if self.config.shape == Shape::Deployment {
            v["request"] = staged.request.clone();
            v["proposal"] = json!({"id": staged.id, "status": "executed"});
        }
        if let Some(p) = book.proposals.get_mut(id) {
            p.executed = Some(v.clone());
        }
        v
    }
}

impl Inner {
    /// Stages a close of one coin's position (or of all): the deployment previews it as the
    /// positions it will flatten.
    fn propose_close(
        &self,
        book: &mut Book,
        body: &Value,
        coin: &str,
        now: DateTime<Utc>,
    ) -> Value {
        let all = body.get("action").and_then(Value::as_str) == Some("close_all");
        let closing: Vec<&Held> = book
            .positions
            .iter()
            .filter(|p| all || p.coin == coin)
            .collect();
        if closing.is_empty() {
            return self.fail(&format!("No open position in {coin}"));
        }
        let rows: Vec<Value> = closing
            .iter()
            .map(|p| {
                json!({"coin": p.coin, "szi": dec(p.szi), "entryPx": dec(p.entry),
                "markPx": dec(mark(&p.coin).unwrap_or(p.entry))})
            })
            .collect();
        book.next_id += 1;
        let id = format!(
            "{:08x}-7b1e-4c2a-9d3f-{:012x}",
            book.next_id * 7919,
            book.next_id
        );
        let expires = now + TimeDelta::minutes(5);
        book.proposals.insert(
            id.clone(),
            Staged {
                id: id.clone(),
                request: body.clone(),
                close: true,
                coin: if all { String::new() } else { coin.to_string() },
                long: false,
                size: 0.0,
                leverage: 1,
                tp: None,
                sl: None,
                expires_at: expires,
                executed: None,
            },
        );
        json!({"success": true, "proposalId": id, "expiresAt": expires.to_rfc3339(),
            "preview": {"closes": rows}})
    }

    fn confirm_close(&self, book: &mut Book, staged: &Staged) -> Value {
        let mut statuses = Vec::new();
        let (close, keep): (Vec<Held>, Vec<Held>) = book
            .positions
            .drain(..)
            .partition(|p| staged.coin.is_empty() || p.coin == staged.coin);
        book.positions = keep;
        for p in close {
            let px = mark(&p.coin).unwrap_or(p.entry);
            book.realized += (px - p.entry) * p.szi;
            book.next_id += 1;
            statuses.push(
                json!({"filled": {"totalSz": dec(p.szi.abs()), "avgPx": dec(px),
                "oid": 90_000 + book.next_id}}),
            );
            book.triggers.retain(|t| t.1 != p.coin);
        }
        let v = json!({"success": true, "result": {"status": "ok", "response": {"type": "order",
            "data": {"statuses": statuses}}}});
        if let Some(p) = book.proposals.get_mut(&staged.id) {
            p.executed = Some(v.clone());
        }
        v
    }

    /// Resting TP/SL triggers in the venue's frontend shape.
    fn orders(&self, book: &Book, now: DateTime<Utc>) -> Value {
        let rows: Vec<Value> = book
            .triggers
            .iter()
            .map(|(oid, coin, long, size, trigger, tp)| {
                let mut row = json!({
                    "coin": coin,
                    "side": if *long { "A" } else { "B" },
                    "limitPx": dec(*trigger),
                    "sz": dec(*size),
                    "oid": oid.to_string(),
                    "timestamp": now.timestamp_millis().to_string(),
                    "orderType": if *tp { "Take Profit Market" } else { "Stop Market" },
                    "triggerPx": dec(*trigger),
                    "isTrigger": true,
                    "reduceOnly": true,
                });
                if self.config.shape == Shape::Deployment {
                    row["origSz"] = json!(dec(*size));
                    row["triggerCondition"] = json!(format!(
                        "Price {} {}",
                        if *tp == *long { "above" } else { "below" },
                        dec(*trigger)
                    ));
                    row["isPositionTpsl"] = json!(true);
                    row["tif"] = Value::Null;
                    row["children"] = json!([]);
                }
                row
            })
            .collect();
        json!({"success": true, "orders": rows})
    }
}

impl Book {
    fn expire(&mut self, now: DateTime<Utc>) {
        // The deployment forgets an expired, unexecuted proposal: confirm then says "not found".
        self.proposals
            .retain(|_, p| p.executed.is_some() || p.expires_at > now - TimeDelta::minutes(10));
    }

    fn unrealized(&self) -> f64 {
        self.positions
            .iter()
            .map(|p| (mark(&p.coin).unwrap_or(p.entry) - p.entry) * p.szi)
            .sum()
    }

    fn equity(&self) -> f64 {
        100_000.0 + self.realized + self.unrealized()
    }
}
