//! "Did you mean": the nearest known name to a mistyped one, for commands, tools, key actions and
//! theme roles.

/// The candidate the user most plausibly meant: one the word is a prefix of, else the nearest within
/// two edits (and fewer edits than the word has characters, so `x` does not suggest `q`).
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let word = word.to_lowercase();
    if word.is_empty() {
        return None;
    }
    let candidates: Vec<&str> = candidates.into_iter().collect();
    if let Some(c) = candidates.iter().find(|c| c.starts_with(&word)) {
        return Some(c);
    }
    let len = word.chars().count();
    candidates
        .into_iter()
        .map(|c| (edit_distance(&word, c), c))
        .filter(|(d, _)| *d <= 2 && *d < len)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// The tail of an error about a mistyped name ("; did you mean" the closest), or nothing when no
/// name is close; for the errors that keep the suggestion as data, not as text.
pub fn did_you_mean(closest: &Option<String>) -> String {
    closest
        .as_ref()
        .map(|name| format!("; did you mean `{name}`?"))
        .unwrap_or_default()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = Vec::with_capacity(b.len() + 1);
        cur.push(i + 1);
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn prefix_first_then_two_edits_at_most() {
        let names = ["propose", "close", "confirm", "quit"];
        assert_eq!(closest("con", names), Some("confirm"));
        assert_eq!(closest("propse", names), Some("propose"));
        assert_eq!(closest("CLOES", names), Some("close"));
        assert_eq!(closest("x", names), None);
        assert_eq!(closest("zzzzzz", names), None);
        assert_eq!(closest("", names), None);
    }
}
