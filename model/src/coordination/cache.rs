//! A cache of values read from the database that hold until a coordination
//! channel announces a change.
//!
//! A value is read under a subscription to its channel taken *before* the
//! read, so any notify published after the read began makes the value stale:
//! in this process at once, in the others as soon as the backend delivers the
//! notify. A waiter woken by that notify and the value share the process's
//! fan-out, so a waiter that reads again after a wake-up never gets the value
//! it was woken about.
//!
//! The process that makes a change drops the values itself
//! ([`NotifiedCache::forget`], [`NotifiedCache::clear`]) as well as notifying,
//! so its own next read never depends on its notify travelling through Redis;
//! a read that began before such a drop is not answered again.
//!
//! Callers asking for the same missing value at the same time share one read,
//! so a value that expires under load costs one read, not one per caller.
//! A time to live bounds what a change that announces nothing (an edit made
//! behind the service's back) can leave stale, and a capacity bounds memory.
//! The database stays the source of truth: a lost value only costs a read.
//!
//! A cache may also hold its values past their time to live
//! ([`NotifiedCache::new_held`]), for one use only: answering while the
//! database cannot be read ([`NotifiedCache::get_or_load_held`]). A held
//! value is still dropped by the changes announced, so it is the last value
//! known; and while the database is away nothing it holds can change.

use std::borrow::Borrow;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

// Tokio's clock, which a test can pause and move: the same as std's otherwise.
use tokio::time::Instant;

use super::{Coordination, Subscription};
use crate::vocab::Channel;

/// Reads of a stale value in a row after which a caller reads for itself
/// rather than wait on a shared read again: changes announced faster than
/// a read completes never keep a caller waiting.
const SHARED_ATTEMPTS: usize = 3;

/// Values by key, each dropped when its channel is notified, when this
/// process drops it, or when its time to live ends.
pub struct NotifiedCache<K, V> {
    entries: moka::future::Cache<K, Arc<Entry<V>>>,
    coordination: Arc<dyn Coordination>,
    /// How many times this process dropped values: a value read under an
    /// earlier count may predate what a drop was about.
    drops: AtomicU64,
    /// How long a value is answered without reading it again.
    ttl: Duration,
}

struct Entry<V> {
    value: V,
    /// Taken before the value was read.
    subscription: Subscription,
    /// [`NotifiedCache::drops`] when the read began.
    drops: u64,
    /// When the read began.
    read_at: Instant,
}

impl<K, V> NotifiedCache<K, V>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// At most `capacity` values, each kept at most `ttl`.
    pub fn new(coordination: Arc<dyn Coordination>, capacity: u64, ttl: Duration) -> Self {
        Self::new_held(coordination, capacity, ttl, ttl)
    }

    /// At most `capacity` values, each answered for `ttl`, and held for
    /// `held_for` to answer while the database cannot be read.
    pub fn new_held(
        coordination: Arc<dyn Coordination>,
        capacity: u64,
        ttl: Duration,
        held_for: Duration,
    ) -> Self {
        Self::of(
            coordination,
            ttl,
            moka::future::Cache::builder()
                .max_capacity(capacity)
                .time_to_live(ttl.max(held_for))
                .build(),
        )
    }

    /// Values weighing `weight` each (bytes, say) up to `capacity` in all,
    /// each kept at most `ttl`: for values whose size varies widely.
    /// Held for `held_for` as [`NotifiedCache::new_held`] says.
    pub fn weighed(
        coordination: Arc<dyn Coordination>,
        capacity: u64,
        ttl: Duration,
        held_for: Duration,
        weight: fn(&V) -> u32,
    ) -> Self {
        Self::of(
            coordination,
            ttl,
            moka::future::Cache::builder()
                .max_capacity(capacity)
                .weigher(move |_, entry: &Arc<Entry<V>>| weight(&entry.value))
                .time_to_live(ttl.max(held_for))
                .build(),
        )
    }

    fn of(
        coordination: Arc<dyn Coordination>,
        ttl: Duration,
        entries: moka::future::Cache<K, Arc<Entry<V>>>,
    ) -> Self {
        Self {
            entries,
            coordination,
            drops: AtomicU64::new(0),
            ttl,
        }
    }

    /// The value of `key`: the one kept, unless a change was announced since
    /// it was read, else what `load` reads (under a subscription to
    /// `channel`, the channel that announces its changes). Callers asking at
    /// the same time share one read. A refusal of `load` is not kept.
    pub async fn get_or_load<Q, E, F, Fut>(
        &self,
        key: &Q,
        channel: &Channel,
        load: F,
    ) -> Result<V, E>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
        F: Fn() -> Fut,
        Fut: Future<Output = Result<V, E>>,
        E: Clone + Send + Sync + 'static,
    {
        for _ in 0..SHARED_ATTEMPTS {
            let read = self.entries.try_get_with_by_ref(key, async {
                let drops = self.drops.load(Ordering::SeqCst);
                let read_at = Instant::now();
                let subscription = self.coordination.subscribe(channel);
                let value = load().await?;
                Ok(Arc::new(Entry {
                    value,
                    subscription,
                    drops,
                    read_at,
                }))
            });
            let entry = read.await.map_err(Arc::unwrap_or_clone)?;
            if self.fresh(&entry) {
                return Ok(entry.value.clone());
            }
            self.entries.invalidate(key).await;
        }
        load().await
    }

    /// As [`NotifiedCache::get_or_load`], but when `load` fails because the
    /// database cannot be read (`unreachable` says which failures those
    /// are), the last value read answers instead, however old, unless a
    /// change was announced since.
    pub async fn get_or_load_held<Q, E, F, Fut>(
        &self,
        key: &Q,
        channel: &Channel,
        load: F,
        unreachable: impl Fn(&E) -> bool,
    ) -> Result<V, E>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
        F: Fn() -> Fut,
        Fut: Future<Output = Result<V, E>>,
        E: Clone + Send + Sync + 'static,
    {
        let held = self.entries.get(key).await.filter(|e| self.current(e));
        match self.get_or_load(key, channel, load).await {
            Err(e) if unreachable(&e) => match held {
                Some(entry) => {
                    let value = entry.value.clone();
                    // Put back for the next call of the outage: the failed
                    // read dropped it, and it is still the last known.
                    if self.current(&entry) {
                        self.entries.insert(key.to_owned(), entry).await;
                    }
                    Ok(value)
                }
                None => Err(e),
            },
            answer => answer,
        }
    }

    fn fresh(&self, entry: &Entry<V>) -> bool {
        self.current(entry) && entry.read_at.elapsed() < self.ttl
    }

    /// No change was announced since the value was read.
    fn current(&self, entry: &Entry<V>) -> bool {
        !entry.subscription.notified() && entry.drops == self.drops.load(Ordering::SeqCst)
    }

    /// Drops the value of `key`, which is not stale: the next caller reads
    /// it again (a value that turned out not to be worth keeping).
    pub async fn discard<Q>(&self, key: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries.invalidate(key).await;
    }

    /// Drops the value of `key` and the reads in progress: this process
    /// changed what it is read from.
    pub async fn forget<Q>(&self, key: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.drops.fetch_add(1, Ordering::SeqCst);
        self.entries.invalidate(key).await;
    }

    /// Drops every value and the reads in progress: this process changed
    /// what they are read from.
    pub fn clear(&self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        self.entries.invalidate_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordination::LocalCoordination;
    use std::sync::atomic::AtomicUsize;

    /// A cache of numbers and how many reads it made.
    struct Counted {
        coordination: Arc<dyn Coordination>,
        cache: NotifiedCache<String, usize>,
        reads: AtomicUsize,
    }

    impl Counted {
        fn new(ttl: Duration) -> Counted {
            let coordination: Arc<dyn Coordination> = Arc::new(LocalCoordination::new());
            Counted {
                cache: NotifiedCache::new(coordination.clone(), 100, ttl),
                coordination,
                reads: AtomicUsize::new(0),
            }
        }

        /// The value of `key`, a read counting one more.
        async fn get(&self, key: &str, channel: &Channel) -> usize {
            self.cache
                .get_or_load(key, channel, || async {
                    Ok::<_, ()>(self.reads.fetch_add(1, Ordering::SeqCst) + 1)
                })
                .await
                .expect("read")
        }
    }

    /// On a paused clock: time passes only as the test moves it.
    #[tokio::test(start_paused = true)]
    async fn a_held_value_answers_only_while_the_database_cannot_be_read() {
        let coordination: Arc<dyn Coordination> = Arc::new(LocalCoordination::new());
        let ttl = Duration::from_millis(50);
        let cache: NotifiedCache<String, usize> =
            NotifiedCache::new_held(coordination.clone(), 10, ttl, Duration::from_secs(60));
        let channel = Channel::request("r");
        #[derive(Clone, Debug, PartialEq)]
        enum Failed {
            Away,
            Refused,
        }
        let away = |e: &Failed| *e == Failed::Away;
        let loads = AtomicUsize::new(0);
        let read = |answer: Result<usize, Failed>| {
            let (cache, channel, loads) = (&cache, &channel, &loads);
            async move {
                cache
                    .get_or_load_held(
                        "r",
                        channel,
                        || async {
                            loads.fetch_add(1, Ordering::SeqCst);
                            answer.clone()
                        },
                        away,
                    )
                    .await
            }
        };
        let loaded = || loads.load(Ordering::SeqCst);
        assert_eq!(read(Ok(1)).await, Ok(1));
        assert_eq!(read(Err(Failed::Away)).await, Ok(1), "kept");
        assert_eq!(loaded(), 1, "a value within its time to live is not read");
        tokio::time::advance(ttl).await;
        // Past its time to live the value is read again; a database away
        // leaves the last value read.
        assert_eq!(read(Err(Failed::Away)).await, Ok(1));
        assert!(loaded() > 1, "read again past its time to live");
        assert_eq!(
            read(Err(Failed::Away)).await,
            Ok(1),
            "all through the outage"
        );
        assert_eq!(read(Ok(2)).await, Ok(2));
        tokio::time::advance(ttl).await;
        // Any other failure is answered as it is.
        assert_eq!(read(Err(Failed::Refused)).await, Err(Failed::Refused));
        // A change announced drops the held value too.
        assert_eq!(read(Ok(3)).await, Ok(3));
        coordination.notify(&channel).await.expect("notify");
        assert_eq!(read(Err(Failed::Away)).await, Err(Failed::Away));
    }

    #[tokio::test]
    async fn a_value_holds_until_its_channel_is_notified() {
        let c = Counted::new(Duration::from_secs(60));
        let (r1, r2) = (Channel::request("r1"), Channel::request("r2"));
        assert_eq!(c.get("r1", &r1).await, 1);
        assert_eq!(c.get("r2", &r2).await, 2);
        assert_eq!(c.get("r1", &r1).await, 1, "kept");
        c.coordination.notify(&r1).await.expect("notify");
        assert_eq!(c.get("r1", &r1).await, 3, "read again after the notify");
        assert_eq!(c.get("r2", &r2).await, 2, "another channel's value stays");
    }

    #[tokio::test]
    async fn a_read_that_began_before_a_change_is_not_answered_again() {
        let c = Counted::new(Duration::from_secs(60));
        let channel = Channel::Tokens;
        // The change happens while the value is being read.
        let value = c
            .cache
            .get_or_load("t", &channel, || async {
                c.coordination
                    .notify(&Channel::Tokens)
                    .await
                    .expect("notify");
                Ok::<_, ()>(7)
            })
            .await;
        // The first reads saw the notify happen under them; the last one,
        // made by the caller itself, answers.
        assert_eq!(value, Ok(7));
        assert_eq!(
            c.get("t", &channel).await,
            1,
            "the stale value was not kept"
        );

        // Nor is a read that began before this process dropped values.
        let value = c
            .cache
            .get_or_load("u", &channel, || async {
                c.cache.clear();
                Ok::<_, ()>(8)
            })
            .await;
        assert_eq!(value, Ok(8));
        assert_eq!(c.get("u", &channel).await, 2);
    }

    #[tokio::test]
    async fn this_process_drops_values_at_once() {
        let c = Counted::new(Duration::from_secs(60));
        let channel = Channel::Licence;
        assert_eq!(c.get("a", &channel).await, 1);
        c.cache.forget("a").await;
        assert_eq!(c.get("a", &channel).await, 2);
        c.cache.discard("a").await;
        assert_eq!(c.get("a", &channel).await, 3);
        c.cache.clear();
        assert_eq!(c.get("a", &channel).await, 4);
    }

    #[tokio::test]
    async fn a_refusal_is_not_kept() {
        let c = Counted::new(Duration::from_secs(60));
        let refused = c
            .cache
            .get_or_load("x", &Channel::Tokens, || async { Err::<usize, _>("no") })
            .await;
        assert_eq!(refused, Err("no"));
        assert_eq!(c.get("x", &Channel::Tokens).await, 1);
    }

    #[tokio::test]
    async fn callers_asking_together_share_one_read() {
        let c = Arc::new(Counted::new(Duration::from_secs(60)));
        let callers: Vec<_> = (0..16)
            .map(|_| {
                let c = c.clone();
                tokio::spawn(async move {
                    c.cache
                        .get_or_load("k", &Channel::Licence, || async {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            Ok::<_, ()>(c.reads.fetch_add(1, Ordering::SeqCst) + 1)
                        })
                        .await
                })
            })
            .collect();
        for caller in callers {
            assert_eq!(caller.await.expect("caller"), Ok(1));
        }
        assert_eq!(c.reads.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn weighed_values_stay_within_their_capacity() {
        let coordination: Arc<dyn Coordination> = Arc::new(LocalCoordination::new());
        let cache: NotifiedCache<u32, String> = NotifiedCache::weighed(
            coordination,
            1_000,
            Duration::from_secs(60),
            Duration::from_secs(60),
            |text| u32::try_from(text.len()).unwrap_or(u32::MAX),
        );
        for key in 0..50 {
            let value = cache
                .get_or_load(&key, &Channel::Licence, || async {
                    Ok::<_, ()>("x".repeat(100))
                })
                .await;
            assert_eq!(value.map(|v| v.len()), Ok(100));
        }
        cache.entries.run_pending_tasks().await;
        assert!(cache.entries.weighted_size() <= 1_000);
        assert!(cache.entries.entry_count() <= 10);
    }

    /// On a paused clock: time passes only as the test moves it.
    #[tokio::test(start_paused = true)]
    async fn a_value_ends_with_its_time_to_live() {
        let ttl = Duration::from_secs(60);
        let c = Counted::new(ttl);
        assert_eq!(c.get("l", &Channel::Licence).await, 1);
        tokio::time::advance(ttl - Duration::from_millis(1)).await;
        assert_eq!(c.get("l", &Channel::Licence).await, 1, "kept to the end");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(c.get("l", &Channel::Licence).await, 2, "read again");
    }
}
