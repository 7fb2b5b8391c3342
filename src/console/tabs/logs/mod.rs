//! The Logs tab: the service's audit log and this console's own request log, both filtered by
//! one filter (`/` to type it).

mod update;
pub mod view;

use crate::api::model::AuditEntry;

#[derive(Debug, Clone, Default)]
pub struct LogsState {
    pub audit: Vec<AuditEntry>,
    pub filter: String,
    /// Indices into `audit` / the App's request log that pass the filter, computed when either
    /// changes.
    pub audit_view: Vec<usize>,
    pub request_view: Vec<usize>,
}
