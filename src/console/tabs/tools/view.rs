//! Tools: the catalog by tier, the selected tool's schema, the last result as a foldable JSON tree,
//! and the argument editor with its schema problems.

use super::{Tier, ToolEditor, ToolsTab};
use crate::console::component::Shown;
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;
use crate::console::table;
use crate::console::tabs::tools::rows::Tools;
use crate::console::tabs::tools::schema;
use crate::console::theme::Theme;
use crate::console::widgets::jsontree::{JsonTree, RowKind};
use crate::console::widgets::{self, Col, fill_col};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

impl ToolsTab {
    pub fn draw(&self, f: &mut Frame, s: &Shown) {
        catalog(f, self, s);
        schema_panel(f, self, s, s.screen.schema);
        result(f, self, s);
    }
}

pub fn tier_style(theme: &Theme, tier: &str) -> Style {
    match Tier::of(tier) {
        Tier::Observe => theme.good,
        Tier::Experiment => theme.warn,
        Tier::Mutate => theme.critical,
        Tier::Other => theme.muted,
    }
}

fn catalog(f: &mut Frame, tab: &ToolsTab, s: &Shown) {
    let (theme, screen) = (s.theme, s.screen);
    let focused = s.focused(Pane::Tools);
    let t = tab;
    let mut title = vec![Span::styled(" Tools ", theme.accent)];
    if t.loaded() {
        let count = |tier: Tier| t.tools.iter().filter(|x| Tier::of(&x.tier) == tier).count();
        title.push(Span::styled(
            format!(
                "observe {} · experiment {} · mutate {} ",
                count(Tier::Observe),
                count(Tier::Experiment),
                count(Tier::Mutate)
            ),
            theme.muted,
        ));
    }
    let empty = match (&t.error, t.loaded()) {
        (Some(_), _) => "the catalog could not be loaded (r retries)",
        (None, true) => "this key may call no tools",
        (None, false) => "loading the tool catalog…",
    };
    // Listed as the catalog groups them, the tier is written once per section (the first tool
    // of each tier); filtered or sorted, on every row.
    let grouped = !s.tables.query(Pane::Tools).is_set();
    table::draw(
        f,
        screen,
        theme,
        s.tables,
        Pane::Tools,
        Line::from(title),
        focused,
        s.selected(Pane::Tools),
        &Tools(&t.tools),
        empty,
        |i| {
            let tool = &t.tools[i];
            let first = !grouped || i == 0 || t.tools[i - 1].tier != tool.tier;
            let tier = if first {
                tool.tier.clone()
            } else {
                String::new()
            };
            let name = tool.name.strip_prefix("service_").unwrap_or(&tool.name);
            let cells = vec![
                Line::styled(tier, tier_style(theme, &tool.tier)),
                Line::from(name.to_string()),
                Line::styled(tool.description.clone(), theme.muted),
            ];
            (cells, None)
        },
    );
}

fn schema_panel(f: &mut Frame, tab: &ToolsTab, s: &Shown, area: Rect) {
    let theme = s.theme;
    let tool = s.row(Pane::Tools).and_then(|r| tab.tools.get(r));
    let title = match tool {
        Some(t) => format!(" {} · {} {} ", t.name, t.method, t.path),
        None => " Schema ".into(),
    };
    widgets::page::draw(
        f,
        theme,
        area,
        Line::from(Span::styled(title, theme.accent)),
        s.focused(Pane::Schema),
        tab.schema_lines(theme, s.keymap, s.row(Pane::Tools).unwrap_or(usize::MAX)),
        s.selected(Pane::Schema),
    );
}

impl ToolsTab {
    /// The schema pane's text for tool `selected`: its tier, how to run it, its arguments.
    pub fn schema_lines<'a>(
        &self,
        theme: &Theme,
        keymap: &crate::console::keymap::Keymap,
        selected: usize,
    ) -> Vec<Line<'a>> {
        let Some(tool) = self.tools.get(selected) else {
            return match &self.error {
                Some(err) => vec![Line::styled(err.clone(), theme.error)],
                None => vec![],
            };
        };
        let key = |a| keymap.keys_for(a).first().cloned().unwrap_or_default();
        let mut lines = vec![Line::from(vec![
            Span::styled(tool.tier.clone(), tier_style(theme, &tool.tier)),
            Span::styled(
                if tool.requires_confirmation {
                    " · needs approval in the inbox · "
                } else {
                    " · "
                },
                theme.muted,
            ),
            Span::styled(key(KeyAction::Select), theme.accent),
            Span::styled(" edit arguments and run", theme.muted),
        ])];
        let props = schema::properties(&tool.input_schema);
        if props.is_empty() {
            lines.push(Line::styled("takes no arguments", theme.muted));
        }
        for (name, required, ty, desc) in props {
            let mut spans = vec![
                Span::styled(
                    format!("{}{name}", if required { "*" } else { " " }),
                    if required { theme.accent } else { theme.base },
                ),
                Span::styled(format!("  {ty}"), theme.base),
            ];
            if !desc.is_empty() {
                spans.push(Span::styled(format!("  {desc}"), theme.muted));
            }
            lines.push(Line::from(spans));
        }
        lines
    }
}

const RESULT_COLS: &[Col] = &[fill_col("JSON · enter/space folds", 10, 0)];

fn result(f: &mut Frame, tab: &ToolsTab, s: &Shown) {
    let (theme, screen) = (s.theme, s.screen);
    let focused = s.focused(Pane::Result);
    let running = tab.running;
    let mut title = vec![Span::styled(" Result ", theme.accent)];
    if running > 0 {
        title.push(Span::styled(format!("{running} running… "), theme.warn));
    }
    let Some(outcome) = &tab.outcome else {
        widgets::table(
            f,
            screen,
            theme,
            Pane::Result,
            Line::from(title),
            focused,
            0,
            0,
            RESULT_COLS,
            "run a tool: select it and press enter, or :/tool <name> {json}",
            |_| (vec![], None),
        );
        return;
    };
    title.push(Span::styled(
        format!(
            "{} {} at {} ",
            outcome.tool,
            crate::console::widgets::jsontree::cut(&outcome.args.to_string(), 40),
            outcome.at.format("%H:%M:%S")
        ),
        theme.muted,
    ));
    if let Some(id) = &outcome.awaiting {
        title.push(Span::styled(
            format!("awaiting approval: {id} in the inbox "),
            theme.warn,
        ));
    }
    match &outcome.result {
        Err(err) => {
            let area = screen.pane(Pane::Result);
            let block = widgets::block(theme, Line::from(title), focused);
            f.render_widget(
                Paragraph::new(Span::styled(err.clone(), theme.error))
                    .block(block)
                    .wrap(Wrap { trim: false }),
                area,
            );
        }
        Ok(tree) => {
            let rows = tree.rows();
            widgets::table(
                f,
                screen,
                theme,
                Pane::Result,
                Line::from(title),
                focused,
                s.selected(Pane::Result),
                rows.len(),
                RESULT_COLS,
                "",
                |i| {
                    let row = &rows[i];
                    let mut spans = vec![Span::raw("  ".repeat(row.depth))];
                    if let Some(k) = &row.key {
                        spans.push(Span::styled(format!("{k}: "), theme.accent));
                    }
                    let style = match row.kind {
                        RowKind::Open if row.folded => theme.warn,
                        RowKind::Open | RowKind::Close => theme.muted,
                        RowKind::Leaf if row.text.starts_with('"') => theme.good,
                        RowKind::Leaf => theme.base,
                    };
                    let marker = match (row.kind, row.folded) {
                        (RowKind::Open, true) => "▸ ",
                        (RowKind::Open, false) => "▾ ",
                        _ => "",
                    };
                    spans.push(Span::styled(marker, theme.muted));
                    spans.push(Span::styled(row.text.clone(), style));
                    if row.comma {
                        spans.push(Span::styled(",", theme.muted));
                    }
                    (vec![Line::from(spans)], None)
                },
            );
        }
    }
}

/// The argument editor, over the Tools tab: the JSON text, then each problem with its path.
pub fn editor(f: &mut Frame, tab: &ToolsTab, theme: &Theme, area: Rect, e: &ToolEditor) {
    let tool = tab.find(&e.tool).map(|i| &tab.tools[i]);
    let r = widgets::centered(
        area,
        area.width.saturating_sub(4).min(100),
        area.height.saturating_sub(2),
    );
    f.render_widget(Clear, r);
    let title = format!(" {} — ctrl-s sends (only when valid) · esc closes ", e.tool);
    let block = widgets::block(theme, Line::from(title), true);
    let inner = block.inner(r);
    f.render_widget(block, r);
    let problems_h = (e.problems.len().min(6) as u16 + 1).min(inner.height / 2);
    let [hint, text, problems] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(problems_h),
    ])
    .areas(inner);
    let hint_line = match tool {
        Some(t) if t.requires_confirmation => Line::styled(
            "a mutate tool: the first call returns a confirm token for the approval inbox",
            theme.warn,
        ),
        Some(t) => Line::styled(
            format!(
                "{} tool · arguments as JSON, checked against its schema",
                t.tier
            ),
            theme.muted,
        ),
        None => Line::raw(""),
    };
    f.render_widget(Paragraph::new(hint_line), hint);
    f.render_widget(&e.input, text);
    let mut lines = Vec::new();
    if e.problems.is_empty() {
        lines.push(Line::styled("✓ valid: ctrl-s sends", theme.good));
    } else {
        let style = if e.refused { theme.error } else { theme.warn };
        lines.push(Line::styled(
            format!(
                "{} problem{}{}:",
                e.problems.len(),
                if e.problems.len() == 1 { "" } else { "s" },
                if e.refused { " — not sent" } else { "" }
            ),
            style,
        ));
        for p in &e.problems {
            lines.push(Line::from(vec![
                Span::styled(format!("  {} ", p.path), theme.accent),
                Span::styled(p.message.clone(), theme.base),
            ]));
        }
    }
    f.render_widget(Paragraph::new(lines), problems);
}

/// The JSON tree rows as plain text (tests).
pub fn tree_text(tree: &JsonTree) -> Vec<String> {
    tree.rows().iter().map(JsonTree::line).collect()
}
