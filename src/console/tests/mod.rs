//! Console tests: `App::update` driven with an injected clock, and insta snapshots of the views
//! from seeded data. Everything is deterministic: fixed times, no wall clock.

mod agents;
mod charts;
mod clock;
mod contract;
mod deliberate;
mod detail_pane;
mod discovery;
mod feeds;
mod fixtures;
mod gate;
mod gate_decisions;
mod gate_poll;
mod guard;
mod help_search;
mod inbox;
mod journal;
mod limits;
mod policy;
mod reconcile;
mod screens;
mod signals;
mod snapshots;
mod step_up;
mod strip;
mod suspend;
mod tables;
mod update;
mod zoom;
