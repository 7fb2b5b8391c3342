//! Seeded, deterministic data for the console tests: a fixed clock, proposals, positions, orders, a
//! PnL summary with equity history, audit rows, and helpers to drive `App::update` and to render a
//! frame as plain text.

use crate::api::ApiError;
use crate::api::model::{
    AuditEntry, ClosePreview, Execution, ExecutionResult, FillRow, Leverage, MarginSummary,
    OpenOrderRow, PnlPeriods, PnlSummary, PositionRow, Preview, Proposal, QuotaCounter, Usage,
    Whoami,
};
use crate::console::action::{Action, Answer, Effect, Payload, Resource};
use crate::console::app::{App, ServiceInfo};
use crate::console::feeds::Options;
use crate::console::inbox::{Decision, DecisionKind, InboxItem, LocalState, Source};
use crate::console::keymap::Keymap;
use crate::console::modal::Modal;
use crate::console::theme::Theme;
use crate::console::view;
use chrono::{DateTime, Duration as TimeDelta, TimeZone, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::BTreeMap;
use std::time::Duration;

/// Proposals live this long on the service.
pub const LIFETIME: TimeDelta = TimeDelta::minutes(5);
pub const LATENCY: Duration = Duration::from_millis(42);

/// The fixed "now" every test starts from: 2025-03-14 12:00:00 UTC.
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 3, 14, 12, 0, 0).unwrap()
}

pub fn secs(n: i64) -> TimeDelta {
    TimeDelta::seconds(n)
}

pub fn ms(n: i64) -> TimeDelta {
    TimeDelta::milliseconds(n)
}

pub fn service() -> ServiceInfo {
    ServiceInfo {
        host: "127.0.0.1:7400".into(),
        sandbox: true,
        key_fingerprint: "ak_…3f9c".into(),
    }
}

pub fn app_with(options: Options) -> App {
    App::new(service(), options, Keymap::default(), t0())
}

pub fn new_app() -> App {
    app_with(Options::default())
}

/// Every resource polled once an hour: no fetch falls due during a lifecycle test, so the effects
/// of a key press are exactly what the key caused.
pub fn quiet_options() -> Options {
    Options {
        poll: Resource::ALL
            .iter()
            .map(|r| (*r, Duration::from_secs(3600)))
            .collect::<BTreeMap<_, _>>(),
        bell: true,
    }
}

// ---- driving update ----------------------------------------------------------------------------

pub fn key(c: char) -> Action {
    Action::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

pub fn code(code: KeyCode) -> Action {
    Action::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

pub fn ctrl(c: char) -> Action {
    Action::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

/// Types `text` key by key and returns every effect the keys produced.
pub fn type_text(app: &mut App, text: &str) -> Vec<Effect> {
    text.chars().flat_map(|c| app.update(key(c))).collect()
}

pub fn loaded(resource: Resource, payload: Payload, at: DateTime<Utc>) -> Action {
    Action::answered(
        at,
        LATENCY,
        Answer::Loaded {
            resource,
            result: Ok(payload),
        },
    )
}

pub fn failed(resource: Resource, error: ApiError, at: DateTime<Utc>) -> Action {
    Action::answered(
        at,
        LATENCY,
        Answer::Loaded {
            resource,
            result: Err(error),
        },
    )
}

pub fn proposals(list: Vec<Proposal>, at: DateTime<Utc>) -> Action {
    loaded(Resource::Proposals, Payload::Proposals(list), at)
}

/// An empty but valid answer for each resource.
pub fn empty_payload(resource: Resource) -> Payload {
    match resource {
        Resource::Whoami => Payload::Whoami(Box::default()),
        Resource::Positions => Payload::Positions(vec![]),
        Resource::Orders => Payload::Orders(vec![]),
        Resource::Pnl => Payload::Pnl(Box::default()),
        Resource::Proposals => Payload::Proposals(vec![]),
        Resource::Usage => Payload::Usage(Box::default()),
        Resource::Audit => Payload::Audit(vec![]),
    }
}

pub fn fetches(fx: &[Effect]) -> Vec<Resource> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Fetch(r) => Some(*r),
            _ => None,
        })
        .collect()
}

pub fn journal_lines(fx: &[Effect]) -> Vec<serde_json::Value> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Journal(line) => {
                Some(serde_json::from_str(line).expect("a journal line is one JSON object"))
            }
            _ => None,
        })
        .collect()
}

pub fn bells(fx: &[Effect]) -> usize {
    fx.iter().filter(|e| **e == Effect::Bell).count()
}

pub fn confirms(fx: &[Effect]) -> Vec<String> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Confirm(id) => Some(id.clone()),
            _ => None,
        })
        .collect()
}

pub fn toast_texts(app: &App) -> Vec<String> {
    app.toasts.iter().map(|t| t.text.clone()).collect()
}

// ---- proposals ---------------------------------------------------------------------------------

#[allow(clippy::too_many_arguments)]
pub fn trade_preview(
    exchange: &str,
    coin: &str,
    direction: &str,
    size: f64,
    mark: f64,
    leverage: u32,
    tp: Option<f64>,
    sl: Option<f64>,
) -> Preview {
    let notional = size * mark;
    Preview {
        kind: "trade".into(),
        exchange: exchange.into(),
        coin: coin.into(),
        asset: format!("{coin}USDT"),
        direction: direction.into(),
        order_type: "market".into(),
        size,
        mark_px: mark,
        notional,
        leverage,
        margin: notional / leverage.max(1) as f64,
        tp,
        sl,
        ..Preview::default()
    }
}

/// A staged proposal created at `created_at`, expiring five minutes later.
pub fn proposal(id: &str, created_at: DateTime<Utc>, preview: Preview) -> Proposal {
    Proposal {
        proposal_id: id.into(),
        status: "staged".into(),
        kind: preview.kind.clone(),
        created_at: Some(created_at),
        expires_at: Some(created_at + LIFETIME),
        preview,
        ..Proposal::default()
    }
}

/// `long 0.01 BTC 5x` on venue at 66,000 with TP 72,000 and SL 65,000.
pub fn btc_long(id: &str, created_at: DateTime<Utc>) -> Proposal {
    proposal(
        id,
        created_at,
        trade_preview(
            "venue",
            "BTC",
            "long",
            0.01,
            66_000.0,
            5,
            Some(72_000.0),
            Some(65_000.0),
        ),
    )
}

pub fn fill(coin: &str, side: &str, sz: f64, px: f64, oid: u64) -> FillRow {
    FillRow {
        exchange: "venue".into(),
        oid,
        coin: coin.into(),
        side: side.into(),
        px,
        sz,
        dir: "Open Long".into(),
        ..FillRow::default()
    }
}

pub fn executed(id: &str, fills: Vec<FillRow>) -> ExecutionResult {
    ExecutionResult {
        proposal_id: Some(id.into()),
        status: "executed".into(),
        execution: Execution {
            fills,
            ..Execution::default()
        },
        ..ExecutionResult::default()
    }
}

// ---- account data ------------------------------------------------------------------------------

#[allow(clippy::too_many_arguments)]
fn position(
    exchange: &str,
    coin: &str,
    szi: f64,
    entry: f64,
    mark: f64,
    leverage: u32,
    liq: f64,
) -> PositionRow {
    let value = szi.abs() * mark;
    let upnl = (mark - entry) * szi;
    let margin = value / leverage as f64;
    PositionRow {
        exchange: exchange.into(),
        position_id: format!("{exchange}:{coin}"),
        coin: coin.into(),
        side: if szi >= 0.0 { "long" } else { "short" }.into(),
        szi,
        entry_px: entry,
        mark_px: mark,
        position_value: value,
        unrealized_pnl: upnl,
        return_on_equity: upnl / margin,
        liquidation_px: Some(liq),
        leverage: Leverage {
            kind: "cross".into(),
            value: leverage,
        },
        margin_used: margin,
        max_leverage: 50,
        ..PositionRow::default()
    }
}

/// Long and short, in profit and at a loss, on both venues.
pub fn positions() -> Vec<PositionRow> {
    vec![
        // long in profit: +90.00
        position("venue", "BTC", 0.05, 64_200.0, 66_000.0, 10, 58_350.0),
        // short at a loss: -72.00
        position("venue", "ETH", -1.2, 3_150.0, 3_210.0, 5, 3_705.5),
        // long at a loss: -107.50
        position("venue2", "SOL", 25.0, 142.5, 138.2, 3, 98.41),
        // short in profit: +61.00
        position("venue2", "DOGE", -5_000.0, 0.18340, 0.17120, 2, 0.27215),
    ]
}

#[allow(clippy::too_many_arguments)]
fn order(
    exchange: &str,
    oid: u64,
    coin: &str,
    side: &str,
    order_type: &str,
    limit_px: f64,
    trigger_px: Option<f64>,
    sz: f64,
    orig_sz: f64,
    reduce_only: bool,
    age_secs: i64,
) -> OpenOrderRow {
    OpenOrderRow {
        exchange: exchange.into(),
        oid,
        coin: coin.into(),
        side: side.into(),
        limit_px,
        sz,
        orig_sz,
        order_type: order_type.into(),
        trigger_px,
        trigger_condition: trigger_px
            .map(|p| format!("Price crosses {p}"))
            .unwrap_or_else(|| "N/A".into()),
        is_trigger: trigger_px.is_some(),
        is_position_tpsl: trigger_px.is_some() && reduce_only,
        reduce_only,
        tif: trigger_px.is_none().then(|| "Gtc".to_string()),
        timestamp: (t0() - secs(age_secs)).timestamp_millis(),
        ..OpenOrderRow::default()
    }
}

/// Resting limits and the TP/SL triggers of the positions above.
pub fn orders() -> Vec<OpenOrderRow> {
    vec![
        order(
            "venue",
            900_101,
            "BTC",
            "A",
            "Take Profit Market",
            72_000.0,
            Some(72_000.0),
            0.05,
            0.05,
            true,
            3_725,
        ),
        order(
            "venue",
            900_102,
            "BTC",
            "A",
            "Stop Market",
            61_000.0,
            Some(61_000.0),
            0.05,
            0.05,
            true,
            3_725,
        ),
        order(
            "venue", 900_117, "ETH", "B", "Limit", 3_050.0, None, 0.5, 0.5, false, 95,
        ),
        order(
            "venue2", 31_544_870, "SOL", "A", "Limit", 150.0, None, 10.0, 25.0, false, 42,
        ),
        order(
            "venue2",
            31_544_903,
            "DOGE",
            "B",
            "Stop Market",
            0.19,
            Some(0.19),
            5_000.0,
            5_000.0,
            true,
            7,
        ),
    ]
}

pub fn pnl() -> PnlSummary {
    PnlSummary {
        total_portfolio_value: 25_431.77,
        total_unrealized_pnl: -28.5,
        total_realized_pnl: 1_204.33,
        total_positions: 4,
        pnl: PnlPeriods {
            total: 3_221.07,
            today: 152.1,
            week: -310.42,
            month: 1_804.9,
        },
        margin_summary: MarginSummary {
            account_value: 25_431.77,
            total_margin_used: 2_679.07,
            total_ntl_pos: 9_561.5,
            total_raw_usd: 15_870.27,
        },
        withdrawable: 22_752.7,
        as_of: Some(t0() - secs(1)),
        ..PnlSummary::default()
    }
}

/// The session's equity, one point every 2 s, ending at the summary's value. Integer arithmetic
/// only, so the sparkline is the same on every machine.
pub fn equity_history() -> Vec<(DateTime<Utc>, f64)> {
    let n = 90i64;
    (0..n)
        .map(|i| {
            let wobble = ((i * 37) % 23 - 11) as f64 * 6.0;
            let trend = (i - n + 1) as f64 * 2.5;
            let at = t0() - secs(2 * (n - 1 - i));
            let value = if i == n - 1 {
                pnl().total_portfolio_value
            } else {
                pnl().total_portfolio_value + trend + wobble
            };
            (at, value)
        })
        .collect()
}

pub fn whoami() -> Whoami {
    Whoami {
        messenger_id: "desk-ops".into(),
        account_id: Some("acct_5521".into()),
        scope: Some("trades".into()),
        can_use_trades: true,
        must_stage: true,
        ..Whoami::default()
    }
}

pub fn usage() -> Usage {
    Usage {
        period: "2025-03-14".into(),
        api_post_quota: QuotaCounter {
            used: 37,
            limit: 500,
            remaining: 463,
            resets_at: None,
        },
        compute: QuotaCounter {
            used: 2,
            limit: 20,
            remaining: 18,
            resets_at: None,
        },
        ..Usage::default()
    }
}

pub fn audit() -> Vec<AuditEntry> {
    let entry = |id: i64,
                 ago: i64,
                 op: &str,
                 outcome: &str,
                 http: u16,
                 proposal: Option<&str>,
                 oid: Option<u64>,
                 err: Option<&str>| AuditEntry {
        id,
        time: t0() - secs(ago),
        operation: op.into(),
        outcome: outcome.into(),
        http_status: http,
        proposal_id: proposal.map(String::from),
        oid,
        error_code: err.map(String::from),
        message: None,
        ..AuditEntry::default()
    };
    vec![
        entry(
            106,
            31,
            "confirm_trade",
            "ok",
            200,
            Some(ID_APPROVED),
            Some(900_131),
            None,
        ),
        entry(
            105,
            38,
            "confirm_trade",
            "error",
            410,
            Some(ID_EXPIRED),
            None,
            Some("proposal_expired"),
        ),
        entry(
            104,
            291,
            "propose_trade",
            "ok",
            200,
            Some(ID_SHORT_FUSE),
            None,
            None,
        ),
        entry(
            103,
            612,
            "close_position",
            "error",
            409,
            None,
            None,
            Some("proposal_already_executed"),
        ),
        entry(
            102,
            1_250,
            "place_trade",
            "ok",
            200,
            None,
            Some(900_101),
            None,
        ),
    ]
}

// ---- the seeded console ------------------------------------------------------------------------

pub const ID_FRESH: &str = "prop_3f2a9c1d7e4b5a60";
pub const ID_AMBER: &str = "prop_8c41d02e9b7f3a15";
pub const ID_SHORT_FUSE: &str = "prop_b7e05a3c61d28f94";
pub const ID_EXPIRED: &str = "prop_0d9e4f72a1c3b856";
pub const ID_APPROVED: &str = "prop_e5a17c38f02d4b69";
pub const ID_REJECTED: &str = "prop_61fc2b9d8a07e3d4";

fn item(proposal: Proposal, source: Source, local: LocalState) -> InboxItem {
    let first_seen = proposal.created_at.unwrap_or_else(t0);
    let expired = proposal.expires_at.is_some_and(|e| e <= t0());
    InboxItem {
        proposal,
        source,
        local,
        first_seen,
        expiry_noted: expired,
        tool: None,
    }
}

/// Expires `left` from now.
fn created_for(left: TimeDelta) -> DateTime<Utc> {
    t0() + left - LIFETIME
}

/// Newest first, like the app keeps it.
pub fn inbox() -> Vec<InboxItem> {
    let fresh = btc_long(ID_FRESH, created_for(secs(192)));
    let mut amber_preview = trade_preview(
        "venue2",
        "ETH",
        "short",
        0.5,
        3_212.4,
        3,
        Some(3_050.0),
        Some(3_290.0),
    );
    amber_preview.order_type = "limit".into();
    amber_preview.limit_px = Some(3_215.0);
    amber_preview.est_liquidation_px = Some(4_268.1);
    let amber = proposal(ID_AMBER, created_for(secs(47)), amber_preview);
    let short_fuse = proposal(
        ID_SHORT_FUSE,
        created_for(secs(9)),
        trade_preview("venue2", "SOL", "long", 12.0, 138.2, 4, None, Some(131.0)),
    );
    let expired = proposal(
        ID_EXPIRED,
        created_for(secs(-41)),
        trade_preview("venue", "XRP", "long", 1_500.0, 0.6132, 2, None, None),
    );
    let mut approved = proposal(
        ID_APPROVED,
        created_for(secs(-20)),
        trade_preview(
            "venue",
            "BTC",
            "short",
            0.02,
            66_010.0,
            10,
            Some(63_000.0),
            Some(67_500.0),
        ),
    );
    approved.status = "executed".into();
    let rejected = Proposal {
        proposal_id: ID_REJECTED.into(),
        status: "staged".into(),
        kind: "close_all".into(),
        created_at: Some(created_for(secs(-160))),
        expires_at: Some(created_for(secs(-160)) + LIFETIME),
        preview: Preview {
            kind: "close_all".into(),
            direction: "close".into(),
            closes: vec![
                ClosePreview {
                    exchange: "venue".into(),
                    coin: "BTC".into(),
                    szi: 0.05,
                    entry_px: 64_200.0,
                    mark_px: 66_000.0,
                    est_pnl: 90.0,
                },
                ClosePreview {
                    exchange: "venue2".into(),
                    coin: "SOL".into(),
                    szi: 25.0,
                    entry_px: 142.5,
                    mark_px: 138.2,
                    est_pnl: -107.5,
                },
            ],
            ..Preview::default()
        },
        ..Proposal::default()
    };
    vec![
        item(fresh, Source::Service, LocalState::None),
        item(amber, Source::Service, LocalState::None),
        item(short_fuse, Source::Console, LocalState::None),
        item(expired, Source::Service, LocalState::None),
        item(
            approved,
            Source::Service,
            LocalState::Approved("sold 0.02 BTC at 66010 (oid 900131)".into()),
        ),
        item(rejected, Source::Service, LocalState::Rejected),
    ]
}

/// Newest first.
pub fn decisions() -> Vec<Decision> {
    vec![
        Decision {
            proposal_id: ID_APPROVED.into(),
            kind: DecisionKind::Approved,
            at: t0() - secs(31),
            summary: "short 0.02 BTC 10x".into(),
            result: "sold 0.02 BTC at 66010 (oid 900131)".into(),
        },
        Decision {
            proposal_id: ID_EXPIRED.into(),
            kind: DecisionKind::Expired,
            at: t0() - secs(41),
            summary: "long 1500 XRP 2x".into(),
            result: "not approved in time".into(),
        },
        Decision {
            proposal_id: ID_REJECTED.into(),
            kind: DecisionKind::Rejected,
            at: t0() - secs(200),
            summary: "close all positions".into(),
            result: "dismissed; the proposal will expire on the service".into(),
        },
        Decision {
            proposal_id: "prop_a4c9e1f03b7d2856".into(),
            kind: DecisionKind::Failed,
            at: t0() - secs(612),
            summary: "close ETH".into(),
            result: "proposal prop_a4c9e1f03b7d2856 was already executed".into(),
        },
    ]
}

/// The console as a supervisor sees it at [`t0`]: every feed answered a second ago (the audit log
/// after one failure), six proposals in different states, four decisions. No toasts.
pub fn seeded_app(width: u16, height: u16) -> App {
    let mut app = new_app();
    let at = t0() - secs(1);
    app.update(failed(
        Resource::Audit,
        ApiError::AuditUnavailable {
            message: "audit store busy".into(),
        },
        t0() - secs(20),
    ));
    let answers = [
        (Resource::Whoami, Payload::Whoami(Box::new(whoami()))),
        (Resource::Positions, Payload::Positions(positions())),
        (Resource::Orders, Payload::Orders(orders())),
        (Resource::Pnl, Payload::Pnl(Box::new(pnl()))),
        (Resource::Proposals, Payload::Proposals(vec![])),
        (Resource::Usage, Payload::Usage(Box::new(usage()))),
        (Resource::Audit, Payload::Audit(audit())),
    ];
    for (resource, payload) in answers {
        app.update(loaded(resource, payload, at));
    }
    app.update(Action::Tick(t0()));
    app.update(Action::Resize(width, height));
    app.equity_history = equity_history().into();
    app.inbox = inbox();
    app.decisions = decisions();
    app.toasts.clear();
    app
}

// ---- rendering ---------------------------------------------------------------------------------

/// Draws the app at its `size` and returns the screen as plain lines (symbols only, trailing
/// blanks trimmed).
pub fn render(app: &App) -> String {
    let (w, h) = app.size;
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
    terminal
        .draw(|f| view::draw(f, app, &Theme::dark()))
        .unwrap();
    buffer_text(terminal.backend().buffer())
}

pub fn buffer_text(buffer: &ratatui::buffer::Buffer) -> String {
    use ratatui::buffer::CellWidth;
    let area = buffer.area;
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let mut line = String::new();
        // A wide symbol covers the cells after it; those hold a blank that is not drawn.
        let mut skip: u16 = 0;
        for x in area.left()..area.right() {
            let cell = &buffer[(x, y)];
            if skip == 0 {
                line.push_str(cell.symbol());
            }
            skip = std::cmp::max(skip, cell.cell_width()).saturating_sub(1);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

// ---- discovery and backtests ---------------------------------------------------------------------

use crate::api::model::{
    BacktestData, BacktestJob, BacktestRequest, BacktestStats, BacktestTrade, Discovery,
    DiscoveryRow, EquityPoint, ErrorDetail, StrategyEntry, StrategyParam,
};
use crate::console::tabs::discovery::{DView, DiscoveryPayload, DiscoveryQuery};

fn param(name: &str, kind: &str, default: f64, min: f64, max: f64, step: f64) -> StrategyParam {
    StrategyParam {
        name: name.into(),
        kind: kind.into(),
        default,
        min,
        max,
        step,
        description: format!("{name} of the strategy"),
    }
}

pub fn strategies() -> Vec<StrategyEntry> {
    let entry =
        |id: &str, name: &str, category: &str, parameters: Vec<StrategyParam>| StrategyEntry {
            id: id.into(),
            name: name.into(),
            category: category.into(),
            description: format!("{name}: a deterministic test strategy."),
            entry_summary: "enter when the signal crosses up".into(),
            exit_summary: "exit on the opposite cross or the stop".into(),
            indicator_summary: "moving averages".into(),
            parameters,
            ..StrategyEntry::default()
        };
    vec![
        entry(
            "ema_cross",
            "EMA Crossover",
            "trend",
            vec![
                param("fast", "integer", 9.0, 2.0, 50.0, 1.0),
                param("slow", "integer", 21.0, 5.0, 200.0, 1.0),
            ],
        ),
        entry(
            "rsi_reversion",
            "RSI Mean Reversion",
            "mean_reversion",
            vec![
                param("period", "integer", 14.0, 2.0, 50.0, 1.0),
                param("lower", "number", 30.0, 5.0, 50.0, 0.5),
                param("upper", "number", 70.0, 50.0, 95.0, 0.5),
            ],
        ),
        entry(
            "bb_breakout",
            "Bollinger Breakout",
            "volatility",
            vec![
                param("period", "integer", 20.0, 5.0, 100.0, 1.0),
                param("mult", "number", 2.0, 0.5, 4.0, 0.1),
            ],
        ),
        entry(
            "donchian",
            "Donchian Channel",
            "trend",
            vec![param("lookback", "integer", 55.0, 10.0, 200.0, 1.0)],
        ),
    ]
}

fn params(pairs: &[(&str, f64)]) -> serde_json::Map<String, serde_json::Value> {
    pairs
        .iter()
        .map(|(k, v)| {
            (
                (*k).to_string(),
                crate::console::tabs::backtests::number_value(*v),
            )
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn ranked(
    strategy: &str,
    name: &str,
    pair: &str,
    tf: &str,
    ret: f64,
    win: f64,
    dd: f64,
    sharpe: f64,
    pf: f64,
    trades: u32,
    quality: &str,
    p: &[(&str, f64)],
) -> DiscoveryRow {
    DiscoveryRow {
        id: format!("{strategy}:{pair}:{tf}"),
        strategy_id: strategy.into(),
        strategy_name: name.into(),
        category: "trend".into(),
        pair: pair.into(),
        timeframe: tf.into(),
        days: 30,
        parameters: params(p),
        param_hash: "a1b2c3d4".into(),
        quality: quality.into(),
        rank_within_strategy: None,
        stats: BacktestStats {
            total_return: Some(ret),
            total_trades: trades,
            win_rate: Some(win),
            max_drawdown: Some(dd),
            sharpe_ratio: Some(sharpe),
            profit_factor: Some(pf),
            ..BacktestStats::default()
        },
    }
}

/// Top backtests as the service ranks them (by return).
pub fn top_rows() -> Vec<DiscoveryRow> {
    vec![
        ranked(
            "ema_cross",
            "EMA Crossover",
            "BTC-USD",
            "1h",
            24.61,
            58.3,
            -8.2,
            1.92,
            1.85,
            48,
            "excellent",
            &[("fast", 12.0), ("slow", 26.0)],
        ),
        ranked(
            "bb_breakout",
            "Bollinger Breakout",
            "ETH-USD",
            "4h",
            18.05,
            51.0,
            -12.7,
            1.41,
            1.52,
            22,
            "good",
            &[("period", 20.0), ("mult", 2.5)],
        ),
        ranked(
            "rsi_reversion",
            "RSI Mean Reversion",
            "SOL-USD",
            "15m",
            11.37,
            63.9,
            -6.1,
            1.66,
            1.38,
            97,
            "good",
            &[("period", 14.0), ("lower", 27.5), ("upper", 72.5)],
        ),
        ranked(
            "donchian",
            "Donchian Channel",
            "BTC-USD",
            "1d",
            7.9,
            41.2,
            -15.4,
            0.74,
            1.21,
            9,
            "good",
            &[("lookback", 55.0)],
        ),
        ranked(
            "ema_cross",
            "EMA Crossover",
            "DOGE-USD",
            "5m",
            -3.42,
            38.5,
            -19.8,
            -0.31,
            0.87,
            131,
            "poor",
            &[("fast", 5.0), ("slow", 13.0)],
        ),
    ]
}

pub fn live_rows() -> Vec<DiscoveryRow> {
    let mut rows = vec![
        ranked(
            "rsi_reversion",
            "RSI Mean Reversion",
            "ETH-USD",
            "15m",
            4.12,
            61.1,
            -2.3,
            2.05,
            1.74,
            18,
            "excellent",
            &[("period", 14.0), ("lower", 30.0), ("upper", 70.0)],
        ),
        ranked(
            "ema_cross",
            "EMA Crossover",
            "BTC-USD",
            "1h",
            2.87,
            55.6,
            -3.9,
            1.33,
            1.41,
            9,
            "good",
            &[("fast", 9.0), ("slow", 21.0)],
        ),
        ranked(
            "bb_breakout",
            "Bollinger Breakout",
            "SOL-USD",
            "4h",
            -1.05,
            40.0,
            -5.2,
            -0.42,
            0.81,
            5,
            "poor",
            &[("period", 20.0), ("mult", 2.0)],
        ),
    ];
    for r in &mut rows {
        r.days = 7;
    }
    rows[1]
        .stats
        .extra
        .insert("lastSignal".into(), serde_json::json!("short"));
    rows
}

pub fn combo_rows() -> Vec<DiscoveryRow> {
    let mut rows = vec![
        ranked(
            "ema_cross",
            "EMA Crossover",
            "BTC-USD",
            "5m",
            31.2,
            57.4,
            -9.6,
            2.11,
            1.93,
            61,
            "excellent",
            &[("fast", 8.0), ("slow", 34.0)],
        ),
        ranked(
            "ema_cross",
            "EMA Crossover",
            "BTC-USD",
            "5m",
            27.9,
            55.0,
            -10.3,
            1.87,
            1.77,
            58,
            "excellent",
            &[("fast", 10.0), ("slow", 30.0)],
        ),
        ranked(
            "rsi_reversion",
            "RSI Mean Reversion",
            "BTC-USD",
            "5m",
            19.4,
            66.2,
            -7.7,
            1.71,
            1.62,
            143,
            "good",
            &[("period", 9.0), ("lower", 25.0), ("upper", 75.0)],
        ),
        ranked(
            "rsi_reversion",
            "RSI Mean Reversion",
            "BTC-USD",
            "5m",
            16.8,
            64.8,
            -8.0,
            1.58,
            1.55,
            139,
            "good",
            &[("period", 12.0), ("lower", 27.5), ("upper", 72.5)],
        ),
        ranked(
            "bb_breakout",
            "Bollinger Breakout",
            "BTC-USD",
            "5m",
            9.3,
            47.5,
            -11.9,
            0.98,
            1.24,
            40,
            "good",
            &[("period", 24.0), ("mult", 2.2)],
        ),
    ];
    for (i, r) in rows.iter_mut().enumerate() {
        r.rank_within_strategy = Some(if i % 2 == 0 || i == 4 { 1 } else { 2 });
    }
    rows
}

pub fn discovery(rows: Vec<DiscoveryRow>, computing: bool) -> Discovery {
    Discovery {
        count: rows.len() as u32,
        rows,
        computing,
        computed_at: Some(t0() - secs(90)),
        ..Discovery::default()
    }
}

pub fn discovered(query: DiscoveryQuery, payload: DiscoveryPayload, at: DateTime<Utc>) -> Action {
    Action::answered(
        at,
        LATENCY,
        Answer::Discovered {
            query,
            result: Ok(payload),
        },
    )
}

pub fn discovery_fetches(fx: &[Effect]) -> Vec<DiscoveryQuery> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::FetchDiscovery(q) => Some(q.clone()),
            _ => None,
        })
        .collect()
}

pub fn job_fetches(fx: &[Effect]) -> Vec<String> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::FetchJob(id) => Some(id.clone()),
            _ => None,
        })
        .collect()
}

pub fn backtest_runs(fx: &[Effect]) -> Vec<BacktestRequest> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::RunBacktest(r) => Some((**r).clone()),
            _ => None,
        })
        .collect()
}

/// The seeded console on the Discovery tab with every view answered a second ago.
pub fn discovery_app(width: u16, height: u16) -> App {
    let mut app = seeded_app(width, height);
    app.update(key('4'));
    let at = t0() - secs(1);
    let d = &app.discovery;
    let answers = [
        (
            d.query(DView::Strategies),
            DiscoveryPayload::Strategies(strategies()),
        ),
        (
            d.query(DView::TopBacktests),
            DiscoveryPayload::Rows(Box::new(discovery(top_rows(), false))),
        ),
        (
            d.query(DView::TopLive),
            DiscoveryPayload::Rows(Box::new(discovery(live_rows(), false))),
        ),
        (
            d.query(DView::Combos),
            DiscoveryPayload::Rows(Box::new(discovery(combo_rows(), true))),
        ),
    ];
    for (query, payload) in answers {
        app.update(discovered(query, payload, at));
    }
    app.update(Action::Tick(t0()));
    app.toasts.clear();
    app
}

pub const JOB_ID: &str = "bt_7c1e9a04";

pub fn backtest_request() -> BacktestRequest {
    BacktestRequest {
        strategy_id: "ema_cross".into(),
        pair: "BTC-USD".into(),
        timeframe: "1h".into(),
        days: 30,
        parameters: params(&[("fast", 12.0), ("slow", 26.0)]),
    }
}

/// A finished job: 30 days of hourly equity (integer arithmetic, so identical everywhere) and a
/// dozen trades.
pub fn finished_job() -> BacktestJob {
    let start = t0() - TimeDelta::days(30);
    let n = 720i64;
    let mut peak = f64::MIN;
    let equity: Vec<EquityPoint> = (0..n)
        .map(|i| {
            let wave = ((i * 53) % 97 - 48) as f64 * 2.5;
            let dip = if (300..420).contains(&i) {
                -((i - 300).min(420 - i) as f64) * 9.0
            } else {
                0.0
            };
            let e = 10_000.0 + i as f64 * 3.4 + wave + dip;
            peak = peak.max(e);
            EquityPoint {
                t: (start + TimeDelta::hours(i)).timestamp(),
                equity: e,
                drawdown: (e - peak) / peak * 100.0,
            }
        })
        .collect();
    let trades: Vec<BacktestTrade> = (0..12i64)
        .map(|k| {
            let entry = start + TimeDelta::hours(k * 58 + 3);
            let bars = 10 + (k * 7) % 23;
            let long = k % 3 != 2;
            let entry_px = 62_000.0 + (k * 431 % 2_900) as f64;
            let ret = ((k * 37) % 11 - 4) as f64 * 0.55;
            let exit_px = if long {
                entry_px * (1.0 + ret / 100.0)
            } else {
                entry_px * (1.0 - ret / 100.0)
            };
            BacktestTrade {
                entry_time: entry,
                exit_time: entry + TimeDelta::hours(bars),
                direction: if long { "long" } else { "short" }.into(),
                entry_px,
                exit_px,
                size: 0.15,
                pnl: (ret / 100.0 * entry_px * 0.15 * 100.0).round() / 100.0,
                return_pct: ret,
                exit_reason: ["signal", "stop_loss", "take_profit"][(k % 3) as usize].into(),
                bars: bars as u32,
            }
        })
        .collect();
    let stats = BacktestStats {
        total_return: Some(24.61),
        total_trades: 12,
        win_rate: Some(58.33),
        max_drawdown: Some(-8.21),
        sharpe_ratio: Some(1.92),
        profit_factor: Some(1.85),
        buy_hold_return: Some(9.72),
        return_ann: Some(1_387.4),
        volatility_ann: Some(41.8),
        sortino_ratio: Some(3.05),
        calmar_ratio: Some(2.41),
        avg_drawdown: Some(-1.9),
        max_drawdown_duration_days: Some(6.5),
        best_trade: Some(3.3),
        worst_trade: Some(-2.2),
        avg_trade: Some(0.42),
        expectancy: Some(0.44),
        sqn: Some(1.37),
        exposure_time: Some(61.5),
        avg_trade_duration_days: Some(0.8),
        equity_final: Some(12_461.0),
        ..BacktestStats::default()
    };
    BacktestJob {
        job_id: JOB_ID.into(),
        poll_url: format!("/api/delegated/backtests/{JOB_ID}"),
        status: "done".into(),
        progress: 100,
        request: Some(backtest_request()),
        created_at: Some(t0() - secs(75)),
        finished_at: Some(t0() - secs(62)),
        data: Some(Box::new(BacktestData {
            stats,
            strategy_id: "ema_cross".into(),
            pair: "BTC-USD".into(),
            timeframe: "1h".into(),
            days: 30,
            parameters: params(&[("fast", 12.0), ("slow", 26.0)]),
            bars: n as u32,
            equity,
            trades,
        })),
        ..BacktestJob::default()
    }
}

pub fn job_loaded(job: BacktestJob, at: DateTime<Utc>) -> Action {
    Action::answered(
        at,
        LATENCY,
        Answer::JobLoaded {
            id: job.job_id.clone(),
            result: Ok(Box::new(job)),
        },
    )
}

/// The seeded console on the Backtests tab following three jobs: the finished one (selected), one
/// running, one failed.
pub fn backtests_app(width: u16, height: u16) -> App {
    let mut app = seeded_app(width, height);
    let running = BacktestJob {
        job_id: "bt_52d0f3b8".into(),
        status: "running".into(),
        progress: 60,
        request: Some(BacktestRequest {
            strategy_id: "rsi_reversion".into(),
            pair: "ETH-USD".into(),
            timeframe: "15m".into(),
            days: 14,
            parameters: params(&[("period", 14.0)]),
        }),
        created_at: Some(t0() - secs(20)),
        ..BacktestJob::default()
    };
    let failed = BacktestJob {
        job_id: "bt_0a9b8c7d".into(),
        status: "failed".into(),
        progress: 10,
        request: Some(BacktestRequest {
            strategy_id: "donchian".into(),
            pair: "SOL-USD".into(),
            timeframe: "1d".into(),
            days: 3,
            parameters: params(&[("lookback", 55.0)]),
        }),
        created_at: Some(t0() - secs(300)),
        error: Some(ErrorDetail {
            code: "insufficient_data".into(),
            message: "3 days of 1d bars are fewer than the 55 the lookback needs".into(),
            field: Some("days".into()),
        }),
        ..BacktestJob::default()
    };
    for job in [failed, running, finished_job()] {
        let mut entry = crate::console::tabs::backtests::JobEntry::new(job, t0() - secs(1));
        entry.poll.ask_at(t0() + secs(3600));
        app.backtests.jobs.insert(0, entry);
    }
    app.update(key('5'));
    app.update(Action::Tick(t0()));
    app.toasts.clear();
    app
}

// ---- the modal slot ------------------------------------------------------------------------------

pub fn backtest_form(app: &App) -> Option<&crate::console::tabs::backtests::BacktestForm> {
    match &app.modal {
        Some(Modal::BacktestForm(form)) => Some(form),
        _ => None,
    }
}

pub fn tool_editor(app: &App) -> Option<&crate::console::tabs::tools::ToolEditor> {
    match &app.modal {
        Some(Modal::ToolEditor(editor)) => Some(editor),
        _ => None,
    }
}

pub fn destination_form(app: &App) -> Option<&crate::console::tabs::signals::DestinationForm> {
    match &app.modal {
        Some(Modal::DestinationForm(form)) => Some(form),
        _ => None,
    }
}

pub fn builder_panel(app: &App) -> Option<&crate::console::tabs::signals::BuilderPanel> {
    match &app.modal {
        Some(Modal::BuilderFee(panel)) => Some(panel),
        _ => None,
    }
}
