//! Everything that can happen to the console (Actions) and everything it asks the outside world to do
//! (Effects). `App::update` turns one into the other without doing I/O itself.

use super::inbox::evidence::Evidence;
use super::payload::{DiscoveryPayload, DiscoveryQuery};
use crate::api::ApiError;
use crate::api::model::{
    AuditEntry, BacktestJob, BacktestRequest, BuilderFeeApproval, BuilderFeePayload,
    BuilderFeeStatus, Capabilities, ChatMessage, ChatReply, CliReply, ExecutionResult, GateAgents,
    GateDecision, GateInbox, OpenOrderRow, PnlSummary, PositionRow, Proposal, ResearchRun,
    ResearchStatus, SignalDeliveries, SignalDestination, SignalDestinationRequest,
    SignalDestinations, ToolResult, TradeSignal, Usage, Whoami,
};
use crate::secret::Secret;
use chrono::{DateTime, Utc};
use crossterm::event::{KeyEvent, MouseEvent};
use serde_json::Value;
use std::time::Duration;

/// A resource the console polls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    Whoami,
    Positions,
    Orders,
    Pnl,
    Proposals,
    Usage,
    Audit,
}

impl Resource {
    pub const ALL: [Resource; 7] = [
        Resource::Whoami,
        Resource::Positions,
        Resource::Orders,
        Resource::Pnl,
        Resource::Proposals,
        Resource::Usage,
        Resource::Audit,
    ];

    /// What an execution changes on the account, polled again at once after one (with whatever
    /// else the caller's execution touched).
    pub const TRADED: [Resource; 4] = [
        Resource::Positions,
        Resource::Orders,
        Resource::Pnl,
        Resource::Audit,
    ];

    /// The catalog operation that fetches it.
    pub fn operation(self) -> &'static str {
        match self {
            Resource::Whoami => "whoami",
            Resource::Positions => "get_positions",
            Resource::Orders => "list_open_orders",
            Resource::Pnl => "pnl_summary",
            Resource::Proposals => "list_proposals",
            Resource::Usage => "get_usage",
            Resource::Audit => "list_audit_logs",
        }
    }
}

/// A fetched resource's data.
#[derive(Debug, Clone)]
pub enum Payload {
    Whoami(Box<Whoami>),
    Positions(Vec<PositionRow>),
    Orders(Vec<OpenOrderRow>),
    Pnl(Box<PnlSummary>),
    Proposals(Vec<Proposal>),
    Usage(Box<Usage>),
    Audit(Vec<AuditEntry>),
}

#[derive(Debug, Clone)]
pub enum Action {
    Key(KeyEvent),
    /// Text pasted into the terminal (bracketed paste): never read as keys.
    Paste(String),
    Mouse(MouseEvent),
    Resize(u16, u16),
    /// Time passed; `now` is the wall clock (injected, so tests control it).
    Tick(DateTime<Utc>),
    /// A request came back: when, how long it took, and what it answered.
    Answered {
        at: DateTime<Utc>,
        latency: Duration,
        answer: Box<Answer>,
    },
    /// SIGTERM or SIGHUP: leave now, restoring the terminal.
    Terminate,
}

impl Action {
    pub fn answered(at: DateTime<Utc>, latency: Duration, answer: Answer) -> Action {
        Action::Answered {
            at,
            latency,
            answer: Box::new(answer),
        }
    }
}

/// The answer to one Effect that asked the service something, with what was asked where the
/// answer alone does not say it.
#[derive(Debug, Clone)]
pub enum Answer {
    Loaded {
        resource: Resource,
        result: Result<Payload, ApiError>,
    },
    Proposed {
        signal: Box<TradeSignal>,
        result: Result<Box<Proposal>, ApiError>,
    },
    Confirmed {
        id: String,
        result: Result<Box<ExecutionResult>, ApiError>,
    },
    /// What the service says now, asked because a confirm got no answer.
    Reconciled { evidence: Box<Evidence> },
    /// A Discovery view's answer, with the query it answers.
    Discovered {
        query: DiscoveryQuery,
        result: Result<DiscoveryPayload, ApiError>,
    },
    BacktestSubmitted {
        request: Box<BacktestRequest>,
        result: Result<Box<BacktestJob>, ApiError>,
    },
    /// A poll of one backtest job.
    JobLoaded {
        id: String,
        result: Result<Box<BacktestJob>, ApiError>,
    },
    CandlesLoaded {
        coin: String,
        result: Result<Box<crate::api::model::Candles>, ApiError>,
    },
    ResearchLoaded {
        result: Result<Box<ResearchStatus>, ApiError>,
    },
    /// The run as `research_stop` left it.
    ResearchStopped {
        run_id: String,
        result: Result<Box<ResearchRun>, ApiError>,
    },
    /// The service's command line answered a command sent as typed.
    CliAnswered {
        command: String,
        result: Result<CliReply, ApiError>,
    },
    CapabilitiesLoaded {
        result: Result<Box<Capabilities>, ApiError>,
    },
    /// A tool call's answer; `approval` names the inbox item it confirms.
    ToolExecuted {
        name: String,
        args: Value,
        approval: Option<String>,
        result: Result<Box<ToolResult>, ApiError>,
    },
    ChatAnswered {
        result: Result<Box<ChatReply>, ApiError>,
    },
    /// The answer to an immediate trade (`/trade`).
    Traded {
        signal: Box<TradeSignal>,
        result: Result<Box<ExecutionResult>, ApiError>,
    },
    DestinationsLoaded {
        result: Result<SignalDestinations, ApiError>,
    },
    /// The answer to creating a destination; its signing secret (shown once) is a redacted
    /// `Secret`, so no Debug of an Action prints it.
    DestinationCreated {
        name: String,
        result: Result<Box<SignalDestination>, ApiError>,
    },
    /// The delivery log of one destination.
    DeliveriesLoaded {
        id: String,
        result: Result<SignalDeliveries, ApiError>,
    },
    /// The builder-fee typed data for a wallet.
    BuilderFeeLoaded {
        wallet: String,
        result: Result<Box<BuilderFeePayload>, ApiError>,
    },
    /// The answer to the signed builder-fee approval.
    BuilderFeeApproved {
        result: Result<Box<BuilderFeeStatus>, ApiError>,
    },
    /// A gateway's inbox (every status) and, when asked, its agents; a 404 says the service is
    /// no gateway.
    GateLoaded {
        result: Result<Box<(GateInbox, Option<GateAgents>)>, ApiError>,
    },
    /// A gateway's answer to an approve (`approve`) or a reject of the inbox item `id`.
    GateDecided {
        id: String,
        approve: bool,
        result: Result<Box<GateDecision>, ApiError>,
    },
    /// The gateway's kill switch and live standing approvals, polled with its inbox.
    GuardLoaded {
        kill: Result<crate::api::model::GateKillSwitch, ApiError>,
        standing: Result<Vec<crate::api::model::GateStanding>, ApiError>,
    },
    /// The approve dialog's re-check of item `id`.
    GateChecked {
        id: String,
        result: Result<Box<crate::api::model::GateCheck>, ApiError>,
    },
    /// The answer to `/kill` or `/kill off`.
    KillSwitchSet {
        on: bool,
        result: Result<crate::api::model::GateKillSwitch, ApiError>,
    },
    /// The answer to `/suspend` (`suspend`) or `/resume` of `agent`.
    AgentStateSet {
        agent: String,
        suspend: bool,
        result: Result<crate::api::model::GateAgentsChanged, ApiError>,
    },
    /// The answer to `/auto ...` (created) or `/auto revoke N`.
    StandingChanged {
        what: String,
        result: Result<(), ApiError>,
    },
    /// The gateway's policy in force, read for `/policy`.
    PolicyLoaded {
        result: Result<Box<crate::api::model::GatePolicy>, ApiError>,
    },
}

impl Answer {
    /// Whether this answers a periodic poll (nobody pressed anything for it), so its change to the
    /// screen may wait for the clock's next second.
    pub fn is_poll(&self) -> bool {
        matches!(
            self,
            Answer::Loaded { .. }
                | Answer::GateLoaded { .. }
                | Answer::GuardLoaded { .. }
                | Answer::JobLoaded { .. }
                | Answer::CandlesLoaded { .. }
                | Answer::ResearchLoaded { .. }
                | Answer::DeliveriesLoaded { .. }
                | Answer::PolicyLoaded { .. }
                | Answer::Reconciled { .. }
        )
    }

    /// The catalog operation that was called, for the request log.
    pub fn operation(&self) -> &'static str {
        match self {
            Answer::Loaded { resource, .. } => resource.operation(),
            Answer::Proposed { .. } => "propose_trade",
            Answer::Confirmed { .. } => "confirm_trade",
            Answer::Reconciled { .. } => "list_audit_logs",
            Answer::Discovered { query, .. } => query.operation(),
            Answer::BacktestSubmitted { .. } => "run_backtest",
            Answer::JobLoaded { .. } => "get_backtest_job",
            Answer::CandlesLoaded { .. } => "sandbox_candles",
            Answer::ResearchLoaded { .. } => "research_status",
            Answer::ResearchStopped { .. } => "research_stop",
            Answer::CliAnswered { .. } => "mcp_cli",
            Answer::CapabilitiesLoaded { .. } => "list_mcp_capabilities",
            Answer::ToolExecuted { .. } => "execute_mcp_tool",
            Answer::ChatAnswered { .. } => "mcp_agent_chat",
            Answer::Traded { .. } => "place_order",
            Answer::DestinationsLoaded { .. } => "list_signal_destinations",
            Answer::DestinationCreated { .. } => "create_signal_destination",
            Answer::DeliveriesLoaded { .. } => "list_signal_deliveries",
            Answer::BuilderFeeLoaded { .. } => "approve_builder_fee_payload",
            Answer::BuilderFeeApproved { .. } => "approve_builder_fee",
            Answer::GateLoaded { .. } => "gate_inbox",
            Answer::GateDecided { approve: true, .. } => "gate_approve",
            Answer::GateDecided { approve: false, .. } => "gate_reject",
            Answer::GuardLoaded { .. } => "gate_kill_switch",
            Answer::GateChecked { .. } => "gate_check",
            Answer::KillSwitchSet { .. } => "gate_set_kill_switch",
            Answer::StandingChanged { .. } => "gate_standing_approvals",
            Answer::AgentStateSet { suspend: true, .. } => "gate_agent_suspend",
            Answer::AgentStateSet { suspend: false, .. } => "gate_agent_resume",
            Answer::PolicyLoaded { .. } => "gate_policy",
        }
    }

    /// The error, when the request failed.
    pub fn error(&self) -> Option<&ApiError> {
        fn err<T>(r: &Result<T, ApiError>) -> Option<&ApiError> {
            r.as_ref().err()
        }
        match self {
            Answer::Loaded { result, .. } => err(result),
            Answer::Proposed { result, .. } => err(result),
            Answer::Confirmed { result, .. } => err(result),
            Answer::Reconciled { evidence } => evidence.error(),
            Answer::Discovered { result, .. } => err(result),
            Answer::BacktestSubmitted { result, .. } => err(result),
            Answer::JobLoaded { result, .. } => err(result),
            Answer::CandlesLoaded { result, .. } => err(result),
            Answer::ResearchLoaded { result } => err(result),
            Answer::ResearchStopped { result, .. } => err(result),
            Answer::CliAnswered { result, .. } => err(result),
            Answer::CapabilitiesLoaded { result } => err(result),
            Answer::ToolExecuted { result, .. } => err(result),
            Answer::ChatAnswered { result } => err(result),
            Answer::Traded { result, .. } => err(result),
            Answer::DestinationsLoaded { result } => err(result),
            Answer::DestinationCreated { result, .. } => err(result),
            Answer::DeliveriesLoaded { result, .. } => err(result),
            Answer::BuilderFeeLoaded { result, .. } => err(result),
            Answer::BuilderFeeApproved { result } => err(result),
            Answer::GateLoaded { result } => err(result),
            Answer::GateDecided { result, .. } => err(result),
            Answer::GuardLoaded { kill, standing } => err(kill).or(err(standing)),
            Answer::GateChecked { result, .. } => err(result),
            Answer::KillSwitchSet { result, .. } => err(result),
            Answer::StandingChanged { result, .. } => err(result),
            Answer::AgentStateSet { result, .. } => err(result),
            Answer::PolicyLoaded { result } => err(result),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Fetch(Resource),
    Propose(Box<TradeSignal>),
    Confirm(String),
    /// Ask the service what became of confirms that got no answer: the audit log, and the
    /// proposals list when `list` (the service offers it).
    Reconcile {
        list: bool,
    },
    /// Fetch one Discovery view with these parameters.
    FetchDiscovery(DiscoveryQuery),
    /// Submit a backtest job.
    RunBacktest(Box<BacktestRequest>),
    /// Poll one backtest job.
    FetchJob(String),
    /// A coin's recent candles, for its price chart (`feeds::market`).
    FetchCandles(String),
    /// Poll the research run.
    FetchResearch,
    /// Stop a research run by id.
    StopResearch(String),
    /// Send a command line, exactly as typed, to the service's command line (`mcp_cli`).
    Cli(String),
    /// Fetch the tool catalog.
    FetchCapabilities,
    /// Call a tool; `approval` is the inbox item whose confirm token `args` carries.
    ExecuteTool {
        name: String,
        args: Value,
        approval: Option<String>,
    },
    /// Send the conversation to the service's agent.
    Chat(Vec<ChatMessage>),
    /// Execute a trade now (`place_order`); its `fanout` is always set.
    Trade(Box<TradeSignal>),
    FetchDestinations,
    CreateDestination(SignalDestinationRequest),
    /// Fetch the delivery log of a destination by id.
    FetchDeliveries(String),
    /// Fetch the builder-fee typed data for this wallet.
    FetchBuilderFee(String),
    /// Post the wallet's signature of the builder-fee typed data.
    ApproveBuilderFee(BuilderFeeApproval),
    /// Poll the gateway's inbox and agents (`/gate/v1`).
    FetchGate,
    /// Poll the gateway's inbox only (the agents change rarely); with `since`, a long poll the
    /// gateway holds until its inbox changes.
    FetchGateInbox {
        since: Option<u64>,
    },
    /// Approve an inbox item through the gateway's supervisor API (it executes upstream).
    GateApprove(String),
    /// Reject an inbox item through the gateway, with the reason the agent is told.
    GateReject {
        id: String,
        reason: String,
    },
    /// Poll the gateway's kill switch and standing approvals (with [`Effect::FetchGate`]).
    FetchGuard,
    /// Re-check an item's verdicts against live data for the approve dialog.
    GateCheck(String),
    /// Approve through the gateway, overriding these policy rules (journaled with them).
    GateApproveOverride {
        id: String,
        overrides: Vec<String>,
    },
    /// Turn the gateway's kill switch on (with the reason agents are told) or off.
    GateSetKill {
        on: bool,
        reason: String,
    },
    /// Suspend an agent on the gateway (`/suspend`).
    GateSuspend {
        agent: String,
        reason: String,
    },
    /// End an agent's suspension (`/resume`).
    GateResume(String),
    GateCreateStanding(crate::api::model::GateStandingRequest),
    GateRevokeStanding(i64),
    /// Read the gateway's policy in force (while `/policy` is open).
    FetchPolicy,
    /// Put text on the terminal's clipboard with OSC 52: the loop writes
    /// `ESC ] 52 ; c ; <base64> BEL`. The payload is the base64 text, kept redacted.
    Clipboard(Secret),
    /// Ring the terminal bell.
    Bell,
    /// Append one JSON line to the decision journal.
    Journal(String),
    Quit,
}
