//! The OpenAPI document a gateway serves says what its supervisor API does: every route the router
//! serves is documented with its method and no other method is served there, and each request
//! body's schema is the schema of the type its handler reads, which refuses what the schema does
//! not allow.

use super::{send, setup};
use agentdesk::api::model::{GateStandingRequest, GateSuspendRequest};
use agentdesk::gateway::api::ROUTES;
use agentdesk::gateway::supervisor_bodies::{Approve, Kill, PolicyRequest, Reject};
use reqwest::{Method, StatusCode};
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};
use std::collections::BTreeSet;

#[tokio::test]
async fn the_served_openapi_document_is_the_supervisor_apis_routes_and_types() {
    let s = setup().await;
    let base = s.gate.base_url();
    let (st, doc) = send(&base, Method::GET, "/api/agent/openapi.json", None, None).await;
    assert_eq!(st, StatusCode::OK);

    let documented: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(path, _)| path.starts_with("/gate/"))
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(|m| (m.to_ascii_uppercase(), path.clone()))
        })
        .collect();
    let routed: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|r| (r.method.to_string(), r.path.to_string()))
        .collect();
    assert_eq!(documented, routed);

    // Served with the documented method (the token is asked for first), and with no other.
    let paths: BTreeSet<&String> = documented.iter().map(|(_, p)| p).collect();
    for path in paths {
        let concrete = path.replace("{id}", "1");
        for method in [
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::DELETE,
            Method::PATCH,
        ] {
            let (st, body) = send(&base, method.clone(), &concrete, None, None).await;
            let expected = if documented.contains(&(method.to_string(), path.clone())) {
                StatusCode::UNAUTHORIZED
            } else {
                StatusCode::METHOD_NOT_ALLOWED
            };
            assert_eq!(st, expected, "{method} {path}: {body}");
        }
    }

    let mut reading = SchemaSettings::openapi3().into_generator();
    let bodies = [
        (
            Method::POST,
            "/gate/v1/inbox/{id}/approve",
            reading.subschema_for::<Approve>(),
        ),
        (
            Method::POST,
            "/gate/v1/inbox/{id}/reject",
            reading.subschema_for::<Reject>(),
        ),
        (
            Method::PUT,
            "/gate/v1/policy",
            reading.subschema_for::<PolicyRequest>(),
        ),
        (
            Method::POST,
            "/gate/v1/kill-switch",
            reading.subschema_for::<Kill>(),
        ),
        (
            Method::POST,
            "/gate/v1/standing-approvals",
            reading.subschema_for::<GateStandingRequest>(),
        ),
        (
            Method::POST,
            "/gate/v1/agents/{label}/suspend",
            reading.subschema_for::<GateSuspendRequest>(),
        ),
    ];
    let documented_bodies = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(path, _)| path.starts_with("/gate/"))
        .flat_map(|(_, item)| item.as_object().unwrap().values())
        .filter(|op| op.get("requestBody").is_some())
        .count();
    assert_eq!(documented_bodies, bodies.len());
    for (method, path, schema) in &bodies {
        let op = &doc["paths"][path][method.as_str().to_ascii_lowercase()];
        assert_eq!(
            &op["requestBody"]["content"]["application/json"]["schema"],
            schema.as_value(),
            "{method} {path}"
        );
        // No body takes a field its type does not have: refused, naming it, before anything is
        // looked up.
        let (st, body) = s
            .supervisor(
                method.clone(),
                &path.replace("{id}", "1").replace("{label}", "x"),
                Some(json!({"notAField": 1})),
            )
            .await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{method} {path}: {body}");
        let field = body["error"]["field"].as_str().unwrap_or_default();
        assert!(field.ends_with("notAField"), "{method} {path}: {body}");
    }
    for (name, schema) in reading.take_definitions(true) {
        assert_eq!(doc["components"]["schemas"][&name], schema, "{name}");
    }
    assert_eq!(
        doc["components"]["securitySchemes"]["supervisorToken"]["name"],
        Value::from("x-api-key")
    );
}
