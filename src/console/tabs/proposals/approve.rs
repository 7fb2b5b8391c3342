//! The approve dialog: the item's essentials priced now, the gateway's checks, and the keys that
//! decide, pinned below a body that scrolls when the screen is short.

use crate::console::feeds::Badge;
use crate::console::inbox::InboxItem;
use crate::console::inbox::risk::LossBound;
use crate::console::tabs::proposals::chart::wanted_rows;
use crate::console::tabs::proposals::shown::InboxShown;
use crate::console::tabs::proposals::view::{gate_trade_lines, kv, liquidation, resulting};
use crate::console::theme::Theme;
use crate::console::widgets::{self, countdown, num, px, signed, size};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

/// Repeats the essentials, priced now, and asks for an explicit `y`. The keys line is pinned to
/// the bottom; a body taller than the screen allows scrolls (arrows, j/k, PgUp/PgDn), with its
/// position in the bottom border.
pub fn approve_dialog(
    f: &mut Frame,
    v: &InboxShown<'_>,
    theme: &Theme,
    area: Rect,
    dialog: &crate::console::inbox::dialog::ApproveDialog,
) {
    let Some(item) = v.item(&dialog.id) else {
        return;
    };
    let body = Paragraph::new(approve_body_lines(v, theme, item)).wrap(Wrap { trim: false });
    let d = approve_layout(area, &body, wanted_rows(v, item, CHART_ROWS));
    let scroll = dialog.scroll.min(d.max_scroll);
    let what = if item.tool.is_some() {
        "tool call"
    } else {
        "proposal"
    };
    // Real money looks like it: a red border and a title that says LIVE, not the paper dialog.
    // Paper or not is the header's word (its badge), so the two never disagree.
    let live_title = match v.account.badge(v.service.sandbox) {
        Badge::Sandbox => None,
        Badge::Paper => Some(None),
        Badge::Live => Some(Some(format!(
            " LIVE — Approve {what}: real money on {} ",
            v.service.host
        ))),
        Badge::Unknown => Some(Some(format!(
            " Approve {what} on {}: paper or real money not known yet ",
            v.service.host
        ))),
    };
    let mut block = match live_title {
        None => widgets::block(theme, Line::from(format!(" Approve {what} ")), true),
        Some(None) => widgets::block(
            theme,
            Line::from(format!(" PAPER — Approve {what} on {} ", v.service.host)),
            true,
        ),
        Some(Some(title)) => widgets::block(
            theme,
            Line::styled(
                title,
                theme
                    .badge_live
                    .add_modifier(ratatui::style::Modifier::BOLD),
            ),
            true,
        )
        .border_style(theme.bad.add_modifier(ratatui::style::Modifier::BOLD))
        .border_type(ratatui::widgets::BorderType::Double),
    };
    if d.max_scroll > 0 {
        let first = scroll as usize + 1;
        let last = (scroll + d.body.height) as usize;
        block = block.title_bottom(
            Line::from(format!(
                " ↑↓ scroll · lines {first}-{last} of {} ",
                d.body_rows
            ))
            .right_aligned(),
        );
    }
    f.render_widget(Clear, d.dialog);
    f.render_widget(block.style(theme.base), d.dialog);
    f.render_widget(body.style(theme.base).scroll((scroll, 0)), d.body);
    if let Some(chart) = d.chart {
        super::chart::draw(f, chart, theme, v, item);
    }
    let ctx = v.approve_context(dialog);
    let keys = dialog.keys_line(theme, &ctx, d.keys.width);
    f.render_widget(Paragraph::new(keys).style(theme.base), d.keys);
}

/// Where the approve dialog draws: its frame, its body, its price chart, its keys line, and how
/// far the body can scroll.
pub struct DialogLayout {
    pub dialog: Rect,
    pub body: Rect,
    /// Only when the whole body shows and the screen has rows to spare: what decides comes first.
    pub chart: Option<Rect>,
    pub keys: Rect,
    pub body_rows: u16,
    pub max_scroll: u16,
}

const DIALOG_WIDTH: u16 = 66;
/// The chart's rows in the dialog at most.
const CHART_ROWS: u16 = 8;

pub fn approve_layout(area: Rect, body: &Paragraph, chart: Option<u16>) -> DialogLayout {
    let width = DIALOG_WIDTH.min(area.width);
    let inner_width = width.saturating_sub(2).max(1);
    let body_rows = body.line_count(inner_width).min(u16::MAX as usize) as u16;
    // Borders, the body, a blank line and the keys line, as much as the screen has; then a
    // blank line and the chart, in what is left.
    let text_rows = body_rows.saturating_add(4);
    let want = chart.unwrap_or(0);
    let chart_rows = area
        .height
        .saturating_sub(text_rows.saturating_add(1))
        .min(want);
    let least = want.min(super::chart::MIN_ROWS);
    let chart_rows = if chart_rows >= least { chart_rows } else { 0 };
    let with_chart = if chart_rows > 0 { chart_rows + 1 } else { 0 };
    let dialog = widgets::centered(area, width, text_rows + with_chart);
    let inner = Rect::new(
        dialog.x + 1,
        dialog.y + 1,
        dialog.width.saturating_sub(2),
        dialog.height.saturating_sub(2),
    );
    let keys = Rect::new(
        inner.x,
        inner.y + inner.height.saturating_sub(1),
        inner.width,
        inner.height.min(1),
    );
    // The blank line above the keys goes first when room is short.
    let room = inner.height.saturating_sub(1 + with_chart);
    let body_height = if room > body_rows { body_rows } else { room };
    DialogLayout {
        dialog,
        body: Rect::new(inner.x, inner.y, inner.width, body_height),
        chart: (chart_rows > 0)
            .then(|| Rect::new(inner.x, inner.y + body_height + 1, inner.width, chart_rows)),
        keys,
        body_rows,
        max_scroll: body_rows.saturating_sub(body_height),
    }
}

/// How far the approve dialog for `id` can scroll on a screen of `size`.
pub fn approve_max_scroll(v: &InboxShown<'_>, id: &str, size: (u16, u16)) -> u16 {
    let Some(item) = v.item(id) else { return 0 };
    let body =
        Paragraph::new(approve_body_lines(v, &Theme::default(), item)).wrap(Wrap { trim: false });
    approve_layout(
        Rect::new(0, 0, size.0, size.1),
        &body,
        wanted_rows(v, item, CHART_ROWS),
    )
    .max_scroll
}

/// "proposed by agent demo-agent · account 1817426543" for an item the gateway lists; None when
/// the console is not on a gateway or the gateway does not list it.
fn proposed_by(v: &InboxShown<'_>, id: &str) -> Option<String> {
    let g = v.gate.item(id)?;
    let own = v.gate.agent_label(id, &v.service.key_fingerprint) == "this console";
    let mut text = format!("proposed by agent {}", g.agent);
    if own {
        text.push_str(" (this console's key)");
    }
    if let Some(account) = g.account.as_deref().filter(|a| !a.is_empty()) {
        text.push_str(&format!(" · account {account}"));
    }
    Some(text)
}

/// The approve dialog's body (without its keys line): the proposal as it will execute, what
/// this console asked for, the risk priced now and what of it is unknown.
pub fn approve_body_lines<'a>(
    v: &InboxShown<'_>,
    theme: &Theme,
    item: &InboxItem,
) -> Vec<Line<'a>> {
    let id = item.id();
    let p = &item.proposal.preview;
    let mut lines = vec![
        Line::from(vec![
            Span::styled("Approve ", theme.base),
            Span::styled(id.to_string(), theme.accent),
            Span::styled("?", theme.base),
        ]),
        Line::styled(item.describe(), theme.base.patch(theme.accent)),
    ];
    // On a gateway any agent may have staged it: who is asking is part of what is approved.
    if let Some(who) = proposed_by(v, id) {
        lines.insert(1, Line::styled(who, theme.base));
    }
    if let Some(r) = &item.request {
        lines.push(Line::styled(
            format!(
                "requested: {}",
                widgets::group_words(&crate::console::inbox::staged::describe_request(r))
            ),
            theme.muted,
        ));
    }
    if let Some(t) = &item.tool {
        lines.push(Line::from(vec![
            Span::styled("runs ", theme.base),
            Span::styled(t.tool.clone(), theme.critical),
            Span::styled(
                // Whole: the dialog scrolls, and what is approved is never cut.
                format!(" {}", t.args),
                theme.base,
            ),
        ]));
        // The preview as labelled fields, every one (the dialog scrolls): JSON is for machines.
        match &t.preview {
            serde_json::Value::Null => {}
            serde_json::Value::Object(m) if m.is_empty() => {}
            v @ serde_json::Value::Object(_) => {
                lines.push(Line::styled("preview:", theme.muted));
                let mut fields = Vec::new();
                widgets::jsontree::fields(v, "", &mut fields);
                for (k, v) in fields {
                    lines.push(kv(theme, &format!("  {k}"), v));
                }
            }
            other => lines.push(kv(theme, "preview", widgets::value_text(other))),
        }
    } else if p.kind == "trade" {
        let r = v.risk_of(p);
        let price = match p.limit_px {
            Some(l) => format!("limit {}", px(l)),
            None => format!("market ≈ {}", px(r.mark)),
        };
        lines.push(Line::from(format!(
            "{price}{} · notional {} · margin {}",
            if p.exchange.is_empty() {
                String::new()
            } else {
                format!(" on {}", p.exchange)
            },
            num(r.notional, 2),
            num(r.margin, 2)
        )));
        lines.push(Line::from(format!(
            "TP {} · SL {}{}",
            p.tp.map(px).unwrap_or_else(|| "none".into()),
            p.sl.map(px).unwrap_or_else(|| "none".into()),
            // The stop's distance is a risk only where the stop bounds the loss.
            r.sl_usd
                .filter(|_| r.loss_bound == LossBound::Stop)
                .map(|u| format!(" (risk {} USD)", num(u, 2)))
                .unwrap_or_default()
        )));
        if let (Some(x), Some(v)) = (r.equity_at_risk_pct, r.account_value) {
            // Without a stop-loss the figure is the whole margin: said, as it is another measure.
            let what = match r.loss_bound {
                LossBound::Stop => "at the stop-loss".to_string(),
                LossBound::NoStop => "the whole margin: no stop-loss".to_string(),
                other => format!(
                    "the whole margin: {}",
                    other.margin_because().unwrap_or_default()
                ),
            };
            lines.push(Line::from(format!(
                "risk {} of account {} ({what}) · notional {} · margin {}",
                widgets::pct(x, 2),
                num(v, 0),
                widgets::pct(r.notional_pct.unwrap_or_default(), 2),
                widgets::pct(r.margin_pct.unwrap_or_default(), 2)
            )));
        }
        lines.push(Line::from(format!("Liquidation {}", liquidation(&r))));
        if let Some(after) = r.resulting_szi {
            lines.push(Line::from(format!(
                "After fill: {}",
                resulting(after, &p.coin)
            )));
        }
        for w in &r.warnings {
            lines.push(Line::styled(format!("check: {w}"), theme.critical));
        }
        for u in &r.unknown {
            lines.push(Line::styled(format!("not known: {u}"), theme.warn));
        }
    } else {
        for c in &p.closes {
            lines.push(Line::from(format!(
                "close {} {}{} (~{} PnL)",
                size(c.szi),
                c.coin,
                if c.exchange.is_empty() {
                    String::new()
                } else {
                    format!(" on {}", c.exchange)
                },
                signed(c.est_pnl, 2)
            )));
        }
    }
    let dialog = match &v.modal {
        Some(crate::console::modal::Modal::Approve(d)) if d.id == id => Some(d),
        _ => None,
    };
    if let Some(g) = v.gate.item(id) {
        lines.extend(gate_trade_lines(theme, g));
        lines.extend(crate::console::gate::guard::approve_lines(
            theme,
            dialog.and_then(|d| d.check_for(id)),
            Some(g),
            v.gate.kill(),
        ));
    }
    if let Some(d) = dialog {
        lines.extend(d.step_lines(theme));
    }
    if let Some(left) = item.remaining(v.now) {
        let mut spans = vec![Span::raw("Time left ")];
        spans.extend(countdown(theme, left, item.lifetime(), 20));
        lines.push(Line::from(spans));
    }
    lines
}
