//! The reads behind the supervisor's inbox on PostgreSQL: a listing that sends only the rows the
//! instance does not hold at their revision, and the soonest expiry a long poll must not outwait.

use super::super::{Held, Item, Listed, Status, StoreResult};
use super::rows::{ITEM_COLUMNS, item_row};
use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use std::collections::HashMap;
use tokio_postgres::IsolationLevel;

/// The ids and revisions first, then the rows not held, in one repeatable-read transaction: both
/// reads see one snapshot, so what is listed is what one `items` would have listed.
pub(super) async fn listing(
    mut c: deadpool_postgres::Object,
    status: Option<Status>,
    limit: usize,
    held: Held,
) -> StoreResult<Vec<Listed>> {
    let tx = c
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?;
    let status = status.map(Status::as_str);
    let heads = tx
        .query(
            &tx.prepare_cached(
                "SELECT id, rev FROM items WHERE $1::text IS NULL OR status = $1
                 ORDER BY created_at DESC, seq DESC LIMIT $2",
            )
            .await?,
            &[&status, &(limit.min(i64::MAX as usize) as i64)],
        )
        .await?;
    let mut listed = heads
        .iter()
        .map(|r| {
            Ok(Listed {
                id: r.try_get(0)?,
                rev: r.try_get(1)?,
                item: None,
            })
        })
        .collect::<StoreResult<Vec<_>>>()?;
    let wanted: Vec<&str> = listed
        .iter()
        .filter(|l| !held(&l.id, l.rev))
        .map(|l| l.id.as_str())
        .collect();
    if !wanted.is_empty() {
        let rows = tx
            .query(
                &tx.prepare_cached(&format!(
                    "SELECT {ITEM_COLUMNS} FROM items WHERE id = ANY($1)"
                ))
                .await?,
                &[&wanted],
            )
            .await?;
        let mut fresh: HashMap<String, Item> = rows
            .iter()
            .map(|r| item_row(r).map(|i| (i.id.clone(), i)))
            .collect::<StoreResult<_>>()?;
        for l in &mut listed {
            l.item = fresh.remove(&l.id);
        }
    }
    tx.commit().await?;
    Ok(listed)
}

pub(super) async fn next_expiry(
    c: deadpool_postgres::Object,
) -> StoreResult<Option<DateTime<Utc>>> {
    Ok(c.query_one(
        &c.prepare_cached(
            "SELECT MIN(expires_at) FROM items WHERE status IN ('pending', 'approved')",
        )
        .await?,
        &[],
    )
    .await?
    .try_get(0)?)
}
