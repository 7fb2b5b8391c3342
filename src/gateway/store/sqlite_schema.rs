//! The SQLite store's schema: its versioned migrations.

/// Applied in order; `PRAGMA user_version` counts the applied ones. Append, never edit.
pub(super) const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE items (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    account TEXT,
    kind TEXT NOT NULL,
    exec TEXT NOT NULL,
    proposal_id TEXT,
    confirm_token TEXT,
    request TEXT NOT NULL,
    preview TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    created_at TEXT NOT NULL,
    status TEXT NOT NULL,
    decided_at TEXT,
    decided_by TEXT,
    reason TEXT,
    result TEXT,
    note TEXT
);
CREATE UNIQUE INDEX items_proposal ON items(proposal_id) WHERE proposal_id IS NOT NULL;
CREATE UNIQUE INDEX items_token ON items(confirm_token) WHERE confirm_token IS NOT NULL;
CREATE INDEX items_status ON items(status, created_at);
CREATE INDEX items_agent ON items(agent, status);
CREATE TABLE agents (
    key_hash TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    name TEXT,
    account TEXT,
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL
);
CREATE INDEX agents_fingerprint ON agents(fingerprint);
CREATE TABLE supervisor_tokens (
    id INTEGER PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
"#,
    r#"
ALTER TABLE items ADD COLUMN notional REAL;
ALTER TABLE items ADD COLUMN verdicts TEXT NOT NULL DEFAULT '[]';
ALTER TABLE items ADD COLUMN standing INTEGER;
CREATE INDEX items_standing ON items(standing) WHERE standing IS NOT NULL;
CREATE TABLE gate_state (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE journal (
    seq INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    kind TEXT NOT NULL,
    actor TEXT NOT NULL,
    item TEXT,
    detail TEXT NOT NULL,
    prev_hash TEXT NOT NULL UNIQUE,
    hash TEXT NOT NULL
);
CREATE TABLE executed (
    agent TEXT NOT NULL,
    at TEXT NOT NULL,
    notional REAL NOT NULL
);
CREATE INDEX executed_agent ON executed(agent, at);
CREATE TABLE standing_approvals (
    id INTEGER PRIMARY KEY,
    agent TEXT NOT NULL,
    coins TEXT NOT NULL,
    max_notional_usd REAL NOT NULL,
    expires_at TEXT NOT NULL,
    reason TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);
"#,
    r#"
CREATE TABLE approval_links (
    token_hash TEXT PRIMARY KEY,
    item_id TEXT NOT NULL,
    label TEXT NOT NULL,
    csrf TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    created_at TEXT NOT NULL,
    spent_at TEXT
);
CREATE INDEX approval_links_item ON approval_links(item_id);
"#,
    // When an item was claimed for execution, so a shared store can tell a stale claim.
    "ALTER TABLE items ADD COLUMN claimed_at TEXT;",
    // Roles: tokens minted before them keep every power they had.
    "ALTER TABLE supervisor_tokens ADD COLUMN role TEXT NOT NULL DEFAULT 'admin';",
    // Every inbox listing and approval first asks which open items are due to expire: with
    // thousands pending, by this index rather than by reading each one.
    "CREATE INDEX items_due ON items(status, expires_at);",
    // The console lists every status, newest first: walked by this index, not sorted whole.
    "CREATE INDEX items_created ON items(created_at);",
    // Each item's revision, moved by the database on every change to the row whoever makes it
    // (this process, another one on the file, `gate agent name`), so the inbox can keep each
    // item's answer and re-read only the rows whose revision moved.
    r#"
ALTER TABLE items ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER items_rev AFTER UPDATE ON items FOR EACH ROW WHEN NEW.rev = OLD.rev
BEGIN
    UPDATE items SET rev = OLD.rev + 1 WHERE rowid = NEW.rowid;
END;
"#,
    // Agents suspended, one row each while it lasts (the journal keeps the history).
    r#"
CREATE TABLE suspensions (
    agent TEXT PRIMARY KEY,
    reason TEXT NOT NULL,
    suspended_by TEXT NOT NULL,
    at TEXT NOT NULL
);
"#,
    // Step-up approvals: who approved so far, how many must, and the supervisor who staged it.
    r#"
ALTER TABLE items ADD COLUMN approvals TEXT NOT NULL DEFAULT '[]';
ALTER TABLE items ADD COLUMN approvals_required INTEGER NOT NULL DEFAULT 1;
ALTER TABLE items ADD COLUMN staged_by TEXT;
"#,
];
