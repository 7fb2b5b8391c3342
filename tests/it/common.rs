//! Starting sandboxes for tests: a file database in a temp dir, a test clock, one key per scope.

use agentdesk::api::Client;
use agentdesk::api::Scope;
use agentdesk::api::eip712;
use agentdesk::api::model::BuilderFeeApproval;
use agentdesk::sandbox::{DbLocation, Running, Sandbox, SandboxConfig, Settings, TestClock};
use agentdesk::secret::Secret;
use chrono::{DateTime, Utc};
use k256::ecdsa::SigningKey;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// A fixed start so tests see the same prices every run.
pub fn t0() -> DateTime<Utc> {
    "2026-06-01T12:00:00Z".parse().unwrap()
}

pub struct TestServer {
    pub running: Running,
    pub clock: TestClock,
    pub keys: HashMap<Scope, Secret>,
    pub db: PathBuf,
    pub settings: Settings,
    _dir: Arc<tempfile::TempDir>,
}

/// A sandbox whose demo account has approved the builder fee (through the real HTTP flow), so
/// platform orders, closes and cancels work.
pub async fn start() -> TestServer {
    start_with(Settings::default()).await
}

pub async fn start_with(settings: Settings) -> TestServer {
    let server = start_unapproved_with(settings).await;
    server.approve_builder_fee().await;
    // The approval is audited like every mutate call; tests that read the audit log start from
    // an empty one (tests/it/builder_fee.rs checks that row).
    agentdesk::sandbox::store::Store::open(&server.db)
        .unwrap()
        .conn
        .execute(
            "DELETE FROM audit_logs WHERE operation = 'approve_builder_fee'",
            [],
        )
        .unwrap();
    server
}

/// A sandbox whose demo account has not approved the builder fee: platform orders, closes and
/// cancels answer 409 `builder_fee_not_approved`.
pub async fn start_unapproved() -> TestServer {
    start_unapproved_with(Settings::default()).await
}

pub async fn start_unapproved_with(settings: Settings) -> TestServer {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let db = dir.path().join("sandbox.db");
    let clock = TestClock::new(t0());
    let running = launch(&db, settings.clone(), clock.clone()).await;
    let keys = running.new_keys.iter().cloned().collect();
    TestServer {
        running,
        clock,
        keys,
        db,
        settings,
        _dir: dir,
    }
}

async fn launch(db: &std::path::Path, settings: Settings, clock: TestClock) -> Running {
    let mut config = SandboxConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        DbLocation::File(db.to_path_buf()),
    );
    // A hundred test sandboxes need not each precompute every discovery cache; the discovery
    // tests compute on demand, as a cold cache does.
    config.settings = Settings {
        discovery_warmup: false,
        ..settings
    };
    config.clock = Arc::new(clock);
    Sandbox::start(config).await.expect("sandbox starts")
}

impl TestServer {
    /// The demo account's paper wallet key (returned once, when the database was created).
    pub fn wallet_key(&self) -> SigningKey {
        let key = self
            .running
            .demo_wallet_key
            .as_ref()
            .expect("a new database returns the demo wallet's key");
        let bytes = hex::decode(key.expose().trim_start_matches("0x")).unwrap();
        SigningKey::from_slice(&bytes).unwrap()
    }

    /// Approves the builder fee for the demo account: GET the payload, sign its typed data with
    /// the demo wallet, POST the signature.
    pub async fn approve_builder_fee(&self) {
        approve_builder_fee_with(&self.legacy(), &self.running.wallet, &self.wallet_key()).await;
    }

    pub fn base_url(&self) -> String {
        self.running.base_url()
    }

    pub fn key(&self, scope: Scope) -> Secret {
        self.keys[&scope].clone()
    }

    pub fn client(&self, scope: Scope) -> Client {
        Client::new(&self.base_url(), Some(self.key(scope))).unwrap()
    }

    pub fn legacy(&self) -> Client {
        self.client(Scope::Legacy)
    }

    /// A raw HTTP client for requests the typed client would never send.
    pub fn http(&self) -> reqwest::Client {
        reqwest::Client::new()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url())
    }

    /// Stops the server and starts a new one on the same database and clock.
    pub async fn restart(self) -> TestServer {
        let TestServer {
            running,
            clock,
            keys,
            db,
            settings,
            _dir,
        } = self;
        running.shutdown().await;
        let running = launch(&db, settings.clone(), clock.clone()).await;
        assert!(
            running.new_keys.is_empty(),
            "an existing database keeps its keys"
        );
        TestServer {
            running,
            clock,
            keys,
            db,
            settings,
            _dir,
        }
    }
}

impl TestServer {
    pub fn clock_now(&self) -> DateTime<Utc> {
        use agentdesk::sandbox::Clock;
        self.clock.now()
    }
}

/// The builder-fee flow over HTTP for any account: payload → sign with `key` → approve.
pub async fn approve_builder_fee_with(client: &Client, wallet: &str, key: &SigningKey) {
    let payload = client.approve_builder_fee_payload(wallet).await.unwrap();
    assert!(!payload.authorized, "{payload:?}");
    let nonce = payload
        .nonce
        .expect("an unauthorized payload carries a nonce");
    let td: eip712::TypedData = serde_json::from_value(payload.typed_data.unwrap()).unwrap();
    let signature = eip712::sign_digest(key, &eip712::signing_hash(&td).unwrap());
    let status = client
        .approve_builder_fee(&BuilderFeeApproval {
            venue_wallet: wallet.to_string(),
            nonce,
            signature: serde_json::Value::String(signature),
            signature_chain_id: eip712::SIGNATURE_CHAIN_ID.into(),
        })
        .await
        .unwrap();
    assert!(status.authorized, "{status:?}");
}

/// A gateway in front of a test sandbox, in-process, on its own database and the sandbox's clock
/// (proposals expire by the upstream's time).
pub async fn start_gateway(
    upstream: &str,
    clock: &TestClock,
    db: &std::path::Path,
    settings: agentdesk::gateway::rules::policy::GateSettings,
    upstream_key: Option<Secret>,
) -> agentdesk::gateway::Running {
    use agentdesk::gateway::{GateConfig, GateDb, Gateway};
    use agentdesk::sandbox::Clock;
    let mut config = GateConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        upstream,
        GateDb::File(db.to_path_buf()),
    );
    let clock = clock.clone();
    config.now = Arc::new(move || clock.now());
    config.settings = settings;
    config.settings.defaults = sandbox_defaults().over(&config.settings.defaults);
    config.upstream_key = upstream_key;
    Gateway::start(config).await.expect("gateway starts")
}

/// A gateway in front of `upstream` on the sandbox's clock, configured by `f` beyond that.
pub async fn start_gateway_with(
    upstream: &str,
    clock: &TestClock,
    db: &std::path::Path,
    f: impl FnOnce(&mut agentdesk::gateway::GateConfig),
) -> agentdesk::gateway::Running {
    use agentdesk::gateway::{GateConfig, GateDb, Gateway};
    use agentdesk::sandbox::Clock;
    let mut config = GateConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        upstream,
        GateDb::File(db.to_path_buf()),
    );
    let clock = clock.clone();
    config.now = Arc::new(move || clock.now());
    config.settings.defaults = sandbox_defaults();
    f(&mut config);
    Gateway::start(config).await.expect("gateway starts")
}

/// The test sandbox's defaults, as a supervisor states them for its gateway.
pub fn sandbox_defaults() -> agentdesk::gateway::model::trade::Defaults {
    agentdesk::embedded::sandbox_defaults(&agentdesk::sandbox::Settings::default())
}

/// A loopback port that refuses connections for as long as the returned socket lives: bound, so
/// no other test's server can be given it, but not listening. A port bound and then freed could
/// be handed to a server another test starts meanwhile, which would then answer.
pub fn refused_port() -> (tokio::net::TcpSocket, u16) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = socket.local_addr().unwrap().port();
    (socket, port)
}
