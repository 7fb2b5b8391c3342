//! The embedded picture `agentdesk` starts when no service is configured: the sandbox, a
//! supervision gateway in front of it, and a demo agent that stages proposals through the gateway
//! as any agent would. The composition root of the two servers for the console: `main.rs` hands
//! the console the gateway's URL and keys, so the console never starts a server itself.

use crate::api::model::{Discovery, TradeSignal};
use crate::api::{Client, Scope};
use crate::gateway::{self, GateConfig, GateDb, Gateway};
use crate::sandbox::{self, DbLocation, Sandbox, SandboxConfig, Settings};
use crate::secret::Secret;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use tokio::task::JoinHandle;

/// The gateway's port when it is free; else the next free one of the following few.
pub const GATE_PORT: u16 = 8788;
const PORTS_TRIED: u16 = 20;

/// The name the demo agent goes by in the gateway's inbox.
pub const DEMO_AGENT: &str = "demo-agent";

/// The demo agent's trades: small, at low leverage, whatever the paper account holds.
const DEMO_SIZE_USD: f64 = 500.0;
const DEMO_LEVERAGE: u32 = 2;

#[derive(Debug, Clone)]
pub struct EmbeddedConfig {
    /// Holds `sandbox.db` and `gateway.db`.
    pub data_dir: PathBuf,
    pub settings: Settings,
    /// Where the gateway listens: [`GATE_PORT`] on loopback, or the next free port.
    pub gate_host: std::net::IpAddr,
    pub gate_port: u16,
    /// The demo agent's time between proposals; None: no demo agent.
    pub demo_agent: Option<Duration>,
    /// The demo agent's first proposal comes this soon, so a newcomer sees one at once.
    pub demo_first: Duration,
    /// The config file's `[gate]`, `[policy]` and `[[notify]]` tables, as `agentdesk gate` reads
    /// them: the embedded gateway applies them too.
    pub gate_settings: gateway::policy::GateSettings,
    pub policy: gateway::policy::Policy,
    pub notify: Vec<gateway::notify::Destination>,
    /// The config file's top-level `public_url`, on which approval links are built.
    pub public_url: Option<String>,
}

impl EmbeddedConfig {
    pub fn new(data_dir: PathBuf, settings: Settings) -> Self {
        EmbeddedConfig {
            data_dir,
            settings,
            gate_host: [127, 0, 0, 1].into(),
            gate_port: GATE_PORT,
            demo_agent: Some(Duration::from_secs(120)),
            demo_first: Duration::from_secs(8),
            gate_settings: Default::default(),
            policy: Default::default(),
            notify: Vec::new(),
            public_url: None,
        }
    }
}

/// The running picture. Drop order does not matter: [`Embedded::shutdown`] stops it in order.
pub struct Embedded {
    pub sandbox: sandbox::Running,
    pub gateway: gateway::Running,
    /// The console's own key on the sandbox's demo account: its reads and its own stagings go
    /// through the gateway with it, like any agent's.
    pub console_key: Secret,
    /// A supervisor token of the gateway, for the console's `/gate/v1` calls.
    pub gate_token: Secret,
    pub sandbox_db: PathBuf,
    pub gateway_db: PathBuf,
    demo: Option<JoinHandle<()>>,
}

/// Why the embedded picture did not start; what had started is stopped.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    #[error("cannot create the data directory {}: {source}", .dir.display())]
    DataDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Sandbox(#[from] sandbox::StartError),
    #[error("{0}")]
    Key(#[from] sandbox::CreateKeyError),
    #[error("cannot start the embedded gateway: {0}")]
    Gateway(gateway::StartError),
    #[error("{0}")]
    Token(#[source] gateway::store::StoreError),
    #[error("{0}")]
    Client(#[from] crate::api::ApiError),
}

impl Embedded {
    pub async fn start(config: EmbeddedConfig) -> Result<Embedded, EmbeddedError> {
        std::fs::create_dir_all(&config.data_dir).map_err(|source| EmbeddedError::DataDir {
            dir: config.data_dir.clone(),
            source,
        })?;
        let sandbox_db = config.data_dir.join("sandbox.db");
        let gateway_db = config.data_dir.join("gateway.db");
        let mut sc = SandboxConfig::new(
            "127.0.0.1:0".parse().expect("literal address"),
            DbLocation::File(sandbox_db.clone()),
        );
        sc.settings = config.settings.clone();
        let sandbox = Sandbox::start(sc).await?;
        // The database keeps only key hashes, so every start mints its keys afresh.
        let console_key = sandbox
            .create_key(Scope::Legacy, "embedded console session")
            .await?;
        let gateway = match start_gateway(&config, &sandbox, &console_key, &gateway_db).await {
            Ok(g) => g,
            Err(e) => {
                sandbox.shutdown().await;
                return Err(e);
            }
        };
        let gate_token = gateway
            .mint_token("embedded console")
            .await
            .map_err(EmbeddedError::Token)?;
        let demo = match config.demo_agent {
            None => None,
            Some(every) => {
                let key = sandbox.create_key(Scope::McpMutate, "demo agent").await?;
                let agent = DemoAgent {
                    client: Client::new(&gateway.base_url(), Some(key.clone()))?,
                    fingerprint: key.fingerprint(),
                    gateway_db: gateway_db.clone(),
                    first: config.demo_first,
                    every,
                };
                Some(tokio::spawn(agent.run()))
            }
        };
        Ok(Embedded {
            sandbox,
            gateway,
            console_key,
            gate_token,
            sandbox_db,
            gateway_db,
            demo,
        })
    }

    pub fn gateway_url(&self) -> String {
        self.gateway.base_url()
    }

    pub fn demo_agent(&self) -> Option<&'static str> {
        self.demo.as_ref().map(|_| DEMO_AGENT)
    }

    pub async fn shutdown(self) {
        if let Some(demo) = self.demo {
            demo.abort();
            let _ = demo.await;
        }
        self.gateway.shutdown().await;
        self.sandbox.shutdown().await;
    }
}

async fn start_gateway(
    config: &EmbeddedConfig,
    sandbox: &sandbox::Running,
    console_key: &Secret,
    db: &std::path::Path,
) -> Result<gateway::Running, EmbeddedError> {
    let ports = (0..PORTS_TRIED).filter_map(|i| config.gate_port.checked_add(i));
    // Port 0 last: any free port, whose error (if even that fails) is the one reported.
    for port in ports {
        match Gateway::start(gateway_config(config, sandbox, console_key, db, port)).await {
            Ok(running) => return Ok(running),
            Err(gateway::StartError::Bind { .. }) => {}
            Err(e) => return Err(EmbeddedError::Gateway(e)),
        }
    }
    Gateway::start(gateway_config(config, sandbox, console_key, db, 0))
        .await
        .map_err(EmbeddedError::Gateway)
}

fn gateway_config(
    config: &EmbeddedConfig,
    sandbox: &sandbox::Running,
    console_key: &Secret,
    db: &std::path::Path,
    port: u16,
) -> GateConfig {
    let mut gc = GateConfig::new(
        SocketAddr::new(config.gate_host, port),
        sandbox.base_url(),
        GateDb::File(db.to_path_buf()),
    );
    // The gateway's own key for the account: what a supervisor token reads with.
    gc.upstream_key = Some(console_key.clone());
    gc.settings = config.gate_settings.clone();
    // The embedded gateway knows its upstream's defaults: they are this sandbox's settings.
    // What the config file states under [gate.defaults] still wins.
    gc.settings.defaults = sandbox_defaults(&config.settings).over(&gc.settings.defaults);
    // The console's own immediate trades (`/trade`) are the supervisor's, not an agent's.
    gc.settings.allow_immediate.push(console_key.fingerprint());
    gc.policy = config.policy.clone();
    gc.notify = config.notify.clone();
    gc.public_url = config.public_url.clone();
    gc
}

/// What the sandbox does with a trade request that leaves sizing or leverage out.
pub fn sandbox_defaults(settings: &Settings) -> gateway::trade::Defaults {
    gateway::trade::Defaults {
        trade_usd: Some(settings.default_trade_usd),
        leverage: Some(f64::from(settings.default_leverage)),
        platform_leverage: Some(1.0),
        platform_sizing_mode: Some("account".into()),
    }
}

/// An agent like any other: an HTTP client of the gateway with its own key. It stages a
/// proposal from a sandbox strategy's live signal now and then, and never confirms (the gateway
/// would refuse it: the supervisor approves in the console).
struct DemoAgent {
    client: Client,
    fingerprint: String,
    gateway_db: PathBuf,
    first: Duration,
    every: Duration,
}

impl DemoAgent {
    async fn run(self) {
        // The gateway learns of an agent at its first request: introduce it, then name it.
        let mut named = false;
        let mut round = 0usize;
        let mut wait = self.first;
        loop {
            tokio::time::sleep(wait).await;
            if !named {
                named = self.introduce().await;
            }
            wait = match self.stage(round).await {
                Ok(()) => {
                    round += 1;
                    self.every
                }
                // The sandbox may still be computing its live strategies: try again soon.
                Err(Skip::NoSignalYet) => self.every.min(Duration::from_secs(5)),
                // Refused (a policy, the kill switch, the quota): the next round, as planned.
                Err(Skip::Refused(e)) => {
                    tracing::info!("demo agent: no proposal this time: {e}");
                    self.every
                }
            };
        }
    }

    async fn introduce(&self) -> bool {
        if let Err(e) = self.client.whoami(false).await {
            tracing::warn!("demo agent: whoami through the gateway failed: {e}");
            return false;
        }
        use crate::gateway::store::{SqliteStore, Store};
        let path = self.gateway_db.clone();
        let named = match tokio::task::spawn_blocking(move || SqliteStore::open(&path)).await {
            Ok(Ok(store)) => store
                .name_agent(&self.fingerprint, DEMO_AGENT)
                .await
                .map_err(|e| e.to_string()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match named {
            Ok(n) => n > 0,
            Err(e) => {
                tracing::warn!("demo agent: cannot name it in the gateway's database: {e}");
                false
            }
        }
    }

    async fn stage(&self, round: usize) -> Result<(), Skip> {
        let live = self
            .client
            .discover_top_live(None, Some(20))
            .await
            .map_err(|e| match e {
                e if e.is_transient() => Skip::NoSignalYet,
                e => Skip::Refused(e.to_string()),
            })?;
        let signal = pick_signal(&live, round).ok_or(Skip::NoSignalYet)?;
        let proposal = self
            .client
            .propose_trade(&signal)
            .await
            .map_err(|e| Skip::Refused(e.to_string()))?;
        tracing::info!(
            "demo agent staged {} ({} {:?})",
            proposal.proposal_id,
            signal.a.as_deref().unwrap_or("?"),
            signal.d
        );
        Ok(())
    }
}

/// Why a round staged nothing.
enum Skip {
    /// Discovery is still computing, or no strategy points anywhere yet.
    NoSignalYet,
    Refused(String),
}

/// The `round`-th of the live strategies that point somewhere now (their current target, else
/// their latest signal), as a small market trade in that direction.
pub fn pick_signal(live: &Discovery, round: usize) -> Option<TradeSignal> {
    let candidates: Vec<(String, String, String)> = live
        .rows
        .iter()
        .filter_map(|r| {
            let extra = &r.stats.extra;
            let target = extra
                .get("currentTarget")
                .and_then(|v| v.as_str())
                .filter(|t| matches!(*t, "long" | "short"))
                .or_else(|| {
                    extra
                        .get("lastSignal")
                        .and_then(|s| s.get("direction"))
                        .and_then(|v| v.as_str())
                        .filter(|t| matches!(*t, "long" | "short"))
                })?;
            let coin = r.pair.split(['-', '/']).next()?.trim().to_ascii_uppercase();
            (!coin.is_empty()).then(|| (r.strategy_id.clone(), coin, target.to_string()))
        })
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let (strategy, coin, direction) = &candidates[round % candidates.len()];
    Some(TradeSignal {
        strategy: Some(format!("{DEMO_AGENT}:{strategy}")),
        a: Some(format!("{coin}USDT")),
        d: Some(direction.clone()),
        o: Some("market".into()),
        size_usd: Some(DEMO_SIZE_USD),
        leverage: Some(DEMO_LEVERAGE),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn live(rows: serde_json::Value) -> Discovery {
        serde_json::from_value(json!({ "results": rows })).unwrap()
    }

    #[test]
    fn picks_strategies_that_point_somewhere_in_turn() {
        let d = live(json!([
            {"strategyId": "flat_one", "pair": "BTC-USD", "currentTarget": "flat", "lastSignal": null},
            {"strategyId": "ema_cross", "pair": "ETH-USD", "currentTarget": "short"},
            {"strategyId": "rsi", "pair": "BTC-USD", "currentTarget": "flat",
             "lastSignal": {"direction": "long", "time": "2026-01-01T00:00:00Z"}},
        ]));
        let first = pick_signal(&d, 0).unwrap();
        assert_eq!(first.a.as_deref(), Some("ETHUSDT"));
        assert_eq!(first.d.as_deref(), Some("short"));
        assert_eq!(first.strategy.as_deref(), Some("demo-agent:ema_cross"));
        assert_eq!(first.size_usd, Some(DEMO_SIZE_USD));
        assert_eq!(first.leverage, Some(DEMO_LEVERAGE));
        let second = pick_signal(&d, 1).unwrap();
        assert_eq!(
            (second.a.as_deref(), second.d.as_deref()),
            (Some("BTCUSDT"), Some("long"))
        );
        assert_eq!(pick_signal(&d, 2).unwrap().a, first.a, "it cycles");
    }

    #[test]
    fn no_signal_no_proposal() {
        let d = live(json!([
            {"strategyId": "flat_one", "pair": "BTC-USD", "currentTarget": "flat", "lastSignal": null}
        ]));
        assert!(pick_signal(&d, 0).is_none());
        assert!(pick_signal(&live(json!([])), 3).is_none());
    }
}
