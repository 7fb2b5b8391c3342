//! `POST /gate/v1/inbox/{id}/link`: a supervisor mints a single-use approval link for an item
//! that waits for a human ([`crate::gateway::link`] keeps the rules, [`super::page`] serves it).

use super::super::flow::link::mint;
use super::super::gate::Gate;
use super::super::model::error::GateError;
use super::api::{self, ItemPath};
use crate::api::model::GateLink;
use axum::extract::{Path, State};
use axum::response::Response;
use chrono::SecondsFormat;
use std::sync::Arc;

pub(super) async fn mint_link(
    State(gate): State<Arc<Gate>>,
    api::Supervisor(token): api::Supervisor,
    Path(ItemPath { id }): Path<ItemPath>,
) -> Result<Response, GateError> {
    gate.store
        .expire_due(gate.now())
        .await
        .map_err(GateError::store)?;
    let item = super::super::flow::items::find(&gate, &id).await?;
    let url = mint(&gate, &item, &api::who(&token)).await?;
    Ok(super::success(GateLink {
        url,
        item_id: item.id,
        expires_at: item.expires_at.to_rfc3339_opts(SecondsFormat::Secs, true),
    }))
}
