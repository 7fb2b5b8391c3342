//! Logs: the service's audit log and the console's own request log, both filtered by `/`.

use crate::console::action::Resource;
use crate::console::app::App;
use crate::console::layout::{Pane, Screen};
use crate::console::theme::Theme;
use crate::console::widgets::{self, Col, col, fill_col, num_col};
use ratatui::Frame;
use ratatui::text::{Line, Span};

const AUDIT_COLS: &[Col] = &[
    col("Time", 8, 1),
    col("Operation", 23, 0),
    col("Outcome", 7, 0),
    num_col("HTTP", 4, 2),
    col("Proposal", 21, 2),
    num_col("Oid", 10, 3),
    fill_col("Error", 12, 1),
];

const REQUEST_COLS: &[Col] = &[
    col("Time", 8, 0),
    col("Operation", 23, 0),
    col("Status", 22, 0),
    num_col("Latency", 9, 0),
];

pub fn draw(f: &mut Frame, app: &App, theme: &Theme, screen: &Screen) {
    let filter = if app.logs.filter.is_empty() {
        String::new()
    } else {
        format!(" matching {:?} ", app.logs.filter)
    };
    let audit_feed = &app.feeds[&Resource::Audit];
    let mut title = vec![
        Span::styled(format!(" {} ", Pane::Audit.title()), theme.accent),
        Span::styled(filter.clone(), theme.muted),
    ];
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
        app.logs.audit_view.len(),
        AUDIT_COLS,
        "no execute attempts logged",
        |i| {
            let e = &app.logs.audit[app.logs.audit_view[i]];
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
                Line::from(
                    e.error_code
                        .iter()
                        .cloned()
                        .chain(crate::api::model::extra_pairs(&e.extra))
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
            ];
            (cells, None)
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
        app.logs.request_view.len(),
        REQUEST_COLS,
        "no requests yet",
        |i| {
            let r = &app.request_log[app.logs.request_view[i]];
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
}
