//! What happens to a request, in the order it happens: the guard judges it with the account's live
//! facts, the inbox stages it, a supervisor decides, execution sends it upstream, reconciliation
//! settles what a restart left, and the listing shows the supervisor where each item stands. The
//! top of the domain: uses the gate's state ([`super::gate`]), the rules, the store and the
//! upstream; the edge ([`super::http`]) calls into it.

pub mod changes;
pub mod decide;
pub mod execute;
pub mod forward;
pub mod guard;
pub mod halt;
pub mod inbox;
pub mod items;
pub mod link;
pub mod listing;
pub mod poll;
pub mod reconcile;
pub mod suspend;
pub mod tools;
