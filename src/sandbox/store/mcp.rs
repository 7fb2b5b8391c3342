//! Confirm tokens of mutate tools: issued with a preview, spent once by the call that runs the tool.

use super::{DbResult, parse_ts, ts};
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

pub struct TokenRow {
    pub key_id: i64,
    pub tool: String,
    pub args_hash: String,
    pub expires_at: DateTime<Utc>,
    pub used_at: Option<DateTime<Utc>>,
    pub outcome: Option<String>,
}

pub struct NewToken<'a> {
    pub token: &'a str,
    pub account_id: i64,
    pub key_id: i64,
    pub tool: &'a str,
    pub args_hash: &'a str,
    /// The arguments as canonical JSON.
    pub args: &'a str,
    pub preview: &'a str,
    pub expires_at: DateTime<Utc>,
}

pub fn insert_token(conn: &Connection, t: &NewToken, now: DateTime<Utc>) -> DbResult<()> {
    conn.execute(
        "INSERT INTO mcp_confirm_tokens
             (token, account_id, key_id, tool, args_hash, args, preview, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            t.token,
            t.account_id,
            t.key_id,
            t.tool,
            t.args_hash,
            t.args,
            t.preview,
            ts(now),
            ts(t.expires_at),
        ],
    )?;
    Ok(())
}

pub fn delete_tokens_expired_before(conn: &Connection, before: DateTime<Utc>) -> DbResult<()> {
    conn.execute(
        "DELETE FROM mcp_confirm_tokens WHERE expires_at < ?1",
        params![ts(before)],
    )?;
    Ok(())
}

pub fn token(conn: &Connection, token: &str) -> DbResult<Option<TokenRow>> {
    conn.query_row(
        "SELECT key_id, tool, args_hash, expires_at, used_at, outcome
         FROM mcp_confirm_tokens WHERE token = ?1",
        params![token],
        |r| {
            Ok(TokenRow {
                key_id: r.get(0)?,
                tool: r.get(1)?,
                args_hash: r.get(2)?,
                expires_at: parse_ts(r.get(3)?),
                used_at: r.get::<_, Option<String>>(4)?.map(parse_ts),
                outcome: r.get(5)?,
            })
        },
    )
    .optional()
}

/// Marks the token used if it is unused, unexpired and issued for this key, tool and arguments;
/// one conditional UPDATE, so of concurrent claims exactly one succeeds.
pub fn spend_token(
    conn: &Connection,
    token: &str,
    key_id: i64,
    tool: &str,
    args_hash: &str,
    now: DateTime<Utc>,
) -> DbResult<bool> {
    Ok(conn.execute(
        "UPDATE mcp_confirm_tokens SET used_at = ?1
         WHERE token = ?2 AND used_at IS NULL AND expires_at > ?1
           AND key_id = ?3 AND tool = ?4 AND args_hash = ?5",
        params![ts(now), token, key_id, tool, args_hash],
    )? == 1)
}

/// What the call that spent the token answered (`ok 200`, `error 409 code`).
pub fn set_token_outcome(conn: &Connection, token: &str, outcome: &str) -> DbResult<()> {
    conn.execute(
        "UPDATE mcp_confirm_tokens SET outcome = ?1 WHERE token = ?2",
        params![outcome, token],
    )?;
    Ok(())
}
