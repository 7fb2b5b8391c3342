//! The Logs tab: the service's audit log and this console's own request log, both filtered by
//! one filter (`/` to type it), and every message the console showed. The request log and the
//! messages are App's (every answer and toast writes them); this tab owns the audit rows, the
//! filter and what passes it.

mod update;
pub mod view;

use crate::api::model::AuditEntry;

#[derive(Debug, Clone, Default)]
pub struct LogsTab {
    audit: Vec<AuditEntry>,
    filter: String,
    /// Indices into `audit` / the App's request log that pass the filter, computed when either
    /// changes.
    audit_view: Vec<usize>,
    request_view: Vec<usize>,
}

impl LogsTab {
    pub fn filter(&self) -> &str {
        &self.filter
    }

    /// Rows of the Audit pane that pass the filter.
    pub fn audit_rows(&self) -> usize {
        self.audit_view.len()
    }

    /// Rows of the Requests pane that pass the filter.
    pub fn request_rows(&self) -> usize {
        self.request_view.len()
    }
}
