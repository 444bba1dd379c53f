//! The Delivery service: results (build, store, serve) and webhooks
//! (outbox, signed calls with retries, administrator settings); EPUB
//! validation arrives with its issue.
pub mod error;
pub mod results;
pub mod service;
pub mod stored;
pub mod webhooks;

pub use error::DeliveryError;
pub use service::DeliveryService;
pub use stored::ResultStore;
