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

/// The cells of a markdown pipe-table row: `| a | b |` or `a | b` → `["a", "b"]`.
fn pipe_cells(line: &str) -> Vec<String> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    t.split('|').map(|c| c.trim().to_string()).collect()
}

/// A pipe-table delimiter row (`|---|:--:|--:|`): the columns' alignment, or None.
fn pipe_alignment(line: &str) -> Option<Vec<Align>> {
    if !line.contains('-') {
        return None;
    }
    pipe_cells(line)
        .iter()
        .map(|c| {
            let dashes = c.trim_matches(':');
            if dashes.is_empty() || !dashes.chars().all(|ch| ch == '-') {
                return None;
            }
            Some(match (c.starts_with(':'), c.ends_with(':')) {
                (true, true) => Align::Center,
                (false, true) => Align::Right,
                _ => Align::Left,
            })
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Align {
    Left,
    Center,
    Right,
}

/// Lines at `lines[start..]` that form a markdown pipe table (a header row, a delimiter row and
/// the rows after them that contain `|`): how many, or 0 when none starts there.
pub fn pipe_table_len(lines: &[&str], start: usize) -> usize {
    let (Some(head), Some(delim)) = (lines.get(start), lines.get(start + 1)) else {
        return 0;
    };
    if !head.contains('|') || pipe_alignment(delim).is_none() {
        return 0;
    }
    2 + lines[start + 2..]
        .iter()
        .take_while(|l| l.contains('|') && !l.trim().is_empty())
        .count()
}

/// A markdown pipe table as aligned text in at most `width` cells: a header, a rule, the rows;
/// columns joined by ` │ `. When it is too wide, the widest columns give way and their cells end
/// in `…`.
pub fn pipe_table(lines: &[&str], width: usize) -> Vec<String> {
    use unicode_width::UnicodeWidthStr;
    let Some(align) = lines.get(1).and_then(|l| pipe_alignment(l)) else {
        return lines.iter().map(|l| l.to_string()).collect();
    };
    let rows: Vec<Vec<String>> = std::iter::once(lines[0])
        .chain(lines.iter().skip(2).copied())
        .map(pipe_cells)
        .collect();
    let n = rows
        .iter()
        .map(Vec::len)
        .max()
        .unwrap_or(0)
        .max(align.len());
    let mut widths = vec![1usize; n];
    for row in &rows {
        for (i, c) in row.iter().enumerate() {
            widths[i] = widths[i].max(c.width());
        }
    }
    let sep = 3;
    let room = width.saturating_sub(sep * n.saturating_sub(1));
    while widths.iter().sum::<usize>() > room {
        let widest = (0..n).max_by_key(|i| widths[*i]).unwrap_or(0);
        if widths[widest] <= 3 {
            break;
        }
        widths[widest] -= 1;
    }
    let render = |row: &[String]| -> String {
        let cells: Vec<String> = (0..n)
            .map(|i| {
                let text = super::truncate(row.get(i).map_or("", String::as_str), widths[i]);
                let pad = widths[i].saturating_sub(text.width());
                match align.get(i).copied().unwrap_or(Align::Left) {
                    Align::Left => format!("{text}{}", " ".repeat(pad)),
                    Align::Right => format!("{}{text}", " ".repeat(pad)),
                    Align::Center => {
                        format!("{}{text}{}", " ".repeat(pad / 2), " ".repeat(pad - pad / 2))
                    }
                }
            })
            .collect();
        cells.join(" │ ").trim_end().to_string()
    };
    let mut out = vec![render(&rows[0])];
    out.push(
        widths
            .iter()
            .map(|w| "─".repeat(*w))
            .collect::<Vec<_>>()
            .join("─┼─"),
    );
    out.extend(rows[1..].iter().map(|r| render(r)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_tables_align_and_fit() {
        let md = [
            "| strategy | return % | trades |",
            "|:---|---:|:-:|",
            "| ema_cross | 12.4 | 23 |",
            "| rsi_revert | -3.1 | 7 |",
            "after",
        ];
        assert_eq!(pipe_table_len(&md, 0), 4);
        assert_eq!(pipe_table_len(&md, 1), 0);
        let t = pipe_table(&md[..4], 80);
        assert_eq!(
            t,
            [
                "strategy   │ return % │ trades",
                "───────────┼──────────┼───────",
                "ema_cross  │     12.4 │   23",
                "rsi_revert │     -3.1 │   7",
            ]
        );
        // Too wide: the widest column gives way, with an ellipsis.
        let t = pipe_table(&md[..4], 24);
        assert!(t.iter().all(|l| l.chars().count() <= 24), "{t:?}");
        assert!(t[2].starts_with("ema_c…"), "{t:?}");
        // Not a table: a line with a pipe but no delimiter row.
        assert_eq!(pipe_table_len(&["a | b", "c | d"], 0), 0);
    }

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
