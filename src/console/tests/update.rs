//! `App::update` with an injected clock: polling and backoff, quitting, the command line, the
//! mouse.

use super::fixtures::*;
use crate::api::ApiError;
use crate::console::action::{Action, Answer, Effect, Payload, Resource};
use crate::console::inbox::{LocalState, Source, Status};
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use crate::console::poll::{MAX_BACKOFF, backoff};
use crate::console::tab::Tab;
use crossterm::event::KeyCode;
use std::collections::BTreeSet;
use std::time::Duration;

// ---- polling -------------------------------------------------------------------------------------

#[test]
fn first_update_fetches_everything_once() {
    let mut app = new_app();
    let fx = tick(&mut app, t0());
    let fetched: BTreeSet<Resource> = fetches(&fx).into_iter().collect();
    assert_eq!(fetched, Resource::ALL.into_iter().collect());
    assert_eq!(fetches(&fx).len(), Resource::ALL.len());
    assert!(app.feeds().values().all(|f| f.poll.in_flight));
    // Nothing is fetched twice while in flight.
    let fx = tick(&mut app, t0() + secs(10));
    assert!(fetches(&fx).is_empty(), "{fx:?}");
}

#[test]
fn a_result_reschedules_at_its_time_plus_the_interval() {
    let mut app = new_app();
    tick(&mut app, t0());
    let at = t0() + ms(150);
    app.update(loaded(
        Resource::Positions,
        Payload::Positions(positions()),
        at,
    ));
    let feed = &app.feeds()[&Resource::Positions];
    assert!(!feed.poll.in_flight);
    assert_eq!(feed.interval, Duration::from_secs(2));
    assert_eq!(feed.poll.next_due, Some(at + secs(2)));
    assert_eq!(feed.poll.updated_at, Some(at));
    assert_eq!(feed.poll.latency, Some(LATENCY));
    assert_eq!(app.account().positions.len(), 4);

    let fx = tick(&mut app, at + ms(1999));
    assert!(!fetches(&fx).contains(&Resource::Positions), "{fx:?}");
    let fx = tick(&mut app, at + secs(2));
    assert_eq!(fetches(&fx), vec![Resource::Positions]);
}

#[test]
fn transport_errors_back_off_exponentially_up_to_30s() {
    let i = Duration::from_secs(2);
    assert_eq!(backoff(i, 0), i);
    assert_eq!(backoff(i, 1), Duration::from_secs(4));
    assert_eq!(backoff(i, 2), Duration::from_secs(8));
    assert_eq!(backoff(i, 3), Duration::from_secs(16));
    assert_eq!(backoff(i, 4), MAX_BACKOFF);
    assert_eq!(backoff(i, 40), MAX_BACKOFF);
    assert_eq!(backoff(Duration::from_secs(1), 100), MAX_BACKOFF);
    assert_eq!(MAX_BACKOFF, Duration::from_secs(30));

    let mut app = new_app();
    let mut now = t0();
    tick(&mut app, now);
    let mut waits = Vec::new();
    for _ in 0..6 {
        app.update(failed(
            Resource::Positions,
            ApiError::Transport("connection refused".into()),
            now,
        ));
        let feed = &app.feeds()[&Resource::Positions];
        assert!(!feed.poll.in_flight);
        assert!(matches!(feed.error, Some(ApiError::Transport(_))));
        let due = feed.poll.next_due.unwrap();
        waits.push((due - now).to_std().unwrap().as_secs());
        // Not retried early; retried when due.
        let fx = tick(&mut app, due - ms(1));
        assert!(!fetches(&fx).contains(&Resource::Positions));
        now = due;
        let fx = tick(&mut app, now);
        assert!(fetches(&fx).contains(&Resource::Positions), "{fx:?}");
    }
    assert_eq!(waits, vec![4, 8, 16, 30, 30, 30]);
    assert_eq!(app.feeds()[&Resource::Positions].poll.failures, 6);

    // A success resets the schedule.
    app.update(loaded(Resource::Positions, Payload::Positions(vec![]), now));
    let feed = &app.feeds()[&Resource::Positions];
    assert_eq!(feed.poll.failures, 0);
    assert!(feed.error.is_none());
    assert_eq!(feed.poll.next_due, Some(now + secs(2)));
}

#[test]
fn unauthorized_stops_all_fetching_until_refresh() {
    let mut app = new_app();
    let fx = tick(&mut app, t0());
    for r in fetches(&fx) {
        if r == Resource::Positions {
            app.update(failed(
                r,
                ApiError::Unauthorized {
                    message: "unknown key".into(),
                },
                t0(),
            ));
        } else {
            app.update(loaded(r, empty_payload(r), t0()));
        }
    }
    assert_eq!(app.auth_failed(), Some("unknown key"));
    for s in [1, 5, 60, 3600] {
        let fx = tick(&mut app, t0() + secs(s));
        assert!(fetches(&fx).is_empty(), "+{s}s: {fx:?}");
    }
    let screen = render(&app);
    assert!(screen.contains("API key refused"), "{screen}");

    // `r` tries again: everything is fetched at once.
    let fx = app.update(key('r'));
    assert!(app.auth_failed().is_none());
    let fetched: BTreeSet<Resource> = fetches(&fx).into_iter().collect();
    assert_eq!(fetched, Resource::ALL.into_iter().collect());
}

#[test]
fn quota_exceeded_holds_confirms() {
    let mut app = staged_app();
    tick(&mut app, t0() + secs(5));
    let at = t0() + secs(5);
    app.update(failed(
        Resource::Usage,
        ApiError::QuotaExceeded {
            retry_after: Duration::from_secs(60),
            message: "daily POST quota reached".into(),
        },
        at,
    ));
    assert_eq!(app.quota_until(), Some(at + secs(60)));
    assert_eq!(
        app.feeds()[&Resource::Usage].poll.next_due,
        Some(at + secs(60))
    );

    press(&mut app, 'a');
    assert!(
        matches!(app.modal(), Some(Modal::Approve(d)) if d.id == ID),
        "{:?}",
        app.modal()
    );
    let fx = yes(&mut app);
    assert!(confirms(&fx).is_empty(), "{fx:?}");
    assert_eq!(app.item(ID).unwrap().local, LocalState::None);
    assert!(
        toast_texts(&app).iter().any(|t| t.contains("quota")),
        "{:?}",
        toast_texts(&app)
    );
    let screen = render(&app);
    assert!(screen.contains("quota"), "{screen}");

    // Once the quota resets, the same proposal can be confirmed.
    tick(&mut app, at + secs(61));
    press(&mut app, 'a');
    let fx = yes(&mut app);
    assert_eq!(confirms(&fx), vec![ID.to_string()]);
}

#[test]
fn quota_exceeded_on_confirm_holds_the_next_one() {
    let mut app = staged_app();
    let other = "prop_other";
    app.update(proposals(
        vec![btc_long(ID, t0()), btc_long(other, t0() + secs(1))],
        t0() + secs(1),
    ));
    tick(&mut app, t0() + secs(2));
    press(&mut app, 'a');
    let fx = yes(&mut app);
    let first = confirms(&fx);
    assert_eq!(first.len(), 1);
    app.update(Action::answered(
        t0() + secs(3),
        LATENCY,
        Answer::Confirmed {
            id: first[0].clone(),
            result: Err(ApiError::QuotaExceeded {
                retry_after: Duration::from_secs(120),
                message: "daily POST quota reached".into(),
            }),
        },
    ));
    assert_eq!(app.quota_until(), Some(t0() + secs(123)));
    assert_eq!(
        first[0], ID,
        "the selection stays on its proposal when a newer one sorts on top"
    );
    // The other proposal, from the inbox, on the row below (it has more time left).
    app.update(key('2'));
    assert_eq!(app.tab(), Tab::Proposals);
    app.update(code(KeyCode::Down));
    press(&mut app, 'a');
    assert!(
        matches!(app.modal(), Some(Modal::Approve(d)) if d.id == other),
        "{:?}",
        app.modal()
    );
    let fx = yes(&mut app);
    assert!(confirms(&fx).is_empty(), "{fx:?}");
    assert_eq!(app.item(other).unwrap().status(app.now()), Status::Staged);
}

#[test]
fn not_found_proposals_marks_the_feed_unsupported() {
    let mut app = new_app();
    tick(&mut app, t0());
    app.update(failed(
        Resource::Proposals,
        ApiError::NotFound {
            code: "not_found".into(),
            message: "no such route".into(),
        },
        t0(),
    ));
    let feed = &app.feeds()[&Resource::Proposals];
    assert!(!feed.supported);
    assert!(feed.error.is_none());
    for s in [1, 2, 10, 100] {
        let fx = tick(&mut app, t0() + secs(s));
        assert!(
            !fetches(&fx).contains(&Resource::Proposals),
            "+{s}s: {fx:?}"
        );
    }
    // Even a refresh does not ask again.
    let fx = app.update(key('r'));
    assert!(!fetches(&fx).contains(&Resource::Proposals));

    // A NotFound elsewhere is an ordinary failure: retried.
    app.update(failed(
        Resource::Usage,
        ApiError::NotFound {
            code: "not_found".into(),
            message: "gone".into(),
        },
        t0() + secs(100),
    ));
    assert!(app.feeds()[&Resource::Usage].supported);
    assert_eq!(app.feeds()[&Resource::Usage].poll.failures, 1);
}

#[test]
fn data_older_than_three_intervals_is_stale() {
    let mut app = new_app();
    tick(&mut app, t0());
    assert!(!app.feeds()[&Resource::Positions].is_stale(t0() + secs(100)));
    app.update(loaded(
        Resource::Positions,
        Payload::Positions(positions()),
        t0(),
    ));
    let feed = &app.feeds()[&Resource::Positions];
    assert!(!feed.is_stale(t0() + secs(5)));
    assert!(!feed.is_stale(t0() + secs(6)));
    assert!(feed.is_stale(t0() + ms(6001)));
    assert_eq!(feed.age(t0() + secs(7)), Some(Duration::from_secs(7)));

    // And the Desk says so.
    tick(&mut app, t0() + secs(7));
    let screen = render(&app);
    assert!(screen.contains("stale 7s"), "{screen}");
}

// ---- quitting ------------------------------------------------------------------------------------

#[test]
fn q_quits_at_once_when_nothing_is_in_flight() {
    let mut app = staged_app();
    let fx = app.update(key('q'));
    assert_eq!(fx, vec![Effect::Quit]);
    assert!(app.should_quit());

    let mut app = staged_app();
    let fx = app.update(ctrl('c'));
    assert_eq!(fx, vec![Effect::Quit]);
}

#[test]
fn ctrl_c_while_typing_a_command_asks_in_place_of_the_line() {
    let mut app = staged_app();
    press(&mut app, 'a');
    yes(&mut app);
    assert!(app.inbox().confirm_in_flight());
    app.update(key(':'));
    type_text(&mut app, "/propose");
    app.update(ctrl('c'));
    // One modal at a time: the question replaces the line, so the next key answers it.
    assert!(app.command_line().is_none());
    assert!(
        matches!(
            app.modal(),
            Some(Modal::Confirm(crate::console::modal::Confirm {
                what: crate::console::modal::Deciding::Quit,
                ..
            }))
        ),
        "{:?}",
        app.modal()
    );
    let fx = yes(&mut app);
    assert!(fx.contains(&Effect::Quit), "{fx:?}");
}

#[test]
fn q_asks_first_while_a_confirm_is_in_flight() {
    let mut app = staged_app();
    press(&mut app, 'a');
    yes(&mut app);
    assert!(app.inbox().confirm_in_flight());

    let fx = app.update(key('q'));
    assert!(!fx.contains(&Effect::Quit), "{fx:?}");
    assert!(!app.should_quit());
    assert!(
        matches!(
            app.modal(),
            Some(Modal::Confirm(crate::console::modal::Confirm {
                what: crate::console::modal::Deciding::Quit,
                ..
            }))
        ),
        "{:?}",
        app.modal()
    );
    assert!(render(&app).contains("A confirm is still in flight"));

    // Esc stays; q again asks again; y quits.
    app.update(code(KeyCode::Esc));
    assert!(app.modal().is_none(), "{:?}", app.modal());
    assert!(!app.should_quit());
    app.update(key('q'));
    assert!(
        matches!(
            app.modal(),
            Some(Modal::Confirm(crate::console::modal::Confirm {
                what: crate::console::modal::Deciding::Quit,
                ..
            }))
        ),
        "{:?}",
        app.modal()
    );
    // Enter is not one of its keys: it closes the question without deciding.
    let fx = app.update(code(KeyCode::Enter));
    assert!(!fx.contains(&Effect::Quit));
    assert!(app.modal().is_none() && !app.should_quit());
    press(&mut app, 'q');
    let fx = yes(&mut app);
    // The confirm still in flight is journaled as approved with no outcome, then the loop ends.
    assert_eq!(fx.len(), 2, "{fx:?}");
    assert!(
        matches!(&fx[0], Effect::Journal(line)
            if line.contains("outcome unknown when this console quit (no answer yet)")),
        "{fx:?}"
    );
    assert_eq!(fx[1], Effect::Quit);
    assert!(app.should_quit());
}

// ---- the command line ----------------------------------------------------------------------------

fn run_command(app: &mut crate::console::app::App, text: &str) -> Vec<Effect> {
    let mut fx = app.update(key(':'));
    assert!(app.command_line().is_some(), "`:` opens the command line");
    fx.extend(type_text(app, text));
    fx.extend(app.update(code(KeyCode::Enter)));
    fx
}

fn proposed(fx: &[Effect]) -> Vec<crate::api::model::TradeSignal> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Propose(s) => Some((**s).clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn propose_command_stages_a_trade() {
    let mut app = staged_app();
    app.update(key(':'));
    assert!(app.command_line().is_some());
    type_text(&mut app, "/propose BTC long 0.01 tp=72000 sl=65000");
    assert_eq!(
        app.command_line().unwrap().text(),
        "/propose BTC long 0.01 tp=72000 sl=65000"
    );
    // Keys typed into the line are text, not shortcuts: the line is still what is open.
    assert!(!app.should_quit());
    assert!(app.command_line().is_some());
    let fx = app.update(code(KeyCode::Enter));
    assert!(app.command_line().is_none());
    assert!(app.command_error().is_none());
    let signals = proposed(&fx);
    assert_eq!(signals.len(), 1, "{fx:?}");
    let s = &signals[0];
    assert_eq!(s.a.as_deref(), Some("BTCUSDT"));
    assert_eq!(s.d.as_deref(), Some("long"));
    assert_eq!(s.size, Some(0.01));
    assert_eq!(s.tp, Some(72_000.0));
    assert_eq!(s.sl, Some(65_000.0));
    assert_eq!(s.o.as_deref(), Some("market"));
    assert!(s.action.is_none());
    assert!(confirms(&fx).is_empty());
}

#[test]
fn bad_command_names_the_problem() {
    let mut app = staged_app();
    let fx = run_command(&mut app, "/propose BTC sideways 0.01");
    assert!(proposed(&fx).is_empty());
    assert!(app.command_line().is_none());
    let err = app
        .command_error()
        .map(str::to_string)
        .expect("an error is shown");
    assert!(err.contains("sideways"), "{err}");
    assert!(err.contains("side"), "{err}");
    assert!(render(&app).contains("invalid side `sideways`"));

    let fx = run_command(&mut app, "/frobnicate");
    assert!(fx.is_empty(), "{fx:?}");
    let err = app.command_error().map(str::to_string).unwrap();
    assert!(err.contains("unknown command"), "{err}");

    // Opening the line again clears the error.
    app.update(key(':'));
    assert!(app.command_error().is_none());
}

#[test]
fn up_recalls_history() {
    let mut app = staged_app();
    run_command(&mut app, "/propose ETH short 0.5");
    run_command(&mut app, "/close BTC");
    app.update(key(':'));
    app.update(code(KeyCode::Up));
    assert_eq!(app.command_line().unwrap().text(), "/close BTC");
    app.update(code(KeyCode::Up));
    assert_eq!(app.command_line().unwrap().text(), "/propose ETH short 0.5");
    app.update(code(KeyCode::Down));
    assert_eq!(app.command_line().unwrap().text(), "/close BTC");
    // Running the recalled line runs it again.
    app.update(code(KeyCode::Up));
    let fx = app.update(code(KeyCode::Enter));
    let signals = proposed(&fx);
    assert_eq!(signals.len(), 1);
    assert_eq!(signals[0].a.as_deref(), Some("ETHUSDT"));
    assert_eq!(signals[0].d.as_deref(), Some("short"));
}

#[test]
fn confirm_command_adds_the_proposal_and_opens_the_dialog() {
    let mut app = staged_app();
    let fx = run_command(&mut app, "/confirm prop_x");
    assert!(confirms(&fx).is_empty(), "the dialog still asks: {fx:?}");
    let item = app.item("prop_x").expect("added to the inbox");
    assert_eq!(item.source, Source::Console);
    assert_eq!(item.status(app.now()), Status::Staged);
    assert_eq!(app.tab(), Tab::Proposals);
    assert!(
        matches!(app.modal(), Some(Modal::Approve(d)) if d.id == "prop_x"),
        "{:?}",
        app.modal()
    );
    assert_eq!(app.selection(Pane::Inbox).id.as_deref(), Some("prop_x"));
    let fx = yes(&mut app);
    assert_eq!(fx, vec![Effect::Confirm("prop_x".into())]);

    // Naming a known proposal does not add it twice.
    let before = app.inbox().items().len();
    run_command(&mut app, &format!("/confirm {ID}"));
    assert_eq!(app.inbox().items().len(), before);
    assert!(
        matches!(app.modal(), Some(Modal::Approve(d)) if d.id == ID),
        "{:?}",
        app.modal()
    );
}

#[test]
fn close_all_command_proposes_close_all() {
    let mut app = staged_app();
    let fx = run_command(&mut app, "/close all");
    let signals = proposed(&fx);
    assert_eq!(signals.len(), 1, "{fx:?}");
    assert_eq!(signals[0].action.as_deref(), Some("close_all"));
    assert!(signals[0].a.is_none());

    let fx = run_command(&mut app, "/close eth");
    let signals = proposed(&fx);
    assert_eq!(signals[0].a.as_deref(), Some("ETHUSDT"));
    assert_eq!(signals[0].d.as_deref(), Some("close"));
}

#[test]
fn esc_closes_the_command_line_without_running() {
    let mut app = staged_app();
    app.update(key(':'));
    type_text(&mut app, "/quit");
    let fx = app.update(code(KeyCode::Esc));
    assert!(app.command_line().is_none());
    assert!(fx.is_empty());
    assert!(!app.should_quit());
}

// ---- mouse -----------------------------------------------------------------------------------------

fn click(x: u16, y: u16) -> Action {
    Action::Mouse(crossterm::event::MouseEvent {
        kind: crossterm::event::MouseEventKind::Down(crossterm::event::MouseButton::Left),
        column: x,
        row: y,
        modifiers: crossterm::event::KeyModifiers::NONE,
    })
}

/// An open modal owns the input: a click on a tab or a row underneath it changes nothing.
#[test]
fn clicks_under_an_open_modal_change_nothing() {
    let mut app = staged_app();
    app.set_size(120, 40);
    app.set_modal(Some(crate::console::modal::Modal::help()));
    let screen = crate::console::layout::compute(120, 40, &app.shape());
    let tab = app.tab();
    for x in 0..120 {
        app.update(click(x, 1));
    }
    assert_eq!(app.tab(), tab, "a click switched the tab under the modal");
    let pos = screen.pane(Pane::Positions);
    app.update(click(
        pos.x + 3,
        pos.y + crate::console::layout::TABLE_TOP + 2,
    ));
    assert!(app.modal().is_some());
}

#[test]
fn clicks_select_tabs_and_rows_and_the_wheel_scrolls() {
    let mut app = staged_app();
    app.set_size(120, 40);
    app.update(loaded(
        Resource::Positions,
        Payload::Positions(positions()),
        t0(),
    ));
    let screen = crate::console::layout::compute(120, 40, &app.shape());
    // A click on a row of the positions table selects it and focuses that pane.
    let pos = screen.pane(Pane::Positions);
    app.update(click(
        pos.x + 3,
        pos.y + crate::console::layout::TABLE_TOP + 2,
    ));
    assert_eq!(app.focused_pane(), Pane::Positions);
    assert_eq!(app.selected(Pane::Positions), 2);
    // The wheel over the orders pane moves its selection, not the positions'.
    app.update(loaded(Resource::Orders, Payload::Orders(orders()), t0()));
    let ord = screen.pane(Pane::Orders);
    app.update(Action::Mouse(crossterm::event::MouseEvent {
        kind: crossterm::event::MouseEventKind::ScrollDown,
        column: ord.x + 3,
        row: ord.y + 3,
        modifiers: crossterm::event::KeyModifiers::NONE,
    }));
    assert_eq!(app.selected(Pane::Orders), 3);
    assert_eq!(app.selected(Pane::Positions), 2);
    // A click on the second tab's label opens it.
    let (_, tab2) = screen.tabs[1];
    app.update(click(tab2.x + 1, tab2.y));
    assert_eq!(app.tab(), Tab::Proposals);
}

#[test]
fn g_and_shift_g_scroll_the_help_to_its_top_and_bottom() {
    let mut app = seeded_app(120, 40);
    app.update(key('?'));
    let scroll = |app: &crate::console::app::App| match app.modal() {
        Some(crate::console::modal::Modal::Help { scroll, .. }) => *scroll,
        other => panic!("the help is not open: {other:?}"),
    };
    let max = crate::console::help::max_scroll(&app, app.size());
    assert!(max > 0, "the help is longer than a 40-row screen");
    app.update(key('G'));
    assert_eq!(scroll(&app), max);
    // The last line is at the bottom, and k moves at once from there.
    assert!(render(&app).contains("quit"), "{}", render(&app));
    app.update(key('k'));
    assert_eq!(scroll(&app), max - 1);
    for _ in 0..5 {
        app.update(key('j'));
    }
    assert_eq!(scroll(&app), max, "j stops at the bottom");
    app.update(key('g'));
    assert_eq!(scroll(&app), 0);
}
