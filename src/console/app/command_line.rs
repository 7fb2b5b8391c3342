//! The command line (a modal): typing with history and completion, and running what
//! [`command::parse`] made of it.

use crate::api::model::BacktestRequest;
use crate::console::action::Effect;
use crate::console::app::App;
use crate::console::command::{self, Command};
use crate::console::layout::Pane;
use crate::console::modal::{CommandLine, Deciding, Modal};
use crate::console::tab::DView;
use crate::console::tab::Tab;
use crate::console::tabs::backtests::number_value;
use crossterm::event::{KeyCode, KeyEvent};
use std::collections::BTreeSet;

/// Completion's coins before the service has named any.
const FALLBACK_COINS: [&str; 10] = [
    "BTC", "ETH", "SOL", "XRP", "DOGE", "AVAX", "LINK", "BNB", "ARB", "SUI",
];

impl App {
    /// Opens the command line with the earlier commands to recall.
    pub(crate) fn open_command_line(&mut self) {
        self.modal = Some(Modal::CommandLine(CommandLine::new(self.history.clone())));
        self.command_error = None;
    }

    /// The command line, prefilled with `text` to edit and run.
    pub(crate) fn prefill(&mut self, text: &str) {
        self.open_command_line();
        if let Some(Modal::CommandLine(line)) = self.modal.as_mut() {
            line.set_text(text);
        }
    }

    pub fn command_line(&self) -> Option<&CommandLine> {
        match &self.modal {
            Some(Modal::CommandLine(line)) => Some(line),
            _ => None,
        }
    }
    pub(crate) fn on_command_key(&mut self, key: KeyEvent, fx: &mut Vec<Effect>) {
        let coins = if key.code == KeyCode::Tab {
            self.known_coins()
        } else {
            Vec::new()
        };
        let Some(Modal::CommandLine(line)) = self.modal.as_mut() else {
            return;
        };
        match key.code {
            KeyCode::Esc => {
                self.modal = None;
                return;
            }
            KeyCode::Enter => {
                let text = line.text().trim().to_string();
                self.modal = None;
                if text.is_empty() {
                    return;
                }
                if self.history.last() != Some(&text) {
                    self.history.push(text.clone());
                }
                match command::parse(&text) {
                    Ok(cmd) => self.run_command(cmd, fx),
                    Err(e) => self.command_error = Some(format!("{text}: {e}")),
                }
                return;
            }
            KeyCode::Up | KeyCode::Down => {
                if line.history.is_empty() {
                    return;
                }
                let last = line.history.len() - 1;
                let pos = match (key.code, line.history_pos) {
                    (KeyCode::Up, None) => Some(last),
                    (KeyCode::Up, Some(p)) => Some(p.saturating_sub(1)),
                    (KeyCode::Down, Some(p)) if p < last => Some(p + 1),
                    _ => None,
                };
                line.history_pos = pos;
                let text = pos.map(|p| line.history[p].clone()).unwrap_or_default();
                line.set_text(&text);
                return;
            }
            KeyCode::Tab => {
                if line.completions.is_empty() {
                    let refs: Vec<&str> = coins.iter().map(String::as_str).collect();
                    let tools: Vec<&str> = self
                        .tabs
                        .tools
                        .tools()
                        .iter()
                        .map(|t| t.name.as_str())
                        .collect();
                    line.completions = command::complete_with(&line.text(), &refs, &tools);
                    line.completion_pos = 0;
                } else {
                    line.completion_pos = (line.completion_pos + 1) % line.completions.len();
                }
                if let Some(c) = line.completions.get(line.completion_pos).cloned() {
                    line.set_text(&c);
                }
                return;
            }
            _ => {}
        }
        line.completions.clear();
        if !crate::console::readline::edit(&mut line.input, &key) {
            line.input.input(key);
        }
    }

    /// Coins for completion: those the service named (positions, open orders, proposals,
    /// Discovery rows). Until it has named any, the majors every venue lists.
    pub fn known_coins(&self) -> Vec<String> {
        let rows = [DView::TopBacktests, DView::TopLive, DView::Combos]
            .map(|v| self.tabs.discovery.rows(v));
        let from_rows = rows.into_iter().flatten().filter_map(|r| {
            command::normalize_pair(&r.pair)?
                .strip_suffix("-USD")
                .map(str::to_string)
        });
        let coins: BTreeSet<String> = self
            .account
            .positions
            .iter()
            .map(|p| p.coin.clone())
            .chain(self.account.orders.iter().map(|o| o.coin.clone()))
            .chain(
                self.inbox
                    .items()
                    .iter()
                    .map(|i| i.proposal.preview.coin.clone()),
            )
            .chain(from_rows)
            .filter(|c| !c.is_empty())
            .collect();
        if coins.is_empty() {
            return FALLBACK_COINS.iter().map(|c| c.to_string()).collect();
        }
        coins.into_iter().collect()
    }

    pub(crate) fn run_command(&mut self, cmd: Command, fx: &mut Vec<Effect>) {
        match cmd {
            Command::Propose(_) | Command::Close(_) | Command::Trade(_) if self.posts_held() => {}
            Command::Propose(args) => fx.push(Effect::Propose(Box::new(args.to_signal()))),
            Command::Trade(args) => self.ask_trade(args, fx),
            Command::BuilderFee => self.open_builder_fee(fx),
            Command::Close(target) => fx.push(Effect::Propose(Box::new(target.to_signal()))),
            Command::Confirm(id) => {
                // A gateway lists every item it holds: an id it does not list is a typo, not a
                // proposal to name by hand (that is for a service with no proposals list).
                if self.inbox.gate().is_gateway() && self.inbox.item(&id).is_none() {
                    self.command_error = Some(format!(
                        "/confirm {id}: the gateway's inbox has no item {id} (it lists every \
                         agent's items; /agent all shows them all)"
                    ));
                    return;
                }
                self.inbox.name_by_hand(&id, self.now);
                self.set_tab(Tab::Proposals);
                self.select_proposal(Pane::Inbox, &id);
                with_inbox!(self, fx, |inbox, ctx| inbox.start_approval(&id, ctx));
            }
            Command::Reject { id, reason } => {
                with_inbox!(self, fx, |inbox, ctx| inbox.reject_with(&id, reason, ctx));
            }
            Command::Kill { on, reason } => self.ask_kill_switch(on, reason),
            Command::Suspend { agent, reason } => {
                self.ask_agent_state(Deciding::Suspend { agent, reason })
            }
            Command::Resume(agent) => self.ask_agent_state(Deciding::Resume(agent)),
            Command::Auto(command::AutoCommand::List) => self.show_standing(),
            Command::Policy => self.show_policy(fx),
            Command::Agents => self.show_agents(),
            Command::Auto(command::AutoCommand::Revoke(n)) => self.revoke_standing(n, fx),
            Command::Auto(command::AutoCommand::Create(a)) => {
                self.create_standing(crate::api::model::GateStandingRequest {
                    agent: a.agent,
                    coins: a.coins,
                    max_notional_usd: a.max_notional_usd,
                    minutes: a.minutes,
                    reason: a.reason,
                })
            }
            Command::Agent(filter) => {
                with_inbox!(self, fx, |inbox, ctx| inbox.set_agent_filter(filter, ctx));
                self.set_tab(Tab::Proposals);
            }
            Command::Backtest(args) => {
                let request = BacktestRequest {
                    strategy_id: args.strategy,
                    pair: args.pair,
                    timeframe: args.timeframe,
                    days: args.days,
                    parameters: args
                        .params
                        .iter()
                        .map(|(k, v)| (k.clone(), number_value(*v)))
                        .collect(),
                };
                self.submit_backtest(request, fx);
            }
            Command::Top(args) => {
                let view = match args.view {
                    command::TopView::Backtests => DView::TopBacktests,
                    command::TopView::Live => DView::TopLive,
                    command::TopView::Combos => DView::Combos,
                };
                self.set_tab(Tab::Discovery);
                if self.tabs.discovery.show_top(view, &args.params, self.now) {
                    self.selected.insert(view.pane(), 0);
                }
            }
            Command::Job(id) => {
                let i = self.tabs.backtests.follow(&id, self.now);
                self.set_tab(Tab::Backtests);
                self.selected.insert(Pane::Jobs, i);
            }
            Command::Service(text) => {
                with_ctx!(self, fx, |ctx| self.tabs.research.send_command(text, ctx));
            }
            Command::Chat(text) => self.send_chat(text, fx),
            Command::Tool { name, args } => self.run_tool_command(name, args, fx),
            Command::Refresh => self.refresh(),
            Command::Help => self.modal = Some(Modal::help()),
            Command::Quit => self.request_quit(fx),
        }
    }
}
