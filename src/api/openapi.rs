//! The OpenAPI 3.0.3 document, built from the catalog so it cannot drift from what is served.

use super::catalog::{Method, OPERATIONS, Tier};
use serde_json::{Map, Value, json};

pub fn document(server_url: &str) -> Value {
    let mut paths: Map<String, Value> = Map::new();
    for op in OPERATIONS {
        let mut parameters: Vec<Value> = op
            .path_params()
            .into_iter()
            .map(|name| {
                json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}})
            })
            .collect();
        for q in op.query {
            let mut schema = json!({ "type": q.kind });
            if let Some(d) = q.default {
                schema["default"] = typed_default(q.kind, d);
            }
            if !q.allowed.is_empty() {
                schema["enum"] = json!(q.allowed);
            }
            parameters.push(json!({
                "name": q.name, "in": "query", "required": false,
                "description": q.description, "schema": schema,
            }));
        }
        let mut security = vec![json!({"apiKey": []})];
        if op.auth == super::catalog::Auth::ApiKeyOrPayment {
            security.push(json!({"paymentSignature": []}));
        }
        let mut responses = json!({
            "200": {"description": "Success (`success: true`); check `json_summary` when present",
                    "content": {"application/json": {"schema": {"type": "object"}}}},
            "401": {"$ref": "#/components/responses/Unauthorized"},
        });
        if op.quota.post || op.quota.compute {
            responses["429"] = json!({"$ref": "#/components/responses/QuotaExceeded"});
        }
        // Bodies are checked, and so are query values (an empty one is a 400 too).
        // (research_stop, a POST without a body, reads none.)
        let takes_body = op.method == Method::Post && op.example_body.is_some();
        if takes_body || !op.query.is_empty() {
            responses["400"] = json!({"$ref": "#/components/responses/Invalid"});
        }
        if op.auth == super::catalog::Auth::ApiKeyOrPayment {
            responses["402"] = json!({"$ref": "#/components/responses/PaymentRequired"});
        }
        if op.scope != super::catalog::ScopeRule::AnyKey {
            responses["403"] = json!({"$ref": "#/components/responses/Forbidden"});
        }
        if op.method == Method::Post {
            responses["413"] = json!({"$ref": "#/components/responses/PayloadTooLarge"});
        }
        for status in handler_statuses(op.name) {
            let (key, component) = match status {
                403 => ("403", "Forbidden"),
                404 => ("404", "NotFound"),
                409 => ("409", "Conflict"),
                410 => ("410", "Expired"),
                422 => ("422", "IdempotencyKeyReused"),
                _ => ("503", "AuditUnavailable"),
            };
            responses[key] = json!({"$ref": format!("#/components/responses/{component}")});
        }
        let mut entry = json!({
            "operationId": op.name,
            "summary": op.summary,
            "tags": [op.section],
            "parameters": parameters,
            "security": security,
            "responses": responses,
            "x-tier": op.tier,
            "x-scope": op.scope.describe(),
        });
        if op.extension {
            entry["x-extension"] = json!(true);
        }
        if let Some(alias) = op.alias_of {
            entry["x-alias-of"] = json!(alias);
        }
        if op.method == Method::Post {
            let example: Value = op
                .example_body
                .and_then(|b| serde_json::from_str(b).ok())
                .unwrap_or_else(|| json!({}));
            entry["requestBody"] = json!({
                "required": true,
                "content": {"application/json": {"schema": {"type": "object"}, "example": example}},
            });
        }
        let method = match op.method {
            Method::Get => "get",
            Method::Post => "post",
        };
        let item = paths
            .entry(op.path.to_string())
            .or_insert_with(|| json!({}));
        item[method] = entry;
    }
    let error_response = |description: &str| {
        json!({"description": description,
               "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
    };
    let mut quota = error_response("Daily quota exceeded");
    quota["headers"] = json!({"Retry-After": {"description": "Seconds until the quota resets",
                                              "schema": {"type": "integer"}}});
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "Agent Trading and Discovery Service",
            "version": "1.0.0",
            "description": "Headless trading and discovery interface for delegated agents.",
        },
        "servers": [{"url": server_url}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "apiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"},
                "paymentSignature": {"type": "apiKey", "in": "header", "name": "PAYMENT-SIGNATURE"},
            },
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["success", "error"],
                    "properties": {
                        "success": {"type": "boolean", "enum": [false]},
                        "error": {"type": "object", "required": ["code", "message"], "properties": {
                            "code": {"type": "string"}, "message": {"type": "string"},
                            "field": {"type": "string"}}},
                    },
                },
            },
            "responses": {
                "Unauthorized": error_response("Missing or invalid credential"),
                "PaymentRequired": error_response(
                    "No credential, or an x402 payment that was refused; PAYMENT-REQUIRED says what to pay",
                ),
                "Forbidden": error_response("This key's scope may not call the operation"),
                "Invalid": error_response("Invalid body or parameters; `field` names the culprit"),
                "QuotaExceeded": quota,
                "AuditUnavailable": error_response("The audit log store is down"),
                "NotFound": error_response("The path or body names nothing this account has"),
                "Conflict": error_response(
                    "The request conflicts with the current state (already executed, no position, \
                     not enough margin, builder fee not approved, a limit reached, no active run)",
                ),
                "Expired": error_response("The proposal or confirm token has expired"),
                "PayloadTooLarge": error_response("The body is over 64 KiB"),
                "IdempotencyKeyReused": error_response(
                    "The Idempotency-Key was used with a different request",
                ),
            },
        },
        "x-tiers": [Tier::Observe, Tier::Experiment, Tier::Mutate],
    })
}

/// The statuses an operation's handler answers beyond the ones its catalog entry implies (401;
/// 402 when payable; 403 when scope-restricted; 400 for bodies and query values; 413 for bodies;
/// 429 when it counts against a quota). tests/it/documented_errors.rs triggers every one.
/// Transport-level answers that any request may get (408 for a request that arrives too slowly,
/// 500 for a bug) are not listed per operation.
pub fn handler_statuses(name: &str) -> &'static [u16] {
    match name {
        // An `id` that is not the key's account.
        "propose_trade" => &[403],
        // A venue wallet that is not the account's.
        "approve_builder_fee_payload" | "approve_builder_fee" => &[403],
        // A proposal staged by another key, unknown, already decided, or expired.
        "confirm_trade" => &[403, 404, 409, 410],
        "close_position" => &[404, 409],
        // Not enough margin.
        "place_order" => &[409],
        // The builder fee is not approved; an Idempotency-Key reused with another body.
        "platform_place_order" => &[409, 422],
        // Nothing to close; the builder fee is not approved.
        "platform_close_position" => &[409],
        "platform_cancel_order" => &[404, 409],
        "get_backtest_job" | "list_signal_deliveries" => &[404],
        // The account's destination limit.
        "create_signal_destination" => &[409],
        // An unknown tool; a confirm token of another key, used, or expired.
        "execute_mcp_tool" => &[403, 404, 409, 410],
        // `/research stop` with no active run.
        "mcp_cli" => &[409],
        // One active run per account.
        "research_start" => &[409],
        "research_message" | "research_stop" => &[404, 409],
        "list_audit_logs" => &[503],
        _ => &[],
    }
}

fn typed_default(kind: &str, text: &str) -> Value {
    match kind {
        "integer" => text.parse::<i64>().map(Value::from).unwrap_or(json!(text)),
        "number" => text.parse::<f64>().map(Value::from).unwrap_or(json!(text)),
        "boolean" => json!(text == "true"),
        _ => json!(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_appears_once_with_its_name() {
        let doc = document("http://127.0.0.1:8787");
        assert_eq!(doc["openapi"], "3.0.3");
        let mut ids = vec![];
        for item in doc["paths"].as_object().unwrap().values() {
            for op in item.as_object().unwrap().values() {
                ids.push(op["operationId"].as_str().unwrap().to_string());
            }
        }
        assert_eq!(ids.len(), OPERATIONS.len());
        assert!(ids.contains(&"propose_trade".to_string()));
        let combos = &doc["paths"]["/api/delegated/strategies/top-optimized-combos"]["get"];
        let days = combos["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "days")
            .unwrap();
        assert_eq!(days["schema"]["default"], 30);
    }
}
