//! The gateway's guardrails as the console shows them: every rule's verdict on an item (ok, near
//! its limit, broken), the approve dialog's live re-check, the kill switch,
//! and the live standing approvals with their countdown. Lower layer: data and lines; `update.rs`
//! and `app/guard.rs` change `App`.

use super::super::theme::Theme;
use crate::api::model::{
    GateApproval, GateCheck, GateItem, GateKillSwitch, GateStanding, GateVerdict, ItemStatus,
};
use chrono::{DateTime, Utc};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use serde_json::Value;

/// The approve dialog's re-check of one gateway item (`GET /gate/v1/inbox/{id}/check`); the
/// dialog (`inbox/dialog.rs`) owns it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ApproveCheck {
    pub id: String,
    /// Asked (the effect went out).
    pub sent: bool,
    /// The gateway's answer, or why it did not come.
    pub answer: Option<Result<GateCheck, String>>,
}

impl ApproveCheck {
    pub fn new(id: &str) -> ApproveCheck {
        ApproveCheck {
            id: id.to_string(),
            ..Default::default()
        }
    }

    /// The rules an approval has to override: the live answer's, else (not answered yet, or
    /// no answer) the staging's broken rules.
    pub fn breaking(&self, item: Option<&GateItem>) -> Vec<String> {
        match &self.answer {
            Some(Ok(c)) => {
                let mut rules = c.needs_override.clone();
                for v in c.verdicts.iter().filter(|v| !v.ok) {
                    if !rules.contains(&v.rule) {
                        rules.push(v.rule.clone());
                    }
                }
                rules
            }
            _ => item
                .map(|g| {
                    g.verdicts
                        .iter()
                        .filter(|v| !v.ok)
                        .map(|v| v.rule.clone())
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// The kill switch's reason when the live answer says it blocks this item.
    pub fn blocked_by_kill(&self) -> Option<String> {
        match &self.answer {
            Some(Ok(c)) if c.kill_switch.blocks => {
                Some(c.kill_switch.reason.clone().unwrap_or_default())
            }
            _ => None,
        }
    }
}

/// The kill switch's reason, while it is on.
pub fn kill_reason(kill: Option<&GateKillSwitch>) -> Option<String> {
    kill.filter(|k| k.on)
        .map(|k| k.reason.clone().unwrap_or_default())
}

/// The words approvals are refused with while the kill switch is on.
pub fn kill_refusal(reason: &str) -> String {
    format!(
        "the kill switch is on ({reason}): pending items cannot be approved; /kill off turns it off"
    )
}

fn show(v: &Value) -> String {
    match v {
        Value::Null => "—".into(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(x) if x.fract() != 0.0 => crate::console::widgets::num(x, 2),
            Some(x) => crate::console::widgets::num(x, 0),
            None => n.to_string(),
        },
        Value::Array(a) => a.iter().map(show).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// One line per rule: `✓ ok`, `! near` (passes at or past 80% of its limit), `✗ broken`, with
/// its value and limit.
pub fn verdict_lines<'a>(theme: &Theme, verdicts: &[GateVerdict]) -> Vec<Line<'a>> {
    verdicts
        .iter()
        .map(|v| {
            let (mark, word, style) = match (v.ok, v.near) {
                (false, _) => ("✗", "broken", theme.bad.add_modifier(Modifier::BOLD)),
                (true, true) => ("!", "near", theme.warn),
                (true, false) => ("✓", "ok", theme.good),
            };
            Line::from(vec![
                Span::styled(format!("  {mark} {word:<6} "), style),
                // A space after the padding: a rule name as long as the column (and
                // max_daily_notional_usd is) must not run into its value.
                Span::styled(format!("{:<22} ", v.rule), style),
                Span::styled(
                    format!("{} / limit {}", show(&v.value), show(&v.limit)),
                    theme.muted,
                ),
            ])
        })
        .collect()
}

/// The detail panel's guardrail lines for a gateway item: its verdicts at staging, the standing
/// approval that approved it, and the kill switch while it is on.
pub fn detail_lines<'a>(
    theme: &Theme,
    item: &GateItem,
    kill: Option<&GateKillSwitch>,
) -> Vec<Line<'a>> {
    let mut lines = Vec::new();
    if let Some(n) = item.standing_approval {
        lines.push(Line::from(vec![
            Span::styled(format!("{:<13}", "Auto"), theme.muted),
            Span::styled(
                format!("auto-approved by standing approval {n}"),
                theme.good,
            ),
        ]));
    }
    if let Some(reason) = kill_reason(kill).filter(|_| item.status == ItemStatus::Pending) {
        lines.push(Line::from(vec![
            Span::styled(format!("{:<13}", "Kill switch"), theme.muted),
            Span::styled(kill_refusal(&reason), theme.bad),
        ]));
    }
    if !item.verdicts.is_empty() {
        lines.push(Line::styled("Policy at staging", theme.muted));
        lines.extend(verdict_lines(theme, &item.verdicts));
    }
    lines
}

/// The approve dialog's guardrail lines: the live re-check (or "checking…") and what an approval
/// must override (the override step's own lines are the dialog's).
pub fn approve_lines<'a>(
    theme: &Theme,
    check: Option<&ApproveCheck>,
    item: Option<&GateItem>,
    kill: Option<&GateKillSwitch>,
) -> Vec<Line<'a>> {
    let mut lines = Vec::new();
    if let Some(reason) = kill_reason(kill) {
        lines.push(Line::styled(
            format!("KILL SWITCH ON — {}", kill_refusal(&reason)),
            theme.bad.add_modifier(Modifier::BOLD),
        ));
    }
    if let Some(g) = item {
        lines.extend(quorum_lines(theme, check, g));
    }
    let Some(check) = check else { return lines };
    match &check.answer {
        None => lines.push(Line::styled(
            "Policy now: checking… (the staging's verdicts until the gateway answers)",
            theme.muted,
        )),
        Some(Err(e)) => lines.push(Line::styled(
            format!("Policy now: the re-check failed ({e}); the staging's verdicts:"),
            theme.warn,
        )),
        Some(Ok(c)) => {
            if c.verdicts.is_empty() {
                lines.push(Line::styled(
                    "Policy now (re-checked live): no rule applies to this item",
                    theme.muted,
                ));
            } else {
                lines.push(Line::styled("Policy now (re-checked live):", theme.muted));
                lines.extend(verdict_lines(theme, &c.verdicts));
            }
            if let Some(s) = &c.suspension {
                lines.push(Line::styled(
                    format!(
                        "AGENT SUSPENDED by {} since {} ({}): y is refused until an admin \
                         resumes it",
                        s.by,
                        s.at.format("%H:%M UTC"),
                        s.reason
                    ),
                    theme.bad.add_modifier(Modifier::BOLD),
                ));
            }
            if c.kill_switch.blocks && kill_reason(kill).is_none() {
                lines.push(Line::styled(
                    kill_refusal(c.kill_switch.reason.as_deref().unwrap_or("")),
                    theme.bad,
                ));
            }
        }
    }
    if !matches!(check.answer, Some(Ok(_)))
        && let Some(g) = item
    {
        lines.extend(verdict_lines(theme, &g.verdicts));
    }
    let breaking = check.breaking(item);
    if breaking.is_empty() {
        return lines;
    }
    let killed = kill_reason(kill).is_some() || check.blocked_by_kill().is_some();
    lines.push(Line::styled(
        if killed {
            format!(
                "Breaks {}: and the kill switch is on, so there is no override to offer",
                breaking.join(", ")
            )
        } else {
            format!(
                "Breaks {}: y alone will not approve; o, then typing the coin, overrides \
                 (journaled with the rule)",
                breaking.join(", ")
            )
        },
        theme.bad,
    ));
    lines
}

/// "1 of 2 approvals (alice) · 1 more needed" for a step-up item; `None` for an item one
/// approval executes.
pub fn quorum_text(g: &GateItem) -> Option<String> {
    quorum_of(&g.approvals, g.approvals_required, g.staged_by.as_deref())
}

/// "1 of 2 (bob)": the row's words for a step-up item's approvals so far.
pub fn quorum_short(g: &GateItem) -> Option<String> {
    (g.approvals_required > 1).then(|| {
        let by: Vec<&str> = g.approvals.iter().map(|a| a.by.as_str()).collect();
        match by.is_empty() {
            true => format!("0 of {}", g.approvals_required),
            false => format!(
                "{} of {} ({})",
                by.len(),
                g.approvals_required,
                by.join(", ")
            ),
        }
    })
}

fn quorum_of(approvals: &[GateApproval], required: u32, staged_by: Option<&str>) -> Option<String> {
    let mut text = crate::api::model::quorum(approvals, required)?;
    let missing = (required as usize).saturating_sub(approvals.len());
    if missing > 0 {
        text.push_str(&format!(" · {missing} more needed"));
    }
    if let Some(s) = staged_by {
        text.push_str(&format!(", not {s}, who staged it"));
    }
    Some(text)
}

/// What `y` does on an item, as far as the dialog knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YDoes {
    /// Approves and executes: one approval is all it needs, or this is the last one.
    Executes,
    /// Adds this supervisor's approval to a step-up item's quorum; it does not execute yet.
    Adds,
    /// Adds one, or executes if it is the last needed: who "you" are is not known yet.
    AddsOrExecutes,
    /// Counts for nothing: this supervisor approved already, or staged the item.
    Nothing,
}

/// What `y` does on a step-up item (`None` for one approval executes), and the dialog's words
/// for it. Who "you" are comes with the dialog's live re-check; until it answers, both outcomes
/// are said.
pub fn y_does(check: Option<&ApproveCheck>, g: &GateItem) -> Option<(YDoes, String)> {
    let live = match check.and_then(|c| c.answer.as_ref()) {
        Some(Ok(c)) => Some(c),
        _ => None,
    };
    let (approvals, required) = match live {
        Some(c) => (&c.approvals, c.approvals_required.max(g.approvals_required)),
        None => (&g.approvals, g.approvals_required),
    };
    if required <= 1 {
        return None;
    }
    let missing = (required as usize).saturating_sub(approvals.len());
    Some(match live.and_then(|c| c.you.as_deref()) {
        Some(me) if approvals.iter().any(|a| a.by == me) => (
            YDoes::Nothing,
            format!("You ({me}) approved it already: y adds nothing; another supervisor must"),
        ),
        Some(me) if g.staged_by.as_deref() == Some(me) => (
            YDoes::Nothing,
            format!("You ({me}) staged it: your y does not count; other supervisors approve it"),
        ),
        Some(_) if missing <= 1 => (
            YDoes::Executes,
            "y EXECUTES it: yours is the last approval needed".to_string(),
        ),
        // As last read: another supervisor approving meanwhile makes this y the last one.
        Some(_) => (
            YDoes::Adds,
            format!(
                "y adds your approval ({} of {required} as last read); it executes once \
                 {required} have approved",
                approvals.len() + 1,
            ),
        ),
        None => (
            YDoes::AddsOrExecutes,
            "y adds your approval, and executes it if that completes the quorum (checking…)"
                .to_string(),
        ),
    })
}

/// The dialog's line for [`y_does`] (the quorum itself is on the item's "Approvals" line).
fn quorum_lines<'a>(theme: &Theme, check: Option<&ApproveCheck>, g: &GateItem) -> Vec<Line<'a>> {
    let Some((does, what)) = y_does(check, g) else {
        return Vec::new();
    };
    let style = match does {
        YDoes::Nothing => theme.bad,
        YDoes::Executes => theme.critical.add_modifier(Modifier::BOLD),
        YDoes::Adds | YDoes::AddsOrExecutes => theme.warn,
    };
    vec![Line::styled(what, style)]
}

/// "mm:ss" left until `at` (0:00 once past).
pub fn countdown(now: DateTime<Utc>, at: DateTime<Utc>) -> String {
    let secs = (at - now).num_seconds().max(0);
    format!("{}:{:02}", secs / 60, secs % 60)
}

/// The standing approvals panel's lines: one per live standing approval with its countdown, then
/// what it approved.
pub fn standing_lines<'a>(
    theme: &Theme,
    list: &[GateStanding],
    now: DateTime<Utc>,
) -> Vec<Line<'a>> {
    let live: Vec<&GateStanding> = list.iter().filter(|s| s.expires_at > now).collect();
    if live.is_empty() {
        return vec![
            Line::styled("No live standing approvals.", theme.muted),
            Line::styled(
                "/auto <agent|*> <coins,...|*> <maxNotionalUsd> <minutes> [reason] creates one.",
                theme.muted,
            ),
        ];
    }
    let mut lines = Vec::new();
    for s in live {
        let coins = if s.coins.is_empty() {
            "every coin".to_string()
        } else {
            s.coins.join(",")
        };
        lines.push(Line::from(vec![
            Span::styled(format!("#{:<3} ", s.id), theme.accent),
            Span::styled(countdown(now, s.expires_at), theme.warn),
            Span::raw(format!(
                " left · agent {} · {coins} · up to {} USD · ",
                s.agent,
                crate::console::widgets::num(s.max_notional_usd, 2)
            )),
            Span::styled(format!("{} approved", s.approved.len()), theme.good),
        ]));
        lines.push(Line::styled(format!("      {}", s.reason), theme.muted));
        for a in &s.approved {
            lines.push(Line::styled(
                format!(
                    "      · {} {} {}{}",
                    a.proposal_id.as_deref().unwrap_or(&a.id),
                    a.kind,
                    a.status,
                    a.notional
                        .map(|n| format!(" ({} USD)", crate::console::widgets::num(n, 2)))
                        .unwrap_or_default()
                ),
                theme.base,
            ));
        }
    }
    lines.push(Line::styled(
        "/auto revoke <id> ends one now · esc closes",
        theme.muted,
    ));
    lines
}

/// `/kill`'s question: nothing is sent before `y`.
pub fn kill_dialog(
    f: &mut ratatui::Frame,
    theme: &Theme,
    area: ratatui::layout::Rect,
    on: bool,
    reason: &str,
    yes: &str,
) {
    use ratatui::widgets::{Clear, Paragraph, Wrap};
    let lines = if on {
        vec![
            Line::styled(
                format!("Turn the kill switch ON for every agent? {yes}/esc"),
                theme.bad.add_modifier(Modifier::BOLD),
            ),
            Line::from(format!("Reason (agents are told): {reason}")),
            Line::styled(
                "Nothing that adds exposure passes; closes, cancels and reduce-only orders do. \
                 Pending items cannot be approved. It stays on until /kill off.",
                theme.muted,
            ),
        ]
    } else {
        vec![
            Line::styled(
                format!("Turn the kill switch OFF for every agent? {yes}/esc"),
                theme.warn.add_modifier(Modifier::BOLD),
            ),
            Line::styled(
                "Agents may then add exposure again, within the policy.",
                theme.muted,
            ),
        ]
    };
    let r = super::super::widgets::centered(area, 64, 7);
    f.render_widget(Clear, r);
    let p = Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(super::super::widgets::block(
            theme,
            Line::from(" Kill switch "),
            true,
        ))
        .style(theme.base);
    f.render_widget(p, r);
}

/// `/auto`'s panel: the live standing approvals, each with its countdown and what it approved.
pub fn standing_panel(
    f: &mut ratatui::Frame,
    theme: &Theme,
    area: ratatui::layout::Rect,
    list: &[GateStanding],
    now: DateTime<Utc>,
    scroll: u16,
) {
    let lines = standing_lines(theme, list, now);
    super::super::widgets::lines_panel(f, theme, area, "Standing approvals", lines, scroll);
}
