//! Reading answers whose shape we only partly know, row by row: a row we cannot fully read keeps
//! the fields we can and carries the rest, as the service sent them, in its `extra` map; the
//! views show those as `key=value`. One odd row never empties a pane.
//!
//! Also the per-operation reshaping of the deployment's known shapes into ours
//! ([`normalize`]), so that the typed structs have one shape to read.

use super::Extra;
use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer};
use serde_json::{Map, Value, json};

/// A row type that keeps what it does not know in a flattened `extra` map.
pub trait Lenient: DeserializeOwned + Default {
    fn extra_mut(&mut self) -> &mut Extra;
}

/// Reads `value` as `T`; when that fails, reads each field on its own, keeps those that read
/// and puts the others, untouched, into `extra`. Never fails.
pub fn row<T: Lenient>(value: Value) -> T {
    let map = match value {
        Value::Object(map) => map,
        other => {
            let mut t = T::default();
            t.extra_mut().insert("value".into(), other);
            return t;
        }
    };
    if let Ok(t) = T::deserialize(&Value::Object(map.clone())) {
        return t;
    }
    let mut good = Map::new();
    let mut bad = Map::new();
    for (k, v) in map {
        let alone = Value::Object(Map::from_iter([(k.clone(), v.clone())]));
        if T::deserialize(&alone).is_ok() {
            good.insert(k, v);
        } else {
            bad.insert(k, v);
        }
    }
    // Fields that read alone may still clash together (two aliases of one field): then keep
    // only what reads, field by field, in extra.
    let mut t = match T::deserialize(&Value::Object(good.clone())) {
        Ok(t) => t,
        Err(_) => {
            bad.extend(good);
            T::default()
        }
    };
    t.extra_mut().extend(bad);
    t
}

/// Every row of a list, leniently; `null` or a missing list is no rows.
pub fn rows_of<T: Lenient>(values: Vec<Value>) -> Vec<T> {
    values.into_iter().map(row).collect()
}

/// `deserialize_with` for a list of rows: a list decodes as `Vec<Value>` first, then row by row.
pub fn rows<'de, D: Deserializer<'de>, T: Lenient>(d: D) -> Result<Vec<T>, D::Error> {
    let values = Option::<Vec<Value>>::deserialize(d)?.unwrap_or_default();
    Ok(rows_of(values))
}

/// `deserialize_with` for one nested row read leniently (a proposal's preview, an answer's
/// execution): one odd field stays in that row's `extra` instead of failing its parent.
pub fn nested<'de, D: Deserializer<'de>, T: Lenient>(d: D) -> Result<T, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => T::default(),
        Some(v) => row(v),
    })
}

/// `deserialize_with` for an optional row: `null` or missing is none, anything else a row.
pub fn opt_row<'de, D: Deserializer<'de>, T: Lenient>(d: D) -> Result<Option<T>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => None,
        Some(v) => Some(row(v)),
    })
}

/// `extra` as `key=value` pairs, in the service's order of keys (sorted by name), values compact.
pub fn extra_pairs(extra: &Extra) -> Vec<String> {
    extra
        .iter()
        .filter(|(k, _)| !IGNORED.contains(&k.as_str()))
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect()
}

/// Envelope fields that say nothing about a row.
const IGNORED: &[&str] = &["success"];

/// A compact one-line rendering of any answer, for an answer we have no typed reading of.
pub fn compact(value: &Value, max: usize) -> String {
    let text = match value {
        Value::Object(map) => extra_pairs(map).join(" "),
        other => other.to_string(),
    };
    if text.chars().count() <= max {
        text
    } else {
        let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

/// Reshapes an answer of `operation` from the deployment's known shapes into ours, before it is
/// read: what our sandbox sends passes through unchanged.
pub fn normalize(operation: &str, mut value: Value) -> Value {
    let Some(obj) = value.as_object_mut() else {
        return value;
    };
    match operation {
        // The deployment: `{usage: {daily: {used, limit}, compute: {...}, resetsAt}}`.
        "get_usage" | "get_usage_v1" => {
            if let Some(Value::Object(inner)) = obj.remove("usage") {
                for (k, v) in inner {
                    obj.entry(k).or_insert(v);
                }
            }
            if !obj.contains_key("apiPostQuota")
                && let Some(daily) = obj.remove("daily")
            {
                obj.insert("apiPostQuota".into(), daily);
            }
        }
        "propose_trade" => {
            if let Some(Value::Object(p)) = obj.get_mut("preview") {
                normalize_preview(p);
            }
        }
        "list_proposals" => {
            if let Some(Value::Array(list)) = obj.get_mut("proposals") {
                for p in list {
                    if let Some(Value::Object(p)) = p.get_mut("preview") {
                        normalize_preview(p);
                    }
                }
            }
        }
        // The deployment's audit rows may say `status: "success"` instead of `ok: true`.
        "list_audit_logs" => {
            if let Some(Value::Array(rows)) = obj.get_mut("logs") {
                for row in rows {
                    if let Value::Object(row) = row {
                        normalize_audit_row(row);
                    }
                }
            }
        }
        "confirm_trade"
        | "close_position"
        | "place_order"
        | "platform_place_order"
        | "platform_close_position" => normalize_execution(obj),
        _ => {}
    }
    value
}

/// An audit row's `status`: a word is its outcome, a number its HTTP status.
fn normalize_audit_row(row: &mut Map<String, Value>) {
    if row.contains_key("outcome") || row.contains_key("ok") {
        return;
    }
    match row.get("status") {
        Some(Value::String(word)) if word.trim().parse::<u16>().is_err() => {
            let outcome = match word.trim().to_ascii_lowercase().as_str() {
                "success" | "succeeded" | "ok" | "done" | "executed" | "filled" => "ok".into(),
                "error" | "failed" | "failure" | "rejected" => "error".into(),
                other => other.to_string(),
            };
            row.remove("status");
            row.insert("outcome".into(), json!(outcome));
        }
        Some(status @ (Value::Number(_) | Value::String(_))) if !row.contains_key("httpStatus") => {
            let status = status.clone();
            row.remove("status");
            row.insert("httpStatus".into(), status);
        }
        _ => {}
    }
}

/// An execution answer in whatever shape a service sent it (a gateway keeps the upstream's as
/// is), read as the client reads a confirm's: reshaped, then typed.
pub fn execution(value: Value) -> Option<super::ExecutionResult> {
    serde_json::from_value(normalize("confirm_trade", value)).ok()
}

/// A trade preview in whatever shape a service sent it (a gateway passes the upstream's on as
/// is), read as a propose answer's is: reshaped, then leniently.
pub fn preview(mut value: Value) -> super::Preview {
    if let Value::Object(p) = &mut value {
        normalize_preview(p);
    }
    row(value)
}

/// The deployment's preview names the venue's way: `sz`, `side` "B"/"A".
fn normalize_preview(p: &mut Map<String, Value>) {
    if !p.contains_key("size")
        && let Some(sz) = p.get("sz").cloned()
    {
        p.insert("size".into(), sz);
    }
    if !p.contains_key("direction") {
        let dir = match p.get("side").and_then(Value::as_str) {
            Some("B" | "b" | "buy" | "long") => Some("long"),
            Some("A" | "a" | "sell" | "short") => Some("short"),
            _ => None,
        };
        if let Some(d) = dir {
            p.insert("direction".into(), json!(d));
        }
    }
    if !p.contains_key("kind") && p.contains_key("direction") && p.contains_key("coin") {
        p.insert("kind".into(), json!("trade"));
    }
}

/// The deployment's order answer: `{result: {status, response: {data: {statuses: [...]}}}}`
/// (the venue's exchange response inside `result`). Ours: `{status, execution: {statuses}}`.
fn normalize_execution(obj: &mut Map<String, Value>) {
    if obj.contains_key("execution") {
        return;
    }
    let Some(Value::Object(result)) = obj.get("result") else {
        return;
    };
    let status = result.get("status").cloned();
    let statuses = result
        .get("response")
        .and_then(|r| r.pointer("/data/statuses"))
        .or_else(|| result.get("statuses"))
        .cloned();
    if !obj.contains_key("status")
        && let Some(s) = status
    {
        obj.insert("status".into(), s);
    }
    if let Some(statuses) = statuses {
        obj.insert("execution".into(), json!({ "statuses": statuses }));
    }
}

/// A venue order status as one phrase: `filled 0.5 at 3010 (oid 7)`, `resting (oid 7)`,
/// `error: ...`, or the status compactly.
pub fn order_status(status: &Value) -> String {
    order_status_in(status, None)
}

/// [`order_status`], naming the coin a fill is of when the caller knows it (the venue's status
/// does not say): `filled 0.5 ETH at 3010 (oid 7)`.
pub fn order_status_in(status: &Value, coin: Option<&str>) -> String {
    use super::{fmt_decimal, group_thousands};
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.as_f64().map(fmt_decimal).unwrap_or_else(|| n.to_string()),
        Some(other) => other.to_string(),
        None => "?".into(),
    };
    // Sizes and prices read as every number a person reads here (`61,250.5`); the oid is a name.
    let amount = |v: Option<&Value>| group_thousands(&text(v));
    if let Some(f) = status.get("filled") {
        return format!(
            "filled {}{} at {} (oid {})",
            amount(f.get("totalSz")),
            coin.filter(|c| !c.is_empty())
                .map(|c| format!(" {c}"))
                .unwrap_or_default(),
            amount(f.get("avgPx")),
            text(f.get("oid"))
        );
    }
    if let Some(r) = status.get("resting") {
        return format!("resting (oid {})", text(r.get("oid")));
    }
    if let Some(e) = status.get("error") {
        return format!("error: {}", text(Some(e)));
    }
    compact(status, 80)
}

/// A time as services send it: RFC 3339 text, or seconds / milliseconds since the epoch as a
/// number or numeric text (a magnitude above 1e11 is milliseconds).
pub fn time(v: &Value) -> Option<chrono::DateTime<chrono::Utc>> {
    let number = match v {
        Value::String(s) => {
            if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s.trim()) {
                return Some(t.with_timezone(&chrono::Utc));
            }
            s.trim().parse::<f64>().ok()?
        }
        Value::Number(n) => n.as_f64()?,
        _ => return None,
    };
    let millis = if number > 1e11 {
        number
    } else {
        number * 1000.0
    };
    chrono::TimeZone::timestamp_millis_opt(&chrono::Utc, millis as i64).single()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::model::{AuditEntry, ExecutionResult, Usage};

    #[test]
    fn a_row_with_a_bad_field_keeps_the_rest() {
        let e: AuditEntry = row(json!({
            "id": "7", "operation": "confirm_trade", "httpStatus": "two hundred", "shard": "b"
        }));
        assert_eq!(e.id, 7);
        assert_eq!(e.operation, "confirm_trade");
        assert_eq!(e.extra["httpStatus"], "two hundred");
        assert_eq!(extra_pairs(&e.extra), ["httpStatus=two hundred", "shard=b"]);
    }

    #[test]
    fn a_row_that_is_not_an_object_is_kept_as_value() {
        let e: AuditEntry = row(json!("opaque"));
        assert_eq!(extra_pairs(&e.extra), ["value=opaque"]);
    }

    #[test]
    fn the_deployments_usage_reads_as_ours() {
        let v = normalize(
            "get_usage",
            json!({"success": true, "usage": {"daily": {"used": "3", "limit": "1000"},
                "compute": {"used": "1", "limit": "200"}}}),
        );
        let u: Usage = serde_json::from_value(v).unwrap();
        assert_eq!((u.api_post_quota.used, u.api_post_quota.limit), (3, 1000));
        assert_eq!((u.compute.used, u.compute.limit), (1, 200));
    }

    #[test]
    fn the_deployments_order_answer_reads_as_ours() {
        let v = normalize(
            "confirm_trade",
            json!({"success": true, "result": {"status": "ok", "response": {"type": "order",
                "data": {"statuses": [{"filled": {"totalSz": "0.02", "avgPx": "61250.5", "oid": 9}}]}}}}),
        );
        let r: ExecutionResult = serde_json::from_value(v).unwrap();
        assert_eq!(r.status, "ok");
        assert_eq!(
            order_status(&r.execution.statuses[0]),
            "filled 0.02 at 61,250.5 (oid 9)"
        );
    }

    #[test]
    fn one_odd_field_never_loses_a_staged_proposal() {
        use crate::api::model::Proposal;
        let p: Proposal = row(normalize(
            "propose_trade",
            json!({"proposalId": "p1", "expiresAt": "in 5 minutes",
                "preview": {"coin": "BTC", "side": "B", "sz": "0.5", "leverage": "five"}}),
        ));
        assert_eq!(p.proposal_id, "p1");
        assert_eq!(p.extra["expiresAt"], "in 5 minutes");
        assert_eq!((p.preview.coin.as_str(), p.preview.size), ("BTC", 0.5));
        assert_eq!(p.preview.direction, "long");
        assert_eq!(p.preview.extra["leverage"], "five");
    }

    #[test]
    fn a_preview_passed_on_by_a_gateway_is_read_in_the_deployments_shape() {
        let item: crate::api::model::GateItem = serde_json::from_value(json!({
            "id": "gi_1", "kind": "trade", "status": "pending",
            "preview": {"coin": "ETH", "side": "B", "sz": "0.265759", "leverage": "2",
                        "markPx": "3010.25", "notional": "800", "sl": "2700"}
        }))
        .unwrap();
        let p = item.trade_preview();
        assert_eq!(
            (
                p.kind.as_str(),
                p.direction.as_str(),
                p.size,
                p.leverage,
                p.sl
            ),
            ("trade", "long", 0.265759, 2, Some(2700.0))
        );
    }

    #[test]
    fn the_deployments_status_success_audit_rows_have_an_outcome() {
        let logs: super::super::AuditLogs = serde_json::from_value(normalize(
            "list_audit_logs",
            json!({"logs": [
                {"id": 1, "action": "confirm_trade", "status": "success"},
                {"id": 2, "action": "propose_trade", "status": "failed", "error": "no"},
                {"id": 3, "action": "whoami", "status": 200},
                {"id": 4, "action": "whoami", "ok": true, "status": "success"},
            ]}),
        ))
        .unwrap();
        let got: Vec<(&str, u16)> = logs
            .logs
            .iter()
            .map(|l| (l.outcome.as_str(), l.http_status))
            .collect();
        assert_eq!(got, [("ok", 0), ("error", 0), ("", 200), ("ok", 0)]);
    }

    #[test]
    fn compact_cuts_long_answers() {
        let v = json!({"a": "x".repeat(50), "b": 1});
        let s = compact(&v, 20);
        assert_eq!(s.chars().count(), 20);
        assert!(s.ends_with('…'));
    }
}
