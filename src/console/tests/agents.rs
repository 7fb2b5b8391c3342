//! The agent screens: research polling and commands, tool calls with schema validation and
//! confirm tokens in the approval inbox, the foldable result, the chat; and their snapshots.

use super::fixtures::*;
use crate::api::ApiError;
use crate::api::model::{
    Capabilities, ChatReply, CliReply, ErrorDetail, ResearchAgent, ResearchArtifact,
    ResearchMessage, ResearchRun, ResearchStatus, ToolCall, ToolCapability, ToolResult,
};
use crate::console::action::{Action, Answer, Effect};
use crate::console::app::App;
use crate::console::inbox::{DecisionKind, LocalState, Status};
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use crate::console::tabs::Tab;
use crate::console::tabs::tools::view::tree_text;
use chrono::{DateTime, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};

// ---- fixtures ------------------------------------------------------------------------------------

pub const RUN_ID: &str = "run_5e1f0a92";
pub const TASK: &str = "find the best trend strategy for ETH on 1h over 30 days";
const TOKEN: &str = "ctk_9f8e7d6c5b4a3210";

fn agent(
    id: &str,
    name: &str,
    parent: Option<&str>,
    status: &str,
    progress: u8,
    task: &str,
    summary: Option<&str>,
) -> ResearchAgent {
    ResearchAgent {
        agent_id: id.into(),
        name: name.into(),
        role: if parent.is_none() { "lead" } else { "worker" }.into(),
        parent: parent.map(str::to_string),
        status: status.into(),
        task: task.into(),
        progress,
        summary: summary.map(str::to_string),
    }
}

fn msg(at: i64, author: &str, text: &str) -> ResearchMessage {
    ResearchMessage {
        time: t0() + secs(at),
        author: author.into(),
        text: text.into(),
    }
}

pub fn research_run(status: &str) -> ResearchRun {
    let done = status != "active";
    ResearchRun {
        run_id: RUN_ID.into(),
        task: TASK.into(),
        status: status.into(),
        created_at: Some(t0() - secs(95)),
        finished_at: done.then(|| t0() - secs(5)),
        planner: "deterministic".into(),
        agents: vec![
            agent("ag_lead", "lead", None, if done { "done" } else { "running" }, if done { 100 } else { 60 }, "plan, compare and report", None),
            agent("ag_1", "ema_cross", Some("ag_lead"), "done", 100, "backtest ema_cross ETH-USD 1h 30d", Some("+12.41% · Sharpe 1.82 · 23 trades")),
            agent("ag_2", "macd_trend", Some("ag_lead"), if done { "done" } else { "running" }, if done { 100 } else { 55 }, "backtest macd_trend ETH-USD 1h 30d", None),
            agent("ag_3", "donchian_breakout", Some("ag_lead"), if done { "done" } else { "planning" }, if done { 100 } else { 0 }, "backtest donchian_breakout ETH-USD 1h 30d", None),
        ],
        transcript: vec![
            msg(-95, "user", TASK),
            msg(-94, "lead", "Plan: three trend followers (ema_cross, macd_trend, donchian_breakout) on ETH-USD 1h over 30 days; each agent backtests its default parameters, then I compare return, drawdown and Sharpe."),
            msg(-60, "ag_1", "ema_cross finished: +12.41% return, max drawdown -4.10%, Sharpe 1.82 over 23 trades."),
            msg(-30, "user", "prefer lower drawdown over return"),
            msg(-29, "lead", "Noted: ranking by return over max drawdown."),
            msg(-10, "ag_2", "macd_trend at 55%: 18 of 33 windows replayed."),
        ],
        artifacts: vec![
            ResearchArtifact {
                name: "plan.json".into(),
                kind: "json".into(),
                content: r#"{"pair":"ETH-USD","timeframe":"1h","days":30,"strategies":["ema_cross","macd_trend","donchian_breakout"]}"#.into(),
                created_at: Some(t0() - secs(94)),
            },
            ResearchArtifact {
                name: "report.md".into(),
                kind: "markdown".into(),
                content: "# Trend strategies for ETH 1h, 30 days\n\n## Ranking\n- ema_cross: +12.41%, max DD -4.10%, Sharpe 1.82\n- macd_trend: +8.02%, max DD -6.31%\n\n## Recommendation\nema_cross with fast=9 slow=21.".into(),
                created_at: Some(t0() - secs(5)),
            },
        ],
        ..Default::default()
    }
}

fn research_loaded(run: Option<ResearchRun>, at: DateTime<Utc>) -> Action {
    Action::answered(
        at,
        LATENCY,
        Answer::ResearchLoaded {
            result: Ok(Box::new(ResearchStatus {
                run,
                ..Default::default()
            })),
        },
    )
}

fn tool(name: &str, tier: &str, description: &str, schema: Value) -> ToolCapability {
    ToolCapability {
        name: format!("service_{name}"),
        operation: name.into(),
        description: description.into(),
        tier: tier.into(),
        method: if tier == "observe" { "GET" } else { "POST" }.into(),
        path: format!("/api/{name}"),
        input_schema: schema,
        requires_confirmation: tier == "mutate",
        ..Default::default()
    }
}

pub fn capabilities() -> Capabilities {
    Capabilities {
        tools: vec![
            tool(
                "propose_trade",
                "mutate",
                "Stage a trade for approval",
                json!({
                    "type": "object",
                    "required": ["coin", "side", "size"],
                    "properties": {
                        "coin": {"type": "string", "minLength": 1, "description": "BTC, ETH, …"},
                        "side": {"type": "string", "enum": ["long", "short"]},
                        "size": {"type": "number", "exclusiveMinimum": 0},
                        "leverage": {"type": "integer", "minimum": 1, "maximum": 100},
                        "tp": {"type": ["number", "null"]}
                    }
                }),
            ),
            tool(
                "get_positions",
                "observe",
                "Open positions on every venue",
                json!({"type": "object", "properties": {}}),
            ),
            tool(
                "run_backtest",
                "experiment",
                "Submit a backtest job",
                json!({
                    "type": "object",
                    "required": ["strategyId", "pair", "timeframe", "days"],
                    "properties": {
                        "strategyId": {"type": "string"},
                        "pair": {"type": "string"},
                        "timeframe": {"type": "string", "enum": ["5m", "15m", "1h", "4h", "1d"]},
                        "days": {"type": "integer", "minimum": 1, "maximum": 3650}
                    }
                }),
            ),
            tool(
                "discover_top_backtests",
                "observe",
                "Best backtests by return",
                json!({
                    "type": "object",
                    "properties": {
                        "filter": {"type": "string", "enum": ["good", "excellent", "all"]},
                        "includeAll": {"type": "boolean"}
                    }
                }),
            ),
        ],
        ..Default::default()
    }
}

fn caps_loaded(at: DateTime<Utc>) -> Action {
    Action::answered(
        at,
        LATENCY,
        Answer::CapabilitiesLoaded {
            result: Ok(Box::new(capabilities())),
        },
    )
}

fn positions_result() -> Value {
    json!({"positions": [
        {"coin": "BTC", "exchange": "venue", "szi": "0.02", "entryPx": "64210", "unrealizedPnl": "90.0"},
        {"coin": "ETH", "exchange": "venue2", "szi": "-1.5", "entryPx": "3410", "unrealizedPnl": "-107.5"}
    ], "count": 2})
}

fn token(expires: DateTime<Utc>) -> Value {
    json!({
        "confirmToken": TOKEN,
        "expiresAt": expires.to_rfc3339(),
        "summary": "long 0.05 ETH 3x on venue",
        "preview": {"coin": "ETH", "side": "long", "size": 0.05, "leverage": 3, "markPx": 3412.5}
    })
}

fn executed(
    name: &str,
    args: Value,
    approval: Option<&str>,
    result: Result<ToolResult, ApiError>,
    at: DateTime<Utc>,
) -> Action {
    Action::answered(
        at,
        LATENCY,
        Answer::ToolExecuted {
            name: name.into(),
            args,
            approval: approval.map(str::to_string),
            result: result.map(Box::new),
        },
    )
}

fn tool_calls(fx: &[Effect]) -> Vec<(String, Value, Option<String>)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::ExecuteTool {
                name,
                args,
                approval,
            } => Some((name.clone(), args.clone(), approval.clone())),
            _ => None,
        })
        .collect()
}

fn research_fetches(fx: &[Effect]) -> usize {
    fx.iter().filter(|e| **e == Effect::FetchResearch).count()
}

fn run_line(app: &mut App, line: &str) -> Vec<Effect> {
    let mut fx = app.update(key(':'));
    fx.extend(type_text(app, line));
    fx.extend(app.update(code(KeyCode::Enter)));
    fx
}

fn ctrl_s() -> Action {
    Action::Key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL))
}

/// A quiet console at t0 whose first research check found nothing and whose tool catalog is loaded.
fn tools_app() -> App {
    let mut app = app_with(quiet_options());
    let fx = app.update(Action::Tick(t0()));
    assert_eq!(
        research_fetches(&fx),
        1,
        "research is checked once at start"
    );
    app.update(research_loaded(None, t0()));
    app.update(caps_loaded(t0()));
    app.toasts.clear();
    app
}

/// Stages `service_propose_trade` through `/tool`: its first answer is a confirm token expiring
/// at t0 + 60 s, which lands in the inbox as `tool-1`.
fn token_in_inbox() -> App {
    let mut app = tools_app();
    let fx = run_line(
        &mut app,
        r#"/tool propose_trade {"coin": "ETH", "side": "long", "size": 0.05, "leverage": 3}"#,
    );
    let calls = tool_calls(&fx);
    assert_eq!(calls.len(), 1, "{fx:?}");
    let (name, args, approval) = &calls[0];
    assert_eq!(name, "service_propose_trade");
    assert_eq!(
        *args,
        json!({"coin": "ETH", "side": "long", "size": 0.05, "leverage": 3})
    );
    assert_eq!(*approval, None);
    let fx = app.update(executed(
        name,
        args.clone(),
        None,
        Ok(ToolResult {
            tool: name.clone(),
            result: token(t0() + secs(60)),
            requires_confirmation: true,
            ..Default::default()
        }),
        t0(),
    ));
    assert_eq!(bells(&fx), 1, "a new item in the inbox rings");
    app
}

// ---- confirm tokens in the inbox -----------------------------------------------------------------

#[test]
fn confirm_token_arrives_counts_down_and_is_approved_with_the_token() {
    let mut app = token_in_inbox();
    let item = app.item("tool-1").expect("the token is an inbox item");
    assert_eq!(item.status(app.now), Status::Staged);
    assert_eq!(item.remaining(app.now), Some(secs(60)));
    assert_eq!(item.describe(), "long 0.05 ETH 3x on venue");
    let t = item.tool.as_ref().unwrap();
    assert_eq!(t.confirm_token, TOKEN);
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.contains("tool-1 is in the inbox"))
    );
    // The result panel says where it went, and never shows the token.
    let outcome = app.tools.outcome.as_ref().unwrap();
    assert_eq!(outcome.awaiting.as_deref(), Some("tool-1"));
    assert!(!format!("{:?}", outcome.result).contains(TOKEN));

    // The countdown runs; the Desk strip lists it beside proposals.
    app.update(Action::Tick(t0() + secs(20)));
    assert_eq!(
        app.item("tool-1").unwrap().remaining(app.now),
        Some(secs(40))
    );
    assert_eq!(app.strip_items(), vec![0]);
    app.update(key('1'));
    let screen = render(&app);
    let line = screen
        .lines()
        .find(|l| l.contains("tool-1"))
        .expect("strip row");
    assert!(
        line.contains("0:40") && line.contains("long 0.05 ETH 3x"),
        "{line}"
    );

    // Same dialog rules: a, Enter does nothing, y executes.
    app.update(key('2'));
    let fx = app.update(key('a'));
    assert!(
        matches!(&app.modal, Some(Modal::Approve(id)) if *id == "tool-1"),
        "{:?}",
        app.modal
    );
    assert!(fx.is_empty(), "{fx:?}");
    assert!(tool_calls(&app.update(code(KeyCode::Enter))).is_empty());
    let fx = app.update(key('y'));
    let calls = tool_calls(&fx);
    assert_eq!(
        calls,
        vec![(
            "service_propose_trade".to_string(),
            json!({"coin": "ETH", "side": "long", "size": 0.05, "leverage": 3, "confirmToken": TOKEN}),
            Some("tool-1".to_string())
        )]
    );
    assert_eq!(app.item("tool-1").unwrap().local, LocalState::Confirming);
    assert!(app.confirm_in_flight());

    let body = json!({"proposalId": "prop_77aa", "status": "executed", "fills": [{"coin": "ETH", "px": "3412.5"}]});
    let fx = app.update(executed(
        "service_propose_trade",
        calls[0].1.clone(),
        Some("tool-1"),
        Ok(ToolResult {
            tool: "service_propose_trade".into(),
            result: body.clone(),
            ..Default::default()
        }),
        t0() + secs(21),
    ));
    let item = app.item("tool-1").unwrap();
    assert_eq!(item.status(app.now), Status::Approved);
    assert_eq!(item.tool.as_ref().unwrap().result.as_ref(), Some(&body));
    assert_eq!(app.decisions[0].kind, DecisionKind::Approved);
    assert_eq!(app.decisions[0].proposal_id, "tool-1");
    let lines = journal_lines(&fx);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["decision"], "approved");
    // The result is shown: in the Tools panel as a tree, without the token.
    let outcome = app.tools.outcome.as_ref().unwrap();
    let tree = outcome.result.as_ref().unwrap();
    assert!(tree_text(tree).iter().any(|l| l.contains("\"executed\"")));
    assert!(!outcome.args.to_string().contains(TOKEN));
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.starts_with("Approved tool-1"))
    );
    let detail = render(&app);
    assert!(detail.contains("service_propose_trade"), "{detail}");
}

#[test]
fn an_expired_token_cannot_be_approved() {
    let mut app = token_in_inbox();
    let fx = app.update(Action::Tick(t0() + secs(61)));
    assert_eq!(app.item("tool-1").unwrap().status(app.now), Status::Expired);
    assert_eq!(app.decisions[0].kind, DecisionKind::Expired);
    assert_eq!(journal_lines(&fx)[0]["proposalId"], "tool-1");
    assert!(app.strip_items().is_empty());
    app.update(key('2'));
    let fx = app.update(key('a'));
    assert!(app.modal.is_none(), "{:?}", app.modal);
    assert!(tool_calls(&fx).is_empty());
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.contains("can no longer be approved"))
    );
}

#[test]
fn the_dialog_rechecks_expiry_and_reject_dismisses_locally() {
    let mut app = token_in_inbox();
    app.update(key('2'));
    app.update(key('a'));
    app.update(Action::Tick(t0() + secs(61)));
    assert!(
        tool_calls(&app.update(key('y'))).is_empty(),
        "expired while the dialog was open"
    );

    let mut app = token_in_inbox();
    app.update(key('2'));
    let fx = app.update(key('x'));
    assert!(tool_calls(&fx).is_empty());
    assert_eq!(app.item("tool-1").unwrap().local, LocalState::Rejected);
    assert_eq!(app.decisions[0].kind, DecisionKind::Rejected);
    assert!(app.decisions[0].result.contains("token expires unused"));
}

#[test]
fn a_failed_approval_is_recorded() {
    let mut app = token_in_inbox();
    app.update(key('2'));
    app.update(key('a'));
    let fx = app.update(key('y'));
    let (name, args, _) = tool_calls(&fx).remove(0);
    app.update(executed(
        &name,
        args,
        Some("tool-1"),
        Err(ApiError::Invalid {
            code: "confirm_token_expired".into(),
            field: None,
            message: "the confirm token expired".into(),
        }),
        t0() + secs(2),
    ));
    let item = app.item("tool-1").unwrap();
    assert_eq!(item.status(app.now), Status::Failed);
    assert_eq!(app.decisions[0].kind, DecisionKind::Failed);
    assert!(app.tools.outcome.as_ref().unwrap().result.is_err());
}

#[test]
fn proposals_and_tokens_share_the_inbox() {
    let mut app = token_in_inbox();
    app.update(proposals(
        vec![btc_long("prop_1a2b3c4d5e6f7081", t0())],
        t0() + secs(1),
    ));
    assert_eq!(app.inbox.len(), 2);
    assert!(
        app.item("tool-1").is_some(),
        "a proposals poll keeps the token"
    );
    assert_eq!(app.strip_items().len(), 2);
}

// ---- tool arguments --------------------------------------------------------------------------------

#[test]
fn invalid_arguments_are_never_sent_and_each_problem_names_its_path() {
    let mut app = tools_app();
    let fx = run_line(
        &mut app,
        r#"/tool propose_trade {"coin": 5, "side": "up", "leverage": 0}"#,
    );
    assert!(tool_calls(&fx).is_empty(), "{fx:?}");
    let editor = tool_editor(&app).expect("the editor opens with the problems");
    assert!(editor.refused);
    let problems: Vec<String> = editor.problems.iter().map(|p| p.to_string()).collect();
    assert_eq!(
        problems,
        [
            "$.size: is required",
            "$.coin: expected string, got integer",
            "$.leverage: must be at least 1",
            "$.side: must be one of \"long\", \"short\"",
        ]
    );
    // ctrl-s still refuses.
    assert!(tool_calls(&app.update(ctrl_s())).is_empty());
    assert!(tool_editor(&app).is_some());
    let text = render(&app);
    for needle in ["$.size", "is required", "$.side", "not sent"] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }

    // Text that is not JSON is one problem at the root.
    app.update(code(KeyCode::Esc));
    let fx = run_line(&mut app, "/tool propose_trade {coin: ETH");
    assert!(tool_calls(&fx).is_empty());
    let p = &tool_editor(&app).unwrap().problems;
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].path, "$");
    assert!(p[0].message.starts_with("not valid JSON"), "{p:?}");
}

#[test]
fn the_editor_starts_from_the_schema_skeleton_and_sends_once_valid() {
    let mut app = tools_app();
    app.update(key('7'));
    assert_eq!(app.tab, Tab::Tools);
    // Sorted by tier: observe, experiment, mutate; the mutate tool is last.
    let names: Vec<&str> = app.tools.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "service_discover_top_backtests",
            "service_get_positions",
            "service_run_backtest",
            "service_propose_trade"
        ]
    );
    app.update(key('G'));
    app.update(code(KeyCode::Enter));
    let editor = tool_editor(&app).expect("enter opens the editor");
    assert_eq!(
        serde_json::from_str::<Value>(&editor.text()).unwrap(),
        json!({"coin": "", "side": "long", "size": 0})
    );
    let paths: Vec<&str> = editor.problems.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["$.coin", "$.size"]);
    assert!(tool_calls(&app.update(ctrl_s())).is_empty());
    // Replace the text with valid arguments: select all and type.
    app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('a'),
        KeyModifiers::CONTROL,
    )));
    for _ in 0..200 {
        app.update(code(KeyCode::Backspace));
        app.update(code(KeyCode::Delete));
    }
    type_text(
        &mut app,
        r#"{"coin": "BTC", "side": "short", "size": 0.01}"#,
    );
    assert!(
        tool_editor(&app).unwrap().problems.is_empty(),
        "{:?}",
        tool_editor(&app).unwrap().problems
    );
    let fx = app.update(ctrl_s());
    assert_eq!(
        tool_calls(&fx),
        vec![(
            "service_propose_trade".to_string(),
            json!({"coin": "BTC", "side": "short", "size": 0.01}),
            None
        )]
    );
    assert!(tool_editor(&app).is_none());
}

#[test]
fn tool_before_the_catalog_waits_for_it() {
    let mut app = app_with(quiet_options());
    app.update(Action::Tick(t0()));
    let fx = run_line(&mut app, "/tool get_positions {}");
    assert!(fx.contains(&Effect::FetchCapabilities), "{fx:?}");
    assert!(tool_calls(&fx).is_empty());
    let fx = app.update(caps_loaded(t0()));
    assert_eq!(
        tool_calls(&fx),
        vec![("service_get_positions".to_string(), json!({}), None)]
    );
    let fx = run_line(&mut app, "/tool get_postions");
    assert!(tool_calls(&fx).is_empty());
    assert_eq!(
        app.command_error.as_deref(),
        Some("unknown tool `get_postions`; did you mean `service_get_positions`?")
    );
}

#[test]
fn results_fold_and_unfold() {
    let mut app = tools_app();
    app.update(key('7'));
    let fx = run_line(&mut app, "/tool get_positions {}");
    assert_eq!(tool_calls(&fx).len(), 1);
    app.update(executed(
        "service_get_positions",
        json!({}),
        None,
        Ok(ToolResult {
            tool: "service_get_positions".into(),
            result: positions_result(),
            ..Default::default()
        }),
        t0() + secs(1),
    ));
    assert_eq!(
        app.focused_pane(),
        Pane::Result,
        "the result takes the focus"
    );
    assert_eq!(app.pane_len(Pane::Result), 19);
    // Row 2 is `"positions": [`: space folds it.
    app.update(key('j'));
    app.update(key('j'));
    app.update(key(' '));
    let tree = app.tools.outcome.as_ref().unwrap().result.as_ref().unwrap();
    let lines = tree_text(tree);
    assert_eq!(lines[2], "  \"positions\": […] 2 items", "{lines:#?}");
    assert_eq!(app.pane_len(Pane::Result), 4);
    // Enter on the root folds everything; again unfolds it.
    app.update(key('g'));
    app.update(code(KeyCode::Enter));
    let tree = app.tools.outcome.as_ref().unwrap().result.as_ref().unwrap();
    assert_eq!(tree_text(tree), ["{…} 2 keys"]);
    app.update(code(KeyCode::Enter));
    app.update(key('j'));
    app.update(key('j'));
    app.update(key(' '));
    assert_eq!(app.pane_len(Pane::Result), 19);
}

// ---- research -------------------------------------------------------------------------------------

#[test]
fn research_is_polled_only_while_a_run_exists_and_fast_only_when_visible() {
    let mut app = app_with(quiet_options());
    let fx = app.update(Action::Tick(t0()));
    assert_eq!(research_fetches(&fx), 1);
    // No run: never again, however long the console runs.
    app.update(research_loaded(None, t0()));
    for s in [1, 2, 30, 31, 600] {
        assert_eq!(
            research_fetches(&app.update(Action::Tick(t0() + secs(s)))),
            0,
            "t+{s}"
        );
    }
    assert_eq!(app.research.poll.next_due, None);

    // Entering the tab looks again: a run started elsewhere, active.
    let t = t0() + secs(600);
    let fx = app.update(key('6'));
    assert_eq!(research_fetches(&fx), 1);
    app.update(research_loaded(Some(research_run("active")), t));
    // Visible and active: every 2 s.
    assert_eq!(research_fetches(&app.update(Action::Tick(t + secs(1)))), 0);
    assert_eq!(research_fetches(&app.update(Action::Tick(t + secs(2)))), 1);
    app.update(research_loaded(Some(research_run("active")), t + secs(2)));
    // Off screen: the next answer moves it to every 30 s.
    app.update(key('1'));
    assert_eq!(research_fetches(&app.update(Action::Tick(t + secs(4)))), 1);
    app.update(research_loaded(Some(research_run("active")), t + secs(4)));
    for s in [6, 10, 33] {
        assert_eq!(
            research_fetches(&app.update(Action::Tick(t + secs(s)))),
            0,
            "t+{s}"
        );
    }
    assert_eq!(research_fetches(&app.update(Action::Tick(t + secs(34)))), 1);
    // The run completes: a toast names the report; then every 30 s even on screen.
    app.update(key('6'));
    app.update(research_loaded(
        Some(research_run("completed")),
        t + secs(35),
    ));
    assert!(
        toast_texts(&app)
            .iter()
            .any(|m| m.contains("completed: report.md")),
        "{:?}",
        toast_texts(&app)
    );
    assert_eq!(research_fetches(&app.update(Action::Tick(t + secs(37)))), 0);
    assert_eq!(research_fetches(&app.update(Action::Tick(t + secs(65)))), 1);
}

#[test]
fn a_service_without_research_is_not_asked_again() {
    let mut app = app_with(quiet_options());
    app.update(Action::Tick(t0()));
    app.update(Action::answered(
        t0(),
        LATENCY,
        Answer::ResearchLoaded {
            result: Err(ApiError::NotFound {
                code: "not_found".into(),
                message: "no such operation".into(),
            }),
        },
    ));
    assert!(app.research.unsupported);
    assert_eq!(research_fetches(&app.update(key('6'))), 0);
    assert_eq!(
        research_fetches(&app.update(Action::Tick(t0() + secs(60)))),
        0
    );
}

#[test]
fn research_commands_go_to_the_service_command_line_exactly_as_typed() {
    let mut app = tools_app();
    let fx = run_line(&mut app, "/research say  prefer lower   drawdown, please ");
    assert_eq!(
        fx[0],
        Effect::Cli("/research say  prefer lower   drawdown, please".into())
    );
    // Showing the Research tab also asks for the run.
    assert_eq!(fx[1..], [Effect::FetchResearch]);
    assert_eq!(app.tab, Tab::Research);
    app.update(research_loaded(None, t0()));
    let fx = run_line(&mut app, &format!("/research start {TASK}"));
    assert_eq!(fx, vec![Effect::Cli(format!("/research start {TASK}"))]);
    assert_eq!(
        run_line(&mut app, "/research"),
        vec![Effect::Cli("/research".into())]
    );
    assert_eq!(
        run_line(&mut app, "/research stop"),
        vec![Effect::Cli("/research stop".into())]
    );
    // A start without a task is refused here.
    assert!(run_line(&mut app, "/research start").is_empty());
    assert!(
        app.command_error
            .as_deref()
            .unwrap()
            .contains("missing <task>")
    );

    // The reply shows, and the run is asked for at once (the first check had found none).
    let fx = app.update(Action::answered(
        t0() + secs(1),
        LATENCY,
        Answer::CliAnswered {
            command: format!("/research start {TASK}"),
            result: Ok(CliReply {
                output: format!("started {RUN_ID}: lead planning"),
                ..Default::default()
            }),
        },
    ));
    assert_eq!(research_fetches(&fx), 1);
    assert!(
        app.research
            .reply
            .as_deref()
            .unwrap()
            .contains(&format!("started {RUN_ID}"))
    );
    assert!(
        toast_texts(&app)
            .iter()
            .any(|t| t.contains("lead planning"))
    );
}

#[test]
fn keys_prefill_research_commands_and_stop_asks_first() {
    let mut app = tools_app();
    app.update(key('6'));
    app.update(research_loaded(Some(research_run("active")), t0()));
    app.update(key('N'));
    assert_eq!(app.command_line().unwrap().text(), "/research start ");
    app.update(code(KeyCode::Esc));
    app.update(key('m'));
    assert_eq!(app.command_line().unwrap().text(), "/research say ");
    type_text(&mut app, "hi");
    assert_eq!(
        app.update(code(KeyCode::Enter)),
        vec![Effect::Cli("/research say hi".into())]
    );

    assert!(app.update(key('X')).is_empty());
    assert!(
        matches!(&app.modal, Some(Modal::StopRun(id)) if *id == RUN_ID),
        "{:?}",
        app.modal
    );
    assert!(app.update(code(KeyCode::Esc)).is_empty());
    assert!(app.modal.is_none(), "{:?}", app.modal);
    app.update(key('X'));
    assert_eq!(
        app.update(key('y')),
        vec![Effect::StopResearch(RUN_ID.into())]
    );
    app.update(Action::answered(
        t0() + secs(1),
        LATENCY,
        Answer::ResearchStopped {
            run_id: RUN_ID.into(),
            result: Ok(Box::new(research_run("stopped"))),
        },
    ));
    assert_eq!(app.research.run.as_ref().unwrap().status, "stopped");
    // Nothing active: X only says so.
    assert!(app.update(key('X')).is_empty());
    assert!(app.modal.is_none(), "{:?}", app.modal);
}

#[test]
fn the_transcript_scrolls_from_the_newest_line() {
    let mut app = tools_app();
    app.update(Action::Resize(80, 24));
    app.update(key('6'));
    app.update(research_loaded(Some(research_run("active")), t0()));
    app.update(code(KeyCode::Tab));
    app.update(code(KeyCode::Tab));
    assert_eq!(app.focused_pane(), Pane::Transcript);
    assert_eq!(app.research.scroll, 0);
    app.update(key('k'));
    assert_eq!(app.research.scroll, 1);
    app.update(key('g'));
    let top = app.research.scroll;
    assert!(top > 1);
    app.update(key('k'));
    assert_eq!(app.research.scroll, top, "no further than the first line");
    let text = render(&app);
    assert!(
        text.contains("11:58:25 user: find the best trend"),
        "{text}"
    );
    app.update(key('G'));
    assert_eq!(app.research.scroll, 0);
}

// ---- chat -----------------------------------------------------------------------------------------

fn chat_reply() -> ChatReply {
    ChatReply {
        reply: "You hold 2 positions (BTC long, ETH short). I prepared a 0.05 ETH long for your approval.".into(),
        tool_calls: vec![
            ToolCall {
                name: "service_get_positions".into(),
                args: json!({}),
                result: positions_result(),
                error: None,
            },
            ToolCall {
                name: "service_get_open_orders".into(),
                args: json!({"coin": "ETH"}),
                result: Value::Null,
                error: Some(ErrorDetail {
                    code: "not_found".into(),
                    message: "no such tool".into(),
                    field: None,
                }),
            },
        ],
        confirm_tokens: vec![{
            let mut t = token(t0() + secs(300));
            t["tool"] = json!("service_propose_trade");
            t["args"] = json!({"coin": "ETH", "side": "long", "size": 0.05});
            t
        }],
        mode: "router".into(),
        ..Default::default()
    }
}

fn chatted(app: &mut App) {
    let fx = run_line(app, "/chat what do I hold?");
    let sent = fx
        .iter()
        .find_map(|e| match e {
            Effect::Chat(m) => Some(m.clone()),
            _ => None,
        })
        .expect("a chat effect");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].role, "user");
    assert_eq!(sent[0].content, "what do I hold?");
    assert_eq!(app.tab, Tab::Chat);
    app.update(Action::answered(
        t0() + secs(2),
        LATENCY,
        Answer::ChatAnswered {
            result: Ok(Box::new(chat_reply())),
        },
    ));
}

#[test]
fn chat_shows_calls_and_sends_its_tokens_to_the_inbox() {
    let mut app = tools_app();
    chatted(&mut app);
    let item = app
        .item("tool-1")
        .expect("the chat's token is in the inbox");
    assert_eq!(item.tool.as_ref().unwrap().tool, "service_propose_trade");
    assert_eq!(item.tool.as_ref().unwrap().origin, "chat");
    assert_eq!(app.chat.mode.as_deref(), Some("router"));
    // The next message carries the conversation.
    let fx = run_line(&mut app, "/chat thanks");
    let sent = fx.iter().find_map(|e| match e {
        Effect::Chat(m) => Some(m.clone()),
        _ => None,
    });
    let roles: Vec<String> = sent.unwrap().iter().map(|m| m.role.clone()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    // While it answers, another message waits.
    assert!(
        run_line(&mut app, "/chat again")
            .iter()
            .all(|e| !matches!(e, Effect::Chat(_)))
    );
}

// ---- snapshots ------------------------------------------------------------------------------------

fn snap(name: &str, app: &App) -> String {
    let text = render(app);
    assert_eq!(text, render(app), "{name} is not deterministic");
    insta::assert_snapshot!(name, text);
    text
}

fn research_app(width: u16, height: u16, status: &str) -> App {
    let mut app = seeded_app(width, height);
    app.update(research_loaded(Some(research_run(status)), t0()));
    app.research.reply = Some(format!("/research start {TASK} → started {RUN_ID}"));
    app.update(key('6'));
    app.update(research_loaded(Some(research_run(status)), t0()));
    app.toasts.clear();
    app
}

#[test]
fn research_120x40() {
    let app = research_app(120, 40, "active");
    let text = snap("research_120x40", &app);
    for needle in [
        "6 Research",
        RUN_ID,
        "active",
        "ema_cross",
        "└─ donchian_breakout",
        "├─ macd_trend",
        "55%",
        "report.md",
        "prefer lower drawdown",
        "Transcript",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

#[test]
fn research_80x24() {
    let app = research_app(80, 24, "completed");
    let text = snap("research_80x24", &app);
    assert_eq!(text.lines().count(), 24);
    assert!(text.lines().all(|l| l.chars().count() <= 80));
    for needle in ["completed", "lead", "plan.json"] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

#[test]
fn research_artifact_viewer_120x40() {
    let mut app = research_app(120, 40, "completed");
    app.update(code(KeyCode::Tab));
    app.update(key('j'));
    app.update(code(KeyCode::Enter));
    assert!(
        matches!(
            app.modal,
            Some(Modal::Artifact {
                index: 1,
                scroll: 0
            })
        ),
        "{:?}",
        app.modal
    );
    let text = snap("research_artifact_120x40", &app);
    for needle in [
        "report.md (markdown)",
        "TREND STRATEGIES FOR ETH 1H, 30 DAYS",
        "• ema_cross",
        "Recommendation",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
    // JSON is pretty-printed.
    app.update(code(KeyCode::Esc));
    app.update(key('k'));
    app.update(code(KeyCode::Enter));
    let text = render(&app);
    assert!(text.contains("\"timeframe\": \"1h\""), "{text}");
}

fn tools_screen(width: u16, height: u16) -> App {
    let mut app = seeded_app(width, height);
    app.update(key('7'));
    app.update(caps_loaded(t0()));
    app.update(executed(
        "service_get_positions",
        json!({}),
        None,
        Ok(ToolResult {
            tool: "service_get_positions".into(),
            result: positions_result(),
            ..Default::default()
        }),
        t0(),
    ));
    // The second position folded, the cursor on it.
    for _ in 0..10 {
        app.update(key('j'));
    }
    app.update(key(' '));
    app.update(code(KeyCode::BackTab));
    app.update(key('G'));
    app.toasts.clear();
    app
}

#[test]
fn tools_120x40() {
    let app = tools_screen(120, 40);
    let text = snap("tools_120x40", &app);
    for needle in [
        "observe",
        "experiment",
        "mutate",
        "propose_trade",
        "*coin",
        "long|short",
        "needs approval",
        "{…} 5 keys",
        "positions: ▾ [",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

#[test]
fn tools_80x24() {
    let app = tools_screen(80, 24);
    let text = snap("tools_80x24", &app);
    assert_eq!(text.lines().count(), 24);
    assert!(text.lines().all(|l| l.chars().count() <= 80));
}

#[test]
fn tools_editor_with_problems_120x40() {
    let mut app = tools_screen(120, 40);
    run_line(
        &mut app,
        r#"/tool propose_trade {"coin": "", "side": "up", "size": -1}"#,
    );
    let text = snap("tools_editor_120x40", &app);
    assert!(text.contains("$.side"), "{text}");
}

#[test]
fn chat_120x40() {
    let mut app = seeded_app(120, 40);
    chatted(&mut app);
    app.toasts.clear();
    let text = snap("chat_120x40", &app);
    for needle in [
        "router mode: no LLM is configured",
        "what do I hold?",
        "service_get_positions",
        "2 positions",
        "error not_found",
        "tool-1",
        "8 Chat",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}

#[test]
fn chat_80x24() {
    let mut app = seeded_app(80, 24);
    chatted(&mut app);
    app.toasts.clear();
    let text = snap("chat_80x24", &app);
    assert_eq!(text.lines().count(), 24);
    assert!(text.lines().all(|l| l.chars().count() <= 80));
}

#[test]
fn tool_approval_in_the_inbox_120x40() {
    let mut app = seeded_app(120, 40);
    chatted(&mut app);
    app.update(key('2'));
    let i = app.inbox.iter().position(|i| i.id() == "tool-1").unwrap();
    app.selected.insert(Pane::Inbox, i);
    app.update(key('a'));
    app.toasts.clear();
    let text = snap("tool_approval_dialog_120x40", &app);
    for needle in ["Approve tool call", "service_propose_trade", "5:00"] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}
