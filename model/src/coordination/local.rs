//! In-process coordination backend for the single-process mode.
//!
//! Plain maps behind mutexes: every operation is a short critical section with no
//! `.await` inside, so a std `Mutex` is the right tool and atomicity (one pop per
//! item, compare-and-renew for leases) comes from holding the lock.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
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
/// that are never touched again (finished jobs) do not pile up.
const LEASE_SWEEP_MIN: usize = 1024;

/// Coordination inside one process. Cheap to create; share it as
/// `Arc<dyn Coordination>`.
pub struct LocalCoordination {
    queues: Mutex<HashMap<String, LocalQueue>>,
    counters: Mutex<HashMap<String, i64>>,
    leases: Mutex<Leases>,
    hub: Arc<NotifyHub>,
}

/// One priority queue. `order` sorts by priority descending, then by arrival
/// sequence; `items` finds an item's key in `order` for updates and removals.
#[derive(Default)]
struct LocalQueue {
    order: BTreeMap<(Reverse<i64>, u64), String>,
    items: HashMap<String, (Reverse<i64>, u64)>,
    next_seq: u64,
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

/// See `NotifyHub::lock`: the critical sections keep the maps consistent, so a
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
            queues: Mutex::default(),
            counters: Mutex::default(),
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

    async fn queue_push(&self, queue: &str, item: &str, priority: i64) -> CoordResult<()> {
        let mut queues = lock(&self.queues);
        let q = queues.entry(queue.to_owned()).or_default();
        let seq = match q.items.get(item) {
            // Already queued: keep its place among equals, only move it to its new
            // priority (see the trait's contract).
            Some(&(old_priority, seq)) => {
                q.order.remove(&(old_priority, seq));
                seq
            }
            None => {
                let seq = q.next_seq;
                q.next_seq += 1;
                seq
            }
        };
        let key = (Reverse(priority), seq);
        q.order.insert(key, item.to_owned());
        q.items.insert(item.to_owned(), key);
        Ok(())
    }

    async fn queue_pop(&self, queue: &str) -> CoordResult<Option<String>> {
        let mut queues = lock(&self.queues);
        let Some(q) = queues.get_mut(queue) else {
            return Ok(None);
        };
        let popped = q.order.pop_first().map(|(_, item)| item);
        if let Some(item) = &popped {
            q.items.remove(item);
        }
        // Drop empty queues so transient queue names do not accumulate; restarting
        // the sequence at 0 is harmless because only relative order matters.
        if q.items.is_empty() {
            queues.remove(queue);
        }
        Ok(popped)
    }

    async fn queue_remove(&self, queue: &str, item: &str) -> CoordResult<bool> {
        let mut queues = lock(&self.queues);
        let Some(q) = queues.get_mut(queue) else {
            return Ok(false);
        };
        let removed = match q.items.remove(item) {
            Some(key) => {
                q.order.remove(&key);
                true
            }
            None => false,
        };
        if q.items.is_empty() {
            queues.remove(queue);
        }
        Ok(removed)
    }

    async fn queue_len(&self, queue: &str) -> CoordResult<u64> {
        let queues = lock(&self.queues);
        Ok(queues.get(queue).map_or(0, |q| q.items.len() as u64))
    }

    async fn queue_peek(&self, queue: &str, n: usize) -> CoordResult<Vec<String>> {
        let queues = lock(&self.queues);
        Ok(queues
            .get(queue)
            .map_or_else(Vec::new, |q| q.order.values().take(n).cloned().collect()))
    }

    async fn counter_add(&self, key: &str, delta: i64) -> CoordResult<i64> {
        let mut counters = lock(&self.counters);
        let current = counters.get(key).copied().unwrap_or(0);
        // Same refusal as Redis' INCRBY, so both backends agree on overflow.
        let new = current
            .checked_add(delta)
            .ok_or_else(|| ModelError::Coordination(format!("counter {key:?} would overflow")))?;
        counters.insert(key.to_owned(), new);
        Ok(new)
    }

    async fn counter_get(&self, key: &str) -> CoordResult<i64> {
        Ok(lock(&self.counters).get(key).copied().unwrap_or(0))
    }

    async fn counter_set(&self, key: &str, value: i64) -> CoordResult<()> {
        lock(&self.counters).insert(key.to_owned(), value);
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

    async fn lease_renew(&self, key: &str, holder: &str, ttl: Duration) -> CoordResult<bool> {
        let now = Instant::now();
        let expires = expiry(now, ttl)?;
        let mut leases = lock(&self.leases);
        match leases.map.get_mut(key) {
            Some(lease) if lease.live_holder(now) == Some(holder) => {
                lease.expires = expires;
                Ok(true)
            }
            _ => Ok(false),
        }
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

    async fn lease_holder(&self, key: &str) -> CoordResult<Option<String>> {
        let now = Instant::now();
        let leases = lock(&self.leases);
        Ok(leases
            .map
            .get(key)
            .and_then(|l| l.live_holder(now))
            .map(str::to_owned))
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
