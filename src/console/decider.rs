//! How this console's decisions take effect: through the service itself (`confirm_trade` with the
//! console's key; a rejection is only this console's dismissal) or through a supervision gateway
//! (its supervisor API approves and rejects; the gateway executes and establishes the outcome).
//! Everything that differs between the two — can a rejection be undone, is it asked first, what an
//! approval that got no answer means and what to do next, where an outcome is read — is answered
//! here, so no other part of the console has to know which one it runs on to say the truth.

use crate::api::ApiError;
use crate::api::model::Hold;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decider {
    /// This console confirms with its own key; the service's records say what became of it.
    Service,
    /// A gateway's supervisor API decides; the gateway executes with the agent's key and its inbox
    /// says what became of the item.
    Gateway,
}

/// What an error answer to an approval means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answered {
    /// Refused: nothing was done and the item stands as it was.
    Refused,
    /// The service asked to wait (a quota or a rate limit): nothing was done.
    Wait,
    /// It may or may not have executed: the outcome is read (from the service's records, or from
    /// the gateway, which establishes it itself) before anything is said about it.
    Open,
    /// The service says the proposal already executed, after this console's own confirm: it
    /// executed (whose attempt ran it is read from the records, but not whether it ran).
    AlreadyExecuted,
}

/// The service's code for a confirm of a proposal that already ran.
pub const ALREADY_EXECUTED: &str = "proposal_already_executed";

/// Whether an error says the proposal already executed, in any of the shapes a service words it.
pub fn says_already_executed(e: &ApiError) -> bool {
    let lower = e.to_string().to_ascii_lowercase();
    e.code().is_some_and(|c| c.contains("already_executed")) || lower.contains("already executed")
}

impl Decider {
    /// Decisions on `gateway` (a gateway detected) for an item the gateway decides: every trade
    /// and close it lists, and tool calls once they are its items. A tool call it has not
    /// captured is decided as on a service (re-submitting it is all the console can do).
    pub fn of(gateway: bool, gateway_decides: bool) -> Decider {
        if gateway && gateway_decides {
            Decider::Gateway
        } else {
            Decider::Service
        }
    }

    /// `u` can take a rejection back. On a service a rejection is only this console's dismissal
    /// (the proposal stays staged there until it expires); a gateway's rejection is final: the
    /// agent's confirm is refused with its reason from then on.
    pub fn reject_undoable(self) -> bool {
        self == Decider::Service
    }

    /// A rejection that cannot be taken back is asked about first.
    pub fn reject_asks_first(self) -> bool {
        !self.reject_undoable()
    }

    /// What the journal says a rejection did.
    pub fn reject_result(self, tool: bool) -> &'static str {
        match (self, tool) {
            (Decider::Service, true) => {
                "dismissed; the confirm token expires unused (u undoes it until then)"
            }
            (Decider::Service, false) => {
                "dismissed; the proposal will expire on the service (u undoes it until then)"
            }
            (Decider::Gateway, _) => "rejected on the gateway (final)",
        }
    }

    /// Why `u` cannot restore a rejection here, when it cannot.
    pub fn undo_refusal(self, id: &str) -> Option<String> {
        match self {
            Decider::Service => None,
            Decider::Gateway => Some(format!(
                "Cannot undo: {id} was rejected on the gateway, and a gateway's rejection is \
                 final (the agent's confirm is refused with its reason); it stays rejected"
            )),
        }
    }

    /// What an error answer to an approval means.
    pub fn read_error(self, e: &ApiError) -> Answered {
        if matches!(e, ApiError::QuotaExceeded { .. }) {
            return Answered::Wait;
        }
        match self {
            Decider::Service if e.is_transient() => Answered::Open,
            // Only this console's key can confirm its proposal: "already executed" answers our
            // own confirm (an earlier one whose answer was lost, or this one's retry).
            Decider::Service if says_already_executed(e) => Answered::AlreadyExecuted,
            Decider::Service => Answered::Refused,
            // The gateway says what it refused in a 4xx of its own (policy, kill switch, already
            // decided, not found). Anything else — no answer, a 5xx, the upstream's timeout — may
            // have executed, and the gateway goes on asking the service until it knows.
            Decider::Gateway => match e {
                ApiError::Forbidden { .. }
                | ApiError::NotFound { .. }
                | ApiError::Invalid { .. }
                | ApiError::Expired { .. }
                | ApiError::Unauthorized { .. }
                | ApiError::PayloadTooLarge { .. } => Answered::Refused,
                // A step-up approval that does not count decided nothing: the item is as it was.
                ApiError::Conflict { code, .. }
                    if matches!(
                        code.as_str(),
                        "already_approved" | "own_staging" | "approval_contended"
                    ) =>
                {
                    Answered::Refused
                }
                // "Already decided" (a 409) included: what was decided, and what became of it,
                // is the gateway's to say, in its inbox.
                _ => Answered::Open,
            },
        }
    }

    /// The message for an approval whose outcome is open: where it is read from and what the
    /// supervisor can do meanwhile (never "approve again" where that would be refused).
    pub fn open_outcome(self, id: &str, e: &ApiError) -> String {
        match self {
            Decider::Service => {
                format!("Confirm {id}: outcome unknown ({e}) — checking with the service")
            }
            Decider::Gateway => format!(
                "Approve {id}: no clear answer from the gateway ({e}). It may have gone through: \
                 the inbox shows what the gateway establishes. An approved item is the \
                 gateway's to run — it asks the service itself until it knows, or runs it on the \
                 agent's next request; nothing to approve again. Still pending: a then y"
            ),
        }
    }

    /// The message for `a` on an item approved but not executed yet.
    pub fn approved_waiting(self, id: &str, note: Option<&Hold>) -> String {
        match self {
            Decider::Service => format!("{id} is approved: it can no longer be approved"),
            Decider::Gateway => {
                let note = note.map(|n| format!(" ({n})")).unwrap_or_default();
                format!(
                    "{id} is approved on the gateway{note}: the gateway runs it — at once when it \
                     holds the agent's key, else on the agent's next request — and asks the \
                     service again itself after a lost answer; approving again adds nothing"
                )
            }
        }
    }

    /// Whether the service's own proposals list is polled. A gateway's inbox holds every proposal
    /// that can be approved there (it refuses a confirm for anything not staged through it).
    pub fn polls_service_proposals(self) -> bool {
        self == Decider::Service
    }

    /// Where the outcome of an approval is read.
    pub fn outcome_source(self) -> &'static str {
        match self {
            Decider::Service => "the service's records (its proposals list, else its audit log)",
            Decider::Gateway => "the gateway's inbox (the gateway establishes it with the service)",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_decider_answers_for_itself() {
        let timeout = ApiError::Server {
            status: 504,
            code: "upstream_timeout".into(),
            message: "the upstream did not answer in 30 s".into(),
        };
        assert_eq!(Decider::Gateway.read_error(&timeout), Answered::Open);
        assert_eq!(Decider::Service.read_error(&timeout), Answered::Open);
        let done = ApiError::Conflict {
            code: ALREADY_EXECUTED.into(),
            message: "proposal already executed".into(),
        };
        assert_eq!(
            Decider::Service.read_error(&done),
            Answered::AlreadyExecuted
        );
        let policy = ApiError::Forbidden {
            code: "policy_violation".into(),
            message: "max notional".into(),
        };
        assert_eq!(Decider::Gateway.read_error(&policy), Answered::Refused);
        assert!(Decider::Service.reject_undoable() && !Decider::Service.reject_asks_first());
        assert!(!Decider::Gateway.reject_undoable() && Decider::Gateway.reject_asks_first());
        assert!(Decider::Gateway.undo_refusal("p").is_some());
        assert!(
            !Decider::Gateway
                .open_outcome("p", &timeout)
                .contains("Approving again is safe")
        );
    }
}
