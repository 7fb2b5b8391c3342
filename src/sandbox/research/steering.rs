//! Steering: what a message to an active run changes in its plan and agents.

use super::agent_task_text;
use super::planner::{Item, Mode, Plan, check_days, family_strategies, lex, oos_days, push_unique};
use crate::sandbox::data::Timeframe;
use crate::sandbox::store::research::AgentRow;
use std::fmt::Write as _;

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

pub(super) fn strategy_change(s: &mut Steering, mode: Option<Mode>, ids: &[&'static str]) {
    let list = match mode {
        Some(Mode::Drop) => &mut s.drop_strategies,
        Some(Mode::Set) => &mut s.only_strategies,
        _ => &mut s.add_strategies,
    };
    for id in ids {
        push_unique(list, *id);
    }
}

/// What a message changes.
#[derive(Debug, Default)]
pub struct SteerOutcome {
    pub(super) plan: Plan,
    pub(super) changed_agents: Vec<AgentRow>,
    pub(super) new_agents: Vec<AgentRow>,
    /// Agents whose running computation must stop (dropped or restarted).
    pub(super) cancel: Vec<String>,
    /// One line per change made.
    pub applied: Vec<String>,
    /// The lead's answer in the transcript.
    pub reply: String,
}

pub(super) fn apply_list<T: PartialEq + Clone>(
    current: &[T],
    set: &[T],
    add: &[T],
    drop: &[T],
) -> Vec<T> {
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
pub(super) fn steer(plan: &Plan, agents: &[AgentRow], s: &Steering) -> SteerOutcome {
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
            Err(e) => problems.push(e.to_string()),
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

#[cfg(test)]
mod tests {
    use super::super::planner::plan_task;
    use super::*;

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
}
