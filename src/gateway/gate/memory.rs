//! What the gate keeps in memory of the flow's own work, so that an inbox asked every second by
//! each console is not derived and written again on every ask. Containers only: what goes in them
//! and when it is stale is [`crate::gateway::flow::items`]'s and [`crate::gateway::flow::listing`]'s.

use crate::api::model::{GateTrade, GateVerdict};
use bytes::Bytes;
use chrono::{DateTime, Utc};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

/// What an item's model derives from its stored request, preview and verdicts, by item id.
/// Those three are written once, when the item is staged, and never changed, so what comes of
/// them holds for the item's life.
#[derive(Default)]
pub struct Derived {
    by_id: Mutex<HashMap<String, Arc<Derivation>>>,
}

/// The trade that will execute (or why there is none), the digest an approval binds to, and the
/// typed verdicts of one item.
pub struct Derivation {
    pub trade: Option<GateTrade>,
    pub trade_error: Option<String>,
    pub digest: String,
    pub verdicts: Vec<GateVerdict>,
}

/// Past this many items the memory starts over rather than grow with every item ever listed.
const DERIVED_MAX: usize = 50_000;

impl Derived {
    /// The item's derivation, made with `derive` the first time it is asked for.
    pub fn get_or_derive(&self, id: &str, derive: impl FnOnce() -> Derivation) -> Arc<Derivation> {
        let lock = || self.by_id.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(d) = lock().get(id) {
            return d.clone();
        }
        // Derived outside the lock: a strict re-reading of a request is the slow part, and two
        // listings deriving the same item at once both get an equal answer.
        let d = Arc::new(derive());
        let mut map = lock();
        if map.len() >= DERIVED_MAX {
            map.clear();
        }
        map.insert(id.to_string(), d.clone());
        d
    }
}

/// Items kept per generation, several times every status's first page; when one fills, the older
/// generation goes, so what is no longer listed does not stay.
const GENERATION: usize = 4_000;

/// Each listed item's JSON, by item id.
#[derive(Default)]
pub struct Listings {
    kept: Mutex<Generations>,
}

#[derive(Default)]
struct Generations {
    current: HashMap<String, Arc<Written>>,
    previous: HashMap<String, Arc<Written>>,
}

/// An item's JSON and what it was written from, besides the row's content.
pub struct Written {
    pub rev: i64,
    /// The agent's key hash, and the label the JSON shows for it.
    pub agent: String,
    pub label: String,
    /// For an approved item without a hold: whether the gateway held the agent's key.
    pub key_held: Option<bool>,
    pub json: Bytes,
}

impl Generations {
    fn get(&mut self, id: &str) -> Option<Arc<Written>> {
        if let Some(w) = self.current.get(id) {
            return Some(w.clone());
        }
        let w = self.previous.remove(id)?;
        self.put(id.to_string(), w.clone());
        Some(w)
    }

    fn put(&mut self, id: String, w: Arc<Written>) {
        if self.current.len() >= GENERATION && !self.current.contains_key(&id) {
            self.previous = std::mem::take(&mut self.current);
        }
        self.current.insert(id, w);
    }
}

impl Listings {
    fn lock(&self) -> MutexGuard<'_, Generations> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, id: &str) -> Option<Arc<Written>> {
        self.lock().get(id)
    }

    pub fn put(&self, id: String, written: Written) {
        self.lock().put(id, Arc::new(written));
    }
}

#[cfg(test)]
impl Listings {
    pub fn newest_generation_len(&self) -> usize {
        self.lock().current.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_older_generation_goes_when_the_newer_fills() {
        let mut g = Generations::default();
        let written = |rev| {
            Arc::new(Written {
                rev,
                agent: "ab".repeat(32),
                label: "x".into(),
                key_held: None,
                json: Bytes::from_static(b"{}"),
            })
        };
        for i in 0..GENERATION {
            g.put(format!("gi_{i}"), written(0));
        }
        // Asked again, an item of the older generation moves to the newer one.
        g.put("gi_new".into(), written(0));
        assert_eq!((g.previous.len(), g.current.len()), (GENERATION, 1));
        assert!(g.get("gi_0").is_some());
        assert_eq!((g.previous.len(), g.current.len()), (GENERATION - 1, 2));
        for i in 0..GENERATION {
            g.put(format!("gi_again_{i}"), written(0));
        }
        assert!(g.get("gi_0").is_some(), "kept: it was asked for");
        assert!(g.get("gi_1").is_none(), "gone: never asked for again");
    }
}

/// Agents counted before the ones with nothing in the window are dropped.
const PRUNE_FROM: usize = 1024;

/// When each agent staged or traded immediately in the last minute. In this process's memory,
/// not the store: immediate trades leave no item behind to count, and a count of its own per
/// instance costs no round trip on every staging. Instances behind one load balancer each count
/// what they saw.
#[derive(Default)]
pub struct Stagings {
    by_agent: Mutex<HashMap<String, VecDeque<DateTime<Utc>>>>,
}

impl Stagings {
    /// How many the agent made in the 60 s before `now`; with `record`, this one is added.
    pub fn count(&self, agent: &str, now: DateTime<Utc>, record: bool) -> u64 {
        let mut map = self.by_agent.lock().unwrap_or_else(|p| p.into_inner());
        let since = now - chrono::Duration::seconds(60);
        // Made-up keys cost no memory past their minute: agents with nothing in the window are
        // dropped once the map has grown.
        if map.len() >= PRUNE_FROM {
            map.retain(|_, times| times.back().is_some_and(|t| *t > since));
        }
        let n = match map.get_mut(agent) {
            Some(times) => {
                while times.front().is_some_and(|t| *t <= since) {
                    times.pop_front();
                }
                times.len() as u64
            }
            None => 0,
        };
        if record {
            map.entry(agent.to_string()).or_default().push_back(now);
        }
        n
    }
}

#[cfg(test)]
mod stagings_tests {
    use super::*;

    #[test]
    fn a_key_only_asked_about_leaves_nothing_and_idle_ones_go_once_the_map_grows() {
        let s = Stagings::default();
        let t0 = Utc::now();
        assert_eq!(s.count("nobody", t0, false), 0);
        assert!(
            s.by_agent.lock().unwrap().is_empty(),
            "asking costs no entry"
        );
        for i in 0..PRUNE_FROM {
            s.count(&format!("k{i}"), t0, true);
        }
        assert_eq!(s.count("k0", t0, false), 1);
        let later = t0 + chrono::Duration::seconds(61);
        s.count("fresh", later, true);
        let map = s.by_agent.lock().unwrap();
        assert_eq!(
            map.len(),
            1,
            "only the agent with a staging in its window is kept"
        );
        assert!(map.contains_key("fresh"));
    }
}
