//! `POST /gate/v1/inbox/{id}/link`: a supervisor mints a single-use approval link for an item
//! that waits for a human ([`crate::gateway::link`] keeps the rules, [`super::page`] serves it).

use super::super::gate::Gate;
use super::super::link::mint;
use super::super::model::error::GateError;
use super::api;
use super::json_response;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::post;
use chrono::SecondsFormat;
use serde_json::json;
use std::sync::Arc;

pub fn router(gate: Arc<Gate>) -> Router {
    Router::new()
        .route("/gate/v1/inbox/{id}/link", post(mint_handler))
        .with_state(gate)
}

async fn mint_handler(
    State(gate): State<Arc<Gate>>,
    api::Supervisor(token): api::Supervisor,
    Path(id): Path<String>,
) -> Result<Response, GateError> {
    gate.store
        .expire_due(gate.now())
        .await
        .map_err(GateError::store)?;
    let item = super::super::flow::items::find(&gate, &id).await?;
    let url = mint(&gate, &item, &api::who(&token)).await?;
    Ok(json_response(
        StatusCode::OK,
        &json!({
            "success": true,
            "url": url,
            "itemId": item.id,
            "expiresAt": item.expires_at.to_rfc3339_opts(SecondsFormat::Secs, true),
        }),
    ))
}
