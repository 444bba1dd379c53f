//! The one behavioural test suite of [`Coordination`], run against every backend.
//!
//! Each case is a plain async function taking two handles, `a` and `b`, on the same
//! shared state — like two Dragoman processes on one coordination backend. For the
//! local backend both are the same object; for Redis they are two connections on one
//! namespace, so cross-process behaviour (a notify from one process waking a waiter
//! in another, leases contested between processes) is tested for real.
//!
//! `suite!` expands every case into `on_local::<case>` (always run) and
//! `on_redis::<case>`, which follows the crate's rule for real-server tests
//! (`dragoman_testing::env`): it runs when `TEST_REDIS_URL` is set and then fails on an
//! unreachable server, fails under CI when the variable is missing, and otherwise
//! skips with a note. Each Redis test uses a fresh random namespace and deletes its
//! keys afterwards, even when the case panics.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Coordination, LocalCoordination, RedisCoordination};
use crate::vocab::Channel;
use dragoman_testing::RedisNamespace;

type Coord = Arc<dyn Coordination>;

/// Long enough never to fire on a healthy machine; only bounds a failing test.
const SOON: Duration = Duration::from_secs(5);
const LEASE_TTL: Duration = Duration::from_millis(300);
/// Never ends while a test runs.
const LONG: Duration = Duration::from_secs(30);
/// How far an expiry may seem early to this process: the backends count TTLs
/// in whole milliseconds (Redis on its own clock).
const CLOCK_SLACK: Duration = Duration::from_millis(2);
/// How often [`eventually`] looks again.
const POLL: Duration = Duration::from_millis(10);

fn local_pair() -> (Coord, Coord) {
    let a: Coord = Arc::new(LocalCoordination::new());
    (Arc::clone(&a), a)
}

/// `TEST_REDIS_URL` under the crate's real-server rule: `None` only where skipping
/// is allowed.
fn redis_url() -> Option<String> {
    dragoman_testing::env::redis_url("Redis coordination backend")
}

/// A namespace of the test's own on `url`'s Redis; what the test leaves there
/// is deleted with the handle, also when it panics.
fn random_namespace(url: &str) -> RedisNamespace {
    RedisNamespace::fresh(url)
}

async fn connect_redis(url: &str, namespace: &str) -> Arc<RedisCoordination> {
    match RedisCoordination::connect(url, namespace).await {
        Ok(c) => Arc::new(c),
        Err(e) => panic!("TEST_REDIS_URL is set ({url}) but Redis is unusable: {e}"),
    }
}

/// Runs `case` on two Redis connections sharing a fresh namespace, then deletes the
/// namespace's keys whether or not the case passed.
async fn run_on_redis<F, Fut>(case: F)
where
    F: FnOnce(Coord, Coord) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some(url) = redis_url() else {
        return;
    };
    let namespace = random_namespace(&url);
    let a = connect_redis(&url, namespace.prefix()).await;
    let b = connect_redis(&url, namespace.prefix()).await;
    // Spawned so a panic comes back as a value and cleanup still runs.
    let outcome = tokio::spawn(case(a.clone(), b)).await;
    let purged = a.purge_namespace().await;
    if let Err(e) = outcome {
        if e.is_panic() {
            std::panic::resume_unwind(e.into_panic());
        }
        panic!("case did not finish: {e}");
    }
    if let Err(e) = purged {
        panic!("cleaning namespace {} failed: {e}", namespace.prefix());
    }
}

macro_rules! suite {
    ($($case:ident),* $(,)?) => {
        mod on_local {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let (a, b) = super::local_pair();
                    super::$case(a, b).await;
                }
            )*
        }
        mod on_redis {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::run_on_redis(super::$case).await;
                }
            )*
        }
    };
}

suite!(
    identifies_and_pings,
    lease_is_exclusive_while_held,
    lease_has_one_winner_among_concurrent_acquirers,
    lease_keys_may_hold_any_text,
    lease_expires_and_can_be_taken,
    lease_acquire_by_holder_extends,
    lease_release_after_expiry_is_refused,
    lease_zero_ttl_is_an_error,
    notify_wakes_waiter,
    notify_from_other_handle_wakes_waiter,
    wait_times_out_without_notify,
    notify_before_subscribe_is_not_seen,
    two_waiters_on_one_channel_both_wake,
    many_waiters_all_wake,
    channels_are_independent,
    wait_consumes_notifications,
    notified_tells_without_waiting,
    cached_values_drop_on_a_notify_from_another_process,
    rate_limit_holds,
    rate_batch_is_all_or_nothing,
    rate_batch_over_the_burst_is_refused_without_cost,
    rate_keys_and_limits_are_independent,
    rate_zero_limit_or_cost_is_an_error,
    reservation_room_is_respected,
    reservation_under_the_same_id_replaces,
    reservation_release_frees,
    reservation_expiry_frees,
    reservation_concurrent_reservers_never_exceed_room,
    reservation_bad_arguments_are_errors,
);

/// Returns once every notify issued before the call has reached every
/// subscription. With Redis a notify travels back through the pub/sub listener;
/// messages on that connection arrive in order, so once a barrier notify issued
/// after them is seen, the earlier ones have been delivered too.
async fn settle(c: &Coord) {
    let barrier = Channel::request(&format!("barrier-{}", uuid::Uuid::new_v4().simple()));
    let mut sub = c.subscribe(&barrier);
    c.notify(&barrier).await.expect("notify barrier");
    assert!(sub.wait(SOON).await, "barrier notify never arrived");
}

/// Returns once `check` holds, asking again every [`POLL`]; panics after
/// [`SOON`]. Expiry is waited for this way, never slept for: a TTL runs on
/// the backend's clock (the server's, for Redis), and a fixed margin on this
/// process's clock is either too short on a loaded machine or needlessly long.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + SOON;
    while !check().await {
        assert!(Instant::now() < deadline, "{what}: not within {SOON:?}");
        tokio::time::sleep(POLL).await;
    }
}

/// Returns once the marker lease `key` has expired, which `c` sees by taking
/// it. A marker is taken with the TTL of the lease under test just after it,
/// so once the marker has expired the lease's first TTL has ended too,
/// whatever became of the lease since; the lease itself is left alone.
async fn until_expired(c: &Coord, key: &str) {
    eventually(&format!("lease {key:?} expired"), || async {
        c.lease_acquire(key, "marker", LONG)
            .await
            .expect("take marker")
    })
    .await;
}

// ----- general -------------------------------------------------------------------

async fn identifies_and_pings(a: Coord, b: Coord) {
    assert!(matches!(a.backend_name(), "local" | "redis"));
    assert_eq!(a.backend_name(), b.backend_name());
    a.ping().await.expect("ping a");
    b.ping().await.expect("ping b");
}

// ----- leases --------------------------------------------------------------------

async fn lease_is_exclusive_while_held(a: Coord, b: Coord) {
    let ttl = Duration::from_secs(30);
    assert!(a.lease_acquire("slot", "w1", ttl).await.expect("acquire"));
    // Not stealable: neither acquire nor release by another holder works...
    assert!(!b.lease_acquire("slot", "w2", ttl).await.expect("steal"));
    assert!(!b.lease_release("slot", "w2").await.expect("release other"));
    // ...so after both attempts the lease is still taken.
    assert!(
        !b.lease_acquire("slot", "w2", ttl)
            .await
            .expect("steal again")
    );
    // Re-acquiring by the holder succeeds (renews).
    assert!(a.lease_acquire("slot", "w1", ttl).await.expect("reacquire"));
    // Other keys are independent.
    assert!(
        b.lease_acquire("slot-2", "w2", ttl)
            .await
            .expect("other key")
    );
    assert!(
        !a.lease_acquire("slot-2", "w1", ttl)
            .await
            .expect("other key held")
    );
    // Release by the holder frees it for others.
    assert!(a.lease_release("slot", "w1").await.expect("release"));
    assert!(!a.lease_release("slot", "w1").await.expect("release twice"));
    assert!(
        b.lease_acquire("slot", "w2", ttl)
            .await
            .expect("acquire freed")
    );
    assert!(
        !a.lease_acquire("slot", "w1", ttl)
            .await
            .expect("held by the new holder")
    );
}

async fn lease_has_one_winner_among_concurrent_acquirers(a: Coord, b: Coord) {
    const CONTENDERS: usize = 40;
    let ttl = Duration::from_secs(30);
    let mut tasks = Vec::new();
    for i in 0..CONTENDERS {
        // Half the contenders on each handle: with Redis, two connections.
        let c = if i % 2 == 0 {
            Arc::clone(&a)
        } else {
            Arc::clone(&b)
        };
        tasks.push(tokio::spawn(async move {
            let holder = format!("w{i}");
            let won = c
                .lease_acquire("slot", &holder, ttl)
                .await
                .expect("acquire");
            won.then_some(holder)
        }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        if let Some(holder) = t.await.expect("contender") {
            winners.push(holder);
        }
    }
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    // The winner really holds it: only it can release.
    assert!(
        !a.lease_release("slot", "nobody")
            .await
            .expect("release other")
    );
    assert!(b.lease_release("slot", &winners[0]).await.expect("release"));
}

async fn lease_keys_may_hold_any_text(a: Coord, b: Coord) {
    let ttl = Duration::from_secs(30);
    let keys = [
        "",
        "provider:0190a1b2:slot:0",
        "with spaces and:colons",
        "glob*?[chars]\\",
        "ünïcødé — 翻訳 📚",
    ];
    for key in keys {
        assert!(a.lease_acquire(key, "w1", ttl).await.expect("acquire"));
    }
    // Each key is its own lease: none is confused with another, and similar-looking
    // keys (a glob, a prefix) do not collide.
    for key in keys {
        assert!(!b.lease_acquire(key, "w2", ttl).await.expect("held"));
    }
    assert!(
        b.lease_acquire("provider:0190a1b2:slot:", "w2", ttl)
            .await
            .expect("prefix is another key")
    );
    assert!(
        b.lease_acquire("glob", "w2", ttl)
            .await
            .expect("glob match")
    );
    for key in keys {
        assert!(a.lease_release(key, "w1").await.expect("release"));
    }
}

async fn lease_expires_and_can_be_taken(a: Coord, b: Coord) {
    let acquired = Instant::now();
    assert!(
        a.lease_acquire("slot", "w1", LEASE_TTL)
            .await
            .expect("acquire")
    );
    assert!(
        !b.lease_acquire("slot", "w2", LEASE_TTL)
            .await
            .expect("held")
    );
    eventually("the expired lease taken", || async {
        b.lease_acquire("slot", "w2", LONG)
            .await
            .expect("take expired")
    })
    .await;
    // Not before its TTL, counted from a moment after `acquired`.
    let held = acquired.elapsed();
    assert!(held + CLOCK_SLACK >= LEASE_TTL, "taken after {held:?}");
    // The old holder has lost it for good: it can neither release nor retake it.
    assert!(!a.lease_release("slot", "w1").await.expect("release lost"));
    assert!(
        !a.lease_acquire("slot", "w1", LEASE_TTL)
            .await
            .expect("reacquire lost")
    );
}

async fn lease_acquire_by_holder_extends(a: Coord, b: Coord) {
    assert!(
        a.lease_acquire("slot", "w1", LEASE_TTL)
            .await
            .expect("acquire")
    );
    // Taken after the lease, with its TTL: expired, it says the lease's first
    // TTL has ended.
    assert!(
        b.lease_acquire("first-ttl", "w2", LEASE_TTL)
            .await
            .expect("marker")
    );
    // Renewing to a longer TTL outlives the first one...
    assert!(
        a.lease_acquire("slot", "w1", LONG)
            .await
            .expect("renew longer")
    );
    until_expired(&b, "first-ttl").await;
    assert!(
        !b.lease_acquire("slot", "w2", LEASE_TTL)
            .await
            .expect("held past its first ttl")
    );
    // ...and a renewal counts its TTL from now, not from the longest given:
    // renewed to a short one, the lease ends with it.
    assert!(
        a.lease_acquire("slot", "w1", LEASE_TTL)
            .await
            .expect("renew shorter")
    );
    eventually("the lease renewed shorter taken", || async {
        b.lease_acquire("slot", "w2", LONG)
            .await
            .expect("take expired")
    })
    .await;
    assert!(!a.lease_release("slot", "w1").await.expect("release lost"));
}

async fn lease_release_after_expiry_is_refused(a: Coord, b: Coord) {
    assert!(
        a.lease_acquire("slot", "w1", LEASE_TTL)
            .await
            .expect("acquire")
    );
    assert!(
        b.lease_acquire("ttl", "w2", LEASE_TTL)
            .await
            .expect("marker")
    );
    assert!(
        !b.lease_acquire("slot", "w2", LEASE_TTL)
            .await
            .expect("held")
    );
    // Waited for on the marker, so that nobody takes the lease meanwhile.
    until_expired(&b, "ttl").await;
    // Expired means lost, even if nobody took it meanwhile.
    assert!(
        !a.lease_release("slot", "w1")
            .await
            .expect("release expired")
    );
    assert!(
        b.lease_acquire("slot", "w2", LEASE_TTL)
            .await
            .expect("free for others")
    );
}

async fn lease_zero_ttl_is_an_error(a: Coord, b: Coord) {
    assert!(a.lease_acquire("slot", "w1", Duration::ZERO).await.is_err());
    // The refused call took nothing...
    assert!(
        b.lease_acquire("slot", "w2", LEASE_TTL)
            .await
            .expect("acquire")
    );
    // ...and a refused renewal leaves the held lease in place.
    assert!(b.lease_acquire("slot", "w2", Duration::ZERO).await.is_err());
    assert!(
        !a.lease_acquire("slot", "w1", LEASE_TTL)
            .await
            .expect("still held")
    );
}

// ----- notify / wait -------------------------------------------------------------

async fn notify_wakes_waiter(a: Coord, _b: Coord) {
    let mut sub = a.subscribe(&Channel::request("ch"));
    assert_eq!(sub.channel(), "request:ch");
    let notifier = Arc::clone(&a);
    let task = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        notifier
            .notify(&Channel::request("ch"))
            .await
            .expect("notify");
    });
    let started = Instant::now();
    assert!(sub.wait(SOON).await, "waiter not woken");
    assert!(started.elapsed() < SOON);
    task.await.expect("notifier");
}

async fn notify_from_other_handle_wakes_waiter(a: Coord, b: Coord) {
    let mut sub = b.subscribe(&Channel::request("ch"));
    a.notify(&Channel::request("ch")).await.expect("notify");
    assert!(sub.wait(SOON).await, "waiter on the other handle not woken");
}

async fn wait_times_out_without_notify(a: Coord, _b: Coord) {
    let mut sub = a.subscribe(&Channel::request("ch"));
    let started = Instant::now();
    assert!(!sub.wait(Duration::from_millis(200)).await);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(190),
        "returned early: {waited:?}"
    );
    assert!(waited < Duration::from_secs(2), "returned late: {waited:?}");
}

async fn notify_before_subscribe_is_not_seen(a: Coord, b: Coord) {
    a.notify(&Channel::request("ch")).await.expect("notify");
    // Make sure the notify has fully travelled before subscribing (for Redis it
    // passes through the pub/sub listener); otherwise this would race.
    settle(&a).await;
    settle(&b).await;
    let mut sub_a = a.subscribe(&Channel::request("ch"));
    let mut sub_b = b.subscribe(&Channel::request("ch"));
    assert!(!sub_a.wait(Duration::from_millis(200)).await);
    assert!(!sub_b.wait(Duration::from_millis(50)).await);
}

async fn two_waiters_on_one_channel_both_wake(a: Coord, b: Coord) {
    let mut first = a.subscribe(&Channel::request("ch"));
    let mut second = a.subscribe(&Channel::request("ch"));
    let mut elsewhere = b.subscribe(&Channel::request("ch"));
    let w1 = tokio::spawn(async move { first.wait(SOON).await });
    let w2 = tokio::spawn(async move { second.wait(SOON).await });
    let w3 = tokio::spawn(async move { elsewhere.wait(SOON).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    a.notify(&Channel::request("ch")).await.expect("notify");
    assert!(w1.await.expect("first"));
    assert!(w2.await.expect("second"));
    assert!(w3.await.expect("other handle"));
}

async fn many_waiters_all_wake(a: Coord, b: Coord) {
    const WAITERS: usize = 500;
    let mut tasks = Vec::new();
    for i in 0..WAITERS {
        let c = if i % 2 == 0 { &a } else { &b };
        let mut sub = c.subscribe(&Channel::request("ch"));
        tasks.push(tokio::spawn(async move { sub.wait(SOON).await }));
    }
    b.notify(&Channel::request("ch")).await.expect("notify");
    for t in tasks {
        assert!(t.await.expect("waiter"));
    }
}

async fn channels_are_independent(a: Coord, b: Coord) {
    let mut on_x = b.subscribe(&Channel::request("x"));
    let mut on_y = b.subscribe(&Channel::request("y"));
    let mut on_prefix = b.subscribe(&Channel::request("x:"));
    a.notify(&Channel::request("x")).await.expect("notify");
    assert!(on_x.wait(SOON).await);
    settle(&b).await;
    assert!(!on_y.wait(Duration::from_millis(100)).await);
    assert!(!on_prefix.wait(Duration::from_millis(10)).await);
}

async fn wait_consumes_notifications(a: Coord, b: Coord) {
    let mut sub = b.subscribe(&Channel::request("ch"));
    a.notify(&Channel::request("ch")).await.expect("notify");
    a.notify(&Channel::request("ch")).await.expect("notify");
    settle(&b).await;
    // Two notifies before a wait wake it once...
    assert!(sub.wait(SOON).await);
    assert!(!sub.wait(Duration::from_millis(100)).await);
    // ...and one issued between waits is not lost.
    a.notify(&Channel::request("ch")).await.expect("notify");
    settle(&b).await;
    assert!(sub.wait(SOON).await);
}

async fn notified_tells_without_waiting(a: Coord, b: Coord) {
    let sub = b.subscribe(&Channel::Tokens);
    let elsewhere = b.subscribe(&Channel::Licence);
    assert!(!sub.notified());
    a.notify(&Channel::Tokens).await.expect("notify");
    settle(&b).await;
    assert!(sub.notified());
    assert!(!elsewhere.notified());
}

async fn cached_values_drop_on_a_notify_from_another_process(a: Coord, b: Coord) {
    let cache: super::NotifiedCache<String, u32> =
        super::NotifiedCache::new(Arc::clone(&b), 10, SOON);
    let channel = Channel::request("r");
    let read = |value: u32| move || async move { Ok::<_, ()>(value) };
    assert_eq!(cache.get_or_load("r", &channel, read(1)).await, Ok(1));
    assert_eq!(
        cache.get_or_load("r", &channel, read(2)).await,
        Ok(1),
        "kept"
    );
    a.notify(&channel).await.expect("notify");
    settle(&b).await;
    assert_eq!(cache.get_or_load("r", &channel, read(3)).await, Ok(3));
}

// ----- rate limits ---------------------------------------------------------------

use super::RateDecision;

/// The wait of a refusal; panics on an admission.
fn refused(decision: RateDecision, what: &str) -> Duration {
    match decision {
        RateDecision::Refused { retry_after } => retry_after,
        RateDecision::Admitted => panic!("{what}: admitted, expected a refusal"),
    }
}

async fn rate_limit_holds(a: Coord, b: Coord) {
    // 60 a minute: one call a second, and a fresh key takes a minute's worth at once.
    for i in 0..60 {
        let c = if i % 2 == 0 { &a } else { &b };
        let decision = c.rate_admit("token:t1", 60, 1).await.expect("admit");
        assert_eq!(decision, RateDecision::Admitted, "call {i}");
    }
    let wait = refused(
        a.rate_admit("token:t1", 60, 1).await.expect("admit"),
        "61st call",
    );
    // One emission interval, less the time the 60 calls took.
    assert!(
        wait > Duration::from_millis(500) && wait <= Duration::from_secs(1),
        "retry_after {wait:?}"
    );
    let again = refused(
        b.rate_admit("token:t1", 60, 1).await.expect("admit"),
        "62nd call",
    );
    assert!(again <= wait, "the wait shrinks: {again:?} after {wait:?}");
    tokio::time::sleep(wait + Duration::from_millis(50)).await;
    assert_eq!(
        b.rate_admit("token:t1", 60, 1).await.expect("admit"),
        RateDecision::Admitted,
        "after the wait"
    );
    refused(
        a.rate_admit("token:t1", 60, 1).await.expect("admit"),
        "right after",
    );
}

async fn rate_batch_is_all_or_nothing(a: Coord, b: Coord) {
    // 10 a minute: a cell every 6 s.
    assert_eq!(
        a.rate_admit("k", 10, 7).await.expect("admit"),
        RateDecision::Admitted
    );
    // Three cells are left: a batch of four is refused whole...
    let wait = refused(b.rate_admit("k", 10, 4).await.expect("admit"), "4 of 3");
    // ...told to wait for the one missing cell...
    assert!(
        wait > Duration::from_secs(5) && wait <= Duration::from_secs(6),
        "retry_after {wait:?}"
    );
    // ...and takes nothing: the three are still there.
    assert_eq!(
        b.rate_admit("k", 10, 3).await.expect("admit"),
        RateDecision::Admitted
    );
    refused(
        a.rate_admit("k", 10, 1).await.expect("admit"),
        "bucket empty",
    );
}

async fn rate_batch_over_the_burst_is_refused_without_cost(a: Coord, b: Coord) {
    let wait = refused(a.rate_admit("k", 10, 11).await.expect("admit"), "11 of 10");
    assert_eq!(wait, super::OVERSIZED_RETRY_AFTER);
    refused(
        b.rate_admit("k", 10, u32::MAX).await.expect("admit"),
        "u32::MAX of 10",
    );
    // Nothing was taken: the whole minute's worth is still there.
    assert_eq!(
        b.rate_admit("k", 10, 10).await.expect("admit"),
        RateDecision::Admitted
    );
}

async fn rate_keys_and_limits_are_independent(a: Coord, b: Coord) {
    assert_eq!(
        a.rate_admit("token:one", 2, 2).await.expect("admit"),
        RateDecision::Admitted
    );
    refused(
        b.rate_admit("token:one", 2, 1).await.expect("admit"),
        "one empty",
    );
    for key in ["token:two", "token:one:", "token:*", ""] {
        assert_eq!(
            b.rate_admit(key, 2, 2).await.expect("admit"),
            RateDecision::Admitted,
            "key {key:?}"
        );
    }
    // The same key under another limit is another bucket.
    assert_eq!(
        a.rate_admit("token:one", 3, 3).await.expect("admit"),
        RateDecision::Admitted
    );
    refused(
        a.rate_admit("token:one", 2, 1).await.expect("admit"),
        "one still empty",
    );
}

async fn rate_zero_limit_or_cost_is_an_error(a: Coord, _b: Coord) {
    assert!(a.rate_admit("k", 0, 1).await.is_err());
    assert!(a.rate_admit("k", 10, 0).await.is_err());
    assert_eq!(
        a.rate_admit("k", 1, 1).await.expect("admit"),
        RateDecision::Admitted
    );
}

// ----- reservations --------------------------------------------------------------

async fn reservation_room_is_respected(a: Coord, b: Coord) {
    assert!(
        a.reserve("p", "r1", 3.0, 10.0, LONG)
            .await
            .expect("reserve")
    );
    assert!(
        b.reserve("p", "r2", 5.0, 10.0, LONG)
            .await
            .expect("reserve")
    );
    assert!(!a.reserve("p", "r3", 3.0, 10.0, LONG).await.expect("over"));
    assert!(
        b.reserve("p", "r3", 2.0, 10.0, LONG)
            .await
            .expect("exactly full")
    );
    assert_eq!(a.reserved("p").await.expect("sum"), 10.0);
    // Nothing more fits, not even a little; nothing at all does.
    assert!(!b.reserve("p", "r4", 0.01, 10.0, LONG).await.expect("full"));
    assert!(b.reserve("p", "r4", 0.0, 10.0, LONG).await.expect("zero"));
    // The room is the caller's each time: a larger one lets more in.
    assert!(
        a.reserve("p", "r5", 1.0, 11.0, LONG)
            .await
            .expect("more room")
    );
    assert_eq!(b.reserved("p").await.expect("sum"), 11.0);
    // Amounts adding up to the room exactly on paper fit despite rounding.
    assert!(a.reserve("cents", "x", 0.1, 0.3, LONG).await.expect("0.1"));
    assert!(b.reserve("cents", "y", 0.2, 0.3, LONG).await.expect("0.2"));
    assert!(
        !a.reserve("cents", "z", 0.001, 0.3, LONG)
            .await
            .expect("0.001")
    );
    let sum = b.reserved("cents").await.expect("sum");
    assert!((sum - 0.3).abs() < 1e-12, "sum {sum}");
    // An empty pool holds nothing.
    assert_eq!(a.reserved("never used").await.expect("sum"), 0.0);
}

async fn reservation_under_the_same_id_replaces(a: Coord, b: Coord) {
    assert!(
        a.reserve("p", "call", 6.0, 10.0, LONG)
            .await
            .expect("reserve")
    );
    // Its own 6 does not count against its new amount.
    assert!(b.reserve("p", "call", 9.0, 10.0, LONG).await.expect("grow"));
    assert_eq!(a.reserved("p").await.expect("sum"), 9.0);
    assert!(
        !b.reserve("p", "other", 2.0, 10.0, LONG)
            .await
            .expect("over")
    );
    // A refused replacement leaves the old amount in place.
    assert!(
        !a.reserve("p", "call", 12.0, 10.0, LONG)
            .await
            .expect("too big")
    );
    assert_eq!(b.reserved("p").await.expect("sum"), 9.0);
    assert!(
        a.reserve("p", "call", 1.5, 10.0, LONG)
            .await
            .expect("shrink")
    );
    assert_eq!(b.reserved("p").await.expect("sum"), 1.5);
    assert!(
        b.reserve("p", "other", 8.5, 10.0, LONG)
            .await
            .expect("fits now")
    );
}

async fn reservation_release_frees(a: Coord, b: Coord) {
    assert!(
        a.reserve("p", "r1", 10.0, 10.0, LONG)
            .await
            .expect("reserve")
    );
    assert!(
        a.reserve("q", "r1", 4.0, 10.0, LONG)
            .await
            .expect("other pool")
    );
    assert!(!b.reserve("p", "r2", 1.0, 10.0, LONG).await.expect("full"));
    b.release("p", "r1").await.expect("release");
    assert_eq!(a.reserved("p").await.expect("sum"), 0.0);
    assert!(b.reserve("p", "r2", 10.0, 10.0, LONG).await.expect("freed"));
    // Pools are independent: `q` kept its reservation.
    assert_eq!(a.reserved("q").await.expect("sum"), 4.0);
    // Releasing what is not there is not an error.
    a.release("p", "r1").await.expect("release twice");
    a.release("no such pool", "r1")
        .await
        .expect("release unknown");
    assert_eq!(b.reserved("p").await.expect("sum"), 10.0);
}

async fn reservation_expiry_frees(a: Coord, b: Coord) {
    let reserved = Instant::now();
    assert!(
        a.reserve("p", "dies", 10.0, 10.0, LEASE_TTL)
            .await
            .expect("reserve")
    );
    assert!(
        a.reserve("p", "lives", 0.0, 10.0, LONG)
            .await
            .expect("reserve")
    );
    assert_eq!(b.reserved("p").await.expect("sum"), 10.0);
    assert!(!b.reserve("p", "r2", 1.0, 10.0, LONG).await.expect("full"));
    // The holder never releases it; its share frees itself.
    eventually("the expired reservation freed", || async {
        b.reserved("p").await.expect("sum") == 0.0
    })
    .await;
    // Not before its TTL, counted from a moment after `reserved`.
    let held = reserved.elapsed();
    assert!(held + CLOCK_SLACK >= LEASE_TTL, "freed after {held:?}");
    assert!(b.reserve("p", "r2", 10.0, 10.0, LONG).await.expect("freed"));

    // Reserving again renews: renewed to a longer TTL, a reservation outlives
    // its first one (which a marker taken just after it with the same TTL
    // tells the end of)...
    assert!(
        a.reserve("q", "kept", 1.0, 1.0, LEASE_TTL)
            .await
            .expect("reserve")
    );
    assert!(
        a.reserve("ttl", "marker", 1.0, 1.0, LEASE_TTL)
            .await
            .expect("marker")
    );
    assert!(
        a.reserve("q", "kept", 1.0, 1.0, LONG)
            .await
            .expect("renew longer")
    );
    eventually("the marker reservation freed", || async {
        b.reserved("ttl").await.expect("sum") == 0.0
    })
    .await;
    assert_eq!(b.reserved("q").await.expect("sum"), 1.0);
    // ...and a renewal counts its TTL from now: renewed to a short one, it
    // ends with it.
    assert!(
        a.reserve("q", "kept", 1.0, 1.0, LEASE_TTL)
            .await
            .expect("renew shorter")
    );
    eventually("the reservation renewed shorter freed", || async {
        b.reserved("q").await.expect("sum") == 0.0
    })
    .await;
}

async fn reservation_concurrent_reservers_never_exceed_room(a: Coord, b: Coord) {
    const RESERVERS: usize = 50;
    let mut tasks = Vec::new();
    for i in 0..RESERVERS {
        let c = if i % 2 == 0 {
            Arc::clone(&a)
        } else {
            Arc::clone(&b)
        };
        tasks.push(tokio::spawn(async move {
            c.reserve("budget", &format!("call-{i}"), 1.0, 10.0, LONG)
                .await
                .expect("reserve")
        }));
    }
    let mut won = 0;
    for t in tasks {
        if t.await.expect("reserver") {
            won += 1;
        }
    }
    assert_eq!(won, 10);
    assert_eq!(a.reserved("budget").await.expect("sum"), 10.0);
}

async fn reservation_bad_arguments_are_errors(a: Coord, b: Coord) {
    assert!(a.reserve("p", "r", -1.0, 10.0, LONG).await.is_err());
    assert!(a.reserve("p", "r", f64::NAN, 10.0, LONG).await.is_err());
    assert!(a.reserve("p", "r", 1.0, f64::INFINITY, LONG).await.is_err());
    assert!(
        a.reserve("p", "r", 1.0, 10.0, Duration::ZERO)
            .await
            .is_err()
    );
    // Nothing was reserved by the refused calls.
    assert_eq!(b.reserved("p").await.expect("sum"), 0.0);
}

// ----- Redis only ----------------------------------------------------------------

mod redis_only;
