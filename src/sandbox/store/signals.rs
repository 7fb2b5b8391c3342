//! Signal destinations, their delivery queue and log, the state of strategies on the live feed,
//! and who follows whose trades.

use super::{DbResult, parse_ts, ts};
use crate::api::model::{DeliveryStats, SignalDelivery, SignalEvent};
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::HashSet;

#[derive(Debug, Clone)]
pub struct Destination {
    pub id: String,
    pub account_id: i64,
    pub name: String,
    pub url: String,
    pub strategy_ids: Vec<String>,
    pub directions: Vec<String>,
    pub created_at: DateTime<Utc>,
}

fn destination_from_row(r: &rusqlite::Row) -> rusqlite::Result<Destination> {
    let strategy_ids: String = r.get(4)?;
    let directions: String = r.get(5)?;
    Ok(Destination {
        id: r.get(0)?,
        account_id: r.get(1)?,
        name: r.get(2)?,
        url: r.get(3)?,
        strategy_ids: serde_json::from_str(&strategy_ids).unwrap_or_default(),
        directions: serde_json::from_str(&directions).unwrap_or_default(),
        created_at: parse_ts(r.get(6)?),
    })
}

const DEST_COLUMNS: &str =
    "id, account_id, name, url, strategy_ids, directions, created_at FROM signal_destinations";

/// The destinations of `account_id`, or of every account when None.
pub fn destinations(conn: &Connection, account_id: Option<i64>) -> DbResult<Vec<Destination>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {DEST_COLUMNS} WHERE ?1 IS NULL OR account_id = ?1 ORDER BY created_at, id"
    ))?;
    let rows = stmt.query_map([account_id], destination_from_row)?;
    rows.collect()
}

pub fn destination(conn: &Connection, id: &str) -> DbResult<Option<Destination>> {
    conn.query_row(
        &format!("SELECT {DEST_COLUMNS} WHERE id = ?1"),
        [id],
        destination_from_row,
    )
    .optional()
}

pub fn count_destinations(conn: &Connection, account_id: i64) -> DbResult<usize> {
    conn.query_row(
        "SELECT COUNT(*) FROM signal_destinations WHERE account_id = ?1",
        [account_id],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n as usize)
}

/// Destinations of every account.
pub fn count_all_destinations(conn: &Connection) -> DbResult<i64> {
    conn.query_row("SELECT COUNT(*) FROM signal_destinations", [], |r| r.get(0))
}

pub fn insert_destination(conn: &Connection, d: &Destination, secret: &str) -> DbResult<()> {
    conn.execute(
        "INSERT INTO signal_destinations
         (id, account_id, name, url, strategy_ids, directions, secret, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            d.id,
            d.account_id,
            d.name,
            d.url,
            serde_json::to_string(&d.strategy_ids).unwrap_or_default(),
            serde_json::to_string(&d.directions).unwrap_or_default(),
            secret,
            ts(d.created_at),
        ],
    )?;
    Ok(())
}

/// Delivery counts of one destination, by status, and the time of the last success.
pub fn delivery_stats(conn: &Connection, destination_id: &str) -> DbResult<DeliveryStats> {
    let mut stmt = conn.prepare(
        "SELECT status, COUNT(*), MAX(delivered_at) FROM signal_deliveries
         WHERE destination_id = ?1 GROUP BY status",
    )?;
    let rows = stmt.query_map([destination_id], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, Option<String>>(2)?,
        ))
    })?;
    let mut out = DeliveryStats::default();
    for row in rows {
        let (status, n, last) = row?;
        let n = n as u64;
        out.total += n;
        match status.as_str() {
            "pending" => out.pending = n,
            "retrying" => out.retrying = n,
            "delivered" => {
                out.delivered = n;
                out.last_delivered_at = last.map(parse_ts);
            }
            "failed" => out.failed = n,
            other => {
                out.extra.insert(other.to_string(), n.into());
            }
        }
    }
    Ok(out)
}

/// The newest `limit` rows of a destination's delivery log.
pub fn deliveries(
    conn: &Connection,
    destination_id: &str,
    limit: usize,
) -> DbResult<Vec<SignalDelivery>> {
    let mut stmt = conn.prepare(
        "SELECT id, webhook_id, status, attempts, last_status, last_error, next_attempt_at,
                created_at, delivered_at, body
         FROM signal_deliveries WHERE destination_id = ?1 ORDER BY id DESC LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![destination_id, limit as i64], |r| {
        let body: String = r.get(9)?;
        let status: String = r.get(2)?;
        let next: Option<String> = r.get(6)?;
        let waiting = status == "pending" || status == "retrying";
        Ok(SignalDelivery {
            id: r.get(0)?,
            webhook_id: r.get(1)?,
            attempts: r.get::<_, i64>(3)? as u32,
            last_status: r.get::<_, Option<i64>>(4)?.map(|s| s as u16),
            last_error: r.get(5)?,
            next_attempt_at: next.filter(|_| waiting).map(parse_ts),
            created_at: Some(parse_ts(r.get(7)?)),
            delivered_at: r.get::<_, Option<String>>(8)?.map(parse_ts),
            event: serde_json::from_str::<SignalEvent>(&body).unwrap_or_default(),
            status,
            extra: Default::default(),
        })
    })?;
    rows.collect()
}

/// Queues one delivery of `body`, due now.
pub fn insert_delivery(
    conn: &Connection,
    destination_id: &str,
    webhook_id: &str,
    body: &str,
    now: DateTime<Utc>,
) -> DbResult<()> {
    conn.execute(
        "INSERT INTO signal_deliveries
         (destination_id, webhook_id, body, status, attempts, next_attempt_at, created_at)
         VALUES (?1, ?2, ?3, 'pending', 0, ?4, ?4)",
        params![destination_id, webhook_id, body, ts(now)],
    )?;
    Ok(())
}

/// A delivery whose next attempt is due, with where it goes and the secret that signs it.
pub struct Due {
    pub id: i64,
    pub webhook_id: String,
    pub body: String,
    pub attempts: i64,
    pub url: String,
    pub secret: String,
}

/// Deliveries due at `now`, oldest first, but those in `skip` (already in flight).
pub fn due(conn: &Connection, now: DateTime<Utc>, skip: &HashSet<i64>) -> DbResult<Vec<Due>> {
    let mut stmt = conn.prepare(
        "SELECT d.id, d.webhook_id, d.body, d.attempts, s.url, s.secret
         FROM signal_deliveries d JOIN signal_destinations s ON s.id = d.destination_id
         WHERE d.status IN ('pending', 'retrying') AND d.next_attempt_at <= ?1
         ORDER BY d.next_attempt_at, d.id LIMIT 256",
    )?;
    let rows = stmt.query_map([ts(now)], |r| {
        Ok(Due {
            id: r.get(0)?,
            webhook_id: r.get(1)?,
            body: r.get(2)?,
            attempts: r.get(3)?,
            url: r.get(4)?,
            secret: r.get(5)?,
        })
    })?;
    Ok(rows
        .filter_map(Result::ok)
        .filter(|d| !skip.contains(&d.id))
        .collect())
}

/// Whether any delivery waits for an attempt (now or later): with none, the delivery loop has
/// nothing to wake for until a signal is queued.
pub fn any_waiting(conn: &Connection) -> DbResult<bool> {
    conn.query_row(
        "SELECT EXISTS(SELECT 1 FROM signal_deliveries WHERE status IN ('pending', 'retrying'))",
        [],
        |r| r.get(0),
    )
}

pub fn delivered(
    conn: &Connection,
    id: i64,
    attempts: i64,
    http_status: Option<u16>,
    now: DateTime<Utc>,
) -> DbResult<usize> {
    conn.execute(
        "UPDATE signal_deliveries SET status = 'delivered', attempts = ?2, last_status = ?3,
         last_error = NULL, next_attempt_at = NULL, delivered_at = ?4 WHERE id = ?1",
        params![id, attempts, http_status, ts(now)],
    )
}

/// A failed attempt: `retrying` at `next`, or `failed` when there is no next attempt.
pub fn attempt_failed(
    conn: &Connection,
    id: i64,
    attempts: i64,
    http_status: Option<u16>,
    error: &str,
    next: Option<DateTime<Utc>>,
) -> DbResult<usize> {
    let status = if next.is_some() { "retrying" } else { "failed" };
    conn.execute(
        "UPDATE signal_deliveries SET status = ?2, attempts = ?3, last_status = ?4,
         last_error = ?5, next_attempt_at = ?6 WHERE id = ?1",
        params![id, status, attempts, http_status, error, next.map(ts)],
    )
}

/// `(last_bar, last_target)` of a strategy on a pair and timeframe, if it was evaluated before.
pub fn strategy_state(
    conn: &Connection,
    strategy: &str,
    pair: &str,
    timeframe: &str,
) -> DbResult<Option<(i64, i64)>> {
    conn.query_row(
        "SELECT last_bar, last_target FROM strategy_signal_state
         WHERE strategy_id = ?1 AND pair = ?2 AND timeframe = ?3",
        params![strategy, pair, timeframe],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .optional()
}

pub fn set_strategy_state(
    conn: &Connection,
    strategy: &str,
    pair: &str,
    timeframe: &str,
    bar: i64,
    target: i64,
) -> DbResult<()> {
    conn.execute(
        "INSERT INTO strategy_signal_state (strategy_id, pair, timeframe, last_bar, last_target)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (strategy_id, pair, timeframe)
         DO UPDATE SET last_bar = ?4, last_target = ?5",
        params![strategy, pair, timeframe, bar, target],
    )?;
    Ok(())
}

/// `(account id, messengerId)` of every other account following the leader's trades under
/// `label` (or under every label).
pub fn followers(
    conn: &Connection,
    leader_id: i64,
    label: Option<&str>,
) -> DbResult<Vec<(i64, String)>> {
    let mut stmt = conn.prepare(
        "SELECT DISTINCT f.follower_account_id, a.messenger_id FROM follows f
         JOIN accounts a ON a.id = f.follower_account_id
         WHERE f.leader_account_id = ?1 AND (f.strategy_label = '*' OR f.strategy_label = ?2)
           AND f.follower_account_id != ?1
         ORDER BY f.follower_account_id",
    )?;
    let rows = stmt.query_map(params![leader_id, label], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

pub fn account_id_by_messenger_id(conn: &Connection, messenger_id: &str) -> DbResult<Option<i64>> {
    conn.query_row(
        "SELECT id FROM accounts WHERE messenger_id = ?1",
        [messenger_id],
        |r| r.get(0),
    )
    .optional()
}

/// True if the follow is new.
pub fn follow(
    conn: &Connection,
    follower: i64,
    leader: i64,
    label: &str,
    now: DateTime<Utc>,
) -> DbResult<bool> {
    Ok(conn.execute(
        "INSERT OR IGNORE INTO follows (follower_account_id, leader_account_id, strategy_label,
         created_at) VALUES (?1, ?2, ?3, ?4)",
        params![follower, leader, label, ts(now)],
    )? > 0)
}

/// True if there was such a follow.
pub fn unfollow(conn: &Connection, follower: i64, leader: i64, label: &str) -> DbResult<bool> {
    Ok(conn.execute(
        "DELETE FROM follows WHERE follower_account_id = ?1 AND leader_account_id = ?2
         AND strategy_label = ?3",
        params![follower, leader, label],
    )? > 0)
}
