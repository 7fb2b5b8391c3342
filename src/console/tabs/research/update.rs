//! The Research tab's update: polling the run (every 2 s while active and on screen, else every
//! 30 s), the `/research` commands, and its keys.

use super::rows::{Agents, Artifacts};
use super::{RESEARCH_POLL_IDLE, RESEARCH_POLL_VISIBLE, ResearchTab};
use crate::api::ApiError;
use crate::api::model::{CliReply, ResearchRun, ResearchStatus};
use crate::console::action::Effect;
use crate::console::component::{Ask, Ctx, TabComponent, ToastLevel};
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;
use crate::console::modal::{Confirm, Deciding, Modal};
use crate::console::poll::to_delta;
use crate::console::tab::Tab;
use crate::console::table::Rows;
use chrono::{DateTime, Utc};
use std::time::Duration;

impl ResearchTab {
    /// How often the run is asked for, with `tab` on screen.
    pub fn interval(&self, tab: Tab) -> Duration {
        if self.active() && tab == Tab::Research {
            RESEARCH_POLL_VISIBLE
        } else {
            RESEARCH_POLL_IDLE
        }
    }

    /// A stop request is on its way: no poll crosses it.
    pub fn stopping(&mut self) {
        self.poll.in_flight = true;
    }

    pub fn on_loaded(
        &mut self,
        result: Result<Box<ResearchStatus>, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
        ctx: &mut Ctx,
    ) {
        ctx.ask(Ask::Redraw);
        match result {
            Ok(status) => {
                self.checked = true;
                self.error = None;
                let interval = self.interval(ctx.tab);
                self.poll.succeeded(at, latency, interval);
                self.set_run(status.run, at, ctx);
            }
            Err(ApiError::NotFound { .. }) => {
                self.checked = true;
                self.poll.settled();
                self.unsupported = true;
                self.poll.stop();
                self.error = Some("this service has no research operations".into());
            }
            Err(ApiError::Unauthorized { message }) => {
                self.poll.settled();
                self.error = Some(message.clone());
                ctx.ask(Ask::AuthFailed(message));
            }
            Err(e) => {
                let interval = self.interval(ctx.tab);
                self.poll.failed(at, interval, &e);
                self.error = Some(e.to_string());
            }
        }
    }

    fn set_run(&mut self, run: Option<ResearchRun>, at: DateTime<Utc>, ctx: &mut Ctx) {
        let was_active = self.active();
        let before = self.run.as_ref().map(|r| r.run_id.clone());
        self.run = run;
        if before != self.run.as_ref().map(|r| r.run_id.clone()) {
            ctx.select(Pane::Agents, 0);
            ctx.select(Pane::Artifacts, 0);
            self.scroll = 0;
        }
        let notice = match &self.run {
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
            ctx.toast(text, ToastLevel::Info);
        }
        // No run: nothing to follow until this console starts one or the tab is entered again.
        match self.run {
            Some(_) => {
                let next = at + to_delta(self.interval(ctx.tab));
                self.poll.ask_at(next);
            }
            None => self.poll.stop(),
        }
        ctx.clamp(Pane::Agents, self.tree().len());
        ctx.clamp(Pane::Artifacts, self.artifacts());
    }

    pub fn on_stopped(
        &mut self,
        run_id: &str,
        result: Result<Box<ResearchRun>, ApiError>,
        at: DateTime<Utc>,
        ctx: &mut Ctx,
    ) {
        self.poll.settled();
        match result {
            Ok(run) => {
                let status = run.status.clone();
                self.set_run(Some(*run), at, ctx);
                ctx.toast(format!("Research run {run_id} {status}"), ToastLevel::Info);
            }
            Err(e) => {
                self.poll.ask_at(at);
                ctx.toast(format!("Stop {run_id} failed: {e}"), ToastLevel::Error);
            }
        }
    }

    /// `/research …`: sent as typed to the service's command line.
    pub fn send_command(&mut self, text: String, ctx: &mut Ctx) {
        if ctx.posts_held() {
            return;
        }
        self.reply = Some(format!("{text} …"));
        ctx.fx.push(Effect::Cli(text));
        ctx.ask(Ask::Show(Tab::Research));
    }

    pub fn on_cli_answered(
        &mut self,
        command: &str,
        result: Result<CliReply, ApiError>,
        at: DateTime<Utc>,
        ctx: &mut Ctx,
    ) {
        match result {
            Ok(reply) => {
                let output = reply.output.trim().to_string();
                let first = output.lines().next().unwrap_or("done").to_string();
                self.reply = Some(format!("{command} → {output}"));
                ctx.toast(first, ToastLevel::Info);
            }
            Err(e) => {
                if let ApiError::QuotaExceeded { retry_after, .. } = &e {
                    ctx.ask(Ask::HoldPosts(at + to_delta(*retry_after)));
                }
                self.reply = Some(format!("{command} → failed: {e}"));
                ctx.toast(format!("{command} failed: {e}"), ToastLevel::Error);
            }
        }
        if command
            .trim_start_matches('/')
            .to_ascii_lowercase()
            .starts_with("research")
        {
            // What the command changed shows now, and the service may have research after all.
            self.unsupported = false;
            self.poll.ask_at(at.min(ctx.now));
        }
        ctx.ask(Ask::Redraw);
    }
}

impl TabComponent for ResearchTab {
    fn rows(
        &self,
        pane: Pane,
        _now: DateTime<Utc>,
        _master: Option<usize>,
    ) -> Option<Box<dyn Rows + '_>> {
        let run = self.run.as_ref();
        match pane {
            Pane::Agents => Some(Box::new(Agents {
                agents: run.map(|r| r.agents.as_slice()).unwrap_or_default(),
                tree: self.tree(),
            })),
            Pane::Artifacts => Some(Box::new(Artifacts(
                run.map(|r| r.artifacts.as_slice()).unwrap_or_default(),
            ))),
            _ => None,
        }
    }

    fn schedule(&mut self, now: DateTime<Utc>, _shown: bool, fx: &mut Vec<Effect>) {
        if !self.unsupported && self.poll.start(now) {
            fx.push(Effect::FetchResearch);
        }
    }

    /// Entering the tab or `r` asks for the run now: one may have started elsewhere.
    fn entered(&mut self, now: DateTime<Utc>) {
        self.refresh(now, true);
    }

    fn refresh(&mut self, now: DateTime<Utc>, _shown: bool) {
        if !self.unsupported {
            self.poll.ask_at(now);
        }
    }

    /// Keys of the tab; true when handled. Scrolling the transcript is the router's, as for
    /// every pane.
    fn on_key(&mut self, action: KeyAction, pane: Pane, ctx: &mut Ctx) -> bool {
        match action {
            KeyAction::NewRun => ctx.ask(Ask::Prefill("/research start ".into())),
            KeyAction::Message => ctx.ask(Ask::Prefill("/research say ".into())),
            KeyAction::StopRun => match &self.run {
                Some(r) if r.status == "active" => {
                    ctx.ask(Ask::Open(Box::new(Modal::Confirm(Confirm::new(
                        Deciding::StopRun(r.run_id.clone()),
                        ctx.now,
                    )))));
                }
                _ => ctx.toast("no active research run to stop", ToastLevel::Error),
            },
            KeyAction::Select if pane == Pane::Artifacts => {
                if let Some(i) = ctx.row(Pane::Artifacts).filter(|i| *i < self.artifacts()) {
                    ctx.ask(Ask::Open(Box::new(Modal::Artifact {
                        index: i,
                        scroll: 0,
                    })));
                }
            }
            _ => return false,
        }
        true
    }
}
