//! A JSON value as a foldable tree of rows: each object or array is a row that Enter/space folds
//! (`{…} 5 keys`, `[…] 12 items`) or unfolds, with its closing bracket on a row of its own.

use serde_json::Value;
use std::collections::BTreeSet;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct JsonTree {
    pub root: Value,
    /// JSON paths (`$`, `$.positions[0]`) of the folded nodes.
    pub folded: BTreeSet<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    /// An object or array that can fold: its opening row.
    Open,
    /// The closing bracket of an unfolded object or array.
    Close,
    /// A scalar, or an empty object or array.
    Leaf,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TreeRow {
    pub path: String,
    pub depth: usize,
    /// `"key": ` or nothing (array items and the root).
    pub key: Option<String>,
    pub kind: RowKind,
    /// The value's text: `{`, `{…} 5 keys`, `"BTC"`, `}`.
    pub text: String,
    pub folded: bool,
    /// A comma follows (not the last member).
    pub comma: bool,
}

impl JsonTree {
    pub fn new(root: Value) -> Self {
        JsonTree {
            root,
            folded: BTreeSet::new(),
        }
    }

    /// The rows as they show now.
    pub fn rows(&self) -> Vec<TreeRow> {
        let mut out = Vec::new();
        self.walk(&self.root, "$".into(), 0, None, false, &mut out);
        out
    }

    fn walk(
        &self,
        v: &Value,
        path: String,
        depth: usize,
        key: Option<String>,
        comma: bool,
        out: &mut Vec<TreeRow>,
    ) {
        let (len, open, close) = match v {
            Value::Object(m) => (m.len(), "{", "}"),
            Value::Array(a) => (a.len(), "[", "]"),
            scalar => {
                out.push(TreeRow {
                    path,
                    depth,
                    key,
                    kind: RowKind::Leaf,
                    text: scalar.to_string(),
                    folded: false,
                    comma,
                });
                return;
            }
        };
        if len == 0 {
            out.push(TreeRow {
                path,
                depth,
                key,
                kind: RowKind::Leaf,
                text: format!("{open}{close}"),
                folded: false,
                comma,
            });
            return;
        }
        let folded = self.folded.contains(&path);
        if folded {
            let count = match v {
                Value::Object(_) => plural(len, "key", "keys"),
                _ => plural(len, "item", "items"),
            };
            out.push(TreeRow {
                path,
                depth,
                key,
                kind: RowKind::Open,
                text: format!("{open}…{close} {count}"),
                folded: true,
                comma,
            });
            return;
        }
        out.push(TreeRow {
            path: path.clone(),
            depth,
            key,
            kind: RowKind::Open,
            text: open.to_string(),
            folded: false,
            comma: false,
        });
        match v {
            Value::Object(m) => {
                for (i, (k, child)) in m.iter().enumerate() {
                    self.walk(
                        child,
                        format!("{path}.{k}"),
                        depth + 1,
                        Some(k.clone()),
                        i + 1 < len,
                        out,
                    );
                }
            }
            Value::Array(a) => {
                for (i, child) in a.iter().enumerate() {
                    self.walk(
                        child,
                        format!("{path}[{i}]"),
                        depth + 1,
                        None,
                        i + 1 < len,
                        out,
                    );
                }
            }
            _ => {}
        }
        out.push(TreeRow {
            path,
            depth,
            key: None,
            kind: RowKind::Close,
            text: close.to_string(),
            folded: false,
            comma,
        });
    }

    /// Folds or unfolds the node of row `index` (an opening or closing row); returns the index of
    /// its opening row, where the cursor belongs after a fold.
    pub fn toggle(&mut self, index: usize) -> Option<usize> {
        let rows = self.rows();
        let row = rows.get(index)?;
        if row.kind == RowKind::Leaf {
            return None;
        }
        let path = row.path.clone();
        if !self.folded.remove(&path) {
            self.folded.insert(path.clone());
        }
        self.rows()
            .iter()
            .position(|r| r.path == path && r.kind == RowKind::Open)
    }

    /// The row as one line of text (for tests and plain rendering).
    pub fn line(row: &TreeRow) -> String {
        let key = row
            .key
            .as_ref()
            .map(|k| format!("{}: ", Value::String(k.clone())))
            .unwrap_or_default();
        let comma = if row.comma { "," } else { "" };
        format!("{}{key}{}{comma}", "  ".repeat(row.depth), row.text)
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// A JSON value as labelled fields, one per scalar: `coin` → `ETH`, nested keys joined with a
/// dot (`response.data.status`), array items by index (`statuses[0].oid`); an array of scalars
/// is one field. Strings show without quotes.
pub fn fields(v: &Value, prefix: &str, out: &mut Vec<(String, String)>) {
    let name = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, v) in m {
                fields(v, &name(k), out);
            }
        }
        Value::Array(items) if items.iter().any(|i| i.is_object() || i.is_array()) => {
            for (i, item) in items.iter().enumerate() {
                fields(item, &format!("{prefix}[{i}]"), out);
            }
        }
        Value::Array(items) => out.push((
            prefix.to_string(),
            items
                .iter()
                .map(super::value_text)
                .collect::<Vec<_>>()
                .join(", "),
        )),
        other => {
            // An id, a nonce or a time is a name, not a magnitude: no separators in it.
            let key = prefix.rsplit('.').next().unwrap_or(prefix);
            let named = ["id", "Id", "oid", "nonce", "At", "time", "Time", "Ms", "ms"]
                .iter()
                .any(|s| key.ends_with(s));
            let text = if named {
                super::plain_value_text(other)
            } else {
                super::value_text(other)
            };
            out.push((prefix.to_string(), text));
        }
    }
}

/// A one-line summary of a JSON value for lists: `4 positions`, `{"ok": true}` cut to `max`.
pub fn summarize(v: &Value, max: usize) -> String {
    let text = match v {
        Value::Object(m) => {
            let arrays: Vec<(&String, &Vec<Value>)> = m
                .iter()
                .filter_map(|(k, v)| v.as_array().map(|a| (k, a)))
                .collect();
            if let [(k, a)] = arrays[..] {
                let rest = m.len() - 1;
                if rest == 0 {
                    format!("{} {k}", a.len())
                } else {
                    format!("{} {k} (+{rest} fields)", a.len())
                }
            } else {
                v.to_string()
            }
        }
        Value::Array(a) => plural(a.len(), "item", "items"),
        Value::Null => "-".into(),
        other => other.to_string(),
    };
    cut(&text, max)
}

pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn folds_and_unfolds_objects_and_arrays() {
        let mut t = JsonTree::new(json!({"a": 1, "list": [1, 2, {"x": true}], "o": {}}));
        let lines: Vec<String> = t.rows().iter().map(JsonTree::line).collect();
        assert_eq!(
            lines,
            [
                "{",
                "  \"a\": 1,",
                "  \"list\": [",
                "    1,",
                "    2,",
                "    {",
                "      \"x\": true",
                "    }",
                "  ],",
                "  \"o\": {}",
                "}"
            ]
        );
        // Folding from the closing row puts the cursor on the opening one.
        assert_eq!(t.toggle(8), Some(2));
        let lines: Vec<String> = t.rows().iter().map(JsonTree::line).collect();
        assert_eq!(lines[2], "  \"list\": […] 3 items,");
        assert_eq!(lines.len(), 5);
        assert_eq!(t.toggle(1), None, "a scalar does not fold");
        assert_eq!(t.toggle(0), Some(0));
        assert_eq!(t.rows()[0].text, "{…} 3 keys");
        t.toggle(0);
        t.toggle(2);
        assert_eq!(t.rows().len(), 11);
    }

    #[test]
    fn summaries() {
        assert_eq!(
            summarize(&json!({"positions": [1, 2, 3, 4]}), 40),
            "4 positions"
        );
        assert_eq!(summarize(&json!([1]), 40), "1 item");
        assert_eq!(
            summarize(&json!({"ok": true, "id": "x"}), 10),
            "{\"id\":\"x\"…"
        );
    }
}
