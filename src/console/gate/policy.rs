//! The policy in force on the gateway as the console shows it (`/policy`, `P`): the default rules,
//! each agent's overrides, and how much of its daily notional each agent used today. Lower layer:
//! the state and its lines; `app/guard.rs` changes `App`.

use super::super::theme::Theme;
use crate::api::ApiError;
use crate::api::model::{GateDailyUse, GatePolicy, GateRules};
use chrono::{DateTime, Utc};
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

/// The policy as last read, and why the last read failed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicyState {
    /// The last answer that read; kept when a later read fails, so a refresh that fails never
    /// blanks what the supervisor was reading.
    pub policy: Option<GatePolicy>,
    pub read_at: Option<DateTime<Utc>>,
    /// Why the last read failed (cleared by the next good one).
    pub error: Option<String>,
    /// A read is out: the gate poll does not ask again until it answers.
    pub in_flight: bool,
}

/// What failed, in words: the request, then why (a refused token, garbage, no gateway there).
pub fn error_text(e: &ApiError) -> String {
    const WHAT: &str = "GET /gate/v1/policy";
    match e {
        ApiError::Unauthorized { message } => format!(
            "{WHAT}: the gateway refused the supervisor token ({message}); set AGENTDESK_GATE_TOKEN \
             to a token from `agentdesk gate token`"
        ),
        ApiError::Forbidden { code, message } => {
            format!("{WHAT}: the gateway refused it ({code}: {message})")
        }
        ApiError::NotFound { .. } => {
            format!("{WHAT}: not found: the service is not a gateway (no supervisor API)")
        }
        ApiError::Decode(detail) => {
            format!("{WHAT}: the gateway's answer is not a policy ({detail})")
        }
        ApiError::Transport(detail) => format!("{WHAT}: could not reach the gateway: {detail}"),
        other => format!("{WHAT} failed: {other}"),
    }
}

fn usd(x: f64) -> String {
    format!("{} USD", super::super::widgets::num(x, 2))
}

fn number(x: f64) -> String {
    if x.fract() == 0.0 {
        super::super::widgets::num(x, 0)
    } else {
        super::super::widgets::fmt_number(x)
    }
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// Each rule's label and its value in words; `None` values are unset.
fn rule_rows(r: &GateRules) -> Vec<(&'static str, Option<String>)> {
    vec![
        (
            "allowed coins",
            r.allowed_coins.as_ref().map(|c| {
                if c.is_empty() {
                    "none".to_string()
                } else {
                    c.join(", ")
                }
            }),
        ),
        (
            "max notional",
            r.max_notional_usd
                .map(|x| format!("{} per proposal", usd(x))),
        ),
        (
            "max leverage",
            r.max_leverage.map(|x| format!("{}x", number(x))),
        ),
        (
            "stop-loss required",
            r.require_stop_loss.map(|b| yes_no(b).to_string()),
        ),
        (
            "max open positions",
            r.max_open_positions.map(|n| n.to_string()),
        ),
        (
            "daily notional",
            r.max_daily_notional_usd
                .map(|x| format!("{} executed per UTC day", usd(x))),
        ),
        (
            "daily loss limit",
            r.daily_loss_limit_usd
                .map(|x| format!("{}, then reduce-only", usd(x))),
        ),
        (
            "allow immediate",
            r.allow_immediate.map(|b| {
                if b {
                    "yes (within the rules)".to_string()
                } else {
                    "no (staged for approval)".to_string()
                }
            }),
        ),
    ]
}

fn row<'a>(theme: &Theme, label: &str, value: String, set: bool) -> Line<'a> {
    Line::from(vec![
        Span::styled(format!("  {label:<19} "), theme.muted),
        Span::styled(value, if set { theme.base } else { theme.muted }),
    ])
}

/// The default rules: every key, unset ones as "no limit" (allow_immediate: no).
fn default_lines<'a>(theme: &Theme, rules: &GateRules) -> Vec<Line<'a>> {
    let mut lines = vec![Line::styled(
        "Default (every agent)",
        theme.accent.add_modifier(Modifier::BOLD),
    )];
    for (label, value) in rule_rows(rules) {
        let set = value.is_some();
        let value = value.unwrap_or_else(|| match label {
            "stop-loss required" => "no".into(),
            "allow immediate" => "no (staged for approval)".into(),
            "allowed coins" => "any coin".into(),
            _ => "no limit".into(),
        });
        lines.push(row(theme, label, value, set));
    }
    for (key, v) in &rules.other {
        lines.push(row(theme, key, v.to_string(), true));
    }
    lines
}

/// An agent's table: only what it overrides.
fn agent_lines<'a>(theme: &Theme, label: &str, rules: &GateRules) -> Vec<Line<'a>> {
    let mut lines = vec![Line::from(vec![
        Span::styled(
            format!("Agent {label}"),
            theme.accent.add_modifier(Modifier::BOLD),
        ),
        Span::styled(" overrides; the rest as the default", theme.muted),
    ])];
    let mut any = false;
    for (label, value) in rule_rows(rules) {
        if let Some(value) = value {
            lines.push(row(theme, label, value, true));
            any = true;
        }
    }
    for (key, v) in &rules.other {
        lines.push(row(theme, key, v.to_string(), true));
        any = true;
    }
    if !any {
        lines.push(Line::styled(
            "  (nothing: the default applies)",
            theme.muted,
        ));
    }
    lines
}

fn use_line<'a>(theme: &Theme, u: &GateDailyUse) -> Line<'a> {
    let (text, style) = match u.max_daily_notional_usd {
        Some(limit) if limit > 0.0 => {
            let share = u.executed_notional_usd / limit;
            let style = if share >= 1.0 {
                theme.bad.add_modifier(Modifier::BOLD)
            } else if share >= 0.8 {
                theme.warn
            } else {
                theme.good
            };
            (
                format!(
                    "{} of {} ({})",
                    usd(u.executed_notional_usd),
                    usd(limit),
                    super::super::widgets::pct(share * 100.0, 0)
                ),
                style,
            )
        }
        _ => (
            format!("{} (no daily limit)", usd(u.executed_notional_usd)),
            theme.base,
        ),
    };
    Line::from(vec![
        Span::styled(format!("  {:<19} ", u.agent), theme.muted),
        Span::styled(text, style),
    ])
}

/// The policy panel's lines: the read's state, the default rules, each agent's overrides, and
/// today's executed notional per agent.
pub fn policy_lines<'a>(theme: &Theme, state: &PolicyState) -> Vec<Line<'a>> {
    let mut lines = Vec::new();
    if let Some(e) = &state.error {
        lines.push(Line::styled(e.clone(), theme.bad));
    }
    let Some(p) = &state.policy else {
        if state.error.is_none() {
            lines.push(Line::styled("Reading the policy in force…", theme.muted));
        }
        lines.push(Line::styled("esc closes", theme.muted));
        return lines;
    };
    if let Some(at) = state.read_at {
        let what = if state.error.is_some() {
            "last read"
        } else {
            "read"
        };
        lines.push(Line::styled(
            format!(
                "{what} at {} UTC · refreshed while open · esc closes",
                at.format("%H:%M:%S")
            ),
            theme.muted,
        ));
    }
    lines.extend(default_lines(theme, &p.policy.rules));
    for (label, rules) in &p.policy.agents {
        lines.extend(agent_lines(theme, label, rules));
    }
    match &p.today {
        Some(today) => {
            lines.push(Line::from(vec![
                Span::styled("Executed today", theme.accent.add_modifier(Modifier::BOLD)),
                Span::styled(
                    format!(" (UTC, since {})", today.since.format("%Y-%m-%d %H:%M")),
                    theme.muted,
                ),
            ]));
            if today.agents.is_empty() {
                lines.push(Line::styled(
                    "  no agent has used the gateway yet",
                    theme.muted,
                ));
            }
            for u in &today.agents {
                lines.push(use_line(theme, u));
            }
        }
        None => lines.push(Line::styled(
            "Executed today: this gateway does not report it (older version)",
            theme.muted,
        )),
    }
    lines
}

/// The panel's box and its body's rows (wrapped) in `area`.
fn geometry(area: Rect, lines: Vec<Line<'_>>) -> (Rect, Paragraph<'_>, u16) {
    let body = Paragraph::new(lines).wrap(Wrap { trim: false });
    let inner_width = 90.min(area.width).saturating_sub(2);
    let rows = body.line_count(inner_width).min(u16::MAX as usize) as u16;
    let r = super::super::widgets::centered(area, 90, rows.saturating_add(2));
    (r, body, rows)
}

/// How far the panel scrolls in a terminal of `size`: its last row at the bottom, no further.
pub fn max_scroll(state: &PolicyState, size: (u16, u16)) -> u16 {
    let area = Rect::new(0, 0, size.0, size.1);
    let (r, _, rows) = geometry(area, policy_lines(&Theme::dark(), state));
    rows.saturating_sub(r.height.saturating_sub(2))
}

/// `/policy`'s panel: the policy in force, scrolled.
pub fn policy_panel(
    f: &mut ratatui::Frame,
    theme: &Theme,
    area: Rect,
    state: &PolicyState,
    scroll: u16,
) {
    let (r, body, rows) = geometry(area, policy_lines(theme, state));
    let scroll = scroll.min(rows.saturating_sub(r.height.saturating_sub(2)));
    f.render_widget(Clear, r);
    let p = body
        .scroll((scroll, 0))
        .block(super::super::widgets::block(
            theme,
            Line::from(" Policy in force "),
            true,
        ))
        .style(theme.base);
    f.render_widget(p, r);
}

#[cfg(test)]
mod tests {
    use super::usd;

    #[test]
    fn usd_groups_thousands_and_rounds_cents() {
        assert_eq!(usd(0.0), "0.00 USD");
        assert_eq!(usd(1234.5), "1,234.50 USD");
        assert_eq!(usd(1_000_000.0), "1,000,000.00 USD");
        assert_eq!(usd(999.999), "1,000.00 USD");
        assert_eq!(usd(-250.25), "-250.25 USD");
    }
}
