//! The inbox panes (the Proposals list and the Desk's strip) and the decisions as tables: their
//! columns, and what their filter and sort read. The inbox lists pending items first, the least
//! time left first, then the rest newest first: what needs a decision soonest is on top (a
//! confirm whose outcome is unknown above all).

use crate::console::inbox::{Decision, Inbox, InboxItem, LocalState, Status};
use crate::console::layout::Pane;
use crate::console::table::{Field, Key, Rows, amount, field};
use crate::console::widgets::{Col, col, fill_col};
use chrono::{DateTime, Utc};

pub const INBOX_COLS: &[Col] = &[
    col("Time left / status", 18, 0),
    fill_col("Proposal", 18, 0),
    col("Limit · TP · SL", 24, 1),
];

/// On a gateway: who staged each item.
pub const GATE_INBOX_COLS: &[Col] = &[
    col("Time left / status", 18, 0),
    col("Agent", 14, 0),
    fill_col("Proposal", 18, 0),
    col("Limit · TP · SL", 24, 2),
];

pub const STRIP_COLS: &[Col] = &[
    col("Time left", 20, 0),
    fill_col("Proposal", 16, 0),
    col("Id", 22, 1),
];

/// On a gateway: who staged each item, as the inbox says it (the id gives way first).
pub const GATE_STRIP_COLS: &[Col] = &[
    col("Time left", 20, 0),
    col("Agent", 14, 0),
    fill_col("Proposal", 16, 0),
    col("Id", 22, 2),
];

const INBOX_FIELDS: &[Field] = &[
    field("left", "Time left / status"),
    field("status", ""),
    field("agent", "Agent"),
    field("coin", ""),
    field("side", ""),
    amount("notional", ""),
    field("proposal", "Proposal"),
    field("id", ""),
    amount("staged", ""),
];

const STRIP_FIELDS: &[Field] = &[
    field("left", "Time left"),
    field("status", ""),
    field("agent", "Agent"),
    field("coin", ""),
    field("side", ""),
    amount("notional", ""),
    field("proposal", "Proposal"),
    field("id", "Id"),
    amount("staged", ""),
];

/// An inbox pane's rows: indices into the inbox's items.
pub struct InboxRows<'a> {
    inbox: &'a Inbox,
    pane: Pane,
    rows: Vec<usize>,
    now: DateTime<Utc>,
    fingerprint: &'a str,
}

impl<'a> InboxRows<'a> {
    pub fn new(inbox: &'a Inbox, pane: Pane, now: DateTime<Utc>, fingerprint: &'a str) -> Self {
        InboxRows {
            inbox,
            pane,
            rows: inbox.pane_rows(pane, now),
            now,
            fingerprint,
        }
    }

    /// The item of data row `row`.
    pub fn item(&self, row: usize) -> &'a InboxItem {
        &self.inbox.items()[self.rows[row]]
    }

    /// Milliseconds left to approve, for an item that can still be approved: whole seconds
    /// would tie items staged within the same second and list them newest first.
    fn left(&self, item: &InboxItem) -> Option<i64> {
        item.can_approve(self.now)
            .then(|| item.remaining(self.now).map(|d| d.num_milliseconds()))
            .flatten()
    }
}

impl Rows for InboxRows<'_> {
    fn cols(&self) -> &[Col] {
        let gate = self.inbox.gate().is_gateway();
        match (self.pane, gate) {
            (Pane::Strip, true) => GATE_STRIP_COLS,
            (Pane::Strip, false) => STRIP_COLS,
            (_, true) => GATE_INBOX_COLS,
            (_, false) => INBOX_COLS,
        }
    }

    fn fields(&self) -> &'static [Field] {
        match self.pane {
            Pane::Strip => STRIP_FIELDS,
            _ => INBOX_FIELDS,
        }
    }

    fn len(&self) -> usize {
        self.rows.len()
    }

    fn key(&self, row: usize, field: usize) -> Key<'_> {
        let item = self.item(row);
        let p = &item.proposal.preview;
        match field {
            // Seconds, as the countdown shows them (`left:<60`).
            0 => self
                .left(item)
                .map_or(Key::None, |ms| Key::Num((ms as f64 / 1000.0).floor())),
            1 => match item.status(self.now) {
                // What can still be approved is what a supervisor calls pending.
                Status::Staged => Key::Text("pending staged".into()),
                _ => Key::Text(item.status_text(self.now)),
            },
            2 if self.inbox.gate().is_gateway() => Key::Text(
                self.inbox
                    .gate()
                    .agent_label(item.id(), self.fingerprint)
                    .into(),
            ),
            2 => Key::None,
            3 if item.tool.is_none() => Key::text(crate::api::risk::preview_coin(p)),
            4 if item.tool.is_none() && !p.direction.is_empty() => {
                Key::Text(p.direction.as_str().into())
            }
            5 if item.tool.is_none() && p.notional > 0.0 => Key::Num(p.notional),
            6 => Key::text(item.describe()),
            7 => Key::Text(item.id().into()),
            8 => item
                .proposal
                .created_at
                .map_or(Key::None, |t| Key::Num(t.timestamp_millis() as f64)),
            _ => Key::None,
        }
    }

    fn id(&self, row: usize) -> Option<String> {
        Some(self.item(row).id().to_string())
    }

    /// A confirm whose outcome is unknown first (it may have executed: it needs a look), then
    /// what can still be approved, the least time left first, then the rest newest first (as
    /// the items are kept).
    fn rank(&self, row: usize) -> i64 {
        let item = self.item(row);
        const GROUP: i64 = 1 << 40;
        match (&item.local, self.left(item)) {
            (LocalState::Unknown { .. }, _) => 0,
            (_, Some(left)) => GROUP + left.clamp(0, GROUP - 1),
            (_, None) => 2 * GROUP,
        }
    }
}

pub const DECISION_COLS: &[Col] = &[
    col("When", 8, 1),
    col("Decision", 9, 0),
    col("Proposal", 21, 3),
    col("What", 22, 1),
    fill_col("Result", 30, 0),
];

const DECISION_FIELDS: &[Field] = &[
    amount("when", "When"),
    field("decision", "Decision"),
    field("id", "Proposal"),
    field("what", "What"),
    field("result", "Result"),
];

/// The decisions taken, newest first.
pub struct DecisionRows<'a>(pub &'a [Decision]);

impl Rows for DecisionRows<'_> {
    fn cols(&self) -> &[Col] {
        DECISION_COLS
    }

    fn fields(&self) -> &'static [Field] {
        DECISION_FIELDS
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn key(&self, row: usize, field: usize) -> Key<'_> {
        let d = &self.0[row];
        match field {
            0 => Key::Num(d.at.timestamp_millis() as f64),
            1 => Key::Text(d.kind.label().into()),
            2 => Key::Text(d.proposal_id.as_str().into()),
            3 => Key::Text(d.summary.as_str().into()),
            _ => Key::Text(d.result.as_str().into()),
        }
    }

    fn id(&self, row: usize) -> Option<String> {
        Some(self.0[row].proposal_id.clone())
    }
}
