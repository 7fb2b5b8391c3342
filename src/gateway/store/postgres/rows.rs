//! Rows of the PostgreSQL store: reading them into the store's types, and the journal append
//! every status change shares.

use super::super::{
    Agent, Exec, Item, JournalRow, Record, Standing, Status, StoreError, StoreResult,
};
use crate::api::model::Hold;
use serde_json::Value;
use tokio_postgres::Row;

/// The URL with its password replaced, for messages and logs.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{scheme}://{name}:***@{host}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

/// True when `s` names a PostgreSQL database (`postgres://` or `postgresql://`).
pub fn is_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

pub(super) fn status_names(statuses: &[Status]) -> Vec<&'static str> {
    statuses.iter().map(|s| s.as_str()).collect()
}

pub(super) const ITEM_COLUMNS: &str = "id, agent, account, kind, exec, proposal_id, confirm_token, request, preview, \
     expires_at, created_at, status, decided_at, decided_by, reason, result, note, notional, verdicts, \
     standing, approvals, approvals_required, staged_by";

pub(super) fn item_row(r: &Row) -> StoreResult<Item> {
    let exec: String = r.try_get(4)?;
    let status: String = r.try_get(11)?;
    Ok(Item {
        id: r.try_get(0)?,
        agent: r.try_get(1)?,
        account: r.try_get(2)?,
        kind: r.try_get(3)?,
        exec: Exec::parse(&exec).ok_or(StoreError::Unreadable {
            what: "exec",
            value: exec.clone(),
        })?,
        proposal_id: r.try_get(5)?,
        confirm_token: r.try_get(6)?,
        request: r.try_get(7)?,
        preview: r.try_get(8)?,
        expires_at: r.try_get(9)?,
        created_at: r.try_get(10)?,
        status: Status::parse(&status).ok_or(StoreError::Unreadable {
            what: "status",
            value: status.clone(),
        })?,
        decided_at: r.try_get(12)?,
        decided_by: r.try_get(13)?,
        reason: r.try_get(14)?,
        result: match r.try_get::<_, Option<Value>>(15)? {
            Some(v) => Some(
                serde_json::from_value(v).map_err(|_| StoreError::Unreadable {
                    what: "result",
                    value: "not an execution".into(),
                })?,
            ),
            None => None,
        },
        note: r
            .try_get::<_, Option<String>>(16)?
            .map(|n| Hold::from(n.as_str())),
        notional: r.try_get(17)?,
        verdicts: super::super::verdicts_of(serde_json::from_value(r.try_get::<_, Value>(18)?)),
        standing: r.try_get(19)?,
        approvals: serde_json::from_value(r.try_get::<_, Value>(20)?).map_err(|_| {
            StoreError::Unreadable {
                what: "approvals",
                value: "not a list of approvals".into(),
            }
        })?,
        approvals_required: u32::try_from(r.try_get::<_, i32>(21)?).unwrap_or(u32::MAX),
        staged_by: r.try_get(22)?,
    })
}

pub(super) fn items_of(rows: Vec<Row>) -> StoreResult<Vec<Item>> {
    rows.iter().map(item_row).collect()
}

pub(super) const AGENT_COLUMNS: &str =
    "key_hash, fingerprint, name, account, first_seen, last_seen";

pub(super) fn agent_row(r: &Row) -> StoreResult<Agent> {
    Ok(Agent {
        key_hash: r.try_get(0)?,
        fingerprint: r.try_get(1)?,
        name: r.try_get(2)?,
        account: r.try_get(3)?,
        first_seen: r.try_get(4)?,
        last_seen: r.try_get(5)?,
    })
}

pub(super) const STANDING_COLUMNS: &str =
    "id, agent, coins, max_notional_usd, expires_at, reason, created_by, created_at, revoked_at";

pub(super) fn standing_row(r: &Row) -> StoreResult<Standing> {
    let coins: Value = r.try_get(2)?;
    Ok(Standing {
        id: r.try_get(0)?,
        agent: r.try_get(1)?,
        coins: serde_json::from_value(coins).unwrap_or_default(),
        max_notional_usd: r.try_get(3)?,
        expires_at: r.try_get(4)?,
        reason: r.try_get(5)?,
        created_by: r.try_get(6)?,
        created_at: r.try_get(7)?,
        revoked_at: r.try_get(8)?,
    })
}

pub(super) fn journal_row(r: &Row) -> StoreResult<JournalRow> {
    Ok(JournalRow {
        seq: r.try_get(0)?,
        at: r.try_get(1)?,
        kind: r.try_get(2)?,
        actor: r.try_get(3)?,
        item: r.try_get(4)?,
        detail: r.try_get(5)?,
        prev_hash: r.try_get(6)?,
        hash: r.try_get(7)?,
    })
}

/// Appends to the chain inside the caller's transaction. The head row's lock is held until that
/// transaction ends, so every other appender (on any instance) waits and then reads the new head.
pub(super) async fn append_in(
    c: &deadpool_postgres::Transaction<'_>,
    r: &Record,
) -> StoreResult<JournalRow> {
    // The row exists from the first start on (seeded with the genesis link by `migrate`).
    let head = c
        .query_one(&c.prepare_cached(LOCK_HEAD).await?, &[])
        .await?;
    let row = link(&head, r)?;
    c.execute(&c.prepare_cached(INSERT_LINK).await?, &link_params(&row))
        .await?;
    c.execute(&c.prepare_cached(MOVE_HEAD).await?, &[&row.seq, &row.hash])
        .await?;
    Ok(row)
}

/// The chain's head, locked until the transaction ends.
pub(super) const LOCK_HEAD: &str = "SELECT seq, hash FROM journal_head FOR UPDATE";
pub(super) const INSERT_LINK: &str =
    "INSERT INTO journal (seq, at, kind, actor, item, detail, prev_hash, hash)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
pub(super) const MOVE_HEAD: &str = "UPDATE journal_head SET seq = $1, hash = $2";

/// The record as the link after the locked `head` row.
pub(super) fn link(head: &Row, r: &Record) -> StoreResult<JournalRow> {
    Ok(r.linked(head.try_get(0)?, head.try_get(1)?))
}

/// [`INSERT_LINK`]'s parameters.
pub(super) fn link_params(row: &JournalRow) -> [&(dyn tokio_postgres::types::ToSql + Sync); 8] {
    [
        &row.seq,
        &row.at,
        &row.kind,
        &row.actor,
        &row.item,
        &row.detail,
        &row.prev_hash,
        &row.hash,
    ]
}
