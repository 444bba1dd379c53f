//! Identity at the edge: API tokens for `/api/v1` and `/mcp`, session cookies
//! for the `/api` session routes, and never one for the other; and the
//! per-token rate limit of the token routes; the licence's plan, which
//! opens them at all.
pub mod bearer;
pub mod licence;
pub mod password;
pub mod rate_limit;
pub mod second_factor;
pub mod session;
pub mod sign_in;
pub mod token_format;
