//! Readline's editing keys, the same in every text field of the console: what people who live in
//! a shell expect of ctrl-a/e/u/k/w and alt-b/f. The text area's own defaults differ where it
//! matters (its ctrl-u undoes the last edit): these keys are read here first.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::{CursorMove, TextArea};

/// Applies `key` to `input` when it is one of readline's editing keys; false for any other key,
/// which the caller gives to the text area.
pub fn edit(input: &mut TextArea<'_>, key: &KeyEvent) -> bool {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    match key.code {
        KeyCode::Char('a') if ctrl => input.move_cursor(CursorMove::Head),
        KeyCode::Char('e') if ctrl => input.move_cursor(CursorMove::End),
        KeyCode::Char('b') if ctrl => input.move_cursor(CursorMove::Back),
        KeyCode::Char('f') if ctrl => input.move_cursor(CursorMove::Forward),
        KeyCode::Char('b') if alt => input.move_cursor(CursorMove::WordBack),
        KeyCode::Char('f') if alt => input.move_cursor(CursorMove::WordForward),
        KeyCode::Char('u') if ctrl => {
            input.delete_line_by_head();
        }
        KeyCode::Char('k') if ctrl => {
            input.delete_line_by_end();
        }
        KeyCode::Char('w') if ctrl => rubout_word(input),
        KeyCode::Backspace if alt => {
            input.delete_word();
        }
        KeyCode::Char('d') if alt => {
            input.delete_next_word();
        }
        KeyCode::Char('h') if ctrl => {
            input.delete_char();
        }
        KeyCode::Char('d') if ctrl => {
            input.delete_next_char();
        }
        // Readline's undo (ctrl-_, which terminals also send as ctrl-/ or ctrl-7).
        KeyCode::Char('_' | '/' | '7') if ctrl => {
            input.undo();
        }
        _ => return false,
    }
    true
}

/// Readline's ctrl-w: back to the previous whitespace, not the previous punctuation (`$1000`
/// goes whole).
fn rubout_word(input: &mut TextArea<'_>) {
    let ratatui_textarea::DataCursor(row, col) = input.cursor();
    let before: Vec<char> = input.lines()[row].chars().take(col).collect();
    let spaces = before
        .iter()
        .rev()
        .take_while(|c| c.is_whitespace())
        .count();
    let word = before[..before.len() - spaces]
        .iter()
        .rev()
        .take_while(|c| !c.is_whitespace())
        .count();
    for _ in 0..spaces + word {
        input.delete_char();
    }
}

/// What a key does to a one-line filter typed at its end (no cursor): a character is added, and
/// readline's keys delete the last character, the last word or the whole text. A chord it does not
/// know changes nothing, so ctrl-u never types a `u`. True when the key was an edit.
pub fn edit_tail(text: &mut String, key: &KeyEvent) -> bool {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    match key.code {
        KeyCode::Char('u' | 'k') if ctrl => text.clear(),
        KeyCode::Char('w') if ctrl => drop_word(text),
        KeyCode::Backspace if alt || ctrl => drop_word(text),
        KeyCode::Char('h') if ctrl => {
            text.pop();
        }
        KeyCode::Backspace => {
            text.pop();
        }
        KeyCode::Char(_) if ctrl || alt => return false,
        KeyCode::Char(c) => text.push(c),
        _ => return false,
    }
    true
}

/// Removes the last word and the spaces after it, as readline's ctrl-w does.
fn drop_word(text: &mut String) {
    let kept = text
        .trim_end()
        .trim_end_matches(|c: char| !c.is_whitespace());
    text.truncate(kept.len());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(c: char, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), m)
    }

    const C: KeyModifiers = KeyModifiers::CONTROL;
    const A: KeyModifiers = KeyModifiers::ALT;

    fn area(text: &str) -> TextArea<'static> {
        let mut t = TextArea::new(vec![text.to_string()]);
        t.move_cursor(CursorMove::End);
        t
    }

    fn typed(t: &mut TextArea<'_>, key: KeyEvent) {
        if !edit(t, &key) {
            t.input(key);
        }
    }

    #[test]
    fn the_readline_keys_move_and_delete_as_in_a_shell() {
        let mut t = area("/propose BTC long $1000");
        typed(&mut t, k('w', C));
        assert_eq!(t.lines()[0], "/propose BTC long ");
        typed(&mut t, k('b', A));
        typed(&mut t, k('b', A));
        typed(&mut t, k('k', C));
        assert_eq!(t.lines()[0], "/propose ");
        typed(&mut t, k('a', C));
        typed(&mut t, k('x', KeyModifiers::NONE));
        assert_eq!(t.lines()[0], "x/propose ");
        typed(&mut t, k('e', C));
        typed(&mut t, k('y', KeyModifiers::NONE));
        assert_eq!(t.lines()[0], "x/propose y");
        typed(&mut t, k('u', C));
        assert_eq!(
            t.lines()[0],
            "",
            "ctrl-u kills to the start, it does not undo"
        );
        typed(&mut t, k('_', C));
        assert_eq!(t.lines()[0], "x/propose y", "ctrl-_ undoes");
        typed(&mut t, k('a', C));
        typed(&mut t, k('f', A));
        assert!(t.cursor().1 > 0, "alt-f moves a word forward");
        typed(&mut t, k('e', C));
        typed(&mut t, k('b', A));
        assert_eq!(
            t.cursor().1,
            "x/propose ".len(),
            "alt-b to the last word's start"
        );
    }

    #[test]
    fn a_filter_takes_characters_and_readlines_deletions_and_never_types_a_chord() {
        let mut f = String::new();
        for c in "status:pending coin:btc".chars() {
            assert!(edit_tail(&mut f, &k(c, KeyModifiers::NONE)));
        }
        assert!(edit_tail(&mut f, &k('w', C)));
        assert_eq!(f, "status:pending ");
        assert!(!edit_tail(&mut f, &k('x', C)));
        assert!(!edit_tail(&mut f, &k('b', A)));
        assert_eq!(f, "status:pending ");
        assert!(edit_tail(&mut f, &k('u', C)));
        assert_eq!(f, "");
    }
}
