//! The gateway: the interface, path for path, in front of an upstream (the real service or the
//! sandbox). Agents use it as their base URL with their own keys. Reads and everything that cannot
//! change the account are forwarded unchanged and streamed; stagings are captured into the
//! supervisor's inbox ([`inbox`]); an agent's own confirm waits for a human; immediate trades are
//! refused unless the config allows them ([`policy`]). The supervisor API lives under `/gate/v1`
//! ([`api`]).
//!
//! Agents' keys are held in memory only, by the SHA-256 of the key, from their last accepted
//! request: the store and the log see that hash or its first 8 hex digits (the project's key
//! fingerprint), never a key.

pub mod api;
pub mod execute;
pub mod guard;
pub mod inbox;
pub mod journal;
pub mod link;
pub mod notify;
pub mod page;
pub mod policy;
pub mod request;
mod shared;
pub mod store;
pub mod trade;
mod upstream;
pub use upstream::Buffered;
use upstream::stream_back;

use crate::api::catalog::{Method as OpMethod, Operation};
use crate::api::routes::catalog_router;
use crate::secret::Secret;
use axum::Router;
use axum::body::Bytes;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use policy::{GateSettings, Policy};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use store::{SqliteStore, Store};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Every answer of a gateway carries this header, so a client can tell it talks to one.
pub const GATEWAY_HEADER: &str = "x-agentdesk-gateway";
/// Supervisor tokens start with this, so an agent's key is never looked up as a token.
pub const TOKEN_PREFIX: &str = "gst_";

/// The gateway's idea of now. Proposals expire by the upstream's clock, so tests that run the
/// sandbox on a test clock give the gateway the same clock.
pub type Now = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

#[derive(Debug, Clone)]
pub enum GateDb {
    File(PathBuf),
    /// Gone when the gateway stops; for tests and throwaway runs.
    Memory,
    /// A PostgreSQL URL (`postgres://user@host/db`): one database shared by several instances.
    Postgres(String),
}

impl GateDb {
    /// `postgres://` and `postgresql://` URLs name a PostgreSQL database, anything else a SQLite
    /// file.
    pub fn parse(s: &str) -> GateDb {
        if store::postgres::is_url(s) {
            GateDb::Postgres(s.to_string())
        } else {
            GateDb::File(PathBuf::from(s))
        }
    }

    /// Opens the store and brings its schema to this version.
    pub async fn open(&self) -> Result<Arc<dyn Store>, String> {
        let store: Arc<dyn Store> = match self.clone() {
            GateDb::Postgres(url) => Arc::new(
                store::PostgresStore::connect(&url)
                    .await
                    .map_err(|e| e.to_string())?,
            ),
            db => tokio::task::spawn_blocking(move || match db {
                GateDb::File(p) => SqliteStore::open(&p),
                _ => SqliteStore::open_in_memory(),
            })
            .await
            .map_err(|e| e.to_string())?
            .map(Arc::new)
            .map_err(|e| e.to_string())?,
        };
        Ok(store)
    }
}

pub struct GateConfig {
    pub addr: SocketAddr,
    /// Base URL of the upstream service, e.g. `http://127.0.0.1:8787`.
    pub upstream: String,
    pub db: GateDb,
    /// The gateway's own key for the account, used for the supervisor's reads.
    pub upstream_key: Option<Secret>,
    pub settings: GateSettings,
    /// The `[policy]` of the config; it replaces the stored one at start (journaled when it
    /// differs).
    pub policy: Policy,
    /// The `[[notify]]` destinations.
    pub notify: Vec<notify::Destination>,
    /// The top-level `public_url`: approval links are built on it, and notifications carry one
    /// only when it is set.
    pub public_url: Option<String>,
    pub now: Now,
}

impl GateConfig {
    pub fn new(addr: SocketAddr, upstream: impl Into<String>, db: GateDb) -> Self {
        GateConfig {
            addr,
            upstream: upstream.into(),
            db,
            upstream_key: None,
            settings: GateSettings::default(),
            policy: Policy::default(),
            notify: Vec::new(),
            public_url: None,
            now: Arc::new(Utc::now),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("invalid upstream URL {0:?}: it must start with http:// or https://")]
    Upstream(String),
    #[error("invalid gateway settings: {0}")]
    Settings(String),
    #[error("cannot open the gateway database {path}: {message}")]
    Database { path: String, message: String },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// A caller's key, as the gateway holds it.
#[derive(Clone)]
pub struct AgentKey {
    pub secret: Secret,
    /// SHA-256 (hex) of the key: the agent's identity in the store.
    pub hash: String,
}

impl AgentKey {
    pub fn new(secret: Secret) -> Self {
        let hash = sha256_hex(secret.expose());
        AgentKey { secret, hash }
    }

    /// The project's key fingerprint (the same value as [`Secret::fingerprint`]).
    pub fn fingerprint(&self) -> &str {
        &self.hash[..8]
    }
}

pub fn sha256_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

/// State shared by every request.
pub struct Gate {
    pub store: Arc<dyn Store>,
    http: reqwest::Client,
    upstream: String,
    upstream_key: Option<Secret>,
    pub settings: GateSettings,
    now: Now,
    addr: SocketAddr,
    notifier: notify::Notifier,
    public_url: Option<String>,
    /// Agents' keys by hash, with when each last made an accepted request. Memory only.
    keys: Mutex<HashMap<String, (Secret, DateTime<Utc>)>>,
}

impl Gate {
    pub fn now(&self) -> DateTime<Utc> {
        (self.now)()
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn key_of(&self, agent: &str) -> Option<Secret> {
        self.lock_keys().get(agent).map(|(k, _)| k.clone())
    }

    fn last_seen(&self, agent: &str) -> Option<DateTime<Utc>> {
        self.lock_keys().get(agent).map(|(_, t)| *t)
    }

    fn lock_keys(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Secret, DateTime<Utc>)>> {
        self.keys.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Holds the key of an agent whose request the upstream accepted. The first time after a start the agent
    /// is recorded (so the supervisor sees who is connected), and items a supervisor approved while
    /// the key was unknown run now.
    async fn remember(self: &Arc<Self>, agent: &AgentKey) {
        let now = self.now();
        let new = self
            .lock_keys()
            .insert(agent.hash.clone(), (agent.secret.clone(), now))
            .is_none();
        if !new {
            return;
        }
        if let Err(e) = self
            .store
            .agent_seen(&agent.hash, agent.fingerprint(), now)
            .await
        {
            tracing::warn!(agent = agent.fingerprint(), "cannot record the agent: {e}");
        }
        let gate = self.clone();
        let hash = agent.hash.clone();
        tokio::spawn(async move {
            if let Err(e) = inbox::run_waiting(&gate, &hash).await {
                tracing::warn!(
                    agent = &hash[..8],
                    "approved items did not run: {}",
                    e.message
                );
            }
        });
    }
}

/// An error the gateway answers itself, in the project's wire convention.
#[derive(Debug, Clone)]
pub struct GateError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub field: Option<String>,
    /// More members of the error object (a `policy_violation`'s `rule`, `rules`, `verdicts`).
    pub extra: Option<Box<Value>>,
    /// Seconds for a `Retry-After` header: when this call can be made again with a chance.
    pub retry_after: Option<u64>,
}

impl GateError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        GateError {
            status,
            code,
            message: message.into(),
            field: None,
            extra: None,
            retry_after: None,
        }
    }

    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    pub fn store(e: store::StoreError) -> Self {
        tracing::error!("{e}");
        GateError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "gateway_store_unavailable",
            "the gateway's database failed; try again",
        )
    }
}

impl IntoResponse for GateError {
    fn into_response(self) -> Response {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(field) = self.field {
            error["field"] = json!(field);
        }
        if let Some(Value::Object(extra)) = self.extra.map(|b| *b) {
            for (k, v) in extra {
                error[k] = v;
            }
        }
        let mut resp = (
            self.status,
            axum::Json(json!({"success": false, "error": error})),
        )
            .into_response();
        if let Some(secs) = self.retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (status, axum::Json(body)).into_response()
}

pub struct Gateway;

/// A running gateway.
pub struct Running {
    pub addr: SocketAddr,
    gate: Arc<Gate>,
    shutdown: Option<oneshot::Sender<()>>,
    server: JoinHandle<()>,
    poller: Option<JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(p) = &self.poller {
            p.abort();
        }
    }
}

impl Gateway {
    pub async fn start(config: GateConfig) -> Result<Running, StartError> {
        config.settings.validate().map_err(StartError::Settings)?;
        guard::validate(&config.policy, config.upstream_key.is_some())
            .map_err(|e| StartError::Settings(e.to_string()))?;
        for d in &config.notify {
            d.validate().map_err(StartError::Settings)?;
        }
        let public_url = config
            .public_url
            .as_deref()
            .map(link::validate_public_url)
            .transpose()
            .map_err(StartError::Settings)?;
        let upstream = config.upstream.trim().trim_end_matches('/').to_string();
        if !(upstream.starts_with("http://") || upstream.starts_with("https://")) {
            return Err(StartError::Upstream(config.upstream));
        }
        let path = path_for_errors(&config.db);
        let store = config
            .db
            .open()
            .await
            .map_err(|message| StartError::Database {
                path: path.clone(),
                message,
            })?;
        // A confirm a stopped gateway had in flight is tried again; the upstream runs a proposal
        // once, so a second confirm cannot execute it twice. On a shared store other instances
        // may be executing right now: only claims older than any live execution are taken over.
        let stale = store
            .shared()
            .then(|| (config.now)() - shared::stale_after(&config.settings));
        store
            .recover_executing(shared::RECOVERED.into(), stale)
            .await
            .map_err(|e| StartError::Database {
                path,
                message: e.to_string(),
            })?;
        let http = reqwest::Client::builder()
            .connect_timeout(config.settings.connect_timeout())
            .user_agent(format!("agentdesk-gateway/{}", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| StartError::Settings(e.to_string()))?;
        let listener = tokio::net::TcpListener::bind(config.addr)
            .await
            .map_err(|source| StartError::Bind {
                addr: config.addr,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| StartError::Bind {
            addr: config.addr,
            source,
        })?;
        let gate = Arc::new(Gate {
            store,
            http,
            upstream,
            upstream_key: config.upstream_key,
            settings: config.settings,
            now: config.now,
            addr,
            notifier: notify::Notifier::new(config.notify),
            public_url,
            keys: Mutex::new(HashMap::new()),
        });
        guard::set_policy(&gate, &config.policy, "config")
            .await
            .map_err(|e| StartError::Database {
                path: path_for_errors(&config.db),
                message: e.message,
            })?;
        let app = router(gate.clone());
        let (tx, rx) = oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            let result = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await;
            if let Err(e) = result {
                tracing::error!("gateway server stopped: {e}");
            }
        });
        let poller = gate
            .store
            .shared()
            .then(|| tokio::spawn(shared::poll(gate.clone())));
        Ok(Running {
            addr,
            gate,
            shutdown: Some(tx),
            server,
            poller,
        })
    }
}

fn path_for_errors(db: &GateDb) -> String {
    db.shown()
}

impl GateDb {
    /// The file path or the URL without its password, for messages.
    pub fn shown(&self) -> String {
        match self {
            GateDb::File(p) => p.display().to_string(),
            GateDb::Memory => ":memory:".into(),
            GateDb::Postgres(url) => store::postgres::redact(url),
        }
    }
}

impl Running {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Puts a policy in force (a config reload on SIGHUP): refused whole, keeping the old one,
    /// when it is not valid for this gateway.
    pub async fn set_policy(&self, policy: &Policy, by: &str) -> Result<bool, String> {
        guard::validate(policy, self.gate.upstream_key.is_some()).map_err(|e| e.to_string())?;
        guard::set_policy(&self.gate, policy, by)
            .await
            .map_err(|e| e.message)
    }

    /// Mints a supervisor token (stored hashed; the plain token is returned this once).
    pub async fn mint_token(&self, label: &str) -> Result<Secret, String> {
        mint_token(self.gate.store.as_ref(), label, self.gate.now()).await
    }

    /// Stops at once, as a `kill -9` would: connections are dropped mid-request, nothing is
    /// cleaned up, and items this instance had claimed stay claimed until another instance (or
    /// the next start) takes them over.
    pub async fn abort(mut self) {
        if let Some(p) = self.poller.take() {
            p.abort();
            let _ = p.await;
        }
        self.server.abort();
        let _ = (&mut self.server).await;
    }

    /// Stops accepting requests, lets in-flight ones finish, and closes the database.
    pub async fn shutdown(mut self) {
        if let Some(p) = self.poller.take() {
            p.abort();
            let _ = p.await;
        }
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let _ = (&mut self.server).await;
    }
}

/// A new supervisor token: `gst_` + 32 hex digits, stored as its SHA-256.
pub async fn mint_token(
    store: &dyn Store,
    label: &str,
    now: DateTime<Utc>,
) -> Result<Secret, String> {
    use rand::RngExt;
    let bytes: [u8; 16] = rand::rng().random();
    let token = format!("{TOKEN_PREFIX}{}", hex::encode(bytes));
    store
        .add_token(&sha256_hex(&token), label, now)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Secret::new(token))
}

fn router(gate: Arc<Gate>) -> Router {
    let catalog = {
        let gate = gate.clone();
        catalog_router(move |op, req| handle(gate.clone(), op, req))
    };
    catalog
        .merge(api::router(gate.clone()))
        .merge(link::router(gate.clone()))
        .merge(page::router(gate))
        .fallback(|req: Request| async move {
            GateError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                format!(
                    "no operation at {} {}; GET /api/agent/openapi.json lists them",
                    req.method(),
                    req.uri().path()
                ),
            )
        })
        .method_not_allowed_fallback(|req: Request| async move {
            GateError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                format!(
                    "{} is not an operation at {}",
                    req.method(),
                    req.uri().path()
                ),
            )
        })
        .layer(axum::middleware::map_response(|mut resp: Response| async {
            resp.headers_mut()
                .insert(GATEWAY_HEADER, HeaderValue::from_static("1"));
            resp
        }))
}

fn too_large(limit: usize) -> Response {
    GateError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        format!("request bodies are limited to {limit} bytes"),
    )
    .into_response()
}

/// What a request to a catalog path is, once its body is read.
pub struct Incoming {
    pub op: &'static Operation,
    pub method: reqwest::Method,
    pub path_and_query: String,
    pub headers: HeaderMap,
    /// For a POST, the checked request serialised again: what goes upstream.
    pub body: Bytes,
    pub agent: Option<AgentKey>,
    /// The strict reading of a POST's body ([`request::read`]).
    pub checked: Option<request::Checked>,
}

impl Incoming {
    pub fn parsed(&self) -> &request::Parsed {
        static OTHER: request::Parsed = request::Parsed::Other;
        self.checked.as_ref().map(|c| &c.parsed).unwrap_or(&OTHER)
    }

    pub fn canonical(&self) -> Value {
        self.checked
            .as_ref()
            .map(|c| c.canonical.clone())
            .unwrap_or(Value::Null)
    }
}

/// The headers of a POST that go upstream with the checked body: those that say something about
/// the operation the interface defines. Anything else (a `Content-Encoding` that would make the
/// service read other bytes, a header the gateway never judged) stays here.
const POST_HEADERS: [&str; 7] = [
    "idempotency-key",
    "x-service-fanout",
    "payment-signature",
    "x-request-id",
    "accept",
    "accept-language",
    "user-agent",
];

fn post_headers(from: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for name in POST_HEADERS {
        for v in from.get_all(name) {
            out.append(HeaderName::from_static(name), v.clone());
        }
    }
    out.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    out
}

impl From<request::ReadError> for GateError {
    fn from(e: request::ReadError) -> Self {
        match e {
            request::ReadError::Invalid { field, message } => {
                GateError::new(StatusCode::BAD_REQUEST, "invalid_body", message).with_field(field)
            }
            request::ReadError::Query { name, message } => {
                GateError::new(StatusCode::BAD_REQUEST, "invalid_query", message).with_field(name)
            }
            request::ReadError::UnknownTool { name } => {
                let hint = request::near_tool(&name)
                    .map(|op| {
                        format!(
                            " (the catalog's name is {:?}, byte for byte)",
                            op.tool_name()
                        )
                    })
                    .unwrap_or_default();
                GateError::new(
                    StatusCode::FORBIDDEN,
                    "unknown_tool",
                    format!(
                        "no tool is named {name:?}{hint}; the gateway forwards only tools of the \
                         catalog (GET /api/delegated/mcp/capabilities), matched exactly"
                    ),
                )
                .with_field("name")
            }
        }
    }
}

async fn handle(gate: Arc<Gate>, op: &'static Operation, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let limit = gate.settings.max_body_bytes;
    if let Some(len) = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        && len > limit
    {
        return too_large(limit);
    }
    let body = match axum::body::to_bytes(body, limit).await {
        Ok(b) => b,
        Err(_) => return too_large(limit),
    };
    if op.name == "get_openapi" {
        return json_response(StatusCode::OK, &api::openapi(&gate));
    }
    let (checked, body, headers) = if op.method == OpMethod::Post {
        let checked = match request::check_query(op, parts.uri.query())
            .and_then(|()| request::read(op, &body))
        {
            Ok(c) => c,
            Err(e) => return GateError::from(e).into_response(),
        };
        let bytes = Bytes::from(checked.bytes());
        let mut headers = post_headers(&parts.headers);
        if let Some(v) = parts.headers.get("x-api-key") {
            headers.insert("x-api-key", v.clone());
        }
        (Some(checked), bytes, headers)
    } else {
        (None, Bytes::new(), parts.headers.clone())
    };
    let key = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(|k| Secret::new(k.to_string()));
    let incoming = Incoming {
        op,
        method: if op.method == OpMethod::Post {
            reqwest::Method::POST
        } else {
            reqwest::Method::GET
        },
        path_and_query: parts
            .uri
            .path_and_query()
            .map(|p| p.as_str().to_string())
            .unwrap_or_else(|| parts.uri.path().to_string()),
        headers,
        body,
        agent: key.map(AgentKey::new),
        checked,
    };
    let result = match &incoming.agent {
        Some(agent) if agent.secret.expose().starts_with(TOKEN_PREFIX) => {
            // A token that is not ours is refused here rather than sent to the upstream: it is
            // some gateway's secret, never an upstream key.
            match api::supervisor(&gate, &incoming.headers).await {
                Ok(_) => supervisor_read(&gate, incoming).await,
                Err(e) => Err(e),
            }
        }
        _ => route(&gate, incoming).await,
    };
    result.unwrap_or_else(IntoResponse::into_response)
}

/// The supervisor's console reads the account with the gateway's own key.
async fn supervisor_read(gate: &Arc<Gate>, incoming: Incoming) -> Result<Response, GateError> {
    if incoming.op.method != OpMethod::Get {
        return Err(GateError::new(
            StatusCode::FORBIDDEN,
            "supervisor_token_read_only",
            "a supervisor token reads the account through the gateway; changes go through the inbox (/gate/v1)",
        ));
    }
    let Some(key) = gate.upstream_key.clone() else {
        return Err(GateError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "upstream_key_not_configured",
            "this gateway has no key of its own for the account; start it with --upstream-key-env VAR",
        ));
    };
    forward(gate, &incoming, &key).await
}

async fn route(gate: &Arc<Gate>, incoming: Incoming) -> Result<Response, GateError> {
    use request::Parsed;
    let name = incoming.op.name;
    match (name, incoming.parsed()) {
        ("confirm_trade", _) => inbox::confirm(gate, &incoming).await,
        ("close_position", Parsed::Close(c)) if c.proposal_id.is_some() => {
            inbox::confirm(gate, &incoming).await
        }
        ("propose_trade", _) => inbox::stage(gate, &incoming, store::Exec::Confirm).await,
        ("close_position", _) => inbox::stage(gate, &incoming, store::Exec::Close).await,
        ("execute_mcp_tool", _) => inbox::tool(gate, &incoming).await,
        _ if policy::IMMEDIATE.contains(&name) => {
            let (agent, trade) = immediate(gate, &incoming).await?;
            let resp = pass_through(gate, &incoming).await?;
            if resp.status().is_success()
                && !trade.reduces
                && let Some(notional) = trade.notional
            {
                gate.store
                    .add_executed(&agent, gate.now(), notional)
                    .await
                    .map_err(GateError::store)?;
            }
            Ok(resp)
        }
        _ => pass_through(gate, &incoming).await,
    }
}

/// Refuses an immediate trade unless the config lets this agent trade without staging, the kill
/// switch lets it through and the trade that will execute keeps to every rule. Returns the agent
/// and that trade.
async fn immediate(
    gate: &Arc<Gate>,
    incoming: &Incoming,
) -> Result<(String, trade::Trade), GateError> {
    let refuse = || {
        GateError::new(
            StatusCode::FORBIDDEN,
            "staging_required_by_supervisor",
            format!(
                "{} trades without a human's approval, and this gateway's supervisor requires one: \
                 stage it with POST /api/delegated/propose and the supervisor approves it in agentdesk",
                incoming.op.name
            ),
        )
    };
    let Some(agent) = &incoming.agent else {
        return Err(refuse());
    };
    if !guard::allows_immediate(gate, &agent.hash).await? {
        return Err(refuse());
    }
    let trade = guard::immediate_trade(gate, agent, incoming).await?;
    guard::judge(gate, &agent.hash, &trade).await?;
    Ok((agent.hash.clone(), trade))
}

/// Forwards with the caller's own credentials and streams the answer back.
async fn pass_through(gate: &Arc<Gate>, incoming: &Incoming) -> Result<Response, GateError> {
    let resp = gate
        .send(
            incoming.method.clone(),
            &incoming.path_and_query,
            &incoming.headers,
            incoming.agent.as_ref().map(|a| &a.secret),
            incoming.body.clone(),
        )
        .await?;
    // Only an accepted request proves the key: a refused one must not replace a good key in
    // memory, nor add an agent.
    if let Some(agent) = &incoming.agent
        && resp.status().is_success()
    {
        gate.remember(agent).await;
    }
    Ok(stream_back(resp))
}

async fn forward(
    gate: &Arc<Gate>,
    incoming: &Incoming,
    key: &Secret,
) -> Result<Response, GateError> {
    let resp = gate
        .send(
            incoming.method.clone(),
            &incoming.path_and_query,
            &incoming.headers,
            Some(key),
            incoming.body.clone(),
        )
        .await?;
    Ok(stream_back(resp))
}
