//! The agent screens: research polling and commands, tool calls with schema validation and
//! confirm tokens in the approval inbox, the foldable result, the chat; and their snapshots.

mod chat;
mod research;
mod tokens;
mod tools;

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
use crate::console::tab::Tab;
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
        ..Default::default()
    }
}

fn msg(at: i64, author: &str, text: &str) -> ResearchMessage {
    ResearchMessage {
        time: t0() + secs(at),
        author: author.into(),
        text: text.into(),
        ..Default::default()
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
                ..Default::default()
            },
            ResearchArtifact {
                name: "report.md".into(),
                kind: "markdown".into(),
                content: "# Trend strategies for ETH 1h, 30 days\n\n## Ranking\n- ema_cross: +12.41%, max DD -4.10%, Sharpe 1.82\n- macd_trend: +8.02%, max DD -6.31%\n\n| strategy | return % | max DD % | trades |\n|:--|--:|--:|--:|\n| ema_cross | +12.41 | -4.10 | 23 |\n| macd_trend | +8.02 | -6.31 | 17 |\n\n## Recommendation\nema_cross with fast=9 slow=21.".into(),
                created_at: Some(t0() - secs(5)),
                ..Default::default()
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
    app.toasts_mut().clear();
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

fn chat_reply() -> ChatReply {
    ChatReply {
        reply: "You hold 2 positions (BTC long, ETH short). I prepared a 0.05 ETH long for your approval.".into(),
        tool_calls: vec![
            ToolCall {
                name: "service_get_positions".into(),
                args: json!({}),
                result: positions_result(),
                error: None,
                extra: Default::default(),
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
                extra: Default::default(),
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

pub(super) fn chatted(app: &mut App) {
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
    assert_eq!(app.tab(), Tab::Chat);
    app.update(Action::answered(
        t0() + secs(2),
        LATENCY,
        Answer::ChatAnswered {
            result: Ok(Box::new(chat_reply())),
        },
    ));
}

// ---- snapshots ------------------------------------------------------------------------------------

fn snap(name: &str, app: &App) -> String {
    let text = render(app);
    assert_eq!(text, render(app), "{name} is not deterministic");
    // The snapshots stay with the other console screens', in tests/snapshots.
    insta::with_settings!({ snapshot_path => "../snapshots" }, {
        insta::assert_snapshot!(name, text);
    });
    text
}

pub(super) fn research_app(width: u16, height: u16, status: &str) -> App {
    let mut app = seeded_app(width, height);
    app.update(research_loaded(Some(research_run(status)), t0()));
    app.tabs_mut()
        .research
        .set_reply(format!("/research start {TASK} → started {RUN_ID}"));
    app.update(key('6'));
    app.update(research_loaded(Some(research_run(status)), t0()));
    app.toasts_mut().clear();
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
            app.modal(),
            Some(Modal::Artifact {
                index: 1,
                scroll: 0
            })
        ),
        "{:?}",
        app.modal()
    );
    let text = snap("research_artifact_120x40", &app);
    for needle in [
        "report.md (markdown)",
        "TREND STRATEGIES FOR ETH 1H, 30 DAYS",
        "• ema_cross",
        "Recommendation",
        // The pipe table as a table: aligned columns under a rule.
        "strategy   │ return % │ max DD % │ trades",
        "───────────┼──────────┼──────────┼───────",
        "ema_cross  │   +12.41 │    -4.10 │     23",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
    assert!(!text.contains("|:--|"), "{text}");
    // JSON is pretty-printed.
    app.update(code(KeyCode::Esc));
    app.update(key('k'));
    app.update(code(KeyCode::Enter));
    let text = render(&app);
    assert!(text.contains("\"timeframe\": \"1h\""), "{text}");
}

/// The sandbox's ranking: thirteen columns, parameters included.
const RANKING: &str = "## Ranking\n\n\
| # | Strategy | Pair | TF | Parameters | IS return | IS Sharpe | IS max DD | IS trades | OOS return | OOS Sharpe | OOS max DD | OOS trades |\n\
|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n\
| 1 | donchian_breakout | ETH-USD | 1h | lookback=20 exit=10 | +14.20% | 1.91 | -5.02% | 31 | +6.10% | 1.12 | -3.30% | 12 |\n\
| 2 | ema_cross | ETH-USD | 1h | fast=9 slow=21 | +12.41% | 1.82 | -4.10% | 23 | +4.75% | 0.98 | -2.80% | 9 |\n";

fn ranking_viewer(width: u16, height: u16) -> App {
    let mut app = research_app(width, height, "completed");
    let mut run = research_run("completed");
    run.artifacts[1].content = RANKING.into();
    app.update(research_loaded(Some(run), t0()));
    app.update(code(KeyCode::Tab));
    app.update(key('j'));
    app.update(code(KeyCode::Enter));
    assert!(matches!(
        app.modal(),
        Some(Modal::Artifact { index: 1, .. })
    ));
    app
}

#[test]
fn a_wide_ranking_uses_the_whole_width_or_shows_rows_as_blocks() {
    // 200 columns hold every column whole.
    let text = render(&ranking_viewer(200, 30));
    for needle in [
        "OOS max DD",
        "OOS trades",
        "donchian_breakout",
        "lookback=20 exit=10",
        "fast=9 slow=21",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
    // (The header's key fingerprint is the screen's only ellipsis.)
    assert!(
        !text.replace("ak_…", "").contains('…'),
        "nothing cut\n{text}"
    );
    // 100 columns do not: each row is a block of labelled values, still nothing cut.
    let text = snap("research_ranking_blocks_100x40", &ranking_viewer(100, 40));
    for needle in [
        "# 1",
        "Strategy    donchian_breakout",
        "Parameters  lookback=20 exit=10",
        "OOS trades  12",
        "# 2",
        "Parameters  fast=9 slow=21",
    ] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
    // (The header's key fingerprint is the screen's only ellipsis.)
    assert!(
        !text.replace("ak_…", "").contains('…'),
        "nothing cut\n{text}"
    );
}

pub(super) fn tools_screen(width: u16, height: u16) -> App {
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
    // Back past the schema to the catalog.
    app.update(code(KeyCode::BackTab));
    app.update(code(KeyCode::BackTab));
    app.update(key('G'));
    app.toasts_mut().clear();
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
    app.toasts_mut().clear();
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
    app.toasts_mut().clear();
    let text = snap("chat_80x24", &app);
    assert_eq!(text.lines().count(), 24);
    assert!(text.lines().all(|l| l.chars().count() <= 80));
}

#[test]
fn tool_approval_in_the_inbox_120x40() {
    let mut app = seeded_app(120, 40);
    chatted(&mut app);
    app.update(key('2'));
    assert!(app.item("tool-1").is_some());
    app.select_proposal(Pane::Inbox, "tool-1");
    press(&mut app, 'a');
    app.toasts_mut().clear();
    let text = snap("tool_approval_dialog_120x40", &app);
    for needle in ["Approve tool call", "service_propose_trade", "5:00"] {
        assert!(text.contains(needle), "lacks {needle:?}\n{text}");
    }
}
