//! The approve dialog as a component: its state (scroll, the gateway's live re-check, the
//! override step, when it opened and when its last key came) and the rules of its keys, as a
//! pure function of a key, the time and what the dialog is about (`Context`). `App` builds the
//! context and performs the outcome; nothing here touches `App`, so every rule is tested with
//! keys and times alone.
//!
//! The dialog decides money, so it takes only deliberate keys, by the rule every final question
//! shares (`console/deliberate.rs`):
//! - `y` approves, `n`/Esc cancels, the movement keys scroll; any other key closes it with a line
//!   saying so, and goes nowhere else.
//! - A `y` within `deliberate::SETTLE` of the opening, or within `deliberate::BURST` of the key
//!   before it, decides nothing; one that counts is still held by `App` until the keyboard
//!   stays quiet.
//! - Overriding a broken rule is its own step: `o`, then type the coin and Enter. `o` then `y`
//!   never approves.
//! - Under the kill switch there is no override to offer; an item that expired with the dialog
//!   open offers nothing but closing.

use crate::console::deliberate::{Deliberate, closed_by};
use crate::console::gate::guard::ApproveCheck;
use crate::console::keymap::{KeyAction, KeyBinding};
use crate::console::theme::Theme;
use chrono::{DateTime, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};

/// The longest text the override step takes: a coin's name, with room for typos to show.
const TYPED_MAX: usize = 24;

/// The override step: the rules to override and the word that confirms it (the coin).
#[derive(Debug, Clone, PartialEq)]
pub struct OverrideStep {
    pub rules: Vec<String>,
    pub word: String,
    pub typed: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ApproveDialog {
    /// The inbox item (a proposal id, a tool approval's `tool-N`).
    pub id: String,
    /// How far the body is scrolled (the keys line never scrolls away).
    pub scroll: u16,
    /// The settle time and the burst rule every final question shares.
    guard: Deliberate,
    /// The gateway's live re-check; gateway items only.
    pub check: Option<ApproveCheck>,
    /// Open while the supervisor types the coin to override the broken rules.
    pub step: Option<OverrideStep>,
}

/// What the dialog is about, as `App` knows it when a key arrives.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Context {
    /// The rules an approval would break (live re-check, else the staging's verdicts).
    pub breaking: Vec<String>,
    /// What the supervisor types to override: the item's coin.
    pub word: String,
    /// The kill switch's reason while it is on: nothing can be approved, so nothing overridden.
    pub kill: Option<String>,
    /// A gateway item: the only kind with rules to override.
    pub gateway: bool,
    pub max_scroll: u16,
    pub page: u16,
    /// The item can no longer be approved (it expired, or was decided elsewhere, while the dialog
    /// was open): why, as the dialog says it.
    pub gone: Option<String>,
    /// The key that approves, as the keymap binds it (the dialog says this one).
    pub yes_key: String,
    /// The approval is held for a moment (`deliberate::HOLD`): any key cancels it.
    pub deciding: bool,
    /// What `y` does on a step-up item (`None`: it approves and executes).
    pub y_does: Option<crate::console::gate::guard::YDoes>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Scrolled, typed, or nothing at all.
    Nothing,
    /// The dialog stays; the line says why the key decided nothing.
    Hint(String),
    /// The dialog closes, saying why when it was not a cancel.
    Close(Option<String>),
    /// Approve, overriding these rules (none: a plain approval).
    Approve { overrides: Vec<String> },
}

impl ApproveDialog {
    /// Opened by a key (or a command's Enter) at `now`: that key starts the settle time and is
    /// the "previous key" of the first one the dialog gets.
    pub fn new(id: &str, now: DateTime<Utc>, check: Option<ApproveCheck>) -> ApproveDialog {
        ApproveDialog {
            id: id.to_string(),
            scroll: 0,
            guard: Deliberate::new(now),
            check,
            step: None,
        }
    }

    /// Opened, and its last key came, `by` earlier: the tests' "the supervisor read it".
    #[cfg(test)]
    pub fn backdate(&mut self, by: chrono::Duration) {
        self.guard.backdate(by);
    }

    /// The check for `id`, if this dialog asked the gateway for it.
    pub fn check_for(&self, id: &str) -> Option<&ApproveCheck> {
        self.check.as_ref().filter(|c| c.id == id)
    }

    /// One key, already mapped to its action (the keymap is the user's), at `now`.
    pub fn on_key(
        &mut self,
        key: &KeyEvent,
        action: Option<KeyAction>,
        now: DateTime<Utc>,
        ctx: &Context,
    ) -> Outcome {
        let judged = self.guard.arrive(now);
        if self.step.is_some() {
            return self.on_step_key(key, judged.burst, ctx);
        }
        match action {
            Some(KeyAction::ConfirmYes) => {
                if let Some(why) = &ctx.gone {
                    return Outcome::Hint(format!("{why}: nothing to approve — esc closes"));
                }
                if let Some(why) = judged.refusal(&ctx.yes_key) {
                    return Outcome::Hint(why);
                }
                if let Some(reason) = &ctx.kill {
                    return Outcome::Hint(crate::console::gate::guard::kill_refusal(reason));
                }
                if ctx.y_does == Some(crate::console::gate::guard::YDoes::Nothing) {
                    return Outcome::Hint(format!(
                        "{}: your approval does not count (you approved it already, or staged \
                         it); another supervisor approves it — esc closes",
                        self.id
                    ));
                }
                if !ctx.breaking.is_empty() {
                    return Outcome::Hint(format!(
                        "{} breaks {}: y alone does not approve it; o, then type {}, overrides \
                         (journaled with the rule)",
                        self.id,
                        ctx.breaking.join(", "),
                        ctx.word
                    ));
                }
                Outcome::Approve {
                    overrides: Vec::new(),
                }
            }
            Some(KeyAction::Override) => {
                if let Some(reason) = &ctx.kill {
                    return Outcome::Hint(format!(
                        "the kill switch is on ({reason}): nothing can be approved, so nothing \
                         overridden; /kill off first"
                    ));
                }
                if !ctx.gateway {
                    return Outcome::Hint(
                        "o overrides a gateway's policy rule: this item has none to override"
                            .into(),
                    );
                }
                if ctx.breaking.is_empty() {
                    return Outcome::Hint(
                        "no rule is broken: nothing to override (y approves)".into(),
                    );
                }
                if let Some(why) = &ctx.gone {
                    return Outcome::Hint(format!("{why}: nothing to override — esc closes"));
                }
                if let Some(why) = judged.refusal("o") {
                    return Outcome::Hint(why);
                }
                self.step = Some(OverrideStep {
                    rules: ctx.breaking.clone(),
                    word: ctx.word.clone(),
                    typed: String::new(),
                });
                // The step's lines close the body: scrolled to, whatever the screen's height
                // (the view stops at the last line).
                self.scroll = u16::MAX;
                Outcome::Nothing
            }
            Some(KeyAction::Cancel) => Outcome::Close(None),
            Some(
                a @ (KeyAction::Up
                | KeyAction::Down
                | KeyAction::PageUp
                | KeyAction::PageDown
                | KeyAction::Top
                | KeyAction::Bottom),
            ) => {
                let cur = self.scroll.min(ctx.max_scroll) as i32;
                let page = ctx.page.max(1) as i32;
                let next = match a {
                    KeyAction::Up => cur - 1,
                    KeyAction::Down => cur + 1,
                    KeyAction::PageUp => cur - page,
                    KeyAction::PageDown => cur + page,
                    KeyAction::Top => 0,
                    _ => ctx.max_scroll as i32,
                };
                self.scroll = next.clamp(0, ctx.max_scroll as i32) as u16;
                Outcome::Nothing
            }
            _ => Outcome::Close(Some(closed_by(
                "approve dialog",
                &KeyBinding::from_event(key).to_string(),
            ))),
        }
    }

    /// The override step has the keys: letters are the coin being typed (that is what the step
    /// is for), Enter confirms only the exact coin, Esc backs out to the dialog.
    fn on_step_key(&mut self, key: &KeyEvent, burst: bool, ctx: &Context) -> Outcome {
        let Some(step) = self.step.as_mut() else {
            return Outcome::Nothing;
        };
        match key.code {
            KeyCode::Esc => {
                self.step = None;
                Outcome::Hint("override abandoned: nothing was decided".into())
            }
            KeyCode::Backspace => {
                step.typed.pop();
                Outcome::Nothing
            }
            KeyCode::Enter => {
                if burst {
                    // Typed ahead or pasted: what is in the field was not typed for this.
                    step.typed.clear();
                    return Outcome::Hint(format!(
                        "Enter came with other keys (pasted or typed ahead): nothing decided and \
                         the field cleared — type {}, then press Enter on its own",
                        step.word
                    ));
                }
                if let Some(reason) = &ctx.kill {
                    self.step = None;
                    return Outcome::Hint(crate::console::gate::guard::kill_refusal(reason));
                }
                let typed = step.typed.trim();
                if typed.is_empty() {
                    return Outcome::Hint(format!(
                        "type {} to override {}, then Enter (esc backs out)",
                        step.word,
                        step.rules.join(", ")
                    ));
                }
                if !typed.eq_ignore_ascii_case(step.word.trim()) {
                    let said = format!(
                        "`{typed}` is not {}: not overridden — type {} to override {}, esc backs out",
                        step.word,
                        step.word,
                        step.rules.join(", ")
                    );
                    step.typed.clear();
                    return Outcome::Hint(said);
                }
                // The rules as the supervisor was shown them when the step opened: a rule that
                // broke since is not overridden unseen (the gateway refuses it and says so).
                let overrides = step.rules.clone();
                self.step = None;
                Outcome::Approve { overrides }
            }
            KeyCode::Char(c)
                if !key
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
            {
                // The coin is typed, not pasted: keys in a burst (a paste on a terminal that does
                // not bracket it) empty the field.
                if burst {
                    step.typed.clear();
                    return Outcome::Hint(format!(
                        "keys came in a burst (a paste?): the coin is typed, not pasted — the \
                         field is cleared; type {}",
                        step.word
                    ));
                }
                if step.typed.chars().count() < TYPED_MAX {
                    step.typed.push(c);
                }
                Outcome::Nothing
            }
            _ => Outcome::Nothing,
        }
    }

    /// The override step's line in the body: what is overridden, and how.
    pub fn step_lines<'a>(&self, theme: &Theme) -> Vec<Line<'a>> {
        let Some(step) = &self.step else {
            return Vec::new();
        };
        vec![Line::styled(
            format!(
                "OVERRIDE {} — type {} then Enter (journaled with the rule; esc backs out)",
                step.rules.join(", "),
                step.word
            ),
            theme.critical,
        )]
    }

    /// The keys line, the longest wording that fits `width`: only the keys the dialog takes now.
    pub fn keys_line<'a>(&self, theme: &Theme, ctx: &Context, width: u16) -> Line<'a> {
        let key = |k: &str| Span::styled(format!(" {k} "), theme.selected);
        let text = |t: &str| Span::raw(t.to_string());
        let variants: Vec<Vec<Span>> = if let Some(step) = &self.step {
            // What is typed shows here, on the line that never scrolls away.
            let typed = || Span::styled(format!("{}▏", step.typed), theme.selected);
            let word = || Span::styled(step.word.clone(), theme.critical);
            vec![
                vec![
                    text(" type "),
                    word(),
                    text(&format!(" to override {}: ", step.rules.join(", "))),
                    typed(),
                    text("  "),
                    key("enter"),
                    text(" "),
                    key("esc"),
                    text(" back"),
                ],
                vec![
                    text(" type "),
                    word(),
                    text(": "),
                    typed(),
                    text("  "),
                    key("enter"),
                    text(" override  "),
                    key("esc"),
                    text(" back"),
                ],
                vec![
                    text(" type "),
                    word(),
                    text(": "),
                    typed(),
                    text(" "),
                    key("enter"),
                    key("esc"),
                ],
            ]
        } else if ctx.deciding {
            vec![
                vec![text(
                    " approving once the keyboard stays quiet a moment — any key cancels",
                )],
                vec![text(" approving — any key cancels")],
            ]
        } else if let Some(why) = &ctx.gone {
            vec![
                vec![
                    key("esc"),
                    text(&format!(" close — {why}: nothing to approve")),
                ],
                vec![key("esc"), text(" close (nothing to approve)")],
            ]
        } else if ctx.kill.is_some() {
            vec![
                vec![
                    key("esc"),
                    text(" close — the kill switch is on: nothing can be approved"),
                ],
                vec![key("esc"), text(" close (kill switch on)")],
            ]
        } else if !ctx.breaking.is_empty() {
            vec![
                vec![
                    key("o"),
                    text(" override: type the coin   "),
                    key("esc"),
                    text(" cancel   other keys close"),
                ],
                vec![
                    key("o"),
                    text(" override (type the coin)  "),
                    key("esc"),
                    text(" cancel"),
                ],
                vec![key("o"), text(" override "), key("esc"), text(" cancel")],
            ]
        } else {
            use crate::console::gate::guard::YDoes;
            let does = match ctx.y_does {
                None | Some(YDoes::Executes) => " approve and execute   ",
                Some(YDoes::Adds) => " add your approval   ",
                Some(YDoes::AddsOrExecutes) => " add your approval (may execute)   ",
                Some(YDoes::Nothing) => " (your approval does not count)   ",
            };
            vec![
                vec![
                    key(&ctx.yes_key),
                    text(does),
                    key("esc"),
                    text(" cancel   other keys close"),
                ],
                vec![key(&ctx.yes_key), text(does), key("esc"), text(" cancel")],
                vec![
                    key(&ctx.yes_key),
                    text(" approve "),
                    key("esc"),
                    text(" cancel"),
                ],
            ]
        };
        let last = variants.len() - 1;
        let chosen = variants
            .into_iter()
            .enumerate()
            .find(|(i, v)| *i == last || Line::from(v.clone()).width() <= width as usize)
            .map(|(_, v)| v)
            .unwrap_or_default();
        Line::from(chosen)
    }
}

#[cfg(test)]
mod tests {
    //! The dialog's rules as keys at times: what a supervisor typing something else, a paste, a
    //! quick `y` and the override step decide.

    use super::*;
    use crate::console::keymap::Keymap;
    use chrono::TimeZone;

    const RULE: &str = "max_notional_usd";

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 3, 14, 12, 0, 0).unwrap()
    }

    fn ms(n: i64) -> chrono::Duration {
        chrono::Duration::milliseconds(n)
    }

    fn broken() -> Context {
        Context {
            breaking: vec![RULE.into()],
            word: "BTC".into(),
            kill: None,
            gateway: true,
            max_scroll: 10,
            page: 5,
            gone: None,
            yes_key: "y".into(),
            deciding: false,
            y_does: None,
        }
    }

    fn clean() -> Context {
        Context {
            breaking: Vec::new(),
            ..broken()
        }
    }

    fn killed() -> Context {
        Context {
            kill: Some("drill".into()),
            ..broken()
        }
    }

    fn open() -> ApproveDialog {
        ApproveDialog::new("prop_1", t0(), None)
    }

    fn event(text: &str) -> KeyEvent {
        let code = match text {
            "Enter" => KeyCode::Enter,
            "Esc" => KeyCode::Esc,
            "Backspace" => KeyCode::Backspace,
            "Down" => KeyCode::Down,
            c => KeyCode::Char(c.chars().next().unwrap()),
        };
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    /// One key at `at` ms after the dialog opened.
    fn press(d: &mut ApproveDialog, ctx: &Context, text: &str, at: i64) -> Outcome {
        let key = event(text);
        let action = Keymap::default().action(&key);
        d.on_key(&key, action, t0() + ms(at), ctx)
    }

    /// `text` typed key by key from `start` ms, `gap` ms apart (`\n` is Enter), until the dialog
    /// closes; every outcome.
    fn typed(
        d: &mut ApproveDialog,
        ctx: &Context,
        text: &str,
        start: i64,
        gap: i64,
    ) -> Vec<Outcome> {
        let mut out = Vec::new();
        for (i, c) in text.chars().enumerate() {
            let key = if c == '\n' {
                "Enter".to_string()
            } else {
                c.to_string()
            };
            let o = press(d, ctx, &key, start + i as i64 * gap);
            let closed = matches!(o, Outcome::Close(_) | Outcome::Approve { .. });
            out.push(o);
            if closed {
                break;
            }
        }
        out
    }

    fn approved(out: &[Outcome]) -> bool {
        out.iter().any(|o| matches!(o, Outcome::Approve { .. }))
    }

    #[test]
    fn a_command_typed_into_the_dialog_decides_nothing_and_its_colon_closes_it() {
        // Pasted right after the dialog opened, and typed at a person's pace a while later.
        for (start, gap) in [(5, 5), (2_000, 150)] {
            for (ctx, text) in [
                (broken(), ":/policy\n"),
                (clean(), ":/research say hello"),
                (broken(), ":/close BTC"),
            ] {
                let mut d = open();
                let out = typed(&mut d, &ctx, text, start, gap);
                assert!(!approved(&out), "{text:?}: {out:?}");
                assert_eq!(d.step, None, "{text:?} armed an override");
                assert_eq!(out.len(), 1, "{text:?}: the first key closes it: {out:?}");
                match &out[0] {
                    Outcome::Close(Some(why)) => {
                        assert!(why.contains("`:` is not one of its keys"), "{why}");
                        assert!(why.contains("nothing was decided"), "{why}");
                    }
                    other => panic!("{text:?}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn a_key_it_does_not_bind_closes_it_saying_so() {
        for key in ["Enter", "x", "q", "a", "p", "/"] {
            let mut d = open();
            let out = press(&mut d, &clean(), key, 2_000);
            let Outcome::Close(Some(why)) = out else {
                panic!("{key}: {out:?}");
            };
            let name = if key == "Enter" { "enter" } else { key };
            assert!(why.contains(&format!("`{name}`")), "{key}: {why}");
        }
        // Esc and n cancel quietly; the movement keys scroll and keep it open.
        assert_eq!(
            press(&mut open(), &clean(), "Esc", 2_000),
            Outcome::Close(None)
        );
        assert_eq!(
            press(&mut open(), &clean(), "n", 2_000),
            Outcome::Close(None)
        );
        let mut d = open();
        assert_eq!(press(&mut d, &clean(), "j", 2_000), Outcome::Nothing);
        assert_eq!(press(&mut d, &clean(), "Down", 2_100), Outcome::Nothing);
        assert_eq!(d.scroll, 2);
        assert_eq!(press(&mut d, &clean(), "G", 2_200), Outcome::Nothing);
        assert_eq!(d.scroll, 10);
    }

    #[test]
    fn y_within_the_settle_time_is_ignored_and_after_it_approves() {
        let mut d = open();
        let early = crate::console::deliberate::SETTLE.num_milliseconds() - 1;
        let out = press(&mut d, &clean(), "y", early);
        assert!(
            matches!(&out, Outcome::Hint(h) if h.starts_with("too soon — read what it decides, then press y")),
            "{out:?}"
        );
        let out = press(&mut d, &clean(), "y", early + 300);
        assert_eq!(
            out,
            Outcome::Approve {
                overrides: Vec::new()
            }
        );
    }

    #[test]
    fn y_in_a_burst_of_keys_decides_nothing() {
        let mut d = open();
        assert_eq!(press(&mut d, &clean(), "j", 1_000), Outcome::Nothing);
        let out = press(
            &mut d,
            &clean(),
            "y",
            1_000 + crate::console::deliberate::BURST.num_milliseconds() - 1,
        );
        assert!(
            matches!(&out, Outcome::Hint(h) if h.contains("came with other keys")),
            "{out:?}"
        );
        // The same y on its own approves.
        assert!(matches!(
            press(&mut d, &clean(), "y", 1_500),
            Outcome::Approve { .. }
        ));
    }

    #[test]
    fn y_alone_does_not_approve_a_broken_rule() {
        let mut d = open();
        let out = press(&mut d, &broken(), "y", 2_000);
        assert!(
            matches!(&out, Outcome::Hint(h) if h.contains("breaks max_notional_usd") && h.contains("type BTC")),
            "{out:?}"
        );
    }

    #[test]
    fn o_then_y_never_approves() {
        let mut d = open();
        assert_eq!(press(&mut d, &broken(), "o", 1_000), Outcome::Nothing);
        assert!(d.step.is_some());
        // The y is a letter of the coin being typed, not an approval.
        assert_eq!(press(&mut d, &broken(), "y", 2_000), Outcome::Nothing);
        let out = press(&mut d, &broken(), "Enter", 3_000);
        assert!(
            matches!(&out, Outcome::Hint(h) if h.contains("`y` is not BTC: not overridden")),
            "{out:?}"
        );
        assert!(d.step.is_some(), "the step stays for the coin");
    }

    #[test]
    fn o_then_the_coin_typed_and_enter_approves_with_the_override() {
        let mut d = open();
        press(&mut d, &broken(), "o", 1_000);
        let out = typed(&mut d, &broken(), " btc\n", 2_000, 150);
        assert_eq!(
            out.last(),
            Some(&Outcome::Approve {
                overrides: vec![RULE.into()]
            })
        );
        assert_eq!(d.step, None);
    }

    #[test]
    fn a_wrong_coin_is_refused_with_a_message_and_may_be_typed_again() {
        let mut d = open();
        press(&mut d, &broken(), "o", 1_000);
        let out = typed(&mut d, &broken(), "ETH\n", 2_000, 150);
        assert!(!approved(&out), "{out:?}");
        assert!(
            matches!(out.last(), Some(Outcome::Hint(h)) if h.contains("`ETH` is not BTC") && h.contains(RULE)),
            "{out:?}"
        );
        assert_eq!(
            d.step.as_ref().unwrap().typed,
            "",
            "cleared for the next try"
        );
        let out = typed(&mut d, &broken(), "BTX", 3_000, 150);
        assert!(!approved(&out));
        press(&mut d, &broken(), "Backspace", 3_500);
        let out = typed(&mut d, &broken(), "C\n", 3_700, 150);
        assert!(approved(&out), "{out:?}");
    }

    #[test]
    fn esc_backs_out_of_the_override_step_and_n_is_a_letter_there() {
        let mut d = open();
        press(&mut d, &broken(), "o", 1_000);
        assert_eq!(press(&mut d, &broken(), "n", 1_500), Outcome::Nothing);
        assert_eq!(d.step.as_ref().unwrap().typed, "n");
        let out = press(&mut d, &broken(), "Esc", 2_000);
        assert!(matches!(out, Outcome::Hint(_)), "{out:?}");
        assert_eq!(d.step, None);
        // Back in the dialog: y still does not approve the broken rule.
        assert!(!matches!(
            press(&mut d, &broken(), "y", 3_000),
            Outcome::Approve { .. }
        ));
    }

    #[test]
    fn enter_of_the_override_in_a_burst_decides_nothing() {
        let mut d = open();
        press(&mut d, &broken(), "o", 1_000);
        let out = typed(&mut d, &broken(), "BTC\n", 2_000, 5);
        assert!(!approved(&out), "{out:?}");
        assert!(
            matches!(out.last(), Some(Outcome::Hint(h)) if h.contains("press Enter on its own")),
            "{out:?}"
        );
        // What came in the burst was not typed: a later Enter alone does not override with it.
        assert!(!approved(&[press(&mut d, &broken(), "Enter", 2_500)]));
        assert_eq!(d.step.as_ref().map(|s| s.typed.as_str()), Some(""));
        // Typed at a person's pace, it does.
        let out = typed(&mut d, &broken(), "btc\n", 3_000, 200);
        assert!(approved(&out), "{out:?}");
    }

    #[test]
    fn o_too_soon_opens_no_step() {
        let mut d = open();
        let out = press(&mut d, &broken(), "o", 10);
        assert!(
            matches!(&out, Outcome::Hint(h) if h.contains("too soon")),
            "{out:?}"
        );
        assert_eq!(d.step, None);
    }

    #[test]
    fn under_the_kill_switch_o_offers_nothing_and_the_keys_line_no_override() {
        let mut d = open();
        let out = press(&mut d, &killed(), "o", 2_000);
        assert!(
            matches!(&out, Outcome::Hint(h) if h.contains("kill switch is on (drill)")),
            "{out:?}"
        );
        assert_eq!(d.step, None);
        let out = press(&mut d, &killed(), "y", 3_000);
        assert!(
            matches!(&out, Outcome::Hint(h) if h.contains("kill switch")),
            "{out:?}"
        );
        let keys = d.keys_line(&Theme::default(), &killed(), 64).to_string();
        assert!(!keys.contains(" o "), "{keys}");
        assert!(keys.contains("kill switch"), "{keys}");
    }

    #[test]
    fn o_on_an_item_without_broken_rules_explains() {
        let out = press(&mut open(), &clean(), "o", 2_000);
        assert_eq!(
            out,
            Outcome::Hint("no rule is broken: nothing to override (y approves)".into())
        );
        let not_gateway = Context {
            gateway: false,
            ..clean()
        };
        let out = press(&mut open(), &not_gateway, "o", 2_000);
        assert!(
            matches!(&out, Outcome::Hint(h) if h.contains("none to override")),
            "{out:?}"
        );
    }

    #[test]
    fn the_keys_line_fits_a_60_and_an_80_column_screen() {
        // The dialog's inner width at 60 and 80 columns (66 wide, less its borders).
        for width in [58u16, 64] {
            for (ctx, step) in [
                (clean(), false),
                (broken(), false),
                (broken(), true),
                (killed(), false),
            ] {
                let mut d = open();
                if step {
                    press(&mut d, &ctx, "o", 1_000);
                }
                let line = d.keys_line(&Theme::default(), &ctx, width);
                assert!(line.width() <= width as usize, "{width}: {line}");
            }
        }
    }
}
