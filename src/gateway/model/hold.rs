//! Why an approved item has not run, as its note says it.

/// The note of an approved item whose agent's key this instance does not hold.
pub const WAITING_FOR_KEY: &str = "waiting for the agent to reconnect";

/// The note of an item a stopped gateway left executing, until reconciliation settles it.
pub const RECOVERED: &str =
    "the gateway stopped while executing this item; it runs again with the agent's key";

/// The note of a recovered item whose fate the service could not tell.
pub const OUTCOME_UNKNOWN: &str = "outcome unknown: the gateway stopped while executing it; it \
     asks the service again (which runs it at most once) on the agent's next request";

/// The note of a recovered item the service never ran.
pub const NOT_RUN: &str = "not executed: the gateway stopped before the service ran it; it runs \
     on the agent's next request";
