//! The tool-protocol endpoint `POST /mcp` (spec 4.10): stateless streamable
//! HTTP, opened by the same bearer tokens as `/api/v1` (the bearer middleware
//! runs first, so a session cookie never opens it). Each tool reads its
//! arguments, calls the operation the REST API calls too (which checks the
//! library scope of spec 5), and answers through [`answer::answer`]; a
//! listing is cut by [`page::Page`].
//!
//! The 28 tools, one module per group:
//! - [`books`]: `list_books`, `get_book`, `list_chapters`, `book_quality`,
//!   `read_bible`, `configure_book`, `shelve_book`, `delete_book`;
//! - [`series`]: `list_series`, `get_series`, `series_consistency`,
//!   `create_series`, `update_series`, `attach_volume`, `delete_series`,
//!   `control_series`;
//! - [`terms`]: `list_terms`, `add_term`, `edit_term`, `delete_term`,
//!   `propagate_term`;
//! - [`work`]: `list_providers`, `start_job`, `list_jobs`, `control_job`,
//!   `estimate_job`, `licence_status`, `export_book`.
//!
//! A deleting tool asks for `confirm: true` ([`confirm`]); `docs/mcp.md`
//! documents each tool for clients. While the database is away a call
//! answers `service_unavailable` at once ([`crate::outage`]).

mod answer;
mod arguments;
mod books;
mod confirm;
pub(crate) mod jsonrpc;
pub mod page;
mod series;
mod terms;
pub mod transport;
mod vocabulary;
mod work;

use crate::auth::bearer::TokenCaller;
use crate::operations::Caller;
use crate::outage;
use crate::state::AppState;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, tool_handler};
use std::sync::Arc;

#[derive(Clone)]
pub struct McpTools {
    state: AppState,
    tool_router: ToolRouter<Self>,
}

impl McpTools {
    /// The token the bearer middleware authenticated, calling as a tool.
    pub(crate) fn caller(&self, context: &RequestContext<RoleServer>) -> Result<Caller, ErrorData> {
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<TokenCaller>())
            .cloned()
            .map(Caller::tools)
            .ok_or_else(|| ErrorData::internal_error("no authenticated caller", None))
    }
}

impl McpTools {
    pub fn new(state: AppState) -> Self {
        Self {
            state,
            tool_router: Self::router(),
        }
    }

    /// Every tool, by group (the module doc lists them).
    fn router() -> ToolRouter<Self> {
        Self::book_tools() + Self::series_tools() + Self::term_tools() + Self::work_tools()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for McpTools {
    /// A tool call the database holds up past [`outage::GRACE`] once it is
    /// known away answers `service_unavailable` as an `isError` result,
    /// like any refusal of a tool.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let call = ToolCallContext::new(self, request, context);
        match self
            .state
            .database
            .bounded(self.tool_router.call(call), outage::GRACE)
            .await
        {
            Ok(answered) => answered,
            Err(_) => Ok(answer::refusal(outage::unavailable()).into()),
        }
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("dragoman", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Dragoman: book translation library. Reading tools need library:read.",
            )
    }
}

/// rmcp's side of `/mcp`: stateless, JSON answers, no session kept. It sees
/// one message per POST, sent by [`transport::Endpoint`], which has already
/// checked the method, `Host` and `Origin`, the body and the rate limit; so
/// rmcp's own host check is off (one rule, in front of it).
pub fn service(state: AppState) -> StreamableHttpService<McpTools, NeverSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(transport::MAX_BODY_BYTES)
        .disable_allowed_hosts()
        .disable_allowed_origins();
    StreamableHttpService::new(
        move || Ok(McpTools::new(state.clone())),
        Arc::new(NeverSessionManager::default()),
        config,
    )
}

#[cfg(test)]
mod tests {
    use super::McpTools;

    #[test]
    fn the_module_doc_lists_every_tool() {
        let doc: Vec<&str> = include_str!("mod.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("//!"))
            .skip_while(|l| !l.contains(" tools, one module per group"))
            .take_while(|l| !l.trim().is_empty())
            .collect();
        let count: usize = doc
            .first()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .expect("the count of tools");
        // After each group's module link, the group's tools.
        let mut listed: Vec<String> = doc[1..]
            .iter()
            .map(|l| l.split_once("]:").map_or(*l, |(_, tools)| tools))
            .flat_map(|l| l.split('`').skip(1).step_by(2))
            .map(str::to_owned)
            .collect();
        listed.sort();
        let mut tools: Vec<String> = McpTools::router()
            .list_all()
            .into_iter()
            .map(|t| t.name.into_owned())
            .collect();
        tools.sort();
        assert_eq!(listed, tools);
        assert_eq!(count, tools.len());
    }
}
