//! Tools on series and their volumes: reading, creating, changing,
//! attaching books, deleting and whole-series job actions.

use super::McpTools;
use super::answer::answer;
use super::arguments::Parameters;
use super::page::Page;
use crate::operations;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, schemars, tool, tool_router};
use serde::Deserialize;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SeriesRef {
    /// Id of one of your series.
    series_id: String,
}

#[tool_router(router = series_tools, vis = "pub(super)")]
impl McpTools {
    #[tool(description = "List your series (name order), paginated with the total stated.")]
    async fn list_series(
        &self,
        Parameters(page): Parameters<Page>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async { page?.cut(operations::series::list(&self.state, &caller).await?) }.await,
        ))
    }

    #[tool(description = "One of your series with its volumes in reading order.")]
    async fn get_series(
        &self,
        Parameters(args): Parameters<SeriesRef>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async { operations::series::detail(&self.state, &caller, args?.series_id).await }.await,
        ))
    }
}
