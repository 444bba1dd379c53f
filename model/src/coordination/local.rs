//! In-process coordination backend for the single-process mode.
//!
//! A lease map behind a mutex: every operation is a short critical section with no
//! `.await` inside, so a std `Mutex` is the right tool and atomicity (compare-and-take
//! and compare-and-release of a lease) comes from holding the lock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::fanout::{NotifyHub, Subscription};
use super::{CoordResult, Coordination, lease_ttl_ms};
use crate::error::ModelError;
use crate::vocab::Channel;

/// Expired leases are only noticed when touched; once the map reaches this many
/// entries (and then each time it doubles) the expired ones are swept, so lease keys
/// that are never touched again (slots of a provider since removed or given less
/// capacity) do not pile up.
const LEASE_SWEEP_MIN: usize = 1024;

/// Coordination inside one process. Cheap to create; share it as
/// `Arc<dyn Coordination>`.
pub struct LocalCoordination {
    leases: Mutex<Leases>,
    hub: Arc<NotifyHub>,
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
        }
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
}
