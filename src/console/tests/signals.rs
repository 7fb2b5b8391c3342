//! The Signals tab: destinations and their delivery log, the create form, the signing secret shown
//! once, the fan-out switch of `/trade`, and the builder-fee signature.

use super::fixtures::*;
use crate::api::ApiError;
use crate::api::eip712;
use crate::api::model::SignalDestination;
use crate::console::action::{Action, Answer, Effect};
use crate::console::app::App;
use crate::console::modal::Modal;
use crate::console::tab::Tab;
use crate::console::tabs::signals::{DestinationForm, check_https_url};
use crate::secret::Secret;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use crossterm::event::KeyCode;
use serde_json::{Value, json};

/// A FAKE signing secret, for tests and snapshots only.
const FAKE_SECRET: &str = "whsec_RkFLRS1URVNULVNFQ1JFVC1ET05PVC1VU0U=";
/// A fixed test wallet key (the well-known ethers.js example key; never a real wallet).
const TEST_KEY: &str = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318";
/// Another fixed key, whose address is not the account's wallet.
const OTHER_KEY: &str = "0x0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const BUILDER: &str = "0x1111111111111111111111111111111111111111";
const NONCE: u64 = 1_741_953_600_000;

fn wallet_of(key: &str) -> String {
    let bytes = hex::decode(key.trim_start_matches("0x")).unwrap();
    let sk = k256::ecdsa::SigningKey::from_slice(&bytes).unwrap();
    eip712::format_address(eip712::address_of(&sk))
}

fn run(app: &mut App, line: &str) -> Vec<Effect> {
    let mut fx = app.update(key(':'));
    fx.extend(type_text(app, line));
    fx.extend(app.update(code(KeyCode::Enter)));
    fx
}

/// A wire body as the client decodes it.
fn decode<T: serde::de::DeserializeOwned>(body: Value) -> T {
    serde_json::from_value(body).expect("the test body decodes")
}

fn destinations_json() -> Value {
    json!({
        "success": true,
        "destinations": [
            {
                "id": "dst_01", "name": "desk alerts", "url": "https://hooks.example.com/desk",
                "strategyIds": ["*"], "directions": ["BUY", "SELL", "CLOSE"],
                "createdAt": "2025-03-10T09:30:00Z",
                "deliveries": {"total": 15, "delivered": 12, "failed": 1, "retrying": 2, "pending": 0}
            },
            {
                "id": "dst_02", "name": "ema bot", "url": "https://bot.example.org/signals?team=7",
                "strategyIds": ["ema_cross", "rsi_revert"], "directions": ["BUY", "SELL"],
                "createdAt": "2025-03-12T17:05:00Z",
                "deliveries": {"total": 0, "delivered": 0, "failed": 0, "retrying": 0, "pending": 0}
            }
        ]
    })
}

fn deliveries_json() -> Value {
    let t = |s: i64| (t0() + secs(s)).to_rfc3339();
    json!({
        "deliveries": [
            {"id": 41, "status": "retrying", "attempts": 3, "lastStatus": 503,
             "lastError": "HTTP 503 from the destination", "nextAttemptAt": t(12),
             "createdAt": t(-95), "event": {"strategyId": "ema_cross", "direction": "BUY", "pair": "BTC-USD"}},
            {"id": 40, "status": "delivered", "attempts": 1, "lastStatus": 200,
             "createdAt": t(-400), "event": {"strategyId": "rsi_revert", "direction": "CLOSE", "pair": "ETH-USD"}},
            {"id": 39, "status": "failed", "attempts": 8, "lastStatus": null,
             "lastError": "connection refused", "createdAt": t(-7200),
             "event": {"strategyId": "ema_cross", "direction": "SELL", "pair": "SOL-USD"}}
        ]
    })
}

/// The seeded console on the Signals tab with two destinations and the first one's deliveries.
pub(super) fn signals_app(width: u16, height: u16) -> App {
    let mut app = seeded_app(width, height);
    let fx = app.update(key('9'));
    assert_eq!(app.tab(), Tab::Signals);
    assert!(fx.contains(&Effect::FetchDestinations), "{fx:?}");
    let fx = app.update(Action::answered(
        t0(),
        LATENCY,
        Answer::DestinationsLoaded {
            result: Ok(decode(destinations_json())),
        },
    ));
    assert!(
        fx.contains(&Effect::FetchDeliveries("dst_01".into())),
        "{fx:?}"
    );
    app.update(Action::answered(
        t0(),
        LATENCY,
        Answer::DeliveriesLoaded {
            id: "dst_01".into(),
            result: Ok(decode(deliveries_json())),
        },
    ));
    app.toasts_mut().clear();
    app
}

fn builder_payload(authorized: bool) -> Value {
    let td = eip712::approve_builder_fee_typed_data("0.001%", BUILDER, NONCE);
    json!({
        "success": true,
        "authorized": authorized,
        "typedData": td,
        "nonce": NONCE,
        "signatureChainId": "0x66eee",
    })
}

/// The console with the builder-fee panel open on the loaded payload, for the wallet of TEST_KEY.
fn builder_app(width: u16, height: u16) -> App {
    let mut app = signals_app(width, height);
    let wallet = wallet_of(TEST_KEY);
    app.account_mut().whoami.as_mut().unwrap().wallet_address = Some(wallet.clone());
    let fx = run(&mut app, "/builder-fee");
    assert!(
        matches!(app.modal(), Some(Modal::BuilderFee(_))),
        "{:?}",
        app.modal()
    );
    assert!(
        fx.contains(&Effect::FetchBuilderFee(wallet.clone())),
        "{fx:?}"
    );
    app.update(Action::answered(
        t0(),
        LATENCY,
        Answer::BuilderFeeLoaded {
            wallet,
            result: Ok(Box::new(decode(builder_payload(false)))),
        },
    ));
    app
}

// ---- the create form -----------------------------------------------------------------------------

#[test]
fn form_checks_every_field_before_sending() {
    let mut form = DestinationForm::default();
    let problems = form.validate().unwrap_err();
    assert!(
        problems.iter().any(|p| p == "name: required"),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.starts_with("url:")),
        "{problems:?}"
    );

    form.fields = [
        "hook".into(),
        "http://example.com/x".into(),
        "".into(),
        "BUY,UP".into(),
    ];
    let problems = form.validate().unwrap_err();
    assert!(problems.contains(&"url: must start with https://".to_string()));
    assert!(problems.iter().any(|p| p.starts_with("strategies:")));
    assert!(problems.iter().any(|p| p.contains("`UP`")));

    form.fields[2] = "*,ema".into();
    form.fields[3] = "".into();
    let problems = form.validate().unwrap_err();
    assert!(problems.iter().any(|p| p.contains("* stands alone")));
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("directions: at least one"))
    );

    for bad in [
        "https://",
        "https://user:pw@host/x",
        "https://ho st/",
        "https://h:99999/",
    ] {
        assert!(check_https_url(bad).is_err(), "{bad} passed");
    }
    for good in [
        "https://example.com",
        "https://a.b:8443/hook?x=1",
        "https://[::1]:9/x",
    ] {
        assert_eq!(check_https_url(good), Ok(()), "{good}");
    }

    form.fields = [
        " desk ".into(),
        "https://hooks.example.com/a".into(),
        "ema_cross, rsi".into(),
        "buy sell".into(),
    ];
    let ok = form.validate().unwrap();
    assert_eq!(ok.name, "desk");
    assert_eq!(ok.strategy_ids, vec!["ema_cross", "rsi"]);
    assert_eq!(ok.directions, vec!["BUY", "SELL"]);
}

#[test]
fn invalid_form_sends_nothing_and_valid_one_creates() {
    let mut app = signals_app(120, 40);
    app.update(key('N'));
    assert!(
        matches!(app.modal(), Some(Modal::DestinationForm(_))),
        "{:?}",
        app.modal()
    );
    // The name is empty: Enter shows the problem and sends nothing.
    let fx = app.update(code(KeyCode::Enter));
    assert!(!fx.iter().any(|e| matches!(e, Effect::CreateDestination(_))));
    let form = destination_form(&app).unwrap();
    assert!(form.problems.iter().any(|p| p == "name: required"));

    type_text(&mut app, "alerts");
    app.update(code(KeyCode::Tab));
    app.update(ctrl('u'));
    type_text(&mut app, "http://hooks.example.com/in");
    let fx = app.update(code(KeyCode::Enter));
    assert!(
        fx.iter()
            .all(|e| !matches!(e, Effect::CreateDestination(_)))
    );
    let form = destination_form(&app).unwrap();
    assert_eq!(form.problems, vec!["url: must start with https://"]);

    app.update(ctrl('u'));
    type_text(&mut app, "https://hooks.example.com/in");
    let fx = app.update(code(KeyCode::Enter));
    let sent: Vec<_> = fx
        .iter()
        .filter_map(|e| match e {
            Effect::CreateDestination(r) => Some(r.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(sent.len(), 1, "{fx:?}");
    assert_eq!(sent[0].name, "alerts");
    assert_eq!(sent[0].url, "https://hooks.example.com/in");
    assert_eq!(sent[0].strategy_ids, vec!["*"]);
    assert_eq!(sent[0].directions, vec!["BUY", "SELL", "CLOSE"]);
}

// ---- the secret, once ------------------------------------------------------------------------------

fn created(app: &mut App) -> Vec<Effect> {
    app.update(Action::answered(
        t0(),
        LATENCY,
        Answer::DestinationCreated {
            name: "alerts".into(),
            result: Ok(Box::new(decode(json!({
                "id": "dst_03", "name": "alerts", "url": "https://hooks.example.com/in",
                "strategyIds": ["*"], "directions": ["BUY"], "signingSecret": FAKE_SECRET
            })))),
        },
    ))
}

/// Every piece of App state that holds text, as one string.
fn app_text(app: &App) -> String {
    format!(
        "{:?}{:?}{:?}{:?}{:?}{:?}{:?}",
        match app.modal() {
            Some(Modal::Secret(r)) => Some(r.secret.expose().to_string()),
            _ => None,
        },
        app.tabs().signals.destinations(),
        app.toasts(),
        app.request_log(),
        app.history(),
        app.command_error(),
        app.modal(),
    )
}

#[test]
fn secret_is_shown_once_copied_by_osc52_and_gone_after_close() {
    let mut app = signals_app(120, 40);
    app.update(key('N'));
    // The client decodes the secret into a redacted `Secret`: an Action's Debug never shows it.
    let answer: SignalDestination = decode(json!({"id": "d", "signingSecret": FAKE_SECRET}));
    assert_eq!(
        answer.signing_secret.as_ref().map(Secret::expose),
        Some(FAKE_SECRET)
    );
    assert!(!format!("{answer:?}").contains(FAKE_SECRET));
    let fx = created(&mut app);
    assert!(
        matches!(app.modal(), Some(Modal::Secret(_))),
        "{:?}",
        app.modal()
    );
    assert!(destination_form(&app).is_none());
    // Nothing the runner sees (or logs) carries the secret.
    assert!(!format!("{fx:?}").contains(FAKE_SECRET));
    assert!(render(&app).contains(FAKE_SECRET));
    assert!(
        app.tabs()
            .signals
            .destinations()
            .iter()
            .any(|d| d.id == "dst_03")
    );

    let fx = app.update(key('c'));
    let payload = fx
        .iter()
        .find_map(|e| match e {
            Effect::Clipboard(p) => Some(p.clone()),
            _ => None,
        })
        .expect("c copies with OSC 52");
    assert_eq!(payload.expose(), B64.encode(FAKE_SECRET));
    assert_eq!(
        B64.decode(payload.expose()).unwrap(),
        FAKE_SECRET.as_bytes()
    );
    // The effect's Debug is redacted: a log line of it shows no secret.
    assert!(!format!("{fx:?}").contains(&B64.encode(FAKE_SECRET)));
    assert!(render(&app).contains("sent to the terminal's clipboard"));

    app.update(code(KeyCode::Esc));
    assert!(app.modal().is_none(), "{:?}", app.modal());
    assert!(!matches!(app.modal(), Some(Modal::Secret(_))));
    let text = app_text(&app);
    assert!(!text.contains(FAKE_SECRET), "{text}");
    assert!(!text.contains(&B64.encode(FAKE_SECRET)));
    assert!(!render(&app).contains(FAKE_SECRET));
    // Nothing brings it back.
    app.update(key('c'));
    assert!(!matches!(app.modal(), Some(Modal::Secret(_))));
}

// ---- /trade and fan-out ----------------------------------------------------------------------------

fn trades(fx: &[Effect]) -> Vec<crate::api::model::TradeSignal> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Trade(s) => Some((**s).clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn fanout_default_applies_to_trade_and_fanout_off_overrides() {
    let mut app = signals_app(120, 40);
    assert!(app.tabs().signals.fanout_default());
    let sent = trades(&run(&mut app, "/trade BTC long 0.01 tp=72000"));
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].fanout, Some(true));
    assert_eq!(sent[0].a.as_deref(), Some("BTCUSDT"));
    assert_eq!(sent[0].d.as_deref(), Some("long"));
    assert_eq!(sent[0].tp, Some(72000.0));
    assert!(
        toast_texts(&app).iter().any(|t| t.contains("fan-out on")),
        "{:?}",
        toast_texts(&app)
    );

    let sent = trades(&run(&mut app, "/trade BTC long 0.01 fanout=off"));
    assert_eq!(sent[0].fanout, Some(false));
    assert!(toast_texts(&app).last().unwrap().contains("fan-out off"));

    // `f` on the tab turns the default off, and the tab says so.
    press(&mut app, 'f');
    assert!(!app.tabs().signals.fanout_default());
    assert!(render(&app).contains("fan-out: off"));
    let sent = trades(&run(&mut app, "/trade ETH short $500"));
    assert_eq!(sent[0].fanout, Some(false));
    assert_eq!(sent[0].size_usd, Some(500.0));
    let sent = trades(&run(&mut app, "/trade ETH close fanout=on"));
    assert_eq!(sent[0].fanout, Some(true));
    assert_eq!(sent[0].d.as_deref(), Some("close"));

    // Opening needs a size; a bad switch is named.
    assert!(trades(&run(&mut app, "/trade ETH long")).is_empty());
    assert!(app.command_error().unwrap().contains("missing <size>"));
    assert!(trades(&run(&mut app, "/trade ETH long 1 fanout=maybe")).is_empty());
    assert!(app.command_error().unwrap().contains("fanout"));
}

#[test]
fn a_refused_trade_says_which_keys_may_trade() {
    let mut app = signals_app(120, 40);
    let sent = trades(&run(&mut app, "/trade BTC long 0.01"));
    app.toasts_mut().clear();
    app.update(Action::answered(
        t0(),
        LATENCY,
        Answer::Traded {
            signal: Box::new(sent[0].clone()),
            result: Err(ApiError::Forbidden {
                code: "insufficient_scope".into(),
                message: "this key may not use /api/v1/trades".into(),
            }),
        },
    ));
    let t = toast_texts(&app).join("\n");
    assert!(t.contains("refused (403)"), "{t}");
    assert!(t.contains("webhook:alerts or legacy"), "{t}");
}

// ---- builder fee -----------------------------------------------------------------------------------

fn approvals(fx: &[Effect]) -> Vec<crate::api::model::BuilderFeeApproval> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::ApproveBuilderFee(a) => Some(a.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn builder_fee_without_a_key_says_what_to_set() {
    let mut app = builder_app(120, 40);
    app.set_wallet_key(|| None);
    let fx = yes(&mut app);
    assert!(approvals(&fx).is_empty());
    let err = builder_panel(&app).unwrap().error.clone().unwrap();
    assert!(err.contains("AGENTDESK_WALLET_KEY="), "{err}");
}

#[test]
fn builder_fee_refuses_a_key_of_another_wallet() {
    let mut app = builder_app(120, 40);
    app.set_wallet_key(|| Some(Secret::new(OTHER_KEY)));
    let fx = yes(&mut app);
    assert!(approvals(&fx).is_empty(), "{fx:?}");
    let err = builder_panel(&app).unwrap().error.clone().unwrap();
    assert!(err.contains("not of the account's wallet"), "{err}");
    assert!(err.contains(&wallet_of(OTHER_KEY)));
    assert!(!err.contains(OTHER_KEY.trim_start_matches("0x")));
    assert!(!render(&app).contains(OTHER_KEY.trim_start_matches("0x")));
}

#[test]
fn builder_fee_signs_with_the_wallet_key_and_posts() {
    let mut app = builder_app(120, 40);
    app.set_wallet_key(|| Some(Secret::new(TEST_KEY)));
    let fx = yes(&mut app);
    let sent = approvals(&fx);
    assert_eq!(sent.len(), 1, "{fx:?}");
    let a = &sent[0];
    let wallet = wallet_of(TEST_KEY);
    assert_eq!(a.venue_wallet, wallet);
    assert_eq!(a.nonce, NONCE);
    assert_eq!(a.signature_chain_id, "0x66eee");
    let sig = a.signature.as_str().unwrap().to_string();
    let td = eip712::approve_builder_fee_typed_data("0.001%", BUILDER, NONCE);
    let digest = eip712::signing_hash(&td).unwrap();
    let signer = eip712::recover_address(&digest, &eip712::SignatureInput::Hex(sig)).unwrap();
    assert_eq!(eip712::format_address(signer), wallet);
    // The key is nowhere in the app.
    assert!(!app_text(&app).contains(TEST_KEY.trim_start_matches("0x")));

    app.update(Action::answered(
        t0(),
        LATENCY,
        Answer::BuilderFeeApproved {
            result: Ok(Box::new(decode(
                json!({"success": true, "json_summary": "builder fee approved for 0.001%"}),
            ))),
        },
    ));
    let panel = builder_panel(&app).unwrap();
    assert!(panel.payload.as_ref().unwrap().authorized);
    assert_eq!(
        panel.result.as_deref(),
        Some("builder fee approved for 0.001%")
    );
    // Already authorized: `y` signs nothing more.
    assert!(approvals(&yes(&mut app)).is_empty());
}

// ---- polling and feature detection -----------------------------------------------------------------

fn fetched(fx: &[Effect]) -> (usize, usize) {
    (
        fx.iter()
            .filter(|e| **e == Effect::FetchDestinations)
            .count(),
        fx.iter()
            .filter(|e| matches!(e, Effect::FetchDeliveries(_)))
            .count(),
    )
}

#[test]
fn polled_only_while_visible_destinations_15s_deliveries_5s() {
    let mut app = signals_app(120, 40);
    assert_eq!(fetched(&app.update(Action::Tick(t0() + secs(4)))), (0, 0));
    assert_eq!(fetched(&app.update(Action::Tick(t0() + secs(5)))), (0, 1));
    app.update(Action::answered(
        t0() + secs(5),
        LATENCY,
        Answer::DeliveriesLoaded {
            id: "dst_01".into(),
            result: Ok(decode(deliveries_json())),
        },
    ));
    assert_eq!(fetched(&app.update(Action::Tick(t0() + secs(15)))), (1, 1));
    // Moving to the second destination asks for its log at once.
    let fx = app.update(code(KeyCode::Down));
    assert!(
        fx.contains(&Effect::FetchDeliveries("dst_02".into())),
        "{fx:?}"
    );
    // Off the tab: nothing.
    app.update(key('1'));
    assert_eq!(fetched(&app.update(Action::Tick(t0() + secs(120)))), (0, 0));
}

#[test]
fn a_service_without_the_delivery_log_hides_the_pane_with_a_note() {
    let mut app = seeded_app(120, 40);
    app.update(key('9'));
    let fx = app.update(Action::answered(
        t0(),
        LATENCY,
        Answer::DestinationsLoaded {
            result: Ok(decode(destinations_json())),
        },
    ));
    assert_eq!(fetched(&fx), (0, 1));
    app.update(Action::answered(
        t0(),
        LATENCY,
        Answer::DeliveriesLoaded {
            id: "dst_01".into(),
            result: Err(ApiError::NotFound {
                code: "not_found".into(),
                message: "no such route".into(),
            }),
        },
    ));
    assert!(!app.tabs().signals.deliveries_supported());
    assert!(render(&app).contains("this service keeps no delivery log"));
    for s in [5, 10, 60] {
        assert_eq!(fetched(&app.update(Action::Tick(t0() + secs(s)))).1, 0);
    }
    // 501 counts as "not offered" too.
    assert!(crate::console::tabs::signals::is_unsupported(
        &ApiError::Server {
            status: 501,
            code: "not_implemented".into(),
            message: String::new(),
        }
    ));
}

// ---- snapshots -------------------------------------------------------------------------------------

fn snap(name: &str, app: &App) -> String {
    let text = render(app);
    assert_eq!(text, render(app), "{name} is not deterministic");
    insta::assert_snapshot!(name, text);
    text
}

#[test]
fn signals_120x40() {
    let app = signals_app(120, 40);
    let text = snap("signals_120x40", &app);
    for needle in [
        "9 Signals",
        "fan-out: on",
        "desk alerts",
        "https://hooks.example.com/desk",
        "ema_cross,rsi_revert",
        "ok 12 · fail 1 · retry 2",
        "retrying",
        "in 12s",
        "503",
        "connection refused",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

#[test]
fn signals_80x24() {
    let app = signals_app(80, 24);
    let text = snap("signals_80x24", &app);
    assert_eq!(text.lines().count(), 24);
    assert!(text.lines().all(|l| l.chars().count() <= 80));
    for needle in [
        "9 Signals",
        "fan-out: on",
        "desk alerts",
        "retrying",
        "in 12s",
        "ok 12",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

#[test]
fn secret_overlay_120x40() {
    let mut app = signals_app(120, 40);
    app.update(key('N'));
    created(&mut app);
    let text = snap("signals_secret_120x40", &app);
    assert!(text.contains(FAKE_SECRET));
    assert!(text.contains("shown once"));
}

#[test]
fn destination_form_with_problems_120x40() {
    let mut app = signals_app(120, 40);
    app.update(key('N'));
    app.update(code(KeyCode::Tab));
    type_text(&mut app, "x");
    app.update(code(KeyCode::Enter));
    let text = snap("signals_form_120x40", &app);
    assert!(text.contains("name: required"));
}

#[test]
fn builder_fee_panel_120x40() {
    let app = builder_app(120, 40);
    let text = snap("signals_builder_fee_120x40", &app);
    for needle in [
        "HyperliquidSignTransaction",
        "421614",
        "HyperliquidTransaction:ApproveBuilderFee",
        "maxFeeRate",
        "0.001%",
        "not authorized",
        "AGENTDESK_WALLET_KEY",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

/// Issue 33: signing a builder-fee approval passes the guard every final question shares: a `y`
/// before the panel could be read signs nothing, and a key that is not the panel's closes it.
#[test]
fn builder_fee_y_too_soon_or_after_a_stray_key_signs_nothing() {
    let mut app = builder_app(120, 40);
    app.set_wallet_key(|| Some(Secret::new(TEST_KEY)));
    let mut fx = app.update(key('y'));
    fx.extend(settle(&mut app));
    assert!(approvals(&fx).is_empty(), "{fx:?}");
    assert!(toast_texts(&app).iter().any(|t| t.starts_with("too soon")));
    read(&mut app);
    let mut fx = app.update(key(':'));
    fx.extend(app.update(key('y')));
    fx.extend(settle(&mut app));
    assert!(approvals(&fx).is_empty(), "{fx:?}");
    assert!(app.modal().is_none());
}

#[test]
fn destinations_refused_before_any_read_are_not_shown_as_loading() {
    let mut app = seeded_app(120, 40);
    app.update(key('9'));
    app.update(Action::answered(
        t0(),
        LATENCY,
        Answer::DestinationsLoaded {
            result: Err(ApiError::Forbidden {
                code: "unsupported".into(),
                message: "list_signal_destinations is not available on this deployment".into(),
            }),
        },
    ));
    let text = render(&app);
    assert!(!text.contains("loading destinations"), "{text}");
    assert!(
        text.contains("destinations not read: list_signal_destinations is not available"),
        "{text}"
    );
}
