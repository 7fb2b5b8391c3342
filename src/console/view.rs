//! Drawing: pure functions of `&App`. Nothing here changes state or does I/O. This draws the frame
//! every tab shares — header, tab bar, footer, status line, toasts — the tab on screen (its
//! `view.rs`), and the open modal on top.

use super::action::Resource;
use super::app::{App, ToastLevel};
use super::help;
use super::keymap::KeyAction;
use super::layout::{self, Screen};
use super::modal::Modal;
use super::tab::Tab;
use super::tabs::{backtests, chat, desk, discovery, logs, proposals, research, signals, tools};
use super::theme::Theme;
use super::widgets::{self, age};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use std::time::Duration;

pub fn draw(f: &mut Frame, app: &App, theme: &Theme) {
    let area = f.area();
    let screen = layout::compute(area.width, area.height, &app.shape());
    f.render_widget(Paragraph::new("").style(theme.base), area);
    header(f, app, theme, &screen);
    tab_bar(f, app, theme, &screen);
    match app.tab {
        Tab::Desk => desk::view::draw(f, app, theme, &screen),
        Tab::Proposals => proposals::view::draw(f, app, theme, &screen),
        Tab::Logs => logs::view::draw(f, app, theme, &screen),
        Tab::Discovery => discovery::view::draw(f, app, theme, &screen),
        Tab::Backtests => backtests::view::draw(f, app, theme, &screen),
        Tab::Research => research::view::draw(f, app, theme, &screen),
        Tab::Tools => tools::view::draw(f, app, theme, &screen),
        Tab::Chat => chat::view::draw(f, app, theme, &screen),
        Tab::Signals => signals::view::draw(f, app, theme, &screen),
    }
    footer(f, app, theme, &screen);
    command_line(f, app, theme, &screen);
    toasts(f, app, theme, &screen);
    let Some(modal) = &app.modal else { return };
    match modal {
        Modal::Help { scroll } => help::draw(f, app, theme, area, *scroll),
        Modal::Approve(id) => proposals::view::approve_dialog(f, app, theme, area, id),
        Modal::QuitConfirm => {
            let r = widgets::centered(area, 52, 5);
            f.render_widget(Clear, r);
            let p = Paragraph::new(vec![
                Line::from("A confirm is still in flight."),
                Line::from("Quit anyway? y to quit, Esc to stay."),
            ])
            .block(widgets::block(theme, Line::from(" Quit? "), true))
            .style(theme.base);
            f.render_widget(p, r);
        }
        Modal::Details { scroll } => discovery::view::details(f, app, theme, area, *scroll),
        Modal::Artifact { index, scroll } => {
            research::view::artifact(f, app, theme, area, *index, *scroll)
        }
        Modal::StopRun(run_id) => research::view::stop_dialog(f, app, theme, area, run_id),
        Modal::DestinationForm(form) => signals::view::destination_form(f, theme, area, form),
        Modal::Secret(revealed) => signals::view::secret_overlay(f, app, theme, area, revealed),
        Modal::BuilderFee(panel) => signals::view::builder_fee(f, app, theme, area, panel),
        Modal::BacktestForm(form) => backtests::view::form(f, theme, area, form),
        Modal::ToolEditor(editor) => tools::view::editor(f, app, theme, area, editor),
        Modal::KillConfirm { on, reason } => {
            crate::console::gate::guard::kill_dialog(f, theme, area, *on, reason)
        }
        Modal::Standing { scroll } => crate::console::gate::guard::standing_panel(
            f,
            theme,
            area,
            &app.gate.standing,
            app.now,
            *scroll,
        ),
        // On the status line, drawn with it.
        Modal::CommandLine(_) | Modal::Filter => {}
    }
}

/// The connection as the header shows it.
pub fn connection(app: &App) -> (String, bool) {
    if let Some(msg) = &app.auth_failed {
        return (format!("API key refused: {msg} (r retries)"), false);
    }
    let now = app.now;
    let last_ok = app
        .feeds
        .iter()
        .filter(|(r, _)| **r != Resource::Proposals || app.feeds[r].supported)
        .filter_map(|(_, f)| f.poll.updated_at.map(|t| (t, f.poll.latency)))
        .max_by_key(|(t, _)| *t);
    let failing = app
        .feeds
        .values()
        .filter(|f| f.poll.failures > 0)
        .min_by_key(|f| f.poll.next_due);
    match (last_ok, failing) {
        (_, Some(f)) => {
            let retry = (f.poll.next_due.unwrap_or(now) - now)
                .to_std()
                .unwrap_or_default();
            let last = last_ok
                .map(|(t, _)| {
                    format!(
                        "last ok {} ago, ",
                        age((now - t).to_std().unwrap_or_default())
                    )
                })
                .unwrap_or_default();
            let why = f
                .error
                .as_ref()
                .map(|e| match e {
                    crate::api::ApiError::Transport(_) => "unreachable".to_string(),
                    other => other.code().unwrap_or("error").to_string(),
                })
                .unwrap_or_default();
            (
                format!(
                    "{why}: {last}retrying in {}",
                    age(retry + Duration::from_millis(999))
                ),
                false,
            )
        }
        (Some((t, latency)), None) => {
            let ms = latency
                .map(|l| format!(" {}ms", l.as_millis()))
                .unwrap_or_default();
            (
                format!("ok {} ago{ms}", age((now - t).to_std().unwrap_or_default())),
                true,
            )
        }
        (None, None) => ("connecting…".into(), true),
    }
}

fn header(f: &mut Frame, app: &App, theme: &Theme, screen: &Screen) {
    let who = app
        .account
        .whoami
        .as_ref()
        .map(|w| w.messenger_id.clone())
        .unwrap_or_else(|| "…".into());
    let badge = if app.service.sandbox {
        Span::styled(" SANDBOX (paper) ", theme.badge_sandbox)
    } else {
        Span::styled(" LIVE ", theme.badge_live)
    };
    let (conn, healthy) = connection(app);
    let conn_style = if healthy {
        theme.header
    } else {
        theme.header.patch(theme.critical)
    };
    // Parts in order of importance: on a narrow terminal the host and key fingerprint give way
    // first, so the badge, account, connection and quotas always show.
    let mut parts: Vec<(u8, Span)> = vec![
        (0, badge),
        (0, app.gate.badge(theme)),
        (
            1,
            Span::styled(format!(" {who} "), theme.header.patch(theme.accent)),
        ),
        (
            5,
            Span::styled(format!("@ {} ", app.service.host), theme.header),
        ),
        (
            4,
            Span::styled(
                format!("key {} ", app.service.key_fingerprint),
                theme.header,
            ),
        ),
        (2, Span::styled("│ ", theme.header)),
        (2, Span::styled(conn, conn_style)),
    ];
    if let Some(u) = &app.account.usage {
        parts.push((
            3,
            Span::styled(
                format!(
                    " │ POST {}/{} │ compute {}/{}",
                    u.api_post_quota.used, u.api_post_quota.limit, u.compute.used, u.compute.limit
                ),
                theme.header,
            ),
        ));
    }
    if let Some(until) = app.quota_until
        && until > app.now
    {
        parts.push((
            1,
            Span::styled(
                format!(
                    " │ quota: POSTs held {}",
                    age((until - app.now).to_std().unwrap_or_default())
                ),
                theme.header.patch(theme.critical),
            ),
        ));
    }
    let width = screen.header.width as usize;
    let mut keep = 5u8;
    while keep > 1
        && parts
            .iter()
            .filter(|(p, _)| *p <= keep)
            .map(|(_, s)| s.width())
            .sum::<usize>()
            > width
    {
        keep -= 1;
    }
    let spans: Vec<Span> = parts
        .into_iter()
        .filter(|(p, _)| *p <= keep)
        .map(|(_, s)| s)
        .collect();
    f.render_widget(
        Paragraph::new(Line::from(spans)).style(theme.header),
        screen.header,
    );
}

fn tab_bar(f: &mut Frame, app: &App, theme: &Theme, screen: &Screen) {
    let shape = app.shape();
    let mut spans = Vec::new();
    for (i, (tab, _)) in screen.tabs.iter().enumerate() {
        let style = if *tab == app.tab {
            theme.tab_active
        } else {
            theme.tab_inactive
        };
        spans.push(Span::styled(
            layout::tab_label_at(i, *tab, &shape, screen.compact_tabs, screen.tight_tabs),
            style,
        ));
        spans.push(Span::raw(" "));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), screen.tab_bar);
}

/// The keys that apply here, from the keymap (so overrides show correctly).
fn footer(f: &mut Frame, app: &App, theme: &Theme, screen: &Screen) {
    let key = |a: KeyAction| app.keymap.keys_for(a).first().cloned().unwrap_or_default();
    let mut items: Vec<(String, &str)> = Vec::new();
    if let Some(Modal::CommandLine(_)) = app.modal {
        items = vec![
            ("enter".into(), "run"),
            ("tab".into(), "complete"),
            ("↑↓".into(), "history"),
            ("esc".into(), "close"),
        ];
    } else if let Some(Modal::BacktestForm(_)) = app.modal {
        items = vec![
            ("tab".into(), "next field"),
            ("enter".into(), "run"),
            ("esc".into(), "cancel"),
        ];
    } else if let Some(Modal::DestinationForm(_)) = app.modal {
        items = vec![
            ("tab".into(), "next field"),
            ("enter".into(), "create"),
            ("esc".into(), "cancel"),
        ];
    } else if let Some(Modal::ToolEditor(_)) = app.modal {
        items = vec![("ctrl-s".into(), "send if valid"), ("esc".into(), "close")];
    } else if let Some(Modal::Filter) = app.modal {
        items = vec![("enter".into(), "done"), ("esc".into(), "done")];
    } else {
        match app.tab {
            Tab::Desk | Tab::Proposals => {
                items.push((key(KeyAction::Approve), "approve"));
                items.push((key(KeyAction::Reject), "reject"));
                if app.can_undo() {
                    items.push((key(KeyAction::Undo), "undo"));
                }
            }
            Tab::Logs => items.push((key(KeyAction::Filter), "filter")),
            Tab::Discovery => {
                items.push((
                    format!("{}/{}", key(KeyAction::Left), key(KeyAction::Right)),
                    "view",
                ));
                items.push((key(KeyAction::SortNext), "sort"));
                items.push((key(KeyAction::SortReverse), "reverse"));
                items.push((key(KeyAction::Filter), "filter"));
                items.push((key(KeyAction::Select), "details"));
                items.push((key(KeyAction::Backtest), "backtest"));
                items.push((key(KeyAction::Propose), "propose"));
            }
            Tab::Backtests => items.push((key(KeyAction::Backtest), "re-run")),
            Tab::Research => {
                items.push((key(KeyAction::NewRun), "new run"));
                items.push((key(KeyAction::Message), "message"));
                items.push((key(KeyAction::StopRun), "stop"));
                items.push((key(KeyAction::Select), "open artifact"));
            }
            Tab::Tools => {
                items.push((key(KeyAction::Select), "run / fold"));
                items.push((key(KeyAction::Toggle), "fold"));
            }
            Tab::Chat => items.push((key(KeyAction::Message), "message")),
            Tab::Signals => {
                items.push((key(KeyAction::NewRun), "new destination"));
                items.push((key(KeyAction::Fanout), "fan-out"));
                items.push((key(KeyAction::BuilderFee), "builder fee"));
            }
        }
        if app.tab != Tab::Discovery {
            items.push((key(KeyAction::FocusNext), "focus"));
        }
        items.push((format!("1-{}", Tab::ALL.len()), "tabs"));
        items.push((key(KeyAction::Refresh), "refresh"));
        items.push((key(KeyAction::CommandLine), "command"));
        items.push((key(KeyAction::Help), "help"));
        items.push((key(KeyAction::Quit), "quit"));
    }
    let mut spans = Vec::new();
    for (k, what) in items {
        spans.push(Span::styled(format!(" {k} "), theme.accent));
        spans.push(Span::styled(format!("{what} "), theme.muted));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), screen.footer);
}

fn command_line(f: &mut Frame, app: &App, theme: &Theme, screen: &Screen) {
    let area = screen.command;
    if let Some(line) = app.command_line() {
        let [prompt, input] = ratatui::layout::Layout::horizontal([
            ratatui::layout::Constraint::Length(1),
            ratatui::layout::Constraint::Min(1),
        ])
        .areas(area);
        f.render_widget(Paragraph::new(Span::styled(":", theme.accent)), prompt);
        f.render_widget(&line.input, input);
        return;
    }
    let filter = if app.tab == Tab::Discovery {
        &app.discovery.state(app.discovery.view).filter
    } else {
        &app.logs.filter
    };
    if matches!(app.modal, Some(Modal::Filter)) || !filter.is_empty() {
        f.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled("filter: ", theme.accent),
                Span::styled(filter.clone(), theme.base),
            ])),
            area,
        );
        return;
    }
    if let Some(err) = &app.command_error {
        f.render_widget(Paragraph::new(Span::styled(err.clone(), theme.error)), area);
    }
}

/// The newest toast, right-aligned on the tab bar's row, where it covers no data.
fn toasts(f: &mut Frame, app: &App, theme: &Theme, screen: &Screen) {
    let Some(t) = app.toasts.last() else { return };
    let bar = screen.tab_bar;
    let tabs_end = screen
        .tabs
        .last()
        .map(|(_, r)| r.x + r.width + 1)
        .unwrap_or(bar.x);
    let room = (bar.x + bar.width).saturating_sub(tabs_end);
    let more = app.toasts.len() - 1;
    let text = if more > 0 {
        format!(" (+{more}) {} ", t.text)
    } else {
        format!(" {} ", t.text)
    };
    let want = text.chars().count() as u16;
    // On the tab bar when it fits there (or most of it does); else over the key hints of the
    // footer, which a toast may hide for its few seconds.
    let row = if want <= room || room >= 40 {
        bar
    } else {
        screen.footer
    };
    let room = if row == bar { room } else { row.width };
    let width = want.min(room);
    if width < 8 {
        return;
    }
    let r = Rect::new(row.x + row.width - width, row.y, width, 1);
    let style = match t.level {
        ToastLevel::Info => theme.toast,
        ToastLevel::Error => theme.toast.patch(theme.error),
    };
    f.render_widget(Paragraph::new(text).style(style), r);
}
