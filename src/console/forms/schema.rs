//! The subset of JSON Schema our tool schemas use, checked in the console before a tool call is
//! sent, and the argument skeleton the editor starts from.
//!
//! Supported: `type` (one name or a list: object, string, number, integer, boolean, array, null),
//! `nullable: true`, `anyOf`/`oneOf` (a `{"type": "null"}` branch makes the value nullable),
//! `required`, `properties`, `additionalProperties: false`, `items`, `enum`, `const`, `minimum`,
//! `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `minLength`, `maxLength`, `minItems`,
//! `maxItems` and local `$ref`s (`#/$defs/…`, `#/definitions/…`). Anything else is ignored: the
//! service checks again and has the last word.

use serde_json::{Map, Value, json};

/// One thing wrong with the arguments, at a JSON path (`$`, `$.coin`, `$.legs[0].size`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Parses `text` as JSON and checks it against `schema`: every problem, in document order. An
/// empty list means the arguments may be sent.
pub fn check_text(schema: &Value, text: &str) -> (Option<Value>, Vec<Problem>) {
    let text = if text.trim().is_empty() { "{}" } else { text };
    match serde_json::from_str::<Value>(text) {
        Ok(v) => {
            let problems = validate(schema, &v);
            (Some(v), problems)
        }
        Err(e) => (
            None,
            vec![Problem {
                path: "$".into(),
                message: format!(
                    "not valid JSON (line {}, column {}): {}",
                    e.line(),
                    e.column(),
                    strip_position(&e.to_string())
                ),
            }],
        ),
    }
}

fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

pub fn validate(schema: &Value, value: &Value) -> Vec<Problem> {
    let mut out = Vec::new();
    check(schema, schema, value, "$", &mut out, 0);
    out
}

fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let mut s = schema;
    for _ in 0..16 {
        let Some(r) = s.get("$ref").and_then(Value::as_str) else {
            return s;
        };
        let Some(pointer) = r.strip_prefix('#') else {
            return s;
        };
        match root.pointer(pointer) {
            Some(target) => s = target,
            None => return s,
        }
    }
    s
}

fn type_names(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    }
}

fn is_null_schema(s: &Value) -> bool {
    type_names(s) == ["null"]
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "integer" => match v {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        "number" => v.is_number(),
        other => type_of(v) == other,
    }
}

fn child(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !key.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{}]", Value::String(key.to_string()))
    }
}

fn check(root: &Value, schema: &Value, v: &Value, path: &str, out: &mut Vec<Problem>, depth: u8) {
    if depth > 32 {
        return;
    }
    let schema = resolve(root, schema);
    let mut push = |message: String| {
        out.push(Problem {
            path: path.to_string(),
            message,
        })
    };
    if v.is_null() && schema.get("nullable").and_then(Value::as_bool) == Some(true) {
        return;
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(key) {
            if v.is_null() && branches.iter().any(|b| is_null_schema(resolve(root, b))) {
                return;
            }
            let non_null: Vec<&Value> = branches
                .iter()
                .filter(|b| !is_null_schema(resolve(root, b)))
                .collect();
            let results: Vec<Vec<Problem>> = non_null
                .iter()
                .map(|b| {
                    let mut p = Vec::new();
                    check(root, b, v, path, &mut p, depth + 1);
                    p
                })
                .collect();
            if results.iter().any(Vec::is_empty) {
                // A branch matched; the keywords beside anyOf still apply below.
            } else if results.len() == 1 {
                out.extend(results.into_iter().flatten());
                return;
            } else if !results.is_empty() {
                push(format!(
                    "matches none of the {} allowed shapes",
                    results.len()
                ));
                return;
            }
        }
    }
    let types = type_names(schema);
    if !types.is_empty() && !types.iter().any(|t| has_type(v, t)) {
        let want = types.join(" or ");
        push(format!("expected {want}, got {}", type_of(v)));
        return;
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(v)
    {
        let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
        push(format!("must be one of {}", list.join(", ")));
    }
    if let Some(c) = schema.get("const")
        && c != v
    {
        push(format!("must be {c}"));
    }
    match v {
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            let bound = |k: &str| schema.get(k).and_then(Value::as_f64);
            if let Some(min) = bound("minimum")
                && x < min
            {
                push(format!("must be at least {}", fmt_num(min)));
            }
            if let Some(max) = bound("maximum")
                && x > max
            {
                push(format!("must be at most {}", fmt_num(max)));
            }
            if let Some(min) = bound("exclusiveMinimum")
                && x <= min
            {
                push(format!("must be greater than {}", fmt_num(min)));
            }
            if let Some(max) = bound("exclusiveMaximum")
                && x >= max
            {
                push(format!("must be less than {}", fmt_num(max)));
            }
        }
        Value::String(s) => {
            let n = s.chars().count() as u64;
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
                && n < min
            {
                push(if min == 1 {
                    "must not be empty".to_string()
                } else {
                    format!("must be at least {min} characters")
                });
            }
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
                && n > max
            {
                push(format!("must be at most {max} characters"));
            }
        }
        Value::Array(items) => {
            let n = items.len() as u64;
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                && n < min
            {
                push(format!("must have at least {min} items"));
            }
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
                && n > max
            {
                push(format!("must have at most {max} items"));
            }
            if let Some(item_schema) = schema.get("items").filter(|s| s.is_object()) {
                for (i, item) in items.iter().enumerate() {
                    check(
                        root,
                        item_schema,
                        item,
                        &format!("{path}[{i}]"),
                        out,
                        depth + 1,
                    );
                }
            }
        }
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            if let Some(Value::Array(required)) = schema.get("required") {
                for name in required.iter().filter_map(Value::as_str) {
                    if !map.contains_key(name) {
                        out.push(Problem {
                            path: child(path, name),
                            message: "is required".into(),
                        });
                    }
                }
            }
            for (k, item) in map {
                match props.and_then(|p| p.get(k)) {
                    Some(s) => check(root, s, item, &child(path, k), out, depth + 1),
                    None => match schema.get("additionalProperties") {
                        Some(Value::Bool(false)) => {
                            let known: Vec<&str> = props
                                .map(|p| p.keys().map(String::as_str).collect())
                                .unwrap_or_default();
                            out.push(Problem {
                                path: child(path, k),
                                message: if known.is_empty() {
                                    "is not an accepted property".into()
                                } else {
                                    format!(
                                        "is not an accepted property (accepted: {})",
                                        known.join(", ")
                                    )
                                },
                            });
                        }
                        Some(s @ Value::Object(_)) => {
                            check(root, s, item, &child(path, k), out, depth + 1)
                        }
                        _ => {}
                    },
                }
            }
        }
        _ => {}
    }
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        x.to_string()
    }
}

/// Arguments to start editing from: every required property with a placeholder of its type (its
/// default, first enum value, or minimum when the schema gives one).
pub fn skeleton(schema: &Value) -> Value {
    skeleton_of(schema, schema, 0)
}

fn skeleton_of(root: &Value, schema: &Value, depth: u8) -> Value {
    let schema = resolve(root, schema);
    if depth > 8 {
        return Value::Null;
    }
    if let Some(d) = schema.get("default") {
        return d.clone();
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && let Some(first) = allowed.iter().find(|v| !v.is_null())
    {
        return first.clone();
    }
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(key)
            && let Some(b) = branches.iter().find(|b| !is_null_schema(resolve(root, b)))
        {
            return skeleton_of(root, b, depth + 1);
        }
    }
    let types = type_names(schema);
    let t = types.iter().find(|t| **t != "null").copied().unwrap_or(
        if schema.get("properties").is_some() {
            "object"
        } else {
            "null"
        },
    );
    match t {
        "object" => {
            let mut m = Map::new();
            let props = schema.get("properties").and_then(Value::as_object);
            if let Some(Value::Array(required)) = schema.get("required") {
                for name in required.iter().filter_map(Value::as_str) {
                    let s = props.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
                    m.insert(name.to_string(), skeleton_of(root, s, depth + 1));
                }
            }
            Value::Object(m)
        }
        "string" => json!(""),
        "integer" | "number" => {
            let min = schema
                .get("minimum")
                .or_else(|| schema.get("exclusiveMinimum"))
                .cloned();
            min.unwrap_or(json!(0))
        }
        "boolean" => json!(false),
        "array" => json!([]),
        _ => Value::Null,
    }
}

/// A short description of a property for the schema panel: `string (enum: a, b)`.
pub fn describe_type(root: &Value, schema: &Value) -> String {
    let schema = resolve(root, schema);
    let mut nullable = schema.get("nullable").and_then(Value::as_bool) == Some(true);
    let mut types: Vec<String> = type_names(schema)
        .into_iter()
        .filter(|t| {
            if *t == "null" {
                nullable = true;
                false
            } else {
                true
            }
        })
        .map(str::to_string)
        .collect();
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(key) {
            for b in branches {
                let b = resolve(root, b);
                if is_null_schema(b) {
                    nullable = true;
                } else {
                    types.push(describe_type(root, b));
                }
            }
        }
    }
    if types.is_empty() {
        types.push(if schema.get("properties").is_some() {
            "object".into()
        } else {
            "any".into()
        });
    }
    let mut text = types.join(" | ");
    if types.len() == 1
        && text == "array"
        && let Some(items) = schema.get("items")
    {
        text = format!("array of {}", describe_type(root, items));
    }
    let mut notes = Vec::new();
    if let Some(Value::Array(allowed)) = schema.get("enum") {
        let list: Vec<String> = allowed
            .iter()
            .map(|v| v.as_str().map(str::to_string).unwrap_or(v.to_string()))
            .collect();
        notes.push(list.join("|"));
    }
    match (
        schema.get("minimum").and_then(Value::as_f64),
        schema.get("maximum").and_then(Value::as_f64),
    ) {
        (Some(a), Some(b)) => notes.push(format!("{}..{}", fmt_num(a), fmt_num(b))),
        (Some(a), None) => notes.push(format!("≥ {}", fmt_num(a))),
        (None, Some(b)) => notes.push(format!("≤ {}", fmt_num(b))),
        _ => {}
    }
    if nullable {
        notes.push("nullable".into());
    }
    if notes.is_empty() {
        text
    } else {
        format!("{text} ({})", notes.join(", "))
    }
}

/// The properties of an object schema, for the schema panel: (name, required, type, description).
pub fn properties(schema: &Value) -> Vec<(String, bool, String, String)> {
    let root = schema;
    let schema = resolve(root, schema);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut rows: Vec<(String, bool, String, String)> = props
        .iter()
        .map(|(k, s)| {
            let s2 = resolve(root, s);
            (
                k.clone(),
                required.contains(&k.as_str()),
                describe_type(root, s),
                s2.get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect();
    // Required first, each group in the schema's order.
    rows.sort_by_key(|r| !r.1);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "required": ["coin", "size", "side"],
            "additionalProperties": false,
            "properties": {
                "coin": {"type": "string", "minLength": 1},
                "side": {"type": "string", "enum": ["long", "short"]},
                "size": {"type": "number", "exclusiveMinimum": 0},
                "leverage": {"type": "integer", "minimum": 1, "maximum": 100},
                "reduceOnly": {"type": "boolean"},
                "tp": {"type": ["number", "null"]},
                "sl": {"anyOf": [{"type": "number"}, {"type": "null"}]},
                "note": {"type": "string", "nullable": true},
                "legs": {"type": "array", "items": {"$ref": "#/$defs/Leg"}}
            },
            "$defs": {
                "Leg": {"type": "object", "required": ["px"], "properties": {"px": {"type": "number", "minimum": 0}}}
            }
        })
    }

    fn paths(v: Value) -> Vec<String> {
        validate(&schema(), &v)
            .into_iter()
            .map(|p| p.to_string())
            .collect()
    }

    #[test]
    fn valid_arguments_have_no_problems() {
        assert!(
            paths(
                json!({"coin": "BTC", "side": "long", "size": 0.01, "leverage": 5,
                "tp": null, "sl": null, "note": null, "legs": [{"px": 1}]})
            )
            .is_empty()
        );
        assert!(
            paths(json!({"coin": "BTC", "side": "short", "size": 1, "tp": 70000, "sl": 60000.5}))
                .is_empty()
        );
    }

    #[test]
    fn every_problem_is_reported_with_its_path() {
        let got = paths(json!({
            "coin": "", "side": "up", "leverage": 0.5, "reduceOnly": "yes",
            "tp": "high", "sl": "low", "legs": [{"px": -1}, {}], "extra": 1
        }));
        assert_eq!(
            got,
            vec![
                "$.size: is required",
                "$.coin: must not be empty",
                "$.extra: is not an accepted property (accepted: coin, legs, leverage, note, reduceOnly, side, size, sl, tp)",
                "$.legs[0].px: must be at least 0",
                "$.legs[1].px: is required",
                "$.leverage: expected integer, got number",
                "$.reduceOnly: expected boolean, got string",
                "$.side: must be one of \"long\", \"short\"",
                "$.sl: expected number, got string",
                "$.tp: expected number or null, got string",
            ]
        );
        assert_eq!(
            paths(json!({"coin": "BTC", "side": "long", "size": 0, "leverage": 101})),
            vec![
                "$.leverage: must be at most 100",
                "$.size: must be greater than 0"
            ]
        );
        assert_eq!(paths(json!([1])), vec!["$: expected object, got array"]);
    }

    #[test]
    fn text_that_is_not_json_is_one_problem_at_the_root() {
        let (v, problems) = check_text(&schema(), "{\"coin\": ");
        assert!(v.is_none());
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].path, "$");
        assert!(
            problems[0].message.starts_with("not valid JSON (line 1"),
            "{problems:?}"
        );
        // Empty text is `{}`: only the required properties are missing.
        let (_, problems) = check_text(&schema(), "  ");
        assert_eq!(problems.len(), 3);
    }

    #[test]
    fn skeleton_fills_required_properties_only() {
        let s = skeleton(&schema());
        assert_eq!(s, json!({"coin": "", "side": "long", "size": 0}));
        assert_eq!(skeleton(&json!({"type": "object"})), json!({}));
        assert_eq!(skeleton(&Value::Null), Value::Null);
    }
}
