//! The tool-protocol endpoint `POST /mcp` (spec 4.10): stateless streamable
//! HTTP, opened by the same bearer tokens as `/api/v1` (the bearer middleware
//! runs first, so a session cookie never opens it). Each tool checks the
//! scope of spec 5 (reading tools need `library:read`); a missing scope, bad
//! arguments or an absent object give an `isError` answer.
//!
//! This tools are the reads the services answer today: series and
//! providers. The spec's other tools arrive with the issues that build what
//! they act on.

use crate::auth::bearer::TokenCaller;
use crate::routes::providers::provider_json;
use crate::routes::series::{series_detail_json, summary_json};
use crate::state::AppState;
use dragoman_model::scopes::Scope;
use dragoman_proto::v1::{GetSeriesRequest, ListProvidersRequest, ListSeriesRequest};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// Largest page a listing tool returns (spec 4.10).
const MAX_LIMIT: u32 = 200;

#[derive(Clone)]
pub struct McpTools {
    state: AppState,
    tool_router: ToolRouter<Self>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Page {
    /// 1 to 200, default 50.
    #[serde(default)]
    limit: Option<i64>,
    /// From 0; beyond the end gives an empty page.
    #[serde(default)]
    offset: Option<i64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SeriesRef {
    /// Id of one of your series.
    series_id: String,
}

fn refusal(code: &str, message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(
        json!({"code": code, "message": message}).to_string(),
    )])
}

fn answer(value: Value) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(value.to_string())])
}

/// Cuts a list to the page asked for, stating the total.
fn paginate(items: Vec<Value>, page: &Page) -> Result<Value, CallToolResult> {
    let limit = page.limit.unwrap_or(50);
    let offset = page.offset.unwrap_or(0);
    if !(1..=i64::from(MAX_LIMIT)).contains(&limit) {
        return Err(refusal(
            "invalid_request",
            "limit must be an integer from 1 to 200",
        ));
    }
    if offset < 0 {
        return Err(refusal(
            "invalid_request",
            "offset must be a non-negative integer",
        ));
    }
    let total = items.len();
    let page: Vec<Value> = items
        .into_iter()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(usize::try_from(limit).unwrap_or(0))
        .collect();
    Ok(json!({"items": page, "total": total, "limit": limit, "offset": offset}))
}

impl McpTools {
    fn caller(&self, context: &RequestContext<RoleServer>) -> Result<TokenCaller, ErrorData> {
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<TokenCaller>())
            .cloned()
            .ok_or_else(|| ErrorData::internal_error("no authenticated caller", None))
    }

    /// The caller when it holds `scope`, else the isError answer to give.
    fn authorize(
        &self,
        context: &RequestContext<RoleServer>,
        scope: Scope,
    ) -> Result<Result<TokenCaller, CallToolResult>, ErrorData> {
        let caller = self.caller(context)?;
        Ok(match caller.require(scope) {
            Ok(()) => Ok(caller),
            Err(_) => Err(refusal(
                "insufficient_scope",
                &format!("this tool needs the scope {scope}"),
            )),
        })
    }
}

#[tool_router]
impl McpTools {
    pub fn new(state: AppState) -> Self {
        Self {
            state,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "List your series (name order), paginated with the total stated.")]
    async fn list_series(
        &self,
        Parameters(page): Parameters<Page>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = match self.authorize(&context, Scope::LibraryRead)? {
            Ok(caller) => caller,
            Err(refused) => return Ok(refused),
        };
        let listed = self
            .state
            .scheduler
            .handle
            .list_series(self.state.call(&caller.principal(), ListSeriesRequest {}))
            .await;
        Ok(match listed {
            Ok(reply) => {
                let items = reply.into_inner().series.iter().map(summary_json).collect();
                paginate(items, &page)
                    .map(answer)
                    .unwrap_or_else(|refused| refused)
            }
            Err(status) => service_refusal(status),
        })
    }

    #[tool(description = "One of your series with its volumes in reading order.")]
    async fn get_series(
        &self,
        Parameters(args): Parameters<SeriesRef>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = match self.authorize(&context, Scope::LibraryRead)? {
            Ok(caller) => caller,
            Err(refused) => return Ok(refused),
        };
        let request = GetSeriesRequest {
            series_id: args.series_id,
        };
        let found = self
            .state
            .scheduler
            .handle
            .get_series(self.state.call(&caller.principal(), request))
            .await;
        Ok(match found {
            Ok(detail) => answer(series_detail_json(&detail.into_inner())),
            Err(status) => service_refusal(status),
        })
    }

    #[tool(description = "List the translation providers of this installation (name order).")]
    async fn list_providers(
        &self,
        Parameters(page): Parameters<Page>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = match self.authorize(&context, Scope::LibraryRead)? {
            Ok(caller) => caller,
            Err(refused) => return Ok(refused),
        };
        let listed = self
            .state
            .pipeline
            .handle
            .list_providers(
                self.state
                    .call(&caller.principal(), ListProvidersRequest {}),
            )
            .await;
        Ok(match listed {
            Ok(reply) => {
                let items = reply
                    .into_inner()
                    .providers
                    .iter()
                    .map(provider_json)
                    .collect();
                paginate(items, &page)
                    .map(answer)
                    .unwrap_or_else(|refused| refused)
            }
            Err(status) => service_refusal(status),
        })
    }
}

/// A service refusal keeps its spec code; an absent and an inaccessible
/// object give the same answer because the services never tell them apart.
fn service_refusal(status: tonic::Status) -> CallToolResult {
    let error = crate::error::ApiError::from(status);
    let message = crate::messages::message(error.code, crate::messages::Lang::En, None);
    refusal(error.code, &message)
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for McpTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("dragoman", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Dragoman: book translation library. Reading tools need library:read.",
            )
    }
}

/// The `/mcp` service: stateless, JSON answers, no session kept. Hosts are
/// not restricted here because callers authenticate with bearer tokens,
/// which a DNS-rebinding page cannot send.
pub fn service(state: AppState) -> StreamableHttpService<McpTools, NeverSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .disable_allowed_hosts();
    StreamableHttpService::new(
        move || Ok(McpTools::new(state.clone())),
        Arc::new(NeverSessionManager::default()),
        config,
    )
}
