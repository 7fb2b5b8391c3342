//! The catalog as an axum router, for the two servers of the interface (the sandbox and the
//! gateway): every operation at its path and method, so neither can drift from the catalog.

use super::catalog::{Method, OPERATIONS, Operation};
use axum::Router;
use axum::extract::Request;
use axum::response::Response;
use axum::routing::{MethodFilter, MethodRouter, on};
use std::collections::BTreeMap;
use std::future::Future;

/// One route per path of the catalog; each method of a path calls `handle` with its operation.
pub fn catalog_router<H, F>(handle: H) -> Router
where
    H: Fn(&'static Operation, Request) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response> + Send + 'static,
{
    let mut by_path: BTreeMap<&'static str, MethodRouter> = BTreeMap::new();
    for op in OPERATIONS {
        let handle = handle.clone();
        let filter = match op.method {
            Method::Get => MethodFilter::GET,
            Method::Post => MethodFilter::POST,
        };
        let handler = move |req: Request| {
            let answer = handle(op, req);
            async move {
                let mut resp = answer.await;
                // The edge labels its metrics with the operation, not the path.
                resp.extensions_mut()
                    .insert(crate::edge::OperationName(op.name));
                resp
            }
        };
        let route = match by_path.remove(op.path) {
            Some(existing) => existing.on(filter, handler),
            None => on(filter, handler),
        };
        by_path.insert(op.path, route);
    }
    by_path
        .into_iter()
        .fold(Router::new(), |router, (path, route)| {
            router.route(path, route)
        })
}
