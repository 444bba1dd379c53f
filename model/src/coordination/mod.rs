//! Coordination: the short-lived shared state that lets several Dragoman processes
//! (or the tasks of one process) cooperate — the queue index, running counters,
//! leases that expire, and wake-ups for long polls.
//!
//! The SQL database stays the source of truth; everything behind this trait can be
//! rebuilt from it (the scheduler does so on start). That is why the notify/wait
//! primitive may wake a waiter spuriously but must never lose a wake-up for a waiter
//! that subscribed before the notify: callers subscribe, then read the database,
//! then wait.
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

    // ----- priority queue -------------------------------------------------------

    /// Adds `item` to `queue`. Higher `priority` pops first; among equal priorities
    /// the item pushed first pops first. Pushing an item that is already queued only
    /// changes its priority: it is not duplicated and keeps its original arrival
    /// order, so re-prioritising never sends a long-waiting item to the back.
    async fn queue_push(&self, queue: &str, item: &str, priority: i64) -> CoordResult<()>;

    /// Removes and returns the next item, or `None` when the queue is empty. Atomic:
    /// concurrent poppers never receive the same item.
    async fn queue_pop(&self, queue: &str) -> CoordResult<Option<String>>;

    /// Removes `item` from `queue`; `true` if it was there.
    async fn queue_remove(&self, queue: &str, item: &str) -> CoordResult<bool>;

    /// Number of items in `queue`.
    async fn queue_len(&self, queue: &str) -> CoordResult<u64>;

    /// Up to `n` items in the order they would pop, without removing them.
    async fn queue_peek(&self, queue: &str, n: usize) -> CoordResult<Vec<String>>;

    // ----- counters -------------------------------------------------------------

    /// Adds `delta` (may be negative) and returns the new value; an absent counter
    /// starts at 0. Overflowing `i64` is an error and leaves the counter unchanged.
    async fn counter_add(&self, key: &str, delta: i64) -> CoordResult<i64>;

    /// Current value, 0 when absent.
    async fn counter_get(&self, key: &str) -> CoordResult<i64>;

    /// Overwrites the value (used when rebuilding state from the database).
    async fn counter_set(&self, key: &str, value: i64) -> CoordResult<()>;

    // ----- leases ---------------------------------------------------------------

    /// Takes the lease `key` for `holder` for `ttl`. Succeeds when the lease is free,
    /// expired, or already held by `holder` (then it is renewed to `ttl`).
    /// A zero `ttl` is an error.
    async fn lease_acquire(&self, key: &str, holder: &str, ttl: Duration) -> CoordResult<bool>;

    /// Extends the lease to `ttl` from now if `holder` still holds it; `false` when it
    /// expired or another holder has it (the caller has lost the lease and must stop).
    async fn lease_renew(&self, key: &str, holder: &str, ttl: Duration) -> CoordResult<bool>;

    /// Gives the lease up; only its current holder can. `true` if it was released.
    async fn lease_release(&self, key: &str, holder: &str) -> CoordResult<bool>;

    /// The current, unexpired holder of `key`.
    async fn lease_holder(&self, key: &str) -> CoordResult<Option<String>>;

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
