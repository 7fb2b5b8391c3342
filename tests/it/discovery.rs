//! Discovery over HTTP: the catalog, cached top backtests, live replay, optimizer combos.

use crate::common;
use agentdesk::api::ApiError;
use agentdesk::api::model::Discovery;
use std::time::Duration;

async fn settled<F, Fut>(mut fetch: F) -> Discovery
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Discovery, ApiError>>,
{
    for _ in 0..120 {
        let d = fetch().await.unwrap();
        if !d.computing {
            return d;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("discovery never finished computing");
}

#[tokio::test]
async fn the_catalog_lists_eight_strategies_with_parameter_ranges() {
    let s = common::start().await;
    let cat = s.legacy().discover_strategies().await.unwrap().strategies;
    assert!(cat.len() >= 8);
    let categories: std::collections::HashSet<_> =
        cat.iter().map(|s| s.category.as_str()).collect();
    for c in ["trend", "mean-reversion", "breakout"] {
        assert!(categories.contains(c), "{categories:?}");
    }
    for s in &cat {
        assert!(!s.name.is_empty() && !s.description.is_empty());
        for p in &s.parameters {
            assert!(
                p.min <= p.default && p.default <= p.max && p.step > 0.0,
                "{}.{}",
                s.id,
                p.name
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn top_backtests_filter_by_quality_and_collapse_to_one_row_per_strategy() {
    let s = common::start().await;
    let c = s.legacy();
    let all = settled(|| c.discover_top_backtests(Some("all"), Some(true))).await;
    assert_eq!(
        all.rows.len(),
        8 * 3 * 3,
        "every strategy × pair × timeframe"
    );
    assert!(all.computed_at.is_some());
    let returns: Vec<f64> = all
        .rows
        .iter()
        .map(|r| r.stats.total_return.unwrap())
        .collect();
    assert!(returns.windows(2).all(|w| w[0] >= w[1]), "sorted by return");
    // Each row carries its equity curve (a sandbox extension the console draws in its details):
    // time-ordered points, the drawdown never above zero, ending where the return says.
    for r in &all.rows {
        let curve = r.stats.extra["equity"].as_array().expect("an equity curve");
        assert!(
            (2..=122).contains(&curve.len()),
            "{}: {}",
            r.id,
            curve.len()
        );
        let t: Vec<i64> = curve.iter().map(|p| p["t"].as_i64().unwrap()).collect();
        assert!(t.windows(2).all(|w| w[0] < w[1]), "{}", r.id);
        assert!(
            curve
                .iter()
                .all(|p| p["drawdown"].as_f64().unwrap() <= 1e-9)
        );
        let first = curve[0]["equity"].as_f64().unwrap();
        let last = curve[curve.len() - 1]["equity"].as_f64().unwrap();
        let ret = (last / first - 1.0) * 100.0;
        assert!(
            (ret - r.stats.total_return.unwrap()).abs() < 0.5,
            "{}: curve {ret} vs return {:?}",
            r.id,
            r.stats.total_return
        );
    }
    let best = c
        .discover_top_backtests(Some("all"), Some(false))
        .await
        .unwrap();
    let ids: std::collections::HashSet<_> =
        best.rows.iter().map(|r| r.strategy_id.clone()).collect();
    assert_eq!(ids.len(), best.rows.len(), "one row per strategy");
    let good = c
        .discover_top_backtests(Some("good"), Some(true))
        .await
        .unwrap();
    assert!(
        good.rows
            .iter()
            .all(|r| r.quality == "good" || r.quality == "excellent")
    );
    assert_eq!(
        good.rows.len(),
        all.rows.iter().filter(|r| r.quality != "poor").count()
    );
    let err = c
        .discover_top_backtests(Some("great"), None)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ApiError::Invalid { field: Some(f), .. } if f == "filter"),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn top_live_replays_each_strategy_over_the_window() {
    let s = common::start().await;
    let c = s.legacy();
    let live = settled(|| c.discover_top_live(Some(14), Some(5))).await;
    assert_eq!(live.rows.len(), 5);
    assert!(
        live.rows
            .iter()
            .all(|r| r.days == 14 && r.timeframe == "1h")
    );
    assert!(live.rows[0].stats.extra.contains_key("currentTarget"));
    assert!(live.rows.iter().all(|r| r.stats.extra["equity"].is_array()));
    let err = c.discover_top_live(Some(0), None).await.unwrap_err();
    assert!(
        matches!(&err, ApiError::Invalid { field: Some(f), .. } if f == "windowDays"),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optimized_combos_are_a_flat_ranked_list_with_full_parameters() {
    let s = common::start().await;
    let c = s.legacy();
    let params = |extra: &[(&'static str, &str)]| {
        let mut p = vec![
            ("pair", "ETH-USD".to_string()),
            ("timeframe", "1h".into()),
            ("days", "30".into()),
            ("filter", "all".into()),
        ];
        p.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
        p
    };
    let query = params(&[("perStrategy", "2"), ("limit", "500")]);
    let combos = settled(|| c.discover_top_optimized_combos(&query)).await;
    let mut per: std::collections::HashMap<String, Vec<u32>> = Default::default();
    for r in &combos.rows {
        assert_eq!(r.pair, "ETH-USD");
        assert!(!r.parameters.is_empty());
        per.entry(r.strategy_id.clone())
            .or_default()
            .push(r.rank_within_strategy.unwrap());
    }
    assert_eq!(per.len(), 8);
    assert!(
        per.values()
            .all(|ranks| ranks.len() == 2 && ranks.contains(&1) && ranks.contains(&2))
    );
    let few = c
        .discover_top_optimized_combos(&params(&[("minTrades", "1000000")]))
        .await
        .unwrap();
    assert!(few.rows.is_empty());
    let err = c
        .discover_top_optimized_combos(&[("pair", "FOO-USD".to_string())])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ApiError::Invalid { field: Some(f), .. } if f == "pair"),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_expensive_cache_answers_before_it_is_ready() {
    let s = common::start().await;
    let c = s.legacy();
    // A year of one-minute bars per strategy grid takes far longer than the 2 s a request may
    // wait: the first answer must say it is still computing.
    let first = c
        .discover_top_optimized_combos(&[
            ("pair", "SOL-USD".to_string()),
            ("timeframe", "1m".into()),
            ("days", "365".into()),
        ])
        .await
        .unwrap();
    assert!(first.computing);
}
