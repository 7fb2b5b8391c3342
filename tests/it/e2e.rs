//! End to end: an agent's proposal approved in the console, and the console surviving a server
//! restart (harness in `tui.rs`).

use crate::tui::{
    Dirs, POLL, Server, Tmux, WAIT, console_command, header, header_ok, tmux_available,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Every file named `name` under `dir`.
fn find_files(dir: &Path, name: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            find_files(&p, name, out);
        } else if p.file_name().is_some_and(|n| n == name) {
            out.push(p);
        }
    }
}

async fn call(method: reqwest::Method, url: String, key: &str, body: Option<Value>) -> Value {
    let mut req = reqwest::Client::new()
        .request(method, &url)
        .header("x-api-key", key)
        .timeout(Duration::from_secs(10));
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap_or_else(|e| panic!("{url}: {e}"));
    let status = resp.status();
    let v: Value = resp.json().await.unwrap();
    assert!(status.is_success(), "{url}: {status} {v}");
    assert_eq!(v["success"], json!(true), "{url}: {v}");
    v
}

/// The countdown (`m:ss`) on a screen line, in seconds.
fn countdown(line: &str) -> Option<i64> {
    line.split_whitespace().find_map(|w| {
        let (m, s) = w.split_once(':')?;
        (m.len() == 1 && s.len() == 2)
            .then(|| Some(m.parse::<i64>().ok()? * 60 + s.parse::<i64>().ok()?))
            .flatten()
    })
}

/// A line's countdown is the proposal's 5 minutes less the time since it was staged (`staged`
/// was taken before the request, so at least that much has passed; a second for truncation).
/// Bounds from the elapsed time rather than a fixed "4:5x", which a loaded machine can miss.
fn counts_down_from_staging(line: &str, staged: Instant) -> bool {
    countdown(line).is_some_and(|left| {
        let passed = staged.elapsed().as_secs() as i64;
        left <= 300 && left >= 300 - passed - 1
    })
}

fn num(v: &Value) -> f64 {
    match v {
        Value::String(s) => s.parse().unwrap_or(f64::NAN),
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        _ => f64::NAN,
    }
}

/// An agent stages a trade over HTTP; the console shows it with its countdown, a human approves it
/// in the inbox (`2`, `a`, `y`); the position exists and the decision is journaled; `q` quits.
#[test]
fn e2e_agent_proposal_approved_in_console() {
    if !tmux_available() {
        return;
    }
    let started = Instant::now();
    let dirs = Dirs::new();
    let server = Server::start(&dirs.path("e2e.db"), "127.0.0.1:0", &dirs.path("serve.log"))
        .expect("server starts");
    assert_eq!(server.keys.len(), 4, "one key per scope: {:?}", server.keys);
    let agent_key = server.key("mcp:mutate");
    let legacy_key = server.key("legacy");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    // Confirm must come from the key that proposed: the console runs with the agent's key.
    let tmux = Tmux::start(
        "approve",
        &dirs.path("home"),
        &console_command(&dirs, &server.base, &agent_key),
    );
    let screen = tmux.wait_for("the Desk, connected, with nothing staged", WAIT, |s| {
        header_ok(s) && s.contains("Staged proposals") && s.contains("nothing staged")
    });
    assert!(
        !screen.contains(&agent_key),
        "the API key never reaches the screen"
    );

    let staged_at = Instant::now();
    let staged = rt.block_on(call(
        reqwest::Method::POST,
        format!("{}/api/delegated/propose", server.base),
        &agent_key,
        Some(json!({"a": "BTCUSDT", "d": "long", "sizeUsd": "1000"})),
    ));
    let id = staged["proposalId"]
        .as_str()
        .expect("proposalId")
        .to_string();
    // The legacy key of the same account lists it too (the console polls this list).
    let listed = rt.block_on(call(
        reqwest::Method::GET,
        format!("{}/api/delegated/proposals", server.base),
        &legacy_key,
        None,
    ));
    assert!(listed.to_string().contains(&id), "{listed}");

    let screen = tmux.wait_for(
        "the staged proposal on the Desk with a countdown",
        WAIT,
        |s| {
            s.lines().any(|l| {
                l.contains(&id)
                    && l.contains("long")
                    && counts_down_from_staging(l, staged_at)
                    && l.contains('█')
            })
        },
    );
    assert!(screen.contains("Staged proposals"), "{screen}");

    tmux.send("2");
    tmux.wait_for("the approval inbox with the proposal", WAIT, |s| {
        s.contains("Approval inbox")
            && s.contains(&id)
            && s.lines()
                .any(|l| counts_down_from_staging(l, staged_at) && l.contains("long"))
    });
    tmux.send_deliberately("a");
    tmux.wait_for("the approve dialog", WAIT, |s| {
        s.contains("Approve proposal") && s.contains(&format!("Approve {id}?"))
    });
    tmux.send_after_reading("y");
    let screen = tmux.wait_for("the proposal approved", WAIT, |s| {
        s.lines()
            .any(|l| l.contains("approved") && l.contains(&id) && l.contains("bought"))
    });
    assert!(
        !screen.contains("Approve proposal"),
        "the dialog closed:\n{screen}"
    );

    // The position exists, seen with another key of the same account.
    let positions = rt.block_on(call(
        reqwest::Method::GET,
        format!("{}/api/delegated/positions", server.base),
        &legacy_key,
        None,
    ));
    let btc = positions["positions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["coin"] == "BTC")
        .unwrap_or_else(|| panic!("a BTC position: {positions}"));
    assert!(num(&btc["szi"]) > 0.0, "long BTC: {btc}");

    // The decision journal has the approval (written off the loop: poll for it).
    let deadline = Instant::now() + WAIT;
    let approved_line = loop {
        let mut files = Vec::new();
        find_files(&dirs.path("data"), "decisions.jsonl", &mut files);
        let found = files.iter().find_map(|f| {
            std::fs::read_to_string(f).ok()?.lines().find_map(|l| {
                let v: Value = serde_json::from_str(l).ok()?;
                (v["proposalId"] == json!(id) && v["decision"] == "approved").then_some((f, v))
            })
        });
        if let Some((file, v)) = found {
            assert!(file.ends_with("agentdesk/decisions.jsonl"), "{file:?}");
            break v;
        }
        assert!(
            Instant::now() < deadline,
            "no approved line for {id} in {files:?} under {}",
            dirs.path("data").display()
        );
        std::thread::sleep(POLL);
    };
    assert!(
        approved_line["result"]
            .as_str()
            .is_some_and(|r| r.contains("BTC")),
        "{approved_line}"
    );
    assert!(
        !approved_line.to_string().contains(&agent_key),
        "no key in the journal"
    );

    tmux.quit_and_check_restored();
    eprintln!("e2e approve: {:.1?}", started.elapsed());
}

/// The server dies: the console says so, marks old data stale and still answers keys; the server
/// comes back on the same port: the console recovers by itself; `q` quits.
#[test]
fn e2e_console_survives_server_restart() {
    if !tmux_available() {
        return;
    }
    let started = Instant::now();
    let dirs = Dirs::new();
    let db = dirs.path("e2e.db");
    let mut server = Server::start_restartable(&db, &dirs.path("serve.log"));
    let port = server.port;
    let base = server.base.clone();
    let key = server.key("legacy");

    let tmux = Tmux::start(
        "restart",
        &dirs.path("home"),
        &console_command(&dirs, &base, &key),
    );
    tmux.wait_for("the Desk connected, with the PnL", WAIT, |s| {
        header_ok(s) && s.contains("Equity")
    });

    server.kill();
    let killed = Instant::now();
    let screen = tmux.wait_for("the connection marked down", WAIT, |s| {
        let h = header(s);
        h.contains("unreachable") && h.contains("retrying in")
    });
    assert!(!header_ok(&screen), "{screen}");
    eprintln!("down: {}", header(&screen).trim());
    let screen = tmux.wait_for("panes marked stale", WAIT, |s| s.contains("stale "));
    let stale_after = killed.elapsed();
    for l in screen.lines().filter(|l| l.contains("stale ")) {
        eprintln!("stale: {}", l.trim());
    }
    // Stale only after three poll intervals (2 s each for these panes), read from the ages the
    // markers show: the last answer may have come up to an interval (and a late poll) before the
    // kill, so time since the kill is no bound a loaded machine keeps.
    let ages: Vec<u64> = screen
        .split("stale ")
        .skip(1)
        .filter_map(|rest| rest.split_once('s').and_then(|(n, _)| n.parse().ok()))
        .collect();
    assert!(
        !ages.is_empty() && ages.iter().all(|a| *a >= 6),
        "stale only after three poll intervals (6 s), marked at {ages:?} s:\n{screen}"
    );
    assert!(
        screen.contains("Equity"),
        "stale data is still shown:\n{screen}"
    );

    // Still answering keys while the service is down.
    tmux.send("3");
    tmux.wait_for("the Logs tab", WAIT, |s| {
        s.contains("Service audit log") && s.contains("Console requests")
    });
    tmux.send("1");
    tmux.wait_for("the Desk again", WAIT, |s| {
        s.contains("Equity") && s.contains("Staged proposals")
    });

    // Same database, same port (retry while the port is briefly busy; no other test binds it).
    let addr = format!("127.0.0.1:{port}");
    let mut attempt = 0;
    let _server = loop {
        attempt += 1;
        match Server::start(&db, &addr, &dirs.path("serve2.log")) {
            Ok(s) => break s,
            Err(e) if attempt < 20 => {
                eprintln!("restart attempt {attempt}: {e}");
                std::thread::sleep(Duration::from_millis(250));
            }
            Err(e) => panic!("cannot restart the server on {addr}: {e}"),
        }
    };
    let restarted = Instant::now();
    let screen = tmux.wait_for(
        "the console recovered (ok, nothing stale)",
        Duration::from_secs(40),
        |s| header_ok(s) && !s.contains("stale") && !s.contains("unreachable"),
    );
    let recovered_in = restarted.elapsed();
    // whoami probes every second while the service is down, where the other feeds back off up
    // to 30 s: 10 s tells the two apart with room for a loaded machine.
    assert!(
        recovered_in <= Duration::from_secs(10),
        "recovery within 10 s (whoami probes every second), took {recovered_in:?}:\n{screen}"
    );
    assert!(screen.contains("Equity"), "{screen}");

    tmux.quit_and_check_restored();
    eprintln!(
        "e2e restart: {:.1?} (stale after {stale_after:.1?}, recovered {recovered_in:.1?} after restart)",
        started.elapsed()
    );
}
