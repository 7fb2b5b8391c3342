//! Snapshots of the rendered screens (symbols only) from the seeded fixture at a fixed time.
//! Review changes with `INSTA_UPDATE=always cargo test --lib console::tests` and a diff of
//! `src/console/tests/snapshots/`.

use super::fixtures::*;
use crate::console::action::{Action, Answer};
use crate::console::app::App;
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use crate::console::tab::Tab;
use crossterm::event::KeyCode;

fn on_tab(width: u16, height: u16, tab_key: char) -> App {
    let mut app = seeded_app(width, height);
    app.update(key(tab_key));
    app
}

fn snap(name: &str, app: &App) -> String {
    let text = render(app);
    // The same state draws the same screen.
    assert_eq!(text, render(app), "{name} is not deterministic");
    insta::assert_snapshot!(name, text);
    text
}

#[test]
fn desk_120x40() {
    let app = on_tab(120, 40, '1');
    assert_eq!(app.tab(), Tab::Desk);
    let text = snap("desk_120x40", &app);
    // What a supervisor must see, whatever the snapshot says.
    for needle in [
        "SANDBOX",
        "desk-ops",
        "25,431.77",
        "venue2",
        "DOGE",
        "+90.00",
        "-107.50",
        "@72,000",
        "@61,000",
        ID_FRESH,
        "3:12",
        "0:47",
        "0:09",
    ] {
        assert!(
            text.contains(needle),
            "desk 120x40 lacks {needle:?}\n{text}"
        );
    }
    // The strip lists only what can still be approved.
    assert!(!text.contains(ID_EXPIRED));
    assert!(!text.contains(ID_APPROVED));
}

#[test]
fn desk_80x24() {
    let app = on_tab(80, 24, '1');
    let text = snap("desk_80x24", &app);
    assert_eq!(text.lines().count(), 24);
    assert!(text.lines().all(|l| l.chars().count() <= 80));
    // Only the first rows fit: the panes say how many are shown.
    assert!(text.contains("Positions  1-2 of 4"), "{text}");
    assert!(text.contains("Open orders  1-1 of 5"), "{text}");
    for needle in ["25,431.77", "3:12", "0:47", "0:09", ID_SHORT_FUSE] {
        assert!(text.contains(needle), "desk 80x24 lacks {needle:?}\n{text}");
    }
}

#[test]
fn proposals_120x40() {
    let app = on_tab(120, 40, '2');
    assert_eq!(app.tab(), Tab::Proposals);
    let text = snap("proposals_120x40", &app);
    for needle in [
        "3:12",
        "0:47",
        "0:09",
        "expired",
        "approved",
        "rejected",
        "close all positions",
        "risk from live data",
        "Decisions",
        "sold 0.02 BTC at 66010 (oid 900131)",
    ] {
        assert!(
            text.contains(needle),
            "proposals 120x40 lacks {needle:?}\n{text}"
        );
    }
}

#[test]
fn proposals_80x24() {
    let app = on_tab(80, 24, '2');
    let text = snap("proposals_80x24", &app);
    assert_eq!(text.lines().count(), 24);
}

#[test]
fn approve_dialog_120x40() {
    let mut app = on_tab(120, 40, '2');
    app.select_proposal(Pane::Inbox, ID_FRESH);
    press(&mut app, 'a');
    assert!(
        matches!(app.modal(), Some(Modal::Approve(d)) if d.id == ID_FRESH),
        "{:?}",
        app.modal()
    );
    let text = snap("approve_dialog_120x40", &app);
    for needle in [
        "Approve proposal",
        ID_FRESH,
        "long 0.01 BTC 5x",
        "3:12",
        " y ",
    ] {
        assert!(text.contains(needle), "dialog lacks {needle:?}\n{text}");
    }
}

#[test]
fn approve_dialog_amber_120x40() {
    // The second proposal: under a minute left, a limit order on venue2.
    let mut app = on_tab(120, 40, '2');
    app.update(code(KeyCode::Down));
    press(&mut app, 'a');
    assert!(
        matches!(app.modal(), Some(Modal::Approve(d)) if d.id == ID_AMBER),
        "{:?}",
        app.modal()
    );
    snap("approve_dialog_amber_120x40", &app);
}

#[test]
fn help_120x40() {
    let mut app = on_tab(120, 40, '1');
    app.update(key('?'));
    assert!(
        matches!(app.modal(), Some(Modal::Help { .. })),
        "{:?}",
        app.modal()
    );
    let text = snap("help_120x40", &app);
    assert!(text.contains("/propose"));
    assert!(text.contains("approve the selected proposal"));
}

#[test]
fn logs_120x40() {
    let app = on_tab(120, 40, '3');
    assert_eq!(app.tab(), Tab::Logs);
    let text = snap("logs_120x40", &app);
    for needle in ["proposal_expired", "list_audit_logs", "audit_unavailable"] {
        assert!(text.contains(needle), "logs lack {needle:?}\n{text}");
    }
}

#[test]
fn desk_with_toasts_80x24() {
    // Toasts as a poll and a failed propose leave them: where do they land?
    let mut app = seeded_app(80, 24);
    app.update(proposals(
        vec![btc_long("prop_9d8c7b6a5f4e3d21", t0())],
        t0(),
    ));
    app.update(Action::answered(
        t0(),
        LATENCY,
        Answer::Proposed {
            signal: Box::new(crate::api::model::TradeSignal {
                a: Some("ETHUSDT".into()),
                d: Some("short".into()),
                ..Default::default()
            }),
            result: Err(crate::api::ApiError::Invalid {
                code: "invalid_body".into(),
                field: Some("size".into()),
                message: "size must be greater than zero".into(),
            }),
        },
    ));
    app.update(Action::Tick(t0() + secs(1)));
    assert_eq!(app.toasts().len(), 2);
    let text = snap("desk_with_toasts_80x24", &app);
    // The newest toast shows with a count of the others, over no data: on the tab bar's row when
    // it fits there, else (as here, with five tabs at 80 columns) over the footer's key hints.
    assert!(text.contains("Propose ETHUSDT failed"), "{text}");
    assert!(text.contains("(+1)"), "{text}");
    assert!(text.contains("Equity"), "{text}");
}

#[test]
fn desk_80x24_scrolled_to_the_last_rows() {
    // The venue2 positions and the last order, which the first 80x24 screen cannot show.
    let mut app = on_tab(80, 24, '1');
    app.update(key('G'));
    app.update(code(KeyCode::Tab));
    app.update(key('G'));
    assert_eq!(app.selected(Pane::Positions), 3);
    assert_eq!(app.selected(Pane::Orders), 4);
    let text = snap("desk_80x24_scrolled", &app);
    assert!(text.contains("Positions  3-4 of 4"), "{text}");
    assert!(text.contains("Open orders  5-5 of 5"), "{text}");
    assert!(text.contains("DOGE"), "{text}");
}

#[test]
fn proposals_80x24_close_all_selected() {
    let mut app = on_tab(80, 24, '2');
    app.update(key('G'));
    assert_eq!(app.selection(Pane::Inbox).id.as_deref(), Some(ID_REJECTED));
    snap("proposals_80x24_close_all", &app);
}

// ---- discovery and backtests ---------------------------------------------------------------------

fn discovery_view(width: u16, height: u16, rights: usize) -> App {
    let mut app = discovery_app(width, height);
    for _ in 0..rights {
        app.update(key('l'));
    }
    app
}

#[test]
fn discovery_strategies_120x40() {
    let app = discovery_view(120, 40, 0);
    let text = snap("discovery_strategies_120x40", &app);
    for needle in [
        "4 Discovery",
        "EMA Crossover",
        "rsi_reversion",
        "fast=9 slow=21",
        "catalog",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

#[test]
fn discovery_top_backtests_120x40() {
    let app = discovery_view(120, 40, 1);
    let text = snap("discovery_top_backtests_120x40", &app);
    for needle in [
        "filter=– includeAll=–",
        "+24.61",
        "-3.42",
        "excellent",
        "Max DD %",
        "fast=12 slow=26",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
    // A cut cell says it was cut: never `period=1` for 14.
    assert!(text.contains("period=1…"), "{text}");
    assert!(!text.contains("period=1│"), "{text}");
}

#[test]
fn discovery_top_live_120x40() {
    let app = discovery_view(120, 40, 2);
    let text = snap("discovery_top_live_120x40", &app);
    for needle in ["windowDays=– limit=–", "+4.12", "RSI Mean Reversion"] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

#[test]
fn discovery_combos_120x40() {
    let app = discovery_view(120, 40, 3);
    let text = snap("discovery_combos_120x40", &app);
    for needle in [
        "computing…",
        "pair=BTC-USD timeframe=5m days=30",
        "minTrades=–",
        "+31.20",
        "lower=25 period=9 upper=75",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

#[test]
fn discovery_top_backtests_80x24() {
    let app = discovery_view(80, 24, 1);
    let text = snap("discovery_top_backtests_80x24", &app);
    assert_eq!(text.lines().count(), 24);
    assert!(text.lines().all(|l| l.chars().count() <= 80));
    for needle in ["Return %", "+24.61", "Sharpe"] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

#[test]
fn discovery_details_120x40() {
    let mut app = discovery_view(120, 40, 1);
    app.update(code(KeyCode::Enter));
    let text = snap("discovery_details_120x40", &app);
    assert!(text.contains("Profit factor"), "{text}");
}

#[test]
fn backtest_form_with_errors_120x40() {
    let mut app = discovery_view(120, 40, 1);
    press(&mut app, 'b');
    for _ in 0..3 {
        app.update(code(KeyCode::Tab));
    }
    press(&mut app, 'x');
    app.update(code(KeyCode::Enter));
    let text = snap("backtest_form_with_errors_120x40", &app);
    assert!(
        text.contains("expected a whole number from 1 to 3650"),
        "{text}"
    );
    assert!(text.contains("int 2..50"), "{text}");
}

#[test]
fn backtests_120x40() {
    let app = backtests_app(120, 40);
    assert_eq!(app.tab(), Tab::Backtests);
    let text = snap("backtests_120x40", &app);
    for needle in [
        JOB_ID,
        "60% running",
        "failed",
        "Return %",
        "+24.61",
        "Buy&Hold %",
        "SQN",
        "Avg trade dur",
        "Equity",
        "take profit",
        "Trades",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

#[test]
fn backtests_80x24() {
    let app = backtests_app(80, 24);
    let text = snap("backtests_80x24", &app);
    assert_eq!(text.lines().count(), 24);
    assert!(text.lines().all(|l| l.chars().count() <= 80));
    for needle in ["+24.61", "Equity", "Trades"] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

#[test]
fn backtests_failed_job_120x40() {
    let mut app = backtests_app(120, 40);
    app.update(key('G'));
    let text = snap("backtests_failed_120x40", &app);
    assert!(text.contains("insufficient_data"), "{text}");
    assert!(text.contains("fewer than the 55"), "{text}");
}

// ---- the approve dialog: its keys line never scrolls away ---------------------------------------

/// A mutate tool's approval with long arguments and a large preview, selected on the Proposals
/// tab with its dialog open.
fn long_tool_approval(width: u16, height: u16) -> App {
    use crate::api::model::Proposal;
    use crate::console::inbox::{InboxItem, LocalState, Source, ToolApproval};
    let mut app = seeded_app(width, height);
    let legs: Vec<serde_json::Value> = (0..14)
        .map(|i| {
            serde_json::json!({
                "coin": format!("COIN{i}"),
                "side": if i % 2 == 0 { "long" } else { "short" },
                "sizeUsd": 250 + i * 10,
            })
        })
        .collect();
    let args = serde_json::json!({"basket": "rebalance-weekly", "legs": legs, "leverage": 3});
    app.inbox_mut().fixture_items().insert(
        0,
        InboxItem {
            proposal: Proposal {
                proposal_id: "tool-7".into(),
                status: "staged".into(),
                created_at: Some(t0()),
                expires_at: Some(t0() + secs(240)),
                ..Proposal::default()
            },
            request: None,
            source: Source::Console,
            local: LocalState::None,
            first_seen: t0(),
            expiry_noted: false,
            tool: Some(Box::new(ToolApproval {
                tool: "service_rebalance_basket".into(),
                args: args.clone(),
                confirm_token: "ct_0123".into(),
                summary: "rebalance 14 legs of the weekly basket".into(),
                preview: serde_json::json!({"orders": legs, "estFeesUsd": 4.2}),
                origin: "tools",
                result: None,
            })),
        },
    );
    app.update(key('2'));
    app.select_proposal(Pane::Inbox, "tool-7");
    press(&mut app, 'a');
    assert!(
        matches!(app.modal(), Some(Modal::Approve(d)) if d.id == "tool-7"),
        "{:?}",
        app.modal()
    );
    app
}

fn dialog_scroll(app: &App) -> u16 {
    match app.modal() {
        Some(Modal::Approve(d)) => d.scroll,
        other => panic!("no approve dialog: {other:?}"),
    }
}

fn keys_line_shown(text: &str) {
    assert!(
        text.lines()
            .any(|l| l.contains(" y ") && l.contains("approve") && l.contains(" esc ")),
        "the keys line is on screen:\n{text}"
    );
}

#[test]
fn approve_dialog_long_tool_60x20_scrolls_its_body() {
    let mut app = long_tool_approval(60, 20);
    let text = snap("approve_dialog_long_tool_60x20", &app);
    keys_line_shown(&text);
    assert!(text.contains("Approve tool-7?"), "{text}");
    assert!(text.contains("scroll · lines 1-"), "{text}");
    assert!(!text.contains("Time left"), "the end is below: {text}");

    // A page at a time, or straight to the end: the last lines, the keys line still there.
    app.update(code(KeyCode::PageDown));
    assert_eq!(dialog_scroll(&app), 10);
    app.update(code(KeyCode::PageUp));
    assert_eq!(dialog_scroll(&app), 0);
    app.update(key('G'));
    let text = snap("approve_dialog_long_tool_60x20_end", &app);
    keys_line_shown(&text);
    assert!(text.contains("Time left"), "{text}");
    assert!(text.contains("of 60 ┘"), "{text}");
    // Scrolling past the end stays at the end; one step up leaves it.
    let end = dialog_scroll(&app);
    app.update(key('j'));
    assert_eq!(dialog_scroll(&app), end);
    app.update(key('k'));
    assert_eq!(dialog_scroll(&app), end - 1);
    app.update(key('g'));
    assert_eq!(dialog_scroll(&app), 0);
    // Scrolling never approves; y still does.
    let fx = yes(&mut app);
    assert!(
        fx.iter()
            .any(|e| matches!(e, crate::console::action::Effect::ExecuteTool { .. })),
        "{fx:?}"
    );
}

#[test]
fn approve_dialog_long_tool_80x24() {
    let app = long_tool_approval(80, 24);
    let text = snap("approve_dialog_long_tool_80x24", &app);
    keys_line_shown(&text);
    assert!(text.contains("service_rebalance_basket"), "{text}");
}

#[test]
fn approve_dialog_that_fits_has_no_scroll_marker() {
    let mut app = on_tab(80, 24, '2');
    press(&mut app, 'a');
    let text = render(&app);
    keys_line_shown(&text);
    assert!(!text.contains("scroll · lines"), "{text}");
}

#[test]
fn proposals_80x24_outcome_unknown() {
    use crate::console::inbox::LocalState;
    let mut app = seeded_app(80, 24);
    app.inbox_mut().fixture_items()[0].local = LocalState::Unknown {
        error: "could not reach the service: connection refused".into(),
        checking: true,
    };
    app.update(key('2'));
    app.select_proposal(Pane::Inbox, ID_FRESH);
    let text = snap("proposals_80x24_outcome_unknown", &app);
    assert!(text.contains("unknown — checking"), "{text}");
    assert!(text.contains("checking with the service"), "{text}");
    // The Desk strip keeps it in view until the service says what became of it.
    app.update(key('1'));
    let text = render(&app);
    assert!(
        text.lines()
            .any(|l| l.contains(ID_FRESH) && l.contains("unknown — checking")),
        "{text}"
    );
}
