//! Attacks on the gateway's guarantee: nothing executes at the service without a human's approval
//! or beyond the supervisor's policy. Each attack is made by an agent with only its own key, over
//! loopback HTTP, with the raw bytes an agent can send. Every verdict is read from the sandbox's own
//! database (what it executed: fills, positions and their stop orders, executed proposals, audit
//! rows of operations that ran), never from the gateway's answer. Each test also proves its
//! preconditions (the proposal is staged, the position is open) and runs a positive control that
//! does execute, so a test cannot pass because nothing could have executed.
//!
//! Several of these tests fail on a gateway that re-derives a request's meaning with lenient
//! readers and forwards the original bytes, which the service reads its own way.

use super::Setup;
use super::guard::propose;
use crate::common;
use agentdesk::api::Scope;
use agentdesk::gateway::rules::policy::Policy;
use agentdesk::secret::Secret;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::collections::HashSet;

const ALLOWED: [&str; 2] = ["BTC", "ETH"];
const MAX_NOTIONAL: f64 = 500.0;
const MAX_LEVERAGE: i64 = 3;
/// Fills are at the mark plus the venue's slippage, and sizes are rounded to the coin's decimals.
const TOLERANCE: f64 = 1.01;

/// The policy most attacks run against: every rule that reads a field of the request.
pub(super) fn policy() -> Value {
    json!({"allow_immediate": true, "allowed_coins": ALLOWED, "max_notional_usd": MAX_NOTIONAL,
           "max_leverage": MAX_LEVERAGE, "require_stop_loss": true})
}

/// What the sandbox must not have executed, as the tests check it on its database.
#[derive(Debug, Clone, Default)]
pub(super) struct Limits {
    coins: Option<Vec<&'static str>>,
    max_notional: Option<f64>,
    max_leverage: Option<i64>,
    stop_loss: bool,
    /// The sum of every opening fill checked.
    max_daily: Option<f64>,
    /// The kill switch is on: nothing may open.
    killed: bool,
}

pub(super) fn policy_limits() -> Limits {
    Limits {
        coins: Some(ALLOWED.to_vec()),
        max_notional: Some(MAX_NOTIONAL),
        max_leverage: Some(MAX_LEVERAGE),
        stop_loss: true,
        ..Limits::default()
    }
}

// ---- the sandbox's database -----------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Fill {
    id: i64,
    coin: String,
    px: f64,
    sz: f64,
    dir: String,
}

impl Fill {
    fn opens(&self) -> bool {
        self.dir.starts_with("Open")
    }

    fn notional(&self) -> f64 {
        self.px * self.sz
    }
}

#[derive(Debug, Clone)]
struct Position {
    exchange: String,
    coin: String,
    szi: f64,
    entry_px: f64,
    leverage: i64,
}

impl Position {
    fn notional(&self) -> f64 {
        self.szi.abs() * self.entry_px
    }
}

#[derive(Debug, Clone)]
struct Order {
    oid: i64,
    exchange: String,
    coin: String,
    kind: String,
}

/// An audit row of an operation that ran (`outcome = 'ok'`).
#[derive(Debug, Clone)]
struct Ran {
    id: i64,
    operation: String,
    oid: Option<i64>,
}

/// What the sandbox executed, read from its database.
#[derive(Debug, Clone, Default)]
pub(super) struct Executed {
    fills: Vec<Fill>,
    positions: Vec<Position>,
    orders: Vec<Order>,
    /// `(id, kind, status)` of every proposal.
    proposals: Vec<(String, String, String)>,
    ran: Vec<Ran>,
}

impl Executed {
    fn executed_proposals(&self) -> impl Iterator<Item = &str> {
        self.proposals
            .iter()
            .filter(|(_, _, status)| status == "executed")
            .map(|(id, _, _)| id.as_str())
    }

    fn status_of(&self, id: &str) -> Option<&str> {
        self.proposals
            .iter()
            .find(|(p, _, _)| p == id)
            .map(|(_, _, s)| s.as_str())
    }

    /// What happened after `before`: its fills, audit rows and newly executed proposals; positions
    /// and orders as they are now.
    fn since(&self, before: &Executed) -> Executed {
        let last_fill = before.fills.iter().map(|f| f.id).max().unwrap_or(0);
        let last_ran = before.ran.iter().map(|r| r.id).max().unwrap_or(0);
        let done: HashSet<&str> = before.executed_proposals().collect();
        Executed {
            fills: self
                .fills
                .iter()
                .filter(|f| f.id > last_fill)
                .cloned()
                .collect(),
            positions: self.positions.clone(),
            orders: self.orders.clone(),
            proposals: self
                .proposals
                .iter()
                .filter(|(id, _, status)| status == "executed" && !done.contains(id.as_str()))
                .cloned()
                .collect(),
            ran: self
                .ran
                .iter()
                .filter(|r| r.id > last_ran)
                .cloned()
                .collect(),
        }
    }

    fn opened(&self) -> Vec<&Fill> {
        self.fills.iter().filter(|f| f.opens()).collect()
    }
}

/// Reads tables `fills`, `positions`, `orders`, `proposals` and `audit_logs` of the sandbox.
pub(super) fn executed(s: &Setup) -> Executed {
    let store = agentdesk::sandbox::store::Store::open_reader(&s.sandbox.db).unwrap();
    let conn = &store.conn;
    let fills = conn
        .prepare("SELECT id, coin, px, sz, dir FROM fills ORDER BY id")
        .unwrap()
        .query_map([], |r| {
            Ok(Fill {
                id: r.get(0)?,
                coin: r.get(1)?,
                px: r.get(2)?,
                sz: r.get(3)?,
                dir: r.get(4)?,
            })
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let positions = conn
        .prepare("SELECT exchange, coin, szi, entry_px, leverage FROM positions ORDER BY coin")
        .unwrap()
        .query_map([], |r| {
            Ok(Position {
                exchange: r.get(0)?,
                coin: r.get(1)?,
                szi: r.get(2)?,
                entry_px: r.get(3)?,
                leverage: r.get(4)?,
            })
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let orders = conn
        .prepare("SELECT oid, exchange, coin, kind FROM orders ORDER BY oid")
        .unwrap()
        .query_map([], |r| {
            Ok(Order {
                oid: r.get(0)?,
                exchange: r.get(1)?,
                coin: r.get(2)?,
                kind: r.get(3)?,
            })
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let proposals = conn
        .prepare("SELECT id, kind, status FROM proposals ORDER BY created_at")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let ran = conn
        .prepare(
            "SELECT id, operation, oid FROM audit_logs WHERE outcome = 'ok' AND operation IN
             ('confirm_trade', 'close_position', 'place_order', 'platform_place_order')
             ORDER BY id",
        )
        .unwrap()
        .query_map([], |r| {
            Ok(Ran {
                id: r.get(0)?,
                operation: r.get(1)?,
                oid: r.get(2)?,
            })
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    Executed {
        fills,
        positions,
        orders,
        proposals,
        ran,
    }
}

/// What in `new` is beyond `limits`: each fill that opened, each position open now (its coin, its
/// value, its leverage, its stop-loss order).
fn beyond(new: &Executed, limits: &Limits) -> Vec<String> {
    let mut out = Vec::new();
    let opened = new.opened();
    for f in &opened {
        let what = format!(
            "fill {} opened {} {} (~{:.0} USD)",
            f.id,
            f.sz,
            f.coin,
            f.notional()
        );
        if limits.killed {
            out.push(format!("{what} while the kill switch is on"));
        }
        if let Some(coins) = &limits.coins
            && !coins.contains(&f.coin.as_str())
        {
            out.push(format!("{what}: {} is not an allowed coin", f.coin));
        }
        if let Some(max) = limits.max_notional
            && f.notional() > max * TOLERANCE
        {
            out.push(format!("{what}: over max_notional_usd {max}"));
        }
    }
    for p in &new.positions {
        let what = format!(
            "{} {} position of {} (~{:.0} USD) at {}x",
            p.exchange,
            p.coin,
            p.szi,
            p.notional(),
            p.leverage
        );
        if let Some(coins) = &limits.coins
            && !coins.contains(&p.coin.as_str())
        {
            out.push(format!("{what}: not an allowed coin"));
        }
        if let Some(max) = limits.max_notional
            && p.notional() > max * TOLERANCE
        {
            out.push(format!("{what}: over max_notional_usd {max}"));
        }
        if let Some(max) = limits.max_leverage
            && p.leverage > max
        {
            out.push(format!("{what}: over max_leverage {max}"));
        }
        let stop = new
            .orders
            .iter()
            .any(|o| o.kind == "stop_market" && o.coin == p.coin && o.exchange == p.exchange);
        if limits.stop_loss && !stop {
            out.push(format!("{what}: no stop-loss order"));
        }
    }
    if let Some(max) = limits.max_daily {
        let total: f64 = opened.iter().map(|f| f.notional()).sum();
        if total > max * TOLERANCE {
            out.push(format!(
                "{total:.0} USD opened today: over max_daily_notional_usd {max}"
            ));
        }
    }
    out
}

/// Every `oid` anywhere in `v`.
fn oids_in(v: &Value, out: &mut HashSet<i64>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                if k == "oid"
                    && let Some(n) = x.as_i64()
                {
                    out.insert(n);
                }
                oids_in(x, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|x| oids_in(x, out)),
        _ => {}
    }
}

/// What in `new` executed with no approval on record at the gateway: a proposal executed that no
/// item approved (by a supervisor or a standing approval), and, unless the agent may trade
/// immediately, an order that ran outside an approved item's execution.
async fn unapproved(s: &Setup, new: &Executed, immediate_allowed: bool) -> Vec<String> {
    let items = s.inbox("all").await;
    let approved: Vec<&Value> = items
        .iter()
        .filter(|i| {
            !i["decidedBy"].is_null()
                && matches!(
                    i["status"].as_str(),
                    Some("approved" | "executing" | "executed")
                )
        })
        .collect();
    let proposals: HashSet<&str> = approved
        .iter()
        .filter_map(|i| i["proposalId"].as_str())
        .collect();
    let mut oids = HashSet::new();
    for i in &approved {
        oids_in(&i["result"], &mut oids);
    }
    let mut out = Vec::new();
    for id in new.executed_proposals() {
        if !proposals.contains(id) {
            out.push(format!("proposal {id} executed with no approval on record"));
        }
    }
    if !immediate_allowed {
        for r in &new.ran {
            let immediate = matches!(r.operation.as_str(), "place_order" | "platform_place_order");
            if immediate && !r.oid.is_some_and(|oid| oids.contains(&oid)) {
                out.push(format!(
                    "{} ran (audit row {}, oid {:?}) with no approval on record",
                    r.operation, r.id, r.oid
                ));
            }
        }
    }
    out
}

/// Every breach in what happened since `before`.
pub(super) async fn judge(
    s: &Setup,
    before: &Executed,
    limits: &Limits,
    immediate: bool,
) -> Vec<String> {
    let new = executed(s).since(before);
    let mut out = beyond(&new, limits);
    out.extend(unapproved(s, &new, immediate).await);
    out
}

/// Fails naming every attack that got through.
fn assert_none_through(breaches: &[(String, Vec<String>)]) {
    let through: Vec<String> = breaches
        .iter()
        .filter(|(_, b)| !b.is_empty())
        .map(|(label, b)| format!("{label}: {}", b.join("; ")))
        .collect();
    assert!(
        through.is_empty(),
        "{} of {} attacks executed at the sandbox:\n  {}",
        through.len(),
        breaches.len(),
        through.join("\n  ")
    );
}

// ---- setup and requests ----------------------------------------------------------------------------

/// A sandbox (with a daily POST cap no test reaches) and a gateway with its own key for the
/// account, with this policy in force.
pub(super) async fn armed(policy: Value) -> Setup {
    let sandbox = common::start_with(agentdesk::sandbox::Settings {
        daily_post_cap: 1_000_000,
        ..Default::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let gate_db = dir.path().join("gateway.db");
    let own = sandbox
        .running
        .create_key(Scope::McpMutate, "gateway")
        .await
        .unwrap();
    let policy = Policy::from_json(&policy).unwrap();
    let gate = common::start_gateway_with(&sandbox.base_url(), &sandbox.clock, &gate_db, |c| {
        c.upstream_key = Some(own);
        c.policy = policy;
    })
    .await;
    let token = gate.mint_token("alice").await.unwrap();
    Setup {
        sandbox,
        gate,
        gate_db,
        token,
        _dir: dir,
    }
}

/// A key of the account for the supervisor's own setup at the sandbox (opening a position to close,
/// flattening between attacks): never an agent's, never through the gateway.
async fn supervisor_key(s: &Setup) -> Secret {
    s.sandbox
        .running
        .create_key(Scope::Legacy, "supervisor")
        .await
        .unwrap()
}

/// A POST of raw bytes; the answer as JSON (or its text).
async fn post_raw(base: &str, path: &str, key: &Secret, body: Vec<u8>) -> (StatusCode, Value) {
    let resp = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .header("x-api-key", key.expose())
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let bytes = resp.bytes().await.unwrap();
    let v = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, v)
}

async fn agent_post(s: &Setup, path: &str, key: &Secret, body: Vec<u8>) -> (StatusCode, Value) {
    post_raw(&s.gate.base_url(), path, key, body).await
}

/// The object `obj` with one more member, written as raw bytes (`"x":"\ud800"`).
fn with_member(obj: &Value, member: &[u8]) -> Vec<u8> {
    let text = obj.to_string();
    assert!(text.starts_with('{') && text.ends_with('}'), "{text}");
    let mut out = text.as_bytes()[..text.len() - 1].to_vec();
    if text != "{}" {
        out.push(b',');
    }
    out.extend_from_slice(member);
    out.push(b'}');
    out
}

/// `base` with `changes` applied: a null removes the key.
pub(super) fn with(base: &Value, changes: Value) -> Value {
    let mut out = base.clone();
    for (k, v) in changes.as_object().unwrap() {
        if v.is_null() {
            out.as_object_mut().unwrap().remove(k);
        } else {
            out[k] = v.clone();
        }
    }
    out
}

/// A trade signal within [`policy`]: ETH, 400 USD, 3x, with a stop loss.
pub(super) fn trade() -> Value {
    json!({"strategy": "Agent", "a": "ETHUSDT", "d": "long", "o": "market", "sizeUsd": 400,
           "leverage": 3, "sl": "1"})
}

/// A platform order within [`policy`]: ETH, 400 USD, 3x, with a 10% stop loss.
fn order() -> Value {
    json!({"pair": "ETH-USD", "side": "long", "orderType": "market", "sizingMode": "usd",
           "usdAmount": 400, "leverage": 3, "exchange": "venue", "slEnabled": true,
           "slType": "percentage", "slPercentage": 10})
}

/// The body of an `execute_mcp_tool` call, written by hand so that a name with an escape or a
/// raw character stays as sent: `name` is JSON text; `extra` is one more member of the object.
fn tool_body(name: &str, args: &Value, extra: Option<&[u8]>) -> Vec<u8> {
    let mut out = format!(r#"{{"name":{name},"args":{args}"#).into_bytes();
    if let Some(m) = extra {
        out.push(b',');
        out.extend_from_slice(m);
    }
    out.push(b'}');
    out
}

/// `execute_mcp_tool` as an agent calls a mutate tool: the first call answers a confirmToken, the
/// second re-submits the same args with it. Returns both answers.
async fn tool_twice(
    s: &Setup,
    key: &Secret,
    name: &str,
    args: &Value,
    extra: Option<&[u8]>,
) -> Vec<(StatusCode, Value)> {
    let path = "/api/delegated/mcp/tool";
    let first = agent_post(s, path, key, tool_body(name, args, extra)).await;
    let mut answers = vec![first.clone()];
    if let Some(token) = first.1["result"]["confirmToken"].as_str() {
        let again = with(args, json!({"confirmToken": token}));
        answers.push(agent_post(s, path, key, tool_body(name, &again, extra)).await);
    }
    answers
}

/// A tool name as JSON text, for a label: as sent, with raw characters beyond printable ASCII
/// written as `\u{…}`.
fn shown(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c == ' ' || c.is_ascii_graphic() {
                c.to_string()
            } else {
                format!("\\u{{{:04x}}}", c as u32)
            }
        })
        .collect()
}

/// Stages a trade through the gateway and checks it is staged at the sandbox and pending in the
/// inbox.
async fn stage(s: &Setup, key: &Secret, body: Value) -> String {
    let (st, answer) = propose(s, key, body).await;
    assert_eq!(st, StatusCode::OK, "{answer}");
    let id = answer["proposalId"].as_str().unwrap().to_string();
    assert_eq!(executed(s).status_of(&id), Some("staged"));
    let items = s.inbox("pending").await;
    assert!(
        items.iter().any(|i| i["proposalId"] == id.as_str()),
        "{id} is not pending in the inbox: {items:?}"
    );
    id
}

async fn approve(s: &Setup, id: &str) {
    let (st, body) = s
        .supervisor(Method::POST, &format!("/gate/v1/inbox/{id}/approve"), None)
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["status"], "executed", "{body}");
}

async fn kill_switch(s: &Setup) {
    let (st, body) = s
        .supervisor(
            Method::POST,
            "/gate/v1/kill-switch",
            Some(json!({"on": true, "reason": "attack drill"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
}

/// Closes every position and cancels every order at the sandbox directly, with the supervisor's
/// key, so the next attack starts flat.
async fn flatten(s: &Setup, supervisor: &Secret) {
    let base = s.sandbox.base_url();
    for p in executed(s).positions {
        let body = json!({"pair": format!("{}-USD", p.coin), "exchange": p.exchange,
                          "percentage": 100});
        let (st, answer) = post_raw(
            &base,
            "/api/v1/positions/close",
            supervisor,
            body.to_string().into(),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{answer}");
    }
    for o in executed(s).orders {
        let body = json!({"oid": o.oid, "coin": o.coin});
        let (st, answer) = post_raw(
            &base,
            "/api/v1/orders/cancel",
            supervisor,
            body.to_string().into(),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{answer}");
    }
    let now = executed(s);
    assert!(now.positions.is_empty() && now.orders.is_empty(), "{now:?}");
}

/// A positive control: a trade within the policy, sent by an agent allowed immediate trades,
/// executes, and the checks see it and find it within the policy.
async fn control_trade(s: &Setup, key: &Secret, limits: &Limits) {
    let before = executed(s);
    let (st, body) = agent_post(s, "/api/v1/trades", key, trade().to_string().into()).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let new = executed(s).since(&before);
    assert_eq!(
        new.opened().len(),
        1,
        "the control did not execute: {new:?}"
    );
    assert_eq!(new.positions.len(), 1, "{new:?}");
    let breaches = judge(s, &before, limits, true).await;
    assert!(breaches.is_empty(), "the control is within: {breaches:?}");
}

/// Tool names the service runs as its mutate tool after trimming them, as JSON text.
fn spaced(tool: &str) -> Vec<String> {
    [
        format!("\" {tool}\""),
        format!("\"{tool} \""),
        format!("\"\\t{tool}\""),
        format!("\"{tool}\\n\""),
        format!("\"\\r\\n{tool}\""),
        format!("\"\u{a0}{tool}\""),
        format!("\"\\u00a0{tool}\""),
        format!("\"\\u0020{tool}\""),
        format!("\"{tool}\u{3000}\""),
        format!("\"\u{2003}{tool}\u{85}\""),
    ]
    .into_iter()
    .collect()
}

/// Members that no field of the operation reads: the service's parser skips them, and a JSON value
/// cannot hold them (`\xff` is a raw byte, not UTF-8).
fn junk() -> Vec<(&'static str, Vec<u8>)> {
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    vec![
        ("lone leading surrogate", br#""x":"\ud800""#.to_vec()),
        ("lone trailing surrogate", br#""x":"\udc00""#.to_vec()),
        ("number out of range", br#""x":1e400"#.to_vec()),
        (
            "nesting deeper than 128",
            format!(r#""x":{deep}"#).into_bytes(),
        ),
        ("invalid UTF-8", b"\"x\":\"\xff\"".to_vec()),
    ]
}

// ---- 1. whitespace around a mutate tool's name -------------------------------------------------------

#[tokio::test]
async fn a_spaced_tool_name_does_not_confirm_a_pending_proposal() {
    let s = armed(json!({})).await;
    let key = s.sandbox.key(Scope::McpMutate);

    // Control: a proposal a supervisor approved executes, and is seen as approved.
    let before = executed(&s);
    let approved = stage(&s, &key, trade()).await;
    approve(&s, &approved).await;
    let new = executed(&s).since(&before);
    assert_eq!(new.executed_proposals().collect::<Vec<_>>(), [&approved]);
    assert!(unapproved(&s, &new, false).await.is_empty());

    let mut breaches = Vec::new();
    for name in spaced("service_confirm_trade") {
        let id = stage(&s, &key, trade()).await;
        let before = executed(&s);
        tool_twice(&s, &key, &name, &json!({"proposalId": id}), None).await;
        breaches.push((
            format!("confirm tool {}", shown(&name)),
            judge(&s, &before, &Limits::default(), false).await,
        ));
    }
    assert_none_through(&breaches);
}

#[tokio::test]
async fn a_spaced_tool_name_does_not_place_an_immediate_order() {
    // No policy: this agent is not allowed immediate trades.
    let s = armed(json!({})).await;
    let supervisor = supervisor_key(&s).await;
    let key = s.sandbox.key(Scope::Legacy);

    // Control: the tool under its own name is staged, and runs once a supervisor approves it.
    let before = executed(&s);
    let answers = tool_twice(&s, &key, "\"service_place_order\"", &trade(), None).await;
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert!(executed(&s).since(&before).fills.is_empty());
    let item = s.inbox("pending").await[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    approve(&s, &item).await;
    let new = executed(&s).since(&before);
    assert_eq!(new.opened().len(), 1, "{new:?}");
    assert!(unapproved(&s, &new, false).await.is_empty());
    flatten(&s, &supervisor).await;

    let mut breaches = Vec::new();
    for (tool, args) in [
        ("service_place_order", trade()),
        ("service_platform_place_order", order()),
    ] {
        for name in spaced(tool) {
            let before = executed(&s);
            tool_twice(&s, &key, &name, &args, None).await;
            breaches.push((
                format!("tool {}", shown(&name)),
                judge(&s, &before, &Limits::default(), false).await,
            ));
            flatten(&s, &supervisor).await;
        }
    }
    // The token of a call the gateway captured for approval, spent under a spaced name.
    let path = "/api/delegated/mcp/tool";
    let before = executed(&s);
    let (st, first) = agent_post(
        &s,
        path,
        &key,
        tool_body("\"service_place_order\"", &trade(), None),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{first}");
    let token = first["result"]["confirmToken"].as_str().unwrap();
    assert!(
        s.inbox("pending")
            .await
            .iter()
            .any(|i| i["kind"] == "tool:service_place_order"),
        "the first call is captured"
    );
    let again = with(&trade(), json!({"confirmToken": token}));
    agent_post(
        &s,
        path,
        &key,
        tool_body("\"service_place_order \"", &again, None),
    )
    .await;
    breaches.push((
        "a captured tool call's token under a spaced name".into(),
        judge(&s, &before, &Limits::default(), false).await,
    ));
    assert_none_through(&breaches);
}

#[tokio::test]
async fn a_spaced_tool_name_does_not_pass_the_kill_switch() {
    // The agent may trade immediately, with no rules: only the kill switch stands in the way.
    let s = armed(json!({"allow_immediate": true})).await;
    let supervisor = supervisor_key(&s).await;
    let key = s.sandbox.key(Scope::Legacy);
    control_trade(&s, &key, &Limits::default()).await;
    flatten(&s, &supervisor).await;
    let staged = stage(&s, &key, trade()).await;

    kill_switch(&s).await;
    let killed = Limits {
        killed: true,
        ..Limits::default()
    };
    // The plain routes are refused.
    let before = executed(&s);
    agent_post(&s, "/api/v1/trades", &key, trade().to_string().into()).await;
    agent_post(&s, "/api/v1/orders", &key, order().to_string().into()).await;
    assert!(judge(&s, &before, &killed, true).await.is_empty());

    let mut breaches = Vec::new();
    for (tool, args) in [
        ("service_place_order", trade()),
        ("service_platform_place_order", order()),
    ] {
        let name = format!("\"{tool}\\n\"");
        let before = executed(&s);
        tool_twice(&s, &key, &name, &args, None).await;
        breaches.push((
            format!("tool {}", shown(&name)),
            judge(&s, &before, &killed, true).await,
        ));
        flatten(&s, &supervisor).await;
    }
    let before = executed(&s);
    let name = "\"\u{a0}service_confirm_trade\"";
    tool_twice(&s, &key, name, &json!({"proposalId": staged}), None).await;
    breaches.push((
        format!("confirm tool {}", shown(name)),
        judge(&s, &before, &killed, true).await,
    ));
    assert_none_through(&breaches);
}

#[tokio::test]
async fn a_proposal_staged_through_a_spaced_tool_name_is_not_confirmed_without_approval() {
    let s = armed(json!({})).await;
    let key = s.sandbox.key(Scope::McpMutate);
    let before = executed(&s);
    let answers = tool_twice(&s, &key, "\"\u{a0}service_propose_trade\"", &trade(), None).await;
    // A gateway that refuses the spaced name stops the attack here, with nothing staged.
    if let Some(id) = answers
        .last()
        .and_then(|(_, b)| b["result"]["proposalId"].as_str())
    {
        assert_eq!(executed(&s).status_of(id), Some("staged"));
        // The confirm endpoint holds it, whether or not the gateway saw it staged.
        super::confirm(&s, &key, id).await;
        assert_eq!(executed(&s).status_of(id), Some("staged"));
        tool_twice(
            &s,
            &key,
            "\" service_confirm_trade\"",
            &json!({"proposalId": id}),
            None,
        )
        .await;
    }
    assert_none_through(&[(
        "propose and confirm through spaced tool names".into(),
        judge(&s, &before, &Limits::default(), false).await,
    )]);
}

// ---- 2. a member the gateway cannot parse and the service skips --------------------------------------

#[tokio::test]
async fn an_unparseable_member_does_not_confirm_through_the_tool() {
    let s = armed(json!({})).await;
    let key = s.sandbox.key(Scope::McpMutate);
    // Control: the same members on the confirm endpoint execute nothing (the gateway needs the
    // proposalId to find the item, and holds it).
    let id = stage(&s, &key, trade()).await;
    for (_, member) in junk() {
        agent_post(
            &s,
            "/api/delegated/confirm",
            &key,
            with_member(&json!({"proposalId": id}), &member),
        )
        .await;
    }
    assert_eq!(executed(&s).status_of(&id), Some("staged"));

    let mut breaches = Vec::new();
    for (what, member) in junk() {
        let id = stage(&s, &key, trade()).await;
        let before = executed(&s);
        tool_twice(
            &s,
            &key,
            "\"service_confirm_trade\"",
            &json!({"proposalId": id}),
            Some(&member),
        )
        .await;
        breaches.push((
            format!("confirm tool with {what}"),
            judge(&s, &before, &Limits::default(), false).await,
        ));
    }
    assert_none_through(&breaches);
}

#[tokio::test]
async fn an_unparseable_member_does_not_execute_a_staged_close() {
    let s = armed(json!({})).await;
    let supervisor = supervisor_key(&s).await;
    let key = s.sandbox.key(Scope::McpMutate);
    let open = || async {
        let (st, body) = post_raw(
            &s.sandbox.base_url(),
            "/api/v1/trades",
            &supervisor,
            trade().to_string().into(),
        )
        .await;
        assert_eq!(st, StatusCode::OK, "{body}");
        assert_eq!(executed(&s).positions.len(), 1);
    };
    let close = json!({"a": "ETHUSDT", "d": "close"});

    // Control: an approved close executes and is seen as approved; the plain close is held.
    open().await;
    let before = executed(&s);
    let id = stage(&s, &key, close.clone()).await;
    agent_post(
        &s,
        "/api/delegated/positions/close",
        &key,
        json!({"proposalId": id}).to_string().into(),
    )
    .await;
    assert_eq!(executed(&s).status_of(&id), Some("staged"));
    approve(&s, &id).await;
    let new = executed(&s).since(&before);
    assert_eq!(new.executed_proposals().collect::<Vec<_>>(), [&id]);
    assert!(new.positions.is_empty());
    assert!(unapproved(&s, &new, false).await.is_empty());

    let mut breaches = Vec::new();
    for (what, member) in junk() {
        open().await;
        let id = stage(&s, &key, close.clone()).await;
        let before = executed(&s);
        agent_post(
            &s,
            "/api/delegated/positions/close",
            &key,
            with_member(&json!({"proposalId": id}), &member),
        )
        .await;
        breaches.push((
            format!("close with {what}"),
            judge(&s, &before, &Limits::default(), false).await,
        ));
        flatten(&s, &supervisor).await;
    }
    assert_none_through(&breaches);
}

#[tokio::test]
async fn an_unparseable_member_does_not_run_an_immediate_tool() {
    // No policy: this agent is not allowed immediate trades.
    let s = armed(json!({})).await;
    let supervisor = supervisor_key(&s).await;
    let key = s.sandbox.key(Scope::Legacy);
    // Control: a well-formed call is staged and nothing runs; with a member the tool does not
    // have, it is refused as a 400 naming it (the strict reading) and nothing is staged.
    let before = executed(&s);
    let answers = tool_twice(&s, &key, "\"service_place_order\"", &trade(), None).await;
    assert_eq!(answers.len(), 2, "{answers:?}");
    let refused = tool_twice(
        &s,
        &key,
        "\"service_place_order\"",
        &trade(),
        Some(b"\"x\":1"),
    )
    .await;
    assert_eq!(
        (refused[0].0, &refused[0].1["error"]["field"]),
        (StatusCode::BAD_REQUEST, &json!("x")),
        "{refused:?}"
    );
    assert!(executed(&s).since(&before).fills.is_empty());
    assert_eq!(s.inbox("pending").await.len(), 1);

    let mut breaches = Vec::new();
    for (tool, args) in [
        ("service_place_order", trade()),
        ("service_platform_place_order", order()),
    ] {
        for (what, member) in junk() {
            let before = executed(&s);
            tool_twice(&s, &key, &format!("\"{tool}\""), &args, Some(&member)).await;
            breaches.push((
                format!("tool {tool} with {what}"),
                judge(&s, &before, &Limits::default(), false).await,
            ));
            flatten(&s, &supervisor).await;
        }
    }
    assert_none_through(&breaches);
}

#[tokio::test]
async fn an_unparseable_member_passes_neither_the_rules_nor_the_kill_switch_on_immediate_routes() {
    let s = armed(policy()).await;
    let supervisor = supervisor_key(&s).await;
    let key = s.sandbox.key(Scope::Legacy);
    control_trade(&s, &key, &policy_limits()).await;
    flatten(&s, &supervisor).await;

    // Beyond every rule: SOL, far over the notional, 10x, no stop loss.
    let wild_trade = json!({"a": "SOLUSDT", "d": "long", "o": "market", "sizeUsd": 5000,
                            "leverage": 10});
    let wild_order = json!({"pair": "SOL-USD", "side": "long", "sizingMode": "account",
                            "accountPercentage": 50, "leverage": 10});
    let mut breaches = Vec::new();
    for (path, body) in [
        ("/api/v1/trades", &wild_trade),
        ("/api/v1/orders", &wild_order),
    ] {
        for (what, member) in junk() {
            let before = executed(&s);
            agent_post(&s, path, &key, with_member(body, &member)).await;
            breaches.push((
                format!("{path} beyond the rules with {what}"),
                judge(&s, &before, &policy_limits(), true).await,
            ));
            flatten(&s, &supervisor).await;
        }
    }
    kill_switch(&s).await;
    let killed = Limits {
        killed: true,
        ..policy_limits()
    };
    for (path, body) in [("/api/v1/trades", trade()), ("/api/v1/orders", order())] {
        for (what, member) in junk() {
            let before = executed(&s);
            agent_post(&s, path, &key, with_member(&body, &member)).await;
            breaches.push((
                format!("{path} under the kill switch with {what}"),
                judge(&s, &before, &killed, true).await,
            ));
            flatten(&s, &supervisor).await;
        }
    }
    assert_none_through(&breaches);
}

// ---- 3. the rules read other fields than the service executes ----------------------------------------

/// Sends each body to `path` as an agent allowed immediate trades and returns what each executed
/// beyond `limits`, flattening in between.
async fn each_beyond(
    s: &Setup,
    key: &Secret,
    supervisor: &Secret,
    path: &str,
    limits: &Limits,
    variants: Vec<(&str, Value)>,
) -> Vec<(String, Vec<String>)> {
    let mut breaches = Vec::new();
    for (label, body) in variants {
        let before = executed(s);
        agent_post(s, path, key, body.to_string().into()).await;
        breaches.push((
            format!("{path} {label}: {body}"),
            judge(s, &before, limits, true).await,
        ));
        flatten(s, supervisor).await;
    }
    breaches
}

#[tokio::test]
async fn the_rules_judge_what_a_trade_signal_executes() {
    let s = armed(policy()).await;
    let supervisor = supervisor_key(&s).await;
    let key = s.sandbox.key(Scope::Legacy);
    control_trade(&s, &key, &policy_limits()).await;
    flatten(&s, &supervisor).await;
    let t = trade();
    let variants = vec![
        (
            "size in coins next to sizeUsd",
            with(&t, json!({"size": "1"})),
        ),
        (
            "usdAmount instead of sizeUsd",
            with(&t, json!({"sizeUsd": null, "usdAmount": 400})),
        ),
        (
            "size_usd instead of sizeUsd",
            with(&t, json!({"sizeUsd": null, "size_usd": 400})),
        ),
        (
            "notionalUsd instead of sizeUsd",
            with(&t, json!({"sizeUsd": null, "notionalUsd": 400})),
        ),
        (
            "lev instead of leverage",
            with(&t, json!({"leverage": null, "lev": 2})),
        ),
        (
            "stopLoss instead of sl",
            with(&t, json!({"sl": null, "stopLoss": "1"})),
        ),
        (
            "slEnabled instead of sl",
            with(&t, json!({"sl": null, "slEnabled": true})),
        ),
    ];
    let breaches = each_beyond(
        &s,
        &key,
        &supervisor,
        "/api/v1/trades",
        &policy_limits(),
        variants,
    )
    .await;
    assert_none_through(&breaches);
}

#[tokio::test]
async fn the_rules_judge_what_a_platform_order_executes() {
    let s = armed(policy()).await;
    let supervisor = supervisor_key(&s).await;
    let key = s.sandbox.key(Scope::Legacy);
    // Control: the order within the policy executes, with its stop loss.
    let before = executed(&s);
    let (st, body) = agent_post(&s, "/api/v1/orders", &key, order().to_string().into()).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(executed(&s).since(&before).opened().len(), 1);
    assert!(judge(&s, &before, &policy_limits(), true).await.is_empty());
    flatten(&s, &supervisor).await;
    let o = order();
    let no_sl = json!({"slEnabled": null, "slType": null, "slPercentage": null});
    let variants = vec![
        (
            "a next to pair",
            with(&o, json!({"a": "ETHUSDT", "pair": "SOL-USD"})),
        ),
        (
            "coin next to pair",
            with(&o, json!({"coin": "ETH", "pair": "SOL-USD"})),
        ),
        (
            "usdAmount with account sizing",
            with(
                &o,
                json!({"sizingMode": "account", "accountPercentage": 50}),
            ),
        ),
        (
            "usdAmount with the default sizing",
            with(&o, json!({"sizingMode": null, "accountPercentage": 10})),
        ),
        (
            "sizeUsd read before usdAmount",
            with(&o, json!({"sizeUsd": 400, "usdAmount": 5000})),
        ),
        (
            "usdAmount with size sizing",
            with(&o, json!({"sizingMode": "size", "size": 1})),
        ),
        (
            "sl without slEnabled",
            with(&with(&o, no_sl.clone()), json!({"sl": "1"})),
        ),
        (
            "stopLoss without slEnabled",
            with(&with(&o, no_sl), json!({"stopLoss": 1})),
        ),
    ];
    let breaches = each_beyond(
        &s,
        &key,
        &supervisor,
        "/api/v1/orders",
        &policy_limits(),
        variants,
    )
    .await;
    assert_none_through(&breaches);
}

#[tokio::test]
async fn reduce_only_on_an_opening_trade_passes_neither_the_rules_nor_the_kill_switch() {
    let s = armed(policy()).await;
    let supervisor = supervisor_key(&s).await;
    let key = s.sandbox.key(Scope::Legacy);
    control_trade(&s, &key, &policy_limits()).await;
    flatten(&s, &supervisor).await;
    let wild_trade = json!({"a": "SOLUSDT", "d": "long", "o": "market", "sizeUsd": 5000,
                            "leverage": 10});
    let mut breaches = each_beyond(
        &s,
        &key,
        &supervisor,
        "/api/v1/trades",
        &policy_limits(),
        vec![
            (
                "reduceOnly beyond every rule",
                with(&wild_trade, json!({"reduceOnly": true})),
            ),
            (
                "reduce_only beyond every rule",
                with(&wild_trade, json!({"reduce_only": true})),
            ),
        ],
    )
    .await;
    let wild_order = json!({"pair": "SOL-USD", "side": "long", "sizingMode": "usd",
                            "usdAmount": 5000, "leverage": 10});
    breaches.extend(
        each_beyond(
            &s,
            &key,
            &supervisor,
            "/api/v1/orders",
            &policy_limits(),
            vec![
                (
                    "reduceOnly beyond every rule",
                    with(&wild_order, json!({"reduceOnly": true})),
                ),
                // A platform order has no d nor action; the gateway reads them as a close.
                (
                    "d close beyond every rule",
                    with(&wild_order, json!({"d": "close"})),
                ),
                (
                    "action close beyond every rule",
                    with(&wild_order, json!({"action": "close"})),
                ),
            ],
        )
        .await,
    );
    kill_switch(&s).await;
    let killed = Limits {
        killed: true,
        ..policy_limits()
    };
    breaches.extend(
        each_beyond(
            &s,
            &key,
            &supervisor,
            "/api/v1/trades",
            &killed,
            vec![(
                "reduceOnly under the kill switch",
                with(&trade(), json!({"reduceOnly": true})),
            )],
        )
        .await,
    );
    breaches.extend(
        each_beyond(
            &s,
            &key,
            &supervisor,
            "/api/v1/orders",
            &killed,
            vec![
                (
                    "reduceOnly under the kill switch",
                    with(&order(), json!({"reduceOnly": true})),
                ),
                (
                    "d close under the kill switch",
                    with(&order(), json!({"d": "close"})),
                ),
            ],
        )
        .await,
    );
    assert_none_through(&breaches);
}

/// Not in the known list: a cancel always passes as reducing, and the one it cancels may be the
/// stop loss require_stop_loss made the trade carry.
#[tokio::test]
async fn a_required_stop_loss_is_not_cancelled_from_under_its_position() {
    let s = armed(policy()).await;
    let key = s.sandbox.key(Scope::Legacy);
    control_trade(&s, &key, &policy_limits()).await;
    let before = executed(&s);
    let stop = before
        .orders
        .iter()
        .find(|o| o.kind == "stop_market")
        .expect("the control's stop loss")
        .clone();
    agent_post(
        &s,
        "/api/v1/orders/cancel",
        &key,
        json!({"oid": stop.oid, "coin": stop.coin})
            .to_string()
            .into(),
    )
    .await;
    assert_eq!(
        executed(&s).positions.len(),
        1,
        "the position is still open"
    );
    assert_none_through(&[(
        format!("/api/v1/orders/cancel of stop order {}", stop.oid),
        judge(&s, &before, &policy_limits(), true).await,
    )]);
}

#[tokio::test]
async fn a_standing_approval_executes_only_what_it_covers() {
    let s = armed(json!({"max_leverage": MAX_LEVERAGE, "require_stop_loss": true})).await;
    let supervisor = supervisor_key(&s).await;
    let key = s.sandbox.key(Scope::McpMutate);
    let (st, body) = s
        .supervisor(
            Method::POST,
            "/gate/v1/standing-approvals",
            Some(
                json!({"agent": "*", "coins": ["ETH"], "maxNotionalUsd": 600, "minutes": 60,
                        "reason": "small ETH entries"}),
            ),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let covered = Limits {
        coins: Some(vec!["ETH"]),
        max_notional: Some(600.0),
        max_leverage: Some(MAX_LEVERAGE),
        stop_loss: true,
        ..Limits::default()
    };
    let staged = |body: Value| {
        let s = &s;
        let key = &key;
        async move {
            let before = executed(s);
            let (st, answer) = propose(s, key, body.clone()).await;
            (st, answer, before)
        }
    };

    // Control: a fitting proposal is executed by the standing approval, within it.
    let (st, answer, before) = staged(trade()).await;
    assert_eq!(st, StatusCode::OK, "{answer}");
    let id = answer["proposalId"].as_str().unwrap();
    let new = executed(&s).since(&before);
    assert_eq!(new.executed_proposals().collect::<Vec<_>>(), [id]);
    assert!(judge(&s, &before, &covered, false).await.is_empty());
    flatten(&s, &supervisor).await;

    let t = trade();
    let mut breaches = Vec::new();
    for (label, body) in [
        (
            "size in coins next to sizeUsd",
            with(&t, json!({"size": "1"})),
        ),
        (
            "lev instead of leverage",
            with(&t, json!({"leverage": null, "lev": 2})),
        ),
        (
            "stopLoss instead of sl",
            with(&t, json!({"sl": null, "stopLoss": "1"})),
        ),
        (
            "size times p on a market order",
            with(&t, json!({"sizeUsd": null, "size": "1", "p": "1"})),
        ),
    ] {
        let (_, _, before) = staged(body.clone()).await;
        breaches.push((
            format!("propose {label}: {body}"),
            judge(&s, &before, &covered, false).await,
        ));
        flatten(&s, &supervisor).await;
    }
    assert_none_through(&breaches);
}

#[tokio::test]
async fn the_daily_notional_counts_what_executed() {
    let s = armed(json!({"allow_immediate": true, "max_daily_notional_usd": 1000})).await;
    let key = s.sandbox.key(Scope::Legacy);
    let daily = Limits {
        max_daily: Some(1000.0),
        ..Limits::default()
    };
    let start = executed(&s);
    // Control: 100 USD executes and is counted.
    let small = json!({"a": "ETHUSDT", "d": "long", "o": "market", "sizeUsd": 100});
    let (st, body) = agent_post(&s, "/api/v1/trades", &key, small.to_string().into()).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(executed(&s).since(&start).opened().len(), 1);
    assert!(judge(&s, &start, &daily, true).await.is_empty());

    let sized = with(&small, json!({"size": "1"}));
    for _ in 0..2 {
        agent_post(&s, "/api/v1/trades", &key, sized.to_string().into()).await;
    }
    let executed_today: f64 = executed(&s)
        .since(&start)
        .opened()
        .iter()
        .map(|f| f.notional())
        .sum();
    let (_, policy) = s.supervisor(Method::GET, "/gate/v1/policy", None).await;
    let counted = policy["today"]["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["fingerprint"] == key.fingerprint().as_str())
        .map(|a| a["executedNotionalUsd"].as_f64().unwrap())
        .unwrap();
    let mut breaches = judge(&s, &start, &daily, true).await;
    if counted * TOLERANCE < executed_today {
        breaches.push(format!(
            "the gateway counted {counted:.0} USD for {executed_today:.0} USD executed"
        ));
    }
    assert_none_through(&[(format!("/api/v1/trades {sized} twice"), breaches)]);
}

// ---- 4. a price the service does not use -------------------------------------------------------------

#[tokio::test]
async fn a_price_a_market_order_ignores_does_not_size_its_notional() {
    let s = armed(policy()).await;
    let supervisor = supervisor_key(&s).await;
    let key = s.sandbox.key(Scope::Legacy);
    control_trade(&s, &key, &policy_limits()).await;
    flatten(&s, &supervisor).await;
    let mut breaches = each_beyond(
        &s,
        &key,
        &supervisor,
        "/api/v1/trades",
        &policy_limits(),
        vec![(
            "size times p",
            with(&trade(), json!({"sizeUsd": null, "size": "1", "p": "1"})),
        )],
    )
    .await;
    let o = with(
        &order(),
        json!({"usdAmount": null, "sizingMode": "size", "size": 1}),
    );
    breaches.extend(
        each_beyond(
            &s,
            &key,
            &supervisor,
            "/api/v1/orders",
            &policy_limits(),
            vec![
                ("size times price", with(&o, json!({"price": 1}))),
                ("size times p", with(&o, json!({"p": 1}))),
                (
                    "p read before limitPrice",
                    with(
                        &o,
                        json!({"orderType": "limit", "limitPrice": 100000, "p": 1,
                               "slEnabled": null, "slType": null, "slPercentage": null,
                               "sl": "1"}),
                    ),
                ),
            ],
        )
        .await,
    );
    assert_none_through(&breaches);
}

// ---- every spelling at once ---------------------------------------------------------------------------

mod generated {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

    /// Members a body may carry: the real names and near-miss aliases, values within and beyond
    /// the policy, unknown members, escapes and members the gateway cannot parse. Drawn with
    /// replacement, so keys repeat.
    const MEMBERS: &[&str] = &[
        r#""size":"1""#,
        r#""size":0.01"#,
        r#""sizeUsd":400"#,
        r#""sizeUsd":5000"#,
        r#""size_usd":400"#,
        r#""usdAmount":400"#,
        r#""usdAmount":5000"#,
        r#""notionalUsd":400"#,
        r#""sizingMode":"account""#,
        r#""sizingMode":"usd""#,
        r#""sizingMode":"size""#,
        r#""accountPercentage":50"#,
        r#""lev":2"#,
        r#""leverage":3"#,
        r#""leverage":10"#,
        r#""sl":"1""#,
        r#""stopLoss":"1""#,
        r#""slEnabled":true"#,
        r#""slEnabled":true,"slType":"percentage","slPercentage":10"#,
        r#""reduceOnly":true"#,
        r#""coin":"ETH""#,
        r#""pair":"SOL-USD""#,
        r#""pair":"ETH-USD""#,
        r#""a":"SOLUSDT""#,
        r#""a":"ETHUSDT""#,
        r#""p":"1""#,
        r#""price":1"#,
        r#""x":"\u0020""#,
        r#""x":"\ud800""#,
        r#""x":1e400"#,
        r#""y":{"nested":[1,{"z":null}]}"#,
    ];

    /// Around a tool's name, as JSON text.
    const SPACES: &[&str] = &[
        "", "", " ", "\\t", "\\n", "\\u0020", "\\u00a0", "\u{a0}", "\u{3000}",
    ];

    /// Members of the outer object of a tool call.
    const OUTER: &[&str] = &["", "", r#""x":1"#, r#""x":"\ud800""#, r#""x":1e400"#];

    #[derive(Debug, Clone)]
    enum Route {
        /// `POST /api/v1/trades`.
        Trades,
        /// `POST /api/v1/orders`.
        Orders,
        /// `POST /api/delegated/propose`, then a confirm through the endpoint and the tool.
        ProposeConfirm,
        /// `execute_mcp_tool`, twice, with this mutate tool.
        Tool(&'static str),
    }

    #[derive(Debug, Clone)]
    struct Case {
        route: Route,
        members: Vec<&'static str>,
        before: &'static str,
        after: &'static str,
        outer: &'static str,
    }

    fn cases() -> impl Strategy<Value = Case> {
        let route = prop_oneof![
            Just(Route::Trades),
            Just(Route::Orders),
            Just(Route::ProposeConfirm),
            Just(Route::Tool("place_order")),
            Just(Route::Tool("platform_place_order")),
            Just(Route::Tool("propose_trade")),
            Just(Route::Tool("confirm_trade")),
        ];
        (
            route,
            proptest::collection::vec(proptest::sample::select(MEMBERS), 0..6),
            proptest::sample::select(SPACES),
            proptest::sample::select(SPACES),
            proptest::sample::select(OUTER),
        )
            .prop_map(|(route, members, before, after, outer)| Case {
                route,
                members,
                before,
                after,
                outer,
            })
    }

    /// A body as raw text: the route's base members, then the drawn ones.
    fn body(orders: bool, members: &[&str]) -> String {
        let base: &[&str] = if orders {
            &[
                r#""pair":"ETH-USD""#,
                r#""side":"long""#,
                r#""orderType":"market""#,
            ]
        } else {
            &[r#""a":"ETHUSDT""#, r#""d":"long""#, r#""o":"market""#]
        };
        let all: Vec<&str> = base.iter().chain(members).copied().collect();
        format!("{{{}}}", all.join(","))
    }

    /// Both calls of a mutate tool, written by hand so the args keep repeated keys and escapes.
    async fn tool_raw(s: &Setup, key: &Secret, case: &Case, tool: &str, args: &str) {
        let outer = |args: &str| {
            let mut text = format!(
                r#"{{"name":"{}service_{tool}{}","args":{args}"#,
                case.before, case.after
            );
            if !case.outer.is_empty() {
                text.push(',');
                text.push_str(case.outer);
            }
            text.push('}');
            text.into_bytes()
        };
        let (_, first) = agent_post(s, "/api/delegated/mcp/tool", key, outer(args)).await;
        if let Some(token) = first["result"]["confirmToken"].as_str() {
            let inner = args.trim_end_matches('}');
            let sep = if inner.ends_with('{') { "" } else { "," };
            let again = format!(r#"{inner}{sep}"confirmToken":"{token}"}}"#);
            agent_post(s, "/api/delegated/mcp/tool", key, outer(&again)).await;
        }
    }

    async fn run(s: &Setup, key: &Secret, case: &Case) {
        match &case.route {
            Route::Trades => {
                agent_post(s, "/api/v1/trades", key, body(false, &case.members).into()).await;
            }
            Route::Orders => {
                agent_post(s, "/api/v1/orders", key, body(true, &case.members).into()).await;
            }
            Route::ProposeConfirm => {
                let (_, staged) = agent_post(
                    s,
                    "/api/delegated/propose",
                    key,
                    body(false, &case.members).into(),
                )
                .await;
                if let Some(id) = staged["proposalId"].as_str() {
                    let mut confirm = format!(r#"{{"proposalId":"{id}""#);
                    if !case.outer.is_empty() {
                        confirm.push(',');
                        confirm.push_str(case.outer);
                    }
                    confirm.push('}');
                    agent_post(s, "/api/delegated/confirm", key, confirm.into()).await;
                    let args = format!(r#"{{"proposalId":"{id}"}}"#);
                    tool_raw(s, key, case, "confirm_trade", &args).await;
                }
            }
            Route::Tool("confirm_trade") => {
                let (st, staged) = propose(s, key, trade()).await;
                assert_eq!(st, StatusCode::OK, "{staged}");
                let id = staged["proposalId"].as_str().unwrap();
                let args = format!(r#"{{"proposalId":"{id}"}}"#);
                tool_raw(s, key, case, "confirm_trade", &args).await;
            }
            Route::Tool(tool) => {
                let args = body(*tool == "platform_place_order", &case.members);
                tool_raw(s, key, case, tool, &args).await;
            }
        }
    }

    /// Every generated request to a gateway in front of the sandbox, as an agent allowed immediate
    /// trades under a policy with every rule that reads the request: whatever the sandbox then
    /// executed is within the policy, and no proposal executed without an approval. One sandbox
    /// and gateway for every case; the account is flattened at the sandbox between cases.
    #[test]
    fn no_spelling_executes_beyond_the_policy_or_without_approval() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (s, key, supervisor) = rt.block_on(async {
            let s = armed(policy()).await;
            let supervisor = supervisor_key(&s).await;
            let key = s.sandbox.key(Scope::Legacy);
            control_trade(&s, &key, &policy_limits()).await;
            flatten(&s, &supervisor).await;
            (s, key, supervisor)
        });
        let mut runner = TestRunner::new(Config {
            cases: 24,
            max_shrink_iters: 64,
            failure_persistence: None,
            ..Config::default()
        });
        let result = runner.run(&cases(), |case| {
            rt.block_on(async {
                let before = executed(&s);
                run(&s, &key, &case).await;
                let breaches = judge(&s, &before, &policy_limits(), true).await;
                flatten(&s, &supervisor).await;
                if breaches.is_empty() {
                    Ok(())
                } else {
                    Err(TestCaseError::fail(breaches.join("; ")))
                }
            })
        });
        rt.block_on(async move { drop(s) });
        match result {
            Ok(()) => {}
            Err(TestError::Fail(reason, case)) => {
                panic!("executed at the sandbox: {reason}\nminimal case: {case:#?}")
            }
            Err(e) => panic!("{e}"),
        }
    }
}
