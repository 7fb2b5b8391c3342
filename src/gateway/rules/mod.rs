//! What the supervisor allows: the policy and its verdicts on a trade, and which of the service's
//! tools move money. Decisions on data the caller brings; no I/O, so a rule reads the same in a
//! test as on a live desk. Above [`super::model`] only.

pub mod controls;
pub mod policy;
pub mod step_up;
pub mod tools;
pub mod verdict;
