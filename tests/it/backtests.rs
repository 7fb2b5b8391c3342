//! Backtest jobs over HTTP: lifecycle, results, bad input, compute quota, a full queue.

use crate::common;
use agentdesk::api::model::{BacktestJob, BacktestRequest};
use agentdesk::api::{ApiError, Client, Scope};
use agentdesk::sandbox::Settings;
use serde_json::json;
use std::time::Duration;

pub fn request(strategy: &str, pair: &str, tf: &str, days: u32) -> BacktestRequest {
    BacktestRequest {
        strategy_id: strategy.into(),
        pair: pair.into(),
        timeframe: tf.into(),
        days,
        parameters: Default::default(),
    }
}

/// Polls until the job is done or failed (bounded: the test fails rather than hangs). A year of
/// one-minute bars in a debug build on a loaded machine takes a while: the bound is generous.
pub async fn wait(c: &Client, id: &str) -> BacktestJob {
    let start = std::time::Instant::now();
    loop {
        let job = c.get_backtest_job(id).await.unwrap();
        if job.status == "done" || job.status == "failed" {
            return job;
        }
        assert!(
            job.status == "queued" || job.status == "running",
            "{}",
            job.status
        );
        assert!(
            start.elapsed() < Duration::from_secs(180),
            "job {id} did not finish in 180 s: {} at {}%",
            job.status,
            job.progress
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_to_done_with_statistics_equity_and_trades() {
    let s = common::start().await;
    let c = s.legacy();
    let mut req = request("sma_cross", "BTC-USD", "15m", 30);
    req.parameters.insert("fast".into(), json!(10));
    req.parameters.insert("slow".into(), json!(40));
    req.parameters.insert("stopLossPct".into(), json!(2.5));
    let job = c.run_backtest(&req).await.unwrap();
    assert!(job.job_id.starts_with("bt_"));
    assert_eq!(job.status, "queued");
    assert_eq!(
        job.poll_url,
        format!("/api/delegated/backtests/{}", job.job_id)
    );
    let done = wait(&c, &job.job_id).await;
    assert_eq!(done.status, "done", "{:?}", done.error);
    assert_eq!(done.progress, 100);
    let data = done.data.unwrap();
    assert_eq!(data.bars, 30 * 96);
    assert_eq!(data.parameters["fast"], 10);
    assert!(data.stats.total_return.is_some());
    assert!(data.stats.max_drawdown.unwrap() <= 0.0);
    assert_eq!(data.stats.total_trades as usize, data.trades.len());
    assert!(!data.equity.is_empty() && data.equity.len() <= 500);
    assert!(
        data.trades
            .iter()
            .any(|t| t.exit_reason == "stop_loss" || t.exit_reason == "signal")
    );
    assert!(data.stats.start_date.unwrap() < data.stats.end_date.unwrap());
    // Compute is charged once per accepted job.
    assert_eq!(c.get_usage().await.unwrap().compute.used, 1);
    // Another account cannot see it.
    let other = s.client(Scope::McpMutate);
    other.get_backtest_job(&job.job_id).await.unwrap(); // same account: visible
    let err = c.get_backtest_job("bt_nope").await.unwrap_err();
    assert!(matches!(err, ApiError::NotFound { .. }), "{err:?}");
}

#[tokio::test]
async fn bad_requests_name_their_field_and_cost_no_compute() {
    let s = common::start().await;
    let c = s.legacy();
    let cases: Vec<(BacktestRequest, &str)> = vec![
        (request("nope", "BTC-USD", "1h", 30), "strategyId"),
        (request("sma_cross", "FOO-USD", "1h", 30), "pair"),
        (request("sma_cross", "BTC-USD", "7m", 30), "timeframe"),
        (request("sma_cross", "BTC-USD", "1h", 0), "days"),
        (request("sma_cross", "BTC-USD", "1h", 366), "days"),
        (
            {
                let mut r = request("sma_cross", "BTC-USD", "1h", 30);
                r.parameters.insert("nope".into(), json!(3));
                r
            },
            "parameters.nope",
        ),
        (
            {
                let mut r = request("sma_cross", "BTC-USD", "1h", 30);
                r.parameters.insert("fast".into(), json!("ten"));
                r
            },
            "parameters.fast",
        ),
        (
            {
                let mut r = request("sma_cross", "BTC-USD", "1h", 30);
                r.parameters.insert("stopLossPct".into(), json!(150));
                r
            },
            "parameters.stopLossPct",
        ),
    ];
    for (req, field) in cases {
        let err = c.run_backtest(&req).await.unwrap_err();
        match err {
            ApiError::Invalid {
                field: Some(f),
                message,
                ..
            } => {
                assert_eq!(f, field, "{message}");
            }
            other => panic!("{field}: {other:?}"),
        }
    }
    assert_eq!(c.get_usage().await.unwrap().compute.used, 0);
}

#[tokio::test]
async fn the_compute_cap_counts_jobs() {
    let s = common::start_with(Settings {
        daily_compute_cap: 2,
        ..Default::default()
    })
    .await;
    let c = s.legacy();
    let req = request("rsi_reversion", "ETH-USD", "1h", 10);
    c.run_backtest(&req).await.unwrap();
    c.run_backtest(&req).await.unwrap();
    let err = c.run_backtest(&req).await.unwrap_err();
    assert!(
        matches!(&err, ApiError::QuotaExceeded { message, .. } if message.contains("compute")),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_is_refused_clearly() {
    let s = common::start_with(Settings {
        backtest_workers: 1,
        ..Default::default()
    })
    .await;
    let c = s.legacy();
    // A year of one-minute bars keeps the single worker busy while the queue fills.
    let req = request("ema_cross", "BTC-USD", "1m", 365);
    let mut refused = None;
    for _ in 0..40 {
        match c.run_backtest(&req).await {
            Ok(_) => {}
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    let err = refused.expect("40 jobs fit in a queue of 32 behind one worker");
    assert!(
        matches!(&err, ApiError::Invalid { code, message, .. } if code == "QUEUE_FULL" && message.contains("queue")),
        "{err:?}"
    );
}

/// Polls until the job is running and returns its progress (bounded).
async fn running(c: &Client, id: &str) -> u8 {
    let start = std::time::Instant::now();
    loop {
        let job = c.get_backtest_job(id).await.unwrap();
        match job.status.as_str() {
            "running" => return job.progress,
            "queued" => {
                assert!(
                    start.elapsed() < Duration::from_secs(60),
                    "job {id} still queued after 60 s"
                );
                tokio::time::sleep(Duration::from_millis(5)).await
            }
            other => panic!("job {id} is {other} before it was seen running"),
        }
    }
}

fn stored_status(db: &std::path::Path, id: &str) -> (String, i64) {
    agentdesk::sandbox::store::Store::open(db)
        .unwrap()
        .conn
        .query_row(
            "SELECT status, progress FROM backtest_jobs WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
}

/// Progress is kept in memory while a job runs (the store still says `queued`); the outcome is
/// written once, and a restarted sandbox answers it from the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_shows_while_running_and_the_outcome_survives_a_restart() {
    let s = common::start_with(Settings {
        backtest_workers: 1,
        ..Default::default()
    })
    .await;
    let c = s.legacy();
    // A year of one-minute bars runs long enough to be seen running.
    let job = c
        .run_backtest(&request("sma_cross", "BTC-USD", "1m", 365))
        .await
        .unwrap();
    let progress = running(&c, &job.job_id).await;
    assert!((1..100).contains(&progress), "{progress}");
    assert_eq!(stored_status(&s.db, &job.job_id).0, "queued");
    let done = wait(&c, &job.job_id).await;
    assert_eq!(done.status, "done", "{:?}", done.error);
    assert_eq!(done.data.as_ref().unwrap().bars, 525_600);
    // The answer is served from memory as soon as the job ends; the store's write follows.
    let start = std::time::Instant::now();
    while stored_status(&s.db, &job.job_id).0 == "queued" {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the outcome was not stored"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(stored_status(&s.db, &job.job_id), ("done".to_string(), 100));
    let stored = c.get_backtest_job(&job.job_id).await.unwrap();
    assert_eq!(
        (&stored.data, stored.finished_at),
        (&done.data, done.finished_at),
        "the answer from memory is the stored one"
    );

    let s = s.restart().await;
    let c = s.legacy();
    let after = c.get_backtest_job(&job.job_id).await.unwrap();
    assert_eq!(after.status, "done");
    assert_eq!(after.progress, 100);
    assert_eq!(after.data, done.data);
}

/// Two jobs over the same bars: the second finds them cached, and both agree with a job whose
/// bars were generated afresh by another sandbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_on_cached_bars_give_the_same_result_as_fresh_bars() {
    let s = common::start().await;
    let c = s.legacy();
    let mut req = request("sma_cross", "ETH-USD", "5m", 20);
    req.parameters.insert("fast".into(), json!(8));
    req.parameters.insert("slow".into(), json!(21));
    let first = c.run_backtest(&req).await.unwrap();
    let first = wait(&c, &first.job_id).await;
    let second = c.run_backtest(&req).await.unwrap();
    let second = wait(&c, &second.job_id).await;
    let other = common::start().await;
    let fresh = other.legacy().run_backtest(&req).await.unwrap();
    let fresh = wait(&other.legacy(), &fresh.job_id).await;
    assert_eq!(first.status, "done", "{:?}", first.error);
    assert_eq!(first.data, second.data);
    assert_eq!(first.data, fresh.data);
}

/// A sandbox killed (SIGKILL) while a job runs: after the restart the job is not left `running`
/// but runs again to `done`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_running_when_the_sandbox_is_killed_runs_again_after_the_restart() {
    use crate::tui::Server;
    use agentdesk::secret::Secret;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db");
    let mut server = Server::start(&db, "127.0.0.1:0", &dir.path().join("serve.log")).unwrap();
    let key = server.key("legacy");
    let c = Client::new(&server.base, Some(Secret::new(key.clone()))).unwrap();
    let job = c
        .run_backtest(&request("ema_cross", "BTC-USD", "1m", 365))
        .await
        .unwrap();
    running(&c, &job.job_id).await;
    server.kill();
    assert_eq!(stored_status(&db, &job.job_id).0, "queued");

    let server = Server::start(&db, "127.0.0.1:0", &dir.path().join("serve2.log")).unwrap();
    let c = Client::new(&server.base, Some(Secret::new(key))).unwrap();
    let done = wait(&c, &job.job_id).await;
    assert_eq!(done.status, "done", "{:?}", done.error);
    assert_eq!(done.data.unwrap().bars, 525_600);
}

/// Rows an older version left `running` (it wrote that state) go back to the queue on start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_stored_as_running_is_run_again_on_start() {
    let s = common::start().await;
    let c = s.legacy();
    let job = c
        .run_backtest(&request("sma_cross", "SOL-USD", "1h", 30))
        .await
        .unwrap();
    wait(&c, &job.job_id).await;
    agentdesk::sandbox::store::Store::open(&s.db)
        .unwrap()
        .conn
        .execute(
            "UPDATE backtest_jobs SET status = 'running', progress = 20, result = NULL,
                                      finished_at = NULL WHERE id = ?1",
            [&job.job_id],
        )
        .unwrap();
    let s = s.restart().await;
    let done = wait(&s.legacy(), &job.job_id).await;
    assert_eq!(done.status, "done", "{:?}", done.error);
    assert!(done.data.is_some());
}
