//! Research runs: start, status, message, stop. The work is in `sandbox::research`; these
//! handlers read the request and shape the answer.

use super::{AppError, Call, Reply};
use crate::api::model::{ResearchMessageRequest, ResearchStartRequest};
use crate::sandbox::core::Shared;
use crate::sandbox::research;
use serde_json::{Value, json};
use std::sync::Arc;

fn run_id(call: &Call) -> Result<String, AppError> {
    call.path
        .first()
        .cloned()
        .filter(|id| !id.trim().is_empty())
        .ok_or_else(|| AppError::not_found("the path names no research run"))
}

fn with_summary(mut run: Value, summary: String) -> Value {
    if let Some(obj) = run.as_object_mut() {
        obj.insert("json_summary".into(), json!(summary));
    }
    run
}

fn summary_of(run: &Value) -> String {
    let text = |k: &str| run.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let agents = run
        .get("agents")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter(|a| a["role"] != "lead").count())
        .unwrap_or(0);
    format!(
        "research run {} is {} with {agents} agent(s)",
        text("runId"),
        text("status")
    )
}

pub async fn research_start(shared: Arc<Shared>, call: Call) -> Result<Reply, AppError> {
    let body: ResearchStartRequest = call.json()?;
    let run = research::start(&shared, &call.caller, &body.task).await?;
    let summary = summary_of(&run);
    Reply::ok(with_summary(run, summary))
}

pub async fn research_status(shared: Arc<Shared>, call: Call) -> Result<Reply, AppError> {
    let run = research::status(&shared, &call.caller).await?;
    let summary = match &run {
        Some(run) => summary_of(run),
        None => "no research run on this account yet".to_string(),
    };
    Reply::ok(json!({ "run": run, "json_summary": summary }))
}

pub async fn research_message(shared: Arc<Shared>, call: Call) -> Result<Reply, AppError> {
    let id = run_id(&call)?;
    let body: ResearchMessageRequest = call.json()?;
    let run = research::message(&shared, &call.caller, &id, &body.message).await?;
    let summary = run
        .get("reply")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| summary_of(&run));
    Reply::ok(with_summary(run, summary))
}

pub async fn research_stop(shared: Arc<Shared>, call: Call) -> Result<Reply, AppError> {
    let id = run_id(&call)?;
    let run = research::stop(&shared, &call.caller, &id).await?;
    let summary = summary_of(&run);
    Reply::ok(with_summary(run, summary))
}
