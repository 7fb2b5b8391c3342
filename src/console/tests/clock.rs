//! When time alone changes the screen (so the loop ticks every second) and when it does not (so an
//! idle console sleeps until its next poll), and where command completion gets its coins.

use super::fixtures::*;
use crate::api::ApiError;
use crate::api::model::PositionRow;
use crate::console::action::{Action, Payload, Resource};
use crate::console::app::App;
use crate::console::tab::Tab;

fn refused(app: &mut App, at: chrono::DateTime<chrono::Utc>) {
    app.update(failed(
        Resource::Whoami,
        ApiError::Unauthorized {
            message: "invalid key".into(),
        },
        at,
    ));
}

/// Ticks once at `at` and says whether the tick asked for a redraw.
fn tick_redraws(app: &mut App, at: chrono::DateTime<chrono::Utc>) -> bool {
    app.drawn();
    app.update(Action::Tick(at));
    app.dirty()
}

#[test]
fn nothing_timed_on_screen_means_no_ticks() {
    let mut app = app_with(quiet_options());
    app.update(Action::Tick(t0()));
    // Connecting: nothing has answered, nothing counts.
    assert!(!app.needs_clock());
    refused(&mut app, t0());
    // A refused key stops polling and the header's message is fixed.
    assert!(!app.needs_clock());
    assert!(!tick_redraws(&mut app, t0() + secs(1)));
    assert!(
        app.next_wakeup() >= t0() + secs(3600),
        "{}",
        app.next_wakeup()
    );
}

#[test]
fn the_header_age_ticks_once_a_feed_answered() {
    let mut app = app_with(quiet_options());
    app.update(Action::Tick(t0()));
    app.update(loaded(
        Resource::Positions,
        Payload::Positions(positions()),
        t0(),
    ));
    // "ok 0s ago" becomes "ok 1s ago".
    assert!(app.needs_clock());
    assert!(tick_redraws(&mut app, t0() + ms(1500)));
    assert_eq!(app.next_wakeup(), t0() + secs(2));
}

#[test]
fn a_countdown_ticks_only_while_its_tab_shows_it() {
    let mut app = app_with(quiet_options());
    app.update(Action::Tick(t0()));
    app.update(proposals(vec![btc_long("prop_a", t0())], t0()));
    refused(&mut app, t0());
    app.toasts_mut().clear();
    assert_eq!(app.tab(), Tab::Desk);
    assert!(app.needs_clock(), "the Desk strip counts the proposal down");
    app.update(key('5'));
    assert_eq!(app.tab(), Tab::Backtests);
    assert!(!app.needs_clock());
    assert!(!tick_redraws(&mut app, t0() + secs(1)));
    app.update(key('2'));
    assert!(app.needs_clock(), "the inbox counts it down");
    // Once it expired nothing counts any more.
    app.update(Action::Tick(t0() + secs(301)));
    assert!(!app.needs_clock());
}

#[test]
fn an_expiring_toast_redraws_once_without_the_clock() {
    let mut app = app_with(quiet_options());
    app.update(Action::Tick(t0()));
    refused(&mut app, t0());
    app.toasts_mut().clear();
    let until = t0() + secs(4);
    app.toasts_mut().push(crate::console::app::Toast {
        text: "hello".into(),
        level: crate::console::app::ToastLevel::Info,
        until,
    });
    assert_eq!(app.next_wakeup(), until);
    assert!(!tick_redraws(&mut app, t0() + secs(2)));
    assert!(tick_redraws(&mut app, until), "the toast goes away");
    assert!(app.toasts().is_empty());
}

#[test]
fn completion_coins_come_from_the_service_once_it_named_any() {
    let mut app = app_with(quiet_options());
    app.update(Action::Tick(t0()));
    let fallback = app.known_coins();
    assert!(fallback.contains(&"BTC".to_string()), "{fallback:?}");
    // An empty book names no coin: the fallback stays.
    app.update(loaded(
        Resource::Positions,
        Payload::Positions(vec![]),
        t0(),
    ));
    assert_eq!(app.known_coins(), fallback);
    let hype = PositionRow {
        coin: "HYPE".into(),
        ..PositionRow::default()
    };
    app.update(loaded(
        Resource::Positions,
        Payload::Positions(vec![hype]),
        t0(),
    ));
    assert_eq!(app.known_coins(), ["HYPE"]);
    let preview = trade_preview("venue", "ETH", "long", 1.0, 3_000.0, 2, None, None);
    app.update(proposals(vec![proposal("prop_e", t0(), preview)], t0()));
    app.update(loaded(Resource::Orders, Payload::Orders(orders()), t0()));
    let coins = app.known_coins();
    assert!(coins.contains(&"HYPE".to_string()) && coins.contains(&"ETH".to_string()));
    assert!(!coins.contains(&"XRP".to_string()), "{coins:?}");
    // Discovery rows add the coins of their pairs.
    let mut rows = top_rows();
    rows[0].pair = "AVAX-USD".into();
    *app.tabs_mut()
        .discovery
        .rows_mut(crate::console::tabs::discovery::DView::TopBacktests) = rows;
    assert!(app.known_coins().contains(&"AVAX".to_string()));
}

/// Once the header's age ticks every second, a poll's answer is drawn with that tick rather than
/// on arrival (an idle console drew three to four frames a second, one per answer); a key is
/// drawn at once, and so is an answer that brings a toast.
#[test]
fn poll_answers_are_drawn_with_the_next_tick_keys_at_once() {
    let mut app = app_with(quiet_options());
    app.update(Action::Tick(t0()));
    app.update(loaded(
        Resource::Positions,
        Payload::Positions(positions()),
        t0(),
    ));
    assert!(app.needs_clock());
    app.drawn();
    app.update(loaded(
        Resource::Positions,
        Payload::Positions(Vec::new()),
        t0() + ms(300),
    ));
    assert!(!app.dirty(), "drawn with the next second, not now");
    assert!(app.pending_draw());
    assert!(app.next_wakeup() <= t0() + secs(1));
    assert!(tick_redraws(&mut app, t0() + secs(1)));
    assert!(!app.pending_draw());
    app.drawn();
    app.update(key('2'));
    assert!(app.dirty(), "a key is drawn at once");
    app.drawn();
    app.update(proposals(vec![btc_long("prop_new", t0())], t0() + ms(1200)));
    assert!(app.dirty(), "a new proposal's toast is drawn at once");
}
