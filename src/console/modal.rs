//! The one modal slot. Whatever takes the keys away from the tabs — a dialog, a form, the tool
//! editor, the help, the command line, the filter being typed — is one variant that owns its state,
//! so two of them can never be open at once and closing one drops its state (the signing secret
//! leaves memory with its overlay).

use super::action::Effect;
use super::app::App;
use super::command_line::CommandLine;
use super::keymap::KeyAction;
use super::tab::Tab;
use super::tabs::backtests::BacktestForm;
use super::tabs::signals::{BuilderPanel, DestinationForm, Revealed};
use super::tabs::tools::ToolEditor;
use crossterm::event::{KeyCode, KeyEvent};

#[derive(Debug)]
pub enum Modal {
    /// The help overlay, scrolled down this many lines.
    Help {
        scroll: u16,
    },
    /// Asks before confirming this inbox item.
    Approve(String),
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
}

/// A scrolled overlay's new offset after `action`, or None when the action closes it.
fn scrolled(scroll: u16, action: Option<KeyAction>, page: usize) -> Option<u16> {
    let step: i32 = match action {
        Some(KeyAction::Up) => -1,
        Some(KeyAction::Down) => 1,
        Some(KeyAction::PageUp) => -(page as i32),
        Some(KeyAction::PageDown) => page as i32,
        Some(KeyAction::Top) => -(scroll as i32),
        Some(KeyAction::Cancel | KeyAction::Quit | KeyAction::Select) => return None,
        _ => 0,
    };
    Some((scroll as i32 + step).clamp(0, u16::MAX as i32) as u16)
}

impl App {
    /// Keys while a modal is open: all of them go to it.
    pub(crate) fn on_modal_key(&mut self, key: KeyEvent, fx: &mut Vec<Effect>) {
        let action = self.keymap.action(&key);
        let page = self.page();
        let Some(modal) = self.modal.as_mut() else {
            return;
        };
        match modal {
            Modal::CommandLine(_) => self.on_command_key(key, fx),
            Modal::Filter => self.on_filter_key(key),
            Modal::BacktestForm(_) => self.on_form_key(key, fx),
            Modal::ToolEditor(_) => self.on_editor_key(key, fx),
            Modal::DestinationForm(_) => self.on_destination_form_key(key, fx),
            Modal::Secret(_) => self.on_secret_key(action, fx),
            Modal::BuilderFee(_) => self.on_builder_fee_key(action, fx),
            Modal::Approve(id) => match action {
                Some(KeyAction::ConfirmYes) => {
                    let id = id.clone();
                    self.modal = None;
                    self.approve(&id, fx);
                }
                Some(KeyAction::Cancel | KeyAction::Quit) => self.modal = None,
                // Enter alone never confirms: only an explicit `y` does.
                _ => {}
            },
            Modal::QuitConfirm => match action {
                Some(KeyAction::ConfirmYes) => {
                    self.should_quit = true;
                    fx.push(Effect::Quit);
                }
                Some(KeyAction::Cancel) => self.modal = None,
                _ => {}
            },
            Modal::StopRun(run_id) => match action {
                Some(KeyAction::ConfirmYes) => {
                    fx.push(Effect::StopResearch(run_id.clone()));
                    self.modal = None;
                    self.research.poll.in_flight = true;
                }
                Some(KeyAction::Cancel | KeyAction::Quit) => self.modal = None,
                _ => {}
            },
            Modal::Help { scroll } => {
                let action = action.map(|a| match a {
                    KeyAction::Help => KeyAction::Cancel,
                    other => other,
                });
                match scrolled(*scroll, action, page) {
                    Some(s) => *scroll = s,
                    None => self.modal = None,
                }
            }
            Modal::Details { scroll } => match action {
                Some(KeyAction::Backtest) => {
                    self.modal = None;
                    self.open_backtest_form();
                }
                Some(KeyAction::Propose) => {
                    self.modal = None;
                    self.propose_from_row();
                }
                _ => match scrolled(*scroll, action, page) {
                    Some(s) => *scroll = s,
                    None => self.modal = None,
                },
            },
            Modal::Artifact { scroll, .. } => match action {
                Some(KeyAction::Bottom) => *scroll = u16::MAX,
                _ => match scrolled(*scroll, action, page) {
                    Some(s) => *scroll = s,
                    None => self.modal = None,
                },
            },
        }
    }

    /// Typing into the Logs or Discovery filter; Enter or Esc ends it and keeps the text.
    fn on_filter_key(&mut self, key: KeyEvent) {
        let edit = match key.code {
            KeyCode::Enter | KeyCode::Esc => {
                self.modal = None;
                return;
            }
            KeyCode::Backspace => None,
            KeyCode::Char(c) => Some(c),
            _ => return,
        };
        if self.tab == Tab::Discovery {
            self.edit_discovery_filter(edit);
        } else {
            self.edit_logs_filter(edit);
        }
    }
}
