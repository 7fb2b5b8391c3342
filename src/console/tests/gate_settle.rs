//! The console on a supervision gateway, continued: this console's own tool calls approved or
//! rejected through the gateway's copy, and approvals whose answer never came settled by the
//! gateway's inbox rather than journaled as failures.

use super::fixtures::*;
use super::gate::{
    DEMO_ID, MINE_ID, approve_demo, decided, demo_item, executed_demo, gate_app, gate_item,
    gate_loaded, trade, two_agents,
};
use crate::api::ApiError;
use crate::api::model::GateItem;
use crate::console::action::{Action, Effect};
use crate::console::app::App;
use crate::console::inbox::{LocalState, Source, Status};
use crate::console::modal::Modal;
use serde_json::json;
/// A mutate tool this console called through the gateway: the gateway captured its token.
fn tool_item(own: &str, status: &str) -> GateItem {
    serde_json::from_value(json!({
        "id": "gi_tool0001",
        "agent": own,
        "agentFingerprint": own,
        "account": "1817426543",
        "kind": "tool:service_place_order",
        "status": status,
        "request": {"name": "service_place_order",
                    "args": {"coin": "ETH", "side": "buy", "size": 0.1}},
        "preview": {"operation": "place_order"},
        "expiresAt": (t0() + secs(60)).to_rfc3339(),
        "createdAt": t0().to_rfc3339(),
    }))
    .unwrap()
}

#[test]
fn a_tool_call_of_this_console_is_approved_through_the_gateways_copy() {
    let mut app = gate_app(120, 40);
    let own = app.service.key_fingerprint.clone();
    let mut fx = Vec::new();
    let id = app
        .add_tool_approval(
            "service_place_order",
            &json!({"coin": "ETH", "side": "buy", "size": 0.1}),
            &json!({"confirmToken": "ct_secret", "expiresAt": (t0() + secs(60)).to_rfc3339(),
                    "summary": "service_place_order will buy 0.1 ETH"}),
            Source::Console,
            &mut fx,
        )
        .unwrap();
    assert_eq!(id, "tool-1");
    app.select_proposal(crate::console::layout::Pane::Inbox, "tool-1");
    // Not listed by the gateway yet: y sends no token (the gateway would refuse it with 403
    // human_approval_required), says why, and asks the gateway now.
    app.update(key('a'));
    let fx = yes(&mut app);
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::ExecuteTool { .. })),
        "{fx:?}"
    );
    assert_eq!(app.item("tool-1").unwrap().status(app.now), Status::Staged);
    let last = &app.toasts.last().unwrap().text;
    assert!(last.contains("has not listed it yet"), "{last}");
    // The gateway lists it: one item, the gateway's, still showing what the tool will do.
    let (mut items, agents) = two_agents();
    items.push(tool_item(&own, "pending"));
    app.update(gate_loaded(items, agents.clone(), t0() + secs(2)));
    assert!(app.item("tool-1").is_none());
    let item = app.item("gi_tool0001").expect("the gateway's copy");
    assert_eq!(item.source, Source::Gateway);
    assert_eq!(item.describe(), "service_place_order will buy 0.1 ETH");
    assert_eq!(app.inbox.iter().filter(|i| i.tool.is_some()).count(), 1);
    assert_eq!(app.gate.agent_label("gi_tool0001", &own), "this console");
    // Approved through the supervisor API; the token never leaves for the gateway again.
    app.select_proposal(crate::console::layout::Pane::Inbox, "gi_tool0001");
    app.update(key('a'));
    assert!(matches!(&app.modal, Some(Modal::Approve(d)) if d.id == "gi_tool0001"));
    assert_eq!(
        yes(&mut app),
        vec![Effect::GateApprove("gi_tool0001".into())]
    );
    let mut done = tool_item(&own, "executed");
    done.result = Some(json!({"status": 200, "body": {"success": true,
        "result": {"status": "filled", "oid": 4242}}}));
    app.update(decided("gi_tool0001", true, Ok(done)));
    assert_eq!(
        app.item("gi_tool0001").unwrap().status(app.now),
        Status::Executed
    );
    assert_eq!(app.decisions[0].proposal_id, "gi_tool0001");
    // What the tool's operation answered, not the wrapper around it.
    assert_eq!(app.decisions[0].result, "executed: oid 4242");
}

#[test]
fn a_tool_call_of_this_console_is_rejected_on_the_gateway() {
    let mut app = gate_app(120, 40);
    let own = app.service.key_fingerprint.clone();
    let mut fx = Vec::new();
    app.add_tool_approval(
        "service_place_order",
        &json!({"coin": "ETH", "side": "buy", "size": 0.1}),
        &json!({"confirmToken": "ct_secret", "expiresAt": (t0() + secs(60)).to_rfc3339()}),
        Source::Console,
        &mut fx,
    );
    let (mut items, agents) = two_agents();
    items.push(tool_item(&own, "pending"));
    app.update(gate_loaded(items, agents, t0() + secs(2)));
    app.select_proposal(crate::console::layout::Pane::Inbox, "gi_tool0001");
    app.update(key('x'));
    let fx = app.update(key('y'));
    assert_eq!(
        fx,
        vec![Effect::GateReject {
            id: "gi_tool0001".into(),
            reason: crate::console::gate::DEFAULT_REJECT_REASON.into()
        }]
    );
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
    assert!(app.decisions.is_empty(), "{:?}", app.decisions);
    assert_eq!(app.item(DEMO_ID).unwrap().status(app.now), Status::Staged);
    let (mut items, agents) = two_agents();
    items[0] = executed_demo();
    app.update(gate_loaded(items.clone(), agents.clone(), t0() + secs(6)));
    assert_eq!(app.item(DEMO_ID).unwrap().status(app.now), Status::Executed);
    assert_eq!(app.decisions.len(), 1);
    assert_eq!(
        app.decisions[0].kind,
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
    approve_demo(&mut app);
    app.update(decided(DEMO_ID, true, Ok(executed_demo())));
    app.update(gate_loaded(items, agents, t0() + secs(8)));
    assert_eq!(app.decisions.len(), 1, "{:?}", app.decisions);
    assert_eq!(
        app.decisions[0].kind,
        crate::console::inbox::DecisionKind::Approved
    );
}

/// On a gateway the upstream's proposals list is not polled (the gateway's inbox holds what can be
/// approved there), and the loop is not woken for it: a feed skipped by the scheduler but still
/// waited for kept the idle console spinning at 7 % of a core.
#[test]
fn on_a_gateway_the_upstream_proposals_are_not_polled_nor_waited_for() {
    use crate::console::action::Resource;
    let mut app = gate_app(120, 40);
    for s in [10, 20, 30] {
        let at = t0() + secs(s);
        let fx = app.update(Action::Tick(at));
        assert!(!fx.contains(&Effect::Fetch(Resource::Proposals)), "{fx:?}");
        assert!(
            app.next_wakeup() > at,
            "the loop would wake at once: {}",
            app.next_wakeup()
        );
    }
}

fn expired_demo(approved: bool) -> GateItem {
    let mut gone = demo_item("expired");
    // As the gateway answers: an expiry stamps decidedAt; an approval also names who decided.
    gone.decided_at = Some(t0() + secs(300));
    gone.decided_by = approved.then(|| "token 1".to_string());
    gone
}

/// An approve that got no answer never reached the gateway: the item expires pending there (or the
/// supervisor rejects it). Nothing says an approval happened, and nothing says it failed.
#[test]
fn an_unanswered_approval_that_never_landed_is_not_journaled_as_a_failed_approval() {
    use crate::console::inbox::DecisionKind;
    let mut app = gate_app(120, 40);
    approve_demo(&mut app);
    app.update(decided(
        DEMO_ID,
        true,
        Err(ApiError::Transport("connection refused".into())),
    ));
    let (mut items, agents) = two_agents();
    items[0] = expired_demo(false);
    app.update(gate_loaded(items, agents, t0() + secs(400)));
    assert!(
        app.decisions.iter().all(|d| d.kind != DecisionKind::Failed),
        "{:?}",
        app.decisions
    );
    assert!(app.gate.awaiting.is_empty());

    let mut app = gate_app(120, 40);
    approve_demo(&mut app);
    app.update(decided(
        DEMO_ID,
        true,
        Err(ApiError::Transport("connection refused".into())),
    ));
    let mut rejected = demo_item("rejected");
    rejected.reason = Some("changed my mind".into());
    app.update(decided(DEMO_ID, false, Ok(rejected.clone())));
    let (mut items, agents) = two_agents();
    items[0] = rejected;
    app.update(gate_loaded(items, agents, t0() + secs(8)));
    let kinds: Vec<_> = app.decisions.iter().map(|d| d.kind).collect();
    assert_eq!(kinds, vec![DecisionKind::Rejected], "{:?}", app.decisions);
}

/// Approved, then expired on the gateway before it ran (it waited for the agent's key or a rate
/// limit): the row says it did not execute, not "approved".
#[test]
fn an_approved_item_that_expired_on_the_gateway_is_shown_not_executed() {
    let mut app = gate_app(120, 40);
    approve_demo(&mut app);
    let mut waiting = expired_demo(true);
    waiting.status = "approved".into();
    waiting.note = Some("waiting for the agent to reconnect".into());
    app.update(decided(DEMO_ID, true, Ok(waiting)));
    assert_eq!(app.item(DEMO_ID).unwrap().status(app.now), Status::Approved);
    let (mut items, agents) = two_agents();
    items[0] = expired_demo(true);
    app.update(gate_loaded(items, agents, t0() + secs(400)));
    let item = app.item(DEMO_ID).unwrap();
    assert_ne!(item.status(app.now), Status::Approved, "{:?}", item.local);
    assert!(
        matches!(&item.local, LocalState::Failed(t) if t.contains("expired")),
        "{:?}",
        item.local
    );
}

/// An earlier call with the same tool and arguments (executed, or from before a restart) is not
/// this console's waiting call: only a pending item made since the call is taken as its copy.
#[test]
fn a_tool_call_is_not_taken_for_an_earlier_gateway_item_with_the_same_arguments() {
    let mut app = gate_app(120, 40);
    let own = app.service.key_fingerprint.clone();
    app.update(Action::Tick(t0() + secs(600)));
    let mut fx = Vec::new();
    app.add_tool_approval(
        "service_place_order",
        &json!({"coin": "ETH", "side": "buy", "size": 0.1}),
        &json!({"confirmToken": "ct_secret", "expiresAt": (t0() + secs(900)).to_rfc3339(),
                "summary": "service_place_order will buy 0.1 ETH"}),
        Source::Console,
        &mut fx,
    )
    .unwrap();
    let (mut items, agents) = two_agents();
    // Executed ten minutes ago, and pending but made ten minutes before this call.
    items.push(tool_item(&own, "executed"));
    let mut old_pending = tool_item(&own, "pending");
    old_pending.id = "gi_tool0002".into();
    items.push(old_pending);
    app.update(gate_loaded(items, agents, t0() + secs(601)));
    let mine = app.item("tool-1").expect("still this console's own item");
    assert_eq!(mine.source, Source::Console);
    assert_eq!(mine.status(app.now), Status::Staged);
}

/// A deployment behind the gateway lists no proposals, but the inbox on a gateway is the gateway's:
/// its title must not say it shows only this console's stagings.
#[test]
fn on_a_gateway_the_inbox_title_does_not_say_it_shows_only_this_consoles() {
    use crate::console::action::Resource;
    let mut app = gate_app(120, 40);
    app.feeds.get_mut(&Resource::Proposals).unwrap().supported = false;
    let text = render(&app);
    assert!(!text.contains("this service lists no proposals"), "{text}");
}

#[test]
fn a_rejection_on_a_gateway_is_asked_first_and_u_never_claims_to_undo_it() {
    let mut app = gate_app(120, 40);
    let i = app.inbox.iter().position(|i| i.id() == DEMO_ID).unwrap();
    app.selected.insert(crate::console::layout::Pane::Inbox, i);
    let fx = app.update(key('x'));
    assert!(
        fx.is_empty(),
        "nothing is sent before the supervisor says y: {fx:?}"
    );
    assert!(
        render(&app).contains("final"),
        "the dialog says it is final"
    );
    app.update(key('y'));
    let mut rejected = demo_item("rejected");
    rejected.reason = Some(crate::console::gate::DEFAULT_REJECT_REASON.into());
    rejected.decided_by = Some("supervisor".into());
    app.update(decided(DEMO_ID, false, Ok(rejected.clone())));
    assert_eq!(app.item(DEMO_ID).unwrap().status(app.now), Status::Rejected);
    let decisions = app.decisions.len();
    assert!(!app.can_undo(), "the footer does not offer u");
    let fx = app.update(key('u'));
    assert!(journal_lines(&fx).is_empty(), "nothing journaled: {fx:?}");
    assert_eq!(app.decisions.len(), decisions);
    assert_eq!(app.item(DEMO_ID).unwrap().status(app.now), Status::Rejected);
    let toast = &app.toasts.last().unwrap().text;
    assert!(
        toast.contains("final") && !toast.contains("Restored"),
        "{toast}"
    );
    // A poll does not change that either.
    let (mut items, agents) = two_agents();
    items[0] = rejected;
    app.update(gate_loaded(items, agents, t0() + secs(8)));
    app.update(key('u'));
    assert_eq!(app.item(DEMO_ID).unwrap().status(app.now), Status::Rejected);
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
    assert!(app.decisions.is_empty(), "not failed: {:?}", app.decisions);
    let said = toast_texts(&app).join("\n");
    assert!(!said.contains("Approving again is safe"), "{said}");
    assert!(said.contains("gateway"), "{said}");
    // The gateway keeps it approved while it asks the service again.
    let mut open = demo_item("approved");
    open.note = Some("outcome unknown, asking the service again (upstream_timeout: …)".into());
    let (mut items, agents) = two_agents();
    items[0] = open;
    app.update(gate_loaded(items, agents.clone(), t0() + secs(7)));
    assert_eq!(app.item(DEMO_ID).unwrap().status(app.now), Status::Approved);
    app.toasts.clear();
    app.update(key('a'));
    assert!(app.modal.is_none());
    let toast = &app.toasts.last().unwrap().text;
    assert!(
        toast.contains("the gateway runs it") && toast.contains("outcome unknown"),
        "{toast}"
    );
    assert!(!toast.contains("can no longer be approved"), "{toast}");
    // Then the gateway knows: executed, journaled once as such.
    let (mut items, _) = two_agents();
    items[0] = executed_demo();
    let fx = app.update(gate_loaded(items, agents, t0() + secs(9)));
    assert_eq!(app.item(DEMO_ID).unwrap().status(app.now), Status::Executed);
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
    let i = app.inbox.iter().position(|i| i.id() == DEMO_ID).unwrap();
    app.selected.insert(crate::console::layout::Pane::Inbox, i);
    app.update(key('a'));
    assert!(app.modal.is_none(), "{:?}", app.modal);
    let toast = &app.toasts.last().unwrap().text;
    assert!(toast.contains("cannot be approved"), "{toast}");
    app.toasts.clear();
    let text = render(&app);
    assert!(text.contains("nobody may approve it"), "{text}");
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
    let i = app.inbox.iter().position(|i| i.id() == DEMO_ID).unwrap();
    app.selected.insert(crate::console::layout::Pane::Inbox, i);
    app.toasts.clear();
    let detail = render(&app);
    assert!(detail.contains("Will execute"), "{detail}");
    assert!(detail.contains("the service's preview"), "{detail}");
    assert!(detail.contains("request ≠ preview: size"), "{detail}");
    app.update(key('a'));
    let lines: Vec<String> = crate::console::tabs::proposals::view::approve_body_lines(
        &app,
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
    let toast = &app.toasts.last().unwrap().text;
    assert!(
        toast.contains("Refused by policy") && toast.contains("stop loss is required"),
        "{toast}"
    );
    // Once.
    app.toasts.clear();
    app.update(gate_loaded(items, agents, t0() + secs(3)));
    assert!(app.toasts.is_empty(), "{:?}", toast_texts(&app));
    app.select_proposal(crate::console::layout::Pane::Inbox, "prop_5109aa000000beef");
    let text = render(&app);
    assert!(text.contains("Refused by policy at staging"), "{text}");
}

#[test]
fn items_staged_before_the_console_started_are_not_announced_with_the_bell() {
    let mut app = seeded_app(120, 40);
    app.inbox.clear();
    app.started_at = t0() + secs(60);
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
    app.toasts.clear();
    app.update(gate_loaded(items, agents, t0() + secs(5)));
    assert!(app.toasts.is_empty(), "said once: {:?}", toast_texts(&app));

    // An override is journaled and shown with the rules it overrode.
    app.gate
        .overridden
        .insert(MINE_ID.into(), vec!["max_notional_usd".into()]);
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
    app.service.sandbox = false;
    approve_dialog_open(&mut app);
    let live = render(&app);
    assert!(live.contains("LIVE — Approve proposal"), "{live}");
    app.service.sandbox = true;
    let paper = render(&app);
    assert!(!paper.contains("LIVE"), "{paper}");
}

fn approve_dialog_open(app: &mut App) {
    let i = app.inbox.iter().position(|i| i.id() == DEMO_ID).unwrap();
    app.selected.insert(crate::console::layout::Pane::Inbox, i);
    app.update(key('a'));
    assert!(matches!(app.modal, Some(Modal::Approve(_))));
    app.toasts.clear();
}
