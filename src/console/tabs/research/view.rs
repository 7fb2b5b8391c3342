//! Research: the run's line, the lead and its agents as a tree with status and progress, the
//! artifacts, the transcript (newest at the bottom, wrapped, scrollable), the artifact viewer and
//! the stop question.

use super::ResearchTab;
use crate::console::component::Shown;
use crate::console::keymap::KeyAction;
use crate::console::layout::{self, Pane};
use crate::console::table;
use crate::console::tabs::research::rows::{AGENT_COLS, Agents, Artifacts, what};
use crate::console::theme::Theme;
use crate::console::widgets;
use crate::console::widgets::text::{LineStyle, TextLine};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

impl ResearchTab {
    pub fn draw(&self, f: &mut Frame, s: &Shown) {
        banner(f, self, s, s.screen.banner);
        agents_table(f, self, s);
        artifacts(f, self, s);
        transcript(f, self, s);
    }
}

pub fn run_status_style(theme: &Theme, status: &str) -> Style {
    match status {
        "active" | "running" | "planning" => theme.warn,
        "completed" | "done" => theme.good,
        "failed" => theme.bad,
        _ => theme.expired,
    }
}

fn banner(f: &mut Frame, r: &ResearchTab, s: &Shown, area: Rect) {
    let theme = s.theme;
    let key = |a| s.keymap.keys_for(a).first().cloned().unwrap_or_default();
    let first = match &r.run {
        Some(run) => {
            let mut spans = vec![
                Span::styled(format!(" {} ", run.run_id), theme.accent),
                Span::styled(run.status.clone(), run_status_style(theme, &run.status)),
            ];
            if let Some(started) = run.created_at {
                let end = run.finished_at.unwrap_or(s.now);
                spans.push(Span::styled(
                    format!(
                        " · {} · ",
                        widgets::age((end - started).to_std().unwrap_or_default())
                    ),
                    theme.muted,
                ));
            } else {
                spans.push(Span::styled(" · ", theme.muted));
            }
            if !run.planner.is_empty() {
                spans.push(Span::styled(
                    format!("planner {} · ", run.planner),
                    theme.muted,
                ));
            }
            spans.push(Span::styled(run.task.clone(), theme.base));
            Line::from(spans)
        }
        None if r.unsupported => {
            Line::styled(" this service has no research operations", theme.muted)
        }
        None if !r.checked => Line::styled(" checking for a research run…", theme.muted),
        None => Line::from(vec![
            Span::styled(" no research run · ", theme.muted),
            Span::styled(key(KeyAction::NewRun), theme.accent),
            Span::styled(" or :/research start <task> starts one", theme.muted),
        ]),
    };
    let second = match (&r.reply, &r.error) {
        (_, Some(err)) if !r.unsupported => {
            Line::styled(format!(" research_status: {err}"), theme.error)
        }
        (Some(reply), _) => Line::from(vec![
            Span::styled(" › ", theme.accent),
            Span::styled(reply.replace('\n', " ⏎ "), theme.muted),
        ]),
        _ => Line::raw(""),
    };
    f.render_widget(Paragraph::new(vec![first, second]), area);
}

fn progress_bar(p: u8) -> String {
    let p = p.min(100) as usize;
    let filled = (p * 8 + 50) / 100;
    format!("{}{} {p:>3}%", "█".repeat(filled), "░".repeat(8 - filled))
}

fn agents_table(f: &mut Frame, tab: &ResearchTab, s: &Shown) {
    let (theme, screen) = (s.theme, s.screen);
    let focused = s.focused(Pane::Agents);
    let empty = if tab.run.is_some() {
        "the lead is planning…"
    } else {
        "no run"
    };
    let Some(run) = tab.run.as_ref() else {
        widgets::table(
            f,
            screen,
            theme,
            Pane::Agents,
            Line::from(Span::styled(" Lead and agents ", theme.accent)),
            focused,
            0,
            0,
            AGENT_COLS,
            empty,
            |_| (vec![], None),
        );
        return;
    };
    let rows = Agents {
        agents: &run.agents,
        tree: tab.tree(),
    };
    let done = run.agents.iter().filter(|a| a.status == "done").count();
    let title = Line::from(vec![
        Span::styled(" Lead and agents ", theme.accent),
        Span::styled(format!("{done}/{} done ", run.agents.len()), theme.muted),
    ]);
    table::draw(
        f,
        screen,
        theme,
        s.tables,
        Pane::Agents,
        title,
        focused,
        s.selected(Pane::Agents),
        &rows,
        empty,
        |k| {
            let (i, depth, last) = rows.tree[k];
            let a = &run.agents[i];
            let prefix = match (depth, last) {
                (0, _) => "",
                (_, true) => "└─ ",
                _ => "├─ ",
            };
            let name = if a.name.is_empty() {
                a.agent_id.clone()
            } else {
                a.name.clone()
            };
            let role_style = if a.role == "lead" {
                theme.accent
            } else {
                theme.base
            };
            let what = what(a);
            let cells = vec![
                Line::from(vec![
                    Span::styled(prefix, theme.muted),
                    Span::styled(name, role_style),
                ]),
                Line::styled(a.status.clone(), run_status_style(theme, &a.status)),
                Line::styled(progress_bar(a.progress), run_status_style(theme, &a.status)),
                Line::from(what),
            ];
            (cells, None)
        },
    );
}

fn artifacts(f: &mut Frame, tab: &ResearchTab, s: &Shown) {
    let (theme, screen) = (s.theme, s.screen);
    let focused = s.focused(Pane::Artifacts);
    let list = tab
        .run
        .as_ref()
        .map(|r| r.artifacts.as_slice())
        .unwrap_or(&[]);
    let key = s
        .keymap
        .keys_for(KeyAction::Select)
        .first()
        .cloned()
        .unwrap_or_default();
    table::draw(
        f,
        screen,
        theme,
        s.tables,
        Pane::Artifacts,
        Line::from(vec![
            Span::styled(" Artifacts ", theme.accent),
            Span::styled(format!("{key} opens "), theme.muted),
        ]),
        focused,
        s.selected(Pane::Artifacts),
        &Artifacts(list),
        "none yet: the report arrives when the run completes",
        |i| {
            let a = &list[i];
            let cells = vec![
                Line::from(a.name.clone()),
                Line::styled(a.kind.clone(), theme.muted),
                Line::from(
                    a.created_at
                        .map(|t| t.format("%H:%M:%S").to_string())
                        .unwrap_or_default(),
                ),
            ];
            (cells, None)
        },
    );
}

pub fn line_style(theme: &Theme, s: LineStyle) -> Style {
    match s {
        LineStyle::Plain => theme.base,
        LineStyle::Muted => theme.muted,
        LineStyle::Accent => theme.accent,
        LineStyle::Good => theme.good,
        LineStyle::Bad => theme.bad,
        LineStyle::Warn => theme.warn,
        LineStyle::Heading => theme.accent.add_modifier(Modifier::BOLD),
    }
}

/// Draws wrapped lines bottom-aligned (newest at the bottom), scrolled up by `scroll`.
#[allow(clippy::too_many_arguments)]
pub fn text_pane(
    f: &mut Frame,
    theme: &Theme,
    area: Rect,
    title: Line<'_>,
    focused: bool,
    lines: &[TextLine],
    scroll: usize,
    empty: &str,
) {
    let mut title = title;
    let rows = layout::text_rows(area);
    let scroll = scroll.min(lines.len().saturating_sub(rows));
    let end = lines.len() - scroll;
    let start = end.saturating_sub(rows);
    if scroll > 0 {
        title.spans.push(Span::styled(
            format!(" ↑ {scroll} lines up (G: newest) "),
            theme.warn,
        ));
    }
    let block = widgets::block(theme, title, focused);
    let body: Vec<Line> = if lines.is_empty() {
        vec![Line::styled(empty.to_string(), theme.muted)]
    } else {
        lines[start..end]
            .iter()
            .map(|l| Line::styled(l.text.clone(), line_style(theme, l.style)))
            .collect()
    };
    f.render_widget(Paragraph::new(body).block(block), area);
}

fn transcript(f: &mut Frame, tab: &ResearchTab, s: &Shown) {
    let (theme, screen) = (s.theme, s.screen);
    let area = screen.pane(Pane::Transcript);
    let lines = super::transcript_lines(tab, area.width.saturating_sub(2) as usize);
    let mut title = vec![Span::styled(" Transcript ", theme.accent)];
    if tab.active() {
        title.push(Span::styled("live ", theme.muted));
    }
    text_pane(
        f,
        theme,
        area,
        Line::from(title),
        s.focused(Pane::Transcript),
        &lines,
        tab.scroll,
        "the lead and its agents report here",
    );
}

/// The artifact viewer: markdown with headings emphasized, JSON pretty-printed.
pub fn artifact(
    f: &mut Frame,
    tab: &ResearchTab,
    theme: &Theme,
    area: Rect,
    index: usize,
    scroll: u16,
) {
    let Some(a) = tab.run.as_ref().and_then(|r| r.artifacts.get(index)) else {
        return;
    };
    // The whole width: a report's ranking table needs it more than prose needs a short line.
    let r = widgets::centered(
        area,
        area.width.saturating_sub(4),
        area.height.saturating_sub(2),
    );
    f.render_widget(Clear, r);
    let lines = super::artifact_lines(&a.kind, &a.content, r.width.saturating_sub(2) as usize);
    let visible = r.height.saturating_sub(2) as usize;
    let scroll = (scroll as usize).min(lines.len().saturating_sub(visible));
    let more = if lines.len() > visible {
        format!(
            "{}-{} of {} · j/k scroll · ",
            scroll + 1,
            (scroll + visible).min(lines.len()),
            lines.len()
        )
    } else {
        String::new()
    };
    let title = format!(" {} ({}) — {more}Esc closes ", a.name, a.kind);
    let body: Vec<Line> = lines
        .iter()
        .skip(scroll)
        .take(visible)
        .map(|l| Line::styled(l.text.clone(), line_style(theme, l.style)))
        .collect();
    f.render_widget(
        Paragraph::new(body)
            .block(widgets::block(theme, Line::from(title), true))
            .style(theme.base),
        r,
    );
}

pub fn stop_dialog(
    f: &mut Frame,
    tab: &ResearchTab,
    theme: &Theme,
    area: Rect,
    run_id: &str,
    yes: &str,
) {
    let task = tab.run.as_ref().map(|r| r.task.clone()).unwrap_or_default();
    let lines = vec![
        Line::from(vec![
            Span::raw("Stop research run "),
            Span::styled(run_id.to_string(), theme.accent),
            Span::raw("?"),
        ]),
        Line::styled(agents_cut(&task, 56), theme.muted),
        Line::raw(""),
        Line::from(vec![
            Span::styled(format!(" {yes} "), theme.selected),
            Span::raw(" stop it    "),
            Span::styled(" esc ", theme.selected),
            Span::raw(" keep it running"),
        ]),
    ];
    let r = widgets::centered(area, 62, lines.len() as u16 + 2);
    f.render_widget(Clear, r);
    f.render_widget(
        Paragraph::new(lines)
            .block(widgets::block(theme, Line::from(" Stop research? "), true))
            .style(theme.base),
        r,
    );
}

fn agents_cut(text: &str, max: usize) -> String {
    crate::console::widgets::jsontree::cut(text, max)
}
