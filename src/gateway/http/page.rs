//! The approval page behind a link (`/gate/approve/<token>`): one server-rendered HTML page, no
//! external assets, readable on a phone. Its forms POST back to the same URL with a CSRF token
//! bound to the link; a decision goes through [`decide::approve`] / [`decide::reject`] like one from
//! the console, so the policy is checked again and the upstream executes it once.
//!
//! Answers: 200 the item and its two buttons, or the outcome of a decision just made; 404 an unknown
//! (or forged) link; 410 a spent link, or one whose item expired or was decided elsewhere; 403 a
//! POST without the link's CSRF token, and every link while the kill switch is on; 400 a form
//! without `decision=approve|reject`. Every page but the first has nothing to press.

use super::super::flow::decide;
use super::super::flow::guard;
use super::super::flow::halt;
use super::super::gate::{Gate, sha256_hex};
use super::super::link;
use super::super::model::error::GateError;
use super::super::model::trade::{Needs, PricedBy, Trade};
use super::super::store::{Item, ItemRef, Link, Status};
use super::error::status_of;
use crate::api::model::{GateVerdict, Preview, TradeSignal, fmt_decimal};
use crate::api::risk::{self, LossBound};
use crate::api::staged;
use axum::Router;
use axum::extract::rejection::FormRejection;
use axum::extract::{Form, Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::{DateTime, SecondsFormat, Utc};
use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Longest reason kept from the form; the rest is cut (a reason is for the agent to read).
const MAX_REASON: usize = 1000;

pub fn router(gate: Arc<Gate>) -> Router {
    Router::new()
        .route("/gate/approve/{token}", get(show).post(decide))
        .with_state(gate)
}

const STYLE: &str = "body{font:16px/1.4 system-ui,sans-serif;margin:0;padding:16px;max-width:480px;\
color:#111;background:#fafafa}h1{font-size:1.3em;margin:0 0 8px}table{width:100%;border-collapse:collapse}\
td{padding:4px 0;border-bottom:1px solid #ddd;vertical-align:top}td:first-child{color:#555;width:40%}\
ul{padding-left:0;list-style:none}li{padding:4px 0}.ok{color:#176f2c}.bad{color:#b00020}.near{color:#9a6700}\
.countdown{font-size:1.6em;font-weight:600;font-variant-numeric:tabular-nums}\
textarea{width:100%;box-sizing:border-box;font:inherit;min-height:3em}\
button{width:100%;font:inherit;font-size:1.1em;padding:14px;margin:8px 0;border:0;border-radius:8px;color:#fff}\
.approve{background:#176f2c}.reject{background:#b00020}button:disabled{background:#999}\
.msg{font-size:1.2em;padding:12px;border-radius:8px;background:#eee}";

/// Counts down from the seconds left when the page was rendered, by the phone's monotonic clock,
/// so a phone whose clock is off still shows the right time; at zero the buttons go.
const COUNTDOWN: &str = "(function(){var e=document.getElementById('countdown');\
var left=+e.getAttribute('data-remaining');var t0=Date.now();\
function tick(){var s=Math.max(0,Math.round(left-(Date.now()-t0)/1000));\
var m=Math.floor(s/60),r=s%60;e.textContent=m+':'+(r<10?'0':'')+r;\
if(s<=0){e.textContent='expired';var b=document.querySelectorAll('button');\
for(var i=0;i<b.length;i++){b[i].disabled=true;}return;}setTimeout(tick,1000);}tick();})();";

fn nonce() -> String {
    use rand::RngExt;
    let bytes: [u8; 16] = rand::rng().random();
    hex::encode(bytes)
}

/// The whole page with its security headers. `script` adds the countdown. The markup is maud's,
/// which escapes every value it is given: no text reaches the page unescaped by oversight.
fn page(status: StatusCode, title: &str, body: Markup, script: bool) -> Response {
    let nonce = nonce();
    let html = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width,initial-scale=1";
                meta name="robots" content="noindex";
                title { (title) }
                style nonce=(nonce) { (PreEscaped(STYLE)) }
            }
            body {
                (body)
                @if script {
                    script nonce=(nonce) { (PreEscaped(COUNTDOWN)) }
                }
            }
        }
    }
    .into_string();
    let csp = format!(
        "default-src 'none'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; \
         form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    );
    let mut resp = (status, html).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_str(&csp).expect("the policy is ASCII"),
    );
    resp
}

/// A page that says one thing and offers nothing to press.
fn message(status: StatusCode, title: &str, text: &str) -> Response {
    page(
        status,
        title,
        html! {
            h1 { (title) }
            p.msg #message { (text) }
        },
        false,
    )
}

fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn unknown() -> Response {
    message(
        StatusCode::NOT_FOUND,
        "Unknown link",
        "This approval link is not valid. Approve or reject the item in agentdesk.",
    )
}

fn store_error(e: super::super::store::StoreError) -> Response {
    let e = GateError::store(e);
    message(status_of(&e), "Try again", &e.message)
}

/// What happened to an item that can no longer be decided here, in words.
fn outcome(item: &Item) -> String {
    let by = item
        .decided_by
        .as_deref()
        // A link's decider reads "via link by alice" already.
        .map(|b| match b.starts_with("via ") {
            true => format!(" {b}"),
            false => format!(" by {b}"),
        })
        .unwrap_or_default();
    let at = item
        .decided_at
        .map(|t| format!(" at {}", time(t)))
        .unwrap_or_default();
    match item.status {
        Status::Pending => "It is still waiting for a decision in agentdesk.".into(),
        Status::Approved | Status::Executing => {
            format!("It was approved{by}{at} and is being executed.")
        }
        Status::Executed => format!("It was approved{by}{at} and executed."),
        Status::Failed => format!("It was approved{by}{at}; the execution failed."),
        Status::Rejected => format!(
            "It was rejected{by}{at}: {}",
            item.reason.as_deref().unwrap_or("no reason given")
        ),
        Status::Expired => format!("It expired at {}.", time(item.expires_at)),
        Status::Unknown => "Its state is not one this gateway knows.".into(),
    }
}

/// The link and its item, or the page that says why it cannot be used.
async fn usable(gate: &Arc<Gate>, token: &str) -> Result<(Link, Item), Response> {
    let Some(link) = gate
        .store
        .link(&sha256_hex(token))
        .await
        .map_err(store_error)?
    else {
        return Err(unknown());
    };
    let now = gate.now();
    gate.store.expire_due(now).await.map_err(store_error)?;
    let Some(item) = gate
        .store
        .item(ItemRef::IdOrProposal(&link.item_id))
        .await
        .map_err(store_error)?
    else {
        return Err(unknown());
    };
    Ok((link, item))
}

/// Why a link that exists cannot decide now, if it cannot.
async fn refusal(gate: &Gate, link: &Link, item: &Item) -> Option<Response> {
    match halt::killed(gate).await {
        Err(e) => return Some(message(status_of(&e), "Try again", &e.message)),
        Ok(Some(reason)) => {
            return Some(message(
                StatusCode::FORBIDDEN,
                "Links are disabled",
                &format!(
                    "The supervisor's kill switch is on ({reason}): every approval link is disabled."
                ),
            ));
        }
        Ok(None) => {}
    }
    if link.spent_at.is_some() {
        return Some(message(
            StatusCode::GONE,
            "Link already used",
            &format!("This link was already used. {}", outcome(item)),
        ));
    }
    if item.status == Status::Expired
        || (item.status == Status::Pending && item.expires_at <= gate.now())
    {
        return Some(message(
            StatusCode::GONE,
            "Expired",
            &format!(
                "This item expired at {}; nothing can be approved. The agent can stage it again.",
                time(item.expires_at)
            ),
        ));
    }
    if item.status != Status::Pending {
        return Some(message(
            StatusCode::GONE,
            "Already decided",
            &format!("This item was decided elsewhere. {}", outcome(item)),
        ));
    }
    None
}

fn text_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn usd(x: f64) -> String {
    format!("{x:.2} USD")
}

/// What will execute, as rows: the canonical trade (the service's preview where it gave one), the
/// same one the rules judged.
fn what_rows(
    item: &Item,
    trade: &Result<Option<Trade>, guard::UnreadItem>,
) -> Vec<(&'static str, String)> {
    let mut rows = vec![("Kind", item.kind.clone())];
    let t = match trade {
        Err(why) => {
            rows.push(("Trade", format!("cannot be judged: {why}")));
            return rows;
        }
        Ok(None) => {
            rows.push(("Arguments", item.request.to_string()));
            return rows;
        }
        Ok(Some(t)) => t,
    };
    let unknown = |what: &str| match t.why_unknown(what) {
        Some(why) => format!("unknown: {why}"),
        None => "unknown".into(),
    };
    if let Some(coin) = &t.coin {
        rows.push(("Coin", coin.clone()));
    }
    if let Some(side) = &t.side {
        rows.push(("Side", side.clone()));
    }
    if let Some(size) = t.size {
        rows.push(("Size", format!("{size}")));
    }
    if !t.reduces && !t.removes_stop_loss {
        rows.push((
            "Notional",
            t.notional.map(usd).unwrap_or_else(|| unknown("notional")),
        ));
        rows.push((
            "Leverage",
            t.leverage
                .map(|l| format!("{l}x"))
                .unwrap_or_else(|| unknown("leverage")),
        ));
        let tp = text_of(item.request.get("tp")).or_else(|| text_of(item.preview.get("tp")));
        rows.push(("Take profit", tp.unwrap_or("none".into())));
        let sl = text_of(item.request.get("sl")).or_else(|| text_of(item.preview.get("sl")));
        rows.push((
            "Stop loss",
            match (t.stop_loss, sl) {
                (true, Some(sl)) => sl,
                (true, None) => "set".into(),
                (false, _) => "none".into(),
            },
        ));
    }
    rows.push((
        "Priced by",
        match t.priced_by {
            PricedBy::Preview => "the service's preview".into(),
            PricedBy::Request => "the request and the stated defaults".into(),
        },
    ));
    if !t.disagreements.is_empty() {
        rows.push(("Differs from the request", t.disagreements.join("; ")));
    }
    if item.kind.starts_with("tool:") {
        rows.push(("Arguments", item.request.to_string()));
    }
    rows
}

/// What the console's approve dialog shows of a trade's risk, against the agent's account as it
/// is now: the mark, the loss at the stop loss (in USD and as a share of the account), the
/// liquidation, and what could not be known. Empty for what is not a trade.
async fn risk_rows(gate: &Gate, item: &Item) -> Vec<(&'static str, String)> {
    if item.kind != "trade" {
        return Vec::new();
    }
    let request: TradeSignal = serde_json::from_value(item.request.clone()).unwrap_or_default();
    let returned: Preview = serde_json::from_value(item.preview.clone()).unwrap_or_default();
    let preview = staged::complete(&request, &returned);
    let (positions, value) = match gate.key_of(&item.agent) {
        Some(key) => {
            let needs = Needs {
                account_value: true,
                positions: true,
                ..Needs::default()
            };
            let facts = guard::facts(gate, &key, needs).await;
            (
                facts.positions.unwrap_or_default(),
                facts.account_value.map_err(|e| e.to_string()),
            )
        }
        None => (
            Vec::new(),
            Err("the agent's account was not read: this gateway does not hold its key yet".into()),
        ),
    };
    let r = risk::risk(&preview, &positions, value);
    let px = |x: f64| fmt_decimal(x);
    let mut rows = vec![(
        "Mark",
        if r.mark > 0.0 {
            px(r.mark)
        } else {
            "unknown".into()
        },
    )];
    rows.push((
        "Loss at the stop loss",
        match (r.loss_bound, r.sl_usd, r.equity_at_risk_pct) {
            (LossBound::Stop, Some(usd), Some(pct)) => {
                format!("{} ({pct:.2}% of the account)", usd_of(usd))
            }
            (LossBound::Stop, Some(usd), None) => {
                format!("{} (share of the account unknown)", usd_of(usd))
            }
            (bound, _, pct) => format!(
                "the whole margin, {}{}: {}",
                usd_of(r.margin),
                pct.map(|p| format!(" ({p:.2}% of the account)"))
                    .unwrap_or_default(),
                bound.margin_because().unwrap_or("no stop loss")
            ),
        },
    ));
    rows.push((
        "Liquidation",
        match (r.est_liquidation, r.liquidation_pct, r.margin_gone_pct) {
            (Some(l), Some(d), _) => format!("≈ {} ({d:.2}% from the entry)", px(l)),
            (Some(l), None, _) => format!("≈ {}", px(l)),
            (None, _, Some(m)) => {
                format!("no estimate; the margin is gone after a {m:.1}% move against")
            }
            (None, _, None) => "unknown".into(),
        },
    ));
    for w in &r.warnings {
        rows.push(("Warning", w.clone()));
    }
    if !r.unknown.is_empty() {
        rows.push(("Not known", r.unknown.join("; ")));
    }
    rows
}

fn usd_of(x: f64) -> String {
    format!("{} USD", fmt_decimal((x * 100.0).round() / 100.0))
}

/// Where a step-up item's approvals stand, and whether this link's approval executes it.
fn approvals_html(item: &Item, label: &str) -> Option<Markup> {
    let quorum = crate::api::model::quorum(&item.approvals, item.approvals_required)?;
    let missing = item.approvals_required as usize
        - item.approvals.len().min(item.approvals_required as usize);
    let yours = if label == link::NOTIFICATION_LABEL {
        "This link came with the notification and names nobody: it does not count towards this \
         item's approvals. Approve it in agentdesk, or with a link a supervisor minted."
            .to_string()
    } else if item.approvals.iter().any(|a| a.by == label) {
        format!("You ({label}) approved it already: it needs another supervisor.")
    } else if item.staged_by.as_deref() == Some(label) {
        format!("You ({label}) staged it: your approval does not count towards it.")
    } else if missing <= 1 {
        "Your approval is the last one needed: it executes the trade.".to_string()
    } else {
        format!(
            "Your approval adds one; it executes after {} more supervisor(s).",
            missing - 1
        )
    };
    Some(html! {
        p #approvals { b { "Approvals: " } (quorum) ". " (yours) }
    })
}

fn verdicts_html(list: &[GateVerdict]) -> Markup {
    if list.is_empty() {
        return html! { p #verdicts { "No policy rules are set: nothing was checked." } };
    }
    html! {
        ul #verdicts {
            @for v in list {
                @let (class, mark) = match (v.ok, v.near) {
                    (false, _) => ("bad", "✗ broken"),
                    (true, true) => ("near", "✓ near its limit"),
                    (true, false) => ("ok", "✓ ok"),
                };
                li class={ "verdict " (class) } {
                    b { (v.rule) }
                    " — " (mark)
                    @if !v.message.is_empty() { ": " (v.message) }
                }
            }
        }
    }
}

async fn agent_label(gate: &Gate, item: &Item) -> String {
    let agents = gate.store.agents().await.unwrap_or_default();
    agents
        .iter()
        .find(|a| a.key_hash == item.agent)
        .map(|a| a.label().to_string())
        .unwrap_or_else(|| item.agent[..8].to_string())
}

async fn show(State(gate): State<Arc<Gate>>, Path(token): Path<String>) -> Response {
    let (link, item) = match usable(&gate, &token).await {
        Ok(x) => x,
        Err(page) => return page,
    };
    if let Some(page) = refusal(&gate, &link, &item).await {
        return page;
    }
    let remaining = (item.expires_at - gate.now()).num_seconds().max(0);
    let kind = if item.kind == "trade" {
        "trade"
    } else {
        &item.kind
    };
    let agent = agent_label(&gate, &item).await;
    let trade = guard::item_trade(&gate, &item).await;
    let rows = what_rows(&item, &trade);
    let risk = risk_rows(&gate, &item).await;
    let body = html! {
        h1 { "Approve this " (kind) "?" }
        p {
            "Agent " b #agent { (agent) }
            @if let Some(a) = &item.account { " (account " (a) ")" }
            " asks for it."
        }
        p {
            "Expires in "
            span.countdown #countdown data-remaining=(remaining) {
                (remaining / 60) ":" (format!("{:02}", remaining % 60))
            }
            " (at " (time(item.expires_at)) ")"
        }
        table #what {
            @for (k, v) in &rows {
                tr { td { (k) } td { (v) } }
            }
        }
        @if !risk.is_empty() {
            h2 { "Risk" }
            table #risk {
                @for (k, v) in &risk {
                    tr { td { (k) } td { (v) } }
                }
            }
        }
        @if let Some(a) = approvals_html(&item, &link.label) { (a) }
        h2 { "Policy verdicts" }
        (verdicts_html(item.verdicts.as_deref().unwrap_or_default()))
        // A relative action: the page may be served under a prefix behind a proxy.
        form method="post" action=(token) {
            input type="hidden" name="csrf" value=(link.csrf);
            button.approve #approve name="decision" value="approve" { "Approve" }
        }
        form method="post" action=(token) {
            input type="hidden" name="csrf" value=(link.csrf);
            label for="reason" { "Reason (optional, the agent is told)" }
            textarea #reason name="reason" maxlength=(MAX_REASON) {}
            button.reject #reject name="decision" value="reject" { "Reject" }
        }
    };
    page(StatusCode::OK, "Approve?", body, true)
}

async fn decide(
    State(gate): State<Arc<Gate>>,
    Path(token): Path<String>,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    let (link, item) = match usable(&gate, &token).await {
        Ok(x) => x,
        Err(page) => return page,
    };
    let form = match form {
        Ok(Form(f)) => f,
        Err(e) => {
            return message(
                StatusCode::BAD_REQUEST,
                "Not a decision",
                &format!("The form could not be read ({e})."),
            );
        }
    };
    if !form.get("csrf").is_some_and(|c| link::same(c, &link.csrf)) {
        return message(
            StatusCode::FORBIDDEN,
            "Refused",
            "This form does not carry this link's CSRF token; open the link again and use its buttons.",
        );
    }
    if let Some(page) = refusal(&gate, &link, &item).await {
        return page;
    }
    let approve = match form.get("decision").map(String::as_str) {
        Some("approve") => true,
        Some("reject") => false,
        other => {
            return message(
                StatusCode::BAD_REQUEST,
                "Not a decision",
                &format!("decision must be approve or reject, got {other:?}."),
            );
        }
    };
    // The claim: of concurrent POSTs with this link, one decides.
    match gate.store.spend_link(&link.token_hash, gate.now()).await {
        Ok(true) => {}
        Ok(false) => {
            let item = gate
                .store
                .item(ItemRef::IdOrProposal(&item.id))
                .await
                .ok()
                .flatten()
                .unwrap_or(item);
            return message(
                StatusCode::GONE,
                "Link already used",
                &format!("This link was already used. {}", outcome(&item)),
            );
        }
        Err(e) => return store_error(e),
    }
    let by = decide::Decider {
        label: &link.label,
        via_link: true,
        named: link.label != link::NOTIFICATION_LABEL,
    };
    let result = if approve {
        decide::approve(&gate, &item.id, by, &[]).await
    } else {
        let reason: String = form
            .get("reason")
            .map(|r| r.trim().chars().take(MAX_REASON).collect())
            .filter(|r: &String| !r.is_empty())
            .unwrap_or_else(|| "no reason given".into());
        decide::reject(&gate, &item.id, by, reason).await
    };
    match result {
        Ok(item) => {
            let title = if approve { "Approved" } else { "Rejected" };
            message(StatusCode::OK, title, &outcome(&item))
        }
        Err(e) => {
            // A refusal decided nothing: the link stays usable (e.g. from the console's side the
            // supervisor may turn the kill switch off, or the rule may pass later).
            let now = gate
                .store
                .item(ItemRef::IdOrProposal(&item.id))
                .await
                .ok()
                .flatten();
            if now.as_ref().is_some_and(|i| i.status == Status::Pending)
                && let Err(e) = gate.store.unspend_link(&link.token_hash).await
            {
                return store_error(e);
            }
            let text = match &now {
                Some(i) if i.status != Status::Pending => {
                    format!("{} {}", e.message, outcome(i))
                }
                _ => format!(
                    "Nothing was decided: {}. Approving with an override is done in agentdesk.",
                    e.message
                ),
            };
            message(status_of(&e), "Not done", &text)
        }
    }
}
