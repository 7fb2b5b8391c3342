//! App's side of the price charts' data: it asks for the candles of the coin a chart on screen
//! draws (the approve dialog's item, else the inbox item selected on the Proposals tab) and keeps
//! the answer in `account.market` (`feeds::market`).

use crate::console::action::Effect;
use crate::console::app::App;
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use crate::console::tab::Tab;
use crate::console::tabs::proposals::chart::chart_coin;

impl App {
    /// The coin a price chart on screen draws, if one does.
    pub(crate) fn charted_coin(&self) -> Option<String> {
        let item = match &self.modal {
            Some(Modal::Approve(d)) => self.inbox.item(&d.id),
            Some(_) => None,
            None if self.tab == Tab::Proposals => self
                .inbox
                .selection(Pane::Inbox)
                .id
                .as_deref()
                .filter(|_| self.inbox_row(Pane::Inbox).is_some())
                .and_then(|id| self.inbox.item(id)),
            None => None,
        }?;
        chart_coin(item)
    }

    /// Each inbox item's mark at its staging, into the marks a chart draws when the service has
    /// no candles: the service's proposals and a gateway's items alike (the gateway's were left
    /// out when this read the service's list only, so a console on a gateway charted nothing).
    /// A mark is kept at its instant once, however often the item is listed again.
    pub(crate) fn note_staging_marks(&mut self) {
        for item in self.inbox.items() {
            let (Some(coin), Some(at)) = (chart_coin(item), item.proposal.created_at) else {
                continue;
            };
            self.account
                .market
                .saw_mark(&coin, at, item.proposal.preview.mark_px);
        }
    }

    pub(crate) fn schedule_candles(&mut self, fx: &mut Vec<Effect>) {
        if self.auth_failed.is_some() {
            return;
        }
        let Some(coin) = self.charted_coin() else {
            return;
        };
        if self.account.market.wants_candles(&coin, self.now) {
            self.account.market.asked(&coin);
            fx.push(Effect::FetchCandles(coin));
        }
    }
}
