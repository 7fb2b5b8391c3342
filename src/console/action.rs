//! Everything that can happen to the console (Actions) and everything it asks the outside world to do
//! (Effects). `App::update` turns one into the other without doing I/O itself.

use super::discovery::{DiscoveryPayload, DiscoveryQuery};
use crate::api::ApiError;
use crate::api::model::{
    AuditEntry, BacktestJob, BacktestRequest, Capabilities, ChatMessage, ChatReply, CliReply,
    ExecutionResult, OpenOrderRow, PnlSummary, PositionRow, Proposal, ResearchRun, ResearchStatus,
    ToolResult, TradeSignal, Usage, Whoami,
};
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
    Mouse(MouseEvent),
    Resize(u16, u16),
    /// Time passed; `now` is the wall clock (injected, so tests control it).
    Tick(DateTime<Utc>),
    Loaded {
        resource: Resource,
        result: Result<Payload, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
    },
    Proposed {
        signal: Box<TradeSignal>,
        result: Result<Box<Proposal>, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
    },
    Confirmed {
        id: String,
        result: Result<Box<ExecutionResult>, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
    },
    /// A Discovery view's answer, with the query it answers.
    Discovered {
        query: DiscoveryQuery,
        result: Result<DiscoveryPayload, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
    },
    /// The service's answer to a backtest submission.
    BacktestSubmitted {
        request: Box<BacktestRequest>,
        result: Result<Box<BacktestJob>, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
    },
    /// A poll of one backtest job.
    JobLoaded {
        id: String,
        result: Result<Box<BacktestJob>, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
    },
    /// A poll of the research run.
    ResearchLoaded {
        result: Result<Box<ResearchStatus>, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
    },
    /// The run as `research_stop` left it.
    ResearchStopped {
        run_id: String,
        result: Result<Box<ResearchRun>, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
    },
    /// The service's command line answered a command sent as typed.
    CliAnswered {
        command: String,
        result: Result<CliReply, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
    },
    CapabilitiesLoaded {
        result: Result<Box<Capabilities>, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
    },
    /// A tool call's answer; `approval` names the inbox item it confirms.
    ToolExecuted {
        name: String,
        args: Value,
        approval: Option<String>,
        result: Result<Box<ToolResult>, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
    },
    ChatAnswered {
        result: Result<Box<ChatReply>, ApiError>,
        latency: Duration,
        at: DateTime<Utc>,
    },
    /// The terminal was asked to stop (SIGTERM, SIGHUP).
    Terminate,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Fetch(Resource),
    Propose(Box<TradeSignal>),
    Confirm(String),
    /// Fetch one Discovery view with these parameters.
    FetchDiscovery(DiscoveryQuery),
    /// Submit a backtest job.
    RunBacktest(Box<BacktestRequest>),
    /// Poll one backtest job.
    FetchJob(String),
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
    /// Ring the terminal bell.
    Bell,
    /// Append one JSON line to the decision journal.
    Journal(String),
    Quit,
}
