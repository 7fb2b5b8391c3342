//! The terminal console: terminal setup and restore, and the event loop.
//!
//! ```text
//! crossterm events ─┐
//! effect results ───┼─> Action ─> App::update ─> Vec<Effect> ─> Runner (tokio) ─> Action
//! wake-up timer ────┘                 └─> dirty? ─> draw (at most once per 16 ms)
//! ```
//! The timer sleeps until the next poll is due or the next second while a countdown is shown, so an
//! idle console does nothing in between.
//!
//! Where things are:
//! - `app.rs` App and `update`, and `app/` the rest of App's code (below); `action.rs` Actions,
//!   Effects and the answer envelope, `payload.rs` what they carry for a tab; `effects.rs` the
//!   runner; `poll.rs` the one poll schedule; `app/clock.rs` when time alone redraws.
//! - `feeds/` the account feeds; `inbox/` the approval inbox every tab can act on; `journal.rs`
//!   the decision journal's one writer and its read-back at start.
//! - `app/input.rs` the key router (modal, global keys, the tab, movement) and the mouse;
//!   `modal.rs` the one modal slot, `forms/` the forms it shows; `app/command_line.rs` the
//!   command line; `command/` its grammar.
//! - `tab.rs` the tabs by name; `tabs/<tab>/` each tab: its state (`mod.rs`), update
//!   (`update.rs`) and view (`view.rs`). `component.rs` is the contract between App and a tab:
//!   a tab is a struct with private fields and `on_key` / `on_<answer>` / `draw` methods that see
//!   the rest of the console only through `Ctx` (clock, tab on screen, quota, the shared pane
//!   cursors, effects, and `Ask`s — open a modal, toast, show a tab — that App performs after)
//!   and `Shown` (read-only, to draw). App reaches every tab through one `TabComponent` trait;
//!   Proposals is a view of the inbox, which every tab acts on: a component App keeps and
//!   routes to with an `InboxCtx` (`inbox/`, `app/inbox.rs`).
//!   `app/route.rs` is App's side of a component where an answer or command reaches past one tab
//!   (the shared inbox, the feeds, a form that reads another tab's data).
//! - `view.rs` the frame around the tabs; `help.rs`; `widgets/`; `layout.rs`; `keymap.rs`;
//!   `theme.rs`; `suggest.rs` "did you mean".
//!
//! Layers: every dependency between folders points down, so no import cycle spans two folders
//! (`tests/it/structure.rs`). The lower layer — `action`, `payload`, `poll`, `journal`, `tab`,
//! `layout`, `component`, `modal`, `forms/`, `command/`, `keymap`, `theme`, `widgets/` and the
//! data of `feeds/`, and `inbox/` with the gateway's data in `gate/` — never imports `app.rs` or
//! `tabs/`; a tab's state and update import only that layer; `app.rs` composes the shared state
//! and the tabs and routes to them, and `app/`, `view.rs` and this file sit on top. App's fields
//! are private: what changes them is App's own code, `app.rs` and `app/` (the feeds' answers,
//! the routes to the inbox, the gateway's guard, the key router, the command line, the Signals
//! modals, the routes between tabs), and the components App routes to with a context (the tabs,
//! the inbox); the rest of the console reads them through App's accessors (the frame, the views
//! of the inbox and the account — `desk/view.rs`, `proposals/`, the Signals overlays).
/// Calls a component tab's entry point with a fresh [`component::Ctx`] over App's shared state,
/// then performs what it asked: `with_ctx!(self, fx, |ctx| self.tabs.chat.send(text, ctx))`. The
/// one way a Ctx is made. A macro, not a method of App, so the tab's field and the pane cursors
/// the Ctx borrows are borrowed apart, as gitui's components are called with their queue.
macro_rules! with_ctx {
    ($app:ident, $fx:expr, |$ctx:ident| $call:expr) => {{
        let mut ctx = $crate::console::component::Ctx::new(
            $app.now,
            $app.tab,
            $app.quota_until,
            &mut $app.selected,
            &$app.tables,
        );
        let $ctx = &mut ctx;
        let out = $call;
        let done = ctx.finish();
        $app.perform(done, $fx);
        out
    }};
}

/// Calls the approval inbox with an [`inbox::context::InboxCtx`], then performs what it asked: the
/// one way App calls the inbox to change it, as `with_ctx!` is for a tab.
macro_rules! with_inbox {
    ($app:ident, $fx:expr, |$inbox:ident, $ctx:ident| $call:expr) => {{
        let mut ctx = $crate::console::inbox::context::InboxCtx::new(
            $crate::console::component::Ctx::new(
                $app.now,
                $app.tab,
                $app.quota_until,
                &mut $app.selected,
                &$app.tables,
            ),
            &$app.account,
            &$app.service,
            $app.options.bell,
            $app.feeds[&$crate::console::action::Resource::Proposals].supported,
        );
        let $inbox = &mut $app.inbox;
        let $ctx = &mut ctx;
        let out = $call;
        let done = ctx.finish();
        $app.perform(done, $fx);
        out
    }};
}

pub mod action;
pub mod app;
pub mod command;
pub mod component;
pub mod decider;
pub mod deliberate;
pub mod effects;
pub mod feeds;
pub mod forms;
pub mod gate;
pub mod help;
pub mod inbox;
pub mod journal;
pub mod keymap;
pub mod layout;
pub mod modal;
pub mod payload;
pub mod poll;
pub mod readline;
pub mod suggest;
pub mod tab;
pub mod table;
pub mod tabs;
pub mod theme;
pub mod view;
pub mod widgets;

use crate::api::Client;
use crate::config::{ConsoleConfig, Service};
use crate::secret::Secret;
use action::{Action, Effect};
use app::{App, ServiceInfo};
use chrono::Utc;
use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture, Event,
};
use crossterm::execute;
use feeds::Options;
use keymap::Keymap;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use theme::Theme;
use tokio::sync::mpsc;

const FRAME: Duration = Duration::from_millis(16);

/// Everything the console needs before the terminal is taken over; failures here print plainly.
pub struct Prepared {
    pub client: Client,
    pub service: ServiceInfo,
    pub options: Options,
    pub keymap: Keymap,
    pub theme: Theme,
    pub journal: Option<std::path::PathBuf>,
    /// The "Connect an agent" panel, when the console runs on the embedded gateway.
    pub connect: Option<gate::ConnectInfo>,
    /// The journal's last decisions, newest first, for the Decisions pane.
    pub history: Vec<inbox::Decision>,
    pub warnings: Vec<String>,
}

/// The embedded picture (sandbox, gateway, demo agent) as the console sees it: a gateway's URL, a
/// key and a supervisor token. Started by the caller (`crate::embedded`, from `main.rs`), so the
/// console never starts a server.
pub struct Attach {
    /// The gateway's base URL.
    pub base_url: String,
    /// The console's own key on the sandbox's account, sent through the gateway.
    pub api_key: Secret,
    /// A supervisor token of the gateway, for `/gate/v1`.
    pub gate_token: Secret,
    pub connect: gate::ConnectInfo,
}

/// Why the console did not start: a file named in the config, or no service to talk to.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error("cannot read keymap {}: {source}", .path.display())]
    ReadKeymap {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("keymap {}: {source}", .path.display())]
    Keymap {
        path: PathBuf,
        source: keymap::KeymapError,
    },
    #[error(transparent)]
    Theme(#[from] theme::ThemeError),
    #[error("cannot read theme {}: {source}", .path.display())]
    ReadTheme {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("theme {}: {source}", .path.display())]
    ThemeFile {
        path: PathBuf,
        source: theme::ThemeError,
    },
    #[error("{0}")]
    Client(#[from] crate::api::ApiError),
    #[error("no service configured and the embedded sandbox was not started")]
    NoService,
}

/// Why the console stopped other than by the user's quitting: the terminal failed.
#[derive(Debug, thiserror::Error)]
pub enum TerminalError {
    #[error("cannot draw: {0}")]
    Draw(std::io::Error),
    #[error("terminal input failed: {0}")]
    Input(std::io::Error),
}

pub async fn prepare(
    config: &ConsoleConfig,
    embedded: Option<Attach>,
) -> Result<Prepared, PrepareError> {
    let keymap = match &config.keymap_file {
        None => Keymap::default(),
        Some(path) => {
            let text =
                std::fs::read_to_string(path).map_err(|source| PrepareError::ReadKeymap {
                    path: path.clone(),
                    source,
                })?;
            Keymap::from_toml(&text).map_err(|source| PrepareError::Keymap {
                path: path.clone(),
                source,
            })?
        }
    };
    let mut theme = if theme::no_color_requested() {
        Theme::monochrome()
    } else {
        Theme::named(&config.theme)?
    };
    if let Some(path) = &config.theme_file
        && !theme::no_color_requested()
    {
        let text = std::fs::read_to_string(path).map_err(|source| PrepareError::ReadTheme {
            path: path.clone(),
            source,
        })?;
        theme = Theme::from_toml(&theme, &text).map_err(|source| PrepareError::ThemeFile {
            path: path.clone(),
            source,
        })?;
    }
    let (client, service, connect) = match (&config.service, embedded) {
        (
            Service::Remote {
                base_url, api_key, ..
            },
            _,
        ) => {
            let client = Client::new(base_url, Some(api_key.clone()))?
                .with_gate_token(config.gate_token.clone());
            let host = base_url
                .split("://")
                .nth(1)
                .unwrap_or(base_url)
                .trim_end_matches('/')
                .to_string();
            let info = ServiceInfo {
                host,
                sandbox: false,
                key_fingerprint: api_key.fingerprint(),
            };
            (client, info, None)
        }
        (Service::Embedded, Some(attach)) => {
            let client = Client::new(&attach.base_url, Some(attach.api_key.clone()))?
                .with_gate_token(Some(attach.gate_token));
            let info = ServiceInfo {
                host: attach.base_url.trim_start_matches("http://").to_string(),
                sandbox: true,
                key_fingerprint: attach.api_key.fingerprint(),
            };
            (client, info, Some(attach.connect))
        }
        (Service::Embedded, None) => {
            return Err(PrepareError::NoService);
        }
    };
    let options = Options {
        bell: config.bell,
        ..Options::default()
    }
    .with_poll(&config.poll);
    let journal = config
        .journal
        .then(|| config.data_dir.join("decisions.jsonl"));
    let mut warnings = config.warnings.clone();
    let mut history = Vec::new();
    if let Some(path) = &journal {
        // A journal that cannot be read costs the history, never the console.
        match journal::load_last(path, journal::LOAD_LAST) {
            Ok(h) => {
                warnings.extend(h.warning(path));
                history = h.decisions;
            }
            Err(e) => warnings.push(format!("cannot read the journal {}: {e}", path.display())),
        }
    }
    Ok(Prepared {
        client,
        service,
        options,
        keymap,
        theme,
        journal,
        history,
        connect,
        warnings,
    })
}

/// Runs the console until the user quits. The terminal is restored on every way out: return,
/// error, panic (ratatui's hook) and SIGTERM.
pub async fn run(prepared: Prepared) -> Result<(), TerminalError> {
    let Prepared {
        client,
        service,
        options,
        keymap,
        theme,
        journal,
        connect,
        history,
        warnings,
    } = prepared;
    let (tx, mut rx) = mpsc::unbounded_channel::<Action>();
    let journal = journal.map(journal::Journal::start);
    let runner = effects::Runner {
        client,
        tx: tx.clone(),
        journal: journal.as_ref().map(journal::Journal::sender),
    };
    let mut app = App::new(service, options, keymap, Utc::now());
    // Configuration warnings (e.g. a readable plain api_key) stay on the status line until the
    // first command replaces them.
    app.start_with(connect, history, &warnings);

    let mut terminal = ratatui::init();
    // Bracketed paste: pasted text arrives as one Paste, never as keys that could answer a
    // dialog (`deliberate.rs`).
    let _ = execute!(std::io::stdout(), EnableMouseCapture, EnableBracketedPaste);
    if let Ok(size) = terminal.size() {
        app.set_size(size.width, size.height);
    }
    let mut events = terminal_events();
    let mut term = signal_stream();
    let mut last_draw: Option<Instant> = None;
    let result: Result<(), TerminalError> = loop {
        if app.dirty() {
            let due = last_draw.map(|t| t + FRAME);
            if due.is_none_or(|d| Instant::now() >= d) {
                if let Err(e) = terminal.draw(|f| view::draw(f, &app, &theme)) {
                    break Err(TerminalError::Draw(e));
                }
                app.drawn();
                last_draw = Some(Instant::now());
            }
        }
        let wake = app.next_wakeup();
        let mut sleep_for = (wake - Utc::now()).to_std().unwrap_or_default();
        if app.dirty() {
            // A draw was deferred by the frame limit: come back for it.
            sleep_for = sleep_for.min(FRAME);
        }
        let action = tokio::select! {
            ev = events.recv() => match ev {
                Some(Ok(Event::Key(k))) => Action::Key(k),
                Some(Ok(Event::Paste(text))) => Action::Paste(text),
                Some(Ok(Event::Mouse(m))) => Action::Mouse(m),
                Some(Ok(Event::Resize(w, h))) => Action::Resize(w, h),
                Some(Ok(_)) => continue,
                Some(Err(e)) => break Err(TerminalError::Input(e)),
                None => break Ok(()),
            },
            Some(a) = rx.recv() => a,
            _ = tokio::time::sleep(sleep_for) => Action::Tick(Utc::now()),
            Some(()) = term.recv() => Action::Terminate,
        };
        let action = match action {
            Action::Tick(_) => Action::Tick(Utc::now()),
            other => {
                // Input and results also move the clock, so countdowns never lag an event.
                app.set_clock(Utc::now());
                other
            }
        };
        for effect in app.update(action) {
            match effect {
                Effect::Bell => {
                    let mut out = std::io::stdout();
                    let _ = out.write_all(b"\x07");
                    let _ = out.flush();
                }
                Effect::Clipboard(payload) => {
                    // OSC 52: the terminal puts the text on the system clipboard. Written straight
                    // to the terminal; never logged.
                    let mut out = std::io::stdout();
                    let _ = out.write_all(b"\x1b]52;c;");
                    let _ = out.write_all(payload.expose().as_bytes());
                    let _ = out.write_all(b"\x07");
                    let _ = out.flush();
                }
                Effect::Quit => {}
                other => runner.run(other),
            }
        }
        if app.should_quit() {
            break Ok(());
        }
    };
    let _ = execute!(
        std::io::stdout(),
        DisableBracketedPaste,
        DisableMouseCapture
    );
    ratatui::restore();
    // Every decision taken is on disk before the process ends.
    drop(runner);
    if let Some(journal) = journal {
        journal.finish();
    }
    result
}

/// Terminal input, read by a thread of its own that blocks in `read`. crossterm's `EventStream`
/// checks the reader on every turn of the loop, and while its waker thread holds the reader that
/// check spins (`sched_yield`) before giving up: about a hundred syscalls a second with nothing to
/// read, the largest part of the idle console's CPU.
fn terminal_events() -> mpsc::UnboundedReceiver<std::io::Result<Event>> {
    let (tx, rx) = mpsc::unbounded_channel();
    let spawned = std::thread::Builder::new()
        .name("input".into())
        .spawn(move || {
            loop {
                let event = crossterm::event::read();
                let failed = event.is_err();
                // The console has ended (or the read failed): nothing reads any more.
                if tx.send(event).is_err() || failed {
                    break;
                }
            }
        });
    if let Err(e) = spawned {
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = tx.send(Err(e));
        return rx;
    }
    rx
}

/// SIGTERM and SIGHUP, as one receiver (never fires where signals do not exist).
fn signal_stream() -> mpsc::UnboundedReceiver<()> {
    let (tx, rx) = mpsc::unbounded_channel();
    #[cfg(unix)]
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = hup.recv() => {}
        }
        let _ = tx.send(());
    });
    #[cfg(not(unix))]
    drop(tx);
    rx
}

#[cfg(test)]
mod tests;
