//! Approval links over loopback: minted by a supervisor, the page a phone opens, decisions made from
//! it (once, through the same checks as the console's), and every way a link is refused.

use super::guard::{guarded, journal, passed, propose, receiver, trade};
use super::{Setup, confirm, send};
use agentdesk::api::{Scope, webhook_sig};
use agentdesk::gateway::rules::policy::Policy;
use agentdesk::gateway::upstream::notify::Destination;
use agentdesk::secret::Secret;
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// A guarded gateway with a rule every test trade keeps (so the page has a verdict to show).
pub(super) async fn with_rule() -> Setup {
    guarded(|c| {
        c.policy = Policy::from_json(&json!({"max_notional_usd": 5000})).unwrap();
    })
    .await
}

/// Stages a 1,000 USD BTC long; returns the agent's key, the proposal and the item id.
pub(super) async fn staged(s: &Setup) -> (Secret, String, String) {
    let key = s.sandbox.key(Scope::McpMutate);
    let p = passed(&propose(s, &key, trade("BTC", 1000.0)).await);
    let item = s
        .inbox("pending")
        .await
        .into_iter()
        .find(|i| i["proposalId"] == p.as_str())
        .unwrap();
    (key, p, item["id"].as_str().unwrap().to_string())
}

async fn mint(s: &Setup, id: &str) -> (StatusCode, Value) {
    s.supervisor(Method::POST, &format!("/gate/v1/inbox/{id}/link"), None)
        .await
}

pub(super) async fn minted(s: &Setup, id: &str) -> String {
    let (st, body) = mint(s, id).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    body["url"].as_str().unwrap().to_string()
}

pub(super) async fn get_page(url: &str) -> (StatusCode, HeaderMap, String) {
    let resp = reqwest::get(url).await.unwrap();
    let (st, headers) = (resp.status(), resp.headers().clone());
    (st, headers, resp.text().await.unwrap())
}

async fn post_form(url: &str, body: &str) -> (StatusCode, HeaderMap, String) {
    let resp = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let (st, headers) = (resp.status(), resp.headers().clone());
    (st, headers, resp.text().await.unwrap())
}

pub(super) fn csrf_of(html: &str) -> String {
    let start = html
        .find("name=\"csrf\" value=\"")
        .expect("the page has a form")
        + 19;
    html[start..start + html[start..].find('"').unwrap()].to_string()
}

/// The headers every page answer carries, whatever it says.
pub(super) fn assert_page_headers(headers: &HeaderMap) {
    let h = |name: &str| {
        headers
            .get(name)
            .unwrap_or_else(|| panic!("no {name} header"))
            .to_str()
            .unwrap()
            .to_string()
    };
    assert!(h("content-type").starts_with("text/html"));
    assert_eq!(h("cache-control"), "no-store");
    assert_eq!(h("x-frame-options"), "DENY");
    assert_eq!(h("referrer-policy"), "no-referrer");
    let csp = h("content-security-policy");
    for part in [
        "default-src 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "script-src 'nonce-",
        "style-src 'nonce-",
    ] {
        assert!(csp.contains(part), "{part} missing from {csp}");
    }
    assert!(!csp.contains("unsafe"), "{csp}");
}

fn has_buttons(html: &str) -> bool {
    html.contains("<button") || html.contains("<form")
}

#[tokio::test]
async fn a_link_shows_the_item_approves_it_once_and_is_then_spent() {
    let s = with_rule().await;
    let (key, p, id) = staged(&s).await;
    let (st, body) = mint(&s, &id).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let url = body["url"].as_str().unwrap().to_string();
    let prefix = format!("{}/gate/approve/", s.gate.base_url());
    assert!(url.starts_with(&prefix), "{url}");
    let token = &url[prefix.len()..];
    assert!(token.len() >= 22, "at least 128 bits: {token}");
    let item = &s.inbox("pending").await[0];
    assert_eq!(body["expiresAt"], item["expiresAt"]);
    // The token is stored hashed only.
    assert!(!super::contains(&super::db_bytes(&s.gate_db), token));

    let (st, headers, html) = get_page(&url).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert_page_headers(&headers);
    assert!(html.contains("name=\"viewport\""));
    // The notional shown is the service's preview of the staging: what will execute.
    let priced = format!(
        "{:.2} USD",
        s.inbox("pending").await[0]["preview"]["notional"]
            .as_f64()
            .unwrap()
    );
    assert!((990.0..=1010.0).contains(&priced[..priced.len() - 4].parse::<f64>().unwrap()));
    for shown in [
        "BTC",
        "long",
        &priced,
        "the service's preview",
        "3x",
        "id=\"countdown\"",
        "data-remaining=\"",
        "max_notional_usd",
        "id=\"approve\"",
        "id=\"reject\"",
        &key.fingerprint(),
    ] {
        assert!(html.contains(shown), "{shown} is not on the page:\n{html}");
    }
    let csrf = csrf_of(&html);

    // Two concurrent approvals from the page: one decides, the upstream confirms once.
    let body = format!("decision=approve&csrf={csrf}");
    let (a, b) = tokio::join!(post_form(&url, &body), post_form(&url, &body));
    let mut statuses = [a.0, b.0];
    statuses.sort();
    assert_eq!(statuses, [StatusCode::OK, StatusCode::GONE], "{a:?} {b:?}");
    let ok = if a.0 == StatusCode::OK { &a } else { &b };
    assert_page_headers(&ok.1);
    assert!(ok.2.contains("Approved"), "{}", ok.2);
    assert!(ok.2.contains("executed"), "{}", ok.2);
    assert!(!has_buttons(&ok.2), "{}", ok.2);
    assert_eq!(s.upstream_confirms(&p), 1);

    // Spent: the page says so and a POST is refused.
    let (st, headers, html) = get_page(&url).await;
    assert_eq!(st, StatusCode::GONE);
    assert_page_headers(&headers);
    assert!(html.contains("already used"), "{html}");
    assert!(!has_buttons(&html));
    let (st, _, html) = post_form(&url, &body).await;
    assert_eq!(st, StatusCode::GONE, "{html}");
    assert_eq!(s.upstream_confirms(&p), 1);

    // The console's next poll shows it, decided via the link.
    let done = s.inbox("executed").await;
    assert_eq!(done[0]["id"], id.as_str());
    assert_eq!(done[0]["decidedBy"], "via link by alice");
    let records = journal(&s).await;
    let approval = records
        .iter()
        .find(|r| r["kind"] == "approve" && r["item"] == id.as_str())
        .expect("the approval is journaled");
    assert_eq!(approval["actor"], "via link by alice");
    // The agent's own confirm now answers the executed proposal, not a second execution.
    let _ = confirm(&s, &key, &p).await;
    assert_eq!(s.upstream_confirms(&p), 1);
    // A decided item gets no new link.
    let (st, body) = mint(&s, &id).await;
    assert_eq!(st, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "not_pending");
}

#[tokio::test]
async fn a_rejection_from_the_page_tells_the_agent_the_reason() {
    let s = with_rule().await;
    let (key, p, id) = staged(&s).await;
    let url = minted(&s, &id).await;
    let (_, _, html) = get_page(&url).await;
    let csrf = csrf_of(&html);
    let (st, headers, html) = post_form(
        &url,
        &format!("decision=reject&reason=too+big+for+a+Friday&csrf={csrf}"),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert_page_headers(&headers);
    assert!(html.contains("Rejected") && html.contains("too big for a Friday"));
    assert!(!has_buttons(&html));
    let (st, body) = confirm(&s, &key, &p).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "rejected_by_supervisor");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("too big for a Friday"),
        "{body}"
    );
    let records = journal(&s).await;
    let r = records
        .iter()
        .find(|r| r["kind"] == "reject" && r["item"] == id.as_str())
        .unwrap();
    assert_eq!(r["actor"], "via link by alice");
    assert_eq!(r["detail"]["reason"], "too big for a Friday");
    assert_eq!(s.upstream_confirms(&p), 0);
}

#[tokio::test]
async fn an_expired_items_link_says_so_and_decides_nothing() {
    let s = with_rule().await;
    let (_, p, id) = staged(&s).await;
    let url = minted(&s, &id).await;
    let (_, _, html) = get_page(&url).await;
    let csrf = csrf_of(&html);
    s.sandbox.clock.advance(chrono::Duration::minutes(6));
    let (st, headers, html) = get_page(&url).await;
    assert_eq!(st, StatusCode::GONE, "{html}");
    assert_page_headers(&headers);
    assert!(html.contains("expired"), "{html}");
    assert!(!has_buttons(&html));
    let (st, _, html) = post_form(&url, &format!("decision=approve&csrf={csrf}")).await;
    assert_eq!(st, StatusCode::GONE, "{html}");
    assert_eq!(s.upstream_confirms(&p), 0);
    let (st, body) = mint(&s, &id).await;
    assert_eq!(st, StatusCode::GONE, "{body}");
    assert_eq!(body["error"]["code"], "proposal_expired");
}

#[tokio::test]
async fn forged_tokens_and_forms_without_the_links_csrf_token_are_refused() {
    let s = with_rule().await;
    let (_, p, id) = staged(&s).await;
    let url = minted(&s, &id).await;
    let base = format!("{}/gate/approve/", s.gate.base_url());

    // A token the gateway never minted, one character off, and one that is not even base64.
    let token = &url[base.len()..];
    let flipped = format!(
        "{}{}",
        &token[..token.len() - 1],
        if token.ends_with('A') { 'B' } else { 'A' }
    );
    for forged in [flipped.as_str(), "x", "%3Cscript%3E"] {
        let (st, headers, html) = get_page(&format!("{base}{forged}")).await;
        assert_eq!(st, StatusCode::NOT_FOUND, "{forged}: {html}");
        assert_page_headers(&headers);
        assert!(html.contains("not valid") && !has_buttons(&html));
        assert!(!html.contains("<script>"));
        let (st, _, _) = post_form(&format!("{base}{forged}"), "decision=approve&csrf=x").await;
        assert_eq!(st, StatusCode::NOT_FOUND);
    }

    // Missing, wrong, and another link's CSRF token.
    let (_, _, html) = get_page(&url).await;
    let csrf = csrf_of(&html);
    let (other_key, _, other_id) = staged(&s).await;
    let other = minted(&s, &other_id).await;
    let (_, _, other_html) = get_page(&other).await;
    let other_csrf = csrf_of(&other_html);
    assert_ne!(csrf, other_csrf);
    for body in [
        "decision=approve".to_string(),
        "decision=approve&csrf=".to_string(),
        format!("decision=approve&csrf={}x", &csrf[..csrf.len() - 1]),
        format!("decision=approve&csrf={other_csrf}"),
    ] {
        let (st, headers, html) = post_form(&url, &body).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{body}: {html}");
        assert_page_headers(&headers);
        assert!(html.contains("CSRF"), "{html}");
    }
    // A form that is not a decision decides nothing either.
    let (st, _, _) = post_form(&url, &format!("decision=maybe&csrf={csrf}")).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert_eq!(s.upstream_confirms(&p), 0);
    assert_eq!(s.inbox("pending").await.len(), 2);
    drop(other_key);

    // The link is still good after all that.
    let (st, _, html) = post_form(&url, &format!("decision=approve&csrf={csrf}")).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert_eq!(s.upstream_confirms(&p), 1);

    // The link endpoint wants a supervisor token.
    let (st, _) = send(
        &s.gate.base_url(),
        Method::POST,
        &format!("/gate/v1/inbox/{other_id}/link"),
        None,
        None,
    )
    .await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    let (st, _) = mint(&s, "no-such-item").await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, doc) = send(
        &s.gate.base_url(),
        Method::GET,
        "/api/agent/openapi.json",
        None,
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(
        doc["paths"]["/gate/v1/inbox/{id}/link"]["post"]["operationId"],
        "gate_link"
    );
}

#[tokio::test]
async fn the_kill_switch_disables_every_link_at_once() {
    let s = with_rule().await;
    let (_, p, id) = staged(&s).await;
    let url = minted(&s, &id).await;
    let (_, _, html) = get_page(&url).await;
    let csrf = csrf_of(&html);
    let (st, body) = s
        .supervisor(
            Method::POST,
            "/gate/v1/kill-switch",
            Some(json!({"on": true, "reason": "venue incident"})),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let (st, headers, html) = get_page(&url).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{html}");
    assert_page_headers(&headers);
    assert!(html.contains("kill switch") && html.contains("venue incident"));
    assert!(!has_buttons(&html));
    for decision in ["approve", "reject"] {
        let (st, _, html) = post_form(&url, &format!("decision={decision}&csrf={csrf}")).await;
        assert_eq!(st, StatusCode::FORBIDDEN, "{html}");
    }
    let (st, body) = mint(&s, &id).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "kill_switch");
    assert_eq!(s.upstream_confirms(&p), 0);
    assert_eq!(s.inbox("pending").await.len(), 1);

    // Off again: the link, never spent, works.
    s.supervisor(
        Method::POST,
        "/gate/v1/kill-switch",
        Some(json!({"on": false})),
    )
    .await;
    let (st, _, html) = post_form(&url, &format!("decision=approve&csrf={csrf}")).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert_eq!(s.upstream_confirms(&p), 1);
}

#[tokio::test]
async fn a_decision_the_policy_now_refuses_leaves_the_link_usable() {
    let s = with_rule().await;
    let (_, p, id) = staged(&s).await;
    let url = minted(&s, &id).await;
    let (_, _, html) = get_page(&url).await;
    let csrf = csrf_of(&html);
    let (st, _) = s
        .supervisor(
            Method::PUT,
            "/gate/v1/policy",
            Some(json!({"max_notional_usd": 500})),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    let (st, headers, html) = post_form(&url, &format!("decision=approve&csrf={csrf}")).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{html}");
    assert_page_headers(&headers);
    assert!(html.contains("max_notional_usd") && html.contains("Nothing was decided"));
    assert_eq!(s.upstream_confirms(&p), 0);
    // Not spent: a rejection still works with it.
    let (st, _, html) = post_form(&url, &format!("decision=reject&csrf={csrf}")).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("no reason given"), "{html}");
}

#[tokio::test]
async fn agent_and_item_text_is_escaped_on_the_page() {
    let s = with_rule().await;
    let key = s.sandbox.key(Scope::Legacy);
    // A tool call's arguments are shown as they came: the agent chose every character.
    let mut args = serde_json::to_value(super::long_btc(&s.sandbox.running.messenger_id)).unwrap();
    args["strategy"] = json!("<img src=x onerror=alert(1)>");
    let (st, first) = super::tool(&s, &key, "service_place_order", args).await;
    assert_eq!(st, StatusCode::OK, "{first}");
    let item = &s.inbox("pending").await[0];
    assert_eq!(item["kind"], "tool:service_place_order");
    let url = minted(&s, item["id"].as_str().unwrap()).await;
    let (st, _, html) = get_page(&url).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(!html.contains("<img"), "{html}");
    assert!(
        html.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{html}"
    );
}

/// A guarded gateway that notifies a local HTTPS receiver, with links on a public URL, configured
/// further by `f`; the receiver's deliveries and its temp dir (kept alive with the setup).
async fn notifying(
    f: impl FnOnce(&mut agentdesk::gateway::GateConfig),
) -> (Setup, super::guard::Deliveries, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let (port, pem, got) = receiver(dir.path(), 0).await;
    let destination = Destination {
        url: format!("https://localhost:{port}/hook"),
        secret: webhook_sig::new_secret(),
        allow_hosts: vec!["localhost".into()],
        ca_file: Some(pem),
        max_attempts: 1,
    };
    let s = guarded(|c| {
        c.notify = vec![destination];
        // The gateway's own address is not known before it binds; links on a public URL that
        // points elsewhere still name the page path and the token.
        c.public_url = Some("https://desk.example.com/".into());
        f(c);
    })
    .await;
    (s, got, dir)
}

/// The first notification the receiver got, as JSON.
async fn first_delivery(got: &super::guard::Deliveries) -> Value {
    let start = std::time::Instant::now();
    let body = loop {
        if let Some((_, body)) = got.lock().unwrap().first().cloned() {
            break body;
        }
        assert!(start.elapsed().as_secs() < 10, "no delivery");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    serde_json::from_str(&body).unwrap()
}

#[tokio::test]
async fn a_notification_carries_a_link_on_the_public_url() {
    let (s, got, _dir) = notifying(|_| {}).await;
    let key = s.sandbox.key(Scope::McpMutate);
    passed(&propose(&s, &key, trade("BTC", 1000.0)).await);
    let v = first_delivery(&got).await;
    let link = v["approveUrl"].as_str().expect("approveUrl");
    assert!(
        link.starts_with("https://desk.example.com/gate/approve/"),
        "{link}"
    );
    assert!(v["text"].as_str().unwrap().contains(link), "{v}");
    // The same token opens the page on the gateway itself.
    let token = link.rsplit('/').next().unwrap();
    let (st, _, html) = get_page(&format!("{}/gate/approve/{token}", s.gate.base_url())).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("BTC"));
}

#[tokio::test]
async fn a_public_url_on_plain_http_elsewhere_is_refused_at_start() {
    let mut config = agentdesk::gateway::GateConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        "http://127.0.0.1:9",
        agentdesk::gateway::GateDb::Memory,
    );
    config.public_url = Some("http://desk.example.com".into());
    let Err(e) = agentdesk::gateway::Gateway::start(config).await else {
        panic!("a plain-http public_url was accepted");
    };
    assert!(e.to_string().contains("public_url"), "{e}");
}

/// A step-up item's page says where its approvals stand and what this supervisor's approval
/// does, shows the risk the console's dialog shows, and counts a supervisor once whichever way
/// it approves (the API, then its link).
#[tokio::test]
async fn a_step_up_items_page_shows_the_quorum_and_the_risk_and_counts_each_supervisor_once() {
    let s = guarded(|c| {
        c.policy = Policy::from_json(&json!({"step_up_notional_usd": 500})).unwrap();
    })
    .await;
    let (_, p, id) = staged(&s).await;
    let (st, body) = s
        .supervisor(Method::POST, &format!("/gate/v1/inbox/{id}/approve"), None)
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["status"], "pending", "{body}");

    let url = minted(&s, &id).await;
    let (st, _, html) = get_page(&url).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    for shown in [
        "1 of 2 approvals (alice)",
        "You (alice) approved it already",
        "Risk",
        "Mark",
        "Loss at the stop loss",
        "% of the account",
        "Liquidation",
    ] {
        assert!(html.contains(shown), "{shown} is not on the page:\n{html}");
    }
    let csrf = csrf_of(&html);
    let (st, _, html) = post_form(&url, &format!("decision=approve&csrf={csrf}")).await;
    assert_eq!(st, StatusCode::CONFLICT, "{html}");
    assert!(html.contains("already approved"), "{html}");
    assert_eq!(s.upstream_confirms(&p), 0);

    let bob = s
        .gate
        .mint_token_as("bob", agentdesk::gateway::store::Role::Admin)
        .await
        .unwrap();
    let (st, body) = send(
        &s.gate.base_url(),
        Method::POST,
        &format!("/gate/v1/inbox/{id}/link"),
        Some(bob.expose()),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let bobs = body["url"].as_str().unwrap().to_string();
    let (_, _, html) = get_page(&bobs).await;
    assert!(
        html.contains("Your approval is the last one needed: it executes the trade."),
        "{html}"
    );
    let csrf = csrf_of(&html);
    let (st, _, html) = post_form(&bobs, &format!("decision=approve&csrf={csrf}")).await;
    assert_eq!(st, StatusCode::OK, "{html}");
    assert!(html.contains("executed"), "{html}");
    assert_eq!(s.upstream_confirms(&p), 1);
}

/// A notification's link names nobody: on a step-up item the page says it does not count, and
/// its approval is refused, so one supervisor plus whoever read the message is not two.
#[tokio::test]
async fn a_notifications_link_does_not_count_towards_a_step_up_quorum() {
    let (s, got, _dir) = notifying(|c| {
        c.policy = Policy::from_json(&json!({"step_up_notional_usd": 500})).unwrap();
    })
    .await;
    let key = s.sandbox.key(Scope::McpMutate);
    let p = passed(&propose(&s, &key, trade("BTC", 1000.0)).await);
    let v = first_delivery(&got).await;
    assert!(
        v["text"].as_str().unwrap().contains("0 of 2 approvals"),
        "{v}"
    );
    let token = v["approveUrl"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap();
    let url = format!("{}/gate/approve/{token}", s.gate.base_url());
    let (st, body) = s
        .supervisor(Method::POST, &format!("/gate/v1/inbox/{p}/approve"), None)
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let (_, _, html) = get_page(&url).await;
    assert!(html.contains("names nobody"), "{html}");
    let csrf = csrf_of(&html);
    let (st, _, html) = post_form(&url, &format!("decision=approve&csrf={csrf}")).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{html}");
    assert!(html.contains("names nobody"), "{html}");
    assert_eq!(s.upstream_confirms(&p), 0);
}
