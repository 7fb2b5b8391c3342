//! Research runs and the deterministic CLI over HTTP: lifecycle to a ranked report, one active run
//! per account, steering, stop, restart, compute charged once per run.

use crate::common;
use agentdesk::api::model::ResearchRun;
use agentdesk::api::{ApiError, Client};
use agentdesk::sandbox::Settings;
use serde_json::Value;
use std::time::Duration;

/// Small enough to finish in seconds in a debug build.
const SMALL: &str = "find the best trend strategy for ETH on 1h over 30 days";
/// Large enough (1m bars over 120 days) that nothing finishes before the test steers or stops it.
const LARGE: &str = "find the best trend strategy for ETH on 1m over 120 days";

async fn wait_until_over(c: &Client, run_id: &str) -> ResearchRun {
    for _ in 0..1_200 {
        let run = c.research_status().await.unwrap().run.unwrap();
        assert_eq!(run.run_id, run_id);
        if run.status != "active" {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("research run {run_id} did not finish in 120 s");
}

fn artifact<'a>(run: &'a ResearchRun, name: &str) -> &'a str {
    &run.artifacts
        .iter()
        .find(|a| a.name == name)
        .unwrap_or_else(|| panic!("{name} in {:?}", run.artifacts))
        .content
}

fn workers(run: &ResearchRun) -> Vec<&agentdesk::api::model::ResearchAgent> {
    run.agents.iter().filter(|a| a.role != "lead").collect()
}

fn said_by<'a>(run: &'a ResearchRun, author: &str) -> Vec<&'a str> {
    run.transcript
        .iter()
        .filter(|m| m.author == author)
        .map(|m| m.text.as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_plans_spawns_agents_and_completes_with_a_ranked_report() {
    let s = common::start().await;
    let c = s.legacy();
    let run = c.research_start(SMALL).await.unwrap();
    assert!(run.run_id.starts_with("run_"), "{}", run.run_id);
    assert_eq!(run.status, "active");
    assert_eq!(run.planner, "deterministic");
    assert_eq!(
        run.created_at,
        Some(common::t0()),
        "times come from the sandbox clock"
    );
    let lead = run.agents.iter().find(|a| a.role == "lead").unwrap();
    let strategies: Vec<Value> = workers(&run)
        .iter()
        .map(|a| {
            assert_eq!(a.parent.as_deref(), Some(lead.agent_id.as_str()));
            assert!(
                a.task.contains("ETH-USD at 1h: 30 days in-sample"),
                "{}",
                a.task
            );
            a.name.clone().into()
        })
        .collect();
    assert_eq!(
        strategies,
        vec!["sma_cross agent", "ema_cross agent", "supertrend agent"],
        "one agent per trend strategy"
    );
    assert_eq!(said_by(&run, "user"), vec![SMALL]);
    let plan = said_by(&run, "lead").join(" ");
    assert!(
        plan.contains("deterministic") && plan.contains("one agent per strategy"),
        "{plan}"
    );
    assert_eq!(run.extra["plan"]["outOfSampleDays"], 10);

    // One active run per account; the refusal names it and costs no compute.
    let err = c.research_start(SMALL).await.unwrap_err();
    assert!(
        matches!(&err, ApiError::Conflict { code, message }
            if code == "research_run_active" && message.contains(&run.run_id)),
        "{err:?}"
    );
    // Unknown run ids are 404s.
    let err = c.research_message("run_nope", "only 4h").await.unwrap_err();
    assert!(matches!(err, ApiError::NotFound { .. }), "{err:?}");
    let err = c.research_stop("run_nope").await.unwrap_err();
    assert!(matches!(err, ApiError::NotFound { .. }), "{err:?}");

    let done = wait_until_over(&c, &run.run_id).await;
    assert_eq!(done.status, "completed", "{:#?}", done.transcript);
    assert!(done.finished_at.is_some());
    for a in workers(&done) {
        assert_eq!(a.status, "done", "{a:?}");
        assert_eq!(a.progress, 100);
        let summary = a.summary.as_deref().unwrap();
        assert!(summary.contains("out-of-sample"), "{summary}");
        // Each agent reported its evidence in the transcript.
        let report = said_by(&done, &a.agent_id).join(" ");
        assert!(
            report.contains("in-sample")
                && report.contains("out-of-sample")
                && report.contains("Sharpe"),
            "{report}"
        );
    }
    let lead = done.agents.iter().find(|a| a.role == "lead").unwrap();
    assert_eq!(lead.status, "done");

    let md = artifact(&done, "report.md");
    assert!(
        md.contains("# Research report") && md.contains("| # | Strategy"),
        "{md}"
    );
    assert_eq!(
        done.artifacts
            .iter()
            .find(|a| a.name == "report.md")
            .unwrap()
            .kind,
        "markdown"
    );
    let json: Value = serde_json::from_str(artifact(&done, "report.json")).unwrap();
    assert_eq!(json["status"], "completed");
    assert_eq!(json["partial"], Value::Bool(false));
    let ranking = json["ranking"].as_array().unwrap();
    assert_eq!(ranking.len(), 3, "one row per strategy: {ranking:#?}");
    // Rows with enough trades first (a tiny sample's extreme figures rank after them), then by
    // out-of-sample return.
    let keys: Vec<(bool, f64)> = ranking
        .iter()
        .map(|r| {
            (
                !r["fewTrades"].as_bool().unwrap(),
                r["outOfSample"]["returnPct"]
                    .as_f64()
                    .unwrap_or(f64::NEG_INFINITY),
            )
        })
        .collect();
    assert!(
        keys.windows(2)
            .all(|w| (w[0].0 && !w[1].0) || (w[0].0 == w[1].0 && w[0].1 >= w[1].1)),
        "ranked by sample, then OOS return: {keys:?}"
    );
    for (i, r) in ranking.iter().enumerate() {
        assert_eq!(r["rank"], i + 1);
        assert_eq!(r["pair"], "ETH-USD");
        assert_eq!(r["timeframe"], "1h");
        assert!(r["parameters"].as_object().is_some_and(|p| !p.is_empty()));
        assert!(r["inSample"]["bars"].as_u64().unwrap() >= 700, "{r}");
        assert!(r["outOfSample"]["bars"].as_u64().unwrap() >= 230, "{r}");
        // The out-of-sample window follows the in-sample one.
        assert!(r["inSample"]["end"].as_str() < r["outOfSample"]["start"].as_str());
        assert!(md.contains(r["strategyId"].as_str().unwrap()));
    }
    // The lead's last word names the top row.
    let last = done.transcript.last().unwrap();
    assert_eq!(last.author, "lead");
    assert!(
        last.text.contains("All done")
            && last
                .text
                .contains(ranking[0]["strategyId"].as_str().unwrap())
    );

    // An ended run takes no more messages and cannot be stopped again.
    for err in [
        c.research_message(&run.run_id, "only 4h")
            .await
            .unwrap_err(),
        c.research_stop(&run.run_id).await.unwrap_err(),
    ] {
        assert!(
            matches!(&err, ApiError::Conflict { code, .. } if code == "research_run_not_active"),
            "{err:?}"
        );
    }
    // Compute was charged once, for the accepted start.
    let usage = c.get_usage().await.unwrap();
    assert_eq!(usage.compute.used, 1);
    assert_eq!(usage.api_post_quota.used, 6);

    // A restart keeps the run, its agents, transcript and artifacts.
    let s = s.restart().await;
    let c = s.legacy();
    let after = c.research_status().await.unwrap().run.unwrap();
    assert_eq!(after.run_id, done.run_id);
    assert_eq!(after.status, "completed");
    assert_eq!(after.agents, done.agents);
    assert_eq!(after.transcript, done.transcript);
    assert_eq!(after.artifacts, done.artifacts);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_steer_the_run_and_the_lead_acknowledges() {
    let s = common::start().await;
    let c = s.legacy();
    let run = c.research_start(LARGE).await.unwrap();
    let steered = c
        .research_message(&run.run_id, "only 4h and drop supertrend")
        .await
        .unwrap();
    let reply = steered.extra["reply"].as_str().unwrap();
    assert!(reply.contains("timeframes 1m → 4h"), "{reply}");
    assert!(reply.contains("dropped supertrend"), "{reply}");
    let n = steered.transcript.len();
    assert_eq!(steered.transcript[n - 2].author, "user");
    assert_eq!(
        steered.transcript[n - 2].text,
        "only 4h and drop supertrend"
    );
    assert_eq!(steered.transcript[n - 1].author, "lead");
    assert_eq!(steered.transcript[n - 1].text, reply);
    assert_eq!(
        steered.extra["plan"]["timeframes"],
        serde_json::json!(["4h"])
    );
    let supertrend = workers(&steered)
        .into_iter()
        .find(|a| a.name == "supertrend agent")
        .unwrap();
    assert_eq!(supertrend.status, "stopped");
    for a in workers(&steered).iter().filter(|a| a.status != "stopped") {
        assert!(a.task.contains("at 4h"), "{}", a.task);
    }

    // A message with nothing to change is answered, not applied.
    let same = c
        .research_message(&run.run_id, "how is it going?")
        .await
        .unwrap();
    assert!(
        same.extra["reply"]
            .as_str()
            .unwrap()
            .contains("nothing to change"),
        "{:?}",
        same.extra["reply"]
    );
    let err = c.research_message(&run.run_id, "  ").await.unwrap_err();
    assert!(
        matches!(&err, ApiError::Invalid { field, .. } if field.as_deref() == Some("message")),
        "{err:?}"
    );

    // The run finishes on the new window, without the dropped strategy.
    let done = wait_until_over(&c, &run.run_id).await;
    assert_eq!(done.status, "completed", "{:#?}", done.transcript);
    let json: Value = serde_json::from_str(artifact(&done, "report.json")).unwrap();
    let ranking = json["ranking"].as_array().unwrap();
    assert_eq!(ranking.len(), 2, "{ranking:#?}");
    for r in ranking {
        assert_eq!(r["timeframe"], "4h");
        assert_ne!(r["strategyId"], "supertrend");
    }
    assert_eq!(c.get_usage().await.unwrap().compute.used, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_keeps_transcript_and_a_partial_report() {
    let s = common::start().await;
    let c = s.legacy();
    let run = c.research_start(LARGE).await.unwrap();
    let stopped = c.research_stop(&run.run_id).await.unwrap();
    assert_eq!(stopped.status, "stopped");
    assert!(stopped.finished_at.is_some());
    for a in &stopped.agents {
        assert_eq!(a.status, "stopped", "{a:?}");
    }
    assert!(
        said_by(&stopped, "lead")
            .last()
            .unwrap()
            .contains("Stopped at the user's request"),
        "{:#?}",
        stopped.transcript
    );
    let json: Value = serde_json::from_str(artifact(&stopped, "report.json")).unwrap();
    assert_eq!(json["status"], "stopped");
    assert_eq!(json["partial"], Value::Bool(true));
    assert!(artifact(&stopped, "report.md").contains("(partial)"));

    let err = c
        .research_message(&run.run_id, "only 4h")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ApiError::Conflict { code, .. } if code == "research_run_not_active"),
        "{err:?}"
    );
    // The stopped run stays what status shows until a new one starts, and stays stopped: its
    // cancelled agents write nothing more.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let later = c.research_status().await.unwrap().run.unwrap();
    assert_eq!(later.run_id, run.run_id);
    assert_eq!(later.status, "stopped");
    assert_eq!(later.transcript, stopped.transcript);
    assert_eq!(later.agents, stopped.agents);

    // A new run may start now; each accepted start costs one unit of compute.
    let next = c.research_start(SMALL).await.unwrap();
    assert_ne!(next.run_id, run.run_id);
    assert_eq!(c.get_usage().await.unwrap().compute.used, 2);
    c.research_stop(&next.run_id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_stops_runs_left_active() {
    let s = common::start().await;
    let run = s.legacy().research_start(LARGE).await.unwrap();
    let s = s.restart().await;
    let c = s.legacy();
    let after = c.research_status().await.unwrap().run.unwrap();
    assert_eq!(after.run_id, run.run_id);
    assert_eq!(after.status, "stopped");
    let note = said_by(&after, "lead").join(" ");
    assert!(
        note.contains("sandbox stopped while this run was active"),
        "{note}"
    );
    assert!(after.artifacts.iter().any(|a| a.name == "report.json"));
    assert_eq!(after.transcript[0].text, LARGE);
    // The account may start again.
    let next = c.research_start(SMALL).await.unwrap();
    c.research_stop(&next.run_id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_runs_the_same_operations() {
    let s = common::start_with(Settings::default()).await;
    let c = s.legacy();

    let help = c.mcp_cli("/help").await.unwrap();
    for cmd in [
        "/research start <task>",
        "/research say <message>",
        "/research stop",
        "/help",
    ] {
        assert!(help.output.contains(cmd), "{}", help.output);
    }
    let none = c.mcp_cli("/research").await.unwrap();
    assert!(
        none.output.contains("No research run yet"),
        "{}",
        none.output
    );
    let err = c.mcp_cli("/research say only 4h").await.unwrap_err();
    assert!(
        matches!(&err, ApiError::Conflict { code, .. } if code == "research_run_not_active"),
        "{err:?}"
    );

    let started = c
        .mcp_cli(&format!("/research start {LARGE}"))
        .await
        .unwrap();
    assert!(started.output.starts_with("Started."), "{}", started.output);
    assert!(
        started.output.contains("planner: deterministic"),
        "{}",
        started.output
    );
    let run_id = started.extra["run"]["runId"].as_str().unwrap().to_string();
    // The same run through HTTP.
    let status = c.research_status().await.unwrap().run.unwrap();
    assert_eq!(status.run_id, run_id);
    assert_eq!(status.status, "active");

    let shown = c.mcp_cli("/research").await.unwrap();
    assert!(
        shown.output.contains(&run_id) && shown.output.contains("agent-1"),
        "{}",
        shown.output
    );

    let said = c.mcp_cli("/research say use 7 days").await.unwrap();
    assert!(
        said.output.contains("lead: Changed: days 120 → 7"),
        "{}",
        said.output
    );
    let status = c.research_status().await.unwrap().run.unwrap();
    assert_eq!(status.extra["plan"]["days"], 7);

    let err = c
        .mcp_cli(&format!("/research start {SMALL}"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ApiError::Conflict { code, .. } if code == "research_run_active"),
        "{err:?}"
    );

    let stopped = c.mcp_cli("/research stop").await.unwrap();
    assert!(stopped.output.starts_with("Stopped."), "{}", stopped.output);
    assert_eq!(stopped.extra["run"]["status"], "stopped");
    assert_eq!(
        c.research_status().await.unwrap().run.unwrap().status,
        "stopped"
    );

    for (line, code) in [
        ("/bogus", "unknown_command"),
        ("/research dance", "invalid_command"),
        ("/research start", "invalid_command"),
    ] {
        let err = c.mcp_cli(line).await.unwrap_err();
        assert!(
            matches!(&err, ApiError::Invalid { code: c, field, message }
                if c == code && field.as_deref() == Some("command")
                    && message.contains("/research start <task>")),
            "{line}: {err:?}"
        );
    }

    // Each CLI call is one POST (the operation it runs does not count again); the one run started
    // cost one unit of compute.
    let usage = c.get_usage().await.unwrap();
    assert_eq!(usage.compute.used, 1);
    assert_eq!(usage.api_post_quota.used, 11);
}
