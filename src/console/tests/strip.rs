//! The Desk's strip of staged proposals on a gateway says which agent staged each one, as the
//! inbox does (issue 37): a supervisor approving from the Desk sees who is asking.

use super::fixtures::*;
use super::gate::gate_app;

#[test]
fn on_a_gateway_the_desk_strip_has_an_agent_column() {
    let mut app = gate_app(140, 40);
    app.update(key('1'));
    let text = render(&app);
    let header = text
        .lines()
        .find(|l| l.contains("Time left") && l.contains("Proposal"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(header.contains("Agent"), "{header}");
    let row = text
        .lines()
        .find(|l| l.contains("0.25 ETH"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains("demo-agent"), "{row}");
}

/// `c` puts the selected proposal's id on the terminal's clipboard (OSC 52), on the Desk and in
/// Proposals, and says so; elsewhere it says there is nothing to copy.
#[test]
fn c_copies_the_selected_proposals_id() {
    use crate::console::action::Effect;
    use base64::Engine;
    let mut app = gate_app(140, 40);
    super::gate::approve_demo(&mut app);
    app.update(crossterm_esc());
    let fx = app.update(key('c'));
    let copied: Vec<String> = fx
        .iter()
        .filter_map(|e| match e {
            Effect::Clipboard(s) => Some(s.expose().to_string()),
            _ => None,
        })
        .collect();
    let want = base64::engine::general_purpose::STANDARD.encode(super::gate::DEMO_ID);
    assert_eq!(copied, [want]);
    assert!(
        app.toasts()
            .iter()
            .any(|t| t.text.contains(super::gate::DEMO_ID) && t.text.contains("OSC 52")),
        "{:?}",
        app.toasts()
    );
    app.update(key('5'));
    let fx = app.update(key('c'));
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::Clipboard(_))),
        "{fx:?}"
    );
}

fn crossterm_esc() -> crate::console::action::Action {
    code(crossterm::event::KeyCode::Esc)
}
