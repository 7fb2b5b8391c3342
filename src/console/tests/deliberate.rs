//! Money moves only on a deliberate act (`console/deliberate.rs`), driven as a person would: keys
//! at a person's pace with the clock moving between them, pastes (bracketed, and as raw keys on a
//! terminal that does not bracket them), the reject question, and random sequences. Judged by the
//! effects that decide (what would reach the gateway or the service), never by what is shown.

use super::fixtures::*;
use super::gate::{DEMO_ID, MINE_ID, gate_app};
use crate::console::action::{Action, Effect};
use crate::console::app::App;
use crate::console::deliberate::{AFTER_TYPING, BURST, HOLD, QUIET, SETTLE};
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use chrono::{DateTime, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use proptest::prelude::*;

/// What a person does at one moment.
#[derive(Debug, Clone, PartialEq)]
enum Input {
    Key(KeyCode),
    Paste(String),
}

fn ch(c: char) -> Input {
    Input::Key(KeyCode::Char(c))
}

/// Text typed key by key (`\n` is Enter).
fn typed(text: &str) -> Vec<Input> {
    text.chars()
        .map(|c| {
            if c == '\n' {
                Input::Key(KeyCode::Enter)
            } else {
                ch(c)
            }
        })
        .collect()
}

/// Every effect that decides something: an approval, a rejection, an execution, a switch.
fn decisions(fx: &[Effect]) -> Vec<Effect> {
    fx.iter()
        .filter(|e| {
            matches!(
                e,
                Effect::GateApprove(_)
                    | Effect::GateApproveOverride { .. }
                    | Effect::GateReject { .. }
                    | Effect::Confirm(_)
                    | Effect::GateSetKill { .. }
                    | Effect::GateCreateStanding(_)
                    | Effect::Trade(_)
                    | Effect::ExecuteTool { .. }
                    | Effect::StopResearch(_)
            )
        })
        .cloned()
        .collect()
}

/// Every line the console said (toasts and errors), newest first.
fn said(app: &App) -> Vec<String> {
    app.messages().iter().map(|m| m.text.clone()).collect()
}

/// A person at the keyboard: the clock moves to each input's time (as the event loop's would),
/// and every effect is kept.
struct Person {
    app: App,
    now: DateTime<Utc>,
    fx: Vec<Effect>,
}

impl Person {
    fn new(app: App) -> Person {
        let now = app.now();
        Person {
            app,
            now,
            fx: Vec::new(),
        }
    }

    fn wait(&mut self, ms_: i64) {
        self.now += ms(ms_);
        let fx = self.app.update(Action::Tick(self.now));
        self.fx.extend(fx);
    }

    fn input(&mut self, input: &Input) {
        // The event loop stamps every input with the wall clock before it is handled.
        self.app.set_clock(self.now);
        let action = match input {
            Input::Key(code) => Action::Key(KeyEvent::new(*code, KeyModifiers::NONE)),
            Input::Paste(text) => Action::Paste(text.clone()),
        };
        let fx = self.app.update(action);
        self.fx.extend(fx);
    }

    /// `inputs`, `gap` ms apart, the first `gap` ms from now.
    fn paced(&mut self, inputs: &[Input], gap: i64) {
        for i in inputs {
            self.wait(gap);
            self.input(i);
        }
    }

    /// Lets every held decision fall due, then the decisions taken.
    fn decided(&mut self) -> Vec<Effect> {
        self.wait(5_000);
        decisions(&self.fx)
    }
}

/// A console on a gateway with two pending items (A = the demo agent's, B = another agent's),
/// the approve dialog open on B and read, A still in the list.
fn dialog_open_on_b() -> Person {
    let mut app = gate_app(120, 40);
    app.select_proposal(Pane::Inbox, MINE_ID);
    let mut p = Person::new(app);
    p.wait(2_000);
    p.input(&ch('a'));
    assert!(
        matches!(&p.app.modal(), Some(Modal::Approve(d)) if d.id == MINE_ID),
        "{:?}",
        p.app.modal()
    );
    p.wait(2_000);
    p
}

#[test]
fn a_command_typed_at_a_persons_pace_with_the_dialog_open_decides_nothing() {
    for gap in [300, 500, 700, 1_000, 1_100] {
        for text in [":/research say hello\n", ":/policy\n", ":layout away\n"] {
            let mut p = dialog_open_on_b();
            p.paced(&typed(text), gap);
            assert_eq!(p.decided(), vec![], "{text:?} at {gap} ms a key");
            // Nothing moved under the person either: B is still the one selected.
            assert_eq!(
                p.app.selection(Pane::Inbox).id.as_deref(),
                Some(MINE_ID),
                "{text:?} at {gap} ms"
            );
        }
    }
}

/// Found driving it: at 1.6 s a key every key came "after a quiet moment", so the `a` of
/// "research" reopened the dialog and the `y` of "say" approved. Keys that showed typing keep
/// dialogs shut for longer, at any slow pace a person types at.
#[test]
fn a_command_typed_slowly_with_the_dialog_open_decides_nothing() {
    for gap in [1_600, 2_000, 2_900] {
        let mut p = dialog_open_on_b();
        p.paced(&typed(":/research say hello\n"), gap);
        assert_eq!(p.decided(), vec![], "at {gap} ms a key");
    }
    // After the typing, a quiet moment long enough, and a deliberate a then y approve.
    let mut p = dialog_open_on_b();
    p.paced(&typed(":/research say hello\n"), 1_600);
    p.wait(AFTER_TYPING.num_milliseconds() + 100);
    p.input(&ch('a'));
    assert!(matches!(&p.app.modal(), Some(Modal::Approve(_))));
    p.paced(&[ch('y')], 1_500);
    assert_eq!(p.decided().len(), 1);
}

/// Found driving it: "yeah" typed into the open dialog approved (its `y` stood alone, a second
/// after the opening); "yes yes" into the kill switch question turned it on. The decision of a
/// `y` waits for the keyboard to stay quiet, and the next letter cancels it.
#[test]
fn a_word_that_starts_with_y_typed_into_a_question_decides_nothing() {
    for gap in [300, 700, 1_000, 1_400] {
        let mut p = dialog_open_on_b();
        p.paced(&typed("yeah"), gap);
        assert_eq!(p.decided(), vec![], "yeah at {gap} ms a key");
        assert!(p.app.modal().is_none(), "{:?}", p.app.modal());
    }
    let mut p = Person::new(gate_app(120, 40));
    p.wait(2_000);
    p.paced(&typed(":/kill drill\n"), 5);
    assert!(matches!(&p.app.modal(), Some(Modal::Confirm(_))));
    p.wait(1_500);
    p.paced(&typed("yes yes"), 300);
    assert_eq!(p.decided(), vec![]);
    // While it is held the question stays open and says any key cancels.
    let mut p = dialog_open_on_b();
    p.input(&ch('y'));
    p.wait(100);
    assert!(matches!(&p.app.modal(), Some(Modal::Approve(_))));
    assert!(
        render(&p.app).contains("any key cancels"),
        "{}",
        render(&p.app)
    );
    p.wait(HOLD.num_milliseconds());
    assert_eq!(p.decided(), vec![Effect::GateApprove(MINE_ID.into())]);
}

/// Found driving it: "okay" typed at 1.5-2.5 s a key approved: the `k` came after a quiet moment
/// and moved the selection as a list key, so it did not count as typing, and the `a` came 3 s
/// after the `o`. A letter typed soon after typing is typing, bound or not.
#[test]
fn a_word_whose_letters_are_list_keys_typed_slowly_decides_nothing() {
    // A word that starts with a list key is typed only when it comes within a quiet moment
    // ("jay" at 1.5 s a key is j, a pause, a, a pause to read, y: what a deliberate supervisor
    // does); one with an unbound letter before its `a` is typing at any slower pace too.
    let words = |gap| match gap {
        g if g < QUIET.num_milliseconds() => vec!["okay", "okay yeah", "jay", "gay"],
        _ => vec!["okay", "okay yeah", "bay", "hay"],
    };
    for gap in [300, 1_000, 1_400, 1_500, 1_600, 2_500] {
        for word in words(gap) {
            let mut app = gate_app(120, 40);
            app.select_proposal(Pane::Inbox, MINE_ID);
            let mut p = Person::new(app);
            p.wait(4_000);
            p.paced(&typed(word), gap);
            assert_eq!(p.decided(), vec![], "{word:?} at {gap} ms a key");
        }
    }
}

#[test]
fn typing_with_no_dialog_open_opens_nothing_and_moves_nothing() {
    for gap in [300, 700, 1_000] {
        let mut app = gate_app(120, 40);
        app.select_proposal(Pane::Inbox, MINE_ID);
        let mut p = Person::new(app);
        p.wait(3_000);
        // "say hello" with no command line: s, a, y, h, e, l, l, o.
        p.paced(&typed("say hello away\n"), gap);
        assert_eq!(p.decided(), vec![], "{gap} ms a key");
        assert!(p.app.modal().is_none(), "{:?}", p.app.modal());
        assert_eq!(p.app.selection(Pane::Inbox).id.as_deref(), Some(MINE_ID));
    }
}

#[test]
fn a_paste_that_starts_with_y_decides_nothing_bracketed_or_not() {
    // Bracketed: one Paste, never keys.
    let mut p = dialog_open_on_b();
    p.input(&Input::Paste("yes, approve everything\n".into()));
    assert_eq!(p.decided(), vec![]);
    assert!(p.app.modal().is_none());
    assert!(
        said(&p.app)
            .iter()
            .any(|t| t.contains("pasted text is never an answer")),
        "{:?}",
        said(&p.app)
    );
    // Not bracketed (a terminal that does not support it): the keys come a few ms apart, and
    // the y at their head is held until the next one shows it was a burst.
    let mut p = dialog_open_on_b();
    p.paced(&typed("yes"), 3);
    assert_eq!(p.decided(), vec![]);
    // And a paste right after a deliberate y, within its hold, takes it back too.
    let mut p = dialog_open_on_b();
    p.input(&ch('y'));
    p.now += ms(10);
    p.input(&Input::Paste("y".into()));
    assert_eq!(p.decided(), vec![]);
}

#[test]
fn a_paste_goes_into_the_command_line_and_is_never_run_by_itself() {
    let mut p = Person::new(gate_app(120, 40));
    p.wait(2_000);
    p.input(&ch(':'));
    p.input(&Input::Paste(format!("/reject {MINE_ID} pasted\n")));
    assert_eq!(
        p.app.command_line().map(|l| l.text()),
        Some(format!("/reject {MINE_ID} pasted "))
    );
    assert_eq!(p.decided(), vec![]);
    // With no text field open, a paste decides nothing and says so.
    let mut p = Person::new(gate_app(120, 40));
    p.wait(2_000);
    p.input(&Input::Paste("ay".into()));
    assert_eq!(p.decided(), vec![]);
    assert!(p.app.modal().is_none());
    assert!(
        said(&p.app)
            .iter()
            .any(|t| t.contains("pasted text ignored")),
        "{:?}",
        said(&p.app)
    );
}

#[test]
fn the_reject_question_has_the_approve_dialogs_guard() {
    let open = || {
        let mut app = gate_app(120, 40);
        app.select_proposal(Pane::Inbox, DEMO_ID);
        let mut p = Person::new(app);
        p.wait(2_000);
        p.input(&ch('x'));
        assert!(matches!(&p.app.modal(), Some(Modal::Confirm(_))));
        p
    };
    // x and y together; x then y 120 ms later; a command typed at 150 ms a key.
    let mut p = open();
    p.now += ms(1);
    p.input(&ch('y'));
    assert_eq!(p.decided(), vec![]);
    let mut p = open();
    p.paced(&[ch('y')], 120);
    assert_eq!(p.decided(), vec![]);
    let mut p = open();
    p.paced(&typed(":/research say yes\n"), 150);
    assert_eq!(p.decided(), vec![]);
    let mut p = open();
    p.wait(1_500);
    p.paced(&typed("say yes\n"), 400);
    assert_eq!(p.decided(), vec![]);
    // The positive control: x, a pause to read, y.
    let mut p = open();
    p.paced(&[ch('y')], SETTLE.num_milliseconds() + 200);
    assert_eq!(
        p.decided(),
        vec![Effect::GateReject {
            id: DEMO_ID.into(),
            reason: crate::console::gate::DEFAULT_REJECT_REASON.into()
        }]
    );
}

#[test]
fn a_then_a_pause_to_read_then_y_approves_in_one_step() {
    let mut p = dialog_open_on_b();
    p.input(&ch('y'));
    assert_eq!(p.decided(), vec![Effect::GateApprove(MINE_ID.into())]);
}

#[test]
fn a_key_inside_a_run_opens_no_dialog_and_nor_does_one_right_after_a_dialog_closed() {
    let mut app = gate_app(120, 40);
    app.select_proposal(Pane::Inbox, MINE_ID);
    let mut p = Person::new(app);
    p.wait(3_000);
    // j then a half a second later: the a is part of a run.
    p.paced(&[ch('j'), ch('a')], 500);
    assert!(p.app.modal().is_none(), "{:?}", p.app.modal());
    // A stray key closes a dialog; an a within the pause after it opens nothing.
    let mut p = dialog_open_on_b();
    p.paced(&[ch('q'), ch('a'), ch('y')], 800);
    assert!(p.app.modal().is_none(), "{:?}", p.app.modal());
    assert_eq!(p.decided(), vec![]);
    // After a quiet moment keys act again.
    let quiet = QUIET.num_milliseconds() + 100;
    p.paced(&[ch('a')], quiet);
    assert!(matches!(&p.app.modal(), Some(Modal::Approve(_))));
}

#[test]
fn h_and_l_move_no_inbox_selection() {
    let mut app = gate_app(120, 40);
    app.select_proposal(Pane::Inbox, MINE_ID);
    for c in ['h', 'l'] {
        press(&mut app, c);
        assert_eq!(app.selection(Pane::Inbox).id.as_deref(), Some(MINE_ID));
    }
}

#[test]
fn an_item_that_expires_with_its_dialog_open_offers_only_closing() {
    let mut p = dialog_open_on_b();
    p.wait(5 * 60 * 1000);
    let screen = render(&p.app);
    assert!(!screen.contains("approve and execute"), "{screen}");
    assert!(screen.contains("nothing to approve"), "{screen}");
    p.input(&ch('y'));
    assert_eq!(p.decided(), vec![]);
}

/// The inputs a fuzzed person uses: the deciding and opening keys, list keys, a command line's
/// way in and out, and pastes.
fn any_input() -> impl Strategy<Value = Input> {
    prop_oneof![
        4 => Just(ch('a')),
        3 => Just(ch('x')),
        5 => Just(ch('y')),
        2 => Just(ch('j')),
        2 => Just(ch('k')),
        1 => Just(ch('h')),
        1 => Just(ch('s')),
        1 => Just(ch('e')),
        1 => Just(ch('q')),
        1 => Just(ch(':')),
        1 => Just(ch('/')),
        1 => Just(Input::Key(KeyCode::Enter)),
        1 => Just(Input::Key(KeyCode::Esc)),
        1 => Just(Input::Paste("y".into())),
        1 => Just(Input::Paste("yes\n".into())),
    ]
}

/// Gaps from a burst's few ms to a reader's seconds, most of them a typist's.
fn any_gap() -> impl Strategy<Value = i64> {
    prop_oneof![
        2 => 0i64..60,
        5 => 60i64..1_600,
        2 => 1_600i64..3_000,
    ]
}

/// Whether the sequence holds a deliberate act: an opening key (`a`, `x`) after a quiet moment,
/// then (with only scrolling keys between) a `y` once the dialog could be read, standing on its
/// own (no key within a burst before or after it). The keyboard was quiet for `before` ms before
/// the first input.
fn holds_a_deliberate_act(seq: &[(i64, Input)], before: i64) -> bool {
    let quiet_before = |i: usize| seq[i].0 + if i == 0 { before } else { 0 };
    let mut t = Vec::with_capacity(seq.len());
    let mut now = 0;
    for (gap, _) in seq {
        now += gap;
        t.push(now);
    }
    let burst = BURST.num_milliseconds();
    (0..seq.len()).any(|i| {
        let opener = matches!(seq[i].1, Input::Key(KeyCode::Char('a' | 'x')));
        if !opener || quiet_before(i) < QUIET.num_milliseconds() {
            return false;
        }
        for j in i + 1..seq.len() {
            match &seq[j].1 {
                Input::Key(KeyCode::Char('j' | 'k')) => continue,
                Input::Key(KeyCode::Char('y')) => {
                    let counts = t[j] - t[i] >= SETTLE.num_milliseconds() && seq[j].0 >= burst;
                    if !counts {
                        // Too soon or in a burst: refused, and the dialog stays open.
                        continue;
                    }
                    // Held: decided unless a key follows within the hold.
                    return seq
                        .get(j + 1)
                        .is_none_or(|(g, _)| *g >= HOLD.num_milliseconds());
                }
                _ => return false,
            }
        }
        false
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// For random keys at random times with no deliberate `a` ⟶ pause ⟶ `y` in them, nothing
    /// is decided on any item.
    #[test]
    fn nothing_is_decided_without_a_deliberate_act(
        seq in prop::collection::vec((any_gap(), any_input()), 1..40)
    ) {
        let mut p = Person::new(gate_app(120, 40));
        p.wait(3_000);
        for (gap, input) in &seq {
            p.now += ms(*gap);
            p.input(input);
        }
        let decided = p.decided();
        if !holds_a_deliberate_act(&seq, 3_000) {
            prop_assert_eq!(decided, vec![], "{:?}", seq);
        } else {
            // Even a deliberate act decides one thing at a time.
            prop_assert!(decided.len() <= seq.len(), "{:?}", seq);
        }
    }
}

#[test]
fn a_decision_on_a_gateway_journals_its_agent_and_an_expired_item_is_journaled_once() {
    let mut app = gate_app(120, 40);
    app.select_proposal(Pane::Inbox, DEMO_ID);
    let mut p = Person::new(app);
    p.wait(2_000);
    p.input(&ch('x'));
    p.wait(1_500);
    p.input(&ch('y'));
    p.wait(100);
    let mut rejected = super::gate::demo_item("rejected");
    rejected.reason = Some(crate::console::gate::DEFAULT_REJECT_REASON.into());
    let fx = p
        .app
        .update(super::gate::decided(DEMO_ID, false, Ok(rejected)));
    let lines = journal_lines(&fx);
    assert_eq!(lines.len(), 1, "{fx:?}");
    assert_eq!(lines[0]["decision"], "rejected");
    assert_eq!(lines[0]["agent"]["name"], "demo-agent");
    assert_eq!(lines[0]["agent"]["fingerprint"], "a1b2c3d4");

    // A gateway still listing an item that expired before this console started: never
    // journaled (it was not this console's to decide), however often the console starts.
    let mut app = seeded_app(120, 40);
    app.inbox_mut().fixture_clear();
    let (mut items, agents) = super::gate::two_agents();
    for i in &mut items {
        i.expires_at = Some(t0() - secs(10));
    }
    let mut fx = app.update(super::gate::gate_loaded(items, agents, t0()));
    fx.extend(app.update(Action::Tick(t0() + secs(2))));
    assert!(journal_lines(&fx).is_empty(), "{fx:?}");
}

/// Found driving it: typing at 2 s a key, the line that keys are paused had gone by the time the
/// `a` was refused, so the screen said nothing. It stays while the pause lasts, and whatever
/// closed a question or cancelled a decision says the keys after it are paused too.
#[test]
fn the_pause_is_said_for_as_long_as_it_lasts() {
    let line = crate::console::deliberate::paused_line();
    let shown = |app: &App| {
        app.toasts()
            .iter()
            .any(|t| t.text.ends_with(&line) && t.until > app.now())
    };
    let mut app = gate_app(120, 40);
    app.select_proposal(Pane::Inbox, MINE_ID);
    let mut p = Person::new(app);
    p.wait(4_000);
    for c in "hello say".chars() {
        p.wait(2_000);
        p.input(&ch(c));
        assert!(shown(&p.app), "after {c:?}: {:?}", said(&p.app));
    }
    // A cancelled decision says so, and that the keys after it are paused.
    let mut p = dialog_open_on_b();
    p.input(&ch('y'));
    p.wait(300);
    p.input(&ch('e'));
    p.wait(300);
    p.input(&ch('s'));
    assert!(shown(&p.app));
    assert!(
        said(&p.app)
            .iter()
            .any(|t| t.starts_with("the key that decided was followed by another key")),
        "{:?}",
        said(&p.app)
    );
}

/// Found driving it: the reject question's last line ("... any other key closes it without
/// deciding.") wrapped and was cut; a question is as high as its wrapped lines.
#[test]
fn the_reject_question_shows_its_keys_line_whole() {
    let mut app = gate_app(120, 40);
    app.select_proposal(Pane::Inbox, DEMO_ID);
    press(&mut app, 'x');
    let screen = render(&app);
    // Wrapped at the question's width, its last word on a line of its own, inside the border.
    assert!(
        screen.contains("closes it without") && screen.contains("│deciding."),
        "{screen}"
    );
}
