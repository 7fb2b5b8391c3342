//! The tool argument editor (a modal over the Tools tab): JSON text checked against the tool's
//! schema on every key.

use super::schema::{self, Problem};
use crate::api::model::ToolCapability;
use ratatui_textarea::TextArea;
use serde_json::Value;

/// The tool argument editor (an overlay over the Tools tab).
#[derive(Debug)]
pub struct ToolEditor {
    pub tool: String,
    pub input: TextArea<'static>,
    /// Problems of the text as it is now (checked on every key).
    pub problems: Vec<Problem>,
    /// The user tried to send while there were problems.
    pub refused: bool,
}

impl ToolEditor {
    pub fn new(tool: &ToolCapability, text: &str) -> ToolEditor {
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        let mut input = TextArea::new(if lines.is_empty() {
            vec![String::new()]
        } else {
            lines
        });
        input.move_cursor(ratatui_textarea::CursorMove::Bottom);
        input.move_cursor(ratatui_textarea::CursorMove::End);
        let mut e = ToolEditor {
            tool: tool.name.clone(),
            input,
            problems: Vec::new(),
            refused: false,
        };
        e.check(&tool.input_schema);
        e
    }

    pub fn text(&self) -> String {
        self.input.lines().join("\n")
    }

    pub fn check(&mut self, schema: &Value) -> Option<Value> {
        let (value, problems) = schema::check_text(schema, &self.text());
        self.problems = problems;
        value.filter(|_| self.problems.is_empty())
    }
}
