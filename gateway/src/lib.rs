//! The gateway: the axum edge that authenticates callers, checks the shape
//! of what they send, turns REST and tool-protocol calls into calls of the
//! internal services through one operations layer, and answers every error
//! in the spec's envelope.
pub mod auth;
pub mod console;
pub mod envelope;
pub mod error;
pub mod extract;
pub mod grpc;
pub mod http_trace;
pub mod identity;
pub mod mcp;
pub mod messages;
pub mod metrics;
pub mod onboarding;
pub mod openapi;
pub mod operations;
pub mod outage;
pub mod routes;
pub mod state;
pub mod uploads;
pub mod validate;

pub use error::{ApiError, ApiResult};
pub use routes::router;
pub use state::{AppState, Gateway, GatewaySettings, ReadCaches, Service};
