//! The journal from the update side: only proposals this console showed live are journaled.

use super::fixtures::*;
use crate::console::action::Action;
use crate::console::inbox::Status;
use crate::console::tests::fixtures::press;

#[test]
fn a_proposal_first_seen_expired_is_not_journaled() {
    let mut app = app_with(quiet_options());
    app.update(Action::Tick(t0()));
    // A fresh console lists the service's proposals: one expired by the clock (created ten
    // minutes ago, status still "staged"), one the service marks expired, one live.
    let stale = btc_long("prop_stale", t0() - secs(600));
    let mut marked = btc_long("prop_marked", t0() - secs(60));
    marked.status = "expired".into();
    let live = btc_long("prop_live", t0() - secs(290));
    let fx = app.update(proposals(vec![stale, marked, live], t0()));
    assert!(journal_lines(&fx).is_empty(), "{fx:?}");
    assert_eq!(
        app.item("prop_stale").unwrap().status(app.now()),
        Status::Expired
    );
    for s in [1, 5, 11, 60] {
        let fx = tick(&mut app, t0() + secs(s));
        let lines = journal_lines(&fx);
        let ids: Vec<_> = lines.iter().map(|l| l["proposalId"].clone()).collect();
        assert!(
            !ids.iter()
                .any(|id| id == "prop_stale" || id == "prop_marked"),
            "never shown live, yet journaled: {ids:?}"
        );
    }
    // The live one was shown, and its expiry (at +10 s) is journaled once.
    let expired: Vec<_> = app
        .inbox()
        .decisions()
        .iter()
        .map(|d| d.proposal_id.as_str())
        .collect();
    assert_eq!(expired, ["prop_live"]);
}

/// The journal lines `fx` wrote, read back as a restarted console reads its journal: newest first.
fn read_back(lines: &[serde_json::Value]) -> Vec<crate::console::inbox::Decision> {
    let mut out: Vec<_> = lines
        .iter()
        .filter_map(|l| crate::console::journal::decision_of(&l.to_string()))
        .collect();
    out.reverse();
    out
}

/// A console started at `start` that read `lines` back from its journal.
fn restarted(
    start: chrono::DateTime<chrono::Utc>,
    lines: &[serde_json::Value],
) -> crate::console::app::App {
    let mut app = crate::console::app::App::new(
        service(),
        quiet_options(),
        crate::console::keymap::Keymap::default(),
        start,
    );
    app.inbox_mut().restore_decisions(read_back(lines));
    app
}

#[test]
fn a_dismissal_survives_a_restart_and_nothing_staged_before_is_rung_in_again() {
    // The first run: x dismisses the proposal on the service (journaled `rejected`).
    let mut app = staged_app();
    let other = btc_long("prop_other", t0() + secs(1));
    app.update(proposals(
        vec![btc_long(ID, t0()), other.clone()],
        t0() + secs(1),
    ));
    app.select_proposal(crate::console::layout::Pane::Inbox, ID);
    let fx = press(&mut app, 'x');
    let lines = journal_lines(&fx);
    assert_eq!(lines.len(), 1, "{fx:?}");
    assert_eq!(lines[0]["decision"], "rejected");

    // A restart a minute later: the journal comes back, the service lists both again.
    let start = t0() + secs(60);
    let mut app = restarted(start, &lines);
    app.update(Action::Tick(start));
    let fx = app.update(proposals(vec![btc_long(ID, t0()), other], start));
    assert_eq!(
        bells(&fx),
        0,
        "nothing staged before the start rings: {fx:?}"
    );
    assert_eq!(
        app.item(ID).unwrap().status(app.now()),
        Status::Rejected,
        "the dismissal stands"
    );
    assert_eq!(
        app.item("prop_other").unwrap().status(app.now()),
        Status::Staged
    );
    let texts = toast_texts(&app);
    assert!(
        texts
            .iter()
            .any(|t| t == "1 item staged before this console started is waiting in the inbox"),
        "{texts:?}"
    );
    assert!(
        !texts.iter().any(|t| t.starts_with("New proposal")),
        "{texts:?}"
    );
    // And u still takes it back while it is live, as before the restart.
    let fx = press(&mut app, 'u');
    assert_eq!(journal_lines(&fx)[0]["decision"], "undone");
    assert_eq!(app.item(ID).unwrap().status(app.now()), Status::Staged);
}

#[test]
fn an_expiry_is_journaled_once_across_restarts() {
    let mut app = staged_app();
    let fx = tick(&mut app, t0() + secs(301));
    let lines = journal_lines(&fx);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["decision"], "expired");
    // Restarted while the proposal is still listed (its status still "staged" on the service).
    let start = t0() + secs(320);
    let mut app = restarted(start, &lines);
    let mut fx = app.update(Action::Tick(start));
    fx.extend(app.update(proposals(vec![btc_long(ID, t0())], start)));
    fx.extend(tick(&mut app, start + secs(5)));
    assert!(journal_lines(&fx).is_empty(), "{fx:?}");
}
