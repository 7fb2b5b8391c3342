//! An account's LLM provider for the chat loop, and the tokens its turns used per key and day.

use super::ts;
use crate::secret::Secret;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

/// An account's LLM provider: an OpenAI-compatible API.
#[derive(Debug, Clone)]
pub struct LlmSettings {
    /// e.g. `https://api.openai.com/v1`; the loop POSTs `{base_url}/chat/completions`.
    pub base_url: String,
    pub model: String,
    pub api_key: Secret,
}

pub fn set_llm(
    conn: &Connection,
    account_id: i64,
    llm: &LlmSettings,
    now: DateTime<Utc>,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO account_llm (account_id, base_url, model, api_key, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(account_id) DO UPDATE SET base_url = ?2, model = ?3, api_key = ?4, updated_at = ?5",
        params![
            account_id,
            llm.base_url.trim_end_matches('/'),
            llm.model,
            llm.api_key.expose(),
            ts(now)
        ],
    )?;
    Ok(())
}

/// Removes the account's provider; true if there was one.
pub fn clear_llm(conn: &Connection, account_id: i64) -> rusqlite::Result<bool> {
    Ok(conn.execute(
        "DELETE FROM account_llm WHERE account_id = ?1",
        params![account_id],
    )? > 0)
}

pub fn llm_for(conn: &Connection, account_id: i64) -> rusqlite::Result<Option<LlmSettings>> {
    conn.query_row(
        "SELECT base_url, model, api_key FROM account_llm WHERE account_id = ?1",
        params![account_id],
        |r| {
            Ok(LlmSettings {
                base_url: r.get(0)?,
                model: r.get(1)?,
                api_key: Secret::new(r.get::<_, String>(2)?),
            })
        },
    )
    .optional()
}

/// Adds a provider's token counts to the key's usage of the day.
pub fn record_tokens(
    conn: &Connection,
    key_id: i64,
    day: &str,
    input: u64,
    output: u64,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO usage_tokens (key_id, day, input, output) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(key_id, day) DO UPDATE SET input = input + ?3, output = output + ?4",
        params![key_id, day, input as i64, output as i64],
    )?;
    Ok(())
}

/// `(input, output)` tokens the key's chat turns used on `day`.
pub fn tokens_used(conn: &Connection, key_id: i64, day: &str) -> rusqlite::Result<(u64, u64)> {
    conn.query_row(
        "SELECT input, output FROM usage_tokens WHERE key_id = ?1 AND day = ?2",
        params![key_id, day],
        |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
    )
    .optional()
    .map(|v| v.unwrap_or((0, 0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_usage_adds_up_per_key_and_day() {
        let store = super::super::Store::open_in_memory().unwrap();
        let conn = &store.conn;
        record_tokens(conn, 1, "2026-06-01", 10, 3).unwrap();
        record_tokens(conn, 1, "2026-06-01", 5, 2).unwrap();
        record_tokens(conn, 2, "2026-06-01", 7, 7).unwrap();
        assert_eq!(tokens_used(conn, 1, "2026-06-01").unwrap(), (15, 5));
        assert_eq!(tokens_used(conn, 1, "2026-06-02").unwrap(), (0, 0));
    }
}
