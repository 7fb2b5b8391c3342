//! Who is calling: the `x-api-key` header, looked up by its hash, or an x402 `PAYMENT-SIGNATURE`
//! on the operations that accept one.

use super::{AppError, Caller};
use crate::api::catalog::{Operation, Scope};
use crate::sandbox::core::Core;
use crate::sandbox::keys::hash_key;
use crate::sandbox::payments;
use crate::sandbox::store::Store;
use axum::http::HeaderMap;
use chrono::{DateTime, Utc};

/// Authenticates a request: `x-api-key`, or — on the operations that accept it, and only when no
/// key is sent — an x402 `PAYMENT-SIGNATURE` (see [`payments`]). Returns the caller and, for a paid
/// call, the `PAYMENT-RESPONSE` header value. With no credential, a payment-accepting operation
/// answers 402 (the pipeline adds `PAYMENT-REQUIRED`); every other one 401.
pub fn authenticate(
    core: &mut Core,
    headers: &HeaderMap,
    op: &Operation,
    now: DateTime<Utc>,
) -> Result<(Caller, Option<String>), AppError> {
    let key = api_key(headers);
    let Some(key) = key else {
        let paid = headers
            .get("payment-signature")
            .map(|v| v.to_str().unwrap_or(""));
        if payments::accepts_payment(op) {
            return match paid {
                Some(header) => {
                    let (caller, response) = payments::authenticate(core, header, op, now)?;
                    Ok((caller, Some(response)))
                }
                None => Err(payments::missing()),
            };
        }
        let hint = if paid.is_some() {
            "a PAYMENT-SIGNATURE is accepted only by research runs and usage; send an x-api-key header"
        } else {
            "send your API key in the x-api-key header"
        };
        return Err(AppError::unauthorized(format!("missing API key: {hint}")));
    };
    Ok((by_key(&core.store, key)?, None))
}

/// The `x-api-key` header's key, if one was sent.
pub fn api_key(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|k| !k.is_empty())
}

/// The caller of an API key, or 401.
pub fn by_key(store: &Store, key: &str) -> Result<Caller, AppError> {
    let row = store
        .key_with_account(&hash_key(key))?
        .ok_or_else(|| AppError::unauthorized("the API key is not valid, or it was revoked"))?;
    let (account_id, messenger_id, wallet) = row
        .account
        .ok_or_else(|| AppError::unauthorized("the API key's account no longer exists"))?;
    Ok(Caller {
        key_id: row.key_id,
        account_id,
        messenger_id,
        wallet,
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
