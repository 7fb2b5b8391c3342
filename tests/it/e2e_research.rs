//! End to end: a research run started from the console's command line against a real `agentdesk
//! serve` child process, watched on the Research tab (harness in `tui.rs`).

use crate::tui::{Dirs, Server, Tmux, WAIT, console_command, header_ok, tmux_available};
use std::time::Duration;

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
    // Generous: the run's agents backtest, and with the whole suite on two cores they were seen
    // to need more than a minute to appear (it took 2.4 s alone).
    let screen = tmux.wait_for("the lead and its agents", Duration::from_secs(180), |s| {
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
        Duration::from_secs(300),
        |s| s.contains(" completed ") || s.contains("report.md"),
    );
    tmux.quit_and_check_restored();
    drop(server);
}
