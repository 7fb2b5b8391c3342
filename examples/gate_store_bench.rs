//! Approvals per second through the gateway: one instance on SQLite against two instances sharing
//! one PostgreSQL database, in the same run, in front of one in-process sandbox. Run by
//! `benches/gate_store_bench.sh` (release build, a throwaway PostgreSQL server); by hand:
//!
//! `AGENTDESK_BENCH_PG=postgres://... cargo run --release --example gate_store_bench -- [items] [concurrency] [rounds]`
//!
//! One approval is the supervisor's `POST /gate/v1/inbox/{id}/approve` answered with the item
//! executed: the pending → approved transition (journaled), the claim, the upstream confirm and
//! the executed transition. Items are staged before the clock starts; each round stages fresh ones
//! and alternates which store goes first.

use agentdesk::api::model::TradeSignal;
use agentdesk::api::{Client, Scope};
use agentdesk::gateway::{GateConfig, GateDb, Gateway, Running};
use agentdesk::sandbox::{DbLocation, Sandbox, SandboxConfig, Settings};
use agentdesk::secret::Secret;
use std::time::Instant;

fn arg(n: usize, default: usize) -> usize {
    std::env::args()
        .nth(n)
        .map(|v| {
            v.parse()
                .expect("items, concurrency and rounds are whole numbers")
        })
        .unwrap_or(default)
}

async fn fresh_schema(base: &str) -> String {
    agentdesk::gateway::store::postgres::fresh_schema(base, "bench")
        .await
        .unwrap_or_else(|e| panic!("AGENTDESK_BENCH_PG: {e}"))
}

async fn gateway(upstream: &str, db: GateDb) -> Running {
    Gateway::start(GateConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        upstream,
        db,
    ))
    .await
    .expect("gateway starts")
}

/// Stages `items` proposals through the instances in turn, then approves them all with
/// `concurrency` supervisors spread over the instances. Returns approvals per second.
async fn round(gates: &[Running], key: &Secret, items: usize, concurrency: usize) -> f64 {
    let token = gates[0].mint_token("bench").await.unwrap();
    let mut staged = Vec::with_capacity(items);
    let agents: Vec<Client> = gates
        .iter()
        .map(|g| Client::new(&g.base_url(), Some(key.clone())).unwrap())
        .collect();
    let who = agents[0].whoami(false).await.unwrap();
    for a in &agents[1..] {
        a.whoami(false).await.unwrap();
    }
    let signal = TradeSignal {
        id: Some(who.messenger_id.clone()),
        strategy: Some("Bench".into()),
        a: Some("BTCUSDT".into()),
        d: Some("long".into()),
        o: Some("market".into()),
        size_usd: Some(20.0),
        ..Default::default()
    };
    for i in 0..items {
        let p = agents[i % agents.len()]
            .propose_trade(&signal)
            .await
            .expect("staging");
        staged.push(p.proposal_id);
    }
    let http = reqwest::Client::new();
    let queue = std::sync::Arc::new(std::sync::Mutex::new(staged));
    let bases: Vec<String> = gates.iter().map(Running::base_url).collect();
    let started = Instant::now();
    let workers = (0..concurrency).map(|w| {
        let (queue, http, token) = (queue.clone(), http.clone(), token.clone());
        let base = bases[w % bases.len()].clone();
        tokio::spawn(async move {
            loop {
                let Some(p) = queue.lock().unwrap().pop() else {
                    return;
                };
                let resp = http
                    .post(format!("{base}/gate/v1/inbox/{p}/approve"))
                    .header("x-api-key", token.expose())
                    .send()
                    .await
                    .expect("approve");
                let body: serde_json::Value = resp.json().await.expect("json answer");
                assert_eq!(body["item"]["status"], "executed", "{body}");
            }
        })
    });
    for w in futures::future::join_all(workers).await {
        w.unwrap();
    }
    items as f64 / started.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let (items, concurrency, rounds) = (arg(1, 400), arg(2, 16), arg(3, 3));
    let pg = std::env::var("AGENTDESK_BENCH_PG")
        .ok()
        .filter(|v| !v.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let mut config = SandboxConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        DbLocation::File(dir.path().join("sandbox.db")),
    );
    config.settings = Settings {
        initial_equity: 1e12,
        daily_post_cap: u64::MAX / 2,
        daily_compute_cap: u64::MAX / 2,
        discovery_warmup: false,
        ..Settings::default()
    };
    let sandbox = Sandbox::start(config).await.expect("sandbox starts");
    let key = sandbox
        .new_keys
        .iter()
        .find(|(s, _)| *s == Scope::McpMutate)
        .map(|(_, k)| k.clone())
        .expect("a new sandbox has an mcp:mutate key");
    let upstream = sandbox.base_url();
    println!(
        "{items} approvals per round, {concurrency} concurrent supervisors, {rounds} rounds, {} cores",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    if pg.is_none() {
        println!("AGENTDESK_BENCH_PG not set: PostgreSQL not measured");
    }
    let (mut sqlite, mut postgres) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        let mut order = vec!["sqlite", "postgres"];
        if r % 2 == 1 {
            order.reverse();
        }
        for which in order {
            match (which, &pg) {
                ("sqlite", _) => {
                    let db = GateDb::File(dir.path().join(format!("gate-{r}.db")));
                    let gates = vec![gateway(&upstream, db).await];
                    sqlite.push(round(&gates, &key, items, concurrency).await);
                    for g in gates {
                        g.shutdown().await;
                    }
                }
                (_, Some(base)) => {
                    let url = fresh_schema(base).await;
                    let gates = vec![
                        gateway(&upstream, GateDb::Postgres(url.clone())).await,
                        gateway(&upstream, GateDb::Postgres(url)).await,
                    ];
                    postgres.push(round(&gates, &key, items, concurrency).await);
                    for g in gates {
                        g.shutdown().await;
                    }
                }
                _ => {}
            }
        }
        println!(
            "round {}: sqlite (1 instance) {:>7.1}/s   postgres (2 instances) {}",
            r + 1,
            sqlite[r],
            postgres
                .get(r)
                .map_or("-".to_string(), |v| format!("{v:>7.1}/s"))
        );
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    let (s, p) = (median(&mut sqlite), median(&mut postgres));
    println!(
        "median approvals/s: sqlite (1 instance) {:.1}, postgres (2 instances) {}",
        s.unwrap_or(0.0),
        p.map_or("-".to_string(), |v| format!("{v:.1}"))
    );
}
