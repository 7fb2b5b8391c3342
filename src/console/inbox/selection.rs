//! The inbox panes' selections as the keys and the clock move them, with a `Ctx` as a tab's
//! update has: the pane cursors move with the proposal selected, and a move nobody asked for
//! is said when a key meets it. A file of its own because it sees the console through `Ctx`,
//! which the inbox's data (`mod.rs`, read by the Answers in `action.rs`) must not import.

use super::{Inbox, SETTLE, on_strip};
use crate::console::component::{Ctx, ToastLevel};
use crate::console::layout::Pane;
use crate::console::table::Tables;
use chrono::{DateTime, Utc};

impl Inbox {
    /// The ids an inbox pane lists, in its order: the pane's view (filter and sort) of its rows.
    pub(super) fn pane_ids(&self, pane: Pane, now: DateTime<Utc>, tables: &Tables) -> Vec<&str> {
        let rows = self.pane_rows(pane, now);
        let order = tables.view(pane).map(|v| v.order());
        match order {
            Some(order) => order
                .iter()
                .filter_map(|k| rows.get(*k))
                .map(|i| self.items[*i].id())
                .collect(),
            None => rows.iter().map(|i| self.items[*i].id()).collect(),
        }
    }

    /// The pane's rows as indices into the items, before its filter and sort: every item for
    /// the Proposals list, those on the strip for the Desk's.
    pub fn pane_rows(&self, pane: Pane, now: DateTime<Utc>) -> Vec<usize> {
        match pane {
            Pane::Strip => self.strip_items(now),
            _ => (0..self.items.len()).collect(),
        }
    }

    /// The row an inbox pane draws as selected: where its selected id is shown now. None for
    /// the other panes, before anything was selected, and while the filter hides it.
    pub fn row(&self, pane: Pane, now: DateTime<Utc>, tables: &Tables) -> Option<usize> {
        // Drawn every frame: found in place, without listing the pane's ids.
        let data_row = match pane {
            Pane::Inbox => {
                let id = self.list.id.as_deref()?;
                self.items.iter().position(|i| i.id() == id)
            }
            Pane::Strip => {
                let id = self.strip.id.as_deref()?;
                self.items
                    .iter()
                    .filter(|i| on_strip(i, now))
                    .position(|i| i.id() == id)
            }
            _ => None,
        }?;
        tables.position(pane, data_row)
    }

    /// Selects proposal `id` in an inbox pane, as the supervisor asked; the pane's cursor goes
    /// to its row.
    pub fn select_proposal(&mut self, pane: Pane, id: &str, ctx: &mut Ctx) {
        let sel = self.selection_mut(pane);
        sel.id = Some(id.to_string());
        sel.moved = None;
        if let Some(row) = self.row(pane, ctx.now, ctx.tables()) {
            ctx.select(pane, row);
        }
    }

    /// The cursor moved to `row` of an inbox pane (a key or a click): that proposal is selected.
    pub fn select_row(&mut self, pane: Pane, row: usize, ctx: &mut Ctx) {
        let id = self
            .pane_ids(pane, ctx.now, ctx.tables())
            .get(row)
            .map(|s| s.to_string());
        if let Some(id) = id {
            self.select_proposal(pane, &id, ctx);
        }
    }

    /// After every update: each inbox pane's selection follows its proposal through arrivals,
    /// re-sorts and departures. A move nobody asked for is remembered, so a key pressed at that
    /// moment does not act on a row the supervisor has not seen selected.
    pub fn sync_selection(&mut self, by_user: bool, ctx: &mut Ctx) {
        let now = ctx.now;
        for pane in [Pane::Inbox, Pane::Strip] {
            let rows: Vec<String> = self
                .pane_ids(pane, now, ctx.tables())
                .into_iter()
                .map(String::from)
                .collect();
            let sel = self.selection_mut(pane);
            let before = sel.id.clone();
            // A first selection is not a move: nothing was selected for a key to be meant for.
            if sel.sync(rows) && !by_user && sel.id.is_some() && before.is_some() {
                sel.moved = Some((now, before));
            }
            if let Some(row) = self.row(pane, now, ctx.tables()) {
                ctx.select(pane, row);
            }
        }
    }

    /// True, saying so, when `pane`'s selection moved by itself a moment ago: a key pressed now
    /// was meant for what was selected before, so it does nothing.
    pub fn moved_under_the_key(&mut self, pane: Pane, ctx: &mut Ctx) -> bool {
        let sel = self.selection_mut(pane);
        if let Some((at, Some(old))) = sel.moved.take()
            && ctx.now - at < SETTLE
            && let Some(id) = sel.id.clone()
        {
            ctx.toast(
                format!(
                    "The selection just moved to {id} ({old} left the list): nothing done; \
                     press again to act on it"
                ),
                ToastLevel::Error,
            );
            return true;
        }
        false
    }
}
