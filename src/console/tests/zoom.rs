//! `z` zooms the focused pane to the whole screen and back (issue 37): the rest of the tab is
//! not drawn and takes no click, the footer says how to get back first, the zoom follows the
//! focus, and another tab comes in its own layout.

use super::fixtures::*;
use crate::console::layout::{self, Pane};
use crate::console::tab::Tab;
use crossterm::event::KeyCode;

fn screen(app: &App) -> layout::Screen {
    let (w, h) = app.size();
    layout::compute(w, h, &app.shape())
}

use crate::console::app::App;

#[test]
fn z_puts_the_focused_pane_on_the_whole_body_and_z_again_brings_the_layout_back() {
    let mut app = seeded_app(120, 40);
    app.update(key('2'));
    let before = screen(&app);
    let inbox = before.pane(Pane::Inbox);
    assert!(
        before.detail.height > 0,
        "the detail panel is beside the list"
    );
    app.update(key('z'));
    assert_eq!(app.zoomed(), Some(Pane::Inbox));
    let zoomed = screen(&app);
    let body = zoomed.pane(Pane::Inbox);
    assert!(body.width == 120 && body.height > inbox.height, "{body:?}");
    assert_eq!(zoomed.detail, Default::default());
    assert_eq!(zoomed.pane(Pane::Decisions), Default::default());
    let text = render(&app);
    let footer = text.lines().rev().nth(1).unwrap();
    assert!(
        footer.trim_start().starts_with("z ZOOMED: back"),
        "{footer}"
    );
    app.update(key('z'));
    assert_eq!(app.zoomed(), None);
    assert_eq!(screen(&app).pane(Pane::Inbox), inbox);
}

#[test]
fn the_zoom_follows_the_focus_and_another_tab_comes_unzoomed() {
    let mut app = seeded_app(120, 40);
    app.update(key('2'));
    app.update(key('z'));
    app.update(code(KeyCode::Tab));
    assert_eq!(app.focused_pane(), Pane::Detail);
    assert_eq!(app.zoomed(), Some(Pane::Detail));
    // The detail is drawn from its own rect: zoomed, that is the whole body.
    assert_eq!(screen(&app).detail, screen(&app).pane(Pane::Detail));
    assert!(screen(&app).detail.height > 30);
    app.update(code(KeyCode::Tab));
    assert_eq!(app.focused_pane(), Pane::Decisions);
    assert_eq!(
        app.zoomed(),
        Some(Pane::Decisions),
        "keys act on the pane in sight"
    );
    assert!(screen(&app).pane(Pane::Decisions).height > 30);
    app.update(key('1'));
    assert_eq!(app.tab(), Tab::Desk);
    assert_eq!(app.zoomed(), None);
    assert!(screen(&app).pane(Pane::Positions).height > 0);
    assert!(screen(&app).pane(Pane::Strip).height > 0);
}

#[test]
fn zoom_inbox_80x24() {
    let mut app = seeded_app(80, 24);
    app.update(key('2'));
    app.update(key('z'));
    let text = render(&app);
    insta::assert_snapshot!("zoom_inbox_80x24", text);
    assert!(text.contains("ZOOMED"), "{text}");
}
