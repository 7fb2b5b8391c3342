//! App's part of the inbox: merging the service's list, expiries, approve and reject, and their
//! answers (upper layer: it changes `App`).

use super::{
    Decision, DecisionKind, InboxItem, LocalState, Source, Status, describe_preview,
    execution_summary, staged,
};
use crate::api::ApiError;
use crate::api::model::{Proposal, TradeSignal};
use crate::console::action::{Effect, Resource};
use crate::console::app::App;
use crate::console::app::ToastLevel;
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use crate::console::poll::to_delta;
use chrono::{DateTime, Utc};
use serde_json::json;

impl App {
    pub fn item(&self, id: &str) -> Option<&InboxItem> {
        self.inbox.iter().find(|i| i.id() == id)
    }

    pub(crate) fn item_mut(&mut self, id: &str) -> Option<&mut InboxItem> {
        self.inbox.iter_mut().find(|i| i.id() == id)
    }

    /// The inbox item under the cursor (the Proposals list, or the Desk strip).
    pub fn selected_item(&self) -> Option<&InboxItem> {
        match self.focused_pane() {
            Pane::Strip => self
                .strip_items()
                .get(self.selected(Pane::Strip))
                .map(|i| &self.inbox[*i]),
            _ => self.inbox.get(self.selected(Pane::Inbox)),
        }
    }

    /// Inbox indices of the proposals the Desk strip shows: those that can still be approved.
    pub fn strip_items(&self) -> Vec<usize> {
        (0..self.inbox.len())
            .filter(|i| self.inbox[*i].can_approve(self.now))
            .collect()
    }

    pub fn confirm_in_flight(&self) -> bool {
        self.inbox.iter().any(|i| i.local == LocalState::Confirming)
    }

    pub(crate) fn merge_proposals(&mut self, list: Vec<Proposal>, fx: &mut Vec<Effect>) {
        let now = self.now;
        let mut fresh = 0;
        for p in list {
            if let Some(item) = self.item_mut(&p.proposal_id) {
                // A confirm this console is waiting for decides the local state, not a poll.
                item.merge(p);
                continue;
            }
            let new = self.seen.insert(p.proposal_id.clone());
            let item = InboxItem {
                proposal: p,
                source: Source::Service,
                local: LocalState::None,
                first_seen: now,
                expiry_noted: false,
                tool: None,
                request: None,
            };
            if new && item.status(now) == Status::Staged {
                fresh += 1;
                self.toast(
                    format!("New proposal: {}", item.describe()),
                    ToastLevel::Info,
                );
            }
            self.inbox.push(item);
        }
        if fresh > 0 && self.options.bell {
            fx.push(Effect::Bell);
        }
        self.sort_inbox();
    }

    pub(crate) fn sort_inbox(&mut self) {
        self.inbox.sort_by(|a, b| {
            b.proposal
                .created_at
                .unwrap_or(b.first_seen)
                .cmp(&a.proposal.created_at.unwrap_or(a.first_seen))
        });
        self.clamp(Pane::Inbox);
        self.clamp(Pane::Strip);
    }

    pub(crate) fn note_expiries(&mut self, fx: &mut Vec<Effect>) {
        let now = self.now;
        let mut expired = Vec::new();
        for item in &mut self.inbox {
            if !item.expiry_noted && item.status(now) == Status::Expired {
                item.expiry_noted = true;
                expired.push((item.id().to_string(), item.describe()));
            }
        }
        for (id, summary) in expired {
            self.decide(
                &id,
                DecisionKind::Expired,
                summary,
                "not approved in time".into(),
                fx,
            );
        }
    }

    pub(crate) fn decide(
        &mut self,
        id: &str,
        kind: DecisionKind,
        summary: String,
        result: String,
        fx: &mut Vec<Effect>,
    ) {
        let preview = self
            .item(id)
            .map(|i| serde_json::to_value(&i.proposal.preview).unwrap_or_default());
        // What this console staged, as sent, and the risk it showed: the record says what the
        // supervisor decided on, whatever shape the service's preview had.
        let request = self
            .item(id)
            .and_then(|i| i.request.as_ref())
            .map(|r| serde_json::to_value(r).unwrap_or_default());
        let risk = self
            .item(id)
            .filter(|i| i.tool.is_none() && i.proposal.preview.kind == "trade")
            .map(|i| risk_record(&self.risk_of(&i.proposal.preview)));
        // The summary names the levels too: the record must say what was approved.
        let summary = match self.item(id) {
            Some(i) if i.tool.is_none() && i.proposal.preview.kind == "trade" => {
                format!("{summary} {}", super::levels(&i.proposal.preview))
            }
            _ => summary,
        };
        let line = json!({
            "time": self.now.to_rfc3339(),
            "proposalId": id,
            "decision": kind.label(),
            "summary": summary,
            "result": result,
            "service": self.service.host,
            "preview": preview,
            "request": request,
            "risk": risk,
        });
        fx.push(Effect::Journal(line.to_string()));
        self.decisions.insert(
            0,
            Decision {
                proposal_id: id.to_string(),
                kind,
                at: self.now,
                summary,
                result,
            },
        );
        self.dirty = true;
    }

    pub(crate) fn on_proposed(
        &mut self,
        signal: &TradeSignal,
        result: Result<Box<Proposal>, ApiError>,
        at: DateTime<Utc>,
    ) {
        match result {
            Ok(mut p) => {
                // The deployment's answer may carry only an id and a few venue fields: what
                // we asked for fills the rest, so the row, the dialog and the journal say what
                // is staged.
                p.preview = staged::complete(signal, &p.preview);
                if p.status.is_empty() {
                    p.status = "staged".into();
                }
                // The interface says a proposal expires 5 minutes after staging; an answer
                // without `expiresAt` gets that, counted from its arrival (the service's clock
                // may run out up to one round trip earlier).
                if p.expires_at.is_none() {
                    p.expires_at = Some(at + chrono::Duration::minutes(5));
                }
                let text = format!(
                    "Staged {}: {}",
                    p.proposal_id,
                    describe_preview(&p.preview, &p.proposal_id)
                );
                self.seen.insert(p.proposal_id.clone());
                match self.item_mut(&p.proposal_id) {
                    Some(item) => {
                        item.request = Some(Box::new(signal.clone()));
                        item.merge(*p);
                    }
                    None => {
                        self.inbox.push(InboxItem {
                            proposal: *p,
                            source: Source::Console,
                            local: LocalState::None,
                            first_seen: at,
                            expiry_noted: false,
                            tool: None,
                            request: Some(Box::new(signal.clone())),
                        });
                        self.sort_inbox();
                    }
                }
                self.toast(text, ToastLevel::Info);
            }
            Err(e) => {
                let what = signal
                    .a
                    .clone()
                    .or(signal.action.clone())
                    .unwrap_or_default();
                self.toast(format!("Propose {what} failed: {e}"), ToastLevel::Error);
            }
        }
        self.poll_now(&[Resource::Proposals, Resource::Usage], at);
    }

    pub(crate) fn on_confirmed(
        &mut self,
        id: &str,
        result: Result<Box<crate::api::model::ExecutionResult>, ApiError>,
        at: DateTime<Utc>,
        fx: &mut Vec<Effect>,
    ) {
        let summary = self
            .item(id)
            .map(|i| i.describe())
            .unwrap_or_else(|| id.to_string());
        match result {
            Ok(done) => {
                let text = execution_summary(&done);
                if let Some(item) = self.item_mut(id) {
                    item.local = LocalState::Approved(text.clone());
                    item.proposal.status = "executed".into();
                }
                self.toast(format!("Approved {id}: {text}"), ToastLevel::Info);
                self.decide(id, DecisionKind::Approved, summary, text, fx);
            }
            Err(e) => {
                if let ApiError::QuotaExceeded { retry_after, .. } = &e {
                    self.quota_until = Some(at + to_delta(*retry_after));
                }
                let text = e.to_string();
                if let Some(item) = self.item_mut(id) {
                    item.local = LocalState::Failed(text.clone());
                }
                self.toast(format!("Confirm {id} failed: {text}"), ToastLevel::Error);
                self.decide(id, DecisionKind::Failed, summary, text, fx);
            }
        }
        // What the confirm changed shows up now, not at the next scheduled poll.
        self.poll_now(
            &[
                Resource::Positions,
                Resource::Orders,
                Resource::Pnl,
                Resource::Proposals,
                Resource::Audit,
                Resource::Usage,
            ],
            at,
        );
    }

    pub(crate) fn start_approval(&mut self, id: &str) {
        let now = self.now;
        match self.item(id) {
            Some(item) if item.can_approve(now) => {
                self.modal = Some(Modal::Approve(id.to_string()))
            }
            Some(item) => {
                let status = item.status(now).label();
                self.toast(
                    format!("{id} is {status}: it can no longer be approved"),
                    ToastLevel::Error,
                );
            }
            None => self.toast(format!("no proposal {id} in the inbox"), ToastLevel::Error),
        }
    }

    pub(crate) fn approve(&mut self, id: &str, fx: &mut Vec<Effect>) {
        let now = self.now;
        if self.posts_held() {
            return;
        }
        let Some(item) = self.item_mut(id) else {
            return;
        };
        // Re-checked here: the countdown may have run out while the dialog was open.
        if !item.can_approve(now) {
            let status = item.status(now).label();
            self.toast(
                format!("{id} is {status}: not confirmed"),
                ToastLevel::Error,
            );
            return;
        }
        item.local = LocalState::Confirming;
        if let Some(t) = &item.tool {
            let mut args = match &t.args {
                serde_json::Value::Object(m) => m.clone(),
                _ => serde_json::Map::new(),
            };
            args.insert("confirmToken".into(), json!(t.confirm_token));
            fx.push(Effect::ExecuteTool {
                name: t.tool.clone(),
                args: serde_json::Value::Object(args),
                approval: Some(id.to_string()),
            });
            self.tools.running += 1;
            return;
        }
        fx.push(Effect::Confirm(id.to_string()));
    }

    pub(crate) fn reject(&mut self, id: &str, fx: &mut Vec<Effect>) {
        let now = self.now;
        let Some(item) = self.item_mut(id) else {
            return;
        };
        if item.status(now) != Status::Staged {
            let status = item.status(now).label();
            self.toast(
                format!("{id} is {status}: nothing to reject"),
                ToastLevel::Error,
            );
            return;
        }
        item.local = LocalState::Rejected;
        let summary = item.describe();
        let result = if item.tool.is_some() {
            "dismissed; the confirm token expires unused"
        } else {
            "dismissed; the proposal will expire on the service"
        };
        self.decide(id, DecisionKind::Rejected, summary, result.into(), fx);
    }
}

/// The risk figures as the journal keeps them.
fn risk_record(r: &super::risk::Risk) -> serde_json::Value {
    json!({
        "notional": r.notional,
        "margin": r.margin,
        "mark": r.mark,
        "accountValue": r.account_value,
        "notionalPct": r.notional_pct,
        "marginPct": r.margin_pct,
        "equityAtRiskPct": r.equity_at_risk_pct,
        "slPct": r.sl_pct,
        "tpPct": r.tp_pct,
        "liquidationPx": r.est_liquidation,
        "resultingSzi": r.resulting_szi,
        "unknown": r.unknown,
    })
}
