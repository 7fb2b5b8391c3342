//! Daily caps per key: one on the POSTs the seed marks "429 possible", one on compute. Days are UTC
//! days of the sandbox clock; a cap is reached → 429 `quota_exceeded` with Retry-After set to the
//! seconds left until the next UTC midnight.

use super::caller::Caller;
use super::clock::{next_utc_midnight, seconds_to_next_utc_midnight};
use super::core::{Core, View};
use super::error::AppError;
use super::store::QuotaColumn;
use crate::api::catalog::Operation;
use crate::api::model::{QuotaCounter, TokenUsage, Usage};
use chrono::{DateTime, Utc};

pub fn day_of(now: DateTime<Utc>) -> String {
    now.format("%Y-%m-%d").to_string()
}

/// Counts the call against the POST cap if its operation is marked for it, and refuses it when a
/// cap it uses is exhausted. Compute is only checked here: the handler charges it with
/// [`charge_compute`] once it accepts the work, so a refused job (bad input, full queue) costs no
/// compute. The compute check comes first, so a refused call never consumes a POST.
pub fn charge(
    core: &mut Core,
    caller: &Caller,
    op: &Operation,
    now: DateTime<Utc>,
    count_post: bool,
) -> Result<(), AppError> {
    let day = day_of(now);
    if op.quota.compute {
        let (_, used) = core.store.quota_used(caller.key_id, &day)?;
        if used >= core.settings.daily_compute_cap {
            return Err(exhausted("compute", core.settings.daily_compute_cap, now));
        }
    }
    if op.quota.post
        && count_post
        && core
            .store
            .charge_quota(
                caller.key_id,
                &day,
                QuotaColumn::Posts,
                core.settings.daily_post_cap,
            )?
            .is_none()
    {
        return Err(exhausted("API POST", core.settings.daily_post_cap, now));
    }
    Ok(())
}

/// Charges one unit of compute for work a handler has accepted.
pub fn charge_compute(
    core: &mut Core,
    caller: &Caller,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let cap = core.settings.daily_compute_cap;
    match core
        .store
        .charge_quota(caller.key_id, &day_of(now), QuotaColumn::Compute, cap)?
    {
        Some(_) => Ok(()),
        None => Err(exhausted("compute", cap, now)),
    }
}

fn exhausted(what: &str, cap: u64, now: DateTime<Utc>) -> AppError {
    let retry = seconds_to_next_utc_midnight(now);
    AppError::quota(
        format!(
            "the daily {what} cap of {cap} for this key is used up; it resets at {} (in {retry}s)",
            next_utc_midnight(now).to_rfc3339()
        ),
        retry,
    )
}

pub fn usage(core: &View, caller: &Caller, now: DateTime<Utc>) -> Result<Usage, AppError> {
    let day = day_of(now);
    let (posts, compute) = core.store.quota_used(caller.key_id, &day)?;
    let resets_at = Some(next_utc_midnight(now));
    let counter = |used: u64, limit: u64| QuotaCounter {
        used,
        limit,
        remaining: limit.saturating_sub(used),
        resets_at,
    };
    let api_post_quota = counter(posts, core.settings.daily_post_cap);
    let compute = counter(compute, core.settings.daily_compute_cap);
    let (input, output) = super::store::chat::tokens_used(&core.store.conn, caller.key_id, &day)?;
    Ok(Usage {
        json_summary: Some(format!(
            "{}/{} API POSTs and {}/{} compute used today (UTC), {input} input and {output} output LLM tokens; resets {}",
            api_post_quota.used,
            api_post_quota.limit,
            compute.used,
            compute.limit,
            next_utc_midnight(now).to_rfc3339()
        )),
        period: day,
        api_post_quota,
        compute,
        tokens: TokenUsage { input, output },
        ..Default::default()
    })
}
