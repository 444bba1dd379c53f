//! The Delivery service: results (build, serve, and the loop that stores
//! each completed request's result and deletes expired ones) and webhooks
//! (outbox, signed calls with retries, administrator settings), and the
//! EPUB validation and repair loop of the delivered book (`epub_check`).
pub mod epub_check;
pub mod error;
pub mod results;
pub mod results_loop;
pub mod service;
pub mod stored;
pub mod webhooks;

pub use error::DeliveryError;
pub use results_loop::ResultsLoop;
pub use service::DeliveryService;
pub use stored::ResultStore;
