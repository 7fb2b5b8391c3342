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

/// Narrowest a column is cut to before a table gives up on columns: below this a name or a
/// parameter set is unreadable (a 13-column ranking cut to fit once showed six characters each).
const MIN_CELL: usize = 12;

/// A markdown pipe table in at most `width` cells. When its columns fit (the widest giving way,
/// none below [`MIN_CELL`] or its own width), aligned text: a header, a rule, the rows, columns
/// joined by ` │ `. When they do not, each row as a block of `header  value` lines, so nothing is
/// cut.
pub fn pipe_table(lines: &[&str], width: usize) -> Vec<TextLine> {
    use unicode_width::UnicodeWidthStr;
    let plain = |text: String| TextLine {
        text,
        style: LineStyle::Plain,
    };
    let Some(align) = lines.get(1).and_then(|l| pipe_alignment(l)) else {
        return lines.iter().map(|l| plain(l.to_string())).collect();
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
    let floors: Vec<usize> = widths.iter().map(|w| (*w).min(MIN_CELL)).collect();
    let sep = 3;
    let room = width.saturating_sub(sep * n.saturating_sub(1));
    if floors.iter().sum::<usize>() > room {
        return pipe_blocks(&rows, width);
    }
    while widths.iter().sum::<usize>() > room {
        let Some(widest) = (0..n)
            .filter(|i| widths[*i] > floors[*i])
            .max_by_key(|i| widths[*i])
        else {
            break;
        };
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
    let mut out = vec![TextLine {
        text: render(&rows[0]),
        style: LineStyle::Accent,
    }];
    out.push(TextLine {
        text: widths
            .iter()
            .map(|w| "─".repeat(*w))
            .collect::<Vec<_>>()
            .join("─┼─"),
        style: LineStyle::Muted,
    });
    out.extend(rows[1..].iter().map(|r| plain(render(r))));
    out
}

/// Each data row of a table as a block: its first cell as a heading, then one `header  value`
/// line per other cell, wrapped, never cut.
fn pipe_blocks(rows: &[Vec<String>], width: usize) -> Vec<TextLine> {
    use unicode_width::UnicodeWidthStr;
    let header = &rows[0];
    let label = header
        .iter()
        .skip(1)
        .map(|h| h.width())
        .max()
        .unwrap_or(0)
        .min(width / 3);
    let mut out = Vec::new();
    for row in &rows[1..] {
        let title = match (header.first(), row.first()) {
            (Some(h), Some(v)) if !h.is_empty() => format!("{h} {v}"),
            (_, Some(v)) => v.clone(),
            _ => String::new(),
        };
        for text in wrap(&title, width, "  ") {
            out.push(TextLine {
                text,
                style: LineStyle::Accent,
            });
        }
        for (i, value) in row.iter().enumerate().skip(1) {
            let name = header.get(i).map_or("", String::as_str);
            let name = super::truncate(name, label);
            let pad = label.saturating_sub(name.width());
            let indent = " ".repeat(label + 4);
            for text in wrap(
                &format!("  {name}{}  {value}", " ".repeat(pad)),
                width,
                &indent,
            ) {
                out.push(TextLine {
                    text,
                    style: LineStyle::Plain,
                });
            }
        }
        out.push(TextLine {
            text: String::new(),
            style: LineStyle::Plain,
        });
    }
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
        let text = |t: Vec<TextLine>| t.into_iter().map(|l| l.text).collect::<Vec<_>>();
        let t = pipe_table(&md[..4], 80);
        assert_eq!(
            text(t),
            [
                "strategy   │ return % │ trades",
                "───────────┼──────────┼───────",
                "ema_cross  │     12.4 │   23",
                "rsi_revert │     -3.1 │   7",
            ]
        );
        // Too narrow for its columns: each row a block, nothing cut.
        let t = text(pipe_table(&md[..4], 24));
        assert_eq!(
            t,
            [
                "strategy ema_cross",
                "  return %  12.4",
                "  trades    23",
                "",
                "strategy rsi_revert",
                "  return %  -3.1",
                "  trades    7",
                "",
            ]
        );
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
