//! Step-up approvals in the console: the inbox row says where an item's quorum stands and who is
//! still needed; the approve dialog says before `y` whether it executes the trade, adds one
//! approval, or counts for nothing (already given, or the item is this supervisor's own); an
//! approval short of the quorum leaves the item staged for the others.

use super::fixtures::*;
use super::gate::{DEMO_ID, approve_demo, decided, demo_item, gate_app, gate_loaded, two_agents};
use crate::api::ApiError;
use crate::api::model::{GateApproval, GateCheck, GateItem};
use crate::console::action::{Action, Answer, Effect};
use crate::console::app::App;
use crate::console::inbox::Status;
use serde_json::json;

fn approval(by: &str) -> GateApproval {
    GateApproval {
        by: by.into(),
        at: t0(),
        overrides: Vec::new(),
    }
}

fn step_up(status: &str, approvals: &[&str], required: u32) -> GateItem {
    let mut g = demo_item(status);
    g.approvals = approvals.iter().map(|b| approval(b)).collect();
    g.approvals_required = required;
    g
}

fn with_demo(app: &mut App, g: GateItem) {
    let (mut items, agents) = two_agents();
    let i = items
        .iter()
        .position(|i| i.proposal_id.as_deref() == Some(DEMO_ID));
    items[i.unwrap()] = g;
    app.update(gate_loaded(items, agents, t0() + secs(1)));
}

fn checked(approvals: &[&str], required: u32, you: &str) -> Action {
    let check: GateCheck = serde_json::from_value(json!({
        "id": "gi_de0a9e17", "status": "pending", "verdicts": [], "needsOverride": [],
        "killSwitch": {"on": false, "reason": null, "blocks": false},
        "approvals": approvals.iter().map(|b| json!({"by": b, "at": t0()})).collect::<Vec<_>>(),
        "approvalsRequired": required, "you": you,
    }))
    .unwrap();
    Action::answered(
        t0() + secs(2),
        LATENCY,
        Answer::GateChecked {
            id: DEMO_ID.into(),
            result: Ok(Box::new(check)),
        },
    )
}

#[test]
fn the_inbox_row_says_how_many_approvals_an_item_has_and_how_many_more_it_needs() {
    let mut app = gate_app(140, 40);
    with_demo(&mut app, step_up("pending", &["bob"], 2));
    let text = render(&app);
    let row = text.lines().find(|l| l.contains("demo-agent  ")).unwrap();
    assert!(row.contains("1 of 2 (bob) · long 0.25"), "{row}");
    // The detail panel says it whole, with who is still needed.
    select_row(&mut app, DEMO_ID);
    let text = render(&app);
    assert!(
        text.contains("1 of 2 approvals (bob) · 1 more needed"),
        "{text}"
    );
    // An item one approval executes says nothing of the kind.
    with_demo(&mut app, step_up("pending", &[], 1));
    assert!(!render(&app).contains("approvals ("), "{}", render(&app));
}

#[test]
fn the_dialog_says_whether_y_executes_adds_an_approval_or_counts_for_nothing() {
    // Approvals so far, required, who "you" are, who staged it, and what the dialog says.
    type Case<'a> = (&'a [&'a str], u32, &'a str, Option<&'a str>, &'a str);
    let cases: [Case; 5] = [
        (
            &["bob"],
            2,
            "amy",
            None,
            "y EXECUTES it: yours is the last approval needed",
        ),
        (
            &["bob"],
            3,
            "amy",
            None,
            "y adds your approval (2 of 3 as last read)",
        ),
        (
            &["amy"],
            2,
            "amy",
            None,
            "You (amy) approved it already: y adds nothing",
        ),
        (
            &[],
            2,
            "amy",
            Some("amy"),
            "You (amy) staged it: your y does not count",
        ),
        (
            &[],
            2,
            "amy",
            Some("bob"),
            "y adds your approval (1 of 2 as last read)",
        ),
    ];
    for (approvals, required, you, staged_by, said) in cases {
        let mut app = gate_app(140, 44);
        let mut g = step_up("pending", approvals, required);
        g.staged_by = staged_by.map(String::from);
        with_demo(&mut app, g);
        select_row(&mut app, DEMO_ID);
        press(&mut app, 'a');
        // Before the re-check answers, who "you" are is not known: y is said to add one.
        let before = render(&app);
        assert!(before.contains("y adds your approval"), "{before}");
        assert!(!before.contains("approve and execute"), "{before}");
        app.update(checked(approvals, required, you));
        let text = render(&app);
        assert!(text.contains(said), "{said:?} not in\n{text}");
        // The keys line says the same as the body.
        let keys = match said {
            s if s.starts_with("y EXECUTES") => "approve and execute",
            s if s.starts_with("y adds") => "add your approval",
            _ => "your approval does not count",
        };
        assert!(text.contains(keys), "{keys:?} not in\n{text}");
    }
}

#[test]
fn an_approval_short_of_the_quorum_leaves_the_item_staged_and_says_who_is_still_needed() {
    let mut app = gate_app(140, 40);
    with_demo(&mut app, step_up("pending", &[], 2));
    approve_demo(&mut app);
    app.update(decided(DEMO_ID, true, Ok(step_up("pending", &["amy"], 2))));
    let item = app.item(DEMO_ID).unwrap();
    assert_eq!(item.status(app.now()), Status::Staged);
    let toast = app.toasts().last().unwrap().text.clone();
    assert!(
        toast.contains("your approval is recorded (1 of 2 approvals (amy) · 1 more needed)"),
        "{toast}"
    );
    assert!(
        app.inbox().decisions()[0]
            .result
            .contains("1 of 2 approvals"),
        "{:?}",
        app.inbox().decisions()
    );
    // The second supervisor's approval, seen at the next poll, executes it.
    let mut done = step_up("executed", &["amy", "bob"], 2);
    done.result = super::gate::executed_demo().result;
    with_demo(&mut app, done);
    assert_eq!(
        app.item(DEMO_ID).unwrap().status(app.now()),
        Status::Executed
    );
    // What became of the approval is journaled too: it executed on the other's.
    let decisions = app.inbox().decisions();
    assert_eq!(decisions.len(), 2, "{decisions:?}");
    assert_eq!(
        decisions[0].kind,
        crate::console::inbox::DecisionKind::Executed,
        "{decisions:?}"
    );
}

/// A y that would not count is not sent: the dialog says why; a refusal the gateway gives anyway
/// (a re-check that came late) is a refusal, not an outcome to wait for.
#[test]
fn a_y_that_does_not_count_is_not_sent_and_the_gateways_409_is_a_refusal() {
    let mut app = gate_app(140, 44);
    with_demo(&mut app, step_up("pending", &["amy"], 2));
    select_row(&mut app, DEMO_ID);
    press(&mut app, 'a');
    app.update(checked(&["amy"], 2, "amy"));
    let fx = yes(&mut app);
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::GateApprove(_))),
        "{fx:?}"
    );
    assert!(
        toasts(&app).contains("your approval does not count"),
        "{}",
        toasts(&app)
    );

    let mut app = gate_app(140, 44);
    with_demo(&mut app, step_up("pending", &[], 2));
    approve_demo(&mut app);
    app.update(decided(
        DEMO_ID,
        true,
        Err(ApiError::Conflict {
            code: "already_approved".into(),
            message: "amy already approved item gi_de0a9e17".into(),
        }),
    ));
    let text = toasts(&app);
    assert!(
        text.contains("refused") || text.contains("failed"),
        "{text}"
    );
    assert!(!text.contains("no clear answer"), "{text}");
    assert_eq!(app.item(DEMO_ID).unwrap().status(app.now()), Status::Staged);
}
