//! The signal destinations and the selected one's deliveries as tables: their columns, and
//! what the filter and the sort read of them.

use super::delivery_signal;
use crate::api::model::{DeliveryStats, SignalDelivery, SignalDestination};
use crate::console::table::{Field, Key, Rows, amount, field};
use crate::console::widgets::{Col, col, fill_col, num_col};

pub const DEST_COLS: &[Col] = &[
    col("Name", 14, 0),
    fill_col("URL", 18, 0),
    col("Strategies", 20, 3),
    col("Directions", 14, 1),
    col("Created", 10, 4),
    col("Deliveries", 24, 2),
];

const DEST_FIELDS: &[Field] = &[
    field("name", "Name"),
    field("url", "URL"),
    field("strategies", "Strategies"),
    field("directions", "Directions"),
    amount("created", "Created"),
    field("deliveries", "Deliveries"),
    field("id", ""),
];

pub struct Destinations<'a>(pub &'a [SignalDestination]);

impl Rows for Destinations<'_> {
    fn cols(&self) -> &[Col] {
        DEST_COLS
    }

    fn fields(&self) -> &'static [Field] {
        DEST_FIELDS
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn key(&self, row: usize, field: usize) -> Key<'_> {
        let d = &self.0[row];
        match field {
            0 => Key::Text(d.name.as_str().into()),
            1 => Key::Text(d.url.as_str().into()),
            2 => Key::text(d.strategy_ids.join(",")),
            3 => Key::text(d.directions.join(",")),
            4 => d
                .created_at
                .map_or(Key::None, |t| Key::Num(t.timestamp_millis() as f64)),
            5 => Key::text(stats_text(d.deliveries.as_ref())),
            _ => Key::Text(d.id.as_str().into()),
        }
    }

    fn id(&self, row: usize) -> Option<String> {
        Some(self.0[row].id.clone())
    }
}

pub const DELIVERY_COLS: &[Col] = &[
    col("Status", 9, 0),
    num_col("Tries", 5, 0),
    num_col("HTTP", 4, 1),
    col("Next retry", 10, 0),
    col("Created", 8, 3),
    col("Signal", 24, 2),
    fill_col("Last error", 12, 1),
];

const DELIVERY_FIELDS: &[Field] = &[
    field("status", "Status"),
    amount("tries", "Tries"),
    field("http", "HTTP"),
    field("next", "Next retry"),
    amount("created", "Created"),
    field("signal", "Signal"),
    field("error", "Last error"),
];

pub struct Deliveries<'a>(pub &'a [SignalDelivery]);

impl Rows for Deliveries<'_> {
    fn cols(&self) -> &[Col] {
        DELIVERY_COLS
    }

    fn fields(&self) -> &'static [Field] {
        DELIVERY_FIELDS
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn key(&self, row: usize, field: usize) -> Key<'_> {
        let d = &self.0[row];
        let time = |t: Option<chrono::DateTime<chrono::Utc>>| {
            t.map_or(Key::None, |t| Key::Num(t.timestamp_millis() as f64))
        };
        match field {
            0 => Key::Text(d.status.as_str().into()),
            1 => Key::Num(f64::from(d.attempts)),
            2 => d.last_status.map_or(Key::None, |s| Key::Num(f64::from(s))),
            3 => time(d.next_attempt_at),
            4 => time(d.created_at),
            5 => Key::text(delivery_signal(d)),
            _ => d
                .last_error
                .as_deref()
                .map_or(Key::None, |e| Key::Text(e.into())),
        }
    }

    fn id(&self, row: usize) -> Option<String> {
        Some(self.0[row].id.to_string())
    }
}

/// `ok 12 · fail 1 · retry 2` (zeros left out; counters the service adds are shown after).
pub fn stats_text(stats: Option<&DeliveryStats>) -> String {
    let Some(s) = stats else {
        return "—".into();
    };
    let mut parts: Vec<String> = [
        ("ok", s.delivered),
        ("fail", s.failed),
        ("retry", s.retrying),
        ("wait", s.pending),
    ]
    .into_iter()
    .filter(|(_, v)| *v > 0)
    .map(|(k, v)| format!("{k} {v}"))
    .collect();
    for (k, v) in &s.extra {
        if let Some(n) = v.as_u64().filter(|n| *n > 0) {
            parts.push(format!("{k} {n}"));
        }
    }
    if parts.is_empty() {
        "none yet".into()
    } else {
        parts.join(" · ")
    }
}
