//! Issue 33, driven as a supervisor in tmux on the embedded picture (sandbox, gateway, demo
//! agent), with two agents' items in the inbox: with the approve dialog open on one of them, a
//! command typed at a person's pace, a paste that starts with `y` (bracketed and raw), a command
//! typed with the reject question open, and the fast cases decide nothing; `a`, a pause to read,
//! then `y` approves in one step. Judged at the gateway's supervisor API and in the sandbox's own
//! database, never by what the console prints.

use crate::e2e_embedded::{bare_command, get, host, supervisor};
use crate::tui::{AFTER_TYPING, BIN, Dirs, READ, Tmux, WAIT, header, tmux_available};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

fn sandbox_db(dirs: &Dirs) -> PathBuf {
    dirs.path("data").join("agentdesk").join("sandbox.db")
}

/// What the service itself recorded: each proposal's status, and how many fills it made.
fn service_record(dirs: &Dirs) -> (Vec<(String, String)>, i64) {
    let db = rusqlite::Connection::open_with_flags(
        sandbox_db(dirs),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("open the sandbox's database");
    let mut st = db
        .prepare("SELECT id, status FROM proposals ORDER BY created_at")
        .unwrap();
    let proposals = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<Vec<(String, String)>, _>>()
        .unwrap();
    let fills = db
        .query_row("SELECT count(*) FROM fills", [], |r| r.get(0))
        .unwrap();
    (proposals, fills)
}

/// A second agent: a key minted in the embedded sandbox's database, staging through the gateway.
fn stage_as_second_agent(dirs: &Dirs, host: &str) -> String {
    let out = Command::new(BIN)
        .args(["keys", "create", "--db"])
        .arg(sandbox_db(dirs))
        .args(["--scope", "mcp:mutate", "--label", "e2e-agent"])
        .env("HOME", dirs.path("home"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let key = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let answer: Value = rt.block_on(async {
        reqwest::Client::new()
            .post(format!("http://{host}/api/delegated/propose"))
            .header("x-api-key", &key)
            .json(
                &json!({"strategy": "e2e-agent", "a": "ETHUSDT", "d": "short", "o": "market",
                          "sizeUsd": "300", "leverage": 2, "sl": "999999"}),
            )
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    });
    answer["proposalId"]
        .as_str()
        .or_else(|| answer["proposal"]["proposalId"].as_str())
        .unwrap_or_else(|| panic!("staged: {answer}"))
        .to_string()
}

/// Nothing decided anywhere: every gateway item pending, every service proposal staged, no fill.
fn nothing_decided(dirs: &Dirs, host: &str, token: &str, rt: &tokio::runtime::Runtime, what: &str) {
    // Time for anything sent to have been decided and executed.
    std::thread::sleep(Duration::from_secs(2));
    let items = get(rt, format!("http://{host}/gate/v1/inbox?status=all"), token);
    let items = items["items"].as_array().expect("items").clone();
    assert!(items.len() >= 2, "{what}: both items listed: {items:?}");
    for i in &items {
        assert_eq!(i["status"], "pending", "{what}: nothing was decided: {i}");
    }
    let (proposals, fills) = service_record(dirs);
    assert!(proposals.len() >= 2, "{what}: {proposals:?}");
    for (id, status) in &proposals {
        assert_eq!(status, "staged", "{what}: {id} on the service");
    }
    assert_eq!(fills, 0, "{what}: the service filled nothing");
}

#[test]
fn e2e_typing_pasting_and_the_reject_question_decide_nothing_and_a_read_y_approves() {
    if !tmux_available() {
        return;
    }
    let dirs = Dirs::new();
    let tmux = Tmux::start("deliberate", &dirs.path("home"), &bare_command(&dirs));
    let screen = tmux.wait_for("the header's GATE badge", WAIT, |s| {
        header(s).contains(" GATE ")
    });
    let host = host(&screen);
    tmux.send("2");
    tmux.wait_for(
        "a proposal from the demo agent in the inbox",
        Duration::from_secs(90),
        |s| {
            s.lines()
                .any(|l| l.contains('█') && l.contains("demo-agent"))
        },
    );
    let second = stage_as_second_agent(&dirs, &host);
    tmux.wait_for("the second agent's item in the inbox", WAIT, |s| {
        s.lines()
            .filter(|l| l.contains('█') && l.contains(':'))
            .count()
            >= 2
    });
    let (token, rt) = supervisor(&dirs);
    let open_dialog = |what: &str| {
        tmux.send_deliberately("a");
        tmux.wait_for(what, WAIT, |s| s.contains("Approve proposal"));
        std::thread::sleep(READ);
    };
    let dialog_gone = |what: &str| {
        tmux.wait_for(what, WAIT, |s| !s.contains("Approve proposal"));
    };
    let keys = |text: &str| -> Vec<String> {
        text.chars()
            .map(|c| {
                if c == '\n' {
                    "Enter".into()
                } else {
                    c.to_string()
                }
            })
            .collect()
    };
    let paced = |text: &str, gap: u64| {
        let ks = keys(text);
        let ks: Vec<&str> = ks.iter().map(String::as_str).collect();
        tmux.type_paced(&ks, Duration::from_millis(gap));
    };

    // (a) A command typed at a person's pace, with Enter.
    for gap in [300, 700, 1_000] {
        open_dialog("the approve dialog");
        paced(":/research say hello\n", gap);
        dialog_gone("the dialog closed by the typed command");
        nothing_decided(
            &dirs,
            &host,
            &token,
            &rt,
            &format!("typed at {gap} ms a key"),
        );
        std::thread::sleep(AFTER_TYPING);
    }

    // (a') "yeah" typed into the open dialog: its y is the first letter of a word.
    open_dialog("the approve dialog for a word");
    paced("yeah", 400);
    nothing_decided(&dirs, &host, &token, &rt, "yeah typed into the dialog");
    std::thread::sleep(AFTER_TYPING);

    // (b) A paste that starts with y, bracketed and raw.
    for bracketed in [true, false] {
        open_dialog("the approve dialog for a paste");
        tmux.paste("yes, go\n", bracketed);
        nothing_decided(
            &dirs,
            &host,
            &token,
            &rt,
            &format!("pasted, bracketed {bracketed}"),
        );
        tmux.send("Escape");
        dialog_gone("the dialog closed after the paste");
        std::thread::sleep(AFTER_TYPING);
    }

    // (c) A command typed while the reject question is open.
    tmux.send_deliberately("x");
    tmux.wait_for("the reject question", WAIT, |s| s.contains("Reject?"));
    std::thread::sleep(READ);
    paced(":/policy say yes\n", 300);
    tmux.wait_for("the reject question closed", WAIT, |s| {
        !s.contains("Reject?")
    });
    nothing_decided(&dirs, &host, &token, &rt, "typed into the reject question");
    std::thread::sleep(AFTER_TYPING);

    // (d) The fast cases: a command in one burst, and y right behind a.
    open_dialog("the approve dialog for a burst");
    tmux.send(":/policy");
    tmux.send("Enter");
    dialog_gone("the dialog closed by the burst");
    std::thread::sleep(Duration::from_millis(300));
    tmux.send("Escape");
    std::thread::sleep(AFTER_TYPING);
    tmux.send("a");
    tmux.send("y");
    nothing_decided(&dirs, &host, &token, &rt, "a and y together");
    tmux.send("Escape");
    std::thread::sleep(AFTER_TYPING);

    // The positive control: a, a pause to read, y approves and executes in one step.
    open_dialog("the approve dialog, to approve");
    let selected = {
        let items = get(
            &rt,
            format!("http://{host}/gate/v1/inbox?status=all"),
            &token,
        );
        items["items"].as_array().unwrap().len()
    };
    assert!(selected >= 2);
    tmux.send("y");
    tmux.wait_for("an execution in the inbox", WAIT, |s| {
        s.lines()
            .any(|l| l.trim_start_matches('│').starts_with("executed"))
    });
    std::thread::sleep(Duration::from_secs(1));
    let items = get(
        &rt,
        format!("http://{host}/gate/v1/inbox?status=all"),
        &token,
    );
    let items = items["items"].as_array().unwrap().clone();
    let executed: Vec<&Value> = items.iter().filter(|i| i["status"] == "executed").collect();
    assert_eq!(executed.len(), 1, "{items:?}");
    let (proposals, fills) = service_record(&dirs);
    let done: Vec<_> = proposals.iter().filter(|(_, s)| s == "executed").collect();
    assert_eq!(
        done.len(),
        1,
        "the service executed exactly one: {proposals:?}"
    );
    assert!(fills >= 1, "the service filled it");
    assert!(
        proposals.iter().any(|(id, _)| *id == second),
        "the second agent's proposal is on the service: {proposals:?}"
    );
    std::thread::sleep(AFTER_TYPING);
    tmux.quit_and_check_restored();
}
