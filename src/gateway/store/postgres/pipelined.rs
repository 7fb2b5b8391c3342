//! An item's transition on PostgreSQL, its statements sent ahead of their answers: an approval's
//! claim is on the way from the supervisor's approve to the confirm, and each round trip is
//! part of that wait.

use super::super::{StoreResult, Transition};
use super::rows::{INSERT_LINK, LOCK_HEAD, MOVE_HEAD, link, link_params, status_names};
use crate::api::model::Hold;

/// An item's move from one status to another, if it is in one of them (and unexpired, when
/// asked).
const MOVE_ITEM: &str = "UPDATE items SET status = $2,
     decided_at = CASE WHEN $3 THEN $4 ELSE decided_at END,
     decided_by = CASE WHEN $3 THEN $5 ELSE decided_by END,
     reason = COALESCE($6, reason),
     result = COALESCE($7, result),
     note = $8,
     standing = COALESCE($10, standing),
     claimed_at = CASE WHEN $2 = 'executing' THEN $4 ELSE claimed_at END,
     approvals = COALESCE($13::jsonb, approvals),
     approvals_required = GREATEST(approvals_required, COALESCE($14::int, 0))
 WHERE id = $1 AND status = ANY($11)
   AND ($9::timestamptz IS NULL OR expires_at > $9)
   AND ($12::int IS NULL OR jsonb_array_length(approvals) = $12)";

/// A connection whose transaction's statements are sent ahead of their answers, with its own
/// `START TRANSACTION` and `COMMIT` (not a `Transaction`, which waits for each). Unless it reaches
/// [`Pipelined::finished`] (a statement failed, or the caller went away mid-way), a `ROLLBACK` is
/// sent behind whatever is still on its way, and the connection goes back to the pool only once
/// that is done; should that fail, it is closed. No later caller gets a connection inside the
/// transaction, and the pool's slot stays taken until the server's session is clean (closing at
/// once would free the slot while the session still waits on a lock).
struct Pipelined(Option<deadpool_postgres::Object>);

impl Pipelined {
    fn finished(mut self) {
        // Back to the pool, its transaction ended.
        drop(self.0.take());
    }
}

impl std::ops::Deref for Pipelined {
    type Target = deadpool_postgres::Object;
    fn deref(&self) -> &Self::Target {
        self.0.as_ref().expect("taken only when finished")
    }
}

impl Drop for Pipelined {
    fn drop(&mut self) {
        let Some(c) = self.0.take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if c.batch_execute("ROLLBACK").await.is_err() {
                        drop(deadpool_postgres::Object::take(c));
                    }
                });
            }
            // No runtime to finish it on: closed, and the server rolls it back.
            Err(_) => drop(deadpool_postgres::Object::take(c)),
        }
    }
}

/// Moves the item if it is in one of `t.from`, with its journal link in the same transaction;
/// whether it moved.
pub(super) async fn transition(
    c: deadpool_postgres::Object,
    id: String,
    t: Transition,
) -> StoreResult<bool> {
    // An approval's claim is on the way from the approve to the confirm: its statements
    // are sent without waiting for each answer (two round trips, not six). Under READ
    // COMMITTED a concurrent UPDATE of the same row waits for the first to commit and
    // then re-checks the WHERE on the new row: exactly one caller moves it.
    let c = Pipelined(Some(c));
    // Prepared (once per connection) before the transaction starts, not while it holds locks.
    let update = c.prepare_cached(MOVE_ITEM).await?;
    let lock = c.prepare_cached(LOCK_HEAD).await?;
    let insert = c.prepare_cached(INSERT_LINK).await?;
    let advance = c.prepare_cached(MOVE_HEAD).await?;
    let decided = t.decided_by.is_some();
    let from = status_names(t.from);
    let seen = t
        .approvals
        .as_ref()
        .map(|a| i32::try_from(a.seen).unwrap_or(i32::MAX));
    let approvals = t
        .approvals
        .as_ref()
        .map(|a| serde_json::to_value(&a.now).unwrap_or_default());
    let required = t
        .approvals
        .as_ref()
        .map(|a| i32::try_from(a.required).unwrap_or(i32::MAX));
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 14] = [
        &id,
        &t.to.as_str(),
        &decided,
        &t.now,
        &t.decided_by,
        &t.reason,
        &t.result.as_ref().map(super::super::Execution::json),
        &t.note.as_ref().map(Hold::to_string),
        &t.unexpired_at,
        &t.standing,
        &from,
        &seen,
        &approvals,
        &required,
    ];
    let (begun, moved, head) = futures::join!(
        c.batch_execute("START TRANSACTION"),
        c.execute(&update, &params),
        async {
            match t.record {
                Some(_) => c.query_one(&lock, &[]).await.map(Some),
                None => Ok(None),
            }
        },
    );
    begun?;
    let n = moved?;
    match (n, head?, &t.record) {
        (1, Some(head), Some(record)) => {
            let row = link(&head, record)?;
            let (link_params, head_params) = (link_params(&row), [&row.seq as _, &row.hash as _]);
            let (linked, advanced, committed) = futures::join!(
                c.execute(&insert, &link_params),
                c.execute(&advance, &head_params),
                c.batch_execute("COMMIT"),
            );
            // A failed statement leaves the transaction aborted, and PostgreSQL ends an
            // aborted transaction's COMMIT as a ROLLBACK: nothing of it is kept.
            linked?;
            advanced?;
            committed?;
        }
        _ => c.batch_execute("COMMIT").await?,
    }
    c.finished();
    Ok(n == 1)
}
