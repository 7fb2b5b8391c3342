//! End to end: a research run started from the console's command line against a real `agentdesk
//! serve` child process, watched on the Research tab (tmux `send-keys` types, `capture-pane`
//! reads). Same harness as `e2e.rs` (own tmux server, temp dirs, deadlines, Drop guards; skipped
//! without tmux unless `CI` is set), copied so the two files stay independent.

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
                        // The port is checked, not kept.
                        let _port: u16 = base
                            .rsplit(':')
                            .next()
                            .and_then(|p| p.parse().ok())
                            .ok_or_else(|| format!("no port in {line:?}"))?;
                        return Ok(Server { child, base, keys });
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

fn header_ok(screen: &str) -> bool {
    screen.lines().next().unwrap_or("").contains("│ ok ")
}

/// `:` `/research start …` Enter against a real `agentdesk serve`: the Research tab shows the lead
/// and its agents appear, and the run finishes ("completed" or the report artifact); `q` quits.
#[test]
fn e2e_research_run_in_console() {
    if !tmux_available() {
        return;
    }
    let dirs = Dirs::new();
    let server = Server::start(&dirs.path("e2e.db"), "127.0.0.1:0", &dirs.path("serve.log"))
        .expect("server starts");
    let legacy_key = server.key("legacy");
    let tmux = Tmux::start(
        "research",
        &dirs.path("home"),
        &console_command(&dirs, &server.base, &legacy_key),
    );
    tmux.wait_for("the Desk, connected", WAIT, header_ok);

    tmux.send(":");
    tmux.wait_for("the command line", WAIT, |s| {
        s.lines().nth(39).is_some_and(|l| l.starts_with(':'))
    });
    for word in "/research start find the best trend strategy for ETH on 1h over 30 days".split(' ')
    {
        // send-keys takes a literal with -l; a space is its own key.
        let ok = tmux
            .cmd()
            .args(["send-keys", "-t", &tmux.session, "-l", word])
            .status()
            .expect("run tmux send-keys")
            .success();
        assert!(ok);
        tmux.send("Space");
    }
    tmux.send("BSpace");
    tmux.send("Enter");
    // The console shows the Research tab itself after a /research command; 6 is harmless.
    tmux.send("6");
    let screen = tmux.wait_for("the lead and its agents", Duration::from_secs(60), |s| {
        s.contains("Lead and agents") && s.contains("├─ ") && s.contains("└─ ")
    });
    assert!(
        screen.contains("find the best trend strategy for ETH"),
        "the run line names the task:\n{screen}"
    );
    assert!(
        !screen.contains(&legacy_key),
        "the API key never reaches the screen"
    );
    tmux.wait_for(
        "the run to complete (status or report artifact)",
        Duration::from_secs(120),
        |s| s.contains(" completed ") || s.contains("report.md"),
    );
    tmux.quit_and_check_restored();
    drop(server);
}
