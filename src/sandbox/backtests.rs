//! Backtest jobs: validated requests, a bounded queue, a small worker pool, and results stored in
//! SQLite. States: `queued` → `running` (with progress %) → `done` | `failed` (with the error).

use super::bar_cache::{BarCache, Bars};
use super::core::Shared;
use super::data::{self, MAX_DAYS, Timeframe};
use super::engine::backtest::{self, BacktestResult, Config};
use super::engine::metrics::Stats;
use super::engine::strategies::{self, Params, StrategySpec};
use super::error::AppError;
use super::settings::Settings;
use super::venue::market::Market;
use super::venue::normalize_coin;
use crate::api::model::{
    BacktestData, BacktestRequest, BacktestStats, BacktestTrade, EquityPoint, ErrorDetail,
};
use chrono::{DateTime, TimeZone, Utc};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::{Mutex, mpsc};

/// Jobs waiting beyond the ones running; a full queue is refused, not buffered without bound.
pub const QUEUE_CAP: usize = 32;
/// Trades kept in a result (the most recent); statistics always cover all of them.
pub const MAX_TRADES: usize = 2_000;
/// Paper equity a backtest starts with.
pub const BACKTEST_EQUITY: f64 = 10_000.0;

/// Request `parameters` that configure the backtest rather than the strategy.
pub const STOP_LOSS: &str = "stopLossPct";
pub const TAKE_PROFIT: &str = "takeProfitPct";
pub const ALLOW_SHORT: &str = "allowShort";

/// A request checked against the catalog, ready to run.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub spec: &'static StrategySpec,
    pub params: Params,
    pub coin: &'static str,
    pub pair: String,
    pub timeframe: Timeframe,
    pub days: u32,
    pub config: Config,
}

/// The engine's configuration for the sandbox's fees and slippage.
pub fn engine_config(settings: &Settings) -> Config {
    Config {
        initial_equity: BACKTEST_EQUITY,
        fee_rate: settings.taker_fee_rate,
        slippage_bps: settings.slippage_bps,
        ..Config::default()
    }
}

pub fn parse_pair(pair: &str, field: &str) -> Result<(&'static str, String), AppError> {
    let coin = normalize_coin(pair).ok_or_else(|| {
        AppError::invalid(
            field,
            format!(
                "{field}: unknown pair {pair:?}; pairs are <BASE>-USD for {}",
                super::venue::market::ASSETS
                    .iter()
                    .map(|a| a.coin)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })?;
    Ok((coin, format!("{coin}-USD")))
}

pub fn parse_timeframe(tf: &str, field: &str) -> Result<Timeframe, AppError> {
    Timeframe::parse(tf).ok_or_else(|| {
        AppError::invalid(
            field,
            format!(
                "{field}: unknown timeframe {tf:?}; use one of {}",
                Timeframe::known()
            ),
        )
    })
}

pub fn check_days(days: u32, field: &str) -> Result<u32, AppError> {
    if (1..=MAX_DAYS).contains(&days) {
        Ok(days)
    } else {
        Err(AppError::invalid(
            field,
            format!("{field} must be from 1 to {MAX_DAYS}, got {days}"),
        ))
    }
}

pub fn find_strategy(id: &str, field: &str) -> Result<&'static StrategySpec, AppError> {
    strategies::strategy(id).ok_or_else(|| {
        AppError::invalid(
            field,
            format!(
                "{field}: unknown strategy {id:?}; available: {}",
                strategies::STRATEGIES
                    .iter()
                    .map(|s| s.id)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })
}

/// Checks a request: strategy, pair, timeframe, days and every parameter, each error naming its
/// field.
pub fn resolve(req: &BacktestRequest, settings: &Settings) -> Result<Resolved, AppError> {
    let spec = find_strategy(&req.strategy_id, "strategyId")?;
    let (coin, pair) = parse_pair(&req.pair, "pair")?;
    let timeframe = parse_timeframe(&req.timeframe, "timeframe")?;
    let days = check_days(req.days, "days")?;
    let mut config = engine_config(settings);
    let mut given = Vec::new();
    for (name, value) in &req.parameters {
        let field = format!("parameters.{name}");
        let number = match value {
            Value::Number(n) => n.as_f64(),
            Value::Bool(b) if name == ALLOW_SHORT => Some(f64::from(u8::from(*b))),
            _ => None,
        }
        .filter(|x| x.is_finite())
        .ok_or_else(|| AppError::invalid(&field, format!("{field} must be a number")))?;
        match name.as_str() {
            STOP_LOSS => config.sl_pct = Some(number),
            TAKE_PROFIT => config.tp_pct = Some(number),
            ALLOW_SHORT => config.allow_short = number != 0.0,
            _ => given.push((name.clone(), number)),
        }
    }
    config.validate().map_err(|e| {
        let field = match e.field.as_str() {
            "sl_pct" => format!("parameters.{STOP_LOSS}"),
            "tp_pct" => format!("parameters.{TAKE_PROFIT}"),
            other => other.to_string(),
        };
        AppError::invalid(&field, format!("{field} {}", e.message))
    })?;
    let params = strategies::resolve_params(spec, &given)
        .map_err(|e| AppError::invalid(&e.field, e.message))?;
    Ok(Resolved {
        spec,
        params,
        coin,
        pair,
        timeframe,
        days,
        config,
    })
}

pub fn params_json(spec: &StrategySpec, params: &Params) -> Map<String, Value> {
    params
        .named(spec)
        .map(|(k, v)| (k.to_string(), number(v)))
        .collect()
}

fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        Value::from(v as i64)
    } else {
        Value::from(v)
    }
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

fn time(t: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(t, 0).single().unwrap_or_default()
}

/// The engine's statistics in the wire's names; undefined values (NaN) become null.
pub fn wire_stats(s: &Stats) -> BacktestStats {
    BacktestStats {
        total_return: finite(s.return_pct),
        total_trades: s.trades as u32,
        win_rate: finite(s.win_rate_pct),
        max_drawdown: finite(s.max_drawdown_pct),
        sharpe_ratio: finite(s.sharpe),
        profit_factor: finite(s.profit_factor),
        start_date: Some(time(s.start)),
        end_date: Some(time(s.end)),
        buy_hold_return: finite(s.buy_hold_return_pct),
        return_ann: finite(s.return_ann_pct),
        volatility_ann: finite(s.volatility_ann_pct),
        sortino_ratio: finite(s.sortino),
        calmar_ratio: finite(s.calmar),
        avg_drawdown: finite(s.avg_drawdown_pct),
        max_drawdown_duration_days: finite(s.max_drawdown_duration_days),
        best_trade: finite(s.best_trade_pct),
        worst_trade: finite(s.worst_trade_pct),
        avg_trade: finite(s.avg_trade_pct),
        expectancy: finite(s.expectancy_pct),
        sqn: finite(s.sqn),
        exposure_time: finite(s.exposure_time_pct),
        avg_trade_duration_days: finite(s.avg_trade_duration_days),
        equity_final: finite(s.equity_final),
        extra: Default::default(),
    }
}

pub fn wire_result(r: &Resolved, bars: usize, result: &BacktestResult) -> BacktestData {
    let equity = result
        .equity
        .iter()
        .zip(&result.drawdown)
        .map(|((t, e), (_, dd))| EquityPoint {
            t: *t,
            equity: *e,
            drawdown: *dd,
        })
        .collect();
    let skip = result.trades.len().saturating_sub(MAX_TRADES);
    let trades = result.trades[skip..]
        .iter()
        .map(|t| BacktestTrade {
            entry_time: time(t.entry_time),
            exit_time: time(t.exit_time),
            direction: if t.direction > 0 { "long" } else { "short" }.into(),
            entry_px: t.entry_px,
            exit_px: t.exit_px,
            size: t.size,
            pnl: t.pnl,
            return_pct: t.return_pct,
            exit_reason: t.exit.as_str().into(),
            bars: t.bars as u32,
        })
        .collect();
    BacktestData {
        stats: wire_stats(&result.stats),
        strategy_id: r.spec.id.into(),
        pair: r.pair.clone(),
        timeframe: r.timeframe.as_str().into(),
        days: r.days,
        parameters: params_json(r.spec, &r.params),
        bars: bars as u32,
        equity,
        trades,
    }
}

/// Where a job this process runs stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Standing {
    /// Running, with its progress in percent.
    Running(u8),
    /// Ended: the result (`ok`) or the error as the store will keep it, and when it ended. Held
    /// until the store has it, so the answer does not wait for the write.
    Ended {
        ok: bool,
        text: Arc<str>,
        at: DateTime<Utc>,
    },
}

/// Backtest jobs this process is running, with their progress, and the bars they reuse. Both
/// live in memory only: the store learns of a job when it is queued and when it ends, so a job
/// costs two writes, and a job that was running when the process stopped is still `queued` in
/// the store and runs again on the next start. An ended job's outcome is served from here
/// while the store writes it (which the answer need not wait for): were the process
/// to stop before the write, the job runs again on the next start and, being deterministic,
/// ends the same way.
#[derive(Default)]
pub struct Live {
    running: std::sync::Mutex<HashMap<String, Standing>>,
    /// Woken whenever a job ends, for the status reads waiting on one.
    ended: tokio::sync::Notify,
    pub bars: BarCache,
}

impl Live {
    fn board(&self) -> std::sync::MutexGuard<'_, HashMap<String, Standing>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks a job running; false if it already is (a job queued twice runs once).
    fn claim(&self, id: &str) -> bool {
        let mut board = self.board();
        if board.contains_key(id) {
            return false;
        }
        board.insert(id.to_string(), Standing::Running(5));
        true
    }

    fn set(&self, id: &str, progress: u8) {
        if let Some(Standing::Running(p)) = self.board().get_mut(id) {
            *p = progress;
        }
    }

    fn ended(&self, id: &str, ok: bool, text: Arc<str>, at: DateTime<Utc>) {
        if let Some(standing) = self.board().get_mut(id) {
            *standing = Standing::Ended { ok, text, at };
        }
        self.ended.notify_waiters();
    }

    /// If job `id` is running here, waits until it ends or `deadline` passes: `None` if it was
    /// not running, else whether it ended.
    pub async fn wait_while_running(
        &self,
        id: &str,
        deadline: tokio::time::Instant,
    ) -> Option<bool> {
        let mut running = false;
        loop {
            // Registered before the check, so an end between the two is not missed.
            let mut ended = std::pin::pin!(self.ended.notified());
            ended.as_mut().enable();
            if !matches!(self.standing(id), Some(Standing::Running(_))) {
                return running.then_some(true);
            }
            running = true;
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                return Some(false);
            }
        }
    }

    fn end(&self, id: &str) {
        self.board().remove(id);
    }

    /// Where a job this process runs stands, until the store has its outcome.
    pub fn standing(&self, id: &str) -> Option<Standing> {
        self.board().get(id).cloned()
    }
}

/// Why a resolved backtest did not run: its data is not there.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Csv(#[from] data::CsvError),
    #[error("only {bars} bar(s) of {pair} {timeframe} data: a backtest needs at least 2")]
    TooFewBars {
        bars: usize,
        pair: String,
        timeframe: &'static str,
    },
}

/// Runs one resolved backtest on the sandbox's data; feed bars come from `cache`.
pub fn run(
    market: &Market,
    csv_dir: Option<&std::path::Path>,
    cache: &BarCache,
    r: &Resolved,
    now: DateTime<Utc>,
) -> Result<(usize, BacktestResult), RunError> {
    let csv = csv_dir.filter(|dir| data::has_csv(dir, r.coin, r.timeframe));
    let bars = match csv {
        Some(_) => Bars::owned(data::bars(market, csv, r.coin, r.timeframe, r.days, now)?),
        None => cache.feed_bars(market, r.coin, r.timeframe, r.days, now),
    };
    if bars.len() < 2 {
        return Err(RunError::TooFewBars {
            bars: bars.len(),
            pair: r.pair.to_string(),
            timeframe: r.timeframe.as_str(),
        });
    }
    let mut signals = Vec::with_capacity(bars.len());
    strategies::signals(r.spec, &r.params, &bars, &mut signals);
    let result = backtest::run(&bars, &signals, &r.config);
    Ok((bars.len(), result))
}

/// The queue's sending side, kept in the core so handlers can enqueue under the lock.
pub type JobSender = mpsc::Sender<String>;

/// Starts `workers` workers and returns the queue they read.
pub fn start_workers(shared: Arc<Shared>, workers: usize) -> JobSender {
    let (tx, rx) = mpsc::channel::<String>(QUEUE_CAP);
    let rx = Arc::new(Mutex::new(rx));
    for _ in 0..workers.max(1) {
        let (shared, rx) = (shared.clone(), rx.clone());
        tokio::spawn(async move {
            loop {
                let Some(id) = rx.lock().await.recv().await else {
                    return;
                };
                work(&shared, &id).await;
            }
        });
    }
    tx
}

async fn work(shared: &Arc<Shared>, id: &str) {
    let job = id.to_string();
    // Reading the job takes the lock but writes nothing: `running` is kept in memory.
    let claimed = shared
        .run_raw(move |core, now| {
            let row = core.store.job(&job).ok().flatten()?;
            if row.status != "queued" || !core.backtests.claim(&job) {
                return None;
            }
            let csv: Option<PathBuf> = core.settings.csv_dir.clone();
            let context = (core.market.clone(), csv, core.settings.clone());
            Some((row.request, context, core.backtests.clone(), now))
        })
        .await;
    let Ok(Some((request, (market, csv, settings), live, now))) = claimed else {
        return;
    };
    let outcome: Result<String, ErrorDetail> = async {
        let req: BacktestRequest =
            serde_json::from_str(&request).map_err(|e| detail("internal", e.to_string()))?;
        let resolved = resolve(&req, &settings).map_err(|e| ErrorDetail {
            code: e.code.into(),
            message: e.message,
            field: e.field,
        })?;
        live.set(id, 20);
        let job = id.to_string();
        let live = live.clone();
        tokio::task::spawn_blocking(move || {
            let started = std::time::Instant::now();
            let (bars, result) = run(&market, csv.as_deref(), &live.bars, &resolved, now)
                .map_err(|e| detail("data_unavailable", e.to_string()))?;
            live.set(&job, 90);
            let ran = started.elapsed();
            // Serialized here, once: the text is what the store keeps.
            let text = serde_json::to_string(&wire_result(&resolved, bars, &result))
                .map_err(|e| detail("internal", e.to_string()));
            tracing::debug!(
                "backtest {job}: {bars} bars run in {ran:?}, result serialized in {:?}",
                started.elapsed() - ran
            );
            text
        })
        .await
        .map_err(|e| detail("internal", format!("the backtest stopped: {e}")))?
    }
    .await;
    let at = shared.clock.now();
    let (ok, text): (bool, Arc<str>) = match outcome {
        Ok(text) => (true, text.into()),
        Err(err) => (
            false,
            serde_json::to_string(&err).unwrap_or_default().into(),
        ),
    };
    live.ended(id, ok, text.clone(), at);
    let job = id.to_string();
    let writing = std::time::Instant::now();
    let stored = shared
        .run_raw(move |core, _| {
            let (result, error, status) = match ok {
                true => (Some(&*text), None, "done"),
                false => (None, Some(&*text), "failed"),
            };
            core.store.finish_job(&job, status, result, error, at)
        })
        .await;
    // Off the board only once the store has the outcome, so a reader never sees it go back to
    // `queued`.
    live.end(id);
    live.bars.replace_spare();
    tracing::debug!("backtest {id}: outcome stored in {:?}", writing.elapsed());
    if let Ok(Err(e)) = stored {
        tracing::error!("cannot store backtest job {id}: {e}");
    }
}

fn detail(code: &str, message: impl Into<String>) -> ErrorDetail {
    ErrorDetail {
        code: code.into(),
        message: message.into(),
        field: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A status read waiting on a running job returns when that job ends (not when another
    /// one does), gives up at its deadline, and does not wait on a job not running here.
    #[tokio::test]
    async fn a_wait_on_a_running_job_ends_with_it() {
        use tokio::time::{Duration, Instant};
        let live = Arc::new(Live::default());
        let far = Instant::now() + Duration::from_secs(60);
        assert_eq!(live.wait_while_running("a", far).await, None, "not running");
        assert!(live.claim("a") && live.claim("b"));
        let waiter = {
            let live = live.clone();
            tokio::spawn(async move { live.wait_while_running("a", far).await })
        };
        tokio::task::yield_now().await;
        let at = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
        live.ended("b", true, "{}".into(), at);
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "b's end is not a's");
        live.ended("a", true, "{}".into(), at);
        assert_eq!(waiter.await.unwrap(), Some(true));
        assert!(live.claim("c"));
        let soon = Instant::now() + Duration::from_millis(5);
        assert_eq!(live.wait_while_running("c", soon).await, Some(false));
        assert_eq!(live.standing("c"), Some(Standing::Running(5)));
    }

    /// A job's standing goes running → ended (progress no longer moves it) → gone, and a job
    /// is claimed once while it stands.
    #[test]
    fn a_job_stands_until_its_outcome_is_stored() {
        let live = Live::default();
        assert!(live.claim("a"));
        assert!(!live.claim("a"));
        live.set("a", 40);
        assert_eq!(live.standing("a"), Some(Standing::Running(40)));
        let at = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
        live.ended("a", true, "{}".into(), at);
        live.set("a", 90);
        assert_eq!(
            live.standing("a"),
            Some(Standing::Ended {
                ok: true,
                text: "{}".into(),
                at
            })
        );
        assert!(
            !live.claim("a"),
            "an ended job is not run again before it is stored"
        );
        live.end("a");
        assert_eq!(live.standing("a"), None);
        // An outcome for a job this process does not run is not made up.
        live.ended("b", false, "{}".into(), at);
        assert_eq!(live.standing("b"), None);
    }
}
