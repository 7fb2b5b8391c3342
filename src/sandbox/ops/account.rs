//! Account and observation: whoami, usage, positions, PnL, audit logs, tool catalog, open orders,
//! and the OpenAPI document.

use super::{AppError, Call, ErrorKind, Reply};
use crate::api::catalog::{OPERATIONS, Scope, ScopeRule};
use crate::api::model::{
    AuditEntry, AuditLogs, ExchangeBreakdown, MarginSummary, OpenOrders, PnlPeriods, PnlSummary,
    Positions, ToolCatalog, ToolEntry, Whoami, WhoamiSummary,
};
use crate::api::openapi;
use crate::sandbox::core::View;
use crate::sandbox::quota;
use crate::sandbox::trading::{order_row, position_row};
use crate::sandbox::venue::Exchange;

use chrono::{Duration, Utc};
use serde_json::{Value, json};

pub fn whoami(core: &View, call: &Call) -> Result<Reply, AppError> {
    let c = &call.caller;
    let with_summary = match call.query("include") {
        None | Some("") => false,
        Some("summary") => true,
        Some(other) => {
            return Err(AppError::invalid_query(
                "include",
                format!("include accepts only \"summary\", got {other:?}"),
            ));
        }
    };
    let mut who = Whoami {
        messenger_id: c.messenger_id.clone(),
        account_id: Some(c.messenger_id.clone()),
        wallet_address: Some(c.wallet.clone()),
        scope: Some(c.scope.as_str().into()),
        is_legacy_key: c.scope == Scope::Legacy,
        can_use_trades: ScopeRule::Trades.allows(c.scope),
        can_use_platform_orders: ScopeRule::Platform.allows(c.scope),
        must_stage: c.scope == Scope::McpMutate,
        ..Default::default()
    };
    if with_summary {
        let book = core.book(c.account_id);
        let equity = book.equity(core.market, call.now);
        let staged = core
            .store
            .proposals(c.account_id, 200)?
            .iter()
            .filter(|p| p.status == "staged" && p.expires_at > call.now)
            .count() as u32;
        who.summary = Some(WhoamiSummary {
            venue_ready: true,
            wallet_connected: true,
            builder_fee_approved: crate::sandbox::builder_fee::approval(
                &core.store.conn,
                c.account_id,
                core.settings,
            )?
            .is_some(),
            paper_trading: Some(true),
            equity: Some(equity),
            open_positions: book.positions.len() as u32,
            staged_proposals: staged,
            ..Default::default()
        });
        let route = if who.must_stage {
            "stage trades with propose, then confirm after human approval"
        } else if who.can_use_platform_orders && !who.can_use_trades {
            "place platform orders with POST /api/v1/orders"
        } else {
            "trade with propose/confirm or POST /api/v1/trades"
        };
        who.json_summary = Some(format!(
            "Account {} ({} key) on the paper venue: equity {:.2} USDC, {} open position(s), {} staged proposal(s); {route}.",
            c.messenger_id,
            c.scope,
            equity,
            book.positions.len(),
            staged
        ));
    }
    Reply::ok(who)
}

pub fn get_usage(core: &View, call: &Call) -> Result<Reply, AppError> {
    let mut usage = quota::usage(core, &call.caller, call.now)?;
    usage.payment =
        crate::sandbox::payments::usage(core, call.caller.account_id, &quota::day_of(call.now))?;
    Reply::ok(usage)
}

pub fn get_positions(core: &View, call: &Call) -> Result<Reply, AppError> {
    let book = core.book(call.caller.account_id);
    let mut positions: Vec<_> = book.positions.iter().collect();
    // Venue first, then venue2; by coin within each.
    positions.sort_by(|a, b| (a.exchange, &a.coin).cmp(&(b.exchange, &b.coin)));
    let rows = positions
        .into_iter()
        .map(|p| position_row(&book, p, core.market, call.now))
        .collect();
    Reply::ok(Positions {
        positions: rows,
        extra: Default::default(),
    })
}

pub fn pnl_summary(core: &View, call: &Call) -> Result<Reply, AppError> {
    let id = call.caller.account_id;
    let now = call.now;
    let book = core.book(id);
    let market = &core.market;
    let equity = book.equity(market, now);
    let mut breakdown = Vec::new();
    let (mut total_upnl, mut total_ntl) = (0.0, 0.0);
    for exchange in Exchange::ALL {
        let mut row = ExchangeBreakdown {
            exchange: exchange.as_str().into(),
            ..Default::default()
        };
        for p in book.positions.iter().filter(|p| p.exchange == exchange) {
            let v = book.position_view(p, market, now);
            row.unrealized_pnl += v.unrealized_pnl;
            row.margin_used += p.margin;
            row.positions += 1;
            total_ntl += v.position_value;
        }
        row.account_value = row.margin_used + row.unrealized_pnl;
        total_upnl += row.unrealized_pnl;
        breakdown.push(row);
    }
    let account = core
        .store
        .account(id)?
        .ok_or_else(|| AppError::not_found("the account no longer exists"))?;
    let day_start = now
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .map(|t| t.and_utc())
        .unwrap_or(now);
    let period = |since: chrono::DateTime<Utc>| -> Result<f64, AppError> {
        Ok(equity
            - core
                .store
                .equity_at(id, since)?
                .unwrap_or(account.initial_equity))
    };
    let pnl = PnlPeriods {
        total: equity - account.initial_equity,
        today: period(day_start)?,
        week: period(now - Duration::days(7))?,
        month: period(now - Duration::days(30))?,
    };
    let realized = core.store.realized(id)?;
    let margin_used = book.margin_used();
    let available = book.available(market, now);
    let summary = PnlSummary {
        total_portfolio_value: equity,
        total_unrealized_pnl: total_upnl,
        total_realized_pnl: Some(realized),
        total_positions: book.positions.len() as u32,
        pnl,
        exchange_breakdown: breakdown,
        margin_summary: MarginSummary {
            account_value: equity,
            total_margin_used: Some(margin_used),
            total_ntl_pos: total_ntl,
            total_raw_usd: book.cash,
        },
        withdrawable: Some(available.max(0.0)),
        as_of: Some(now),
        extra: Default::default(),
    };
    Reply::ok(summary)
}

pub fn list_audit_logs(core: &View, call: &Call) -> Result<Reply, AppError> {
    if core.settings.audit_log_unavailable {
        return Err(AppError::new(
            ErrorKind::Unavailable,
            "audit_unavailable",
            "the audit log store is down; retry later",
        ));
    }
    let limit = match call.query("limit") {
        None | Some("") => 50,
        Some(raw) => match raw.trim().parse::<u64>() {
            Ok(n) if n >= 1 => n.min(500) as usize,
            _ => {
                return Err(AppError::invalid_query(
                    "limit",
                    format!("limit must be a whole number from 1 to 500, got {raw:?}"),
                ));
            }
        },
    };
    let logs = core
        .store
        .audit(call.caller.account_id, limit)?
        .into_iter()
        .map(|(id, time, row)| AuditEntry {
            id,
            time,
            operation: row.operation,
            outcome: row.outcome,
            http_status: row.http_status,
            proposal_id: row.proposal_id,
            oid: row.oid,
            error_code: row.error_code,
            message: row.message,
            extra: Default::default(),
        })
        .collect::<Vec<_>>();
    let mut extra = serde_json::Map::new();
    extra.insert("count".into(), json!(logs.len()));
    extra.insert("limit".into(), json!(limit));
    Reply::ok(AuditLogs { logs, extra })
}

/// Where this sandbox is reachable, from the request's Host header.
fn base_url(call: &Call) -> String {
    let host = call.header("host").unwrap_or("127.0.0.1:8787");
    format!("http://{host}")
}

pub fn list_tools(_core: &View, call: &Call) -> Result<Reply, AppError> {
    let base = base_url(call);
    let openapi_url = format!("{base}/api/agent/openapi.json");
    let tools: Vec<ToolEntry> = OPERATIONS
        .iter()
        .map(|op| ToolEntry {
            name: op.name.into(),
            description: op.summary.into(),
            method: op.method.as_str().into(),
            path: op.path.into(),
            auth: op.auth.describe().into(),
            status: "live".into(),
            query_params: (!op.query.is_empty()).then(|| json!(op.query)),
            example_body: op
                .example_body
                .and_then(|b| serde_json::from_str::<Value>(b).ok()),
            extra: Default::default(),
        })
        .collect();
    let example_propose = OPERATIONS
        .iter()
        .find(|o| o.name == "propose_trade")
        .and_then(|o| o.example_body)
        .and_then(|b| serde_json::from_str::<Value>(b).ok())
        .map(|mut v| {
            v["id"] = json!(call.caller.messenger_id);
            v
        })
        .unwrap_or(Value::Null);
    let catalog = ToolCatalog {
        success: true,
        platform: "agentdesk-sandbox".into(),
        tools,
        openapi_url: openapi_url.clone(),
        onboarding: json!({
            "platform": "agentdesk-sandbox",
            "baseUrl": base,
            "tools": OPERATIONS.iter().map(|o| o.name).collect::<Vec<_>>(),
            "install": {
                "env": {
                    "AGENTDESK_BASE_URL": base,
                    "AGENTDESK_API_KEY": "<your API key>",
                },
                "header": "x-api-key",
            },
            "onboardingUrl": format!("{base}/api/delegated/tools"),
            "openapiUrl": openapi_url,
            "recommendedFlow": [
                "GET /api/delegated/whoami?include=summary",
                "GET /api/delegated/usage",
                "GET /api/delegated/strategies/top-backtests",
                "GET /api/delegated/strategies/top-optimized-combos",
                "POST /api/delegated/propose",
                "POST /api/delegated/confirm (after human approval, within 5 minutes)",
            ],
            "docs": "Every operation answers JSON with success true or false; errors carry error.code, error.message and, for bad input, error.field.",
            "examplePropose": example_propose,
        }),
        extra: Default::default(),
    };
    Reply::ok(catalog)
}

pub fn list_open_orders(core: &View, call: &Call) -> Result<Reply, AppError> {
    let which = call.query("exchange").unwrap_or("all");
    let filter = match which {
        "all" | "" => None,
        other => Some(Exchange::parse(other).ok_or_else(|| {
            AppError::invalid_query(
                "exchange",
                format!("exchange must be venue, venue2 or all, got {other:?}"),
            )
        })?),
    };
    let book = core.book(call.caller.account_id);
    let mut orders: Vec<_> = book
        .orders
        .iter()
        .filter(|o| filter.is_none_or(|e| o.exchange == e))
        .collect();
    orders.sort_by_key(|o| (o.exchange, std::cmp::Reverse(o.timestamp), o.oid));
    Reply::ok(OpenOrders {
        exchange: if which.is_empty() { "all" } else { which }.into(),
        orders: orders.into_iter().map(order_row).collect(),
        extra: Default::default(),
    })
}

pub fn get_openapi(_core: &View, call: &Call) -> Result<Reply, AppError> {
    // The document is the body itself, not wrapped: OpenAPI tools read it as is.
    Ok(Reply {
        status: 200,
        body: openapi::document(&base_url(call)),
        proposal_id: None,
        oid: None,
        replay: false,
        data_json: None,
    })
}
