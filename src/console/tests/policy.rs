//! The gateway's policy in the console (`/policy`, `P`): the panel with the default rules, two
//! agents' overrides and today's use; read when opened and with each gate poll only while open;
//! clear words for a service that is not a gateway, a refused token and an answer that is not a
//! policy.

use super::fixtures::*;
use crate::api::ApiError;
use crate::api::model::{GateAgents, GateInbox, GatePolicy};
use crate::console::action::{Action, Answer, Effect};
use crate::console::app::App;
use crate::console::command::{self, Command};
use crate::console::modal::Modal;
use crossterm::event::KeyCode;
use serde_json::json;

fn gate_loaded(at: chrono::DateTime<chrono::Utc>) -> Action {
    Action::answered(
        at,
        LATENCY,
        Answer::GateLoaded {
            result: Ok(Box::new((
                GateInbox {
                    items: Vec::new(),
                    version: None,
                },
                Some(GateAgents {
                    you: None,
                    gateway: None,
                    agents: Vec::new(),
                }),
            ))),
        },
    )
}

fn policy() -> GatePolicy {
    serde_json::from_value(json!({
        "success": true,
        "policy": {
            "allowed_coins": ["BTC", "ETH"],
            "max_notional_usd": 3000.0,
            "max_leverage": 5.0,
            "require_stop_loss": true,
            "max_open_positions": 3,
            "max_daily_notional_usd": 10000.0,
            "daily_loss_limit_usd": 500.0,
            "agents": {
                "bot": {"max_leverage": 3.0, "max_daily_notional_usd": 5000.0, "allow_immediate": true},
                "demo-agent": {"allowed_coins": ["BTC"], "max_notional_usd": 500.0},
            },
        },
        "rules": ["allowed_coins", "max_notional_usd", "max_leverage", "require_stop_loss",
                  "max_open_positions", "max_daily_notional_usd", "daily_loss_limit_usd"],
        "today": {
            "since": "2025-03-14T00:00:00Z",
            "agents": [
                {"agent": "bot", "fingerprint": "0badc0de", "executedNotionalUsd": 4200.0,
                 "maxDailyNotionalUsd": 5000.0},
                {"agent": "demo-agent", "fingerprint": "a1b2c3d4", "executedNotionalUsd": 1000.0,
                 "maxDailyNotionalUsd": 10000.0},
            ],
        },
    }))
    .unwrap()
}

fn policy_loaded(
    result: Result<GatePolicy, ApiError>,
    at: chrono::DateTime<chrono::Utc>,
) -> Action {
    Action::answered(
        at,
        LATENCY,
        Answer::PolicyLoaded {
            result: result.map(Box::new),
        },
    )
}

/// A console on a gateway (its inbox answered at t0), at this size.
fn gate_app(width: u16, height: u16) -> App {
    let mut app = seeded_app(width, height);
    app.update(gate_loaded(t0()));
    assert!(app.gate().is_gateway());
    app.toasts_mut().clear();
    app
}

fn reads(fx: &[Effect]) -> usize {
    fx.iter().filter(|e| **e == Effect::FetchPolicy).count()
}

/// `/policy` opened and answered at t0.
fn open_policy(width: u16, height: u16) -> App {
    let mut app = gate_app(width, height);
    let fx = run(&mut app, "/policy");
    assert_eq!(reads(&fx), 1, "{fx:?}");
    assert!(matches!(app.modal(), Some(Modal::Policy { scroll: 0 })));
    app.update(policy_loaded(Ok(policy()), t0()));
    app
}

#[test]
fn policy_parses_alone_and_refuses_arguments() {
    assert_eq!(command::parse("/policy").unwrap(), Command::Policy);
    let e = command::parse("/policy bot").unwrap_err();
    assert!(e.message.contains("/policy"), "{}", e.message);
    assert_eq!(Command::Policy.to_string(), "/policy");
}

#[test]
fn guard_policy_80x24() {
    let app = open_policy(80, 24);
    let text = render(&app);
    insta::assert_snapshot!("guard_policy_80x24", text);
    for needle in [
        "Policy in force",
        "Default (every agent)",
        "BTC, ETH",
        "3,000.00 USD per proposal",
        "Agent bot",
        "Agent demo-agent",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

#[test]
fn guard_policy_60x20() {
    let mut app = open_policy(60, 20);
    let text = render(&app);
    insta::assert_snapshot!("guard_policy_60x20", text);
    assert!(text.contains("Default (every agent)"), "{text}");
    // What does not fit is reached by scrolling: today's use is at the end.
    for _ in 0..40 {
        app.update(key('j'));
    }
    let text = render(&app);
    assert!(
        text.contains("4,200.00 USD of 5,000.00 USD (84%)"),
        "{text}"
    );
}

#[test]
fn every_rule_and_todays_use_are_listed() {
    let app = open_policy(120, 60);
    let text = render(&app);
    for needle in [
        "allowed coins       BTC, ETH",
        "max leverage        5x",
        "stop-loss required  yes",
        "max open positions  3",
        "daily notional      10,000.00 USD executed per UTC day",
        "daily loss limit    500.00 USD, then reduce-only",
        "allow immediate     no (staged for approval)",
        // bot's overrides, and only them
        "max leverage        3x",
        "daily notional      5,000.00 USD executed per UTC day",
        "allow immediate     yes (within the rules)",
        // demo-agent's
        "allowed coins       BTC",
        "max notional        500.00 USD per proposal",
        "Executed today (UTC, since 2025-03-14 00:00)",
        "bot                 4,200.00 USD of 5,000.00 USD (84%)",
        "demo-agent          1,000.00 USD of 10,000.00 USD (10%)",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

#[test]
fn the_policy_is_read_with_the_gate_poll_only_while_open() {
    let mut app = gate_app(120, 40);
    // Closed: a gate poll does not read it.
    let fx = app.update(Action::Tick(t0() + secs(1)));
    assert!(polls_gate(&fx), "{fx:?}");
    assert_eq!(reads(&fx), 0, "{fx:?}");
    app.update(gate_loaded(t0() + secs(1)));

    let fx = app.update(key('P'));
    assert_eq!(reads(&fx), 1, "P opens and reads it: {fx:?}");
    assert!(matches!(app.modal(), Some(Modal::Policy { .. })));
    // Not asked twice while a read is out.
    let fx = app.update(Action::Tick(t0() + secs(2)));
    assert!(polls_gate(&fx), "{fx:?}");
    assert_eq!(reads(&fx), 0, "{fx:?}");
    app.update(gate_loaded(t0() + secs(2)));
    app.update(policy_loaded(Ok(policy()), t0() + secs(2)));
    // Open: each gate poll reads it again (a PUT, a SIGHUP or an execution shows up).
    let fx = app.update(Action::Tick(t0() + secs(3)));
    assert_eq!(reads(&fx), 1, "{fx:?}");
    let mut changed = policy();
    changed.policy.rules.max_notional_usd = Some(1500.0);
    app.update(gate_loaded(t0() + secs(3)));
    app.update(policy_loaded(Ok(changed), t0() + secs(3)));
    assert!(render(&app).contains("1,500.00 USD per proposal"));

    app.update(code(KeyCode::Esc));
    assert!(app.modal().is_none());
    let fx = app.update(Action::Tick(t0() + secs(4)));
    assert!(polls_gate(&fx), "{fx:?}");
    assert_eq!(reads(&fx), 0, "closed again: {fx:?}");
}

#[test]
fn not_on_a_gateway_policy_says_so() {
    let mut app = seeded_app(120, 40);
    app.update(Action::answered(
        t0(),
        LATENCY,
        Answer::GateLoaded {
            result: Err(ApiError::NotFound {
                code: "not_found".into(),
                message: "no route".into(),
            }),
        },
    ));
    app.toasts_mut().clear();
    let fx = run(&mut app, "/policy");
    assert_eq!(reads(&fx), 0, "{fx:?}");
    assert!(app.modal().is_none());
    let t = toasts(&app);
    assert!(
        t.contains("not a gateway: 127.0.0.1:7400 has no supervisor API"),
        "{t}"
    );
}

#[test]
fn a_404_to_the_policy_read_says_the_service_is_not_a_gateway() {
    // Opened before the gate poll answered anything.
    let mut app = seeded_app(120, 40);
    let fx = run(&mut app, "/policy");
    assert_eq!(reads(&fx), 1, "{fx:?}");
    app.update(policy_loaded(
        Err(ApiError::NotFound {
            code: "not_found".into(),
            message: "HTTP 404".into(),
        }),
        t0(),
    ));
    let text = render(&app);
    assert!(text.contains("the service is not a gateway"), "{text}");
    assert!(!app.gate().is_gateway());
}

#[test]
fn a_refused_token_names_the_request_and_the_token() {
    let mut app = gate_app(120, 40);
    run(&mut app, "/policy");
    app.update(policy_loaded(
        Err(ApiError::Unauthorized {
            message: "supervisor token required".into(),
        }),
        t0(),
    ));
    let text = render(&app);
    assert!(
        text.contains("GET /gate/v1/policy: the gateway refused the supervisor token"),
        "{text}"
    );
    assert!(text.contains("AGENTDESK_GATE_TOKEN"), "{text}");
}

#[test]
fn garbage_names_what_did_not_read_and_keeps_the_last_good_policy() {
    let mut app = open_policy(120, 60);
    app.update(policy_loaded(
        Err(ApiError::Decode(
            "gate/policy: invalid type: string \"lots\", expected f64".into(),
        )),
        t0() + secs(5),
    ));
    let text = render(&app);
    assert!(
        text.contains("GET /gate/v1/policy: the gateway's answer is not a policy"),
        "{text}"
    );
    assert!(text.contains("expected f64"), "{text}");
    // What was read before stays, marked as the last read.
    assert!(text.contains("last read at 12:00:00 UTC"), "{text}");
    assert!(text.contains("3,000.00 USD per proposal"), "{text}");
}
