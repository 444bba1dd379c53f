//! Coordination: the short-lived shared state that lets several Dragoman processes
//! (or the tasks of one process) cooperate.
//!
//! What it carries today:
//! * wake-ups for waiters — `jobs` when work becomes available, `request:<id>` when a
//!   request changes, `webhooks` when a webhook call is queued — so long polls and idle
//!   workers react at once instead of polling;
//! * provider capacity slots, as expiring leases: a worker holds a slot while it calls
//!   a provider, and a slot whose holder died frees itself when its lease expires;
//! * rate limits ([`Coordination::rate_admit`]): a GCRA per key, so every gateway
//!   process of an installation counts a token's calls against one limit;
//! * reservations in pools with room ([`Coordination::reserve`]): what calls in flight
//!   hold against a budget or quota, each expiring on its own so a crashed holder's
//!   share frees itself.
//!
//! [`NotifiedCache`] keeps values read from the database until their channel is
//! notified (status documents, authenticated tokens, the licence in force).
//!
//! The job queue itself is not here: it is the `jobs` table, leased by conditional
//! update.
//!
//! The SQL database stays the source of truth; nothing behind this trait is the only
//! copy of anything. That is why the notify/wait primitive may wake a waiter
//! spuriously but must never lose a wake-up for a waiter that subscribed before the
//! notify: callers subscribe, then read the database, then wait.
//!
//! One object-safe trait, [`Coordination`], held as `Arc<dyn Coordination>`, and two
//! backends: [`LocalCoordination`] (in-process, single-process mode) and
//! [`RedisCoordination`] (Redis, cluster mode). Both pass the same test suite
//! (`suite.rs`), so they can be swapped without behaviour changes.

mod cache;
mod fanout;
mod local;
mod redis_backend;
#[cfg(test)]
mod suite;

use std::num::NonZeroU32;
use std::time::Duration;

use async_trait::async_trait;

use crate::error::ModelError;
use crate::vocab::Channel;

pub use cache::NotifiedCache;
pub use fanout::Subscription;
pub use local::LocalCoordination;
pub use redis_backend::{DEFAULT_NAMESPACE, RedisCoordination};

/// Result type of every coordination operation.
pub type CoordResult<T> = Result<T, ModelError>;

/// Shared coordination state, local or distributed.
///
/// Every method is safe to call concurrently from many tasks and, for distributed
/// backends, from many processes; each operation is atomic on its own.
#[async_trait]
pub trait Coordination: Send + Sync {
    /// Which backend this is: `"local"` or `"redis"`.
    fn backend_name(&self) -> &'static str;

    /// Checks that the backend answers (a round trip for Redis).
    async fn ping(&self) -> CoordResult<()>;

    // ----- leases ---------------------------------------------------------------

    /// Takes the lease `key` for `holder` for `ttl`. Succeeds when the lease is free,
    /// expired, or already held by `holder` (then it is renewed to `ttl`).
    /// A zero `ttl` is an error.
    async fn lease_acquire(&self, key: &str, holder: &str, ttl: Duration) -> CoordResult<bool>;

    /// Gives the lease up; only its current holder can. `true` if it was released.
    async fn lease_release(&self, key: &str, holder: &str) -> CoordResult<bool>;

    // ----- notify / wait --------------------------------------------------------

    /// Wakes every [`Subscription`] on `channel` that exists now, in every process
    /// sharing this backend. A notify with no subscriber is not remembered.
    async fn notify(&self, channel: &Channel) -> CoordResult<()>;

    /// Starts listening on `channel`. The subscription sees every notify issued after
    /// this call returns; subscribe before reading the state you wait on.
    fn subscribe(&self, channel: &Channel) -> Subscription;

    // ----- rate limits ----------------------------------------------------------

    /// Admits `cost` calls (cost >= 1) under a limit of `per_minute` calls per minute
    /// for `key`, all or nothing (a batch is admitted or refused whole); a GCRA
    /// (generic cell rate algorithm): emission interval = 60s / per_minute, burst =
    /// per_minute (a fresh key may take a whole minute's worth at once). Refused: how
    /// long until `cost` calls would be admitted.
    ///
    /// A key has one bucket per limit: the same key checked under another
    /// `per_minute` is counted apart.
    ///
    /// A `cost` above `per_minute` can never be admitted: it is refused with a
    /// `retry_after` of one minute (see [`OVERSIZED_RETRY_AFTER`]) and consumes
    /// nothing. A zero `per_minute` or `cost` is an error.
    async fn rate_admit(&self, key: &str, per_minute: u32, cost: u32) -> CoordResult<RateDecision>;

    // ----- reservations ---------------------------------------------------------

    /// Reserves `amount` (>= 0) in `pool` under `id` for `ttl` when the pool's live
    /// reservations plus `amount` stay within `room`; true when reserved. Reserving
    /// again under the same id replaces that reservation's amount (its own old amount
    /// does not count against it); a refused replacement leaves the old one as it was.
    /// Expired reservations (holder died) stop counting, so nothing drifts after a
    /// crash.
    ///
    /// Sums are compared with a tolerance of [`ROOM_TOLERANCE`] (relative), so that
    /// amounts which add up to `room` exactly on paper are not refused for a rounding
    /// error. A negative or non-finite `amount`, a non-finite `room` or a zero `ttl`
    /// is an error.
    async fn reserve(
        &self,
        pool: &str,
        id: &str,
        amount: f64,
        room: f64,
        ttl: Duration,
    ) -> CoordResult<bool>;

    /// Drops a reservation (no error when absent).
    async fn release(&self, pool: &str, id: &str) -> CoordResult<()>;

    /// Sum of the pool's live reservations.
    async fn reserved(&self, pool: &str) -> CoordResult<f64>;
}

/// The answer of a rate-limit check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateDecision {
    Admitted,
    Refused { retry_after: Duration },
}

/// What a batch larger than a whole minute's allowance is told to wait: it never
/// fits, so no wait is exact; one minute is the window the limit is stated in, and
/// a caller that splits its batch meanwhile is admitted at once.
pub const OVERSIZED_RETRY_AFTER: Duration = Duration::from_secs(60);

/// Relative slack of the room check of [`Coordination::reserve`]: far below any
/// amount worth reserving, far above the rounding of a sum of doubles (whose order
/// differs between backends).
pub const ROOM_TOLERANCE: f64 = 1e-9;

/// Checks the arguments of [`Coordination::rate_admit`]: both at least 1.
fn check_rate(per_minute: u32, cost: u32) -> CoordResult<(NonZeroU32, NonZeroU32)> {
    match (NonZeroU32::new(per_minute), NonZeroU32::new(cost)) {
        (Some(per_minute), Some(cost)) => Ok((per_minute, cost)),
        _ => Err(ModelError::Coordination(
            "rate limit and cost must be at least 1".to_owned(),
        )),
    }
}

/// Checks the arguments of [`Coordination::reserve`] and converts its TTL like a
/// lease's.
fn check_reservation(amount: f64, room: f64, ttl: Duration) -> CoordResult<u64> {
    if !amount.is_finite() || amount < 0.0 || !room.is_finite() {
        return Err(ModelError::Coordination(
            "a reservation needs a finite amount >= 0 and a finite room".to_owned(),
        ));
    }
    lease_ttl_ms(ttl)
}

/// How far past `room` a sum may go and still fit ([`ROOM_TOLERANCE`]); both
/// backends use this one figure so they agree at the boundary.
fn room_slack(room: f64) -> f64 {
    ROOM_TOLERANCE * room.abs().max(1.0)
}

/// Whether `others + amount` fits in `room`.
fn fits(others: f64, amount: f64, room: f64) -> bool {
    others + amount <= room + room_slack(room)
}

/// Leases longer than this are capped: a century is "forever" for a lease, and the
/// cap keeps Redis' millisecond expiry arithmetic far from overflow.
const MAX_LEASE_TTL_MS: u64 = 100 * 365 * 24 * 60 * 60 * 1000;

/// Validates a lease TTL and converts it to whole milliseconds (at least 1), the
/// unit both backends work in, so they round the same way.
fn lease_ttl_ms(ttl: Duration) -> CoordResult<u64> {
    let ms = ttl.as_millis();
    if ms == 0 {
        return Err(ModelError::Coordination(
            "lease ttl must be at least one millisecond".to_owned(),
        ));
    }
    Ok(u64::try_from(ms).map_or(MAX_LEASE_TTL_MS, |ms| ms.min(MAX_LEASE_TTL_MS)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservation_arguments_are_checked() {
        let ttl = Duration::from_secs(1);
        assert_eq!(check_reservation(0.0, 0.0, ttl).ok(), Some(1000));
        assert!(check_reservation(-0.5, 1.0, ttl).is_err());
        assert!(check_reservation(f64::NAN, 1.0, ttl).is_err());
        assert!(check_reservation(1.0, f64::INFINITY, ttl).is_err());
        assert!(check_reservation(1.0, 1.0, Duration::ZERO).is_err());
        assert!(check_rate(0, 1).is_err());
        assert!(check_rate(1, 0).is_err());
        assert!(check_rate(1, 1).is_ok());
    }

    #[test]
    fn room_tolerates_rounding_only() {
        assert!(fits(0.1 + 0.2, 0.0, 0.3));
        assert!(fits(0.0, 0.0, 0.0));
        assert!(!fits(0.0, 0.001, 0.0));
        assert!(!fits(99.0, 1.001, 100.0));
        assert!(fits(99.0, 1.0, 100.0));
    }

    #[test]
    fn lease_ttl_rounds_and_caps() {
        assert!(lease_ttl_ms(Duration::ZERO).is_err());
        assert!(lease_ttl_ms(Duration::from_micros(999)).is_err());
        assert_eq!(lease_ttl_ms(Duration::from_millis(300)).ok(), Some(300));
        assert_eq!(lease_ttl_ms(Duration::MAX).ok(), Some(MAX_LEASE_TTL_MS));
    }
}
