//! The Delivery service: results (build, store, serve); EPUB validation and
//! webhooks arrive with their issues.
pub mod error;
pub mod results;
pub mod service;

pub use error::DeliveryError;
pub use service::DeliveryService;
