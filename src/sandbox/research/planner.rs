//! The lead's plan: read deterministically from the task's words.

use crate::sandbox::data::{self, Timeframe};
use crate::sandbox::engine::strategies::{Category, STRATEGIES};
use crate::sandbox::venue::normalize_coin;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Defaults of a task that does not say.
pub const DEFAULT_COIN: &str = "BTC";
pub const DEFAULT_TIMEFRAME: Timeframe = Timeframe::H1;
pub const DEFAULT_DAYS: u32 = 30;

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

    pub(super) fn window_text(&self) -> String {
        format!(
            "{} at {}: {} days in-sample, then {} days out-of-sample",
            self.pairs_text(),
            self.timeframes.join(", "),
            self.days,
            self.oos_days
        )
    }

    pub fn wire(&self) -> Value {
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
pub(super) enum Item {
    Verb(Mode),
    Coin(&'static str),
    Tf(Timeframe),
    Days(u32),
    Strategy(&'static str),
    Family(Category),
    StopAfter(u32),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Mode {
    /// "only", "just", "use": replace.
    Set,
    /// "also", "add", "include", "try".
    Add,
    /// "drop", "remove", "skip", "without", "no", "except".
    Drop,
}

pub(super) const FAMILIES: [Category; 5] = [
    Category::Trend,
    Category::MeanReversion,
    Category::Breakout,
    Category::Momentum,
    Category::Volatility,
];

/// Word sequences naming a strategy, longest first when matched.
pub(super) fn strategy_patterns() -> Vec<(Vec<&'static str>, &'static str)> {
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

pub(super) fn family_patterns() -> Vec<(Vec<&'static str>, Category)> {
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

pub(super) fn coin_name(word: &str) -> Option<&'static str> {
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
pub(super) fn compact(word: &str) -> Option<Item> {
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
pub(super) fn unit(n: u32, unit: &str) -> Option<Item> {
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

pub(super) fn verb(word: &str) -> Option<Mode> {
    Some(match word {
        "only" | "just" | "use" | "using" | "switch" | "instead" | "focus" => Mode::Set,
        "also" | "add" | "include" | "plus" | "try" => Mode::Add,
        "drop" | "remove" | "skip" | "exclude" | "excluding" | "except" | "without" | "no"
        | "not" | "ignore" => Mode::Drop,
        _ => return None,
    })
}

/// Splits text into lowercase alphanumeric words and finds what it names, in order.
pub(super) fn lex(text: &str) -> Vec<Item> {
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

pub(super) fn family_strategies(family: Category) -> Vec<&'static str> {
    STRATEGIES
        .iter()
        .filter(|s| s.category == family)
        .map(|s| s.id)
        .collect()
}

pub(super) fn push_unique<T: PartialEq>(list: &mut Vec<T>, item: T) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// Why a task cannot be planned.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{0} days is outside 1-{max} days of in-sample history", max = data::MAX_DAYS)]
    DaysOutOfRange(u32),
    #[error("the task leaves no strategy to test")]
    NoStrategy,
}

pub(super) fn check_days(days: u32) -> Result<u32, PlanError> {
    if (1..=data::MAX_DAYS).contains(&days) {
        Ok(days)
    } else {
        Err(PlanError::DaysOutOfRange(days))
    }
}

/// The lead's deterministic planner. Pairs (`ETH`, `ETH-USD`, `ethereum`), timeframes (`1h`,
/// `4 hour`, `hourly`), days (`90 days`, `90d`, `2 weeks`, `3 months`), families (trend,
/// mean-reversion, breakout, momentum, volatility) and strategies (ids or names: `macd`,
/// `donchian breakout`, `supertrend`) are recognised; "without X" / "except X" leave one out.
/// One agent per strategy when the task names one family or only strategies; one per family when
/// it names several families or none.
pub fn plan_task(task: &str) -> Result<Plan, PlanError> {
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
        return Err(PlanError::NoStrategy);
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
                .to_string()
                .contains("900")
        );
        assert!(plan_task("only macd without macd").is_err());
        // Words that merely contain a name are not names.
        let p = plan_task("smart ethics").unwrap();
        assert_eq!(p.coins, vec!["BTC"]);
        assert_eq!(p.groups.len(), 5);
    }
}
