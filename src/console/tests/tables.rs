//! Every table is the same table: `/` with words and `field:value`, Esc to clear, `s`/`S`, a
//! header click, `c` to copy the row's id, the filter and the sort in the title — tried on the
//! inbox, the Desk's tables and the logs, on the seeded fixture.

use super::fixtures::*;
use crate::console::action::{Action, Effect};
use crate::console::app::App;
use crate::console::layout::{self, Pane};
use crate::console::modal::Modal;
use crossterm::event::{KeyCode, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

fn on_tab(width: u16, height: u16, tab_key: char) -> App {
    let mut app = seeded_app(width, height);
    app.update(key(tab_key));
    app
}

/// `/`, the text, Enter: as a person types a filter.
fn filter(app: &mut App, text: &str) {
    app.update(key('/'));
    assert!(
        matches!(app.modal(), Some(Modal::Filter)),
        "{:?}",
        app.modal()
    );
    type_text(app, text);
    app.update(code(KeyCode::Enter));
    assert!(app.modal().is_none());
}

/// The ids an inbox pane shows, in order.
fn shown_ids(app: &App, pane: Pane) -> Vec<String> {
    let rows = app.rows_of(pane).unwrap();
    let order: Vec<usize> = app.tables().view(pane).unwrap().order().to_vec();
    order.into_iter().filter_map(|r| rows.id(r)).collect()
}

fn click(app: &mut App, column: u16, row: u16) {
    app.update(Action::Mouse(MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column,
        row,
        modifiers: KeyModifiers::NONE,
    }));
}

#[test]
fn the_inbox_lists_what_needs_a_decision_soonest_first() {
    let app = on_tab(120, 40, '2');
    assert_eq!(
        shown_ids(&app, Pane::Inbox),
        [
            ID_SHORT_FUSE,
            ID_AMBER,
            ID_FRESH,
            ID_EXPIRED,
            ID_APPROVED,
            ID_REJECTED
        ]
    );
    // The Desk strip too: only what can still be approved, the least time left first.
    assert_eq!(
        shown_ids(&app, Pane::Strip),
        [ID_SHORT_FUSE, ID_AMBER, ID_FRESH]
    );
}

#[test]
fn a_status_filter_narrows_the_inbox_and_its_title_says_so_at_every_size() {
    for (w, h) in [(80, 24), (160, 45), (250, 70)] {
        let mut app = on_tab(w, h, '2');
        filter(&mut app, "status:pending");
        assert_eq!(
            shown_ids(&app, Pane::Inbox),
            [ID_SHORT_FUSE, ID_AMBER, ID_FRESH]
        );
        let text = render(&app);
        insta::assert_snapshot!(format!("tables_inbox_pending_{w}x{h}"), text);
        assert!(text.contains("[/status:pending (3 of 6)]"), "{text}");
        assert!(
            !text.contains("│expired "),
            "the expired row is hidden\n{text}"
        );
        // The detail is of a row the list shows.
        assert!(text.contains(ID_SHORT_FUSE), "{text}");
    }
}

#[test]
fn esc_clears_a_filter_and_an_unknown_field_is_named() {
    let mut app = on_tab(120, 40, '2');
    filter(&mut app, "coin:btc");
    assert_eq!(
        shown_ids(&app, Pane::Inbox),
        [ID_FRESH, ID_APPROVED],
        "BTC rows only (the close-all names no coin)"
    );
    app.update(code(KeyCode::Esc));
    assert_eq!(shown_ids(&app, Pane::Inbox).len(), 6);
    assert_eq!(app.tables().query(Pane::Inbox).filter, "");

    // A mistyped field shows nothing and says which fields there are, never everything.
    filter(&mut app, "staus:pending");
    assert!(shown_ids(&app, Pane::Inbox).is_empty());
    let text = render(&app);
    assert!(text.contains("no field \"staus\""), "{text}");
    assert!(text.contains("status"), "{text}");
    // Esc while typing clears it as well.
    app.update(key('/'));
    app.update(code(KeyCode::Esc));
    assert_eq!(shown_ids(&app, Pane::Inbox).len(), 6);
}

#[test]
fn a_key_never_acts_on_a_proposal_the_filter_hides() {
    let mut app = on_tab(120, 40, '2');
    app.select_proposal(Pane::Inbox, ID_FRESH);
    // Nothing matches: the last selection stays named, but a and x do nothing.
    filter(&mut app, "agent:nobody");
    app.toasts_mut().clear();
    let fx = press(&mut app, 'a');
    assert!(app.modal().is_none(), "{:?}", app.modal());
    assert!(confirms(&fx).is_empty());
    let fx = press(&mut app, 'x');
    assert!(journal_lines(&fx).is_empty(), "{fx:?}");
    assert!(
        toasts(&app).contains("not in the list shown"),
        "{}",
        toasts(&app)
    );
    // A filter that shows it: a opens the dialog on the row shown.
    app.update(code(KeyCode::Esc));
    filter(&mut app, "short");
    assert_eq!(shown_ids(&app, Pane::Inbox), [ID_AMBER, ID_APPROVED]);
    app.update(key('g'));
    press(&mut app, 'a');
    assert!(
        matches!(app.modal(), Some(Modal::Approve(d)) if d.id == ID_AMBER),
        "{:?}",
        app.modal()
    );
}

#[test]
fn s_sorts_by_the_next_field_and_capital_s_reverses() {
    let mut app = on_tab(120, 40, '1');
    assert_eq!(app.focused_pane(), Pane::Positions);
    let coins = |app: &App| -> Vec<String> {
        let view = app.tables().view(Pane::Positions).unwrap();
        view.order()
            .iter()
            .map(|r| app.account().positions[*r].coin.clone())
            .collect()
    };
    let before = coins(&app);
    press(&mut app, 's');
    press(&mut app, 's');
    let by_coin = coins(&app);
    let mut sorted = before.clone();
    sorted.sort();
    assert_eq!(by_coin, sorted);
    press(&mut app, 'S');
    let mut reversed = sorted.clone();
    reversed.reverse();
    assert_eq!(coins(&app), reversed);
    let text = render(&app);
    assert!(text.contains("[sort coin ↓]"), "{text}");
}

#[test]
fn a_header_click_sorts_by_that_column_and_again_reverses() {
    let mut app = on_tab(120, 40, '1');
    let screen = layout::compute(120, 40, &app.shape());
    let area = screen.pane(Pane::Orders);
    let rows = app.rows_of(Pane::Orders).unwrap();
    // The x of the Size column's header, as it is drawn.
    let x = (area.x..area.x + area.width)
        .find(|x| crate::console::table::header_at(rows.cols(), area, *x) == Some("Size"))
        .expect("a Size header");
    drop(rows);
    click(&mut app, x, area.y + 1);
    let sizes = |app: &App| -> Vec<f64> {
        let view = app.tables().view(Pane::Orders).unwrap();
        view.order()
            .iter()
            .map(|r| app.account().orders[*r].sz)
            .collect()
    };
    let first = sizes(&app);
    assert!(
        first.windows(2).all(|w| w[0] >= w[1]),
        "largest first: {first:?}"
    );
    click(&mut app, x, area.y + 1);
    let second = sizes(&app);
    assert!(second.windows(2).all(|w| w[0] <= w[1]), "{second:?}");
    assert!(render(&app).contains("[sort size ↑]"));
}

#[test]
fn c_copies_the_selected_rows_id_from_any_table() {
    let mut app = on_tab(120, 40, '1');
    app.update(code(KeyCode::Tab));
    assert_eq!(app.focused_pane(), Pane::Orders);
    let fx = press(&mut app, 'c');
    let oid = app.account().orders[app.row(Pane::Orders).unwrap()]
        .oid
        .to_string();
    use base64::Engine;
    let expected = base64::engine::general_purpose::STANDARD.encode(oid.as_bytes());
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::Clipboard(s) if s.expose() == expected)),
        "{fx:?}"
    );
    assert!(
        toasts(&app).contains(&format!("copied {oid}")),
        "{}",
        toasts(&app)
    );
}

#[test]
fn each_log_table_has_its_own_filter() {
    let mut app = on_tab(160, 45, '3');
    assert_eq!(app.focused_pane(), Pane::Audit);
    app.update(code(KeyCode::Tab));
    assert_eq!(app.focused_pane(), Pane::Requests);
    filter(&mut app, "operation:nothing_like_this");
    assert_eq!(app.pane_len(Pane::Requests), 0);
    assert_eq!(app.tables().query(Pane::Audit).filter, "");
    let text = render(&app);
    assert!(
        text.contains("nothing matches /operation:nothing_like_this"),
        "{text}"
    );
}

#[test]
fn items_staged_within_one_second_list_the_older_first() {
    // The countdowns both read 4:59; the one staged 300 ms earlier has less time left.
    let mut app = staged_app();
    let mut later = btc_long("prop_later", t0() + ms(300));
    later.preview.coin = "ETH".into();
    app.update(proposals(vec![btc_long(ID, t0()), later], t0() + ms(400)));
    assert_eq!(shown_ids(&app, Pane::Inbox), [ID, "prop_later"]);
}

#[test]
fn an_expiry_between_two_ticks_of_one_second_keeps_the_strips_cursor_on_its_proposal() {
    let mut app = staged_app();
    let due = |id: &str, ms_left: i64| {
        let mut p = btc_long(id, t0());
        p.expires_at = Some(t0() + ms(ms_left));
        p
    };
    app.update(proposals(
        vec![
            btc_long(ID, t0()),
            due("prop_a", 100_000),
            due("prop_b", 50_000),
            due("prop_c", 1_500),
        ],
        t0() + ms(100),
    ));
    app.update(code(KeyCode::BackTab));
    assert_eq!(app.focused_pane(), Pane::Strip);
    app.select_proposal(Pane::Strip, "prop_b");
    // A rebuild in second 1 while C still counts down, then C expires and a tick comes in the
    // same second (a poll's wakeup): the strip has one row less.
    tick(&mut app, t0() + ms(1_100));
    tick(&mut app, t0() + ms(1_700));
    let shown = shown_ids(&app, Pane::Strip);
    assert_eq!(shown, ["prop_b", "prop_a", ID]);
    assert_eq!(shown[app.selected(Pane::Strip)], "prop_b");
}

#[test]
fn u_does_not_take_back_a_dismissal_the_filter_hides() {
    use crate::console::inbox::LocalState;
    let mut app = on_tab(120, 40, '2');
    app.select_proposal(Pane::Inbox, ID_AMBER);
    press(&mut app, 'x');
    // The ETH short is dismissed (a final question first on some setups: answer it).
    if app.modal().is_some() {
        yes(&mut app);
    }
    assert_eq!(app.item(ID_AMBER).unwrap().local, LocalState::Rejected);
    filter(&mut app, "coin:btc");
    app.toasts_mut().clear();
    let fx = press(&mut app, 'u');
    assert!(journal_lines(&fx).is_empty(), "{fx:?}");
    assert_eq!(app.item(ID_AMBER).unwrap().local, LocalState::Rejected);
    assert!(
        toasts(&app).contains("not in the list shown"),
        "{}",
        toasts(&app)
    );
    // Shown again, u takes it back.
    app.update(code(KeyCode::Esc));
    app.select_proposal(Pane::Inbox, ID_AMBER);
    press(&mut app, 'u');
    assert_eq!(app.item(ID_AMBER).unwrap().local, LocalState::None);
}
