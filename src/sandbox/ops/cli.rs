//! `mcp_cli`: a deterministic slash-command line (no LLM). Each command runs its operation through
//! [`super::dispatch`] — the same checks and handler as the HTTP call — and answers
//! `{output, command, run?}` with `output` for people to read.

use super::{AppError, Call, ErrorKind, Reply, dispatch};
use crate::api::catalog;
use crate::api::model::{CliRequest, ResearchRun, ResearchStatus};
use crate::sandbox::core::Shared;
use crate::sandbox::research::run_text;
use axum::body::Bytes;
use axum::http::HeaderMap;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

pub const COMMANDS: [(&str, &str); 5] = [
    (
        "/research start <task>",
        "start a research run, e.g. /research start find the best trend strategy for ETH on 1h",
    ),
    (
        "/research",
        "show the active research run (else the latest one)",
    ),
    (
        "/research say <message>",
        "steer the active run, e.g. /research say only 4h, drop macd",
    ),
    (
        "/research stop",
        "stop the active run; its transcript and artifacts remain",
    ),
    ("/help", "this list"),
];

#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Help,
    Status,
    Start(String),
    Say(String),
    Stop,
}

fn command_list() -> String {
    COMMANDS
        .iter()
        .map(|(c, _)| *c)
        .collect::<Vec<_>>()
        .join(", ")
}

fn cli_error(code: &'static str, message: String) -> AppError {
    AppError::new(
        ErrorKind::Invalid,
        code,
        format!("{message}; commands: {}", command_list()),
    )
    .with_field("command")
}

/// Parses one command line. Command words are case-insensitive; the task or message is kept as
/// written.
pub fn parse(line: &str) -> Result<Command, AppError> {
    let line = line.trim();
    if line.is_empty() {
        return Err(cli_error("invalid_command", "the command is empty".into()));
    }
    let (word, rest) = split_word(line);
    match word.to_ascii_lowercase().as_str() {
        "/help" | "/?" => {
            if rest.is_empty() {
                Ok(Command::Help)
            } else {
                Err(cli_error(
                    "invalid_command",
                    format!("/help takes no arguments, got {rest:?}"),
                ))
            }
        }
        "/research" => {
            let (sub, arg) = split_word(rest);
            match sub.to_ascii_lowercase().as_str() {
                "" | "status" if arg.is_empty() => Ok(Command::Status),
                "start" if arg.is_empty() => Err(cli_error(
                    "invalid_command",
                    "/research start needs a task, e.g. /research start find the best trend \
                     strategy for ETH on 1h"
                        .into(),
                )),
                "start" => Ok(Command::Start(arg.to_string())),
                "say" if arg.is_empty() => Err(cli_error(
                    "invalid_command",
                    "/research say needs a message, e.g. /research say only 4h".into(),
                )),
                "say" => Ok(Command::Say(arg.to_string())),
                "stop" if arg.is_empty() => Ok(Command::Stop),
                "status" | "stop" => Err(cli_error(
                    "invalid_command",
                    format!("/research {sub} takes no arguments, got {arg:?}"),
                )),
                _ => Err(cli_error(
                    "invalid_command",
                    format!("unknown /research subcommand {sub:?}"),
                )),
            }
        }
        _ if !word.starts_with('/') => Err(cli_error(
            "unknown_command",
            format!("{word:?} is not a command (commands start with /)"),
        )),
        _ => Err(cli_error(
            "unknown_command",
            format!("unknown command {word:?}"),
        )),
    }
}

fn split_word(s: &str) -> (&str, &str) {
    let s = s.trim();
    match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], s[i..].trim()),
        None => (s, ""),
    }
}

/// Runs `op` for the CLI's caller through the same pipeline as its HTTP call. The CLI call itself
/// already counted against the POST cap, so the inner one does not count again.
async fn call(
    shared: &Arc<Shared>,
    outer: &Call,
    op: &str,
    path: Vec<String>,
    body: Value,
) -> Result<Value, AppError> {
    let inner = Call {
        op: catalog::op(op),
        caller: outer.caller.clone(),
        now: outer.now,
        query: HashMap::new(),
        path,
        headers: HeaderMap::new(),
        body: Bytes::from(body.to_string()),
        via_tool: true,
    };
    Ok(dispatch(shared, inner).await?.into_body())
}

fn decode<T: serde::de::DeserializeOwned>(v: &Value) -> Result<T, AppError> {
    serde_json::from_value(v.clone()).map_err(AppError::internal)
}

/// The active run's id; 409 `research_run_not_active` when there is none.
async fn active_run(shared: &Arc<Shared>, outer: &Call, what: &str) -> Result<String, AppError> {
    let status: ResearchStatus =
        decode(&call(shared, outer, "research_status", vec![], json!({})).await?)?;
    match status.run {
        Some(run) if run.status == "active" => Ok(run.run_id),
        Some(run) => Err(AppError::conflict(
            "research_run_not_active",
            format!(
                "no active research run to {what} (the latest, {}, is {}); start one with \
                 /research start <task>",
                run.run_id, run.status
            ),
        )),
        None => Err(AppError::conflict(
            "research_run_not_active",
            format!("no research run to {what}; start one with /research start <task>"),
        )),
    }
}

pub async fn mcp_cli(shared: Arc<Shared>, outer: Call) -> Result<Reply, AppError> {
    let body: CliRequest = outer.json()?;
    let command = parse(&body.command)?;
    let (output, run) = match &command {
        Command::Help => {
            let mut out = String::from("Commands (deterministic, no LLM):\n");
            for (c, what) in COMMANDS {
                out.push_str(&format!("  {c:<26} {what}\n"));
            }
            (out, None)
        }
        Command::Status => {
            let v = call(&shared, &outer, "research_status", vec![], json!({})).await?;
            let status: ResearchStatus = decode(&v)?;
            match status.run {
                Some(run) => (run_text(&run), v.get("run").cloned()),
                None => (
                    "No research run yet; start one with /research start <task>\n".into(),
                    None,
                ),
            }
        }
        Command::Start(task) => {
            let v = call(
                &shared,
                &outer,
                "research_start",
                vec![],
                json!({ "task": task }),
            )
            .await?;
            let run: ResearchRun = decode(&v)?;
            (format!("Started.\n{}", run_text(&run)), Some(v))
        }
        Command::Say(message) => {
            let id = active_run(&shared, &outer, "message").await?;
            let v = call(
                &shared,
                &outer,
                "research_message",
                vec![id],
                json!({ "message": message }),
            )
            .await?;
            let run: ResearchRun = decode(&v)?;
            let reply = v.get("reply").and_then(Value::as_str).unwrap_or("");
            (format!("lead: {reply}\n{}", run_text(&run)), Some(v))
        }
        Command::Stop => {
            let id = active_run(&shared, &outer, "stop").await?;
            let v = call(&shared, &outer, "research_stop", vec![id], json!({})).await?;
            let run: ResearchRun = decode(&v)?;
            (format!("Stopped.\n{}", run_text(&run)), Some(v))
        }
    };
    let run = run.map(|mut v| {
        if let Some(obj) = v.as_object_mut() {
            for k in ["success", "json_summary", "reply", "applied"] {
                obj.remove(k);
            }
        }
        v
    });
    let name = match command {
        Command::Help => "/help",
        Command::Status => "/research",
        Command::Start(_) => "/research start",
        Command::Say(_) => "/research say",
        Command::Stop => "/research stop",
    };
    let summary = output.lines().next().unwrap_or("").to_string();
    let mut answer = json!({ "output": output, "command": name, "json_summary": summary });
    if let Some(run) = run {
        answer["run"] = run;
    }
    if name == "/help" {
        answer["commands"] = json!(
            COMMANDS
                .iter()
                .map(|(c, what)| json!({"command": c, "description": what}))
                .collect::<Vec<_>>()
        );
    }
    Reply::ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_commands() {
        assert_eq!(parse("/help").unwrap(), Command::Help);
        assert_eq!(parse(" /research ").unwrap(), Command::Status);
        assert_eq!(parse("/Research status").unwrap(), Command::Status);
        assert_eq!(
            parse("/research start find the best trend strategy for ETH").unwrap(),
            Command::Start("find the best trend strategy for ETH".into())
        );
        assert_eq!(
            parse("/research say only 4h").unwrap(),
            Command::Say("only 4h".into())
        );
        assert_eq!(parse("/research stop").unwrap(), Command::Stop);
        for (line, code, mention) in [
            ("/foo", "unknown_command", "/foo"),
            ("help", "unknown_command", "start with /"),
            ("", "invalid_command", "empty"),
            ("/research start", "invalid_command", "needs a task"),
            ("/research say   ", "invalid_command", "needs a message"),
            ("/research stop now", "invalid_command", "no arguments"),
            ("/research go", "invalid_command", "\"go\""),
            ("/help me", "invalid_command", "no arguments"),
        ] {
            let e = parse(line).unwrap_err();
            assert_eq!(e.code, code, "{line}");
            assert_eq!(e.kind, ErrorKind::Invalid);
            assert!(e.message.contains(mention), "{line}: {}", e.message);
            assert!(
                e.message.contains("/research say <message>"),
                "{}",
                e.message
            );
            assert_eq!(e.field.as_deref(), Some("command"));
        }
    }
}
