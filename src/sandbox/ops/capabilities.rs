//! The tool catalog of `list_mcp_capabilities`: every tool with its tier and the JSON Schema of
//! its arguments, taken from the request type its handler parses.

use super::mcp::{CONFIRM_TOKEN_ARG, is_tool, tier_name};
use crate::api::catalog::{Method, OPERATIONS, Operation, Tier};
use crate::api::model::{
    BacktestRequest, BuilderFeeApproval, CancelRequest, Capabilities, CliRequest, CloseRequest,
    ConfirmRequest, PlatformClose, PlatformOrder, ResearchMessageRequest, ResearchStartRequest,
    SignalDestinationRequest, ToolCapability, TradeSignal,
};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};
use std::sync::OnceLock;

/// The tool catalog of `list_mcp_capabilities`, computed once.
pub fn capabilities() -> Capabilities {
    static CAPS: OnceLock<Capabilities> = OnceLock::new();
    CAPS.get_or_init(build_capabilities).clone()
}

fn build_capabilities() -> Capabilities {
    let mut tiers: Map<String, Value> = ["observe", "experiment", "mutate"]
        .into_iter()
        .map(|t| (t.to_string(), json!([])))
        .collect();
    let tools = OPERATIONS
        .iter()
        .filter(|op| is_tool(op))
        .map(|op| {
            let name = op.tool_name();
            if let Some(Value::Array(list)) = tiers.get_mut(tier_name(op.tier)) {
                list.push(json!(name));
            }
            let mutate = op.tier == Tier::Mutate;
            let mut description = op.summary.to_string();
            if mutate {
                description.push_str(
                    ". Mutate tool: the first call only answers a confirmToken and a preview; \
                     re-submit the same args plus confirmToken (within 5 minutes) to run it",
                );
            }
            let mut extra = Map::new();
            if op.extension {
                extra.insert("x-extension".into(), json!(true));
            }
            ToolCapability {
                name,
                operation: op.name.into(),
                description,
                tier: tier_name(op.tier).into(),
                method: op.method.as_str().into(),
                path: op.path.into(),
                input_schema: input_schema(op),
                requires_confirmation: mutate,
                extra,
            }
        })
        .collect();
    Capabilities {
        tools,
        tiers,
        extra: Default::default(),
    }
}

fn schema_of<T: JsonSchema>() -> Value {
    SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// Descriptions of the seed's trade-signal fields (the wire type carries no doc comments for them).
const SIGNAL_FIELDS: &[(&str, &str)] = &[
    (
        "id",
        "Account identifier (messengerId from whoami); optional, must be this key's account",
    ),
    ("strategy", "Strategy label, e.g. Agent"),
    ("a", "Asset: BTCUSDT, BTC-USD or BTC"),
    ("d", "Direction: long (buy), short (sell) or close"),
    (
        "p",
        "Price as numeric text: the reference price of a market order, the limit price when o is limit",
    ),
    (
        "tp",
        "Take-profit price (numeric text): above the price for a long, below for a short",
    ),
    (
        "sl",
        "Stop-loss price (numeric text): below the price for a long, above for a short",
    ),
    ("o", "Order type: market (default) or limit"),
    (
        "fanout",
        "false skips subscriber fan-out (the account's own execution always runs)",
    ),
    (
        "action",
        "Stage a close instead of a trade: close (with a) or close_all",
    ),
];

/// Fields of the trade signal that accept a JSON number or numeric text.
const NUMERIC_TEXT: &[&str] = &["p", "tp", "sl", "size", "sizeUsd"];

fn trade_signal_schema(op: &Operation) -> Value {
    let mut schema = schema_of::<TradeSignal>();
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        if op.name != "place_order" {
            props.remove("fanout");
        }
        for (name, description) in SIGNAL_FIELDS {
            if let Some(p) = props.get_mut(*name).and_then(Value::as_object_mut) {
                p.insert("description".into(), json!(description));
            }
        }
        for name in NUMERIC_TEXT {
            if let Some(p) = props.get_mut(*name).and_then(Value::as_object_mut) {
                p.insert("type".into(), json!(["string", "number", "null"]));
                p.remove("format");
            }
        }
    }
    schema
}

/// JSON Schema of a POST operation's body, from the type its handler parses.
fn body_schema(op: &Operation) -> Value {
    match op.name {
        "propose_trade" | "place_order" => trade_signal_schema(op),
        "confirm_trade" => schema_of::<ConfirmRequest>(),
        "close_position" => schema_of::<CloseRequest>(),
        "platform_place_order" => schema_of::<PlatformOrder>(),
        "platform_close_position" => schema_of::<PlatformClose>(),
        "platform_cancel_order" => schema_of::<CancelRequest>(),
        "approve_builder_fee" => schema_of::<BuilderFeeApproval>(),
        "run_backtest" => schema_of::<BacktestRequest>(),
        "create_signal_destination" => schema_of::<SignalDestinationRequest>(),
        "research_start" => schema_of::<ResearchStartRequest>(),
        "research_message" => schema_of::<ResearchMessageRequest>(),
        "mcp_cli" => schema_of::<CliRequest>(),
        // research_stop: the run is in the path.
        _ => json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": op.name,
            "description": format!("{} takes no body", op.name),
            "type": "object",
        }),
    }
}

/// A query parameter's default, as a JSON value of its type.
fn typed_default(kind: &str, text: &str) -> Value {
    match kind {
        "integer" => text.parse::<i64>().map(Value::from).unwrap_or(json!(text)),
        "number" => text.parse::<f64>().map(Value::from).unwrap_or(json!(text)),
        "boolean" => text.parse::<bool>().map(Value::from).unwrap_or(json!(text)),
        _ => json!(text),
    }
}

/// The JSON Schema of a tool's `args`: a POST's body type, or a GET's query parameters; path
/// parameters (`jobId`, `runId`) are required strings; mutate tools also take `confirmToken`.
pub fn input_schema(op: &Operation) -> Value {
    let mut schema = match op.method {
        Method::Post => body_schema(op),
        Method::Get => {
            let props: Map<String, Value> = op
                .query
                .iter()
                .map(|q| {
                    let mut p = json!({"type": q.kind, "description": q.description});
                    if let Some(d) = q.default {
                        p["default"] = typed_default(q.kind, d);
                    }
                    if !q.allowed.is_empty() {
                        p["enum"] = json!(q.allowed);
                    }
                    (q.name.to_string(), p)
                })
                .collect();
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": op.name,
                "type": "object",
                "properties": props,
                "additionalProperties": false,
            })
        }
    };
    let obj = schema.as_object_mut().expect("schemas are objects");
    let path_params = op.path_params();
    if !path_params.is_empty() {
        let props = obj
            .entry("properties")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("properties is an object");
        for p in &path_params {
            props.insert(
                p.to_string(),
                json!({"type": "string", "description": format!("Path parameter {{{p}}}")}),
            );
        }
        let required = obj
            .entry("required")
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .expect("required is an array");
        for p in path_params {
            required.push(json!(p));
        }
    }
    if op.tier == Tier::Mutate {
        let props = obj
            .entry("properties")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("properties is an object");
        props.insert(
            CONFIRM_TOKEN_ARG.into(),
            json!({
                "type": "string",
                "description": "Leave out on the first call, which answers a confirmToken and a preview; \
                                re-submit the same args plus this token within 5 minutes to run the tool once",
            }),
        );
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::catalog;

    #[test]
    fn tools_cover_the_catalog_but_the_tool_mechanism() {
        let caps = capabilities();
        let names: Vec<&str> = caps.tools.iter().map(|t| t.name.as_str()).collect();
        for op in OPERATIONS {
            let listed = names.contains(&op.tool_name().as_str());
            assert_eq!(listed, is_tool(op), "{}", op.name);
        }
        assert!(names.contains(&"service_list_proposals"));
        assert!(!names.contains(&"service_execute_mcp_tool"));
        assert!(!names.contains(&"service_get_usage_v1"));
        let in_tiers: usize = caps
            .tiers
            .values()
            .map(|v| v.as_array().map_or(0, Vec::len))
            .sum();
        assert_eq!(in_tiers, caps.tools.len());
    }

    #[test]
    fn post_tools_have_their_body_types_schema() {
        for op in OPERATIONS
            .iter()
            .filter(|o| is_tool(o) && o.method == Method::Post)
        {
            let schema = input_schema(op);
            assert!(
                schema["properties"].is_object(),
                "{} has no typed schema: {schema}",
                op.name
            );
        }
        let propose = input_schema(catalog::op("propose_trade"));
        for field in ["a", "d", "tp", "sl", "confirmToken"] {
            assert!(propose["properties"][field].is_object(), "{field}");
        }
        assert!(propose["properties"].get("fanout").is_none());
        assert_eq!(
            propose["properties"]["p"]["type"],
            json!(["string", "number", "null"])
        );
        let backtest = input_schema(catalog::op("run_backtest"));
        let required: Vec<&str> = backtest["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for f in ["strategyId", "pair", "timeframe", "days"] {
            assert!(required.contains(&f), "{f} in {required:?}");
        }
        let job = input_schema(catalog::op("get_backtest_job"));
        assert_eq!(job["required"], json!(["jobId"]));
        let logs = input_schema(catalog::op("list_audit_logs"));
        assert_eq!(logs["properties"]["limit"]["default"], json!(50));
        let cancel = input_schema(catalog::op("platform_cancel_order"));
        assert!(
            !cancel.to_string().contains("$ref"),
            "subschemas are inlined: {cancel}"
        );
    }
}
