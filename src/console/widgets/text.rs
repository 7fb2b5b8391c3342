//! Wrapped text for the scrolled panes (research transcript and artifacts, chat): lines with the
//! role that styles them.

/// A line of a wrapped text pane, with what it belongs to (for styling).
#[derive(Debug, Clone, PartialEq)]
pub struct TextLine {
    pub text: String,
    pub style: LineStyle,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineStyle {
    Plain,
    Muted,
    Accent,
    Good,
    Bad,
    Warn,
    Heading,
}

/// Word-wraps `text` to `width` columns; continuation lines start with `indent`.
pub fn wrap(text: &str, width: usize, indent: &str) -> Vec<String> {
    let width = width.max(8);
    let mut out = Vec::new();
    for para in text.split('\n') {
        // Leading spaces are kept: they indent.
        let body = para.trim_start_matches(' ');
        let mut line = " ".repeat(para.len() - body.len());
        let mut len = line.len();
        let lead = len;
        for word in body.split(' ') {
            let wlen = word.chars().count();
            let sep = usize::from(len > lead);
            if len > lead && len + sep + wlen > width {
                out.push(std::mem::take(&mut line));
                line.push_str(indent);
                len = indent.chars().count();
            } else if sep == 1 {
                line.push(' ');
                len += 1;
            }
            // A word longer than the line is cut into pieces.
            let mut rest: Vec<char> = word.chars().collect();
            while len + rest.len() > width && len < width {
                let take = width - len;
                line.extend(rest.drain(..take));
                out.push(std::mem::take(&mut line));
                line.push_str(indent);
                len = indent.chars().count();
            }
            len += rest.len();
            line.extend(rest);
        }
        out.push(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_words_and_cuts_long_ones() {
        assert_eq!(
            wrap("the quick brown fox jumps", 10, "  "),
            ["the quick", "  brown", "  fox", "  jumps"]
        );
        assert_eq!(wrap("abcdefghijklmnop", 8, ""), ["abcdefgh", "ijklmnop"]);
        assert_eq!(wrap("a\nb", 8, ""), ["a", "b"]);
    }
}
