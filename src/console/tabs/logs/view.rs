//! Logs: the service's audit log, the console's own request log, and every message the console
//! showed (toasts, command errors) in full; each filtered and sorted as every table is.

use super::LogsTab;
use crate::console::action::Resource;
use crate::console::component::{Message, RequestLogEntry, Shown, ToastLevel};
use crate::console::feeds;
use crate::console::layout::Pane;
use crate::console::table;
use crate::console::tabs::logs::rows::{Audit, Messages, Requests, audit_details};
use crate::console::widgets;
use ratatui::Frame;
use ratatui::text::{Line, Span};
use std::collections::VecDeque;

impl LogsTab {
    /// The request log and the messages are App's, shown here.
    pub fn draw(
        &self,
        f: &mut Frame,
        s: &Shown,
        requests: &VecDeque<RequestLogEntry>,
        messages: &VecDeque<Message>,
    ) {
        let (theme, screen) = (s.theme, s.screen);
        let audit_feed = s.feed(Resource::Audit);
        let mut title = vec![Span::styled(
            format!(" {} ", Pane::Audit.title()),
            theme.accent,
        )];
        if let (Some(e), Some(_)) = (&audit_feed.error, audit_feed.poll.updated_at) {
            title.push(Span::styled(
                format!(" failing: {} ", feeds::short_error(e, 40)),
                theme.error,
            ));
        }
        // Never loaded: the pane itself says loading, or the feed's error.
        let audit_empty =
            feeds::empty_text(audit_feed, Resource::Audit, "no execute attempts logged");
        title.extend(widgets::staleness(
            theme,
            audit_feed
                .is_stale(s.now)
                .then(|| audit_feed.age(s.now))
                .flatten(),
        ));
        table::draw(
            f,
            screen,
            theme,
            s.tables,
            Pane::Audit,
            Line::from(title),
            s.focused(Pane::Audit),
            s.selected(Pane::Audit),
            &Audit(&self.audit),
            &audit_empty,
            |i| {
                let e = &self.audit[i];
                let style = if e.outcome == "ok" {
                    theme.good
                } else {
                    theme.bad
                };
                let cells = vec![
                    Line::from(if e.time.timestamp() == 0 {
                        "-".to_string()
                    } else {
                        e.time.format("%H:%M:%S").to_string()
                    }),
                    Line::from(e.operation.clone()),
                    Line::styled(e.outcome.clone(), style),
                    // 0: the row named no status (the deployment's audit rows do not).
                    Line::from(if e.http_status == 0 {
                        "-".to_string()
                    } else {
                        e.http_status.to_string()
                    }),
                    Line::from(e.proposal_id.clone().unwrap_or_default()),
                    Line::from(e.oid.map(|o| o.to_string()).unwrap_or_default()),
                    // Fields the service sent that we do not read, as `key=value`.
                    Line::from(audit_details(e)),
                ];
                (cells, None)
            },
        );
        table::draw(
            f,
            screen,
            theme,
            s.tables,
            Pane::Requests,
            Line::from(Span::styled(
                format!(" {} ", Pane::Requests.title()),
                theme.accent,
            )),
            s.focused(Pane::Requests),
            s.selected(Pane::Requests),
            &Requests(requests),
            "no requests yet",
            |i| {
                let r = &requests[i];
                let style = if r.status == "ok" {
                    theme.good
                } else {
                    theme.bad
                };
                let cells = vec![
                    Line::from(r.at.format("%H:%M:%S").to_string()),
                    Line::from(r.operation),
                    Line::styled(r.status.clone(), style),
                    Line::from(format!("{} ms", r.latency.as_millis())),
                ];
                (cells, None)
            },
        );
        messages_pane(f, s, messages);
    }
}

/// Newest first; a message longer than the pane is cut here and shown whole in its own row's
/// place when selected (below the table).
fn messages_pane(f: &mut Frame, s: &Shown, messages: &VecDeque<Message>) {
    let (theme, screen) = (s.theme, s.screen);
    let area = screen.pane(Pane::Messages);
    let focused = s.focused(Pane::Messages);
    let selected = s.selected(Pane::Messages);
    // The selected message, wrapped, takes the pane's lower lines when it does not fit a row.
    let inner_w = area.width.saturating_sub(2) as usize;
    let text_w = inner_w.saturating_sub(15);
    let full: Vec<String> = match s.row(Pane::Messages).and_then(|r| messages.get(r)) {
        Some(m) if focused && m.text.chars().count() > text_w => {
            widgets::text::wrap(&m.text, inner_w, "  ")
        }
        _ => Vec::new(),
    };
    let detail_h = (full.len() as u16).min(area.height.saturating_sub(TABLE_MIN));
    let mut table_screen = screen.clone();
    if detail_h > 0
        && let Some((_, r)) = table_screen
            .panes
            .iter_mut()
            .find(|(p, _)| *p == Pane::Messages)
    {
        r.height -= detail_h;
    }
    table::draw(
        f,
        &table_screen,
        theme,
        s.tables,
        Pane::Messages,
        Line::from(Span::styled(
            format!(" {} ", Pane::Messages.title()),
            theme.accent,
        )),
        focused,
        selected,
        &Messages(messages),
        "no messages yet",
        |i| {
            let m = &messages[i];
            let (label, style) = match m.level {
                ToastLevel::Info => ("info", theme.muted),
                ToastLevel::Error => ("error", theme.error),
            };
            let cells = vec![
                Line::from(m.at.format("%H:%M:%S").to_string()),
                Line::styled(label, style),
                Line::from(widgets::truncate(&m.text, text_w)),
            ];
            (cells, None)
        },
    );
    if detail_h > 0 {
        let r = ratatui::layout::Rect::new(
            area.x + 1,
            area.y + area.height - detail_h,
            area.width.saturating_sub(2),
            detail_h,
        );
        let lines: Vec<Line> = full
            .into_iter()
            .take(detail_h as usize)
            .map(|l| Line::styled(l, theme.base))
            .collect();
        f.render_widget(ratatui::widgets::Paragraph::new(lines), r);
    }
}

/// The table keeps its border, header and one row when the selected message unfolds below it.
const TABLE_MIN: u16 = 5;
