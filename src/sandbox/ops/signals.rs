//! Signal destinations: register (with the SSRF guard), list, and the delivery log (extension).

use super::{AppError, Call, ErrorKind, Reply};
use crate::api::model::{
    SignalDeliveries, SignalDestination, SignalDestinationRequest, SignalDestinations,
};
use crate::api::webhook_sig;
use crate::sandbox::core::{Shared, View};
use crate::sandbox::engine::strategies;
use crate::sandbox::signals::{self, DIRECTIONS, MAX_NAME_CHARS};
use crate::sandbox::store::signals::{self as db, Destination};
use crate::secret::Secret;
use serde_json::json;
use std::sync::Arc;

/// Longest URL accepted.
const MAX_URL_CHARS: usize = 2_048;
const MAX_DELIVERIES: usize = 500;

fn wire(core: &View, d: &Destination) -> Result<SignalDestination, AppError> {
    Ok(SignalDestination {
        id: d.id.clone(),
        name: d.name.clone(),
        url: d.url.clone(),
        strategy_ids: d.strategy_ids.clone(),
        directions: d.directions.clone(),
        created_at: Some(d.created_at),
        deliveries: Some(db::delivery_stats(&core.store.conn, &d.id)?),
        signing_secret: None,
        extra: Default::default(),
    })
}

/// `GET /api/v1/signal-destinations`: the account's destinations; never their secrets.
pub fn list_signal_destinations(core: &View, call: &Call) -> Result<Reply, AppError> {
    let list = db::destinations(&core.store.conn, Some(call.caller.account_id))?;
    let destinations = list
        .iter()
        .map(|d| wire(core, d))
        .collect::<Result<Vec<_>, _>>()?;
    Reply::ok(SignalDestinations {
        destinations,
        extra: Default::default(),
    })
}

/// Checks every field but the URL's host; returns the cleaned request.
fn validate(req: SignalDestinationRequest) -> Result<SignalDestinationRequest, AppError> {
    let url = req.url.trim().to_string();
    if url.is_empty() {
        return Err(AppError::invalid(
            "url",
            "url is required, e.g. https://example.com/hook",
        ));
    }
    if url.chars().count() > MAX_URL_CHARS {
        return Err(AppError::invalid(
            "url",
            format!("url must be at most {MAX_URL_CHARS} characters"),
        ));
    }
    let name = req.name.trim().to_string();
    if name.is_empty() {
        return Err(AppError::invalid(
            "name",
            "name is required: a label for this destination",
        ));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(AppError::invalid(
            "name",
            format!("name must be at most {MAX_NAME_CHARS} characters"),
        ));
    }
    if req.strategy_ids.is_empty() {
        return Err(AppError::invalid(
            "strategyIds",
            "strategyIds must list strategy ids, or be exactly [\"*\"] for all",
        ));
    }
    if req.strategy_ids.iter().any(|s| s == "*") && req.strategy_ids.len() != 1 {
        return Err(AppError::invalid(
            "strategyIds",
            "strategyIds: \"*\" means every strategy and must be the only entry",
        ));
    }
    let mut strategy_ids: Vec<String> = Vec::new();
    for (i, id) in req.strategy_ids.iter().enumerate() {
        if id != "*" && strategies::strategy(id).is_none() {
            let known: Vec<&str> = strategies::STRATEGIES.iter().map(|s| s.id).collect();
            return Err(AppError::invalid(
                format!("strategyIds[{i}]"),
                format!(
                    "strategyIds[{i}]: unknown strategy {id:?}; discover_strategies lists them ({})",
                    known.join(", ")
                ),
            ));
        }
        if !strategy_ids.contains(id) {
            strategy_ids.push(id.clone());
        }
    }
    if req.directions.is_empty() {
        return Err(AppError::invalid(
            "directions",
            "directions must list one or more of BUY, SELL, CLOSE",
        ));
    }
    let mut directions: Vec<String> = Vec::new();
    for (i, d) in req.directions.iter().enumerate() {
        let upper = d.trim().to_ascii_uppercase();
        if !DIRECTIONS.contains(&upper.as_str()) {
            return Err(AppError::invalid(
                format!("directions[{i}]"),
                format!("directions[{i}]: {d:?} is not one of BUY, SELL, CLOSE"),
            ));
        }
        if !directions.contains(&upper) {
            directions.push(upper);
        }
    }
    Ok(SignalDestinationRequest {
        url,
        strategy_ids,
        directions,
        name,
    })
}

/// `POST /api/v1/signal-destinations`: validates, resolves and checks the host (outside the core
/// lock), then stores the destination with a new signing secret, which this answer alone shows.
pub async fn create_signal_destination(shared: Arc<Shared>, call: Call) -> Result<Reply, AppError> {
    let req = validate(call.json::<SignalDestinationRequest>()?)?;
    let target = signals::check_url(&req.url, &shared.settings.webhook_allow_hosts).await?;
    let account_id = call.caller.account_id;
    let limit = shared.settings.max_signal_destinations;
    shared
        .run_raw(move |core, now| {
            if db::count_destinations(&core.store.conn, account_id)? >= limit {
                return Err(AppError::new(
                    ErrorKind::Conflict,
                    "destination_limit",
                    format!("this account already has {limit} signal destinations, the most it may register"),
                ));
            }
            let secret = webhook_sig::new_secret();
            let d = Destination {
                id: signals::new_destination_id(),
                account_id,
                name: req.name,
                url: target.url.to_string(),
                strategy_ids: req.strategy_ids,
                directions: req.directions,
                created_at: now,
            };
            db::insert_destination(&core.store.conn, &d, &secret)?;
            // A permit if the loop is not waiting yet: it finds this one when it does.
            core.destination_added.notify_one();
            let mut body = wire(&core.view(), &d)?;
            body.signing_secret = Some(Secret::new(secret));
            body.extra.insert("json_summary".into(), json!(format!(
                "Signals for {} ({}) go to {}; store the signingSecret now, it is not shown again.",
                d.strategy_ids.join(", "),
                d.directions.join("/"),
                d.url
            )));
            Reply::ok(body)
        })
        .await
        .map_err(AppError::internal)?
}

/// `GET /api/v1/signal-destinations/{destinationId}/deliveries` (extension): the delivery log,
/// newest first. Another account's destination is 404, as if it did not exist.
pub fn list_signal_deliveries(core: &View, call: &Call) -> Result<Reply, AppError> {
    let id = call.path.first().cloned().unwrap_or_default();
    let limit = match call.query("limit") {
        None | Some("") => 50,
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=MAX_DELIVERIES).contains(&n) => n,
            _ => {
                return Err(AppError::invalid_query(
                    "limit",
                    format!("limit must be an integer from 1 to {MAX_DELIVERIES}, got {v:?}"),
                ));
            }
        },
    };
    match db::destination(&core.store.conn, &id)? {
        Some(d) if d.account_id == call.caller.account_id => {}
        _ => {
            return Err(AppError::not_found(format!(
                "no signal destination {id:?} on this account"
            )));
        }
    }
    let deliveries = db::deliveries(&core.store.conn, &id, limit)?;
    Reply::ok(SignalDeliveries {
        destination_id: id,
        deliveries,
        extra: Default::default(),
    })
}
