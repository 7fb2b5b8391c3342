//! The one modal slot. Whatever takes the keys away from the tabs — a dialog, a form, the tool
//! editor, the help, the command line, the filter being typed — is one variant that owns its state,
//! so two of them can never be open at once and closing one drops its state (the signing secret
//! leaves memory with its overlay).
//!
//! Lower layer: the modals' states only. The keys a modal takes are routed in `app/input.rs`.

use super::command::TradeArgs;
use super::deliberate::Deliberate;
use super::forms::backtest::BacktestForm;
use super::forms::signals::{BuilderPanel, DestinationForm, Revealed};
use super::forms::tool_editor::ToolEditor;
use super::inbox::dialog::ApproveDialog;
use crate::api::model::GateStandingRequest;
use ratatui_textarea::TextArea;

#[derive(Debug)]
pub enum Modal {
    /// The help overlay, scrolled down this many lines.
    Help {
        scroll: u16,
        /// What `/` searches the help for: only the keys and commands that mention it are shown.
        query: String,
        /// The search is being typed (`/` until Enter or Esc).
        typing: bool,
    },
    /// Asks before confirming an inbox item; the dialog owns its scroll, re-check and override
    /// step, and every key while it is open.
    Approve(ApproveDialog),
    /// A question whose answer is final: rejecting on a gateway, the kill switch, a `/trade` on
    /// LIVE, a standing approval, stopping a research run, quitting with a confirm in flight.
    Confirm(Confirm),
    /// Everything about the selected Discovery row.
    Details {
        scroll: u16,
    },
    /// A research artifact by index.
    Artifact {
        index: usize,
        scroll: u16,
    },
    CommandLine(CommandLine),
    /// The Logs or Discovery filter takes the typed characters.
    Filter,
    BacktestForm(BacktestForm),
    ToolEditor(ToolEditor),
    DestinationForm(DestinationForm),
    /// The signing secret of a destination just created, shown once.
    Secret(Revealed),
    BuilderFee(BuilderPanel),
    /// The gateway's live standing approvals with their countdown (`/auto`).
    Standing {
        scroll: u16,
    },
    /// The gateway's agents with their state (`/agents`); `selected` is the agent `s` and `r`
    /// prefill a command for.
    Agents {
        scroll: u16,
        selected: usize,
    },
    /// The gateway's policy in force: default rules, agents' overrides, today's use (`/policy`).
    Policy {
        scroll: u16,
    },
}

/// A question whose answer is final, and the guard every such question shares
/// (`deliberate.rs`): its deciding key counts only once it could be read and out of a burst; any
/// key that is not one of its keys closes it without deciding.
#[derive(Debug, Clone, PartialEq)]
pub struct Confirm {
    pub what: Deciding,
    pub guard: Deliberate,
}

impl Confirm {
    pub fn new(what: Deciding, now: chrono::DateTime<chrono::Utc>) -> Confirm {
        Confirm {
            what,
            guard: Deliberate::new(now),
        }
    }

    /// The question's name, in the line that says it closed without deciding.
    pub fn name(&self) -> &'static str {
        match self.what {
            Deciding::Quit => "quit question",
            Deciding::StopRun(_) => "stop question",
            Deciding::Kill { .. } => "kill switch question",
            Deciding::Reject { .. } => "reject question",
            Deciding::Trade(_) => "trade question",
            Deciding::Standing(_) => "standing approval question",
            Deciding::Suspend { .. } => "suspend question",
            Deciding::Resume(_) => "resume question",
        }
    }
}

/// What a final question decides when it is answered yes.
#[derive(Debug, Clone, PartialEq)]
pub enum Deciding {
    /// Quit while a confirm is in flight.
    Quit,
    /// Stop the research run with this id.
    StopRun(String),
    /// Turn the gateway's kill switch on (with this reason) or off.
    Kill { on: bool, reason: String },
    /// Reject an item on a gateway, where a rejection is final (`decider.rs`); `reason` is what
    /// the agent's confirm is refused with (None: the default reason).
    Reject { id: String, reason: Option<String> },
    /// Execute a `/trade` at once, on a LIVE account.
    Trade(Box<TradeArgs>),
    /// Create a standing approval on the gateway (`/auto`).
    Standing(Box<GateStandingRequest>),
    /// Suspend an agent on the gateway, telling it the reason (`/suspend`).
    Suspend { agent: String, reason: String },
    /// End an agent's suspension (`/resume`).
    Resume(String),
}

/// What a deliberate key decided, held (`deliberate::Held`, `deliberate::HOLD`) before it is
/// carried out.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// The approve dialog's yes, overriding these rules (none: a plain approval).
    Approve {
        id: String,
        overrides: Vec<String>,
    },
    Confirm(Deciding),
    /// The builder-fee panel's yes: sign and send the approval (the panel stays open for the
    /// answer).
    SignBuilderFee,
}

impl Modal {
    /// The help overlay, at its top, not searching.
    pub fn help() -> Modal {
        Modal::Help {
            scroll: 0,
            query: String::new(),
            typing: false,
        }
    }
}

/// The command line (`:`), with its history and Tab completion; `app/command_line.rs` runs what it
/// parses.
#[derive(Debug)]
pub struct CommandLine {
    pub input: TextArea<'static>,
    pub history: Vec<String>,
    /// Position while walking the history with Up/Down.
    pub history_pos: Option<usize>,
    /// Candidates from the last Tab, cycled by further Tabs.
    pub completions: Vec<String>,
    pub completion_pos: usize,
}

impl CommandLine {
    pub fn new(history: Vec<String>) -> Self {
        CommandLine {
            input: TextArea::default(),
            history,
            history_pos: None,
            completions: Vec::new(),
            completion_pos: 0,
        }
    }

    pub fn text(&self) -> String {
        self.input.lines().join(" ")
    }

    pub fn set_text(&mut self, text: &str) {
        self.input = TextArea::new(vec![text.to_string()]);
        self.input.move_cursor(ratatui_textarea::CursorMove::End);
    }
}
