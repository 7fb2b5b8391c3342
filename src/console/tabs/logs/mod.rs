//! The Logs tab: the service's audit log and this console's own request log, both filtered by
//! one filter (`/` to type it).

pub mod view;

use crate::api::model::AuditEntry;
use crate::console::app::App;
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;
use crate::console::modal::Modal;

#[derive(Debug, Clone, Default)]
pub struct LogsState {
    pub audit: Vec<AuditEntry>,
    pub filter: String,
    /// Indices into `audit` / the App's request log that pass the filter, computed when either
    /// changes.
    pub audit_view: Vec<usize>,
    pub request_view: Vec<usize>,
}

impl App {
    pub(crate) fn on_logs_key(&mut self, action: KeyAction) -> bool {
        if action != KeyAction::Filter {
            return false;
        }
        self.modal = Some(Modal::Filter);
        true
    }

    /// One character typed into (Some) or erased from (None) the filter.
    pub(crate) fn edit_logs_filter(&mut self, edit: Option<char>) {
        match edit {
            Some(c) => self.logs.filter.push(c),
            None => {
                self.logs.filter.pop();
            }
        }
        self.refilter();
    }

    pub(crate) fn refilter(&mut self) {
        let needle = self.logs.filter.to_lowercase();
        let matches = |hay: String| needle.is_empty() || hay.to_lowercase().contains(&needle);
        self.logs.audit_view = self
            .logs
            .audit
            .iter()
            .enumerate()
            .filter(|(_, e)| {
                matches(format!(
                    "{} {} {} {}",
                    e.operation,
                    e.outcome,
                    e.error_code.as_deref().unwrap_or(""),
                    e.proposal_id.as_deref().unwrap_or("")
                ))
            })
            .map(|(i, _)| i)
            .collect();
        self.logs.request_view = self
            .request_log
            .iter()
            .enumerate()
            .filter(|(_, e)| matches(format!("{} {}", e.operation, e.status)))
            .map(|(i, _)| i)
            .collect();
        self.clamp(Pane::Audit);
        self.clamp(Pane::Requests);
    }
}
