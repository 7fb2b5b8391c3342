//! `?` then `/` searches the help (issue 37): only the keys and commands that mention what is
//! typed are shown; Enter keeps the search, Esc clears it, and Esc again closes the help.

use super::fixtures::*;
use crate::console::modal::Modal;
use crossterm::event::KeyCode;

#[test]
fn the_help_is_searched_for_what_is_typed_after_a_slash() {
    let mut app = seeded_app(120, 40);
    app.update(key('?'));
    assert!(render(&app).contains("/ search"));
    app.update(key('/'));
    type_text(&mut app, "zoom");
    let text = render(&app);
    assert!(text.contains("search: zoom"), "{text}");
    assert!(text.contains("zoom the focused pane"), "{text}");
    assert!(!text.contains("refresh everything now"), "{text}");
    // Commands are found by their summary too, usage and summary together.
    app.update(code(KeyCode::Esc));
    app.update(key('/'));
    type_text(&mut app, "suspend");
    let text = render(&app);
    assert!(text.contains("/suspend"), "{text}");
    app.update(code(KeyCode::Enter));
    assert!(matches!(
        app.modal(),
        Some(Modal::Help { typing: false, .. })
    ));
    // Typed letters while searching are text, not keys: q does not quit, y decides nothing.
    app.update(key('/'));
    let fx = app.update(key('q'));
    assert!(fx.is_empty(), "{fx:?}");
    assert!(render(&app).contains("search: suspendq"));
    app.update(code(KeyCode::Esc));
    assert!(render(&app).contains("refresh everything now"), "cleared");
    app.update(code(KeyCode::Esc));
    assert!(app.modal().is_none(), "a second Esc closes the help");
}
