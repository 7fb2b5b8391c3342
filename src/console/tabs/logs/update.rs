//! The Logs tab's keys and its one filter over both logs.

use crate::console::app::App;
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;
use crate::console::modal::Modal;

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
