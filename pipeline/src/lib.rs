//! The Pipeline service: workers, providers, usage and cost. This issue's
//! part: the providers an administrator configures.
pub mod error;
pub mod providers;
pub mod service;

pub use error::PipelineError;
pub use service::PipelineService;
