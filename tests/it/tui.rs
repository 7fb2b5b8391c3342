//! The e2e harness: the real `agentdesk` binary, its console driven inside tmux (`send-keys` types,
//! `capture-pane` reads the screen) against a real `agentdesk serve` child process.
//!
//! Each test has its own tmux server (`-L`), session name, temp HOME / XDG dirs and database, and
//! every wait polls the screen against a deadline. Without tmux the tests skip, unless `CI` is set:
//! then they fail, as `.ci/run` must install tmux.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_agentdesk");
pub(crate) const POLL: Duration = Duration::from_millis(100);
pub(crate) const WAIT: Duration = Duration::from_secs(30);
/// Longer than the approve dialog's settle time (`console::inbox::dialog::SETTLE`, 400 ms).
/// Past a deciding dialog's settle time (a second), as a person reads before pressing y.
pub(crate) const READ: Duration = Duration::from_millis(1300);
/// Longer than the console's quiet moment (1.5 s): a key after it is not part of a run of typing.
pub(crate) const QUIET: Duration = Duration::from_millis(1700);
/// Longer than the console keeps dialogs shut after keys that showed typing (3 s).
pub(crate) const AFTER_TYPING: Duration = Duration::from_millis(3300);

/// True when tmux can be used; false (after a notice) to skip; panics on CI without tmux.
pub(crate) fn tmux_available() -> bool {
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
pub(crate) fn sq(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

// ---- the sandbox server as a child process ------------------------------------------------------

pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) base: String,
    pub(crate) port: u16,
    /// scope -> key, as printed for a new database (empty on a restart).
    pub(crate) keys: HashMap<String, String>,
}

impl Server {
    /// Starts `agentdesk serve` and reads its stdout until `listening on http://...`.
    pub(crate) fn start(db: &Path, addr: &str, log: &Path) -> Result<Server, String> {
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

    /// Starts `agentdesk serve` on a port a test can start it on again after killing it: one
    /// below the kernel's ephemeral range (10000–19999), so no server another test starts on
    /// port 0, and no outgoing connection, takes the port while this one is down.
    pub(crate) fn start_restartable(db: &Path, log: &Path) -> Server {
        let mut last = String::new();
        for _ in 0..50 {
            let port: u16 = 10_000 + rand::random::<u16>() % 10_000;
            match Server::start(db, &format!("127.0.0.1:{port}"), log) {
                Ok(s) => return s,
                // Taken by something else on the machine: another port.
                Err(e) => last = e,
            }
        }
        panic!("serve did not start on any of 50 ports in 10000-19999; the last: {last}");
    }

    /// SIGKILL, and reap.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub(crate) fn key(&self, scope: &str) -> String {
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

pub(crate) struct Tmux {
    pub(crate) socket: String,
    pub(crate) session: String,
    /// The server's socket file, removed on drop (kill-server leaves it behind).
    pub(crate) socket_path: Option<PathBuf>,
}

impl Tmux {
    pub(crate) fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket, "-f", "/dev/null"])
            .env_remove("TMUX")
            .env("SHELL", "/bin/sh");
        c
    }

    /// Starts a detached 120x40 session running `shell_command` (through sh).
    pub(crate) fn start(test: &str, home: &Path, shell_command: &str) -> Tmux {
        Tmux::start_sized(test, home, shell_command, (120, 40))
    }

    /// Starts a detached session of `size` (columns, rows) running `shell_command`: the console
    /// starts at that size (a resize of a running session races its first frames).
    pub(crate) fn start_sized(
        test: &str,
        home: &Path,
        shell_command: &str,
        size: (u16, u16),
    ) -> Tmux {
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
                &size.0.to_string(),
                "-y",
                &size.1.to_string(),
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

    pub(crate) fn capture(&self) -> String {
        let out = self
            .cmd()
            .args(["capture-pane", "-p", "-t", &self.session])
            .output()
            .expect("run tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A pane format variable, e.g. `#{alternate_on}`.
    pub(crate) fn format(&self, fmt: &str) -> String {
        let out = self
            .cmd()
            .args(["display-message", "-p", "-t", &self.session, fmt])
            .output()
            .expect("run tmux display-message");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// `bytes` to the pane as they are: what a terminal sends for a mouse click.
    pub(crate) fn send_literal(&self, bytes: &str) {
        let ok = self
            .cmd()
            .args(["send-keys", "-t", &self.session, "-l", bytes])
            .status()
            .expect("run tmux send-keys")
            .success();
        assert!(ok, "tmux send-keys -l failed");
    }

    pub(crate) fn send(&self, key: &str) {
        let ok = self
            .cmd()
            .args(["send-keys", "-t", &self.session, key])
            .status()
            .expect("run tmux send-keys")
            .success();
        assert!(ok, "tmux send-keys {key} failed");
    }

    /// `text` pasted into the pane: bracketed (as a terminal does for an application that asked
    /// for it), or as raw keys (a terminal that does not bracket pastes).
    pub(crate) fn paste(&self, text: &str, bracketed: bool) {
        let ok = self
            .cmd()
            .args(["set-buffer", "-b", "e2e", text])
            .status()
            .expect("run tmux set-buffer")
            .success();
        assert!(ok, "tmux set-buffer failed");
        let mut args = vec!["paste-buffer", "-b", "e2e", "-t", &self.session];
        if bracketed {
            args.push("-p");
        }
        let ok = self
            .cmd()
            .args(&args)
            .status()
            .expect("run tmux paste-buffer")
            .success();
        assert!(ok, "tmux paste-buffer failed");
    }

    /// Each key of `keys` (tmux key names) `gap` apart: typing at a person's pace.
    pub(crate) fn type_paced(&self, keys: &[&str], gap: Duration) {
        for k in keys {
            self.send(k);
            std::thread::sleep(gap);
        }
    }

    /// `key` after a quiet moment: a key that opens a deciding dialog (`a`, `x`) or undoes (`u`)
    /// acts only then, never inside a run of keys.
    pub(crate) fn send_deliberately(&self, key: &str) {
        std::thread::sleep(QUIET);
        self.send(key);
    }

    /// `key` once the approve dialog on screen has been read: past its settle time, in which
    /// a deciding key decides nothing (a person reads before pressing y).
    pub(crate) fn send_after_reading(&self, key: &str) {
        std::thread::sleep(READ);
        self.send(key);
    }

    /// Polls the screen until `pred` holds; panics with `what` and the last screen after `within`.
    pub(crate) fn wait_for(
        &self,
        what: &str,
        within: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> String {
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
    pub(crate) fn quit_and_check_restored(&self) {
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
pub(crate) struct Dirs {
    pub(crate) tmp: tempfile::TempDir,
}

impl Dirs {
    pub(crate) fn new() -> Dirs {
        let tmp = tempfile::tempdir().unwrap();
        for d in ["home", "data", "config"] {
            std::fs::create_dir_all(tmp.path().join(d)).unwrap();
        }
        Dirs { tmp }
    }
    pub(crate) fn path(&self, p: &str) -> PathBuf {
        self.tmp.path().join(p)
    }
}

/// The tmux command running the console against `base` with `key`, then reporting its exit code.
pub(crate) fn console_command(dirs: &Dirs, base: &str, key: &str) -> String {
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

pub(crate) fn header(screen: &str) -> &str {
    screen.lines().next().unwrap_or("")
}

pub(crate) fn header_ok(screen: &str) -> bool {
    header(screen).contains("│ ok ")
}
