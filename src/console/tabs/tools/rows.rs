//! The tool catalog as a table: its columns, and what the filter and the sort read of it.

use crate::api::model::ToolCapability;
use crate::console::table::{Field, Key, Rows, field};
use crate::console::widgets::{Col, col, fill_col};

pub const TOOL_COLS: &[Col] = &[
    col("Tier", 10, 0),
    col("Tool", 26, 0),
    fill_col("Description", 12, 1),
];

const TOOL_FIELDS: &[Field] = &[
    field("tier", "Tier"),
    field("tool", "Tool"),
    field("description", "Description"),
    field("path", ""),
];

pub struct Tools<'a>(pub &'a [ToolCapability]);

impl Rows for Tools<'_> {
    fn cols(&self) -> &[Col] {
        TOOL_COLS
    }

    fn fields(&self) -> &'static [Field] {
        TOOL_FIELDS
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn key(&self, row: usize, field: usize) -> Key<'_> {
        let t = &self.0[row];
        match field {
            0 => Key::Text(t.tier.as_str().into()),
            1 => Key::Text(t.name.strip_prefix("service_").unwrap_or(&t.name).into()),
            2 => Key::Text(t.description.as_str().into()),
            _ => Key::text(format!("{} {}", t.method, t.path)),
        }
    }

    fn id(&self, row: usize) -> Option<String> {
        Some(self.0[row].name.clone())
    }
}
