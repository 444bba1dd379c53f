//! A request's life after intake (spec 2.7, 3): its job is created at once
//! or when its series is free ([`series_queue`]), leased by workers with
//! expiring leases in the queue's order and within its running limits
//! ([`lease`], [`queue`]; waiting quotas in [`waiting`]), paused, resumed
//! or cancelled by its owner ([`control`]), and ended with its final
//! status, report and final webhook in one transaction ([`ending`]). A series' owner acts on all
//! its volumes at once, and suspends the series ([`series_control`]).

pub mod budget_pause;
pub mod budget_stall;
pub mod control;
pub mod ending;
pub mod job_start;
pub mod lease;
pub mod queue;
pub mod series_control;
pub mod series_queue;
pub mod waiting;

pub use budget_pause::{pause_for_budget, switch_provider};
pub use control::control;
pub use ending::{JobEnd, finish, finish_report};
pub use lease::{
    Dispatcher, Leased, extend_after_outage, fail_abandoned, heartbeat, lease, release,
};
pub use series_control::{SeriesControlled, SeriesReport, VolumeReport, control_series};
pub use series_queue::{create_job, promote_next, series_busy, series_suspended};

#[cfg(test)]
mod dispatch_tests;
#[cfg(test)]
mod job_start_tests;
#[cfg(test)]
mod tests;
