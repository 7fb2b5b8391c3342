//! Tab completion of the command line.

use super::*;

/// Commands whose name is followed by arguments; completing them adds a space so typing continues.
pub(super) fn takes_arguments(name: &str) -> bool {
    matches!(
        name,
        "propose"
            | "trade"
            | "confirm"
            | "reject"
            | "agent"
            | "suspend"
            | "resume"
            | "close"
            | "backtest"
            | "top"
            | "job"
            | "research"
            | "chat"
            | "tool"
    )
}

/// Tab-completion candidates for the whole line: each is the full replacement line, sorted and
/// without duplicates. Text before the token being completed is kept as typed. Completed words end
/// in a space when another argument follows, option keys in `=`.
pub fn complete(input: &str, coins: &[&str]) -> Vec<String> {
    complete_with(input, coins, &[])
}

/// Completion with the tool names of the catalog (for `/tool`).
pub fn complete_with(input: &str, coins: &[&str], tools: &[&str]) -> Vec<String> {
    let tokens = tokenize(input);
    let at_new_token = input.is_empty() || input.ends_with(char::is_whitespace);
    let (done, partial, prefix) = if at_new_token {
        (&tokens[..], "", input)
    } else {
        // Not at a new token means the input ends inside the last token, so there is one.
        let Some((last, done)) = tokens.split_last() else {
            return Vec::new();
        };
        (done, last.text, &input[..last.start])
    };
    let mut out: Vec<String> = Vec::new();
    let mut push = |word: &str, suffix: &str| out.push(format!("{prefix}{word}{suffix}"));
    let starts = |word: &str| word.to_lowercase().starts_with(&partial.to_lowercase());

    match done.first() {
        None => {
            let typed = command_name(partial);
            for spec in COMMANDS.iter().filter(|s| !s.name.contains(' ')) {
                if spec.name.starts_with(&typed) {
                    let suffix = if takes_arguments(spec.name) { " " } else { "" };
                    push(&format!("/{}", spec.name), suffix);
                }
            }
            if let Some(alias) = ALIASES
                .iter()
                .find(|(alias, _)| *alias == typed)
                .map(|(_, name)| *name)
            {
                push(&format!("/{alias}"), "");
            }
        }
        Some(first) => {
            let index = done.len();
            match resolve_name(&command_name(first.text)) {
                Some("propose") => match index {
                    1 => coins
                        .iter()
                        .filter(|c| starts(c))
                        .for_each(|c| push(c, " ")),
                    2 => ["long", "short"]
                        .into_iter()
                        .filter(|s| starts(s))
                        .for_each(|s| push(s, " ")),
                    _ => {
                        let options = &done[3.min(done.len())..];
                        let positional_size = done.get(3).is_some_and(|t| !t.text.contains('='));
                        let used: Vec<&str> = options
                            .iter()
                            .filter_map(|t| t.text.split_once('='))
                            .filter_map(|(k, _)| canonical_option(k))
                            .collect();
                        if let Some((key, value)) = partial.split_once('=') {
                            if canonical_option(key) == Some("ex") {
                                for venue in ["venue", "venue2"] {
                                    if venue.starts_with(&value.to_ascii_lowercase()) {
                                        push(&format!("{key}={venue}"), " ");
                                    }
                                }
                            }
                        } else if index > 3 || !partial.is_empty() {
                            // At the size position an empty partial means a number comes next, so
                            // offering option keys there would suggest skipping the size.
                            let size_given = positional_size || used.contains(&"usd");
                            for key in OPTION_KEYS {
                                let offered = !used.contains(key) && (*key != "usd" || !size_given);
                                if offered && starts(key) {
                                    push(key, "=");
                                }
                            }
                        }
                    }
                },
                Some("research") if index == 1 => ["start", "say", "stop"]
                    .into_iter()
                    .filter(|s| starts(s))
                    .for_each(|s| push(s, if *s == *"stop" { "" } else { " " })),
                Some("tool") if index == 1 => tools
                    .iter()
                    .filter(|t| starts(t))
                    .for_each(|t| push(t, " ")),
                Some("close") if index == 1 => coins
                    .iter()
                    .copied()
                    .chain(["all"])
                    .filter(|c| starts(c))
                    .for_each(|c| push(c, "")),
                Some("backtest") => match index {
                    2 => coins
                        .iter()
                        .map(|c| format!("{c}-USD"))
                        .filter(|c| starts(c))
                        .for_each(|c| push(&c, " ")),
                    3 => TIMEFRAMES
                        .iter()
                        .filter(|t| starts(t))
                        .for_each(|t| push(t, " ")),
                    _ => {}
                },
                Some("top") => {
                    if index == 1 {
                        [TopView::Backtests, TopView::Live, TopView::Combos]
                            .into_iter()
                            .map(TopView::name)
                            .filter(|v| starts(v))
                            .for_each(|v| push(v, " "));
                    } else if let Some(view) = done.get(1).and_then(|t| top_view(t.text)) {
                        let used: Vec<String> = done[2..]
                            .iter()
                            .filter_map(|t| t.text.split_once('='))
                            .map(|(k, _)| k.to_ascii_lowercase())
                            .collect();
                        if !partial.contains('=') {
                            for key in view.keys() {
                                if !used.contains(&key.to_ascii_lowercase()) && starts(key) {
                                    push(key, "=");
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }
    out.sort();
    out.dedup();
    out
}
