//! Feed states and the connection in the header: loading, failed and empty told apart per pane;
//! a failing optional feed is that feed's problem; recovery after an outage within seconds; and
//! messages (toasts, command errors) never lost. Virtual time throughout.

use super::fixtures::*;
use crate::api::ApiError;
use crate::console::action::{Action, Payload, Resource};
use crate::console::app::App;
use crate::console::layout::Pane;
use crate::console::view::{Health, connection};
use crossterm::event::KeyCode;

fn refused() -> ApiError {
    ApiError::Transport("connection refused".into())
}

/// Answers every fetch in `fx` with `answer(resource)`, at `at`; returns the effects.
fn answer_all(
    app: &mut App,
    fx: &[crate::console::action::Effect],
    at: chrono::DateTime<chrono::Utc>,
    answer: impl Fn(Resource) -> Result<Payload, ApiError>,
) -> Vec<crate::console::action::Effect> {
    // What an answer starts (recovery asks the other feeds at once) is answered too.
    let mut out = Vec::new();
    let mut pending = fetches(fx);
    while let Some(r) = pending.pop() {
        let action = match answer(r) {
            Ok(p) => loaded(r, p, at),
            Err(e) => failed(r, e, at),
        };
        let fx = app.update(action);
        pending.extend(fetches(&fx));
        out.extend(fx);
    }
    out
}

fn header(app: &App) -> String {
    render(app).lines().next().unwrap_or_default().to_string()
}

#[test]
fn recovery_is_seen_within_seconds_of_the_service_coming_back() {
    let mut app = new_app();
    let fx = tick(&mut app, t0());
    answer_all(&mut app, &fx, t0(), |r| Ok(empty_payload(r)));
    // The service goes away at +2 s: everything due then fails to connect.
    let mut now = t0() + secs(2);
    let mut fx = tick(&mut app, now);
    fx.extend(answer_all(&mut app, &fx, now, |_| Err(refused())));
    assert_eq!(connection(&app).1, Health::Down);
    // For a minute, whoami probes at least every 2 s; the other feeds back off (to 30 s).
    let mut probes = vec![now];
    let mut positions = 0;
    let end = t0() + secs(62);
    while now < end {
        now += ms(250);
        let fx = tick(&mut app, now);
        let asked = fetches(&fx);
        if asked.contains(&Resource::Whoami) {
            probes.push(now);
        }
        positions += asked.iter().filter(|r| **r == Resource::Positions).count();
        answer_all(&mut app, &fx, now, |_| Err(refused()));
        let (text, health) = connection(&app);
        assert_eq!(health, Health::Down, "{text}");
        assert!(text.starts_with("unreachable"), "{text}");
        assert!(!text.contains("last ok 0s"), "{text}");
    }
    let gaps: Vec<i64> = probes
        .windows(2)
        .map(|w| (w[1] - w[0]).num_milliseconds())
        .collect();
    assert!(gaps.len() >= 28, "{probes:?}");
    assert!(gaps.iter().all(|g| *g <= 2000), "{gaps:?}");
    assert!(
        positions <= 6,
        "positions backed off, asked {positions} times"
    );
    assert!(
        header(&app).contains("unreachable: last ok 1m02s ago, retrying in"),
        "{}",
        header(&app)
    );

    // The service is back: the next probe answers, every feed asks at once, and the header is
    // healthy within the same second.
    let back = now;
    let mut seen_ok = None;
    while now < back + secs(5) {
        now += ms(250);
        let fx = tick(&mut app, now);
        answer_all(&mut app, &fx, now, |r| Ok(empty_payload(r)));
        if connection(&app).1 == Health::Ok {
            seen_ok = Some(now);
            break;
        }
    }
    let seen = seen_ok.expect("recovered within 5 s");
    assert!(seen - back <= secs(2), "recovered after {:?}", seen - back);
    for r in Resource::ALL {
        assert!(app.feeds()[&r].error.is_none(), "{r:?} still failing");
    }
}

/// A gateway whose upstream is down answers 502 (`upstream_unreachable`): the service is as
/// unreachable as with no answer at all. The header says so in one line (not every feed's error
/// in a row), one cheap request probes every second, and recovery is seen within seconds of the
/// upstream coming back, not at the end of a 30 s backoff.
#[test]
fn a_gateways_502_is_unreachable_and_its_recovery_is_seen_within_seconds() {
    let bad_gateway = || ApiError::Server {
        status: 502,
        code: "upstream_unreachable".into(),
        message: "the upstream http://127.0.0.1:8787 is unreachable".into(),
    };
    let mut app = new_app();
    let fx = tick(&mut app, t0());
    answer_all(&mut app, &fx, t0(), |r| Ok(empty_payload(r)));
    let mut now = t0() + secs(2);
    let mut fx = tick(&mut app, now);
    fx.extend(answer_all(&mut app, &fx, now, |_| Err(bad_gateway())));
    let end = t0() + secs(62);
    while now < end {
        now += ms(250);
        let fx = tick(&mut app, now);
        answer_all(&mut app, &fx, now, |_| Err(bad_gateway()));
    }
    let (text, health) = connection(&app);
    assert_eq!(health, Health::Down);
    assert!(text.starts_with("unreachable: last ok"), "{text}");
    let back = now;
    let mut seen_ok = None;
    while now < back + secs(20) {
        now += ms(250);
        let fx = tick(&mut app, now);
        answer_all(&mut app, &fx, now, |r| Ok(empty_payload(r)));
        if connection(&app).1 == Health::Ok {
            seen_ok = Some(now);
            break;
        }
    }
    let seen = seen_ok.expect("recovered within 20 s");
    assert!(seen - back <= secs(2), "recovered after {:?}", seen - back);
}

/// A gateway started without a key of its own answers the supervisor's reads 503
/// `upstream_key_not_configured`: it answered, and the header gives its words (what to do), not
/// "unreachable".
#[test]
fn a_503_names_what_the_service_said() {
    let no_key = || {
        ApiError::Server {
        status: 503,
        code: "upstream_key_not_configured".into(),
        message: "this gateway has no key of its own for the account; start it with --upstream-key-env VAR".into(),
    }
    };
    let mut app = new_app();
    let fx = tick(&mut app, t0());
    answer_all(&mut app, &fx, t0(), |_| Err(no_key()));
    let (text, health) = connection(&app);
    assert_eq!(health, Health::Down);
    assert!(
        text.starts_with(
            "unavailable (this gateway has no key of its own for the account; start it with --upstream-key-env VAR), retrying"
        ),
        "{text}"
    );
}

/// On a gateway the console stops polling the service's proposals list (the gateway's inbox holds
/// what can be approved). An error that list got before the console knew is no longer news: the
/// header does not keep showing it.
#[test]
fn a_feed_no_longer_polled_leaves_the_header() {
    let mut app = new_app();
    let fx = tick(&mut app, t0());
    answer_all(&mut app, &fx, t0(), |r| match r {
        Resource::Proposals => Err(ApiError::Server {
            status: 500,
            code: "internal".into(),
            message: "the proposals list failed".into(),
        }),
        other => Ok(empty_payload(other)),
    });
    assert!(
        connection(&app).0.starts_with("proposals: "),
        "{:?}",
        connection(&app)
    );
    let (items, agents) = super::gate::two_agents();
    app.update(super::gate::gate_loaded(items, agents, t0() + secs(1)));
    let (text, health) = connection(&app);
    assert!(!text.contains("proposals"), "{text}");
    assert_eq!(health, Health::Ok, "{text}");
}

#[test]
fn a_failure_in_the_same_second_as_an_answer_never_says_last_ok_0s_ago() {
    let mut app = new_app();
    let fx = tick(&mut app, t0());
    answer_all(&mut app, &fx, t0(), |r| match r {
        Resource::Orders => Err(refused()),
        other => Ok(empty_payload(other)),
    });
    let (text, _) = connection(&app);
    assert!(!text.contains("0s ago"), "{text}");
    assert!(text.contains("unreachable"), "{text}");
    // Then another feed answers: the service is reachable, the one feed is failing.
    app.update(loaded(
        Resource::Positions,
        Payload::Positions(vec![]),
        t0() + ms(300),
    ));
    let (text, health) = connection(&app);
    assert!(!text.contains("unreachable"), "{text}");
    assert!(
        text.starts_with("orders: could not reach the service"),
        "{text}"
    );
    assert_eq!(health, Health::Down, "orders is a Desk feed");
}

#[test]
fn an_optional_feed_failing_names_it_and_is_not_a_connection_error() {
    let mut app = new_app();
    app.set_size(160, 24);
    let fx = tick(&mut app, t0());
    answer_all(&mut app, &fx, t0(), |r| match r {
        Resource::Audit => Err(ApiError::Decode(
            "expected a sequence at line 1 column 9 for logs".into(),
        )),
        other => Ok(empty_payload(other)),
    });
    let (text, health) = connection(&app);
    assert_eq!(health, Health::Degraded);
    assert!(text.starts_with("logs: unexpected response: "), "{text}");
    assert!(
        text.contains('…'),
        "the message is cut with an ellipsis: {text}"
    );
    assert!(text.ends_with("; positions, orders, pnl ok"), "{text}");
    let h = header(&app);
    assert!(h.contains("logs: unexpected response"), "{h}");
    assert!(!h.contains("unreachable"), "{h}");

    // The Logs tab's audit pane shows the error in its own place.
    app.update(key('3'));
    let screen = render(&app);
    assert!(
        screen.contains("logs: unexpected response: expected a sequence"),
        "{screen}"
    );
}

fn desk(app: &mut App, w: u16, h: u16) -> String {
    app.update(Action::Resize(w, h));
    render(app)
}

#[test]
fn desk_panes_tell_loading_failed_and_empty_apart() {
    // Nothing answered yet.
    let mut app = new_app();
    tick(&mut app, t0());
    let loading = desk(&mut app, 100, 24);
    insta::assert_snapshot!("feeds_desk_loading_100x24", loading);
    assert!(loading.contains("loading positions…"), "{loading}");
    assert!(loading.contains("loading orders…"), "{loading}");
    assert!(loading.contains("loading pnl…"), "{loading}");
    assert!(!loading.contains("no open positions"), "{loading}");

    // Positions fail with the service's message; orders answer empty.
    app.update(failed(
        Resource::Positions,
        ApiError::Server {
            status: 500,
            code: "internal".into(),
            message: "positions store offline".into(),
        },
        t0() + secs(1),
    ));
    app.update(loaded(
        Resource::Orders,
        Payload::Orders(vec![]),
        t0() + secs(1),
    ));
    tick(&mut app, t0() + secs(1));
    let failed_screen = desk(&mut app, 100, 24);
    insta::assert_snapshot!("feeds_desk_failed_100x24", failed_screen);
    assert!(
        failed_screen.contains("positions: server error 500: positions store offline"),
        "{failed_screen}"
    );
    assert!(
        failed_screen.contains("no resting orders"),
        "{failed_screen}"
    );
    assert!(
        !failed_screen.contains("no open positions"),
        "{failed_screen}"
    );

    // Positions answer empty: now, and only now, "no open positions".
    app.update(loaded(
        Resource::Positions,
        Payload::Positions(vec![]),
        t0() + secs(2),
    ));
    tick(&mut app, t0() + secs(2));
    let empty = desk(&mut app, 100, 24);
    assert!(empty.contains("no open positions"), "{empty}");
    assert!(!empty.contains("loading positions"), "{empty}");
}

// ---- messages ----------------------------------------------------------------------------------

const LONG: &str = "Propose DOGE failed: the venue refused the order because the requested \
    leverage of 50x exceeds the maximum of 20x allowed for DOGE on this account tier; lower the \
    leverage or the size and stage again, or ask the operator to raise the tier limit for this \
    account before the next session begins";

#[test]
fn a_long_toast_wraps_and_the_logs_keep_it_whole() {
    let mut app = seeded_app(80, 24);
    app.toast(LONG, crate::console::app::ToastLevel::Error);
    let text = render(&app);
    insta::assert_snapshot!("feeds_long_toast_80x24", text);
    assert!(
        text.contains("Propose DOGE failed: the venue refused"),
        "{text}"
    );
    assert!(text.contains("… (see Logs › messages)"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80));

    // The toast goes; the Logs tab's messages list has it, whole when selected.
    tick(&mut app, t0() + secs(10));
    assert!(app.toasts().is_empty());
    app.update(Action::Resize(120, 40));
    app.update(key('3'));
    app.update(code(KeyCode::Tab));
    app.update(code(KeyCode::Tab));
    assert_eq!(app.focused_pane(), crate::console::layout::Pane::Messages);
    let logs = render(&app);
    insta::assert_snapshot!("feeds_messages_120x40", logs);
    assert!(logs.contains("error"), "{logs}");
    assert!(logs.contains("before the next session begins"), "{logs}");
}

#[test]
fn a_command_error_shows_while_a_logs_filter_is_set() {
    let mut app = seeded_app(120, 40);
    app.update(key('3'));
    app.update(key('/'));
    super::fixtures::type_text(&mut app, "confirm");
    app.update(code(KeyCode::Enter));
    assert_eq!(app.tables().query(Pane::Audit).filter, "confirm");
    app.update(key(':'));
    type_text(&mut app, "/propose BTC sideways 0.01");
    app.update(code(KeyCode::Enter));
    let text = render(&app);
    insta::assert_snapshot!("feeds_command_error_with_filter_120x40", text);
    assert!(text.contains("invalid side `sideways`"), "{text}");
    // The filter still says itself in its pane's title.
    assert!(text.contains("/confirm ("), "{text}");
    // And the error is in the messages list, which the filter does not touch.
    assert!(
        app.messages().iter().any(|m| m.text.contains("sideways")),
        "{:?}",
        app.messages()
    );
}

// ---- PAPER / LIVE ------------------------------------------------------------------------------

fn remote_app(summary: serde_json::Value) -> App {
    let mut service = service();
    service.sandbox = false;
    service.host = "agents.example.com".into();
    let mut app = App::new(
        service,
        quiet_options(),
        crate::console::keymap::Keymap::default(),
        t0(),
    );
    app.set_size(100, 6);
    let fx = tick(&mut app, t0());
    let whoami: crate::api::model::Whoami = serde_json::from_value(serde_json::json!({
        "messengerId": "desk-ops",
        "summary": summary,
    }))
    .expect("whoami decodes whatever paperTrading holds");
    answer_all(&mut app, &fx, t0(), |r| match r {
        Resource::Whoami => Ok(Payload::Whoami(Box::new(whoami.clone()))),
        other => Ok(empty_payload(other)),
    });
    app
}

#[test]
fn the_badge_says_what_the_service_says() {
    use crate::console::view::{Badge, badge};
    let paper = remote_app(serde_json::json!({"paperTrading": true}));
    assert_eq!(badge(&paper), Badge::Paper);
    insta::assert_snapshot!("feeds_header_paper", header(&paper));
    let live = remote_app(serde_json::json!({"paperTrading": false}));
    assert_eq!(badge(&live), Badge::Live);
    insta::assert_snapshot!("feeds_header_live", header(&live));
    assert!(header(&paper).starts_with(" PAPER "), "{}", header(&paper));
    assert!(header(&live).starts_with(" LIVE "), "{}", header(&live));

    // Tolerated shapes: text, absent, something else.
    assert_eq!(
        badge(&remote_app(serde_json::json!({"paperTrading": "true"}))),
        Badge::Paper
    );
    assert_eq!(
        badge(&remote_app(serde_json::json!({"paperTrading": "TRUE"}))),
        Badge::Paper
    );
    assert_eq!(
        badge(&remote_app(serde_json::json!({"paperTrading": "false"}))),
        Badge::Live
    );
    assert_eq!(badge(&remote_app(serde_json::json!({}))), Badge::Live);
    assert_eq!(
        badge(&remote_app(serde_json::json!({"paperTrading": 1}))),
        Badge::Live
    );
    assert_eq!(badge(&remote_app(serde_json::Value::Null)), Badge::Live);

    // Before whoami answers, nothing is claimed.
    let mut service = service();
    service.sandbox = false;
    let fresh = App::new(service, quiet_options(), Default::default(), t0());
    assert_eq!(badge(&fresh), Badge::Unknown);
    // The embedded sandbox is paper by construction.
    assert_eq!(badge(&new_app()), Badge::Sandbox);
}

// ---- a small terminal ----------------------------------------------------------------------------

#[test]
fn desk_60x20_shows_a_row_of_every_table() {
    let mut app = seeded_app(60, 20);
    app.update(key('1'));
    let text = render(&app);
    insta::assert_snapshot!("feeds_desk_60x20", text);
    assert_eq!(text.lines().count(), 20);
    assert!(text.lines().all(|l| l.chars().count() <= 60), "{text}");
    let screen = crate::console::layout::compute(60, 20, &app.shape());
    for pane in [
        crate::console::layout::Pane::Positions,
        crate::console::layout::Pane::Orders,
        crate::console::layout::Pane::Strip,
    ] {
        assert!(screen.rows(pane) >= 1, "{pane:?} shows no row\n{text}");
    }
    // The strip's one row is the item with the least time left.
    for needle in ["BTC", "@72,000", "0:09", "25,431.77"] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

#[test]
fn a_service_that_stops_answering_is_not_ok() {
    // SIGSTOP: requests are accepted and never answered, so nothing fails for a while.
    let mut app = new_app();
    let fx = tick(&mut app, t0());
    answer_all(&mut app, &fx, t0(), |r| Ok(empty_payload(r)));
    tick(&mut app, t0() + secs(2));
    assert!(app.feeds()[&Resource::Positions].poll.in_flight);
    tick(&mut app, t0() + secs(4));
    assert_eq!(connection(&app).1, Health::Ok, "{}", connection(&app).0);
    tick(&mut app, t0() + secs(9));
    let (text, health) = connection(&app);
    assert_eq!(text, "no answer for 9s, waiting");
    assert_eq!(health, Health::Down);
}

/// The audit log is shown on the Logs tab only: elsewhere it is asked every minute, and the tab
/// asks it at once when it comes on screen, then at its interval.
#[test]
fn the_audit_log_is_asked_rarely_off_its_tab_and_at_once_on_it() {
    let mut app = seeded_app(120, 40);
    let at = t0() + secs(1);
    app.update(loaded(Resource::Audit, Payload::Audit(audit()), at));
    assert_eq!(
        app.feeds()[&Resource::Audit].poll.next_due,
        Some(at + secs(60))
    );
    let fx = app.update(key('3'));
    assert!(
        fx.contains(&crate::console::action::Effect::Fetch(Resource::Audit)),
        "{fx:?}"
    );
    app.update(loaded(
        Resource::Audit,
        Payload::Audit(audit()),
        at + secs(2),
    ));
    assert!(app.feeds()[&Resource::Audit].poll.next_due < Some(at + secs(60)));
}

/// Wide enough for the messages beside it, the request log still shows every column, its
/// latency too.
#[test]
fn the_request_log_shows_its_latency_beside_the_messages() {
    for width in [140, 220] {
        let mut app = seeded_app(width, 45);
        app.update(key('3'));
        let text = render(&app);
        let header = text
            .lines()
            .find(|l| l.contains("Operation") && l.contains("Status"))
            .unwrap_or_else(|| panic!("no request log header at {width}:\n{text}"));
        assert!(header.contains("Latency"), "{width}: {header}");
    }
}
