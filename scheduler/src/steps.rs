//! The `step` texts of a request (spec 2.2): free text telling a person what
//! the request is doing inside its stage. Kept in one place so the status
//! document reads the same whichever path set it.

/// Accepted, waiting for its volume's turn in the series.
pub const WAITING: &str = "waiting";
/// Has its job; no worker has leased it yet.
pub const WAITING_FOR_WORKER: &str = "waiting for a worker";
/// A worker holds the job and analyses the book before translating it.
pub const ANALYSING: &str = "analysing";
/// A worker holds the job.
pub const TRANSLATING: &str = "translating";
/// Paused by its owner.
pub const PAUSED: &str = "paused";
/// The review pass reads the translated passages again.
pub const REVIEWING: &str = "reviewing";
/// The autopilot translates again the passages that still fall short; the
/// step names its round (see [`autopilot`]).
pub const AUTOPILOT: &str = "autopilot round";

/// The step of the autopilot in `round`: "autopilot round 2".
pub fn autopilot(round: i32) -> String {
    format!("{AUTOPILOT} {round}")
}
