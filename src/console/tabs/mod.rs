//! One folder per tab: its state (`mod.rs`), its update — its keys and the answers of its
//! requests, as `impl App` blocks (`update.rs`) — and its view (`view.rs`). This module lists the
//! tabs and sends each its keys and its moments (shown, refreshed).

pub mod backtests;
pub mod chat;
pub mod desk;
pub mod discovery;
pub mod logs;
pub mod proposals;
pub mod research;
pub mod signals;
pub mod tools;

use super::app::App;
use super::keymap::KeyAction;
use super::layout::Pane;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    Desk,
    Proposals,
    Logs,
    Discovery,
    Backtests,
    Research,
    Tools,
    Chat,
    Signals,
}

impl Tab {
    pub const ALL: [Tab; 9] = [
        Tab::Desk,
        Tab::Proposals,
        Tab::Logs,
        Tab::Discovery,
        Tab::Backtests,
        Tab::Research,
        Tab::Tools,
        Tab::Chat,
        Tab::Signals,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Tab::Desk => "Desk",
            Tab::Proposals => "Proposals",
            Tab::Logs => "Logs",
            Tab::Discovery => "Discovery",
            Tab::Backtests => "Backtests",
            Tab::Research => "Research",
            Tab::Tools => "Tools",
            Tab::Chat => "Chat",
            Tab::Signals => "Signals",
        }
    }

    /// The panes of this tab, in focus order.
    pub fn panes(self) -> &'static [Pane] {
        match self {
            Tab::Desk => &[Pane::Positions, Pane::Orders, Pane::Strip],
            Tab::Proposals => &[Pane::Inbox, Pane::Decisions],
            Tab::Logs => &[Pane::Audit, Pane::Requests],
            // One table at a time: the view selected with h/l (see `App::focused_pane`).
            Tab::Discovery => &[
                Pane::Strategies,
                Pane::TopBacktests,
                Pane::TopLive,
                Pane::Combos,
            ],
            Tab::Backtests => &[Pane::Jobs, Pane::Trades],
            Tab::Research => &[Pane::Agents, Pane::Artifacts, Pane::Transcript],
            Tab::Tools => &[Pane::Tools, Pane::Result],
            Tab::Chat => &[Pane::ChatLog],
            Tab::Signals => &[Pane::Destinations, Pane::Deliveries],
        }
    }
}

impl App {
    /// The tab on screen's own keys; true when handled.
    pub(crate) fn on_tab_key(&mut self, action: KeyAction, pane: Pane) -> bool {
        match self.tab {
            Tab::Desk => self.on_desk_key(action, pane),
            Tab::Proposals => false,
            Tab::Logs => self.on_logs_key(action),
            Tab::Discovery => self.on_discovery_key(action, pane),
            Tab::Backtests => self.on_backtests_key(action),
            Tab::Research => self.on_research_key(action, pane),
            Tab::Tools => self.on_tools_key(action, pane),
            Tab::Chat => self.on_chat_key(action, pane),
            Tab::Signals => self.on_signals_key(action),
        }
    }

    /// The tab just came on screen: what it shows is asked for now.
    pub(crate) fn entered_tab(&mut self) {
        match self.tab {
            Tab::Discovery => self.discovery_due_now(),
            Tab::Research => self.refresh_research(),
            Tab::Tools => self.entered_tools(),
            Tab::Signals => self.refresh_signals(),
            _ => {}
        }
    }

    /// `r`: what only the tab on screen polls is asked for again.
    pub(crate) fn refresh_tab(&mut self) {
        match self.tab {
            Tab::Discovery => self.discovery_due_now(),
            Tab::Tools => self.tools.catalog.ask_at(self.now),
            Tab::Signals => self.refresh_signals(),
            _ => {}
        }
    }
}
