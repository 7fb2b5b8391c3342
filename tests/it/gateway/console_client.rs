//! The console's side of a gateway: `api::Client`'s `/gate/v1` methods against a sandbox behind a
//! gateway (typed answers, agent labels, approval executing upstream, rejection with a reason, and
//! what a non-gateway or a missing token answers), and the embedded picture `agentdesk` starts with
//! no configuration: its demo agent's proposal reaches the console's inbox and executes on approval.

use super::{Setup, long_btc, setup};
use agentdesk::api::{ApiError, Client, Scope};
use agentdesk::embedded::{DEMO_AGENT, Embedded, EmbeddedConfig};
use agentdesk::gateway::store::{SqliteStore, Store};
use std::time::{Duration, Instant};

fn console(s: &Setup) -> Client {
    Client::new(&s.gate.base_url(), Some(s.sandbox.key(Scope::Legacy)))
        .unwrap()
        .with_gate_token(Some(s.token.clone()))
}

#[tokio::test]
async fn the_console_client_lists_every_agents_items_approves_and_rejects() {
    let s = setup().await;
    let alpha_key = s.sandbox.key(Scope::McpMutate);
    let beta_key = s
        .sandbox
        .running
        .create_key(Scope::McpMutate, "beta")
        .await
        .unwrap();
    let messenger = s.sandbox.running.messenger_id.clone();
    let alpha = s.agent(&alpha_key);
    let staged = alpha.propose_trade(&long_btc(&messenger)).await.unwrap();
    // Named the way `agentdesk gate agent name` names it.
    let store = SqliteStore::open(&s.gate_db).unwrap();
    assert_eq!(
        store
            .name_agent(&alpha_key.fingerprint(), "alpha")
            .await
            .unwrap(),
        1
    );
    let beta_staged = s
        .agent(&beta_key)
        .propose_trade(&long_btc(&messenger))
        .await
        .unwrap();

    let c = console(&s);
    let agents = c.gate_agents().await.unwrap();
    let mut labels: Vec<&str> = agents.agents.iter().map(|a| a.agent.as_str()).collect();
    labels.sort();
    let beta_fp = beta_key.fingerprint();
    let mut expected = ["alpha", beta_fp.as_str()];
    expected.sort();
    assert_eq!(labels, expected);
    assert!(agents.gateway.is_some());

    let inbox = c.gate_inbox(None).await.unwrap();
    assert_eq!(inbox.items.len(), 2, "{inbox:?}");
    let item = inbox
        .items
        .iter()
        .find(|i| i.proposal_id.as_deref() == Some(staged.proposal_id.as_str()))
        .expect("alpha's staging is listed");
    assert_eq!(
        (
            item.agent.as_str(),
            item.status.as_str(),
            item.kind.as_str()
        ),
        ("alpha", "pending", "trade")
    );
    assert_eq!(item.account.as_deref(), Some(messenger.as_str()));
    assert_eq!(item.trade_preview().coin, "BTC");

    // Approving executes upstream with alpha's key; the answer carries the execution.
    let done = c.gate_approve(&staged.proposal_id, &[]).await.unwrap().item;
    assert_eq!(
        done.status,
        agentdesk::api::model::ItemStatus::Executed,
        "{done:?}"
    );
    let body = done.result_body().expect("the execution's answer");
    assert!(body["execution"]["fills"][0]["coin"] == "BTC", "{body}");
    assert_eq!(s.upstream_confirms(&staged.proposal_id), 1);
    let executed = c.gate_inbox(Some("executed")).await.unwrap();
    assert_eq!(executed.items.len(), 1);
    // The console's reads through the gateway see the position.
    let positions = c.get_positions().await.unwrap();
    assert!(positions.positions.iter().any(|p| p.coin == "BTC"));

    // A rejection carries its reason; the agent's confirm is then refused with it.
    let rejected = c
        .gate_reject(&beta_staged.proposal_id, "too large for today")
        .await
        .unwrap()
        .item;
    assert_eq!(rejected.status, agentdesk::api::model::ItemStatus::Rejected);
    assert_eq!(rejected.reason.as_deref(), Some("too large for today"));
    let refused = s
        .agent(&beta_key)
        .confirm_trade(&beta_staged.proposal_id)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some("rejected_by_supervisor"), "{refused}");
    // With the kill switch on, an approval of an opening trade is a 403 the console shows as is.
    let gamma = s
        .agent(&alpha_key)
        .propose_trade(&long_btc(&messenger))
        .await
        .unwrap();
    let (st, body) = s
        .supervisor(
            reqwest::Method::POST,
            "/gate/v1/kill-switch",
            Some(serde_json::json!({"on": true, "reason": "market halt drill"})),
        )
        .await;
    assert_eq!(st, reqwest::StatusCode::OK, "{body}");
    let halted = c.gate_approve(&gamma.proposal_id, &[]).await.unwrap_err();
    assert!(
        matches!(&halted, ApiError::Forbidden { code, message } if code == "kill_switch" && message.contains("market halt drill")),
        "{halted:?}"
    );
    // Deciding again is answered, not hidden: a rejected item cannot be approved.
    let again = c
        .gate_approve(&beta_staged.proposal_id, &[])
        .await
        .unwrap_err();
    assert!(matches!(again, ApiError::Conflict { .. }), "{again:?}");
}

#[tokio::test]
async fn without_a_token_a_gateway_says_401_and_a_plain_service_404() {
    let s = setup().await;
    let no_token = Client::new(&s.gate.base_url(), Some(s.sandbox.key(Scope::Legacy))).unwrap();
    let e = no_token.gate_agents().await.unwrap_err();
    assert!(matches!(e, ApiError::Unauthorized { .. }), "{e:?}");
    let plain = s.sandbox.legacy().with_gate_token(Some(s.token.clone()));
    let e = plain.gate_inbox(None).await.unwrap_err();
    assert!(matches!(e, ApiError::NotFound { .. }), "{e:?}");
}

#[tokio::test]
async fn the_embedded_picture_runs_a_demo_agent_whose_proposal_executes_on_approval() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EmbeddedConfig::new(dir.path().to_path_buf(), Default::default());
    // Any free port: tests run side by side.
    config.gate_port = 0;
    config.demo_first = Duration::ZERO;
    config.demo_agent = Some(Duration::from_secs(300));
    let embedded = Embedded::start(config).await.unwrap();
    assert_eq!(embedded.demo_agent(), Some(DEMO_AGENT));
    let c = Client::new(&embedded.gateway_url(), Some(embedded.console_key.clone()))
        .unwrap()
        .with_gate_token(Some(embedded.gate_token.clone()));
    let started = Instant::now();
    let item = loop {
        let inbox = c.gate_inbox(None).await.unwrap();
        if let Some(item) = inbox.items.into_iter().next() {
            break item;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "no proposal from the demo agent within 90 s"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(item.agent, DEMO_AGENT);
    assert_eq!(item.kind, "trade");
    let preview = item.trade_preview();
    assert!(
        preview.notional > 0.0 && preview.notional <= 600.0,
        "small and sane: {preview:?}"
    );
    assert!(preview.leverage <= 2, "{preview:?}");
    let done = c.gate_approve(&item.id, &[]).await.unwrap().item;
    assert_eq!(
        done.status,
        agentdesk::api::model::ItemStatus::Executed,
        "{done:?}"
    );
    let positions = c.get_positions().await.unwrap();
    assert!(
        positions.positions.iter().any(|p| p.coin == preview.coin),
        "{positions:?}"
    );
    // The Connect panel's command works against the embedded database while it runs.
    let key = {
        let mut store = agentdesk::sandbox::store::Store::open(&embedded.sandbox_db).unwrap();
        agentdesk::sandbox::keys::create_key(
            &mut store,
            None,
            Scope::McpMutate,
            "my-agent",
            chrono::Utc::now(),
        )
        .unwrap()
    };
    let mine = Client::new(&embedded.gateway_url(), Some(key)).unwrap();
    mine.whoami(false).await.unwrap();
    embedded.shutdown().await;
}

#[tokio::test]
async fn the_embedded_gateway_applies_the_config_files_policy() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = EmbeddedConfig::new(dir.path().to_path_buf(), Default::default());
    config.gate_port = 0;
    config.demo_agent = None;
    (config.gate_settings, config.policy) =
        agentdesk::gateway::rules::policy::GateSettings::with_policy_from_toml(
            "[policy]\nmax_notional_usd = 100\n",
        )
        .unwrap();
    let embedded = Embedded::start(config).await.unwrap();
    assert_eq!(embedded.demo_agent(), None);
    let c = Client::new(&embedded.gateway_url(), Some(embedded.console_key.clone())).unwrap();
    let messenger = embedded.sandbox.messenger_id.clone();
    let refused = c.propose_trade(&long_btc(&messenger)).await.unwrap_err();
    assert_eq!(refused.code(), Some("policy_violation"), "{refused}");
    embedded.shutdown().await;
}

#[tokio::test]
async fn the_console_client_turns_the_kill_switch_on_and_staging_is_refused_403_kill_switch() {
    let s = setup().await;
    let c = console(&s);
    assert!(!c.gate_kill_switch().await.unwrap().on);
    let k = c.gate_set_kill_switch(true, "drill").await.unwrap();
    assert!(k.on);
    let k = c.gate_kill_switch().await.unwrap();
    assert_eq!((k.on, k.reason.as_deref()), (true, Some("drill")));

    let key = s.sandbox.key(Scope::McpMutate);
    let messenger = s.sandbox.running.messenger_id.clone();
    let err = s
        .agent(&key)
        .propose_trade(&long_btc(&messenger))
        .await
        .unwrap_err();
    assert!(matches!(err, ApiError::Forbidden { .. }), "{err:?}");
    assert_eq!(err.code(), Some("kill_switch"));
    assert!(err.to_string().contains("drill"), "{err}");

    assert!(!c.gate_set_kill_switch(false, "").await.unwrap().on);
    s.agent(&key)
        .propose_trade(&long_btc(&messenger))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_standing_approval_from_the_console_executes_a_fitting_proposal_at_once() {
    use agentdesk::api::model::GateStandingRequest;
    let s = setup().await;
    let c = console(&s);
    let bad = c
        .gate_create_standing_approval(&GateStandingRequest {
            agent: "*".into(),
            coins: vec!["BTC".into()],
            max_notional_usd: 5_000.0,
            minutes: 0,
            reason: "too short".into(),
        })
        .await
        .unwrap_err();
    assert!(bad.to_string().contains("minutes"), "{bad}");
    let standing = c
        .gate_create_standing_approval(&GateStandingRequest {
            agent: "*".into(),
            coins: vec!["BTC".into(), "ETH".into()],
            max_notional_usd: 5_000.0,
            minutes: 10,
            reason: "quiet market".into(),
        })
        .await
        .unwrap();
    assert!(standing.approved.is_empty());

    let key = s.sandbox.key(Scope::McpMutate);
    let messenger = s.sandbox.running.messenger_id.clone();
    let staged = s
        .agent(&key)
        .propose_trade(&long_btc(&messenger))
        .await
        .unwrap();
    let inbox = c.gate_inbox(Some("all")).await.unwrap();
    let item = inbox
        .items
        .iter()
        .find(|i| i.proposal_id.as_deref() == Some(staged.proposal_id.as_str()))
        .expect("the auto-approved item is listed");
    assert_eq!(
        item.status,
        agentdesk::api::model::ItemStatus::Executed,
        "{item:?}"
    );
    assert_eq!(item.standing_approval, Some(standing.id));
    assert_eq!(s.upstream_confirms(&staged.proposal_id), 1);

    let list = c.gate_standing_approvals().await.unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].approved.len(), 1);
    assert_eq!(
        list[0].approved[0].proposal_id.as_deref(),
        Some(staged.proposal_id.as_str())
    );
    c.gate_delete_standing_approval(standing.id).await.unwrap();
    assert!(c.gate_standing_approvals().await.unwrap().is_empty());
    let again = c
        .gate_delete_standing_approval(standing.id)
        .await
        .unwrap_err();
    assert!(matches!(again, ApiError::NotFound { .. }), "{again:?}");
}

#[tokio::test]
async fn an_override_from_the_console_executes_a_breaking_item_and_is_journaled_with_the_rule() {
    let s = setup().await;
    let c = console(&s);
    let key = s.sandbox.key(Scope::McpMutate);
    let messenger = s.sandbox.running.messenger_id.clone();
    // Passes at staging (no policy), breaks once the limit drops below its 2,000 USD.
    let staged = s
        .agent(&key)
        .propose_trade(&long_btc(&messenger))
        .await
        .unwrap();
    let (st, body) = s
        .supervisor(
            reqwest::Method::PUT,
            "/gate/v1/policy",
            Some(serde_json::json!({"max_notional_usd": 1000})),
        )
        .await;
    assert_eq!(st, reqwest::StatusCode::OK, "{body}");

    let check = c.gate_check(&staged.proposal_id).await.unwrap();
    assert_eq!(check.needs_override, vec!["max_notional_usd".to_string()]);
    let broken = check
        .verdicts
        .iter()
        .find(|v| v.rule == "max_notional_usd")
        .unwrap();
    assert!(!broken.ok);
    let refused = c.gate_approve(&staged.proposal_id, &[]).await.unwrap_err();
    assert_eq!(refused.code(), Some("policy_violation"), "{refused:?}");
    assert_eq!(s.upstream_confirms(&staged.proposal_id), 0);

    let done = c
        .gate_approve(&staged.proposal_id, &["max_notional_usd".to_string()])
        .await
        .unwrap();
    assert_eq!(
        done.item.status,
        agentdesk::api::model::ItemStatus::Executed,
        "{:?}",
        done.item
    );
    let journal = c.gate_journal(None).await.unwrap();
    let records = journal["records"].as_array().unwrap();
    let last = records.last().unwrap();
    assert_eq!(last["kind"], "override", "{last}");
    assert_eq!(
        last["detail"]["overridden"],
        serde_json::json!(["max_notional_usd"])
    );
    assert_eq!(last["item"], serde_json::json!(done.item.id));
}

/// What the console matches its own tool call to on a gateway (README "A console on a gateway"):
/// the gateway's item of kind `tool:<name>` carries the console key's fingerprint, the tool's name
/// and the arguments exactly as the console sent them; the token's re-submission is refused until
/// that item is approved, and approving it through the supervisor API runs the tool.
#[tokio::test]
async fn a_tool_call_of_the_console_is_listed_as_its_own_item_and_runs_when_that_is_approved() {
    let s = setup().await;
    let c = console(&s);
    let args = serde_json::to_value(long_btc(&s.sandbox.running.messenger_id)).unwrap();
    let first = c
        .execute_mcp_tool("service_place_order", args.clone())
        .await
        .unwrap();
    let token = first.result["confirmToken"].as_str().unwrap().to_string();
    let inbox = c.gate_inbox(Some("pending")).await.unwrap();
    let item = inbox
        .items
        .iter()
        .find(|i| i.kind == "tool:service_place_order")
        .unwrap_or_else(|| panic!("{inbox:?}"));
    assert_eq!(
        item.agent_fingerprint,
        s.sandbox.key(Scope::Legacy).fingerprint()
    );
    assert_eq!(item.request["name"], "service_place_order");
    assert_eq!(item.request["args"], args);
    assert!(item.proposal_id.is_none(), "{item:?}");
    let mut again = args.clone();
    again["confirmToken"] = serde_json::json!(token);
    match c.execute_mcp_tool("service_place_order", again).await {
        Err(ApiError::Forbidden { code, .. }) => assert_eq!(code, "human_approval_required"),
        other => panic!("{other:?}"),
    }
    let decided = c.gate_approve(&item.id, &[]).await.unwrap();
    assert_eq!(
        decided.item.status,
        agentdesk::api::model::ItemStatus::Executed,
        "{decided:?}"
    );
    assert_eq!(
        s.sandbox
            .legacy()
            .get_positions()
            .await
            .unwrap()
            .positions
            .len(),
        1
    );
}

#[tokio::test]
async fn the_console_client_suspends_and_resumes_an_agent_by_name() {
    let s = setup().await;
    let key = s.sandbox.key(Scope::McpMutate);
    let agent = s.agent(&key);
    let messenger = s.sandbox.running.messenger_id.clone();
    agent.propose_trade(&long_btc(&messenger)).await.unwrap();
    let store = SqliteStore::open(&s.gate_db).unwrap();
    store.name_agent(&key.fingerprint(), "alpha").await.unwrap();
    let c = console(&s);
    let answer = c
        .gate_suspend_agent("alpha", "retries the same order")
        .await
        .unwrap();
    assert!(answer.changed);
    assert_eq!(
        answer.agents[0]
            .suspension
            .as_ref()
            .map(|s| s.reason.as_str()),
        Some("retries the same order")
    );
    let listed = c.gate_agents().await.unwrap();
    let alpha = listed.agents.iter().find(|a| a.agent == "alpha").unwrap();
    assert_eq!(
        alpha.state,
        agentdesk::api::model::GateAgentState::Suspended
    );
    match agent.propose_trade(&long_btc(&messenger)).await {
        Err(ApiError::Forbidden { code, message }) => {
            assert_eq!(code, "agent_suspended");
            assert!(message.contains("alpha"), "{message}");
        }
        other => panic!("a suspended agent staged: {other:?}"),
    }
    let answer = c.gate_resume_agent("alpha").await.unwrap();
    assert!(answer.changed && answer.agents[0].suspension.is_none());
    agent.propose_trade(&long_btc(&messenger)).await.unwrap();
    match c.gate_resume_agent("nobody").await {
        Err(ApiError::NotFound { .. }) => {}
        other => panic!("an unknown agent resumed: {other:?}"),
    }
}
