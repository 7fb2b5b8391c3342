//! The Proposals tab: the approval inbox with each item's countdown, the selected item's details
//! and risk against live positions, and the history of decisions. The inbox itself is shared
//! (`console::inbox`): approving works from every tab.

pub mod risk;
pub mod shown;
pub mod view;
