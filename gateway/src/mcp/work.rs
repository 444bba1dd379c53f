//! Tools on work: starting, listing and controlling jobs, exporting a
//! book, estimates, the providers and the licence.

use super::McpTools;
use super::answer::answer;
use super::arguments::Parameters;
use super::page::Page;
use crate::operations;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, tool, tool_router};

#[tool_router(router = work_tools, vis = "pub(super)")]
impl McpTools {
    #[tool(description = "List the translation providers of this installation (name order).")]
    async fn list_providers(
        &self,
        Parameters(page): Parameters<Page>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let caller = self.caller(&context)?;
        Ok(answer(
            async { page?.cut(operations::providers::list(&self.state, &caller).await?) }.await,
        ))
    }
}
