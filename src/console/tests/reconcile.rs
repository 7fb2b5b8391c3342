//! A confirm that got no answer (refused, timed out, reset) is an unknown outcome, not a failure:
//! the console asks the service what became of it and never confirms again by itself.

use super::fixtures::*;
use crate::api::ApiError;
use crate::api::model::{AuditEntry, Execution, Proposal};
use crate::console::action::{Action, Answer, Effect, Resource};
use crate::console::app::App;
use crate::console::inbox::{DecisionKind, Evidence, LocalState, Status};
use crate::console::modal::Modal;
use crossterm::event::KeyCode;

fn refused() -> ApiError {
    ApiError::Transport("error sending request: connection refused".into())
}

/// The staged proposal approved with `a` `y`, and its confirm answered with `error` at +10 s.
fn confirm_fails(error: ApiError) -> App {
    confirm_fails_on(staged_app(), error).0
}

/// The same on `app`, with the effects of the answer.
fn confirm_fails_on(mut app: App, error: ApiError) -> (App, Vec<Effect>) {
    tick(&mut app, t0() + secs(10));
    press(&mut app, 'a');
    assert_eq!(yes(&mut app), vec![Effect::Confirm(ID.into())]);
    let fx = app.update(Action::answered(
        t0() + secs(10),
        LATENCY,
        Answer::Confirmed {
            id: ID.into(),
            result: Err(error),
        },
    ));
    (app, fx)
}

fn reconciles(fx: &[Effect]) -> Vec<bool> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Reconcile { list } => Some(*list),
            _ => None,
        })
        .collect()
}

fn answer(app: &mut App, at_s: i64, evidence: Evidence) -> Vec<Effect> {
    app.update(Action::answered(
        t0() + secs(at_s),
        LATENCY,
        Answer::Reconciled {
            evidence: Box::new(evidence),
        },
    ))
}

fn unreachable() -> Evidence {
    Evidence {
        proposals: Some(Err(refused())),
        audit: Err(refused()),
    }
}

fn listed(p: Proposal) -> Evidence {
    Evidence {
        proposals: Some(Ok(vec![p])),
        audit: Ok(vec![]),
    }
}

fn confirm_row(id: &str, outcome: &str, oid: Option<u64>) -> AuditEntry {
    AuditEntry {
        id: 7,
        time: t0() + secs(10),
        operation: "confirm_trade".into(),
        outcome: outcome.into(),
        http_status: 200,
        proposal_id: Some(id.into()),
        oid,
        ..AuditEntry::default()
    }
}

fn run_command(app: &mut App, text: &str) -> Vec<Effect> {
    let mut fx = app.update(key(':'));
    fx.extend(type_text(app, text));
    fx.extend(app.update(code(KeyCode::Enter)));
    fx
}

#[test]
fn a_transport_failure_is_unknown_then_staged_again_needs_a_second_y() {
    let (mut app, fx) = confirm_fails_on(staged_app(), refused());
    // The service is asked at once, with the proposals list it offers.
    assert_eq!(reconciles(&fx), vec![true]);
    assert!(confirms(&fx).is_empty(), "never re-sent: {fx:?}");
    assert_eq!(status(&app), Status::Unknown);
    assert!(matches!(
        &app.item(ID).unwrap().local,
        LocalState::Unknown { checking: true, error } if error.contains("connection refused")
    ));
    assert!(app.inbox().decisions().is_empty(), "nothing is decided yet");
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.contains("outcome unknown") && t.contains("checking")),
        "{:?}",
        toast_texts(&app)
    );
    // Row, detail and strip say so.
    app.set_size(120, 40);
    let desk = render(&app);
    assert!(
        desk.lines()
            .any(|l| l.contains(ID) && l.contains("unknown — checking")),
        "{desk}"
    );
    app.update(key('2'));
    let screen = render(&app);
    assert!(
        screen.contains("unknown — checking with the service"),
        "{screen}"
    );
    assert!(screen.contains("connection refused"), "{screen}");
    app.update(key('1'));

    // Not approvable while unknown, by key or by command, and it says why.
    app.toasts_mut().clear();
    let fx = app.update(key('2'));
    assert!(confirms(&fx).is_empty());
    press(&mut app, 'a');
    assert!(app.modal().is_none(), "{:?}", app.modal());
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.contains(ID) && t.contains("outcome unknown")),
        "{:?}",
        toast_texts(&app)
    );
    let fx = run_command(&mut app, &format!("/confirm {ID}"));
    assert!(app.modal().is_none(), "{:?}", app.modal());
    assert!(confirms(&fx).is_empty());

    // Still unreachable: asked again every 2 s, not after a growing backoff.
    answer(&mut app, 13, unreachable());
    assert_eq!(status(&app), Status::Unknown);
    assert!(reconciles(&tick(&mut app, t0() + secs(14))).is_empty());
    assert_eq!(app.next_wakeup(), t0() + secs(15));
    assert_eq!(reconciles(&tick(&mut app, t0() + secs(15))), vec![true]);
    answer(&mut app, 18, unreachable());
    assert_eq!(reconciles(&tick(&mut app, t0() + secs(20))), vec![true]);

    // The service answers: still staged. Back to staged, and nothing is sent by itself.
    app.toasts_mut().clear();
    let fx = answer(&mut app, 21, listed(btc_long(ID, t0())));
    assert!(confirms(&fx).is_empty(), "{fx:?}");
    assert_eq!(status(&app), Status::Staged);
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.contains("still staged") && t.contains("a then y")),
        "{:?}",
        toast_texts(&app)
    );
    assert!(reconciles(&tick(&mut app, t0() + secs(30))).is_empty());
    assert!(app.inbox().decisions().is_empty());

    // `/confirm` works again, and only a second explicit y confirms.
    let fx = run_command(&mut app, &format!("/confirm {ID}"));
    assert!(confirms(&fx).is_empty());
    assert!(
        matches!(app.modal(), Some(Modal::Approve(d)) if d.id == ID),
        "{:?}",
        app.modal()
    );
    assert_eq!(yes(&mut app), vec![Effect::Confirm(ID.into())]);
}

#[test]
fn timeouts_resets_and_gateway_timeouts_are_unknown_too_but_answers_are_not() {
    for e in [
        ApiError::Transport("request timed out: operation timed out".into()),
        ApiError::Transport("connection reset by peer".into()),
        ApiError::Server {
            status: 504,
            code: "gateway_timeout".into(),
            message: "upstream did not answer".into(),
        },
    ] {
        let app = confirm_fails(e.clone());
        assert_eq!(status(&app), Status::Unknown, "{e:?}");
    }
    let app = confirm_fails(ApiError::Conflict {
        code: "insufficient_margin".into(),
        message: "not enough margin".into(),
    });
    assert_eq!(status(&app), Status::Failed);
}

#[test]
fn found_executed_in_the_proposals_list() {
    let mut app = confirm_fails(refused());
    tick(&mut app, t0() + secs(10));
    let mut done = btc_long(ID, t0());
    done.status = "executed".into();
    done.execution = Some(Execution {
        fills: vec![fill("BTC", "B", 0.01, 66_010.0, 4242)],
        ..Execution::default()
    });
    let fx = answer(&mut app, 12, listed(done));
    let text = "bought 0.01 BTC at 66,010 (oid 4242)";
    assert_eq!(
        app.item(ID).unwrap().local,
        LocalState::Approved(text.into())
    );
    assert_eq!(status(&app), Status::Approved);
    assert_eq!(app.inbox().decisions().len(), 1);
    assert_eq!(app.inbox().decisions()[0].kind, DecisionKind::Approved);
    let lines = journal_lines(&fx);
    assert_eq!(lines[0]["decision"], "approved");
    assert_eq!(lines[0]["result"], text);
    assert!(reconciles(&tick(&mut app, t0() + secs(20))).is_empty());
}

#[test]
fn the_proposals_poll_settles_it_as_well() {
    let mut app = confirm_fails(refused());
    let mut done = btc_long(ID, t0());
    done.status = "executed".into();
    app.update(proposals(vec![done], t0() + secs(11)));
    assert_eq!(status(&app), Status::Approved);
    assert_eq!(app.inbox().decisions()[0].kind, DecisionKind::Approved);
}

#[test]
fn expired_meanwhile() {
    let mut app = confirm_fails(refused());
    tick(&mut app, t0() + secs(10));
    answer(&mut app, 12, unreachable());
    let fx = tick(&mut app, t0() + secs(301));
    assert!(
        journal_lines(&fx).is_empty(),
        "unknown is not expired: {fx:?}"
    );
    let mut gone = btc_long(ID, t0());
    gone.status = "expired".into();
    let mut fx = answer(&mut app, 302, listed(gone));
    fx.extend(tick(&mut app, t0() + secs(303)));
    assert_eq!(status(&app), Status::Expired);
    let lines = journal_lines(&fx);
    assert_eq!(lines.len(), 1, "{fx:?}");
    assert_eq!(lines[0]["decision"], "expired");
}

#[test]
fn without_the_proposals_extension_the_audit_log_decides() {
    let setup = || {
        let mut app = staged_app();
        // This service lists no proposals.
        app.update(failed(
            Resource::Proposals,
            ApiError::NotFound {
                code: "not_found".into(),
                message: "no route".into(),
            },
            t0() + secs(1),
        ));
        let (app, fx) = confirm_fails_on(app, refused());
        assert_eq!(reconciles(&fx), vec![false], "the audit log only");
        app
    };
    let audit = |rows: Vec<AuditEntry>| Evidence {
        proposals: None,
        audit: Ok(rows),
    };

    // A confirm_trade row for it that succeeded: executed.
    let mut app = setup();
    answer(&mut app, 12, audit(vec![confirm_row(ID, "ok", Some(777))]));
    assert_eq!(status(&app), Status::Approved);
    assert!(
        matches!(&app.item(ID).unwrap().local, LocalState::Approved(t) if t.contains("oid 777")),
        "{:?}",
        app.item(ID).unwrap().local
    );

    // A log that names proposals but has no execution of this one: not executed, staged again.
    let mut app = setup();
    let mut rows = audit_rows_naming_others();
    rows.push(AuditEntry {
        operation: "propose_trade".into(),
        ..confirm_row(ID, "ok", None)
    });
    answer(&mut app, 12, audit(rows));
    assert_eq!(status(&app), Status::Staged);

    // A log that names no proposals cannot tell: checked until the proposal's time is over, then
    // left unknown, with the advice to look at the positions.
    let mut app = setup();
    let anonymous: Vec<AuditEntry> = audit_rows_naming_others()
        .into_iter()
        .map(|r| AuditEntry {
            proposal_id: None,
            ..r
        })
        .collect();
    answer(&mut app, 12, audit(anonymous.clone()));
    assert_eq!(status(&app), Status::Unknown);
    assert_eq!(reconciles(&tick(&mut app, t0() + secs(14))), vec![false]);
    app.set_clock(t0() + secs(301));
    answer(&mut app, 301, audit(anonymous));
    assert!(matches!(
        app.item(ID).unwrap().local,
        LocalState::Unknown {
            checking: false,
            ..
        }
    ));
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.contains("cannot tell") && t.contains("check the positions")),
        "{:?}",
        toast_texts(&app)
    );
    assert!(reconciles(&tick(&mut app, t0() + secs(320))).is_empty());
    app.set_size(120, 40);
    app.update(key('2'));
    assert!(render(&app).contains("the service cannot tell"));
}

fn audit_rows_naming_others() -> Vec<AuditEntry> {
    vec![confirm_row("prop_someoneelse000000", "ok", Some(1))]
}

#[test]
fn already_executed_after_a_confirm_without_answer_is_that_confirm() {
    // Staged again after the outage; the first confirm was still queued and ran meanwhile: the
    // second confirm is told "already executed", which settles it as executed, not failed.
    let mut app = confirm_fails(refused());
    tick(&mut app, t0() + secs(10));
    answer(&mut app, 12, listed(btc_long(ID, t0())));
    assert_eq!(status(&app), Status::Staged);
    press(&mut app, 'a');
    assert_eq!(yes(&mut app), vec![Effect::Confirm(ID.into())]);
    app.update(Action::answered(
        t0() + secs(13),
        LATENCY,
        Answer::Confirmed {
            id: ID.into(),
            result: Err(ApiError::Conflict {
                code: "proposal_already_executed".into(),
                message: "already executed".into(),
            }),
        },
    ));
    assert_eq!(status(&app), Status::Unknown);
    let mut done = btc_long(ID, t0());
    done.status = "executed".into();
    answer(&mut app, 14, listed(done));
    assert_eq!(status(&app), Status::Approved);
    assert_eq!(
        app.inbox().decisions().len(),
        1,
        "{:?}",
        app.inbox().decisions()
    );
}

#[test]
fn a_queued_confirm_that_runs_after_being_found_staged_is_this_consoles_approval() {
    let mut app = confirm_fails(refused());
    tick(&mut app, t0() + secs(10));
    answer(&mut app, 12, listed(btc_long(ID, t0())));
    assert_eq!(status(&app), Status::Staged);
    assert!(app.inbox().decisions().is_empty());
    // The paused service runs the queued confirm; the next poll lists it executed.
    let mut done = btc_long(ID, t0());
    done.status = "executed".into();
    done.execution = Some(Execution {
        fills: vec![fill("BTC", "B", 0.01, 66_020.0, 4343)],
        ..Execution::default()
    });
    let fx = app.update(proposals(vec![done], t0() + secs(14)));
    assert_eq!(status(&app), Status::Approved);
    assert_eq!(app.inbox().decisions().len(), 1);
    assert_eq!(app.inbox().decisions()[0].kind, DecisionKind::Approved);
    assert_eq!(
        journal_lines(&fx)[0]["result"],
        "bought 0.01 BTC at 66,020 (oid 4343)"
    );
    // A proposal this console never confirmed, executed by someone else, is not its approval.
    let mut app = staged_app();
    let mut done = btc_long(ID, t0());
    done.status = "executed".into();
    app.update(proposals(vec![done], t0() + secs(14)));
    assert_eq!(status(&app), Status::Executed);
    assert!(app.inbox().decisions().is_empty());
}

#[test]
fn already_executed_to_our_own_confirm_is_executed_read_from_the_records_first() {
    // The service (no gateway) was paused past the client's patience on its answer only: our
    // first and only confirm is answered 409 "already executed". Nothing is said or journaled
    // before the records are read; then it is executed, never failed.
    let (mut app, fx) = confirm_fails_on(
        staged_app(),
        ApiError::Conflict {
            code: "proposal_already_executed".into(),
            message: "the proposal was already executed".into(),
        },
    );
    assert_eq!(reconciles(&fx), vec![true], "the records are read at once");
    assert_eq!(status(&app), Status::Unknown);
    assert!(
        app.inbox().decisions().is_empty(),
        "{:?}",
        app.inbox().decisions()
    );
    assert!(journal_lines(&fx).is_empty());
    assert!(
        !toast_texts(&app).iter().any(|t| t.contains("failed")),
        "{:?}",
        toast_texts(&app)
    );
    // The deployment's records cannot say which proposal ran (its log names none): the 409
    // itself says it executed.
    let fx = answer(
        &mut app,
        12,
        Evidence {
            proposals: None,
            audit: Ok(vec![AuditEntry {
                operation: "confirm_trade".into(),
                outcome: "ok".into(),
                time: t0() + secs(10),
                ..AuditEntry::default()
            }]),
        },
    );
    assert_eq!(status(&app), Status::Approved);
    assert_eq!(app.inbox().decisions().len(), 1);
    assert_eq!(app.inbox().decisions()[0].kind, DecisionKind::Approved);
    let lines = journal_lines(&fx);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["decision"], "approved");
    assert!(
        lines[0]["result"].as_str().unwrap().starts_with("executed"),
        "{lines:?}"
    );
    // Records that name the execution say what it did.
    let (mut app, _) = confirm_fails_on(
        staged_app(),
        ApiError::Conflict {
            code: "proposal_already_executed".into(),
            message: "the proposal was already executed".into(),
        },
    );
    let fx = answer(
        &mut app,
        12,
        Evidence {
            proposals: None,
            audit: Ok(vec![confirm_row(ID, "ok", Some(4343))]),
        },
    );
    assert_eq!(
        journal_lines(&fx)[0]["result"],
        "executed (confirm_trade ok in the audit log, oid 4343)"
    );
}

#[test]
fn quitting_with_an_outcome_still_unknown_journals_the_approval_first() {
    let (mut app, _) = confirm_fails_on(staged_app(), refused());
    assert!(app.inbox().decisions().is_empty(), "nothing is decided yet");
    let fx = app.update(key('q'));
    let journal = fx
        .iter()
        .position(|e| {
            matches!(e, Effect::Journal(line) if line.contains(ID)
            && line.contains("\"decision\":\"approved\"")
            && line.contains("outcome unknown when this console quit")
            && line.contains("connection refused"))
        })
        .unwrap_or_else(|| panic!("the approval is journaled: {fx:?}"));
    let quit = fx
        .iter()
        .position(|e| *e == Effect::Quit)
        .expect("it quits");
    assert!(journal < quit, "journaled before the loop ends: {fx:?}");
}
