//! What every store must do, run against each: SQLite always, PostgreSQL when
//! `AGENTDESK_TEST_PG` names a server (each test in a fresh schema, so tests run in parallel).

use super::*;
use crate::gateway::model::journal;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;

pub const TEST_PG: &str = "AGENTDESK_TEST_PG";

/// Where a test's store lives; `open` may be called again to stand for a restart or a second
/// instance.
enum Backend {
    Sqlite(PathBuf, #[allow(dead_code)] Arc<tempfile::TempDir>),
    Postgres(String),
}

impl Backend {
    fn sqlite() -> Backend {
        let dir = tempfile::tempdir().unwrap();
        Backend::Sqlite(dir.path().join("g.db"), Arc::new(dir))
    }

    /// A fresh schema on the test server, or None (and the skip said) without one.
    async fn postgres(test: &str) -> Option<Backend> {
        let Some(base) = std::env::var(TEST_PG).ok().filter(|v| !v.is_empty()) else {
            // Past the test harness's capture, so the skip shows in a passing run.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "skipped: {test}: {TEST_PG} not set");
            return None;
        };
        Some(Backend::Postgres(fresh_schema(&base).await))
    }

    async fn open(&self) -> Arc<dyn Store> {
        match self {
            Backend::Sqlite(path, _) => Arc::new(SqliteStore::open(path).unwrap()),
            Backend::Postgres(url) => Arc::new(PostgresStore::connect(url).await.unwrap()),
        }
    }
}

pub async fn fresh_schema(base: &str) -> String {
    super::postgres::fresh_schema(base, "t")
        .await
        .unwrap_or_else(|e| panic!("{TEST_PG}: {e}"))
}

fn item(id: &str, proposal: &str, at: DateTime<Utc>) -> Item {
    Item {
        id: id.into(),
        agent: "ab".repeat(32),
        account: None,
        kind: "trade".into(),
        exec: Exec::Confirm,
        proposal_id: Some(proposal.into()),
        confirm_token: None,
        request: json!({"a": "BTCUSDT"}),
        preview: json!({"coin": "BTC"}),
        expires_at: at + chrono::Duration::minutes(5),
        created_at: at,
        status: Status::Pending,
        decided_at: None,
        decided_by: None,
        reason: None,
        result: None,
        note: None,
        notional: Some(2000.0),
        verdicts: Some(Vec::new()),
        standing: None,
        approvals: Vec::new(),
        approvals_required: 1,
        staged_by: None,
    }
}

fn t0() -> DateTime<Utc> {
    "2026-06-01T12:00:00Z".parse().unwrap()
}

async fn one_item_per_proposal_one_winner_per_transition_and_expiry(b: Backend) {
    let t0 = t0();
    let store = b.open().await;
    assert!(store.insert_item(item("gi_1", "p1", t0)).await.unwrap());
    assert!(!store.insert_item(item("gi_2", "p1", t0)).await.unwrap());
    assert!(store.insert_item(item("gi_3", "p3", t0)).await.unwrap());

    let approve = || Transition {
        unexpired_at: Some(t0),
        decided_by: Some("alice".into()),
        ..Transition::new(&[Status::Pending], Status::Approved, t0)
    };
    assert!(store.transition("gi_1", approve()).await.unwrap());
    assert!(!store.transition("gi_1", approve()).await.unwrap());
    let claim = || Transition::new(&[Status::Approved], Status::Executing, t0);
    assert!(store.transition("gi_1", claim()).await.unwrap());
    assert!(!store.transition("gi_1", claim()).await.unwrap());
    let got = store.item(ItemRef::Proposal("p1")).await.unwrap().unwrap();
    assert_eq!(
        (got.status, got.decided_by.as_deref()),
        (Status::Executing, Some("alice"))
    );
    assert_eq!(got.decided_at, Some(t0));
    assert_eq!(got.request, json!({"a": "BTCUSDT"}));

    // A claim younger than the cut-off is a live instance's: left alone.
    let reopened = b.open().await;
    assert_eq!(
        reopened
            .recover_executing("again".into(), Some(t0))
            .await
            .unwrap(),
        0
    );
    // A restart puts an interrupted execution back to approved; expiry takes pending ones.
    drop(store);
    assert_eq!(
        reopened
            .recover_executing("again".into(), None)
            .await
            .unwrap(),
        1
    );
    let later = t0 + chrono::Duration::minutes(6);
    assert_eq!(reopened.expire_due(later).await.unwrap(), 2);
    let all = reopened.items(None, 10).await.unwrap();
    assert_eq!(all.len(), 2);
    assert!(all.iter().all(|i| i.status == Status::Expired));
    // Newest first, by insertion when the times are equal.
    assert_eq!(all[0].id, "gi_3");
    assert_eq!(reopened.items(Some(Status::Pending), 10).await.unwrap(), []);
    // What /metrics reports, counted by the database.
    let counts = reopened.counts().await.unwrap();
    assert_eq!(counts.items, [("expired".to_string(), 2)]);
    assert!(
        counts.journal.contains(&("expire".to_string(), 2)),
        "{:?}",
        counts.journal
    );
}

async fn two_instances_appending_at_once_keep_one_chain_and_expiry_is_journaled(b: Backend) {
    let t0 = t0();
    // Two connections to one database stand for two gateways sharing it.
    let (a, bb) = (b.open().await, b.open().await);
    let appends = (0..40).map(|i| {
        let store = if i % 2 == 0 { a.clone() } else { bb.clone() };
        tokio::spawn(async move {
            let r = Record::new("approve", "alice", t0, json!({"n": i}));
            store.append(r).await.unwrap()
        })
    });
    for joined in futures::future::join_all(appends).await {
        joined.unwrap();
    }
    assert!(a.insert_item(item("gi_1", "p1", t0)).await.unwrap());
    // Both expire at once: the item is expired, and journaled, once.
    let later = t0 + chrono::Duration::minutes(6);
    let (x, y) = tokio::join!(a.expire_due(later), bb.expire_due(later));
    assert_eq!(x.unwrap() + y.unwrap(), 1);
    let rows = a.journal(0, 1000).await.unwrap();
    assert_eq!(journal::verify(&rows), Ok(41));
    let last = rows.last().unwrap();
    assert_eq!(
        (last.kind.as_str(), last.item.as_deref()),
        ("expire", Some("gi_1"))
    );
}

async fn state_tokens_agents_and_standing_approvals_round_trip(b: Backend) {
    let t0 = t0();
    let store = b.open().await;
    assert_eq!(store.state("kill_switch").await.unwrap(), None);
    let on = json!({"on": true, "reason": "incident"});
    store
        .set_state(
            "kill_switch",
            on.clone(),
            Record::new("kill_switch_on", "alice", t0, json!({})),
        )
        .await
        .unwrap();
    assert_eq!(store.state("kill_switch").await.unwrap(), Some(on));

    let id = store
        .add_token("hash1", "alice", Role::Approver, t0)
        .await
        .unwrap();
    let token = store.token("hash1").await.unwrap().unwrap();
    assert_eq!(
        (token.id, token.label.as_str(), token.role),
        (id, "alice", Role::Approver)
    );
    assert_eq!(store.token("nope").await.unwrap(), None);

    let agent = store
        .agent_seen(&"ab".repeat(32), "abababab", t0)
        .await
        .unwrap();
    assert_eq!((agent.first_seen, agent.name.as_deref()), (t0, None));
    assert_eq!(store.name_agent("ABABABAB", "scalper").await.unwrap(), 1);
    assert_eq!(store.name_agent("cdcdcdcd", "none").await.unwrap(), 0);
    store
        .set_agent_account(&agent.key_hash, "acct-1")
        .await
        .unwrap();
    let agents = store.agents().await.unwrap();
    assert_eq!(agents[0].label(), "scalper");
    assert_eq!(agents[0].account.as_deref(), Some("acct-1"));

    store
        .add_executed(&agent.key_hash, t0, 1500.0)
        .await
        .unwrap();
    store
        .add_executed(&agent.key_hash, t0 + chrono::Duration::hours(1), 500.0)
        .await
        .unwrap();
    let since = store.executed_since(&agent.key_hash, t0 + chrono::Duration::minutes(1));
    assert_eq!(since.await.unwrap(), 500.0);
    let count = |at| store.executions_since(&agent.key_hash, at);
    assert_eq!(count(t0).await.unwrap(), 2);
    assert_eq!(count(t0 + chrono::Duration::minutes(1)).await.unwrap(), 1);
    assert_eq!(count(t0 + chrono::Duration::hours(2)).await.unwrap(), 0);
    store.add_executed("other", t0, 250.0).await.unwrap();
    let mut by_agent = store.executed_by_agent(t0).await.unwrap();
    by_agent.sort_by(|a, b| a.agent.cmp(&b.agent));
    let want = |agent: &str, count, notional| Executed {
        agent: agent.into(),
        count,
        notional,
    };
    assert_eq!(
        by_agent,
        [want(&agent.key_hash, 2, 2000.0), want("other", 1, 250.0)]
    );
    let later = store.executed_by_agent(t0 + chrono::Duration::minutes(1));
    assert_eq!(later.await.unwrap(), [want(&agent.key_hash, 1, 500.0)]);

    let standing = Standing {
        id: 0,
        agent: "*".into(),
        coins: vec!["BTC".into()],
        max_notional_usd: 5000.0,
        expires_at: t0 + chrono::Duration::hours(1),
        reason: "quiet market".into(),
        created_by: "alice".into(),
        created_at: t0,
        revoked_at: None,
    };
    let sid = store
        .add_standing(
            standing,
            Record::new("standing_approval_add", "alice", t0, json!({})),
        )
        .await
        .unwrap();
    let live = store.standings(t0).await.unwrap();
    assert_eq!(
        (live.len(), live[0].id, live[0].coins.clone()),
        (1, sid, vec!["BTC".to_string()])
    );
    let revoke = || Record::new("standing_approval_revoke", "alice", t0, json!({}));
    assert!(store.revoke_standing(sid, revoke()).await.unwrap());
    assert!(!store.revoke_standing(sid, revoke()).await.unwrap());
    assert_eq!(store.standings(t0).await.unwrap(), []);
    let rows = store.journal(0, 100).await.unwrap();
    assert_eq!(journal::verify(&rows), Ok(3));
    assert_eq!(rows[1].detail, json!({"id": sid}).to_string());
}

async fn a_link_is_spent_once_given_back_and_survives_a_reopen(b: Backend) {
    let t0 = t0();
    let link = Link {
        token_hash: "cd".repeat(32),
        item_id: "gi_1".into(),
        label: "alice".into(),
        csrf: "c".into(),
        expires_at: t0 + chrono::Duration::minutes(5),
        created_at: t0,
        spent_at: None,
    };
    {
        let store = b.open().await;
        store.insert_link(link.clone()).await.unwrap();
        assert_eq!(
            store.link(&link.token_hash).await.unwrap(),
            Some(link.clone())
        );
        assert_eq!(store.link("ef").await.unwrap(), None);
        let spends =
            futures::future::join_all((0..20).map(|_| store.spend_link(&link.token_hash, t0)))
                .await;
        assert_eq!(
            spends.into_iter().filter(|r| *r.as_ref().unwrap()).count(),
            1
        );
        store.unspend_link(&link.token_hash).await.unwrap();
        assert!(store.spend_link(&link.token_hash, t0).await.unwrap());
        assert!(!store.spend_link("ef", t0).await.unwrap());
    }
    let store = b.open().await;
    let read = store.link(&link.token_hash).await.unwrap().unwrap();
    assert_eq!(read.spent_at, Some(t0));
    assert!(!store.spend_link(&link.token_hash, t0).await.unwrap());
}

/// One SQLite test and one PostgreSQL test per case.
macro_rules! both {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test]
            async fn $case() {
                super::$case(super::Backend::sqlite()).await;
            })*
        }
        mod postgres {
            $(#[tokio::test]
            async fn $case() {
                if let Some(b) = super::Backend::postgres(concat!("store::postgres::", stringify!($case))).await {
                    super::$case(b).await;
                }
            })*
        }
    };
}

async fn a_listing_sends_only_rows_not_held_and_every_write_moves_their_revision(b: Backend) {
    let t0 = t0();
    let store = b.open().await;
    for (i, id) in ["gi_1", "gi_2", "gi_3"].into_iter().enumerate() {
        let at = t0 + chrono::Duration::seconds(i as i64);
        assert!(store.insert_item(item(id, id, at)).await.unwrap());
    }
    let nothing: Held = Arc::new(|_, _| false);
    let first = store.listing(None, 10, nothing.clone()).await.unwrap();
    let rows: Vec<Item> = first.iter().map(|l| l.item.clone().unwrap()).collect();
    assert_eq!(rows, store.items(None, 10).await.unwrap());
    let revs: std::collections::HashMap<String, i64> =
        first.iter().map(|l| (l.id.clone(), l.rev)).collect();
    let held: Held = {
        let revs = revs.clone();
        Arc::new(move |id, rev| revs.get(id) == Some(&rev))
    };
    let again = store.listing(None, 10, held.clone()).await.unwrap();
    assert!(again.iter().all(|l| l.item.is_none()), "{again:?}");
    let ids = |l: &[Listed]| l.iter().map(|l| l.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&again), ["gi_3", "gi_2", "gi_1"]);
    assert_eq!(
        ids(&store
            .listing(Some(Status::Pending), 2, nothing.clone())
            .await
            .unwrap()),
        ["gi_3", "gi_2"]
    );

    // Another connection's or instance's write moves the revision of the rows it changed, and
    // of those only: a cache keyed on it sees every change, whoever made it.
    let other = b.open().await;
    let changed = |l: Vec<Listed>| {
        l.into_iter()
            .filter_map(|l| l.item.map(|i| (i.id, i.status)))
            .collect::<Vec<_>>()
    };
    let approve = Transition::new(&[Status::Pending], Status::Approved, t0);
    assert!(other.transition("gi_1", approve).await.unwrap());
    assert_eq!(
        changed(store.listing(None, 10, held.clone()).await.unwrap()),
        [("gi_1".to_string(), Status::Approved)]
    );
    assert!(
        other
            .set_agent_account(&"ab".repeat(32), "acct")
            .await
            .is_ok()
    );
    let after = store.listing(None, 10, held.clone()).await.unwrap();
    assert!(
        after
            .iter()
            .all(|l| l.item.as_ref().unwrap().account.as_deref() == Some("acct"))
    );
    let revs: std::collections::HashMap<String, i64> =
        after.iter().map(|l| (l.id.clone(), l.rev)).collect();
    let held: Held = Arc::new(move |id, rev| revs.get(id) == Some(&rev));
    let claim = Transition::new(&[Status::Approved], Status::Executing, t0);
    assert!(other.transition("gi_1", claim).await.unwrap());
    assert_eq!(
        other.recover_executing("again".into(), None).await.unwrap(),
        1
    );
    assert_eq!(
        changed(store.listing(None, 10, held.clone()).await.unwrap()),
        [("gi_1".to_string(), Status::Approved)]
    );

    // The soonest expiry of what is still open, then what expiring it changed.
    assert_eq!(
        store.next_expiry().await.unwrap(),
        Some(t0 + chrono::Duration::minutes(5))
    );
    let reject = Transition::new(&[Status::Pending], Status::Rejected, t0);
    assert!(other.transition("gi_2", reject).await.unwrap());
    assert_eq!(
        other
            .expire_due(t0 + chrono::Duration::minutes(6))
            .await
            .unwrap(),
        2
    );
    assert_eq!(store.next_expiry().await.unwrap(), None);
    let mut expired = changed(store.listing(None, 10, held).await.unwrap());
    expired.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        expired,
        [
            ("gi_1".to_string(), Status::Expired),
            ("gi_2".to_string(), Status::Rejected),
            ("gi_3".to_string(), Status::Expired)
        ]
    );
}

/// Two instances suspend one agent at once: one suspension, one record, the first reason; the
/// other instance reads it at once, and a reopened store still has it until a resume ends it.
async fn a_suspension_is_made_once_seen_by_every_instance_and_outlives_a_reopen(b: Backend) {
    let t0 = t0();
    let (a, other) = (b.open().await, b.open().await);
    let agent = "ab".repeat(32);
    let suspension = |by: &str| Suspension {
        agent: agent.clone(),
        reason: format!("{by} saw it loop"),
        by: by.into(),
        at: t0,
    };
    let record = |kind: &str, by: &str| Record::new(kind, by, t0, json!({"agent": "ab"}));
    let (x, y) = tokio::join!(
        a.suspend(suspension("alice"), record("agent_suspend", "alice")),
        other.suspend(suspension("bob"), record("agent_suspend", "bob"))
    );
    assert_eq!([x.unwrap(), y.unwrap()].iter().filter(|s| **s).count(), 1);
    let seen = other.suspensions(Some(&agent)).await.unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].reason, format!("{} saw it loop", seen[0].by));
    assert_eq!((seen[0].agent.as_str(), seen[0].at), (agent.as_str(), t0));
    assert_eq!(a.suspensions(Some(&"cd".repeat(32))).await.unwrap(), []);
    assert_eq!(a.suspensions(None).await.unwrap(), seen);
    let journal = a.journal(0, 100).await.unwrap();
    assert_eq!(journal.len(), 1);
    assert_eq!(journal[0].actor, seen[0].by);
    drop((a, other));

    let store = b.open().await;
    assert_eq!(store.suspensions(None).await.unwrap(), seen);
    assert!(
        !store
            .resume(&"cd".repeat(32), record("agent_resume", "carol"))
            .await
            .unwrap()
    );
    assert!(
        store
            .resume(&agent, record("agent_resume", "carol"))
            .await
            .unwrap()
    );
    assert!(
        !store
            .resume(&agent, record("agent_resume", "carol"))
            .await
            .unwrap()
    );
    assert_eq!(store.suspensions(None).await.unwrap(), []);
    let rows = store.journal(0, 100).await.unwrap();
    assert_eq!(journal::verify(&rows), Ok(2));
    assert_eq!(
        (rows[1].kind.as_str(), rows[1].actor.as_str()),
        ("agent_resume", "carol")
    );
    // Suspended again after the resume: a new suspension, with its own reason.
    assert!(
        store
            .suspend(suspension("dave"), record("agent_suspend", "dave"))
            .await
            .unwrap()
    );
    assert_eq!(store.suspensions(Some(&agent)).await.unwrap()[0].by, "dave");
}

/// Approvals are written only onto the approvals they were read with: of two instances adding
/// one each from the same read, one misses and reads again; the one that reaches the quorum is
/// the write that moves the item, and the required count never goes down.
async fn approvals_are_added_only_onto_what_was_read_and_the_last_one_moves_the_item(b: Backend) {
    use crate::api::model::GateApproval;
    let t0 = t0();
    let (a, other) = (b.open().await, b.open().await);
    let staged = Item {
        approvals_required: 2,
        staged_by: Some("carol".into()),
        ..item("gi_q", "pq", t0)
    };
    assert!(a.insert_item(staged).await.unwrap());
    let by = |name: &str| GateApproval {
        by: name.into(),
        at: t0,
        overrides: Vec::new(),
    };
    let add = |seen: usize, now: Vec<GateApproval>, to: Status, required: u32| Transition {
        unexpired_at: Some(t0),
        approvals: Some(Approvals {
            seen,
            now,
            required,
        }),
        ..Transition::new(&[Status::Pending], to, t0)
    };
    assert!(
        a.transition("gi_q", add(0, vec![by("alice")], Status::Pending, 1))
            .await
            .unwrap()
    );
    // Bob's approval was read before Alice's landed: it misses.
    assert!(
        !other
            .transition("gi_q", add(0, vec![by("bob")], Status::Pending, 2))
            .await
            .unwrap()
    );
    let read = other
        .item(ItemRef::IdOrProposal("gi_q"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.approvals, [by("alice")]);
    assert_eq!(
        read.approvals_required, 2,
        "an approval never asks for fewer"
    );
    assert_eq!(read.staged_by.as_deref(), Some("carol"));
    assert!(
        other
            .transition(
                "gi_q",
                add(1, vec![by("alice"), by("bob")], Status::Executing, 3)
            )
            .await
            .unwrap()
    );
    let done = a
        .item(ItemRef::IdOrProposal("gi_q"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.status, Status::Executing);
    assert_eq!(done.approvals, [by("alice"), by("bob")]);
    assert_eq!(done.approvals_required, 3);
}

both!(
    one_item_per_proposal_one_winner_per_transition_and_expiry,
    a_listing_sends_only_rows_not_held_and_every_write_moves_their_revision,
    two_instances_appending_at_once_keep_one_chain_and_expiry_is_journaled,
    state_tokens_agents_and_standing_approvals_round_trip,
    a_link_is_spent_once_given_back_and_survives_a_reopen,
    a_suspension_is_made_once_seen_by_every_instance_and_outlives_a_reopen,
    approvals_are_added_only_onto_what_was_read_and_the_last_one_moves_the_item,
);

#[tokio::test]
async fn a_postgres_schema_from_a_newer_agentdesk_is_refused() {
    let Some(b) = Backend::postgres("a_postgres_schema_from_a_newer_agentdesk_is_refused").await
    else {
        return;
    };
    let Backend::Postgres(url) = &b else {
        unreachable!()
    };
    drop(b.open().await);
    let (client, _conn) = super::postgres::tls::connect(url).await.unwrap();
    client
        .batch_execute("INSERT INTO schema_migrations (version) VALUES (99)")
        .await
        .unwrap();
    let err = PostgresStore::connect(url).await.err().unwrap();
    assert!(
        matches!(err, super::StoreError::NewerSchema { found: 99, .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("newer than this agentdesk"),
        "{err}"
    );
}

/// PostgreSQL's transition sends its statements ahead of their answers, with a transaction of its
/// own: one given up on the way (the supervisor's connection closed) must leave no transaction
/// open and no lock held on a connection another caller gets next.
#[tokio::test]
async fn a_postgres_transition_given_up_mid_way_leaves_nothing_held() {
    let Some(b) =
        Backend::postgres("a_postgres_transition_given_up_mid_way_leaves_nothing_held").await
    else {
        return;
    };
    let Backend::Postgres(url) = &b else {
        unreachable!()
    };
    let t0 = t0();
    let store = b.open().await;
    for (id, p) in [("gi_1", "p1"), ("gi_2", "p2")] {
        assert!(store.insert_item(item(id, p, t0)).await.unwrap());
    }
    let approve = |id: &str| {
        let record = Record::new("approve", "alice", t0, json!({})).item(id);
        Transition {
            decided_by: Some("alice".into()),
            ..Transition::new(&[Status::Pending], Status::Approved, t0)
        }
        .journaled(record)
    };
    // Another instance holds the chain's head, so the transition stops where it waits for it:
    // its item's row moved and locked, its transaction open.
    let (holder, conn) = super::postgres::tls::connect(url).await.unwrap();
    tokio::spawn(conn);
    holder
        .batch_execute("START TRANSACTION; SELECT seq FROM journal_head FOR UPDATE")
        .await
        .unwrap();
    {
        let mut abandoned = store.transition("gi_1", approve("gi_1"));
        for _ in 0..40 {
            assert!(futures::poll!(&mut abandoned).is_pending());
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }
    holder.batch_execute("COMMIT").await.unwrap();
    // The store's next caller, on the same pool, moves another item and appends to the chain.
    let moved = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        store.transition("gi_2", approve("gi_2")),
    )
    .await
    .expect("nothing left held by the transition given up");
    assert!(moved.unwrap());
    let gi_1 = store
        .item(ItemRef::IdOrProposal("gi_1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(gi_1.status, Status::Pending, "rolled back whole");
    let rows = store.journal(0, 100).await.unwrap();
    assert_eq!(journal::verify(&rows), Ok(1));
    assert_eq!(rows[0].item.as_deref(), Some("gi_2"));
}
