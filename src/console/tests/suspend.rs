//! Agents suspended from the console: `/suspend <agent> <reason>` asks first, as the kill switch
//! does, and only then asks the gateway; `/resume` needs an admin's token; the detail panel says
//! when the agent of the selected item is suspended, by whom and why.

use super::fixtures::*;
use super::gate::{DEMO_ID, gate_app, gate_loaded, two_agents};
use crate::api::ApiError;
use crate::api::model::{GateAgents, GateAgentsChanged, GateInbox, GateSupervisor, GateSuspension};
use crate::console::action::{Action, Answer, Effect};
use crate::console::app::App;
use crate::console::command::{self, Command};
use crate::console::modal::{Confirm, Deciding, Modal};
use crossterm::event::KeyCode;

/// The gate poll's answer, naming this console's token's role.
fn as_role(app: &mut App, role: &str) {
    let (items, agents) = two_agents();
    app.update(Action::answered(
        t0() + secs(3),
        LATENCY,
        Answer::GateLoaded {
            result: Ok(Box::new((
                GateInbox {
                    items,
                    version: None,
                },
                Some(GateAgents {
                    you: Some(GateSupervisor {
                        label: "amy".into(),
                        role: role.into(),
                    }),
                    gateway: None,
                    agents,
                }),
            ))),
        },
    ));
}

fn suspension() -> GateSuspension {
    GateSuspension {
        reason: "retries the same order in a loop".into(),
        by: "amy".into(),
        at: t0(),
    }
}

#[test]
fn suspend_and_resume_parse_and_say_what_is_missing() {
    assert_eq!(
        command::parse("/suspend demo-agent retries the same order").unwrap(),
        Command::Suspend {
            agent: "demo-agent".into(),
            reason: "retries the same order".into()
        }
    );
    assert_eq!(
        command::parse("/resume a1b2c3d4").unwrap(),
        Command::Resume("a1b2c3d4".into())
    );
    for line in ["/suspend demo-agent retries it", "/resume demo-agent"] {
        assert_eq!(command::parse(line).unwrap().to_string(), line);
    }
    let err = command::parse("/suspend demo-agent").unwrap_err();
    assert!(err.message.contains("missing <reason>"), "{err:?}");
    let err = command::parse("/suspend").unwrap_err();
    assert!(err.message.contains("missing <agent>"), "{err:?}");
    let err = command::parse("/suspend ../x why").unwrap_err();
    assert!(err.message.contains("invalid agent"), "{err:?}");
    assert!(command::parse("/resume demo-agent now").is_err());
    assert!(command::complete("/susp", &[]).contains(&"/suspend ".to_string()));
    assert!(command::complete("/resu", &[]).contains(&"/resume ".to_string()));
}

#[test]
fn suspend_asks_first_then_asks_the_gateway() {
    let mut app = gate_app(120, 40);
    let fx = run(
        &mut app,
        "/suspend demo-agent retries the same order in a loop",
    );
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::GateSuspend { .. })),
        "{fx:?}"
    );
    assert!(matches!(
        app.modal(),
        Some(Modal::Confirm(Confirm { what: Deciding::Suspend { agent, .. }, .. })) if agent == "demo-agent"
    ));
    let text = render(&app);
    insta::assert_snapshot!("suspend_dialog_120x40", text);
    assert!(
        text.contains("Suspend demo-agent on the gateway?"),
        "{text}"
    );
    // Esc sends nothing.
    assert!(app.update(code(KeyCode::Esc)).is_empty());
    assert!(app.modal().is_none());
    run(
        &mut app,
        "/suspend demo-agent retries the same order in a loop",
    );
    assert_eq!(
        yes(&mut app),
        vec![Effect::GateSuspend {
            agent: "demo-agent".into(),
            reason: "retries the same order in a loop".into()
        }]
    );
}

#[test]
fn an_approver_suspends_and_only_an_admin_resumes() {
    let mut app = gate_app(120, 40);
    as_role(&mut app, "approver");
    run(&mut app, "/resume demo-agent");
    assert!(app.modal().is_none());
    assert!(
        toasts(&app).contains("needs the admin role"),
        "{}",
        toasts(&app)
    );
    run(&mut app, "/suspend demo-agent loops");
    assert!(matches!(app.modal(), Some(Modal::Confirm(_))));
    app.update(code(KeyCode::Esc));

    as_role(&mut app, "admin");
    run(&mut app, "/resume demo-agent");
    assert!(render(&app).contains("End demo-agent's suspension?"));
    assert_eq!(yes(&mut app), vec![Effect::GateResume("demo-agent".into())]);
}

#[test]
fn a_viewer_is_not_offered_a_suspension_and_a_console_off_a_gateway_says_so() {
    let mut app = gate_app(120, 40);
    as_role(&mut app, "viewer");
    run(&mut app, "/suspend demo-agent loops");
    assert!(app.modal().is_none());
    assert!(
        toasts(&app).contains("needs the approver role"),
        "{}",
        toasts(&app)
    );
    let mut app = seeded_app(120, 40);
    run(&mut app, "/suspend demo-agent loops");
    assert!(app.modal().is_none());
    assert!(toasts(&app).contains("not on a gateway"));
}

#[test]
fn the_gateways_answer_shows_at_once_and_a_refusal_is_said() {
    let mut app = gate_app(120, 40);
    let (_, agents) = two_agents();
    let mut suspended = agents[0].clone();
    suspended.state = crate::api::model::GateAgentState::Suspended;
    suspended.suspension = Some(suspension());
    app.update(Action::answered(
        t0() + secs(4),
        LATENCY,
        Answer::AgentStateSet {
            agent: "demo-agent".into(),
            suspend: true,
            result: Ok(GateAgentsChanged {
                changed: true,
                agents: vec![suspended],
            }),
        },
    ));
    assert_eq!(
        app.gate()
            .suspension_of("demo-agent")
            .map(|s| s.by.as_str()),
        Some("amy")
    );
    assert!(
        toasts(&app).contains("demo-agent suspended"),
        "{}",
        toasts(&app)
    );
    app.update(Action::answered(
        t0() + secs(5),
        LATENCY,
        Answer::AgentStateSet {
            agent: "demo-agent".into(),
            suspend: false,
            result: Err(ApiError::Forbidden {
                code: "insufficient_role".into(),
                message: "resuming a suspended agent needs the admin role".into(),
            }),
        },
    ));
    assert!(
        toasts(&app).contains("demo-agent not resumed"),
        "{}",
        toasts(&app)
    );
    assert!(app.gate().suspension_of("demo-agent").is_some());
}

#[test]
fn suspend_detail_120x40() {
    let mut app = gate_app(120, 40);
    let (items, mut agents) = two_agents();
    agents[0].state = crate::api::model::GateAgentState::Suspended;
    agents[0].suspension = Some(suspension());
    app.update(gate_loaded(items, agents, t0() + secs(3)));
    select_row(&mut app, DEMO_ID);
    let text = render(&app);
    insta::assert_snapshot!("suspend_detail_120x40", text);
    assert!(
        text.contains("by amy at") && text.contains("retries the same order in a"),
        "{text}"
    );
    // The other agent's item says nothing of it.
    assert!(app.gate().suspension_of("9f8e7d6c").is_none());
}

#[test]
fn suspend_agents_panel_120x40() {
    let mut app = gate_app(120, 40);
    let (items, mut agents) = two_agents();
    agents[0].state = crate::api::model::GateAgentState::Suspended;
    agents[0].suspension = Some(suspension());
    agents[1].transport = Some("mcp".into());
    app.update(gate_loaded(items, agents, t0() + secs(3)));
    run(&mut app, "/agents");
    assert!(matches!(app.modal(), Some(Modal::Agents { .. })));
    let text = render(&app);
    insta::assert_snapshot!("suspend_agents_panel_120x40", text);
    let suspended = text.lines().find(|l| l.contains("SUSPENDED")).unwrap();
    assert!(suspended.contains("demo-agent"), "{text}");
    assert!(text.contains("by amy at"), "{text}");
    let active = text.lines().find(|l| l.contains("active ·")).unwrap();
    assert!(
        active.contains("9f8e7d6c") && active.contains("via MCP"),
        "{text}"
    );
    app.update(code(KeyCode::Esc));
    assert!(app.modal().is_none());
    assert_eq!(command::parse("/agents").unwrap(), Command::Agents);
    let mut app = seeded_app(120, 40);
    run(&mut app, "/agents");
    assert!(app.modal().is_none());
    assert!(toasts(&app).contains("not on a gateway"));
}

/// The agents panel's keys only prefill the command line: `s` with the chosen agent and room for
/// the reason, `r` the resume; the suspension is still asked before anything is sent. Today's
/// executions and notional are on each agent's line.
#[test]
fn the_agents_panels_keys_prefill_suspend_and_resume_for_the_chosen_agent() {
    let mut app = gate_app(140, 40);
    let (items, mut agents) = two_agents();
    agents[1].executions_today = 3;
    agents[1].notional_today = 12400.0;
    app.update(gate_loaded(items, agents.clone(), t0() + secs(3)));
    run(&mut app, "/agents");
    let text = render(&app);
    let line = text
        .lines()
        .find(|l| l.contains(&agents[1].agent) && l.contains("executed today"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("3 executed today (12,400 USD)"), "{line}");
    // The second agent, chosen with ↓; `s` fills in its name and waits for the reason.
    app.update(code(KeyCode::Down));
    let fx = app.update(key('s'));
    assert!(fx.is_empty(), "{fx:?}");
    let line = app.command_line().expect("the command line is open").text();
    assert_eq!(line, format!("/suspend {} ", agents[1].agent));
    type_text(&mut app, "loops on one order");
    let fx = app.update(code(KeyCode::Enter));
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::GateSuspend { .. })),
        "asked first: {fx:?}"
    );
    assert!(
        matches!(app.modal(), Some(Modal::Confirm(_))),
        "{:?}",
        app.modal()
    );
    app.update(code(KeyCode::Esc));

    run(&mut app, "/agents");
    app.update(key('r'));
    let line = app.command_line().expect("the command line is open").text();
    assert_eq!(line, format!("/resume {}", agents[0].agent));
}

/// The approve dialog's live re-check names the agent's suspension before y is pressed.
#[test]
fn the_approve_dialog_says_the_agent_is_suspended_before_y() {
    let mut app = gate_app(140, 44);
    select_row(&mut app, DEMO_ID);
    press(&mut app, 'a');
    let check: crate::api::model::GateCheck = serde_json::from_value(serde_json::json!({
        "id": "gi_de0a9e17", "status": "pending", "verdicts": [], "needsOverride": [],
        "killSwitch": {"on": false, "reason": null, "blocks": false},
        "suspension": {"reason": "retries the same order in a loop", "by": "amy", "at": t0()},
    }))
    .unwrap();
    app.update(Action::answered(
        t0() + secs(2),
        LATENCY,
        Answer::GateChecked {
            id: DEMO_ID.into(),
            result: Ok(Box::new(check)),
        },
    ));
    let text = render(&app);
    assert!(
        text.contains("AGENT SUSPENDED by amy") && text.contains("retries the same order"),
        "{text}"
    );
}
