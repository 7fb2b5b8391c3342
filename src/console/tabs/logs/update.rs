//! The Logs tab's data as its feed answers, and its audit table.

use super::LogsTab;
use super::rows::Audit;
use crate::api::model::AuditEntry;
use crate::console::component::TabComponent;
use crate::console::layout::Pane;
use crate::console::table::Rows;
use chrono::{DateTime, Utc};

impl LogsTab {
    /// The audit feed answered.
    pub fn on_audit(&mut self, rows: Vec<AuditEntry>) {
        self.audit = rows;
    }
}

impl TabComponent for LogsTab {
    fn rows(
        &self,
        pane: Pane,
        _now: DateTime<Utc>,
        _master: Option<usize>,
    ) -> Option<Box<dyn Rows + '_>> {
        (pane == Pane::Audit).then(|| Box::new(Audit(&self.audit)) as Box<dyn Rows>)
    }
}
