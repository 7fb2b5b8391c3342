//! What requests carry and answer on behalf of one tab, so that `action.rs` can name them without
//! importing `tabs/`: the Discovery queries and their answers.

use super::tab::DView;
use crate::api::model::{Discovery, StrategyEntry};

/// Query of top backtests; `None` leaves a parameter to the server's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BacktestsQuery {
    pub filter: Option<String>,
    pub include_all: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveQuery {
    pub window_days: Option<u32>,
    pub limit: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct CombosQuery {
    pub pair: Option<String>,
    pub timeframe: Option<String>,
    pub days: Option<u32>,
    pub per_strategy: Option<u32>,
    pub limit: Option<u32>,
    pub filter: Option<String>,
    pub min_return_pct: Option<f64>,
    pub min_trades: Option<u32>,
}

impl CombosQuery {
    /// The query string pairs the client sends, in the operation's order; unset keys are left out.
    pub fn to_params(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let mut push = |k: &'static str, v: Option<String>| {
            if let Some(v) = v {
                out.push((k, v));
            }
        };
        push("pair", self.pair.clone());
        push("timeframe", self.timeframe.clone());
        push("days", self.days.map(|n| n.to_string()));
        push("perStrategy", self.per_strategy.map(|n| n.to_string()));
        push("limit", self.limit.map(|n| n.to_string()));
        push("filter", self.filter.clone());
        push("minReturnPct", self.min_return_pct.map(|x| x.to_string()));
        push("minTrades", self.min_trades.map(|n| n.to_string()));
        out
    }
}

/// One discovery request, with the parameters it is sent with.
#[derive(Debug, Clone, PartialEq)]
pub enum DiscoveryQuery {
    Strategies,
    TopBacktests(BacktestsQuery),
    TopLive(LiveQuery),
    Combos(CombosQuery),
}

impl DiscoveryQuery {
    pub fn view(&self) -> DView {
        match self {
            DiscoveryQuery::Strategies => DView::Strategies,
            DiscoveryQuery::TopBacktests(_) => DView::TopBacktests,
            DiscoveryQuery::TopLive(_) => DView::TopLive,
            DiscoveryQuery::Combos(_) => DView::Combos,
        }
    }

    /// The catalog operation.
    pub fn operation(&self) -> &'static str {
        match self {
            DiscoveryQuery::Strategies => "discover_strategies",
            DiscoveryQuery::TopBacktests(_) => "discover_top_backtests",
            DiscoveryQuery::TopLive(_) => "discover_top_live",
            DiscoveryQuery::Combos(_) => "discover_top_optimized_combos",
        }
    }
}

/// What a discovery request answered.
#[derive(Debug, Clone)]
pub enum DiscoveryPayload {
    Strategies(Vec<StrategyEntry>),
    Rows(Box<Discovery>),
}
