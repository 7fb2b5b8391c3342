//! App's part of the guardrails: the kill switch and standing approvals polled with the gate
//! feed, the approve dialog's live re-check and the last word on its approval, `/kill` (asked first)
//! and `/auto` (upper layer: it changes `App`).

use crate::api::ApiError;
use crate::api::model::{
    GateAgentsChanged, GateCheck, GateKillSwitch, GatePolicy, GateStanding, GateStandingRequest,
};
use crate::console::action::Effect;
use crate::console::app::{App, ToastLevel};
use crate::console::gate::guard::{ApproveCheck, kill_reason, kill_refusal};
use crate::console::gate::{Detected, agents};
use crate::console::keymap::KeyAction;
use crate::console::modal::{Confirm, Deciding, Modal};
use chrono::{DateTime, Utc};

impl App {
    /// With a gate poll, at most every [`gate::GUARD_EVERY`]: the kill switch and the standing
    /// approvals; and the open approve dialog's re-check, once.
    pub(crate) fn schedule_guard(&mut self, polled: bool, fx: &mut Vec<Effect>) {
        if self.inbox.gate_mut().guard_due(self.now, polled) {
            fx.push(Effect::FetchGuard);
        }
        // The policy rides the gate poll only while its panel is open: closed, it costs nothing.
        if polled && matches!(self.modal, Some(Modal::Policy { .. })) {
            self.fetch_policy(fx);
        }
        if let Some(Modal::Approve(d)) = self.modal.as_mut()
            && let Some(check) = d.check.as_mut()
            && !check.sent
        {
            check.sent = true;
            fx.push(Effect::GateCheck(check.id.clone()));
        }
    }

    pub(crate) fn on_guard_loaded(
        &mut self,
        kill: Result<GateKillSwitch, ApiError>,
        standing: Result<Vec<GateStanding>, ApiError>,
    ) {
        // A failed poll keeps what was last known: a kill switch never looks off for want of
        // an answer.
        if let Ok(k) = kill {
            self.inbox.gate_mut().set_kill(k);
        }
        if let Ok(s) = standing {
            self.inbox.gate_mut().set_standing(s);
        }
    }

    pub(crate) fn on_gate_checked(&mut self, id: &str, result: Result<Box<GateCheck>, ApiError>) {
        if let Some(Modal::Approve(d)) = self.modal.as_mut()
            && let Some(check) = d.check.as_mut().filter(|c| c.id == id)
        {
            check.answer = Some(result.map(|c| *c).map_err(|e| e.to_string()));
        }
    }

    /// Whether this gateway item must not be approved now, overriding `overrides` (said in a
    /// toast; the dialog stays). The dialog's own rules let the approval out; this is the last
    /// word, with what is known when it goes.
    pub(crate) fn gate_refuses(
        &mut self,
        id: &str,
        check: Option<&ApproveCheck>,
        overrides: &[String],
    ) -> bool {
        if !self.inbox.gate().is_gateway() || self.inbox.gate().item(id).is_none() {
            return false;
        }
        if let Some(reason) = kill_reason(self.inbox.gate().kill())
            .or_else(|| check.and_then(ApproveCheck::blocked_by_kill))
        {
            self.toast(kill_refusal(&reason), ToastLevel::Error);
            return true;
        }
        let fresh = ApproveCheck::new(id);
        let check = check.filter(|c| c.id == id).unwrap_or(&fresh);
        let missing: Vec<String> = check
            .breaking(self.inbox.gate().item(id))
            .into_iter()
            .filter(|r| !overrides.contains(r))
            .collect();
        if missing.is_empty() {
            return false;
        }
        self.toast(
            format!(
                "{id} breaks {}: not approved; o, then typing the coin, overrides (journaled \
                 with the rule)",
                missing.join(", ")
            ),
            ToastLevel::Error,
        );
        true
    }

    /// True (and a line saying why) when the gateway said this console's supervisor token may
    /// not do what needs `needed` (`approver`, `admin`): the console does not offer what the
    /// gateway would refuse. Unknown role (an older gateway): everything is offered.
    pub(crate) fn gate_role_refuses(&mut self, needed: &str, what: &str) -> bool {
        match self.inbox.gate().role_refusal(needed, what) {
            Some(why) => {
                self.toast(why, ToastLevel::Error);
                true
            }
            None => false,
        }
    }

    /// `/kill <reason>` and `/kill off`: asked first.
    pub(crate) fn ask_kill_switch(&mut self, on: bool, reason: String) {
        if !self.inbox.gate().is_gateway() {
            self.toast(
                "not on a gateway: /kill turns a gateway's kill switch on or off",
                ToastLevel::Error,
            );
            return;
        }
        if self.gate_role_refuses("admin", "switching the kill switch") {
            return;
        }
        self.modal = Some(Modal::Confirm(Confirm::new(
            Deciding::Kill { on, reason },
            self.now,
        )));
    }

    pub(crate) fn on_kill_switch_set(
        &mut self,
        on: bool,
        result: Result<GateKillSwitch, ApiError>,
        at: DateTime<Utc>,
    ) {
        match result {
            Ok(k) => {
                let text = if k.on {
                    format!(
                        "KILL SWITCH ON ({}): agents' new exposure is refused; pending items cannot be approved",
                        k.reason.clone().unwrap_or_default()
                    )
                } else {
                    "kill switch off: agents may trade again within the policy".to_string()
                };
                self.inbox.gate_mut().set_kill(k);
                self.toast(text, ToastLevel::Info);
            }
            Err(e) => {
                let what = if on { "on" } else { "off" };
                self.toast(
                    format!("the kill switch did not turn {what}: {e}"),
                    ToastLevel::Error,
                );
            }
        }
        self.inbox.gate_mut().ask_guard_at(at);
    }

    /// `/suspend <agent> <reason>` (approver) and `/resume <agent>` (admin): asked first.
    pub(crate) fn ask_agent_state(&mut self, what: Deciding) {
        let (command, needed, doing) = match &what {
            Deciding::Resume(_) => ("/resume", "admin", "resuming a suspended agent"),
            _ => ("/suspend", "approver", "suspending an agent"),
        };
        if !self.inbox.gate().is_gateway() {
            self.toast(
                format!("not on a gateway: {command} changes an agent's state on a gateway"),
                ToastLevel::Error,
            );
            return;
        }
        if self.gate_role_refuses(needed, doing) {
            return;
        }
        self.modal = Some(Modal::Confirm(Confirm::new(what, self.now)));
    }

    pub(crate) fn on_agent_state_set(
        &mut self,
        agent: &str,
        suspend: bool,
        result: Result<GateAgentsChanged, ApiError>,
    ) {
        let done = if suspend { "suspended" } else { "resumed" };
        match result {
            Ok(answer) => {
                let text = match (answer.changed, suspend) {
                    (true, true) => format!(
                        "{agent} suspended: its new exposure is refused and its items cannot be approved"
                    ),
                    (true, false) => {
                        format!("{agent} resumed: it may trade again within the policy")
                    }
                    (false, true) => {
                        format!("{agent} was suspended already; the first reason stands")
                    }
                    (false, false) => format!("{agent} was not suspended"),
                };
                self.inbox.gate_mut().set_agents_state(&answer.agents);
                self.toast(text, ToastLevel::Info);
            }
            Err(e) => self.toast(format!("{agent} not {done}: {e}"), ToastLevel::Error),
        }
    }

    /// `/auto` alone: the standing approvals panel (refreshed now).
    pub(crate) fn show_standing(&mut self) {
        if !self.inbox.gate().is_gateway() {
            self.toast(
                "not on a gateway: /auto lists a gateway's standing approvals",
                ToastLevel::Error,
            );
            return;
        }
        self.inbox.gate_mut().ask_guard_at(self.now);
        self.modal = Some(Modal::Standing { scroll: 0 });
    }

    /// `/agents`: each agent with its state, as the gate poll last read them.
    pub(crate) fn show_agents(&mut self) {
        if !self.inbox.gate().is_gateway() {
            self.toast(
                "not on a gateway: /agents lists a gateway's agents",
                ToastLevel::Error,
            );
            return;
        }
        self.modal = Some(Modal::Agents {
            scroll: 0,
            selected: 0,
        });
    }

    /// The agents panel's keys: ↑/↓ choose an agent (the panel follows), `s` and `r` prefill
    /// `/suspend <agent> ` (the reason is typed, then the suspension is asked) and `/resume
    /// <agent>` on the command line: neither key acts by itself.
    pub(crate) fn on_agents_key(
        &mut self,
        key: crossterm::event::KeyEvent,
        action: Option<KeyAction>,
        page: usize,
    ) {
        let Some(Modal::Agents { scroll, selected }) = self.modal.as_mut() else {
            return;
        };
        let agents = self.inbox.gate().agents();
        let count = agents.len();
        match (key.code, action) {
            (crossterm::event::KeyCode::Char(c @ ('s' | 'r')), _) if key.modifiers.is_empty() => {
                let Some(a) = agents.get(*selected) else {
                    return;
                };
                let text = match c {
                    's' => format!("/suspend {} ", a.agent),
                    _ => format!("/resume {}", a.agent),
                };
                self.prefill(&text);
            }
            (_, Some(KeyAction::Up | KeyAction::Down)) if count > 0 => {
                *selected = match action {
                    Some(KeyAction::Up) => selected.saturating_sub(1),
                    _ => (*selected + 1).min(count - 1),
                };
                // The chosen agent's first line in view: a line each, two when suspended.
                let head = agents::head_line(agents, *selected) as u16;
                let visible = self.size.1.saturating_sub(6).max(1);
                if head < *scroll {
                    *scroll = head;
                } else if head >= *scroll + visible {
                    *scroll = head + 1 - visible;
                }
            }
            (_, Some(KeyAction::PageUp | KeyAction::PageDown | KeyAction::Top)) => {
                if let Some(s) = super::input::scrolled(*scroll, action, page) {
                    *scroll = s;
                }
            }
            (_, Some(KeyAction::Cancel | KeyAction::Quit | KeyAction::Select)) => self.modal = None,
            _ => {}
        }
    }

    /// `/policy` (and `P`): the policy panel, read now and then with each gate poll while open.
    pub(crate) fn show_policy(&mut self, fx: &mut Vec<Effect>) {
        if self.inbox.gate().detected() == Detected::No {
            self.toast(
                format!(
                    "not a gateway: {} has no supervisor API (/gate/v1), so there is no policy to show; \
                     /policy shows the guardrails of an agentdesk gateway",
                    self.service.host
                ),
                ToastLevel::Error,
            );
            return;
        }
        self.modal = Some(Modal::Policy { scroll: 0 });
        self.fetch_policy(fx);
    }

    fn fetch_policy(&mut self, fx: &mut Vec<Effect>) {
        if self.inbox.gate_mut().ask_policy() {
            fx.push(Effect::FetchPolicy);
        }
    }

    pub(crate) fn on_policy_loaded(
        &mut self,
        result: Result<Box<GatePolicy>, ApiError>,
        at: DateTime<Utc>,
    ) {
        self.inbox.gate_mut().policy_loaded(result.map(|p| *p), at);
        self.dirty = true;
    }

    /// `/auto AGENT ...`: a standing approval lets trades execute with no one's `y`, so it is
    /// asked first, as every final answer is.
    pub(crate) fn create_standing(&mut self, request: GateStandingRequest) {
        if self.gate_role_refuses("admin", "adding a standing approval") {
            return;
        }
        if !self.inbox.gate().is_gateway() {
            self.toast(
                "not on a gateway: /auto creates a gateway's standing approval",
                ToastLevel::Error,
            );
            return;
        }
        self.modal = Some(Modal::Confirm(Confirm::new(
            Deciding::Standing(Box::new(request)),
            self.now,
        )));
    }

    /// The standing approval's question was answered yes.
    pub(crate) fn send_standing(&mut self, request: GateStandingRequest, fx: &mut Vec<Effect>) {
        fx.push(Effect::GateCreateStanding(request));
    }

    pub(crate) fn revoke_standing(&mut self, n: i64, fx: &mut Vec<Effect>) {
        if self.gate_role_refuses("admin", "revoking a standing approval") {
            return;
        }
        if !self.inbox.gate().is_gateway() {
            self.toast(
                "not on a gateway: /auto revoke ends a gateway's standing approval",
                ToastLevel::Error,
            );
            return;
        }
        fx.push(Effect::GateRevokeStanding(n));
    }

    pub(crate) fn on_standing_changed(
        &mut self,
        what: &str,
        result: Result<(), ApiError>,
        at: DateTime<Utc>,
    ) {
        match result {
            Ok(()) => {
                let text = if let Some(rest) = what.strip_prefix("revoke ") {
                    format!("revoked {rest}")
                } else {
                    format!("created a {what}; /auto lists it")
                };
                self.toast(text, ToastLevel::Info);
            }
            Err(e) => self.toast(format!("{what}: refused: {e}"), ToastLevel::Error),
        }
        self.inbox.gate_mut().ask_guard_at(at);
    }
}
