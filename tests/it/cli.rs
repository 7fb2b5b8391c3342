//! The real binary: `serve` prints its address once ready and the keys of a new database;
//! `keys create` prints a key alone; `keys list` and `keys revoke` manage them.

use agentdesk::api::{ApiError, Client};
use agentdesk::secret::Secret;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_agentdesk");

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn keys(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN).arg("keys").args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[tokio::test]
async fn serve_and_manage_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cli.db");
    let db = db.to_str().unwrap();

    let (ok, _, err) = keys(&["create", "--db", db, "--scope", "legacy"]);
    assert!(!ok && err.contains("agentdesk serve"), "{err}");

    let mut child = Command::new(BIN)
        .args(["serve", "--addr", "127.0.0.1:0", "--db", db])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _server = Server(child);
    let mut printed_keys = Vec::new();
    let mut base = String::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(url) = line.strip_prefix("listening on ") {
            base = url.to_string();
            break;
        }
        if let Some(key) = line.split_whitespace().find(|w| w.starts_with("adk_")) {
            printed_keys.push(key.to_string());
        }
    }
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    assert_eq!(printed_keys.len(), 4, "one key per scope on a new database");

    let (ok, out, err) = keys(&["create", "--db", db, "--scope", "platform:trade"]);
    assert!(ok, "{err}");
    let key = out.trim();
    assert_eq!(out.lines().count(), 1, "the key alone: {out:?}");
    let client = Client::new(&base, Some(Secret::new(key))).unwrap();
    let who = client.whoami(false).await.unwrap();
    assert_eq!(who.scope.as_deref(), Some("platform:trade"));

    let (ok, _, err) = keys(&["create", "--db", db, "--scope", "admin"]);
    assert!(
        !ok && err.contains("mcp:mutate"),
        "the error lists the scopes: {err}"
    );
    let (ok, _, err) = keys(&[
        "create",
        "--db",
        db,
        "--scope",
        "legacy",
        "--account",
        "nobody",
    ]);
    assert!(!ok && err.contains("nobody"), "{err}");

    let prefix = &key["adk_".len().."adk_".len() + 8];
    let (ok, list, _) = keys(&["list", "--db", db]);
    assert!(ok && list.contains(prefix) && !list.contains(key), "{list}");
    // The fingerprint the console's header shows for this key is the one the list shows.
    let row = list.lines().find(|l| l.starts_with(prefix)).unwrap();
    let fingerprint = Secret::new(key).fingerprint();
    assert_eq!(
        row.split_whitespace().nth(1),
        Some(fingerprint.as_str()),
        "{list}"
    );

    let (ok, out, _) = keys(&["revoke", "--db", db, prefix]);
    assert!(ok && out.contains("revoked 1"), "{out}");
    let err = client.whoami(false).await.unwrap_err();
    assert!(matches!(err, ApiError::Unauthorized { .. }), "{err:?}");
    let (ok, _, err) = keys(&["revoke", "--db", db, prefix]);
    assert!(!ok && err.contains("no active key"), "{err}");
}

/// Starts `args`, reads up to `listening on`, sends `signal` at once and returns how it ended.
fn stop_at_once(args: &[&str], signal: &str) -> std::process::ExitStatus {
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let listening = lines.any(|l| l.is_ok_and(|l| l.starts_with("listening on ")));
    assert!(listening, "{args:?} never said it listens");
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("{args:?} still running 30 s after {signal}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A supervisor (or systemd, or a test) may stop a server the moment it says it listens: that
/// stop is the graceful one (in-flight requests finish, the database is closed, exit 0), not the
/// signal's default action.
#[test]
fn a_stop_right_after_listening_on_is_graceful() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("stop.db");
    let serve = [
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--db",
        db.to_str().unwrap(),
    ];
    for signal in ["-TERM", "-INT"] {
        let status = stop_at_once(&serve, signal);
        assert!(status.success(), "serve after {signal}: {status}");
    }
    let status = stop_at_once(&["standin", "--addr", "127.0.0.1:0"], "-TERM");
    assert!(status.success(), "standin: {status}");
}

/// What an installed tool offers besides running: completions for each shell and a manual page
/// that documents every subcommand, and help that names the environment variables.
#[test]
fn completions_a_manual_page_and_help_that_names_the_environment() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = Command::new(BIN)
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        assert!(
            script.contains("agentdesk") && script.contains("gate"),
            "{shell}"
        );
    }
    let bad = Command::new(BIN)
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("tcsh"));
    let man = Command::new(BIN).arg("man").output().unwrap();
    let page = String::from_utf8(man.stdout).unwrap();
    assert!(
        page.starts_with(".ie") && page.contains(".TH agentdesk 1"),
        "{page}"
    );
    assert!(page.contains("serve") && page.contains("gate"), "{page}");
    let help = Command::new(BIN).arg("--help").output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    for var in [
        "AGENTDESK_CONFIG",
        "AGENTDESK_PROFILE",
        "AGENTDESK_BASE_URL",
        "AGENTDESK_API_KEY",
    ] {
        assert!(help.contains(var), "{var} not in --help:\n{help}");
    }
    let help = Command::new(BIN).args(["gate", "--help"]).output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(help.contains("AGENTDESK_LOG_FORMAT"), "{help}");
}
