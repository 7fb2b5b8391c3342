//! A gateway killed between sending an execution and recording its answer: at the next start,
//! before it serves, it asks the service what became of every item it left executing. Judged by
//! the sandbox's own count of confirms.

use super::{Setup, long_btc, setup};
use crate::common;
use agentdesk::api::Scope;
use agentdesk::api::client::Client;
use agentdesk::gateway::rules::policy::GateSettings;
use agentdesk::secret::Secret;
use reqwest::StatusCode;

/// Stages one trade through the gateway; returns the agent's key and the proposal id.
async fn staged(s: &Setup) -> (Secret, String) {
    let key = s.sandbox.key(Scope::McpMutate);
    let agent = s.agent(&key);
    let who = agent.whoami(false).await.unwrap();
    let p = agent
        .propose_trade(&long_btc(&who.messenger_id))
        .await
        .unwrap();
    (key, p.proposal_id)
}

/// Stops the gateway as kill -9 would, leaving the item claimed (approved by the supervisor, its
/// execution sent, no answer recorded), and starts it again on the same database, with (or
/// without) its own key for the account. `sent`: whether that execution reached the service.
async fn killed_while_executing(
    s: Setup,
    key: &Secret,
    proposal: &str,
    sent: bool,
    own_key: bool,
) -> Setup {
    let Setup {
        sandbox,
        gate,
        gate_db,
        token,
        _dir,
    } = s;
    gate.abort().await;
    rusqlite::Connection::open(&gate_db)
        .unwrap()
        .execute(
            "UPDATE items SET status = 'executing', decided_by = 'alice' WHERE proposal_id = ?1",
            [proposal],
        )
        .unwrap();
    if sent {
        let direct = Client::new(&sandbox.base_url(), Some(key.clone())).unwrap();
        assert_eq!(
            direct.confirm_trade(proposal).await.unwrap().status,
            "executed"
        );
    }
    let upstream_key = own_key.then(|| sandbox.key(Scope::Legacy));
    let gate = common::start_gateway(
        &sandbox.base_url(),
        &sandbox.clock,
        &gate_db,
        GateSettings::default(),
        upstream_key,
    )
    .await;
    Setup {
        sandbox,
        gate,
        gate_db,
        token,
        _dir,
    }
}

async fn journal_kinds(s: &Setup) -> Vec<String> {
    let (st, body) = s
        .supervisor(reqwest::Method::GET, "/gate/v1/journal", None)
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    body["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["kind"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn an_execution_the_service_ran_before_the_kill_is_executed_before_the_gateway_serves() {
    let s = setup().await;
    let (key, proposal) = staged(&s).await;
    let s = killed_while_executing(s, &key, &proposal, true, true).await;
    // The first thing anyone sees is the outcome: no agent request was needed to learn it.
    let items = s.inbox("all").await;
    assert_eq!(items[0]["status"], "executed", "{items:?}");
    assert!(
        items[0]["note"]
            .as_str()
            .unwrap()
            .contains("before the gateway stopped"),
        "{items:?}"
    );
    assert!(journal_kinds(&s).await.contains(&"reconcile".to_string()));
    // The agent's confirm gets the execution; the service ran it once.
    let done = s.agent(&key).confirm_trade(&proposal).await.unwrap();
    assert_eq!(done.status, "executed");
    assert_eq!(s.upstream_confirms(&proposal), 1);
}

#[tokio::test]
async fn an_execution_the_kill_stopped_before_the_service_ran_it_runs_once_on_the_agents_request() {
    let s = setup().await;
    let (key, proposal) = staged(&s).await;
    let s = killed_while_executing(s, &key, &proposal, false, true).await;
    let items = s.inbox("all").await;
    assert_eq!(items[0]["status"], "approved", "{items:?}");
    assert!(
        items[0]["note"]
            .as_str()
            .unwrap()
            .starts_with("not executed"),
        "{items:?}"
    );
    assert_eq!(s.upstream_confirms(&proposal), 0);
    let done = s.agent(&key).confirm_trade(&proposal).await.unwrap();
    assert_eq!(done.status, "executed");
    assert_eq!(s.upstream_confirms(&proposal), 1);
}

#[tokio::test]
async fn without_its_own_key_the_outcome_is_unknown_until_the_agent_asks_and_it_is_never_run_twice()
{
    let s = setup().await;
    let (key, proposal) = staged(&s).await;
    let s = killed_while_executing(s, &key, &proposal, true, false).await;
    let items = s.inbox("all").await;
    assert_eq!(items[0]["status"], "approved", "{items:?}");
    assert!(
        items[0]["note"]
            .as_str()
            .unwrap()
            .starts_with("outcome unknown"),
        "{items:?}"
    );
    // The agent's confirm asks the service, which says it already ran: the item is executed,
    // not failed, and the agent hears the execution (200), with the service's words in its note,
    // not the 409 of the attempt that found it done (issue 33).
    let done = s.agent(&key).confirm_trade(&proposal).await.unwrap();
    assert_eq!(done.status, "executed");
    let items = s.inbox("all").await;
    assert_eq!(items[0]["status"], "executed", "{items:?}");
    assert!(
        items[0]["note"]
            .as_str()
            .unwrap()
            .contains("already executed"),
        "{items:?}"
    );
    // Asked again, the same recorded answer: nothing is sent upstream.
    let again = s.agent(&key).confirm_trade(&proposal).await.unwrap();
    assert_eq!(again.status, "executed");
    assert_eq!(
        s.upstream_confirms(&proposal),
        2,
        "the second attempt was refused, not run"
    );
}
