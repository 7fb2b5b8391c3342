//! Staged trading: propose, confirm, close by proposal, and the proposals listing (extension).

use super::{AppError, Call, ErrorKind, Reply};
use crate::api::model::{
    CloseRequest, ConfirmRequest, ErrorDetail, ExecutionResult, Proposal, ProposalStatus,
    Proposals, TradeSignal,
};
use crate::sandbox::core::{Core, View};
use crate::sandbox::store::{ProposalRow, Store};
use crate::sandbox::trading::{self, Plan};

use chrono::{DateTime, Duration, Utc};
use rand::RngExt;

fn new_proposal_id() -> String {
    let bytes: [u8; 8] = rand::rng().random();
    format!("prop_{}", hex::encode(bytes))
}

/// A proposal's state as of `now`: a staged one past its expiry is expired, whether or not anything
/// has looked at it since.
fn effective_status(row: &ProposalRow, now: DateTime<Utc>) -> &str {
    if row.status == "staged" && row.expires_at <= now {
        "expired"
    } else {
        &row.status
    }
}

fn proposal_view(row: &ProposalRow, now: DateTime<Utc>) -> Proposal {
    let status = ProposalStatus::from(effective_status(row, now));
    Proposal {
        proposal_id: row.id.clone(),
        kind: row.kind.clone(),
        created_at: Some(row.created_at),
        expires_at: Some(row.expires_at),
        decided_at: if status == ProposalStatus::Expired && row.decided_at.is_none() {
            Some(row.expires_at)
        } else {
            row.decided_at
        },
        preview: serde_json::from_str(&row.preview).unwrap_or_default(),
        execution: row
            .execution
            .as_deref()
            .and_then(|e| serde_json::from_str(e).ok()),
        error: row
            .error
            .as_deref()
            .and_then(|e| serde_json::from_str::<ErrorDetail>(e).ok()),
        status,
        ..Default::default()
    }
}

pub fn propose_trade(core: &mut Core, call: &Call) -> Result<Reply, AppError> {
    let signal: TradeSignal = call.json()?;
    let c = &call.caller;
    let plan = trading::plan_signal(core, c.account_id, &c.messenger_id, &signal, call.now)?;
    let preview = trading::preview(core, c.account_id, &plan, call.now)?;
    let expires_at = call.now + Duration::seconds(core.settings.proposal_ttl_secs);
    let row = ProposalRow {
        id: new_proposal_id(),
        account_id: c.account_id,
        key_id: c.key_id,
        kind: plan.kind().to_string(),
        signal: String::from_utf8_lossy(&call.body).into_owned(),
        plan: serde_json::to_string(&plan).map_err(AppError::internal)?,
        preview: serde_json::to_string(&preview).map_err(AppError::internal)?,
        status: "staged".into(),
        created_at: call.now,
        expires_at,
        decided_at: None,
        execution: None,
        error: None,
    };
    core.store.insert_proposal(&row)?;
    let mut view = proposal_view(&row, call.now);
    view.json_summary = Some(format!(
        "Staged {}: {}. A human must approve it; confirm with proposalId {} before {}.",
        row.kind,
        trading::summarize_preview(&preview),
        row.id,
        expires_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    ));
    Ok(Reply::ok(view)?.with_proposal(row.id))
}

/// Why a proposal cannot be executed by this caller now, as the error to answer with.
fn refusal(row: &ProposalRow, key_id: i64, now: DateTime<Utc>) -> Option<AppError> {
    let id = &row.id;
    let err = if row.key_id != key_id {
        AppError::forbidden(
            "proposal_key_mismatch",
            format!("proposal {id} was staged with another API key; confirm it with that key"),
        )
    } else {
        match effective_status(row, now) {
            "staged" => return None,
            "executed" => AppError::conflict(
                "proposal_already_executed",
                format!("proposal {id} was already executed; it runs only once"),
            ),
            "expired" => AppError::new(
                ErrorKind::Expired,
                "proposal_expired",
                format!(
                    "proposal {id} expired at {} ({}s ago); stage it again",
                    row.expires_at
                        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                    (now - row.expires_at).num_seconds()
                ),
            ),
            _ => AppError::conflict(
                "proposal_failed",
                format!(
                    "proposal {id} already failed: {}; stage a new one",
                    row.error
                        .as_deref()
                        .and_then(|e| serde_json::from_str::<ErrorDetail>(e).ok())
                        .map(|e| e.message)
                        .unwrap_or_default()
                ),
            ),
        }
    };
    Some(err.with_proposal(id.clone()))
}

/// Executes a staged proposal exactly once: the claim is one conditional UPDATE in the same
/// transaction as the execution's writes.
fn execute_proposal(
    core: &mut Core,
    call: &Call,
    id: &str,
    want_close: bool,
) -> Result<Reply, AppError> {
    let c = &call.caller;
    let row = core.store.proposal(id)?.ok_or_else(|| {
        AppError::not_found(format!("no proposal with id {id:?}")).with_field("proposalId")
    })?;
    if let Some(err) = refusal(&row, c.key_id, call.now) {
        return Err(err);
    }
    let plan: Plan = serde_json::from_str(&row.plan).map_err(AppError::internal)?;
    if want_close && !matches!(plan, Plan::Close(_)) {
        return Err(AppError::invalid(
            "proposalId",
            format!("proposal {id} stages a trade, not a close; confirm it with POST /api/delegated/confirm"),
        )
        .with_proposal(id));
    }
    let (book, execution, fills) = match trading::execute(core, c.account_id, &plan, call.now) {
        Ok(done) => done,
        Err(err) => {
            let detail = ErrorDetail {
                code: err.code.to_string(),
                message: err.message.clone(),
                field: err.field.clone(),
            };
            let text = serde_json::to_string(&detail).map_err(AppError::internal)?;
            core.store.fail_proposal(id, &text, call.now)?;
            return Err(err.with_proposal(id));
        }
    };
    let execution_text = serde_json::to_string(&execution).map_err(AppError::internal)?;
    let (key_id, now) = (c.key_id, call.now);
    let claimed = core.commit(c.account_id, book, &fills, now, |tx| {
        if !Store::claim_proposal(tx, id, key_id, now)? {
            return Ok(false);
        }
        Store::set_proposal_execution(tx, id, &execution_text)?;
        Ok(true)
    });
    match claimed {
        Ok(true) => {}
        // Lost the claim: someone else decided it in between; report what they did.
        Ok(false) => {
            let row = core
                .store
                .proposal(id)?
                .ok_or_else(|| AppError::not_found(id.to_string()))?;
            return Err(refusal(&row, key_id, now).unwrap_or_else(|| {
                AppError::conflict(
                    "proposal_already_executed",
                    format!("proposal {id} was already executed"),
                )
            }));
        }
        Err(e) => return Err(e),
    }
    let oid = fills.first().map(|f| f.oid);
    let summary = execution
        .fills
        .iter()
        .map(|f| {
            format!(
                "{} {} {} at {}",
                if f.side == "B" { "bought" } else { "sold" },
                f.sz,
                f.coin,
                f.px
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    Ok(Reply::ok(ExecutionResult {
        proposal_id: Some(id.to_string()),
        status: "executed".into(),
        json_summary: Some(format!("Executed proposal {id}: {summary}.")),
        execution,
        extra: Default::default(),
    })?
    .with_proposal(id)
    .with_oid(oid))
}

pub fn confirm_trade(core: &mut Core, call: &Call) -> Result<Reply, AppError> {
    let req: ConfirmRequest = call.json()?;
    if req.proposal_id.trim().is_empty() {
        return Err(AppError::invalid(
            "proposalId",
            "proposalId must not be empty",
        ));
    }
    execute_proposal(core, call, req.proposal_id.trim(), false)
}

pub fn close_position(core: &mut Core, call: &Call) -> Result<Reply, AppError> {
    let req: CloseRequest = call.json()?;
    let action = match req.action.as_deref() {
        None => None,
        Some(a @ ("close" | "close_all")) => Some(a),
        Some(other) => {
            return Err(AppError::invalid(
                "action",
                format!("action must be close or close_all, got {other:?}"),
            ));
        }
    };
    let how = "flattening without staging is disabled: stage the close with POST /api/delegated/propose \
               ({\"action\":\"close\",\"a\":\"BTCUSDT\"} or {\"action\":\"close_all\"}), then pass its proposalId here or confirm it";
    let Some(id) = req
        .proposal_id
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    else {
        return Err(match action {
            Some(_) => {
                AppError::new(ErrorKind::Invalid, "staging_required", how).with_field("proposalId")
            }
            None => AppError::invalid("proposalId", format!("proposalId is required; {how}")),
        });
    };
    if let Some(action) = action
        && let Some(row) = core.store.proposal(id)?
        && row.key_id == call.caller.key_id
        && row.kind != action
        && row.kind != "trade"
    {
        return Err(AppError::invalid(
            "action",
            format!("proposal {id} stages {}, not {action}", row.kind),
        )
        .with_proposal(id));
    }
    execute_proposal(core, call, id, true)
}

pub fn list_proposals(core: &View, call: &Call) -> Result<Reply, AppError> {
    let status = call.query("status").unwrap_or("all");
    if !["all", "staged", "executed", "expired", "failed", ""].contains(&status) {
        return Err(AppError::invalid_query(
            "status",
            format!("status must be staged, executed, expired, failed or all, got {status:?}"),
        ));
    }
    // Staged proposals stay listed until they expire; decided ones for a day, so a console that
    // was away sees what happened.
    let horizon = call.now - Duration::hours(24);
    let proposals = core
        .store
        .proposals(call.caller.account_id, 500)?
        .iter()
        .filter(|row| row.created_at >= horizon || effective_status(row, call.now) == "staged")
        .map(|row| proposal_view(row, call.now))
        .filter(|p| status == "all" || status.is_empty() || p.status.as_str() == status)
        .collect();
    Reply::ok(Proposals {
        proposals,
        extra: Default::default(),
    })
}
