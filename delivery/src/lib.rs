//! The Delivery service: results (build, store, serve), EPUB validation and
//! webhooks. This part: the role and its health, which proves the
//! blob store it writes results to works.
pub mod service;

pub use service::DeliveryService;
