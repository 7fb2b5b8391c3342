//! The commands as the help overlay and completion list them, and their names and aliases.

/// One entry of the help overlay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandSpec {
    pub name: &'static str,
    pub usage: &'static str,
    pub summary: &'static str,
    /// Answered by the service (sent as typed to its command line), not by the console.
    pub service: bool,
}

pub(super) const PROPOSE_USAGE: &str =
    "/propose <coin> <long|short> <size> [tp=PX] [sl=PX] [lev=N] [limit=PX] [ex=venue|venue2]";
pub(super) const TRADE_USAGE: &str =
    "/trade <coin> <long|short|close> <size> [tp=PX] [sl=PX] [fanout=on|off]";
pub(super) const CONFIRM_USAGE: &str = "/confirm <proposalId>";
pub(super) const REJECT_USAGE: &str = "/reject <id> [reason]";
pub(super) const AGENT_USAGE: &str = "/agent <name|all>";
pub(super) const CLOSE_USAGE: &str = "/close <coin|all>";
pub(super) const BACKTEST_USAGE: &str =
    "/backtest <strategyId> <pair> <timeframe> <days> [param=N ...]";
pub(super) const TOP_USAGE: &str = "/top <backtests|live|combos> [key=value ...]";
pub(super) const JOB_USAGE: &str = "/job <jobId>";

/// Every command, in the order the help overlay lists them.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "propose",
        usage: PROPOSE_USAGE,
        summary: "Stage a trade proposal for approval; size in coins (0.01) or USD ($500, usd=500)",
        service: false,
    },
    CommandSpec {
        name: "trade",
        usage: TRADE_USAGE,
        summary: "Trade NOW, without approval (webhook:alerts or legacy keys); fanout= overrides the Signals tab's default",
        service: false,
    },
    CommandSpec {
        name: "builder-fee",
        usage: "/builder-fee",
        summary: "Show the builder-fee typed data for the account's wallet; y signs it with AGENTDESK_WALLET_KEY",
        service: false,
    },
    CommandSpec {
        name: "confirm",
        usage: CONFIRM_USAGE,
        summary: "Open the approve dialog for a staged proposal (y executes it)",
        service: false,
    },
    CommandSpec {
        name: "reject",
        usage: REJECT_USAGE,
        summary: "Reject an inbox item; on a gateway the agent's confirm is then refused with this reason",
        service: false,
    },
    CommandSpec {
        name: "agent",
        usage: AGENT_USAGE,
        summary: "On a gateway: show only this agent's items in the inbox (by name or fingerprint); all shows every agent's",
        service: false,
    },
    CommandSpec {
        name: "kill",
        usage: super::guard::KILL_USAGE,
        summary: "On a gateway: turn the kill switch on for every agent (asks first; agents are told the reason); /kill off turns it off",
        service: false,
    },
    CommandSpec {
        name: "agents",
        usage: "/agents",
        summary: "On a gateway: every agent with its state (active, or suspended: by whom, when, why), pending items and how it connects",
        service: false,
    },
    CommandSpec {
        name: "suspend",
        usage: super::guard::SUSPEND_USAGE,
        summary: "On a gateway: suspend one agent (asks first; it is told the reason): its new exposure is refused and its items cannot be approved; its closes pass",
        service: false,
    },
    CommandSpec {
        name: "resume",
        usage: super::guard::RESUME_USAGE,
        summary: "On a gateway (admin): end an agent's suspension (asks first)",
        service: false,
    },
    CommandSpec {
        name: "auto",
        usage: super::guard::AUTO_USAGE,
        summary: "On a gateway: approve fitting trades for N minutes (e.g. /auto * BTC,ETH 1000 10); alone: list them with their countdown; revoke N ends one",
        service: false,
    },
    CommandSpec {
        name: "policy",
        usage: "/policy",
        summary: "On a gateway: the policy in force (default rules, each agent's overrides, today's executed notional); also P",
        service: false,
    },
    CommandSpec {
        name: "close",
        usage: CLOSE_USAGE,
        summary: "Stage a close of one coin, or of every position, for approval",
        service: false,
    },
    CommandSpec {
        name: "backtest",
        usage: BACKTEST_USAGE,
        summary: "Run a backtest (e.g. /backtest ema_cross BTC 1h 30 fast=9); follow it on tab 5",
        service: false,
    },
    CommandSpec {
        name: "top",
        usage: TOP_USAGE,
        summary: "Query a Discovery view, e.g. /top combos pair=ETH-USD timeframe=1h days=60; key=default resets",
        service: false,
    },
    CommandSpec {
        name: "job",
        usage: JOB_USAGE,
        summary: "Follow a backtest job by id on the Backtests tab",
        service: false,
    },
    CommandSpec {
        name: "research",
        usage: "/research",
        summary: "Show the research run's status (tab 6)",
        service: true,
    },
    CommandSpec {
        name: "research start",
        usage: "/research start <task>",
        summary: "Start a research run: a lead plans, agents backtest and report",
        service: true,
    },
    CommandSpec {
        name: "research say",
        usage: "/research say <message>",
        summary: "Message the active run's lead",
        service: true,
    },
    CommandSpec {
        name: "research stop",
        usage: "/research stop",
        summary: "Stop the active run (X on tab 6 asks first)",
        service: true,
    },
    CommandSpec {
        name: "chat",
        usage: "/chat <message>",
        summary: "Ask the service's agent; its tool calls and confirm tokens show on tab 8",
        service: false,
    },
    CommandSpec {
        name: "tool",
        usage: "/tool <name> [json args]",
        summary: "Call a tool (tab 7): with valid args it runs, else the editor opens; mutate tools go to the inbox",
        service: false,
    },
    CommandSpec {
        name: "refresh",
        usage: "/refresh",
        summary: "Reload every pane now",
        service: false,
    },
    CommandSpec {
        name: "help",
        usage: "/help",
        summary: "Show commands and key bindings",
        service: false,
    },
    CommandSpec {
        name: "quit",
        usage: "/quit",
        summary: "Leave the console (alias /q)",
        service: false,
    },
];

/// Short names accepted in place of a command name.
pub(super) const ALIASES: &[(&str, &str)] = &[("q", "quit")];

pub(super) fn command_name(token: &str) -> String {
    token.strip_prefix('/').unwrap_or(token).to_lowercase()
}

/// Maps a lower-case name or alias to the canonical name from [`COMMANDS`].
pub(super) fn resolve_name(name: &str) -> Option<&'static str> {
    COMMANDS
        .iter()
        .map(|c| c.name)
        .find(|n| *n == name)
        .or_else(|| {
            ALIASES
                .iter()
                .find(|(alias, _)| *alias == name)
                .map(|(_, n)| *n)
        })
}
