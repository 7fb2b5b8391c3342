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
        if op.method == Method::Post || !op.query.is_empty() {
            responses["400"] = json!({"$ref": "#/components/responses/Invalid"});
        }
        if op.auth == super::catalog::Auth::ApiKeyOrPayment {
            responses["402"] = json!({"$ref": "#/components/responses/PaymentRequired"});
        }
        if op.scope != super::catalog::ScopeRule::AnyKey {
            responses["403"] = json!({"$ref": "#/components/responses/Forbidden"});
        }
        if op.name == "list_audit_logs" {
            responses["503"] = json!({"$ref": "#/components/responses/AuditUnavailable"});
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
            },
        },
        "x-tiers": [Tier::Observe, Tier::Experiment, Tier::Mutate],
    })
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
