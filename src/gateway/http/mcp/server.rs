//! The MCP server of one session: rmcp's [`ServerHandler`] over [`McpState`]. Who calls is the
//! key [`super::authenticate`] checked and put on the HTTP request, which rmcp hands to every
//! handler.

use super::call;
use super::state::McpState;
use crate::gateway::gate::AgentKey;
use axum::http::request::Parts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeRequestParams,
    InitializeResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use std::sync::Arc;

pub struct Server {
    state: Arc<McpState>,
}

impl Server {
    pub fn new(state: Arc<McpState>) -> Self {
        Server { state }
    }
}

const INSTRUCTIONS: &str = "agentdesk supervises this trading account. Read tools and resources \
answer at once. A tool that changes the account never executes in the call: it stages a proposal \
for a human supervisor and answers its proposalId and expiry; call service_confirm_trade with that \
proposalId to wait for the human's decision and receive the execution, the rejection reason or \
the expiry. Never invent confirm tokens; the gateway handles them.";

/// The key that authenticated the HTTP request carrying this MCP request.
pub fn agent_of(ctx: &RequestContext<RoleServer>) -> Result<AgentKey, ErrorData> {
    ctx.extensions
        .get::<Parts>()
        .and_then(|p| p.extensions.get::<AgentKey>())
        .cloned()
        .ok_or_else(|| ErrorData::internal_error("the request carries no authenticated key", None))
}

impl Server {
    /// Records that this agent connects over MCP, with the client it named (at `initialize`, or
    /// per request under the stateless protocol version).
    fn seen(&self, agent: &AgentKey, client: Option<&Implementation>) {
        let gate = &self.state.gate;
        gate.connections.mcp(
            &agent.hash,
            client.map(|c| (c.name.clone(), c.version.clone())),
            gate.now(),
        );
    }

    fn client_of(ctx: &RequestContext<RoleServer>) -> Option<Implementation> {
        ctx.peer.peer_info().map(|p| p.client_info.clone())
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("agentdesk", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if let Ok(agent) = agent_of(&context) {
            self.seen(&agent, Some(&request.client_info));
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.state.catalog.listen(context.peer.clone());
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let agent = agent_of(&context)?;
        self.seen(&agent, Self::client_of(&context).as_ref());
        let tools = self
            .state
            .tools(&agent.secret)
            .await
            .map_err(|e| ErrorData::internal_error(e.message, None))?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let agent = agent_of(&context)?;
        self.seen(&agent, Self::client_of(&context).as_ref());
        call::tool(&self.state, &agent, request, &context)
            .await
            .map(Into::into)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(call::resources()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let agent = agent_of(&context)?;
        call::read_resource(&self.state, &agent, &request.uri)
            .await
            .map(Into::into)
    }
}
