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

/// A job whose calls wait for the provider's batch to be answered; the
/// stage stays the one the calls are for.
pub const WAITING_FOR_BATCH: &str = "waiting for the provider's batch";

/// The start of the step of a job waiting for its provider to answer again.
pub const WAITING_FOR_PROVIDER: &str = "waiting for the provider";

/// The step of a job whose provider has not answered since `since` (Unix
/// seconds): "waiting for the provider deepl: unreachable since
/// 2026-11-28 12:00:00 UTC".
pub fn waiting_for_provider(provider: &str, since: i64) -> String {
    let when = time::OffsetDateTime::from_unix_timestamp(since)
        .map(|t| {
            format!(
                "{} {:02}:{:02}:{:02} UTC",
                t.date(),
                t.hour(),
                t.minute(),
                t.second()
            )
        })
        .unwrap_or_else(|_| since.to_string());
    format!("{WAITING_FOR_PROVIDER} {provider}: unreachable since {when}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_provider_step_names_the_provider_and_when_it_stopped_answering() {
        assert_eq!(
            super::waiting_for_provider("deepl", 1_795_867_200),
            "waiting for the provider deepl: unreachable since 2026-11-28 12:00:00 UTC"
        );
    }
}
