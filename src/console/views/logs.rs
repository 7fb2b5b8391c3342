//! Logs: the service's audit log and the console's own request log, both filtered by `/`.

use super::widgets;
use crate::console::app::App;
use crate::console::layout::{Pane, Screen};
use crate::console::theme::Theme;
use ratatui::Frame;
use ratatui::layout::Constraint;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row};

pub fn draw(f: &mut Frame, app: &App, theme: &Theme, screen: &Screen) {
    let filter = if app.filter.is_empty() {
        String::new()
    } else {
        format!(" matching {:?} ", app.filter)
    };
    let audit_feed = &app.feeds[&crate::console::action::Resource::Audit];
    let mut title = vec![Span::styled(
        format!(" {} ", Pane::Audit.title()),
        theme.accent,
    )];
    title.push(Span::styled(filter.clone(), theme.muted));
    if let Some(e) = &audit_feed.error {
        title.push(Span::styled(format!(" {e} "), theme.error));
    }
    title.extend(widgets::staleness(
        theme,
        audit_feed
            .is_stale(app.now)
            .then(|| audit_feed.age(app.now))
            .flatten(),
    ));
    widgets::table(
        f,
        screen,
        theme,
        Pane::Audit,
        Line::from(title),
        app.focused_pane() == Pane::Audit,
        app.selected(Pane::Audit),
        app.audit_view.len(),
        &[
            "Time",
            "Operation",
            "Outcome",
            "HTTP",
            "Proposal",
            "Oid",
            "Error",
        ],
        &[
            Constraint::Length(8),
            Constraint::Length(24),
            Constraint::Length(7),
            Constraint::Length(4),
            Constraint::Length(21),
            Constraint::Length(10),
            Constraint::Min(10),
        ],
        "no execute attempts logged",
        |i| {
            let e = &app.audit[app.audit_view[i]];
            let style = if e.outcome == "ok" {
                theme.good
            } else {
                theme.bad
            };
            Row::new(vec![
                Cell::from(e.time.format("%H:%M:%S").to_string()),
                Cell::from(e.operation.clone()),
                Cell::from(Span::styled(e.outcome.clone(), style)),
                Cell::from(e.http_status.to_string()),
                Cell::from(e.proposal_id.clone().unwrap_or_default()),
                Cell::from(e.oid.map(|o| o.to_string()).unwrap_or_default()),
                Cell::from(e.error_code.clone().unwrap_or_default()),
            ])
        },
    );
    widgets::table(
        f,
        screen,
        theme,
        Pane::Requests,
        Line::from(vec![
            Span::styled(format!(" {} ", Pane::Requests.title()), theme.accent),
            Span::styled(filter, theme.muted),
        ]),
        app.focused_pane() == Pane::Requests,
        app.selected(Pane::Requests),
        app.request_view.len(),
        &["Time", "Operation", "Status", "Latency"],
        &[
            Constraint::Length(8),
            Constraint::Length(24),
            Constraint::Length(22),
            Constraint::Length(9),
        ],
        "no requests yet",
        |i| {
            let r = &app.request_log[app.request_view[i]];
            let style = if r.status == "ok" {
                theme.good
            } else {
                theme.bad
            };
            Row::new(vec![
                Cell::from(r.at.format("%H:%M:%S").to_string()),
                Cell::from(r.operation),
                Cell::from(Span::styled(r.status.clone(), style)),
                Cell::from(format!("{} ms", r.latency.as_millis())),
            ])
        },
    );
}
