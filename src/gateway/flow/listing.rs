//! The supervisor's inbox listing (`GET /gate/v1/inbox`), answered from each item's JSON as it was
//! last written. Every console asks for up to 500 items every time something changes (and at
//! least twice a minute); reading each row's JSON columns, modelling the item and writing its JSON
//! on every ask was nearly all of the answer's time with thousands of items.
//!
//! An item's JSON is written again only when what it shows changed: its row (the database moves
//! the row's revision on every change, whoever makes it, so another instance's or another
//! process's write is seen: [`Listed`]), its agent's label (a name given), or, for an approved
//! item without a note, whether this gateway holds the agent's key (the note then says it waits
//! for one). Nothing in an item's JSON is computed from the time: `expiresAt` is a timestamp, and
//! an expiry is a write, which moves the revision.

use super::items::{self, agent_map};
use crate::gateway::gate::Gate;
use crate::gateway::gate::memory::Written;
use crate::gateway::model::error::{GateError, Kind};
use crate::gateway::store::{Agent, Held, Item, Listed, Status};
use bytes::Bytes;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// What an item's JSON shows besides its row, as it is at this listing.
struct Context {
    labels: HashMap<String, String>,
    keys: HashSet<String>,
}

impl Context {
    fn label<'a>(&'a self, agent: &'a str) -> &'a str {
        match self.labels.get(agent) {
            Some(label) => label,
            None => agent.get(..8).unwrap_or(agent),
        }
    }
}

/// Whether the JSON written earlier still shows the item as it is now.
fn shows(w: &Written, rev: i64, now: &Context) -> bool {
    w.rev == rev
        && w.label == now.label(&w.agent)
        && w.key_held
            .is_none_or(|held| held == now.keys.contains(&w.agent))
}

/// Writes an item's JSON and keeps it for the next listing.
fn write(
    gate: &Gate,
    item: &Item,
    rev: i64,
    agents: &HashMap<String, Agent>,
    now: &Context,
) -> Result<Bytes, GateError> {
    let key_held = now.keys.contains(&item.agent);
    let model = items::model_with(gate, item, agents, key_held);
    let json = Bytes::from(serde_json::to_vec(&model).map_err(|e| {
        GateError::new(
            Kind::Internal,
            "internal",
            format!("an inbox item cannot be written as JSON: {e}"),
        )
    })?);
    let written = Written {
        rev,
        agent: item.agent.clone(),
        label: model.agent,
        key_held: (item.status == Status::Approved && item.note.is_none()).then_some(key_held),
        json: json.clone(),
    };
    gate.listings.put(item.id.clone(), written);
    Ok(json)
}

/// The whole answer, `{"success": true, "items": [...], "version"?}`, as the supervisor API's
/// typed answer writes it: newest first, at most `limit` items of `status` (None: every status).
pub async fn inbox(
    gate: &Gate,
    status: Option<Status>,
    limit: usize,
    version: Option<u64>,
) -> Result<Bytes, GateError> {
    let agents = agent_map(gate).await?;
    let now = Arc::new(Context {
        labels: agents
            .iter()
            .map(|(hash, a)| (hash.clone(), a.label().to_string()))
            .collect(),
        keys: gate.lock_keys().keys().cloned().collect(),
    });
    // What the store is told is held is taken at that moment, so a concurrent listing that
    // drops it from the memory cannot leave this one without it.
    let taken: Arc<Mutex<HashMap<String, Bytes>>> = Default::default();
    let held: Held = {
        let (listings, now, taken) = (gate.listings.clone(), now.clone(), taken.clone());
        Arc::new(move |id: &str, rev: i64| {
            let Some(w) = listings.get(id).filter(|w| shows(w, rev, &now)) else {
                return false;
            };
            let mut taken = taken.lock().unwrap_or_else(|p| p.into_inner());
            taken.insert(id.to_string(), w.json.clone());
            true
        })
    };
    let listed = gate
        .store
        .listing(status, limit, held)
        .await
        .map_err(GateError::store)?;
    let mut taken = std::mem::take(&mut *taken.lock().unwrap_or_else(|p| p.into_inner()));
    let mut parts = Vec::with_capacity(listed.len());
    for Listed { id, rev, item } in listed {
        parts.push(match item {
            Some(item) => write(gate, &item, rev, &agents, &now)?,
            None => taken.remove(&id).ok_or_else(|| {
                GateError::new(
                    Kind::Internal,
                    "listing_failed",
                    format!("the listing left out item {id}, which was not held"),
                )
            })?,
        });
    }
    Ok(answer(&parts, version))
}

fn answer(items: &[Bytes], version: Option<u64>) -> Bytes {
    let size = items.iter().map(Bytes::len).sum::<usize>() + items.len() + 64;
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(br#"{"success":true,"items":["#);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item);
    }
    out.push(b']');
    if let Some(v) = version {
        out.extend_from_slice(format!(r#","version":{v}"#).as_bytes());
    }
    out.push(b'}');
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::model::GateInbox;
    use crate::gateway::store::{Exec, SqliteStore, Store, Transition};
    use crate::gateway::{GateConfig, GateDb, Gateway, Running};
    use crate::secret::Secret;
    use chrono::{DateTime, Duration, Utc};
    use serde_json::json;

    const STATUSES: [Option<Status>; 5] = [
        None,
        Some(Status::Pending),
        Some(Status::Approved),
        Some(Status::Rejected),
        Some(Status::Expired),
    ];

    /// The answer as the typed answer writes it, every row read and modelled afresh: what the
    /// listing answered before it kept anything.
    async fn fresh(gate: &Gate, status: Option<Status>) -> String {
        #[derive(serde::Serialize)]
        struct Success<T> {
            success: bool,
            #[serde(flatten)]
            body: T,
        }
        let agents = agent_map(gate).await.unwrap();
        let rows = gate.store.items(status, 500).await.unwrap();
        let items = rows
            .iter()
            .map(|i| items::model(gate, i, &agents))
            .collect();
        let body = GateInbox {
            items,
            version: Some(7),
        };
        serde_json::to_string(&Success {
            success: true,
            body,
        })
        .unwrap()
    }

    /// Every status listed twice (the second from what the first kept), each byte for byte what
    /// a fresh build answers.
    async fn same_as_fresh(gate: &Gate, when: &str) {
        for status in STATUSES {
            for round in 0..2 {
                let kept = inbox(gate, status, 500, Some(7)).await.unwrap();
                assert_eq!(
                    std::str::from_utf8(&kept).unwrap(),
                    fresh(gate, status).await,
                    "{when}, status {status:?}, round {round}"
                );
            }
        }
    }

    fn agent(n: u8) -> String {
        format!("{n:02x}").repeat(32)
    }

    fn item(id: &str, agent: &str, at: DateTime<Utc>) -> Item {
        Item {
            id: id.into(),
            agent: agent.into(),
            account: None,
            kind: "trade".into(),
            exec: Exec::Confirm,
            proposal_id: Some(format!("prop_{id}")),
            confirm_token: None,
            request: json!({"a": "BTCUSDT", "d": "long", "o": "market", "sizeUsd": 20}),
            preview: json!({"coin": "BTC", "side": "buy", "notional": 20.0, "leverage": 2}),
            expires_at: at + Duration::minutes(5),
            created_at: at,
            status: Status::Pending,
            decided_at: None,
            decided_by: None,
            reason: None,
            result: None,
            note: None,
            notional: Some(20.0),
            verdicts: serde_json::from_value(json!([{"rule": "max_notional_usd", "ok": true,
                "limit": 100.0, "value": 20.0, "near": false, "message": "ok"}]))
            .unwrap(),
            standing: None,
            approvals: Vec::new(),
            approvals_required: 1,
            staged_by: None,
        }
    }

    async fn start(db: &std::path::Path) -> Running {
        let config = GateConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            // Nothing here goes upstream.
            "http://127.0.0.1:9",
            GateDb::File(db.to_path_buf()),
        );
        Gateway::start(config).await.unwrap()
    }

    #[tokio::test]
    async fn what_is_kept_is_what_a_fresh_listing_answers_through_every_change() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("gate.db");
        let running = start(&db).await;
        let gate = &running.gate;
        let t0 = Utc::now();
        let (a, b) = (agent(0xab), agent(0xcd));
        gate.store.agent_seen(&a, &a[..8], t0).await.unwrap();
        for (i, who) in [&a, &a, &b, &a, &b].into_iter().enumerate() {
            let at = t0 + Duration::milliseconds(i as i64);
            let staged = item(&format!("gi_{i}"), who, at);
            assert!(gate.store.insert_item(staged).await.unwrap());
        }
        same_as_fresh(gate, "staged").await;
        assert_eq!(gate.listings.newest_generation_len(), 5);

        // Approved while the gateway does not hold the key: the note says it waits for it.
        let approve = |by: &str| Transition {
            decided_by: Some(by.into()),
            ..Transition::new(&[Status::Pending], Status::Approved, t0)
        };
        assert!(
            gate.store
                .transition("gi_0", approve("alice"))
                .await
                .unwrap()
        );
        same_as_fresh(gate, "approved, no key").await;
        let key_a = (Secret::new("k".to_string()), t0);
        gate.lock_keys().insert(a.clone(), key_a);
        same_as_fresh(gate, "the key held").await;

        assert_eq!(gate.store.name_agent(&a[..8], "scalper").await.unwrap(), 1);
        same_as_fresh(gate, "an agent named").await;
        gate.store.set_agent_account(&b, "acct-b").await.unwrap();
        same_as_fresh(gate, "an account learned").await;

        let reject = Transition {
            decided_by: Some("bob".into()),
            reason: Some("too large".into()),
            ..Transition::new(&[Status::Pending], Status::Rejected, t0)
        };
        assert!(gate.store.transition("gi_1", reject).await.unwrap());
        same_as_fresh(gate, "rejected").await;

        // Another process on the file (a second gateway, `gate agent name`): its writes are
        // seen though this process counted none of them.
        let other = SqliteStore::open(&db).unwrap();
        assert!(other.transition("gi_2", approve("carol")).await.unwrap());
        assert_eq!(other.name_agent(&b[..8], "hedger").await.unwrap(), 0);
        other.agent_seen(&b, &b[..8], t0).await.unwrap();
        assert_eq!(other.name_agent(&b[..8], "hedger").await.unwrap(), 1);
        same_as_fresh(gate, "another process's writes").await;

        assert_eq!(
            gate.store
                .expire_due(t0 + Duration::minutes(6))
                .await
                .unwrap(),
            4
        );
        same_as_fresh(gate, "expired").await;
        running.shutdown().await;
    }
}
