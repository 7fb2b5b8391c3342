//! App's side of the one table component (`console/table.rs`): which data each table pane
//! shows, rebuilding the panes' views after an update, and the keys and clicks every table
//! shares — `/` (the filter line), `s`/`S`, a header click and `c`.

use super::App;
use crate::console::component::ToastLevel;
use crate::console::layout::{self, Pane};
use crate::console::modal::Modal;
use crate::console::table::{self, Query, Rows, Tables};
use crate::console::tabs::{desk, logs, proposals};

impl App {
    /// The table pane `pane` as its filter and sort read it; None for a pane that is not a
    /// table of records (the transcript, the chat, a JSON result).
    pub fn rows_of(&self, pane: Pane) -> Option<Box<dyn Rows + '_>> {
        let now = self.now;
        Some(match pane {
            Pane::Positions => Box::new(desk::rows::Positions(&self.account.positions)),
            Pane::Orders => Box::new(desk::rows::Orders {
                rows: &self.account.orders,
                now_ms: now.timestamp_millis(),
            }),
            Pane::Inbox | Pane::Strip => Box::new(proposals::rows::InboxRows::new(
                &self.inbox,
                pane,
                now,
                &self.service.key_fingerprint,
            )),
            Pane::Decisions => Box::new(proposals::rows::DecisionRows(self.inbox.decisions())),
            Pane::Requests => Box::new(logs::rows::Requests(&self.request_log)),
            Pane::Messages => Box::new(logs::rows::Messages(&self.messages)),
            _ => return self.tabs.rows(pane, now, self.master_row(pane)),
        })
    }

    /// For a pane that lists what another pane selects, that pane's data row.
    fn master_row(&self, pane: Pane) -> Option<usize> {
        match pane {
            Pane::Trades => self.row(Pane::Jobs),
            Pane::Deliveries => self.row(Pane::Destinations),
            _ => None,
        }
    }

    /// Every table pane's view, from its data as this update left it. On a tick, every view when
    /// the second changed (what a view reads of the clock, time left, moves no faster), else only
    /// those whose rows changed in number.
    pub(crate) fn rebuild_tables(&mut self, tick: bool) {
        let second = self.now.timestamp();
        // A tick within the second rebuilds only a view whose rows changed in number (an item
        // left the Desk strip as it expired): a view over other rows than its pane's would put
        // the cursor and the highlight on different rows.
        let same_second = tick && self.tables_second == second;
        self.tables_second = second;
        // In the tabs' pane order, so a master pane (the jobs) is built before the pane that
        // lists what it selects (the job's trades).
        for tab in crate::console::tab::Tab::ALL {
            for pane in tab.panes() {
                // The pane's rows are read once: to see whether its view still fits them, to build
                // the new view, and to find the row the cursor was on.
                let built = {
                    let Some(rows) = self.rows_of(*pane) else {
                        continue;
                    };
                    if same_second && self.tables.view(*pane).map(|v| v.total()) == Some(rows.len())
                    {
                        continue;
                    }
                    let view = self.tables.built(*pane, &*rows, None);
                    // The row the cursor was on, wherever the new data put it: a refresh that
                    // reorders a table does not move the cursor to another row.
                    // (A cursor a key moved since is where the person put it.)
                    let sel = self.selected.get(pane).copied().unwrap_or(0);
                    let id_at = |k: usize| view.row(k).and_then(|r| rows.id(r));
                    let at = match self.tables.cursor(*pane) {
                        Some((was, id)) if was == sel && id_at(sel).as_deref() != Some(id) => {
                            (0..view.len()).find(|k| id_at(*k).as_deref() == Some(id))
                        }
                        _ => None,
                    };
                    let sel = at.unwrap_or(sel).min(view.len().saturating_sub(1));
                    let cursor = id_at(sel).map(|id| (sel, id));
                    (view, sel, cursor)
                };
                let (view, sel, cursor) = built;
                self.tables.put(*pane, view);
                // The inbox panes' cursors follow their proposal (`sync_inbox_selection`).
                if !matches!(pane, Pane::Inbox | Pane::Strip) {
                    self.selected.insert(*pane, sel);
                    self.tables.set_cursor(*pane, cursor);
                }
                // What the cursor is on may be another destination now (the list arrived, a
                // filter hid one): the delivery log follows it before its view is built.
                if *pane == Pane::Destinations {
                    self.destination_selected();
                }
            }
        }
    }

    /// Changes `pane`'s query with `change` and shows the result at once; the cursor stays on its
    /// row when the new view shows it, else goes to the top (the inbox panes' follows their
    /// proposal).
    pub fn set_query(&mut self, pane: Pane, change: impl FnOnce(&mut Query)) -> bool {
        let before = self.tables.query(pane);
        let was = self.row_id(pane);
        let mut query = before.clone();
        change(&mut query);
        let Some(view) = self
            .rows_of(pane)
            .map(|rows| self.tables.built(pane, &*rows, Some(query.clone())))
        else {
            return false;
        };
        self.tables.put(pane, view);
        let changed = query != before;
        if changed && !matches!(pane, Pane::Inbox | Pane::Strip) {
            // On the row it was on, if the new order shows it; else the top.
            let at = was.and_then(|id| {
                let rows = self.rows_of(pane)?;
                let view = self.tables.view(pane)?;
                (0..view.len()).find(|k| view.row(*k).and_then(|r| rows.id(r)) == Some(id.clone()))
            });
            self.selected.insert(pane, at.unwrap_or(0));
            if pane == Pane::Destinations {
                self.destination_selected();
            }
        }
        self.dirty = true;
        changed
    }

    /// The filter the status line shows while it is typed (once set, its table's title says
    /// it).
    pub fn filter_text(&self) -> String {
        self.filter_pane
            .map(|pane| self.tables.query(pane).filter)
            .unwrap_or_default()
    }

    pub fn tables(&self) -> &Tables {
        &self.tables
    }

    /// `/` on a table pane: the filter line opens on it (Esc clears, Enter keeps). False when
    /// the pane is not a table, so the tab may still read the key.
    pub(crate) fn open_table_filter(&mut self, pane: Pane) -> bool {
        if self.rows_of(pane).is_none() {
            return false;
        }
        self.modal = Some(Modal::Filter);
        self.filter_pane = Some(pane);
        self.dirty = true;
        true
    }

    /// `s` / `S` on a table pane: the next field, or the order reversed.
    pub(crate) fn sort_table(&mut self, pane: Pane, reverse: bool) -> bool {
        let Some(fields) = self.rows_of(pane).map(|r| r.fields().len()) else {
            return false;
        };
        self.set_query(pane, |q| {
            if reverse {
                q.reverse = !q.reverse;
            } else {
                table::next_sort(q, fields);
            }
        });
        true
    }

    /// A key typed into the filter line of the pane it was opened on.
    pub(crate) fn edit_table_filter(&mut self, pane: Pane, edit: impl FnOnce(&mut String) -> bool) {
        self.set_query(pane, |q| {
            edit(&mut q.filter);
        });
    }

    /// The id of the row under `pane`'s cursor, if the pane is a table whose rows have one.
    pub(crate) fn row_id(&self, pane: Pane) -> Option<String> {
        let rows = self.rows_of(pane)?;
        self.tables
            .row(pane, self.selected(pane))
            .filter(|r| *r < rows.len())
            .and_then(|r| rows.id(r))
    }

    /// A click on a table's header row sorts by that column (again: reversed). True when the
    /// click was on a header.
    pub(crate) fn click_header(&mut self, x: u16, y: u16) -> bool {
        let screen = layout::compute(self.size.0, self.size.1, &self.shape());
        let Some(pane) = screen.pane_at(x, y) else {
            return false;
        };
        let area = screen.pane(pane);
        if y != area.y + 1 {
            return false;
        }
        let Some((title, fields)) = self.rows_of(pane).and_then(|rows| {
            table::header_at(rows.cols(), area, x).map(|title| (title, rows.fields()))
        }) else {
            return false;
        };
        let mut sorted = false;
        self.set_query(pane, |q| sorted = table::sort_by_header(q, fields, title));
        if !sorted {
            self.toast(
                format!("{}: the {title} column does not sort", pane.title()),
                ToastLevel::Info,
            );
        }
        true
    }
}
