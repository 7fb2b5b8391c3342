//! Signals: the account's destinations with their delivery counts, the selected destination's
//! delivery log (when the service offers it), the create form, the signing secret shown once, and
//! the builder-fee panel.

use super::SignalsTab;
use super::{
    BuilderPanel, DESTINATIONS_POLL, DestinationForm, FORM_LABELS, Revealed, WALLET_KEY_ENV,
    delivery_signal, show_value,
};
use crate::console::app::App;
use crate::console::component::Shown;
use crate::console::keymap::KeyAction;
use crate::console::keymap::Keymap;
use crate::console::layout::Pane;
use crate::console::table;
use crate::console::tabs::signals::rows::{Deliveries, Destinations, stats_text};
use crate::console::theme::Theme;
use crate::console::widgets::{self, age};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

impl SignalsTab {
    pub fn draw(&self, f: &mut Frame, on: &Shown) {
        banner(f, self, on, on.screen.banner);
        destinations(f, self, on);
        deliveries(f, self, on);
    }
}

fn key(keymap: &Keymap, a: KeyAction) -> String {
    keymap.keys_for(a).first().cloned().unwrap_or_default()
}

fn banner(f: &mut Frame, tab: &SignalsTab, shown: &Shown, area: Rect) {
    let theme = shown.theme;
    let on = tab.fanout_default;
    let mut spans = vec![
        Span::styled(
            format!("fan-out: {}", if on { "on" } else { "off" }),
            if on { theme.good } else { theme.warn },
        ),
        Span::styled(
            format!(
                " ({} toggles; /trade fanout=on|off overrides)",
                key(shown.keymap, KeyAction::Fanout)
            ),
            theme.muted,
        ),
    ];
    if let Some(s) = shown
        .account
        .whoami
        .as_ref()
        .and_then(|w| w.summary.as_ref())
    {
        spans.push(Span::styled(" · builder fee: ", theme.muted));
        spans.push(if s.builder_fee_approved {
            Span::styled("approved", theme.good)
        } else {
            Span::styled("not approved", theme.warn)
        });
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn destinations(f: &mut Frame, tab: &SignalsTab, on: &Shown) {
    let (theme, screen) = (on.theme, on.screen);
    let s = tab;
    let focused = on.focused(Pane::Destinations);
    let mut title = vec![Span::styled(" Signal destinations ", theme.accent)];
    title.extend(widgets::staleness(
        theme,
        s.dest_poll
            .updated_at
            .map(|t| (on.now - t).to_std().unwrap_or_default())
            .filter(|a| *a > DESTINATIONS_POLL * 3),
    ));
    if let Some(e) = &s.dest_error {
        title.push(Span::styled(format!(" {e} "), theme.error));
    }
    let new_hint = format!("{} adds", key(on.keymap, KeyAction::NewRun));
    // A read that failed before any succeeded is not still loading: the body says so too, as
    // the stand-in of a deployment without the operation showed "loading…" under its refusal.
    let empty = match (s.dest_poll.updated_at, &s.dest_error) {
        (Some(_), _) => "no destinations yet".to_string(),
        (None, Some(e)) => format!("destinations not read: {e}"),
        (None, None) => "loading destinations…".to_string(),
    };
    title.push(Span::styled(format!("· {new_hint} "), theme.muted));
    table::draw(
        f,
        screen,
        theme,
        on.tables,
        Pane::Destinations,
        Line::from(title),
        focused,
        on.selected(Pane::Destinations),
        &Destinations(&s.destinations),
        &empty,
        |i| {
            let d = &s.destinations[i];
            let cells = vec![
                Line::from(d.name.clone()),
                Line::from(d.url.clone()),
                Line::from(d.strategy_ids.join(",")),
                Line::from(d.directions.join(",")),
                Line::styled(
                    d.created_at
                        .map(|t| t.format("%Y-%m-%d").to_string())
                        .unwrap_or_default(),
                    theme.muted,
                ),
                Line::from(stats_text(d.deliveries.as_ref())),
            ];
            (cells, None)
        },
    );
}

fn deliveries(f: &mut Frame, tab: &SignalsTab, on: &Shown) {
    let (theme, screen) = (on.theme, on.screen);
    let s = tab;
    let area = screen.pane(Pane::Deliveries);
    let focused = on.focused(Pane::Deliveries);
    let dest = on.row(Pane::Destinations).and_then(|r| tab.destination(r));
    if s.deliveries_unsupported || dest.is_none() {
        let text = if s.deliveries_unsupported {
            "this service keeps no delivery log (list_signal_deliveries, an extension, is not offered)"
        } else {
            "select a destination to see its deliveries"
        };
        let block = widgets::block(
            theme,
            Line::from(Span::styled(" Deliveries ", theme.accent)),
            focused,
        );
        let inner = block.inner(area);
        f.render_widget(block, area);
        f.render_widget(
            Paragraph::new(Line::styled(text, theme.muted)).wrap(Wrap { trim: true }),
            inner,
        );
        return;
    }
    let name = dest.map(|d| d.name.clone()).unwrap_or_default();
    let mut title = vec![Span::styled(format!(" Deliveries · {name} "), theme.accent)];
    if let Some(e) = &s.deliv_error {
        title.push(Span::styled(format!(" {e} "), theme.error));
    }
    let empty = if s.deliv_poll.updated_at.is_some() {
        "nothing delivered yet"
    } else {
        "loading deliveries…"
    };
    let now = on.now;
    table::draw(
        f,
        screen,
        theme,
        on.tables,
        Pane::Deliveries,
        Line::from(title),
        focused,
        on.selected(Pane::Deliveries),
        &Deliveries(&s.deliveries),
        empty,
        |i| {
            let d = &s.deliveries[i];
            let status_style = match d.status.as_str() {
                "delivered" | "ok" | "succeeded" => theme.good,
                "failed" | "dead" => theme.error,
                "retrying" | "pending" => theme.warn,
                _ => theme.base,
            };
            let next = match d.next_attempt_at {
                Some(t) if t > now => format!("in {}", age((t - now).to_std().unwrap_or_default())),
                Some(_) => "due".into(),
                None => "—".into(),
            };
            let cells = vec![
                Line::styled(d.status.clone(), status_style),
                Line::from(d.attempts.to_string()),
                Line::from(d.last_status.map(|s| s.to_string()).unwrap_or_default()),
                Line::from(next),
                Line::styled(
                    d.created_at
                        .map(|t| t.format("%H:%M:%S").to_string())
                        .unwrap_or_default(),
                    theme.muted,
                ),
                Line::from(delivery_signal(d)),
                Line::styled(d.last_error.clone().unwrap_or_default(), theme.error),
            ];
            (cells, None)
        },
    );
}

pub fn destination_form(f: &mut Frame, theme: &Theme, area: Rect, form: &DestinationForm) {
    let height = (form.problems.len() as u16 + 9).min(area.height);
    let r = widgets::centered(area, area.width.saturating_sub(4).min(84), height);
    f.render_widget(Clear, r);
    let block = widgets::block(theme, Line::from(" New signal destination "), true);
    let inner = block.inner(r);
    f.render_widget(block, r);
    let mut lines = Vec::new();
    for (i, label) in FORM_LABELS.iter().enumerate() {
        let focused = i == form.focus;
        let mut value = form.fields[i].clone();
        if focused {
            value.push('▏');
        }
        lines.push(Line::from(vec![
            Span::styled(
                format!("{} {label:<11}", if focused { "›" } else { " " }),
                if focused { theme.accent } else { theme.muted },
            ),
            Span::styled(value, theme.base),
        ]));
    }
    lines.push(Line::styled(
        "  strategies: ids separated by commas, or * · directions: BUY, SELL, CLOSE",
        theme.muted,
    ));
    lines.push(Line::raw(""));
    if form.sending {
        lines.push(Line::styled("creating…", theme.warn));
    } else if form.problems.is_empty() {
        lines.push(Line::styled(
            "tab next field · enter creates (checked first) · esc cancels",
            theme.muted,
        ));
    } else {
        for p in &form.problems {
            lines.push(Line::styled(format!("✗ {p}"), theme.error));
        }
    }
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}

pub fn secret_overlay(f: &mut Frame, app: &App, theme: &Theme, area: Rect, r: &Revealed) {
    let rect = widgets::centered(area, area.width.saturating_sub(4).min(84), 9);
    f.render_widget(Clear, rect);
    let block = widgets::block(theme, Line::from(" Signing secret — shown once "), true);
    let inner = block.inner(rect);
    f.render_widget(block, rect);
    let id = if r.id.is_empty() {
        String::new()
    } else {
        format!(" ({})", r.id)
    };
    let copy = key(app.keymap(), KeyAction::Copy);
    let lines = vec![
        Line::from(format!("Destination {}{id} created.", r.name)),
        Line::raw(""),
        Line::styled(r.secret.expose().to_string(), theme.accent),
        Line::raw(""),
        Line::styled(
            "It signs every delivery to this destination; the service never shows it again.",
            theme.warn,
        ),
        Line::from(vec![
            Span::styled(format!("{copy} "), theme.accent),
            Span::styled("copies it (OSC 52) · ", theme.muted),
            Span::styled("esc ", theme.accent),
            Span::styled("closes and forgets it", theme.muted),
        ]),
        if r.copied {
            Line::styled("✓ sent to the terminal's clipboard", theme.good)
        } else {
            Line::raw("")
        },
    ];
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}

pub fn builder_fee(f: &mut Frame, app: &App, theme: &Theme, area: Rect, p: &BuilderPanel) {
    let r = widgets::centered(
        area,
        area.width.saturating_sub(4).min(96),
        area.height.saturating_sub(2).min(26),
    );
    f.render_widget(Clear, r);
    let block = widgets::block(theme, Line::from(" Builder fee approval "), true);
    let inner = block.inner(r);
    f.render_widget(block, r);
    let row = |k: &str, v: String| {
        Line::from(vec![
            Span::styled(format!("  {k:<20}"), theme.muted),
            Span::styled(v, theme.base),
        ])
    };
    let mut lines = vec![row(
        "wallet",
        p.wallet.clone().unwrap_or_else(|| "—".into()),
    )];
    if p.loading {
        lines.push(Line::styled("  loading the typed data…", theme.muted));
    }
    if let Some(payload) = &p.payload {
        lines.push(Line::from(vec![
            Span::styled(format!("  {:<20}", "state"), theme.muted),
            if payload.authorized {
                Span::styled("authorized ✓ (nothing to sign)", theme.good)
            } else {
                Span::styled("not authorized", theme.warn)
            },
        ]));
        if let Some(t) = &payload.typed {
            lines.push(Line::styled("Domain", theme.accent));
            for k in ["name", "version", "chainId", "verifyingContract", "salt"] {
                if let Some(v) = t.domain.get(k) {
                    lines.push(row(k, show_value(v)));
                }
            }
            lines.push(row("primaryType", t.primary_type.clone()));
            lines.push(Line::styled("Message", theme.accent));
            let fields = t.types.get(&t.primary_type).cloned().unwrap_or_default();
            for fld in fields {
                let v = t
                    .message
                    .get(&fld.name)
                    .map(show_value)
                    .unwrap_or_else(|| "(missing)".into());
                lines.push(Line::from(vec![
                    Span::styled(format!("  {:<20}", fld.name), theme.muted),
                    Span::styled(v, theme.base),
                    Span::styled(format!("  {}", fld.r#type), theme.muted),
                ]));
            }
        }
        let in_message = payload
            .typed
            .as_ref()
            .is_some_and(|t| t.message.get("nonce").is_some());
        if let Some(n) = payload.nonce.filter(|_| !in_message) {
            lines.push(row("nonce", n.to_string()));
        }
        if let Some(c) = &payload.chain_id_hex {
            lines.push(row("signatureChainId", c.clone()));
        }
    }
    lines.push(Line::raw(""));
    if p.sending {
        lines.push(Line::styled("sending the signature…", theme.warn));
    }
    if let Some(e) = &p.error {
        lines.push(Line::styled(e.clone(), theme.error));
    }
    if let Some(res) = &p.result {
        lines.push(Line::styled(res.clone(), theme.good));
    }
    lines.push(Line::from(vec![
        Span::styled("y ", theme.accent),
        Span::styled(
            format!("signs with {WALLET_KEY_ENV} (read now, never kept or shown) and sends · "),
            theme.muted,
        ),
        Span::styled(
            format!("{} ", key(app.keymap(), KeyAction::Refresh)),
            theme.accent,
        ),
        Span::styled("reloads · ", theme.muted),
        Span::styled("esc ", theme.accent),
        Span::styled("closes", theme.muted),
    ]));
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((p.scroll, 0)),
        inner,
    );
}
