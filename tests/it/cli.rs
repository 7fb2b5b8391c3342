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
