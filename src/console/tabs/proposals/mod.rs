//! The Proposals tab: the approval inbox with each item's countdown, the selected item's details
//! and risk against live positions, and the history of decisions. The inbox itself is shared
//! (`console::inbox`): approving works from every tab.

use crate::console::component::TabComponent;

pub mod approve;
pub mod chart;
pub mod risk;
pub mod rows;
pub mod shown;
pub mod view;

/// Proposals has no keys or polls of its own: the inbox's keys are global and its feed is App's.
#[derive(Debug, Clone, Default)]
pub struct ProposalsTab;

impl TabComponent for ProposalsTab {}
