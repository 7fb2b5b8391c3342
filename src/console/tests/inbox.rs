//! The approval inbox with an injected clock: a proposal staged, counted down, approved with an
//! explicit y, rejected, expired, journaled; and the risk preview.

use super::fixtures::*;
use crate::api::ApiError;
use crate::api::model::Proposal;
use crate::console::action::{Action, Answer, Effect, Resource};
use crate::console::app::App;
use crate::console::feeds::Options;
use crate::console::inbox::{DecisionKind, LocalState, Status};
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use crate::console::tab::Tab;
use crate::console::tabs::proposals::risk::risk;
use crossterm::event::KeyCode;
use std::collections::BTreeSet;

// ---- the proposal lifecycle ----------------------------------------------------------------------

#[test]
fn staged_counts_down_then_approve_needs_an_explicit_y() {
    let mut app = staged_app();
    assert_eq!(status(&app), Status::Staged);
    assert_eq!(app.item(ID).unwrap().remaining(app.now()), Some(secs(300)));

    // The countdown runs with the injected clock, and the Desk strip lists the proposal.
    tick(&mut app, t0() + secs(10));
    assert_eq!(app.item(ID).unwrap().remaining(app.now()), Some(secs(290)));
    tick(&mut app, t0() + secs(108));
    assert_eq!(app.item(ID).unwrap().remaining(app.now()), Some(secs(192)));
    assert_eq!(app.tab(), Tab::Desk);
    assert_eq!(app.strip_items(), vec![0]);
    app.set_size(120, 40);
    let screen = render(&app);
    let strip_line = screen
        .lines()
        .find(|l| l.contains(ID))
        .expect("the Desk strip shows the staged proposal");
    assert!(strip_line.contains("3:12"), "{strip_line}");
    assert!(strip_line.contains("long 0.01 BTC 5x"), "{strip_line}");

    // `a` opens the dialog and sends nothing but the read of its chart's prices.
    let fx = press(&mut app, 'a');
    assert!(
        matches!(app.modal(), Some(Modal::Approve(d)) if d.id == ID),
        "{:?}",
        app.modal()
    );
    assert_eq!(fx, vec![Effect::FetchCandles("BTC".into())]);

    // Enter is not a yes: it is not one of the dialog's keys, so it closes it, deciding nothing.
    let fx = app.update(code(KeyCode::Enter));
    assert!(confirms(&fx).is_empty(), "{fx:?}");
    assert!(app.modal().is_none(), "{:?}", app.modal());
    assert_eq!(status(&app), Status::Staged);
    app.set_clock(app.now() + ms(100));
    press(&mut app, 'a');

    // `y` sends exactly one confirm, and the proposal waits for it.
    let fx = yes(&mut app);
    assert_eq!(fx, vec![Effect::Confirm(ID.into())]);
    assert!(app.modal().is_none(), "{:?}", app.modal());
    assert_eq!(app.item(ID).unwrap().local, LocalState::Confirming);
    assert_eq!(status(&app), Status::Confirming);
    assert!(app.inbox().confirm_in_flight());

    // The service answers with a fill.
    let at = t0() + secs(109);
    let mut fx = app.update(Action::answered(
        at,
        LATENCY,
        Answer::Confirmed {
            id: ID.into(),
            result: Ok(Box::new(executed(
                ID,
                vec![fill("BTC", "B", 0.01, 66_010.0, 4242)],
            ))),
        },
    ));
    let fill_text = "bought 0.01 BTC at 66,010 (oid 4242)";
    assert_eq!(status(&app), Status::Approved);
    assert_eq!(
        app.item(ID).unwrap().local,
        LocalState::Approved(fill_text.into())
    );
    assert!(!app.inbox().confirm_in_flight());
    assert_eq!(app.inbox().decisions().len(), 1);
    let d = &app.inbox().decisions()[0];
    assert_eq!(d.kind, DecisionKind::Approved);
    assert_eq!(d.proposal_id, ID);
    assert_eq!(d.summary, "long 0.01 BTC 5x TP 72,000 SL 65,000");
    assert_eq!(d.result, fill_text);
    let lines = journal_lines(&fx);
    assert_eq!(lines.len(), 1, "{fx:?}");
    assert_eq!(lines[0]["decision"], "approved");
    assert_eq!(lines[0]["proposalId"], ID);
    assert_eq!(lines[0]["result"], fill_text);
    assert_eq!(lines[0]["preview"]["coin"], "BTC");
    assert!(toast_texts(&app).iter().any(|t| t.contains(fill_text)));
    assert!(confirms(&fx).is_empty());

    // What the fill changed is fetched now, not at the next hourly poll.
    fx.extend(tick(&mut app, at));
    let fetched: BTreeSet<Resource> = fetches(&fx).into_iter().collect();
    for r in [
        Resource::Positions,
        Resource::Orders,
        Resource::Pnl,
        Resource::Proposals,
    ] {
        assert!(fetched.contains(&r), "{r:?} not refreshed: {fx:?}");
    }
    assert!(!fetched.contains(&Resource::Whoami), "{fx:?}");

    // Approved is final: the expiry passing adds no decision, and it cannot be approved again.
    let fx = tick(&mut app, t0() + secs(400));
    assert!(journal_lines(&fx).is_empty());
    assert_eq!(app.inbox().decisions().len(), 1);
    assert_eq!(status(&app), Status::Approved);
    press(&mut app, 'a');
    assert!(app.modal().is_none(), "{:?}", app.modal());
}

#[test]
fn esc_cancels_the_dialog_without_confirming() {
    let mut app = staged_app();
    press(&mut app, 'a');
    let fx = app.update(code(KeyCode::Esc));
    assert!(app.modal().is_none(), "{:?}", app.modal());
    assert!(confirms(&fx).is_empty());
    assert_eq!(status(&app), Status::Staged);
}

#[test]
fn expiry_is_journaled_once_and_blocks_approval() {
    let mut app = staged_app();
    let fx = tick(&mut app, t0() + secs(299));
    assert_eq!(status(&app), Status::Staged);
    assert!(journal_lines(&fx).is_empty());
    assert!(app.inbox().decisions().is_empty());

    let fx = tick(&mut app, t0() + secs(300));
    assert_eq!(status(&app), Status::Expired);
    let lines = journal_lines(&fx);
    assert_eq!(lines.len(), 1, "{fx:?}");
    assert_eq!(lines[0]["decision"], "expired");
    assert_eq!(lines[0]["proposalId"], ID);
    assert_eq!(app.inbox().decisions().len(), 1);
    assert_eq!(app.inbox().decisions()[0].kind, DecisionKind::Expired);
    assert_eq!(app.inbox().decisions()[0].proposal_id, ID);
    assert!(app.strip_items().is_empty());

    // More ticks (and the same list polled again) add nothing.
    for s in [301, 302, 330, 600] {
        let fx = tick(&mut app, t0() + secs(s));
        assert!(journal_lines(&fx).is_empty(), "tick at +{s}s: {fx:?}");
    }
    let fx = app.update(proposals(vec![btc_long(ID, t0())], t0() + secs(600)));
    assert!(journal_lines(&fx).is_empty());
    assert_eq!(bells(&fx), 0);
    assert_eq!(app.inbox().decisions().len(), 1);

    // `a` refuses, with a reason.
    let fx = press(&mut app, 'a');
    assert!(app.modal().is_none(), "{:?}", app.modal());
    assert!(confirms(&fx).is_empty());
    let toasts = toast_texts(&app);
    assert!(
        toasts
            .iter()
            .any(|t| t.contains(ID) && t.contains("can no longer be approved")),
        "{toasts:?}"
    );
}

#[test]
fn dialog_open_while_the_countdown_runs_out_does_not_confirm() {
    let mut app = staged_app();
    tick(&mut app, t0() + secs(290));
    press(&mut app, 'a');
    assert!(
        matches!(app.modal(), Some(Modal::Approve(d)) if d.id == ID),
        "{:?}",
        app.modal()
    );

    let fx = tick(&mut app, t0() + secs(301));
    assert_eq!(journal_lines(&fx).len(), 1);
    assert_eq!(status(&app), Status::Expired);

    let fx = yes(&mut app);
    assert!(confirms(&fx).is_empty(), "{fx:?}");
    assert_eq!(app.item(ID).unwrap().local, LocalState::None);
    assert_eq!(status(&app), Status::Expired);
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.contains(ID) && t.contains("expired: nothing to approve")),
        "{:?}",
        toast_texts(&app)
    );
}

#[test]
fn reject_with_x_is_journaled_and_final() {
    let mut app = staged_app();
    tick(&mut app, t0() + secs(30));
    let fx = press(&mut app, 'x');
    assert!(confirms(&fx).is_empty(), "{fx:?}");
    assert_eq!(status(&app), Status::Rejected);
    assert_eq!(app.item(ID).unwrap().local, LocalState::Rejected);
    let lines = journal_lines(&fx);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["decision"], "rejected");
    assert_eq!(lines[0]["proposalId"], ID);
    assert_eq!(app.inbox().decisions().len(), 1);
    assert_eq!(app.inbox().decisions()[0].kind, DecisionKind::Rejected);
    assert!(app.strip_items().is_empty());

    // Refused afterwards: no dialog, no confirm, a reason.
    app.toasts_mut().clear();
    let fx = press(&mut app, 'a');
    assert!(app.modal().is_none(), "{:?}", app.modal());
    assert!(confirms(&fx).is_empty());
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.contains("rejected") && t.contains("can no longer be approved")),
        "{:?}",
        toast_texts(&app)
    );

    // Rejecting again does nothing, and the expiry passing does not add an "expired" decision.
    let fx = press(&mut app, 'x');
    assert!(journal_lines(&fx).is_empty());
    let fx = tick(&mut app, t0() + secs(400));
    assert!(journal_lines(&fx).is_empty());
    assert_eq!(app.inbox().decisions().len(), 1);
    assert_eq!(status(&app), Status::Rejected);
}

#[test]
fn failed_confirm_records_the_error() {
    let errors = [
        ApiError::Expired {
            code: "proposal_expired".into(),
            message: "the proposal expired before it was confirmed".into(),
        },
        ApiError::Conflict {
            code: "builder_fee_not_approved".into(),
            message: "approve the builder fee first".into(),
        },
    ];
    for error in errors {
        let mut app = staged_app();
        press(&mut app, 'a');
        assert_eq!(yes(&mut app), vec![Effect::Confirm(ID.into())]);
        let message = error.to_string();
        let fx = app.update(Action::answered(
            t0() + secs(1),
            LATENCY,
            Answer::Confirmed {
                id: ID.into(),
                result: Err(error.clone()),
            },
        ));
        assert_eq!(status(&app), Status::Failed, "{error:?}");
        assert_eq!(
            app.item(ID).unwrap().local,
            LocalState::Failed(message.clone())
        );
        assert!(!app.inbox().confirm_in_flight());
        assert_eq!(app.inbox().decisions().len(), 1);
        assert_eq!(app.inbox().decisions()[0].kind, DecisionKind::Failed);
        assert_eq!(app.inbox().decisions()[0].result, message);
        let lines = journal_lines(&fx);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["decision"], "failed");
        assert_eq!(lines[0]["result"], message.as_str());
        assert!(
            toast_texts(&app).iter().any(|t| t.contains(&message)),
            "{:?}",
            toast_texts(&app)
        );
        let log = app.request_log().front().unwrap();
        assert_eq!(log.operation, "confirm_trade");
        assert_eq!(log.status, error.code().unwrap());
        // A failed proposal is not offered again.
        press(&mut app, 'a');
        assert!(app.modal().is_none(), "{:?}", app.modal());
    }
}

#[test]
fn new_staged_proposal_rings_the_bell_once() {
    let mut app = new_app();
    tick(&mut app, t0());
    let first = btc_long("prop_first", t0());
    let fx = app.update(proposals(vec![first.clone()], t0()));
    assert_eq!(bells(&fx), 1, "{fx:?}");
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.contains("New proposal") && t.contains("long 0.01 BTC 5x")),
        "{:?}",
        toast_texts(&app)
    );

    // The same list again: no bell, no second toast.
    let toasts = app.toasts().len();
    let fx = app.update(proposals(vec![first.clone()], t0() + secs(1)));
    assert_eq!(bells(&fx), 0, "{fx:?}");
    assert_eq!(app.toasts().len(), toasts);
    assert_eq!(app.inbox().items().len(), 1);

    // Two new ones in one poll ring once.
    let list = vec![
        first.clone(),
        btc_long("prop_second", t0() + secs(1)),
        btc_long("prop_third", t0() + secs(2)),
    ];
    let fx = app.update(proposals(list, t0() + secs(2)));
    assert_eq!(bells(&fx), 1, "{fx:?}");
    assert_eq!(app.inbox().items().len(), 3);
    // Newest first.
    assert_eq!(app.inbox().items()[0].id(), "prop_third");

    // A proposal first seen already expired or executed is history, not news.
    let mut old = btc_long("prop_old", t0() - secs(600));
    old.status = "expired".into();
    let mut done = btc_long("prop_done", t0());
    done.status = "executed".into();
    let fx = app.update(proposals(vec![old, done], t0() + secs(3)));
    assert_eq!(bells(&fx), 0, "{fx:?}");
}

#[test]
fn no_bell_when_disabled_but_still_a_toast() {
    let mut app = app_with(Options {
        bell: false,
        ..Options::default()
    });
    tick(&mut app, t0());
    let fx = app.update(proposals(vec![btc_long("prop_quiet", t0())], t0()));
    assert_eq!(bells(&fx), 0, "{fx:?}");
    assert!(
        toast_texts(&app).iter().any(|t| t.contains("New proposal")),
        "{:?}",
        toast_texts(&app)
    );
}

#[test]
fn the_detail_says_as_it_will_execute_only_while_it_can() {
    use crate::console::inbox::Source;
    use crate::console::tabs::proposals::view::detail_title;
    let will = " As it will execute · risk from live data ";
    let proposed = " As proposed · risk from live data ";
    let items = inbox();
    let title = |id: &str| detail_title(items.iter().find(|i| i.id() == id), t0());
    assert_eq!(detail_title(None, t0()), will);
    assert_eq!(title(ID_FRESH), will);
    assert_eq!(title(ID_EXPIRED), proposed);
    assert_eq!(title(ID_REJECTED), proposed);
    // This console's approval on the service was the execution.
    assert_eq!(title(ID_APPROVED), proposed);
    // A gateway's approval is not: the trade is still to execute, until the gateway says it did.
    let mut on_gate = items
        .iter()
        .find(|i| i.id() == ID_APPROVED)
        .unwrap()
        .clone();
    on_gate.source = Source::Gateway;
    on_gate.proposal.status = "approved".into();
    assert_eq!(detail_title(Some(&on_gate), t0()), will);
    on_gate.proposal.status = "executed".into();
    assert_eq!(detail_title(Some(&on_gate), t0()), proposed);
    let mut unknown = items.iter().find(|i| i.id() == ID_FRESH).unwrap().clone();
    unknown.local = LocalState::Unknown {
        error: "timed out".into(),
        checking: true,
    };
    assert_eq!(detail_title(Some(&unknown), t0()), proposed);
}

// ---- risk ----------------------------------------------------------------------------------------

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn risk_math() {
    let preview = btc_long(ID, t0()).preview;
    let mut held = positions();
    // The live mark differs from the staging price: the live one wins.
    held[0].mark_px = 66_000.0;
    let mut preview = preview;
    preview.mark_px = 65_900.0;
    let r = risk(&preview, &held, Ok(25_000.0));
    assert!(close(r.mark, 66_000.0), "{r:?}");
    assert!(close(r.notional, 660.0), "{r:?}");
    assert!(close(r.margin, 132.0), "{r:?}");
    assert!(
        close(r.sl_pct.unwrap(), 1_000.0 / 66_000.0 * 100.0),
        "{r:?}"
    );
    assert!(close(r.sl_usd.unwrap(), 10.0), "{r:?}");
    assert!(
        close(r.tp_pct.unwrap(), 6_000.0 / 66_000.0 * 100.0),
        "{r:?}"
    );
    assert!(close(r.tp_usd.unwrap(), 60.0), "{r:?}");
    assert!(close(r.reward_risk.unwrap(), 6.0), "{r:?}");
    assert!(close(r.equity_at_risk_pct.unwrap(), 0.04), "{r:?}");
    let existing = r.existing.expect("the BTC position on venue");
    assert_eq!(existing.exchange, "venue");
    assert_eq!(existing.coin, "BTC");

    // No stop-loss: the margin is what is at risk, and there is no reward:risk.
    let mut no_sl = preview.clone();
    no_sl.sl = None;
    let r = risk(&no_sl, &held, Ok(25_000.0));
    assert!(r.sl_pct.is_none() && r.sl_usd.is_none() && r.reward_risk.is_none());
    assert!(close(
        r.equity_at_risk_pct.unwrap(),
        132.0 / 25_000.0 * 100.0
    ));

    // A limit price is the entry; nothing held; no equity known.
    let mut limit = preview.clone();
    limit.limit_px = Some(64_000.0);
    limit.coin = "LINK".into();
    let r = risk(&limit, &held, Err("no PnL yet".into()));
    assert!(close(r.mark, 65_900.0), "no position: the preview's mark");
    assert!(close(r.notional, 640.0));
    assert!(close(r.margin, 128.0));
    assert!(close(r.sl_usd.unwrap(), 10.0));
    assert!(close(r.tp_usd.unwrap(), 80.0));
    // Its SL (65,000) is above that entry: it would fill at once, so no reward:risk is shown.
    assert!(r.reward_risk.is_none(), "{r:?}");
    assert!(
        r.warnings.iter().any(|w| w.starts_with("SL 65000")),
        "{r:?}"
    );
    assert!(r.equity_at_risk_pct.is_none());
    assert!(r.existing.is_none());

    // A position on the other venue is not "held" for a venue-specific proposal.
    let mut sol = trade_preview("venue", "SOL", "long", 1.0, 140.0, 1, None, None);
    assert!(
        risk(&sol, &held, Err("no PnL yet".into()))
            .existing
            .is_none()
    );
    sol.exchange = "venue2".into();
    assert!(
        risk(&sol, &held, Err("no PnL yet".into()))
            .existing
            .is_some()
    );
}

// ---- selection by proposal id, and undo ----------------------------------------------------------

const ETH: &str = "prop_e7e7e7e7e7e7e7e7";
const BNB: &str = "prop_b0b0b0b0b0b0b0b0";
const SOL: &str = "prop_5050505050505050";

fn coin_long(id: &str, coin: &str, created_at: chrono::DateTime<chrono::Utc>) -> Proposal {
    proposal(
        id,
        created_at,
        trade_preview("venue", coin, "long", 1.0, 100.0, 2, None, None),
    )
}

/// ETH (newest) and BTC staged, every feed answered, the Proposals tab on screen.
fn two_staged() -> App {
    let mut app = staged_app();
    app.update(proposals(
        vec![btc_long(ID, t0()), coin_long(ETH, "ETH", t0() + secs(1))],
        t0() + secs(1),
    ));
    tick(&mut app, t0() + secs(2));
    app.toasts_mut().clear();
    newest_first(&mut app);
    app
}

/// Both inbox panes sorted newest first (`staged`), as a supervisor may choose: the tests of
/// the selection following its proposal are about rows that move under it, whatever the order.
fn newest_first(app: &mut App) {
    for pane in [Pane::Inbox, Pane::Strip] {
        app.set_query(pane, |q| {
            q.sort = Some(8);
            q.reverse = false;
        });
    }
}

fn selected_id(app: &App, pane: Pane) -> String {
    app.selection(pane).id.clone().unwrap_or_default()
}

#[test]
fn a_newer_proposal_sorting_on_top_does_not_change_what_x_dismisses() {
    // In the Proposals list.
    let mut app = two_staged();
    app.update(key('2'));
    assert_eq!(app.inbox().items()[0].id(), ETH, "newest first");
    // BTC, selected before ETH arrived, stays selected; the supervisor selects ETH.
    assert_eq!(selected_id(&app, Pane::Inbox), ID);
    app.update(key('k'));
    assert_eq!(selected_id(&app, Pane::Inbox), ETH);
    assert_eq!(app.selected(Pane::Inbox), 0);
    app.update(proposals(
        vec![
            btc_long(ID, t0()),
            coin_long(ETH, "ETH", t0() + secs(1)),
            coin_long(BNB, "BNB", t0() + secs(3)),
        ],
        t0() + secs(3),
    ));
    assert_eq!(app.inbox().items()[0].id(), BNB, "BNB sorts on top");
    assert_eq!(selected_id(&app, Pane::Inbox), ETH);
    assert_eq!(app.selected(Pane::Inbox), 1, "the row drawn follows ETH");
    app.set_size(120, 40);
    let screen = render(&app);
    assert!(screen.contains("long 1 ETH 2x"), "{screen}");
    let fx = press(&mut app, 'x');
    assert_eq!(
        app.item(ETH).unwrap().local,
        LocalState::Rejected,
        "the selected one is dismissed"
    );
    assert_eq!(app.item(BNB).unwrap().local, LocalState::None);
    assert_eq!(journal_lines(&fx)[0]["proposalId"], ETH);

    // On the Desk strip, the same.
    let mut app = two_staged();
    app.update(code(KeyCode::BackTab));
    assert_eq!(app.focused_pane(), Pane::Strip);
    app.update(key('g'));
    assert_eq!(selected_id(&app, Pane::Strip), ETH);
    app.update(proposals(
        vec![
            btc_long(ID, t0()),
            coin_long(ETH, "ETH", t0() + secs(1)),
            coin_long(BNB, "BNB", t0() + secs(3)),
        ],
        t0() + secs(3),
    ));
    assert_eq!(app.selected(Pane::Strip), 1);
    press(&mut app, 'a');
    assert!(
        matches!(app.modal(), Some(Modal::Approve(d)) if d.id == ETH),
        "{:?}",
        app.modal()
    );
    app.update(code(KeyCode::Esc));
    press(&mut app, 'x');
    assert_eq!(app.item(ETH).unwrap().local, LocalState::Rejected);
    assert_eq!(app.item(BNB).unwrap().local, LocalState::None);
    // ETH left the strip by the supervisor's own key: the cursor goes to the row that took its
    // place (the next older), and acts at once.
    assert_eq!(selected_id(&app, Pane::Strip), ID);
    press(&mut app, 'x');
    assert_eq!(app.item(ID).unwrap().local, LocalState::Rejected);
}

#[test]
fn moving_the_cursor_selects_by_id() {
    let mut app = two_staged();
    app.update(key('2'));
    app.update(key('k'));
    assert_eq!(selected_id(&app, Pane::Inbox), ETH);
    app.update(key('j'));
    assert_eq!(selected_id(&app, Pane::Inbox), ID);
    app.update(key('k'));
    assert_eq!(selected_id(&app, Pane::Inbox), ETH);
    app.update(key('G'));
    assert_eq!(selected_id(&app, Pane::Inbox), ID);
    app.update(key('g'));
    assert_eq!(selected_id(&app, Pane::Inbox), ETH);
    // Enter on the strip opens the same proposal in the Proposals list, wherever it is there.
    app.update(key('1'));
    app.update(code(KeyCode::BackTab));
    app.update(key('j'));
    assert_eq!(selected_id(&app, Pane::Strip), ID);
    app.update(code(KeyCode::Enter));
    assert_eq!(app.tab(), Tab::Proposals);
    assert_eq!(selected_id(&app, Pane::Inbox), ID);
    assert_eq!(app.selection(Pane::Inbox).id.as_deref(), Some(ID));
}

/// SOL on top expires in 30 s; ETH (selected) and BTC below it.
fn three_on_the_strip() -> App {
    let mut app = two_staged();
    let mut sol = coin_long(SOL, "SOL", t0() + secs(2));
    sol.expires_at = Some(t0() + secs(30));
    app.update(proposals(
        vec![
            btc_long(ID, t0()),
            coin_long(ETH, "ETH", t0() + secs(1)),
            sol,
        ],
        t0() + secs(2),
    ));
    app.update(code(KeyCode::BackTab));
    app.update(key('g'));
    app.update(key('j'));
    assert_eq!(selected_id(&app, Pane::Strip), ETH);
    assert_eq!(app.selected(Pane::Strip), 1);
    app.toasts_mut().clear();
    app
}

#[test]
fn an_expiry_of_another_row_does_not_move_the_selection() {
    let mut app = three_on_the_strip();
    tick(&mut app, t0() + secs(31));
    assert_eq!(app.item(SOL).unwrap().status(app.now()), Status::Expired);
    assert_eq!(selected_id(&app, Pane::Strip), ETH);
    assert_eq!(
        app.selected(Pane::Strip),
        0,
        "ETH is drawn on the first row now"
    );
    press(&mut app, 'x');
    assert_eq!(app.item(ETH).unwrap().local, LocalState::Rejected);
    assert_eq!(app.item(ID).unwrap().local, LocalState::None);
}

#[test]
fn when_the_selected_proposal_leaves_the_next_older_is_selected_but_not_acted_on_at_once() {
    let mut app = three_on_the_strip();
    app.inbox_mut().item_mut(ETH).unwrap().proposal.expires_at = Some(t0() + secs(20));
    let at = t0() + secs(21);
    tick(&mut app, at);
    assert_eq!(
        selected_id(&app, Pane::Strip),
        ID,
        "the row that took ETH's place"
    );
    // A key pressed in the same moment was meant for ETH: nothing is done, and it says why.
    let fx = press(&mut app, 'x');
    assert!(journal_lines(&fx).is_empty(), "{fx:?}");
    assert_eq!(app.item(ID).unwrap().local, LocalState::None);
    let toasts = toast_texts(&app);
    assert!(
        toasts
            .iter()
            .any(|t| t.contains("moved to") && t.contains(ID) && t.contains(ETH)),
        "{toasts:?}"
    );
    // Pressed again, it acts on what is now selected.
    press(&mut app, 'x');
    assert_eq!(app.item(ID).unwrap().local, LocalState::Rejected);

    // After the moment has passed, a key acts at once.
    let mut app = three_on_the_strip();
    app.inbox_mut().item_mut(ETH).unwrap().proposal.expires_at = Some(t0() + secs(20));
    tick(&mut app, t0() + secs(21));
    tick(&mut app, t0() + secs(23));
    press(&mut app, 'a');
    assert!(
        matches!(app.modal(), Some(Modal::Approve(d)) if d.id == ID),
        "{:?}",
        app.modal()
    );
}

#[test]
fn the_last_row_leaving_selects_the_one_above() {
    let mut app = three_on_the_strip();
    app.update(key('G'));
    assert_eq!(selected_id(&app, Pane::Strip), ID);
    app.inbox_mut().item_mut(ID).unwrap().proposal.expires_at = Some(t0() + secs(20));
    tick(&mut app, t0() + secs(21));
    assert_eq!(selected_id(&app, Pane::Strip), ETH);
}

#[test]
fn undo_restores_a_dismissal_while_the_proposal_is_live() {
    let mut app = staged_app();
    app.set_size(120, 40);
    tick(&mut app, t0() + secs(30));
    assert!(!render(&app).contains(" u undo"), "nothing to undo yet");
    press(&mut app, 'x');
    assert_eq!(status(&app), Status::Rejected);
    assert!(render(&app).contains(" u undo"), "the footer offers undo");

    let fx = press(&mut app, 'u');
    assert_eq!(status(&app), Status::Staged);
    assert_eq!(app.item(ID).unwrap().local, LocalState::None);
    let lines = journal_lines(&fx);
    assert_eq!(lines.len(), 1, "{fx:?}");
    assert_eq!(lines[0]["decision"], "undone");
    assert_eq!(lines[0]["proposalId"], ID);
    assert_eq!(app.inbox().decisions()[0].kind, DecisionKind::Undone);
    assert_eq!(app.inbox().decisions()[1].kind, DecisionKind::Rejected);
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.contains("Restored") && t.contains(ID) && t.contains("4:30 left")),
        "{:?}",
        toast_texts(&app)
    );
    assert_eq!(app.strip_items().len(), 1, "back on the strip");
    assert!(!render(&app).contains(" u undo"));
    // It can be approved again, with the dialog and an explicit y.
    press(&mut app, 'a');
    assert_eq!(yes(&mut app), vec![Effect::Confirm(ID.into())]);

    // Its expiry is recorded as usual when it runs out after an undo.
    let mut app = staged_app();
    press(&mut app, 'x');
    press(&mut app, 'u');
    let fx = tick(&mut app, t0() + secs(300));
    assert_eq!(journal_lines(&fx)[0]["decision"], "expired");
}

#[test]
fn undo_after_the_expiry_is_refused_with_the_reason() {
    let mut app = staged_app();
    app.toasts_mut().clear();
    press(&mut app, 'u');
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.contains("Nothing to undo")),
        "{:?}",
        toast_texts(&app)
    );

    press(&mut app, 'x');
    tick(&mut app, t0() + secs(301));
    app.toasts_mut().clear();
    let fx = press(&mut app, 'u');
    assert!(journal_lines(&fx).is_empty(), "{fx:?}");
    assert_eq!(status(&app), Status::Rejected);
    let toasts = toast_texts(&app);
    assert!(
        toasts.iter().any(|t| t.contains(&format!(
            "Cannot undo the dismissal of {ID}: it expired at 12:05:00"
        ))),
        "{toasts:?}"
    );
    assert_eq!(app.inbox().decisions().len(), 1, "only the dismissal");
}

#[test]
fn on_the_desk_keys_act_on_the_strip_whichever_pane_has_the_focus() {
    let mut app = two_staged();
    // The Proposals list has BTC selected, the strip ETH.
    app.update(key('2'));
    app.update(key('G'));
    assert_eq!(selected_id(&app, Pane::Inbox), ID);
    app.update(key('1'));
    app.update(code(KeyCode::BackTab));
    app.update(key('g'));
    assert_eq!(selected_id(&app, Pane::Strip), ETH);
    // Focus back on the positions: x still dismisses what the strip shows selected.
    app.update(code(KeyCode::Tab));
    assert_eq!(app.focused_pane(), Pane::Positions);
    press(&mut app, 'x');
    assert_eq!(app.item(ETH).unwrap().local, LocalState::Rejected);
    assert_eq!(app.item(ID).unwrap().local, LocalState::None);
    // From another tab, the Proposals list's selection.
    app.update(key('3'));
    press(&mut app, 'x');
    assert_eq!(app.item(ID).unwrap().local, LocalState::Rejected);
}

// ---- one coin however spelled; levels wrong at any price -----------------------------------------

/// The deployment's positions name the bare coin while an agent's proposal may carry the pair it
/// was staged with: both are the same holding.
#[test]
fn a_proposal_naming_btcusdt_sees_the_btc_position_and_what_it_becomes() {
    let mut app = app_with(quiet_options());
    let fx = app.update(Action::Tick(t0()));
    let mut preview = trade_preview("", "BTCUSDT", "long", 0.01, 66_000.0, 5, None, None);
    preview.asset = "BTCUSDT".into();
    for r in fetches(&fx) {
        let payload = match r {
            Resource::Proposals => crate::console::action::Payload::Proposals(vec![proposal(
                ID,
                t0(),
                preview.clone(),
            )]),
            Resource::Positions => crate::console::action::Payload::Positions(positions()),
            other => empty_payload(other),
        };
        app.update(loaded(r, payload, t0()));
    }
    app.update(Action::Resize(120, 40));
    app.update(key('2'));
    let r = app
        .inbox_shown()
        .risk_of(&app.item(ID).unwrap().proposal.preview);
    assert_eq!(r.coin, "BTC");
    assert_eq!(r.existing.as_ref().map(|e| e.coin.as_str()), Some("BTC"));
    assert!((r.resulting_szi.unwrap() - 0.06).abs() < 1e-12, "{r:?}");
    let screen = render(&app);
    assert!(!screen.contains("nothing in this coin"), "{screen}");
    assert!(screen.contains("After fill   long 0.06 BTC"), "{screen}");
}

#[test]
fn a_target_beyond_the_stop_is_flagged_without_any_price() {
    // No mark, no limit: nothing to compare with but the two levels themselves.
    let long = trade_preview(
        "venue",
        "BTC",
        "long",
        0.01,
        0.0,
        5,
        Some(60_000.0),
        Some(65_000.0),
    );
    let r = risk(&long, &[], Err("no PnL yet".into()));
    assert_eq!(
        r.warnings,
        ["TP 60000 is at or below SL 65000 on a long: wrong at any price"]
    );
    let short = trade_preview(
        "venue",
        "ETH",
        "short",
        1.0,
        0.0,
        2,
        Some(3_300.0),
        Some(3_000.0),
    );
    assert_eq!(
        risk(&short, &[], Err("no PnL yet".into())).warnings,
        ["TP 3300 is at or above SL 3000 on a short: wrong at any price"]
    );
    let fine = trade_preview(
        "venue",
        "BTC",
        "long",
        0.01,
        0.0,
        5,
        Some(70_000.0),
        Some(65_000.0),
    );
    assert!(
        risk(&fine, &[], Err("no PnL yet".into()))
            .warnings
            .is_empty()
    );

    // In the detail it is a red "Check" line; in the list the row's levels are red.
    let mut app = staged_app();
    app.update(Action::Resize(120, 40));
    app.update(proposals(vec![proposal(ID, t0(), long)], t0()));
    app.update(key('2'));
    let screen = render(&app);
    assert!(
        screen.contains("Check        TP 60000 is at or below SL 65000"),
        "{screen}"
    );
    let theme = crate::console::theme::Theme::dark();
    let lines = crate::console::tabs::proposals::view::detail_lines(
        &app.inbox_shown(),
        &theme,
        app.item(ID).unwrap(),
    );
    let check = lines
        .iter()
        .find(|l| {
            l.spans
                .iter()
                .any(|s| s.content.contains("wrong at any price"))
        })
        .expect("a Check line");
    assert_eq!(check.spans[1].style, theme.critical);
}

#[test]
fn proposals_stamped_in_the_same_second_are_still_newest_first() {
    // The service stamps creation to the second; expiry (or arrival) tells them apart.
    let mut older = coin_long(ETH, "ETH", t0());
    older.expires_at = Some(t0() + LIFETIME + ms(100));
    let mut newer = coin_long(BNB, "BNB", t0());
    newer.expires_at = Some(t0() + LIFETIME + ms(700));
    let mut app = staged_app();
    app.update(proposals(vec![older, newer], t0() + secs(1)));
    let order: Vec<&str> = app.inbox().items().iter().map(|i| i.id()).collect();
    assert_eq!(&order[..2], [BNB, ETH], "{order:?}");
}

#[test]
fn a_60x20_screen_shows_more_of_the_detail_than_two_lines() {
    let mut app = seeded_app(60, 20);
    app.update(key('2'));
    let text = render(&app);
    let lines: Vec<&str> = text.lines().collect();
    let top = lines
        .iter()
        .position(|l| l.contains("As it will execute"))
        .expect("the detail panel");
    let inner = lines[top + 1..]
        .iter()
        .take_while(|l| !l.starts_with('└'))
        .count();
    assert!(inner >= 5, "{inner} detail lines\n{text}");
}

#[test]
fn g_and_capital_g_go_to_the_first_and_last_row() {
    let mut app = seeded_app(120, 40);
    app.update(key('1'));
    let pane = app.focused_pane();
    app.update(key('G'));
    assert_eq!(app.selected(pane), app.pane_len(pane) - 1, "{pane:?}");
    app.update(key('g'));
    assert_eq!(app.selected(pane), 0);
    app.update(key('2'));
    app.update(key('G'));
    assert_eq!(app.selected(Pane::Inbox), app.inbox().items().len() - 1);
    app.update(key('g'));
    assert_eq!(app.selected(Pane::Inbox), 0);
}
