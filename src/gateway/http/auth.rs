//! Who a supervisor request is: its token (and the role it holds), and the supervisor a console's
//! staging says it comes from. Every refusal here is journaled or names the header at fault.

use super::super::gate::{Gate, sha256_hex};
use super::super::model::error::{GateError, Kind};
use super::super::store::{Record, Role, Token, detail};
use axum::http::HeaderMap;
use serde_json::Value;

/// The token's row when `x-api-key` holds a supervisor token of this gateway.
pub async fn supervisor(gate: &Gate, headers: &HeaderMap) -> Result<Token, GateError> {
    let unauthorized =
        |message: &str| GateError::new(Kind::Unauthorized, "unauthorized", message.to_string());
    let token = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            unauthorized("send a supervisor token (agentdesk gate token) in the x-api-key header")
        })?;
    gate.store
        .token(&sha256_hex(token))
        .await
        .map_err(GateError::store)?
        .ok_or_else(|| unauthorized("x-api-key is not a supervisor token of this gateway"))
}

/// The header a console sends its own stagings with: its supervisor token, so the gateway knows
/// who staged the item (and never counts that supervisor towards its step-up quorum).
pub const STAGED_BY: &str = crate::api::client::SUPERVISOR_HEADER;

/// The supervisor a staging says it comes from: none without the header, its label when the
/// token is one of this gateway's, refused otherwise (a name nobody can prove is not recorded).
pub async fn staged_by(gate: &Gate, headers: &HeaderMap) -> Result<Option<String>, GateError> {
    let Some(v) = headers.get(STAGED_BY) else {
        return Ok(None);
    };
    let unauthorized = || {
        GateError::new(
            Kind::Unauthorized,
            "unauthorized",
            format!("{STAGED_BY} is not a supervisor token of this gateway"),
        )
    };
    let token = v.to_str().map(str::trim).map_err(|_| unauthorized())?;
    let row = gate
        .store
        .token(&sha256_hex(token))
        .await
        .map_err(GateError::store)?
        .ok_or_else(unauthorized)?;
    Ok(Some(who(&row)))
}

/// The token's row when it may do what needs `needed`; otherwise 403 `insufficient_role` naming
/// the role needed, journaled (a refused attempt is part of the record).
pub async fn supervisor_as(
    gate: &Gate,
    headers: &HeaderMap,
    needed: Role,
    what: &str,
) -> Result<Token, GateError> {
    let token = supervisor(gate, headers).await?;
    if token.role >= needed {
        return Ok(token);
    }
    Err(insufficient(gate, &token, needed, what).await)
}

/// 403 `insufficient_role` naming the role needed, journaled (a refused attempt is part of the
/// record).
pub(super) async fn insufficient(
    gate: &Gate,
    token: &Token,
    needed: Role,
    what: &str,
) -> GateError {
    let message = format!(
        "{what} needs the {} role; this token ({}) is {} {}",
        needed.as_str(),
        who(token),
        match token.role {
            Role::Viewer => "a",
            _ => "an",
        },
        token.role.as_str()
    );
    let record = Record::new(
        "insufficient_role",
        &who(token),
        gate.now(),
        detail::InsufficientRole {
            needed: needed.as_str(),
            role: token.role.as_str(),
            what,
        },
    );
    if let Err(err) = gate.store.append(record).await {
        return GateError::store(err);
    }
    let mut e = GateError::new(Kind::Forbidden, "insufficient_role", message);
    e.extra = Some(Box::new(Value::Object(serde_json::Map::from_iter([(
        "needed".to_string(),
        Value::from(needed.as_str()),
    )]))));
    e
}

pub fn who(token: &Token) -> String {
    if token.label.is_empty() {
        format!("token {}", token.id)
    } else {
        token.label.clone()
    }
}
