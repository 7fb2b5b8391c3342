//! The PostgreSQL store's schema: its versioned migrations, and fresh schemas for tests and benches.

use super::redact;

/// Applied in order, each in its own transaction; `schema_migrations` lists the applied ones.
/// Append, never edit.
pub(super) const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE items (
    seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    account TEXT,
    kind TEXT NOT NULL,
    exec TEXT NOT NULL,
    proposal_id TEXT,
    confirm_token TEXT,
    request JSONB NOT NULL,
    preview JSONB NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    status TEXT NOT NULL,
    decided_at TIMESTAMPTZ,
    decided_by TEXT,
    reason TEXT,
    result JSONB,
    note TEXT,
    notional DOUBLE PRECISION,
    verdicts JSONB NOT NULL DEFAULT '[]',
    standing BIGINT,
    claimed_at TIMESTAMPTZ
);
CREATE UNIQUE INDEX items_proposal ON items(proposal_id) WHERE proposal_id IS NOT NULL;
CREATE UNIQUE INDEX items_token ON items(confirm_token) WHERE confirm_token IS NOT NULL;
CREATE INDEX items_status ON items(status, created_at);
CREATE INDEX items_agent ON items(agent, status);
CREATE INDEX items_standing ON items(standing) WHERE standing IS NOT NULL;
CREATE TABLE agents (
    key_hash TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    name TEXT,
    account TEXT,
    first_seen TIMESTAMPTZ NOT NULL,
    last_seen TIMESTAMPTZ NOT NULL
);
CREATE INDEX agents_fingerprint ON agents(fingerprint);
CREATE TABLE supervisor_tokens (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    label TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE gate_state (
    key TEXT PRIMARY KEY,
    value JSONB NOT NULL
);
-- at and detail are the exact text the hash covers.
CREATE TABLE journal (
    seq BIGINT PRIMARY KEY,
    at TEXT NOT NULL,
    kind TEXT NOT NULL,
    actor TEXT NOT NULL,
    item TEXT,
    detail TEXT NOT NULL,
    prev_hash TEXT NOT NULL UNIQUE,
    hash TEXT NOT NULL
);
-- The chain's last link: one row, locked by every append.
CREATE TABLE journal_head (
    one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
    seq BIGINT NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE executed (
    agent TEXT NOT NULL,
    at TIMESTAMPTZ NOT NULL,
    notional DOUBLE PRECISION NOT NULL
);
CREATE INDEX executed_agent ON executed(agent, at);
CREATE TABLE standing_approvals (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent TEXT NOT NULL,
    coins JSONB NOT NULL,
    max_notional_usd DOUBLE PRECISION NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    reason TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    revoked_at TIMESTAMPTZ
);
"#,
    r#"
CREATE TABLE approval_links (
    token_hash TEXT PRIMARY KEY,
    item_id TEXT NOT NULL,
    label TEXT NOT NULL,
    csrf TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    spent_at TIMESTAMPTZ
);
CREATE INDEX approval_links_item ON approval_links(item_id);
"#,
    // Roles: tokens minted before them keep every power they had.
    "ALTER TABLE supervisor_tokens ADD COLUMN role TEXT NOT NULL DEFAULT 'admin';",
    // Every inbox listing and approval first asks which open items are due to expire: with
    // thousands pending, by this index rather than by reading each one.
    "CREATE INDEX items_due ON items(status, expires_at);",
    // The console lists every status, newest first: walked by this index, not sorted whole.
    "CREATE INDEX items_created ON items(created_at, seq);",
    // Each item's revision, moved by the database on every change to the row whichever instance
    // makes it, so an instance can keep each item's inbox answer and re-read only the rows whose
    // revision moved.
    r#"
ALTER TABLE items ADD COLUMN rev BIGINT NOT NULL DEFAULT 0;
CREATE FUNCTION items_rev() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.rev := OLD.rev + 1;
    RETURN NEW;
END
$$;
CREATE TRIGGER items_rev BEFORE UPDATE ON items FOR EACH ROW EXECUTE FUNCTION items_rev();
"#,
    // Agents suspended, one row each while it lasts (the journal keeps the history).
    r#"
CREATE TABLE suspensions (
    agent TEXT PRIMARY KEY,
    reason TEXT NOT NULL,
    suspended_by TEXT NOT NULL,
    at TIMESTAMPTZ NOT NULL
);
"#,
    // Step-up approvals: who approved so far, how many must, and the supervisor who staged it.
    r#"
ALTER TABLE items ADD COLUMN approvals JSONB NOT NULL DEFAULT '[]';
ALTER TABLE items ADD COLUMN approvals_required INTEGER NOT NULL DEFAULT 1;
ALTER TABLE items ADD COLUMN staged_by TEXT;
"#,
];

/// Why a test's schema was not made; `base` is the server's URL without its password.
#[derive(Debug, thiserror::Error)]
pub enum FreshSchemaError {
    #[error("{base}: {source}")]
    Connect {
        base: String,
        source: super::tls::ConnectError,
    },
    #[error("{base}: cannot create schema {schema}: {source}")]
    Create {
        base: String,
        schema: String,
        source: tokio_postgres::Error,
    },
}

/// Creates a schema with a random name (`prefix_` and 12 hex digits) on the server at `base` and
/// answers `base` with that schema as its search path: a database of its own for each test or
/// bench run, side by side on one server.
pub async fn fresh_schema(base: &str, prefix: &str) -> Result<String, FreshSchemaError> {
    use rand::RngExt;
    let (client, conn) =
        super::tls::connect(base)
            .await
            .map_err(|source| FreshSchemaError::Connect {
                base: redact(base),
                source,
            })?;
    let schema = format!("{prefix}_{}", hex::encode(rand::rng().random::<[u8; 6]>()));
    client
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .await
        .map_err(|source| FreshSchemaError::Create {
            base: redact(base),
            schema: schema.clone(),
            source,
        })?;
    drop(client);
    let _ = conn.await;
    let sep = if base.contains('?') { '&' } else { '?' };
    Ok(format!("{base}{sep}options=-c%20search_path%3D{schema}"))
}
