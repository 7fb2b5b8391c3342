//! Suspended agents on PostgreSQL: one row each while it lasts, written in the same transaction
//! as its journal record. Read on every decision, so a suspension made on one instance holds on
//! all of them from its commit on.

use super::super::{Record, StoreResult, Suspension};
use super::rows::append_in;
use deadpool_postgres::GenericClient;

pub(super) async fn suspend(
    mut c: deadpool_postgres::Object,
    s: Suspension,
    record: Record,
) -> StoreResult<bool> {
    let tx = c.transaction().await?;
    let n = tx
        .execute(
            &tx.prepare_cached(
                "INSERT INTO suspensions (agent, reason, suspended_by, at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (agent) DO NOTHING",
            )
            .await?,
            &[&s.agent, &s.reason, &s.by, &s.at],
        )
        .await?;
    if n == 1 {
        append_in(&tx, &record).await?;
    }
    tx.commit().await?;
    Ok(n == 1)
}

pub(super) async fn resume(
    mut c: deadpool_postgres::Object,
    agent: String,
    record: Record,
) -> StoreResult<bool> {
    let tx = c.transaction().await?;
    let n = tx
        .execute(
            &tx.prepare_cached("DELETE FROM suspensions WHERE agent = $1")
                .await?,
            &[&agent],
        )
        .await?;
    if n == 1 {
        append_in(&tx, &record).await?;
    }
    tx.commit().await?;
    Ok(n == 1)
}

pub(super) async fn suspensions(
    c: deadpool_postgres::Object,
    agent: Option<String>,
) -> StoreResult<Vec<Suspension>> {
    c.query(
        &c.prepare_cached(
            "SELECT agent, reason, suspended_by, at FROM suspensions
             WHERE $1::text IS NULL OR agent = $1 ORDER BY at, agent",
        )
        .await?,
        &[&agent],
    )
    .await?
    .iter()
    .map(|r| {
        Ok(Suspension {
            agent: r.try_get(0)?,
            reason: r.try_get(1)?,
            by: r.try_get(2)?,
            at: r.try_get(3)?,
        })
    })
    .collect()
}
