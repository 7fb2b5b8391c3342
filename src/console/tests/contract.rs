//! The views against each answer shape of `tests/fixtures/contract/` (ours, the deployment's,
//! minimal): every fixture is read the way the client reads it (`api::client::decode`), fed to
//! `App::update`, and the screens are snapshotted, so a shape the console misreads shows up as a
//! changed snapshot, not in front of a supervisor. The refused key is checked against the
//! stand-in over loopback HTTP.

use super::fixtures::*;
use crate::api::ApiError;
use crate::api::client::decode;
use crate::api::model::*;
use crate::console::action::{Action, Answer, Payload, Resource};
use crate::console::app::App;
use serde::de::DeserializeOwned;

const SHAPES: [&str; 3] = ["ours", "deployment", "minimal"];

fn fixture<T: DeserializeOwned>(op: &str, shape: &str) -> T {
    let path = format!(
        "{}/tests/fixtures/contract/{op}.{shape}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    decode(op, serde_json::from_str(&text).unwrap()).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// What the console stages in these tests: `/propose long BTC $2000 5x tp 70000 sl 58000`.
fn btc_request() -> TradeSignal {
    TradeSignal {
        strategy: Some("agentdesk".into()),
        a: Some("BTCUSDT".into()),
        d: Some("long".into()),
        o: Some("market".into()),
        size_usd: Some(2000.0),
        leverage: Some(5),
        tp: Some(70000.0),
        sl: Some(58000.0),
        ..Default::default()
    }
}

/// An app at 120x40 that has read every account feed in `shape`.
fn loaded_app(shape: &str) -> App {
    let mut app = new_app();
    app.update(Action::Resize(120, 40));
    let whoami: Whoami = fixture("whoami", shape);
    let usage: Usage = fixture("get_usage", shape);
    let positions: Positions = fixture("get_positions", shape);
    let pnl: PnlSummary = fixture("pnl_summary", shape);
    let orders: OpenOrders = fixture("list_open_orders", shape);
    let audit: AuditLogs = fixture("list_audit_logs", shape);
    for (resource, payload) in [
        (Resource::Whoami, Payload::Whoami(Box::new(whoami))),
        (Resource::Usage, Payload::Usage(Box::new(usage))),
        (Resource::Positions, Payload::Positions(positions.positions)),
        (Resource::Pnl, Payload::Pnl(Box::new(pnl))),
        (Resource::Orders, Payload::Orders(orders.orders)),
        (Resource::Audit, Payload::Audit(audit.logs)),
    ] {
        app.update(loaded(resource, payload, t0()));
    }
    if shape == "ours" {
        let list: Proposals = fixture("list_proposals", shape);
        app.update(proposals(list.proposals, t0()));
    } else {
        app.update(failed(
            Resource::Proposals,
            ApiError::NotFound {
                code: "not_found".into(),
                message: "Cannot GET /api/delegated/proposals".into(),
            },
            t0(),
        ));
    }
    app
}

fn snap(name: &str, app: &App) -> String {
    let text = render(app);
    insta::assert_snapshot!(name, text);
    text
}

#[test]
fn desk_and_logs_in_every_shape() {
    for shape in SHAPES {
        let mut app = loaded_app(shape);
        app.update(key('1'));
        let desk = snap(&format!("contract_desk_{shape}"), &app);
        assert!(desk.contains("BTC"), "{shape}: positions shown\n{desk}");
        app.update(key('3'));
        let logs = snap(&format!("contract_logs_{shape}"), &app);
        assert!(
            !logs.contains("unexpected response"),
            "{shape}: no decode error\n{logs}"
        );
    }
    // The deployment's usage (`usage: {daily: {used, limit}}`) is the POST quota, not 0/0.
    let app = loaded_app("deployment");
    assert!(render(&app).contains("POST 3/1000"), "{}", render(&app));
    // Audit rows without `time` keep their other fields, and the unknown ones as key=value.
    let mut app = loaded_app("deployment");
    app.update(key('3'));
    let logs = render(&app);
    assert!(logs.contains("propose_trade"), "{logs}");
    assert!(logs.contains("error=Unsupported asset XYZ"), "{logs}");
}

#[test]
fn a_proposal_staged_here_shows_what_was_staged_in_every_shape() {
    for shape in SHAPES {
        let mut app = loaded_app(shape);
        let staged: Proposal = fixture("propose_trade", shape);
        let id = staged.proposal_id.clone();
        app.update(Action::answered(
            t0(),
            LATENCY,
            Answer::Proposed {
                signal: Box::new(btc_request()),
                result: Ok(Box::new(staged)),
            },
        ));
        app.update(key('2'));
        assert!(app.item(&id).is_some(), "{shape}: staged here");
        // The cursor selects a proposal, not a row.
        app.select_proposal(crate::console::layout::Pane::Inbox, &id);
        press(&mut app, 'a');
        let text = snap(&format!("contract_approve_{shape}"), &app);
        for needle in [
            "long",
            "BTC",
            "5x",
            "70,000",
            "58,000",
            "requested: long BTC $2,000",
        ] {
            assert!(text.contains(needle), "{shape}: {needle:?} missing\n{text}");
        }
        assert!(!text.contains(&format!("proposal {id}")), "{shape}\n{text}");
        // The journal record names the request and the risk it was shown.
        yes(&mut app);
        let done: ExecutionResult = fixture("confirm_trade", shape);
        let fx = app.update(Action::answered(
            t0() + secs(2),
            LATENCY,
            Answer::Confirmed {
                id: id.clone(),
                result: Ok(Box::new(done)),
            },
        ));
        let lines = journal_lines(&fx);
        let record = lines.last().expect("a journal line");
        assert_eq!(record["request"]["a"], "BTCUSDT", "{shape}: {record}");
        assert_eq!(record["request"]["tp"], "70000", "{shape}: {record}");
        assert_eq!(record["preview"]["coin"], "BTC", "{shape}: {record}");
        assert!(
            record["risk"]["notional"].as_f64().unwrap() > 0.0,
            "{record}"
        );
        assert!(
            record["summary"]
                .as_str()
                .unwrap()
                .contains("TP 70,000 SL 58,000")
                || shape == "ours",
            "{shape}: {record}"
        );
        let text = snap(&format!("contract_confirmed_{shape}"), &app);
        assert!(text.contains("Result"), "{shape}\n{text}");
    }
}

#[test]
fn a_confirm_result_is_shown_whatever_its_shape() {
    use crate::console::inbox::execution_summary;
    let ours: ExecutionResult = fixture("confirm_trade", "ours");
    assert_eq!(
        execution_summary(&ours),
        "bought 0.01 BTC at 66,010 (oid 900131)"
    );
    let deployment: ExecutionResult = fixture("confirm_trade", "deployment");
    assert_eq!(
        execution_summary(&deployment),
        "filled 0.032653 at 61,250.5 (oid 90002)"
    );
    // The venue's status names no coin: the proposal's is said with it (issue 37).
    assert_eq!(
        crate::console::inbox::execution_summary_in(&deployment, Some("BTC")),
        "filled 0.032653 BTC at 61,250.5 (oid 90002)"
    );
    let minimal: ExecutionResult = fixture("confirm_trade", "minimal");
    assert_eq!(execution_summary(&minimal), "ok");
    let odd: ExecutionResult = decode(
        "confirm_trade",
        serde_json::json!({"txHash": "0xabc", "venue": 2}),
    )
    .unwrap();
    assert_eq!(execution_summary(&odd), "txHash=0xabc venue=2");
}

#[test]
fn a_later_listing_does_not_lose_the_request() {
    let mut app = loaded_app("ours");
    let sparse: Proposal = fixture("propose_trade", "minimal");
    let id = sparse.proposal_id.clone();
    app.update(Action::answered(
        t0(),
        LATENCY,
        Answer::Proposed {
            signal: Box::new(btc_request()),
            result: Ok(Box::new(sparse.clone())),
        },
    ));
    // The service lists it later, with a preview that names less than we asked.
    let listed = Proposal {
        status: "staged".into(),
        preview: Preview {
            coin: "BTC".into(),
            mark_px: 61250.5,
            ..Default::default()
        },
        ..sparse
    };
    app.update(proposals(vec![listed], t0() + secs(1)));
    let item = app.item(&id).unwrap();
    assert!(item.request.is_some());
    let p = &item.proposal.preview;
    assert_eq!(
        (p.kind.as_str(), p.leverage, p.tp, p.sl),
        ("trade", 5, Some(70000.0), Some(58000.0))
    );
    assert!((p.notional - 2000.0).abs() < 1e-9, "{p:?}");
}

/// The header names a refused key and the service's message, whatever the status: here the
/// stand-in's HTTP 200 `{"success": false, "message": "Invalid API key"}`.
#[tokio::test]
async fn a_refused_key_is_named_in_the_header() {
    let config = crate::standin::StandInConfig::new("127.0.0.1:0".parse().unwrap(), "live_right");
    let running = crate::standin::start(config).await.unwrap();
    let wrong = crate::api::Client::new(
        &running.base_url(),
        Some(crate::secret::Secret::new("live_wrong")),
    )
    .unwrap();
    let err = wrong.whoami(true).await.unwrap_err();
    let mut app = new_app();
    app.update(Action::Resize(100, 12));
    app.update(failed(Resource::Whoami, err, t0()));
    let text = snap("contract_refused_key", &app);
    let header = text.lines().next().unwrap();
    assert!(
        header.contains("API key refused: Invalid API key"),
        "{header}"
    );
    running.shutdown().await;
}

/// Discovery details show the fields we do not read as `key=value` (the deployment's
/// `paramsHash8`, a strategy's `tier` and `features`), never dropping them.
#[test]
fn discovery_details_show_unread_fields() {
    use crate::console::tabs::discovery::Selected;
    use crate::console::tabs::discovery::view::detail_lines;
    let theme = crate::console::theme::Theme::dark();
    let text = |lines: Vec<ratatui::text::Line>| {
        lines
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let combos: Discovery = fixture("discover_top_optimized_combos", "deployment");
    let row = text(detail_lines(&theme, Selected::Row(&combos.rows[0])));
    assert!(row.contains("paramsHash8=a1b2c3d4"), "{row}");
    assert!(row.contains("rank 1 in strategy"), "{row}");
    let strategies: Strategies = fixture("discover_strategies", "deployment");
    let s = text(detail_lines(
        &theme,
        Selected::Strategy(&strategies.strategies[0]),
    ));
    assert!(s.contains("tier=free"), "{s}");
    assert!(s.contains(r#"features=["long","short"]"#), "{s}");
    assert!(s.contains("Fast SMA crosses slow SMA"), "{s}");
}

/// A research run in the deployment's shape (times as millisecond text, fields we never saw)
/// reads row by row; the transcript shows the unread fields as `key=value`.
#[test]
fn research_transcript_shows_unread_fields() {
    let status: ResearchStatus = fixture("research_status", "deployment");
    let run = status.run.expect("a run");
    assert_eq!(run.agents.len(), 2);
    assert_eq!(run.agents[0].extra["costUsd"], "0.02");
    let state = crate::console::tabs::research::ResearchTab::showing(run);
    let lines: Vec<String> = crate::console::tabs::research::transcript_lines(&state, 200)
        .into_iter()
        .map(|l| l.text)
        .collect();
    assert!(
        lines[0].starts_with("12:00:00 user: find the best"),
        "{lines:?}"
    );
    assert!(lines[1].contains("done [tokens=812]"), "{lines:?}");
}

/// A stop on the wrong side of the entry fills at once: the detail panel and the approve dialog
/// say so before anyone approves, whatever the service accepted.
#[test]
fn a_stop_on_the_wrong_side_is_named_before_approval() {
    let mut app = loaded_app("ours");
    let mut staged: Proposal = fixture("propose_trade", "ours");
    // The service took it as asked.
    staged.preview.sl = Some(90_000.0);
    let id = staged.proposal_id.clone();
    let mut signal = btc_request();
    signal.sl = Some(90_000.0);
    app.update(Action::answered(
        t0(),
        LATENCY,
        Answer::Proposed {
            signal: Box::new(signal),
            result: Ok(Box::new(staged)),
        },
    ));
    app.update(key('2'));
    app.select_proposal(crate::console::layout::Pane::Inbox, &id);
    let detail = render(&app);
    assert!(
        detail.contains("SL 90000 is at or above the entry"),
        "{detail}"
    );
    press(&mut app, 'a');
    let dialog = snap("contract_wrong_side_sl", &app);
    assert!(dialog.contains("check: SL 90000"), "{dialog}");
}
