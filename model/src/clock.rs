//! Wall-clock helpers: stored times are Unix seconds (`i64`), except the
//! webhook retry schedule, in milliseconds.

use std::time::{SystemTime, UNIX_EPOCH};

/// Returns the current time as Unix seconds.
///
/// A system clock set before 1970 yields `0` rather than failing.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Returns the current time as Unix milliseconds (webhook retry schedules).
pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn now_is_after_2024() {
        assert!(super::now() > 1_700_000_000);
    }
}
