//! The one strict reading of a request that can change something upstream. Every POST of the
//! catalog is parsed here, once, into the typed request of its operation (the interface's field
//! names, nothing else); what goes upstream is that value serialised again, never the bytes the
//! agent sent. A body the gateway reads one way and the service another is therefore impossible:
//! the service only ever sees what was checked.
//!
//! Refused with the field named: invalid JSON (a lone surrogate escape included), a duplicate key
//! at any depth, a field the operation does not have, a value of the wrong type, a tool name the
//! catalog does not have byte for byte.

use crate::api::catalog::{self, Method, Operation, TOOL_PREFIX};
use crate::api::model::{
    BacktestRequest, BuilderFeeApproval, CancelRequest, ChatRequest, CliRequest, CloseRequest,
    ConfirmRequest, ExecuteToolRequest, PlatformClose, PlatformOrder, ResearchMessageRequest,
    ResearchStartRequest, SignalDestinationRequest, TradeSignal,
};
use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// The argument that carries a mutate tool's confirm token on its second call.
pub const CONFIRM_TOKEN: &str = "confirmToken";

/// Why a body was refused, naming what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadError {
    /// 400 `invalid_body`: the body or one of its fields.
    Invalid { field: String, message: String },
    /// 403 `unknown_tool`: a tool name the catalog does not have, byte for byte.
    UnknownTool { name: String },
    /// 400 `invalid_query`: a query parameter the operation does not take.
    Query { name: String, message: String },
}

impl ReadError {
    fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        ReadError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }

    fn nested(self, prefix: &str) -> Self {
        match self {
            ReadError::Invalid { field, message } => ReadError::Invalid {
                field: format!("{prefix}.{field}"),
                message: format!("{prefix}.{message}"),
            },
            other => other,
        }
    }
}

/// A request body as the gateway understood it. The variants that trade carry their typed
/// request; the rest were read just as strictly and cannot change the account's exposure.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// `propose_trade` and `place_order`.
    Signal(TradeSignal),
    Confirm(ConfirmRequest),
    Close(CloseRequest),
    PlatformOrder(PlatformOrder),
    PlatformClose(PlatformClose),
    Cancel(CancelRequest),
    Tool(Box<ToolCall>),
    /// A body that cannot trade (backtests, signals, research, chat, CLI, builder fee).
    Other,
}

/// `execute_mcp_tool`, read: the tool by its exact name, its arguments read as its operation's
/// own request.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub op: &'static Operation,
    /// The arguments as the operation reads them (a POST operation's body), strictly.
    pub body: Parsed,
    pub confirm_token: Option<String>,
    /// The canonical `args` object: the checked body, path parameters and the token.
    pub args: Map<String, Value>,
}

/// A request read strictly: what it is, and the bytes to send upstream in its place.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub parsed: Parsed,
    pub canonical: Value,
}

impl Checked {
    pub fn bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.canonical).unwrap_or_default()
    }
}

/// Reads the body of a POST of `op`.
pub fn read(op: &Operation, body: &[u8]) -> Result<Checked, ReadError> {
    let value = strict_json(body)?;
    read_value(op, value)
}

/// Reads an already parsed (duplicate-free) body of `op`.
fn read_value(op: &Operation, value: Value) -> Result<Checked, ReadError> {
    fn typed<T: DeserializeOwned + Serialize + schemars::JsonSchema>(
        op: &Operation,
        value: Value,
        wrap: fn(T) -> Parsed,
    ) -> Result<Checked, ReadError> {
        let t: T = strict_typed(op, value.clone())?;
        let mut canonical = serde_json::to_value(&t).map_err(|e| {
            ReadError::invalid("body", format!("the body cannot be re-encoded: {e}"))
        })?;
        keep_number_shapes(&value, &mut canonical);
        // What is judged is read from what will be forwarded, not from what was sent: the
        // request's encoding writes at most 8 decimals, so a price sent with more would reach
        // the service other than it was judged.
        let forwarded: T = strict_typed(op, canonical.clone())?;
        Ok(Checked {
            parsed: wrap(forwarded),
            canonical,
        })
    }
    fn other<T>(_: T) -> Parsed {
        Parsed::Other
    }
    match op.name {
        "propose_trade" | "place_order" => typed::<TradeSignal>(op, value, Parsed::Signal),
        "confirm_trade" => typed::<ConfirmRequest>(op, value, Parsed::Confirm),
        "close_position" => typed::<CloseRequest>(op, value, Parsed::Close),
        "platform_place_order" => typed::<PlatformOrder>(op, value, Parsed::PlatformOrder),
        "platform_close_position" => typed::<PlatformClose>(op, value, Parsed::PlatformClose),
        "platform_cancel_order" => typed::<CancelRequest>(op, value, Parsed::Cancel),
        "run_backtest" => typed::<BacktestRequest>(op, value, other),
        "approve_builder_fee" => typed::<BuilderFeeApproval>(op, value, other),
        "create_signal_destination" => typed::<SignalDestinationRequest>(op, value, other),
        "mcp_agent_chat" => typed::<ChatRequest>(op, value, other),
        "mcp_cli" => typed::<CliRequest>(op, value, other),
        "research_start" => typed::<ResearchStartRequest>(op, value, other),
        "research_message" => typed::<ResearchMessageRequest>(op, value, other),
        "research_stop" => typed::<NoBody>(op, value, other),
        "execute_mcp_tool" => read_tool(value),
        // A POST the gateway has no reading for is one it cannot classify.
        name => Err(ReadError::invalid(
            "body",
            format!("{name} is not an operation this gateway can check, so it is not forwarded"),
        )),
    }
}

/// A number the agent sent as a JSON number stays one where the typed request writes numeric
/// text: the same value, in the shape it came in. A mutate tool's confirm token is bound to its
/// arguments as first sent (a chat turn may have prepared them), so an equal value must not
/// become different bytes.
fn keep_number_shapes(sent: &Value, canonical: &mut Value) {
    let (Value::Object(sent), Value::Object(out)) = (sent, canonical) else {
        return;
    };
    for (key, value) in out.iter_mut() {
        if let (Some(Value::Number(n)), Value::String(text)) = (sent.get(key), &*value)
            && text.parse::<f64>().ok() == n.as_f64()
        {
            *value = Value::Number(n.clone());
        }
    }
}

/// Operations whose body is empty.
#[derive(Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
struct NoBody {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolBody {
    name: String,
    #[serde(default)]
    args: Option<Value>,
}

fn read_tool(value: Value) -> Result<Checked, ReadError> {
    let body: ToolBody = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let field = if path == "." {
            field_of_message(&inner).unwrap_or_else(|| "body".into())
        } else {
            path
        };
        ReadError::invalid(
            field.clone(),
            format!("{field}: {inner}; execute_mcp_tool takes name and args"),
        )
    })?;
    let op = catalog::tool_op(&body.name).ok_or_else(|| ReadError::UnknownTool {
        name: body.name.clone(),
    })?;
    let mut args = match body.args {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => {
            return Err(ReadError::invalid(
                "args",
                "args must be a JSON object of the tool's arguments",
            ));
        }
    };
    let confirm_token = match args.remove(CONFIRM_TOKEN) {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) if !t.is_empty() && t == t.trim() => Some(t),
        Some(_) => {
            return Err(ReadError::invalid(
                "args.confirmToken",
                "args.confirmToken must be the ct_… string the tool's first call answered, as it was",
            ));
        }
    };
    let mut out = Map::new();
    for name in op.path_params() {
        match args.remove(name) {
            Some(Value::String(v)) if !v.trim().is_empty() && v == v.trim() => {
                out.insert(name.to_string(), Value::String(v));
            }
            _ => {
                return Err(ReadError::invalid(
                    format!("args.{name}"),
                    format!(
                        "args.{name} is required: {} needs it as a string without surrounding spaces",
                        op.tool_name()
                    ),
                ));
            }
        }
    }
    let body = match op.method {
        Method::Get => {
            for (name, value) in args {
                if !op.query.iter().any(|q| q.name == name) {
                    return Err(ReadError::invalid(
                        format!("args.{name}"),
                        format!(
                            "{} has no argument {name:?}; it takes {}",
                            op.tool_name(),
                            takes(op)
                        ),
                    ));
                }
                if !matches!(
                    value,
                    Value::Null | Value::String(_) | Value::Number(_) | Value::Bool(_)
                ) {
                    return Err(ReadError::invalid(
                        format!("args.{name}"),
                        format!("args.{name} must be a string, number or boolean"),
                    ));
                }
                out.insert(name, value);
            }
            Parsed::Other
        }
        Method::Post => {
            let checked = read_value(op, Value::Object(args)).map_err(|e| e.nested("args"))?;
            if let Value::Object(fields) = checked.canonical {
                out.extend(fields);
            }
            checked.parsed
        }
    };
    let mut canonical_args = out.clone();
    if let Some(t) = &confirm_token {
        canonical_args.insert(CONFIRM_TOKEN.into(), Value::String(t.clone()));
    }
    let canonical = serde_json::to_value(ExecuteToolRequest {
        name: op.tool_name(),
        args: Value::Object(canonical_args),
    })
    .expect("a tool call always serialises");
    Ok(Checked {
        parsed: Parsed::Tool(Box::new(ToolCall {
            op,
            body,
            confirm_token,
            args: out,
        })),
        canonical,
    })
}

fn takes(op: &Operation) -> String {
    let names: Vec<&str> = op
        .path_params()
        .into_iter()
        .chain(op.query.iter().map(|q| q.name))
        .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// The field a serde message names (`unknown field `x``, `missing field `x``).
fn field_of_message(message: &str) -> Option<String> {
    ["unknown field `", "missing field `", "duplicate field `"]
        .iter()
        .find_map(|p| message.find(p).map(|i| &message[i + p.len()..]))
        .and_then(|rest| rest.split('`').next())
        .map(str::to_string)
}

/// The fields an operation's request has, from its JSON Schema.
fn fields_of<T: schemars::JsonSchema>() -> Vec<String> {
    let schema = schemars::schema_for!(T);
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// `value` as `T`, refusing a field `T` does not have (at any depth) and naming the field of any
/// other error.
fn strict_typed<T: DeserializeOwned + schemars::JsonSchema>(
    op: &Operation,
    value: Value,
) -> Result<T, ReadError> {
    let mut unknown: Vec<String> = Vec::new();
    let result: Result<T, _> = serde_path_to_error::deserialize(serde_ignored::Deserializer::new(
        value,
        &mut |path: serde_ignored::Path| unknown.push(path.to_string()),
    ));
    if let Some(field) = unknown.first() {
        let fields = fields_of::<T>();
        return Err(ReadError::invalid(
            field.clone(),
            format!(
                "{field} is not a field of {}; its fields are {} (the gateway forwards only what it checked)",
                op.name,
                if fields.is_empty() {
                    "none".to_string()
                } else {
                    fields.join(", ")
                }
            ),
        ));
    }
    result.map_err(|e| {
        let mut path = e.path().to_string();
        let inner = strip_position(&e.inner().to_string()).to_string();
        if let Some(name) = field_of_message(&inner) {
            path = if path == "." {
                name
            } else {
                format!("{path}.{name}")
            };
        }
        let field = if path == "." {
            "body".to_string()
        } else {
            path
        };
        ReadError::invalid(field.clone(), format!("{field}: {inner}"))
    })
}

fn strip_position(message: &str) -> &str {
    message
        .rfind(" at line ")
        .map(|i| &message[..i])
        .unwrap_or(message)
}

/// The body as JSON: an object (an empty body is `{}`), valid to its last byte, with no key twice
/// in any object and no escape that is not a character (a lone surrogate).
pub fn strict_json(body: &[u8]) -> Result<Value, ReadError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Map::new()));
    }
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ReadError::invalid(
            "body",
            "the body must be a JSON object, e.g. {\"proposalId\": \"prop_…\"}",
        ));
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize::<_, Strict>(&mut de)
        .map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner().to_string();
            // A repeated key is reported at its object: name the key itself.
            let repeated = inner
                .strip_prefix(DUPLICATE)
                .and_then(|rest| rest.split('"').next());
            let field = match (path.as_str(), repeated) {
                ("." | "", Some(key)) => key.to_string(),
                (p, Some(key)) => format!("{p}.{key}"),
                ("." | "", None) => "body".to_string(),
                (p, None) => p.to_string(),
            };
            ReadError::invalid(field, format!("the body is not valid JSON: {inner}"))
        })?
        .0;
    de.end()
        .map_err(|e| ReadError::invalid("body", format!("the body is not valid JSON: {e}")))?;
    Ok(value)
}

const DUPLICATE: &str = "the key \"";

/// A JSON value whose objects are refused when a key repeats: serde_json's own `Value` keeps the
/// last one silently, and a service may keep the first.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number must be finite"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Strict::deserialize(d).map(|s| s.0)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "{DUPLICATE}{key}\" appears twice; each field may be given once"
                )));
            }
            let Strict(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// Whether a catalog path may be sent on as it came: no segment an upstream could read as
/// another path once it normalises it (`.` or `..`, or an encoded `/`, `\\` or `.`). Such a path
/// matches a catalog route only through a parameter, and no identifier of the interface has one.
pub fn plain_path(path: &str) -> bool {
    let encoded = |code: &[u8]| {
        path.as_bytes()
            .windows(3)
            .any(|w| w.eq_ignore_ascii_case(code))
    };
    !path.split('/').any(|seg| seg == "." || seg == "..")
        && !path.contains('\\')
        && !encoded(b"%2f")
        && !encoded(b"%5c")
        && !encoded(b"%2e")
}

/// Query parameters of a POST: only those the operation declares pass.
pub fn check_query(op: &Operation, query: Option<&str>) -> Result<(), ReadError> {
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let name = pair.split('=').next().unwrap_or("");
        if !op.query.iter().any(|q| q.name == name) {
            return Err(ReadError::Query {
                name: name.to_string(),
                message: format!(
                    "{} takes no query parameter {name:?}; the gateway forwards only what it checked",
                    op.name
                ),
            });
        }
    }
    Ok(())
}

/// Whether a name is some tool's name with something around it, for a message that says so.
pub fn near_tool(name: &str) -> Option<&'static Operation> {
    let trimmed = name.trim();
    catalog::tool_op(trimmed)
        .or_else(|| catalog::tool_op(&format!("{TOOL_PREFIX}{trimmed}")))
        .filter(|_| trimmed != name || !name.starts_with(TOOL_PREFIX))
}

/// The fields of each POST operation's request, as the README's interface notes list them.
pub fn fields_by_operation() -> Vec<(&'static str, Vec<String>)> {
    vec![
        ("propose_trade", fields_of::<TradeSignal>()),
        ("place_order", fields_of::<TradeSignal>()),
        ("confirm_trade", fields_of::<ConfirmRequest>()),
        ("close_position", fields_of::<CloseRequest>()),
        ("platform_place_order", fields_of::<PlatformOrder>()),
        ("platform_close_position", fields_of::<PlatformClose>()),
        ("platform_cancel_order", fields_of::<CancelRequest>()),
        ("approve_builder_fee", fields_of::<BuilderFeeApproval>()),
        (
            "create_signal_destination",
            fields_of::<SignalDestinationRequest>(),
        ),
        ("run_backtest", fields_of::<BacktestRequest>()),
        ("execute_mcp_tool", vec!["name".into(), "args".into()]),
        ("mcp_agent_chat", fields_of::<ChatRequest>()),
        ("mcp_cli", fields_of::<CliRequest>()),
        ("research_start", fields_of::<ResearchStartRequest>()),
        ("research_message", fields_of::<ResearchMessageRequest>()),
        ("research_stop", fields_of::<NoBody>()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The interface notes' list of accepted fields is the typed requests', one line per
    /// operation.
    #[test]
    fn the_interface_notes_list_exactly_the_fields_each_operation_accepts() {
        let readme = include_str!("../../../docs/interface-notes.md");
        let posts: Vec<&str> = catalog::OPERATIONS
            .iter()
            .filter(|o| o.method == Method::Post)
            .map(|o| o.name)
            .collect();
        let listed = fields_by_operation();
        assert_eq!(
            listed
                .iter()
                .map(|(n, _)| *n)
                .collect::<std::collections::BTreeSet<_>>(),
            posts.iter().copied().collect(),
            "every POST of the catalog has a reading"
        );
        for (op, fields) in listed {
            let line = readme
                .lines()
                .find(|l| {
                    l.starts_with("- `") && l.contains(&format!("`{op}`")) && l.contains("`:")
                })
                .unwrap_or_else(|| panic!("docs/interface-notes.md lists no fields for {op}"));
            let after = line.split("`:").nth(1).unwrap_or("");
            let after = after.split(" (").next().unwrap_or(after);
            let shown: std::collections::BTreeSet<&str> =
                after.split('`').skip(1).step_by(2).collect();
            let want: std::collections::BTreeSet<&str> =
                fields.iter().map(String::as_str).collect();
            assert_eq!(shown, want, "{op}: {line}");
        }
    }

    fn op(name: &str) -> &'static Operation {
        catalog::op(name)
    }

    fn field(e: ReadError) -> String {
        match e {
            ReadError::Invalid { field, .. } => field,
            other => panic!("{other:?}"),
        }
    }

    /// Found by the `agent_body` fuzz target: a price sent with more than 8 decimals was judged
    /// as sent and forwarded rounded to 8, so the service would have been sent a price other than
    /// the one judged.
    #[test]
    fn a_number_forwarded_reads_back_as_the_number_judged() {
        let propose = op("propose_trade");
        for body in [
            &br#"{"p":" 06630263.020060494"}"#[..],
            br#"{"p":6630263.020060494}"#,
            br#"{"p":"0.30000000000000004"}"#,
            // serde_json reads a number like this one unit in the last place off unless it
            // reads floats exactly (its `float_roundtrip`): as a number it was judged as one
            // value and, written as text, forwarded as another.
            br#"{"p":311111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111110}"#,
        ] {
            let checked = read(propose, body).unwrap();
            let again = read(propose, &checked.bytes()).unwrap();
            assert_eq!(
                again.parsed,
                checked.parsed,
                "{}",
                String::from_utf8_lossy(body)
            );
            assert_eq!(again.canonical, checked.canonical);
        }
        let checked = read(propose, br#"{"p":" 06630263.020060494"}"#).unwrap();
        let Parsed::Signal(judged) = &checked.parsed else {
            panic!("{:?}", checked.parsed)
        };
        assert_eq!(checked.canonical["p"], json!("6630263.02006049"));
        assert_eq!(
            judged.p,
            Some(6630263.02006049),
            "the price judged is the one sent on"
        );
    }

    #[test]
    fn invalid_json_duplicates_and_lone_surrogates_are_refused() {
        let confirm = op("confirm_trade");
        assert_eq!(
            field(read(confirm, br#"{"proposalId":"p","x":"\ud800"}"#).unwrap_err()),
            "x"
        );
        let e = read(confirm, br#"{"proposalId":"p","proposalId":"q"}"#).unwrap_err();
        assert!(format!("{e:?}").contains("twice"), "{e:?}");
        let e = read(
            op("execute_mcp_tool"),
            br#"{"name":"service_place_order","args":{"a":"BTCUSDT","a":"ETHUSDT"}}"#,
        )
        .unwrap_err();
        assert_eq!(field(e), "args.a");
        assert!(read(confirm, br#"{"proposalId":"p"} x"#).is_err());
        assert!(read(confirm, br#"["p"]"#).is_err());
        // A pair of surrogates is one character, and fine.
        assert!(read(op("mcp_cli"), br#"{"command":"/help \ud83d\ude00"}"#).is_ok());
    }

    #[test]
    fn fields_an_operation_does_not_have_are_named() {
        for (name, body, bad) in [
            (
                "place_order",
                json!({"a": "BTCUSDT", "d": "long", "reduceOnly": true}),
                "reduceOnly",
            ),
            (
                "place_order",
                json!({"a": "BTCUSDT", "d": "long", "usdAmount": 5}),
                "usdAmount",
            ),
            ("propose_trade", json!({"a": "ETHUSDT", "lev": 3}), "lev"),
            (
                "propose_trade",
                json!({"a": "ETHUSDT", "stopLoss": 1}),
                "stopLoss",
            ),
            (
                "platform_place_order",
                json!({"pair": "BTC-USD", "side": "long", "coin": "ETH"}),
                "coin",
            ),
            (
                "run_backtest",
                json!({"strategyId": "x", "pair": "BTC-USD", "timeframe": "5m", "days": 3, "extra": 1}),
                "extra",
            ),
        ] {
            let e = read(op(name), body.to_string().as_bytes()).unwrap_err();
            assert_eq!(field(e), bad, "{name}");
        }
    }

    #[test]
    fn what_goes_upstream_is_the_checked_value() {
        let c = read(
            op("place_order"),
            br#"{"a":"BTCUSDT","d":"long","sizeUsd":" 500 ","sl":60000}"#,
        )
        .unwrap();
        assert_eq!(
            c.canonical,
            json!({"a": "BTCUSDT", "d": "long", "sizeUsd": "500", "sl": 60000})
        );
    }

    #[test]
    fn tool_names_match_byte_for_byte_and_args_are_read_as_the_operation() {
        for name in [
            " service_confirm_trade",
            "service_place_order\n",
            "\u{a0}service_propose_trade",
            "SERVICE_PLACE_ORDER",
            "place_order",
            "service_execute_mcp_tool",
        ] {
            let body = json!({"name": name, "args": {}}).to_string();
            assert_eq!(
                read(op("execute_mcp_tool"), body.as_bytes()).unwrap_err(),
                ReadError::UnknownTool { name: name.into() },
                "{name:?}"
            );
        }
        let body = json!({"name": "service_place_order",
            "args": {"a": "BTCUSDT", "d": "long", "size": 1, "confirmToken": "ct_1"}});
        let c = read(op("execute_mcp_tool"), body.to_string().as_bytes()).unwrap();
        let Parsed::Tool(call) = &c.parsed else {
            panic!()
        };
        assert_eq!(call.confirm_token.as_deref(), Some("ct_1"));
        assert!(matches!(call.body, Parsed::Signal(_)));
        assert_eq!(c.canonical["args"]["size"], json!(1));
        let bad =
            json!({"name": "service_place_order", "args": {"a": "BTCUSDT", "reduceOnly": true}});
        assert_eq!(
            field(read(op("execute_mcp_tool"), bad.to_string().as_bytes()).unwrap_err()),
            "args.reduceOnly"
        );
        let extra = json!({"name": "service_get_positions", "args": {}, "x": 1});
        assert_eq!(
            field(read(op("execute_mcp_tool"), extra.to_string().as_bytes()).unwrap_err()),
            "x"
        );
    }
}
