//! The Tools tab's update: the catalog (loaded when the tab is first shown), `/tool`, the argument
//! editor, tool calls and their confirm tokens, and its keys.

use crate::api::ApiError;
use crate::api::model::{Capabilities, Proposal, ToolResult};
use crate::console::action::{Effect, Resource};
use crate::console::app::{App, ToastLevel};
use crate::console::inbox::{DecisionKind, InboxItem, LocalState, Source, ToolApproval};
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use crate::console::poll::to_delta;
use crate::console::suggest::closest;
use crate::console::tab::Tab;
use crate::console::widgets::jsontree::{JsonTree, summarize};
use chrono::{DateTime, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::Value;
use std::time::Duration;

use super::{ToolEditor, ToolOutcome, parse_time, schema};

impl App {
    pub(crate) fn schedule_tools(&mut self, fx: &mut Vec<Effect>) {
        if self.tools.catalog.start(self.now) {
            fx.push(Effect::FetchCapabilities);
        }
    }

    /// The catalog loads the first time the tab is shown.
    pub(crate) fn entered_tools(&mut self) {
        if !self.tools.loaded() {
            self.tools.catalog.ask_at(self.now);
        }
    }

    pub(crate) fn on_capabilities_loaded(
        &mut self,
        result: Result<Box<Capabilities>, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
        fx: &mut Vec<Effect>,
    ) {
        // Asked again only when the tab is entered or refreshed, also after a failure.
        self.tools.catalog.settled();
        self.tools.catalog.stop();
        self.dirty = true;
        match result {
            Ok(caps) => {
                self.tools.catalog.answered_once(at, latency);
                self.tools.error = None;
                self.tools.set_tools(caps.tools);
                self.clamp(Pane::Tools);
                if let Some((name, args)) = self.tools.pending.take() {
                    self.run_tool_command(name, args, fx);
                }
            }
            Err(ApiError::NotFound { .. }) => {
                self.tools.error = Some("this service offers no tool access".into());
            }
            Err(e) => self.tools.error = Some(e.to_string()),
        }
    }

    /// `/tool <name> [json]`: valid arguments run at once; otherwise the editor opens with them
    /// (or with the schema's skeleton) and the problems.
    pub(crate) fn run_tool_command(
        &mut self,
        name: String,
        args: Option<String>,
        fx: &mut Vec<Effect>,
    ) {
        self.set_tab(Tab::Tools);
        if !self.tools.loaded() {
            self.tools.pending = Some((name, args));
            self.tools.catalog.ask_at(self.now);
            return;
        }
        let Some(i) = self.tools.find(&name) else {
            let bare = |n: &'_ str| n.strip_prefix("service_").unwrap_or(n).to_string();
            let names: Vec<String> = self.tools.tools.iter().map(|t| bare(&t.name)).collect();
            let best = closest(&bare(&name), names.iter().map(String::as_str))
                .map(|b| format!("service_{b}"));
            self.command_error = Some(match best {
                Some(best) => format!("unknown tool `{name}`; did you mean `{best}`?"),
                None => format!("unknown tool `{name}`; the Tools tab lists them"),
            });
            return;
        };
        self.selected.insert(Pane::Tools, i);
        self.focus = 0;
        let tool = self.tools.tools[i].clone();
        match args {
            None => self.open_editor(i),
            Some(text) => {
                let (value, problems) = schema::check_text(&tool.input_schema, &text);
                match value {
                    Some(v) if problems.is_empty() => self.execute_tool(&tool.name, v, fx),
                    _ => {
                        let mut editor = ToolEditor::new(&tool, &text);
                        editor.refused = true;
                        self.modal = Some(Modal::ToolEditor(editor));
                    }
                }
            }
        }
    }

    fn open_editor(&mut self, i: usize) {
        let Some(tool) = self.tools.tools.get(i) else {
            return;
        };
        // The last arguments of this tool when it was the last one called, else the skeleton.
        let text = match &self.tools.outcome {
            Some(o) if o.tool == tool.name && o.awaiting.is_none() => {
                serde_json::to_string_pretty(&o.args).unwrap_or_default()
            }
            _ => serde_json::to_string_pretty(&schema::skeleton(&tool.input_schema))
                .unwrap_or_default(),
        };
        let text = if text == "null" { "{}".into() } else { text };
        self.modal = Some(Modal::ToolEditor(ToolEditor::new(tool, &text)));
    }

    fn execute_tool(&mut self, name: &str, args: Value, fx: &mut Vec<Effect>) {
        if self.posts_held() {
            return;
        }
        self.tools.running += 1;
        fx.push(Effect::ExecuteTool {
            name: name.to_string(),
            args,
            approval: None,
        });
    }

    /// Keys of the argument editor: ctrl-s sends (only when the arguments are valid), esc closes,
    /// everything else edits.
    pub(crate) fn on_editor_key(&mut self, key: KeyEvent, fx: &mut Vec<Effect>) {
        let Some(Modal::ToolEditor(editor)) = &self.modal else {
            return;
        };
        let tool = editor.tool.clone();
        let schema = self
            .tools
            .find(&tool)
            .map(|i| self.tools.tools[i].input_schema.clone())
            .unwrap_or(Value::Null);
        let Some(Modal::ToolEditor(editor)) = self.modal.as_mut() else {
            return;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => self.modal = None,
            KeyCode::Char('s') if ctrl => match editor.check(&schema) {
                Some(args) => {
                    let name = editor.tool.clone();
                    self.modal = None;
                    self.execute_tool(&name, args, fx);
                }
                None => editor.refused = true,
            },
            _ => {
                editor.input.input(key);
                editor.refused = false;
                editor.check(&schema);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_tool_executed(
        &mut self,
        name: String,
        args: Value,
        approval: Option<String>,
        result: Result<Box<ToolResult>, ApiError>,
        at: DateTime<Utc>,
        fx: &mut Vec<Effect>,
    ) {
        self.tools.running = self.tools.running.saturating_sub(1);
        self.dirty = true;
        if let Err(ApiError::QuotaExceeded { retry_after, .. }) = &result {
            self.quota_until = Some(at + to_delta(*retry_after));
        }
        if let Some(id) = approval {
            self.on_tool_approved(&id, name, args, result, at, fx);
            return;
        }
        match result {
            Ok(res) => {
                let token = res.result.get("confirmToken").is_some();
                if res.requires_confirmation || token {
                    let id = self.add_tool_approval(&name, &args, &res.result, Source::Console, fx);
                    let mut shown = res.result.clone();
                    if let Value::Object(m) = &mut shown {
                        // The token is a credential for one execution: not for the screen.
                        m.remove("confirmToken");
                    }
                    self.set_outcome(name.clone(), args, at, Ok(shown), id.clone());
                    match id {
                        Some(id) => self.toast(
                            format!("{name} needs approval: {id} is in the inbox (a, then y)"),
                            ToastLevel::Info,
                        ),
                        None => self.toast(
                            format!("{name} asked for confirmation without a token"),
                            ToastLevel::Error,
                        ),
                    }
                } else {
                    self.set_outcome(name, args, at, Ok(res.result), None);
                }
            }
            Err(e) => {
                self.toast(format!("{name} failed: {e}"), ToastLevel::Error);
                self.set_outcome(name, args, at, Err(e.to_string()), None);
            }
        }
    }

    fn set_outcome(
        &mut self,
        tool: String,
        args: Value,
        at: DateTime<Utc>,
        result: Result<Value, String>,
        awaiting: Option<String>,
    ) {
        self.tools.outcome = Some(ToolOutcome {
            tool,
            args,
            at,
            result: result.map(JsonTree::new),
            awaiting,
        });
        self.selected.insert(Pane::Result, 0);
        if self.tab == Tab::Tools {
            // The result takes the focus, so j/k and space work on it at once.
            self.focus = 1;
        }
    }

    fn on_tool_approved(
        &mut self,
        id: &str,
        name: String,
        args: Value,
        result: Result<Box<ToolResult>, ApiError>,
        at: DateTime<Utc>,
        fx: &mut Vec<Effect>,
    ) {
        let summary = self
            .item(id)
            .map(|i| i.describe())
            .unwrap_or_else(|| name.clone());
        let mut shown_args = args.clone();
        if let Value::Object(m) = &mut shown_args {
            m.remove("confirmToken");
        }
        match result {
            Ok(res) if !res.requires_confirmation => {
                let text = summarize(&res.result, 80);
                if let Some(item) = self.item_mut(id) {
                    item.local = LocalState::Approved(text.clone());
                    item.proposal.status = "executed".into();
                    if let Some(t) = item.tool.as_mut() {
                        t.result = Some(res.result.clone());
                    }
                }
                self.toast(format!("Approved {id}: {name} → {text}"), ToastLevel::Info);
                self.decide(id, DecisionKind::Approved, summary, text, fx);
                self.set_outcome(name, shown_args, at, Ok(res.result), None);
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
                self.inbox_state.recheck.ask_at(at);
                self.toast(
                    format!("{id}: outcome unknown ({text}) — checking with the service"),
                    ToastLevel::Error,
                );
                self.set_outcome(
                    name,
                    shown_args,
                    at,
                    Err(format!("outcome unknown — checking: {text}")),
                    None,
                );
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
                self.inbox_state.limited.insert(
                    id.to_string(),
                    (at + to_delta(retry_after), message.clone()),
                );
                self.toast(
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
                self.toast(format!("{id} failed: {text}"), ToastLevel::Error);
                self.decide(id, DecisionKind::Failed, summary, text.clone(), fx);
                self.set_outcome(name, shown_args, at, Err(text), None);
            }
        }
        self.poll_now(&Resource::TRADED, at);
        self.poll_now(&[Resource::Proposals, Resource::Usage], at);
    }

    /// Puts a confirm token (`{confirmToken, expiresAt, summary, preview}`) into the inbox; returns
    /// its inbox id (the existing one when the token is already there).
    pub(crate) fn add_tool_approval(
        &mut self,
        tool: &str,
        args: &Value,
        token: &Value,
        source: Source,
        fx: &mut Vec<Effect>,
    ) -> Option<String> {
        let confirm_token = token.get("confirmToken")?.as_str()?.to_string();
        if let Some(existing) = self.inbox.iter().find(|i| {
            i.tool
                .as_ref()
                .is_some_and(|t| t.confirm_token == confirm_token)
        }) {
            return Some(existing.id().to_string());
        }
        self.tool_seq += 1;
        let id = format!("tool-{}", self.tool_seq);
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
        self.seen.insert(id.clone());
        self.inbox.push(InboxItem {
            proposal: Proposal {
                proposal_id: id.clone(),
                status: "staged".into(),
                kind: "tool".into(),
                created_at: Some(self.now),
                expires_at: expires,
                ..Default::default()
            },
            source,
            local: LocalState::None,
            first_seen: self.now,
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
        self.sort_inbox();
        if self.options.bell {
            fx.push(Effect::Bell);
        }
        Some(id)
    }

    pub fn result_rows(&self) -> usize {
        self.tools
            .outcome
            .as_ref()
            .and_then(|o| o.result.as_ref().ok())
            .map_or(0, |t| t.rows().len())
    }

    /// Keys of the tab; true when handled.
    pub(crate) fn on_tools_key(&mut self, action: KeyAction, pane: Pane) -> bool {
        match action {
            KeyAction::Select if pane == Pane::Tools => {
                self.open_editor(self.selected(Pane::Tools));
            }
            KeyAction::Select | KeyAction::Toggle if pane == Pane::Result => {
                let i = self.selected(Pane::Result);
                if let Some(Ok(tree)) = self.tools.outcome.as_mut().map(|o| o.result.as_mut())
                    && let Some(at) = tree.toggle(i)
                {
                    self.selected.insert(Pane::Result, at);
                }
            }
            _ => return false,
        }
        true
    }
}
