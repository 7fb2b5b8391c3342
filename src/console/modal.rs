//! The one modal slot. Whatever takes the keys away from the tabs — a dialog, a form, the tool
//! editor, the help, the command line, the filter being typed — is one variant that owns its state,
//! so two of them can never be open at once and closing one drops its state (the signing secret
//! leaves memory with its overlay).
//!
//! Lower layer: the modals' states only. The keys a modal takes are routed in `input.rs`.

use super::forms::backtest::BacktestForm;
use super::forms::signals::{BuilderPanel, DestinationForm, Revealed};
use super::forms::tool_editor::ToolEditor;
use super::inbox::dialog::ApproveDialog;
use ratatui_textarea::TextArea;

#[derive(Debug)]
pub enum Modal {
    /// The help overlay, scrolled down this many lines.
    Help {
        scroll: u16,
    },
    /// Asks before confirming an inbox item; the dialog owns its scroll, re-check and override
    /// step, and every key while it is open.
    Approve(ApproveDialog),
    /// Asks before quitting while a confirm is in flight.
    QuitConfirm,
    /// Everything about the selected Discovery row.
    Details {
        scroll: u16,
    },
    /// A research artifact by index.
    Artifact {
        index: usize,
        scroll: u16,
    },
    /// Asks before stopping the research run with this id.
    StopRun(String),
    CommandLine(CommandLine),
    /// The Logs or Discovery filter takes the typed characters.
    Filter,
    BacktestForm(BacktestForm),
    ToolEditor(ToolEditor),
    DestinationForm(DestinationForm),
    /// The signing secret of a destination just created, shown once.
    Secret(Revealed),
    BuilderFee(BuilderPanel),
    /// Asks before turning the gateway's kill switch on (with this reason) or off.
    KillConfirm {
        on: bool,
        reason: String,
    },
    /// Asks before rejecting an item on a gateway, where a rejection is final (`decider.rs`);
    /// `reason` is what the agent's confirm is refused with (None: the default reason).
    RejectConfirm {
        id: String,
        reason: Option<String>,
    },
    /// The gateway's live standing approvals with their countdown (`/auto`).
    Standing {
        scroll: u16,
    },
    /// The gateway's policy in force: default rules, agents' overrides, today's use (`/policy`).
    Policy {
        scroll: u16,
    },
}

/// The command line (`:`), with its history and Tab completion; `command_line.rs` runs what it
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
