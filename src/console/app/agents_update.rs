//! `App::update` for the agent screens: research polling and commands, the tool catalog, tool calls
//! with their argument editor and confirm tokens, and the chat.

use super::{
    App, DecisionKind, InboxItem, LocalState, Source, Tab, ToastLevel, ToolApproval, to_delta,
};
use crate::api::ApiError;
use crate::api::model::{
    Capabilities, ChatMessage, ChatReply, CliReply, Proposal, ResearchRun, ResearchStatus,
    ToolResult,
};
use crate::console::action::{Effect, Resource};
use crate::console::agents::{
    self, ChatEntry, RESEARCH_POLL_IDLE, RESEARCH_POLL_VISIBLE, ToolEditor, ToolOutcome,
};
use crate::console::jsontree::{JsonTree, summarize};
use crate::console::keymap::KeyAction;
use crate::console::layout::{self, Pane};
use crate::console::modal::Modal;
use crate::console::schema;
use crate::console::suggest::closest;
use chrono::{DateTime, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::Value;
use std::time::Duration;

impl App {
    /// How often the research run is asked for now.
    pub fn research_interval(&self) -> Duration {
        if self.research.active() && self.tab == Tab::Research {
            RESEARCH_POLL_VISIBLE
        } else {
            RESEARCH_POLL_IDLE
        }
    }

    pub(crate) fn schedule_agents(&mut self, fx: &mut Vec<Effect>) {
        let now = self.now;
        let r = &mut self.research;
        if !r.unsupported && r.poll.start(now) {
            fx.push(Effect::FetchResearch);
        }
        let t = &mut self.tools;
        if t.due && !t.in_flight {
            t.due = false;
            t.in_flight = true;
            fx.push(Effect::FetchCapabilities);
        }
    }

    /// Entering Research asks for the run now (a run may have started elsewhere); entering Tools
    /// loads the catalog the first time.
    pub(crate) fn entered_agents_tab(&mut self) {
        match self.tab {
            Tab::Research if !self.research.unsupported => {
                self.research.poll.ask_at(self.now);
            }
            Tab::Tools if !self.tools.loaded => self.tools.due = true,
            _ => {}
        }
    }

    pub(crate) fn refresh_agents(&mut self) {
        if !self.research.unsupported {
            self.research.poll.ask_at(self.now);
        }
        if self.tab == Tab::Tools {
            self.tools.due = true;
        }
    }

    // ---- research --------------------------------------------------------------------------------

    pub(crate) fn on_research_loaded(
        &mut self,
        result: Result<Box<ResearchStatus>, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
    ) {
        self.dirty = true;
        match result {
            Ok(status) => {
                self.research.checked = true;
                self.research.error = None;
                let interval = self.research_interval();
                self.research.poll.succeeded(at, latency, interval);
                self.set_run(status.run, at);
            }
            Err(ApiError::NotFound { .. }) => {
                self.research.checked = true;
                self.research.poll.settled();
                self.research.unsupported = true;
                self.research.poll.stop();
                self.research.error = Some("this service has no research operations".into());
            }
            Err(ApiError::Unauthorized { message }) => {
                self.research.poll.settled();
                self.research.error = Some(message.clone());
                self.auth_failed = Some(message);
            }
            Err(e) => {
                let interval = self.research_interval();
                self.research.poll.failed(at, interval, &e);
                self.research.error = Some(e.to_string());
            }
        }
    }

    fn set_run(&mut self, run: Option<ResearchRun>, at: DateTime<Utc>) {
        let was_active = self.research.active();
        let before = self.research.run.as_ref().map(|r| r.run_id.clone());
        self.research.run = run;
        if before != self.research.run.as_ref().map(|r| r.run_id.clone()) {
            self.selected.insert(Pane::Agents, 0);
            self.selected.insert(Pane::Artifacts, 0);
            self.research.scroll = 0;
        }
        let notice = match &self.research.run {
            Some(r) if was_active && r.status != "active" => Some(format!(
                "Research run {} {}{}",
                r.run_id,
                r.status,
                r.artifacts
                    .last()
                    .map(|a| format!(": {}", a.name))
                    .unwrap_or_default()
            )),
            _ => None,
        };
        if let Some(text) = notice {
            self.toast(text, ToastLevel::Info);
        }
        // No run: nothing to follow until this console starts one or the tab is entered again.
        match self.research.run {
            Some(_) => {
                let next = at + to_delta(self.research_interval());
                self.research.poll.ask_at(next);
            }
            None => self.research.poll.stop(),
        }
        self.clamp(Pane::Agents);
        self.clamp(Pane::Artifacts);
    }

    pub(crate) fn on_research_stopped(
        &mut self,
        run_id: &str,
        result: Result<Box<ResearchRun>, ApiError>,
        at: DateTime<Utc>,
    ) {
        self.research.poll.settled();
        match result {
            Ok(run) => {
                let status = run.status.clone();
                self.set_run(Some(*run), at);
                self.toast(format!("Research run {run_id} {status}"), ToastLevel::Info);
            }
            Err(e) => {
                self.research.poll.ask_at(at);
                self.toast(format!("Stop {run_id} failed: {e}"), ToastLevel::Error);
            }
        }
    }

    /// `/research …`: sent as typed to the service's command line.
    pub(crate) fn run_service_command(&mut self, text: String, fx: &mut Vec<Effect>) {
        if self.posts_held() {
            return;
        }
        self.research.reply = Some(format!("{text} …"));
        fx.push(Effect::Cli(text));
        self.set_tab(Tab::Research);
    }

    pub(crate) fn on_cli_answered(
        &mut self,
        command: &str,
        result: Result<CliReply, ApiError>,
        at: DateTime<Utc>,
    ) {
        match result {
            Ok(reply) => {
                let output = reply.output.trim().to_string();
                let first = output.lines().next().unwrap_or("done").to_string();
                self.research.reply = Some(format!("{command} → {output}"));
                self.toast(first, ToastLevel::Info);
            }
            Err(e) => {
                if let ApiError::QuotaExceeded { retry_after, .. } = &e {
                    self.quota_until = Some(at + to_delta(*retry_after));
                }
                self.research.reply = Some(format!("{command} → failed: {e}"));
                self.toast(format!("{command} failed: {e}"), ToastLevel::Error);
            }
        }
        if command
            .trim_start_matches('/')
            .to_ascii_lowercase()
            .starts_with("research")
        {
            // What the command changed shows now, and the service may have research after all.
            self.research.unsupported = false;
            self.research.poll.ask_at(at.min(self.now));
        }
        self.dirty = true;
    }

    // ---- tools -----------------------------------------------------------------------------------

    pub(crate) fn on_capabilities_loaded(
        &mut self,
        result: Result<Box<Capabilities>, ApiError>,
        fx: &mut Vec<Effect>,
    ) {
        self.tools.in_flight = false;
        self.dirty = true;
        match result {
            Ok(caps) => {
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
        if !self.tools.loaded {
            self.tools.pending = Some((name, args));
            self.tools.due = true;
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
        let expires = token.get("expiresAt").and_then(agents::parse_time);
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

    // ---- chat ------------------------------------------------------------------------------------

    pub(crate) fn send_chat(&mut self, text: String, fx: &mut Vec<Effect>) {
        self.set_tab(Tab::Chat);
        if self.chat.in_flight {
            self.toast(
                "the agent is still answering the last message",
                ToastLevel::Error,
            );
            return;
        }
        if self.posts_held() {
            return;
        }
        self.chat.entries.push(ChatEntry::User {
            at: self.now,
            text: text.clone(),
        });
        self.chat.history.push(ChatMessage {
            role: "user".into(),
            content: text,
        });
        self.chat.in_flight = true;
        self.chat.scroll = 0;
        fx.push(Effect::Chat(self.chat.history.clone()));
    }

    pub(crate) fn on_chat_answered(
        &mut self,
        result: Result<Box<ChatReply>, ApiError>,
        at: DateTime<Utc>,
        fx: &mut Vec<Effect>,
    ) {
        self.chat.in_flight = false;
        self.chat.scroll = 0;
        self.dirty = true;
        match result {
            Ok(reply) => {
                let reply = *reply;
                let mut ids = Vec::new();
                for t in &reply.confirm_tokens {
                    let tool = t.get("tool").and_then(Value::as_str).unwrap_or("tool");
                    let args = t.get("args").cloned().unwrap_or(Value::Null);
                    if let Some(id) = self.add_tool_approval(tool, &args, t, Source::Service, fx) {
                        ids.push(id);
                    }
                }
                if !ids.is_empty() {
                    self.toast(
                        format!(
                            "{} sent to the inbox: approve with a, then y",
                            ids.join(", ")
                        ),
                        ToastLevel::Info,
                    );
                }
                self.chat.history.push(ChatMessage {
                    role: "assistant".into(),
                    content: reply.reply.clone(),
                });
                self.chat.mode = Some(reply.mode.clone());
                self.chat.entries.push(ChatEntry::Assistant {
                    at,
                    text: reply.reply,
                    mode: reply.mode,
                    tool_calls: reply.tool_calls,
                    tokens: ids,
                });
            }
            Err(e) => {
                if let ApiError::QuotaExceeded { retry_after, .. } = &e {
                    self.quota_until = Some(at + to_delta(*retry_after));
                }
                // The unanswered message stays on screen but leaves the conversation sent next.
                self.chat.history.pop();
                self.chat.entries.push(ChatEntry::Failed {
                    at,
                    error: e.to_string(),
                });
                self.toast(format!("chat failed: {e}"), ToastLevel::Error);
            }
        }
    }

    // ---- keys ------------------------------------------------------------------------------------

    /// Keys with a meaning of their own on the agent tabs; true when handled.
    pub(crate) fn on_agents_key(&mut self, action: KeyAction, pane: Pane) -> bool {
        match (self.tab, action) {
            (Tab::Research, KeyAction::NewRun) => self.prefill("/research start "),
            (Tab::Research, KeyAction::Message) => self.prefill("/research say "),
            (Tab::Research, KeyAction::StopRun) => match &self.research.run {
                Some(r) if r.status == "active" => {
                    self.modal = Some(Modal::StopRun(r.run_id.clone()));
                }
                _ => self.toast("no active research run to stop", ToastLevel::Error),
            },
            (Tab::Research, KeyAction::Select) if pane == Pane::Artifacts => {
                let i = self.selected(Pane::Artifacts);
                if self
                    .research
                    .run
                    .as_ref()
                    .is_some_and(|r| i < r.artifacts.len())
                {
                    self.modal = Some(Modal::Artifact {
                        index: i,
                        scroll: 0,
                    });
                }
            }
            (Tab::Research | Tab::Chat, KeyAction::Top | KeyAction::Bottom)
                if matches!(pane, Pane::Transcript | Pane::ChatLog) =>
            {
                let max = self.text_pane_max_scroll(pane);
                let to = if action == KeyAction::Top { max } else { 0 };
                match pane {
                    Pane::Transcript => self.research.scroll = to,
                    _ => self.chat.scroll = to,
                }
            }
            (Tab::Tools, KeyAction::Select) if pane == Pane::Tools => {
                self.open_editor(self.selected(Pane::Tools));
            }
            (Tab::Tools, KeyAction::Select | KeyAction::Toggle) if pane == Pane::Result => {
                let i = self.selected(Pane::Result);
                if let Some(Ok(tree)) = self.tools.outcome.as_mut().map(|o| o.result.as_mut())
                    && let Some(at) = tree.toggle(i)
                {
                    self.selected.insert(Pane::Result, at);
                }
            }
            (Tab::Chat, KeyAction::Message | KeyAction::Select) => self.prefill("/chat "),
            _ => return false,
        }
        true
    }

    /// How far a text pane can scroll up: its wrapped lines beyond one screenful.
    pub(crate) fn text_pane_max_scroll(&self, pane: Pane) -> usize {
        let screen = layout::compute(self.size.0, self.size.1, self);
        let r = screen.pane(pane);
        let width = r.width.saturating_sub(2) as usize;
        let lines = match pane {
            Pane::Transcript => agents::transcript_lines(&self.research, width).len(),
            _ => agents::chat_lines(&self.chat, width).len(),
        };
        lines.saturating_sub(layout::text_rows(r))
    }
}
