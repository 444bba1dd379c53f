//! A request's life after intake (spec 2.7, 3): its job is created at once
//! or when its series is free ([`series_queue`]), leased by workers with
//! expiring leases ([`lease`]), paused, resumed or cancelled by its owner
//! ([`control`]), and ended with its final status, report and final
//! webhook in one transaction ([`ending`]). A series' owner acts on all
//! its volumes at once, and suspends the series ([`series_control`]).

pub mod control;
pub mod ending;
pub mod lease;
pub mod series_control;
pub mod series_queue;

pub use control::control;
pub use ending::{JobEnd, finish, finish_report};
pub use lease::{fail_abandoned, heartbeat, lease};
pub use series_control::{SeriesControlled, SeriesReport, VolumeReport, control_series};
pub use series_queue::{create_job, promote_next, series_busy, series_suspended};

#[cfg(test)]
mod tests;
