//! Tools on books and their chapters: reading, configuring, shelving and
//! deleting.

use super::McpTools;
use rmcp::tool_router;

#[tool_router(router = book_tools, vis = "pub(super)", allow_empty)]
impl McpTools {}
