//! Every tab at 80x24, 160x45 and 250x70 (issue 37: "a layout that uses the terminal"), on a busy
//! desk: a gateway with 20 items from three agents, a history of decisions, several positions and
//! orders. The snapshots show what each size gives each pane; the checks say what must hold
//! whatever the snapshots say: nothing cut at 80x24 that cannot be reached, and at 250x70 no
//! table of the Desk or the inbox left mostly empty while others lack room.

use super::fixtures::*;
use super::gate::{agent, gate_item, gate_loaded, trade};
use crate::api::model::ItemStatus;
use crate::console::app::App;
use crate::console::inbox::{Decision, DecisionKind};
use crate::console::layout::{self, Pane};
use crate::console::tab::Tab;

const SIZES: [(u16, u16); 3] = [(80, 24), (160, 45), (250, 70)];
const AGENTS: [(&str, &str); 3] = [
    ("momentum-bot", "a1b2c3d4"),
    ("mean-rev", "b2c3d4e5"),
    ("hedger", "c3d4e5f6"),
];

/// Twenty items from three agents: twelve pending with their time left spread over five
/// minutes, then executed, rejected and expired ones.
fn busy_items() -> Vec<crate::api::model::GateItem> {
    (0..20)
        .map(|i| {
            let (name, fp) = AGENTS[i % 3];
            let status = match i {
                0..12 => "pending",
                12..15 => "executed",
                15..17 => "rejected",
                _ => "expired",
            };
            let coin = ["BTC", "ETH"][i % 2];
            let size = if coin == "BTC" {
                0.01 * (1 + i % 4) as f64
            } else {
                0.25 * (1 + i % 3) as f64
            };
            let direction = ["long", "short"][(i / 2) % 2];
            let mut item = gate_item(
                &format!("prop_{:016x}", 0x5eed_0000_u64 + i as u64 * 0x1111),
                name,
                fp,
                status,
                trade(coin, direction, size, 2 + (i % 4) as u32),
            );
            item.status = match status {
                "pending" => ItemStatus::Pending,
                "executed" => ItemStatus::Executed,
                "rejected" => ItemStatus::Rejected,
                _ => ItemStatus::Expired,
            };
            let left = secs(20 + 23 * i as i64);
            item.expires_at = Some(t0() + left);
            item.created_at = Some(t0() + left - LIFETIME);
            item
        })
        .collect()
}

/// Thirty decisions, newest first: a desk that has been busy for a while.
fn busy_decisions() -> Vec<Decision> {
    let mut out = decisions();
    for i in 0..26 {
        out.push(Decision {
            proposal_id: format!("prop_{:016x}", 0xd0c0_0000_u64 + i),
            kind: if i % 4 == 3 {
                DecisionKind::Rejected
            } else {
                DecisionKind::Approved
            },
            at: t0() - secs(700 + 95 * i as i64),
            summary: format!("long 0.{} ETH 3x", 1 + i % 5),
            result: if i % 4 == 3 {
                "dismissed".into()
            } else {
                format!("bought 0.{} ETH at 3210 (oid {})", 1 + i % 5, 900_200 + i)
            },
        });
    }
    out
}

fn busy(width: u16, height: u16) -> App {
    let mut app = seeded_app(width, height);
    app.inbox_mut().fixture_clear();
    let agents = AGENTS.iter().map(|(n, fp)| agent(n, fp, 4)).collect();
    app.update(gate_loaded(busy_items(), agents, t0()));
    app.inbox_mut().restore_decisions(busy_decisions());
    app.toasts_mut().clear();
    app
}

/// The console on `tab` at this size, with the data that tab shows.
fn on(tab: Tab, width: u16, height: u16) -> App {
    let mut app = match tab {
        Tab::Discovery => discovery_app(width, height),
        Tab::Backtests => backtests_app(width, height),
        Tab::Research => super::agents::research_app(width, height, "running"),
        Tab::Tools => super::agents::tools_screen(width, height),
        Tab::Chat => {
            let mut app = seeded_app(width, height);
            super::agents::chatted(&mut app);
            app
        }
        Tab::Signals => super::signals::signals_app(width, height),
        Tab::Desk | Tab::Proposals | Tab::Logs => busy(width, height),
    };
    if app.tab() != tab {
        let n = Tab::ALL.iter().position(|t| *t == tab).unwrap() + 1;
        app.update(key(char::from_digit(n as u32, 10).unwrap()));
    }
    app.toasts_mut().clear();
    assert_eq!(app.tab(), tab);
    app
}

fn screen(app: &App) -> layout::Screen {
    let (w, h) = app.size();
    layout::compute(w, h, &app.shape())
}

#[test]
fn every_tab_at_three_sizes() {
    for tab in Tab::ALL {
        for (w, h) in SIZES {
            let app = on(tab, w, h);
            let text = render(&app);
            assert_eq!(text, render(&app), "{tab:?} {w}x{h} is not deterministic");
            assert_eq!(text.lines().count(), h as usize);
            let name = format!("{}_{w}x{h}", tab.title().to_lowercase());
            insta::with_settings!({ snapshot_path => "snapshots" }, {
                insta::assert_snapshot!(name, text);
            });
        }
    }
}

/// The issue saw, at 250x70, the strip four rows high beside fifty empty lines and Positions 4
/// rows over 27 empty ones: now a table that has rows to show shows them all, and none shows
/// more than a few empty rows while another has rows it cannot show.
#[test]
fn at_250x70_the_desk_and_inbox_tables_show_their_rows_without_empty_space() {
    for tab in [Tab::Desk, Tab::Proposals] {
        let app = on(tab, 250, 70);
        let s = screen(&app);
        for pane in tab.panes().iter().filter(|p| !p.is_text()) {
            let (rows, len) = (s.rows(*pane), app.pane_len(*pane));
            assert!(rows >= len.min(60), "{pane:?}: {rows} rows for {len}");
            assert!(
                rows <= len.max(1) + 2 || *pane == Pane::Decisions,
                "{pane:?}: {rows} rows for {len}"
            );
        }
    }
    // The strip lists every approvable item, and positions and orders sit side by side.
    let app = on(Tab::Desk, 250, 70);
    let s = screen(&app);
    assert_eq!(s.rows(Pane::Strip), app.pane_len(Pane::Strip));
    assert_eq!(s.pane(Pane::Positions).y, s.pane(Pane::Orders).y);
}

#[test]
fn at_160x45_the_inbox_detail_has_the_whole_right_side() {
    let app = on(Tab::Proposals, 160, 45);
    let s = screen(&app);
    let body = 45 - 4;
    assert_eq!(s.detail.height, body);
    assert!(s.detail.x >= s.pane(Pane::Inbox).x + s.pane(Pane::Inbox).width);
    assert_eq!(s.rows(Pane::Inbox), 20, "all twenty items listed");
}
