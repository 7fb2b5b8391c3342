//! The gateway's guardrails in the console: verdicts in the detail panel and the approve dialog
//! (with the live re-check), the override (`o` then `y`) and the refusal without it, the kill
//! switch (asked first; red header; approvals refused), `/auto` parsing and its effects, and the
//! standing approvals panel with its countdown.

use super::fixtures::*;
use crate::api::ApiError;
use crate::api::model::{
    GateAgents, GateCheck, GateInbox, GateItem, GateKillSwitch, GateStanding, GateStandingRequest,
};
use crate::console::action::{Action, Answer, Effect};
use crate::console::app::App;
use crate::console::command::{self, AutoCommand, Command};
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use crossterm::event::KeyCode;
use serde_json::json;

const ID: &str = "prop_de0a9e17c2b44f01";

fn verdicts(broken: bool) -> serde_json::Value {
    json!([
        {"rule": "allowed_coins", "ok": true, "limit": ["BTC", "ETH"], "value": "ETH", "near": false,
         "message": "ETH is allowed"},
        {"rule": "max_leverage", "ok": true, "limit": 5, "value": 4, "near": true,
         "message": "4x of 5x"},
        if broken {
            json!({"rule": "max_notional_usd", "ok": false, "limit": 500.0, "value": 529.3, "near": false,
                   "message": "notional 529.30 USD is over the 500.00 USD limit"})
        } else {
            json!({"rule": "max_notional_usd", "ok": true, "limit": 1000.0, "value": 529.3, "near": false,
                   "message": "notional 529.30 USD of 1000.00 USD"})
        },
    ])
}

fn item(broken: bool) -> GateItem {
    serde_json::from_value(json!({
        "id": "gi_de0a9e17",
        "agent": "demo-agent",
        "agentFingerprint": "a1b2c3d4",
        "account": "1817426543",
        "kind": "trade",
        "status": "pending",
        "proposalId": ID,
        "request": {"a": "ETHUSDT", "d": "long"},
        "preview": {"kind": "trade", "exchange": "venue", "coin": "ETH", "direction": "long",
                    "orderType": "market", "size": 0.25, "markPx": 2117.2, "notional": 529.3,
                    "leverage": 4, "margin": 132.3},
        "expiresAt": (t0() + LIFETIME).to_rfc3339(),
        "createdAt": t0().to_rfc3339(),
        "verdicts": verdicts(broken),
    }))
    .unwrap()
}

fn loaded(items: Vec<GateItem>) -> Action {
    Action::answered(
        t0(),
        LATENCY,
        Answer::GateLoaded {
            result: Ok(Box::new((
                GateInbox {
                    items,
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

fn guard_loaded(kill: GateKillSwitch, standing: Vec<GateStanding>) -> Action {
    Action::answered(
        t0() + secs(1),
        LATENCY,
        Answer::GuardLoaded {
            kill: Ok(kill),
            standing: Ok(standing),
        },
    )
}

fn checked(broken: bool) -> Action {
    let check: GateCheck = serde_json::from_value(json!({
        "success": true, "id": "gi_de0a9e17", "status": "pending",
        "verdicts": verdicts(broken),
        "needsOverride": if broken { json!(["max_notional_usd"]) } else { json!([]) },
        "killSwitch": {"on": false, "reason": null, "blocks": false},
    }))
    .unwrap();
    Action::answered(
        t0() + secs(2),
        LATENCY,
        Answer::GateChecked {
            id: ID.into(),
            result: Ok(Box::new(check)),
        },
    )
}

fn kill_on(reason: &str) -> GateKillSwitch {
    GateKillSwitch {
        on: true,
        reason: Some(reason.into()),
        by: Some("supervisor".into()),
        at: Some(t0()),
    }
}

/// A console on a gateway with one pending item, selected, on the Proposals tab.
fn guard_app(broken: bool) -> App {
    let mut app = seeded_app(120, 40);
    app.inbox_mut().fixture_clear();
    app.update(loaded(vec![item(broken)]));
    app.update(key('2'));
    let i = app
        .inbox()
        .items()
        .iter()
        .position(|i| i.id() == ID)
        .unwrap();
    app.select(Pane::Inbox, i);
    app.toasts_mut().clear();
    app
}

#[test]
fn the_approve_dialog_rechecks_live_and_says_checking_until_answered() {
    let mut app = guard_app(false);
    let fx = press(&mut app, 'a');
    assert!(fx.contains(&Effect::GateCheck(ID.into())), "{fx:?}");
    assert!(render(&app).contains("checking…"));
    // Asked once, not on every later update.
    let fx = app.update(Action::Tick(t0() + secs(1)));
    assert!(!fx.contains(&Effect::GateCheck(ID.into())), "{fx:?}");
    app.update(checked(false));
    let text = render(&app);
    assert!(text.contains("re-checked live"), "{text}");
    assert!(!text.contains("checking…"), "{text}");
}

#[test]
fn y_on_a_breaking_item_does_nothing_but_say_why() {
    let mut app = guard_app(true);
    press(&mut app, 'a');
    app.update(checked(true));
    let fx = yes(&mut app);
    assert!(
        !fx.iter().any(|e| matches!(
            e,
            Effect::GateApprove(_) | Effect::GateApproveOverride { .. }
        )),
        "{fx:?}"
    );
    assert!(matches!(app.modal(), Some(Modal::Approve(d)) if d.id == ID));
    let t = toasts(&app);
    assert!(t.contains("breaks max_notional_usd"), "{t}");
    assert!(t.contains("o, then type ETH, overrides"), "{t}");
}

#[test]
fn a_rule_the_live_check_finds_broken_blocks_y_though_the_staging_passed() {
    let mut app = guard_app(false);
    press(&mut app, 'a');
    app.update(checked(true));
    let fx = yes(&mut app);
    assert!(fx.is_empty(), "{fx:?}");
    assert!(toasts(&app).contains("breaks max_notional_usd"));
}

fn approvals(fx: &[Effect]) -> Vec<&Effect> {
    fx.iter()
        .filter(|e| {
            matches!(
                e,
                Effect::GateApprove(_) | Effect::GateApproveOverride { .. } | Effect::Confirm(_)
            )
        })
        .collect()
}

/// Typed at a person's pace: a key every 150 ms.
fn type_slowly(app: &mut App, text: &str) -> Vec<Effect> {
    let mut fx = Vec::new();
    for c in text.chars() {
        app.set_clock(app.now() + ms(150));
        fx.extend(app.update(if c == '\n' {
            code(KeyCode::Enter)
        } else {
            key(c)
        }));
    }
    fx
}

#[test]
fn o_then_y_does_not_approve_typing_the_coin_does() {
    let mut app = guard_app(true);
    press(&mut app, 'a');
    app.update(checked(true));
    read(&mut app);
    app.update(key('o'));
    let fx = yes(&mut app);
    assert!(approvals(&fx).is_empty(), "{fx:?}");
    // The y went into the coin's input: Enter refuses it and says what to type.
    read(&mut app);
    let fx = app.update(code(KeyCode::Enter));
    assert!(approvals(&fx).is_empty(), "{fx:?}");
    assert!(
        toasts(&app).contains("`y` is not ETH: not overridden"),
        "{}",
        toasts(&app)
    );
    let mut fx = type_slowly(&mut app, "eth");
    read(&mut app);
    fx.extend(app.update(code(KeyCode::Enter)));
    fx.extend(settle(&mut app));
    assert_eq!(
        fx,
        vec![Effect::GateApproveOverride {
            id: ID.into(),
            overrides: vec!["max_notional_usd".into()],
        }]
    );
    assert!(app.modal().is_none());
}

/// What a supervisor who forgot the dialog types: a command. Its `:` closes the dialog and
/// nothing is decided, whether typed a while later at a person's pace or pasted at once.
#[test]
fn a_command_typed_with_the_dialog_open_decides_nothing() {
    for (broken, text) in [
        (true, ":/policy\n"),
        (false, ":/research say hello"),
        (true, ":/close BTC"),
    ] {
        for pasted in [false, true] {
            let mut app = guard_app(broken);
            press(&mut app, 'a');
            app.update(checked(broken));
            read(&mut app);
            let mut fx = if pasted {
                let mut fx = type_text(&mut app, text.trim_end_matches('\n'));
                fx.extend(app.update(code(KeyCode::Enter)));
                fx
            } else {
                type_slowly(&mut app, text)
            };
            assert!(
                toasts(&app).contains(
                    "approve dialog closed: `:` is not one of its keys — nothing was decided"
                ),
                "{text:?}: {}",
                toasts(&app)
            );
            // No override is left armed for a later y either.
            app.update(code(KeyCode::Esc));
            fx.extend(yes(&mut app));
            assert!(
                approvals(&fx).is_empty(),
                "{text:?} pasted {pasted}: {fx:?}"
            );
            assert!(
                !matches!(app.modal(), Some(Modal::Approve(_))),
                "{text:?} pasted {pasted}"
            );
        }
    }
}

#[test]
fn y_right_after_the_dialog_opened_is_ignored() {
    let mut app = guard_app(false);
    press(&mut app, 'a');
    app.update(checked(false));
    let fx = app.update(key('y'));
    assert!(approvals(&fx).is_empty(), "{fx:?}");
    assert!(toasts(&app).contains("too soon — read what it decides, then press y"));
    assert!(matches!(app.modal(), Some(Modal::Approve(_))));
    assert_eq!(yes(&mut app), vec![Effect::GateApprove(ID.into())]);
}

#[test]
fn under_the_kill_switch_the_dialog_offers_no_override() {
    let mut app = guard_app(true);
    app.update(guard_loaded(kill_on("drill"), Vec::new()));
    press(&mut app, 'a');
    app.update(checked(true));
    let text = render(&app);
    assert!(!text.contains(" o  override"), "{text}");
    assert!(text.contains("no override to offer"), "{text}");
    read(&mut app);
    app.update(key('o'));
    assert!(
        toasts(&app).contains("nothing overridden"),
        "{}",
        toasts(&app)
    );
    let text = render(&app);
    assert!(!text.contains("OVERRIDE"), "{text}");
    let fx = yes(&mut app);
    assert!(approvals(&fx).is_empty(), "{fx:?}");
}

#[test]
fn an_item_that_breaks_nothing_is_approved_with_plain_y() {
    let mut app = guard_app(false);
    press(&mut app, 'a');
    app.update(checked(false));
    read(&mut app);
    app.update(key('o'));
    assert!(toasts(&app).contains("nothing to override"));
    let fx = yes(&mut app);
    assert_eq!(fx, vec![Effect::GateApprove(ID.into())]);
}

#[test]
fn kill_asks_first_then_turns_the_switch_on_or_off() {
    let mut app = guard_app(false);
    let fx = run(&mut app, "/kill agents misbehave");
    assert!(!fx.iter().any(|e| matches!(e, Effect::GateSetKill { .. })));
    assert!(
        matches!(app.modal(), Some(Modal::Confirm(crate::console::modal::Confirm { what: crate::console::modal::Deciding::Kill { on: true, reason }, .. })) if reason == "agents misbehave")
    );
    assert!(render(&app).contains("Turn the kill switch ON for every agent? y/esc"));
    // Esc sends nothing.
    let fx = app.update(code(KeyCode::Esc));
    assert!(fx.is_empty(), "{fx:?}");
    assert!(app.modal().is_none());
    run(&mut app, "/kill agents misbehave");
    let fx = yes(&mut app);
    assert_eq!(
        fx,
        vec![Effect::GateSetKill {
            on: true,
            reason: "agents misbehave".into()
        }]
    );
    run(&mut app, "/kill off");
    assert!(render(&app).contains("Turn the kill switch OFF"));
    let fx = yes(&mut app);
    assert_eq!(
        fx,
        vec![Effect::GateSetKill {
            on: false,
            reason: String::new()
        }]
    );
}

#[test]
fn kill_needs_a_gateway_and_a_reason() {
    let mut app = seeded_app(120, 40);
    run(&mut app, "/kill test");
    assert!(app.modal().is_none());
    assert!(toasts(&app).contains("not on a gateway"));
    let err = command::parse("/kill").unwrap_err();
    assert!(err.message.contains("missing <reason> (or off)"), "{err:?}");
}

#[test]
fn while_the_kill_switch_is_on_approvals_are_refused_in_the_console() {
    let mut app = guard_app(false);
    app.update(guard_loaded(kill_on("drill"), Vec::new()));
    press(&mut app, 'a');
    app.update(checked(false));
    let fx = yes(&mut app);
    assert!(fx.is_empty(), "{fx:?}");
    let t = toasts(&app);
    assert!(t.contains("the kill switch is on (drill)"), "{t}");
    // A failed poll keeps the switch as last known.
    app.update(Action::answered(
        t0() + secs(3),
        LATENCY,
        Answer::GuardLoaded {
            kill: Err(ApiError::Transport("reset".into())),
            standing: Err(ApiError::Transport("reset".into())),
        },
    ));
    assert!(app.gate().kill().is_some_and(|k| k.on));
}

#[test]
fn auto_parses_and_names_what_is_wrong() {
    assert_eq!(
        command::parse("/auto * btc,ETHUSDT 1k 10 quiet market").unwrap(),
        Command::Auto(AutoCommand::Create(command::AutoArgs {
            agent: "*".into(),
            coins: vec!["BTC".into(), "ETH".into()],
            max_notional_usd: 1000.0,
            minutes: 10,
            reason: "quiet market".into(),
        }))
    );
    match command::parse("/auto demo-agent * 500 60").unwrap() {
        Command::Auto(AutoCommand::Create(a)) => {
            assert!(a.coins.is_empty());
            assert_eq!(a.reason, command::DEFAULT_AUTO_REASON);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        command::parse("/auto").unwrap(),
        Command::Auto(AutoCommand::List)
    );
    assert_eq!(
        command::parse("/auto revoke 3").unwrap(),
        Command::Auto(AutoCommand::Revoke(3))
    );
    for (line, says) in [
        ("/auto * BTC 0 10", "invalid maxNotionalUsd `0`"),
        ("/auto * BTC lots 10", "invalid maxNotionalUsd `lots`"),
        ("/auto * BTC 500 0", "invalid minutes `0`"),
        ("/auto * BTC 500 20000", "invalid minutes `20000`"),
        ("/auto * BTC 500 1.5", "invalid minutes `1.5`"),
        ("/auto * BTC,B-T-C 500 10", "invalid coin `B-T-C`"),
        ("/auto bad!agent BTC 500 10", "invalid agent `bad!agent`"),
        ("/auto * BTC 500", "missing <minutes>"),
        ("/auto *", "missing <coins,...|*>"),
        ("/auto revoke", "missing <id>"),
        ("/auto revoke x", "invalid standing approval id `x`"),
    ] {
        let err = command::parse(line).unwrap_err();
        assert!(err.message.contains(says), "{line}: {}", err.message);
    }
    // The canonical text reads back to the same command.
    let c = command::parse("/auto * BTC,ETH 1000 10 quiet").unwrap();
    assert_eq!(command::parse(&c.to_string()).unwrap(), c);
}

#[test]
fn auto_creates_and_revokes_through_the_gateway() {
    let mut app = guard_app(false);
    let fx = run(&mut app, "/auto * BTC,ETH 1000 10");
    assert!(fx.is_empty(), "a standing approval is asked first: {fx:?}");
    assert!(render(&app).contains("without anyone's approval"));
    let fx = yes(&mut app);
    assert!(
        fx.contains(&Effect::GateCreateStanding(GateStandingRequest {
            agent: "*".into(),
            coins: vec!["BTC".into(), "ETH".into()],
            max_notional_usd: 1000.0,
            minutes: 10,
            reason: command::DEFAULT_AUTO_REASON.into(),
        })),
        "{fx:?}"
    );
    let fx = run(&mut app, "/auto revoke 4");
    assert!(fx.contains(&Effect::GateRevokeStanding(4)), "{fx:?}");
    run(&mut app, "/auto");
    assert!(matches!(app.modal(), Some(Modal::Standing { .. })));
}

fn standing() -> Vec<GateStanding> {
    serde_json::from_value(json!([
        {"id": 1, "agent": "*", "coins": ["BTC", "ETH"], "maxNotionalUsd": 1000.0,
         "reason": "quiet market", "createdBy": "supervisor", "createdAt": t0().to_rfc3339(),
         "expiresAt": (t0() + secs(600)).to_rfc3339(), "remainingSecs": 600,
         "approved": [{"id": "gi_0001", "proposalId": "prop_aa11", "kind": "trade",
                       "status": "executed", "notional": 529.3, "createdAt": t0().to_rfc3339()}]},
        {"id": 2, "agent": "demo-agent", "coins": [], "maxNotionalUsd": 250.0,
         "reason": "small ones", "expiresAt": (t0() + secs(3700)).to_rfc3339(), "approved": []},
    ]))
    .unwrap()
}

#[test]
fn guard_detail_verdicts_120x40() {
    let app = guard_app(true);
    let text = render(&app);
    insta::assert_snapshot!("guard_detail_verdicts_120x40", text);
    for needle in ["✓ ok", "! near", "✗ broken", "529.30 / limit 500"] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

#[test]
fn guard_approve_override_step_120x40() {
    let mut app = guard_app(true);
    press(&mut app, 'a');
    app.update(checked(true));
    let before = render(&app);
    assert!(before.contains("Breaks max_notional_usd"), "{before}");
    assert!(before.contains(" o  override: type the coin"), "{before}");
    read(&mut app);
    app.update(key('o'));
    type_slowly(&mut app, "ET");
    app.toasts_mut().clear();
    let text = render(&app);
    insta::assert_snapshot!("guard_approve_override_step_120x40", text);
    assert!(
        text.contains("OVERRIDE max_notional_usd — type ETH then Enter"),
        "{text}"
    );
    assert!(
        text.contains("type ETH to override max_notional_usd: ET▏"),
        "{text}"
    );
}

/// The dialog on a gateway item that breaks a rule, on small screens: the whole keys line shows.
#[test]
fn guard_approve_small_screens() {
    for (w, h) in [(80, 24), (60, 20)] {
        let mut app = guard_app(true);
        app.update(Action::Resize(w, h));
        press(&mut app, 'a');
        app.update(checked(true));
        let text = render(&app);
        insta::assert_snapshot!(format!("guard_approve_broken_{w}x{h}"), text);
        assert!(
            text.lines()
                .any(|l| l.contains(" o  override") && l.contains(" esc  cancel")),
            "{w}x{h}: the keys line is whole\n{text}"
        );
        read(&mut app);
        app.update(key('o'));
        type_slowly(&mut app, "E");
        app.toasts_mut().clear();
        let text = render(&app);
        insta::assert_snapshot!(format!("guard_approve_override_step_{w}x{h}"), text);
        assert!(
            text.lines()
                .any(|l| l.contains("type ETH") && l.contains(" enter ") && l.contains(" esc ")),
            "{w}x{h}: the step's keys line is whole\n{text}"
        );
    }
}

#[test]
fn guard_kill_switch_header_120x40() {
    let mut app = guard_app(false);
    app.update(guard_loaded(kill_on("drill"), Vec::new()));
    let text = render(&app);
    insta::assert_snapshot!("guard_kill_switch_header_120x40", text);
    assert!(text.contains(" KILL SWITCH "), "{text}");
    assert!(text.contains("the kill switch is on (drill)"), "{text}");
}

#[test]
fn guard_standing_list_120x40() {
    let mut app = guard_app(false);
    app.update(guard_loaded(GateKillSwitch::default(), standing()));
    run(&mut app, "/auto");
    app.update(Action::Tick(t0() + secs(75)));
    app.toasts_mut().clear();
    let text = render(&app);
    insta::assert_snapshot!("guard_standing_list_120x40", text);
    for needle in [
        "8:45 left",
        "60:25 left",
        "1 approved",
        "prop_aa11",
        "(529.30 USD)",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

#[test]
fn an_auto_approved_item_shows_executed_by_its_standing_approval() {
    let mut app = seeded_app(120, 40);
    app.inbox_mut().fixture_items().clear();
    let mut g = item(false);
    g.status = crate::api::model::ItemStatus::Executed;
    g.decided_at = Some(t0());
    g.standing_approval = Some(3);
    app.update(loaded(vec![g]));
    let it = app.item(ID).unwrap();
    assert_eq!(
        it.local,
        crate::console::inbox::LocalState::Approved(
            "executed · auto-approved by standing approval 3".into()
        )
    );
    app.update(key('2'));
    let i = app
        .inbox()
        .items()
        .iter()
        .position(|i| i.id() == ID)
        .unwrap();
    app.select(Pane::Inbox, i);
    let text = render(&app);
    assert!(
        text.contains("auto-approved by standing approval 3"),
        "{text}"
    );
}

#[test]
fn kill_and_auto_are_in_the_catalog_and_complete() {
    assert!(command::COMMANDS.iter().any(|c| c.name == "kill"));
    assert!(command::COMMANDS.iter().any(|c| c.name == "auto"));
    assert!(command::complete("/ki", &[]).contains(&"/kill".to_string()));
    assert!(command::complete("/au", &[]).contains(&"/auto".to_string()));
}

#[test]
fn the_kill_switch_and_standing_approvals_are_polled_with_the_gate_feed() {
    let mut app = guard_app(false);
    let mut polled = Vec::new();
    for s in 1..=120 {
        let fx = app.update(Action::Tick(t0() + secs(s)));
        if polls_gate(&fx) {
            polled = fx;
            break;
        }
    }
    assert!(polled.contains(&Effect::FetchGuard), "{polled:?}");
    app.update(guard_loaded(GateKillSwitch::default(), standing()));
    assert_eq!(app.gate().standing().len(), 2);
    run(&mut app, "/auto");
    assert!(matches!(app.modal(), Some(Modal::Standing { .. })));
    app.update(code(KeyCode::Esc));
    assert!(app.modal().is_none());
}

#[test]
fn the_guard_is_asked_every_five_seconds_and_at_once_after_this_consoles_kill_switch_change() {
    let mut app = guard_app(false);
    let mut asked = Vec::new();
    let poll = |app: &mut App, s: i64, asked: &mut Vec<i64>| {
        let fx = app.update(Action::Tick(t0() + secs(s)));
        assert!(polls_gate(&fx), "the inbox every second, at {s}: {fx:?}");
        let mut answer = loaded(vec![item(false)]);
        if let Action::Answered { at, .. } = &mut answer {
            *at = t0() + secs(s);
        }
        app.update(answer);
        if fx.contains(&Effect::FetchGuard) {
            asked.push(s);
            app.update(guard_loaded(GateKillSwitch::default(), Vec::new()));
        }
    };
    for s in 1..=12 {
        poll(&mut app, s, &mut asked);
    }
    assert_eq!(asked, [1, 6, 11]);

    run(&mut app, "/kill drill");
    let fx = yes(&mut app);
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::GateSetKill { on: true, .. }))
    );
    let fx = app.update(Action::answered(
        t0() + secs(12),
        LATENCY,
        Answer::KillSwitchSet {
            on: true,
            result: Ok(kill_on("drill")),
        },
    ));
    assert!(
        polls_gate(&fx) && fx.contains(&Effect::FetchGuard),
        "asked at once after the change, not 5 s later: {fx:?}"
    );
}
