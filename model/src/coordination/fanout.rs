//! In-process fan-out of notifications to waiters, shared by both backends.
//!
//! The local backend calls [`NotifyHub::notify`] directly; the Redis backend calls it
//! from its single pub/sub listener task. Either way thousands of waiters cost one
//! map entry per channel in use, not one connection each.
//!
//! Each channel is a `tokio::sync::watch` sender whose value carries no data: only
//! its version matters. A receiver created by `subscribe` marks every earlier send
//! as seen, which gives exactly the contract callers rely on — a subscription sees
//! the notifies issued after it was created, never the ones before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

/// Channel name → sender. An entry lives exactly as long as it has subscribers, so
/// per-request channels do not accumulate.
#[derive(Default)]
pub(crate) struct NotifyHub {
    channels: Mutex<HashMap<String, watch::Sender<()>>>,
}

impl NotifyHub {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A poisoned lock only means another thread panicked while holding it; every
    /// critical section below leaves the map consistent, so keep going.
    fn lock(&self) -> MutexGuard<'_, HashMap<String, watch::Sender<()>>> {
        self.channels.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a waiter on `channel`.
    pub(crate) fn subscribe(self: &Arc<Self>, channel: &str) -> Subscription {
        let rx = {
            let mut channels = self.lock();
            match channels.get(channel) {
                Some(tx) => tx.subscribe(),
                None => {
                    let (tx, rx) = watch::channel(());
                    channels.insert(channel.to_owned(), tx);
                    rx
                }
            }
        };
        Subscription {
            hub: Arc::clone(self),
            channel: channel.to_owned(),
            rx: Some(rx),
        }
    }

    /// Wakes every current waiter on `channel`; without waiters it is a no-op.
    pub(crate) fn notify(&self, channel: &str) {
        if let Some(tx) = self.lock().get(channel) {
            tx.send_replace(());
        }
    }

    /// Wakes every waiter on every channel. Used when notifications may have been
    /// lost (the Redis listener reconnected): a spurious wake only makes a caller
    /// re-read the database, a lost one would stall it until its timeout.
    pub(crate) fn notify_all(&self) {
        for tx in self.lock().values() {
            tx.send_replace(());
        }
    }

    /// Number of channels with live subscribers (for tests and diagnostics).
    #[cfg(test)]
    pub(crate) fn channel_count(&self) -> usize {
        self.lock().len()
    }
}

/// A waiter on one channel, created by `Coordination::subscribe`.
///
/// Each successful [`wait`](Self::wait) consumes the notifications seen so far, so a
/// loop of "check state, wait" on one subscription never misses a notify issued
/// between two waits, and several notifies before a wait wake it once.
pub struct Subscription {
    hub: Arc<NotifyHub>,
    channel: String,
    /// Always `Some` until `drop`, which takes it to release it before the check
    /// whether the channel's entry can go.
    rx: Option<watch::Receiver<()>>,
}

impl Subscription {
    /// The channel this subscription listens on.
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// Whether a notify for this channel arrived that this subscription has not yet
    /// consumed, without waiting and without consuming it: a cached value read after
    /// the subscription was made is stale once this is true.
    pub fn notified(&self) -> bool {
        self.rx
            .as_ref()
            .is_none_or(|rx| rx.has_changed().unwrap_or(true))
    }

    /// Waits until a notify for this channel arrives that this subscription has not
    /// yet consumed; `true` when one did, `false` when `timeout` passed first.
    pub async fn wait(&mut self, timeout: Duration) -> bool {
        let Some(rx) = self.rx.as_mut() else {
            return false;
        };
        match tokio::time::timeout(timeout, rx.changed()).await {
            Ok(Ok(())) => true,
            // The sender lives in the hub as long as this receiver does, so this
            // cannot happen; still, honour the timeout rather than return at once and
            // let a caller's wait loop spin.
            Ok(Err(_)) => {
                tokio::time::sleep(timeout).await;
                false
            }
            Err(_) => false,
        }
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("channel", &self.channel)
            .finish_non_exhaustive()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // Release our receiver first, then decide under the lock: new subscribers
        // also take the lock, so none can attach between the count and the removal.
        drop(self.rx.take());
        let mut channels = self.hub.lock();
        if channels
            .get(&self.channel)
            .is_some_and(|tx| tx.receiver_count() == 0)
        {
            channels.remove(&self.channel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn entries_go_away_with_their_last_subscriber() {
        let hub = NotifyHub::new();
        let a = hub.subscribe("c");
        let b = hub.subscribe("c");
        let other = hub.subscribe("d");
        assert_eq!(hub.channel_count(), 2);
        drop(a);
        assert_eq!(hub.channel_count(), 2);
        drop(b);
        assert_eq!(hub.channel_count(), 1);
        drop(other);
        assert_eq!(hub.channel_count(), 0);
        // A notify without subscribers does not create an entry.
        hub.notify("c");
        assert_eq!(hub.channel_count(), 0);
    }

    #[tokio::test]
    async fn notify_all_wakes_every_channel() {
        let hub = NotifyHub::new();
        let mut a = hub.subscribe("a");
        let mut b = hub.subscribe("b");
        hub.notify_all();
        assert!(a.wait(Duration::from_secs(1)).await);
        assert!(b.wait(Duration::from_secs(1)).await);
    }

    #[tokio::test]
    async fn notified_tells_without_consuming() {
        let hub = NotifyHub::new();
        let mut s = hub.subscribe("a");
        let other = hub.subscribe("b");
        assert!(!s.notified());
        hub.notify("a");
        assert!(s.notified());
        assert!(s.notified(), "asking again still tells");
        assert!(!other.notified());
        assert!(
            s.wait(Duration::from_secs(1)).await,
            "the notify is still there to wait on"
        );
        assert!(!s.notified());
    }

    #[tokio::test]
    async fn several_notifies_wake_once_and_later_ones_are_kept() {
        let hub = NotifyHub::new();
        let mut s = hub.subscribe("a");
        hub.notify("a");
        hub.notify("a");
        assert!(s.wait(Duration::from_secs(1)).await);
        assert!(!s.wait(Duration::from_millis(50)).await);
        hub.notify("a");
        assert!(s.wait(Duration::from_secs(1)).await);
    }
}
