//! The journal from the update side: only proposals this console showed live are journaled.

use super::fixtures::*;
use crate::console::action::Action;
use crate::console::inbox::Status;

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
        app.item("prop_stale").unwrap().status(app.now),
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
        .inbox
        .decisions()
        .iter()
        .map(|d| d.proposal_id.as_str())
        .collect();
    assert_eq!(expired, ["prop_live"]);
}
