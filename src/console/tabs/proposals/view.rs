//! The approval inbox: proposals with their countdowns, the selected one as it will execute with a
//! risk preview from live data, the approve dialog, and the decision history.

use crate::api::model::ItemStatus;
use crate::console::gate::guard;
use crate::console::inbox::InboxItem;
use crate::console::inbox::LocalState;
use crate::console::inbox::Source;
use crate::console::inbox::Status;
use crate::console::layout::{Pane, Screen};
use crate::console::table;
use crate::console::tabs::proposals::rows::{DecisionRows, InboxRows};
use crate::console::tabs::proposals::shown::InboxShown;
use crate::console::theme::Theme;
use crate::console::widgets::{self, countdown, num, pnl_style, px, signed, size};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

pub fn draw(f: &mut Frame, v: &InboxShown<'_>, theme: &Theme, screen: &Screen) {
    inbox(f, v, theme, screen);
    detail(f, v, theme, screen.detail);
    decisions(f, v, theme, screen);
}

fn status_style(theme: &Theme, status: Status) -> Style {
    match status {
        Status::Staged => theme.base,
        Status::Confirming | Status::Unknown | Status::Unrecognised => theme.warn,
        Status::Approved | Status::Executed => theme.good,
        Status::Failed => theme.bad,
        Status::Rejected | Status::Expired => theme.expired,
    }
}

fn inbox(f: &mut Frame, v: &InboxShown<'_>, theme: &Theme, screen: &Screen) {
    let focused = v.focused_pane() == Pane::Inbox;
    let mut title = vec![Span::styled(
        format!(" {} ", Pane::Inbox.title()),
        theme.accent,
    )];
    // On a gateway the inbox is the gateway's (every agent's), whatever the upstream lists.
    if !v.feeds[&crate::console::action::Resource::Proposals].supported
        && v.decider().polls_service_proposals()
    {
        title.push(Span::styled(
            " (this service lists no proposals: showing this console's) ",
            theme.muted,
        ));
    }
    let on_gate = v.gate.is_gateway();
    if on_gate {
        let agent = v.gate.filter().unwrap_or("all");
        title.push(Span::styled(format!(" agent: {agent} "), theme.muted));
    }
    let rows = InboxRows::new(v.inbox, Pane::Inbox, v.now, &v.service.key_fingerprint);
    table::draw(
        f,
        screen,
        theme,
        v.tables,
        Pane::Inbox,
        Line::from(title),
        focused,
        v.selected(Pane::Inbox),
        &rows,
        "no proposals yet",
        |k| {
            let item = rows.item(k);
            let status = item.status(v.now);
            let wait = v.inbox.wait_left(item.id(), v.now);
            let first: Line = if let Some(left) = wait.filter(|_| status == Status::Staged) {
                Line::styled(format!("rate limited {left}s"), theme.warn)
            } else if status == Status::Staged {
                Line::from(countdown(
                    theme,
                    item.remaining(v.now).unwrap_or_default(),
                    item.lifetime(),
                    10,
                ))
            } else {
                Line::from(Span::styled(
                    item.status_text(v.now),
                    status_style(theme, status),
                ))
            };
            // Unfocused (the detail or the decisions have the focus), the row `a` acts on is
            // still marked.
            let chosen =
                !focused && v.inbox.selection(Pane::Inbox).id.as_deref() == Some(item.id());
            let style = if chosen {
                Some(theme.selected)
            } else {
                matches!(status, Status::Expired | Status::Rejected).then_some(theme.expired)
            };
            let trade = item.tool.is_none() && item.proposal.preview.kind == "trade";
            let levels = if trade {
                crate::console::inbox::levels(&item.proposal.preview)
            } else {
                String::new()
            };
            // Wrong at any price, so the list says it before the row is even selected.
            let levels = if trade
                && crate::console::inbox::risk::inverted_levels(&item.proposal.preview).is_some()
            {
                Line::styled(levels, theme.critical)
            } else {
                Line::from(levels)
            };
            // First in the cell, so a narrow column cuts the trade's words, not the quorum's.
            let quorum = v.gate.item(item.id()).and_then(guard::quorum_short);
            let what = match quorum {
                Some(q) => Line::from(vec![
                    Span::styled(format!("{q} · "), theme.warn),
                    Span::raw(item.describe()),
                ]),
                None => Line::from(item.describe()),
            };
            let mut cells = vec![first, what, levels];
            if on_gate {
                let agent = v.gate.agent_label(item.id(), &v.service.key_fingerprint);
                cells.insert(1, Line::from(agent.to_string()));
            }
            (cells, style)
        },
    );
}

/// A share of equity in percent, two decimals; a risk too small for them is said to be under
/// 0.01 % rather than rounded to a "0.00%" that reads as no risk at all.
pub(crate) fn share_of_equity(pct: f64) -> String {
    if pct > 0.0 && pct < 0.005 {
        "<0.01%".to_string()
    } else {
        widgets::pct(pct, 2)
    }
}

pub(super) fn kv<'a>(theme: &Theme, k: &str, v: String) -> Line<'a> {
    Line::from(vec![
        // At least one space: a label as long as the column must not run into its value.
        Span::styled(format!("{k:<12} "), theme.muted),
        Span::styled(v, theme.base),
    ])
}

fn detail(f: &mut Frame, v: &InboxShown<'_>, theme: &Theme, area: Rect) {
    let item = v
        .inbox
        .selection(Pane::Inbox)
        .id
        .as_deref()
        // Not while the filter hides it: the detail is of a row the list shows.
        .filter(|_| v.inbox.row(Pane::Inbox, v.now, v.tables).is_some())
        .and_then(|id| v.inbox.item(id));
    let title = Line::from(Span::styled(detail_title(item, v.now), theme.accent));
    let lines = match item {
        Some(item) => detail_lines(v, theme, item),
        None => vec![Line::styled(
            "select a proposal to see what it will do",
            theme.muted,
        )],
    };
    let (focused, scroll) = (v.focused_pane() == Pane::Detail, v.selected(Pane::Detail));
    // The price chart goes under the text when the pane shows all of it and has rows to spare;
    // a detail that must scroll is text only (the approve dialog and a zoomed detail chart it).
    let inner = Rect::new(
        area.x + 1,
        area.y + 1,
        area.width.saturating_sub(2),
        area.height.saturating_sub(2),
    );
    let chart = item.and_then(|item| {
        let want = super::chart::wanted_rows(v, item, u16::MAX)?;
        let text_rows = Paragraph::new(lines.clone())
            .wrap(Wrap { trim: false })
            .line_count(inner.width);
        let (_, chart_area) = super::chart::split_detail(inner, text_rows, want);
        chart_area.map(|c| (item, c))
    });
    widgets::page::draw(f, theme, area, title, focused, lines, scroll);
    if let Some((item, chart_area)) = chart {
        super::chart::draw(f, chart_area, theme, v, item);
    }
}

/// The detail pane's title: what its figures describe. An item that can still execute is shown as
/// it will; one that executed, or never will, as it was proposed (its fill may have differed).
/// The risk is worked out from live data either way.
pub(crate) fn detail_title(
    item: Option<&InboxItem>,
    now: chrono::DateTime<chrono::Utc>,
) -> &'static str {
    const WILL: &str = " As it will execute · risk from live data ";
    let Some(item) = item else { return WILL };
    match item.status(now) {
        Status::Staged | Status::Confirming => WILL,
        // A gateway approves, then executes; a service's approval here was its execution.
        Status::Approved if item.source == Source::Gateway => WILL,
        Status::Approved
        | Status::Executed
        | Status::Rejected
        | Status::Expired
        | Status::Failed
        | Status::Unknown
        | Status::Unrecognised => " As proposed · risk from live data ",
    }
}

pub fn detail_lines<'a>(v: &InboxShown<'_>, theme: &Theme, item: &InboxItem) -> Vec<Line<'a>> {
    let p = &item.proposal.preview;
    let status = item.status(v.now);
    let mut lines = vec![Line::from(vec![
        Span::styled(item.id().to_string(), theme.accent),
        Span::styled(format!("  {}", status.label()), status_style(theme, status)),
        Span::styled(
            match item.source {
                Source::Service => "  staged by an agent",
                Source::Console => "  staged here",
                Source::Gateway => "  staged through the gateway",
            },
            theme.muted,
        ),
    ])];
    // First, so a short panel still shows it: nothing else about this proposal matters as much.
    if let LocalState::Unknown { error, checking } = &item.local {
        lines.push(Line::from(vec![
            Span::styled(format!("{:<13}", "Outcome"), theme.muted),
            Span::styled(
                if *checking {
                    "unknown — checking with the service"
                } else {
                    "unknown — the service cannot tell; check the positions"
                },
                theme.warn,
            ),
        ]));
        lines.push(kv(theme, "Confirm", format!("got no answer: {error}")));
        if *checking {
            lines.push(Line::styled(
                "Not approvable until the service says it is still staged; never re-sent \
                 on its own.",
                theme.muted,
            ));
        }
    }
    if let Some(left) = v.inbox.wait_left(item.id(), v.now)
        && status == Status::Staged
    {
        let said = v.inbox.limited_note(item.id()).unwrap_or_default();
        lines.push(Line::from(vec![
            Span::styled(format!("{:<13}", "Confirm"), theme.muted),
            Span::styled(
                format!("rate limited — retry in {left} s ({said})"),
                theme.warn,
            ),
        ]));
        lines.push(Line::styled(
            "Nothing executed: still staged. a then y approves it after the wait; never re-sent \
             on its own.",
            theme.muted,
        ));
    }
    if let Some(g) = v.gate.item(item.id()) {
        let account = g.account.as_deref().unwrap_or("?");
        let via = v
            .gate
            .connection_of(&g.agent)
            .map(|v| format!(" · {v}"))
            .unwrap_or_default();
        lines.push(kv(
            theme,
            "Agent",
            format!("{} · account {account}{via}", g.agent),
        ));
        if let Some(s) = v.gate.suspension_of(&g.agent) {
            lines.push(Line::from(vec![
                Span::styled(format!("{:<13}", "Suspended"), theme.muted),
                Span::styled(
                    format!(
                        "by {} at {} ({}): its items cannot be approved until an admin resumes it",
                        s.by,
                        s.at.format("%H:%M UTC"),
                        s.reason
                    ),
                    theme.bad,
                ),
            ]));
        }
        if let Some(note) = &g.note {
            lines.push(kv(theme, "Gateway", note.to_string()));
        }
        if let Some(reason) = g
            .reason
            .as_deref()
            .filter(|_| g.status == ItemStatus::Rejected)
        {
            let by = match g.decided_by.as_deref() {
                Some("policy") => "Refused by policy at staging",
                _ => "Rejected",
            };
            lines.push(Line::from(vec![
                Span::styled(format!("{:<13}", "Rejected"), theme.muted),
                Span::styled(format!("{by}: {reason}"), theme.bad),
            ]));
        }
        lines.extend(gate_trade_lines(theme, g));
        lines.extend(crate::console::gate::guard::detail_lines(
            theme,
            g,
            v.gate.kill(),
        ));
    }
    if let Some(refusal) = v.gate.refusal(item.id()) {
        lines.push(Line::from(vec![
            Span::styled(format!("{:<13}", "Refused"), theme.muted),
            Span::styled(refusal.to_string(), theme.bad),
        ]));
    }
    if let Some(r) = &item.request {
        lines.push(kv(
            theme,
            "Requested",
            widgets::group_words(&crate::console::inbox::staged::describe_request(r)),
        ));
    }
    // The agent's stated reason: what the supervisor weighs the trade against.
    if let Some(why) = p
        .strategy
        .as_deref()
        .or_else(|| item.request.as_ref().and_then(|r| r.strategy.as_deref()))
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        lines.push(kv(theme, "Strategy", why.to_string()));
    }
    if let Some(t) = &item.tool {
        tool_lines(theme, t, &mut lines);
    } else if p.kind.is_empty() {
        lines.push(Line::styled(
            if v.feeds[&crate::console::action::Resource::Proposals].supported {
                "only the id is known: details arrive with the next proposals poll"
            } else {
                "only the id is known: this service lists no proposals, so no details will come"
            },
            theme.muted,
        ));
    } else if p.kind == "trade" {
        let dir_style = if p.direction == "long" {
            theme.good
        } else {
            theme.bad
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{:<13}", "Trade"), theme.muted),
            Span::styled(
                if p.size > 0.0 || p.notional <= 0.0 {
                    format!("{} {} {}", p.direction, size(p.size), p.coin)
                } else {
                    format!("{} ${} of {}", p.direction, num(p.notional, 2), p.coin)
                },
                dir_style,
            ),
            Span::styled(
                [
                    format!("{}x", p.leverage),
                    p.order_type.clone(),
                    p.exchange.clone(),
                ]
                .into_iter()
                .filter(|s| !s.is_empty() && s != "0x")
                .fold(String::new(), |acc, s| acc + " · " + &s),
                theme.base,
            ),
        ]));
        let price = match p.limit_px {
            Some(l) => format!("limit {}", px(l)),
            None => format!("market ≈ {}", px(p.mark_px)),
        };
        let level = |l: Option<f64>| l.map(px).unwrap_or_else(|| "none".into());
        lines.push(kv(
            theme,
            "Price",
            format!("{price} · TP {} · SL {}", level(p.tp), level(p.sl)),
        ));
        let r = v.risk_of(p);
        lines.push(kv(
            theme,
            "Exposure",
            format!(
                "notional {} · margin {} · mark {}",
                num(r.notional, 2),
                num(r.margin, 2),
                px(r.mark)
            ),
        ));
        let dist = |pct: Option<f64>, usd: Option<f64>| match (pct, usd) {
            (Some(p), Some(u)) => format!("{} ({} USD)", widgets::pct(p, 2), num(u, 2)),
            _ => "-".into(),
        };
        lines.push(kv(
            theme,
            "SL / TP",
            format!(
                "{} / {}",
                dist(r.sl_pct, r.sl_usd),
                dist(r.tp_pct, r.tp_usd)
            ),
        ));
        let at_risk = r
            .equity_at_risk_pct
            // Say which loss the share is of: the stop's, or (without a priced stop) the whole
            // margin, which is a different and larger figure.
            .map(|x| {
                let x = share_of_equity(x);
                match r.loss_bound.margin_because() {
                    None => format!("{x} of equity lost at the SL"),
                    Some(why) => format!("{x} of equity: the margin ({why})"),
                }
            })
            .unwrap_or_else(|| "-".into());
        let at_risk_style = match r.equity_at_risk_pct {
            Some(x) if x >= 5.0 => theme.critical,
            Some(x) if x >= 2.0 => theme.warn,
            _ => theme.base,
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{:<13}", "R:R · risk"), theme.muted),
            Span::styled(
                format!(
                    "{} · ",
                    r.reward_risk
                        .map(|x| num(x, 2))
                        .unwrap_or_else(|| "-".into())
                ),
                theme.base,
            ),
            Span::styled(at_risk, at_risk_style),
        ]));
        lines.push(kv(theme, "Account", account_share(&r)));
        lines.push(kv(theme, "Liquidation", liquidation(&r)));
        lines.push(kv(
            theme,
            "Held now",
            match &r.existing {
                Some(e) => format!(
                    "{}{} {} @ {} (uPnL {})",
                    if e.exchange.is_empty() {
                        String::new()
                    } else {
                        format!("{} ", e.exchange)
                    },
                    if e.szi >= 0.0 { "long" } else { "short" },
                    size(e.szi.abs()),
                    px(e.entry_px),
                    signed(e.unrealized_pnl, 2)
                ),
                None => "nothing in this coin".into(),
            },
        ));
        // Once executed, the position held already includes the fill.
        if let Some(after) = r.resulting_szi.filter(|_| status == Status::Staged) {
            lines.push(kv(theme, "After fill", resulting(after, &r.coin)));
        }
        for w in &r.warnings {
            lines.push(Line::from(vec![
                Span::styled(format!("{:<13}", "Check"), theme.muted),
                Span::styled(w.clone(), theme.critical),
            ]));
        }
        for u in &r.unknown {
            lines.push(Line::from(vec![
                Span::styled(format!("{:<13}", "Not known"), theme.muted),
                Span::styled(u.clone(), theme.warn),
            ]));
        }
    } else {
        lines.push(kv(
            theme,
            "Close",
            if p.kind == "close_all" {
                "every open position".into()
            } else {
                p.coin.clone()
            },
        ));
        for c in &p.closes {
            lines.push(Line::from(vec![
                Span::styled(
                    format!("{:<13}", format!("  {} {}", c.exchange, c.coin)),
                    theme.muted,
                ),
                Span::styled(
                    format!("{} @ {} → ~", size(c.szi), px(c.entry_px)),
                    theme.base,
                ),
                Span::styled(signed(c.est_pnl, 2), pnl_style(theme, c.est_pnl)),
            ]));
        }
    }
    if status == Status::Staged
        && let Some(left) = item.remaining(v.now)
    {
        let mut spans = vec![Span::styled(format!("{:<13}", "Time left"), theme.muted)];
        spans.extend(countdown(theme, left, item.lifetime(), 20));
        lines.push(Line::from(spans));
    }
    match &item.local {
        // A tool's answer is already above, field by field.
        LocalState::Approved(_) if item.tool.as_ref().is_some_and(|t| t.result.is_some()) => {}
        LocalState::Approved(result) => lines.push(Line::from(vec![
            Span::styled(format!("{:<13}", "Result"), theme.muted),
            Span::styled(result.clone(), theme.good),
        ])),
        LocalState::Failed(err) => lines.push(Line::from(vec![
            Span::styled(format!("{:<13}", "Failed"), theme.muted),
            Span::styled(err.clone(), theme.bad),
        ])),
        _ => {}
    }
    if let Some(err) = &item.proposal.error {
        lines.push(kv(theme, "Service says", err.message.clone()));
    }
    lines
}

fn decisions(f: &mut Frame, v: &InboxShown<'_>, theme: &Theme, screen: &Screen) {
    let focused = v.focused_pane() == Pane::Decisions;
    let rows = v.inbox.decisions();
    table::draw(
        f,
        screen,
        theme,
        v.tables,
        Pane::Decisions,
        Line::from(Span::styled(" Decisions (journaled) ", theme.accent)),
        focused,
        v.selected(Pane::Decisions),
        &DecisionRows(rows),
        "no decisions yet",
        |i| {
            let d = &rows[i];
            let style = match d.kind {
                crate::console::inbox::DecisionKind::Approved => theme.good,
                crate::console::inbox::DecisionKind::Failed => theme.bad,
                _ => theme.expired,
            };
            let cells = vec![
                Line::from(d.at.format("%H:%M:%S").to_string()),
                Line::styled(d.kind.label(), style),
                Line::from(d.proposal_id.clone()),
                Line::from(d.summary.clone()),
                Line::from(d.result.clone()),
            ];
            (cells, None)
        },
    );
}

/// A tool approval in the detail panel: the tool, what it will do, its arguments and preview.
fn tool_lines<'a>(
    theme: &Theme,
    t: &crate::console::inbox::ToolApproval,
    lines: &mut Vec<Line<'a>>,
) {
    lines.push(Line::from(vec![
        Span::styled(format!("{:<13}", "Tool"), theme.muted),
        Span::styled(t.tool.clone(), theme.critical),
        Span::styled(format!("  from {}", t.origin), theme.muted),
    ]));
    if !t.summary.is_empty() {
        lines.push(kv(theme, "Does", t.summary.clone()));
    }
    // Labelled fields, as the rest of the panel reads: JSON is for machines.
    for (label, value) in [
        ("Arguments", &t.args),
        ("Preview", &t.preview),
        (
            "Result",
            t.result.as_ref().unwrap_or(&serde_json::Value::Null),
        ),
    ] {
        if value.is_null() {
            continue;
        }
        match value {
            serde_json::Value::Object(m) if !m.is_empty() => {
                lines.push(Line::styled(label.to_string(), theme.muted));
                let mut fields = Vec::new();
                widgets::jsontree::fields(value, "", &mut fields);
                let cut = fields.len() > TOOL_FIELDS;
                for (k, v) in fields.into_iter().take(TOOL_FIELDS) {
                    lines.push(kv(theme, &format!("  {k}"), v));
                }
                if cut {
                    lines.push(Line::styled("  …", theme.muted));
                }
            }
            other => lines.push(kv(theme, label, widgets::value_text(other))),
        }
    }
}

/// What the gateway will execute and judged (its canonical trade): the trade, who priced it, what
/// nobody states, and where the service's preview differs from the request. An item it cannot
/// judge says so first: nobody may approve it.
pub(super) fn gate_trade_lines<'a>(
    theme: &Theme,
    g: &crate::api::model::GateItem,
) -> Vec<Line<'a>> {
    let mut lines: Vec<Line> = guard::quorum_text(g)
        .map(|q| kv(theme, "Approvals", q))
        .into_iter()
        .collect();
    if let Some(why) = &g.trade_error {
        lines.push(Line::from(vec![
            Span::styled(format!("{:<13}", "Cannot judge"), theme.muted),
            Span::styled(
                format!("{why} — nobody may approve it"),
                theme.bad.add_modifier(ratatui::style::Modifier::BOLD),
            ),
        ]));
    }
    let Some(t) = &g.trade else { return lines };
    let mut what = vec![t.side.clone().unwrap_or_else(|| "?".into())];
    if let Some(s) = t.size {
        what.push(size(s));
    }
    what.push(t.coin.clone().unwrap_or_else(|| "?".into()));
    if let Some(n) = t.notional.or(g.notional) {
        what.push(format!("· notional {} USD", num(n, 2)));
    }
    if let Some(l) = t.leverage {
        what.push(format!("· {}x", size(l)));
    }
    what.push(if t.stop_loss {
        "· stop-loss".into()
    } else {
        "· no stop-loss".into()
    });
    if t.reduces {
        what.push("· reduces a position".into());
    }
    // The same trade reads as what will happen, what happens now or what did.
    let label = match g.status {
        ItemStatus::Executed => "Executed",
        ItemStatus::Executing => "Executing",
        ItemStatus::Rejected | ItemStatus::Expired | ItemStatus::Failed => "Not executed",
        ItemStatus::Pending | ItemStatus::Approved => "Will execute",
        ItemStatus::Unknown => "State unknown",
    };
    lines.push(kv(theme, label, what.join(" ")));
    let priced = match t.priced_by.as_str() {
        "preview" => "the service's preview".to_string(),
        "request" => "the agent's request with the stated defaults (no preview)".to_string(),
        "" => "not said".to_string(),
        other => other.to_string(),
    };
    lines.push(kv(theme, "Priced by", priced));
    for (k, why) in &t.unknown {
        lines.push(Line::styled(
            format!("  not known: {k} ({why})"),
            theme.warn,
        ));
    }
    for d in &t.disagreements {
        lines.push(Line::styled(
            format!("  request ≠ preview: {d}"),
            theme.critical,
        ));
    }
    lines
}

/// Fields of a tool's arguments, preview or result shown in the detail, each.
const TOOL_FIELDS: usize = 14;

/// "notional 12.00% · margin 2.40% of account value 100,000.00", or why it is unknown.
fn account_share(r: &crate::console::tabs::proposals::risk::Risk) -> String {
    match (r.account_value, r.notional_pct, r.margin_pct) {
        (Some(v), Some(n), Some(m)) => format!(
            "notional {} · margin {} of account value {}",
            widgets::pct(n, 2),
            widgets::pct(m, 2),
            num(v, 2)
        ),
        (Some(v), _, _) => format!("account value {}", num(v, 2)),
        _ => "share unknown (see below)".into(),
    }
}

/// "≈ 54,600 (9.00% away)" or the margin bound when the service gave no estimate.
pub(super) fn liquidation(r: &crate::console::tabs::proposals::risk::Risk) -> String {
    match (r.est_liquidation, r.liquidation_pct, r.margin_gone_pct) {
        (Some(l), Some(d), _) => format!("≈ {} ({} away)", px(l), widgets::pct(d, 2)),
        (Some(l), None, _) => format!("≈ {}", px(l)),
        (None, _, Some(m)) => format!(
            "no estimate · margin gone after a {} move against",
            widgets::pct(m, 1)
        ),
        (None, _, None) => "unknown".into(),
    }
}

pub(super) fn resulting(after: f64, coin: &str) -> String {
    if after == 0.0 {
        format!("flat in {coin}")
    } else {
        format!(
            "{} {} {coin}",
            if after > 0.0 { "long" } else { "short" },
            size(after.abs())
        )
    }
}

#[cfg(test)]
mod share_tests {
    use super::share_of_equity;

    #[test]
    fn a_small_risk_is_not_shown_as_none() {
        assert_eq!(share_of_equity(0.0004), "<0.01%");
        assert_eq!(share_of_equity(0.0), "0.00%");
        assert_eq!(share_of_equity(0.005), "0.01%");
        assert_eq!(share_of_equity(2.345), "2.35%");
    }
}
