//! The tabs and the Discovery tab's views, by name: what the layout, the key router and the
//! command line address screens by. Lower layer: imports nothing from `tabs/`.

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
            Tab::Proposals => &[Pane::Inbox, Pane::Detail, Pane::Decisions],
            Tab::Logs => &[Pane::Audit, Pane::Requests, Pane::Messages],
            // One table at a time: the view selected with h/l (see `App::focused_pane`).
            Tab::Discovery => &[
                Pane::Strategies,
                Pane::TopBacktests,
                Pane::TopLive,
                Pane::Combos,
            ],
            Tab::Backtests => &[Pane::Jobs, Pane::Stats, Pane::Trades],
            Tab::Research => &[Pane::Agents, Pane::Artifacts, Pane::Transcript],
            Tab::Tools => &[Pane::Tools, Pane::Schema, Pane::Result],
            Tab::Chat => &[Pane::ChatLog],
            Tab::Signals => &[Pane::Destinations, Pane::Deliveries],
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DView {
    #[default]
    Strategies,
    TopBacktests,
    TopLive,
    Combos,
}

impl DView {
    pub const ALL: [DView; 4] = [
        DView::Strategies,
        DView::TopBacktests,
        DView::TopLive,
        DView::Combos,
    ];

    pub fn title(self) -> &'static str {
        match self {
            DView::Strategies => "Strategies",
            DView::TopBacktests => "Top backtests",
            DView::TopLive => "Top live",
            DView::Combos => "Optimized combos",
        }
    }

    pub fn pane(self) -> Pane {
        match self {
            DView::Strategies => Pane::Strategies,
            DView::TopBacktests => Pane::TopBacktests,
            DView::TopLive => Pane::TopLive,
            DView::Combos => Pane::Combos,
        }
    }

    pub fn of_pane(pane: Pane) -> Option<DView> {
        DView::ALL.into_iter().find(|v| v.pane() == pane)
    }

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn step(self, delta: i64) -> DView {
        let n = DView::ALL.len() as i64;
        DView::ALL[(self.index() as i64 + delta).rem_euclid(n) as usize]
    }
}
