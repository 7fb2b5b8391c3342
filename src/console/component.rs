//! The contract between App and a tab: App routes, a tab owns its state.
//!
//! A tab is a struct in `tabs/<tab>/` whose fields are private to its folder. It has the same
//! three entry points as gitui's components and slumber's views — its keys (`on_key`), the answers
//! to its requests (`on_*`), and drawing itself (`draw`) — and sees the rest of the console only
//! through the two narrow contexts here:
//!
//! - [`Ctx`] while it changes: the clock, the shared pane selections (the router moves cursors
//!   for every tab, so the tab clamps and sets them here), the effects to start, and [`Ask`]s for
//!   what only App may do (open the modal, toast, show another tab). Like gitui's queue of
//!   internal events, an ask is performed after the tab returns, so a tab never holds `&mut App`.
//! - [`Shown`] while it draws: read-only, the theme, the layout, the clock, the feeds and which
//!   pane has the focus.
//!
//! Lower layer: this never imports `app.rs` or `tabs/`, so a tab can use it without a cycle.
//! The console's own logs (toasts, requests) are defined here for the same reason: App writes
//! them, the Logs tab shows them.

use super::action::{Effect, Resource};
use super::feeds::{Account, Feed};
use super::keymap::{KeyAction, Keymap};
use super::layout::{Pane, Screen};
use super::modal::Modal;
use super::tab::Tab;
use super::table::{Rows, Tables};
use super::theme::Theme;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::time::Duration;

/// Where the console's data comes from, for the header.
#[derive(Debug, Clone)]
pub struct ServiceInfo {
    pub host: String,
    pub sandbox: bool,
    pub key_fingerprint: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToastLevel {
    Info,
    Error,
}

/// A toast or a command line error as the Logs tab's messages list keeps it, in full.
#[derive(Debug, Clone)]
pub struct Message {
    pub at: DateTime<Utc>,
    pub level: ToastLevel,
    pub text: String,
}

#[derive(Debug, Clone)]
pub struct RequestLogEntry {
    pub at: DateTime<Utc>,
    pub operation: &'static str,
    /// `ok`, or the error code.
    pub status: String,
    pub latency: Duration,
}

/// What a tab asks of App, performed in order once the tab returns.
#[derive(Debug)]
pub enum Ask {
    /// Into the one modal slot (replacing nothing: tabs only get keys while it is empty). The
    /// inbox opens its approve dialog and its final questions this way too.
    Open(Box<Modal>),
    Toast(String, ToastLevel),
    /// Another tab comes on screen.
    Show(Tab),
    /// The Proposals tab, its list on this inbox item.
    ShowProposal(String),
    /// The Proposals tab, its list on the inbox item under this pane's cursor (the inbox is App's,
    /// so App reads which one it is).
    ShowSelected(Pane),
    /// The command line, prefilled with this text to edit and run.
    Prefill(String),
    /// The service answered 429: POSTs wait until then (see [`Ctx::posts_held`]).
    HoldPosts(DateTime<Utc>),
    /// The service refused the key (401): every fetch stops until `r`.
    AuthFailed(String),
    /// The backtest form, prefilled from the row under the cursor (the Discovery catalog
    /// fills in the parameters, so App opens it).
    BacktestForm,
    /// The command line's error line says this (and the Logs tab keeps it).
    CommandError(String),
    /// The focus goes to this pane of the tab on screen (nothing, when the tab has no such pane).
    Focus(Pane),
    /// Drawn at once, even when the answer was a poll's (see `App::update`).
    Redraw,
    /// These feeds are asked at `at`, not at their next poll: what a decision changed shows now.
    Poll(&'static [Resource], DateTime<Utc>),
    /// The Tools tab: a call went out (an approved confirm token, re-submitted).
    ToolSent,
    /// The Tools tab: the call it waits on is the gateway's item `to` now, no longer `from`.
    ToolRenamed {
        from: String,
        to: String,
    },
    /// The Tools tab shows this outcome of a call of `tool` (its arguments without the token).
    ToolOutcome {
        tool: String,
        args: serde_json::Value,
        at: DateTime<Utc>,
        result: Result<serde_json::Value, String>,
    },
}

/// What every tab is to App: its keys while it is on screen and its polls' moments. App keeps one
/// value per tab (`tabs::Tabs`) and calls each through this, so no list of tabs is written twice.
/// A tab draws itself with its own `draw`, as what it reads to draw differs (`Shown`, or the
/// inbox's view for Desk and Proposals).
pub trait TabComponent {
    /// A key of the tab on screen, `pane` having the focus; true when handled.
    fn on_key(&mut self, _action: KeyAction, _pane: Pane, _ctx: &mut Ctx) -> bool {
        false
    }

    /// Starts the fetches that are due; `shown` while the tab is on screen (some poll only then).
    fn schedule(&mut self, _now: DateTime<Utc>, _shown: bool, _fx: &mut Vec<Effect>) {}

    /// The tab just came on screen: what it shows is asked for now.
    fn entered(&mut self, _now: DateTime<Utc>) {}

    /// `r`: what the tab polls is asked for again; `shown` while it is on screen.
    fn refresh(&mut self, _now: DateTime<Utc>, _shown: bool) {}

    /// A table pane of this tab as its filter and sort read it (`table.rs`); None for a pane
    /// that is not a table of records (a text, a JSON tree). `master`: for a pane that shows
    /// the rows of what another pane selects (a job's trades), that pane's data row.
    fn rows(
        &self,
        _pane: Pane,
        _now: DateTime<Utc>,
        _master: Option<usize>,
    ) -> Option<Box<dyn Rows + '_>> {
        None
    }
}

/// Why POSTs are held after a 429, while they are: the service refuses them until its quota
/// resets, so the console says so instead of sending.
pub fn posts_held_text(quota_until: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Option<String> {
    match quota_until {
        Some(until) if until > now => {
            let secs = (until - now).num_seconds();
            Some(format!(
                "the service asked to wait (quota or rate limit): POSTs are held for {secs}s"
            ))
        }
        _ => None,
    }
}

/// What a tab may see and change of the shared console while it handles a key or an answer.
pub struct Ctx<'a> {
    pub now: DateTime<Utc>,
    /// The tab on screen (a tab polls faster while it is seen).
    pub tab: Tab,
    /// Until when the service refuses POSTs (a 429's Retry-After), if it does.
    pub quota_until: Option<DateTime<Utc>>,
    selected: &'a mut BTreeMap<Pane, usize>,
    /// Every table's filter and order: a cursor is a position in its pane's view.
    tables: &'a Tables,
    /// Started by App once the tab returns.
    pub fx: Vec<Effect>,
    asks: Vec<Ask>,
}

impl<'a> Ctx<'a> {
    /// Only `with_ctx!` (and `with_inbox!`, for the inbox's) calls this, so every tab's asks are
    /// performed the same way.
    pub fn new(
        now: DateTime<Utc>,
        tab: Tab,
        quota_until: Option<DateTime<Utc>>,
        selected: &'a mut BTreeMap<Pane, usize>,
        tables: &'a Tables,
    ) -> Self {
        Ctx {
            now,
            tab,
            quota_until,
            selected,
            tables,
            fx: Vec::new(),
            asks: Vec::new(),
        }
    }

    pub fn ask(&mut self, ask: Ask) {
        self.asks.push(ask);
    }

    pub fn toast(&mut self, text: impl Into<String>, level: ToastLevel) {
        self.asks.push(Ask::Toast(text.into(), level));
    }

    /// True (and a toast says why) while the service refuses POSTs.
    pub fn posts_held(&mut self) -> bool {
        match posts_held_text(self.quota_until, self.now) {
            Some(text) => {
                self.toast(text, ToastLevel::Error);
                true
            }
            None => false,
        }
    }

    /// The cursor of `pane` (not of an inbox pane: those follow a proposal, see `inbox/`): a
    /// position in what the pane shows, filtered and sorted.
    pub fn selected(&self, pane: Pane) -> usize {
        self.selected.get(&pane).copied().unwrap_or(0)
    }

    /// The row of the pane's data under its cursor (what the filter and sort put there).
    pub fn row(&self, pane: Pane) -> Option<usize> {
        self.tables.row(pane, self.selected(pane))
    }

    pub fn tables(&self) -> &Tables {
        self.tables
    }

    pub fn select(&mut self, pane: Pane, row: usize) {
        self.selected.insert(pane, row);
    }

    /// Keeps `pane`'s cursor on one of its `len` rows after they changed.
    pub fn clamp(&mut self, pane: Pane, len: usize) {
        if let Some(sel) = self.selected.get_mut(&pane) {
            *sel = (*sel).min(len.saturating_sub(1));
        }
    }

    /// The effects and asks, for App to perform.
    pub fn finish(self) -> (Vec<Effect>, Vec<Ask>) {
        (self.fx, self.asks)
    }
}

/// What a tab reads of the shared console while it draws itself.
pub struct Shown<'a> {
    pub theme: &'a Theme,
    pub keymap: &'a Keymap,
    pub screen: &'a Screen,
    pub now: DateTime<Utc>,
    pub feeds: &'a BTreeMap<Resource, Feed>,
    /// What the account feeds brought (the header's and the Desk's as well).
    pub account: &'a Account,
    pub focused: Pane,
    pub selected: &'a BTreeMap<Pane, usize>,
    pub tables: &'a Tables,
}

impl Shown<'_> {
    pub fn focused(&self, pane: Pane) -> bool {
        self.focused == pane
    }

    pub fn selected(&self, pane: Pane) -> usize {
        self.selected.get(&pane).copied().unwrap_or(0)
    }

    /// The row of the pane's data under its cursor.
    pub fn row(&self, pane: Pane) -> Option<usize> {
        self.tables.row(pane, self.selected(pane))
    }

    /// The row of the pane's data shown at position `at` (0: the first shown).
    pub fn at(&self, pane: Pane, at: usize) -> usize {
        self.tables.row(pane, at).unwrap_or(at)
    }

    pub fn feed(&self, resource: Resource) -> &Feed {
        &self.feeds[&resource]
    }
}
