//! E2E of the embedded picture: `agentdesk` with no configuration starts the sandbox, a gateway in
//! front of it and a demo agent; the console, on the gateway, shows the demo agent's proposal with
//! its Agent, and `a` `y` executes it — checked on screen and through the gateway's supervisor API.

use crate::tui::{BIN, Dirs, READ, Tmux, WAIT, header, sq, tmux_available};
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

/// A supervisor token minted on the embedded gateway's database, and a runtime to ask with.
pub(crate) fn supervisor(dirs: &Dirs) -> (String, tokio::runtime::Runtime) {
    let gate_db = dirs.path("data").join("agentdesk").join("gateway.db");
    let out = Command::new(BIN)
        .args([
            "gate",
            "token",
            "--db",
            gate_db.to_str().unwrap(),
            "--label",
            "e2e",
        ])
        .env("HOME", dirs.path("home"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    (token, rt)
}

pub(crate) fn get(rt: &tokio::runtime::Runtime, url: String, token: &str) -> Value {
    rt.block_on(async {
        reqwest::Client::new()
            .get(&url)
            .header("x-api-key", token)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"))
            .json()
            .await
            .unwrap()
    })
}

/// The console's host (the gateway's address) from its header.
pub(crate) fn host(screen: &str) -> String {
    header(screen)
        .split_whitespace()
        .skip_while(|w| *w != "@")
        .nth(1)
        .expect("the header names the host")
        .to_string()
}

/// The console with nothing configured: no flags, no AGENTDESK_* variables, an empty HOME.
pub(crate) fn bare_command(dirs: &Dirs) -> String {
    let script = format!("{}; echo EXITED:$?; sleep 30", sq(BIN));
    let path = |p: &str| sq(dirs.path(p).to_str().unwrap());
    format!(
        "env -u AGENTDESK_BASE_URL -u AGENTDESK_API_KEY -u AGENTDESK_CONFIG -u AGENTDESK_PROFILE \
         -u AGENTDESK_GATE_TOKEN -u NO_COLOR HOME={} XDG_DATA_HOME={} XDG_CONFIG_HOME={} \
         AGENTDESK_LOG=debug sh -c {}",
        path("home"),
        path("data"),
        path("config"),
        sq(&script)
    )
}

#[test]
fn e2e_no_config_shows_the_demo_agents_proposal_and_a_y_executes_it() {
    if !tmux_available() {
        return;
    }
    let dirs = Dirs::new();
    let tmux = Tmux::start("embedded", &dirs.path("home"), &bare_command(&dirs));
    let screen = tmux.wait_for("the header's SANDBOX and GATE badges", WAIT, |s| {
        header(s).contains("SANDBOX") && header(s).contains(" GATE ")
    });
    // The console is on the gateway: its host is the gateway's address.
    let host = host(&screen);
    tmux.send("2");
    let screen = tmux.wait_for(
        "a proposal from the demo agent in the inbox",
        Duration::from_secs(90),
        |s| {
            s.contains("demo-agent")
                && s.contains("Agent")
                && s.lines()
                    .any(|l| l.contains('█') && l.contains("demo-agent"))
        },
    );
    let row = screen
        .lines()
        .find(|l| l.contains('█') && l.contains("demo-agent"))
        .unwrap()
        .to_string();
    tmux.send_deliberately("a");
    // The dialog names who proposed it.
    tmux.wait_for("the approve dialog naming the agent", WAIT, |s| {
        s.contains("Approve proposal") && s.contains("proposed by agent demo-agent · account")
    });
    tmux.send_after_reading("y");
    // The gateway executed it: the row says executed (not merely approved), the decision the fill.
    let screen = tmux.wait_for("the execution in the inbox", WAIT, |s| {
        s.lines()
            .any(|l| l.contains("demo-agent") && l.trim_start_matches('│').starts_with("executed"))
            && s.contains("executed: ")
            && (s.contains("bought") || s.contains("sold"))
    });
    assert!(
        screen.contains("Decisions") && screen.contains("demo-agent"),
        "{row}\n{screen}"
    );

    // The gateway's own record says the same: a supervisor token minted on its database.
    let (token, rt) = supervisor(&dirs);
    let items: Value = rt.block_on(async {
        reqwest::Client::new()
            .get(format!("http://{host}/gate/v1/inbox?status=executed"))
            .header("x-api-key", &token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    });
    let items = items["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["agent"], "demo-agent");
    assert_eq!(items[0]["decidedBy"], "embedded console");

    tmux.quit_and_check_restored();
}

/// The guardrails from the console on the embedded gateway: `/kill` asks, `y` turns the switch on
/// (the header turns to KILL SWITCH), `/kill off` turns it off; `/auto` creates a standing approval
/// and lists it with its countdown.
#[test]
fn e2e_kill_asks_then_the_header_says_kill_switch_and_auto_lists_a_countdown() {
    if !tmux_available() {
        return;
    }
    let dirs = Dirs::new();
    let tmux = Tmux::start("guard", &dirs.path("home"), &bare_command(&dirs));
    tmux.wait_for("the header's GATE badge", WAIT, |s| {
        header(s).contains(" GATE ")
    });
    let command = |line: &str| {
        tmux.send(":");
        tmux.send(line);
        tmux.send("Enter");
    };
    command("/kill e2e drill");
    tmux.wait_for("the kill switch question", WAIT, |s| {
        s.contains("Turn the kill switch ON for every agent? y/esc")
    });
    tmux.send_after_reading("y");
    tmux.wait_for("KILL SWITCH in the header", WAIT, |s| {
        header(s).contains("KILL SWITCH")
    });
    command("/kill off");
    tmux.wait_for("the question to turn it off", WAIT, |s| {
        s.contains("Turn the kill switch OFF")
    });
    tmux.send_after_reading("y");
    tmux.wait_for("GATE back in the header", WAIT, |s| {
        header(s).contains(" GATE ") && !header(s).contains("KILL SWITCH")
    });
    command("/auto * BTC,ETH 1000 10 e2e");
    tmux.wait_for("the standing approval question", WAIT, |s| {
        s.contains("without anyone's approval")
    });
    tmux.send_after_reading("y");
    // The answer is carried out once the keyboard stays quiet a moment.
    std::thread::sleep(crate::tui::QUIET);
    command("/auto");
    tmux.wait_for("the standing approval with its countdown", WAIT, |s| {
        s.contains("Standing approvals") && s.contains("#1") && s.contains(" left · agent *")
    });
    tmux.send("Escape");
    // Closed before `q`: an escape and a q sent together would read as alt-q.
    tmux.wait_for("the standing approvals panel closed", WAIT, |s| {
        !s.contains("Standing approvals")
    });
    tmux.quit_and_check_restored();
}

/// Issue 20: a supervisor who forgot the approve dialog types a command into it. Its `:` closes
/// the dialog, saying nothing was decided, and the rest (`/policy`, Enter: an `o` and a `y` the
/// old dialog took as override and approve) reaches nothing; the gateway has decided nothing.
#[test]
fn e2e_a_command_typed_into_the_approve_dialog_decides_nothing_at_the_gateway() {
    if !tmux_available() {
        return;
    }
    let dirs = Dirs::new();
    let tmux = Tmux::start("dialog", &dirs.path("home"), &bare_command(&dirs));
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
    tmux.send_deliberately("a");
    tmux.wait_for("the approve dialog", WAIT, |s| {
        s.contains("Approve proposal") && s.contains("proposed by agent demo-agent")
    });
    // Read, then typed as a person types a command, a key at a time.
    std::thread::sleep(READ);
    for k in [":", "/", "p", "o", "l", "i", "c", "y", "Enter"] {
        tmux.send(k);
        std::thread::sleep(Duration::from_millis(120));
    }
    let screen = tmux.wait_for("the dialog closed, saying so", WAIT, |s| {
        s.contains("approve dialog closed") && !s.contains("Approve proposal")
    });
    assert!(!screen.contains("KILL SWITCH"), "{screen}");

    // Time for anything sent to have been decided and executed, then ask the gateway.
    std::thread::sleep(Duration::from_secs(3));
    let (token, rt) = supervisor(&dirs);
    let items = get(
        &rt,
        format!("http://{host}/gate/v1/inbox?status=all"),
        &token,
    );
    let items = items["items"].as_array().expect("items").clone();
    assert!(!items.is_empty(), "the demo agent's item is listed");
    for i in &items {
        assert_eq!(i["status"], "pending", "nothing was decided: {i}");
    }
    let journal = get(&rt, format!("http://{host}/gate/v1/journal"), &token);
    let records = journal["records"].as_array().expect("records").clone();
    for r in &records {
        assert!(
            !["approve", "override", "reject", "auto_approve"]
                .contains(&r["kind"].as_str().unwrap_or("")),
            "the journal has a decision: {r}"
        );
    }
    tmux.quit_and_check_restored();
}
