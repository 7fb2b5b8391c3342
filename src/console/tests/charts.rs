//! The charts where they are drawn: the inbox detail and the approve dialog (the sandbox's candles,
//! else the marks this console saw), a backtest's result, Discovery's details and the Desk's
//! equity, at 80×24 and 160×45, and under NO_COLOR.

use super::fixtures::*;
use crate::api::ApiError;
use crate::api::model::{Candle, Candles};
use crate::console::action::{Action, Answer, Effect};
use crate::console::app::App;
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use crate::console::payload::DiscoveryPayload;
use crate::console::tabs::discovery::DView;
use crate::console::theme::Theme;
use crate::console::view;
use crossterm::event::KeyCode;
use ratatui::style::Color;

/// Two hours of closed one-minute candles of `coin` ending at t0, wandering around `base`.
fn candles(coin: &str, base: f64) -> Candles {
    let start = t0() - secs(120 * 60);
    let close = |i: usize| {
        let x = i as f64;
        base * (1.0 + 0.012 * (x / 17.0).sin() + 0.004 * (x / 3.1).sin() - 0.006 * x / 120.0)
    };
    Candles {
        coin: coin.into(),
        interval: "1m".into(),
        candles: (0..120)
            .map(|i| {
                let (open, close) = (close(i), close(i + 1));
                Candle {
                    time: start + secs(60 * i as i64),
                    open,
                    high: open.max(close),
                    low: open.min(close),
                    close,
                }
            })
            .collect(),
    }
}

fn candles_answer(coin: &str, result: Result<Candles, ApiError>) -> Action {
    Action::answered(
        t0(),
        LATENCY,
        Answer::CandlesLoaded {
            coin: coin.into(),
            result: result.map(Box::new),
        },
    )
}

/// The seeded console on the Proposals tab with its BTC trade selected (the list starts on the
/// item with the least time left), with the sandbox's candles for BTC and ETH.
fn priced(width: u16, height: u16) -> App {
    let mut app = seeded_app(width, height);
    app.update(key('2'));
    app.select_proposal(Pane::Inbox, ID_FRESH);
    let fx = app.update(Action::Tick(app.now()));
    assert!(fx.contains(&Effect::FetchCandles("BTC".into())), "{fx:?}");
    app.update(candles_answer("BTC", Ok(candles("BTC", 66_400.0))));
    app.update(candles_answer("ETH", Ok(candles("ETH", 3_180.0))));
    app
}

fn snap(name: &str, app: &App) -> String {
    let text = render(app);
    insta::assert_snapshot!(name, text);
    text
}

/// Drawn with the NO_COLOR theme: no cell has a colour, so what tells the levels apart is text.
fn snap_no_color(name: &str, app: &App) -> String {
    let (w, h) = app.size();
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
    terminal
        .draw(|f| view::draw(f, app, &Theme::monochrome()))
        .unwrap();
    let buffer = terminal.backend().buffer();
    for cell in buffer.content() {
        assert!(
            matches!(cell.fg, Color::Reset) && matches!(cell.bg, Color::Reset),
            "{name}: a coloured cell {cell:?}"
        );
    }
    let text = buffer_text(buffer);
    insta::assert_snapshot!(name, text);
    text
}

fn has_all(text: &str, needles: &[&str]) {
    for n in needles {
        assert!(text.contains(n), "lacks {n:?}\n{text}");
    }
}

#[test]
fn the_inbox_detail_draws_the_coins_price_with_its_levels_160x45() {
    let app = priced(160, 45);
    let text = snap("chart_proposals_160x45", &app);
    // The same figures as the text above it: the mark a market order fills near, TP, SL.
    has_all(
        &text,
        &[
            "BTC · 1m candles from the sandbox · last 6",
            "Entry 66,000",
            "TP 72,000",
            "SL 65,000",
            "← 1h59m →",
        ],
    );
    assert!(text.contains('⠀') || text.chars().any(|c| ('\u{2801}'..='\u{28ff}').contains(&c)));
}

#[test]
fn a_short_detail_keeps_its_text_and_draws_no_chart_80x24() {
    let app = priced(80, 24);
    let text = snap("chart_proposals_80x24", &app);
    assert!(!text.contains("candles from the sandbox"), "{text}");
}

#[test]
fn the_approve_dialog_draws_the_chart_under_what_decides_160x45() {
    let mut app = priced(160, 45);
    press(&mut app, 'a');
    assert!(matches!(app.modal(), Some(Modal::Approve(d)) if d.id == ID_FRESH));
    let text = snap("chart_approve_160x45", &app);
    has_all(
        &text,
        &[
            "Approve prop_3f2a9c1d7e4b5a60?",
            "1m candles",
            "TP 72,000",
            "SL 65,000",
            " y  approve",
        ],
    );
    let chart = text.lines().position(|l| l.contains("1m candles")).unwrap();
    let keys = text
        .lines()
        .position(|l| l.contains(" y  approve"))
        .unwrap();
    let time = text.lines().position(|l| l.contains("Time left")).unwrap();
    assert!(time < chart && chart < keys, "{text}");
}

#[test]
fn at_80x24_the_dialog_shows_what_decides_before_any_chart() {
    let mut app = priced(80, 24);
    press(&mut app, 'a');
    let text = snap("chart_approve_80x24", &app);
    has_all(
        &text,
        &[
            "Approve prop_3f2a9c1d7e4b5a60?",
            "TP 72,000 · SL 65,000",
            " y  approve",
        ],
    );
    assert!(
        !text.contains("↑↓ scroll"),
        "the chart never makes the body scroll\n{text}"
    );
}

#[test]
fn a_short_limit_shows_its_limit_and_a_far_liquidation_160x45() {
    let mut app = priced(160, 45);
    app.select_proposal(Pane::Inbox, ID_AMBER);
    press(&mut app, 'a');
    assert!(matches!(app.modal(), Some(Modal::Approve(d)) if d.id == ID_AMBER));
    let text = snap("chart_approve_amber_160x45", &app);
    // The liquidation is a third away: the scale widens to show it.
    has_all(
        &text,
        &[
            "ETH · 1m candles",
            "Limit 3,215.0",
            "TP 3,050.0",
            "SL 3,290.0",
            "Liq 4,268.1",
        ],
    );
}

#[test]
fn under_no_color_the_levels_read_by_their_names_160x45() {
    let mut app = priced(160, 45);
    press(&mut app, 'a');
    let text = snap_no_color("chart_approve_no_color_160x45", &app);
    has_all(&text, &["Entry 66,000", "TP 72,000", "SL 65,000"]);
    let app = priced(160, 45);
    snap_no_color("chart_proposals_no_color_160x45", &app);
}

#[test]
fn a_service_without_candles_gets_the_marks_seen_and_is_not_asked_again() {
    let mut app = seeded_app(160, 45);
    app.update(key('2'));
    app.select_proposal(Pane::Inbox, ID_FRESH);
    let gone = ApiError::NotFound {
        code: "not_found".into(),
        message: "no operation at GET /sandbox/v1/candles".into(),
    };
    app.update(candles_answer("BTC", Err(gone)));
    // Two more polls of the positions: three marks of BTC (the seeded one, then these).
    let mut positions = positions();
    for (i, px) in [(1, 66_150.0), (2, 65_900.0)] {
        for p in positions.iter_mut().filter(|p| p.coin == "BTC") {
            p.mark_px = px;
        }
        let fx = app.update(loaded(
            crate::console::action::Resource::Positions,
            crate::console::action::Payload::Positions(positions.clone()),
            t0() + secs(60 * i),
        ));
        assert!(
            !fx.iter().any(|e| matches!(e, Effect::FetchCandles(_))),
            "{fx:?}"
        );
    }
    let text = snap("chart_marks_160x45", &app);
    has_all(
        &text,
        &["BTC · 3 marks seen since 11:59 · last 65,900", "TP 72,000"],
    );
}

#[test]
fn with_nothing_to_draw_the_chart_says_why() {
    let mut app = seeded_app(160, 45);
    app.update(key('2'));
    app.select_proposal(Pane::Inbox, ID_FRESH);
    app.update(candles_answer(
        "BTC",
        Err(ApiError::NotFound {
            code: "not_found".into(),
            message: "no".into(),
        }),
    ));
    // The close-all item: no positions' marks of its first coin in this console's past polls.
    app.account_mut().market = Default::default();
    app.account_mut().market.unsupported = true;
    let text = snap("chart_nothing_160x45", &app);
    has_all(
        &text,
        &[
            "BTC · no market data from this service",
            "no price history yet: no mark of BTC seen",
        ],
    );
}

#[test]
fn a_backtest_result_has_equity_drawdown_and_scale() {
    for (w, h) in [(80, 24), (160, 45)] {
        let app = backtests_app(w, h);
        let text = snap(&format!("chart_backtests_{w}x{h}"), &app);
        has_all(&text, &["12,532.10", "02-12", "03-14"]);
        if h == 24 {
            has_all(&text, &["max DD", "-4.7%"]);
        } else {
            has_all(
                &text,
                &[
                    "Equity 9,880.00 → 12,532.10 (+26.84%) · max drawdown",
                    "0%",
                    "← 29d23h →",
                ],
            );
        }
    }
    let app = backtests_app(160, 45);
    snap_no_color("chart_backtests_no_color_160x45", &app);
}

#[test]
fn the_desk_equity_has_its_high_low_and_span() {
    let app = seeded_app(160, 45);
    let text = snap("chart_desk_160x45", &app);
    has_all(&text, &["25,492.77", "25,143.27", "2m"]);
    // At 80 columns the numbers come first: no room for the chart.
    let text = snap("chart_desk_80x24", &seeded_app(80, 24));
    assert!(!text.contains("25,143.27"), "{text}");
    snap_no_color("chart_desk_no_color_160x45", &seeded_app(160, 45));
}

#[test]
fn discovery_details_say_the_service_sent_no_curve_or_draw_the_one_it_sent() {
    for (w, h) in [(80, 24), (160, 45)] {
        let mut app = discovery_app(w, h);
        app.update(key('l'));
        app.update(code(KeyCode::Enter));
        let text = snap(&format!("chart_discovery_no_curve_{w}x{h}"), &app);
        if h == 45 {
            has_all(
                &text,
                &[
                    "Equity curve",
                    "not sent",
                    "this service ranks rows by statistics",
                ],
            );
        }
    }
    // A service that sends one: drawn, not printed among the other fields.
    let mut app = discovery_app(160, 45);
    let mut rows = top_rows();
    let day = 86_400;
    let start = t0().timestamp() - 30 * day;
    let curve: Vec<serde_json::Value> = (0..60)
        .map(|i| {
            let dip = if (20..30).contains(&i) { 600.0 } else { 0.0 };
            let e = 10_000.0 + 40.0 * i as f64 - dip;
            let peak = 10_000.0 + 40.0 * i.min(19) as f64;
            let dd = if dip > 0.0 {
                (e / peak - 1.0) * 100.0
            } else {
                0.0
            };
            serde_json::json!({"t": start + i * day / 2, "equity": e, "drawdown": dd})
        })
        .collect();
    rows[0]
        .stats
        .extra
        .insert("equity".into(), serde_json::Value::Array(curve));
    let query = app.tabs().discovery.query(DView::TopBacktests);
    app.update(discovered(
        query,
        DiscoveryPayload::Rows(Box::new(discovery(rows, false))),
        t0(),
    ));
    app.update(key('l'));
    app.update(code(KeyCode::Enter));
    let text = snap("chart_discovery_curve_160x45", &app);
    has_all(&text, &["Equity 10,000.00 →", "← 29d12h →"]);
    assert!(!text.contains("equity=["), "{text}");
}

#[test]
fn whatever_the_height_the_chart_never_costs_the_dialog_its_body_or_keys() {
    for h in 16..=34 {
        let mut app = priced(80, h);
        press(&mut app, 'a');
        let text = render(&app);
        assert!(text.contains(" y  approve"), "{h} rows:\n{text}");
        if text.contains("1m candles from the sandbox") {
            // Drawn only under a whole body: nothing of it scrolls away.
            assert!(text.contains("Time left"), "{h} rows:\n{text}");
            assert!(!text.contains("↑↓ scroll"), "{h} rows:\n{text}");
        }
    }
}
