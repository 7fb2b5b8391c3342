//! The Tools tab's update: the catalog (loaded when the tab is first shown), `/tool`, the argument
//! editor's sending, the last call's result, and its keys. A tool call's answer reaches past the
//! tab — a confirm token goes to the inbox, an approved token's call decides an inbox item — so
//! App receives it (`app/route.rs`) and hands this tab the result to show.

use super::rows::Tools;
use super::{ToolEditor, ToolOutcome, ToolsTab, schema};
use crate::api::ApiError;
use crate::api::model::Capabilities;
use crate::console::action::Effect;
use crate::console::component::{Ask, Ctx, TabComponent};
use crate::console::keymap::KeyAction;
use crate::console::layout::Pane;
use crate::console::modal::Modal;
use crate::console::suggest::closest;
use crate::console::tab::Tab;
use crate::console::table::Rows;
use crate::console::widgets::jsontree::JsonTree;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::time::Duration;

/// `/tool` typed before the catalog arrived: (name, args text), run once it does.
pub type Pending = (String, Option<String>);

impl ToolsTab {
    /// The `/tool` that waited for the catalog, to run now.
    pub fn on_capabilities_loaded(
        &mut self,
        result: Result<Box<Capabilities>, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
        ctx: &mut Ctx,
    ) -> Option<Pending> {
        // Asked again only when the tab is entered or refreshed, also after a failure.
        self.catalog.settled();
        self.catalog.stop();
        ctx.ask(Ask::Redraw);
        match result {
            Ok(caps) => {
                self.catalog.answered_once(at, latency);
                self.error = None;
                self.set_tools(caps.tools);
                ctx.clamp(Pane::Tools, self.tools.len());
                return self.pending.take();
            }
            Err(ApiError::NotFound { .. }) => {
                self.error = Some("this service offers no tool access".into());
            }
            Err(e) => self.error = Some(e.to_string()),
        }
        None
    }

    /// `/tool <name> [json]` (the tab is on screen): valid arguments run at once; otherwise the
    /// editor opens with them (or with the schema's skeleton) and the problems.
    pub fn run_command(&mut self, name: String, args: Option<String>, ctx: &mut Ctx) {
        if !self.loaded() {
            self.pending = Some((name, args));
            self.catalog.ask_at(ctx.now);
            return;
        }
        let Some(i) = self.find(&name) else {
            let bare = |n: &'_ str| n.strip_prefix("service_").unwrap_or(n).to_string();
            let names: Vec<String> = self.tools.iter().map(|t| bare(&t.name)).collect();
            let best = closest(&bare(&name), names.iter().map(String::as_str))
                .map(|b| format!("service_{b}"));
            ctx.ask(Ask::CommandError(match best {
                Some(best) => format!("unknown tool `{name}`; did you mean `{best}`?"),
                None => format!("unknown tool `{name}`; the Tools tab lists them"),
            }));
            return;
        };
        ctx.select(Pane::Tools, i);
        ctx.ask(Ask::Focus(Pane::Tools));
        let tool = self.tools[i].clone();
        match args {
            None => self.open_editor(i, ctx),
            Some(text) => {
                let (value, problems) = schema::check_text(&tool.input_schema, &text);
                match value {
                    Some(v) if problems.is_empty() => self.execute(&tool.name, v, ctx),
                    _ => {
                        let mut editor = ToolEditor::new(&tool, &text);
                        editor.refused = true;
                        ctx.ask(Ask::Open(Box::new(Modal::ToolEditor(editor))));
                    }
                }
            }
        }
    }

    fn open_editor(&mut self, i: usize, ctx: &mut Ctx) {
        let Some(tool) = self.tools.get(i) else {
            return;
        };
        // The last arguments of this tool when it was the last one called, else the skeleton.
        let text = match &self.outcome {
            Some(o) if o.tool == tool.name && o.awaiting.is_none() => {
                serde_json::to_string_pretty(&o.args).unwrap_or_default()
            }
            _ => serde_json::to_string_pretty(&schema::skeleton(&tool.input_schema))
                .unwrap_or_default(),
        };
        let text = if text == "null" { "{}".into() } else { text };
        ctx.ask(Ask::Open(Box::new(Modal::ToolEditor(ToolEditor::new(
            tool, &text,
        )))));
    }

    pub fn execute(&mut self, name: &str, args: Value, ctx: &mut Ctx) {
        if ctx.posts_held() {
            return;
        }
        self.running += 1;
        ctx.fx.push(Effect::ExecuteTool {
            name: name.to_string(),
            args,
            approval: None,
        });
    }

    /// What the result panel shows now; it takes the focus when the tab is on screen.
    pub fn set_outcome(
        &mut self,
        tool: String,
        args: Value,
        at: DateTime<Utc>,
        result: Result<Value, String>,
        awaiting: Option<String>,
        ctx: &mut Ctx,
    ) {
        self.outcome = Some(ToolOutcome {
            tool,
            args,
            at,
            result: result.map(JsonTree::new),
            awaiting,
        });
        ctx.select(Pane::Result, 0);
        if ctx.tab == Tab::Tools {
            // The result takes the focus, so j/k and space work on it at once.
            ctx.ask(Ask::Focus(Pane::Result));
        }
    }
}

impl TabComponent for ToolsTab {
    fn rows(
        &self,
        pane: Pane,
        _now: DateTime<Utc>,
        _master: Option<usize>,
    ) -> Option<Box<dyn Rows + '_>> {
        (pane == Pane::Tools).then(|| Box::new(Tools(&self.tools)) as Box<dyn Rows>)
    }

    fn schedule(&mut self, now: DateTime<Utc>, _shown: bool, fx: &mut Vec<Effect>) {
        if self.catalog.start(now) {
            fx.push(Effect::FetchCapabilities);
        }
    }

    /// The catalog loads the first time the tab is shown.
    fn entered(&mut self, now: DateTime<Utc>) {
        if !self.loaded() {
            self.catalog.ask_at(now);
        }
    }

    /// `r` on the tab: the catalog is asked for again.
    fn refresh(&mut self, now: DateTime<Utc>, shown: bool) {
        if !shown {
            return;
        }
        self.catalog.ask_at(now);
    }

    /// Keys of the tab; true when handled.
    fn on_key(&mut self, action: KeyAction, pane: Pane, ctx: &mut Ctx) -> bool {
        match action {
            KeyAction::Select if pane == Pane::Tools => {
                if let Some(row) = ctx.row(Pane::Tools) {
                    self.open_editor(row, ctx);
                }
            }
            KeyAction::Select | KeyAction::Toggle if pane == Pane::Result => {
                let i = ctx.selected(Pane::Result);
                if let Some(Ok(tree)) = self.outcome.as_mut().map(|o| o.result.as_mut())
                    && let Some(at) = tree.toggle(i)
                {
                    ctx.select(Pane::Result, at);
                }
            }
            _ => return false,
        }
        true
    }
}
