//! The Signals tab's update: destinations and their delivery log (polled while the tab is on
//! screen), the fan-out default and `/trade`. Its modals (the create form, the secret shown once,
//! the builder fee) own their state in the modal slot; App's side of them is `app/signal_modals.rs`.

use super::rows::{Deliveries, Destinations};
use super::{DELIVERIES_POLL, DESTINATIONS_POLL, DestinationForm, SignalsTab, is_unsupported};
use crate::api::ApiError;
use crate::api::model::{
    ExecutionResult, SignalDeliveries, SignalDestination, SignalDestinations, TradeSignal,
};
use crate::console::action::Effect;
use crate::console::command::TradeArgs;
use crate::console::component::{Ask, Ctx, TabComponent, ToastLevel};
use crate::console::inbox::execution_summary;
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use crate::console::poll::{Poll, to_delta};
use crate::console::tab::Tab;
use crate::console::table::Rows;
use chrono::{DateTime, Utc};
use std::time::Duration;

impl SignalsTab {
    /// The destination on `row` of its pane.
    pub fn destination(&self, row: usize) -> Option<&SignalDestination> {
        self.destinations.get(row)
    }

    /// The next signals poll, while the tab is on screen.
    pub fn next_due(&self, tab: Tab) -> Option<DateTime<Utc>> {
        if tab != Tab::Signals {
            return None;
        }
        let d = self.dest_poll.wakeup();
        let l = self
            .deliv_poll
            .wakeup()
            .filter(|_| !self.deliveries_unsupported);
        match (d, l) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The cursor moved in the destinations (or they changed): the delivery log follows it.
    pub fn destination_selected(&mut self, ctx: &mut Ctx) {
        let id = self
            .destination(ctx.row(Pane::Destinations).unwrap_or(usize::MAX))
            .map(|d| d.id.clone());
        if id == self.deliveries_for {
            return;
        }
        self.deliveries.clear();
        self.deliv_poll = Poll {
            next_due: id.as_ref().map(|_| ctx.now),
            ..Poll::default()
        };
        self.deliv_error = None;
        self.deliveries_for = id;
        ctx.select(Pane::Deliveries, 0);
    }

    pub fn on_destinations_loaded(
        &mut self,
        result: Result<SignalDestinations, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
        ctx: &mut Ctx,
    ) {
        ctx.ask(Ask::Redraw);
        match result {
            Ok(body) => {
                self.dest_error = None;
                self.dest_poll.succeeded(at, latency, DESTINATIONS_POLL);
                self.destinations = body.destinations;
                ctx.clamp(Pane::Destinations, self.destinations.len());
                self.destination_selected(ctx);
            }
            Err(ApiError::Unauthorized { message }) => {
                self.dest_poll.settled();
                self.dest_error = Some(message.clone());
                ctx.ask(Ask::AuthFailed(message));
            }
            Err(e) => {
                self.dest_poll.failed(at, DESTINATIONS_POLL, &e);
                self.dest_error = Some(e.to_string());
            }
        }
    }

    pub fn on_deliveries_loaded(
        &mut self,
        id: &str,
        result: Result<SignalDeliveries, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
        ctx: &mut Ctx,
    ) {
        ctx.ask(Ask::Redraw);
        self.deliv_poll.settled();
        if self.deliveries_for.as_deref() != Some(id) {
            // An answer for a destination no longer selected.
            return;
        }
        match result {
            Ok(body) => {
                self.deliv_error = None;
                self.deliv_poll.succeeded(at, latency, DELIVERIES_POLL);
                self.deliveries = body.deliveries;
                ctx.clamp(Pane::Deliveries, self.deliveries.len());
            }
            Err(e) if is_unsupported(&e) => {
                // An extension this service does not offer: the pane gives way to a note.
                self.deliveries_unsupported = true;
                self.deliv_poll.stop();
                self.deliveries.clear();
            }
            Err(ApiError::Unauthorized { message }) => {
                self.deliv_error = Some(message.clone());
                ctx.ask(Ask::AuthFailed(message));
            }
            Err(e) => {
                self.deliv_poll.failed(at, DELIVERIES_POLL, &e);
                self.deliv_error = Some(e.to_string());
            }
        }
    }

    /// A destination this console created: listed at once, and the list asked for again.
    pub fn add_created(&mut self, dest: &SignalDestination, at: DateTime<Utc>) {
        if !dest.id.is_empty() && !self.destinations.iter().any(|d| d.id == dest.id) {
            self.destinations.push(dest.clone());
        }
        self.dest_poll.ask_at(at);
    }

    /// `/trade`: fans out as it says, else as the tab's default.
    pub fn trade(&mut self, args: &TradeArgs, ctx: &mut Ctx) {
        let fanout = args.fanout.unwrap_or(self.fanout_default);
        let signal = args.to_signal(fanout);
        ctx.toast(
            format!("{} · fan-out {}", describe_trade(&signal), on_off(fanout)),
            ToastLevel::Info,
        );
        ctx.fx.push(Effect::Trade(Box::new(signal)));
    }

    pub fn on_traded(
        &mut self,
        signal: &TradeSignal,
        result: Result<Box<ExecutionResult>, ApiError>,
        at: DateTime<Utc>,
        ctx: &mut Ctx,
    ) {
        let fanout = on_off(signal.fanout.unwrap_or(true));
        let what = describe_trade(signal);
        match result {
            Ok(done) => ctx.toast(
                format!(
                    "{what} done: {} · fan-out {fanout}",
                    execution_summary(&done)
                ),
                ToastLevel::Info,
            ),
            Err(ApiError::Forbidden { message, .. }) => ctx.toast(
                format!(
                    "{what} refused (403): {message} — /trade needs a webhook:alerts or legacy key; /propose stages it instead"
                ),
                ToastLevel::Error,
            ),
            Err(e) => {
                if let ApiError::QuotaExceeded { retry_after, .. } = &e {
                    ctx.ask(Ask::HoldPosts(at + to_delta(*retry_after)));
                }
                ctx.toast(
                    format!("{what} failed: {e} · fan-out {fanout}"),
                    ToastLevel::Error,
                )
            }
        }
        // What the trade delivered shows in the log at once.
        if self.deliveries_for.is_some() {
            self.deliv_poll.next_due = Some(at);
        }
    }
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

/// `trade BTC long 0.01` / `trade BTC close`.
pub fn describe_trade(s: &TradeSignal) -> String {
    let coin = s.a.as_deref().unwrap_or("?");
    let coin = coin.strip_suffix("USDT").unwrap_or(coin);
    let mut text = format!("trade {coin} {}", s.d.as_deref().unwrap_or("?"));
    if let Some(x) = s.size {
        text.push_str(&format!(" {}", crate::console::widgets::size(x)));
    }
    if let Some(x) = s.size_usd {
        text.push_str(&format!(" ${}", crate::console::widgets::size(x)));
    }
    text
}

impl TabComponent for SignalsTab {
    fn rows(
        &self,
        pane: Pane,
        _now: DateTime<Utc>,
        _master: Option<usize>,
    ) -> Option<Box<dyn Rows + '_>> {
        match pane {
            Pane::Destinations => Some(Box::new(Destinations(&self.destinations))),
            // The log of the destination it was fetched for (`deliveries_for`).
            Pane::Deliveries => Some(Box::new(Deliveries(&self.deliveries))),
            _ => None,
        }
    }

    fn schedule(&mut self, now: DateTime<Utc>, shown: bool, fx: &mut Vec<Effect>) {
        if !shown {
            return;
        }
        if self.dest_poll.start(now) {
            fx.push(Effect::FetchDestinations);
        }
        if let Some(id) = self.deliveries_for.clone()
            && !self.deliveries_unsupported
            && self.deliv_poll.start(now)
        {
            fx.push(Effect::FetchDeliveries(id));
        }
    }

    fn entered(&mut self, now: DateTime<Utc>) {
        self.refresh(now, true);
    }

    fn refresh(&mut self, now: DateTime<Utc>, shown: bool) {
        if !shown {
            return;
        }
        self.dest_poll.ask_at(now);
        if self.deliveries_for.is_some() {
            self.deliv_poll.ask_at(now);
        }
    }

    fn on_key(&mut self, action: KeyAction, _pane: Pane, ctx: &mut Ctx) -> bool {
        match action {
            KeyAction::NewRun => ctx.ask(Ask::Open(Box::new(Modal::DestinationForm(
                DestinationForm::default(),
            )))),
            KeyAction::Fanout => {
                self.fanout_default = !self.fanout_default;
                let text = if self.fanout_default {
                    "fan-out: on — /trade without fanout= sends to the signal destinations"
                } else {
                    "fan-out: off — /trade without fanout= trades without fan-out"
                };
                ctx.toast(text, ToastLevel::Info);
            }
            _ => return false,
        }
        true
    }
}
