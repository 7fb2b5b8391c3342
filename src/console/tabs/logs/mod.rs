//! The Logs tab: the service's audit log, this console's own request log, and every message the
//! console showed, each a table with its own filter and order (`/`, `s`, as every table). The
//! request log and the messages are App's (every answer and toast writes them); this tab owns
//! the audit rows.

pub mod rows;
mod update;
pub mod view;

use crate::api::model::AuditEntry;

#[derive(Debug, Clone, Default)]
pub struct LogsTab {
    audit: Vec<AuditEntry>,
}

impl LogsTab {
    /// Rows of the audit log, before any filter.
    pub fn audit_rows(&self) -> usize {
        self.audit.len()
    }
}
