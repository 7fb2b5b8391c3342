//! The supervisor API's request bodies, read strictly as agents' bodies are (`request.rs`): JSON
//! with no duplicate keys, an object, no field the body does not take (400 naming it), each field
//! of its type and range. Pure functions of the bytes, so a fuzz target reads them as the handlers
//! do (`fuzz/fuzz_targets/supervisor_body.rs`).

use super::super::model::error::{GateError, Kind};
use super::super::model::request;
use super::super::rules::policy;
use serde_json::{Map, Value};

/// `POST /gate/v1/inbox/{id}/approve`: the rules an approval overrides (none: a plain one).
#[derive(Debug, Clone, PartialEq)]
pub struct Approve {
    pub overrides: Vec<String>,
}

/// `POST /gate/v1/kill-switch`.
#[derive(Debug, Clone, PartialEq)]
pub struct Kill {
    pub on: bool,
    pub reason: String,
}

/// `POST /gate/v1/standing-approvals`.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    pub agent: String,
    pub coins: Vec<String>,
    pub max_notional_usd: f64,
    pub minutes: u64,
    pub reason: String,
}

fn invalid(field: &str, message: impl Into<String>) -> GateError {
    GateError::new(Kind::Invalid, "invalid_body", message.into()).with_field(field)
}

/// A body that may be empty (then `{}`), else one JSON object with only the fields in `takes`.
fn object(body: &[u8], example: &str, takes: &[&str]) -> Result<Map<String, Value>, GateError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    let value = request::strict_json(body).map_err(|e| match e {
        request::ReadError::Invalid { field, message } => invalid(
            &field,
            format!("the body must be a JSON object like {example} ({message})"),
        ),
        other => super::error::read_error(other),
    })?;
    let Value::Object(map) = value else {
        return Err(invalid(
            "body",
            format!("the body must be a JSON object like {example}"),
        ));
    };
    if let Some(unknown) = map.keys().find(|k| !takes.contains(&k.as_str())) {
        return Err(invalid(
            unknown,
            format!(
                "{unknown:?} is not a field of this body; it takes {} (like {example})",
                takes.join(", ")
            ),
        ));
    }
    Ok(map)
}

/// An optional trimmed string field; empty is absent.
fn text(map: &Map<String, Value>, field: &str) -> Result<Option<String>, GateError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_string()).filter(|s| !s.is_empty())),
        Some(_) => Err(invalid(field, format!("{field} must be a string"))),
    }
}

/// An optional list of strings.
fn strings(map: &Map<String, Value>, field: &str, what: &str) -> Result<Vec<String>, GateError> {
    let bad = || invalid(field, format!("{field} must be a list of {what}"));
    match map.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|r| r.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(bad),
        Some(_) => Err(bad()),
    }
}

pub fn approve(body: &[u8]) -> Result<Approve, GateError> {
    let map = object(body, r#"{"override": ["max_notional_usd"]}"#, &["override"])?;
    Ok(Approve {
        overrides: strings(&map, "override", "rule names")?,
    })
}

/// `POST /gate/v1/inbox/{id}/reject`: the reason the agent is told (None: the default).
pub fn reject(body: &[u8]) -> Result<Option<String>, GateError> {
    let map = object(body, r#"{"reason": "..."}"#, &["reason"])?;
    text(&map, "reason")
}

pub fn kill(body: &[u8]) -> Result<Kill, GateError> {
    let map = object(body, r#"{"on": true, "reason": "..."}"#, &["on", "reason"])?;
    let on = map
        .get("on")
        .and_then(Value::as_bool)
        .ok_or_else(|| invalid("on", "on must be true or false"))?;
    let reason = text(&map, "reason")?.unwrap_or_default();
    if on && reason.is_empty() {
        return Err(invalid(
            "reason",
            "say why the kill switch goes on: agents are told the reason",
        ));
    }
    Ok(Kill { on, reason })
}

pub fn standing(body: &[u8]) -> Result<Standing, GateError> {
    let map = object(
        body,
        r#"{"agent": "*", "coins": ["BTC"], "maxNotionalUsd": 500, "minutes": 60, "reason": "..."}"#,
        &["agent", "coins", "maxNotionalUsd", "minutes", "reason"],
    )?;
    let agent = text(&map, "agent")?.ok_or_else(|| {
        invalid(
            "agent",
            "agent must be an agent's label (name or fingerprint) or \"*\"",
        )
    })?;
    let coins = strings(&map, "coins", "coin names")?
        .iter()
        .map(|c| crate::api::symbol::coin_of(c))
        .collect();
    let max_notional_usd = map
        .get("maxNotionalUsd")
        .and_then(Value::as_f64)
        .filter(|x| *x > 0.0 && x.is_finite())
        .ok_or_else(|| invalid("maxNotionalUsd", "maxNotionalUsd must be a positive number"))?;
    let minutes = map
        .get("minutes")
        .and_then(Value::as_u64)
        .filter(|m| (1..=7 * 24 * 60).contains(m))
        .ok_or_else(|| {
            invalid(
                "minutes",
                "minutes must be a whole number from 1 to 10080 (a week)",
            )
        })?;
    let reason = text(&map, "reason")?.ok_or_else(|| {
        invalid(
            "reason",
            "reason must say why trades of this kind need no click",
        )
    })?;
    Ok(Standing {
        agent,
        coins,
        max_notional_usd,
        minutes,
        reason,
    })
}

/// `PUT /gate/v1/policy`: the policy whole, every key checked (`Policy::from_json`; 400
/// `invalid_policy` naming the key).
pub fn policy(body: &[u8]) -> Result<policy::Policy, GateError> {
    let example = r#"{"max_notional_usd": 1000, "agents": {"bot": {"max_leverage": 3}}}"#;
    let map = if body.iter().all(u8::is_ascii_whitespace) {
        Map::new()
    } else {
        match request::strict_json(body) {
            Ok(Value::Object(map)) => map,
            Ok(_) => {
                return Err(invalid(
                    "body",
                    format!("the body must be a JSON object like {example}"),
                ));
            }
            Err(request::ReadError::Invalid { field, message }) => {
                return Err(invalid(
                    &field,
                    format!("the body must be a JSON object like {example} ({message})"),
                ));
            }
            Err(other) => return Err(super::error::read_error(other)),
        }
    };
    policy::Policy::from_json(&Value::Object(map))
        .map_err(|e| GateError::new(Kind::Invalid, "invalid_policy", e.message).with_field(e.key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_the_body_does_not_take_or_twice_is_refused_naming_it() {
        let e = approve(br#"{"override": [], "overide": ["x"]}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("overide"), "{e:?}");
        let e = reject(br#"{"reason": "a", "reason": "b"}"#).unwrap_err();
        assert_eq!(e.code, "invalid_body", "{e:?}");
        let e = kill(br#"{"on": true}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("reason"));
        assert_eq!(approve(b"  ").unwrap().overrides, Vec::<String>::new());
        assert_eq!(
            reject(br#"{"reason": " too big "}"#).unwrap().as_deref(),
            Some("too big")
        );
        let s = standing(
            br#"{"agent": "*", "coins": ["btc"], "maxNotionalUsd": 500, "minutes": 60, "reason": "r"}"#,
        )
        .unwrap();
        assert_eq!((s.coins, s.minutes), (vec!["BTC".to_string()], 60));
        let e =
            standing(br#"{"agent": "*", "maxNotionalUsd": 1e400, "minutes": 60, "reason": "r"}"#)
                .unwrap_err();
        assert_eq!(e.code, "invalid_body");
    }
}
