//! The ranked report a run ends with (`report.md`, `report.json`).

use super::planner::Plan;
use super::{GRID_POINTS, strategy_label};
// Not the research module's own MIN_TRADES (what a parameter set needs to be picked at all): this
// is the console's threshold for a sample worth ranking, one constant for both sides.
use crate::api::model::{MIN_TRADES, group_thousands};
use crate::sandbox::store::research::{AgentRow, Candidate, Evidence, RunRow};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use std::fmt::Write as _;

pub(super) struct Ranked {
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
    pub(super) fn params_text(&self) -> String {
        self.best
            .parameters
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub(super) fn short(&self) -> String {
        format!(
            "{} {} {} ({}): out-of-sample {}, in-sample {}{}",
            self.strategy_id,
            self.pair,
            self.timeframe,
            self.params_text(),
            pct(self.best.out_of_sample.return_pct),
            pct(self.best.in_sample.return_pct),
            self.few_trades()
                .map(|f| format!(" ({f})"))
                .unwrap_or_default()
        )
    }

    /// What is wrong with the row's sample, when either window closed fewer than
    /// [`MIN_TRADES`] trades: its return and Sharpe say more about chance than about the
    /// strategy (an out-of-sample Sharpe of −14,002 on 2 trades is not a finding).
    pub(super) fn few_trades(&self) -> Option<String> {
        let (is, oos) = (self.best.in_sample.trades, self.best.out_of_sample.trades);
        let min = MIN_TRADES as usize;
        (is < min || oos < min).then(|| format!("few trades: {is} in-sample, {oos} out-of-sample"))
    }
}

pub(super) struct Report {
    pub(super) run_id: String,
    pub(super) task: String,
    pub(super) status: String,
    pub(super) plan: Plan,
    pub(super) generated_at: DateTime<Utc>,
    pub(super) rows: Vec<Ranked>,
    pub(super) agents: Vec<(String, String, String, Option<String>)>,
    pub(super) notes: Vec<String>,
}

/// Grouped as the console writes numbers (`+1,387.40%`), since the console shows this report as
/// it is; report.json keeps the plain numbers.
pub(super) fn pct(x: Option<f64>) -> String {
    x.map_or("—".into(), |v| {
        // The sign of what is printed: -0.001 prints 0.00 (not "+-0.00"), a loss its own "-".
        let text = format!("{v:.2}");
        let text = if text == "-0.00" {
            "0.00".to_string()
        } else {
            text
        };
        let sign = if text.starts_with('-') || !v.is_finite() {
            ""
        } else {
            "+"
        };
        format!("{sign}{}%", group_thousands(&text))
    })
}

pub(super) fn num(x: Option<f64>) -> String {
    x.map_or("—".into(), |v| group_thousands(&format!("{v:.2}")))
}

pub(super) fn evidence_text(e: &Evidence) -> String {
    format!(
        "{} (Sharpe {}, max DD {}, {} trades)",
        pct(e.return_pct),
        num(e.sharpe),
        pct(e.max_drawdown_pct),
        e.trades
    )
}

/// Best first: rows with enough trades in both windows, then out-of-sample return, then
/// in-sample Sharpe; undefined values last. A row on a tiny sample comes after every row with
/// enough trades, whatever its figures: extreme ratios are what tiny samples produce.
pub(super) fn rank_key(r: &Ranked) -> (bool, f64, f64) {
    let f = |x: Option<f64>| x.unwrap_or(f64::NEG_INFINITY);
    (
        r.few_trades().is_none(),
        f(r.best.out_of_sample.return_pct),
        f(r.best.in_sample.sharpe),
    )
}

/// Sorts `rows` best first by [`rank_key`].
pub(super) fn rank(rows: &mut [Ranked]) {
    rows.sort_by(|a, b| {
        let (ka, kb) = (rank_key(a), rank_key(b));
        kb.0.cmp(&ka.0)
            .then(kb.1.total_cmp(&ka.1))
            .then(kb.2.total_cmp(&ka.2))
    });
}

impl Report {
    pub(super) fn build(
        run: &RunRow,
        agents: &[AgentRow],
        status: &str,
        now: DateTime<Utc>,
    ) -> Report {
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
        rank(&mut rows);
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

    pub(super) fn top_lines(&self, n: usize) -> Vec<String> {
        self.rows
            .iter()
            .take(n)
            .enumerate()
            .map(|(i, r)| format!("{}. {}.", i + 1, r.short()))
            .collect()
    }

    pub(super) fn json(&self) -> Value {
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
                "fewTrades": r.few_trades().is_some(),
            })).collect::<Vec<_>>(),
            "agents": agents,
            "notes": self.notes,
        })
    }

    pub(super) fn json_text(&self) -> String {
        serde_json::to_string_pretty(&self.json()).unwrap_or_default()
    }

    pub(super) fn markdown(&self) -> String {
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
             best parameter set (by Sharpe) of a grid of up to {GRID_POINTS}; rows with fewer \
             than {MIN_TRADES} trades in either window come after every other row, marked \
             \"few trades\""
        );
        let _ = writeln!(md, "- Generated: {}\n", self.generated_at.to_rfc3339());
        let _ = writeln!(md, "## Ranking\n");
        if self.rows.is_empty() {
            let _ = writeln!(md, "No strategy produced a result to rank.\n");
        } else {
            let _ = writeln!(
                md,
                "| # | Strategy | Pair | TF | Parameters | IS return | IS Sharpe | IS max DD | IS \
                 trades | OOS return | OOS Sharpe | OOS max DD | OOS trades | Sample |"
            );
            let _ = writeln!(
                md,
                "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
            );
            for (i, r) in self.rows.iter().enumerate() {
                let (is, oos) = (&r.best.in_sample, &r.best.out_of_sample);
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
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
                    oos.trades,
                    if r.few_trades().is_some() {
                        "few trades"
                    } else {
                        "ok"
                    }
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
                // Only when no row had enough trades: then even the best is a guess.
                if let Some(few) = best.few_trades() {
                    let _ = writeln!(
                        md,
                        "No row has {MIN_TRADES} trades in both windows: the best has {few}, so \
                         its figures say little about the strategy.\n"
                    );
                }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::store::research::{AgentResult, ResultRow};

    fn evidence(return_pct: f64, sharpe: f64, trades: usize) -> Evidence {
        Evidence {
            return_pct: Some(return_pct),
            sharpe: Some(sharpe),
            max_drawdown_pct: Some(-3.0),
            trades,
            win_rate_pct: None,
            profit_factor: None,
            start: None,
            end: None,
            bars: 500,
        }
    }

    fn row(strategy_id: &str, oos: Evidence, is: Evidence) -> ResultRow {
        ResultRow {
            strategy_id: strategy_id.into(),
            pair: "ETH-USD".into(),
            timeframe: "1h".into(),
            days: 90,
            out_of_sample_days: 30,
            candidates: 125,
            sets: vec![Candidate {
                parameters: serde_json::Map::new(),
                in_sample: is,
                out_of_sample: oos,
            }],
        }
    }

    /// Issue 37: a row on 2 trades (Sharpe 11,857) ranked first; now it comes after the row with
    /// 40 trades, and the report says why.
    #[test]
    fn a_row_on_a_few_trades_ranks_after_every_row_with_enough_and_is_flagged() {
        let tiny = row(
            "tiny",
            evidence(250.0, 11_857.0, 2),
            evidence(90.0, 14.0, 2),
        );
        let solid = row("solid", evidence(4.0, 1.2, 40), evidence(6.0, 1.5, 40));
        let agent = AgentRow {
            agent_id: "agent_1".into(),
            seq: 1,
            name: "agent".into(),
            role: "agent".into(),
            parent: None,
            status: "done".into(),
            task: String::new(),
            progress: 100,
            summary: None,
            strategies: vec!["tiny".into(), "solid".into()],
            attempt: 1,
            result: Some(AgentResult {
                rows: vec![tiny, solid],
                notes: vec![],
            }),
        };
        let run = RunRow {
            id: "run_1".into(),
            task: "find a trend strategy".into(),
            status: "completed".into(),
            planner: "deterministic".into(),
            plan: Plan::default(),
            created_at: Utc::now(),
            finished_at: None,
        };
        let report = Report::build(&run, &[agent], "completed", Utc::now());
        let order: Vec<&str> = report.rows.iter().map(|r| r.strategy_id.as_str()).collect();
        assert_eq!(order, ["solid", "tiny"]);

        let json = report.json();
        assert_eq!(json["ranking"][0]["strategyId"], "solid");
        assert_eq!(json["ranking"][0]["fewTrades"], false);
        assert_eq!(json["ranking"][1]["fewTrades"], true);

        let md = report.markdown();
        let line = |id: &str| {
            md.lines()
                .find(|l| l.starts_with('|') && l.contains(&format!("| {id} |")))
                .unwrap_or_else(|| panic!("no row for {id} in\n{md}"))
                .to_string()
        };
        assert!(line("solid").starts_with("| 1 |") && line("solid").ends_with("| ok |"));
        assert!(
            line("tiny").starts_with("| 2 |") && line("tiny").ends_with("| few trades |"),
            "{md}"
        );
        assert!(md.contains("Best: **solid**"), "{md}");
        assert!(
            report.top_lines(2)[1].contains("few trades: 2 in-sample, 2 out-of-sample"),
            "{:?}",
            report.top_lines(2)
        );
    }

    /// Issue 37: the report reads as the console does, with separators from 1,000 up.
    #[test]
    fn figures_are_grouped_as_the_console_writes_them() {
        assert_eq!(pct(Some(1387.4)), "+1,387.40%");
        assert_eq!(pct(Some(-2.5)), "-2.50%");
        assert_eq!(num(Some(-14_002.0)), "-14,002.00");
        assert_eq!(num(None), "—");
    }
}
