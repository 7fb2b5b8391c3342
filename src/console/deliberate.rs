//! Money moves only on a deliberate act. The one rule every key that decides passes, so that text
//! typed for something else, a paste, or the tail (or head) of a burst never approves, rejects or
//! executes anything:
//!
//! - [`Keyboard`]: the keys outside dialogs. A printable key the focused view does not bind means
//!   the person is typing: every key that changes anything is paused until the keyboard has been
//!   quiet for [`QUIET`] (only `:`, which opens the command line, still acts). A key that opens a
//!   dialog or decides (`a`, `x`, `u`, ...) acts only after such a quiet moment: inside a run of
//!   keys (the `a` of "say" half a second after the `s`) it is typing too; and only
//!   [`AFTER_TYPING`] after the last key that showed typing, so text typed slowly (a key every
//!   1.6 s, each one "after a quiet moment") still opens nothing.
//! - [`Deliberate`]: the guard of every dialog whose answer is final (approve, reject, a `/trade`
//!   on LIVE, the kill switch, a standing approval, stopping a research run). Its deciding key
//!   counts only after [`SETTLE`] (long enough to read what it decides) and out of a burst.
//! - [`Held`]: a decision taken by a deliberate key waits [`HOLD`] before it is carried out, the
//!   dialog saying so; a key or a paste arriving within it means the deciding key was the first
//!   letter of something typed ("yeah", "yes", pasted text that starts with `y` on a terminal that
//!   does not bracket pastes), and nothing is decided.
//!
//! Pastes are never keys: bracketed paste is on, and a paste goes only into a text field.
//! Pure: times come in as arguments, so every rule is tested with keys and times alone.

use chrono::{DateTime, Duration as TimeDelta, Utc};

/// Keys closer together than this are one burst: pasted text, or keys typed ahead. People do not
/// press two separate keys this fast on purpose (a fast typist's keys are ~100 ms apart); a
/// terminal delivers pasted text within a few milliseconds.
pub const BURST: TimeDelta = TimeDelta::milliseconds(50);

/// How long the keyboard must be quiet before a key that opens a deciding dialog acts, and before
/// keys act again once typing was noticed. A person typing text keeps keys within about a second
/// of each other (judged at up to 1 s a key); half a second more keeps a slow typist's next key
/// inside the run, and is still short next to reading the row one is about to approve.
pub const QUIET: TimeDelta = TimeDelta::milliseconds(1500);

/// How long after a deciding dialog opens its deciding key counts: long enough to read its first
/// lines. A key sooner was typed before the trade was on screen.
pub const SETTLE: TimeDelta = TimeDelta::milliseconds(1000);

/// How long a deciding key's decision waits, with no other key, before it is carried out: a `y`
/// that is the first letter of a word typed at a person's pace is followed by the next letter
/// within this. The dialog says so while it waits, and any key cancels.
pub const HOLD: TimeDelta = QUIET;

/// How long after the last key that showed typing a key that opens a dialog acts again: slow
/// typing is typing too.
pub const AFTER_TYPING: TimeDelta = TimeDelta::milliseconds(3000);

/// The keys outside dialogs: when the last one came, and whether the person is typing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Keyboard {
    last_key: Option<DateTime<Utc>>,
    typing: bool,
    /// When a key last showed typing.
    typed_at: Option<DateTime<Utc>>,
}

/// How a key stands against the keys before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// The keyboard was quiet for [`QUIET`] before this key.
    pub quiet: bool,
    /// And no key showed typing for [`AFTER_TYPING`]: a key that opens a dialog may act.
    pub may_open: bool,
    /// This key came within [`BURST`] of the one before.
    pub burst: bool,
}

impl Keyboard {
    /// A key (or a paste) arrives at `now`: how it stands against the one before. A long enough
    /// quiet ends a typing pause, so the first key after it acts normally.
    ///
    /// A letter (`printable`) ends it only once no key showed typing for [`AFTER_TYPING`]: a word
    /// typed slowly whose letters happen to be bound (the `k` of "okay" moves the selection) is
    /// still typing. Other keys (arrows, Esc) end it after [`QUIET`].
    pub fn arrive(&mut self, now: DateTime<Utc>, printable: bool) -> Arrival {
        let gap = self.last_key.map(|t| now - t);
        self.last_key = Some(now);
        let quiet = gap.is_none_or(|g| g >= QUIET);
        let typed_recently = self.typed_at.is_some_and(|t| now - t < AFTER_TYPING);
        if quiet && !(printable && typed_recently) {
            self.typing = false;
        }
        Arrival {
            quiet,
            may_open: quiet && !typed_recently,
            burst: gap.is_some_and(|g| g < BURST),
        }
    }

    /// The person is typing (or pasting): keys that change anything pause until a quiet moment,
    /// and keys that open a dialog for longer ([`AFTER_TYPING`]).
    pub fn typing(&mut self) {
        self.typing = true;
        self.typed_at = self.last_key;
    }

    /// When the pause of the current typing ends, if nothing more is typed.
    pub fn pause_ends(&self) -> Option<DateTime<Utc>> {
        self.last_key.filter(|_| self.typing).map(|t| t + QUIET)
    }

    pub fn is_typing(&self) -> bool {
        self.typing
    }

    /// Ends the pause without a quiet moment: the keys go to a text field now (`:`).
    pub fn stop_typing(&mut self) {
        self.typing = false;
    }

    /// The tests' "the keyboard was quiet for a while": its keys go back by [`AFTER_TYPING`].
    #[cfg(test)]
    pub fn backdate(&mut self) {
        if let Some(t) = self.last_key.as_mut() {
            *t -= AFTER_TYPING;
        }
        if let Some(t) = self.typed_at.as_mut() {
            *t -= AFTER_TYPING;
        }
    }
}

/// The guard of a dialog whose answer is final: when it opened and when its last key came.
#[derive(Debug, Clone, PartialEq)]
pub struct Deliberate {
    opened_at: DateTime<Utc>,
    last_key_at: DateTime<Utc>,
}

impl Deliberate {
    /// Opened by a key (or a command's Enter) at `now`: that key starts the settle time and is the
    /// "previous key" of the first one the dialog gets.
    pub fn new(now: DateTime<Utc>) -> Deliberate {
        Deliberate {
            opened_at: now,
            last_key_at: now,
        }
    }

    /// A key arrives at `now`: whether it came in a burst with the key before (measured from the
    /// key before, whatever it did: a burst stays a burst even when its first keys were ignored).
    pub fn arrive(&mut self, now: DateTime<Utc>) -> Judged {
        let burst = now - self.last_key_at < BURST;
        let early = now - self.opened_at < SETTLE;
        self.last_key_at = now;
        Judged { early, burst }
    }

    /// Opened, and its last key came, `by` earlier: the tests' "the supervisor read it".
    #[cfg(test)]
    pub fn backdate(&mut self, by: TimeDelta) {
        self.opened_at -= by;
        self.last_key_at -= by;
    }
}

/// A key as the dialog's guard judged it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Judged {
    /// Within [`SETTLE`] of the dialog opening.
    pub early: bool,
    /// Within [`BURST`] of the key before.
    pub burst: bool,
}

impl Judged {
    /// Why `key`, this dialog's deciding key, decides nothing now; None when it decides.
    pub fn refusal(self, key: &str) -> Option<String> {
        if self.early {
            return Some(format!(
                "too soon — read what it decides, then press {key} (a key within a second of the \
                 dialog opening decides nothing)"
            ));
        }
        if self.burst {
            return Some(format!(
                "{key} came with other keys (pasted or typed ahead): nothing decided — press {key} \
                 on its own"
            ));
        }
        None
    }
}

/// A decision a deliberate key took, carried out only once [`BURST`] passed with no other key.
#[derive(Debug, Clone, PartialEq)]
pub struct Held<T> {
    pub at: DateTime<Utc>,
    pub decision: T,
}

impl<T> Held<T> {
    /// When it is carried out, if nothing comes before.
    pub fn due(&self) -> DateTime<Utc> {
        self.at + HOLD
    }

    pub fn is_due(&self, now: DateTime<Utc>) -> bool {
        now >= self.due()
    }
}

/// What a dialog says when a key that is not one of its keys closes it.
pub fn closed_by(dialog: &str, key: &str) -> String {
    format!("{dialog} closed: `{key}` is not one of its keys — nothing was decided")
}

/// The line shown while keys are paused because the person is typing.
pub fn paused_line() -> String {
    "typing? keys are paused until the keyboard is quiet for a moment — nothing was done; \
     `:` opens the command line"
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(1_700_000_000_000 + ms).unwrap()
    }

    #[test]
    fn the_first_key_is_quiet_and_a_run_is_not() {
        let mut k = Keyboard::default();
        assert!(k.arrive(t(0), true).quiet);
        assert!(!k.arrive(t(500), true).quiet);
        assert!(!k.arrive(t(1400), true).quiet);
        assert!(k.arrive(t(2900), true).quiet);
    }

    #[test]
    fn typing_ends_only_with_a_quiet_moment() {
        let mut k = Keyboard::default();
        k.arrive(t(0), true);
        k.typing();
        for i in 1..10 {
            k.arrive(t(i * 1000), true);
            assert!(k.is_typing(), "a key a second keeps the pause");
        }
        // An arrow after a quiet moment acts; a letter only after a longer one.
        k.arrive(t(9000 + QUIET.num_milliseconds()), false);
        assert!(!k.is_typing());
        k.typing();
        let at = 9000 + QUIET.num_milliseconds();
        k.arrive(t(at + QUIET.num_milliseconds()), true);
        assert!(k.is_typing(), "a letter 1.5 s after typing is typing");
        k.typing();
        k.arrive(
            t(at + QUIET.num_milliseconds() + AFTER_TYPING.num_milliseconds()),
            true,
        );
        assert!(!k.is_typing());
    }

    #[test]
    fn after_typing_a_key_opens_a_dialog_only_after_a_longer_quiet() {
        let mut k = Keyboard::default();
        k.arrive(t(0), true);
        k.typing();
        // A key every 1.6 s: each one after a quiet moment, none may open a dialog.
        for i in 1..5 {
            let a = k.arrive(t(i * 1600), true);
            assert!(a.quiet && !a.may_open, "{i}");
            assert!(k.is_typing(), "{i}");
            k.typing();
        }
        assert!(k.arrive(t(4 * 1600 + 3000), true).may_open);
    }

    #[test]
    fn a_dialog_decides_after_its_settle_time_and_out_of_a_burst() {
        let mut d = Deliberate::new(t(0));
        assert!(d.arrive(t(900)).refusal("y").is_some(), "too soon");
        assert!(d.arrive(t(1200)).refusal("y").is_none());
        assert!(d.arrive(t(1220)).refusal("y").is_some(), "a burst");
    }
}
