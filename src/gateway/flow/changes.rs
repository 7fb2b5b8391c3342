//! The supervisor's inbox as a long poll (`GET /gate/v1/inbox?since=&wait=`): held while the
//! store's count of changes (`store::Watched`) is still the one the console last saw, so an idle
//! console asks about twice a minute and still sees a staging or a decision at once.

use crate::gateway::gate::Gate;
use crate::gateway::model::error::{GateError, Kind};
use std::collections::HashMap;
use std::time::Duration;

/// The longest the inbox's long poll is held (`wait`, seconds).
pub const WAIT_MAX: u64 = 30;
/// How long a long poll is held at most on a store other instances write too.
const SHARED_WAIT: Duration = Duration::from_secs(1);
/// Past an item's expiry before the held poll answers, so the expiry is due when it reads.
const EXPIRY_SLACK: Duration = Duration::from_millis(50);

/// `since` and `wait` of the query (a wait of zero: answer at once), each refused by name.
pub fn long_poll(query: &HashMap<String, String>) -> Result<(Option<u64>, Duration), GateError> {
    let since = match query.get("since") {
        None => None,
        Some(v) => Some(v.trim().parse::<u64>().map_err(|_| {
            GateError::new(
                Kind::Invalid,
                "invalid_query",
                format!("since must be the version of an earlier answer, got {v:?}"),
            )
            .with_field("since")
        })?),
    };
    let wait = match query.get("wait").map(|v| (v, v.trim().parse::<u64>())) {
        None => 0,
        Some((_, Ok(secs))) if secs <= WAIT_MAX => secs,
        Some((v, _)) => {
            return Err(GateError::new(
                Kind::Invalid,
                "invalid_query",
                format!("wait must be whole seconds from 0 to {WAIT_MAX}, got {v:?}"),
            )
            .with_field("wait"));
        }
    };
    Ok((since, Duration::from_secs(wait)))
}

/// A long poll: holds the inbox's answer while this process's count of changes is still `since`,
/// at most `wait`, and never past the moment a pending or approved item expires (that changes
/// what the inbox shows without a write). On a shared store another instance's change does not
/// move the count, so there the wait is at most [`SHARED_WAIT`], the cadence it replaces.
pub async fn wait_for_change(gate: &Gate, since: u64, wait: Duration) -> Result<(), GateError> {
    let Some(mut changes) = gate.store.changes() else {
        return Ok(());
    };
    if *changes.borrow_and_update() != since {
        return Ok(());
    }
    let mut wait = wait;
    if gate.store.shared() {
        wait = wait.min(SHARED_WAIT);
    }
    let now = gate.now();
    if let Some(soonest) = gate.store.next_expiry().await.map_err(GateError::store)? {
        let until = (soonest - now).to_std().unwrap_or_default() + EXPIRY_SLACK;
        wait = wait.min(until);
    }
    // A change, the time up, or the gateway stopping (a held poll must not hold its graceful
    // shutdown): answer what there is.
    tokio::select! {
        _ = tokio::time::timeout(wait, changes.changed()) => {}
        _ = gate.connections.stop.cancelled() => {}
    }
    Ok(())
}
