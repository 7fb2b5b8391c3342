//! What a supervisor sends: the request bodies and queries of the supervisor API, as types. The
//! OpenAPI document's schemas are derived from these types (`openapi.rs`).
//!
//! Bodies are read strictly, as agents' bodies are (`request.rs`): JSON with no duplicate keys, an
//! object, no field the type does not have (400 naming it), each field of its type and range,
//! checked in the order the type declares them so a refusal names the first wrong field. Pure
//! functions of the bytes, so a fuzz target reads them as the handlers do
//! (`fuzz/fuzz_targets/supervisor_body.rs`).

use super::super::flow::changes;
use super::super::model::error::{GateError, Kind};
use super::super::model::request;
use super::super::rules::policy;
use super::super::store::Status;
use crate::api::model::{GateStandingRequest, GateSuspendRequest};
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// A body of the supervisor API: how it is read, and what the document shows of it.
pub trait Body: Sized {
    /// The body on the wire, for the document: `Self` but where the domain reads it itself.
    type Wire: JsonSchema;
    /// What the document shows as an example; the reader accepts it (tested).
    const EXAMPLE: &'static str;
    fn read(body: &[u8]) -> Result<Self, GateError>;
}

/// The request's body read as `T`, after the extractors before it (the supervisor's token is
/// checked before any body is read).
pub struct Strict<T>(pub T);

impl<T: Body, S: Send + Sync> FromRequest<S> for Strict<T> {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Response> {
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(IntoResponse::into_response)?;
        T::read(&bytes)
            .map(Strict)
            .map_err(IntoResponse::into_response)
    }
}

/// A query read as `T`: every value as text, the last of a repeated name, names `T` does not
/// have ignored. Each value is judged where it is used, so a refusal quotes it as sent.
pub struct Params<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Response> {
        let Query(raw) = Query::<HashMap<String, String>>::try_from_uri(&parts.uri)
            .map_err(IntoResponse::into_response)?;
        let text = raw
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        serde_json::from_value(Value::Object(text))
            .map(Params)
            .map_err(|e| {
                GateError::new(Kind::Invalid, "invalid_query", e.to_string()).into_response()
            })
    }
}

/// `POST /gate/v1/inbox/{id}/approve`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Approve {
    /// Rules the item now breaks that the supervisor approves anyway; none: a plain approval.
    #[serde(rename = "override", default)]
    pub overrides: Vec<String>,
}

/// `POST /gate/v1/inbox/{id}/reject`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Reject {
    /// What the agent's confirm is refused with; none: "no reason given".
    #[serde(default)]
    pub reason: Option<String>,
}

/// `POST /gate/v1/kill-switch`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Kill {
    pub on: bool,
    /// Why it goes on, required then: agents are told it.
    #[serde(default)]
    pub reason: String,
}

/// The keys of a policy, for the document: [`policy::Policy::from_json`] reads the body (its
/// refusals name the key), and a test holds these types to the keys it takes.
macro_rules! policy_rules {
    ($(#[$meta:meta])* $name:ident { $($more:tt)* }) => {
        $(#[$meta])*
        #[derive(Debug, Default, Deserialize, JsonSchema)]
        #[serde(default, deny_unknown_fields)]
        #[schemars(transform = unset_is_no_limit)]
        pub struct $name {
            /// Coins agents may trade (`BTC`, `ETH-PERP`); unset: any.
            pub allowed_coins: Vec<String>,
            /// The largest USD notional of one trade.
            #[schemars(extend("minimum" = 0, "exclusiveMinimum" = true))]
            pub max_notional_usd: f64,
            #[schemars(extend("minimum" = 0, "exclusiveMinimum" = true))]
            pub max_leverage: f64,
            /// A trade that opens or adds must carry a stop loss.
            pub require_stop_loss: bool,
            pub max_open_positions: u64,
            /// The USD notional an agent may execute in a UTC day.
            #[schemars(extend("minimum" = 0, "exclusiveMinimum" = true))]
            pub max_daily_notional_usd: f64,
            /// No trade adds exposure once the day's loss reaches this many USD.
            #[schemars(extend("minimum" = 0, "exclusiveMinimum" = true))]
            pub daily_loss_limit_usd: f64,
            /// Trades that need no staging (place_order and the like) are let through.
            pub allow_immediate: bool,
            /// A limit price within this % of the mark; a stop loss on the wrong side of the mark is
            /// refused while it is set.
            #[schemars(extend("minimum" = 0, "exclusiveMinimum" = true))]
            pub price_collar_pct: f64,
            /// Coin → the largest order in coin units (`{"BTC": 0.5}`); unlisted coins: no limit.
            pub max_order_size: BTreeMap<String, f64>,
            /// The account's net position in the coin after the fill, USD at the mark.
            #[schemars(extend("minimum" = 0, "exclusiveMinimum" = true))]
            pub max_position_usd: f64,
            /// The loss at the stop loss, as % of the account's equity; no stop loss breaks it.
            #[schemars(extend("minimum" = 0, "exclusiveMinimum" = true))]
            pub max_loss_per_trade_pct: f64,
            /// Stagings and immediate trades of one agent in any 60 s.
            #[schemars(extend("minimum" = 1))]
            pub max_stagings_per_minute: u64,
            /// Executions of one agent's trades in any hour.
            #[schemars(extend("minimum" = 1))]
            pub max_executions_per_hour: u64,
            /// Above this USD notional an item needs `step_up_approvals` distinct supervisors.
            #[schemars(extend("minimum" = 0, "exclusiveMinimum" = true))]
            pub step_up_notional_usd: f64,
            /// Distinct supervisors an item above `step_up_notional_usd` needs (default 2).
            #[schemars(extend("minimum" = 2, "maximum" = 5))]
            pub step_up_approvals: u32,
            $($more)*
        }
    };
}

policy_rules! {
    /// `PUT /gate/v1/policy`: the policy whole, replacing the one in force; unset rules are no
    /// limit.
    PolicyRequest {
        /// Rules for one agent (by name or key fingerprint) over the ones above.
        pub agents: BTreeMap<String, AgentRules>,
    }
}

policy_rules! {
    /// One agent's rules: unset ones are the policy's.
    AgentRules {}
}

/// An unset rule is no limit: the zero values `#[serde(default)]` would show are not its meaning.
fn unset_is_no_limit(schema: &mut schemars::Schema) {
    without_defaults(schema, |_| true);
}

/// A parameter left out is absent, never null.
fn absent_is_not_null(schema: &mut schemars::Schema) {
    without_defaults(schema, Value::is_null);
}

fn without_defaults(schema: &mut schemars::Schema, which: fn(&Value) -> bool) {
    let Some(Value::Object(properties)) = schema.get_mut("properties") else {
        return;
    };
    for property in properties.values_mut().filter_map(Value::as_object_mut) {
        if property.get("default").is_some_and(which) {
            property.remove("default");
        }
    }
}

/// `GET /gate/v1/inbox`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(transform = absent_is_not_null)]
pub struct InboxQuery {
    /// Which items: one status, or `all`.
    #[serde(default)]
    #[schemars(schema_with = "status_filter", extend("default" = "pending"))]
    pub status: Option<String>,
    /// The version of an earlier answer: with wait, a long poll held while nothing changed.
    #[serde(default)]
    #[schemars(with = "u64")]
    pub since: Option<String>,
    /// Seconds to hold the answer while the version is still since.
    #[serde(default)]
    #[schemars(with = "u64", range(max = changes::WAIT_MAX), extend("default" = 0))]
    pub wait: Option<String>,
}

fn status_filter(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut names: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
    names.push("all");
    schemars::json_schema!({"type": "string", "enum": names})
}

impl InboxQuery {
    /// The status asked for; `None`: every status.
    pub fn status(&self) -> Result<Option<Status>, GateError> {
        match self.status.as_deref().unwrap_or("pending") {
            "all" => Ok(None),
            s => Status::parse(s).map(Some).ok_or_else(|| {
                GateError::new(
                    Kind::Invalid,
                    "invalid_query",
                    format!(
                        "status must be pending, approved, executing, executed, failed, rejected, expired or all, got {s:?}"
                    ),
                )
                .with_field("status")
            }),
        }
    }

    /// `since` and `wait`, by the long poll's own rules (it quotes a refused value as sent).
    pub fn long_poll(&self) -> Result<(Option<u64>, Duration), GateError> {
        let raw: HashMap<String, String> = [("since", &self.since), ("wait", &self.wait)]
            .into_iter()
            .filter_map(|(name, v)| Some((name.to_string(), v.clone()?)))
            .collect();
        changes::long_poll(&raw)
    }
}

/// `GET /gate/v1/journal`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[schemars(transform = absent_is_not_null)]
pub struct JournalQuery {
    /// The records after this sequence number.
    #[serde(default)]
    #[schemars(with = "u64", extend("default" = 0))]
    pub after: Option<String>,
    /// The most records one answer holds.
    #[serde(default)]
    #[schemars(with = "u64", range(max = 1000), extend("default" = 500))]
    pub limit: Option<String>,
}

impl JournalQuery {
    pub fn after(&self) -> Result<i64, GateError> {
        number("after", self.after.as_deref(), 0, i64::MAX)
    }

    pub fn limit(&self) -> Result<i64, GateError> {
        number("limit", self.limit.as_deref(), 500, 1000)
    }
}

fn number(name: &str, value: Option<&str>, default: i64, max: i64) -> Result<i64, GateError> {
    let Some(v) = value else {
        return Ok(default);
    };
    v.parse::<i64>()
        .ok()
        .filter(|n| (0..=max).contains(n))
        .ok_or_else(|| {
            GateError::new(
                Kind::Invalid,
                "invalid_query",
                format!("{name} must be a whole number from 0 to {max}"),
            )
            .with_field(name)
        })
}

fn invalid(field: &str, message: impl Into<String>) -> GateError {
    GateError::new(Kind::Invalid, "invalid_body", message.into()).with_field(field)
}

/// The fields a body type has, as its schema names them.
fn fields_of<T: JsonSchema>() -> Vec<String> {
    schemars::schema_for!(T)
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// A body that may be empty (then `{}`), else one JSON object with only the fields of `T`.
fn object<T: JsonSchema>(body: &[u8], example: &str) -> Result<Map<String, Value>, GateError> {
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
    let takes = fields_of::<T>();
    if let Some(unknown) = map.keys().find(|k| !takes.contains(k)) {
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

/// Field `name` as `F`: `Ok(None)` when absent or null, `Err(())` when it is something else.
fn field<F: DeserializeOwned>(map: &Map<String, Value>, name: &str) -> Result<Option<F>, ()> {
    map.get(name)
        .map_or(Ok(None), |v| Option::<F>::deserialize(v).map_err(drop))
}

/// An optional string field, trimmed; empty is absent.
fn text(map: &Map<String, Value>, name: &str) -> Result<Option<String>, GateError> {
    field::<String>(map, name)
        .map(|s| s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty()))
        .map_err(|()| invalid(name, format!("{name} must be a string")))
}

/// An optional list of strings (absent: empty).
fn strings(map: &Map<String, Value>, name: &str, what: &str) -> Result<Vec<String>, GateError> {
    field::<Vec<String>>(map, name)
        .map(Option::unwrap_or_default)
        .map_err(|()| invalid(name, format!("{name} must be a list of {what}")))
}

impl Body for Approve {
    type Wire = Self;
    const EXAMPLE: &'static str = r#"{"override": ["max_open_positions"]}"#;

    fn read(body: &[u8]) -> Result<Self, GateError> {
        let map = object::<Self>(body, r#"{"override": ["max_notional_usd"]}"#)?;
        Ok(Approve {
            overrides: strings(&map, "override", "rule names")?,
        })
    }
}

impl Body for Reject {
    type Wire = Self;
    const EXAMPLE: &'static str = r#"{"reason": "too large"}"#;

    fn read(body: &[u8]) -> Result<Self, GateError> {
        let map = object::<Self>(body, r#"{"reason": "..."}"#)?;
        Ok(Reject {
            reason: text(&map, "reason")?,
        })
    }
}

impl Body for Kill {
    type Wire = Self;
    const EXAMPLE: &'static str = r#"{"on": true, "reason": "venue incident"}"#;

    fn read(body: &[u8]) -> Result<Self, GateError> {
        let map = object::<Self>(body, r#"{"on": true, "reason": "..."}"#)?;
        let on = field::<bool>(&map, "on")
            .ok()
            .flatten()
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
}

impl Body for GateStandingRequest {
    type Wire = Self;
    const EXAMPLE: &'static str = r#"{"agent": "*", "coins": ["BTC"], "maxNotionalUsd": 500, "minutes": 60, "reason": "small entries"}"#;

    fn read(body: &[u8]) -> Result<Self, GateError> {
        let map = object::<Self>(
            body,
            r#"{"agent": "*", "coins": ["BTC"], "maxNotionalUsd": 500, "minutes": 60, "reason": "..."}"#,
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
        let max_notional_usd = field::<f64>(&map, "maxNotionalUsd")
            .ok()
            .flatten()
            .filter(|x| *x > 0.0 && x.is_finite())
            .ok_or_else(|| invalid("maxNotionalUsd", "maxNotionalUsd must be a positive number"))?;
        let minutes = field::<u64>(&map, "minutes")
            .ok()
            .flatten()
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
        Ok(GateStandingRequest {
            agent,
            coins,
            max_notional_usd,
            minutes,
            reason,
        })
    }
}

/// The longest reason a suspension keeps: it is repeated in every refusal the agent gets.
pub const MAX_SUSPEND_REASON: usize = 500;

impl Body for GateSuspendRequest {
    type Wire = Self;
    const EXAMPLE: &'static str = r#"{"reason": "retries the same order in a loop"}"#;

    fn read(body: &[u8]) -> Result<Self, GateError> {
        let map = object::<Self>(body, r#"{"reason": "..."}"#)?;
        let reason = text(&map, "reason")?.ok_or_else(|| {
            invalid(
                "reason",
                "say why the agent is suspended: it is told the reason",
            )
        })?;
        if reason.chars().count() > MAX_SUSPEND_REASON {
            return Err(invalid(
                "reason",
                format!("reason must be at most {MAX_SUSPEND_REASON} characters"),
            ));
        }
        Ok(GateSuspendRequest { reason })
    }
}

impl Body for policy::Policy {
    type Wire = PolicyRequest;
    const EXAMPLE: &'static str = r#"{"max_notional_usd": 3000, "allowed_coins": ["BTC"], "agents": {"bot": {"max_leverage": 3}}}"#;

    /// The policy whole, every key checked (`Policy::from_json`; 400 `invalid_policy` naming the
    /// key).
    fn read(body: &[u8]) -> Result<Self, GateError> {
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
        policy::Policy::from_json(&Value::Object(map)).map_err(|e| {
            GateError::new(Kind::Invalid, "invalid_policy", e.message).with_field(e.key)
        })
    }
}

/// The readers by name, as the fuzz target calls them.
pub fn approve(body: &[u8]) -> Result<Approve, GateError> {
    Approve::read(body)
}

pub fn reject(body: &[u8]) -> Result<Reject, GateError> {
    Reject::read(body)
}

pub fn kill(body: &[u8]) -> Result<Kill, GateError> {
    Kill::read(body)
}

pub fn standing(body: &[u8]) -> Result<GateStandingRequest, GateError> {
    GateStandingRequest::read(body)
}

pub fn suspend(body: &[u8]) -> Result<GateSuspendRequest, GateError> {
    GateSuspendRequest::read(body)
}

pub fn policy(body: &[u8]) -> Result<policy::Policy, GateError> {
    policy::Policy::read(body)
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
            reject(br#"{"reason": " too big "}"#)
                .unwrap()
                .reason
                .as_deref(),
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

    #[test]
    fn a_suspension_needs_a_reason_of_bounded_length_and_no_other_field() {
        for body in [&b""[..], br#"{"reason": "  "}"#, br#"{"reason": 5}"#] {
            let e = suspend(body).unwrap_err();
            assert_eq!(e.field.as_deref(), Some("reason"), "{e:?}");
        }
        let e = suspend(br#"{"reason": "loops", "until": "monday"}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("until"), "{e:?}");
        let long = format!(r#"{{"reason": "{}"}}"#, "x".repeat(MAX_SUSPEND_REASON + 1));
        assert_eq!(
            suspend(long.as_bytes()).unwrap_err().field.as_deref(),
            Some("reason")
        );
        let most = format!(r#"{{"reason": "{}"}}"#, "é".repeat(MAX_SUSPEND_REASON));
        assert_eq!(
            suspend(most.as_bytes()).unwrap().reason.chars().count(),
            MAX_SUSPEND_REASON
        );
        assert_eq!(
            suspend(br#"{"reason": " loops "}"#).unwrap().reason,
            "loops"
        );
    }

    /// What serde makes of a body: the type's own reading, which the document describes.
    fn serde<T: DeserializeOwned>(body: &str) -> T {
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{body}: {e}"))
    }

    #[test]
    fn each_example_reads_as_serde_reads_its_type() {
        assert_eq!(
            Approve::read(Approve::EXAMPLE.as_bytes()).unwrap(),
            serde(Approve::EXAMPLE)
        );
        assert_eq!(
            Reject::read(Reject::EXAMPLE.as_bytes()).unwrap(),
            serde(Reject::EXAMPLE)
        );
        assert_eq!(
            Kill::read(Kill::EXAMPLE.as_bytes()).unwrap(),
            serde(Kill::EXAMPLE)
        );
        let example = GateStandingRequest::EXAMPLE;
        assert_eq!(
            GateStandingRequest::read(example.as_bytes()).unwrap(),
            serde::<GateStandingRequest>(example)
        );
        let example = GateSuspendRequest::EXAMPLE;
        assert_eq!(
            GateSuspendRequest::read(example.as_bytes()).unwrap(),
            serde::<GateSuspendRequest>(example)
        );
        let example = policy::Policy::EXAMPLE;
        policy::Policy::read(example.as_bytes()).unwrap();
        serde::<PolicyRequest>(example);
    }

    #[test]
    fn the_policy_types_have_the_keys_the_policy_reader_takes() {
        let mut rules: Vec<String> = policy::RULES.iter().map(|r| r.to_string()).collect();
        rules.push("allow_immediate".into());
        rules.extend(crate::gateway::rules::step_up::KEYS.map(String::from));
        rules.sort();
        assert_eq!(fields_of::<AgentRules>(), rules);
        let mut top = rules.clone();
        top.push("agents".into());
        top.sort();
        assert_eq!(fields_of::<PolicyRequest>(), top);
        // Every key set, at the top and for an agent: both readings take it.
        let all = r#"{"allowed_coins": ["BTC"], "max_notional_usd": 1, "max_leverage": 2,
            "require_stop_loss": true, "max_open_positions": 3, "max_daily_notional_usd": 4,
            "daily_loss_limit_usd": 5, "allow_immediate": false, "price_collar_pct": 2,
            "max_order_size": {"BTC": 0.5}, "max_position_usd": 6, "max_loss_per_trade_pct": 1,
            "max_stagings_per_minute": 7, "max_executions_per_hour": 8,
            "step_up_notional_usd": 50000, "step_up_approvals": 3}"#;
        let body = format!(r#"{{"agents": {{"bot": {all}}}, {}"#, &all[1..]);
        policy::Policy::read(body.as_bytes()).unwrap();
        serde::<PolicyRequest>(&body);
    }

    #[test]
    fn queries_are_read_as_text_and_judged_with_the_messages_they_had() {
        let q: InboxQuery = serde_json::from_value(serde_json::json!({"status": "nope"})).unwrap();
        let e = q.status().unwrap_err();
        assert_eq!(e.field.as_deref(), Some("status"));
        assert!(e.message.ends_with("got \"nope\""), "{}", e.message);
        let q = InboxQuery {
            wait: Some("31".into()),
            ..Default::default()
        };
        assert_eq!(q.long_poll().unwrap_err().field.as_deref(), Some("wait"));
        let q = JournalQuery {
            limit: Some("1001".into()),
            ..Default::default()
        };
        assert_eq!(q.after().unwrap(), 0);
        let e = q.limit().unwrap_err();
        assert_eq!(e.message, "limit must be a whole number from 0 to 1000");
    }
}
