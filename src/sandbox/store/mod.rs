//! The sandbox's SQLite store. Everything a response acknowledges is committed here first (WAL,
//! synchronous=FULL), so a kill -9 loses nothing that a client was told had happened.

use super::venue::Exchange;
use super::venue::exchange::{Book, Fill, Order, OrderKind, Position};
use crate::api::Scope;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub mod chat;
pub mod research;

pub type DbResult<T> = rusqlite::Result<T>;

const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE accounts (
    id INTEGER PRIMARY KEY,
    messenger_id TEXT NOT NULL UNIQUE,
    wallet TEXT NOT NULL,
    initial_equity REAL NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE api_keys (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    key_hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    scope TEXT NOT NULL,
    label TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE TABLE quota_usage (
    key_id INTEGER NOT NULL REFERENCES api_keys(id),
    day TEXT NOT NULL,
    posts INTEGER NOT NULL DEFAULT 0,
    compute INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (key_id, day)
);
CREATE TABLE proposals (
    id TEXT PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    key_id INTEGER NOT NULL REFERENCES api_keys(id),
    kind TEXT NOT NULL,
    signal TEXT NOT NULL,
    plan TEXT NOT NULL,
    preview TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    decided_at TEXT,
    execution TEXT,
    error TEXT
);
CREATE INDEX proposals_account ON proposals(account_id, created_at);
CREATE TABLE idempotency (
    key_id INTEGER NOT NULL REFERENCES api_keys(id),
    idem_key TEXT NOT NULL,
    body_hash TEXT NOT NULL,
    status INTEGER NOT NULL,
    response TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (key_id, idem_key)
);
CREATE TABLE audit_logs (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    key_id INTEGER NOT NULL,
    time TEXT NOT NULL,
    operation TEXT NOT NULL,
    outcome TEXT NOT NULL,
    http_status INTEGER NOT NULL,
    proposal_id TEXT,
    oid INTEGER,
    error_code TEXT,
    message TEXT
);
CREATE INDEX audit_account ON audit_logs(account_id, id);
CREATE TABLE balances (
    account_id INTEGER PRIMARY KEY REFERENCES accounts(id),
    cash REAL NOT NULL
);
CREATE TABLE positions (
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    exchange TEXT NOT NULL,
    coin TEXT NOT NULL,
    szi REAL NOT NULL,
    entry_px REAL NOT NULL,
    leverage INTEGER NOT NULL,
    margin REAL NOT NULL,
    opened_at TEXT NOT NULL,
    PRIMARY KEY (account_id, exchange, coin)
);
CREATE TABLE orders (
    oid INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    exchange TEXT NOT NULL,
    coin TEXT NOT NULL,
    is_buy INTEGER NOT NULL,
    limit_px REAL NOT NULL,
    sz REAL NOT NULL,
    orig_sz REAL NOT NULL,
    kind TEXT NOT NULL,
    trigger_px REAL,
    reduce_only INTEGER NOT NULL,
    is_position_tpsl INTEGER NOT NULL,
    leverage INTEGER NOT NULL,
    timestamp TEXT NOT NULL
);
CREATE INDEX orders_account ON orders(account_id);
CREATE TABLE fills (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    oid INTEGER NOT NULL,
    exchange TEXT NOT NULL,
    coin TEXT NOT NULL,
    is_buy INTEGER NOT NULL,
    px REAL NOT NULL,
    sz REAL NOT NULL,
    fee REAL NOT NULL,
    closed_pnl REAL NOT NULL,
    dir TEXT NOT NULL,
    cause TEXT NOT NULL,
    time TEXT NOT NULL
);
CREATE INDEX fills_account ON fills(account_id, time);
CREATE TABLE equity_snapshots (
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    time TEXT NOT NULL,
    equity REAL NOT NULL,
    PRIMARY KEY (account_id, time)
);
CREATE TABLE trade_signals (
    id INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    key_id INTEGER NOT NULL,
    received_at TEXT NOT NULL,
    route TEXT NOT NULL,
    body TEXT NOT NULL,
    fanout INTEGER NOT NULL
);
CREATE TABLE meta (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"#,
    r#"
CREATE TABLE backtest_jobs (
    id TEXT PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    key_id INTEGER NOT NULL,
    request TEXT NOT NULL,
    status TEXT NOT NULL,
    progress INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    result TEXT,
    error TEXT
);
CREATE INDEX backtest_jobs_account ON backtest_jobs(account_id, created_at);
CREATE TABLE discovery_cache (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    computed_at TEXT NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (kind, key)
);
"#,
    // Tool confirm tokens, chat settings and token usage, research runs.
    r#"
CREATE TABLE mcp_confirm_tokens (
    token TEXT PRIMARY KEY,
    account_id INTEGER NOT NULL,
    key_id INTEGER NOT NULL,
    tool TEXT NOT NULL,
    args_hash TEXT NOT NULL,
    args TEXT NOT NULL,
    preview TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    used_at TEXT,
    outcome TEXT
);
CREATE TABLE account_llm (
    account_id INTEGER PRIMARY KEY,
    base_url TEXT NOT NULL,
    model TEXT NOT NULL,
    api_key TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE usage_tokens (
    key_id INTEGER NOT NULL,
    day TEXT NOT NULL,
    input INTEGER NOT NULL DEFAULT 0,
    output INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (key_id, day)
);
CREATE TABLE research_runs (
    id TEXT PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    key_id INTEGER NOT NULL,
    task TEXT NOT NULL,
    status TEXT NOT NULL,
    planner TEXT NOT NULL,
    plan TEXT NOT NULL,
    created_at TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX research_runs_account ON research_runs(account_id, created_at);
CREATE UNIQUE INDEX research_runs_one_active
    ON research_runs(account_id) WHERE status = 'active';
CREATE TABLE research_agents (
    run_id TEXT NOT NULL REFERENCES research_runs(id),
    agent_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    name TEXT NOT NULL,
    role TEXT NOT NULL,
    parent TEXT,
    status TEXT NOT NULL,
    task TEXT NOT NULL,
    progress INTEGER NOT NULL DEFAULT 0,
    summary TEXT,
    strategies TEXT NOT NULL DEFAULT '[]',
    attempt INTEGER NOT NULL DEFAULT 0,
    result TEXT,
    PRIMARY KEY (run_id, agent_id)
);
CREATE TABLE research_messages (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES research_runs(id),
    time TEXT NOT NULL,
    author TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX research_messages_run ON research_messages(run_id, id);
CREATE TABLE research_artifacts (
    run_id TEXT NOT NULL REFERENCES research_runs(id),
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_id, name)
);
"#,
    // Signal destinations and deliveries, live strategy state, followers, builder fee, payments.
    r#"
CREATE TABLE signal_destinations (
    id TEXT PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,
    url TEXT NOT NULL,
    strategy_ids TEXT NOT NULL,
    directions TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX signal_destinations_account ON signal_destinations(account_id);
CREATE TABLE signal_deliveries (
    id INTEGER PRIMARY KEY,
    destination_id TEXT NOT NULL REFERENCES signal_destinations(id),
    webhook_id TEXT NOT NULL,
    body TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT,
    last_status INTEGER,
    last_error TEXT,
    created_at TEXT NOT NULL,
    delivered_at TEXT
);
CREATE INDEX signal_deliveries_destination ON signal_deliveries(destination_id, id);
CREATE INDEX signal_deliveries_due ON signal_deliveries(status, next_attempt_at);
CREATE TABLE strategy_signal_state (
    strategy_id TEXT NOT NULL,
    pair TEXT NOT NULL,
    timeframe TEXT NOT NULL,
    last_bar INTEGER NOT NULL,
    last_target INTEGER NOT NULL,
    PRIMARY KEY (strategy_id, pair, timeframe)
);
CREATE TABLE follows (
    follower_account_id INTEGER NOT NULL REFERENCES accounts(id),
    leader_account_id INTEGER NOT NULL REFERENCES accounts(id),
    strategy_label TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (follower_account_id, leader_account_id, strategy_label)
);
CREATE TABLE builder_fee_nonces (
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    nonce INTEGER NOT NULL,
    wallet TEXT NOT NULL,
    issued_at TEXT NOT NULL,
    used_at TEXT,
    PRIMARY KEY (account_id, nonce)
);
CREATE TABLE builder_fee_approvals (
    account_id INTEGER PRIMARY KEY REFERENCES accounts(id),
    wallet TEXT NOT NULL,
    builder TEXT NOT NULL,
    max_fee_rate TEXT NOT NULL,
    nonce INTEGER NOT NULL,
    signature TEXT NOT NULL,
    approved_at TEXT NOT NULL
);
CREATE TABLE payment_nonces (
    payer TEXT NOT NULL,
    nonce TEXT NOT NULL,
    valid_before INTEGER NOT NULL,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    amount TEXT NOT NULL,
    operation TEXT NOT NULL,
    used_at TEXT NOT NULL,
    PRIMARY KEY (payer, nonce)
);
"#,
    // Orders of platform orders that may fill later (resting limits, TP/SL triggers) and the
    // builder fee their fills owe.
    r#"
CREATE TABLE builder_fee_orders (
    oid INTEGER PRIMARY KEY,
    account_id INTEGER NOT NULL REFERENCES accounts(id),
    rate REAL NOT NULL
);
"#,
];

/// Where the sandbox keeps its database.
#[derive(Debug, Clone)]
pub enum DbLocation {
    File(PathBuf),
    /// Gone when the sandbox stops; for tests and throwaway runs.
    Memory,
}

pub struct Store {
    pub conn: Connection,
}

#[derive(Debug, Clone)]
pub struct AccountRow {
    pub id: i64,
    pub messenger_id: String,
    pub wallet: String,
    pub initial_equity: f64,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone)]
pub struct KeyRow {
    pub id: i64,
    pub account_id: i64,
    pub prefix: String,
    pub scope: Scope,
    pub label: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone)]
pub struct ProposalRow {
    pub id: String,
    pub account_id: i64,
    pub key_id: i64,
    pub kind: String,
    pub signal: String,
    pub plan: String,
    pub preview: String,
    pub status: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub decided_at: Option<DateTime<Utc>>,
    pub execution: Option<String>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct AuditRow {
    pub account_id: i64,
    pub key_id: i64,
    pub operation: String,
    pub outcome: String,
    pub http_status: u16,
    pub proposal_id: Option<String>,
    pub oid: Option<u64>,
    pub error_code: Option<String>,
    pub message: Option<String>,
}

pub fn ts(t: DateTime<Utc>) -> String {
    // Fixed-width RFC 3339 so that text comparison in SQL orders like time.
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

pub fn parse_ts(s: String) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(&s)
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default()
}

fn opt_ts(s: Option<String>) -> Option<DateTime<Utc>> {
    s.map(parse_ts)
}

impl Store {
    pub fn open(path: &Path) -> DbResult<Store> {
        let conn = Connection::open(path)?;
        Self::init(conn)
    }

    pub fn open_in_memory() -> DbResult<Store> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(conn: Connection) -> DbResult<Store> {
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let mut store = Store { conn };
        store.migrate()?;
        Ok(store)
    }

    fn migrate(&mut self) -> DbResult<()> {
        let version: i64 = self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?;
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let tx = self.conn.transaction()?;
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
            tx.commit()?;
        }
        Ok(())
    }

    // ---- meta -------------------------------------------------------------------------------------

    pub fn meta(&self, name: &str) -> DbResult<Option<String>> {
        self.conn
            .query_row("SELECT value FROM meta WHERE name = ?1", [name], |r| {
                r.get(0)
            })
            .optional()
    }

    pub fn set_meta(conn: &Connection, name: &str, value: &str) -> DbResult<()> {
        conn.execute(
            "INSERT INTO meta (name, value) VALUES (?1, ?2)
             ON CONFLICT(name) DO UPDATE SET value = excluded.value",
            params![name, value],
        )?;
        Ok(())
    }

    // ---- accounts and keys ------------------------------------------------------------------------

    pub fn create_account(
        &mut self,
        messenger_id: &str,
        wallet: &str,
        initial_equity: f64,
        now: DateTime<Utc>,
    ) -> DbResult<AccountRow> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO accounts (messenger_id, wallet, initial_equity, created_at)
             VALUES (?1, ?2, ?3, ?4)",
            params![messenger_id, wallet, initial_equity, ts(now)],
        )?;
        let id = tx.last_insert_rowid();
        tx.execute(
            "INSERT INTO balances (account_id, cash) VALUES (?1, ?2)",
            params![id, initial_equity],
        )?;
        tx.execute(
            "INSERT INTO equity_snapshots (account_id, time, equity) VALUES (?1, ?2, ?3)",
            params![id, ts(now), initial_equity],
        )?;
        tx.commit()?;
        Ok(AccountRow {
            id,
            messenger_id: messenger_id.to_string(),
            wallet: wallet.to_string(),
            initial_equity,
            created_at: now,
        })
    }

    fn account_from_row(r: &rusqlite::Row) -> DbResult<AccountRow> {
        Ok(AccountRow {
            id: r.get(0)?,
            messenger_id: r.get(1)?,
            wallet: r.get(2)?,
            initial_equity: r.get(3)?,
            created_at: parse_ts(r.get(4)?),
        })
    }

    pub fn account(&self, id: i64) -> DbResult<Option<AccountRow>> {
        self.conn
            .query_row(
                "SELECT id, messenger_id, wallet, initial_equity, created_at FROM accounts WHERE id = ?1",
                [id],
                Self::account_from_row,
            )
            .optional()
    }

    pub fn account_by_messenger_id(&self, messenger_id: &str) -> DbResult<Option<AccountRow>> {
        self.conn
            .query_row(
                "SELECT id, messenger_id, wallet, initial_equity, created_at FROM accounts
                 WHERE messenger_id = ?1",
                [messenger_id],
                Self::account_from_row,
            )
            .optional()
    }

    pub fn accounts(&self) -> DbResult<Vec<AccountRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, messenger_id, wallet, initial_equity, created_at FROM accounts ORDER BY id",
        )?;
        let rows = stmt.query_map([], Self::account_from_row)?;
        rows.collect()
    }

    pub fn insert_key(
        &self,
        account_id: i64,
        key_hash: &str,
        prefix: &str,
        scope: Scope,
        label: &str,
        now: DateTime<Utc>,
    ) -> DbResult<i64> {
        self.conn.execute(
            "INSERT INTO api_keys (account_id, key_hash, prefix, scope, label, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![account_id, key_hash, prefix, scope.as_str(), label, ts(now)],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    fn key_from_row(r: &rusqlite::Row) -> DbResult<KeyRow> {
        let scope: String = r.get(3)?;
        Ok(KeyRow {
            id: r.get(0)?,
            account_id: r.get(1)?,
            prefix: r.get(2)?,
            scope: Scope::parse(&scope).unwrap_or(Scope::McpMutate),
            label: r.get(4)?,
            created_at: parse_ts(r.get(5)?),
            revoked_at: opt_ts(r.get(6)?),
        })
    }

    /// An active (not revoked) key by the hash of its plain text.
    pub fn key_by_hash(&self, key_hash: &str) -> DbResult<Option<KeyRow>> {
        self.conn
            .query_row(
                "SELECT id, account_id, prefix, scope, label, created_at, revoked_at FROM api_keys
                 WHERE key_hash = ?1 AND revoked_at IS NULL",
                [key_hash],
                Self::key_from_row,
            )
            .optional()
    }

    pub fn keys(&self) -> DbResult<Vec<KeyRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, account_id, prefix, scope, label, created_at, revoked_at FROM api_keys
             ORDER BY id",
        )?;
        let rows = stmt.query_map([], Self::key_from_row)?;
        rows.collect()
    }

    /// Revokes the active keys whose prefix is `prefix`; returns how many.
    pub fn revoke_key(&self, prefix: &str, now: DateTime<Utc>) -> DbResult<usize> {
        self.conn.execute(
            "UPDATE api_keys SET revoked_at = ?2 WHERE prefix = ?1 AND revoked_at IS NULL",
            params![prefix, ts(now)],
        )
    }

    // ---- quotas -----------------------------------------------------------------------------------

    /// Counts one unit against a daily cap if it is not exhausted. Returns the new count, or `None`
    /// when the cap is reached (nothing is counted then). One statement, so concurrent calls never
    /// exceed the cap.
    pub fn charge_quota(
        &self,
        key_id: i64,
        day: &str,
        column: QuotaColumn,
        cap: u64,
    ) -> DbResult<Option<u64>> {
        let col = column.name();
        let sql = format!(
            "INSERT INTO quota_usage (key_id, day, {col}) SELECT ?1, ?2, 1 WHERE ?3 > 0
             ON CONFLICT(key_id, day) DO UPDATE SET {col} = {col} + 1 WHERE {col} < ?3
             RETURNING {col}"
        );
        self.conn
            .query_row(&sql, params![key_id, day, cap as i64], |r| {
                r.get::<_, i64>(0)
            })
            .optional()
            .map(|v| v.map(|n| n as u64))
    }

    pub fn quota_used(&self, key_id: i64, day: &str) -> DbResult<(u64, u64)> {
        self.conn
            .query_row(
                "SELECT posts, compute FROM quota_usage WHERE key_id = ?1 AND day = ?2",
                params![key_id, day],
                |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
            )
            .optional()
            .map(|v| v.unwrap_or((0, 0)))
    }

    // ---- proposals --------------------------------------------------------------------------------

    pub fn insert_proposal(&self, p: &ProposalRow) -> DbResult<()> {
        self.conn.execute(
            "INSERT INTO proposals (id, account_id, key_id, kind, signal, plan, preview, status,
                                    created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                p.id,
                p.account_id,
                p.key_id,
                p.kind,
                p.signal,
                p.plan,
                p.preview,
                p.status,
                ts(p.created_at),
                ts(p.expires_at)
            ],
        )?;
        Ok(())
    }

    fn proposal_from_row(r: &rusqlite::Row) -> DbResult<ProposalRow> {
        Ok(ProposalRow {
            id: r.get(0)?,
            account_id: r.get(1)?,
            key_id: r.get(2)?,
            kind: r.get(3)?,
            signal: r.get(4)?,
            plan: r.get(5)?,
            preview: r.get(6)?,
            status: r.get(7)?,
            created_at: parse_ts(r.get(8)?),
            expires_at: parse_ts(r.get(9)?),
            decided_at: opt_ts(r.get(10)?),
            execution: r.get(11)?,
            error: r.get(12)?,
        })
    }

    const PROPOSAL_COLUMNS: &str = "id, account_id, key_id, kind, signal, plan, preview, status,
        created_at, expires_at, decided_at, execution, error";

    pub fn proposal(&self, id: &str) -> DbResult<Option<ProposalRow>> {
        self.conn
            .query_row(
                &format!(
                    "SELECT {} FROM proposals WHERE id = ?1",
                    Self::PROPOSAL_COLUMNS
                ),
                [id],
                Self::proposal_from_row,
            )
            .optional()
    }

    /// The account's proposals, newest first.
    pub fn proposals(&self, account_id: i64, limit: usize) -> DbResult<Vec<ProposalRow>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {} FROM proposals WHERE account_id = ?1 ORDER BY created_at DESC, rowid DESC LIMIT ?2",
            Self::PROPOSAL_COLUMNS
        ))?;
        let rows = stmt.query_map(params![account_id, limit as i64], Self::proposal_from_row)?;
        rows.collect()
    }

    /// Claims a staged, unexpired proposal for execution: the single conditional UPDATE that makes
    /// confirm exactly-once. Returns false when the proposal is not claimable by this key now.
    pub fn claim_proposal(
        tx: &Transaction,
        id: &str,
        key_id: i64,
        now: DateTime<Utc>,
    ) -> DbResult<bool> {
        let n = tx.execute(
            "UPDATE proposals SET status = 'executed', decided_at = ?3
             WHERE id = ?1 AND key_id = ?2 AND status = 'staged' AND expires_at > ?3",
            params![id, key_id, ts(now)],
        )?;
        Ok(n == 1)
    }

    pub fn set_proposal_execution(tx: &Connection, id: &str, execution: &str) -> DbResult<()> {
        tx.execute(
            "UPDATE proposals SET execution = ?2 WHERE id = ?1",
            params![id, execution],
        )?;
        Ok(())
    }

    pub fn fail_proposal(&self, id: &str, error: &str, now: DateTime<Utc>) -> DbResult<()> {
        self.conn.execute(
            "UPDATE proposals SET status = 'failed', decided_at = ?3, error = ?2
             WHERE id = ?1 AND status = 'staged'",
            params![id, error, ts(now)],
        )?;
        Ok(())
    }

    // ---- idempotency ------------------------------------------------------------------------------

    pub fn idempotent_response(
        &self,
        key_id: i64,
        idem_key: &str,
    ) -> DbResult<Option<(String, u16, String)>> {
        self.conn
            .query_row(
                "SELECT body_hash, status, response FROM idempotency
                 WHERE key_id = ?1 AND idem_key = ?2",
                params![key_id, idem_key],
                |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u16, r.get(2)?)),
            )
            .optional()
    }

    pub fn save_idempotent_response(
        tx: &Connection,
        key_id: i64,
        idem_key: &str,
        body_hash: &str,
        status: u16,
        response: &str,
        now: DateTime<Utc>,
    ) -> DbResult<()> {
        tx.execute(
            "INSERT INTO idempotency (key_id, idem_key, body_hash, status, response, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                key_id,
                idem_key,
                body_hash,
                status as i64,
                response,
                ts(now)
            ],
        )?;
        Ok(())
    }

    // ---- audit ------------------------------------------------------------------------------------

    pub fn insert_audit(&self, row: &AuditRow, now: DateTime<Utc>) -> DbResult<()> {
        self.conn.execute(
            "INSERT INTO audit_logs (account_id, key_id, time, operation, outcome, http_status,
                                     proposal_id, oid, error_code, message)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                row.account_id,
                row.key_id,
                ts(now),
                row.operation,
                row.outcome,
                row.http_status as i64,
                row.proposal_id,
                row.oid.map(|o| o as i64),
                row.error_code,
                row.message
            ],
        )?;
        Ok(())
    }

    /// The account's audit rows, newest first, with their ids and times.
    pub fn audit(
        &self,
        account_id: i64,
        limit: usize,
    ) -> DbResult<Vec<(i64, DateTime<Utc>, AuditRow)>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, time, account_id, key_id, operation, outcome, http_status, proposal_id,
                    oid, error_code, message
             FROM audit_logs WHERE account_id = ?1 ORDER BY id DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![account_id, limit as i64], |r| {
            Ok((
                r.get(0)?,
                parse_ts(r.get(1)?),
                AuditRow {
                    account_id: r.get(2)?,
                    key_id: r.get(3)?,
                    operation: r.get(4)?,
                    outcome: r.get(5)?,
                    http_status: r.get::<_, i64>(6)? as u16,
                    proposal_id: r.get(7)?,
                    oid: r.get::<_, Option<i64>>(8)?.map(|o| o as u64),
                    error_code: r.get(9)?,
                    message: r.get(10)?,
                },
            ))
        })?;
        rows.collect()
    }

    // ---- trade signals ----------------------------------------------------------------------------

    pub fn insert_trade_signal(
        tx: &Connection,
        account_id: i64,
        key_id: i64,
        route: &str,
        body: &str,
        fanout: bool,
        now: DateTime<Utc>,
    ) -> DbResult<()> {
        tx.execute(
            "INSERT INTO trade_signals (account_id, key_id, received_at, route, body, fanout)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![account_id, key_id, ts(now), route, body, fanout],
        )?;
        Ok(())
    }

    // ---- venue state ------------------------------------------------------------------------------

    pub fn load_books(&self) -> DbResult<HashMap<i64, Book>> {
        let mut books: HashMap<i64, Book> = HashMap::new();
        let mut stmt = self.conn.prepare("SELECT account_id, cash FROM balances")?;
        for row in stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?)))? {
            let (id, cash) = row?;
            books.insert(id, Book::new(cash));
        }
        let mut stmt = self.conn.prepare(
            "SELECT account_id, exchange, coin, szi, entry_px, leverage, margin, opened_at
             FROM positions ORDER BY account_id, exchange, coin",
        )?;
        let rows = stmt.query_map([], |r| {
            let exchange: String = r.get(1)?;
            Ok((
                r.get::<_, i64>(0)?,
                Position {
                    exchange: Exchange::parse(&exchange).unwrap_or(Exchange::Venue),
                    coin: r.get(2)?,
                    szi: r.get(3)?,
                    entry_px: r.get(4)?,
                    leverage: r.get::<_, i64>(5)? as u32,
                    margin: r.get(6)?,
                    opened_at: parse_ts(r.get(7)?),
                },
            ))
        })?;
        for row in rows {
            let (id, p) = row?;
            books
                .entry(id)
                .or_insert_with(|| Book::new(0.0))
                .positions
                .push(p);
        }
        let mut stmt = self.conn.prepare(
            "SELECT account_id, oid, exchange, coin, is_buy, limit_px, sz, orig_sz, kind,
                    trigger_px, reduce_only, is_position_tpsl, leverage, timestamp
             FROM orders ORDER BY oid",
        )?;
        let rows = stmt.query_map([], |r| {
            let exchange: String = r.get(2)?;
            let kind: String = r.get(8)?;
            Ok((
                r.get::<_, i64>(0)?,
                Order {
                    oid: r.get::<_, i64>(1)? as u64,
                    exchange: Exchange::parse(&exchange).unwrap_or(Exchange::Venue),
                    coin: r.get(3)?,
                    is_buy: r.get(4)?,
                    limit_px: r.get(5)?,
                    sz: r.get(6)?,
                    orig_sz: r.get(7)?,
                    kind: order_kind_from_str(&kind),
                    trigger_px: r.get(9)?,
                    reduce_only: r.get(10)?,
                    is_position_tpsl: r.get(11)?,
                    leverage: r.get::<_, i64>(12)? as u32,
                    timestamp: parse_ts(r.get(13)?),
                },
            ))
        })?;
        for row in rows {
            let (id, o) = row?;
            books
                .entry(id)
                .or_insert_with(|| Book::new(0.0))
                .orders
                .push(o);
        }
        Ok(books)
    }

    /// Writes an account's whole book: balance, positions and resting orders.
    pub fn save_book(tx: &Connection, account_id: i64, book: &Book) -> DbResult<()> {
        tx.execute(
            "INSERT INTO balances (account_id, cash) VALUES (?1, ?2)
             ON CONFLICT(account_id) DO UPDATE SET cash = excluded.cash",
            params![account_id, book.cash],
        )?;
        tx.execute("DELETE FROM positions WHERE account_id = ?1", [account_id])?;
        let mut ins = tx.prepare_cached(
            "INSERT INTO positions (account_id, exchange, coin, szi, entry_px, leverage, margin,
                                    opened_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for p in &book.positions {
            ins.execute(params![
                account_id,
                p.exchange.as_str(),
                p.coin,
                p.szi,
                p.entry_px,
                p.leverage as i64,
                p.margin,
                ts(p.opened_at)
            ])?;
        }
        tx.execute("DELETE FROM orders WHERE account_id = ?1", [account_id])?;
        let mut ins = tx.prepare_cached(
            "INSERT INTO orders (oid, account_id, exchange, coin, is_buy, limit_px, sz, orig_sz,
                                 kind, trigger_px, reduce_only, is_position_tpsl, leverage,
                                 timestamp)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        )?;
        for o in &book.orders {
            ins.execute(params![
                o.oid as i64,
                account_id,
                o.exchange.as_str(),
                o.coin,
                o.is_buy,
                o.limit_px,
                o.sz,
                o.orig_sz,
                order_kind_str(o.kind),
                o.trigger_px,
                o.reduce_only,
                o.is_position_tpsl,
                o.leverage as i64,
                ts(o.timestamp)
            ])?;
        }
        Ok(())
    }

    pub fn insert_fills(tx: &Connection, account_id: i64, fills: &[Fill]) -> DbResult<()> {
        let mut ins = tx.prepare_cached(
            "INSERT INTO fills (account_id, oid, exchange, coin, is_buy, px, sz, fee, closed_pnl,
                                dir, cause, time)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )?;
        for f in fills {
            ins.execute(params![
                account_id,
                f.oid as i64,
                f.exchange.as_str(),
                f.coin,
                f.is_buy,
                f.px,
                f.sz,
                f.fee,
                f.closed_pnl,
                f.dir,
                format!("{:?}", f.cause),
                ts(f.time)
            ])?;
        }
        Ok(())
    }

    /// Realized PnL (closed PnL net of fees) of the account since `since`.
    pub fn realized_since(&self, account_id: i64, since: DateTime<Utc>) -> DbResult<f64> {
        self.conn.query_row(
            "SELECT COALESCE(SUM(closed_pnl - fee), 0) FROM fills
             WHERE account_id = ?1 AND time >= ?2",
            params![account_id, ts(since)],
            |r| r.get(0),
        )
    }

    pub fn insert_equity_snapshot(
        tx: &Connection,
        account_id: i64,
        now: DateTime<Utc>,
        equity: f64,
    ) -> DbResult<()> {
        tx.execute(
            "INSERT OR REPLACE INTO equity_snapshots (account_id, time, equity) VALUES (?1, ?2, ?3)",
            params![account_id, ts(now), equity],
        )?;
        Ok(())
    }

    /// Equity at `t`: the last snapshot at or before `t`, or the first one after it when the
    /// account did not exist yet.
    pub fn equity_at(&self, account_id: i64, t: DateTime<Utc>) -> DbResult<Option<f64>> {
        let before: Option<f64> = self
            .conn
            .query_row(
                "SELECT equity FROM equity_snapshots WHERE account_id = ?1 AND time <= ?2
                 ORDER BY time DESC LIMIT 1",
                params![account_id, ts(t)],
                |r| r.get(0),
            )
            .optional()?;
        if before.is_some() {
            return Ok(before);
        }
        self.conn
            .query_row(
                "SELECT equity FROM equity_snapshots WHERE account_id = ?1 ORDER BY time LIMIT 1",
                [account_id],
                |r| r.get(0),
            )
            .optional()
    }
}

/// A persisted discovery answer: kind, key, when it was computed, and its rows as JSON.
pub type CachedAnswer = (String, String, DateTime<Utc>, String);

#[derive(Debug, Clone)]
pub struct JobRow {
    pub id: String,
    pub account_id: i64,
    pub request: String,
    pub status: String,
    pub progress: u8,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    pub result: Option<String>,
    pub error: Option<String>,
}

impl Store {
    pub fn insert_job(
        &self,
        id: &str,
        account_id: i64,
        key_id: i64,
        request: &str,
        now: DateTime<Utc>,
    ) -> DbResult<()> {
        self.conn.execute(
            "INSERT INTO backtest_jobs (id, account_id, key_id, request, status, created_at)
             VALUES (?1, ?2, ?3, ?4, 'queued', ?5)",
            params![id, account_id, key_id, request, ts(now)],
        )?;
        Ok(())
    }

    pub fn delete_job(&self, id: &str) -> DbResult<()> {
        self.conn
            .execute("DELETE FROM backtest_jobs WHERE id = ?1", [id])?;
        Ok(())
    }

    /// Moves a queued job to running and returns its request; None if it is not queued (so a job
    /// is run once even if it was queued twice).
    pub fn start_job(&self, id: &str, now: DateTime<Utc>) -> DbResult<Option<String>> {
        self.conn
            .query_row(
                "UPDATE backtest_jobs SET status = 'running', progress = 5, started_at = ?2
                 WHERE id = ?1 AND status = 'queued' RETURNING request",
                params![id, ts(now)],
                |r| r.get(0),
            )
            .optional()
    }

    pub fn set_job_progress(&self, id: &str, progress: u8) -> DbResult<()> {
        self.conn.execute(
            "UPDATE backtest_jobs SET progress = ?2 WHERE id = ?1 AND status = 'running'",
            params![id, progress as i64],
        )?;
        Ok(())
    }

    pub fn finish_job(
        &self,
        id: &str,
        status: &str,
        result: Option<&str>,
        error: Option<&str>,
        now: DateTime<Utc>,
    ) -> DbResult<()> {
        self.conn.execute(
            "UPDATE backtest_jobs SET status = ?2, progress = 100, result = ?3, error = ?4,
                                      finished_at = ?5
             WHERE id = ?1",
            params![id, status, result, error, ts(now)],
        )?;
        Ok(())
    }

    pub fn job(&self, id: &str) -> DbResult<Option<JobRow>> {
        self.conn
            .query_row(
                "SELECT id, account_id, request, status, progress, created_at, finished_at, result,
                        error
                 FROM backtest_jobs WHERE id = ?1",
                [id],
                |r| {
                    Ok(JobRow {
                        id: r.get(0)?,
                        account_id: r.get(1)?,
                        request: r.get(2)?,
                        status: r.get(3)?,
                        progress: r.get::<_, i64>(4)?.clamp(0, 100) as u8,
                        created_at: parse_ts(r.get(5)?),
                        finished_at: opt_ts(r.get(6)?),
                        result: r.get(7)?,
                        error: r.get(8)?,
                    })
                },
            )
            .optional()
    }

    /// Jobs a stopped sandbox left unfinished, oldest first; running ones go back to queued.
    pub fn requeue_jobs(&self) -> DbResult<Vec<String>> {
        self.conn.execute(
            "UPDATE backtest_jobs SET status = 'queued', progress = 0 WHERE status = 'running'",
            [],
        )?;
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM backtest_jobs WHERE status = 'queued' ORDER BY created_at")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        rows.collect()
    }

    pub fn cache_put(
        &self,
        kind: &str,
        key: &str,
        at: DateTime<Utc>,
        payload: &str,
    ) -> DbResult<()> {
        self.conn.execute(
            "INSERT INTO discovery_cache (kind, key, computed_at, payload) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(kind, key) DO UPDATE SET computed_at = excluded.computed_at,
                                                  payload = excluded.payload",
            params![kind, key, ts(at), payload],
        )?;
        Ok(())
    }

    pub fn cache_all(&self) -> DbResult<Vec<CachedAnswer>> {
        let mut stmt = self
            .conn
            .prepare("SELECT kind, key, computed_at, payload FROM discovery_cache")?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, parse_ts(r.get(2)?), r.get(3)?))
        })?;
        rows.collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaColumn {
    Posts,
    Compute,
}

impl QuotaColumn {
    fn name(self) -> &'static str {
        match self {
            QuotaColumn::Posts => "posts",
            QuotaColumn::Compute => "compute",
        }
    }
}

fn order_kind_str(k: OrderKind) -> &'static str {
    match k {
        OrderKind::Limit => "limit",
        OrderKind::StopMarket => "stop_market",
        OrderKind::TakeProfitMarket => "take_profit_market",
    }
}

fn order_kind_from_str(s: &str) -> OrderKind {
    match s {
        "stop_market" => OrderKind::StopMarket,
        "take_profit_market" => OrderKind::TakeProfitMarket,
        _ => OrderKind::Limit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_charge_stops_at_the_cap() {
        let mut s = Store::open_in_memory().unwrap();
        let now = Utc::now();
        let a = s.create_account("m1", "0xabc", 1000.0, now).unwrap();
        let k = s
            .insert_key(a.id, "h", "p", Scope::Legacy, "", now)
            .unwrap();
        assert_eq!(
            s.charge_quota(k, "d", QuotaColumn::Posts, 2).unwrap(),
            Some(1)
        );
        assert_eq!(
            s.charge_quota(k, "d", QuotaColumn::Posts, 2).unwrap(),
            Some(2)
        );
        assert_eq!(s.charge_quota(k, "d", QuotaColumn::Posts, 2).unwrap(), None);
        assert_eq!(s.quota_used(k, "d").unwrap(), (2, 0));
        assert_eq!(
            s.charge_quota(k, "e", QuotaColumn::Posts, 2).unwrap(),
            Some(1)
        );
        assert_eq!(
            s.charge_quota(k, "e", QuotaColumn::Compute, 0).unwrap(),
            None
        );
    }
}
