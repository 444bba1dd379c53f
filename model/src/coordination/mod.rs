//! Coordination: the short-lived shared state that lets several Dragoman processes
//! (or the tasks of one process) cooperate.
//!
//! What it carries today:
//! * wake-ups for waiters — `jobs` when work becomes available, `request:<id>` when a
//!   request changes, `webhooks` when a webhook call is queued — so long polls and idle
//!   workers react at once instead of polling;
//! * provider capacity slots, as expiring leases: a worker holds a slot while it calls
//!   a provider, and a slot whose holder died frees itself when its lease expires.
//!
//! Rate-limit windows and budget/quota reservations will join it as they arrive.
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

mod fanout;
mod local;
mod redis_backend;
#[cfg(test)]
mod suite;

use std::time::Duration;

use async_trait::async_trait;

use crate::error::ModelError;
use crate::vocab::Channel;

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
    fn lease_ttl_rounds_and_caps() {
        assert!(lease_ttl_ms(Duration::ZERO).is_err());
        assert!(lease_ttl_ms(Duration::from_micros(999)).is_err());
        assert_eq!(lease_ttl_ms(Duration::from_millis(300)).ok(), Some(300));
        assert_eq!(lease_ttl_ms(Duration::MAX).ok(), Some(MAX_LEASE_TTL_MS));
    }
}
