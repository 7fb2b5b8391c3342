//! Starting sandboxes for tests: a file database in a temp dir, a test clock, one key per scope.

use agentdesk::api::Client;
use agentdesk::api::Scope;
use agentdesk::sandbox::{DbLocation, Running, Sandbox, SandboxConfig, Settings, TestClock};
use agentdesk::secret::Secret;
use chrono::{DateTime, Utc};
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

pub async fn start() -> TestServer {
    start_with(Settings::default()).await
}

pub async fn start_with(settings: Settings) -> TestServer {
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
    config.settings = settings;
    config.clock = Arc::new(clock);
    Sandbox::start(config).await.expect("sandbox starts")
}

impl TestServer {
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
