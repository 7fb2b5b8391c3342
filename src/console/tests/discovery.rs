//! `App::update` for the Discovery and Backtests tabs: what is fetched when, sort and filter
//! indices, the backtest form, job polling and the `p` shortcut.

use super::fixtures::*;
use crate::api::model::{BacktestJob, DiscoveryRow};
use crate::console::action::{Action, Answer};
use crate::console::app::App;
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use crate::console::tab::Tab;
use crate::console::tabs::discovery::{
    BacktestsQuery, CombosQuery, DView, DiscoveryPayload, DiscoveryQuery, Selected,
};
use chrono::{DateTime, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;

fn quiet_app() -> App {
    let mut app = app_with(quiet_options());
    app.update(Action::Tick(t0()));
    app
}

fn run(app: &mut App, line: &str) -> Vec<crate::console::action::Effect> {
    let mut fx = app.update(key(':'));
    fx.extend(type_text(app, line));
    fx.extend(app.update(code(KeyCode::Enter)));
    fx
}

fn rows_answer(rows: Vec<DiscoveryRow>, computing: bool) -> DiscoveryPayload {
    DiscoveryPayload::Rows(Box::new(discovery(rows, computing)))
}

/// The rows `view` shows, in order (through its table's filter and sort).
fn names(app: &App, view: DView) -> Vec<String> {
    let order: Vec<usize> = match app.tables().view(view.pane()) {
        Some(v) => v.order().to_vec(),
        None => (0..app.tabs().discovery.len(view)).collect(),
    };
    order
        .into_iter()
        .map(|i| match app.tabs().discovery.get(view, i) {
            Some(Selected::Row(r)) => format!("{} {}", r.strategy_id, r.pair),
            Some(Selected::Strategy(s)) => s.id.clone(),
            None => unreachable!(),
        })
        .collect()
}

#[test]
fn discovery_is_fetched_only_while_visible() {
    let mut app = quiet_app();
    // Hidden: nothing, however long we wait.
    assert!(discovery_fetches(&app.update(Action::Tick(t0() + secs(600)))).is_empty());

    let fx = app.update(key('4'));
    assert_eq!(app.tab(), Tab::Discovery);
    assert_eq!(discovery_fetches(&fx), vec![DiscoveryQuery::Strategies]);
    // `l` shows Top backtests: fetched at once, with the server's defaults.
    let fx = app.update(key('l'));
    assert_eq!(app.tabs().discovery.view(), DView::TopBacktests);
    let top = DiscoveryQuery::TopBacktests(BacktestsQuery::default());
    assert_eq!(discovery_fetches(&fx), vec![top.clone()]);
    let at = t0() + secs(601);
    app.update(discovered(
        DiscoveryQuery::Strategies,
        DiscoveryPayload::Strategies(strategies()),
        at,
    ));
    app.update(discovered(top.clone(), rows_answer(top_rows(), false), at));
    assert_eq!(app.tabs().discovery.len(DView::TopBacktests), 5);

    // Every 60 s while visible; the loaded catalog is not fetched again.
    assert!(discovery_fetches(&app.update(Action::Tick(at + secs(59)))).is_empty());
    let fx = app.update(Action::Tick(at + secs(60)));
    assert_eq!(discovery_fetches(&fx), vec![top.clone()]);
    app.update(discovered(
        top.clone(),
        rows_answer(top_rows(), false),
        at + secs(60),
    ));

    // `r` fetches now.
    let fx = app.update(key('r'));
    assert_eq!(discovery_fetches(&fx), vec![top.clone()]);
    app.update(discovered(
        top.clone(),
        rows_answer(top_rows(), false),
        at + secs(61),
    ));

    // Hidden again: no more discovery polls.
    app.update(key('1'));
    for s in [120, 600, 3000] {
        let fx = app.update(Action::Tick(at + secs(s)));
        assert!(discovery_fetches(&fx).is_empty(), "{fx:?}");
    }
    // Back on the tab: the visible view is fetched on entering.
    let fx = app.update(key('4'));
    assert_eq!(discovery_fetches(&fx), vec![top]);
}

#[test]
fn computing_refetches_every_two_seconds_until_done() {
    let mut app = quiet_app();
    let fx = run(&mut app, "/top combos");
    let q = DiscoveryQuery::Combos(CombosQuery::default());
    assert!(discovery_fetches(&fx).contains(&q), "{fx:?}");
    app.update(discovered(
        DiscoveryQuery::Strategies,
        DiscoveryPayload::Strategies(strategies()),
        t0(),
    ));
    let at = t0() + ms(100);
    app.update(discovered(q.clone(), rows_answer(combo_rows(), true), at));
    assert!(app.tabs().discovery.state(DView::Combos).feed.computing);
    assert!(render(&app).contains("computing…"));
    assert!(discovery_fetches(&app.update(Action::Tick(at + ms(1900)))).is_empty());
    let fx = app.update(Action::Tick(at + secs(2)));
    assert_eq!(discovery_fetches(&fx), vec![q.clone()]);
    // Done computing: back to the 60 s refresh.
    let at = at + secs(2) + ms(50);
    app.update(discovered(q.clone(), rows_answer(combo_rows(), false), at));
    assert!(discovery_fetches(&app.update(Action::Tick(at + secs(4)))).is_empty());
    assert!(discovery_fetches(&app.update(Action::Tick(at + secs(59)))).is_empty());
    assert_eq!(
        discovery_fetches(&app.update(Action::Tick(at + secs(60)))),
        vec![q]
    );
}

#[test]
fn top_combos_command_sets_the_fetch_parameters() {
    let mut app = quiet_app();
    let fx = run(
        &mut app,
        "/top combos pair=ETH-USD timeframe=1h days=60 perStrategy=2",
    );
    assert_eq!(app.tab(), Tab::Discovery);
    assert_eq!(app.tabs().discovery.view(), DView::Combos);
    let fetched = discovery_fetches(&fx);
    let Some(DiscoveryQuery::Combos(q)) = fetched
        .iter()
        .find(|q| matches!(q, DiscoveryQuery::Combos(_)))
    else {
        panic!("no combos fetch: {fx:?}");
    };
    assert_eq!(
        q.to_params(),
        vec![
            ("pair", "ETH-USD".to_string()),
            ("timeframe", "1h".to_string()),
            ("days", "60".to_string()),
            ("perStrategy", "2".to_string()),
        ]
    );
    let first = DiscoveryQuery::Combos(q.clone());
    // The query line shows it.
    app.set_size(120, 40);
    let screen = render(&app);
    assert!(
        screen.contains("pair=ETH-USD timeframe=1h days=60 perStrategy=2 limit=– filter=–"),
        "{screen}"
    );

    // Changed while the first is in flight: the old answer is dropped and the new query sent.
    let fx = run(&mut app, "/top combos days=90 minReturnPct=-2");
    assert!(
        discovery_fetches(&fx).is_empty(),
        "one request at a time: {fx:?}"
    );
    let fx = app.update(discovered(
        first,
        rows_answer(combo_rows(), false),
        t0() + secs(1),
    ));
    assert_eq!(
        app.tabs().discovery.len(DView::Combos),
        0,
        "a stale answer is not shown"
    );
    let fetched = discovery_fetches(&fx);
    let Some(DiscoveryQuery::Combos(q)) = fetched.first() else {
        panic!("no refetch: {fx:?}");
    };
    assert_eq!(q.days, Some(90));
    assert_eq!(q.pair.as_deref(), Some("ETH-USD"), "other keys stay");
    assert_eq!(q.min_return_pct, Some(-2.0));

    // key=default returns a key to the server's default.
    run(&mut app, "/top combos pair=default");
    assert_eq!(app.tabs().discovery.combos_query().pair, None);
}

#[test]
fn sort_and_filter_are_the_tables_and_keep_the_cursor_on_its_row() {
    let mut app = discovery_app(120, 40);
    app.update(key('l'));
    let view = DView::TopBacktests;
    let pane = view.pane();
    assert_eq!(
        names(&app, view),
        [
            "ema_cross BTC-USD",
            "bb_breakout ETH-USD",
            "rsi_reversion SOL-USD",
            "donchian BTC-USD",
            "ema_cross DOGE-USD"
        ],
        "the service's order first"
    );
    app.update(key('j'));
    // s: the next column each time (strategy, pair, tf, days, return, win); numbers best first.
    for _ in 0..5 {
        app.update(key('s'));
    }
    assert!(render(&app).contains("[sort return ↓]"), "{}", render(&app));
    app.update(key('s'));
    assert!(render(&app).contains("[sort win ↓]"));
    assert_eq!(
        names(&app, view),
        [
            "rsi_reversion SOL-USD",
            "ema_cross BTC-USD",
            "bb_breakout ETH-USD",
            "donchian BTC-USD",
            "ema_cross DOGE-USD"
        ]
    );
    // The cursor stays on the row it was on (bb_breakout).
    let sel = app.selected(pane);
    assert_eq!(names(&app, view)[sel], "bb_breakout ETH-USD");
    app.update(key('S'));
    assert_eq!(names(&app, view)[0], "ema_cross DOGE-USD");

    // `/` filters over every field: strategy, pair, timeframe, parameters.
    app.update(key('/'));
    type_text(&mut app, "btc");
    assert_eq!(
        names(&app, view),
        ["donchian BTC-USD", "ema_cross BTC-USD"],
        "filtered, still in reversed win order"
    );
    app.update(code(KeyCode::Enter));
    for _ in 0..3 {
        app.update(key('/'));
        app.update(code(KeyCode::Backspace));
        app.update(code(KeyCode::Enter));
    }
    app.update(key('/'));
    type_text(&mut app, "lookback");
    assert_eq!(names(&app, view), ["donchian BTC-USD"]);
    type_text(&mut app, "=55");
    assert_eq!(names(&app, view), ["donchian BTC-USD"]);
    app.update(code(KeyCode::Enter));
    // The Logs tables' filters are others.
    assert!(app.tables().query(Pane::Audit).filter.is_empty());

    // A new answer keeps sort and filter.
    app.update(discovered(
        app.tabs().discovery.query(view),
        rows_answer(top_rows(), false),
        t0() + secs(2),
    ));
    assert_eq!(names(&app, view), ["donchian BTC-USD"]);
    // field:value: a column by its name.
    app.update(key('/'));
    app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    type_text(&mut app, "pair:eth");
    assert_eq!(names(&app, view), ["bb_breakout ETH-USD"]);
    app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    type_text(&mut app, "lookback=55");
    app.update(code(KeyCode::Enter));

    // Readline's ctrl-w takes the last word; Esc clears the filter (Enter keeps it).
    app.update(key('/'));
    type_text(&mut app, " eth");
    app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('w'),
        KeyModifiers::CONTROL,
    )));
    assert_eq!(app.tables().query(pane).filter, "lookback=55 ");
    app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    assert_eq!(app.tables().query(pane).filter, "", "ctrl-u, not a u");
    type_text(&mut app, "btc");
    app.update(code(KeyCode::Esc));
    assert!(app.tables().query(pane).filter.is_empty());
    assert!(names(&app, view).len() > 2, "{:?}", names(&app, view));
}

#[test]
fn enter_shows_details_and_esc_closes() {
    let mut app = discovery_app(120, 40);
    app.update(key('l'));
    app.update(code(KeyCode::Enter));
    assert!(
        matches!(app.modal(), Some(Modal::Details { scroll: 0 })),
        "{:?}",
        app.modal()
    );
    let screen = render(&app);
    for needle in [
        "EMA Crossover",
        "fast",
        "slow",
        "Sharpe",
        "quality excellent",
    ] {
        assert!(screen.contains(needle), "details lack {needle:?}\n{screen}");
    }
    app.update(code(KeyCode::Esc));
    assert!(app.modal().is_none(), "{:?}", app.modal());
}

fn clear_field(app: &mut App) {
    for _ in 0..40 {
        app.update(code(KeyCode::Backspace));
    }
}

#[test]
fn b_form_submits_the_row_with_edited_fields() {
    let mut app = discovery_app(120, 40);
    app.update(key('l'));
    press(&mut app, 'b');
    let form = backtest_form(&app).expect("b opens the form");
    let values: Vec<(&str, &str)> = form
        .fields
        .iter()
        .map(|f| (f.label.as_str(), f.value.as_str()))
        .collect();
    assert_eq!(
        values,
        [
            ("strategy", "ema_cross"),
            ("pair", "BTC-USD"),
            ("timeframe", "1h"),
            ("days", "30"),
            ("fast", "12"),
            ("slow", "26"),
        ]
    );
    // Keys go to the form, not the keymap: `q` does not quit, `4` is typed.
    for _ in 0..3 {
        app.update(code(KeyCode::Tab));
    }
    clear_field(&mut app);
    type_text(&mut app, "60");
    app.update(code(KeyCode::Tab));
    clear_field(&mut app);
    type_text(&mut app, "10");
    // Shift-tab back to the pair, written as the console accepts it.
    for _ in 0..3 {
        app.update(code(KeyCode::BackTab));
    }
    clear_field(&mut app);
    type_text(&mut app, "ethusdt");
    assert!(!app.should_quit());
    let fx = app.update(code(KeyCode::Enter));
    let runs = backtest_runs(&fx);
    assert_eq!(runs.len(), 1, "{fx:?}");
    let r = &runs[0];
    assert_eq!(r.strategy_id, "ema_cross");
    assert_eq!(r.pair, "ETH-USD");
    assert_eq!(r.timeframe, "1h");
    assert_eq!(r.days, 60);
    assert_eq!(
        serde_json::Value::Object(r.parameters.clone()),
        json!({"fast": 10, "slow": 26})
    );
    assert!(backtest_form(&app).is_none());
    assert_eq!(app.tab(), Tab::Backtests);
    assert_eq!(app.tabs().backtests.submitting(), 1);
}

#[test]
fn a_bad_number_shows_a_field_error_and_sends_nothing() {
    let mut app = discovery_app(120, 40);
    app.update(key('l'));
    press(&mut app, 'b');
    for _ in 0..3 {
        app.update(code(KeyCode::Tab));
    }
    type_text(&mut app, "x"); // days "30x"
    app.update(code(KeyCode::Tab));
    clear_field(&mut app);
    type_text(&mut app, "500"); // fast: the catalog says 2..50
    app.update(code(KeyCode::Tab));
    clear_field(&mut app);
    type_text(&mut app, "2.5"); // slow is an integer
    let fx = app.update(code(KeyCode::Enter));
    assert!(backtest_runs(&fx).is_empty(), "{fx:?}");
    let form = backtest_form(&app).expect("the form stays open");
    let errors: Vec<(&str, Option<&str>)> = form
        .fields
        .iter()
        .map(|f| (f.label.as_str(), f.error.as_deref()))
        .collect();
    assert_eq!(
        errors,
        [
            ("strategy", None),
            ("pair", None),
            ("timeframe", None),
            ("days", Some("expected a whole number from 1 to 3650")),
            ("fast", Some("must be from 2 to 50")),
            ("slow", Some("expected a whole number")),
        ]
    );
    assert_eq!(form.focus, 3, "the cursor goes to the first bad field");
    let screen = render(&app);
    assert!(
        screen.contains("3 field(s) to fix: nothing was sent"),
        "{screen}"
    );
    // Esc cancels without sending.
    let fx = app.update(code(KeyCode::Esc));
    assert!(backtest_form(&app).is_none());
    assert!(backtest_runs(&fx).is_empty());
}

fn submitted(job: BacktestJob, at: DateTime<Utc>) -> Action {
    Action::answered(
        at,
        LATENCY,
        Answer::BacktestSubmitted {
            request: Box::new(backtest_request()),
            result: Ok(Box::new(job)),
        },
    )
}

fn job(status: &str, progress: u8) -> BacktestJob {
    BacktestJob {
        job_id: JOB_ID.into(),
        status: status.into(),
        progress,
        ..BacktestJob::default()
    }
}

#[test]
fn jobs_are_polled_every_second_until_done() {
    let mut app = quiet_app();
    let fx = run(
        &mut app,
        "/backtest ema_cross BTCUSDT 1h 30 fast=12 slow=26",
    );
    assert_eq!(backtest_runs(&fx), vec![backtest_request()]);
    assert_eq!(app.tab(), Tab::Backtests);
    app.update(submitted(job("queued", 0), t0()));
    assert_eq!(app.tabs().backtests.jobs().len(), 1);
    assert_eq!(
        app.tabs().backtests.jobs()[0].job.request,
        Some(backtest_request())
    );
    assert!(job_fetches(&app.update(Action::Tick(t0() + ms(900)))).is_empty());
    assert_eq!(
        job_fetches(&app.update(Action::Tick(t0() + secs(1)))),
        vec![JOB_ID]
    );
    // In flight: not asked twice.
    assert!(job_fetches(&app.update(Action::Tick(t0() + secs(3)))).is_empty());
    app.update(job_loaded(job("running", 40), t0() + secs(3)));
    assert_eq!(
        app.tabs().backtests.jobs()[0].job.request,
        Some(backtest_request()),
        "kept"
    );
    assert!(render(&app).contains("40% running"));
    assert_eq!(
        job_fetches(&app.update(Action::Tick(t0() + secs(4)))),
        vec![JOB_ID]
    );
    app.update(job_loaded(finished_job(), t0() + secs(4)));
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.contains("done: return +24.61%"))
    );
    for s in [5, 6, 60, 600] {
        let fx = app.update(Action::Tick(t0() + secs(s)));
        assert!(job_fetches(&fx).is_empty(), "polled after done: {fx:?}");
    }
}

#[test]
fn failed_and_unknown_jobs_stop_polling() {
    let mut app = quiet_app();
    app.update(submitted(job("running", 10), t0()));
    let fx = app.update(Action::Tick(t0() + secs(1)));
    assert_eq!(job_fetches(&fx), vec![JOB_ID]);
    let mut failed = job("failed", 10);
    failed.error = Some(crate::api::model::ErrorDetail {
        code: "insufficient_data".into(),
        message: "not enough bars".into(),
        field: None,
    });
    app.update(job_loaded(failed, t0() + secs(1)));
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.contains("failed: not enough bars"))
    );
    assert!(job_fetches(&app.update(Action::Tick(t0() + secs(30)))).is_empty());

    // A job followed by id that the service does not know.
    let fx = run(&mut app, "/job bt_missing");
    assert_eq!(job_fetches(&fx), vec!["bt_missing"]);
    app.update(Action::answered(
        t0() + secs(31),
        LATENCY,
        Answer::JobLoaded {
            id: "bt_missing".into(),
            result: Err(crate::api::ApiError::NotFound {
                code: "not_found".into(),
                message: "no such job".into(),
            }),
        },
    ));
    assert!(job_fetches(&app.update(Action::Tick(t0() + secs(90)))).is_empty());
    assert!(render(&app).contains("unknown job"));
}

#[test]
fn p_prefills_a_proposal_for_the_rows_coin() {
    let mut app = discovery_app(120, 40);
    app.update(key('l'));
    app.update(key('l'));
    assert_eq!(app.tabs().discovery.view(), DView::TopLive);
    press(&mut app, 'p');
    assert_eq!(
        app.command_line().map(|c| c.text()),
        Some("/propose ETH long $1000 ".to_string())
    );
    app.update(code(KeyCode::Esc));
    // The second row carries the strategy's latest signal: short.
    app.update(key('j'));
    press(&mut app, 'p');
    assert_eq!(
        app.command_line().map(|c| c.text()),
        Some("/propose BTC short $1000 ".to_string())
    );
    // Enter stages it like a typed /propose.
    let fx = app.update(code(KeyCode::Enter));
    assert!(
        fx.iter()
            .any(|e| matches!(e, crate::console::action::Effect::Propose(s) if s.a.as_deref() == Some("BTCUSDT") && s.d.as_deref() == Some("short") && s.size_usd == Some(1000.0))),
        "{fx:?}"
    );
}

#[test]
fn mouse_selects_discovery_views() {
    let mut app = discovery_app(120, 40);
    let screen = crate::console::layout::compute(120, 40, &app.shape());
    let (_, r) = screen.views[3];
    app.update(Action::Mouse(crossterm::event::MouseEvent {
        kind: crossterm::event::MouseEventKind::Down(crossterm::event::MouseButton::Left),
        column: r.x + 1,
        row: r.y,
        modifiers: crossterm::event::KeyModifiers::NONE,
    }));
    assert_eq!(app.tabs().discovery.view(), DView::Combos);
}
