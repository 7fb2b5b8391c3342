//! The Research tab's update: polling the run (every 2 s while active and on screen, else every
//! 30 s), the `/research` commands, and its keys.

use crate::api::ApiError;
use crate::api::model::{CliReply, ResearchRun, ResearchStatus};
use crate::console::action::Effect;
use crate::console::app::{App, ToastLevel};
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use crate::console::poll::to_delta;
use crate::console::tab::Tab;
use chrono::{DateTime, Utc};
use std::time::Duration;

use super::{RESEARCH_POLL_IDLE, RESEARCH_POLL_VISIBLE};

impl App {
    /// How often the research run is asked for now.
    pub fn research_interval(&self) -> Duration {
        if self.research.active() && self.tab == Tab::Research {
            RESEARCH_POLL_VISIBLE
        } else {
            RESEARCH_POLL_IDLE
        }
    }

    pub(crate) fn schedule_research(&mut self, fx: &mut Vec<Effect>) {
        let now = self.now;
        let r = &mut self.research;
        if !r.unsupported && r.poll.start(now) {
            fx.push(Effect::FetchResearch);
        }
    }

    /// Entering the tab or `r` asks for the run now: one may have started elsewhere.
    pub(crate) fn refresh_research(&mut self) {
        if !self.research.unsupported {
            self.research.poll.ask_at(self.now);
        }
    }

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

    /// Keys of the tab; true when handled.
    pub(crate) fn on_research_key(&mut self, action: KeyAction, pane: Pane) -> bool {
        match action {
            KeyAction::NewRun => self.prefill("/research start "),
            KeyAction::Message => self.prefill("/research say "),
            KeyAction::StopRun => match &self.research.run {
                Some(r) if r.status == "active" => {
                    self.modal = Some(Modal::StopRun(r.run_id.clone()));
                }
                _ => self.toast("no active research run to stop", ToastLevel::Error),
            },
            KeyAction::Select if pane == Pane::Artifacts => {
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
            KeyAction::Top | KeyAction::Bottom if pane == Pane::Transcript => {
                self.research.scroll = self.scroll_end(pane, action);
            }
            _ => return false,
        }
        true
    }
}
