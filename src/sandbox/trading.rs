//! Trading shared by the staged and immediate routes: a request becomes a [`Plan`] (validated, sized,
//! priced), a plan gets a [`Preview`], and a plan executes on a copy of the account's book that is
//! committed only if every step succeeded — a trade whose stop-loss cannot be placed is not opened.

use super::core::Core;
use super::error::{AppError, ErrorKind};
use super::venue::exchange::{Book, Fill, LimitOutcome, Order, OrderKind, Position, VenueError};
use super::venue::market::{self, Market};
use super::venue::{Exchange, normalize_coin, round_sz};
use crate::api::model::{
    ClosePreview, Execution, FillRow, OpenOrderRow, PositionRow, Preview, TradeSignal,
};
use crate::api::model::{CumFunding, Leverage};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A take-profit or stop-loss level: a price, or a percentage move from the fill price.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Price(f64),
    Percent(f64),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TradePlan {
    pub exchange: Exchange,
    pub coin: String,
    pub is_buy: bool,
    pub size: f64,
    pub leverage: u32,
    pub limit_px: Option<f64>,
    pub tp: Option<Level>,
    pub sl: Option<Level>,
    pub strategy: Option<String>,
    /// The price the caller sized against (its `p`, or the mark at planning).
    pub reference_px: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClosePlan {
    /// `close` or `close_all`.
    pub kind: String,
    pub targets: Vec<(Exchange, String)>,
    /// Share of each position to close, in (0, 1].
    pub fraction: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Plan {
    Trade(TradePlan),
    Close(ClosePlan),
}

impl Plan {
    pub fn kind(&self) -> &str {
        match self {
            Plan::Trade(_) => "trade",
            Plan::Close(c) => &c.kind,
        }
    }
}

pub fn venue_error(e: VenueError) -> AppError {
    let status = match &e {
        VenueError::InsufficientMargin { .. } | VenueError::NoPosition { .. } => {
            ErrorKind::Conflict
        }
        VenueError::UnknownOrder { .. } => ErrorKind::NotFound,
        _ => ErrorKind::Invalid,
    };
    let mut err = AppError::new(status, e.code(), e.to_string());
    err.field = e.field().map(str::to_string);
    err
}

pub fn parse_exchange(value: Option<&str>, field: &str) -> Result<Exchange, AppError> {
    match value {
        None => Ok(Exchange::Venue),
        Some(v) => Exchange::parse(v).ok_or_else(|| {
            AppError::invalid(field, format!("{field} must be venue or venue2, got {v:?}"))
        }),
    }
}

pub fn parse_coin(symbol: &str, field: &str) -> Result<&'static str, AppError> {
    normalize_coin(symbol).ok_or_else(|| {
        let known: Vec<&str> = market::ASSETS.iter().map(|a| a.coin).collect();
        AppError::invalid(
            field,
            format!(
                "{field}: unknown asset {symbol:?}; this venue lists {}",
                known.join(", ")
            ),
        )
    })
}

fn mark(market: &Market, coin: &str, now: DateTime<Utc>) -> Result<f64, AppError> {
    market
        .mark(coin, now)
        .map(|px| super::venue::round_px(coin, px))
        .ok_or_else(|| AppError::internal(format!("no price for {coin}")))
}

/// The largest order the venue takes, in USDC of notional: far above any paper account, and finite,
/// so that a slip of a few digits is a 400 rather than a position whose value overflows every sum.
pub const MAX_NOTIONAL_USD: f64 = 100_000_000.0;
/// A limit, take-profit or stop-loss price is at most this many times the mark.
pub const MAX_PRICE_TO_MARK: f64 = 1_000.0;
/// The largest take-profit percentage (a stop-loss's is below 100 by nature).
pub const MAX_TP_PERCENT: f64 = 1_000.0;

/// Parameters for sizing a trade that every route shares.
pub struct Sizing {
    pub size: Option<f64>,
    pub usd: Option<f64>,
    pub default_usd: f64,
}

/// Validates the common parts of a new trade and returns its plan.
#[allow(clippy::too_many_arguments)]
pub fn plan_trade(
    market: &Market,
    now: DateTime<Utc>,
    exchange: Exchange,
    coin: &str,
    is_buy: bool,
    sizing: Sizing,
    leverage: u32,
    limit_px: Option<f64>,
    tp: Option<Level>,
    sl: Option<Level>,
    strategy: Option<String>,
    fields: &PlanFields,
) -> Result<TradePlan, AppError> {
    let spec = market::asset(coin).ok_or_else(|| parse_coin(coin, fields.coin).unwrap_err())?;
    if leverage == 0 || leverage > spec.max_leverage {
        return Err(AppError::invalid(
            fields.leverage,
            format!(
                "{}: {coin} allows leverage 1 to {}, got {leverage}",
                fields.leverage, spec.max_leverage
            ),
        ));
    }
    if let Some(px) = limit_px
        && !(px.is_finite() && px > 0.0)
    {
        return Err(AppError::invalid(
            fields.price,
            format!(
                "{}: the limit price must be a positive number",
                fields.price
            ),
        ));
    }
    let mark_px = mark(market, coin, now)?;
    let max_px = mark_px * MAX_PRICE_TO_MARK;
    if let Some(px) = limit_px
        && px > max_px
    {
        return Err(too_far(fields.price, px, mark_px));
    }
    let reference_px = limit_px.unwrap_or(mark_px);
    let raw_size = match (sizing.size, sizing.usd) {
        (Some(s), _) => check_positive(s, fields.size)?,
        (None, Some(usd)) => {
            let usd = check_positive(usd, fields.usd)?;
            if usd > MAX_NOTIONAL_USD {
                return Err(too_large(fields.usd, usd));
            }
            usd / reference_px
        }
        (None, None) => sizing.default_usd / reference_px,
    };
    // Sizes are checked by what they are worth, which is what the limit is about.
    if raw_size * reference_px > MAX_NOTIONAL_USD {
        let field = if sizing.size.is_some() {
            fields.size
        } else {
            fields.usd
        };
        return Err(too_large(field, raw_size * reference_px));
    }
    let size = round_sz(coin, raw_size);
    if size <= 0.0 {
        return Err(AppError::invalid(
            fields.size,
            format!(
                "{}: {raw_size} {coin} rounds to zero at the venue's {} size decimals",
                fields.size, spec.sz_decimals
            ),
        ));
    }
    if limit_px.is_some() && (tp.is_some() || sl.is_some()) {
        let field = if tp.is_some() { fields.tp } else { fields.sl };
        return Err(AppError::invalid(
            field,
            format!(
                "{field}: take-profit and stop-loss attach to market orders; place them once the limit order has filled"
            ),
        ));
    }
    for (level, field, is_tp) in [(tp, fields.tp, true), (sl, fields.sl, false)] {
        match level {
            None => {}
            Some(Level::Percent(p))
                if !(p.is_finite()
                    && p > 0.0
                    && if is_tp {
                        p <= MAX_TP_PERCENT
                    } else {
                        p < 100.0
                    }) =>
            {
                return Err(AppError::invalid(
                    field,
                    format!(
                        "{field}: the percentage must be above 0 and {}, got {p}",
                        if is_tp {
                            format!("at most {MAX_TP_PERCENT}")
                        } else {
                            "below 100".into()
                        }
                    ),
                ));
            }
            Some(Level::Percent(_)) => {}
            Some(Level::Price(px)) if px.is_finite() && px > max_px => {
                return Err(too_far(field, px, mark_px));
            }
            Some(Level::Price(px)) => {
                let above = px > reference_px;
                // A long's take-profit sits above the price and its stop below; a short's mirrors.
                let ok = px.is_finite() && px > 0.0 && (above == (is_tp == is_buy));
                if !ok {
                    let side = if is_buy { "long" } else { "short" };
                    let want = if is_tp == is_buy { "above" } else { "below" };
                    return Err(AppError::invalid(
                        field,
                        format!(
                            "{field}: a {side}'s {} must be {want} the price {}, got {px}",
                            if is_tp { "take-profit" } else { "stop-loss" },
                            crate::api::model::fmt_decimal(reference_px)
                        ),
                    ));
                }
            }
        }
    }
    Ok(TradePlan {
        exchange,
        coin: coin.to_string(),
        is_buy,
        size,
        leverage,
        limit_px,
        tp,
        sl,
        strategy,
        reference_px,
    })
}

fn too_large(field: &str, notional: f64) -> AppError {
    AppError::invalid(
        field,
        format!(
            "{field}: the order would be worth {} USDC; the venue takes at most {} USDC per order",
            // Past 1e15 a decimal rendering says nothing more (and an infinite one says "0").
            if notional < 1e15 {
                crate::api::model::fmt_decimal(notional.round())
            } else {
                format!("{notional:.3e}")
            },
            crate::api::model::fmt_decimal(MAX_NOTIONAL_USD)
        ),
    )
}

fn too_far(field: &str, px: f64, mark_px: f64) -> AppError {
    AppError::invalid(
        field,
        format!(
            "{field}: {} is more than {MAX_PRICE_TO_MARK} times the mark {}",
            crate::api::model::fmt_decimal(px),
            crate::api::model::fmt_decimal(mark_px)
        ),
    )
}

fn check_positive(v: f64, field: &str) -> Result<f64, AppError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(AppError::invalid(
            field,
            format!("{field} must be a positive number, got {v}"),
        ))
    }
}

/// The body field names a route uses for each part of a plan, so errors name what the caller sent.
pub struct PlanFields {
    pub coin: &'static str,
    pub leverage: &'static str,
    pub price: &'static str,
    pub size: &'static str,
    pub usd: &'static str,
    pub tp: &'static str,
    pub sl: &'static str,
}

const SIGNAL_FIELDS: PlanFields = PlanFields {
    coin: "a",
    leverage: "leverage",
    price: "p",
    size: "size",
    usd: "sizeUsd",
    tp: "tp",
    sl: "sl",
};

/// A trade signal (propose, `/api/v1/trades`) as a plan: a trade, or a close.
pub fn plan_signal(
    core: &Core,
    account_id: i64,
    messenger_id: &str,
    signal: &TradeSignal,
    now: DateTime<Utc>,
) -> Result<Plan, AppError> {
    if let Some(id) = &signal.id
        && id != messenger_id
    {
        return Err(AppError::forbidden(
            "account_mismatch",
            format!("id {id:?} is not this key's account (messengerId {messenger_id})"),
        )
        .with_field("id"));
    }
    let exchange = parse_exchange(signal.exchange.as_deref(), "exchange")?;
    let direction = signal.d.as_deref().map(str::to_ascii_lowercase);
    let action = match signal.action.as_deref().map(str::to_ascii_lowercase) {
        Some(a) if a == "close" || a == "close_all" => Some(a),
        Some(other) => {
            return Err(AppError::invalid(
                "action",
                format!("action must be close or close_all, got {other:?}"),
            ));
        }
        None if direction.as_deref() == Some("close") => Some("close".to_string()),
        None => None,
    };
    if let Some(action) = action {
        let book = core.book(account_id);
        let targets: Vec<(Exchange, String)> = if action == "close_all" {
            book.positions
                .iter()
                .map(|p| (p.exchange, p.coin.clone()))
                .collect()
        } else {
            let symbol = signal.a.as_deref().ok_or_else(|| {
                AppError::invalid("a", "a: a close names the asset to close, e.g. \"BTCUSDT\"")
            })?;
            let coin = parse_coin(symbol, "a")?;
            book.positions
                .iter()
                .filter(|p| p.coin == coin && (signal.exchange.is_none() || p.exchange == exchange))
                .map(|p| (p.exchange, p.coin.clone()))
                .collect()
        };
        if targets.is_empty() {
            let what = signal.a.as_deref().unwrap_or("any asset");
            return Err(AppError::conflict(
                "no_position",
                format!("there is no open position in {what} to close"),
            ));
        }
        return Ok(Plan::Close(ClosePlan {
            kind: action,
            targets,
            fraction: 1.0,
        }));
    }
    let symbol = signal
        .a
        .as_deref()
        .ok_or_else(|| AppError::invalid("a", "a: the asset is required, e.g. \"BTCUSDT\""))?;
    let coin = parse_coin(symbol, "a")?;
    let is_buy = match direction.as_deref() {
        Some("long" | "buy") => true,
        Some("short" | "sell") => false,
        Some(other) => {
            return Err(AppError::invalid(
                "d",
                format!("d must be long, short or close, got {other:?}"),
            ));
        }
        None => {
            return Err(AppError::invalid(
                "d",
                "d: the direction is required (long, short or close)",
            ));
        }
    };
    let limit_px = match signal.o.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("market") => None,
        Some("limit") => Some(
            signal
                .p
                .ok_or_else(|| AppError::invalid("p", "p: a limit order needs its price in p"))?,
        ),
        Some(other) => {
            return Err(AppError::invalid(
                "o",
                format!("o must be market or limit, got {other:?}"),
            ));
        }
    };
    let plan = plan_trade(
        &core.market,
        now,
        exchange,
        coin,
        is_buy,
        Sizing {
            size: signal.size,
            usd: signal.size_usd,
            default_usd: core.settings.default_trade_usd,
        },
        signal.leverage.unwrap_or(core.settings.default_leverage),
        limit_px,
        signal.tp.map(Level::Price),
        signal.sl.map(Level::Price),
        signal.strategy.clone(),
        &SIGNAL_FIELDS,
    )?;
    Ok(Plan::Trade(plan))
}

/// What a plan will do, priced now.
pub fn preview(
    core: &Core,
    account_id: i64,
    plan: &Plan,
    now: DateTime<Utc>,
) -> Result<Preview, AppError> {
    let market = &core.market;
    let book = core.book(account_id);
    match plan {
        Plan::Trade(t) => {
            let mark_px = mark(market, &t.coin, now)?;
            let px = t.limit_px.unwrap_or(mark_px);
            let notional = t.size * px;
            let resolve = |level: Option<Level>, up: bool| {
                level.map(|l| match l {
                    Level::Price(p) => p,
                    Level::Percent(pct) => {
                        if up {
                            px * (1.0 + pct / 100.0)
                        } else {
                            px * (1.0 - pct / 100.0)
                        }
                    }
                })
            };
            let hypothetical = Position {
                exchange: t.exchange,
                coin: t.coin.clone(),
                szi: if t.is_buy { t.size } else { -t.size },
                entry_px: px,
                leverage: t.leverage,
                margin: notional / t.leverage as f64,
                opened_at: now,
            };
            let mut extra = serde_json::Map::new();
            if let Some(p) = book.position(t.exchange, &t.coin) {
                extra.insert(
                    "existingPosition".into(),
                    serde_json::to_value(position_row(&book, p, market, now)).unwrap_or_default(),
                );
            }
            extra.insert("referencePx".into(), json!(t.reference_px));
            Ok(Preview {
                kind: "trade".into(),
                exchange: t.exchange.as_str().into(),
                coin: t.coin.clone(),
                asset: format!("{}USDT", t.coin),
                direction: if t.is_buy { "long" } else { "short" }.into(),
                order_type: if t.limit_px.is_some() {
                    "limit"
                } else {
                    "market"
                }
                .into(),
                size: t.size,
                mark_px,
                limit_px: t.limit_px,
                notional,
                leverage: t.leverage,
                margin: notional / t.leverage as f64,
                tp: resolve(t.tp, t.is_buy),
                sl: resolve(t.sl, !t.is_buy),
                est_liquidation_px: Book::liquidation_px(&hypothetical)
                    .map(|px| super::venue::round_px(&t.coin, px)),
                strategy: t.strategy.clone(),
                closes: vec![],
                extra,
            })
        }
        Plan::Close(c) => {
            let mut closes = Vec::new();
            for (exchange, coin) in &c.targets {
                if let Some(p) = book.position(*exchange, coin) {
                    let mark_px = mark(market, coin, now)?;
                    let sz = p.szi * c.fraction;
                    closes.push(ClosePreview {
                        exchange: exchange.as_str().into(),
                        coin: coin.clone(),
                        szi: sz,
                        entry_px: p.entry_px,
                        mark_px,
                        est_pnl: (mark_px - p.entry_px) * sz,
                    });
                }
            }
            let single = closes.len() == 1;
            Ok(Preview {
                kind: c.kind.clone(),
                exchange: if single {
                    closes[0].exchange.clone()
                } else {
                    "all".into()
                },
                coin: if single {
                    closes[0].coin.clone()
                } else {
                    String::new()
                },
                asset: if single {
                    format!("{}USDT", closes[0].coin)
                } else {
                    String::new()
                },
                direction: "close".into(),
                order_type: "market".into(),
                size: closes.iter().map(|c| c.szi.abs()).sum(),
                mark_px: if single { closes[0].mark_px } else { 0.0 },
                notional: closes.iter().map(|c| (c.szi * c.mark_px).abs()).sum(),
                closes,
                ..Default::default()
            })
        }
    }
}

/// Runs a plan on a copy of the account's book. Returns the new book, what happened, and the fills;
/// nothing is committed here.
pub fn execute(
    core: &mut Core,
    account_id: i64,
    plan: &Plan,
    now: DateTime<Utc>,
) -> Result<(Book, Execution, Vec<Fill>), AppError> {
    let market = core.market.clone();
    let fees = core.fees();
    let mut book = core.book(account_id);
    let mut fills = Vec::new();
    let mut execution = Execution::default();
    match plan {
        Plan::Trade(t) => {
            let oid = core.take_oid();
            let fill_px = match t.limit_px {
                None => {
                    let fill = book
                        .market_order(
                            &market, &fees, now, oid, t.exchange, &t.coin, t.is_buy, t.size,
                            t.leverage, false,
                        )
                        .map_err(venue_error)?;
                    let px = fill.px;
                    fills.push(fill);
                    Some(px)
                }
                Some(limit) => match book
                    .limit_order(
                        &market, &fees, now, oid, t.exchange, &t.coin, t.is_buy, limit, t.size,
                        t.leverage, false,
                    )
                    .map_err(venue_error)?
                {
                    LimitOutcome::Filled(fill) => {
                        let px = fill.px;
                        fills.push(fill);
                        Some(px)
                    }
                    LimitOutcome::Resting(order) => {
                        execution
                            .statuses
                            .push(json!({"resting": {"oid": order.oid}}));
                        execution.resting.push(order_row(&order));
                        None
                    }
                },
            };
            if let Some(px) = fill_px {
                let total: f64 = fills.iter().map(|f| f.sz).sum();
                execution.statuses.push(json!({"filled": {
                    "totalSz": crate::api::model::fmt_decimal(total),
                    "avgPx": crate::api::model::fmt_decimal(px),
                    "oid": oid,
                }}));
                let levels = [
                    (t.tp, OrderKind::TakeProfitMarket),
                    (t.sl, OrderKind::StopMarket),
                ];
                for (level, kind) in levels {
                    let Some(level) = level else { continue };
                    let is_tp = kind == OrderKind::TakeProfitMarket;
                    let trigger = match level {
                        Level::Price(p) => p,
                        Level::Percent(pct) => {
                            let up = is_tp == t.is_buy;
                            super::venue::round_px(
                                &t.coin,
                                if up {
                                    px * (1.0 + pct / 100.0)
                                } else {
                                    px * (1.0 - pct / 100.0)
                                },
                            )
                        }
                    };
                    let toid = core.take_oid();
                    let order = book
                        .trigger_order(&market, now, toid, t.exchange, &t.coin, kind, trigger, None)
                        .map_err(|e| {
                            let mut err = venue_error(e);
                            err.message = format!("{}; the trade was not executed", err.message);
                            err
                        })?;
                    execution.triggers.push(order_row(&order));
                }
            }
        }
        Plan::Close(c) => {
            for (exchange, coin) in &c.targets {
                if book.position(*exchange, coin).is_none() {
                    continue;
                }
                let oid = core.take_oid();
                let fill = book
                    .close(&market, &fees, now, oid, *exchange, coin, c.fraction)
                    .map_err(venue_error)?;
                execution.statuses.push(json!({"filled": {
                    "totalSz": crate::api::model::fmt_decimal(fill.sz),
                    "avgPx": crate::api::model::fmt_decimal(fill.px),
                    "oid": oid,
                }}));
                fills.push(fill);
            }
            if fills.is_empty() {
                return Err(AppError::conflict(
                    "no_position",
                    "the positions this close was staged for are no longer open",
                ));
            }
        }
    }
    execution.fills = fills.iter().map(fill_row).collect();
    Ok((book, execution, fills))
}

pub fn fill_row(f: &Fill) -> FillRow {
    FillRow {
        exchange: f.exchange.as_str().into(),
        oid: f.oid,
        coin: f.coin.clone(),
        side: if f.is_buy { "B" } else { "A" }.into(),
        px: f.px,
        sz: f.sz,
        fee: f.fee,
        closed_pnl: f.closed_pnl,
        dir: f.dir.clone(),
        time: f.time.timestamp_millis(),
        extra: Default::default(),
    }
}

pub fn order_row(o: &Order) -> OpenOrderRow {
    OpenOrderRow {
        exchange: o.exchange.as_str().into(),
        oid: o.oid,
        coin: o.coin.clone(),
        side: if o.is_buy { "B" } else { "A" }.into(),
        limit_px: o.limit_px,
        sz: o.sz,
        orig_sz: o.orig_sz,
        order_type: o.kind.venue_name().into(),
        trigger_px: o.trigger_px,
        trigger_condition: o.trigger_condition().unwrap_or_else(|| "N/A".into()),
        is_trigger: o.trigger_px.is_some(),
        is_position_tpsl: o.is_position_tpsl,
        reduce_only: o.reduce_only,
        tif: (o.kind == OrderKind::Limit).then(|| "Gtc".to_string()),
        timestamp: o.timestamp.timestamp_millis(),
        extra: Default::default(),
    }
}

pub fn position_id(p: &Position) -> String {
    format!("{}:{}", p.exchange.as_str(), p.coin)
}

pub fn position_row(book: &Book, p: &Position, market: &Market, now: DateTime<Utc>) -> PositionRow {
    let v = book.position_view(p, market, now);
    PositionRow {
        exchange: p.exchange.as_str().into(),
        position_id: position_id(p),
        coin: p.coin.clone(),
        side: if p.szi >= 0.0 { "long" } else { "short" }.into(),
        szi: p.szi,
        entry_px: p.entry_px,
        mark_px: super::venue::round_px(&p.coin, v.mark_px),
        position_value: v.position_value,
        unrealized_pnl: v.unrealized_pnl,
        return_on_equity: v.return_on_equity,
        liquidation_px: v
            .liquidation_px
            .map(|px| super::venue::round_px(&p.coin, px)),
        leverage: Leverage {
            kind: "isolated".into(),
            value: p.leverage,
        },
        margin_used: p.margin,
        max_leverage: v.max_leverage,
        cum_funding: CumFunding::default(),
        extra: Default::default(),
    }
}

/// One line for people: what a previewed plan will do.
pub fn summarize_preview(p: &Preview) -> String {
    if p.kind == "trade" {
        let mut s = format!(
            "{} {} {} (~{} USDC at {}, {}x, margin ~{} USDC) on {}",
            p.direction,
            crate::api::model::fmt_decimal(p.size),
            p.coin,
            crate::api::model::fmt_decimal((p.notional * 100.0).round() / 100.0),
            crate::api::model::fmt_decimal(p.limit_px.unwrap_or(p.mark_px)),
            p.leverage,
            crate::api::model::fmt_decimal((p.margin * 100.0).round() / 100.0),
            p.exchange
        );
        if let Some(tp) = p.tp {
            s.push_str(&format!(", TP {}", crate::api::model::fmt_decimal(tp)));
        }
        if let Some(sl) = p.sl {
            s.push_str(&format!(", SL {}", crate::api::model::fmt_decimal(sl)));
        }
        s
    } else {
        let what: Vec<String> = p
            .closes
            .iter()
            .map(|c| {
                format!(
                    "{} {} on {}",
                    crate::api::model::fmt_decimal(c.szi),
                    c.coin,
                    c.exchange
                )
            })
            .collect();
        format!("a close of {}", what.join(", "))
    }
}
