//! The console's decisions on a gateway (issue "The console a supervisor can trust"): rejection
//! asked first and final, what a timeout leaves and who drives it, items that cannot be judged,
//! the trade that will execute, policy refusals, old items, overrides and standing approvals, and
//! the LIVE dialog.

use super::fixtures::*;
use super::gate::*;
use crate::api::ApiError;
use crate::api::model::ItemStatus;
use crate::console::app::App;
use crate::console::inbox::Status;
use crate::console::modal::Modal;
use serde_json::json;

#[test]
fn a_rejection_on_a_gateway_is_asked_first_and_u_never_claims_to_undo_it() {
    let mut app = gate_app(120, 40);
    select_row(&mut app, DEMO_ID);
    let fx = press(&mut app, 'x');
    assert!(
        fx.is_empty(),
        "nothing is sent before the supervisor says y: {fx:?}"
    );
    assert!(
        render(&app).contains("final"),
        "the dialog says it is final"
    );
    yes(&mut app);
    let mut rejected = demo_item("rejected");
    rejected.reason = Some(crate::console::gate::DEFAULT_REJECT_REASON.into());
    rejected.decided_by = Some("supervisor".into());
    app.update(decided(DEMO_ID, false, Ok(rejected.clone())));
    assert_eq!(
        app.item(DEMO_ID).unwrap().status(app.now()),
        Status::Rejected
    );
    let decisions = app.inbox().decisions().len();
    assert!(!app.can_undo(), "the footer does not offer u");
    let fx = press(&mut app, 'u');
    assert!(journal_lines(&fx).is_empty(), "nothing journaled: {fx:?}");
    assert_eq!(app.inbox().decisions().len(), decisions);
    assert_eq!(
        app.item(DEMO_ID).unwrap().status(app.now()),
        Status::Rejected
    );
    let toast = &app.toasts().last().unwrap().text;
    assert!(
        toast.contains("final") && !toast.contains("Restored"),
        "{toast}"
    );
    // A poll does not change that either.
    let (mut items, agents) = two_agents();
    items[0] = rejected;
    app.update(gate_loaded(items, agents, t0() + secs(8)));
    press(&mut app, 'u');
    assert_eq!(
        app.item(DEMO_ID).unwrap().status(app.now()),
        Status::Rejected
    );
}

#[test]
fn after_a_timeout_the_console_says_truthfully_who_drives_the_approved_item() {
    let mut app = gate_app(120, 40);
    approve_demo(&mut app);
    // The gateway's own wait on the upstream ran out: a 504 upstream_timeout.
    app.update(decided(
        DEMO_ID,
        true,
        Err(ApiError::Server {
            status: 504,
            code: "upstream_timeout".into(),
            message: "the upstream did not answer within 30 s".into(),
        }),
    ));
    assert!(
        app.inbox().decisions().is_empty(),
        "not failed: {:?}",
        app.inbox().decisions()
    );
    let said = toast_texts(&app).join("\n");
    assert!(!said.contains("Approving again is safe"), "{said}");
    assert!(said.contains("gateway"), "{said}");
    // The gateway keeps it approved while it asks the service again.
    let mut open = demo_item("approved");
    open.note = Some("outcome unknown, asking the service again (upstream_timeout: …)".into());
    let (mut items, agents) = two_agents();
    items[0] = open;
    app.update(gate_loaded(items, agents.clone(), t0() + secs(7)));
    assert_eq!(
        app.item(DEMO_ID).unwrap().status(app.now()),
        Status::Approved
    );
    app.toasts_mut().clear();
    press(&mut app, 'a');
    assert!(app.modal().is_none());
    let toast = &app.toasts().last().unwrap().text;
    assert!(
        toast.contains("the gateway runs it") && toast.contains("outcome unknown"),
        "{toast}"
    );
    assert!(!toast.contains("can no longer be approved"), "{toast}");
    // Then the gateway knows: executed, journaled once as such.
    let (mut items, _) = two_agents();
    items[0] = executed_demo();
    let fx = app.update(gate_loaded(items, agents, t0() + secs(9)));
    assert_eq!(
        app.item(DEMO_ID).unwrap().status(app.now()),
        Status::Executed
    );
    let lines = journal_lines(&fx);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["decision"], "executed");
}

#[test]
fn an_item_the_gateway_cannot_judge_is_never_offered_for_approval() {
    let mut app = gate_app(120, 40);
    let (mut items, agents) = two_agents();
    items[0].trade_error = Some("its stored request does not read as propose_trade".into());
    app.update(gate_loaded(items, agents, t0() + secs(1)));
    select_row(&mut app, DEMO_ID);
    press(&mut app, 'a');
    assert!(app.modal().is_none(), "{:?}", app.modal());
    let toast = &app.toasts().last().unwrap().text;
    assert!(toast.contains("cannot be approved"), "{toast}");
    app.toasts_mut().clear();
    let text = render(&app);
    assert!(text.contains("nobody may approve it"), "{text}");
}

/// An item's trade reads as what will execute only while it may still execute (seen on an
/// executed item, whose detail said "Will execute").
#[test]
fn an_executed_or_refused_items_trade_says_what_became_of_it() {
    for (status, label) in [
        ("pending", "Will execute"),
        ("executed", "Executed"),
        ("rejected", "Not executed"),
    ] {
        let mut app = gate_app(120, 40);
        let (mut items, agents) = two_agents();
        items[0].status = crate::api::model::ItemStatus::parse(status).expect("a status");
        items[0].trade = Some(
            serde_json::from_value(json!({"operation": "propose_trade", "coin": "ETH",
                "side": "long", "size": 0.25, "notional": 802.5, "stopLoss": false,
                "pricedBy": "preview"}))
            .unwrap(),
        );
        app.update(gate_loaded(items, agents, t0() + secs(1)));
        select_row(&mut app, DEMO_ID);
        app.toasts_mut().clear();
        let detail = render(&app);
        assert!(
            detail
                .lines()
                .any(|l| l.contains(&format!("│{label} ")) && l.contains("long 0.25 ETH ·")),
            "{status}: {detail}"
        );
        if status != "pending" {
            assert!(!detail.contains("Will execute"), "{status}: {detail}");
        }
    }
}

#[test]
fn the_trade_that_will_execute_is_shown_with_who_priced_it_and_the_differences() {
    let mut app = gate_app(120, 40);
    let (mut items, agents) = two_agents();
    items[0].trade = Some(
        serde_json::from_value(json!({"operation": "propose_trade", "coin": "ETH",
            "side": "long", "size": 0.25, "notional": 802.5, "leverage": 2.0,
            "stopLoss": false, "pricedBy": "preview",
            "disagreements": ["size: request 0.2, preview 0.25"]}))
        .unwrap(),
    );
    app.update(gate_loaded(items, agents, t0() + secs(1)));
    select_row(&mut app, DEMO_ID);
    app.toasts_mut().clear();
    let detail = render(&app);
    assert!(detail.contains("Will execute"), "{detail}");
    assert!(detail.contains("the service's preview"), "{detail}");
    assert!(detail.contains("request ≠ preview: size"), "{detail}");
    press(&mut app, 'a');
    let lines: Vec<String> = crate::console::tabs::proposals::approve::approve_body_lines(
        &app.inbox_shown(),
        &crate::console::theme::Theme::default(),
        app.item(DEMO_ID).unwrap(),
    )
    .iter()
    .map(|l| l.to_string())
    .collect();
    let body = lines.join("\n");
    assert!(
        body.contains("long 0.25 ETH · notional 802.50 USD"),
        "{body}"
    );
    assert!(body.contains("no stop-loss"), "{body}");
}

#[test]
fn a_staging_refused_by_policy_is_said_with_why() {
    let mut app = gate_app(120, 40);
    let (mut items, agents) = two_agents();
    let mut refused = gate_item(
        "prop_5109aa000000beef",
        "demo-agent",
        "a1b2c3d4",
        "rejected",
        trade("BTC", "long", 0.01, 2),
    );
    refused.decided_by = Some("policy".into());
    refused.reason = Some("require_stop_loss: a stop loss is required".into());
    items.push(refused);
    app.update(gate_loaded(items.clone(), agents.clone(), t0() + secs(1)));
    let toast = &app.toasts().last().unwrap().text;
    assert!(
        toast.contains("Refused by policy") && toast.contains("stop loss is required"),
        "{toast}"
    );
    // Once.
    app.toasts_mut().clear();
    app.update(gate_loaded(items, agents, t0() + secs(3)));
    assert!(app.toasts().is_empty(), "{:?}", toast_texts(&app));
    app.select_proposal(crate::console::layout::Pane::Inbox, "prop_5109aa000000beef");
    let text = render(&app);
    assert!(text.contains("Refused by policy at staging"), "{text}");
}

/// One the policy refused on its request has no proposal (nothing went to the service): listed by
/// its item id, said the same way.
#[test]
fn a_staging_refused_on_its_request_has_no_proposal_and_is_said_the_same_way() {
    let mut app = gate_app(120, 40);
    let (mut items, agents) = two_agents();
    let mut refused = gate_item(
        "prop_5109aa000000beef",
        "demo-agent",
        "a1b2c3d4",
        "rejected",
        trade("SOL", "long", 1.0, 2),
    );
    refused.proposal_id = None;
    refused.preview = serde_json::Value::Null;
    refused.decided_by = Some("policy".into());
    refused.reason = Some("allowed_coins: SOL is not allowed".into());
    let id = refused.id.clone();
    items.push(refused);
    app.update(gate_loaded(items, agents, t0() + secs(1)));
    let toast = &app.toasts().last().unwrap().text;
    assert!(
        toast.contains("Refused by policy") && toast.contains("SOL is not allowed"),
        "{toast}"
    );
    app.select_proposal(crate::console::layout::Pane::Inbox, &id);
    let text = render(&app);
    assert!(text.contains("Refused by policy at staging"), "{text}");
}

#[test]
fn items_staged_before_the_console_started_are_not_announced_with_the_bell() {
    let mut app = seeded_app(120, 40);
    app.inbox_mut().fixture_items().clear();
    app.inbox_mut().fixture_started_at(t0() + secs(60));
    let (items, agents) = two_agents();
    let fx = app.update(gate_loaded(items, agents.clone(), t0() + secs(61)));
    assert_eq!(bells(&fx), 0, "{fx:?}");
    let said = toast_texts(&app).join("\n");
    assert!(
        said.contains("2 items staged before this console started"),
        "{said}"
    );
    assert!(!said.contains("New proposal"), "{said}");
    // One staged since rings it.
    let (mut items, _) = two_agents();
    let mut fresh = gate_item(
        "prop_f7e5400000000001",
        "demo-agent",
        "a1b2c3d4",
        "pending",
        trade("BTC", "long", 0.01, 2),
    );
    fresh.created_at = Some(t0() + secs(62));
    items.push(fresh);
    let fx = app.update(gate_loaded(items, agents, t0() + secs(63)));
    assert_eq!(bells(&fx), 1, "{fx:?}");
}

#[test]
fn a_standing_approvals_execution_and_an_override_are_said_as_such() {
    let mut app = gate_app(120, 40);
    let (mut items, agents) = two_agents();
    let mut auto = executed_demo();
    auto.standing_approval = Some(3);
    auto.decided_at = Some(t0() + secs(2));
    items[0] = auto;
    app.update(gate_loaded(items.clone(), agents.clone(), t0() + secs(3)));
    let said = toast_texts(&app).join("\n");
    assert!(
        said.contains("auto-approved") && said.contains("standing approval 3"),
        "{said}"
    );
    app.toasts_mut().clear();
    app.update(gate_loaded(items, agents, t0() + secs(5)));
    assert!(
        app.toasts().is_empty(),
        "said once: {:?}",
        toast_texts(&app)
    );

    // An override is journaled and shown with the rules it overrode.
    app.gate_mut()
        .overriding(MINE_ID, vec!["max_notional_usd".into()]);
    let mut done = gate_item(
        MINE_ID,
        "9f8e7d6c",
        "9f8e7d6c",
        "approved",
        trade("BTC", "short", 0.01, 3),
    );
    done.note = Some("waiting for the agent to reconnect".into());
    let fx = app.update(decided(MINE_ID, true, Ok(done)));
    let lines = journal_lines(&fx);
    assert!(
        lines[0]["result"]
            .as_str()
            .unwrap()
            .starts_with("overriding max_notional_usd"),
        "{lines:?}"
    );
}

#[test]
fn the_approve_dialog_on_a_live_service_says_live() {
    let mut app = gate_app(120, 40);
    app.service_mut().sandbox = false;
    approve_dialog_open(&mut app);
    let live = render(&app);
    assert!(live.contains("LIVE — Approve proposal"), "{live}");
    app.service_mut().sandbox = true;
    let paper = render(&app);
    assert!(!paper.contains("LIVE"), "{paper}");
}

fn approve_dialog_open(app: &mut App) {
    select_row(app, DEMO_ID);
    press(app, 'a');
    assert!(matches!(app.modal(), Some(Modal::Approve(_))));
    app.toasts_mut().clear();
}

#[test]
fn the_header_says_a_tokens_role_when_it_may_not_do_everything() {
    use crate::api::model::{GateAgents, GateInbox, GateSupervisor};
    use crate::console::action::{Action, Answer};
    let mut app = gate_app(120, 40);
    assert!(
        render(&app).contains(" GATE "),
        "an admin's header says GATE alone"
    );
    app.update(Action::answered(
        t0() + secs(3),
        std::time::Duration::from_millis(5),
        Answer::GateLoaded {
            result: Ok(Box::new((
                GateInbox {
                    items: Vec::new(),
                    version: None,
                },
                Some(GateAgents {
                    you: Some(GateSupervisor {
                        label: "vic".into(),
                        role: "viewer".into(),
                    }),
                    gateway: None,
                    agents: Vec::new(),
                }),
            ))),
        },
    ));
    let text = render(&app);
    assert!(text.contains("GATE · viewer"), "{text}");
}

#[test]
fn the_detail_says_how_the_agent_connects() {
    let mut app = gate_app(120, 40);
    let (items, mut agents) = two_agents();
    agents[0].transport = Some("mcp".into());
    agents[0].client_name = Some("claude-code".into());
    agents[0].client_version = Some("1.2.0".into());
    agents[1].transport = Some("rest".into());
    app.update(gate_loaded(items, agents, t0() + secs(3)));
    assert_eq!(
        app.gate().connection_of("demo-agent").as_deref(),
        Some("via MCP (claude-code 1.2.0)")
    );
    assert_eq!(
        app.gate().connection_of("9f8e7d6c").as_deref(),
        Some("via REST")
    );
    let text = render(&app);
    assert!(text.contains("account 1817426543 · via MCP"), "{text}");
}

#[test]
fn a_viewers_console_offers_no_decision_and_says_which_role_would() {
    use crate::api::model::{GateAgents, GateInbox, GateSupervisor};
    use crate::console::action::{Action, Answer};
    let mut app = gate_app(120, 40);
    let (items, agents) = two_agents();
    app.update(Action::answered(
        t0() + secs(3),
        std::time::Duration::from_millis(5),
        Answer::GateLoaded {
            result: Ok(Box::new((
                GateInbox {
                    items,
                    version: None,
                },
                Some(GateAgents {
                    you: Some(GateSupervisor {
                        label: "vic".into(),
                        role: "viewer".into(),
                    }),
                    gateway: None,
                    agents,
                }),
            ))),
        },
    ));
    let text = render(&app);
    assert!(!text.contains("a approve"), "{text}");
    press(&mut app, 'a');
    assert!(app.modal().is_none(), "no dialog for a viewer");
    let said: Vec<String> = app.toasts().iter().map(|t| t.text.clone()).collect();
    assert!(
        said.iter().any(|t| t.contains("needs the approver role")),
        "{said:?}"
    );
}

/// Issue 33: the dialog's paper or live is the header's word. A paper service (whoami says
/// `paperTrading: true`) is never "LIVE — real money" in the dialog.
#[test]
fn the_approve_dialog_on_a_paper_service_says_paper_as_the_header_does() {
    let mut app = gate_app(120, 40);
    app.service_mut().sandbox = false;
    let who = app
        .account_mut()
        .whoami
        .get_or_insert_with(Default::default);
    who.summary
        .get_or_insert_with(Default::default)
        .paper_trading = Some(true);
    approve_dialog_open(&mut app);
    let screen = render(&app);
    assert!(screen.contains(" PAPER "), "the header: {screen}");
    assert!(screen.contains("PAPER — Approve proposal"), "{screen}");
    assert!(!screen.contains("LIVE"), "{screen}");
}

/// Issue 33: `/trade` executes at once, so on a live account it is asked first, with the same
/// guard as every final question; on paper it runs at once.
#[test]
fn trade_on_a_live_account_is_asked_first() {
    use crate::console::action::Effect;
    let mut app = gate_app(120, 40);
    app.service_mut().sandbox = false;
    let fx = type_text(&mut app, ":/trade BTC long 0.001");
    let fx: Vec<_> = fx
        .into_iter()
        .chain(app.update(code(crossterm::event::KeyCode::Enter)))
        .filter(|e| matches!(e, Effect::Trade(_)))
        .collect();
    assert!(fx.is_empty(), "{fx:?}");
    let screen = render(&app);
    assert!(screen.contains("LIVE — execute now?"), "{screen}");
    let fx = yes(&mut app);
    assert!(fx.iter().any(|e| matches!(e, Effect::Trade(_))), "{fx:?}");

    // On the sandbox it runs at once.
    let mut app = gate_app(120, 40);
    let mut fx = type_text(&mut app, ":/trade BTC long 0.001");
    fx.extend(app.update(code(crossterm::event::KeyCode::Enter)));
    assert!(fx.iter().any(|e| matches!(e, Effect::Trade(_))), "{fx:?}");
}

/// Issue 33: `/confirm` of an id the gateway does not list says so.
#[test]
fn confirm_of_an_unknown_id_on_a_gateway_says_so() {
    let mut app = gate_app(120, 40);
    type_text(&mut app, ":/confirm prop_nope");
    app.update(code(crossterm::event::KeyCode::Enter));
    assert!(app.modal().is_none(), "{:?}", app.modal());
    let said = app.command_error().map(str::to_string).unwrap_or_default();
    assert!(said.contains("no item prop_nope"), "{said}");
}

#[test]
fn an_approval_the_gateway_never_answered_is_settled_by_its_inbox_not_journaled_as_failed() {
    // It went through: the next poll shows the execution, journaled once.
    let mut app = gate_app(120, 40);
    approve_demo(&mut app);
    app.update(decided(
        DEMO_ID,
        true,
        Err(ApiError::Transport("connection reset".into())),
    ));
    assert!(
        app.inbox().decisions().is_empty(),
        "{:?}",
        app.inbox().decisions()
    );
    // Until the gateway says, the row stays as the supervisor left it: confirming, not staged
    // again (which read as a lost approval while the gateway was executing it), and not offered
    // for another approval.
    assert_eq!(
        app.item(DEMO_ID).unwrap().status(app.now()),
        Status::Confirming
    );
    let (mut items, agents) = two_agents();
    items[0] = executed_demo();
    app.update(gate_loaded(items.clone(), agents.clone(), t0() + secs(6)));
    assert_eq!(
        app.item(DEMO_ID).unwrap().status(app.now()),
        Status::Executed
    );
    assert_eq!(app.inbox().decisions().len(), 1);
    assert_eq!(
        app.inbox().decisions()[0].kind,
        crate::console::inbox::DecisionKind::Executed
    );

    // It did not: still pending, approved again, executed once, journaled once.
    let mut app = gate_app(120, 40);
    approve_demo(&mut app);
    app.update(decided(
        DEMO_ID,
        true,
        Err(ApiError::Transport("connection refused".into())),
    ));
    let (pending, agents) = two_agents();
    app.update(gate_loaded(pending, agents.clone(), t0() + secs(6)));
    // Its poll says it is undecided there: the supervisor's to decide again.
    assert_eq!(app.item(DEMO_ID).unwrap().status(app.now()), Status::Staged);
    approve_demo(&mut app);
    app.update(decided(DEMO_ID, true, Ok(executed_demo())));
    app.update(gate_loaded(items, agents, t0() + secs(8)));
    assert_eq!(
        app.inbox().decisions().len(),
        1,
        "{:?}",
        app.inbox().decisions()
    );
    assert_eq!(
        app.inbox().decisions()[0].kind,
        crate::console::inbox::DecisionKind::Approved
    );
}

#[test]
fn an_unanswered_approval_the_gateway_is_executing_goes_from_confirming_to_approved() {
    // Seen with the service paused: the gateway claimed the item (executing) and the approve's
    // answer never came; the row went confirming → staged → approved.
    let mut app = gate_app(120, 40);
    approve_demo(&mut app);
    app.update(decided(
        DEMO_ID,
        true,
        Err(ApiError::Transport("operation timed out".into())),
    ));
    assert_eq!(
        app.item(DEMO_ID).unwrap().status(app.now()),
        Status::Confirming
    );
    let (mut items, agents) = two_agents();
    items[0].status = ItemStatus::Executing;
    items[0].decided_by = Some("supervisor".into());
    app.update(gate_loaded(items, agents, t0() + secs(6)));
    assert_eq!(
        app.item(DEMO_ID).unwrap().status(app.now()),
        Status::Approved
    );
    assert!(
        app.inbox().decisions().is_empty(),
        "its outcome is not known yet"
    );
}
