//! The Scheduler service: intake and admission, request lifecycle, the fair
//! queue, leases, quotas and budgets, series and volumes.
pub mod analysis;
pub mod chapters;
pub mod deleted_requests;
pub mod document;
pub mod error;
pub mod intake;
pub mod library;
pub mod licence;
pub mod lifecycle;
pub mod passage_counts;
pub mod queue_metrics;
pub mod report;
pub mod series;
pub mod service;
pub use dragoman_model::steps;

#[cfg(test)]
mod testing;

pub use error::SchedulerError;
pub use intake::IntakeLimits;
pub use service::SchedulerService;
