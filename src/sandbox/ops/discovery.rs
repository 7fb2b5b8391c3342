//! Discovery: the strategy catalog, top backtests, top strategies by live replay, and optimizer
//! parameter sets. The last three read the background caches (see `sandbox::discovery`) and never
//! wait more than 2 s.

use super::{AppError, Call, Reply};
use crate::api::model::{DiscoveryRow, Strategies, StrategyEntry, StrategyParam};
use crate::sandbox::backtests::{check_days, parse_pair, parse_timeframe};
use crate::sandbox::core::{Shared, View};
use crate::sandbox::discovery::{self, Kind};
use crate::sandbox::engine::strategies::{ParamKind, STRATEGIES};
use serde_json::json;
use std::sync::Arc;

pub fn discover_strategies(_core: &View, _call: &Call) -> Result<Reply, AppError> {
    let strategies = STRATEGIES
        .iter()
        .map(|s| {
            let mut extra = serde_json::Map::new();
            extra.insert("type".into(), json!(s.category.as_str()));
            extra.insert("summary".into(), json!(s.description));
            extra.insert("sides".into(), json!(["long", "short"]));
            extra.insert(
                "riskSettings".into(),
                json!({"stopLossPct": "optional parameter stopLossPct",
                       "takeProfitPct": "optional parameter takeProfitPct",
                       "allowShort": "optional parameter allowShort (default 1)"}),
            );
            StrategyEntry {
                id: s.id.into(),
                name: s.name.into(),
                category: s.category.as_str().into(),
                description: s.description.into(),
                entry_summary: s.entry_summary.into(),
                exit_summary: s.exit_summary.into(),
                indicator_summary: s.indicator_summary.into(),
                parameters: s
                    .params
                    .iter()
                    .map(|p| StrategyParam {
                        name: p.name.into(),
                        kind: match p.kind {
                            ParamKind::Int => "integer",
                            ParamKind::Float => "number",
                        }
                        .into(),
                        default: p.default,
                        min: p.min,
                        max: p.max,
                        step: p.step,
                        description: p.description.into(),
                    })
                    .collect(),
                extra,
            }
        })
        .collect();
    Reply::ok(Strategies {
        strategies,
        extra: Default::default(),
    })
}

fn int(call: &Call, name: &str, default: u32, min: u32, max: u32) -> Result<u32, AppError> {
    match call.query(name).map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(v) => v
            .parse::<u32>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| {
                AppError::invalid_query(
                    name,
                    format!("{name} must be a whole number from {min} to {max}, got {v:?}"),
                )
            }),
    }
}

fn choice<'a>(
    call: &'a Call,
    name: &str,
    allowed: &[&'a str],
    default: &'a str,
) -> Result<&'a str, AppError> {
    match call.query(name).map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(default),
        Some(v) => allowed.iter().find(|a| **a == v).copied().ok_or_else(|| {
            AppError::invalid_query(
                name,
                format!("{name} must be one of {}, got {v:?}", allowed.join(", ")),
            )
        }),
    }
}

fn number(call: &Call, name: &str) -> Result<Option<f64>, AppError> {
    match call.query(name).map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => v
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .map(Some)
            .ok_or_else(|| {
                AppError::invalid_query(name, format!("{name} must be a number, got {v:?}"))
            }),
    }
}

fn boolean(call: &Call, name: &str) -> Result<bool, AppError> {
    match call.query(name).map(str::trim) {
        None | Some("") | Some("false") | Some("0") => Ok(false),
        Some("true") | Some("1") => Ok(true),
        Some(v) => Err(AppError::invalid_query(
            name,
            format!("{name} must be true or false, got {v:?}"),
        )),
    }
}

fn passes(row: &DiscoveryRow, filter: &str) -> bool {
    match filter {
        "excellent" => row.quality == "excellent",
        "good" => row.quality == "excellent" || row.quality == "good",
        _ => true,
    }
}

fn cache_error(e: tokio::task::JoinError) -> AppError {
    AppError::internal(format!("discovery cache: {e}"))
}

pub async fn discover_top_backtests(shared: Arc<Shared>, call: Call) -> Result<Reply, AppError> {
    let filter = choice(&call, "filter", &["good", "excellent", "all"], "good")?.to_string();
    let include_all = boolean(&call, "includeAll")?;
    let entry = discovery::get(
        &shared,
        Kind::TopBacktests,
        "scan".into(),
        discovery::compute_top_backtests,
    )
    .await
    .map_err(cache_error)?;
    let mut seen = std::collections::HashSet::new();
    let rows: Vec<DiscoveryRow> = entry
        .rows
        .iter()
        .filter(|r| passes(r, &filter))
        // Rows are sorted by return: the first of each strategy is its best.
        .filter(|r| include_all || seen.insert(r.strategy_id.clone()))
        .cloned()
        .collect();
    let mut answer = entry.answer(rows);
    answer.extra.insert("filter".into(), json!(filter));
    answer.extra.insert("includeAll".into(), json!(include_all));
    answer.extra.insert(
        "scan".into(),
        json!({"pairs": discovery::MAIN_PAIRS.map(|p| format!("{p}-USD")),
               "timeframes": discovery::SCAN_TIMEFRAMES.map(|t| t.as_str()),
               "days": discovery::SCAN_DAYS}),
    );
    Reply::ok(answer)
}

pub async fn discover_top_live(shared: Arc<Shared>, call: Call) -> Result<Reply, AppError> {
    let window = int(&call, "windowDays", 7, 1, 90)?;
    let limit = int(&call, "limit", 10, 1, 100)? as usize;
    let entry = discovery::get(
        &shared,
        Kind::TopLive,
        window.to_string(),
        discovery::compute_top_live,
    )
    .await
    .map_err(cache_error)?;
    let rows = entry.rows.iter().take(limit).cloned().collect();
    let mut answer = entry.answer(rows);
    answer.extra.insert("windowDays".into(), json!(window));
    answer.extra.insert(
        "timeframe".into(),
        json!(discovery::LIVE_TIMEFRAME.as_str()),
    );
    Reply::ok(answer)
}

pub async fn discover_top_optimized_combos(
    shared: Arc<Shared>,
    call: Call,
) -> Result<Reply, AppError> {
    let (coin, pair) = parse_pair(call.query("pair").unwrap_or("BTC-USD"), "pair")?;
    let tf = parse_timeframe(call.query("timeframe").unwrap_or("5m"), "timeframe")?;
    let days = check_days(int(&call, "days", 30, 1, u32::MAX)?, "days")?;
    let per_strategy = int(&call, "perStrategy", 3, 1, 50)?;
    let limit = int(&call, "limit", 50, 1, 500)? as usize;
    let filter = choice(&call, "filter", &["good", "all"], "good")?.to_string();
    let min_return = number(&call, "minReturnPct")?;
    let min_trades = match call
        .query("minTrades")
        .map(str::trim)
        .filter(|v| !v.is_empty())
    {
        None => None,
        Some(_) => Some(int(&call, "minTrades", 0, 0, u32::MAX)?),
    };
    let key = format!("{coin}:{}:{days}", tf.as_str());
    let entry = discovery::get(&shared, Kind::Combos, key, discovery::compute_combos)
        .await
        .map_err(cache_error)?;
    let mut rows: Vec<DiscoveryRow> = entry
        .rows
        .iter()
        .filter(|r| r.rank_within_strategy.unwrap_or(u32::MAX) <= per_strategy)
        .filter(|r| {
            filter != "good"
                || (r.stats.total_return.unwrap_or(f64::NEG_INFINITY) > 0.0
                    && r.stats.total_trades >= 5)
        })
        .filter(|r| min_return.is_none_or(|m| r.stats.total_return.is_some_and(|x| x >= m)))
        .filter(|r| min_trades.is_none_or(|m| r.stats.total_trades >= m))
        .cloned()
        .collect();
    rows.sort_by(|a, b| {
        let r = |x: &DiscoveryRow| x.stats.total_return.unwrap_or(f64::NEG_INFINITY);
        r(b).total_cmp(&r(a))
    });
    rows.truncate(limit);
    let mut answer = entry.answer(Vec::new());
    answer.count = rows.len() as u32;
    // The deployment names this list `combos`, each row with `paramsHash8`.
    let combos: Vec<serde_json::Value> = rows
        .into_iter()
        .map(|r| {
            let mut v = serde_json::to_value(&r).unwrap_or_default();
            v["paramsHash8"] = json!(r.param_hash);
            v
        })
        .collect();
    let mut body = serde_json::to_value(&answer).map_err(AppError::internal)?;
    if let Some(obj) = body.as_object_mut() {
        obj.remove("results");
        obj.insert("combos".into(), json!(combos));
        obj.insert("pair".into(), json!(pair));
        obj.insert("timeframe".into(), json!(tf.as_str()));
        obj.insert("days".into(), json!(days));
        obj.insert("perStrategy".into(), json!(per_strategy));
        obj.insert("filter".into(), json!(filter));
    }
    Reply::ok(body)
}
