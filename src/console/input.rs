//! Keys and the mouse outside modals: keys every tab shares, then the tab's own, then cursor
//! movement in the focused pane; clicks pick tabs, views and rows, the wheel scrolls.

use crate::console::action::Effect;
use crate::console::app::{App, ToastLevel};
use crate::console::inbox::dialog::{ApproveDialog, BURST, Context, Outcome};
use crate::console::keymap::KeyAction;
use crate::console::layout::{self, Pane};
use crate::console::modal::Modal;
use crate::console::tab::Tab;
use crate::console::tabs::{chat, research};
use crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEventKind,
};

impl App {
    pub(crate) fn on_key(&mut self, key: KeyEvent, fx: &mut Vec<Effect>) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        self.dirty = true;
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            self.request_quit(fx);
            return;
        }
        if self.modal.is_some() {
            self.on_modal_key(key, fx);
            return;
        }
        // Keys that came in one burst with the stray key that closed the approve dialog (pasted
        // or typed ahead, meant for something else) reach no binding either.
        if let Some(at) = self.swallow_burst.take()
            && self.now - at < BURST
        {
            self.swallow_burst = Some(self.now);
            return;
        }
        let Some(action) = self.keymap.action(&key) else {
            return;
        };
        if self.on_global_key(action, fx) {
            return;
        }
        let pane = self.focused_pane();
        if self.on_tab_key(action, pane, fx) {
            return;
        }
        self.on_navigation_key(action, pane);
    }

    /// Keys that mean the same on every tab.
    fn on_global_key(&mut self, action: KeyAction, fx: &mut Vec<Effect>) -> bool {
        match action {
            KeyAction::Quit => self.request_quit(fx),
            KeyAction::Help => self.modal = Some(Modal::Help { scroll: 0 }),
            KeyAction::CommandLine => self.open_command_line(),
            KeyAction::NextTab => self.set_tab(next_of(&Tab::ALL, self.tab, 1)),
            KeyAction::PrevTab => self.set_tab(next_of(&Tab::ALL, self.tab, -1)),
            KeyAction::GoTab(n) => {
                if let Some(tab) = Tab::ALL.get((n as usize).wrapping_sub(1)) {
                    self.set_tab(*tab);
                }
            }
            KeyAction::Refresh => self.refresh(),
            // The inbox item under the cursor: the Desk strip's, else the Proposals list's.
            KeyAction::Approve => {
                if let Some(id) = self.acting_on() {
                    self.start_approval(&id);
                }
            }
            KeyAction::Reject => {
                if let Some(id) = self.acting_on() {
                    self.reject(&id, fx);
                }
            }
            KeyAction::Undo => self.undo_dismissal(fx),
            KeyAction::BuilderFee => self.open_builder_fee(fx),
            KeyAction::Policy => self.show_policy(fx),
            _ => return false,
        }
        true
    }

    /// Focus and cursor movement in the focused pane, for keys the tab left alone.
    fn on_navigation_key(&mut self, action: KeyAction, pane: Pane) {
        match action {
            KeyAction::FocusNext => self.focus = (self.focus + 1) % self.tab.panes().len(),
            KeyAction::FocusPrev => {
                let n = self.tab.panes().len();
                self.focus = (self.focus + n - 1) % n;
            }
            KeyAction::Up | KeyAction::Left => self.move_selection(pane, -1),
            KeyAction::Down | KeyAction::Right => self.move_selection(pane, 1),
            KeyAction::PageUp => self.move_selection(pane, -(self.page() as i64)),
            KeyAction::PageDown => self.move_selection(pane, self.page() as i64),
            KeyAction::Top | KeyAction::Bottom
                if matches!(pane, Pane::Transcript | Pane::ChatLog) =>
            {
                *self.text_scroll(pane) = self.scroll_end(pane, action);
            }
            KeyAction::Top => self.select_row(pane, 0),
            KeyAction::Bottom => {
                let len = self.pane_len(pane);
                self.select_row(pane, len.saturating_sub(1));
            }
            _ => {}
        }
    }

    pub(crate) fn page(&self) -> usize {
        (self.size.1 as usize / 3).max(1)
    }

    pub(crate) fn move_selection(&mut self, pane: Pane, delta: i64) {
        if matches!(pane, Pane::Transcript | Pane::ChatLog) {
            // Text panes scroll: up (negative) goes back in time, away from the newest line.
            let max = self.text_pane_max_scroll(pane);
            let scroll = self.text_scroll(pane);
            *scroll = (*scroll as i64 - delta).clamp(0, max as i64) as usize;
            return;
        }
        let len = self.pane_len(pane) as i64;
        if len == 0 {
            return;
        }
        let cur = self.selected(pane) as i64;
        self.select_row(pane, (cur + delta).clamp(0, len - 1) as usize);
        if pane == Pane::Jobs {
            // Another job: its trades start from the top.
            self.selected.insert(Pane::Trades, 0);
        }
        if pane == Pane::Destinations {
            self.destination_selected();
        }
    }

    /// The cursor goes to `row`; in an inbox pane, that row's proposal is what is selected.
    pub(crate) fn select_row(&mut self, pane: Pane, row: usize) {
        self.selected.insert(pane, row);
        if matches!(pane, Pane::Inbox | Pane::Strip) {
            self.select_inbox_row(pane, row);
        }
    }

    /// A text pane's scroll offset, lines up from the newest.
    fn text_scroll(&mut self, pane: Pane) -> &mut usize {
        match pane {
            Pane::Transcript => self.research.scroll_mut(),
            _ => self.chat.scroll_mut(),
        }
    }

    /// How far a text pane can scroll up: its wrapped lines beyond one screenful.
    pub(crate) fn text_pane_max_scroll(&self, pane: Pane) -> usize {
        let screen = layout::compute(self.size.0, self.size.1, &self.shape());
        let r = screen.pane(pane);
        let width = r.width.saturating_sub(2) as usize;
        let lines = match pane {
            Pane::Transcript => research::transcript_lines(&self.research, width).len(),
            _ => chat::chat_lines(&self.chat, width).len(),
        };
        lines.saturating_sub(layout::text_rows(r))
    }
    /// Top (the oldest line) or Bottom (follow the newest) of a text pane, as its scroll offset.
    pub(crate) fn scroll_end(&self, pane: Pane, action: KeyAction) -> usize {
        if action == KeyAction::Top {
            self.text_pane_max_scroll(pane)
        } else {
            0
        }
    }

    pub(crate) fn request_quit(&mut self, fx: &mut Vec<Effect>) {
        if self.inbox.confirm_in_flight() {
            self.modal = Some(Modal::QuitConfirm);
        } else {
            self.should_quit = true;
            fx.push(Effect::Quit);
        }
    }

    pub(crate) fn on_mouse(&mut self, m: crossterm::event::MouseEvent) {
        // An open modal owns the input: a click or a wheel underneath it must not switch tabs
        // or move the selection the supervisor is deciding on.
        if self.modal.is_some() {
            return;
        }
        let screen = layout::compute(self.size.0, self.size.1, &self.shape());
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                if let Some(tab) = screen.tab_at(m.column, m.row) {
                    self.set_tab(tab);
                    self.dirty = true;
                    return;
                }
                if let Some(view) = screen.view_at(m.column, m.row) {
                    self.discovery.switch_view(view, self.now);
                    self.dirty = true;
                    return;
                }
                if let Some((pane, row)) = screen.row_at(m.column, m.row) {
                    if let Some(i) = self.tab.panes().iter().position(|p| *p == pane) {
                        self.focus = i;
                    }
                    let offset = layout::offset(self.selected(pane), screen.rows(pane));
                    let idx = offset + row;
                    if idx < self.pane_len(pane) {
                        self.select_row(pane, idx);
                        if pane == Pane::Destinations {
                            self.destination_selected();
                        }
                    }
                    self.dirty = true;
                }
            }
            MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
                let delta = if m.kind == MouseEventKind::ScrollDown {
                    3
                } else {
                    -3
                };
                let pane = screen
                    .pane_at(m.column, m.row)
                    .unwrap_or_else(|| self.focused_pane());
                self.move_selection(pane, delta);
                self.dirty = true;
            }
            _ => {}
        }
    }
}

fn next_of(all: &[Tab], cur: Tab, step: i64) -> Tab {
    let i = all.iter().position(|t| *t == cur).unwrap_or(0) as i64;
    let n = all.len() as i64;
    all[((i + step).rem_euclid(n)) as usize]
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
        let help_max = matches!(self.modal, Some(Modal::Help { .. }))
            .then(|| crate::console::help::max_scroll(self, self.size))
            .unwrap_or(0);
        let Some(modal) = self.modal.as_mut() else {
            return;
        };
        match modal {
            Modal::CommandLine(_) => self.on_command_key(key, fx),
            Modal::Filter => self.on_filter_key(key, fx),
            Modal::BacktestForm(_) => self.on_form_key(key, fx),
            Modal::ToolEditor(_) => self.on_editor_key(key, fx),
            Modal::DestinationForm(_) => self.on_destination_form_key(key, fx),
            Modal::Secret(_) => self.on_secret_key(action, fx),
            Modal::BuilderFee(_) => self.on_builder_fee_key(action, fx),
            Modal::Approve(_) => self.on_approve_key(key, action, fx),
            Modal::KillConfirm { on, reason } => match action {
                Some(KeyAction::ConfirmYes) => {
                    fx.push(Effect::GateSetKill {
                        on: *on,
                        reason: reason.clone(),
                    });
                    self.modal = None;
                }
                Some(KeyAction::Cancel | KeyAction::Quit) => self.modal = None,
                _ => {}
            },
            Modal::RejectConfirm { id, reason } => match action {
                Some(KeyAction::ConfirmYes) => {
                    let (id, reason) = (id.clone(), reason.clone());
                    self.modal = None;
                    self.reject_on_gate(&id, reason, fx);
                }
                Some(KeyAction::Cancel | KeyAction::Quit) => self.modal = None,
                _ => {}
            },
            Modal::Standing { scroll } => match scrolled(*scroll, action, page) {
                Some(s) => *scroll = s,
                None => self.modal = None,
            },
            Modal::Policy { scroll } => match scrolled(*scroll, action, page) {
                Some(s) => {
                    let max =
                        crate::console::gate::policy::max_scroll(&self.gate.policy, self.size);
                    *scroll = if action == Some(KeyAction::Bottom) {
                        max
                    } else {
                        s.min(max)
                    };
                }
                None => self.modal = None,
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
                    self.research.stopping();
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
                    Some(s) => {
                        // Kept within the text, so k moves at once after G or a long j.
                        *scroll = if action == Some(KeyAction::Bottom) {
                            help_max
                        } else {
                            s.min(help_max)
                        };
                    }
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
                    self.propose_from_row(fx);
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

    /// The approve dialog decides what a key means (`inbox/dialog.rs`); this performs it. The
    /// key goes nowhere else, whatever it was.
    fn on_approve_key(&mut self, key: KeyEvent, action: Option<KeyAction>, fx: &mut Vec<Effect>) {
        let Some(Modal::Approve(d)) = &self.modal else {
            return;
        };
        let ctx = self.approve_context(d);
        let now = self.now;
        let Some(Modal::Approve(d)) = self.modal.as_mut() else {
            return;
        };
        match d.on_key(&key, action, now, &ctx) {
            Outcome::Nothing => {}
            Outcome::Hint(text) => self.toast(text, ToastLevel::Info),
            Outcome::Close(why) => {
                self.modal = None;
                if let Some(text) = why {
                    // The rest of a burst the stray key came in goes nowhere either.
                    self.swallow_burst = Some(now);
                    self.toast(text, ToastLevel::Info);
                }
            }
            Outcome::Approve { overrides } => {
                let id = d.id.clone();
                let check = d.check.clone();
                // Refused (kill switch, a rule broken and not overridden): the dialog stays
                // and a toast says why.
                if self.gate_refuses(&id, check.as_ref(), &overrides) {
                    return;
                }
                self.modal = None;
                self.approve(&id, overrides, fx);
            }
        }
    }

    /// What the approve dialog needs to know of the rest of the console to judge a key.
    pub(crate) fn approve_context(&self, d: &ApproveDialog) -> Context {
        self.inbox_shown().approve_context(d)
    }

    /// Typing into the Logs or Discovery filter; Enter or Esc ends it and keeps the text.
    fn on_filter_key(&mut self, key: KeyEvent, fx: &mut Vec<Effect>) {
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
            with_ctx!(self, fx, |ctx| self.discovery.edit_filter(edit, ctx));
        } else {
            with_ctx!(self, fx, |ctx| self.logs.edit_filter(
                edit,
                &self.request_log,
                ctx
            ));
        }
    }
}
