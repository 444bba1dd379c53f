//! The Delivery service: results (build, serve, and the loop that stores
//! each completed request's result and deletes expired ones), the delivered
//! EPUB with its validation and repair loop (`epub_result`, `epub_check`),
//! webhooks (outbox, signed calls with retries, administrator settings),
//! mail (SMTP settings, outbox, sender with retries), and publication to
//! the library folder (settings, outbox, atomic writes).
pub mod epub_check;
pub mod epub_result;
pub mod error;
pub mod export_settings;
pub mod freshness;
pub mod issues;
pub mod library;
pub mod mail;
pub mod reader_notes;
pub mod results;
pub mod results_loop;
pub mod service;
pub mod stored;
pub mod webhooks;

pub use error::DeliveryError;
pub use results_loop::ResultsLoop;
pub use service::DeliveryService;
pub use stored::ResultStore;

use dragoman_model::coordination::Coordination;
use dragoman_model::vocab::Channel;

/// What the request's status document shows changed (its stored result, a
/// webhook call's outcome): status documents kept by gateways are dropped.
/// A lost notify only leaves one kept for its short lifetime, so an error
/// is logged, not returned.
pub(crate) async fn request_changed(coordination: &dyn Coordination, request_id: &str) {
    if let Err(e) = coordination.notify(&Channel::request(request_id)).await {
        tracing::warn!(request = %request_id, error = %e, "coordination notify failed");
    }
}
