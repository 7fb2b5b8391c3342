//! Keys and the mouse outside modals: keys every tab shares, then the tab's own, then cursor
//! movement in the focused pane; clicks pick tabs, views and rows, the wheel scrolls.

use crate::console::action::Effect;
use crate::console::app::{App, ToastLevel};
use crate::console::deliberate::{self, Held};
use crate::console::inbox::dialog::{ApproveDialog, Context, Outcome};
use crate::console::keymap::{KeyAction, KeyBinding};
use crate::console::layout::{self, Pane};
use crate::console::modal::{Confirm, Deciding, Decision, Modal};
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
        let now = self.now;
        // A key while a decision is held (ctrl-c too) means the deciding key was the first of
        // something typed or pasted: nothing is decided, and the rest is typing.
        if self.held_interrupted(fx) {
            return;
        }
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            self.request_quit(fx);
            return;
        }
        let arrival = self.keyboard.arrive(now, printable(&key));
        if self.modal.is_some() {
            self.on_modal_key(key, fx);
            return;
        }
        let action = self.keymap.action(&key);
        if self.keyboard.is_typing() {
            // Only the way into a text field acts while the person types.
            if action == Some(KeyAction::CommandLine) {
                self.keyboard.stop_typing();
                self.open_command_line();
            } else {
                // Still typing: dialogs stay shut for a while after this key too.
                self.keyboard.typing();
                self.say_paused(&key);
            }
            return;
        }
        let Some(action) = action else {
            if printable(&key) {
                self.start_typing(&key);
            }
            return;
        };
        if needs_quiet(action) && !arrival.may_open {
            // Inside a run of keys (the `a` of "say"), or soon after keys that showed typing, a
            // key that opens a dialog or decides is typing too.
            self.say_typing(
                &format!(
                    "`{}` came right after typing: nothing was done — wait a few seconds, then \
                     press it on its own",
                    KeyBinding::from_event(&key)
                ),
                ToastLevel::Info,
            );
            return;
        }
        if self.on_global_key(action, fx) {
            return;
        }
        let pane = self.focused_pane();
        if self.on_table_key(action, pane) || self.on_tab_key(action, pane, fx) {
            return;
        }
        if !self.on_navigation_key(action, pane) && printable(&key) {
            self.start_typing(&key);
        }
    }

    /// A printable key nothing here binds: the person is typing, meant for a text field.
    fn start_typing(&mut self, key: &KeyEvent) {
        self.keyboard.typing();
        self.say_paused(key);
    }

    /// Says that keys are paused, and why, unless a line that says so is on screen; the line
    /// stays while the pause lasts and goes when it ends (it never says "paused" over a key that
    /// acts).
    fn say_paused(&mut self, key: &KeyEvent) {
        let line = deliberate::paused_line();
        let now = self.now;
        if !self
            .toasts
            .iter()
            .any(|t| t.text.ends_with(&line) && t.until > now)
        {
            self.toast(
                format!(
                    "`{}` is not a key here: {line}",
                    KeyBinding::from_event(key)
                ),
                ToastLevel::Info,
            );
        }
        self.keep_paused_line();
    }

    /// A line about what a key or a paste did not do, as the person is typing: it says the keys
    /// are paused too, and stays while they are.
    pub(crate) fn say_typing(&mut self, text: &str, level: ToastLevel) {
        self.keyboard.typing();
        self.toast(format!("{text}; {}", deliberate::paused_line()), level);
        self.keep_paused_line();
    }

    /// The lines that say keys are paused stay until the pause ends.
    fn keep_paused_line(&mut self) {
        let line = deliberate::paused_line();
        if let Some(ends) = self.keyboard.pause_ends() {
            for t in self.toasts.iter_mut().filter(|t| t.text.ends_with(&line)) {
                t.until = t.until.max(ends);
            }
        }
    }

    /// A paste: it goes into the text field that has the keys, and decides nothing anywhere
    /// else. Pasted text is never read as keys.
    pub(crate) fn on_paste(&mut self, text: String, fx: &mut Vec<Effect>) {
        self.dirty = true;
        let now = self.now;
        if self.held_interrupted(fx) {
            return;
        }
        self.keyboard.arrive(now, true);
        let one_line = || {
            text.chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect::<String>()
        };
        let chars = |line: String| {
            line.chars()
                .map(|c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
                .collect::<Vec<_>>()
        };
        match self.modal.as_mut() {
            Some(Modal::CommandLine(line)) => {
                line.input.insert_str(one_line());
                line.completions.clear();
                line.history_pos = None;
            }
            Some(Modal::ToolEditor(editor)) => {
                editor.input.insert_str(&text);
                editor.refused = false;
                let tool = editor.tool.clone();
                let schema = self.tabs.tools.schema_of(&tool);
                if let Some(Modal::ToolEditor(editor)) = self.modal.as_mut() {
                    editor.check(&schema);
                }
            }
            Some(Modal::Filter) => {
                for key in chars(one_line()) {
                    self.on_filter_key(key);
                }
            }
            Some(Modal::BacktestForm(_)) => {
                for key in chars(one_line()) {
                    self.on_form_key(key, fx);
                }
            }
            Some(Modal::DestinationForm(_)) => {
                for key in chars(one_line()) {
                    self.on_destination_form_key(key, fx);
                }
            }
            Some(Modal::Approve(d)) if d.step.is_some() => self.toast(
                "the coin is typed, not pasted: the paste was ignored — nothing was decided",
                ToastLevel::Info,
            ),
            Some(Modal::Approve(_)) | Some(Modal::Confirm(_)) => {
                let name = match &self.modal {
                    Some(Modal::Confirm(c)) => c.name(),
                    _ => "approve dialog",
                };
                self.modal = None;
                self.say_typing(
                    &format!("{name} closed: pasted text is never an answer — nothing was decided"),
                    ToastLevel::Info,
                );
            }
            _ => {
                self.say_typing(
                    &format!(
                        "pasted text ignored ({} characters): a paste goes only into a text \
                         field, and nothing was done",
                        text.chars().count()
                    ),
                    ToastLevel::Info,
                );
            }
        }
    }

    /// A decision waiting out its hold, at a key or a paste: carried out when the hold
    /// passed (the key then acts as usual), dropped when the key came within it (true).
    fn held_interrupted(&mut self, fx: &mut Vec<Effect>) -> bool {
        let Some(held) = self.held.take() else {
            return false;
        };
        if held.is_due(self.now) {
            self.carry_out(held.decision, fx);
            return false;
        }
        // The deciding key was the first letter of something typed or pasted.
        if !matches!(held.decision, Decision::SignBuilderFee) {
            self.modal = None;
        }
        // The key (or paste) that came is typing, and the line says the keys after it are
        // paused as well.
        self.keyboard.arrive(self.now, true);
        self.say_typing(
            "the key that decided was followed by another key (typing or a paste): nothing was \
             decided — press it on its own, then leave the keyboard a moment",
            ToastLevel::Error,
        );
        true
    }

    /// A held decision whose hold passed with no key: carried out now.
    pub(crate) fn settle_held(&mut self, fx: &mut Vec<Effect>) {
        if self.held.as_ref().is_some_and(|h| h.is_due(self.now))
            && let Some(held) = self.held.take()
        {
            self.carry_out(held.decision, fx);
        }
    }

    /// What a final question's yes decided, once it stood on its own.
    fn carry_out(&mut self, decision: Decision, fx: &mut Vec<Effect>) {
        self.dirty = true;
        // The question stayed open, counting down, while the decision was held.
        if matches!(self.modal, Some(Modal::Approve(_) | Modal::Confirm(_)))
            && !matches!(decision, Decision::SignBuilderFee)
        {
            self.modal = None;
        }
        match decision {
            Decision::Approve { id, overrides } => {
                with_inbox!(self, fx, |inbox, ctx| inbox.approve(&id, overrides, ctx));
            }
            Decision::Confirm(Deciding::Quit) => self.quit(fx),
            Decision::Confirm(Deciding::StopRun(run_id)) => {
                fx.push(Effect::StopResearch(run_id));
                self.tabs.research.stopping();
            }
            Decision::Confirm(Deciding::Kill { on, reason }) => {
                fx.push(Effect::GateSetKill { on, reason })
            }
            Decision::Confirm(Deciding::Reject { id, reason }) => {
                with_inbox!(self, fx, |inbox, ctx| inbox
                    .reject_on_gate(&id, reason, ctx));
            }
            Decision::Confirm(Deciding::Trade(args)) => self.trade(&args, fx),
            Decision::Confirm(Deciding::Standing(request)) => self.send_standing(*request, fx),
            Decision::Confirm(Deciding::Suspend { agent, reason }) => {
                fx.push(Effect::GateSuspend { agent, reason })
            }
            Decision::Confirm(Deciding::Resume(agent)) => fx.push(Effect::GateResume(agent)),
            Decision::SignBuilderFee => self.sign_builder_fee(fx),
        }
    }

    /// Keys that mean the same on every tab.
    fn on_global_key(&mut self, action: KeyAction, fx: &mut Vec<Effect>) -> bool {
        match action {
            KeyAction::Quit => self.request_quit(fx),
            KeyAction::Help => self.modal = Some(Modal::help()),
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
            KeyAction::Approve => with_inbox!(self, fx, |inbox, ctx| {
                if let Some(id) = inbox.acting_on(ctx) {
                    inbox.start_approval(&id, ctx);
                }
            }),
            KeyAction::Reject => with_inbox!(self, fx, |inbox, ctx| {
                if let Some(id) = inbox.acting_on(ctx) {
                    inbox.reject(&id, ctx);
                }
            }),
            KeyAction::Undo => with_inbox!(self, fx, |inbox, ctx| inbox.undo_dismissal(ctx)),
            KeyAction::BuilderFee => self.open_builder_fee(fx),
            KeyAction::Policy => self.show_policy(fx),
            KeyAction::Zoom => self.toggle_zoom(),
            KeyAction::Copy => self.copy_selected(fx),
            _ => return false,
        }
        true
    }

    /// `/`, `s` and `S` on a table pane: the same on every table (`app/tables.rs`).
    fn on_table_key(&mut self, action: KeyAction, pane: Pane) -> bool {
        let table_key = matches!(
            action,
            KeyAction::Filter | KeyAction::SortNext | KeyAction::SortReverse
        );
        if table_key && self.rows_of(pane).is_none() {
            // Said, not ignored: a key that does nothing looks broken.
            self.toast(
                format!(
                    "{} is not a table: / and s filter and sort the tables",
                    pane.title()
                ),
                ToastLevel::Info,
            );
            return true;
        }
        match action {
            KeyAction::Filter => self.open_table_filter(pane),
            KeyAction::SortNext => self.sort_table(pane, false),
            KeyAction::SortReverse => self.sort_table(pane, true),
            // Esc on a filtered table clears its filter (the sort stays).
            KeyAction::Cancel if !self.tables.query(pane).filter.is_empty() => {
                self.set_query(pane, |q| q.filter.clear())
            }
            _ => false,
        }
    }

    /// `c`: the selected row's id to the terminal's clipboard (OSC 52): the focused table's, or
    /// on the Desk and in Proposals the selected proposal's (the one `a` acts on).
    fn copy_selected(&mut self, fx: &mut Vec<Effect>) {
        let pane = self.focused_pane();
        let id = self.row_id(pane).or_else(|| match self.tab {
            Tab::Desk | Tab::Proposals => {
                with_inbox!(self, fx, |inbox, ctx| inbox.selected_id(ctx))
            }
            _ => None,
        });
        match id {
            Some(id) => {
                use base64::Engine;
                let encoded = base64::engine::general_purpose::STANDARD.encode(id.as_bytes());
                fx.push(Effect::Clipboard(crate::secret::Secret::new(encoded)));
                self.toast(
                    format!("copied {id} (OSC 52: the terminal puts it on its clipboard)"),
                    ToastLevel::Info,
                );
            }
            None => self.toast(
                format!(
                    "nothing to copy here: {} has no row selected with an id",
                    pane.title()
                ),
                ToastLevel::Info,
            ),
        }
    }

    /// Focus and cursor movement in the focused pane, for keys the tab left alone; false when
    /// the key means nothing here. `h`/`l` switch Discovery's views (its own keys) and move no
    /// selection: in a list they are letters, not movement.
    fn on_navigation_key(&mut self, action: KeyAction, pane: Pane) -> bool {
        match action {
            KeyAction::FocusNext | KeyAction::FocusPrev => {
                let n = self.tab.panes().len();
                let step = if action == KeyAction::FocusNext {
                    1
                } else {
                    n - 1
                };
                self.focus = (self.focus + step) % n;
                // Zoomed, the zoom follows the focus: the keys act on the pane in sight.
                if self.zoom.is_some() {
                    self.zoom = Some(self.focused_pane());
                }
            }
            KeyAction::Up => self.move_selection(pane, -1),
            KeyAction::Down => self.move_selection(pane, 1),
            KeyAction::PageUp => self.move_selection(pane, -(self.page() as i64)),
            KeyAction::PageDown => self.move_selection(pane, self.page() as i64),
            KeyAction::Top | KeyAction::Bottom
                if matches!(pane, Pane::Transcript | Pane::ChatLog) =>
            {
                *self.text_scroll(pane) = self.scroll_end(pane, action);
            }
            KeyAction::Top if pane.is_text() => self.scroll_page(pane, i64::MIN),
            KeyAction::Bottom if pane.is_text() => self.scroll_page(pane, i64::MAX),
            KeyAction::Top => self.select_row(pane, 0),
            KeyAction::Bottom => {
                let len = self.pane_len(pane);
                self.select_row(pane, len.saturating_sub(1));
            }
            _ => return false,
        }
        true
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
        if pane.is_text() {
            self.scroll_page(pane, delta);
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
        // Another item, tool or job: its text is read from the top.
        match pane {
            Pane::Inbox => self.selected.insert(Pane::Detail, 0),
            Pane::Tools => self.selected.insert(Pane::Schema, 0),
            Pane::Jobs => self.selected.insert(Pane::Stats, 0),
            _ => None,
        };
        if matches!(pane, Pane::Inbox | Pane::Strip) {
            self.select_inbox_row(pane, row);
        }
    }

    /// A text pane's scroll offset, lines up from the newest.
    fn text_scroll(&mut self, pane: Pane) -> &mut usize {
        match pane {
            Pane::Transcript => self.tabs.research.scroll_mut(),
            _ => self.tabs.chat.scroll_mut(),
        }
    }

    /// How far a text pane can scroll up: its wrapped lines beyond one screenful.
    pub(crate) fn text_pane_max_scroll(&self, pane: Pane) -> usize {
        let screen = layout::compute(self.size.0, self.size.1, &self.shape());
        let r = screen.pane(pane);
        let width = r.width.saturating_sub(2) as usize;
        let lines = match pane {
            Pane::Transcript => research::transcript_lines(&self.tabs.research, width).len(),
            _ => chat::chat_lines(&self.tabs.chat, width).len(),
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
            self.modal = Some(Modal::Confirm(Confirm::new(Deciding::Quit, self.now)));
        } else {
            self.quit(fx);
        }
    }

    /// Every way out: what was approved and has no outcome yet is journaled first.
    pub(crate) fn quit(&mut self, fx: &mut Vec<Effect>) {
        with_inbox!(self, fx, |inbox, ctx| inbox.journal_unsettled(ctx));
        self.should_quit = true;
        fx.push(Effect::Quit);
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
                if self.click_header(m.column, m.row) {
                    return;
                }
                if let Some(tab) = screen.tab_at(m.column, m.row) {
                    self.set_tab(tab);
                    self.dirty = true;
                    return;
                }
                if let Some(view) = screen.view_at(m.column, m.row) {
                    self.tabs.discovery.switch_view(view, self.now);
                    self.dirty = true;
                    return;
                }
                // A click anywhere in a pane focuses it: on a text pane's line as on a row.
                if let Some(pane) = screen.pane_at(m.column, m.row)
                    && let Some(i) = self.tab.panes().iter().position(|p| *p == pane)
                {
                    self.focus = i;
                    self.dirty = true;
                    if pane.is_text() {
                        return;
                    }
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

/// A key that types a character: no ctrl or alt (shift makes capitals).
fn printable(key: &KeyEvent) -> bool {
    matches!(key.code, KeyCode::Char(c) if !c.is_control())
        && !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
}

/// Keys that open a dialog or a form, or decide: they act only after a quiet moment, never
/// inside a run of keys.
fn needs_quiet(action: KeyAction) -> bool {
    matches!(
        action,
        KeyAction::Approve
            | KeyAction::Reject
            | KeyAction::Undo
            | KeyAction::StopRun
            | KeyAction::Propose
            | KeyAction::Backtest
            | KeyAction::BuilderFee
            | KeyAction::Fanout
    )
}

fn next_of(all: &[Tab], cur: Tab, step: i64) -> Tab {
    let i = all.iter().position(|t| *t == cur).unwrap_or(0) as i64;
    let n = all.len() as i64;
    all[((i + step).rem_euclid(n)) as usize]
}

/// A scrolled overlay's new offset after `action`, or None when the action closes it.
pub(super) fn scrolled(scroll: u16, action: Option<KeyAction>, page: usize) -> Option<u16> {
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
            Modal::Filter => self.on_filter_key(key),
            Modal::BacktestForm(_) => self.on_form_key(key, fx),
            Modal::ToolEditor(_) => self.on_editor_key(key, fx),
            Modal::DestinationForm(_) => self.on_destination_form_key(key, fx),
            Modal::Secret(_) => self.on_secret_key(action, fx),
            Modal::BuilderFee(_) => self.on_builder_fee_key(key, action, fx),
            Modal::Approve(_) => self.on_approve_key(key, action),
            Modal::Confirm(_) => self.on_confirm_key(key, action),
            Modal::Agents { .. } => self.on_agents_key(key, action, page),
            Modal::Standing { scroll } => match scrolled(*scroll, action, page) {
                Some(s) => *scroll = s,
                None => self.modal = None,
            },
            Modal::Policy { scroll } => match scrolled(*scroll, action, page) {
                Some(s) => {
                    let max = crate::console::gate::policy::max_scroll(
                        self.inbox.gate().policy(),
                        self.size,
                    );
                    *scroll = if action == Some(KeyAction::Bottom) {
                        max
                    } else {
                        s.min(max)
                    };
                }
                None => self.modal = None,
            },
            Modal::Help {
                scroll,
                query,
                typing,
            } => {
                // Typing a search: every key is text (readline's deletions included) until Enter
                // keeps it or Esc clears it.
                if *typing {
                    match key.code {
                        KeyCode::Enter => *typing = false,
                        KeyCode::Esc => {
                            query.clear();
                            *typing = false;
                        }
                        _ => {
                            crate::console::readline::edit_tail(query, &key);
                        }
                    }
                    *scroll = 0;
                    return;
                }
                if action == Some(KeyAction::Filter) {
                    *typing = true;
                    return;
                }
                if action == Some(KeyAction::Cancel) && !query.is_empty() {
                    query.clear();
                    *scroll = 0;
                    return;
                }
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
    fn on_approve_key(&mut self, key: KeyEvent, action: Option<KeyAction>) {
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
                    // A stray key: the person is typing, so the keys after it act on nothing
                    // until the keyboard is quiet (no other dialog opens in the meantime).
                    self.say_typing(&text, ToastLevel::Info);
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
                // Held with the dialog open and saying so: a key now cancels it.
                self.held = Some(Held {
                    at: now,
                    decision: Decision::Approve { id, overrides },
                });
            }
        }
    }

    /// A final question's keys (`modal::Confirm`): its deciding key once it could be read and
    /// out of a burst, held until the keyboard stays quiet; Esc or `n` closes it; any other key
    /// closes it without deciding, saying so, and the keys after it are typing.
    fn on_confirm_key(&mut self, key: KeyEvent, action: Option<KeyAction>) {
        let now = self.now;
        let yes = self.yes_key();
        let Some(Modal::Confirm(c)) = self.modal.as_mut() else {
            return;
        };
        let judged = c.guard.arrive(now);
        match action {
            Some(KeyAction::ConfirmYes) => match judged.refusal(&yes) {
                Some(why) => self.toast(why, ToastLevel::Info),
                None => {
                    let what = c.what.clone();
                    self.held = Some(Held {
                        at: now,
                        decision: Decision::Confirm(what),
                    });
                }
            },
            Some(KeyAction::Cancel) => self.modal = None,
            _ => {
                let text =
                    deliberate::closed_by(c.name(), &KeyBinding::from_event(&key).to_string());
                self.modal = None;
                self.say_typing(&text, ToastLevel::Info);
            }
        }
    }

    /// What the approve dialog needs to know of the rest of the console to judge a key.
    pub(crate) fn approve_context(&self, d: &ApproveDialog) -> Context {
        self.inbox_shown().approve_context(d)
    }

    /// Typing into the filter of the table it was opened on, with readline's deletions: Enter
    /// ends it and keeps the text, Esc clears it.
    fn on_filter_key(&mut self, key: KeyEvent) {
        let clear = key.code == KeyCode::Esc;
        let pane = self.filter_pane;
        if matches!(key.code, KeyCode::Enter | KeyCode::Esc) {
            self.modal = None;
            self.filter_pane = None;
        }
        if key.code == KeyCode::Enter {
            return;
        }
        let edit = |filter: &mut String| match clear {
            true => {
                let had = !filter.is_empty();
                filter.clear();
                had
            }
            false => crate::console::readline::edit_tail(filter, &key),
        };
        if let Some(pane) = pane {
            self.edit_table_filter(pane, edit);
        }
    }
}
