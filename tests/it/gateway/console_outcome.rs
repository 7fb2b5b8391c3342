//! The console against a gateway whose upstream stalls past the gateway's timeout on the first
//! confirm, then executes it: the console's App, driven by its real effects runner and client,
//! shows and journals the outcome the gateway establishes (executed), never "failed", and never
//! tells the supervisor to approve again.

use super::send;
use crate::common;
use agentdesk::api::Client;
use agentdesk::console::action::{Action, Effect};
use agentdesk::console::app::{App, ServiceInfo};
use agentdesk::console::effects::Runner;
use agentdesk::console::feeds::Options;
use agentdesk::console::inbox::Status;
use agentdesk::console::keymap::Keymap;
use agentdesk::sandbox::TestClock;
use axum::response::IntoResponse;
use chrono::Utc;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const KEY: &str = "stall_agent_key_1";
const ID: &str = "stall-1";

/// A service whose first confirm executes only after `stall` (the answer comes too late for the
/// gateway); every later confirm is answered 409 "already executed", as the service answers.
async fn stalling_upstream(
    expires: chrono::DateTime<Utc>,
    stall: Duration,
) -> (String, Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    use axum::routing::{get, post};
    let confirms = Arc::new(AtomicUsize::new(0));
    let executed = Arc::new(AtomicBool::new(false));
    let counted = confirms.clone();
    let app = axum::Router::new()
        .route(
            "/api/delegated/whoami",
            get(|| async { axum::Json(json!({"success": true, "messengerId": "m-9"})) }),
        )
        .route(
            "/api/delegated/propose",
            post(move || async move {
                axum::Json(json!({"success": true, "proposalId": ID,
                                  "expiresAt": expires.to_rfc3339()}))
            }),
        )
        .route(
            "/api/delegated/confirm",
            post(move || {
                let (counted, executed) = (counted.clone(), executed.clone());
                async move {
                    if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                        // Runs on, whoever stops waiting for it: the service executes it.
                        let run = tokio::spawn(async move {
                            tokio::time::sleep(stall).await;
                            executed.store(true, Ordering::SeqCst);
                        });
                        let _ = run.await;
                        return axum::Json(json!({"success": true, "status": "executed",
                            "proposalId": ID, "execution": {"fills": [{"coin": "BTC",
                            "side": "B", "sz": "0.001", "px": "65000", "oid": 77}]}}))
                        .into_response();
                    }
                    if executed.load(Ordering::SeqCst) {
                        return (
                            StatusCode::CONFLICT,
                            axum::Json(json!({"success": false, "error": {
                                "code": "proposal_already_executed",
                                "message": "proposal already executed"}})),
                        )
                            .into_response();
                    }
                    (
                        StatusCode::SERVICE_UNAVAILABLE,
                        axum::Json(json!({"success": false, "error": {
                            "code": "busy", "message": "still working"}})),
                    )
                        .into_response()
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), confirms, task)
}

fn key(c: char) -> Action {
    Action::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

/// The console's loop without a terminal: effects run on the real runner, their answers and a
/// tick every 100 ms go to `App::update`, journal lines are kept.
struct Console {
    app: App,
    runner: Runner,
    rx: tokio::sync::mpsc::UnboundedReceiver<Action>,
    journal: Vec<Value>,
}

impl Console {
    fn apply(&mut self, fx: Vec<Effect>) {
        for e in fx {
            match e {
                Effect::Journal(line) => self.journal.push(serde_json::from_str(&line).unwrap()),
                other => self.runner.run(other),
            }
        }
    }

    fn update(&mut self, action: Action) {
        // As the event loop does: input is stamped with the wall clock.
        if matches!(action, Action::Key(_)) {
            self.app.set_clock(Utc::now());
        }
        let fx = self.app.update(action);
        self.apply(fx);
    }

    /// Runs until `done` holds, for at most `within`.
    async fn until(&mut self, within: Duration, what: &str, done: impl Fn(&App) -> bool) {
        let start = Instant::now();
        while !done(&self.app) {
            assert!(
                start.elapsed() < within,
                "{what}: not within {within:?}; toasts {:?}; journal {:?}",
                self.app
                    .messages()
                    .iter()
                    .map(|m| m.text.clone())
                    .collect::<Vec<_>>(),
                self.journal
            );
            match tokio::time::timeout(Duration::from_millis(100), self.rx.recv()).await {
                Ok(Some(action)) => self.update(action),
                _ => self.update(Action::Tick(Utc::now())),
            }
        }
    }

    fn said(&self) -> Vec<String> {
        self.app.messages().iter().map(|m| m.text.clone()).collect()
    }
}

#[tokio::test]
async fn a_stalled_upstream_that_executed_is_shown_and_journaled_executed_not_failed() {
    let now = Utc::now();
    let clock = TestClock::new(now);
    let (url, confirms, upstream) = stalling_upstream(
        now + chrono::Duration::minutes(5),
        Duration::from_millis(1500),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let gate = common::start_gateway_with(&url, &clock, &dir.path().join("g.db"), |c| {
        c.settings = agentdesk::gateway::rules::policy::GateSettings::default();
        c.settings.timeout_secs = 1;
    })
    .await;
    let token = gate.mint_token("").await.unwrap();
    let (st, body) = send(
        &gate.base_url(),
        reqwest::Method::POST,
        "/api/delegated/propose",
        Some(KEY),
        Some(json!({"a": "BTCUSDT", "d": "long", "size": 0.001})),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");

    let client = Client::new(
        &gate.base_url(),
        Some(agentdesk::secret::Secret::new("console_key_1")),
    )
    .unwrap()
    .with_gate_token(Some(token));
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let service = ServiceInfo {
        host: gate.base_url(),
        sandbox: false,
        key_fingerprint: "c0ffee00".into(),
    };
    let mut app = App::new(service, Options::default(), Keymap::default(), Utc::now());
    app.set_size(120, 40);
    let mut c = Console {
        app,
        runner: Runner {
            client,
            tx,
            journal: None,
        },
        rx,
        journal: Vec::new(),
    };
    c.update(Action::Tick(Utc::now()));
    c.until(Duration::from_secs(10), "the item is listed", |app| {
        app.item(ID)
            .is_some_and(|i| i.status(app.now()) == Status::Staged)
    })
    .await;

    // a after a quiet moment, read the dialog, y.
    c.update(key('2'));
    tokio::time::sleep(Duration::from_millis(1600)).await;
    c.update(key('a'));
    assert!(c.app.modal().is_some(), "the dialog opened: {:?}", c.said());
    tokio::time::sleep(Duration::from_millis(1100)).await;
    c.update(Action::Tick(Utc::now()));
    c.update(key('y'));
    // The approval is held while the keyboard stays quiet (any key would cancel it), then sent.
    c.until(Duration::from_secs(5), "the approval is sent", |app| {
        app.modal().is_none()
    })
    .await;

    c.until(Duration::from_secs(20), "the execution is known", |app| {
        app.item(ID)
            .is_some_and(|i| i.status(app.now()) == Status::Executed)
    })
    .await;
    // The gateway asked again and was told "already executed": one execution, on the service.
    let before = confirms.load(Ordering::SeqCst);
    assert!(before >= 2);
    let decisions: Vec<&str> = c
        .journal
        .iter()
        .map(|l| l["decision"].as_str().unwrap_or_default())
        .collect();
    assert!(!decisions.contains(&"failed"), "{:?}", c.journal);
    let executed = c
        .journal
        .iter()
        .find(|l| l["decision"] == "executed")
        .unwrap_or_else(|| panic!("no executed line: {:?}", c.journal));
    let result = executed["result"].as_str().unwrap();
    assert!(
        result.contains("executed") && !result.contains("success"),
        "said in words, not as the raw error answer: {result}"
    );
    let said = c.said().join("\n");
    assert!(!said.contains("Approving again is safe"), "{said}");
    assert!(!said.contains(" failed"), "{said}");
    // The agent's own confirm answers the recorded execution (200), not the service's 409 to
    // the attempt that found it executed.
    let (st, body) = send(
        &gate.base_url(),
        reqwest::Method::POST,
        "/api/delegated/confirm",
        Some(KEY),
        Some(json!({"proposalId": ID})),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(body["success"], true, "{body}");
    assert_eq!(body["status"], "executed", "{body}");
    assert_eq!(confirms.load(Ordering::SeqCst), before, "not sent again");
    drop(gate);
    upstream.abort();
}
