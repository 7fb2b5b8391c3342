//! The client against a small loopback server that misbehaves on purpose: retries reuse the
//! Idempotency-Key, and `success: false` on HTTP 200 is an error.

use agentdesk::api::model::PlatformOrder;
use agentdesk::api::{ApiError, Client};
use agentdesk::secret::Secret;
use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use serde_json::json;
use std::sync::{Arc, Mutex};

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{addr}")
}

#[tokio::test]
async fn a_retried_platform_order_keeps_its_idempotency_key() {
    let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let log = seen.clone();
    let router = Router::new().route(
        "/api/v1/orders",
        post(move |headers: HeaderMap| {
            let log = log.clone();
            async move {
                let h = |n: &str| {
                    headers
                        .get(n)
                        .map(|v| v.to_str().unwrap().to_string())
                        .unwrap_or_default()
                };
                let mut log = log.lock().unwrap();
                log.push((h("idempotency-key"), h("x-requested-with")));
                if log.len() == 1 {
                    (StatusCode::SERVICE_UNAVAILABLE, axum::Json(json!({})))
                } else {
                    (
                        StatusCode::OK,
                        axum::Json(json!({"success": true, "status": "filled", "future": 1})),
                    )
                }
            }
        }),
    );
    let base = serve(router).await;
    let client = Client::new(&base, Some(Secret::new("k"))).unwrap();
    let order = PlatformOrder {
        pair: "BTC-USD".into(),
        side: "long".into(),
        ..Default::default()
    };
    let done = client.platform_place_order(&order, None).await.unwrap();
    assert_eq!(done.status, "filled");
    assert_eq!(done.extra["future"], 1, "unknown fields are kept");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert!(seen[0].0.starts_with("idem_"));
    assert_eq!(seen[0].0, seen[1].0, "the retry carries the same key");
    assert_eq!(seen[0].1, "XMLHttpRequest");
}

#[tokio::test]
async fn non_idempotent_posts_are_not_retried_and_success_false_is_an_error() {
    let calls: Arc<Mutex<u32>> = Arc::default();
    let count = calls.clone();
    let router = Router::new()
        .route(
            "/api/delegated/confirm",
            post(move || {
                let count = count.clone();
                async move {
                    *count.lock().unwrap() += 1;
                    (StatusCode::BAD_GATEWAY, "upstream down")
                }
            }),
        )
        .route(
            "/api/delegated/positions",
            get(|| async {
                axum::Json(json!({"success": false, "result": {"error": "venue offline"}}))
            }),
        )
        .route(
            "/api/delegated/pnl/summary",
            get(|| async {
                axum::Json(
                    json!({"success": true, "totalPortfolioValue": "123.5", "pnl": {"today": 1}}),
                )
            }),
        );
    let base = serve(router).await;
    let client = Client::new(&base, Some(Secret::new("k"))).unwrap();
    let err = client.confirm_trade("prop_x").await.unwrap_err();
    assert!(
        matches!(err, ApiError::Server { status: 502, .. }),
        "{err:?}"
    );
    assert_eq!(
        *calls.lock().unwrap(),
        1,
        "a confirm is never sent twice by the client"
    );
    let err = client.get_positions().await.unwrap_err();
    assert_eq!(err.to_string(), "venue offline");
    let pnl = client.pnl_summary().await.unwrap();
    assert_eq!(pnl.total_portfolio_value, 123.5);
}

#[tokio::test]
async fn an_unreachable_service_is_a_transport_error() {
    // Held, not listening: a freed port could be given to a server another test starts.
    let (_held, port) = crate::common::refused_port();
    let client = Client::new(&format!("http://127.0.0.1:{port}"), None).unwrap();
    let err = client.whoami(false).await.unwrap_err();
    assert!(matches!(err, ApiError::Transport(_)), "{err:?}");
    assert!(Client::new("ftp://x", None).is_err());
}
