//! Key bindings: the embedded defaults (`assets/keymap.toml`) plus the user's overrides.
//!
//! The syntax of keys and of the file is documented in the asset itself, so users read it where
//! they copy it from.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::suggest::{closest, did_you_mean};

const DEFAULT_KEYMAP: &str = include_str!("../../assets/keymap.toml");

/// What a key press asks the console to do. Which actions apply depends on the focused view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyAction {
    Quit,
    Help,
    CommandLine,
    NextTab,
    PrevTab,
    /// Jump to tab 1..=9; written `go_tab_N` in TOML.
    GoTab(u8),
    FocusNext,
    FocusPrev,
    Up,
    Down,
    Left,
    Right,
    PageUp,
    PageDown,
    Top,
    Bottom,
    /// Enter.
    Select,
    Approve,
    Reject,
    /// Take back the last dismissal while the proposal is live.
    Undo,
    ConfirmYes,
    Cancel,
    Refresh,
    Filter,
    SortNext,
    SortReverse,
    /// Open the backtest form for the selected Discovery row or job.
    Backtest,
    /// Prefill a proposal for the selected Discovery row's coin.
    Propose,
    /// Research: prefill `/research start ` on the command line.
    NewRun,
    /// Research: prefill `/research say `; Chat: prefill `/chat `.
    Message,
    /// Research: stop the active run (asks y/esc first).
    StopRun,
    /// Tools: fold or unfold the JSON node under the cursor.
    Toggle,
    /// Signals: toggle the fan-out default of `/trade`.
    Fanout,
    /// Signals: open the builder-fee panel.
    BuilderFee,
    /// Copy (the signing secret, with OSC 52).
    Copy,
    /// Approve dialog on a gateway: arm an override of the rules the item breaks.
    Override,
    /// On a gateway: the policy in force (as `/policy`).
    Policy,
    /// The focused pane on the whole screen, and back.
    Zoom,
}

impl KeyAction {
    /// Every action, in the order the help overlay lists them.
    pub const ALL: &'static [KeyAction] = &[
        KeyAction::Quit,
        KeyAction::Help,
        KeyAction::CommandLine,
        KeyAction::NextTab,
        KeyAction::PrevTab,
        KeyAction::GoTab(1),
        KeyAction::GoTab(2),
        KeyAction::GoTab(3),
        KeyAction::GoTab(4),
        KeyAction::GoTab(5),
        KeyAction::GoTab(6),
        KeyAction::GoTab(7),
        KeyAction::GoTab(8),
        KeyAction::GoTab(9),
        KeyAction::FocusNext,
        KeyAction::FocusPrev,
        KeyAction::Up,
        KeyAction::Down,
        KeyAction::Left,
        KeyAction::Right,
        KeyAction::PageUp,
        KeyAction::PageDown,
        KeyAction::Top,
        KeyAction::Bottom,
        KeyAction::Select,
        KeyAction::Approve,
        KeyAction::Reject,
        KeyAction::Undo,
        KeyAction::ConfirmYes,
        KeyAction::Cancel,
        KeyAction::Refresh,
        KeyAction::Filter,
        KeyAction::SortNext,
        KeyAction::SortReverse,
        KeyAction::Backtest,
        KeyAction::Propose,
        KeyAction::NewRun,
        KeyAction::Message,
        KeyAction::StopRun,
        KeyAction::Toggle,
        KeyAction::Fanout,
        KeyAction::BuilderFee,
        KeyAction::Copy,
        KeyAction::Override,
        KeyAction::Policy,
        KeyAction::Zoom,
    ];

    /// The snake_case name used in TOML (`next_tab`, `go_tab_3`).
    pub fn name(self) -> String {
        let simple = match self {
            KeyAction::GoTab(n) => return format!("go_tab_{n}"),
            KeyAction::Quit => "quit",
            KeyAction::Help => "help",
            KeyAction::CommandLine => "command_line",
            KeyAction::NextTab => "next_tab",
            KeyAction::PrevTab => "prev_tab",
            KeyAction::FocusNext => "focus_next",
            KeyAction::FocusPrev => "focus_prev",
            KeyAction::Up => "up",
            KeyAction::Down => "down",
            KeyAction::Left => "left",
            KeyAction::Right => "right",
            KeyAction::PageUp => "page_up",
            KeyAction::PageDown => "page_down",
            KeyAction::Top => "top",
            KeyAction::Bottom => "bottom",
            KeyAction::Select => "select",
            KeyAction::Approve => "approve",
            KeyAction::Reject => "reject",
            KeyAction::Undo => "undo",
            KeyAction::ConfirmYes => "confirm_yes",
            KeyAction::Cancel => "cancel",
            KeyAction::Refresh => "refresh",
            KeyAction::Filter => "filter",
            KeyAction::SortNext => "sort_next",
            KeyAction::SortReverse => "sort_reverse",
            KeyAction::Backtest => "backtest",
            KeyAction::Propose => "propose",
            KeyAction::NewRun => "new_run",
            KeyAction::Message => "message",
            KeyAction::StopRun => "stop_run",
            KeyAction::Toggle => "toggle",
            KeyAction::Fanout => "fanout",
            KeyAction::BuilderFee => "builder_fee",
            KeyAction::Copy => "copy",
            KeyAction::Override => "override",
            KeyAction::Policy => "policy",
            KeyAction::Zoom => "zoom",
        };
        simple.to_string()
    }

    /// One line for the help overlay.
    pub fn description(self) -> String {
        let text = match self {
            KeyAction::GoTab(n) => return format!("Go to tab {n}"),
            KeyAction::Quit => "Quit",
            KeyAction::Help => "Show help",
            KeyAction::CommandLine => "Open the command line",
            KeyAction::NextTab => "Next tab",
            KeyAction::PrevTab => "Previous tab",
            KeyAction::FocusNext => "Focus next pane",
            KeyAction::FocusPrev => "Focus previous pane",
            KeyAction::Up => "Move up",
            KeyAction::Down => "Move down",
            KeyAction::Left => "Move left",
            KeyAction::Right => "Move right",
            KeyAction::PageUp => "Page up",
            KeyAction::PageDown => "Page down",
            KeyAction::Top => "Go to top",
            KeyAction::Bottom => "Go to bottom",
            KeyAction::Select => "Open / select",
            KeyAction::Approve => "Approve proposal",
            KeyAction::Reject => "Reject proposal",
            KeyAction::Undo => "Undo a dismissal",
            KeyAction::ConfirmYes => "Confirm (yes)",
            KeyAction::Cancel => "Cancel / close",
            KeyAction::Refresh => "Refresh now",
            KeyAction::Filter => "Filter rows",
            KeyAction::SortNext => "Sort by next column",
            KeyAction::SortReverse => "Reverse sort order",
            KeyAction::Backtest => "Backtest the selected row",
            KeyAction::Propose => "Propose a trade from the selected row",
            KeyAction::NewRun => "Start a research run",
            KeyAction::Message => "Message the research run or the chat",
            KeyAction::StopRun => "Stop the research run",
            KeyAction::Toggle => "Fold / unfold a JSON node",
            KeyAction::Fanout => "Toggle the fan-out default of /trade",
            KeyAction::BuilderFee => "Open the builder-fee panel",
            KeyAction::Copy => "Copy the selected row's id, or the signing secret (OSC 52)",
            KeyAction::Override => "Override the broken policy rules (then type the coin, Enter)",
            KeyAction::Policy => "Show the gateway's policy in force",
            KeyAction::Zoom => "Zoom the focused pane to the whole screen, and back",
        };
        text.to_string()
    }
}

impl fmt::Display for KeyAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A name in the keymap file that is no action; `closest` is the action it was likely meant to be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown action `{name}`{}", did_you_mean(.closest))]
pub struct UnknownAction {
    pub name: String,
    pub closest: Option<String>,
}

impl FromStr for KeyAction {
    type Err = UnknownAction;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        KeyAction::ALL
            .iter()
            .copied()
            .find(|a| a.name() == s)
            .ok_or_else(|| {
                let names: Vec<String> = KeyAction::ALL.iter().map(|a| a.name()).collect();
                UnknownAction {
                    name: s.to_string(),
                    closest: closest(s, names.iter().map(String::as_str)).map(str::to_string),
                }
            })
    }
}

impl Serialize for KeyAction {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for KeyAction {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// One key with its modifiers, normalised so that what a terminal reports and what a user writes
/// compare equal: SHIFT is folded into characters (`G`, `?`) and into `BackTab`, and only
/// CONTROL/ALT/SHIFT are kept (SUPER/HYPER/META are not reported by most terminals, so bindings
/// cannot rely on them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyBinding {
    pub code: KeyCode,
    pub modifiers: KeyModifiers,
}

impl KeyBinding {
    pub fn new(code: KeyCode, modifiers: KeyModifiers) -> Self {
        let mut modifiers =
            modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        let shift = modifiers.contains(KeyModifiers::SHIFT);
        let code = match code {
            KeyCode::Char(c) => {
                modifiers.remove(KeyModifiers::SHIFT);
                // Some terminals (kitty protocol without alternate keys) report shift-g as 'g' +
                // SHIFT instead of 'G'.
                if shift && c.is_lowercase() {
                    KeyCode::Char(c.to_uppercase().next().unwrap_or(c))
                } else {
                    KeyCode::Char(c)
                }
            }
            KeyCode::BackTab => {
                modifiers.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            KeyCode::Tab if shift => {
                modifiers.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            other => other,
        };
        Self { code, modifiers }
    }

    pub fn from_event(event: &KeyEvent) -> Self {
        Self::new(event.code, event.modifiers)
    }
}

/// Strips `prefix` ignoring ASCII case, but only when something follows it: `ctrl-` alone is not a
/// modifier with an empty key, and `-` alone is the minus key.
fn strip_modifier<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    let rest = &text[prefix.len()..];
    (head.eq_ignore_ascii_case(prefix) && !rest.is_empty()).then_some(rest)
}

const NAMED_KEYS: &[(&str, KeyCode)] = &[
    ("enter", KeyCode::Enter),
    ("esc", KeyCode::Esc),
    ("tab", KeyCode::Tab),
    ("backtab", KeyCode::BackTab),
    ("up", KeyCode::Up),
    ("down", KeyCode::Down),
    ("left", KeyCode::Left),
    ("right", KeyCode::Right),
    ("pageup", KeyCode::PageUp),
    ("pagedown", KeyCode::PageDown),
    ("home", KeyCode::Home),
    ("end", KeyCode::End),
    ("space", KeyCode::Char(' ')),
    ("backspace", KeyCode::Backspace),
    ("delete", KeyCode::Delete),
    ("insert", KeyCode::Insert),
];

/// A key the keymap file names that cannot be pressed as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyBindingError {
    #[error("empty key")]
    Empty,
    #[error("unknown key `{0}`")]
    Unknown(String),
    #[error(
        "`{0}`: shift- applies only to letters and named keys; write the shifted character itself"
    )]
    ShiftedSymbol(String),
}

impl FromStr for KeyBinding {
    type Err = KeyBindingError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut modifiers = KeyModifiers::NONE;
        let mut rest = s;
        loop {
            if let Some(r) = strip_modifier(rest, "ctrl-") {
                modifiers |= KeyModifiers::CONTROL;
                rest = r;
            } else if let Some(r) = strip_modifier(rest, "alt-") {
                modifiers |= KeyModifiers::ALT;
                rest = r;
            } else if let Some(r) = strip_modifier(rest, "shift-") {
                modifiers |= KeyModifiers::SHIFT;
                rest = r;
            } else {
                break;
            }
        }
        let mut chars = rest.chars();
        let code = match (chars.next(), chars.next()) {
            (None, _) => return Err(KeyBindingError::Empty),
            (Some(c), None) => KeyCode::Char(c),
            _ => {
                let lower = rest.to_ascii_lowercase();
                let function = lower
                    .strip_prefix('f')
                    .filter(|n| n.chars().all(|c| c.is_ascii_digit()))
                    .and_then(|n| n.parse::<u8>().ok())
                    .filter(|n| (1..=12).contains(n) && !lower.starts_with("f0"));
                match (NAMED_KEYS.iter().find(|(name, _)| *name == lower), function) {
                    (Some((_, code)), _) => *code,
                    (None, Some(n)) => KeyCode::F(n),
                    (None, None) => return Err(KeyBindingError::Unknown(s.to_string())),
                }
            }
        };
        if let KeyCode::Char(c) = code
            && modifiers.contains(KeyModifiers::SHIFT)
            && !c.is_alphabetic()
        {
            return Err(KeyBindingError::ShiftedSymbol(s.to_string()));
        }
        Ok(KeyBinding::new(code, modifiers))
    }
}

/// The name users read in footers and help, and can write back in the keymap file.
impl fmt::Display for KeyBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (flag, prefix) in [
            (KeyModifiers::CONTROL, "ctrl-"),
            (KeyModifiers::ALT, "alt-"),
            (KeyModifiers::SHIFT, "shift-"),
        ] {
            if self.modifiers.contains(flag) {
                f.write_str(prefix)?;
            }
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            // Shift-tab reads better in a footer than crossterm's name for it.
            KeyCode::BackTab => f.write_str("shift-tab"),
            KeyCode::F(n) => write!(f, "f{n}"),
            code => match NAMED_KEYS.iter().find(|(_, c)| *c == code) {
                Some((name, _)) => f.write_str(name),
                None => write!(f, "{code:?}"),
            },
        }
    }
}

/// Key bindings, looked up by key event, listed per action for footers and help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keymap {
    keys: HashMap<KeyAction, Vec<KeyBinding>>,
    lookup: HashMap<KeyBinding, KeyAction>,
}

impl Default for Keymap {
    /// The embedded `assets/keymap.toml`.
    fn default() -> Self {
        let empty = Keymap {
            keys: HashMap::new(),
            lookup: HashMap::new(),
        };
        // The asset is compiled in and a unit test parses it, so this cannot fail at run time.
        empty
            .with_overrides(DEFAULT_KEYMAP)
            .expect("embedded assets/keymap.toml is valid")
    }
}

impl Keymap {
    /// The defaults with the `[keys]` of `text` applied; each action listed replaces that action's
    /// keys.
    pub fn from_toml(text: &str) -> Result<Keymap, KeymapError> {
        Keymap::default().with_overrides(text)
    }

    fn with_overrides(mut self, text: &str) -> Result<Keymap, KeymapError> {
        let table: toml::Table = toml::from_str(text)?;
        for (name, value) in &table {
            if name != "keys" {
                return Err(KeymapError::UnknownTable(name.clone()));
            }
            let Some(keys) = value.as_table() else {
                return Err(KeymapError::KeysNotATable);
            };
            for (action_name, value) in keys {
                let action: KeyAction = action_name.parse()?;
                self.keys.insert(action, parse_keys(action_name, value)?);
            }
        }
        // A key that decides money is a letter of its own: never Enter, space or Tab (they end
        // or fill what is being typed), never a chord, and (by the check below) never a key
        // another view binds, so no key meant for something else can answer a dialog.
        for action in [KeyAction::ConfirmYes, KeyAction::Override] {
            for key in self.keys.get(&action).into_iter().flatten() {
                let letter = matches!(key.code, KeyCode::Char(c) if c.is_alphanumeric())
                    && !key
                        .modifiers
                        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
                if !letter {
                    return Err(KeymapError::CannotDecide { action, key: *key });
                }
            }
        }
        self.lookup.clear();
        for &action in KeyAction::ALL {
            for &key in self.keys.get(&action).into_iter().flatten() {
                if let Some(other) = self.lookup.insert(key, action) {
                    return Err(if other == action {
                        KeymapError::ListedTwice { action, key }
                    } else {
                        KeymapError::BoundTwice {
                            key,
                            first: other,
                            second: action,
                        }
                    });
                }
            }
        }
        Ok(self)
    }

    /// The action bound to a key press, if any. Releases never act, so terminals that report them
    /// do not trigger every action twice; repeats do, so holding `j` scrolls.
    pub fn action(&self, key: &KeyEvent) -> Option<KeyAction> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        self.lookup.get(&KeyBinding::from_event(key)).copied()
    }

    /// Display names of the keys bound to `action`, in file order (the first is the one to show
    /// when there is room for only one).
    pub fn keys_for(&self, action: KeyAction) -> Vec<String> {
        self.keys
            .get(&action)
            .into_iter()
            .flatten()
            .map(KeyBinding::to_string)
            .collect()
    }
}

/// Why a keymap file is refused; every error after the TOML's names the table or key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KeymapError {
    #[error("invalid keymap TOML: {0}")]
    Toml(#[from] toml::de::Error),
    #[error("unknown table `{0}` in keymap; expected [keys]")]
    UnknownTable(String),
    #[error("`keys` must be a table: [keys]")]
    KeysNotATable,
    #[error("[keys] {0}")]
    UnknownAction(#[from] UnknownAction),
    #[error("[keys] {action}: expected a key string or a list of key strings")]
    NotKeys { action: String },
    #[error("[keys] {action}: {error}")]
    BadKey {
        action: String,
        error: KeyBindingError,
    },
    #[error(
        "[keys] {action}: `{key}` cannot decide: a deciding key must be a letter or digit of its \
         own (not Enter, space, Tab or a ctrl/alt chord)"
    )]
    CannotDecide { action: KeyAction, key: KeyBinding },
    #[error("[keys] {action}: key `{key}` is listed twice")]
    ListedTwice { action: KeyAction, key: KeyBinding },
    #[error("[keys] key `{key}` is bound to both `{first}` and `{second}`")]
    BoundTwice {
        key: KeyBinding,
        first: KeyAction,
        second: KeyAction,
    },
}

fn parse_keys(action: &str, value: &toml::Value) -> Result<Vec<KeyBinding>, KeymapError> {
    let shape_error = || KeymapError::NotKeys {
        action: action.to_string(),
    };
    let texts: Vec<&str> = match value {
        toml::Value::String(s) => vec![s.as_str()],
        toml::Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().ok_or_else(shape_error))
            .collect::<Result<_, _>>()?,
        _ => return Err(shape_error()),
    };
    texts
        .into_iter()
        .map(|t| {
            t.parse().map_err(|error| KeymapError::BadKey {
                action: action.to_string(),
                error,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyEventState;

    fn press(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    fn ch(c: char) -> KeyEvent {
        press(KeyCode::Char(c), KeyModifiers::NONE)
    }

    #[test]
    fn a_deciding_key_is_a_letter_of_its_own() {
        for keys in [r#"["y", "enter"]"#, r#""space""#, r#""ctrl-y""#, r#""tab""#] {
            let text = format!("[keys]\nselect = \"f2\"\nconfirm_yes = {keys}\n");
            let err = Keymap::from_toml(&text).unwrap_err().to_string();
            assert!(err.contains("cannot decide"), "{keys}: {err}");
        }
        // A key the lists bind is refused too: it is bound twice.
        let err = Keymap::from_toml("[keys]\nconfirm_yes = \"j\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("bound to both"), "{err}");
        let map = Keymap::from_toml("[keys]\nconfirm_yes = \"Y\"\n").unwrap();
        assert_eq!(map.keys_for(KeyAction::ConfirmYes), vec!["Y".to_string()]);
    }

    #[test]
    fn default_parses_and_binds_every_action() {
        let map = Keymap::default();
        for &action in KeyAction::ALL {
            assert!(!map.keys_for(action).is_empty(), "{action} has no key");
        }
    }

    #[test]
    fn all_lists_each_action_once() {
        let mut names: Vec<String> = KeyAction::ALL.iter().map(|a| a.name()).collect();
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count);
        for &action in KeyAction::ALL {
            assert_eq!(action.name().parse::<KeyAction>(), Ok(action));
        }
    }

    #[test]
    fn default_actions() {
        let map = Keymap::default();
        let cases = [
            (ch('q'), KeyAction::Quit),
            (
                press(KeyCode::Char('c'), KeyModifiers::CONTROL),
                KeyAction::Quit,
            ),
            (ch('?'), KeyAction::Help),
            (
                press(KeyCode::Char('?'), KeyModifiers::SHIFT),
                KeyAction::Help,
            ),
            (ch(':'), KeyAction::CommandLine),
            (ch('3'), KeyAction::GoTab(3)),
            (ch('k'), KeyAction::Up),
            (press(KeyCode::Up, KeyModifiers::NONE), KeyAction::Up),
            (ch('g'), KeyAction::Top),
            (ch('G'), KeyAction::Bottom),
            (
                press(KeyCode::Char('G'), KeyModifiers::SHIFT),
                KeyAction::Bottom,
            ),
            (
                press(KeyCode::Char('g'), KeyModifiers::SHIFT),
                KeyAction::Bottom,
            ),
            (
                press(KeyCode::Char('d'), KeyModifiers::CONTROL),
                KeyAction::PageDown,
            ),
            (
                press(KeyCode::Tab, KeyModifiers::NONE),
                KeyAction::FocusNext,
            ),
            (
                press(KeyCode::BackTab, KeyModifiers::SHIFT),
                KeyAction::FocusPrev,
            ),
            (
                press(KeyCode::Tab, KeyModifiers::SHIFT),
                KeyAction::FocusPrev,
            ),
            (press(KeyCode::Enter, KeyModifiers::NONE), KeyAction::Select),
            (press(KeyCode::Esc, KeyModifiers::NONE), KeyAction::Cancel),
            (ch('S'), KeyAction::SortReverse),
            (ch('b'), KeyAction::Backtest),
            (ch('p'), KeyAction::Propose),
        ];
        for (event, action) in cases {
            assert_eq!(map.action(&event), Some(action), "{event:?}");
        }
        assert_eq!(map.action(&ch('Z')), None);
        // Ctrl changes the key: ctrl-q is not q.
        assert_eq!(
            map.action(&press(KeyCode::Char('q'), KeyModifiers::CONTROL)),
            None
        );
    }

    #[test]
    fn release_is_ignored_repeat_is_not() {
        let map = Keymap::default();
        let mut event = ch('j');
        event.kind = KeyEventKind::Release;
        assert_eq!(map.action(&event), None);
        event.kind = KeyEventKind::Repeat;
        event.state = KeyEventState::NONE;
        assert_eq!(map.action(&event), Some(KeyAction::Down));
    }

    #[test]
    fn keys_for_in_file_order() {
        let map = Keymap::default();
        assert_eq!(map.keys_for(KeyAction::Quit), ["q", "ctrl-c"]);
        assert_eq!(map.keys_for(KeyAction::Cancel), ["esc", "n"]);
        assert_eq!(map.keys_for(KeyAction::FocusPrev), ["shift-tab"]);
        assert_eq!(map.keys_for(KeyAction::Bottom), ["G", "end"]);
    }

    #[test]
    fn key_syntax() {
        let cases = [
            ("q", KeyCode::Char('q'), KeyModifiers::NONE),
            ("G", KeyCode::Char('G'), KeyModifiers::NONE),
            ("shift-g", KeyCode::Char('G'), KeyModifiers::NONE),
            ("-", KeyCode::Char('-'), KeyModifiers::NONE),
            ("ctrl--", KeyCode::Char('-'), KeyModifiers::CONTROL),
            (
                "Ctrl-Alt-x",
                KeyCode::Char('x'),
                KeyModifiers::CONTROL | KeyModifiers::ALT,
            ),
            ("ENTER", KeyCode::Enter, KeyModifiers::NONE),
            ("shift-tab", KeyCode::BackTab, KeyModifiers::NONE),
            ("backtab", KeyCode::BackTab, KeyModifiers::NONE),
            ("shift-up", KeyCode::Up, KeyModifiers::SHIFT),
            ("space", KeyCode::Char(' '), KeyModifiers::NONE),
            ("f12", KeyCode::F(12), KeyModifiers::NONE),
            ("é", KeyCode::Char('é'), KeyModifiers::NONE),
        ];
        for (text, code, modifiers) in cases {
            let key: KeyBinding = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(key, KeyBinding { code, modifiers }, "{text}");
            // Display names read back to the same key.
            assert_eq!(key.to_string().parse::<KeyBinding>(), Ok(key), "{text}");
        }
        for (text, error) in [
            ("", "empty key"),
            ("ctrl-", "unknown key `ctrl-`"),
            ("f13", "unknown key `f13`"),
            ("f01", "unknown key `f01`"),
            ("f+1", "unknown key `f+1`"),
            ("ctlr-k", "unknown key `ctlr-k`"),
            (
                "shift-/",
                "`shift-/`: shift- applies only to letters and named keys; write the shifted character itself",
            ),
        ] {
            assert_eq!(
                text.parse::<KeyBinding>().map_err(|e| e.to_string()),
                Err(error.to_string()),
                "{text}"
            );
        }
    }

    #[test]
    fn overrides_replace_only_listed_actions() {
        let map = Keymap::from_toml(
            "[keys]\nquit = \"ctrl-q\"\nup = [\"w\", \"up\"]\ngo_tab_1 = \"f1\"\nhelp = \"f2\"\nfilter = []\n",
        )
        .unwrap();
        assert_eq!(map.keys_for(KeyAction::Quit), ["ctrl-q"]);
        assert_eq!(map.action(&ch('q')), None);
        assert_eq!(map.action(&ch('w')), Some(KeyAction::Up));
        assert_eq!(map.action(&ch('k')), None);
        assert_eq!(
            map.action(&press(KeyCode::F(1), KeyModifiers::NONE)),
            Some(KeyAction::GoTab(1))
        );
        assert_eq!(map.action(&ch('/')), None);
        assert!(map.keys_for(KeyAction::Filter).is_empty());
        // Untouched actions keep their defaults.
        assert_eq!(map.action(&ch('j')), Some(KeyAction::Down));
        assert_eq!(Keymap::from_toml("").unwrap(), Keymap::default());
    }

    #[test]
    fn override_errors_name_the_problem() {
        let cases = [
            (
                "[keys]\nquitt = \"q\"",
                "[keys] unknown action `quitt`; did you mean `quit`?",
            ),
            (
                "[keys]\ngo_tab_0 = \"0\"",
                "[keys] unknown action `go_tab_0`; did you mean `go_tab_1`?",
            ),
            ("[keys]\nup = \"ctlr-k\"", "[keys] up: unknown key `ctlr-k`"),
            ("[keys]\nzzz = \"k\"", "[keys] unknown action `zzz`"),
            (
                "[keys]\nup = 5",
                "[keys] up: expected a key string or a list of key strings",
            ),
            (
                "[keys]\nup = [\"k\", 5]",
                "[keys] up: expected a key string or a list of key strings",
            ),
            (
                "[keys]\nreject = \"a\"",
                "[keys] key `a` is bound to both `approve` and `reject`",
            ),
            (
                "[keys]\nup = [\"k\", \"k\"]",
                "[keys] up: key `k` is listed twice",
            ),
            (
                "[keys]\nfocus_next = \"shift-tab\"",
                "[keys] key `shift-tab` is bound to both `focus_next` and `focus_prev`",
            ),
            (
                "[colors]\nx = 1",
                "unknown table `colors` in keymap; expected [keys]",
            ),
            ("keys = 1", "`keys` must be a table: [keys]"),
        ];
        for (text, error) in cases {
            assert_eq!(
                Keymap::from_toml(text).map_err(|e| e.to_string()),
                Err(error.to_string()),
                "{text}"
            );
        }
        assert!(
            Keymap::from_toml("[keys")
                .unwrap_err()
                .to_string()
                .starts_with("invalid keymap TOML")
        );
    }

    #[test]
    fn action_serde_names() {
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct Wrap {
            a: KeyAction,
        }
        let text = toml::to_string(&Wrap {
            a: KeyAction::GoTab(4),
        })
        .unwrap();
        assert_eq!(text.trim(), "a = \"go_tab_4\"");
        let back: Wrap = toml::from_str("a = \"sort_reverse\"").unwrap();
        assert_eq!(back.a, KeyAction::SortReverse);
        assert!(toml::from_str::<Wrap>("a = \"nope\"").is_err());
    }
}
