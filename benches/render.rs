//! Frame cost of the console's views: one full `terminal.draw(..)` (layout, widgets, buffer diff)
//! into a 200×60 `TestBackend`, per iteration.
//!
//! Goal: ≤ 1 ms per frame, whatever the size of the data (the tables render only their visible
//! window of rows). Run with `cargo bench --bench render`.

use agentdesk::api::model::{
    Candle, Candles, Leverage, MarginSummary, OpenOrderRow, PnlPeriods, PnlSummary, PositionRow,
    Preview, Proposal, Whoami,
};
use agentdesk::console::action::{Action, Answer, Payload, Resource};
use agentdesk::console::app::{App, ServiceInfo};
use agentdesk::console::feeds::Options;
use agentdesk::console::inbox::{Decision, DecisionKind, InboxItem, LocalState, Source};
use agentdesk::console::keymap::Keymap;
use agentdesk::console::layout::Pane;
use agentdesk::console::tab::Tab;
use agentdesk::console::theme::Theme;
use agentdesk::console::view;
use chrono::{DateTime, Duration as TimeDelta, TimeZone, Utc};
use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::hint::black_box;
use std::time::Duration;

const WIDTH: u16 = 200;
const HEIGHT: u16 = 60;
const COINS: [&str; 12] = [
    "BTC", "ETH", "SOL", "ARB", "DOGE", "AVAX", "LINK", "OP", "SUI", "APT", "TIA", "INJ",
];

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 6, 1, 12, 0, 0).unwrap()
}

fn position(i: usize) -> PositionRow {
    let coin = COINS[i % COINS.len()];
    let long = !i.is_multiple_of(3);
    let entry = 100.0 + (i % 977) as f64 * 13.37;
    let mark = entry * (1.0 + ((i % 17) as f64 - 8.0) / 400.0);
    let szi = (1 + i % 50) as f64 * 0.013 * if long { 1.0 } else { -1.0 };
    PositionRow {
        exchange: if i.is_multiple_of(2) { "hl" } else { "paper" }.into(),
        position_id: format!("pos_{i:08}"),
        coin: coin.into(),
        side: if long { "long" } else { "short" }.into(),
        szi,
        entry_px: entry,
        mark_px: mark,
        position_value: szi.abs() * mark,
        unrealized_pnl: (mark - entry) * szi,
        return_on_equity: 0.0,
        liquidation_px: (!i.is_multiple_of(5)).then_some(entry * if long { 0.8 } else { 1.2 }),
        leverage: Leverage {
            kind: "cross".into(),
            value: 1 + (i % 20) as u32,
        },
        margin_used: szi.abs() * entry / (1 + i % 20) as f64,
        max_leverage: 50,
        ..Default::default()
    }
}

fn order(i: usize, now: DateTime<Utc>) -> OpenOrderRow {
    let coin = COINS[(i * 7) % COINS.len()];
    let trigger = i.is_multiple_of(4);
    let px = 50.0 + (i % 1013) as f64 * 7.91;
    OpenOrderRow {
        exchange: "hl".into(),
        oid: 1_000_000 + i as u64,
        coin: coin.into(),
        side: if i.is_multiple_of(2) { "B" } else { "A" }.into(),
        limit_px: px,
        sz: (1 + i % 40) as f64 * 0.01,
        orig_sz: (1 + i % 40) as f64 * 0.02,
        order_type: if trigger { "Stop Market" } else { "Limit" }.into(),
        trigger_px: trigger.then_some(px * 0.97),
        trigger_condition: if trigger { "below" } else { "" }.into(),
        is_trigger: trigger,
        reduce_only: trigger,
        tif: Some("Gtc".into()),
        timestamp: (now - TimeDelta::seconds((i % 7200) as i64)).timestamp_millis(),
        ..Default::default()
    }
}

fn proposal(i: usize, now: DateTime<Utc>, status: &str, left_secs: i64) -> InboxItem {
    let coin = COINS[i % COINS.len()];
    let mark = 100.0 + (i % 300) as f64 * 11.0;
    let kind = if i % 10 == 9 { "close" } else { "trade" };
    InboxItem {
        proposal: Proposal {
            proposal_id: format!("prop_{i:016x}"),
            status: status.into(),
            kind: kind.into(),
            created_at: Some(now - TimeDelta::seconds(300 - left_secs)),
            expires_at: Some(now + TimeDelta::seconds(left_secs)),
            preview: Preview {
                kind: kind.into(),
                exchange: "hl".into(),
                coin: coin.into(),
                asset: coin.into(),
                direction: if i.is_multiple_of(2) { "long" } else { "short" }.into(),
                order_type: "market".into(),
                size: 0.05 * (1 + i % 9) as f64,
                mark_px: mark,
                notional: 0.05 * (1 + i % 9) as f64 * mark,
                leverage: 5,
                margin: 0.01 * (1 + i % 9) as f64 * mark,
                tp: Some(mark * 1.04),
                sl: Some(mark * 0.98),
                est_liquidation_px: Some(mark * 0.81),
                ..Default::default()
            },
            ..Default::default()
        },
        source: Source::Service,
        local: LocalState::None,
        first_seen: now - TimeDelta::seconds(300 - left_secs),
        expiry_noted: false,
        tool: None,
        request: None,
    }
}

fn pnl() -> PnlSummary {
    PnlSummary {
        total_portfolio_value: 1_234_567.89,
        total_unrealized_pnl: -4_321.5,
        total_realized_pnl: Some(98_765.43),
        total_positions: 0,
        pnl: PnlPeriods {
            total: 98_765.43,
            today: 1_234.5,
            week: -2_345.6,
            month: 12_345.6,
        },
        margin_summary: MarginSummary {
            account_value: 1_234_567.89,
            total_margin_used: Some(345_678.9),
            total_ntl_pos: 2_345_678.9,
            total_raw_usd: 888_888.8,
        },
        withdrawable: Some(876_543.21),
        as_of: Some(t0()),
        ..Default::default()
    }
}

/// A Desk with `n_positions` positions, `n_orders` open orders, a PnL summary with a full equity
/// history, and a few staged proposals (the strip's countdowns), on a 200×60 screen.
fn desk_app(n_positions: usize, n_orders: usize) -> App {
    let now = t0();
    let service = ServiceInfo {
        host: "127.0.0.1:8787".into(),
        sandbox: true,
        key_fingerprint: "adk_1a2b3c4d…9f".into(),
    };
    let mut app = App::new(service, Options::default(), Keymap::default(), now);
    app.set_size(WIDTH, HEIGHT);
    app.account_mut().whoami = Some(Whoami {
        messenger_id: "demo-desk".into(),
        ..Default::default()
    });
    for feed in app.feeds_mut().values_mut() {
        feed.poll.updated_at = Some(now - TimeDelta::milliseconds(700));
        feed.poll.latency = Some(Duration::from_millis(3));
        feed.poll.ask_at(now + TimeDelta::seconds(1));
    }
    // Through update, as the poller delivers them, so the console's per-coin index is built.
    app.update(Action::answered(
        now,
        Duration::from_millis(3),
        Answer::Loaded {
            resource: Resource::Positions,
            result: Ok(Payload::Positions((0..n_positions).map(position).collect())),
        },
    ));
    for feed in app.feeds_mut().values_mut() {
        feed.poll.in_flight = false;
        feed.poll.ask_at(now + TimeDelta::seconds(1));
    }
    app.account_mut().orders = (0..n_orders).map(|i| order(i, now)).collect();
    let mut summary = pnl();
    summary.total_positions = n_positions as u32;
    app.account_mut().pnl = Some(summary);
    // The console keeps at most 600 points: a full history.
    app.account_mut().equity_history = (0..600)
        .map(|i| {
            let x = i as f64;
            (
                now - TimeDelta::seconds(2 * (600 - i)),
                1_230_000.0 + 4_000.0 * (x / 37.0).sin() + 9.0 * x,
            )
        })
        .collect();
    // Staged proposals with 4:50, 2:30, 0:45 and 0:10 left, plus one already decided.
    *app.inbox_mut().fixture_items() = vec![
        proposal(1, now, "staged", 290),
        proposal(2, now, "staged", 150),
        proposal(3, now, "staged", 45),
        proposal(4, now, "staged", 10),
        proposal(5, now, "executed", 200),
    ];
    // The tables' views built, as after the poller's answers (a frame over a view older than its
    // rows builds one of its own, a cost no live frame has).
    app.update(Action::Tick(now));
    // The cursor in the middle of both tables: windowing must not depend on where it is.
    app.select(Pane::Positions, n_positions / 2);
    app.select(Pane::Orders, n_orders / 2);
    app
}

/// The Proposals tab with `n` inbox items in every state, the selected one a trade (its detail
/// panel computes the live risk preview against `app.account().positions`), and 200 decisions.
fn proposals_app(n: usize, n_positions: usize) -> App {
    let now = t0();
    let mut app = desk_app(n_positions, 100);
    app.show(Tab::Proposals);
    *app.inbox_mut().fixture_items() = (0..n)
        .map(|i| {
            let left = 300 - (i % 320) as i64;
            let mut item = proposal(i, now, if i % 7 == 3 { "executed" } else { "staged" }, left);
            item.local = match i % 11 {
                1 => LocalState::Approved("bought 0.1 BTC at 65000 (oid 1234)".into()),
                2 => LocalState::Rejected,
                3 => LocalState::Failed("margin insufficient".into()),
                _ => LocalState::None,
            };
            item
        })
        .collect();
    // A staged trade under the cursor, so the detail panel shows the risk preview, in a coin no
    // position holds: the preview's lookup of a held position walks all of `app.account().positions`.
    let mut selected = proposal(n / 2 * 10, now, "staged", 200);
    selected.proposal.preview.coin = "WIF".into();
    selected.proposal.preview.asset = "WIF".into();
    let id = selected.proposal.proposal_id.clone();
    app.inbox_mut().fixture_items()[n / 2] = selected;
    // As the poller's answers leave it: the tables' views built, then the trade selected, and
    // two hours of its coin's one-minute candles for the chart under the detail.
    app.update(Action::Tick(now));
    app.select_proposal(Pane::Inbox, &id);
    let candles = Candles {
        coin: "WIF".into(),
        interval: "1m".into(),
        candles: (0..120)
            .map(|i| {
                let x = i as f64;
                let open = 2.0 * (1.0 + 0.01 * (x / 13.0).sin());
                let close = 2.0 * (1.0 + 0.01 * ((x + 1.0) / 13.0).sin());
                Candle {
                    time: now - TimeDelta::minutes(120 - i),
                    open,
                    high: open.max(close),
                    low: open.min(close),
                    close,
                }
            })
            .collect(),
    };
    app.update(Action::answered(
        now,
        Duration::from_millis(3),
        Answer::CandlesLoaded {
            coin: "WIF".into(),
            result: Ok(Box::new(candles)),
        },
    ));
    app.inbox_mut().restore_decisions(
        (0..200)
            .map(|i| Decision {
                proposal_id: format!("prop_{i:016x}"),
                kind: [
                    DecisionKind::Approved,
                    DecisionKind::Rejected,
                    DecisionKind::Expired,
                    DecisionKind::Failed,
                ][i % 4],
                at: now - TimeDelta::seconds(i as i64 * 30),
                summary: "long 0.25 BTC 5x".into(),
                result: "bought 0.25 BTC at 65000 (oid 1234)".into(),
            })
            .collect(),
    );
    app
}

/// Draws `app` once per iteration, moving its clock by a second each time (cycling over a minute)
/// so countdowns and ages change and the buffer diff has real work, as on a live console.
fn bench_draw(c: &mut Criterion, name: &str, mut app: App, expect: &[&str]) {
    let theme = Theme::dark();
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).unwrap();
    let base = app.now();
    let mut tick = 0i64;
    // Sanity: the frame really shows the data.
    terminal
        .draw(|f| view::draw(f, &app, &theme))
        .expect("draw");
    let screen: String = terminal
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|cell| cell.symbol())
        .collect();
    for text in expect {
        assert!(
            screen.contains(text),
            "{name}: {text:?} not on screen:\n{}",
            terminal.backend()
        );
    }
    c.bench_function(name, |b| {
        b.iter(|| {
            tick = (tick + 1) % 60;
            app.set_clock(base + TimeDelta::seconds(tick));
            terminal
                .draw(|f| view::draw(f, black_box(&app), &theme))
                .expect("draw");
        })
    });
    black_box(terminal.backend().buffer());
}

fn desk(c: &mut Criterion) {
    bench_draw(
        c,
        "desk/100 positions, 100 orders",
        desk_app(100, 100),
        &["Positions", "Open orders", "Staged proposals", "Equity"],
    );
    bench_draw(
        c,
        "desk/100k positions, 100k orders",
        desk_app(100_000, 100_000),
        &["of 100000", "Staged proposals", "Equity"],
    );
}

fn proposals(c: &mut Criterion) {
    bench_draw(
        c,
        "proposals/1k inbox, 100 positions",
        proposals_app(1_000, 100),
        &["of 1000", "As it will execute", "WIF", "Decisions"],
    );
    bench_draw(
        c,
        "proposals/1k inbox, 100k positions",
        proposals_app(1_000, 100_000),
        &["of 1000", "As it will execute", "WIF", "Decisions"],
    );
    // Issue #22's inbox at scale: a gateway's 10,000 pending items from 100 agents.
    let mut at_scale = proposals_app(10_000, 100);
    for item in at_scale.inbox_mut().fixture_items().iter_mut() {
        item.source = Source::Gateway;
    }
    bench_draw(
        c,
        "proposals/10k gateway inbox, 100 positions",
        at_scale,
        &[
            "of 10000",
            "As it will execute",
            "WIF · 1m candles",
            "Decisions",
        ],
    );
}

/// `App::update` on a tick with the clock's second moved, with 10,000 inbox items: what rebuilds
/// every table's view (the inbox's sorted by time left) and follows the inbox's selections.
fn update(c: &mut Criterion) {
    let mut app = proposals_app(10_000, 100);
    let base = app.now();
    let mut tick = 0i64;
    c.bench_function("update/10k inbox, a tick of a new second", |b| {
        b.iter(|| {
            tick = (tick + 1) % 60;
            black_box(app.update(Action::Tick(base + TimeDelta::seconds(tick))));
        })
    });
    let mut filtered = proposals_app(10_000, 100);
    filtered.set_query(Pane::Inbox, |q| q.filter = "status:pending coin:btc".into());
    c.bench_function(
        "update/10k inbox filtered by status and coin, a tick",
        |b| {
            b.iter(|| {
                tick = (tick + 1) % 60;
                black_box(filtered.update(Action::Tick(base + TimeDelta::seconds(tick))));
            })
        },
    );
}

/// Layout alone (also run by `App::update` to map mouse clicks): it scans the inbox.
fn layout(c: &mut Criterion) {
    let app = proposals_app(1_000, 100);
    let mut desk = desk_app(100, 100);
    *desk.inbox_mut() = app.inbox().clone();
    c.bench_function("layout/desk, 1k inbox", |b| {
        b.iter(|| agentdesk::console::layout::compute(WIDTH, HEIGHT, &black_box(&desk).shape()))
    });
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = desk, proposals, update, layout
}
criterion_main!(benches);
