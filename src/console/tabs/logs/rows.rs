//! The Logs tab's three tables — the service's audit log, the console's requests, its
//! messages — as their filter and sort read them.

use crate::api::model::AuditEntry;
use crate::console::component::{Message, RequestLogEntry, ToastLevel};
use crate::console::table::{Field, Key, Rows, amount, field};
use crate::console::widgets::{Col, col, fill_col, num_col};
use std::collections::VecDeque;

pub const AUDIT_COLS: &[Col] = &[
    col("Time", 8, 1),
    col("Operation", 23, 0),
    col("Outcome", 7, 0),
    num_col("HTTP", 4, 2),
    col("Proposal", 21, 2),
    num_col("Oid", 10, 3),
    // The error code, then the fields the service sent that no other column reads: not all of
    // it is an error (the deployment's rows carry `meta`).
    fill_col("Details", 12, 1),
];

const AUDIT_FIELDS: &[Field] = &[
    amount("time", "Time"),
    field("operation", "Operation"),
    field("outcome", "Outcome"),
    field("http", "HTTP"),
    field("proposal", "Proposal"),
    field("oid", "Oid"),
    field("details", "Details"),
];

/// The error code, then the fields the service sent that no other column reads, `key=value`.
pub fn audit_details(e: &AuditEntry) -> String {
    e.error_code
        .iter()
        .cloned()
        .chain(crate::api::model::extra_pairs(&e.extra))
        .collect::<Vec<_>>()
        .join(" ")
}

pub struct Audit<'a>(pub &'a [AuditEntry]);

impl Rows for Audit<'_> {
    fn cols(&self) -> &[Col] {
        AUDIT_COLS
    }

    fn fields(&self) -> &'static [Field] {
        AUDIT_FIELDS
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn key(&self, row: usize, field: usize) -> Key<'_> {
        let e = &self.0[row];
        match field {
            0 => Key::Num(e.time.timestamp_millis() as f64),
            1 => Key::Text(e.operation.as_str().into()),
            2 => Key::Text(e.outcome.as_str().into()),
            3 if e.http_status == 0 => Key::None,
            3 => Key::Num(f64::from(e.http_status)),
            4 => e
                .proposal_id
                .as_deref()
                .map_or(Key::None, |p| Key::Text(p.into())),
            5 => e.oid.map_or(Key::None, |o| Key::Num(o as f64)),
            _ => Key::text(audit_details(e)),
        }
    }

    fn id(&self, row: usize) -> Option<String> {
        let e = &self.0[row];
        e.proposal_id
            .clone()
            .or_else(|| e.oid.map(|o| o.to_string()))
    }
}

pub const REQUEST_COLS: &[Col] = &[
    col("Time", 8, 0),
    col("Operation", 23, 0),
    col("Status", 22, 0),
    num_col("Latency", 9, 0),
];

const REQUEST_FIELDS: &[Field] = &[
    amount("time", "Time"),
    field("operation", "Operation"),
    field("status", "Status"),
    amount("latency", "Latency"),
];

pub struct Requests<'a>(pub &'a VecDeque<RequestLogEntry>);

impl Rows for Requests<'_> {
    fn cols(&self) -> &[Col] {
        REQUEST_COLS
    }

    fn fields(&self) -> &'static [Field] {
        REQUEST_FIELDS
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn key(&self, row: usize, field: usize) -> Key<'_> {
        let r = &self.0[row];
        match field {
            0 => Key::Num(r.at.timestamp_millis() as f64),
            1 => Key::Text(r.operation.into()),
            2 => Key::Text(r.status.as_str().into()),
            _ => Key::Num(r.latency.as_secs_f64() * 1000.0),
        }
    }
}

pub const MESSAGE_COLS: &[Col] = &[
    col("Time", 8, 0),
    col("Level", 5, 1),
    fill_col("Message", 20, 0),
];

const MESSAGE_FIELDS: &[Field] = &[
    amount("time", "Time"),
    field("level", "Level"),
    field("message", "Message"),
];

pub struct Messages<'a>(pub &'a VecDeque<Message>);

impl Rows for Messages<'_> {
    fn cols(&self) -> &[Col] {
        MESSAGE_COLS
    }

    fn fields(&self) -> &'static [Field] {
        MESSAGE_FIELDS
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn key(&self, row: usize, field: usize) -> Key<'_> {
        let m = &self.0[row];
        match field {
            0 => Key::Num(m.at.timestamp_millis() as f64),
            1 => Key::Text(
                match m.level {
                    ToastLevel::Info => "info",
                    ToastLevel::Error => "error",
                }
                .into(),
            ),
            _ => Key::Text(m.text.as_str().into()),
        }
    }
}
