//! THE table of operations. Every other description of the interface — the client's paths, the sandbox
//! router, the tool catalog, the MCP capabilities, the OpenAPI document and the console's command help —
//! is derived from [`OPERATIONS`], so an operation is added or changed here and nowhere else.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    Get,
    Post,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
        }
    }
}

/// The seed's section an operation belongs to; the sandbox has one router file per section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    Account,
    Discovery,
    Backtests,
    Staged,
    Immediate,
    Signals,
    Tools,
    Research,
    Meta,
}

/// Key scopes, as the seed names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Scope {
    #[serde(rename = "legacy")]
    Legacy,
    #[serde(rename = "webhook:alerts")]
    WebhookAlerts,
    #[serde(rename = "mcp:mutate")]
    McpMutate,
    #[serde(rename = "platform:trade")]
    PlatformTrade,
}

impl Scope {
    pub const ALL: [Scope; 4] = [
        Scope::Legacy,
        Scope::WebhookAlerts,
        Scope::McpMutate,
        Scope::PlatformTrade,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Legacy => "legacy",
            Scope::WebhookAlerts => "webhook:alerts",
            Scope::McpMutate => "mcp:mutate",
            Scope::PlatformTrade => "platform:trade",
        }
    }

    pub fn parse(s: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which keys may call an operation (the seed's Authentication section, rule 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScopeRule {
    /// Any valid key: reads, discovery, staging, tools, research.
    AnyKey,
    /// `POST /api/v1/trades`: `webhook:alerts` or legacy.
    Trades,
    /// Platform orders, closes and cancels: `platform:trade` or legacy.
    Platform,
}

impl ScopeRule {
    pub fn allows(self, scope: Scope) -> bool {
        match self {
            ScopeRule::AnyKey => true,
            ScopeRule::Trades => matches!(scope, Scope::WebhookAlerts | Scope::Legacy),
            ScopeRule::Platform => matches!(scope, Scope::PlatformTrade | Scope::Legacy),
        }
    }

    /// The scopes that pass, for error messages and docs.
    pub fn describe(self) -> &'static str {
        match self {
            ScopeRule::AnyKey => "any valid key",
            ScopeRule::Trades => "a webhook:alerts or legacy key",
            ScopeRule::Platform => "a platform:trade or legacy key",
        }
    }
}

/// MCP tier: what a tool may do to the account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    Observe,
    Experiment,
    Mutate,
}

/// Which daily caps a call consumes. Only the POSTs the seed marks "429 possible" count against the POST
/// cap; compute is charged by operations that run the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Quota {
    pub post: bool,
    pub compute: bool,
}

/// How a caller proves who they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Auth {
    ApiKey,
    /// `x-api-key`, or an x402 `PAYMENT-SIGNATURE` header instead.
    ApiKeyOrPayment,
}

impl Auth {
    pub fn describe(self) -> &'static str {
        match self {
            Auth::ApiKey => "x-api-key",
            Auth::ApiKeyOrPayment => "x-api-key or PAYMENT-SIGNATURE",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct QueryParam {
    pub name: &'static str,
    /// JSON Schema type of the value once parsed ("string", "integer", "number", "boolean").
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<&'static str>,
    #[serde(rename = "enum", skip_serializing_if = "<[_]>::is_empty")]
    pub allowed: &'static [&'static str],
    pub description: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operation {
    /// The seed's operation name (`propose_trade`, `discover_top_live`, ...).
    pub name: &'static str,
    pub method: Method,
    /// Path template; `{jobId}`-style segments are path parameters.
    pub path: &'static str,
    pub section: Section,
    pub scope: ScopeRule,
    pub tier: Tier,
    pub quota: Quota,
    pub auth: Auth,
    pub query: &'static [QueryParam],
    /// Example request body as JSON text.
    pub example_body: Option<&'static str>,
    pub summary: &'static str,
    /// Not in the seed: marked `x-extension` in the catalog and OpenAPI, and feature-detected by clients.
    pub extension: bool,
    /// For aliases: the operation whose payload this one serves.
    pub alias_of: Option<&'static str>,
}

impl Operation {
    /// Path parameter names, in order of appearance.
    pub fn path_params(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        let mut rest = self.path;
        while let Some(start) = rest.find('{') {
            let Some(len) = rest[start..].find('}') else {
                break;
            };
            out.push(&rest[start + 1..start + len]);
            rest = &rest[start + len + 1..];
        }
        out
    }

    /// The path with its parameters filled in, in order.
    pub fn path_with(&self, args: &[&str]) -> String {
        let mut path = self.path.to_string();
        for (name, value) in self.path_params().iter().zip(args) {
            path = path.replace(&format!("{{{name}}}"), &percent_encode_segment(value));
        }
        path
    }

    /// The tool name under which MCP clients see this operation.
    pub fn tool_name(&self) -> String {
        format!("service_{}", self.name)
    }
}

/// One path segment, percent-encoded (for paths outside the catalog, e.g. a gateway's).
pub fn encode_segment(s: &str) -> String {
    percent_encode_segment(s)
}

fn percent_encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

const NO_QUOTA: Quota = Quota {
    post: false,
    compute: false,
};
const POST_CAP: Quota = Quota {
    post: true,
    compute: false,
};
const POST_AND_COMPUTE: Quota = Quota {
    post: true,
    compute: true,
};

const BASE: Operation = Operation {
    name: "",
    method: Method::Get,
    path: "",
    section: Section::Account,
    scope: ScopeRule::AnyKey,
    tier: Tier::Observe,
    quota: NO_QUOTA,
    auth: Auth::ApiKey,
    query: &[],
    example_body: None,
    summary: "",
    extension: false,
    alias_of: None,
};

const fn q(
    name: &'static str,
    kind: &'static str,
    default: Option<&'static str>,
    description: &'static str,
) -> QueryParam {
    QueryParam {
        name,
        kind,
        default,
        allowed: &[],
        description,
    }
}

const fn q_enum(
    name: &'static str,
    allowed: &'static [&'static str],
    default: Option<&'static str>,
    description: &'static str,
) -> QueryParam {
    QueryParam {
        name,
        kind: "string",
        default,
        allowed,
        description,
    }
}

pub static OPERATIONS: &[Operation] = &[
    // ---- Account and observation -------------------------------------------------------------
    Operation {
        name: "whoami",
        path: "/api/delegated/whoami",
        query: &[q_enum(
            "include",
            &["summary"],
            None,
            "`summary` adds a readiness summary and `json_summary`",
        )],
        summary: "The account behind this key: messengerId, scope and legacy flags",
        ..BASE
    },
    Operation {
        name: "get_usage",
        path: "/api/delegated/usage",
        auth: Auth::ApiKeyOrPayment,
        summary: "Usage for the current UTC day: POST quota, compute, tokens, payments",
        ..BASE
    },
    Operation {
        name: "get_usage_v1",
        path: "/api/v1/usage",
        auth: Auth::ApiKeyOrPayment,
        summary: "Alias of get_usage on the platform path family",
        alias_of: Some("get_usage"),
        ..BASE
    },
    Operation {
        name: "get_positions",
        path: "/api/delegated/positions",
        summary: "Open positions, venue first, then venue2",
        ..BASE
    },
    Operation {
        name: "pnl_summary",
        path: "/api/delegated/pnl/summary",
        summary: "Equity, unrealized and realized PnL, PnL today / 7 d / 30 d",
        ..BASE
    },
    Operation {
        name: "list_audit_logs",
        path: "/api/delegated/logs",
        query: &[q(
            "limit",
            "integer",
            Some("50"),
            "Rows to return, newest first (1-500; larger values are capped at 500)",
        )],
        summary: "Recent delegated execute attempts of this key's own account",
        ..BASE
    },
    Operation {
        name: "list_tools",
        path: "/api/delegated/tools",
        summary: "The tool catalog, the OpenAPI address and install hints",
        ..BASE
    },
    Operation {
        name: "list_open_orders",
        path: "/api/v1/orders",
        query: &[q_enum(
            "exchange",
            &["venue", "venue2", "all"],
            Some("all"),
            "Which exchange's resting orders",
        )],
        summary: "Resting orders (limits and TP/SL triggers) of this key's account",
        ..BASE
    },
    Operation {
        name: "list_proposals",
        path: "/api/delegated/proposals",
        query: &[q_enum(
            "status",
            &["staged", "executed", "expired", "failed", "all"],
            Some("all"),
            "Only proposals in this state",
        )],
        summary: "Staged and recently decided proposals of this account, newest first",
        extension: true,
        ..BASE
    },
    // ---- Discovery ------------------------------------------------------------------------------
    Operation {
        name: "discover_top_backtests",
        path: "/api/delegated/strategies/top-backtests",
        section: Section::Discovery,
        query: &[
            q_enum(
                "filter",
                &["good", "excellent", "all"],
                Some("good"),
                "Quality threshold of the cached backtests",
            ),
            q(
                "includeAll",
                "boolean",
                Some("false"),
                "Include every cached row, not only the best per strategy",
            ),
        ],
        summary: "Best cached backtests across strategies, pairs and timeframes",
        ..BASE
    },
    Operation {
        name: "discover_top_live",
        path: "/api/delegated/strategies/top-live",
        section: Section::Discovery,
        query: &[
            q(
                "windowDays",
                "integer",
                Some("7"),
                "Replay window over the live feed, in days",
            ),
            q("limit", "integer", Some("10"), "Rows to return"),
        ],
        summary: "Strategies ranked by replaying their signals over the recent live feed",
        ..BASE
    },
    Operation {
        name: "discover_top_optimized_combos",
        path: "/api/delegated/strategies/top-optimized-combos",
        section: Section::Discovery,
        query: &[
            q("pair", "string", Some("BTC-USD"), "Pair, shape <BASE>-USD"),
            q("timeframe", "string", Some("5m"), "Candle timeframe"),
            q("days", "integer", Some("30"), "History length in days"),
            q(
                "perStrategy",
                "integer",
                Some("3"),
                "Best combos kept per strategy",
            ),
            q("limit", "integer", Some("50"), "Rows to return"),
            q_enum(
                "filter",
                &["good", "all"],
                Some("good"),
                "Quality threshold",
            ),
            q("minReturnPct", "number", None, "Minimum total return in %"),
            q("minTrades", "integer", None, "Minimum number of trades"),
        ],
        summary: "Optimizer parameter sets across all strategies, as one flat list",
        ..BASE
    },
    Operation {
        name: "discover_strategies",
        path: "/api/delegated/strategies/available",
        section: Section::Discovery,
        summary: "The strategy catalog: id, name, category, parameters",
        ..BASE
    },
    // ---- Backtests ------------------------------------------------------------------------------
    Operation {
        name: "run_backtest",
        method: Method::Post,
        path: "/api/delegated/backtests",
        section: Section::Backtests,
        tier: Tier::Experiment,
        quota: POST_AND_COMPUTE,
        example_body: Some(
            r#"{"strategyId":"sma_cross","pair":"BTC-USD","timeframe":"15m","days":30,"parameters":{}}"#,
        ),
        summary: "Queue an asynchronous backtest; returns jobId and pollUrl",
        ..BASE
    },
    Operation {
        name: "get_backtest_job",
        path: "/api/delegated/backtests/{jobId}",
        section: Section::Backtests,
        tier: Tier::Experiment,
        summary: "Status of a backtest job, with results once done",
        ..BASE
    },
    // ---- Staged trading -------------------------------------------------------------------------
    Operation {
        name: "propose_trade",
        method: Method::Post,
        path: "/api/delegated/propose",
        section: Section::Staged,
        tier: Tier::Mutate,
        quota: POST_CAP,
        example_body: Some(
            r#"{"id":"<messengerId>","strategy":"Agent","a":"BTCUSDT","d":"long","p":"65000","tp":"70000","sl":"63000","o":"market"}"#,
        ),
        summary: "Stage a trade or a close; returns proposalId, expiresAt (5 min) and a preview",
        ..BASE
    },
    Operation {
        name: "confirm_trade",
        method: Method::Post,
        path: "/api/delegated/confirm",
        section: Section::Staged,
        tier: Tier::Mutate,
        quota: POST_CAP,
        example_body: Some(r#"{"proposalId":"prop_0123456789abcdef"}"#),
        summary: "Execute a staged proposal, with the key that staged it, within 5 minutes",
        ..BASE
    },
    Operation {
        name: "close_position",
        method: Method::Post,
        path: "/api/delegated/positions/close",
        section: Section::Staged,
        tier: Tier::Mutate,
        quota: POST_CAP,
        example_body: Some(r#"{"proposalId":"prop_0123456789abcdef","action":"close"}"#),
        summary: "Execute a staged close by proposalId; flattening without staging is refused",
        ..BASE
    },
    // ---- Immediate trading ----------------------------------------------------------------------
    Operation {
        name: "place_order",
        method: Method::Post,
        path: "/api/v1/trades",
        section: Section::Immediate,
        scope: ScopeRule::Trades,
        tier: Tier::Mutate,
        quota: POST_CAP,
        example_body: Some(
            r#"{"id":"<messengerId>","strategy":"Agent","a":"BTCUSDT","d":"long","p":"65000","tp":"70000","sl":"63000","o":"market","fanout":true}"#,
        ),
        summary: "Execute a trade signal now, without confirmation; fans out unless fanout is false",
        ..BASE
    },
    Operation {
        name: "platform_place_order",
        method: Method::Post,
        path: "/api/v1/orders",
        section: Section::Immediate,
        scope: ScopeRule::Platform,
        tier: Tier::Mutate,
        example_body: Some(
            r#"{"pair":"BTC-USD","side":"long","orderType":"market","sizingMode":"account","accountPercentage":5,"leverage":3,"exchange":"venue","slEnabled":true,"slType":"percentage","slPercentage":2,"tpEnabled":true,"tpType":"percentage","tpPercentage":4}"#,
        ),
        summary: "Place a platform order now (no fan-out); Idempotency-Key makes retries safe",
        ..BASE
    },
    Operation {
        name: "platform_close_position",
        method: Method::Post,
        path: "/api/v1/positions/close",
        section: Section::Immediate,
        scope: ScopeRule::Platform,
        tier: Tier::Mutate,
        example_body: Some(r#"{"pair":"BTC-USD","percentage":100,"exchange":"venue"}"#),
        summary: "Close one position (all or a percentage) now",
        ..BASE
    },
    Operation {
        name: "platform_cancel_order",
        method: Method::Post,
        path: "/api/v1/orders/cancel",
        section: Section::Immediate,
        scope: ScopeRule::Platform,
        tier: Tier::Mutate,
        example_body: Some(r#"{"oid":123456,"coin":"BTC"}"#),
        summary: "Cancel one or more resting orders by oid",
        ..BASE
    },
    Operation {
        name: "approve_builder_fee_payload",
        path: "/api/v1/venue/builder-fee",
        section: Section::Immediate,
        query: &[q(
            "venueWallet",
            "string",
            None,
            "The account's venue wallet address (0x...)",
        )],
        summary: "EIP-712 typed data for the builder-fee approval, and whether it is authorized",
        ..BASE
    },
    Operation {
        name: "approve_builder_fee",
        method: Method::Post,
        path: "/api/v1/venue/builder-fee",
        section: Section::Immediate,
        tier: Tier::Mutate,
        example_body: Some(
            r#"{"venueWallet":"0x0000000000000000000000000000000000000000","nonce":1700000000000,"signature":"0x...","signatureChainId":"0x66eee"}"#,
        ),
        summary: "Submit the wallet's signature of the builder-fee typed data",
        ..BASE
    },
    // ---- Signal destinations --------------------------------------------------------------------
    Operation {
        name: "list_signal_destinations",
        path: "/api/v1/signal-destinations",
        section: Section::Signals,
        summary: "Registered HTTPS signal destinations (secrets never shown)",
        ..BASE
    },
    Operation {
        name: "create_signal_destination",
        method: Method::Post,
        path: "/api/v1/signal-destinations",
        section: Section::Signals,
        tier: Tier::Mutate,
        quota: POST_CAP,
        example_body: Some(
            r#"{"url":"https://example.com/hook","strategyIds":["*"],"directions":["BUY","SELL","CLOSE"],"name":"my hook"}"#,
        ),
        summary: "Register an HTTPS destination; the signingSecret is returned once",
        ..BASE
    },
    Operation {
        name: "list_signal_deliveries",
        path: "/api/v1/signal-destinations/{destinationId}/deliveries",
        section: Section::Signals,
        query: &[q(
            "limit",
            "integer",
            Some("50"),
            "Deliveries to return, newest first (1-500)",
        )],
        summary: "Delivery log of one destination: status, attempts, last error, next retry",
        extension: true,
        ..BASE
    },
    // ---- Tool access ----------------------------------------------------------------------------
    Operation {
        name: "list_mcp_capabilities",
        path: "/api/delegated/mcp/capabilities",
        section: Section::Tools,
        summary: "Every tool with its JSON Schema, in observe / experiment / mutate tiers",
        ..BASE
    },
    Operation {
        name: "execute_mcp_tool",
        method: Method::Post,
        path: "/api/delegated/mcp/tool",
        section: Section::Tools,
        tier: Tier::Experiment,
        quota: POST_CAP,
        example_body: Some(r#"{"name":"service_get_positions","args":{}}"#),
        summary: "Run one tool; mutate tools answer with a confirmToken first",
        ..BASE
    },
    Operation {
        name: "mcp_agent_chat",
        method: Method::Post,
        path: "/api/delegated/mcp/chat",
        section: Section::Tools,
        tier: Tier::Experiment,
        quota: POST_AND_COMPUTE,
        example_body: Some(r#"{"messages":[{"role":"user","content":"What are my positions?"}]}"#),
        summary: "One chat turn of the server's own LLM tool loop",
        ..BASE
    },
    Operation {
        name: "mcp_cli",
        method: Method::Post,
        path: "/api/delegated/mcp/cli",
        section: Section::Tools,
        tier: Tier::Experiment,
        quota: POST_CAP,
        example_body: Some(r#"{"command":"/help"}"#),
        summary: "Deterministic slash-command CLI (/research ..., /help)",
        ..BASE
    },
    // ---- Research runs --------------------------------------------------------------------------
    Operation {
        name: "research_status",
        path: "/api/terminal/research/runs/active",
        section: Section::Research,
        tier: Tier::Experiment,
        auth: Auth::ApiKeyOrPayment,
        summary: "The account's active research run",
        ..BASE
    },
    Operation {
        name: "research_start",
        method: Method::Post,
        path: "/api/terminal/research/runs",
        section: Section::Research,
        tier: Tier::Experiment,
        quota: POST_AND_COMPUTE,
        auth: Auth::ApiKeyOrPayment,
        example_body: Some(r#"{"task":"find the best trend strategy for ETH on 1h"}"#),
        summary: "Start a multi-agent research run",
        ..BASE
    },
    Operation {
        name: "research_message",
        method: Method::Post,
        path: "/api/terminal/research/runs/{runId}/message",
        section: Section::Research,
        tier: Tier::Experiment,
        quota: POST_CAP,
        auth: Auth::ApiKeyOrPayment,
        example_body: Some(r#"{"message":"only 4h and 1d timeframes"}"#),
        summary: "Steer a running research run",
        ..BASE
    },
    Operation {
        name: "research_stop",
        method: Method::Post,
        path: "/api/terminal/research/runs/{runId}/stop",
        section: Section::Research,
        tier: Tier::Experiment,
        quota: POST_CAP,
        auth: Auth::ApiKeyOrPayment,
        summary: "Stop a research run; transcript and artifacts remain",
        ..BASE
    },
    // ---- Meta -----------------------------------------------------------------------------------
    Operation {
        name: "get_openapi",
        path: "/api/agent/openapi.json",
        section: Section::Meta,
        summary: "This interface as an OpenAPI 3.0.3 document",
        ..BASE
    },
];

/// Looks an operation up by its seed name. Panics on an unknown name: names are compile-time constants
/// in this crate, so a miss is a programming error caught by the tests.
/// Every tool name is an operation's name behind this prefix (`service_get_positions`).
pub const TOOL_PREFIX: &str = "service_";

/// The operations that are the tool mechanism itself. They are not tools: a tool that runs tools
/// (or a whole chat turn) would nest loops outside the chat loop's bounds.
const NOT_TOOLS: &[&str] = &[
    "list_mcp_capabilities",
    "execute_mcp_tool",
    "mcp_agent_chat",
];

/// Whether an operation is offered as a tool: every seed operation and extension except the tool
/// mechanism itself, aliases (`get_usage_v1` is `get_usage`) and meta (`get_openapi`).
pub fn is_tool(op: &Operation) -> bool {
    op.alias_of.is_none() && op.section != Section::Meta && !NOT_TOOLS.contains(&op.name)
}

/// The operation behind a tool name, matched byte for byte: `" service_place_order"` names no
/// tool, whatever a lenient reader would make of it.
pub fn tool_op(name: &str) -> Option<&'static Operation> {
    name.strip_prefix(TOOL_PREFIX)
        .and_then(find)
        .filter(|op| is_tool(op))
}

pub fn op(name: &str) -> &'static Operation {
    find(name).unwrap_or_else(|| panic!("operation {name} is not in the catalog"))
}

pub fn find(name: &str) -> Option<&'static Operation> {
    OPERATIONS.iter().find(|o| o.name == name)
}

/// The 32 operations of the seed (aliases, meta and extensions excluded).
pub fn seed_operations() -> impl Iterator<Item = &'static Operation> {
    OPERATIONS
        .iter()
        .filter(|o| !o.extension && o.alias_of.is_none() && o.section != Section::Meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn seed_has_32_operations_with_unique_names_and_routes() {
        assert_eq!(seed_operations().count(), 32);
        let names: HashSet<_> = OPERATIONS.iter().map(|o| o.name).collect();
        assert_eq!(names.len(), OPERATIONS.len());
        let routes: HashSet<_> = OPERATIONS.iter().map(|o| (o.method, o.path)).collect();
        assert_eq!(routes.len(), OPERATIONS.len());
    }

    #[test]
    fn example_bodies_are_json_and_posts_have_them() {
        for op in OPERATIONS {
            if let Some(body) = op.example_body {
                serde_json::from_str::<serde_json::Value>(body)
                    .unwrap_or_else(|e| panic!("{}: {e}", op.name));
            }
        }
    }

    #[test]
    fn path_params_are_filled_and_encoded() {
        let op = op("research_message");
        assert_eq!(op.path_params(), vec!["runId"]);
        assert_eq!(
            op.path_with(&["run 1/2"]),
            "/api/terminal/research/runs/run%201%2F2/message"
        );
    }

    #[test]
    fn scope_rules_follow_the_seed() {
        use Scope::*;
        assert!(ScopeRule::Trades.allows(WebhookAlerts) && ScopeRule::Trades.allows(Legacy));
        assert!(!ScopeRule::Trades.allows(McpMutate) && !ScopeRule::Trades.allows(PlatformTrade));
        assert!(ScopeRule::Platform.allows(PlatformTrade) && ScopeRule::Platform.allows(Legacy));
        assert!(!ScopeRule::Platform.allows(McpMutate));
        assert!(!ScopeRule::Platform.allows(WebhookAlerts));
    }
}
