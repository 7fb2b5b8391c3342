//! What of a research run lives in memory: the lead's wake-up and its agents' cancellation flags.
//! Everything else is in SQLite.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

#[derive(Default)]
pub(super) struct Live {
    pub(super) wake: Notify,
    pub(super) cancels: Mutex<HashMap<String, Arc<AtomicBool>>>,
}

/// The runs whose lead task runs in one sandbox, by run id.
#[derive(Default)]
pub struct Runs(Mutex<HashMap<String, Arc<Live>>>);

impl Runs {
    pub(super) fn get(&self, run_id: &str) -> Option<Arc<Live>> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(run_id)
            .cloned()
    }

    pub(super) fn insert(&self, run_id: &str, live: Arc<Live>) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(run_id.to_string(), live);
    }

    pub(super) fn remove(&self, run_id: &str) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(run_id);
    }

    pub(super) fn wake(&self, run_id: &str) {
        if let Some(l) = self.get(run_id) {
            l.wake.notify_one();
        }
    }

    pub(super) fn cancel(&self, run_id: &str, agents: &[String]) {
        if let Some(l) = self.get(run_id) {
            let mut cancels = l.cancels.lock().unwrap_or_else(|e| e.into_inner());
            for a in agents {
                if let Some(flag) = cancels.remove(a) {
                    flag.store(true, Ordering::Relaxed);
                }
            }
        }
    }
}
