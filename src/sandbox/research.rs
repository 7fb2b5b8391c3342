//! Research runs: a lead agent and the agents it spawns, each a tokio task over the sandbox's own
//! engine.
//!
//! The lead plans deterministically from the task's words ([`plan_task`]), posts the plan to the
//! transcript and spawns one agent per strategy (when the task names one family, or names
//! strategies) or per family (otherwise). Each agent optimizes a parameter grid on an in-sample
//! window and backtests its best sets on the out-of-sample window that follows, then reports its
//! evidence in the transcript. When every agent has reported (or "stop after N" is met) the lead
//! writes a ranked report (`report.md`, `report.json`) and the run is `completed`.
//!
//! SQLite is the source of truth: every state change is a write under the core lock, and every
//! write an agent makes is conditional on the run being `active` and on the agent's `attempt`, so
//! an agent that was stopped, dropped or restarted (or left over from a sandbox that stopped)
//! simply finds its writes refused and ends. In memory there are only wake-ups for the lead and
//! cancellation flags, checked between grid chunks, so cancelled agents stop computing soon.

use super::backtests::{engine_config, params_json};
use super::caller::Caller;
use super::core::{Core, Shared};
use super::data::{self, Timeframe};
use super::engine::backtest::Workspace;
use super::engine::metrics::Stats;
use super::engine::optimizer::{self, RankBy};
use super::engine::strategies::{self, Category, Params, STRATEGIES, StrategySpec};
use super::error::AppError;
use super::quota;
use super::store::{DbResult, parse_ts, ts};
use super::venue::normalize_coin;
use crate::api::model::{ResearchAgent, ResearchArtifact, ResearchMessage, ResearchRun};
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// Defaults of a task that does not say.
pub const DEFAULT_COIN: &str = "BTC";
pub const DEFAULT_TIMEFRAME: Timeframe = Timeframe::H1;
pub const DEFAULT_DAYS: u32 = 30;
/// Parameter sets per strategy in an agent's grid (as discovery's optimizer combos).
pub const GRID_POINTS: usize = 125;
/// Grid points per compute chunk; cancellation is checked between chunks.
pub const CHUNK: usize = 16;
/// In-sample best sets an agent backtests out of sample.
pub const TOP_SETS: usize = 3;
/// Agents of one run computing at the same time; the rest wait `queued`.
pub const PARALLEL_AGENTS: usize = 2;
/// In-sample trades a parameter set needs to be picked (unless no set has that many).
pub const MIN_TRADES: usize = 3;
/// Longest task or message accepted.
pub const MAX_TEXT: usize = 2_000;
/// Fewest bars a window needs to be worth optimizing on / testing on.
const MIN_IN_SAMPLE_BARS: usize = 20;
const MIN_OUT_OF_SAMPLE_BARS: usize = 5;
/// How often the lead looks at the run even without a wake-up.
const LEAD_POLL: std::time::Duration = std::time::Duration::from_millis(500);

// ---- the plan ------------------------------------------------------------------------------------

/// What the lead decided from the task (and later messages). Persisted as JSON with the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// Coins, e.g. `ETH`.
    pub coins: Vec<String>,
    pub timeframes: Vec<String>,
    /// In-sample days (the optimizer's window).
    pub days: u32,
    /// The out-of-sample window that follows it (the most recent days).
    pub oos_days: u32,
    /// `strategy` (one agent per strategy) or `family` (one agent per family).
    pub grouping: String,
    /// The agents the lead planned at the start: label and strategy ids.
    pub groups: Vec<(String, Vec<String>)>,
    /// Strategies dropped after they reported: left out of the ranking.
    #[serde(default)]
    pub dropped: Vec<String>,
    #[serde(default)]
    pub stop_after: Option<u32>,
    /// What the task did not say and the lead assumed.
    #[serde(default)]
    pub defaults: Vec<String>,
}

impl Plan {
    pub fn pairs_text(&self) -> String {
        self.coins
            .iter()
            .map(|c| format!("{c}-USD"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn window_text(&self) -> String {
        format!(
            "{} at {}: {} days in-sample, then {} days out-of-sample",
            self.pairs_text(),
            self.timeframes.join(", "),
            self.days,
            self.oos_days
        )
    }

    fn wire(&self) -> Value {
        json!({
            "pairs": self.coins.iter().map(|c| format!("{c}-USD")).collect::<Vec<_>>(),
            "timeframes": self.timeframes,
            "days": self.days,
            "outOfSampleDays": self.oos_days,
            "grouping": self.grouping,
            "dropped": self.dropped,
            "stopAfter": self.stop_after,
            "defaults": self.defaults,
            "rankedBy": "out-of-sample return, then in-sample Sharpe",
        })
    }
}

/// Out-of-sample days for an in-sample window: a third of it, at least one.
pub fn oos_days(days: u32) -> u32 {
    days.div_ceil(3).max(1)
}

/// One recognised piece of a task or message, in the order it appeared.
#[derive(Debug, Clone, PartialEq)]
enum Item {
    Verb(Mode),
    Coin(&'static str),
    Tf(Timeframe),
    Days(u32),
    Strategy(&'static str),
    Family(Category),
    StopAfter(u32),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// "only", "just", "use": replace.
    Set,
    /// "also", "add", "include", "try".
    Add,
    /// "drop", "remove", "skip", "without", "no", "except".
    Drop,
}

const FAMILIES: [Category; 5] = [
    Category::Trend,
    Category::MeanReversion,
    Category::Breakout,
    Category::Momentum,
    Category::Volatility,
];

/// Word sequences naming a strategy, longest first when matched.
fn strategy_patterns() -> Vec<(Vec<&'static str>, &'static str)> {
    let mut out: Vec<(Vec<&'static str>, &'static str)> = Vec::new();
    let extra: &[(&str, &str)] = &[
        ("sma", "sma_cross"),
        ("sma crossover", "sma_cross"),
        ("simple moving average", "sma_cross"),
        ("ema", "ema_cross"),
        ("ema crossover", "ema_cross"),
        ("exponential moving average", "ema_cross"),
        ("rsi", "rsi_reversion"),
        ("rsi mean reversion", "rsi_reversion"),
        ("bollinger", "bollinger_reversion"),
        ("bollinger bands", "bollinger_reversion"),
        ("bollinger band reversion", "bollinger_reversion"),
        ("donchian", "donchian_breakout"),
        ("donchian channel breakout", "donchian_breakout"),
        ("macd", "macd"),
        ("macd signal cross", "macd"),
        ("supertrend", "supertrend"),
        ("super trend", "supertrend"),
        ("keltner", "keltner_breakout"),
        ("keltner channel breakout", "keltner_breakout"),
    ];
    for s in STRATEGIES {
        out.push((s.id.split('_').collect(), s.id));
    }
    for (words, id) in extra {
        out.push((words.split(' ').collect(), id));
    }
    out.sort_by_key(|(w, _)| std::cmp::Reverse(w.len()));
    out
}

fn family_patterns() -> Vec<(Vec<&'static str>, Category)> {
    let mut out: Vec<(Vec<&'static str>, Category)> = [
        ("trend", Category::Trend),
        ("trends", Category::Trend),
        ("trending", Category::Trend),
        ("trend following", Category::Trend),
        ("mean reversion", Category::MeanReversion),
        ("mean reverting", Category::MeanReversion),
        ("mean revert", Category::MeanReversion),
        ("reversion", Category::MeanReversion),
        ("breakout", Category::Breakout),
        ("breakouts", Category::Breakout),
        ("momentum", Category::Momentum),
        ("volatility", Category::Volatility),
    ]
    .into_iter()
    .map(|(w, c)| (w.split(' ').collect(), c))
    .collect();
    out.sort_by_key(|(w, _)| std::cmp::Reverse(w.len()));
    out
}

fn coin_name(word: &str) -> Option<&'static str> {
    let by_name = match word {
        "bitcoin" => Some("BTC"),
        "ethereum" | "ether" => Some("ETH"),
        "solana" => Some("SOL"),
        "ripple" => Some("XRP"),
        "dogecoin" => Some("DOGE"),
        "avalanche" => Some("AVAX"),
        "chainlink" => Some("LINK"),
        "arbitrum" => Some("ARB"),
        _ => None,
    };
    by_name.or_else(|| {
        word.chars()
            .all(|c| c.is_ascii_alphabetic())
            .then(|| normalize_coin(word))
            .flatten()
    })
}

/// `1h`, `4hr`, `15min`, `90d` (days; `1d` is the daily timeframe), `hourly`, `daily`.
fn compact(word: &str) -> Option<Item> {
    match word {
        "hourly" => return Some(Item::Tf(Timeframe::H1)),
        "daily" => return Some(Item::Tf(Timeframe::D1)),
        _ => {}
    }
    let digits: String = word.chars().take_while(|c| c.is_ascii_digit()).collect();
    if digits.is_empty() || digits.len() == word.len() {
        return None;
    }
    let n: u32 = digits.parse().ok()?;
    unit(n, &word[digits.len()..])
}

/// A number and its unit: a timeframe for minutes and hours, a day count for days and longer.
fn unit(n: u32, unit: &str) -> Option<Item> {
    let tf = |m: u32| Timeframe::ALL.into_iter().find(|t| t.minutes() == m);
    match unit {
        "m" | "min" | "mins" | "minute" | "minutes" => tf(n).map(Item::Tf),
        "h" | "hr" | "hrs" | "hour" | "hours" => tf(n.saturating_mul(60)).map(Item::Tf),
        "d" if n == 1 => Some(Item::Tf(Timeframe::D1)),
        "d" | "day" | "days" => Some(Item::Days(n)),
        "w" | "wk" | "week" | "weeks" => Some(Item::Days(n.saturating_mul(7))),
        "month" | "months" => Some(Item::Days(n.saturating_mul(30))),
        "y" | "year" | "years" => Some(Item::Days(n.saturating_mul(365))),
        _ => None,
    }
}

fn verb(word: &str) -> Option<Mode> {
    Some(match word {
        "only" | "just" | "use" | "using" | "switch" | "instead" | "focus" => Mode::Set,
        "also" | "add" | "include" | "plus" | "try" => Mode::Add,
        "drop" | "remove" | "skip" | "exclude" | "excluding" | "except" | "without" | "no"
        | "not" | "ignore" => Mode::Drop,
        _ => return None,
    })
}

/// Splits text into lowercase alphanumeric words and finds what it names, in order.
fn lex(text: &str) -> Vec<Item> {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let strategies = strategy_patterns();
    let families = family_patterns();
    let matches = |at: usize, pattern: &[&str]| {
        words.len() >= at + pattern.len() && words[at..at + pattern.len()] == *pattern
    };
    let mut items = Vec::new();
    let mut i = 0;
    'words: while i < words.len() {
        let w = words[i];
        if (w == "stop" || w == "finish") && words.get(i + 1) == Some(&"after") {
            let mut j = i + 2;
            // "stop after the first 2"
            while matches!(words.get(j), Some(&"the") | Some(&"first")) {
                j += 1;
            }
            if let Some(n) = words.get(j).and_then(|n| n.parse::<u32>().ok()) {
                items.push(Item::StopAfter(n));
                i = j + 1;
                continue;
            }
        }
        for (pattern, id) in &strategies {
            if matches(i, pattern) {
                items.push(Item::Strategy(id));
                i += pattern.len();
                continue 'words;
            }
        }
        for (pattern, family) in &families {
            if matches(i, pattern) {
                items.push(Item::Family(*family));
                i += pattern.len();
                continue 'words;
            }
        }
        if let Some(mode) = verb(w) {
            items.push(Item::Verb(mode));
        } else if let Ok(n) = w.parse::<u32>() {
            if let Some(item) = words.get(i + 1).and_then(|u| unit(n, u)) {
                items.push(item);
                i += 1;
            }
        } else if let Some(item) = compact(w) {
            items.push(item);
        } else if let Some(coin) = coin_name(w) {
            items.push(Item::Coin(coin));
        }
        i += 1;
    }
    items
}

fn family_strategies(family: Category) -> Vec<&'static str> {
    STRATEGIES
        .iter()
        .filter(|s| s.category == family)
        .map(|s| s.id)
        .collect()
}

fn push_unique<T: PartialEq>(list: &mut Vec<T>, item: T) {
    if !list.contains(&item) {
        list.push(item);
    }
}

fn check_days(days: u32) -> Result<u32, String> {
    if (1..=data::MAX_DAYS).contains(&days) {
        Ok(days)
    } else {
        Err(format!(
            "{days} days is outside 1-{} days of in-sample history",
            data::MAX_DAYS
        ))
    }
}

/// The lead's deterministic planner. Pairs (`ETH`, `ETH-USD`, `ethereum`), timeframes (`1h`,
/// `4 hour`, `hourly`), days (`90 days`, `90d`, `2 weeks`, `3 months`), families (trend,
/// mean-reversion, breakout, momentum, volatility) and strategies (ids or names: `macd`,
/// `donchian breakout`, `supertrend`) are recognised; "without X" / "except X" leave one out.
/// One agent per strategy when the task names one family or only strategies; one per family when
/// it names several families or none.
pub fn plan_task(task: &str) -> Result<Plan, String> {
    let mut coins: Vec<&'static str> = Vec::new();
    let mut tfs: Vec<Timeframe> = Vec::new();
    let mut days = None;
    let mut named: Vec<&'static str> = Vec::new();
    let mut families: Vec<Category> = Vec::new();
    let mut excluded: Vec<&'static str> = Vec::new();
    let mut stop_after = None;
    let mut mode = None;
    for item in lex(task) {
        match item {
            Item::Verb(m) => mode = Some(m),
            Item::Coin(c) => push_unique(&mut coins, c),
            Item::Tf(t) => push_unique(&mut tfs, t),
            Item::Days(n) => days = Some(check_days(n)?),
            Item::Strategy(id) if mode == Some(Mode::Drop) => push_unique(&mut excluded, id),
            Item::Strategy(id) => push_unique(&mut named, id),
            Item::Family(f) if mode == Some(Mode::Drop) => {
                for id in family_strategies(f) {
                    push_unique(&mut excluded, id);
                }
            }
            Item::Family(f) => push_unique(&mut families, f),
            Item::StopAfter(n) => stop_after = Some(n.max(1)),
        }
    }
    let mut defaults = Vec::new();
    if coins.is_empty() {
        coins.push(DEFAULT_COIN);
        defaults.push(format!("pair {DEFAULT_COIN}-USD"));
    }
    if tfs.is_empty() {
        tfs.push(DEFAULT_TIMEFRAME);
        defaults.push(format!("timeframe {}", DEFAULT_TIMEFRAME.as_str()));
    }
    let days = days.unwrap_or_else(|| {
        defaults.push(format!("{DEFAULT_DAYS} days"));
        DEFAULT_DAYS
    });
    tfs.sort();
    let no_family = families.is_empty() && named.is_empty();
    if no_family {
        families = FAMILIES.to_vec();
        defaults.push("every strategy family".into());
    }
    let per_strategy = families.len() <= 1 && !no_family;
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    let mut covered: Vec<&str> = Vec::new();
    let keep = |id: &&str| !excluded.contains(id);
    if per_strategy {
        let ids = families
            .iter()
            .flat_map(|f| family_strategies(*f))
            .chain(named.iter().copied())
            .filter(keep);
        for id in ids {
            if !covered.contains(&id) {
                covered.push(id);
                groups.push((id.to_string(), vec![id.to_string()]));
            }
        }
    } else {
        for f in &families {
            let ids: Vec<&str> = family_strategies(*f).into_iter().filter(keep).collect();
            if ids.is_empty() {
                continue;
            }
            covered.extend(&ids);
            groups.push((
                f.as_str().to_string(),
                ids.iter().map(|s| s.to_string()).collect(),
            ));
        }
        for id in named.iter().copied().filter(keep) {
            if !covered.contains(&id) {
                covered.push(id);
                groups.push((id.to_string(), vec![id.to_string()]));
            }
        }
    }
    if groups.is_empty() {
        return Err("the task leaves no strategy to test".into());
    }
    Ok(Plan {
        coins: coins.iter().map(|c| c.to_string()).collect(),
        timeframes: tfs.iter().map(|t| t.as_str().to_string()).collect(),
        days,
        oos_days: oos_days(days),
        grouping: if per_strategy { "strategy" } else { "family" }.into(),
        groups,
        dropped: Vec::new(),
        stop_after,
        defaults,
    })
}

/// Changes a message asks for. Without a verb, pairs and timeframes replace the current ones and
/// strategies are added; "only" replaces, "also"/"add" adds, "drop"/"without" removes.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Steering {
    pub set_coins: Vec<&'static str>,
    pub add_coins: Vec<&'static str>,
    pub drop_coins: Vec<&'static str>,
    pub set_tfs: Vec<Timeframe>,
    pub add_tfs: Vec<Timeframe>,
    pub drop_tfs: Vec<Timeframe>,
    pub days: Option<u32>,
    pub only_strategies: Vec<&'static str>,
    pub add_strategies: Vec<&'static str>,
    pub drop_strategies: Vec<&'static str>,
    pub stop_after: Option<u32>,
}

impl Steering {
    pub fn is_empty(&self) -> bool {
        *self == Steering::default()
    }
}

pub fn parse_steering(message: &str) -> Steering {
    let mut s = Steering::default();
    let mut mode = None;
    for item in lex(message) {
        match (item, mode) {
            (Item::Verb(m), _) => mode = Some(m),
            (Item::Coin(c), Some(Mode::Add)) => push_unique(&mut s.add_coins, c),
            (Item::Coin(c), Some(Mode::Drop)) => push_unique(&mut s.drop_coins, c),
            (Item::Coin(c), _) => push_unique(&mut s.set_coins, c),
            (Item::Tf(t), Some(Mode::Add)) => push_unique(&mut s.add_tfs, t),
            (Item::Tf(t), Some(Mode::Drop)) => push_unique(&mut s.drop_tfs, t),
            (Item::Tf(t), _) => push_unique(&mut s.set_tfs, t),
            (Item::Days(n), _) => s.days = Some(n),
            (Item::Strategy(id), m) => strategy_change(&mut s, m, &[id]),
            (Item::Family(f), m) => strategy_change(&mut s, m, &family_strategies(f)),
            (Item::StopAfter(n), _) => s.stop_after = Some(n),
        }
    }
    s
}

fn strategy_change(s: &mut Steering, mode: Option<Mode>, ids: &[&'static str]) {
    let list = match mode {
        Some(Mode::Drop) => &mut s.drop_strategies,
        Some(Mode::Set) => &mut s.only_strategies,
        _ => &mut s.add_strategies,
    };
    for id in ids {
        push_unique(list, *id);
    }
}

// ---- rows ----------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct RunRow {
    id: String,
    task: String,
    status: String,
    planner: String,
    plan: Plan,
    created_at: DateTime<Utc>,
    finished_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone)]
struct AgentRow {
    agent_id: String,
    seq: i64,
    name: String,
    role: String,
    parent: Option<String>,
    status: String,
    task: String,
    progress: u8,
    summary: Option<String>,
    strategies: Vec<String>,
    attempt: i64,
    result: Option<AgentResult>,
}

impl AgentRow {
    fn unfinished(&self) -> bool {
        matches!(self.status.as_str(), "queued" | "running" | "planning")
    }
}

/// An agent's evidence: one row per strategy, pair and timeframe it tested.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentResult {
    pub rows: Vec<ResultRow>,
    #[serde(default)]
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultRow {
    pub strategy_id: String,
    pub pair: String,
    pub timeframe: String,
    pub days: u32,
    pub out_of_sample_days: u32,
    /// Parameter sets the optimizer tried.
    pub candidates: usize,
    /// The in-sample best (by Sharpe), then the next best.
    pub sets: Vec<Candidate>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    pub parameters: serde_json::Map<String, Value>,
    pub in_sample: Evidence,
    pub out_of_sample: Evidence,
}

/// The numbers a trader reads first; undefined ones (no trades, no variance) are null.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    pub return_pct: Option<f64>,
    pub sharpe: Option<f64>,
    pub max_drawdown_pct: Option<f64>,
    pub trades: usize,
    pub win_rate_pct: Option<f64>,
    pub profit_factor: Option<f64>,
    pub start: Option<DateTime<Utc>>,
    pub end: Option<DateTime<Utc>>,
    pub bars: usize,
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some((x * 10_000.0).round() / 10_000.0)
}

fn evidence(s: &Stats, bars: usize) -> Evidence {
    let time = |t: i64| DateTime::<Utc>::from_timestamp(t, 0);
    Evidence {
        return_pct: finite(s.return_pct),
        sharpe: finite(s.sharpe),
        max_drawdown_pct: finite(s.max_drawdown_pct),
        trades: s.trades,
        win_rate_pct: finite(s.win_rate_pct),
        profit_factor: finite(s.profit_factor),
        start: time(s.start),
        end: time(s.end),
        bars,
    }
}

fn load_run(conn: &Connection, id: &str, account_id: Option<i64>) -> DbResult<Option<RunRow>> {
    conn.query_row(
        "SELECT id, account_id, task, status, planner, plan, created_at, finished_at
         FROM research_runs WHERE id = ?1 AND (?2 IS NULL OR account_id = ?2)",
        params![id, account_id],
        run_from_row,
    )
    .optional()
}

fn run_from_row(r: &rusqlite::Row) -> DbResult<RunRow> {
    let plan: String = r.get(5)?;
    let plan = serde_json::from_str(&plan).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(5, rusqlite::types::Type::Text, Box::new(e))
    })?;
    Ok(RunRow {
        id: r.get(0)?,
        task: r.get(2)?,
        status: r.get(3)?,
        planner: r.get(4)?,
        plan,
        created_at: parse_ts(r.get(6)?),
        finished_at: r.get::<_, Option<String>>(7)?.map(parse_ts),
    })
}

fn load_agents(conn: &Connection, run_id: &str) -> DbResult<Vec<AgentRow>> {
    let mut stmt = conn.prepare(
        "SELECT agent_id, seq, name, role, parent, status, task, progress, summary, strategies,
                attempt, result
         FROM research_agents WHERE run_id = ?1 ORDER BY seq",
    )?;
    let rows = stmt.query_map([run_id], |r| {
        let strategies: String = r.get(9)?;
        let result: Option<String> = r.get(11)?;
        Ok(AgentRow {
            agent_id: r.get(0)?,
            seq: r.get(1)?,
            name: r.get(2)?,
            role: r.get(3)?,
            parent: r.get(4)?,
            status: r.get(5)?,
            task: r.get(6)?,
            progress: r.get::<_, i64>(7)?.clamp(0, 100) as u8,
            summary: r.get(8)?,
            strategies: serde_json::from_str(&strategies).unwrap_or_default(),
            attempt: r.get(10)?,
            result: result.and_then(|s| serde_json::from_str(&s).ok()),
        })
    })?;
    rows.collect()
}

fn insert_agent(conn: &Connection, run_id: &str, a: &AgentRow) -> DbResult<()> {
    conn.execute(
        "INSERT INTO research_agents (run_id, agent_id, seq, name, role, parent, status, task,
                                      progress, summary, strategies, attempt)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        params![
            run_id,
            a.agent_id,
            a.seq,
            a.name,
            a.role,
            a.parent,
            a.status,
            a.task,
            a.progress as i64,
            a.summary,
            serde_json::to_string(&a.strategies).unwrap_or_else(|_| "[]".into()),
            a.attempt,
        ],
    )?;
    Ok(())
}

/// Writes an agent's status, task, progress, summary and strategies as they are in `a`.
fn save_agent(conn: &Connection, run_id: &str, a: &AgentRow) -> DbResult<()> {
    conn.execute(
        "UPDATE research_agents SET status = ?3, task = ?4, progress = ?5, summary = ?6,
                strategies = ?7, attempt = ?8
         WHERE run_id = ?1 AND agent_id = ?2",
        params![
            run_id,
            a.agent_id,
            a.status,
            a.task,
            a.progress as i64,
            a.summary,
            serde_json::to_string(&a.strategies).unwrap_or_else(|_| "[]".into()),
            a.attempt,
        ],
    )?;
    Ok(())
}

fn say(
    conn: &Connection,
    run_id: &str,
    now: DateTime<Utc>,
    author: &str,
    text: &str,
) -> DbResult<()> {
    conn.execute(
        "INSERT INTO research_messages (run_id, time, author, text) VALUES (?1, ?2, ?3, ?4)",
        params![run_id, ts(now), author, text],
    )?;
    Ok(())
}

fn save_plan(conn: &Connection, run_id: &str, plan: &Plan) -> DbResult<()> {
    conn.execute(
        "UPDATE research_runs SET plan = ?2 WHERE id = ?1",
        params![run_id, serde_json::to_string(plan).unwrap_or_default()],
    )?;
    Ok(())
}

/// The run as the wire shows it: agents (with their `strategies` and `result`), transcript,
/// artifacts, and the lead's `plan`.
fn run_json(conn: &Connection, run: &RunRow) -> DbResult<Value> {
    let agents = load_agents(conn, &run.id)?;
    let mut stmt = conn.prepare(
        "SELECT time, author, text FROM research_messages WHERE run_id = ?1 ORDER BY id",
    )?;
    let transcript = stmt
        .query_map([&run.id], |r| {
            Ok(ResearchMessage {
                time: parse_ts(r.get(0)?),
                author: r.get(1)?,
                text: r.get(2)?,
            })
        })?
        .collect::<DbResult<Vec<_>>>()?;
    let mut stmt = conn.prepare(
        "SELECT name, kind, content, created_at FROM research_artifacts WHERE run_id = ?1
         ORDER BY name DESC",
    )?;
    let artifacts = stmt
        .query_map([&run.id], |r| {
            Ok(ResearchArtifact {
                name: r.get(0)?,
                kind: r.get(1)?,
                content: r.get(2)?,
                created_at: Some(parse_ts(r.get(3)?)),
            })
        })?
        .collect::<DbResult<Vec<_>>>()?;
    let mut extra = serde_json::Map::new();
    extra.insert("plan".into(), run.plan.wire());
    let wire = ResearchRun {
        run_id: run.id.clone(),
        task: run.task.clone(),
        status: run.status.clone(),
        created_at: Some(run.created_at),
        finished_at: run.finished_at,
        planner: run.planner.clone(),
        agents: agents
            .iter()
            .map(|a| ResearchAgent {
                agent_id: a.agent_id.clone(),
                name: a.name.clone(),
                role: a.role.clone(),
                parent: a.parent.clone(),
                status: a.status.clone(),
                task: a.task.clone(),
                progress: a.progress,
                summary: a.summary.clone(),
            })
            .collect(),
        transcript,
        artifacts,
        extra,
    };
    let mut value = serde_json::to_value(wire).unwrap_or(Value::Null);
    if let Some(list) = value.get_mut("agents").and_then(Value::as_array_mut) {
        for (v, a) in list.iter_mut().zip(&agents) {
            if let Some(obj) = v.as_object_mut() {
                obj.insert("strategies".into(), json!(a.strategies));
                obj.insert(
                    "result".into(),
                    a.result
                        .as_ref()
                        .and_then(|r| serde_json::to_value(r).ok())
                        .unwrap_or(Value::Null),
                );
            }
        }
    }
    Ok(value)
}

// ---- the live part: wake-ups and cancellation flags ----------------------------------------------

#[derive(Default)]
struct Live {
    wake: Notify,
    cancels: Mutex<HashMap<String, Arc<AtomicBool>>>,
}

/// The runs whose lead task runs in one sandbox, by run id.
#[derive(Default)]
pub struct Runs(Mutex<HashMap<String, Arc<Live>>>);

impl Runs {
    fn get(&self, run_id: &str) -> Option<Arc<Live>> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(run_id)
            .cloned()
    }

    fn insert(&self, run_id: &str, live: Arc<Live>) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(run_id.to_string(), live);
    }

    fn remove(&self, run_id: &str) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(run_id);
    }

    fn wake(&self, run_id: &str) {
        if let Some(l) = self.get(run_id) {
            l.wake.notify_one();
        }
    }

    fn cancel(&self, run_id: &str, agents: &[String]) {
        if let Some(l) = self.get(run_id) {
            let mut cancels = l.cancels.lock().unwrap_or_else(|e| e.into_inner());
            for a in agents {
                if let Some(flag) = cancels.remove(a) {
                    flag.store(true, Ordering::Relaxed);
                }
            }
        }
    }
}

fn new_run_id() -> String {
    use rand::RngExt;
    let bytes: [u8; 8] = rand::rng().random();
    format!("run_{}", hex::encode(bytes))
}

// ---- operations ------------------------------------------------------------------------------------

fn not_found(run_id: &str) -> AppError {
    AppError::not_found(format!(
        "no research run {run_id:?} on this account; GET /api/terminal/research/runs/active shows yours"
    ))
}

fn not_active(run: &RunRow) -> AppError {
    AppError::conflict(
        "research_run_not_active",
        format!(
            "research run {} is {}, not active; its transcript and artifacts remain readable, \
             and a new run starts with POST /api/terminal/research/runs",
            run.id, run.status
        ),
    )
}

fn check_text(text: &str, field: &str) -> Result<String, AppError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(AppError::invalid(
            field,
            format!("{field} must not be empty"),
        ));
    }
    if text.chars().count() > MAX_TEXT {
        return Err(AppError::invalid(
            field,
            format!("{field} is longer than {MAX_TEXT} characters"),
        ));
    }
    Ok(text.to_string())
}

fn strategy_label(ids: &[String]) -> String {
    ids.join(", ")
}

fn agent_task_text(strategies: &[String], plan: &Plan) -> String {
    format!(
        "Optimize {} on {} (grid of up to {GRID_POINTS} parameter sets per strategy), then \
         backtest the best {TOP_SETS} out of sample",
        strategy_label(strategies),
        plan.window_text()
    )
}

/// `research_start`: plans, charges one unit of compute, persists the run with its lead and
/// agents, and starts the lead. 409 `research_run_active` while the account has an active run.
pub async fn start(shared: &Arc<Shared>, caller: &Caller, task: &str) -> Result<Value, AppError> {
    let task = check_text(task, "task")?;
    let plan = plan_task(&task).map_err(|e| AppError::invalid("task", e))?;
    let caller = caller.clone();
    let (run_id, value) = shared
        .run_raw(move |core, now| create_run(core, &caller, &task, plan, now))
        .await
        .map_err(AppError::internal)??;
    spawn_lead(shared.clone(), run_id);
    Ok(value)
}

fn create_run(
    core: &mut Core,
    caller: &Caller,
    task: &str,
    plan: Plan,
    now: DateTime<Utc>,
) -> Result<(String, Value), AppError> {
    let active: Option<String> = core
        .store
        .conn
        .query_row(
            "SELECT id FROM research_runs WHERE account_id = ?1 AND status = 'active'",
            [caller.account_id],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(id) = active {
        return Err(AppError::conflict(
            "research_run_active",
            format!(
                "research run {id} is still active on this account; message it, stop it (POST \
                 /api/terminal/research/runs/{id}/stop) or wait for it to finish"
            ),
        ));
    }
    quota::charge_compute(core, caller, now)?;
    let id = new_run_id();
    let tx = core.store.conn.transaction()?;
    tx.execute(
        "INSERT INTO research_runs (id, account_id, key_id, task, status, planner, plan, created_at)
         VALUES (?1, ?2, ?3, ?4, 'active', 'deterministic', ?5, ?6)",
        params![
            id,
            caller.account_id,
            caller.key_id,
            task,
            serde_json::to_string(&plan).unwrap_or_default(),
            ts(now)
        ],
    )?;
    insert_agent(
        &tx,
        &id,
        &AgentRow {
            agent_id: "lead".into(),
            seq: 0,
            name: "Lead".into(),
            role: "lead".into(),
            parent: None,
            status: "running".into(),
            task: task.to_string(),
            progress: 0,
            summary: None,
            strategies: Vec::new(),
            attempt: 0,
            result: None,
        },
    )?;
    let mut names = Vec::new();
    for (i, (label, ids)) in plan.groups.iter().enumerate() {
        let agent_id = format!("agent-{}", i + 1);
        names.push(format!("{agent_id} ({label})"));
        insert_agent(
            &tx,
            &id,
            &AgentRow {
                agent_id,
                seq: i as i64 + 1,
                name: format!("{label} agent"),
                role: "worker".into(),
                parent: Some("lead".into()),
                status: "queued".into(),
                task: agent_task_text(ids, &plan),
                progress: 0,
                summary: None,
                strategies: ids.clone(),
                attempt: 0,
                result: None,
            },
        )?;
    }
    say(&tx, &id, now, "user", task)?;
    let mut text = format!(
        "Planner: deterministic (rules over the task's words; no LLM is used for research in \
         this sandbox). Plan: test {} on {}. Each agent optimizes a grid of up to {GRID_POINTS} \
         parameter sets per strategy on the in-sample window, backtests its {TOP_SETS} best sets \
         (by in-sample Sharpe) on the out-of-sample window that follows, and reports. I rank by \
         out-of-sample return. Spawning {} agent{} ({} at a time): {}.",
        match plan.grouping.as_str() {
            "strategy" => "one agent per strategy",
            _ => "one agent per strategy family",
        },
        plan.window_text(),
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        PARALLEL_AGENTS,
        names.join(", ")
    );
    if !plan.defaults.is_empty() {
        let _ = write!(
            text,
            " Defaults (not in the task): {}.",
            plan.defaults.join(", ")
        );
    }
    if let Some(n) = plan.stop_after {
        let _ = write!(text, " I will finish after {n} agent(s) report.");
    }
    say(&tx, &id, now, "lead", &text)?;
    tx.commit()?;
    let run = load_run(&core.store.conn, &id, None)?
        .ok_or_else(|| AppError::internal("research run vanished"))?;
    Ok((id, run_json(&core.store.conn, &run)?))
}

/// `research_status`: the account's active run, else its most recent one, else none.
pub async fn status(shared: &Arc<Shared>, caller: &Caller) -> Result<Option<Value>, AppError> {
    let account = caller.account_id;
    shared
        .run_raw(move |core, _| -> Result<Option<Value>, AppError> {
            let conn = &core.store.conn;
            let run = conn
                .query_row(
                    "SELECT id, account_id, task, status, planner, plan, created_at, finished_at
                     FROM research_runs WHERE account_id = ?1
                     ORDER BY status = 'active' DESC, created_at DESC, rowid DESC LIMIT 1",
                    [account],
                    run_from_row,
                )
                .optional()?;
            match run {
                Some(run) => Ok(Some(run_json(conn, &run)?)),
                None => Ok(None),
            }
        })
        .await
        .map_err(AppError::internal)?
}

/// `research_message`: the user's message and the lead's answer go into the transcript, and the
/// changes it asks for are applied (see [`steer`]).
pub async fn message(
    shared: &Arc<Shared>,
    caller: &Caller,
    run_id: &str,
    text: &str,
) -> Result<Value, AppError> {
    let text = check_text(text, "message")?;
    let account = caller.account_id;
    let id = run_id.to_string();
    let (value, cancels) = shared
        .run_raw(move |core, now| -> Result<(Value, Vec<String>), AppError> {
            let conn = &mut core.store.conn;
            let run = load_run(conn, &id, Some(account))?.ok_or_else(|| not_found(&id))?;
            if run.status != "active" {
                return Err(not_active(&run));
            }
            let agents = load_agents(conn, &id)?;
            let steering = parse_steering(&text);
            let outcome = steer(&run.plan, &agents, &steering);
            let tx = conn.transaction()?;
            say(&tx, &id, now, "user", &text)?;
            for a in &outcome.changed_agents {
                save_agent(&tx, &id, a)?;
            }
            for a in &outcome.new_agents {
                insert_agent(&tx, &id, a)?;
            }
            save_plan(&tx, &id, &outcome.plan)?;
            say(&tx, &id, now, "lead", &outcome.reply)?;
            tx.commit()?;
            let run = load_run(conn, &id, None)?.ok_or_else(|| not_found(&id))?;
            let mut value = run_json(conn, &run)?;
            if let Some(obj) = value.as_object_mut() {
                obj.insert("reply".into(), json!(outcome.reply));
                obj.insert("applied".into(), json!(outcome.applied));
            }
            Ok((value, outcome.cancel))
        })
        .await
        .map_err(AppError::internal)??;
    shared.research.cancel(run_id, &cancels);
    shared.research.wake(run_id);
    Ok(value)
}

/// What a message changes.
#[derive(Debug, Default)]
pub struct SteerOutcome {
    plan: Plan,
    changed_agents: Vec<AgentRow>,
    new_agents: Vec<AgentRow>,
    /// Agents whose running computation must stop (dropped or restarted).
    cancel: Vec<String>,
    /// One line per change made.
    pub applied: Vec<String>,
    /// The lead's answer in the transcript.
    pub reply: String,
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            coins: vec![DEFAULT_COIN.into()],
            timeframes: vec![DEFAULT_TIMEFRAME.as_str().into()],
            days: DEFAULT_DAYS,
            oos_days: oos_days(DEFAULT_DAYS),
            grouping: "strategy".into(),
            groups: Vec::new(),
            dropped: Vec::new(),
            stop_after: None,
            defaults: Vec::new(),
        }
    }
}

fn apply_list<T: PartialEq + Clone>(current: &[T], set: &[T], add: &[T], drop: &[T]) -> Vec<T> {
    let mut out: Vec<T> = if set.is_empty() {
        current.to_vec()
    } else {
        set.to_vec()
    };
    for a in add {
        push_unique(&mut out, a.clone());
    }
    out.retain(|x| !drop.contains(x));
    out
}

/// Applies a message's changes to the plan and the agents. Window changes (pairs, timeframes,
/// days) apply to every agent that has not reported: queued agents start with the new window,
/// running ones are restarted with it; agents that reported keep their results. Dropping a
/// strategy removes it from unfinished agents (an agent left with none is stopped) and from the
/// ranking; adding one spawns a new agent unless an agent already covers it. "stop after N"
/// finishes the run once N agents have reported.
fn steer(plan: &Plan, agents: &[AgentRow], s: &Steering) -> SteerOutcome {
    let mut out = SteerOutcome {
        plan: plan.clone(),
        ..Default::default()
    };
    let mut problems: Vec<String> = Vec::new();
    let mut agents: Vec<AgentRow> = agents.to_vec();
    let mut touched: Vec<String> = Vec::new();
    let mut restarted: Vec<String> = Vec::new();

    // The window.
    let coins: Vec<String> = apply_list(
        &plan.coins,
        &s.set_coins
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>(),
        &s.add_coins
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>(),
        &s.drop_coins
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>(),
    );
    if coins.is_empty() {
        problems.push("at least one pair must remain".into());
    } else if coins != plan.coins {
        out.applied.push(format!(
            "pairs {} → {}",
            plan.pairs_text(),
            coins
                .iter()
                .map(|c| format!("{c}-USD"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        out.plan.coins = coins;
    }
    let tf_strings = |v: &[Timeframe]| v.iter().map(|t| t.as_str().to_string()).collect::<Vec<_>>();
    let mut tfs = apply_list(
        &plan.timeframes,
        &tf_strings(&s.set_tfs),
        &tf_strings(&s.add_tfs),
        &tf_strings(&s.drop_tfs),
    );
    tfs.sort_by_key(|t| Timeframe::parse(t));
    if tfs.is_empty() {
        problems.push("at least one timeframe must remain".into());
    } else if tfs != plan.timeframes {
        out.applied.push(format!(
            "timeframes {} → {}",
            plan.timeframes.join(", "),
            tfs.join(", ")
        ));
        out.plan.timeframes = tfs;
    }
    if let Some(days) = s.days {
        match check_days(days) {
            Err(e) => problems.push(e),
            Ok(days) if days != plan.days => {
                out.applied.push(format!(
                    "days {} → {days} in-sample ({} out-of-sample)",
                    plan.days,
                    oos_days(days)
                ));
                out.plan.days = days;
                out.plan.oos_days = oos_days(days);
            }
            Ok(_) => {}
        }
    }
    let window_changed = out.plan.coins != plan.coins
        || out.plan.timeframes != plan.timeframes
        || out.plan.days != plan.days;

    // Strategies.
    let all_planned: Vec<String> = agents
        .iter()
        .filter(|a| a.role != "lead")
        .flat_map(|a| a.strategies.clone())
        .collect();
    let mut drops: Vec<String> = s.drop_strategies.iter().map(|s| s.to_string()).collect();
    if !s.only_strategies.is_empty() {
        for id in &all_planned {
            if !s.only_strategies.contains(&id.as_str()) {
                push_unique(&mut drops, id.clone());
            }
        }
    }
    for id in &drops {
        if !all_planned.contains(id) {
            if s.drop_strategies.contains(&id.as_str()) {
                problems.push(format!("{id} is not in this run"));
            }
            continue;
        }
        let mut what = Vec::new();
        for a in agents.iter_mut().filter(|a| a.role != "lead") {
            if !a.strategies.contains(id) {
                continue;
            }
            if a.unfinished() {
                a.strategies.retain(|x| x != id);
                push_unique(&mut touched, a.agent_id.clone());
                if a.strategies.is_empty() {
                    if a.status == "running" {
                        push_unique(&mut out.cancel, a.agent_id.clone());
                    }
                    a.status = "stopped".into();
                    a.summary = Some(format!("dropped at the user's request ({id})"));
                    what.push(format!("{} stopped", a.agent_id));
                } else {
                    if a.status == "running" {
                        push_unique(&mut restarted, a.agent_id.clone());
                    }
                    what.push(format!("removed from {}", a.agent_id));
                }
            } else {
                what.push(format!(
                    "left out of the ranking ({} had reported)",
                    a.agent_id
                ));
            }
        }
        push_unique(&mut out.plan.dropped, id.clone());
        out.applied
            .push(format!("dropped {id}: {}", what.join(", ")));
    }
    let adds: Vec<&str> = s
        .add_strategies
        .iter()
        .chain(&s.only_strategies)
        .copied()
        .collect();
    let mut next_seq = agents.iter().map(|a| a.seq).max().unwrap_or(0) + 1;
    for id in adds {
        if drops.iter().any(|d| d == id) {
            continue;
        }
        let covering = agents
            .iter()
            .filter(|a| a.role != "lead" && a.strategies.iter().any(|x| x == id))
            .collect::<Vec<_>>();
        if out.plan.dropped.iter().any(|d| d == id)
            && covering.iter().any(|a| a.status == "done")
            && !covering.iter().any(|a| a.unfinished())
        {
            out.plan.dropped.retain(|d| d != id);
            out.applied.push(format!(
                "{id} is back in the ranking (its agent had reported)"
            ));
            continue;
        }
        if let Some(a) = covering
            .iter()
            .find(|a| a.unfinished() || a.status == "done")
        {
            if s.add_strategies.contains(&id) {
                problems.push(format!("{id} is already covered by {}", a.agent_id));
            }
            continue;
        }
        out.plan.dropped.retain(|d| d != id);
        let agent_id = format!("agent-{next_seq}");
        let strategies = vec![id.to_string()];
        out.applied.push(format!("added {id} ({agent_id} queued)"));
        out.new_agents.push(AgentRow {
            agent_id,
            seq: next_seq,
            name: format!("{id} agent"),
            role: "worker".into(),
            parent: Some("lead".into()),
            status: "queued".into(),
            task: String::new(),
            progress: 0,
            summary: None,
            strategies,
            attempt: 0,
            result: None,
        });
        next_seq += 1;
    }

    if let Some(n) = s.stop_after {
        if n == 0 {
            problems.push("stop after needs at least 1 agent".into());
        } else if plan.stop_after != Some(n) {
            out.plan.stop_after = Some(n);
            out.applied
                .push(format!("I will finish after {n} agent(s) report"));
        }
    }

    // Unfinished agents follow the new window; running ones start over with it.
    let mut kept = Vec::new();
    for a in agents.iter_mut().filter(|a| a.role != "lead") {
        if a.unfinished() {
            if window_changed && a.status == "running" {
                push_unique(&mut restarted, a.agent_id.clone());
            }
            let task = agent_task_text(&a.strategies, &out.plan);
            if task != a.task {
                a.task = task;
                push_unique(&mut touched, a.agent_id.clone());
            }
        } else if window_changed && a.status == "done" {
            kept.push(a.agent_id.clone());
        }
    }
    for a in agents.iter_mut() {
        if restarted.contains(&a.agent_id) && a.status == "running" {
            a.status = "queued".into();
            a.progress = 0;
            a.attempt += 1;
            push_unique(&mut out.cancel, a.agent_id.clone());
            push_unique(&mut touched, a.agent_id.clone());
        }
    }
    for a in &mut out.new_agents {
        a.task = agent_task_text(&a.strategies, &out.plan);
    }
    out.changed_agents = agents
        .into_iter()
        .filter(|a| touched.contains(&a.agent_id))
        .collect();

    let mut reply = String::new();
    if out.applied.is_empty() {
        reply.push_str("I found nothing to change in that message.");
    } else {
        let _ = write!(reply, "Changed: {}.", out.applied.join("; "));
        let restarted: Vec<&String> = restarted
            .iter()
            .filter(|id| {
                out.changed_agents
                    .iter()
                    .any(|a| &a.agent_id == *id && a.status == "queued")
            })
            .collect();
        if !restarted.is_empty() {
            let _ = write!(
                reply,
                " Restarting {} with the new plan.",
                restarted
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if !kept.is_empty() {
            let _ = write!(
                reply,
                " {} already reported and keep their results on the old window.",
                kept.join(", ")
            );
        }
    }
    if !problems.is_empty() {
        let _ = write!(reply, " Not applied: {}.", problems.join("; "));
    }
    if out.applied.is_empty() {
        reply.push_str(
            " I understand: \"only 4h\", \"also SOL\", \"drop 1h\", \"use 60 days\", \
             \"drop macd\", \"add donchian_breakout\", \"only trend\", \"stop after 2\"; \
             to stop the run use research_stop (/research stop).",
        );
    }
    out.reply = reply;
    out
}

/// `research_stop`: the run becomes `stopped`, unfinished agents `stopped`, and the lead writes a
/// partial report from what has been reported. 409 `research_run_not_active` if it already ended.
pub async fn stop(shared: &Arc<Shared>, caller: &Caller, run_id: &str) -> Result<Value, AppError> {
    let account = caller.account_id;
    let id = run_id.to_string();
    let (value, cancels) = shared
        .run_raw(move |core, now| -> Result<(Value, Vec<String>), AppError> {
            let conn = &mut core.store.conn;
            let run = load_run(conn, &id, Some(account))?.ok_or_else(|| not_found(&id))?;
            if run.status != "active" {
                return Err(not_active(&run));
            }
            let cancels = finish(
                conn,
                &run,
                Ending::Stopped("Stopped at the user's request."),
                now,
            )?;
            let run = load_run(conn, &id, None)?.ok_or_else(|| not_found(&id))?;
            Ok((run_json(conn, &run)?, cancels))
        })
        .await
        .map_err(AppError::internal)??;
    shared.research.cancel(run_id, &cancels);
    shared.research.wake(run_id);
    Ok(value)
}

/// How a run ends.
enum Ending<'a> {
    /// Every agent reported, or "stop after N" was met.
    Completed,
    /// Stopped by the user or by a sandbox restart; the note says which.
    Stopped(&'a str),
}

/// Ends an active run in one transaction: unfinished agents are stopped, the report is written,
/// the lead says so. Returns the agents whose computation must be cancelled.
fn finish(
    conn: &mut Connection,
    run: &RunRow,
    ending: Ending,
    now: DateTime<Utc>,
) -> DbResult<Vec<String>> {
    let mut agents = load_agents(conn, &run.id)?;
    let mut cancels = Vec::new();
    let (stopped_note, run_status) = match &ending {
        Ending::Stopped(note) => (format!("stopped before it finished: {note}"), "stopped"),
        Ending::Completed => (
            format!(
                "not needed: the run finished after {} agent(s) reported",
                run.plan.stop_after.unwrap_or(0)
            ),
            "completed",
        ),
    };
    for a in agents
        .iter_mut()
        .filter(|a| a.role != "lead" && a.unfinished())
    {
        if a.status == "running" {
            cancels.push(a.agent_id.clone());
        }
        a.status = "stopped".into();
        a.summary = Some(stopped_note.clone());
    }
    let workers: Vec<&AgentRow> = agents.iter().filter(|a| a.role != "lead").collect();
    let done = workers.iter().filter(|a| a.status == "done").count();
    let failed = workers.iter().filter(|a| a.status == "failed").count();
    let run_status = if run_status == "completed" && done == 0 && failed > 0 {
        "failed"
    } else {
        run_status
    };
    let report = Report::build(run, &agents, run_status, now);
    let mut lead_text = match &ending {
        Ending::Stopped(note) => format!(
            "{note} {done} of {} agents had reported; the partial report (report.md, \
             report.json) ranks what finished.",
            workers.len()
        ),
        Ending::Completed if run_status == "failed" => {
            "Every agent failed; report.md and report.json say why.".to_string()
        }
        Ending::Completed => format!(
            "All done: {done} of {} agents reported. The ranked report is in report.md and \
             report.json.",
            workers.len()
        ),
    };
    let top = report.top_lines(3);
    if !top.is_empty() {
        let _ = write!(lead_text, " Top: {}", top.join(" "));
    } else if run_status != "failed" {
        lead_text.push_str(" No strategy produced a result to rank.");
    }
    let lead_summary = match report.rows.first() {
        Some(best) => format!("{run_status}: best {}", best.short()),
        None => format!("{run_status}: nothing to rank"),
    };
    let tx = conn.transaction()?;
    let updated = tx.execute(
        "UPDATE research_runs SET status = ?2, finished_at = ?3 WHERE id = ?1 AND status = 'active'",
        params![run.id, run_status, ts(now)],
    )?;
    if updated == 0 {
        return Ok(Vec::new());
    }
    for a in agents.iter_mut() {
        if a.role == "lead" {
            a.status = if run_status == "stopped" {
                "stopped"
            } else {
                "done"
            }
            .into();
            a.progress = 100;
            a.summary = Some(lead_summary.clone());
        }
        save_agent(&tx, &run.id, a)?;
    }
    for (name, kind, content) in [
        ("report.md", "markdown", report.markdown()),
        ("report.json", "json", report.json_text()),
    ] {
        tx.execute(
            "INSERT INTO research_artifacts (run_id, name, kind, content, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT(run_id, name) DO UPDATE SET kind = excluded.kind,
                 content = excluded.content, created_at = excluded.created_at",
            params![run.id, name, kind, content, ts(now)],
        )?;
    }
    say(&tx, &run.id, now, "lead", &lead_text)?;
    tx.commit()?;
    Ok(cancels)
}

// ---- the report ----------------------------------------------------------------------------------

struct Ranked {
    strategy_id: String,
    pair: String,
    timeframe: String,
    agent_id: String,
    days: u32,
    oos_days: u32,
    candidates: usize,
    best: Candidate,
}

impl Ranked {
    fn params_text(&self) -> String {
        self.best
            .parameters
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn short(&self) -> String {
        format!(
            "{} {} {} ({}): out-of-sample {}, in-sample {}",
            self.strategy_id,
            self.pair,
            self.timeframe,
            self.params_text(),
            pct(self.best.out_of_sample.return_pct),
            pct(self.best.in_sample.return_pct)
        )
    }
}

struct Report {
    run_id: String,
    task: String,
    status: String,
    plan: Plan,
    generated_at: DateTime<Utc>,
    rows: Vec<Ranked>,
    agents: Vec<(String, String, String, Option<String>)>,
    notes: Vec<String>,
}

fn pct(x: Option<f64>) -> String {
    x.map_or("—".into(), |v| format!("{v:+.2}%"))
}

fn num(x: Option<f64>) -> String {
    x.map_or("—".into(), |v| format!("{v:.2}"))
}

fn evidence_text(e: &Evidence) -> String {
    format!(
        "{} (Sharpe {}, max DD {}, {} trades)",
        pct(e.return_pct),
        num(e.sharpe),
        pct(e.max_drawdown_pct),
        e.trades
    )
}

/// Best first: out-of-sample return, then in-sample Sharpe; undefined values last.
fn rank_key(r: &Ranked) -> (f64, f64) {
    let f = |x: Option<f64>| x.unwrap_or(f64::NEG_INFINITY);
    (
        f(r.best.out_of_sample.return_pct),
        f(r.best.in_sample.sharpe),
    )
}

impl Report {
    fn build(run: &RunRow, agents: &[AgentRow], status: &str, now: DateTime<Utc>) -> Report {
        let mut rows = Vec::new();
        let mut notes = Vec::new();
        for a in agents.iter().filter(|a| a.role != "lead") {
            let Some(result) = &a.result else { continue };
            if a.status != "done" {
                continue;
            }
            for n in &result.notes {
                notes.push(format!("{}: {n}", a.agent_id));
            }
            for r in &result.rows {
                if run.plan.dropped.contains(&r.strategy_id) {
                    continue;
                }
                let Some(best) = r.sets.first() else { continue };
                rows.push(Ranked {
                    strategy_id: r.strategy_id.clone(),
                    pair: r.pair.clone(),
                    timeframe: r.timeframe.clone(),
                    agent_id: a.agent_id.clone(),
                    days: r.days,
                    oos_days: r.out_of_sample_days,
                    candidates: r.candidates,
                    best: best.clone(),
                });
            }
        }
        rows.sort_by(|a, b| {
            let (ka, kb) = (rank_key(a), rank_key(b));
            kb.0.total_cmp(&ka.0).then(kb.1.total_cmp(&ka.1))
        });
        if !run.plan.dropped.is_empty() {
            notes.push(format!(
                "left out of the ranking at the user's request: {}",
                run.plan.dropped.join(", ")
            ));
        }
        Report {
            run_id: run.id.clone(),
            task: run.task.clone(),
            status: status.to_string(),
            plan: run.plan.clone(),
            generated_at: now,
            rows,
            agents: agents
                .iter()
                .filter(|a| a.role != "lead")
                .map(|a| {
                    (
                        a.agent_id.clone(),
                        strategy_label(&a.strategies),
                        a.status.clone(),
                        a.summary.clone(),
                    )
                })
                .collect(),
            notes,
        }
    }

    fn top_lines(&self, n: usize) -> Vec<String> {
        self.rows
            .iter()
            .take(n)
            .enumerate()
            .map(|(i, r)| format!("{}. {}.", i + 1, r.short()))
            .collect()
    }

    fn json(&self) -> Value {
        let agents: Vec<Value> = self
            .agents
            .iter()
            .map(|(id, strategies, status, summary)| {
                json!({"agentId": id, "strategies": strategies, "status": status, "summary": summary})
            })
            .collect();
        json!({
            "runId": self.run_id,
            "task": self.task,
            "status": self.status,
            "partial": self.status != "completed",
            "planner": "deterministic",
            "generatedAt": self.generated_at,
            "plan": self.plan.wire(),
            "ranking": self.rows.iter().enumerate().map(|(i, r)| json!({
                "rank": i + 1,
                "strategyId": r.strategy_id,
                "pair": r.pair,
                "timeframe": r.timeframe,
                "days": r.days,
                "outOfSampleDays": r.oos_days,
                "candidates": r.candidates,
                "agentId": r.agent_id,
                "parameters": r.best.parameters,
                "inSample": r.best.in_sample,
                "outOfSample": r.best.out_of_sample,
            })).collect::<Vec<_>>(),
            "agents": agents,
            "notes": self.notes,
        })
    }

    fn json_text(&self) -> String {
        serde_json::to_string_pretty(&self.json()).unwrap_or_default()
    }

    fn markdown(&self) -> String {
        let mut md = String::new();
        let partial = if self.status == "completed" {
            ""
        } else {
            " (partial)"
        };
        let _ = writeln!(md, "# Research report{partial}\n");
        let _ = writeln!(md, "- Task: {}", self.task);
        let _ = writeln!(md, "- Run: {} ({})", self.run_id, self.status);
        let _ = writeln!(md, "- Planner: deterministic");
        let _ = writeln!(
            md,
            "- Window: {} at {}; optimized on {} days in-sample, tested on the {} days after \
             (out-of-sample)",
            self.plan.pairs_text(),
            self.plan.timeframes.join(", "),
            self.plan.days,
            self.plan.oos_days
        );
        let _ = writeln!(
            md,
            "- Ranked by out-of-sample return, then in-sample Sharpe; each row is the in-sample \
             best parameter set (by Sharpe) of a grid of up to {GRID_POINTS}"
        );
        let _ = writeln!(md, "- Generated: {}\n", self.generated_at.to_rfc3339());
        let _ = writeln!(md, "## Ranking\n");
        if self.rows.is_empty() {
            let _ = writeln!(md, "No strategy produced a result to rank.\n");
        } else {
            let _ = writeln!(
                md,
                "| # | Strategy | Pair | TF | Parameters | IS return | IS Sharpe | IS max DD | IS \
                 trades | OOS return | OOS Sharpe | OOS max DD | OOS trades |"
            );
            let _ = writeln!(
                md,
                "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
            );
            for (i, r) in self.rows.iter().enumerate() {
                let (is, oos) = (&r.best.in_sample, &r.best.out_of_sample);
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    i + 1,
                    r.strategy_id,
                    r.pair,
                    r.timeframe,
                    r.params_text(),
                    pct(is.return_pct),
                    num(is.sharpe),
                    pct(is.max_drawdown_pct),
                    is.trades,
                    pct(oos.return_pct),
                    num(oos.sharpe),
                    pct(oos.max_drawdown_pct),
                    oos.trades
                );
            }
            let _ = writeln!(md);
            if let Some(best) = self.rows.first() {
                let _ = writeln!(
                    md,
                    "Best: **{}** on {} {} with {}: out-of-sample {}, in-sample {}.\n",
                    best.strategy_id,
                    best.pair,
                    best.timeframe,
                    best.params_text(),
                    evidence_text(&best.best.out_of_sample),
                    evidence_text(&best.best.in_sample)
                );
            }
        }
        let _ = writeln!(md, "## Agents\n");
        for (id, strategies, status, summary) in &self.agents {
            let _ = writeln!(
                md,
                "- {id} ({strategies}): {status}{}",
                summary
                    .as_ref()
                    .map(|s| format!(" — {s}"))
                    .unwrap_or_default()
            );
        }
        if !self.notes.is_empty() {
            let _ = writeln!(md, "\n## Notes\n");
            for n in &self.notes {
                let _ = writeln!(md, "- {n}");
            }
        }
        md
    }
}

// ---- the lead and its agents ---------------------------------------------------------------------

/// What the lead decided on one look at the run.
enum LeadStep {
    /// Agents to start now (possibly none); keep watching.
    Watch(Vec<AgentJob>),
    /// The run is over.
    Done,
}

/// Which attempt of which agent: every write an agent makes is conditional on it.
#[derive(Debug, Clone)]
struct AgentKey {
    run_id: String,
    agent_id: String,
    attempt: i64,
}

struct AgentJob {
    key: AgentKey,
    strategies: Vec<&'static StrategySpec>,
    coins: Vec<String>,
    timeframes: Vec<Timeframe>,
    days: u32,
    oos_days: u32,
    /// Data ends where the run started, so a restarted agent sees the same bars.
    end: DateTime<Utc>,
}

fn spawn_lead(shared: Arc<Shared>, run_id: String) {
    let handle = Arc::new(Live::default());
    shared.research.insert(&run_id, handle.clone());
    tokio::spawn(async move {
        loop {
            let id = run_id.clone();
            let step = shared
                .run_raw(move |core, now| lead_step(&mut core.store.conn, &id, now))
                .await;
            match step {
                Ok(Ok(LeadStep::Watch(jobs))) => {
                    for job in jobs {
                        let flag = Arc::new(AtomicBool::new(false));
                        handle
                            .cancels
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(job.key.agent_id.clone(), flag.clone());
                        tokio::spawn(agent_task(shared.clone(), job, flag));
                    }
                }
                Ok(Ok(LeadStep::Done)) => break,
                Ok(Err(e)) => tracing::warn!("research lead of {run_id}: {e}"),
                Err(e) => {
                    tracing::error!("research lead of {run_id} failed: {e}");
                    break;
                }
            }
            let _ = tokio::time::timeout(LEAD_POLL, handle.wake.notified()).await;
        }
        {
            let mut cancels = handle.cancels.lock().unwrap_or_else(|e| e.into_inner());
            for flag in cancels.values() {
                flag.store(true, Ordering::Relaxed);
            }
            cancels.clear();
        }
        shared.research.remove(&run_id);
    });
}

/// One look at the run: finish it if every agent is through (or "stop after N" is met), else
/// start queued agents while fewer than [`PARALLEL_AGENTS`] run.
fn lead_step(conn: &mut Connection, run_id: &str, now: DateTime<Utc>) -> DbResult<LeadStep> {
    let Some(run) = load_run(conn, run_id, None)? else {
        return Ok(LeadStep::Done);
    };
    if run.status != "active" {
        return Ok(LeadStep::Done);
    }
    let agents = load_agents(conn, run_id)?;
    let workers: Vec<&AgentRow> = agents.iter().filter(|a| a.role != "lead").collect();
    let done = workers.iter().filter(|a| a.status == "done").count();
    let through = workers.iter().filter(|a| !a.unfinished()).count();
    let stop_met = run.plan.stop_after.is_some_and(|n| done >= n as usize);
    if stop_met || through == workers.len() {
        // The lead cancels every agent still running when it sees Done.
        finish(conn, &run, Ending::Completed, now)?;
        return Ok(LeadStep::Done);
    }
    let progress = (through * 100 / workers.len().max(1)) as i64;
    conn.execute(
        "UPDATE research_agents SET progress = ?2 WHERE run_id = ?1 AND agent_id = 'lead'",
        params![run_id, progress],
    )?;
    let running = workers.iter().filter(|a| a.status == "running").count();
    let mut jobs = Vec::new();
    for a in workers
        .iter()
        .filter(|a| a.status == "queued")
        .take(PARALLEL_AGENTS.saturating_sub(running))
    {
        conn.execute(
            "UPDATE research_agents SET status = 'running', progress = 0
             WHERE run_id = ?1 AND agent_id = ?2 AND status = 'queued'",
            params![run_id, a.agent_id],
        )?;
        jobs.push(AgentJob {
            key: AgentKey {
                run_id: run_id.to_string(),
                agent_id: a.agent_id.clone(),
                attempt: a.attempt,
            },
            strategies: a
                .strategies
                .iter()
                .filter_map(|id| strategies::strategy(id))
                .collect(),
            coins: run.plan.coins.clone(),
            timeframes: run
                .plan
                .timeframes
                .iter()
                .filter_map(|t| Timeframe::parse(t))
                .collect(),
            days: run.plan.days,
            oos_days: run.plan.oos_days,
            end: run.created_at,
        });
    }
    Ok(LeadStep::Watch(jobs))
}

/// Writes an agent's progress if the agent is still the current attempt of an active run; false
/// means the agent was stopped, dropped or restarted and should end.
fn agent_progress(conn: &Connection, job: &AgentKey, progress: u8) -> DbResult<bool> {
    Ok(conn.execute(
        "UPDATE research_agents SET progress = ?4
         WHERE run_id = ?1 AND agent_id = ?2 AND attempt = ?3 AND status = 'running'
           AND EXISTS (SELECT 1 FROM research_runs WHERE id = ?1 AND status = 'active')",
        params![job.run_id, job.agent_id, job.attempt, progress as i64],
    )? > 0)
}

/// Records an agent's end (done with its result, or failed) and its message in the transcript, if
/// the agent is still current.
fn agent_report(
    conn: &mut Connection,
    job: &AgentKey,
    status: &str,
    summary: &str,
    result: Option<&AgentResult>,
    message: &str,
    now: DateTime<Utc>,
) -> DbResult<()> {
    let tx = conn.transaction()?;
    let updated = tx.execute(
        "UPDATE research_agents SET status = ?4, progress = 100, summary = ?5, result = ?6
         WHERE run_id = ?1 AND agent_id = ?2 AND attempt = ?3 AND status = 'running'
           AND EXISTS (SELECT 1 FROM research_runs WHERE id = ?1 AND status = 'active')",
        params![
            job.run_id,
            job.agent_id,
            job.attempt,
            status,
            summary,
            result.and_then(|r| serde_json::to_string(r).ok())
        ],
    )?;
    if updated > 0 {
        say(&tx, &job.run_id, now, &job.agent_id, message)?;
        tx.commit()?;
    }
    Ok(())
}

async fn agent_task(shared: Arc<Shared>, job: AgentJob, cancelled: Arc<AtomicBool>) {
    let outcome = run_agent(&shared, &job, &cancelled).await;
    let report = match outcome {
        Ok(None) => None,
        Ok(Some(result)) => Some((
            "done",
            agent_summary(&result),
            agent_message(&result),
            Some(result),
        )),
        Err(e) => Some((
            "failed",
            format!("failed: {e}"),
            format!("I failed: {e}"),
            None,
        )),
    };
    if let Some((status, summary, message, result)) = report {
        let key = job.key.clone();
        let written = shared
            .run_raw(move |core, now| {
                agent_report(
                    &mut core.store.conn,
                    &key,
                    status,
                    &summary,
                    result.as_ref(),
                    &message,
                    now,
                )
            })
            .await;
        match written {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("research agent {}: {e}", job.key.agent_id),
            Err(e) => tracing::error!("research agent {}: {e}", job.key.agent_id),
        }
    }
    shared.research.wake(&job.key.run_id);
}

fn agent_summary(result: &AgentResult) -> String {
    let best = result
        .rows
        .iter()
        .filter_map(|r| r.sets.first().map(|c| (r, c)))
        .max_by(|(_, a), (_, b)| {
            let f = |x: Option<f64>| x.unwrap_or(f64::NEG_INFINITY);
            f(a.out_of_sample.return_pct).total_cmp(&f(b.out_of_sample.return_pct))
        });
    match best {
        Some((r, c)) => format!(
            "best {} {} {}: in-sample {} / out-of-sample {} ({} trades out of sample)",
            r.strategy_id,
            r.pair,
            r.timeframe,
            pct(c.in_sample.return_pct),
            pct(c.out_of_sample.return_pct),
            c.out_of_sample.trades
        ),
        None => "no window had enough bars to test".into(),
    }
}

fn agent_message(result: &AgentResult) -> String {
    let mut text = String::from("Report:");
    for r in &result.rows {
        let Some(best) = r.sets.first() else { continue };
        let params = best
            .parameters
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = write!(
            text,
            " {} on {} {} — best of {} sets ({params}): in-sample {} over {} days; \
             out-of-sample {} over {} days.",
            r.strategy_id,
            r.pair,
            r.timeframe,
            r.candidates,
            evidence_text(&best.in_sample),
            r.days,
            evidence_text(&best.out_of_sample),
            r.out_of_sample_days
        );
    }
    for n in &result.notes {
        let _ = write!(text, " Note: {n}.");
    }
    text
}

/// The agent's work: for each pair and timeframe, load the bars once, and for each strategy run
/// the grid in chunks on the in-sample part, then backtest the best sets on the out-of-sample
/// part. `Ok(None)` when it was cancelled or superseded.
async fn run_agent(
    shared: &Arc<Shared>,
    job: &AgentJob,
    cancelled: &AtomicBool,
) -> Result<Option<AgentResult>, String> {
    let market = shared
        .run_raw(|core, _| core.market.clone())
        .await
        .map_err(|e| e.to_string())?;
    let csv = shared.settings.csv_dir.clone();
    let cfg = engine_config(&shared.settings);
    let grids: Vec<Arc<Vec<Params>>> = job
        .strategies
        .iter()
        .map(|s| Arc::new(strategies::grid(s, GRID_POINTS)))
        .collect();
    let windows = job.coins.len() * job.timeframes.len();
    let per_window: usize = grids.iter().map(|g| g.len() + TOP_SETS).sum();
    let total = (windows * per_window).max(1);
    let mut units = 0usize;
    let mut result = AgentResult::default();
    for coin in &job.coins {
        for tf in &job.timeframes {
            if cancelled.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let (market, csv, coin_s, tf_v) = (market.clone(), csv.clone(), coin.clone(), *tf);
            let (days, end) = (job.days + job.oos_days, job.end);
            let bars = tokio::task::spawn_blocking(move || {
                data::bars(&market, csv.as_deref(), &coin_s, tf_v, days, end)
            })
            .await
            .map_err(|e| e.to_string())??;
            let bars = Arc::new(bars);
            let split = bars.len() * job.days as usize / (job.days + job.oos_days) as usize;
            let pair = format!("{coin}-USD");
            if split < MIN_IN_SAMPLE_BARS || bars.len() - split < MIN_OUT_OF_SAMPLE_BARS {
                result.notes.push(format!(
                    "{pair} {}: only {} bars, too few to split into in-sample and out-of-sample",
                    tf.as_str(),
                    bars.len()
                ));
                units += per_window;
                continue;
            }
            for (spec, grid) in job.strategies.iter().copied().zip(&grids) {
                let mut results: Vec<(Params, Stats)> = Vec::with_capacity(grid.len());
                for start in (0..grid.len()).step_by(CHUNK) {
                    if cancelled.load(Ordering::Relaxed) {
                        return Ok(None);
                    }
                    let end = (start + CHUNK).min(grid.len());
                    let (bars, grid, cfg) = (bars.clone(), grid.clone(), cfg);
                    let chunk = tokio::task::spawn_blocking(move || {
                        optimizer::optimize(spec, &bars[..split], &cfg, &grid[start..end], 1)
                    })
                    .await
                    .map_err(|e| e.to_string())?;
                    results.extend(chunk);
                    units += end - start;
                    if !still_current(shared, &job.key, units, total).await {
                        return Ok(None);
                    }
                }
                // Best in-sample Sharpe among sets that traded enough to mean something.
                let ranked = optimizer::rank(&results, RankBy::Sharpe);
                let enough: Vec<usize> = ranked
                    .iter()
                    .copied()
                    .filter(|&i| results[i].1.trades >= MIN_TRADES)
                    .collect();
                let order = if enough.is_empty() { ranked } else { enough };
                let top: Vec<(Params, Stats)> = order
                    .iter()
                    .take(TOP_SETS)
                    .map(|&i| results[i].clone())
                    .collect();
                let bars2 = bars.clone();
                let sets = tokio::task::spawn_blocking(move || {
                    let mut sig = Vec::new();
                    let mut ws = Workspace::default();
                    top.iter()
                        .map(|(p, is)| {
                            // Signals over the whole history: the out-of-sample window starts
                            // with warmed-up indicators, and no bar sees its future.
                            strategies::signals(spec, p, &bars2, &mut sig);
                            let oos =
                                ws.stats(&bars2[split..], sig.get(split..).unwrap_or(&[]), &cfg);
                            Candidate {
                                parameters: params_json(spec, p),
                                in_sample: evidence(is, split),
                                out_of_sample: evidence(&oos, bars2.len() - split),
                            }
                        })
                        .collect::<Vec<_>>()
                })
                .await
                .map_err(|e| e.to_string())?;
                units += TOP_SETS;
                if !still_current(shared, &job.key, units, total).await {
                    return Ok(None);
                }
                result.rows.push(ResultRow {
                    strategy_id: spec.id.to_string(),
                    pair: pair.clone(),
                    timeframe: tf.as_str().to_string(),
                    days: job.days,
                    out_of_sample_days: job.oos_days,
                    candidates: grid.len(),
                    sets,
                });
            }
        }
    }
    Ok(Some(result))
}

async fn still_current(shared: &Arc<Shared>, key: &AgentKey, units: usize, total: usize) -> bool {
    let progress = ((units * 100 / total).min(99)) as u8;
    let key = key.clone();
    matches!(
        shared
            .run_raw(move |core, _| agent_progress(&core.store.conn, &key, progress))
            .await,
        Ok(Ok(true))
    )
}

// ---- startup -------------------------------------------------------------------------------------

/// At sandbox start: runs a stopped sandbox left `active` become
/// `stopped` with a note from the lead and a partial report. Returns how many were stopped.
pub async fn start_up(shared: &Arc<Shared>) -> Result<usize, rusqlite::Error> {
    shared
        .run_raw(|core, now| recover(&mut core.store.conn, now))
        .await
        .map_err(|e| rusqlite::Error::InvalidParameterName(e.to_string()))?
}

pub fn recover(conn: &mut Connection, now: DateTime<Utc>) -> DbResult<usize> {
    let runs = {
        let mut stmt = conn.prepare(
            "SELECT id, account_id, task, status, planner, plan, created_at, finished_at
             FROM research_runs WHERE status = 'active'",
        )?;
        stmt.query_map([], run_from_row)?
            .collect::<DbResult<Vec<_>>>()?
    };
    for run in &runs {
        finish(
            conn,
            run,
            Ending::Stopped(
                "The sandbox stopped while this run was active, so it was marked stopped when \
                 the sandbox started again.",
            ),
            now,
        )?;
    }
    Ok(runs.len())
}

// ---- text for the CLI ----------------------------------------------------------------------------

/// A run as the command line shows it.
pub fn run_text(run: &ResearchRun) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Research run {} — {} (planner: {})",
        run.run_id, run.status, run.planner
    );
    let _ = writeln!(out, "Task: {}", run.task);
    let _ = writeln!(out, "Agents:");
    for a in &run.agents {
        let _ = writeln!(
            out,
            "  {:<9} {:<8} {:>3}%  {}",
            a.agent_id,
            a.status,
            a.progress,
            a.summary.as_deref().unwrap_or(&a.name)
        );
    }
    let _ = writeln!(out, "Transcript:");
    let skip = run.transcript.len().saturating_sub(12);
    if skip > 0 {
        let _ = writeln!(out, "  … {skip} earlier message(s)");
    }
    for m in &run.transcript[skip..] {
        let _ = writeln!(
            out,
            "  [{}] {}: {}",
            m.time.format("%H:%M:%S"),
            m.author,
            m.text
        );
    }
    if run.artifacts.is_empty() {
        let _ = writeln!(out, "Artifacts: none yet");
    } else {
        let names: Vec<&str> = run.artifacts.iter().map(|a| a.name.as_str()).collect();
        let _ = writeln!(out, "Artifacts: {}", names.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(plan: &Plan) -> Vec<String> {
        plan.groups.iter().flat_map(|(_, s)| s.clone()).collect()
    }

    #[test]
    fn plans_the_example_task() {
        let p = plan_task("find the best trend strategy for ETH on 1h over 90 days").unwrap();
        assert_eq!(p.coins, vec!["ETH"]);
        assert_eq!(p.timeframes, vec!["1h"]);
        assert_eq!((p.days, p.oos_days), (90, 30));
        assert_eq!(p.grouping, "strategy");
        assert_eq!(ids(&p), vec!["sma_cross", "ema_cross", "supertrend"]);
        assert!(p.defaults.is_empty(), "{:?}", p.defaults);
    }

    #[test]
    fn defaults_and_families() {
        let p = plan_task("what works?").unwrap();
        assert_eq!(p.coins, vec!["BTC"]);
        assert_eq!(p.timeframes, vec!["1h"]);
        assert_eq!(p.days, 30);
        assert_eq!(p.grouping, "family");
        assert_eq!(p.groups.len(), 5);
        assert_eq!(p.defaults.len(), 4);

        let p = plan_task("mean-reversion and breakout on sol-usd and ethereum, 4 hour, 2 weeks")
            .unwrap();
        assert_eq!(p.coins, vec!["SOL", "ETH"]);
        assert_eq!(p.timeframes, vec!["4h"]);
        assert_eq!(p.days, 14);
        assert_eq!(p.grouping, "family");
        let labels: Vec<&str> = p.groups.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(labels, vec!["mean-reversion", "breakout"]);

        // Named strategies: one agent each; "donchian breakout" is a name, not the family.
        let p = plan_task("compare macd and donchian breakout on BTCUSDT 15m 90d").unwrap();
        assert_eq!(ids(&p), vec!["macd", "donchian_breakout"]);
        assert_eq!(p.timeframes, vec!["15m"]);
        assert_eq!(p.days, 90);

        let p =
            plan_task("trend strategies except supertrend, daily, 1 year, stop after 1").unwrap();
        assert_eq!(ids(&p), vec!["sma_cross", "ema_cross"]);
        assert_eq!(p.timeframes, vec!["1d"]);
        assert_eq!(p.days, 365);
        assert_eq!(p.stop_after, Some(1));

        assert!(
            plan_task("trend over 900 days")
                .unwrap_err()
                .contains("900")
        );
        assert!(plan_task("only macd without macd").is_err());
        // Words that merely contain a name are not names.
        let p = plan_task("smart ethics").unwrap();
        assert_eq!(p.coins, vec!["BTC"]);
        assert_eq!(p.groups.len(), 5);
    }

    #[test]
    fn steering_messages() {
        let s = parse_steering("only 4h");
        assert_eq!(s.set_tfs, vec![Timeframe::H4]);
        let s = parse_steering("use 60 days, also SOL and drop macd");
        assert_eq!(s.days, Some(60));
        assert_eq!(s.add_coins, vec!["SOL"]);
        assert_eq!(s.drop_strategies, vec!["macd"]);
        let s = parse_steering("add donchian_breakout; stop after 2");
        assert_eq!(s.add_strategies, vec!["donchian_breakout"]);
        assert_eq!(s.stop_after, Some(2));
        let s = parse_steering("drop the trend ones");
        assert_eq!(
            s.drop_strategies,
            vec!["sma_cross", "ema_cross", "supertrend"]
        );
        assert!(parse_steering("how is it going?").is_empty());
    }

    fn agent(id: &str, status: &str, strategies: &[&str]) -> AgentRow {
        AgentRow {
            agent_id: id.into(),
            seq: id.trim_start_matches("agent-").parse().unwrap_or(0),
            name: id.into(),
            role: if id == "lead" { "lead" } else { "worker" }.into(),
            parent: None,
            status: status.into(),
            task: String::new(),
            progress: 40,
            summary: None,
            strategies: strategies.iter().map(|s| s.to_string()).collect(),
            attempt: 0,
            result: None,
        }
    }

    #[test]
    fn steering_applies_to_unfinished_agents() {
        let plan = plan_task("trend on ETH 1h 30 days").unwrap();
        let agents = vec![
            agent("lead", "running", &[]),
            agent("agent-1", "done", &["sma_cross"]),
            agent("agent-2", "running", &["ema_cross"]),
            agent("agent-3", "queued", &["supertrend"]),
        ];
        let out = steer(
            &plan,
            &agents,
            &parse_steering("only 4h and drop supertrend"),
        );
        assert_eq!(out.plan.timeframes, vec!["4h"]);
        assert_eq!(out.plan.dropped, vec!["supertrend"]);
        let a2 = out
            .changed_agents
            .iter()
            .find(|a| a.agent_id == "agent-2")
            .unwrap();
        assert_eq!(
            (a2.status.as_str(), a2.attempt, a2.progress),
            ("queued", 1, 0)
        );
        assert!(a2.task.contains("4h"), "{}", a2.task);
        let a3 = out
            .changed_agents
            .iter()
            .find(|a| a.agent_id == "agent-3")
            .unwrap();
        assert_eq!(a3.status, "stopped");
        assert_eq!(out.cancel, vec!["agent-2"]);
        assert!(out.reply.contains("timeframes 1h → 4h"), "{}", out.reply);
        assert!(
            out.reply.contains("agent-1 already reported"),
            "{}",
            out.reply
        );

        let out = steer(&plan, &agents, &parse_steering("add macd, stop after 2"));
        assert_eq!(out.new_agents.len(), 1);
        assert_eq!(out.new_agents[0].agent_id, "agent-4");
        assert_eq!(out.plan.stop_after, Some(2));
        assert!(out.cancel.is_empty());

        let out = steer(&plan, &agents, &parse_steering("thanks!"));
        assert!(out.applied.is_empty());
        assert!(out.reply.starts_with("I found nothing"), "{}", out.reply);
        let out = steer(&plan, &agents, &parse_steering("drop macd"));
        assert!(
            out.reply.contains("macd is not in this run"),
            "{}",
            out.reply
        );
    }

    #[test]
    fn schema_and_recovery_on_a_fresh_store() {
        let mut store = crate::sandbox::store::Store::open_in_memory().unwrap();
        assert_eq!(recover(&mut store.conn, Utc::now()).unwrap(), 0);
    }
}
