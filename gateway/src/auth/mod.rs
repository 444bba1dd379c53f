//! Identity at the edge: API tokens for `/api/v1` and `/mcp`, session cookies
//! for the `/api` session routes, and never one for the other.
pub mod bearer;
pub mod password;
pub mod session;
pub mod token_format;
