//! The inbox's tool approvals: a tool call's confirm token becomes an inbox item (from the Tools
//! and Chat tabs, or adopted from a gateway), and an approved token's outcome is decided here; the
//! Tools tab is asked to show the result.

use super::context::InboxCtx;
use super::{DecisionKind, Inbox, InboxItem, LocalState, Source, ToolApproval};
use crate::api::ApiError;
use crate::api::model::lenient::time as parse_time;
use crate::api::model::{Proposal, ProposalStatus, ToolResult};
use crate::console::action::{Effect, Resource};
use crate::console::component::{Ask, ToastLevel};
use crate::console::poll::to_delta;
use crate::console::widgets::jsontree::summarize;
use chrono::{DateTime, Utc};
use serde_json::Value;

impl Inbox {
    pub(crate) fn on_tool_approved(
        &mut self,
        id: &str,
        name: String,
        args: Value,
        result: Result<Box<ToolResult>, ApiError>,
        at: DateTime<Utc>,
        ctx: &mut InboxCtx,
    ) {
        let summary = self
            .item(id)
            .map(|i| i.describe())
            .unwrap_or_else(|| name.clone());
        let mut shown_args = args.clone();
        if let Value::Object(m) = &mut shown_args {
            m.remove("confirmToken");
        }
        let outcome = |result| Ask::ToolOutcome {
            tool: name.clone(),
            args: shown_args.clone(),
            at,
            result,
        };
        match result {
            Ok(res) if !res.requires_confirmation => {
                let text = summarize(&res.result, 80);
                if let Some(item) = self.item_mut(id) {
                    item.local = LocalState::Approved(text.clone());
                    item.proposal.status = ProposalStatus::Executed;
                    if let Some(t) = item.tool.as_mut() {
                        t.result = Some(res.result.clone());
                    }
                }
                ctx.toast(format!("Approved {id}: {name} → {text}"), ToastLevel::Info);
                self.decide(id, DecisionKind::Approved, summary, text, ctx);
                ctx.ask(outcome(Ok(res.result)));
            }
            // No answer: the token may have run the tool. Checked with the audit log, never
            // re-sent without a second y (as a confirm_trade that got no answer).
            Err(e) if e.is_transient() => {
                let text = e.to_string();
                if let Some(item) = self.item_mut(id) {
                    item.local = LocalState::Unknown {
                        error: text.clone(),
                        checking: true,
                    };
                }
                self.recheck_at(at);
                ctx.toast(
                    format!("{id}: outcome unknown ({text}) — checking with the service"),
                    ToastLevel::Error,
                );
                ctx.ask(outcome(Err(format!("outcome unknown — checking: {text}"))));
            }
            // The service asked to wait: the token did not run and is still good until it
            // expires. Approved again by hand after the wait.
            Err(ApiError::QuotaExceeded {
                retry_after,
                message,
            }) => {
                if let Some(item) = self.item_mut(id)
                    && item.local == LocalState::Confirming
                {
                    item.local = LocalState::None;
                }
                self.limit(id, at + to_delta(retry_after), message.clone());
                ctx.toast(
                    format!(
                        "{id} not run: rate limited — retry in {} s ({message}). Still waiting \
                         for approval: a then y after the wait",
                        retry_after.as_secs()
                    ),
                    ToastLevel::Error,
                );
            }
            other => {
                let text = match other {
                    Ok(_) => "the service asked for confirmation again (token expired or used)"
                        .to_string(),
                    Err(e) => e.to_string(),
                };
                if let Some(item) = self.item_mut(id) {
                    item.local = LocalState::Failed(text.clone());
                }
                ctx.toast(format!("{id} failed: {text}"), ToastLevel::Error);
                self.decide(id, DecisionKind::Failed, summary, text.clone(), ctx);
                ctx.ask(outcome(Err(text)));
            }
        }
        ctx.ask(Ask::Poll(&Resource::TRADED, at));
        ctx.ask(Ask::Poll(&[Resource::Proposals, Resource::Usage], at));
    }

    /// Puts a confirm token (`{confirmToken, expiresAt, summary, preview}`) into the inbox; returns
    /// its inbox id (the existing one when the token is already there).
    pub(crate) fn add_tool_approval(
        &mut self,
        tool: &str,
        args: &Value,
        token: &Value,
        source: Source,
        ctx: &mut InboxCtx,
    ) -> Option<String> {
        let confirm_token = token.get("confirmToken")?.as_str()?.to_string();
        if let Some(existing) = self.items.iter().find(|i| {
            i.tool
                .as_ref()
                .is_some_and(|t| t.confirm_token == confirm_token)
        }) {
            return Some(existing.id().to_string());
        }
        let id = self.next_tool_id();
        let mut args = args.clone();
        if let Value::Object(m) = &mut args {
            m.remove("confirmToken");
        }
        let expires = token.get("expiresAt").and_then(parse_time);
        let summary = token
            .get("summary")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        self.first_sight(id.clone());
        self.push(InboxItem {
            proposal: Proposal {
                proposal_id: id.clone(),
                status: ProposalStatus::Staged,
                kind: "tool".into(),
                created_at: Some(ctx.now),
                expires_at: expires,
                ..Default::default()
            },
            source,
            local: LocalState::None,
            first_seen: ctx.now,
            expiry_noted: false,
            tool: Some(Box::new(ToolApproval {
                tool: tool.to_string(),
                args,
                confirm_token,
                summary,
                preview: token.get("preview").cloned().unwrap_or(Value::Null),
                origin: if source == Source::Service {
                    "chat"
                } else {
                    "tools"
                },
                result: None,
            })),
            request: None,
        });
        self.sort();
        if ctx.bell {
            ctx.fx.push(Effect::Bell);
        }
        Some(id)
    }
}
