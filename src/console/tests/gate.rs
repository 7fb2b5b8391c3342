//! The console on a supervision gateway: detection (a 404 from `/gate/v1` means no gateway), every
//! agent's items with an Agent column, the `/agent` filter, approve and reject through the
//! supervisor API with their answers (a 403 policy_violation shown and the item left approvable),
//! and the GATE badge.

use super::fixtures::*;
use crate::api::ApiError;
use crate::api::model::{GateAgent, GateAgents, GateDecision, GateInbox, GateItem};
use crate::console::action::{Action, Answer, Effect};
use crate::console::app::App;
use crate::console::gate::{ConnectInfo, Detected};
use crate::console::inbox::{LocalState, Source, Status};
use crate::console::modal::Modal;
use crate::console::tab::Tab;
use crossterm::event::KeyCode;
use serde_json::json;

pub(super) const DEMO_ID: &str = "prop_de0a9e17c2b44f01";
pub(super) const MINE_ID: &str = "prop_77aa01b2c3d4e5f6";

pub(super) fn gate_item(
    id: &str,
    agent: &str,
    fp: &str,
    status: &str,
    preview: serde_json::Value,
) -> GateItem {
    serde_json::from_value(json!({
        "id": format!("gi_{}", &id[5..13]),
        "agent": agent,
        "agentFingerprint": fp,
        "account": "1817426543",
        "kind": "trade",
        "status": status,
        "proposalId": id,
        // What the agent sent, consistent with what the service previewed.
        "request": {"a": format!("{}USDT", preview["coin"].as_str().unwrap_or("BTC")),
                    "d": preview["direction"], "size": preview["size"],
                    "leverage": preview["leverage"]},
        "preview": preview,
        "expiresAt": (t0() + LIFETIME).to_rfc3339(),
        "createdAt": t0().to_rfc3339(),
    }))
    .unwrap()
}

pub(super) fn trade(coin: &str, direction: &str, size: f64, lev: u32) -> serde_json::Value {
    let mark = if coin == "ETH" { 3210.0 } else { 65000.0 };
    json!({"kind": "trade", "exchange": "venue", "coin": coin, "direction": direction,
           "orderType": "market", "size": size, "markPx": mark, "notional": size * mark,
           "leverage": lev, "margin": size * mark / lev as f64})
}

pub(super) fn agent(name: &str, fp: &str, pending: u64) -> GateAgent {
    serde_json::from_value(json!({
        "agent": name, "fingerprint": fp, "name": name, "account": "1817426543",
        "connected": true, "pending": pending,
    }))
    .unwrap()
}

pub(super) fn two_agents() -> (Vec<GateItem>, Vec<GateAgent>) {
    (
        vec![
            demo_item("pending"),
            gate_item(
                MINE_ID,
                "9f8e7d6c",
                "9f8e7d6c",
                "pending",
                trade("BTC", "short", 0.01, 3),
            ),
        ],
        vec![
            agent("demo-agent", "a1b2c3d4", 1),
            agent("9f8e7d6c", "9f8e7d6c", 1),
        ],
    )
}

pub(super) fn gate_loaded(
    items: Vec<GateItem>,
    agents: Vec<GateAgent>,
    at: chrono::DateTime<chrono::Utc>,
) -> Action {
    Action::answered(
        at,
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
                    agents,
                }),
            ))),
        },
    )
}

pub(super) fn decided(id: &str, approve: bool, result: Result<GateItem, ApiError>) -> Action {
    Action::answered(
        t0() + secs(5),
        LATENCY,
        Answer::GateDecided {
            id: id.into(),
            approve,
            result: result.map(|item| Box::new(GateDecision { item })),
        },
    )
}

/// A console on a gateway with two agents' pending items, on the Proposals tab.
pub(super) fn gate_app(width: u16, height: u16) -> App {
    let mut app = seeded_app(width, height);
    app.inbox_mut().fixture_clear();
    let (items, agents) = two_agents();
    app.update(gate_loaded(items, agents, t0()));
    app.update(key('2'));
    app.toasts_mut().clear();
    app
}

#[test]
fn a_gateway_answer_lists_every_agents_items_with_their_agent() {
    let app = gate_app(120, 40);
    assert_eq!(app.gate().detected(), Detected::Yes);
    assert_eq!(app.inbox().items().len(), 2);
    assert!(
        app.inbox()
            .items()
            .iter()
            .all(|i| i.source == Source::Gateway)
    );
    assert_eq!(app.gate().agent_of(DEMO_ID), Some("demo-agent"));
    assert_eq!(app.item(DEMO_ID).unwrap().describe(), "long 0.25 ETH 2x");
    let text = render(&app);
    assert!(text.contains(" GATE "), "{text}");
    let row = text.lines().find(|l| l.contains("0.25 ETH")).unwrap();
    assert!(row.contains("demo-agent"), "{row}");
}

#[test]
fn a_service_without_gate_v1_is_asked_once() {
    for answer in [
        ApiError::NotFound {
            code: "not_found".into(),
            message: "no route".into(),
        },
        // A deployment that answers unknown paths with a web page.
        ApiError::Decode("body is not JSON: expected value at line 1".into()),
    ] {
        let mut app = app_with(quiet_options());
        let fx = app.update(Action::Tick(t0()));
        assert!(polls_gate(&fx), "{fx:?}");
        app.update(Action::answered(
            t0(),
            LATENCY,
            Answer::GateLoaded {
                result: Err(answer.clone()),
            },
        ));
        assert_eq!(app.gate().detected(), Detected::No, "{answer:?}");
        app.refresh();
        let fx = app.update(Action::Tick(t0() + secs(7200)));
        assert!(!polls_gate(&fx), "{fx:?}");
        assert!(!render(&app).contains("GATE"));
    }
}

#[test]
fn a_gateway_not_answering_yet_is_asked_again() {
    let mut app = app_with(quiet_options());
    app.update(Action::Tick(t0()));
    app.update(Action::answered(
        t0(),
        LATENCY,
        Answer::GateLoaded {
            result: Err(ApiError::Transport("connection refused".into())),
        },
    ));
    assert_eq!(app.gate().detected(), Detected::Unknown);
    let fx = app.update(Action::Tick(t0() + secs(60)));
    assert!(polls_gate(&fx), "{fx:?}");
}

#[test]
fn a_gateway_that_refuses_the_token_says_so_in_the_header() {
    let mut app = seeded_app(120, 40);
    app.update(Action::answered(
        t0(),
        LATENCY,
        Answer::GateLoaded {
            result: Err(ApiError::Unauthorized {
                message: "x-api-key is not a supervisor token of this gateway".into(),
            }),
        },
    ));
    assert_eq!(app.gate().detected(), Detected::Yes);
    // The account feeds keep going: only /gate/v1 wants the token.
    assert!(app.auth_failed().is_none());
    let text = render(&app);
    assert!(text.contains("GATE: no supervisor token"), "{text}");
}

#[test]
fn approve_goes_through_the_supervisor_api_and_shows_the_execution() {
    let mut app = gate_app(120, 40);
    select_row(&mut app, DEMO_ID);
    press(&mut app, 'a');
    assert!(matches!(app.modal(), Some(Modal::Approve(d)) if d.id == DEMO_ID));
    let fx = yes(&mut app);
    assert_eq!(fx, vec![Effect::GateApprove(DEMO_ID.into())]);
    assert_eq!(
        app.item(DEMO_ID).unwrap().status(app.now()),
        Status::Confirming
    );

    let mut done = demo_item("executed");
    done.result = Some(
        json!({"status": 200, "body": {"success": true, "status": "executed",
        "execution": {"fills": [{"coin": "ETH", "side": "B", "sz": "0.25", "px": "2117.2", "oid": 100000000}]}}}),
    );
    app.update(decided(DEMO_ID, true, Ok(done)));
    let item = app.item(DEMO_ID).unwrap();
    assert_eq!(
        item.local,
        LocalState::Approved("bought 0.25 ETH at 2,117.2 (oid 100000000)".into())
    );
    assert_eq!(app.inbox().decisions()[0].proposal_id, DEMO_ID);
    assert_eq!(
        app.inbox().decisions()[0].result,
        "executed: bought 0.25 ETH at 2,117.2 (oid 100000000)"
    );
    // The gateway executed it: the row says so, not merely "approved".
    assert_eq!(
        app.item(DEMO_ID).unwrap().status(app.now()),
        Status::Executed
    );
    // A later poll that still says executed keeps the outcome.
    let (items, agents) = two_agents();
    let mut items = items;
    items[0].status = crate::api::model::ItemStatus::Executed;
    app.update(gate_loaded(items, agents, t0() + secs(6)));
    assert_eq!(
        app.item(DEMO_ID).unwrap().status(app.now()),
        Status::Executed
    );
    let row = render(&app)
        .lines()
        .find(|l| l.contains("0.25 ETH 2x"))
        .unwrap()
        .to_string();
    assert!(row.contains("executed"), "{row}");
}

/// Behind a gateway, a service answering in the deployment's shape (`result.response.data
/// .statuses`, the staged request and proposal beside it): the outcome names the fill, as it
/// does when the console confirms directly, never the answer's raw fields.
#[test]
fn an_execution_in_the_deployments_shape_is_told_as_its_fills() {
    let mut app = gate_app(120, 40);
    app.select_proposal(crate::console::layout::Pane::Inbox, DEMO_ID);
    press(&mut app, 'a');
    assert_eq!(yes(&mut app), vec![Effect::GateApprove(DEMO_ID.into())]);
    let mut done = demo_item("executed");
    done.result = Some(json!({"status": 200, "body": {"success": true,
        "result": {"status": "ok", "response": {"type": "order", "data": {"statuses": [
            {"filled": {"totalSz": "0.25", "avgPx": "2117.2", "oid": 90001}}]}}},
        "request": {"coin": "ETH", "side": "buy", "size": "0.25"},
        "proposal": {"id": DEMO_ID, "status": "executed"}}}));
    app.update(decided(DEMO_ID, true, Ok(done)));
    let result = &app.inbox().decisions()[0].result;
    assert_eq!(result, "executed: filled 0.25 at 2,117.2 (oid 90001)");
}

/// The demo agent's ETH item as the gateway lists it in `status`.
pub(super) fn demo_item(status: &str) -> GateItem {
    gate_item(
        DEMO_ID,
        "demo-agent",
        "a1b2c3d4",
        status,
        trade("ETH", "long", 0.25, 2),
    )
}

pub(super) fn executed_demo() -> GateItem {
    let mut done = demo_item("executed");
    done.result = Some(
        json!({"status": 200, "body": {"success": true, "status": "executed",
        "execution": {"fills": [{"coin": "ETH", "side": "B", "sz": "0.25", "px": "2117.2", "oid": 100000000}]}}}),
    );
    done
}

pub(super) fn approve_demo(app: &mut App) {
    select_row(app, DEMO_ID);
    press(app, 'a');
    assert_eq!(yes(app), vec![Effect::GateApprove(DEMO_ID.into())]);
}

#[test]
fn an_execution_reported_after_the_approval_answer_is_shown_and_journaled() {
    let mut app = gate_app(120, 40);
    approve_demo(&mut app);
    // The gateway approved it but does not hold the agent's key yet.
    let mut waiting = demo_item("approved");
    waiting.note = Some("waiting for the agent to reconnect".into());
    app.update(decided(DEMO_ID, true, Ok(waiting.clone())));
    assert_eq!(
        app.item(DEMO_ID).unwrap().status(app.now()),
        Status::Approved
    );
    assert!(
        app.inbox().decisions()[0]
            .result
            .contains("waiting for the agent")
    );
    let decisions = app.inbox().decisions().len();
    // The inbox is asked again at once after the answer, and soon while it has not run.
    let fx = app.update(Action::Tick(t0() + secs(5)));
    assert!(polls_gate(&fx), "{fx:?}");
    let (mut items, agents) = two_agents();
    items[0] = waiting;
    app.update(gate_loaded(items, agents.clone(), t0() + secs(5)));
    assert_eq!(
        app.inbox().decisions().len(),
        decisions,
        "nothing new to journal"
    );
    let fx = app.update(Action::Tick(t0() + secs(6)));
    assert!(polls_gate(&fx), "{fx:?}");
    // The agent came back: the gateway executed it.
    let (mut items, _) = two_agents();
    items[0] = executed_demo();
    let fx = app.update(gate_loaded(items.clone(), agents.clone(), t0() + secs(6)));
    let item = app.item(DEMO_ID).unwrap();
    assert_eq!(item.status(app.now()), Status::Executed);
    assert_eq!(
        item.local,
        LocalState::Approved("bought 0.25 ETH at 2,117.2 (oid 100000000)".into())
    );
    assert_eq!(app.inbox().decisions().len(), decisions + 1);
    let d = &app.inbox().decisions()[0];
    assert_eq!(d.kind, crate::console::inbox::DecisionKind::Executed);
    assert_eq!(
        d.result,
        "executed: bought 0.25 ETH at 2,117.2 (oid 100000000)"
    );
    let journaled = fx
        .iter()
        .find_map(|e| match e {
            Effect::Journal(line) => Some(line.clone()),
            _ => None,
        })
        .expect("the execution is journaled");
    assert!(
        journaled.contains(r#""decision":"executed""#) && journaled.contains("bought 0.25 ETH"),
        "{journaled}"
    );
    let back = crate::console::journal::decision_of(&journaled).expect("read back at start");
    assert_eq!(back.kind, crate::console::inbox::DecisionKind::Executed);
    // Said once: the next poll journals nothing more.
    app.update(gate_loaded(items, agents, t0() + secs(8)));
    assert_eq!(app.inbox().decisions().len(), decisions + 1);
    let text = render(&app);
    let row = text.lines().find(|l| l.contains("0.25 ETH 2x")).unwrap();
    assert!(row.contains("executed"), "{row}");
}

#[test]
fn an_approval_the_service_rate_limited_says_approved_and_when_it_runs() {
    let mut app = gate_app(120, 40);
    approve_demo(&mut app);
    let mut waiting = demo_item("approved");
    waiting.note = Some("rate limited by the service — retry after 2026-06-01T12:00:42Z".into());
    app.update(decided(DEMO_ID, true, Ok(waiting.clone())));
    let said = "approved — rate limited by the service, retry after 12:00:42 UTC";
    let item = app.item(DEMO_ID).unwrap();
    assert_eq!(item.status(app.now()), Status::Approved);
    assert_eq!(item.local, LocalState::Approved(said.into()));
    assert_eq!(app.inbox().decisions()[0].result, said);
    // A poll says the same, rather than leaving the row looking stuck.
    let (mut items, agents) = two_agents();
    items[0] = waiting;
    app.update(gate_loaded(items, agents, t0() + secs(5)));
    assert_eq!(
        app.item(DEMO_ID).unwrap().local,
        LocalState::Approved(said.into())
    );
}

#[test]
fn a_failed_execution_after_the_approval_says_why() {
    let mut app = gate_app(120, 40);
    approve_demo(&mut app);
    let pending = demo_item("executing");
    app.update(decided(DEMO_ID, true, Ok(pending)));
    let (mut items, agents) = two_agents();
    items[0].status = crate::api::model::ItemStatus::Failed;
    items[0].result = Some(json!({"status": 409, "body": {"success": false,
        "error": {"code": "insufficient_margin", "message": "not enough margin for 0.25 ETH"}}}));
    app.update(gate_loaded(items, agents, t0() + secs(7)));
    assert_eq!(app.item(DEMO_ID).unwrap().status(app.now()), Status::Failed);
    let d = &app.inbox().decisions()[0];
    assert_eq!(d.kind, crate::console::inbox::DecisionKind::Failed);
    assert_eq!(d.result, "upstream 409: not enough margin for 0.25 ETH");
}

#[test]
fn a_poll_sent_before_the_approval_answer_does_not_take_the_execution_back() {
    let mut app = gate_app(120, 40);
    app.gate_mut().ask_at(t0() + secs(1));
    let fx = app.update(Action::Tick(t0() + secs(1)));
    assert!(polls_gate(&fx), "{fx:?}");
    approve_demo(&mut app);
    app.update(decided(DEMO_ID, true, Ok(executed_demo())));
    // The poll sent before the approval answers now: it still says pending.
    let (items, agents) = two_agents();
    app.update(gate_loaded(items, agents, t0() + secs(5)));
    assert_eq!(
        app.item(DEMO_ID).unwrap().status(app.now()),
        Status::Executed
    );
    // So it is asked again at once, not after the interval.
    let fx = app.update(Action::Tick(t0() + secs(5)));
    assert!(polls_gate(&fx), "{fx:?}");
}

#[test]
fn a_policy_refusal_is_shown_and_the_item_stays_approvable() {
    let mut app = gate_app(120, 40);
    press(&mut app, 'a');
    let id = match app.modal() {
        Some(Modal::Approve(d)) => d.id.clone(),
        other => panic!("{other:?}"),
    };
    yes(&mut app);
    app.update(decided(
        &id,
        true,
        Err(ApiError::Forbidden {
            code: "policy_violation".into(),
            message: "max_notional_usd: 16250 USD is over the limit of 5000 USD".into(),
        }),
    ));
    let item = app.item(&id).unwrap();
    assert_eq!(
        item.status(app.now()),
        Status::Staged,
        "still pending on the gateway"
    );
    let toast = &app.toasts().last().unwrap().text;
    assert!(
        toast.contains("policy_violation") && toast.contains("max_notional_usd"),
        "{toast}"
    );
    assert!(
        app.inbox().decisions()[0]
            .result
            .contains("refused by the gateway (policy_violation)")
    );
    // The detail panel keeps the reason after the toast is gone.
    app.toasts_mut().clear();
    let i = app
        .inbox()
        .items()
        .iter()
        .position(|i| i.id() == id)
        .unwrap();
    app.select(crate::console::layout::Pane::Inbox, i);
    let text = render(&app);
    let line = text
        .lines()
        .find(|l| l.contains("Refused"))
        .unwrap_or_else(|| panic!("no Refused line\n{text}"));
    assert!(line.contains("policy_violation"), "{line}");
}

#[test]
fn reject_sends_the_reason_and_x_a_default_one() {
    let mut app = gate_app(120, 40);
    let fx = type_text(&mut app, ":");
    assert!(fx.is_empty());
    let fx = type_text(&mut app, &format!("/reject {MINE_ID} too large for a test"));
    assert!(fx.is_empty());
    // A gateway's rejection is final: it is asked first, naming the reason the agent is told.
    let fx = app.update(code(KeyCode::Enter));
    assert!(fx.is_empty(), "{fx:?}");
    assert!(
        matches!(app.modal(), Some(Modal::Confirm(crate::console::modal::Confirm { what: crate::console::modal::Deciding::Reject { id, reason: Some(r) }, .. }))
        if id == MINE_ID && r == "too large for a test")
    );
    let fx = yes(&mut app);
    assert_eq!(
        fx,
        vec![Effect::GateReject {
            id: MINE_ID.into(),
            reason: "too large for a test".into()
        }]
    );
    let mut rejected = gate_item(
        MINE_ID,
        "9f8e7d6c",
        "9f8e7d6c",
        "rejected",
        trade("BTC", "short", 0.01, 3),
    );
    rejected.reason = Some("too large for a test".into());
    app.update(decided(MINE_ID, false, Ok(rejected)));
    assert_eq!(
        app.item(MINE_ID).unwrap().status(app.now()),
        Status::Rejected
    );
    assert!(
        render(&app).contains("too large for a test")
            || app.inbox().decisions()[0].result.contains("too large")
    );

    select_row(&mut app, DEMO_ID);
    let fx = press(&mut app, 'x');
    assert!(fx.is_empty(), "x asks first on a gateway: {fx:?}");
    // Esc keeps it pending; x then y rejects.
    app.update(code(KeyCode::Esc));
    assert!(app.modal().is_none());
    assert_eq!(app.item(DEMO_ID).unwrap().status(app.now()), Status::Staged);
    press(&mut app, 'x');
    let fx = yes(&mut app);
    assert_eq!(
        fx,
        vec![Effect::GateReject {
            id: DEMO_ID.into(),
            reason: crate::console::gate::DEFAULT_REJECT_REASON.into()
        }]
    );
}

#[test]
fn the_agent_filter_shows_one_agents_items_and_survives_polls() {
    let mut app = gate_app(120, 40);
    type_text(&mut app, ":/agent demo-agent");
    app.update(code(KeyCode::Enter));
    assert_eq!(app.gate().filter(), Some("demo-agent"));
    let ids: Vec<&str> = app.inbox().items().iter().map(|i| i.id()).collect();
    assert_eq!(ids, vec![DEMO_ID]);
    // The service's own proposals list and the next gateway poll do not bring the other back.
    app.update(proposals(vec![btc_long(MINE_ID, t0())], t0() + secs(1)));
    let (items, agents) = two_agents();
    app.update(gate_loaded(items, agents, t0() + secs(2)));
    let ids: Vec<&str> = app.inbox().items().iter().map(|i| i.id()).collect();
    assert_eq!(ids, vec![DEMO_ID]);
    // A fingerprint prefix names an agent too; an unknown name is refused, naming the agents.
    type_text(&mut app, ":/agent 9f8e");
    app.update(code(KeyCode::Enter));
    let ids: Vec<&str> = app.inbox().items().iter().map(|i| i.id()).collect();
    assert_eq!(ids, vec![MINE_ID]);
    type_text(&mut app, ":/agent nobody");
    app.update(code(KeyCode::Enter));
    let toast = &app.toasts().last().unwrap().text;
    assert!(
        toast.contains("no agent \"nobody\"") && toast.contains("demo-agent"),
        "{toast}"
    );
    assert_eq!(app.gate().filter(), Some("9f8e"));
    type_text(&mut app, ":/agent all");
    app.update(code(KeyCode::Enter));
    assert_eq!(app.inbox().items().len(), 2);
    assert_eq!(app.tab(), Tab::Proposals);
}

#[test]
fn the_agent_filter_needs_a_gateway() {
    let mut app = seeded_app(120, 40);
    let before = app.inbox().items().len();
    type_text(&mut app, ":/agent demo-agent");
    app.update(code(KeyCode::Enter));
    assert!(app.gate().filter().is_none());
    assert_eq!(app.inbox().items().len(), before);
    assert!(
        app.toasts()
            .last()
            .unwrap()
            .text
            .contains("not on a gateway")
    );
}

// ---- snapshots -----------------------------------------------------------------------------------

#[test]
fn gate_proposals_120x40() {
    let app = gate_app(120, 40);
    let text = render(&app);
    insta::assert_snapshot!("gate_proposals_120x40", text);
    for needle in ["Agent", "demo-agent", "9f8e7d6c", "agent: all", " GATE "] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

#[test]
fn a_160_column_gateway_inbox_keeps_its_tp_sl_column() {
    let app = gate_app(160, 40);
    let text = render(&app);
    let header = text
        .lines()
        .find(|l| l.contains("Time left / status"))
        .expect("the inbox header");
    assert!(header.contains("Agent"), "{header}");
    assert!(header.contains("Limit · TP · SL"), "{header}");
}

#[test]
fn gate_proposals_filtered_120x40() {
    let mut app = gate_app(120, 40);
    type_text(&mut app, ":/agent demo-agent");
    app.update(code(KeyCode::Enter));
    app.toasts_mut().clear();
    let text = render(&app);
    insta::assert_snapshot!("gate_proposals_filtered_120x40", text);
    assert!(text.contains("agent: demo-agent"), "{text}");
    assert!(!text.contains("9f8e7d6c"), "{text}");
}

#[test]
fn connect_panel_in_help_120x40() {
    let mut app = gate_app(120, 40);
    app.gate_mut().set_connect(Some(ConnectInfo {
        base_url: "http://127.0.0.1:8788".into(),
        sandbox_db: "/home/u/.local/share/agentdesk/sandbox.db".into(),
        demo_agent: Some("demo-agent".into()),
    }));
    app.update(key('?'));
    let text = render(&app);
    insta::assert_snapshot!("connect_panel_in_help_120x40", text);
    for needle in [
        "Connect an agent",
        "http://127.0.0.1:8788",
        "agentdesk keys create --db /home/u/.local/share/agentdesk/sandbox.db",
        "--scope mcp:mutate",
        "/api/delegated/propose",
        "--no-demo-agent",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

#[test]
fn what_this_console_staged_through_the_gateway_says_so_in_the_agent_column() {
    let mut app = gate_app(120, 40);
    let own = app.service().key_fingerprint.clone();
    let (mut items, agents) = two_agents();
    items[1].agent = own.clone();
    items[1].agent_fingerprint = own.clone();
    app.update(gate_loaded(items, agents, t0() + secs(1)));
    assert_eq!(app.gate().agent_label(MINE_ID, &own), "this console");
    assert_eq!(app.gate().agent_label(DEMO_ID, &own), "demo-agent");
    let text = render(&app);
    let row = text.lines().find(|l| l.contains("0.01 BTC")).unwrap();
    assert!(row.contains("this console"), "{row}");
}

#[test]
fn gate_approve_dialog_names_the_agent_120x40() {
    let mut app = gate_app(120, 40);
    select_row(&mut app, DEMO_ID);
    press(&mut app, 'a');
    assert!(matches!(app.modal(), Some(Modal::Approve(d)) if d.id == DEMO_ID));
    let body: String = crate::console::tabs::proposals::approve::approve_body_lines(
        &app.inbox_shown(),
        &crate::console::theme::Theme::dark(),
        app.item(DEMO_ID).unwrap(),
    )
    .iter()
    .map(|l| format!("{l}\n"))
    .collect();
    assert!(
        body.contains("proposed by agent demo-agent · account 1817426543"),
        "{body}"
    );
    let text = render(&app);
    insta::assert_snapshot!("gate_approve_dialog_120x40", text);
    assert!(text.contains("proposed by agent demo-agent"), "{text}");
}

/// A mutate tool this console called through the gateway: the gateway captured its token.
pub(super) fn tool_item(own: &str, status: &str) -> GateItem {
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
    let own = app.service().key_fingerprint.clone();
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
    press(&mut app, 'a');
    let fx = yes(&mut app);
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::ExecuteTool { .. })),
        "{fx:?}"
    );
    assert_eq!(
        app.item("tool-1").unwrap().status(app.now()),
        Status::Staged
    );
    let last = &app.toasts().last().unwrap().text;
    assert!(last.contains("has not listed it yet"), "{last}");
    // The gateway lists it: one item, the gateway's, still showing what the tool will do.
    let (mut items, agents) = two_agents();
    items.push(tool_item(&own, "pending"));
    app.update(gate_loaded(items, agents.clone(), t0() + secs(2)));
    assert!(app.item("tool-1").is_none());
    let item = app.item("gi_tool0001").expect("the gateway's copy");
    assert_eq!(item.source, Source::Gateway);
    assert_eq!(item.describe(), "service_place_order will buy 0.1 ETH");
    assert_eq!(
        app.inbox()
            .items()
            .iter()
            .filter(|i| i.tool.is_some())
            .count(),
        1
    );
    assert_eq!(app.gate().agent_label("gi_tool0001", &own), "this console");
    // Approved through the supervisor API; the token never leaves for the gateway again.
    app.select_proposal(crate::console::layout::Pane::Inbox, "gi_tool0001");
    press(&mut app, 'a');
    assert!(matches!(app.modal(), Some(Modal::Approve(d)) if d.id == "gi_tool0001"));
    assert_eq!(
        yes(&mut app),
        vec![Effect::GateApprove("gi_tool0001".into())]
    );
    let mut done = tool_item(&own, "executed");
    done.result = Some(json!({"status": 200, "body": {"success": true,
        "result": {"status": "filled", "oid": 4242}}}));
    app.update(decided("gi_tool0001", true, Ok(done)));
    assert_eq!(
        app.item("gi_tool0001").unwrap().status(app.now()),
        Status::Executed
    );
    assert_eq!(app.inbox().decisions()[0].proposal_id, "gi_tool0001");
    // What the tool's operation answered, not the wrapper around it.
    assert_eq!(app.inbox().decisions()[0].result, "executed: oid 4242");
}

#[test]
fn a_tool_call_of_this_console_is_rejected_on_the_gateway() {
    let mut app = gate_app(120, 40);
    let own = app.service().key_fingerprint.clone();
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
    press(&mut app, 'x');
    let fx = yes(&mut app);
    assert_eq!(
        fx,
        vec![Effect::GateReject {
            id: "gi_tool0001".into(),
            reason: crate::console::gate::DEFAULT_REJECT_REASON.into()
        }]
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

pub(super) fn expired_demo(approved: bool) -> GateItem {
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
        app.inbox()
            .decisions()
            .iter()
            .all(|d| d.kind != DecisionKind::Failed),
        "{:?}",
        app.inbox().decisions()
    );
    assert!(app.gate().awaits_nothing());

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
    let kinds: Vec<_> = app.inbox().decisions().iter().map(|d| d.kind).collect();
    assert_eq!(
        kinds,
        vec![DecisionKind::Rejected],
        "{:?}",
        app.inbox().decisions()
    );
}

/// Approved, then expired on the gateway before it ran (it waited for the agent's key or a rate
/// limit): the row says it did not execute, not "approved".
#[test]
fn an_approved_item_that_expired_on_the_gateway_is_shown_not_executed() {
    let mut app = gate_app(120, 40);
    approve_demo(&mut app);
    let mut waiting = expired_demo(true);
    waiting.status = crate::api::model::ItemStatus::Approved;
    waiting.note = Some("waiting for the agent to reconnect".into());
    app.update(decided(DEMO_ID, true, Ok(waiting)));
    assert_eq!(
        app.item(DEMO_ID).unwrap().status(app.now()),
        Status::Approved
    );
    let (mut items, agents) = two_agents();
    items[0] = expired_demo(true);
    app.update(gate_loaded(items, agents, t0() + secs(400)));
    let item = app.item(DEMO_ID).unwrap();
    assert_ne!(item.status(app.now()), Status::Approved, "{:?}", item.local);
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
    let own = app.service().key_fingerprint.clone();
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
    assert_eq!(mine.status(app.now()), Status::Staged);
}

/// A deployment behind the gateway lists no proposals, but the inbox on a gateway is the gateway's:
/// its title must not say it shows only this console's stagings.
#[test]
fn on_a_gateway_the_inbox_title_does_not_say_it_shows_only_this_consoles() {
    use crate::console::action::Resource;
    let mut app = gate_app(120, 40);
    app.feeds_mut()
        .get_mut(&Resource::Proposals)
        .unwrap()
        .supported = false;
    let text = render(&app);
    assert!(!text.contains("this service lists no proposals"), "{text}");
}
