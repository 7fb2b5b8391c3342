//! End to end: the real `agentdesk` binary, its console driven inside tmux (`send-keys` types,
//! `capture-pane` reads the screen) against a real `agentdesk serve` child process.
//!
//! Each test has its own tmux server (`-L`), session name, temp HOME / XDG dirs and database, and
//! every wait polls the screen against a deadline. Without tmux the tests skip, unless `CI` is set:
//! then they fail, as `.ci/run` must install tmux.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_agentdesk");
const POLL: Duration = Duration::from_millis(100);
const WAIT: Duration = Duration::from_secs(30);

/// True when tmux can be used; false (after a notice) to skip; panics on CI without tmux.
fn tmux_available() -> bool {
    let ok = Command::new("tmux")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "tmux is not on PATH but CI is set: .ci/run must install tmux before the tests \
             (apt-get install -y tmux) so the e2e tests run"
        );
    }
    eprintln!(
        "notice: tmux is not on PATH; skipping the e2e console test (install tmux to run it)"
    );
    false
}

/// Single-quotes `s` for sh.
fn sq(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

// ---- the sandbox server as a child process ------------------------------------------------------

struct Server {
    child: Child,
    base: String,
    port: u16,
    /// scope -> key, as printed for a new database (empty on a restart).
    keys: HashMap<String, String>,
}

impl Server {
    /// Starts `agentdesk serve` and reads its stdout until `listening on http://...`.
    fn start(db: &Path, addr: &str, log: &Path) -> Result<Server, String> {
        let stderr = std::fs::File::create(log).map_err(|e| e.to_string())?;
        let mut child = Command::new(BIN)
            .args(["serve", "--addr", addr, "--db"])
            .arg(db)
            .env("AGENTDESK_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot start {BIN}: {e}"))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            // Keeps reading (and dropping) after "listening on" so the pipe never fills.
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + WAIT;
        let mut keys = HashMap::new();
        let mut printed = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    printed.push(line.clone());
                    if let Some(url) = line.strip_prefix("listening on ") {
                        let base = url.trim().to_string();
                        let port = base
                            .rsplit(':')
                            .next()
                            .and_then(|p| p.parse().ok())
                            .ok_or_else(|| format!("no port in {line:?}"))?;
                        return Ok(Server {
                            child,
                            base,
                            port,
                            keys,
                        });
                    }
                    let words: Vec<&str> = line.split_whitespace().collect();
                    if let [scope, key] = words[..]
                        && key.starts_with("adk_")
                    {
                        keys.insert(scope.to_string(), key.to_string());
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    let status = child.wait().ok();
                    let err = std::fs::read_to_string(log).unwrap_or_default();
                    return Err(format!(
                        "serve {addr} did not print `listening on` (exit {status:?}); stdout {printed:?}; stderr {err}"
                    ));
                }
            }
        }
    }

    /// SIGKILL, and reap.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn key(&self, scope: &str) -> String {
        self.keys
            .get(scope)
            .cloned()
            .unwrap_or_else(|| panic!("no {scope} key printed; printed {:?}", self.keys))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

// ---- the console in tmux ------------------------------------------------------------------------

struct Tmux {
    socket: String,
    session: String,
    /// The server's socket file, removed on drop (kill-server leaves it behind).
    socket_path: Option<PathBuf>,
}

impl Tmux {
    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket, "-f", "/dev/null"])
            .env_remove("TMUX")
            .env("SHELL", "/bin/sh");
        c
    }

    /// Starts a detached 120x40 session running `shell_command` (through sh).
    fn start(test: &str, home: &Path, shell_command: &str) -> Tmux {
        let id = format!("adk-e2e-{test}-{}", std::process::id());
        let mut t = Tmux {
            socket: id.clone(),
            session: id,
            socket_path: None,
        };
        let out = t
            .cmd()
            .env("HOME", home)
            .args([
                "new-session",
                "-d",
                "-s",
                &t.session,
                "-x",
                "120",
                "-y",
                "40",
                shell_command,
            ])
            .output()
            .expect("run tmux");
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        t.socket_path =
            Some(PathBuf::from(t.format("#{socket_path}"))).filter(|p| !p.as_os_str().is_empty());
        t
    }

    fn capture(&self) -> String {
        let out = self
            .cmd()
            .args(["capture-pane", "-p", "-t", &self.session])
            .output()
            .expect("run tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A pane format variable, e.g. `#{alternate_on}`.
    fn format(&self, fmt: &str) -> String {
        let out = self
            .cmd()
            .args(["display-message", "-p", "-t", &self.session, fmt])
            .output()
            .expect("run tmux display-message");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn send(&self, key: &str) {
        let ok = self
            .cmd()
            .args(["send-keys", "-t", &self.session, key])
            .status()
            .expect("run tmux send-keys")
            .success();
        assert!(ok, "tmux send-keys {key} failed");
    }

    /// Polls the screen until `pred` holds; panics with `what` and the last screen after `within`.
    fn wait_for(&self, what: &str, within: Duration, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + within;
        loop {
            let screen = self.capture();
            if pred(&screen) {
                return screen;
            }
            if Instant::now() >= deadline {
                panic!("timed out after {within:?} waiting for {what}; the screen:\n{screen}");
            }
            std::thread::sleep(POLL);
        }
    }

    /// `q` quits: the pane's shell prints `EXITED:0` on the normal screen (the alternate screen
    /// was left, the cursor shown again, mouse reporting off).
    fn quit_and_check_restored(&self) {
        self.send("q");
        let screen = self.wait_for("EXITED:0 after q", WAIT, |s| s.contains("EXITED:"));
        let first = screen.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        assert_eq!(
            first.trim(),
            "EXITED:0",
            "the console exits 0 and the shell's line is the first on a normal screen:\n{screen}"
        );
        assert!(
            !screen.contains('│') && !screen.contains('─'),
            "nothing of the console is left on the screen:\n{screen}"
        );
        assert_eq!(
            self.format("#{alternate_on}"),
            "0",
            "the alternate screen was left"
        );
        assert_eq!(
            self.format("#{mouse_any_flag}"),
            "0",
            "mouse capture is off"
        );
        assert_eq!(self.format("#{cursor_flag}"), "1", "the cursor is shown");
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // Ends the console (SIGHUP) and the shell with it.
        let _ = self
            .cmd()
            .arg("kill-server")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if let Some(p) = &self.socket_path {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Temp HOME and XDG dirs so the console's data dir (journal, log) never touches the real home.
struct Dirs {
    tmp: tempfile::TempDir,
}

impl Dirs {
    fn new() -> Dirs {
        let tmp = tempfile::tempdir().unwrap();
        for d in ["home", "data", "config"] {
            std::fs::create_dir_all(tmp.path().join(d)).unwrap();
        }
        Dirs { tmp }
    }
    fn path(&self, p: &str) -> PathBuf {
        self.tmp.path().join(p)
    }
}

/// The tmux command running the console against `base` with `key`, then reporting its exit code.
fn console_command(dirs: &Dirs, base: &str, key: &str) -> String {
    let script = format!(
        "{} --base-url {} --api-key {}; echo EXITED:$?; sleep 30",
        sq(BIN),
        sq(base),
        sq(key)
    );
    let path = |p: &str| sq(dirs.path(p).to_str().unwrap());
    format!(
        "env -u AGENTDESK_BASE_URL -u AGENTDESK_API_KEY -u AGENTDESK_CONFIG -u AGENTDESK_PROFILE \
         -u NO_COLOR HOME={} XDG_DATA_HOME={} XDG_CONFIG_HOME={} AGENTDESK_LOG=debug sh -c {}",
        path("home"),
        path("data"),
        path("config"),
        sq(&script)
    )
}

fn header(screen: &str) -> &str {
    screen.lines().next().unwrap_or("")
}

fn header_ok(screen: &str) -> bool {
    header(screen).contains("│ ok ")
}

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
                l.contains(&id) && l.contains("long") && l.contains("4:5") && l.contains('█')
            })
        },
    );
    assert!(screen.contains("Staged proposals"), "{screen}");

    tmux.send("2");
    tmux.wait_for("the approval inbox with the proposal", WAIT, |s| {
        s.contains("Approval inbox")
            && s.contains(&id)
            && s.lines().any(|l| l.contains("4:5") && l.contains("long"))
    });
    tmux.send("a");
    tmux.wait_for("the approve dialog", WAIT, |s| {
        s.contains("Approve proposal") && s.contains(&format!("Approve {id}?"))
    });
    tmux.send("y");
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
    let mut server =
        Server::start(&db, "127.0.0.1:0", &dirs.path("serve.log")).expect("server starts");
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
    assert!(
        stale_after >= Duration::from_secs(4),
        "stale only after three poll intervals, not {stale_after:?}:\n{screen}"
    );
    assert!(
        screen.contains("Equity"),
        "stale data is still shown:\n{screen}"
    );

    // Still answering keys while the service is down.
    tmux.send("3");
    tmux.wait_for("the Logs tab", Duration::from_secs(5), |s| {
        s.contains("Service audit log") && s.contains("Console requests")
    });
    tmux.send("1");
    tmux.wait_for("the Desk again", Duration::from_secs(5), |s| {
        s.contains("Equity") && s.contains("Staged proposals")
    });

    // Same database, same port (retry while the port is briefly busy).
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
    assert!(
        recovered_in <= Duration::from_secs(32),
        "recovery within the 30 s backoff cap, took {recovered_in:?}:\n{screen}"
    );
    assert!(screen.contains("Equity"), "{screen}");

    tmux.quit_and_check_restored();
    eprintln!(
        "e2e restart: {:.1?} (stale after {stale_after:.1?}, recovered {recovered_in:.1?} after restart)",
        started.elapsed()
    );
}
