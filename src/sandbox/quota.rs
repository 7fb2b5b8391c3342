//! Daily caps per key: one on the POSTs the seed marks "429 possible", one on compute. Days are UTC
//! days of the sandbox clock; a cap is reached → 429 `quota_exceeded` with Retry-After set to the
//! seconds left until the next UTC midnight.

use super::clock::{next_utc_midnight, seconds_to_next_utc_midnight};
use super::core::Core;
use super::http::AppError;
use super::http::auth::Caller;
use super::store::QuotaColumn;
use crate::api::catalog::Operation;
use crate::api::model::{QuotaCounter, Usage};
use chrono::{DateTime, Utc};

pub fn day_of(now: DateTime<Utc>) -> String {
    now.format("%Y-%m-%d").to_string()
}

/// Counts the call against the caps its operation consumes; refuses it when one is exhausted. The
/// POST cap is checked first, so a refused call never consumes compute.
pub fn charge(
    core: &mut Core,
    caller: &Caller,
    op: &Operation,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let day = day_of(now);
    let caps = [
        (
            op.quota.post,
            QuotaColumn::Posts,
            core.settings.daily_post_cap,
            "API POST",
        ),
        (
            op.quota.compute,
            QuotaColumn::Compute,
            core.settings.daily_compute_cap,
            "compute",
        ),
    ];
    // Both checks and increments happen under the core lock, so a refusal on the second cap can
    // undo the first without a race.
    let mut charged_post = false;
    for (applies, column, cap, what) in caps {
        if !applies {
            continue;
        }
        if core
            .store
            .charge_quota(caller.key_id, &day, column, cap)?
            .is_none()
        {
            if charged_post {
                core.store.conn.execute(
                    "UPDATE quota_usage SET posts = posts - 1 WHERE key_id = ?1 AND day = ?2",
                    rusqlite::params![caller.key_id, day],
                )?;
            }
            let retry = seconds_to_next_utc_midnight(now);
            return Err(AppError::quota(
                format!(
                    "the daily {what} cap of {cap} for this key is used up; it resets at {} (in {retry}s)",
                    next_utc_midnight(now).to_rfc3339()
                ),
                retry,
            ));
        }
        charged_post |= column == QuotaColumn::Posts;
    }
    Ok(())
}

pub fn usage(core: &Core, caller: &Caller, now: DateTime<Utc>) -> Result<Usage, AppError> {
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
    Ok(Usage {
        json_summary: Some(format!(
            "{}/{} API POSTs and {}/{} compute used today (UTC); resets {}",
            api_post_quota.used,
            api_post_quota.limit,
            compute.used,
            compute.limit,
            next_utc_midnight(now).to_rfc3339()
        )),
        period: day,
        api_post_quota,
        compute,
        ..Default::default()
    })
}
