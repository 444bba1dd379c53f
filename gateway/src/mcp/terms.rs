//! Tools on the terms of a book and its series: listing, adding, editing,
//! deleting, and carrying a new rendering into stored translations.

use super::McpTools;
use rmcp::tool_router;

#[tool_router(router = term_tools, vis = "pub(super)", allow_empty)]
impl McpTools {}
