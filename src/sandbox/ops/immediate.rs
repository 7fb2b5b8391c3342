//! Immediate trading: trade signals (`/api/v1/trades`) and platform orders, closes and cancels.

use super::{AppError, Call, ErrorKind, Reply};
use crate::api::model::{
    CancelRequest, CancelResult, ExecutionResult, PlatformClose, PlatformOrder, TradeSignal,
};
use crate::sandbox::builder_fee;
use crate::sandbox::core::Core;
use crate::sandbox::store::Store;
use crate::sandbox::trading::{
    self, ClosePlan, Level, Plan, PlanFields, Sizing, order_row, parse_coin, parse_exchange,
};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Executes a plan now and commits it; `record` adds route-specific writes to the same transaction.
fn execute_now(
    core: &mut Core,
    call: &Call,
    plan: &Plan,
    record: impl FnOnce(&rusqlite::Transaction, &ExecutionResult) -> Result<(), AppError>,
) -> Result<(ExecutionResult, Option<u64>), AppError> {
    let account = call.caller.account_id;
    let (mut book, mut execution, fills) = trading::execute(core, account, plan, call.now)?;
    // Orders that may fill later (resting limits, TP/SL triggers) owe the fee when they do.
    let mut later = Vec::new();
    if matches!(
        call.op.name,
        "platform_place_order" | "platform_close_position"
    ) {
        builder_fee::charge(core, account, &mut book, &mut execution, &fills)?;
        if let Some(approval) = builder_fee::approval(&core.store.conn, account, &core.settings)? {
            let rate = approval.rate();
            later.extend(
                execution
                    .resting
                    .iter()
                    .chain(&execution.triggers)
                    .map(|o| (o.oid, rate)),
            );
        }
    }
    let oid = fills
        .first()
        .map(|f| f.oid)
        .or_else(|| execution.resting.first().map(|o| o.oid));
    let summary = execution
        .fills
        .iter()
        .map(|f| {
            format!(
                "{} {} {} at {}",
                if f.side == "B" { "bought" } else { "sold" },
                f.sz,
                f.coin,
                f.px
            )
        })
        .chain(
            execution
                .resting
                .iter()
                .map(|o| format!("limit {} resting at {}", o.oid, o.limit_px)),
        )
        .collect::<Vec<_>>()
        .join("; ");
    let status = if execution.fills.is_empty() {
        "resting"
    } else {
        "filled"
    };
    let result = ExecutionResult {
        status: status.into(),
        json_summary: Some(format!("{summary}.")),
        execution,
        ..Default::default()
    };
    core.commit(account, book, &fills, call.now, |tx| {
        for (oid, rate) in &later {
            crate::sandbox::store::builder_fee::track_order(tx, account, *oid, *rate)?;
        }
        record(tx, &result)
    })?;
    Ok((result, oid))
}

/// `POST /api/v1/trades`: the signal executes on the caller's account now. The fan-out choice is
/// recorded with the signal; `fanout: false` or `X-Service-Fanout: 0` opts out.
pub fn place_order(core: &mut Core, call: &Call) -> Result<Reply, AppError> {
    let signal: TradeSignal = call.json()?;
    let c = &call.caller;
    let header_off = call
        .header("x-service-fanout")
        .is_some_and(|v| v.trim() == "0" || v.trim().eq_ignore_ascii_case("false"));
    let fanout = signal.fanout != Some(false) && !header_off;
    let plan = trading::plan_signal(core, c.account_id, &c.messenger_id, &signal, call.now)?;
    let body = String::from_utf8_lossy(&call.body).into_owned();
    let (account, key) = (c.account_id, c.key_id);
    let now = call.now;
    let (mut result, oid) = execute_now(core, call, &plan, |tx, _| {
        Store::insert_trade_signal(tx, account, key, "trades", &body, fanout, now)?;
        Ok(())
    })?;
    result.execution.fanout = Some(fanout);
    if fanout {
        // After the commit: followers' copies and destination deliveries never fail the trade.
        crate::sandbox::signals::fan_out_trade(
            core,
            account,
            &c.messenger_id,
            &signal,
            &result,
            now,
        );
    }
    Ok(Reply::ok(result)?.with_oid(oid))
}

const PLATFORM_FIELDS: PlanFields = PlanFields {
    coin: "pair",
    leverage: "leverage",
    price: "limitPrice",
    size: "size",
    usd: "usdAmount",
    tp: "tpPercentage",
    sl: "slPercentage",
};

fn check_venue_credentials(
    api_key: &Option<String>,
    wallet: &Option<String>,
) -> Result<(), AppError> {
    match (api_key, wallet) {
        (None, None) => Ok(()),
        (Some(_), None) => Err(AppError::invalid(
            "venueWallet",
            "venueWallet must be sent together with venueApiKey",
        )),
        (None, Some(_)) => Err(AppError::invalid(
            "venueApiKey",
            "venueApiKey must be sent together with venueWallet",
        )),
        (Some(key), Some(w)) => {
            if key.trim().is_empty() {
                return Err(AppError::invalid(
                    "venueApiKey",
                    "venueApiKey must not be empty",
                ));
            }
            let hex = w.strip_prefix("0x").unwrap_or("");
            if hex.len() != 40 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(AppError::invalid(
                    "venueWallet",
                    format!("venueWallet must be a 0x-prefixed 20-byte hex address, got {w:?}"),
                ));
            }
            Ok(())
        }
    }
}

/// The builder-fee gate for platform orders, closes and cancels: the account's venue wallet must
/// have approved the sandbox's builder (`approve_builder_fee`), else 409 `builder_fee_not_approved`.
fn builder_fee_gate(core: &Core, call: &Call) -> Result<(), AppError> {
    let c = &call.caller;
    if builder_fee::approval(&core.store.conn, c.account_id, &core.settings)?.is_some() {
        return Ok(());
    }
    Err(AppError::conflict(
        "builder_fee_not_approved",
        format!(
            "platform orders, closes and cancels need an approved builder fee: GET /api/v1/venue/builder-fee?venueWallet={}, sign its typedData (EIP-712) with that wallet, then POST venueWallet, nonce, signature and signatureChainId to /api/v1/venue/builder-fee",
            c.wallet
        ),
    ))
}

fn plan_platform_order(core: &Core, call: &Call, order: &PlatformOrder) -> Result<Plan, AppError> {
    check_venue_credentials(&order.venue_api_key, &order.venue_wallet)?;
    let coin = parse_coin(&order.pair, "pair")?;
    let is_buy = match order.side.to_ascii_lowercase().as_str() {
        "long" | "buy" => true,
        "short" | "sell" => false,
        other => {
            return Err(AppError::invalid(
                "side",
                format!("side must be long or short, got {other:?}"),
            ));
        }
    };
    let exchange = parse_exchange(order.exchange.as_deref(), "exchange")?;
    let limit_px = match order
        .order_type
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("market") => None,
        Some("limit") => Some(order.limit_price.ok_or_else(|| {
            AppError::invalid(
                "limitPrice",
                "limitPrice is required when orderType is limit",
            )
        })?),
        Some(other) => {
            return Err(AppError::invalid(
                "orderType",
                format!("orderType must be market or limit, got {other:?}"),
            ));
        }
    };
    let leverage = order.leverage.unwrap_or(1);
    let mode = order.sizing_mode.as_deref().unwrap_or("account");
    let sizing = match mode {
        "account" => {
            let pct = order.account_percentage.ok_or_else(|| {
                AppError::invalid(
                    "accountPercentage",
                    "accountPercentage is required when sizingMode is account",
                )
            })?;
            if !(pct.is_finite() && pct > 0.0 && pct <= 100.0) {
                return Err(AppError::invalid(
                    "accountPercentage",
                    format!("accountPercentage must be above 0 and at most 100, got {pct}"),
                ));
            }
            let equity = core
                .book(call.caller.account_id)
                .equity(&core.market, call.now);
            Sizing {
                size: None,
                usd: Some(equity * pct / 100.0 * leverage as f64),
                default_usd: 0.0,
            }
        }
        "usd" => Sizing {
            size: None,
            usd: Some(order.usd_amount.ok_or_else(|| {
                AppError::invalid("usdAmount", "usdAmount is required when sizingMode is usd")
            })?),
            default_usd: 0.0,
        },
        "size" => Sizing {
            size: Some(order.size.ok_or_else(|| {
                AppError::invalid("size", "size is required when sizingMode is size")
            })?),
            usd: None,
            default_usd: 0.0,
        },
        other => {
            return Err(AppError::invalid(
                "sizingMode",
                format!("sizingMode must be account, usd or size, got {other:?}"),
            ));
        }
    };
    let level = |enabled: bool, kind: &Option<String>, pct: Option<f64>, prefix: &str| {
        if !enabled {
            return Ok(None);
        }
        match kind.as_deref() {
            None | Some("percentage") => {}
            Some(other) => {
                return Err(AppError::invalid(
                    format!("{prefix}Type"),
                    format!("{prefix}Type must be percentage, got {other:?}"),
                ));
            }
        }
        let pct = pct.ok_or_else(|| {
            AppError::invalid(
                format!("{prefix}Percentage"),
                format!("{prefix}Percentage is required when {prefix}Enabled is true"),
            )
        })?;
        Ok(Some(Level::Percent(pct)))
    };
    let tp = level(order.tp_enabled, &order.tp_type, order.tp_percentage, "tp")?;
    let sl = level(order.sl_enabled, &order.sl_type, order.sl_percentage, "sl")?;
    let plan = trading::plan_trade(
        &core.market,
        call.now,
        exchange,
        coin,
        is_buy,
        sizing,
        leverage,
        limit_px,
        tp,
        sl,
        None,
        &PLATFORM_FIELDS,
    )?;
    Ok(Plan::Trade(plan))
}

/// `POST /api/v1/orders`. With an Idempotency-Key, the first completed answer is stored with a
/// hash of the body: the same key and body get that answer again, without a second order; the same
/// key with another body is a 422.
pub fn platform_place_order(core: &mut Core, call: &Call) -> Result<Reply, AppError> {
    let idem_key = call
        .header("idempotency-key")
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_string);
    if let Some(k) = &idem_key
        && k.len() > 255
    {
        return Err(AppError::invalid(
            "Idempotency-Key",
            "the Idempotency-Key header must be at most 255 characters",
        ));
    }
    let body_hash = body_hash(&call.body);
    if let Some(key) = &idem_key
        && let Some((hash, status, response)) =
            core.store.idempotent_response(call.caller.key_id, key)?
    {
        if hash != body_hash {
            return Err(AppError::new(
                ErrorKind::IdempotencyReused,
                "idempotency_key_reused",
                format!(
                    "Idempotency-Key {key:?} was already used with a different body; use a new key for a new order"
                ),
            ));
        }
        let body: Value = serde_json::from_str(&response).map_err(AppError::internal)?;
        let oid = body
            .pointer("/execution/fills/0/oid")
            .and_then(Value::as_u64);
        return Ok(Reply {
            status,
            body,
            proposal_id: None,
            oid,
            replay: true,
            data_json: None,
        });
    }
    let outcome = (|| {
        let order: PlatformOrder = call.json()?;
        // The body is checked first: a bad one is a 400 whether or not the fee is approved.
        let plan = plan_platform_order(core, call, &order)?;
        builder_fee_gate(core, call)?;
        let (key_id, now) = (call.caller.key_id, call.now);
        let (result, oid) = execute_now(core, call, &plan, |tx, result| {
            if let Some(idem) = &idem_key {
                // Stored in the order's own transaction: there is no moment where the order exists
                // and its idempotency record does not.
                let text =
                    serde_json::to_string(&Reply::ok(result)?.body).map_err(AppError::internal)?;
                Store::save_idempotent_response(tx, key_id, idem, &body_hash, 200, &text, now)?;
            }
            Ok(())
        })?;
        Ok::<_, AppError>((result, oid))
    })();
    match outcome {
        Ok((result, oid)) => Ok(Reply::ok(result)?.with_oid(oid)),
        Err(e) => {
            // Input errors are remembered too, so a retry of the same bad body answers the same.
            if let Some(idem) = &idem_key
                && e.kind.is_caller_fault()
            {
                save_response(core, call, idem, &body_hash, e.status(), &e.body())?;
            }
            Err(e)
        }
    }
}

fn save_response(
    core: &mut Core,
    call: &Call,
    idem: &str,
    hash: &str,
    status: u16,
    body: &Value,
) -> Result<(), AppError> {
    let text = serde_json::to_string(body).map_err(AppError::internal)?;
    Store::save_idempotent_response(
        &core.store.conn,
        call.caller.key_id,
        idem,
        hash,
        status,
        &text,
        call.now,
    )?;
    Ok(())
}

/// Hash of the body's JSON value (key order and whitespace do not matter), or of its bytes when it
/// is not JSON.
fn body_hash(body: &[u8]) -> String {
    let canonical = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| serde_json::to_vec(&v).ok())
        .unwrap_or_else(|| body.to_vec());
    hex::encode(Sha256::digest(&canonical))
}

pub fn platform_close_position(core: &mut Core, call: &Call) -> Result<Reply, AppError> {
    let req: PlatformClose = call.json()?;
    check_venue_credentials(&req.venue_api_key, &req.venue_wallet)?;
    let percentage = req.percentage.unwrap_or(100.0);
    if !(percentage.is_finite() && percentage > 0.0 && percentage <= 100.0) {
        return Err(AppError::invalid(
            "percentage",
            format!("percentage must be above 0 and at most 100, got {percentage}"),
        ));
    }
    let (exchange, coin) = match (&req.position_id, &req.pair) {
        (Some(id), _) => {
            let (ex, coin) = id.split_once(':').ok_or_else(|| {
                AppError::invalid(
                    "positionId",
                    format!(
                        "positionId has the shape venue:BTC (as get_positions lists it), got {id:?}"
                    ),
                )
            })?;
            (
                parse_exchange(Some(ex), "positionId")?,
                parse_coin(coin, "positionId")?,
            )
        }
        (None, Some(pair)) => (
            parse_exchange(req.exchange.as_deref(), "exchange")?,
            parse_coin(pair, "pair")?,
        ),
        (None, None) => {
            return Err(AppError::invalid(
                "pair",
                "pair or positionId selects the position to close; closing everything (close_all) goes through propose, then confirm",
            ));
        }
    };
    builder_fee_gate(core, call)?;
    if core
        .book(call.caller.account_id)
        .position(exchange, coin)
        .is_none()
    {
        return Err(AppError::conflict(
            "no_position",
            format!("there is no open {coin} position on {}", exchange.as_str()),
        ));
    }
    let plan = Plan::Close(ClosePlan {
        kind: "close".into(),
        targets: vec![(exchange, coin.to_string())],
        fraction: percentage / 100.0,
    });
    let (result, oid) = execute_now(core, call, &plan, |_, _| Ok(()))?;
    Ok(Reply::ok(result)?.with_oid(oid))
}

pub fn platform_cancel_order(core: &mut Core, call: &Call) -> Result<Reply, AppError> {
    let req: CancelRequest = call.json()?;
    check_venue_credentials(&req.venue_api_key, &req.venue_wallet)?;
    let coin = parse_coin(&req.coin, "coin")?;
    let oids = req.oid.to_vec();
    if oids.is_empty() {
        return Err(AppError::invalid("oid", "oid must name at least one order"));
    }
    builder_fee_gate(core, call)?;
    let account = call.caller.account_id;
    let mut book = core.book(account);
    let mut result = CancelResult::default();
    let mut errors = Vec::new();
    let mut cancelled_orders = Vec::new();
    for oid in &oids {
        match book.cancel(*oid, coin) {
            Ok(order) => {
                result.statuses.push(json!("success"));
                result.cancelled.push(order.oid);
                cancelled_orders.push(order_row(&order));
            }
            Err(e) => {
                result.statuses.push(json!({ "error": e.to_string() }));
                errors.push(e);
            }
        }
    }
    if result.cancelled.is_empty() {
        let first = errors.into_iter().next();
        let message = first
            .map(|e| e.to_string())
            .unwrap_or_else(|| "nothing was cancelled".into());
        return Err(AppError::not_found(message).with_field("oid"));
    }
    result
        .extra
        .insert("orders".into(), json!(cancelled_orders));
    core.commit(account, book, &[], call.now, |_| Ok(()))?;
    let oid = result.cancelled.first().copied();
    Ok(Reply::ok(result)?.with_oid(oid))
}
