//! The Pipeline service: the providers an administrator configures, the
//! provider clients, the batch translation ladder, the analysis and review
//! passes, the worker loop that runs jobs, and usage and cost.
pub mod analysis;
pub mod batch_mode;
pub mod call_metrics;
pub mod error;
pub mod llm;
pub mod notes;
pub mod person_edit;
pub mod providers;
pub mod quality;
pub mod review;
pub mod service;
pub mod titles;
pub mod translate;
pub mod worker;

pub use error::PipelineError;
pub use service::PipelineService;
