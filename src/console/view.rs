//! Drawing: pure functions of `&App`. Nothing here changes state or does I/O. This draws the frame
//! every tab shares — header, tab bar, footer, status line, toasts — the tab on screen (its
//! `view.rs`), and the open modal on top.

use super::action::Resource;
use super::app::{App, ToastLevel};
use super::help;
use super::keymap::KeyAction;
use super::layout::{self, Screen};
use super::modal::{Confirm, Deciding, Modal};
use super::tab::Tab;
use super::tabs::{backtests, desk, discovery, proposals, research, signals, tools};
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
    match app.tab() {
        Tab::Desk => desk::view::draw(f, &app.inbox_shown(), theme, &screen),
        Tab::Proposals => proposals::view::draw(f, &app.inbox_shown(), theme, &screen),
        Tab::Logs => app.tabs().logs.draw(
            f,
            &app.shown(theme, &screen),
            app.request_log(),
            app.messages(),
        ),
        Tab::Discovery => app.tabs().discovery.draw(f, &app.shown(theme, &screen)),
        Tab::Backtests => app.tabs().backtests.draw(f, &app.shown(theme, &screen)),
        Tab::Research => app.tabs().research.draw(f, &app.shown(theme, &screen)),
        Tab::Tools => app.tabs().tools.draw(f, &app.shown(theme, &screen)),
        Tab::Chat => app.tabs().chat.draw(f, &app.shown(theme, &screen)),
        Tab::Signals => app.tabs().signals.draw(f, &app.shown(theme, &screen)),
    }
    footer(f, app, theme, &screen);
    command_line(f, app, theme, &screen);
    toasts(f, app, theme, &screen);
    let Some(modal) = app.modal() else { return };
    match modal {
        Modal::Help { scroll, .. } => help::draw(f, app, theme, area, *scroll),
        Modal::Approve(d) => {
            proposals::approve::approve_dialog(f, &app.inbox_shown(), theme, area, d)
        }
        Modal::Confirm(c) => confirm_dialog(f, app, theme, area, c),
        Modal::Details { scroll } => {
            discovery::view::details(f, app.selected_row(), app.keymap(), theme, area, *scroll)
        }
        Modal::Artifact { index, scroll } => {
            research::view::artifact(f, &app.tabs().research, theme, area, *index, *scroll)
        }
        Modal::DestinationForm(form) => signals::view::destination_form(f, theme, area, form),
        Modal::Secret(revealed) => signals::view::secret_overlay(f, app, theme, area, revealed),
        Modal::BuilderFee(panel) => signals::view::builder_fee(f, app, theme, area, panel),
        Modal::BacktestForm(form) => backtests::view::form(f, theme, area, form),
        Modal::ToolEditor(editor) => tools::view::editor(f, &app.tabs().tools, theme, area, editor),
        Modal::Standing { scroll } => crate::console::gate::guard::standing_panel(
            f,
            theme,
            area,
            app.gate().standing(),
            app.now(),
            *scroll,
        ),
        Modal::Agents { scroll, selected } => crate::console::gate::agents::agents_panel(
            f,
            theme,
            area,
            app.gate().agents(),
            *scroll,
            *selected,
        ),
        Modal::Policy { scroll } => {
            crate::console::gate::policy::policy_panel(f, theme, area, app.gate().policy(), *scroll)
        }
        // On the status line, drawn with it.
        Modal::CommandLine(_) | Modal::Filter => {}
    }
}

/// A final question (`modal::Confirm`): what it decides, and its keys.
fn confirm_dialog(f: &mut Frame, app: &App, theme: &Theme, area: Rect, c: &Confirm) {
    let yes = app.yes_key();
    let simple = |f: &mut Frame, title: &str, lines: Vec<Line<'static>>, width: u16| {
        let width = width.min(area.width);
        let p = Paragraph::new(lines)
            .wrap(ratatui::widgets::Wrap { trim: true })
            .block(widgets::block(
                theme,
                Line::from(format!(" {title} ")),
                true,
            ))
            .style(theme.base);
        // As high as its wrapped lines (and borders): no line is cut at a narrow width.
        let r = widgets::centered(area, width, p.line_count(width) as u16);
        f.render_widget(Clear, r);
        f.render_widget(p, r);
    };
    let deciding = app.deciding();
    let keys = |what: &str, keep: &str| {
        if deciding {
            return Line::styled(
                format!("{yes}: deciding once the keyboard stays quiet a moment — any key cancels"),
                theme.warn,
            );
        }
        Line::from(format!(
            "{yes} {what}, Esc {keep}; any other key closes it without deciding."
        ))
    };
    match &c.what {
        Deciding::Quit => simple(
            f,
            "Quit?",
            vec![
                Line::from("A confirm is still in flight."),
                keys("quits", "stays"),
            ],
            60,
        ),
        Deciding::StopRun(run_id) => {
            research::view::stop_dialog(f, &app.tabs().research, theme, area, run_id, &yes)
        }
        Deciding::Kill { on, reason } => {
            crate::console::gate::guard::kill_dialog(f, theme, area, *on, reason, &yes)
        }
        Deciding::Reject { id, reason } => {
            let what = app.described(id);
            let reason = reason
                .clone()
                .unwrap_or_else(|| crate::console::gate::DEFAULT_REJECT_REASON.into());
            simple(
                f,
                "Reject?",
                vec![
                    Line::from(format!("Reject {id} ({what}) on the gateway?")),
                    Line::from("A gateway's rejection is final: undo (u) cannot take it back."),
                    Line::from(format!("The agent is told: {reason}")),
                    keys("rejects", "keeps it pending"),
                ],
                72,
            )
        }
        Deciding::Trade(args) => simple(
            f,
            "LIVE — execute now?",
            vec![
                Line::styled(
                    format!(
                        "/trade executes at once on {}: real money, no proposal, no inbox.",
                        app.service().host
                    ),
                    theme.bad.add_modifier(ratatui::style::Modifier::BOLD),
                ),
                Line::from(crate::console::tabs::signals::describe_trade(
                    &args.to_signal(args.fanout.unwrap_or(app.tabs().signals.fanout_default())),
                )),
                keys("executes it", "cancels"),
            ],
            76,
        ),
        Deciding::Suspend { agent, reason } => simple(
            f,
            "Suspend agent?",
            vec![
                Line::styled(
                    format!("Suspend {agent} on the gateway?"),
                    theme.bad.add_modifier(ratatui::style::Modifier::BOLD),
                ),
                Line::from(format!("Reason (the agent is told): {reason}")),
                Line::styled(
                    "Its new exposure is refused and its pending items cannot be approved; its \
                     closes and cancels pass. Only an admin resumes it (/resume).",
                    theme.muted,
                ),
                keys("suspends it", "cancels"),
            ],
            72,
        ),
        Deciding::Resume(agent) => simple(
            f,
            "Resume agent?",
            vec![
                Line::styled(
                    format!("End {agent}'s suspension?"),
                    theme.warn.add_modifier(ratatui::style::Modifier::BOLD),
                ),
                Line::from("It may then add exposure again, within the policy."),
                keys("resumes it", "keeps it suspended"),
            ],
            72,
        ),
        Deciding::Standing(r) => {
            let coins = if r.coins.is_empty() {
                "any coin".to_string()
            } else {
                r.coins.join(", ")
            };
            simple(
                f,
                "Standing approval?",
                vec![
                    Line::styled(
                        format!(
                            "Let {} execute without anyone's approval for {} minutes?",
                            r.agent, r.minutes
                        ),
                        theme.bad.add_modifier(ratatui::style::Modifier::BOLD),
                    ),
                    Line::from(format!(
                        "Coins: {coins}; up to {} USD a trade; the policy still applies.",
                        r.max_notional_usd
                    )),
                    keys("creates it", "cancels"),
                ],
                76,
            )
        }
    }
}

/// How the header colours the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    Ok,
    /// An optional feed (identity, proposals extension, usage, logs) fails; the Desk's are fine.
    Degraded,
    /// The service cannot be reached, the key is refused, or a Desk feed fails.
    Down,
}

/// The connection as the header shows it: "ok 1s ago 42ms"; "unreachable: last ok 12s ago,
/// retrying in 1s" only when the newest news from the service is a failure to reach it; else each
/// failing feed with the service's message and the Desk's feeds that are fine ("logs: unexpected
/// response …; positions, orders, pnl ok").
pub fn connection(app: &App) -> (String, Health) {
    if let Some(msg) = app.auth_failed() {
        return (format!("API key refused: {msg} (r retries)"), Health::Down);
    }
    let now = app.now();
    let since = |t: chrono::DateTime<chrono::Utc>| (now - t).to_std().unwrap_or_default();
    // The feeds the console polls: one it no longer asks (the service's proposals list, once
    // the console knows a gateway decides) has no news, whatever its last answer was.
    let decider = app.decider();
    let live = |r: &Resource| crate::console::feeds::polled(*r, &app.feeds()[r], decider);
    let last_ok = app
        .feeds()
        .iter()
        .filter(|(r, _)| live(r))
        .filter_map(|(_, f)| f.poll.updated_at.map(|t| (t, f.poll.latency)))
        .max_by_key(|(t, _)| *t);
    let failing: Vec<(&Resource, &crate::console::feeds::Feed)> = app
        .feeds()
        .iter()
        .filter(|(r, f)| live(r) && f.error.is_some())
        .collect();
    // Unreachable: a request could not reach the service and nothing answered since.
    let unreachable = failing
        .iter()
        .filter(|(_, f)| f.unreachable())
        .filter_map(|(_, f)| f.poll.failed_at)
        .max()
        .filter(|failed| last_ok.is_none_or(|(ok, _)| *failed >= ok));
    if unreachable.is_some() {
        let retry = failing
            .iter()
            .filter(|(_, f)| f.unreachable())
            .filter_map(|(_, f)| f.poll.wakeup())
            .min()
            .map(|d| since_until(now, d));
        let last = last_ok
            .map(|(t, _)| since(t))
            .filter(|a| a.as_secs() >= 1)
            .map(|a| format!(": last ok {} ago", age(a)))
            .unwrap_or_default();
        let retry = match retry {
            Some(d) => format!(", retrying in {}", age(d + Duration::from_millis(999))),
            None => ", retrying".to_string(),
        };
        // A 503 is the service answering that it cannot serve (a gateway with no key of its own
        // for the supervisor's reads, a store down): its words say what is wrong, which
        // "unreachable" would hide. A 502 or 504 is a gateway that could not reach its upstream.
        let said = failing
            .iter()
            .filter(|(_, f)| f.unreachable() && f.poll.failed_at == unreachable)
            .find_map(|(_, f)| match &f.error {
                Some(crate::api::ApiError::Server {
                    status: 503,
                    message,
                    ..
                }) if !message.trim().is_empty() => Some(message.trim()),
                _ => None,
            });
        let what = match said {
            Some(message) => format!("unavailable ({message})"),
            None => "unreachable".to_string(),
        };
        return (format!("{what}{last}{retry}"), Health::Down);
    }
    if !failing.is_empty() {
        let mut parts: Vec<String> = failing
            .iter()
            .map(|(r, f)| {
                let e = f.error.as_ref().expect("filtered on error");
                format!(
                    "{}: {}",
                    crate::console::feeds::name(**r),
                    crate::console::feeds::short_error(e, 40)
                )
            })
            .collect();
        let ok: Vec<&str> = app
            .feeds()
            .iter()
            .filter(|(r, f)| {
                crate::console::feeds::required(**r)
                    && f.error.is_none()
                    && f.poll.updated_at.is_some()
            })
            .map(|(r, _)| crate::console::feeds::name(*r))
            .collect();
        if !ok.is_empty() {
            parts.push(format!("{} ok", ok.join(", ")));
        }
        let down = failing
            .iter()
            .any(|(r, _)| crate::console::feeds::required(**r));
        return (
            parts.join("; "),
            if down { Health::Down } else { Health::Degraded },
        );
    }
    match last_ok {
        // A stopped or stalled service accepts requests and never answers: nothing failed yet,
        // but the Desk's requests are waiting, so the header does not say "ok".
        Some((t, _))
            if since(t) >= WAITING_AFTER
                && app
                    .feeds()
                    .iter()
                    .any(|(r, f)| crate::console::feeds::required(*r) && f.poll.in_flight) =>
        {
            (
                format!("no answer for {}, waiting", age(since(t))),
                Health::Down,
            )
        }
        Some((t, latency)) => {
            let ms = latency
                .map(|l| format!(" {}ms", l.as_millis()))
                .unwrap_or_default();
            (format!("ok {} ago{ms}", age(since(t))), Health::Ok)
        }
        None => ("connecting…".into(), Health::Ok),
    }
}

/// How long the Desk's requests may wait, unanswered, before the header says so.
const WAITING_AFTER: Duration = Duration::from_secs(5);

fn since_until(now: chrono::DateTime<chrono::Utc>, due: chrono::DateTime<chrono::Utc>) -> Duration {
    (due - now).to_std().unwrap_or_default()
}

pub use crate::console::feeds::Badge;

/// Paper or real money, as the header says it (and every dialog that decides money).
pub fn badge(app: &App) -> Badge {
    app.account().badge(app.service().sandbox)
}

fn header(f: &mut Frame, app: &App, theme: &Theme, screen: &Screen) {
    let who = app
        .account()
        .whoami
        .as_ref()
        .map(|w| w.messenger_id.clone())
        .unwrap_or_else(|| "…".into());
    let badge = match badge(app) {
        Badge::Sandbox => Span::styled(" SANDBOX (paper) ", theme.badge_sandbox),
        Badge::Paper => Span::styled(" PAPER ", theme.badge_sandbox),
        Badge::Live => Span::styled(" LIVE ", theme.badge_live),
        Badge::Unknown => Span::styled(" ? ", theme.header.patch(theme.muted)),
    };
    let (conn, health) = connection(app);
    let conn_style = match health {
        Health::Ok => theme.header,
        Health::Degraded => theme.header.patch(theme.warn),
        Health::Down => theme.header.patch(theme.critical),
    };
    // Parts in order of importance: on a narrow terminal the host and key fingerprint give way
    // first, so the badge, account, connection and quotas always show.
    let mut parts: Vec<(u8, Span)> = vec![
        (0, badge),
        (0, app.gate().badge(theme)),
        (
            1,
            Span::styled(format!(" {who} "), theme.header.patch(theme.accent)),
        ),
        (
            5,
            Span::styled(format!("@ {} ", app.service().host), theme.header),
        ),
        (
            4,
            Span::styled(
                format!("key {} ", app.service().key_fingerprint),
                theme.header,
            ),
        ),
        (2, Span::styled("│ ", theme.header)),
        (2, Span::styled(conn, conn_style)),
    ];
    if let Some(u) = &app.account().usage {
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
    if let Some(until) = app.quota_until()
        && until > app.now()
    {
        parts.push((
            1,
            Span::styled(
                format!(
                    " │ quota: POSTs held {}",
                    age((until - app.now()).to_std().unwrap_or_default())
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
        let style = if *tab == app.tab() {
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
    let key = |a: KeyAction| {
        app.keymap()
            .keys_for(a)
            .first()
            .cloned()
            .unwrap_or_default()
    };
    let mut items: Vec<(String, &str)> = Vec::new();
    if let Some(Modal::CommandLine(_)) = app.modal() {
        items = vec![
            ("enter".into(), "run"),
            ("tab".into(), "complete"),
            ("↑↓".into(), "history"),
            ("esc".into(), "close"),
        ];
    } else if let Some(Modal::BacktestForm(_)) = app.modal() {
        items = vec![
            ("tab".into(), "next field"),
            ("enter".into(), "run"),
            ("esc".into(), "cancel"),
        ];
    } else if let Some(Modal::DestinationForm(_)) = app.modal() {
        items = vec![
            ("tab".into(), "next field"),
            ("enter".into(), "create"),
            ("esc".into(), "cancel"),
        ];
    } else if let Some(Modal::ToolEditor(_)) = app.modal() {
        items = vec![("ctrl-s".into(), "send if valid"), ("esc".into(), "close")];
    } else if let Some(Modal::Filter) = app.modal() {
        items = vec![("enter".into(), "done"), ("esc".into(), "done")];
    } else {
        match app.tab() {
            // A viewer's token decides nothing on a gateway: the keys are not offered.
            Tab::Desk | Tab::Proposals
                if app.gate().is_gateway() && app.gate().role() == Some("viewer") => {}
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
        if app.focused_pane().is_text() {
            // A focused text pane takes the cursor keys: they scroll it, not the list beside it.
            items.insert(0, ("↑↓".into(), "scroll"));
        }
        if app.zoomed().is_some() {
            // First: the rest of the tab is out of sight, and this is the way back to it.
            items.insert(0, (key(KeyAction::Zoom), "ZOOMED: back"));
        } else if app.tab() != Tab::Discovery {
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
    let filter = app.filter_text();
    // A set filter shows in its pane's title; an error outranks it here unless the filter is
    // being typed.
    let editing = matches!(app.modal(), Some(Modal::Filter));
    if editing || (!filter.is_empty() && app.command_error().is_none()) {
        f.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled("filter: ", theme.accent),
                Span::styled(filter, theme.base),
            ])),
            area,
        );
        return;
    }
    if let Some(err) = app.command_error() {
        // Wrapped upwards over the footer and the body's last lines when it is long.
        let lines = message_lines(err, area.width as usize, MESSAGE_LINES);
        let h = lines.len() as u16;
        let r = Rect::new(
            area.x,
            (area.y + 1).saturating_sub(h),
            area.width,
            h.min(area.y + 1),
        );
        f.render_widget(Clear, r);
        f.render_widget(
            Paragraph::new(lines.into_iter().map(Line::from).collect::<Vec<_>>())
                .style(theme.base.patch(theme.error)),
            r,
        );
    }
}

/// Whether the status line (below the key hints) shows nothing now: no command line, no filter,
/// no command error.
fn status_line_free(app: &App) -> bool {
    let filter = app.filter_text().is_empty();
    app.modal()
        .is_none_or(|m| !matches!(m, Modal::CommandLine(_) | Modal::Filter))
        && filter
        && app.command_error().is_none()
}

/// Lines a message may take on screen before it points to the Logs tab.
pub const MESSAGE_LINES: usize = 3;
const SEE_LOGS: &str = "… (see Logs › messages)";

/// `text` wrapped to `width` cells in at most `max` lines; when more were needed, the last line
/// ends with "… (see Logs › messages)", where it is kept in full.
pub fn message_lines(text: &str, width: usize, max: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines: Vec<String> = widgets::text::wrap(text, width, "  ")
        .into_iter()
        .map(|l| widgets::truncate(&l, width))
        .collect();
    if lines.len() > max {
        lines.truncate(max.max(1));
        let last = lines.last_mut().expect("at least one line");
        let room = width.saturating_sub(SEE_LOGS.chars().count());
        let kept = widgets::truncate(last.trim_end(), room + 1);
        *last = widgets::truncate(&format!("{}{SEE_LOGS}", kept.trim_end_matches('…')), width);
    }
    lines
}

/// The newest toast, right-aligned on the tab bar's row, where it covers no data; a longer one
/// wraps in a box over the bottom of the body (at most [`MESSAGE_LINES`] lines, then a pointer to
/// the Logs tab's messages list, which keeps it whole).
fn toasts(f: &mut Frame, app: &App, theme: &Theme, screen: &Screen) {
    let Some(t) = app.toasts().last() else { return };
    let bar = screen.tab_bar;
    let tabs_end = screen
        .tabs
        .last()
        .map(|(_, r)| r.x + r.width + 1)
        .unwrap_or(bar.x);
    let room = (bar.x + bar.width).saturating_sub(tabs_end);
    let more = app.toasts().len() - 1;
    let body = if more > 0 {
        format!("(+{more}) {}", t.text)
    } else {
        t.text.clone()
    };
    let text = format!(" {body} ");
    let want = Span::raw(text.as_str()).width() as u16;
    let style = match t.level {
        ToastLevel::Info => theme.toast,
        ToastLevel::Error => theme.toast.patch(theme.error),
    };
    // Whole on the tab bar when it fits there; else on the status line below the key hints
    // when nothing is there (the keys stay in sight: issue 37); else over the key hints, which
    // a toast may hide for its few seconds.
    let below = status_line_free(app).then_some(screen.command);
    let row = if want <= room {
        Some(bar)
    } else if let Some(line) = below.filter(|l| want <= l.width) {
        Some(line)
    } else if want <= screen.footer.width {
        Some(screen.footer)
    } else {
        None
    };
    if let Some(row) = row {
        let r = Rect::new(row.x + row.width - want, row.y, want, 1);
        f.render_widget(Paragraph::new(text).style(style), r);
        return;
    }
    let width = screen.footer.width;
    if width < 8 {
        return;
    }
    let lines = message_lines(&body, width.saturating_sub(2) as usize, MESSAGE_LINES);
    // Upwards from the status line when it is free, so the first line covers no key hint.
    let last = below.unwrap_or(screen.footer);
    let h = (lines.len() as u16).min(last.y);
    let r = Rect::new(last.x, last.y + 1 - h, width, h);
    f.render_widget(Clear, r);
    let lines: Vec<Line> = lines
        .into_iter()
        .map(|l| Line::from(format!(" {l}")))
        .collect();
    f.render_widget(Paragraph::new(lines).style(style), r);
}
