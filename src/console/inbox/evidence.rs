//! What the service answered when asked what became of a confirm that got no answer: a file of
//! its own so the effects' answers (`action.rs`) name it without importing the inbox, which
//! holds the gateway's state and so imports what the effects import.

use crate::api::ApiError;
use crate::api::model::{AuditEntry, Proposal};

/// What the service answered when asked what became of a confirm that got no answer.
#[derive(Debug, Clone)]
pub struct Evidence {
    /// The proposals extension's list; None when the service does not offer it.
    pub proposals: Option<Result<Vec<Proposal>, ApiError>>,
    pub audit: Result<Vec<AuditEntry>, ApiError>,
}

impl Evidence {
    /// The error to log for the check: None when either source answered.
    pub fn error(&self) -> Option<&ApiError> {
        match (&self.proposals, &self.audit) {
            (Some(Ok(_)), _) | (_, Ok(_)) => None,
            (_, Err(e)) => Some(e),
        }
    }

    /// Nothing answered because nothing got through: the service is still unreachable.
    pub fn unreachable(&self) -> bool {
        let transient = |r: Option<&ApiError>| r.is_none_or(ApiError::is_transient);
        self.error().is_some()
            && transient(self.proposals.as_ref().and_then(|p| p.as_ref().err()))
            && transient(self.audit.as_ref().err())
    }
}
