//! The Scheduler service: intake and admission, request lifecycle, the fair
//! queue, leases, quotas and budgets. This part: series listings.
pub mod error;
pub mod reading_order;
pub mod series;
pub mod service;

pub use error::SchedulerError;
pub use service::SchedulerService;
