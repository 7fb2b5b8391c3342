//! The Logs tab's keys and its one filter over both logs.

use super::LogsTab;
use crate::api::model::AuditEntry;
use crate::console::component::{Ask, Ctx, RequestLogEntry, TabComponent};
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use std::collections::VecDeque;

impl LogsTab {
    /// One character typed into (Some) or erased from (None) the filter.
    pub fn edit_filter(
        &mut self,
        edit: impl FnOnce(&mut String) -> bool,
        requests: &VecDeque<RequestLogEntry>,
        ctx: &mut Ctx,
    ) {
        if edit(&mut self.filter) {
            self.refilter(requests, ctx);
        }
    }

    /// The audit feed answered.
    pub fn on_audit(
        &mut self,
        rows: Vec<AuditEntry>,
        requests: &VecDeque<RequestLogEntry>,
        ctx: &mut Ctx,
    ) {
        self.audit = rows;
        self.refilter(requests, ctx);
    }

    /// Which rows of both logs pass the filter, after either or the filter changed.
    pub fn refilter(&mut self, requests: &VecDeque<RequestLogEntry>, ctx: &mut Ctx) {
        let needle = self.filter.to_lowercase();
        let matches = |hay: String| needle.is_empty() || hay.to_lowercase().contains(&needle);
        self.audit_view = self
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
        self.request_view = requests
            .iter()
            .enumerate()
            .filter(|(_, e)| matches(format!("{} {}", e.operation, e.status)))
            .map(|(i, _)| i)
            .collect();
        ctx.clamp(Pane::Audit, self.audit_view.len());
        ctx.clamp(Pane::Requests, self.request_view.len());
    }
}

impl TabComponent for LogsTab {
    fn on_key(&mut self, action: KeyAction, _pane: Pane, ctx: &mut Ctx) -> bool {
        if action != KeyAction::Filter {
            return false;
        }
        ctx.ask(Ask::Open(Box::new(Modal::Filter)));
        true
    }
}
