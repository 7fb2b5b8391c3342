//! Execution: an approved item run upstream exactly once with the proposing agent's key, its
//! outcome established from the service's answer (never guessed), the waits a service asks for,
//! and the asking again after an answer was lost.

use super::items::{find, retry_at};
use super::{guard, halt};
use crate::api::catalog;
use crate::api::error::rate_limit_wait;
use crate::api::model::{CloseRequest, ConfirmRequest, ExecuteToolRequest, Proposal};
use crate::gateway::gate::Gate;
use crate::gateway::model::error::{GateError, Kind};
use crate::gateway::store::{Exec, Execution, Hold, Item, Status, Transition};
use crate::gateway::upstream::Buffered;
use chrono::{DateTime, Duration, TimeZone, Utc};
use reqwest::header;
use serde_json::Value;
use std::sync::Arc;

/// Runs an approved item upstream if this call wins the claim; otherwise waits for whoever holds it.
/// Returns the item as it stands afterwards (still approved when the agent's key is unknown).
pub async fn execute(gate: &Arc<Gate>, id: &str) -> Result<Item, GateError> {
    let give_up =
        std::time::Instant::now() + gate.settings.timeout() + std::time::Duration::from_secs(5);
    loop {
        let item = find(gate, id).await?;
        match item.status {
            Status::Approved => {
                // The upstream asked to wait: asking again before then would only be refused again
                // (and could extend the wait), so nobody's call reaches it until then.
                if retry_at(&item).is_some_and(|t| t > gate.now()) {
                    return Ok(item);
                }
                let Some(key) = gate.key_of(&item.agent) else {
                    if item.note.is_some() {
                        return Ok(item);
                    }
                    // Said in the store, so an instance that holds the key (on a shared store)
                    // knows this item is left to it.
                    let t = Transition {
                        note: Some(Hold::WaitingForKey),
                        ..Transition::new(&[Status::Approved], Status::Approved, gate.now())
                    };
                    gate.store
                        .transition(&item.id, t)
                        .await
                        .map_err(GateError::store)?;
                    return find(gate, &item.id).await;
                };
                // Whatever way it comes here (an approval, a held item once the agent's key is
                // back, a rate limit's wait over, a retry, a second instance's poll): the kill
                // switch or a suspension that came since the approval stops it before it runs. It
                // stays approved: it runs once the agent may trade again (a resume runs it), or
                // expires.
                let trade = guard::item_trade(gate, &item).await.ok().flatten();
                if halt::halted(gate, &item.agent, trade.as_ref())
                    .await?
                    .is_some()
                {
                    return Ok(item);
                }
                let now = gate.now();
                let claim = Transition {
                    unexpired_at: Some(now),
                    ..Transition::new(&[Status::Approved], Status::Executing, now)
                };
                if !gate
                    .store
                    .transition(&item.id, claim)
                    .await
                    .map_err(GateError::store)?
                {
                    gate.store.expire_due(now).await.map_err(GateError::store)?;
                    continue;
                }
                return run_claimed(gate, item, key).await;
            }
            Status::Executing if std::time::Instant::now() < give_up => {
                tokio::time::sleep(std::time::Duration::from_millis(25)).await;
            }
            _ => return Ok(item),
        }
    }
}

/// Runs an item this call claimed (moved it to executing).
pub(super) async fn run_claimed(
    gate: &Arc<Gate>,
    item: Item,
    key: crate::secret::Secret,
) -> Result<Item, GateError> {
    // On a task of its own: a caller that goes away (a supervisor's client that timed out while
    // the upstream was slow) drops this future, and a run dropped at its upstream call would
    // leave the item claimed, executing, for good.
    let gate = gate.clone();
    let id = crate::api::request_id::request_id();
    tokio::spawn(crate::api::request_id::with_request_id(id, async move {
        run(&gate, item, &key).await
    }))
    .await
    .unwrap_or_else(|e| {
        Err(GateError::new(
            Kind::Internal,
            "execution_failed",
            format!("the execution stopped: {e}"),
        ))
    })
}

/// The one upstream call of a claimed item.
async fn run(gate: &Arc<Gate>, item: Item, key: &crate::secret::Secret) -> Result<Item, GateError> {
    // The operation's own request type: what goes upstream is what the catalog says it takes.
    let json = |body: Result<Value, serde_json::Error>| body.unwrap_or(Value::Null);
    let proposal_id = item.proposal_id.clone().unwrap_or_default();
    let (op, body) = match item.exec {
        Exec::Confirm => (
            catalog::op("confirm_trade"),
            json(serde_json::to_value(ConfirmRequest { proposal_id })),
        ),
        Exec::Close => (
            catalog::op("close_position"),
            json(serde_json::to_value(CloseRequest {
                proposal_id: Some(proposal_id),
                action: None,
            })),
        ),
        Exec::Tool => {
            // The staged call's arguments, with the confirm token the service gave for them.
            let mut args = match item.request.get("args") {
                Some(Value::Object(args)) => args.clone(),
                _ => serde_json::Map::new(),
            };
            let token = item
                .confirm_token
                .clone()
                .map_or(Value::Null, Value::String);
            args.insert("confirmToken".into(), token);
            let name = item.request.get("name").and_then(Value::as_str);
            (
                catalog::op("execute_mcp_tool"),
                json(serde_json::to_value(ExecuteToolRequest {
                    name: name.unwrap_or_default().to_string(),
                    args: Value::Object(args),
                })),
            )
        }
    };
    let now = gate.now();
    let sent = std::time::Instant::now();
    let answered = gate.upstream.post_json(op, key, &body).await;
    let upstream_ms = sent.elapsed().as_secs_f64() * 1000.0;
    match answered {
        Ok(answer) if let Some(wait) = waits(&answer, item.exec) => {
            // A quota or rate limit: the upstream did not run it and the proposal is still
            // staged, so the supervisor's approval stands and it runs once the wait is over.
            // Counted from the answer, not from the call (a slow answer must not shorten it), and
            // at least a second, so a `Retry-After: 0` is not a loop against the upstream.
            let wait = wait.max(std::time::Duration::from_secs(1));
            let until =
                round_up(gate.now() + Duration::from_std(wait).unwrap_or(Duration::minutes(1)));
            let t = Transition {
                note: Some(Hold::RateLimited { until }),
                ..Transition::new(&[Status::Executing], Status::Approved, now)
            };
            if gate
                .store
                .transition(&item.id, t)
                .await
                .map_err(GateError::store)?
            {
                tracing::info!(item = %item.id, %until, "rate limited upstream; runs after the wait");
                run_after_wait(gate, &item.id, until, item.expires_at);
            }
        }
        Ok(answer) => {
            let (to, note) = match outcome(&answer, item.exec) {
                Outcome::Executed => (Status::Executed, None),
                Outcome::ExecutedEarlier(why) => (Status::Executed, Some(why)),
                Outcome::Failed => (Status::Failed, None),
                Outcome::Unknown(why) => {
                    // Neither executed nor failed as far as anyone can tell: approved, with why,
                    // and the agent's next confirm or the supervisor's next approve asks again.
                    let t = Transition {
                        note: Some(why),
                        ..Transition::new(&[Status::Executing], Status::Approved, now)
                    };
                    gate.store
                        .transition(&item.id, t)
                        .await
                        .map_err(GateError::store)?;
                    return find(gate, &item.id).await;
                }
            };
            let result = match &note {
                // The service's "already executed" is not what the agent asked for: the
                // execution is. Recorded as the service's own record of the proposal where it
                // keeps one, else as executed with why, so the agent's confirm answers 200.
                Some(why) if to == Status::Executed => executed_earlier(gate, &item, why).await,
                _ => Execution {
                    status: answer.status.as_u16(),
                    body: answer.json(),
                    reconciled: false,
                },
            };
            let t = Transition {
                result: Some(result),
                note,
                ..Transition::new(&[Status::Executing], to, now)
            };
            super::items::settle(gate, &item, t).await?;
            tracing::info!(item = %item.id, status = to.as_str(), upstream_ms, "executed upstream");
        }
        Err(e) => {
            // The confirm may or may not have reached the service: its outcome is unknown, not a
            // failure. The service runs a proposal (and a confirm token) once, so asking again is
            // how the gateway finds out: again and again until it knows or the item expires.
            let t = Transition {
                note: Some(Hold::AskingAgain {
                    code: e.code.to_string(),
                    message: e.message.clone(),
                }),
                ..Transition::new(&[Status::Executing], Status::Approved, now)
            };
            gate.store
                .transition(&item.id, t)
                .await
                .map_err(GateError::store)?;
            ask_again(gate, &item.id, item.expires_at);
            return Err(e);
        }
    }
    find(gate, &item.id).await
}

/// The result recorded for an item an earlier attempt executed (the service answered "already
/// executed" to this one): the service's record of the proposal when it lists one (the sandbox),
/// else what is known, with the service's words.
async fn executed_earlier(gate: &Gate, item: &Item, why: &Hold) -> Execution {
    let listed = match (item.exec, &item.proposal_id) {
        (Exec::Confirm | Exec::Close, Some(id)) => {
            super::reconcile::proposals(gate).await.remove(id)
        }
        _ => None,
    };
    /// The service's record of the proposal where it lists one, else what the gateway knows.
    #[derive(serde::Serialize)]
    #[serde(untagged)]
    enum Said<'a> {
        Listed(Box<Proposal>),
        Unlisted {
            status: &'static str,
            #[serde(rename = "proposalId")]
            proposal_id: Option<&'a str>,
        },
    }
    /// A success, whatever the service's "already executed" said, with why.
    #[derive(serde::Serialize)]
    struct Earlier<'a> {
        #[serde(flatten)]
        said: Said<'a>,
        success: bool,
        note: String,
    }
    let said = match listed {
        Some(p) => Said::Listed(Box::new(p)),
        None => Said::Unlisted {
            status: "executed",
            proposal_id: item.proposal_id.as_deref(),
        },
    };
    let body = serde_json::to_value(Earlier {
        said,
        success: true,
        note: why.to_string(),
    })
    .unwrap_or_default();
    Execution {
        status: 200,
        body,
        reconciled: true,
    }
}

/// What an execution's answer says happened.
#[derive(Debug, PartialEq)]
enum Outcome {
    Executed,
    /// An earlier attempt whose answer never arrived ran it: the service says so.
    ExecutedEarlier(Hold),
    Failed,
    Unknown(Hold),
}

fn outcome(answer: &Buffered, exec: Exec) -> Outcome {
    if succeeded(answer, exec) {
        return Outcome::Executed;
    }
    let body = answer.json();
    let inner = tool_result(answer, exec).unwrap_or_else(|| body.clone());
    let code = [&body, &inner]
        .iter()
        .find_map(|v| {
            v.get("error")
                .and_then(|e| e.get("code").or(Some(e)))
                .and_then(Value::as_str)
                .or_else(|| v.get("code").and_then(Value::as_str))
        })
        .unwrap_or("")
        .to_ascii_lowercase();
    let message = [&body, &inner]
        .iter()
        .find_map(|v| {
            v.get("error")
                .and_then(|e| e.get("message"))
                .or_else(|| v.get("message"))
                .and_then(Value::as_str)
        })
        .unwrap_or("")
        .to_string();
    let said = |what: &str| code.contains(what) || message.to_ascii_lowercase().contains(what);
    match exec {
        Exec::Confirm | Exec::Close if said("already_executed") || said("already executed") => {
            Outcome::ExecutedEarlier(Hold::ExecutedEarlier { said: message })
        }
        Exec::Tool if said("confirm_token_used") || said("already used") => {
            let lower = message.to_ascii_lowercase();
            if lower.contains("answered: ok") {
                Outcome::ExecutedEarlier(Hold::ExecutedEarlier { said: message })
            } else if lower.contains("answered: error") {
                Outcome::Failed
            } else {
                Outcome::Unknown(Hold::TokenUsed { said: message })
            }
        }
        _ => Outcome::Failed,
    }
}

/// After an execution whose answer was lost, asks the service again every 2 s (by running the
/// approved item, which the service executes at most once) until the item is settled or expires.
fn ask_again(gate: &Arc<Gate>, id: &str, expires_at: DateTime<Utc>) {
    let (gate, id) = (gate.clone(), id.to_string());
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
            if gate.now() >= expires_at {
                let _ = gate.store.expire_due(gate.now()).await;
                return;
            }
            match find(&gate, &id).await {
                Ok(item) if item.status == Status::Approved && retry_at(&item).is_none() => {
                    match execute(&gate, &id).await {
                        // A transport error spawned the next round itself.
                        Err(_) => return,
                        Ok(item) if item.status == Status::Approved => continue,
                        Ok(_) => return,
                    }
                }
                _ => return,
            }
        }
    });
}

/// The wait a refusal asks for, when the answer is a quota or rate limit in any of its shapes.
fn waits(answer: &Buffered, exec: Exec) -> Option<std::time::Duration> {
    if !answer.is_success() {
        let retry_after = answer
            .headers
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        return rate_limit_wait(answer.status.as_u16(), &answer.json(), retry_after);
    }
    let inner = tool_result(answer, exec)?;
    (inner.get("success") == Some(&Value::Bool(false)))
        .then(|| rate_limit_wait(200, &inner, None))
        .flatten()
}

/// Whether the execution succeeded. A tool's answer wraps what its operation answered in
/// `result` (`{"result": {...}}`), and a deployment may say `success: false` only in there.
fn succeeded(answer: &Buffered, exec: Exec) -> bool {
    answer.is_success()
        && tool_result(answer, exec).is_none_or(|r| r.get("success") != Some(&Value::Bool(false)))
}

fn tool_result(answer: &Buffered, exec: Exec) -> Option<Value> {
    if exec != Exec::Tool {
        return None;
    }
    answer
        .json()
        .get("result")
        .filter(|r| r.is_object())
        .cloned()
}

/// The next whole second at or after `t` (the note keeps whole seconds; rounding down would let a
/// call through before the wait is over).
fn round_up(t: DateTime<Utc>) -> DateTime<Utc> {
    let secs = t.timestamp() + i64::from(t.timestamp_subsec_nanos() > 0);
    Utc.timestamp_opt(secs, 0).single().unwrap_or(t)
}

/// Runs a rate-limited item once its wait is over, without anyone calling: the supervisor approved
/// it and the upstream's wait was all that stood in the way. Exactly once still holds through the
/// claim in [`execute`] (an agent's confirm or an approval that comes first wins it and this one
/// finds the item decided). Follows the gateway's clock in steps of at most a second; gives up when
/// the item is no longer approved with this wait (executed, rejected, expired, or waiting anew),
/// and on a restart the item runs on the agent's next request or the supervisor's next approve.
fn run_after_wait(gate: &Arc<Gate>, id: &str, until: DateTime<Utc>, expires_at: DateTime<Utc>) {
    let (gate, id) = (gate.clone(), id.to_string());
    // A proposal that expires before the wait is over is looked at (and expired) then, not kept
    // in a task for the hours a daily quota may name.
    let wake = until.min(expires_at);
    tokio::spawn(async move {
        loop {
            if let Ok(left) = (wake - gate.now()).to_std()
                && !left.is_zero()
            {
                tokio::time::sleep(left.min(std::time::Duration::from_secs(1))).await;
                continue;
            }
            if let Err(e) = gate.store.expire_due(gate.now()).await {
                tracing::warn!(item = %id, "rate-limited item not retried: {e}");
                return;
            }
            match find(&gate, &id).await {
                Ok(item) if item.status == Status::Approved && retry_at(&item) == Some(until) => {
                    if let Err(e) = execute(&gate, &id).await {
                        tracing::warn!(item = %id, "rate-limited item did not run: {}", e.message);
                    }
                }
                _ => {}
            }
            return;
        }
    });
}

/// Approved items that waited for this agent's key (the gateway restarted since the approval).
pub async fn run_waiting(gate: &Arc<Gate>, agent: &str) -> Result<(), GateError> {
    gate.store
        .expire_due(gate.now())
        .await
        .map_err(GateError::store)?;
    for item in gate
        .store
        .approved_of(agent)
        .await
        .map_err(GateError::store)?
    {
        execute(gate, &item.id).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(body: Value) -> super::Buffered {
        super::Buffered {
            status: reqwest::StatusCode::OK,
            headers: Default::default(),
            body: body.to_string().into(),
        }
    }

    /// A deployment's tool answer is `{"result": {...}}` on HTTP 200 with the operation's failure,
    /// or its rate limit, only inside: neither is an execution.
    #[test]
    fn a_tools_inner_failure_or_rate_limit_is_not_an_execution() {
        let filled = answer(json!({"result": {"status": "filled", "oid": 7}}));
        assert!(succeeded(&filled, Exec::Tool));
        assert_eq!(waits(&filled, Exec::Tool), None);
        let refused =
            answer(json!({"result": {"success": false, "message": "insufficient margin"}}));
        assert!(!succeeded(&refused, Exec::Tool));
        assert_eq!(waits(&refused, Exec::Tool), None);
        let limited = answer(json!({"result": {"success": false,
            "message": "Rate limit exceeded. Try again in 12 seconds."}}));
        assert!(!succeeded(&limited, Exec::Tool));
        assert_eq!(
            waits(&limited, Exec::Tool),
            Some(std::time::Duration::from_secs(12))
        );
        // A confirm's answer has no such wrapper: its `result` is what it says.
        let confirmed = answer(json!({"success": true, "result": {"success": false}}));
        assert!(succeeded(&confirmed, Exec::Confirm));
    }
}
