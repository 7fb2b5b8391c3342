//! The console on a long-polled gateway: the inbox poll held by the gateway until something
//! changes, the agents and the guard asked again only when it did.

use super::fixtures::*;
use super::gate::{gate_app, two_agents};
use crate::api::model::{GateAgent, GateAgents, GateInbox, GateItem};
use crate::console::action::{Action, Answer, Effect, Payload, Resource};
use crate::console::app::App;

/// A gateway's inbox answer that carries its count of changes (`agents` with it or not).
fn versioned(
    items: Vec<GateItem>,
    agents: Option<Vec<GateAgent>>,
    at: chrono::DateTime<chrono::Utc>,
    version: u64,
    latency: std::time::Duration,
) -> Action {
    Action::answered(
        at,
        latency,
        Answer::GateLoaded {
            result: Ok(Box::new((
                GateInbox {
                    items,
                    version: Some(version),
                },
                agents.map(|agents| GateAgents {
                    you: None,
                    gateway: None,
                    agents,
                }),
            ))),
        },
    )
}

/// An answer, then the clock's wakeup at its time (the loop wakes for the poll it made due).
fn answer_then_tick(app: &mut App, answer: Action) -> Vec<Effect> {
    let Action::Answered { at, .. } = &answer else {
        unreachable!()
    };
    let at = *at;
    let mut fx = app.update(answer);
    fx.extend(app.update(Action::Tick(at)));
    fx
}

fn inbox_polls(fx: &[Effect]) -> Vec<&Effect> {
    fx.iter()
        .filter(|e| matches!(e, Effect::FetchGate | Effect::FetchGateInbox { .. }))
        .collect()
}

/// A gateway that answers with a version is long-polled: the next inbox poll goes out at once
/// with that version and the gateway holds it; the agents and the guard are asked again only when
/// the version moves. One answered at once with the version it was sent (a gateway not holding
/// it) waits the interval, so nothing is asked in a loop.
#[test]
fn a_gateway_that_counts_its_changes_is_long_polled() {
    let mut app = gate_app(120, 40);
    let (items, agents) = two_agents();
    let quick = std::time::Duration::from_millis(5);
    let held = std::time::Duration::from_secs(25);
    let at = t0() + secs(1);
    let fx = answer_then_tick(
        &mut app,
        versioned(items.clone(), Some(agents.clone()), at, 7, quick),
    );
    assert_eq!(
        inbox_polls(&fx),
        vec![&Effect::FetchGateInbox { since: Some(7) }]
    );
    // The gateway held it 25 s and nothing changed: asked again at once, nothing else.
    let at = at + secs(25);
    let fx = answer_then_tick(&mut app, versioned(items.clone(), None, at, 7, held));
    assert_eq!(
        inbox_polls(&fx),
        vec![&Effect::FetchGateInbox { since: Some(7) }]
    );
    assert!(!fx.contains(&Effect::FetchGuard), "{fx:?}");
    // Something changed: the agents come with the next poll, and the guard is asked.
    let fx = answer_then_tick(
        &mut app,
        versioned(items.clone(), None, at + secs(2), 8, held),
    );
    assert_eq!(inbox_polls(&fx), vec![&Effect::FetchGate]);
    assert!(fx.contains(&Effect::FetchGuard), "{fx:?}");
    let fx = answer_then_tick(
        &mut app,
        versioned(items.clone(), Some(agents), at + secs(2), 8, quick),
    );
    assert_eq!(
        inbox_polls(&fx),
        vec![&Effect::FetchGateInbox { since: Some(8) }]
    );
    // Came back at once with the version it was sent: not held, so the interval applies.
    let fx = answer_then_tick(&mut app, versioned(items, None, at + secs(2), 8, quick));
    assert!(inbox_polls(&fx).is_empty(), "{fx:?}");
    let fx = app.update(Action::Tick(at + secs(3)));
    assert_eq!(
        inbox_polls(&fx),
        vec![&Effect::FetchGateInbox { since: Some(8) }]
    );
}

fn next_due(app: &App, r: Resource) -> Option<chrono::DateTime<chrono::Utc>> {
    app.feeds()[&r].poll.next_due
}

/// On a long-polled gateway a flat account (no position, no open order) can change only by an
/// execution, which the gateway's inbox tells at once: its feeds are asked every 30 s, and an
/// execution seen in the inbox, whoever approved it, asks them at once. With a position, the
/// marks move it, so it is asked at its interval.
#[test]
fn a_flat_account_on_a_long_polled_gateway_is_asked_rarely_and_at_once_after_an_execution() {
    let mut app = gate_app(120, 40);
    let (items, agents) = two_agents();
    let at = t0() + secs(1);
    answer_then_tick(
        &mut app,
        versioned(items.clone(), Some(agents), at, 7, LATENCY),
    );
    app.update(loaded(Resource::Orders, Payload::Orders(vec![]), at));
    app.update(loaded(Resource::Positions, Payload::Positions(vec![]), at));
    assert_eq!(next_due(&app, Resource::Positions), Some(at + secs(30)));
    app.update(loaded(Resource::Pnl, Payload::Pnl(Box::new(pnl())), at));
    assert_eq!(next_due(&app, Resource::Pnl), Some(at + secs(30)));

    // Another supervisor's approval executed the demo agent's item.
    let mut done = items.clone();
    done[0].status = crate::api::model::ItemStatus::Executed;
    let later = at + secs(4);
    let fx = answer_then_tick(&mut app, versioned(done, None, later, 8, LATENCY));
    assert!(fx.contains(&Effect::Fetch(Resource::Positions)), "{fx:?}");

    // Holding a position again: the feed keeps its interval.
    app.update(loaded(
        Resource::Positions,
        Payload::Positions(positions()),
        later,
    ));
    assert!(next_due(&app, Resource::Positions) < Some(later + secs(30)));
}

/// Asked every 30 s on purpose, a flat account's feeds are not marked stale between answers.
#[test]
fn a_quiet_account_is_not_shown_as_stale() {
    let mut app = gate_app(120, 40);
    let (items, agents) = two_agents();
    let at = t0() + secs(1);
    answer_then_tick(&mut app, versioned(items, Some(agents), at, 7, LATENCY));
    app.update(loaded(Resource::Orders, Payload::Orders(vec![]), at));
    app.update(loaded(Resource::Positions, Payload::Positions(vec![]), at));
    let feed = &app.feeds()[&Resource::Positions];
    assert!(!feed.is_stale(at + secs(12)));
    assert!(feed.is_stale(at + secs(40)));
}
