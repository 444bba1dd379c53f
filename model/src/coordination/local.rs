//! In-process coordination backend for the single-process mode.
//!
//! A lease map behind a mutex: every operation is a short critical section with no
//! `.await` inside, so a std `Mutex` is the right tool and atomicity (compare-and-take
//! and compare-and-release of a lease) comes from holding the lock. Reservations are
//! kept the same way.
//!
//! Rate limits use `governor`'s keyed GCRA, one limiter per distinct limit (a
//! limiter's quota is fixed when it is made). Its "all or nothing" check of `n`
//! cells matches the Redis script cell for cell: same emission interval, same burst.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tokio::time::Instant;

use super::fanout::{NotifyHub, Subscription};
use super::{
    CoordResult, Coordination, OVERSIZED_RETRY_AFTER, RateDecision, check_rate, check_reservation,
    fits, lease_ttl_ms,
};
use crate::error::ModelError;
use crate::vocab::Channel;

/// Expired leases are only noticed when touched; once the map reaches this many
/// entries (and then each time it doubles) the expired ones are swept, so lease keys
/// that are never touched again (slots of a provider since removed or given less
/// capacity) do not pile up.
const LEASE_SWEEP_MIN: usize = 1024;

/// The same for the keys of a rate limiter: past this many (then each time they
/// double), keys whose bucket has refilled, and so are indistinguishable from a
/// fresh key, are dropped.
const RATE_SWEEP_MIN: usize = 1024;

/// Coordination inside one process. Cheap to create; share it as
/// `Arc<dyn Coordination>`.
pub struct LocalCoordination {
    leases: Mutex<Leases>,
    hub: Arc<NotifyHub>,
    limiters: Mutex<HashMap<u32, Limiter>>,
    /// Pool → id → reservation. Pools are few (one per budget or quota holder),
    /// so an abandoned pool's expired entries are dropped only when it is touched.
    pools: Mutex<HashMap<String, HashMap<String, Reservation>>>,
}

struct Limiter {
    gcra: Arc<DefaultKeyedRateLimiter<String>>,
    sweep_at: usize,
}

struct Reservation {
    amount: f64,
    expires: Instant,
}

/// Drops the expired reservations of `pool`.
fn purge(pool: &mut HashMap<String, Reservation>, now: Instant) {
    pool.retain(|_, r| now < r.expires);
}

struct Lease {
    holder: String,
    expires: Instant,
}

impl Lease {
    fn live_holder(&self, now: Instant) -> Option<&str> {
        (now < self.expires).then_some(self.holder.as_str())
    }
}

struct Leases {
    map: HashMap<String, Lease>,
    sweep_at: usize,
}

/// See `NotifyHub::lock`: the critical sections keep the map consistent, so a
/// poisoned lock is still safe to use.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn expiry(now: Instant, ttl: Duration) -> CoordResult<Instant> {
    let ms = lease_ttl_ms(ttl)?;
    now.checked_add(Duration::from_millis(ms))
        .ok_or_else(|| ModelError::Coordination("lease ttl too long".to_owned()))
}

impl LocalCoordination {
    pub fn new() -> Self {
        Self {
            leases: Mutex::new(Leases {
                map: HashMap::new(),
                sweep_at: LEASE_SWEEP_MIN,
            }),
            hub: NotifyHub::new(),
            limiters: Mutex::new(HashMap::new()),
            pools: Mutex::new(HashMap::new()),
        }
    }

    /// The limiter of `per_minute` (not zero), made on first use.
    fn limiter(&self, per_minute: NonZeroU32) -> Arc<DefaultKeyedRateLimiter<String>> {
        let mut limiters = lock(&self.limiters);
        let limiter = limiters.entry(per_minute.get()).or_insert_with(|| Limiter {
            gcra: Arc::new(RateLimiter::keyed(Quota::per_minute(per_minute))),
            sweep_at: RATE_SWEEP_MIN,
        });
        if limiter.gcra.len() >= limiter.sweep_at {
            limiter.gcra.retain_recent();
            limiter.gcra.shrink_to_fit();
            limiter.sweep_at = (limiter.gcra.len() * 2).max(RATE_SWEEP_MIN);
        }
        Arc::clone(&limiter.gcra)
    }
}

impl Default for LocalCoordination {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Coordination for LocalCoordination {
    fn backend_name(&self) -> &'static str {
        "local"
    }

    async fn ping(&self) -> CoordResult<()> {
        Ok(())
    }

    async fn lease_acquire(&self, key: &str, holder: &str, ttl: Duration) -> CoordResult<bool> {
        let now = Instant::now();
        let expires = expiry(now, ttl)?;
        let mut leases = lock(&self.leases);
        if let Some(current) = leases.map.get(key).and_then(|l| l.live_holder(now))
            && current != holder
        {
            return Ok(false);
        }
        leases.map.insert(
            key.to_owned(),
            Lease {
                holder: holder.to_owned(),
                expires,
            },
        );
        if leases.map.len() >= leases.sweep_at {
            leases.map.retain(|_, l| now < l.expires);
            leases.sweep_at = (leases.map.len() * 2).max(LEASE_SWEEP_MIN);
        }
        Ok(true)
    }

    async fn lease_release(&self, key: &str, holder: &str) -> CoordResult<bool> {
        let now = Instant::now();
        let mut leases = lock(&self.leases);
        match leases.map.get(key) {
            Some(lease) if lease.live_holder(now) == Some(holder) => {
                leases.map.remove(key);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn notify(&self, channel: &Channel) -> CoordResult<()> {
        let channel = channel.name();
        let channel = channel.as_str();
        self.hub.notify(channel);
        Ok(())
    }

    fn subscribe(&self, channel: &Channel) -> Subscription {
        let channel = channel.name();
        let channel = channel.as_str();
        self.hub.subscribe(channel)
    }

    async fn rate_admit(&self, key: &str, per_minute: u32, cost: u32) -> CoordResult<RateDecision> {
        let (per_minute, cost) = check_rate(per_minute, cost)?;
        // Checked before `governor` sees it: its weight arithmetic overflows for a
        // cost far beyond the burst.
        if cost > per_minute {
            return Ok(RateDecision::Refused {
                retry_after: OVERSIZED_RETRY_AFTER,
            });
        }
        let limiter = self.limiter(per_minute);
        match limiter.check_key_n(&key.to_owned(), cost) {
            Ok(Ok(())) => Ok(RateDecision::Admitted),
            Ok(Err(not_until)) => Ok(RateDecision::Refused {
                retry_after: not_until.wait_time_from(limiter.clock().now()),
            }),
            // More than the burst (ruled out above): no wait would make it fit.
            Err(_insufficient) => Ok(RateDecision::Refused {
                retry_after: OVERSIZED_RETRY_AFTER,
            }),
        }
    }

    async fn reserve(
        &self,
        pool: &str,
        id: &str,
        amount: f64,
        room: f64,
        ttl: Duration,
    ) -> CoordResult<bool> {
        let ttl_ms = check_reservation(amount, room, ttl)?;
        let now = Instant::now();
        let expires = expiry(now, Duration::from_millis(ttl_ms))?;
        let mut pools = lock(&self.pools);
        let entries = pools.entry(pool.to_owned()).or_default();
        purge(entries, now);
        let others: f64 = entries
            .iter()
            .filter(|(other, _)| other.as_str() != id)
            .map(|(_, r)| r.amount)
            .sum();
        if !fits(others, amount, room) {
            if entries.is_empty() {
                pools.remove(pool);
            }
            return Ok(false);
        }
        entries.insert(id.to_owned(), Reservation { amount, expires });
        Ok(true)
    }

    async fn release(&self, pool: &str, id: &str) -> CoordResult<()> {
        let now = Instant::now();
        let mut pools = lock(&self.pools);
        if let Some(entries) = pools.get_mut(pool) {
            entries.remove(id);
            purge(entries, now);
            if entries.is_empty() {
                pools.remove(pool);
            }
        }
        Ok(())
    }

    async fn reserved(&self, pool: &str) -> CoordResult<f64> {
        let now = Instant::now();
        let pools = lock(&self.pools);
        Ok(pools.get(pool).map_or(0.0, |entries| {
            entries
                .values()
                .filter(|r| now < r.expires)
                .map(|r| r.amount)
                .sum()
        }))
    }
}
