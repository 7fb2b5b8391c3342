//! Who is calling: the `x-api-key` header, looked up by its hash.

use super::AppError;
use crate::api::catalog::{Auth, Operation, Scope};
use crate::sandbox::core::Core;
use crate::sandbox::keys::hash_key;
use axum::http::HeaderMap;

#[derive(Debug, Clone)]
pub struct Caller {
    pub key_id: i64,
    pub account_id: i64,
    pub messenger_id: String,
    pub wallet: String,
    pub scope: Scope,
}

pub fn authenticate(core: &Core, headers: &HeaderMap, op: &Operation) -> Result<Caller, AppError> {
    let key = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|k| !k.is_empty());
    let Some(key) = key else {
        let hint = if op.auth == Auth::ApiKeyOrPayment && headers.contains_key("payment-signature")
        {
            "this sandbox does not accept PAYMENT-SIGNATURE yet; send an x-api-key header"
        } else {
            "send your API key in the x-api-key header"
        };
        return Err(AppError::unauthorized(format!("missing API key: {hint}")));
    };
    let row = core
        .store
        .key_by_hash(&hash_key(key))?
        .ok_or_else(|| AppError::unauthorized("the API key is not valid, or it was revoked"))?;
    let account = core
        .store
        .account(row.account_id)?
        .ok_or_else(|| AppError::unauthorized("the API key's account no longer exists"))?;
    Ok(Caller {
        key_id: row.id,
        account_id: account.id,
        messenger_id: account.messenger_id,
        wallet: account.wallet,
        scope: row.scope,
    })
}

/// The seed's scope table: 403 `insufficient_scope` when the key may not call this operation.
pub fn check_scope(op: &Operation, caller: &Caller) -> Result<(), AppError> {
    if op.scope.allows(caller.scope) {
        return Ok(());
    }
    let advice = match caller.scope {
        Scope::McpMutate => {
            "; an mcp:mutate key must stage trades and closes with propose, then confirm"
        }
        Scope::PlatformTrade => "; a platform:trade key places orders with POST /api/v1/orders",
        Scope::WebhookAlerts => "; a webhook:alerts key trades with POST /api/v1/trades",
        Scope::Legacy => "",
    };
    Err(AppError::forbidden(
        "insufficient_scope",
        format!(
            "{} needs {}; this key's scope is {}{advice}",
            op.name,
            op.scope.describe(),
            caller.scope
        ),
    ))
}
