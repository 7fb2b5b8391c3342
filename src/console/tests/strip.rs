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
