//! One folder per tab: its state (`mod.rs`), its update — its keys and the answers of its
//! requests (`update.rs`) — and its view (`view.rs`). The tabs are named in `tab.rs`; `app.rs`
//! keeps them in one [`Tabs`] and sends each its keys and its moments (scheduled, shown,
//! refreshed) through the one `TabComponent` trait (`console/component.rs`).
//!
//! A converted tab is a component (`console/component.rs`): a struct whose fields are private to
//! its folder, changed only by its own methods with a `Ctx`, drawn by its own `draw` with a
//! `Shown` — every tab but proposals. Proposals
//! is a view of the inbox, which every tab acts on and App keeps (`console/inbox/`). The modals a
//! tab opens own their state in the modal slot; App's side of them is in `app/route.rs` and, for
//! the Signals modals, `app/signal_modals.rs`.

pub mod backtests;
pub mod chat;
pub mod desk;
pub mod discovery;
pub mod logs;
pub mod proposals;
pub mod research;
pub mod signals;
pub mod tools;

use crate::console::component::TabComponent;
use crate::console::layout::Pane;
use crate::console::tab::Tab;
use crate::console::table::Rows;
use chrono::{DateTime, Utc};

/// One value per tab, each reached by its name as a [`TabComponent`] (or by its own type, for what
/// only it does).
pub struct Tabs {
    pub desk: desk::DeskTab,
    pub proposals: proposals::ProposalsTab,
    pub logs: logs::LogsTab,
    pub discovery: discovery::DiscoveryTab,
    pub backtests: backtests::BacktestsTab,
    pub research: research::ResearchTab,
    pub tools: tools::ToolsTab,
    pub chat: chat::ChatTab,
    pub signals: signals::SignalsTab,
}

impl Tabs {
    /// The table pane `pane` of whichever tab has it, as its filter and sort read it.
    pub fn rows(
        &self,
        pane: Pane,
        now: DateTime<Utc>,
        master: Option<usize>,
    ) -> Option<Box<dyn Rows + '_>> {
        let tab: &dyn TabComponent = match pane {
            Pane::Audit => &self.logs,
            Pane::Strategies | Pane::TopBacktests | Pane::TopLive | Pane::Combos => &self.discovery,
            Pane::Jobs | Pane::Trades => &self.backtests,
            Pane::Agents | Pane::Artifacts => &self.research,
            Pane::Tools => &self.tools,
            Pane::Destinations | Pane::Deliveries => &self.signals,
            _ => return None,
        };
        tab.rows(pane, now, master)
    }

    pub fn new(now: DateTime<Utc>) -> Tabs {
        Tabs {
            desk: desk::DeskTab,
            proposals: proposals::ProposalsTab,
            logs: logs::LogsTab::default(),
            discovery: discovery::DiscoveryTab::default(),
            backtests: backtests::BacktestsTab::default(),
            research: research::ResearchTab::new(now),
            tools: tools::ToolsTab::default(),
            chat: chat::ChatTab::default(),
            signals: signals::SignalsTab::new(),
        }
    }

    pub fn get_mut(&mut self, tab: Tab) -> &mut dyn TabComponent {
        match tab {
            Tab::Desk => &mut self.desk,
            Tab::Proposals => &mut self.proposals,
            Tab::Logs => &mut self.logs,
            Tab::Discovery => &mut self.discovery,
            Tab::Backtests => &mut self.backtests,
            Tab::Research => &mut self.research,
            Tab::Tools => &mut self.tools,
            Tab::Chat => &mut self.chat,
            Tab::Signals => &mut self.signals,
        }
    }

    /// Every tab, in `Tab::ALL`'s order (the order their fetches start in).
    pub fn each_mut(&mut self) -> [(Tab, &mut dyn TabComponent); 9] {
        [
            (Tab::Desk, &mut self.desk),
            (Tab::Proposals, &mut self.proposals),
            (Tab::Logs, &mut self.logs),
            (Tab::Discovery, &mut self.discovery),
            (Tab::Backtests, &mut self.backtests),
            (Tab::Research, &mut self.research),
            (Tab::Tools, &mut self.tools),
            (Tab::Chat, &mut self.chat),
            (Tab::Signals, &mut self.signals),
        ]
    }
}
