//! The OpenAPI document declares the statuses the sandbox answers with: each case here is run
//! against every catalog operation, and the status it got must be declared for that operation.

use crate::common::{self, TestServer};
use agentdesk::api::Scope;
use agentdesk::api::catalog::{self, Method, Operation, ScopeRule};
use serde_json::Value;

async fn call(server: &TestServer, op: &Operation, key: Option<Scope>, query: &str) -> u16 {
    let args: Vec<&str> = op.path_params().iter().map(|_| "x").collect();
    let url = server.url(&format!("{}{query}", op.path_with(&args)));
    let mut req = match op.method {
        Method::Get => server.http().get(url),
        Method::Post => server.http().post(url).body("{}"),
    };
    if let Some(scope) = key {
        req = req.header("x-api-key", server.key(scope).expose());
    }
    req.send().await.unwrap().status().as_u16()
}

fn declared(doc: &Value, op: &Operation) -> Vec<String> {
    let method = match op.method {
        Method::Get => "get",
        Method::Post => "post",
    };
    doc["paths"][op.path][method]["responses"]
        .as_object()
        .unwrap_or_else(|| panic!("{} is not in the document", op.name))
        .keys()
        .cloned()
        .collect()
}

#[tokio::test]
async fn every_status_of_the_error_cases_is_declared() {
    let server = common::start().await;
    let doc: Value = server
        .http()
        .get(server.url(catalog::op("get_openapi").path))
        .header("x-api-key", server.key(Scope::Legacy).expose())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for op in catalog::OPERATIONS {
        let statuses = declared(&doc, op);
        let has = |s: u16| statuses.iter().any(|d| d == &s.to_string());
        // No credential: 401, or 402 where a payment may stand in for the key.
        let status = call(&server, op, None, "").await;
        assert!(status == 401 || status == 402, "{}: {status}", op.name);
        assert!(
            has(status),
            "{} answers {status} without a key: {statuses:?}",
            op.name
        );
        if status == 401 {
            assert!(!has(402), "{} is declared payable but is not", op.name);
        }
        // A key whose scope the operation refuses.
        if op.scope != ScopeRule::AnyKey {
            let status = call(&server, op, Some(Scope::McpMutate), "").await;
            assert_eq!(status, 403, "{}", op.name);
            assert!(has(403), "{} answers 403: {statuses:?}", op.name);
        }
        // An empty query value.
        if let Some(param) = op.query.first() {
            let status = call(
                &server,
                op,
                Some(Scope::Legacy),
                &format!("?{}=", param.name),
            )
            .await;
            assert_eq!(status, 400, "{}", op.name);
            assert!(has(400), "{} answers 400: {statuses:?}", op.name);
        }
    }
    let orders = declared(&doc, catalog::op("platform_place_order"));
    assert!(!orders.iter().any(|s| s == "402"), "{orders:?}");
}
