//! The sandbox's SQLite store. Everything a response acknowledges is committed here first (WAL,
//! synchronous=NORMAL), so a kill -9 of the sandbox loses nothing that a client was told had
//! happened; a crash of the operating system or a power cut may lose the last commits before
//! the next checkpoint (see `init`).
//!
//! Where SQL lives: all of it is in this folder. This file holds the connection and the one
//! ordered list of migrations (the schema of every feature; a database's `user_version` counts how
//! many ran); `store/<feature>.rs` holds every query of one feature, with the rows it reads. Feature
//! code elsewhere in the sandbox calls these functions and writes no SQL of its own, and a store
//! file never calls back into feature logic.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};

mod accounts;
mod books;
pub mod builder_fee;
pub mod chat;
mod jobs;
pub mod mcp;
mod payments;
mod proposals;
pub mod research;
pub mod signals;

pub use accounts::{AccountRow, KeyRow, QuotaColumn};
pub use jobs::{CachedAnswer, JobRow};
pub use payments::PaymentNonce;
pub use proposals::{AuditRow, ProposalRow};

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
    // Each account's fill totals, kept in the transaction of every fill so PnL answers do not sum
    // the history; backfilled from the fills already recorded.
    r#"
CREATE TABLE fill_totals (
    account_id INTEGER PRIMARY KEY REFERENCES accounts(id),
    fills INTEGER NOT NULL,
    closed_pnl REAL NOT NULL,
    fees REAL NOT NULL
);
INSERT INTO fill_totals (account_id, fills, closed_pnl, fees)
    SELECT account_id, COUNT(*), SUM(closed_pnl), SUM(fee) FROM fills GROUP BY account_id;
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

    /// A read-only connection to a database [`Store::open`] has opened (and migrated): it sees
    /// each committed state whole while the writer goes on (WAL), and cannot write.
    pub fn open_reader(path: &Path) -> DbResult<Store> {
        use rusqlite::OpenFlags;
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        Ok(Store { conn })
    }

    pub fn open_in_memory() -> DbResult<Store> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(conn: Connection) -> DbResult<Store> {
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // A commit in WAL mode at NORMAL is in the operating system's hands when it returns, so
        // it survives the process being killed; only an OS crash or power cut can take the last
        // ones, which a paper-trading sandbox can afford. FULL made every acknowledged write wait
        // for an fsync (7-19 ms on the shared benchmark machine), the largest single cost of a
        // backtest's submit. The gateway's store, which journals real supervisors' decisions,
        // stays at FULL.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let mut store = Store { conn };
        store.migrate()?;
        Ok(store)
    }

    fn migrate(&mut self) -> DbResult<()> {
        let version: i64 = self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?;
        // A newer agentdesk's database: its tables mean things this binary does not know, and
        // running on them could lose what the newer one wrote.
        if version as usize > MIGRATIONS.len() {
            return Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                Some(format!(
                    "the database is at schema version {version}, newer than this agentdesk ({}); \
                     upgrade agentdesk",
                    MIGRATIONS.len()
                )),
            ));
        }
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
}
