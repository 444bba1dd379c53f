//! The one behavioural test suite of [`Coordination`], run against every backend.
//!
//! Each case is a plain async function taking two handles, `a` and `b`, on the same
//! shared state — like two Dragoman processes on one coordination backend. For the
//! local backend both are the same object; for Redis they are two connections on one
//! namespace, so cross-process behaviour (a notify from one process waking a waiter
//! in another, leases contested between processes) is tested for real.
//!
//! `suite!` expands every case into `on_local::<case>` (always run) and
//! `on_redis::<case>` (run when `TEST_REDIS_URL` is set; then an unreachable server
//! fails the test instead of skipping it). Each Redis test uses a fresh random
//! namespace and deletes its keys afterwards, even when the case panics.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Coordination, LocalCoordination, RedisCoordination};
use crate::vocab::Channel;

type Coord = Arc<dyn Coordination>;

/// Long enough never to fire on a healthy machine; only bounds a failing test.
const SOON: Duration = Duration::from_secs(5);
const LEASE_TTL: Duration = Duration::from_millis(300);
/// Comfortably past `LEASE_TTL`, still short.
const PAST_TTL: Duration = Duration::from_millis(450);

fn local_pair() -> (Coord, Coord) {
    let a: Coord = Arc::new(LocalCoordination::new());
    (Arc::clone(&a), a)
}

fn redis_url() -> Option<String> {
    std::env::var("TEST_REDIS_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
}

fn random_namespace() -> String {
    format!("dragoman-test:{}:", uuid::Uuid::new_v4().simple())
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
        eprintln!("TEST_REDIS_URL not set: Redis backend not tested");
        return;
    };
    let namespace = random_namespace();
    let a = connect_redis(&url, &namespace).await;
    let b = connect_redis(&url, &namespace).await;
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
        panic!("cleaning namespace {namespace} failed: {e}");
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
    queue_pops_by_priority_then_fifo,
    queue_covers_full_priority_range,
    queue_push_existing_updates_priority_without_duplicate,
    queue_remove_len_and_peek,
    queue_items_may_hold_any_text,
    queues_are_independent,
    queue_pop_is_atomic_under_concurrent_poppers,
    queue_concurrent_pushes_all_land,
    counters_add_get_set,
    counter_overflow_is_refused,
    counter_concurrent_adds_sum,
    lease_is_exclusive_while_held,
    lease_expires_and_can_be_taken,
    lease_renew_extends,
    lease_renew_fails_after_expiry,
    lease_zero_ttl_is_an_error,
    notify_wakes_waiter,
    notify_from_other_handle_wakes_waiter,
    wait_times_out_without_notify,
    notify_before_subscribe_is_not_seen,
    two_waiters_on_one_channel_both_wake,
    many_waiters_all_wake,
    channels_are_independent,
    wait_consumes_notifications,
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

async fn pop_all(c: &Coord, queue: &str) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(item) = c.queue_pop(queue).await.expect("pop") {
        out.push(item);
    }
    out
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

// ----- general -------------------------------------------------------------------

async fn identifies_and_pings(a: Coord, b: Coord) {
    assert!(matches!(a.backend_name(), "local" | "redis"));
    assert_eq!(a.backend_name(), b.backend_name());
    a.ping().await.expect("ping a");
    b.ping().await.expect("ping b");
}

// ----- queue ---------------------------------------------------------------------

async fn queue_pops_by_priority_then_fifo(a: Coord, b: Coord) {
    for (item, priority) in [
        ("low-1", 0),
        ("high-1", 10),
        ("low-2", 0),
        ("mid-1", 5),
        ("high-2", 10),
        ("neg-1", -3),
        ("low-3", 0),
        ("mid-2", 5),
    ] {
        a.queue_push("q", item, priority).await.expect("push");
    }
    let expected = strings(&[
        "high-1", "high-2", "mid-1", "mid-2", "low-1", "low-2", "low-3", "neg-1",
    ]);
    assert_eq!(b.queue_len("q").await.expect("len"), 8);
    assert_eq!(b.queue_peek("q", 100).await.expect("peek"), expected);
    assert_eq!(pop_all(&b, "q").await, expected);
    assert_eq!(a.queue_len("q").await.expect("len"), 0);
    assert_eq!(a.queue_pop("q").await.expect("pop"), None);
}

async fn queue_covers_full_priority_range(a: Coord, _b: Coord) {
    // Extremes and values that would lose precision in an f64 score.
    let priorities = [
        0,
        i64::MIN,
        i64::MAX,
        -1,
        1,
        (1 << 53) + 1,
        1 << 53,
        -(1 << 53) - 1,
        i64::MAX - 1,
        i64::MIN + 1,
    ];
    for p in priorities {
        a.queue_push("q", &p.to_string(), p).await.expect("push");
    }
    let mut sorted = priorities.to_vec();
    sorted.sort_unstable_by(|x, y| y.cmp(x));
    let expected: Vec<String> = sorted.iter().map(i64::to_string).collect();
    assert_eq!(pop_all(&a, "q").await, expected);
}

async fn queue_push_existing_updates_priority_without_duplicate(a: Coord, b: Coord) {
    for item in ["a", "b", "c"] {
        a.queue_push("q", item, 1).await.expect("push");
    }
    // Same item, same priority: no duplicate, order unchanged.
    b.queue_push("q", "a", 1).await.expect("push again");
    assert_eq!(a.queue_len("q").await.expect("len"), 3);
    assert_eq!(
        a.queue_peek("q", 10).await.expect("peek"),
        strings(&["a", "b", "c"])
    );
    // Raised: goes first.
    b.queue_push("q", "c", 10).await.expect("raise");
    assert_eq!(
        a.queue_peek("q", 10).await.expect("peek"),
        strings(&["c", "a", "b"])
    );
    // Lowered back: keeps its original arrival among equals, so it is last again
    // (pushed after a and b), not re-queued behind later arrivals.
    a.queue_push("q", "d", 1).await.expect("push d");
    b.queue_push("q", "c", 1).await.expect("lower");
    assert_eq!(
        a.queue_peek("q", 10).await.expect("peek"),
        strings(&["a", "b", "c", "d"])
    );
    b.queue_push("q", "a", -5).await.expect("lower a");
    assert_eq!(pop_all(&a, "q").await, strings(&["b", "c", "d", "a"]));
}

async fn queue_remove_len_and_peek(a: Coord, b: Coord) {
    assert_eq!(a.queue_len("q").await.expect("len"), 0);
    assert!(a.queue_peek("q", 5).await.expect("peek").is_empty());
    assert!(!a.queue_remove("q", "x").await.expect("remove missing"));
    for (i, item) in ["a", "b", "c", "d"].into_iter().enumerate() {
        a.queue_push("q", item, i64::try_from(i).expect("small"))
            .await
            .expect("push");
    }
    assert_eq!(
        b.queue_peek("q", 0).await.expect("peek 0"),
        Vec::<String>::new()
    );
    assert_eq!(
        b.queue_peek("q", 2).await.expect("peek 2"),
        strings(&["d", "c"])
    );
    assert!(b.queue_remove("q", "c").await.expect("remove"));
    assert!(!a.queue_remove("q", "c").await.expect("remove twice"));
    assert_eq!(a.queue_len("q").await.expect("len"), 3);
    assert_eq!(
        a.queue_peek("q", 2).await.expect("peek"),
        strings(&["d", "b"])
    );
    // A removed item can be pushed again and is a new arrival.
    a.queue_push("q", "c", 1).await.expect("push again");
    assert_eq!(pop_all(&b, "q").await, strings(&["d", "b", "c", "a"]));
    assert!(!a.queue_remove("q", "a").await.expect("remove from empty"));
}

async fn queue_items_may_hold_any_text(a: Coord, _b: Coord) {
    let items = [
        "",
        "plain",
        "with:colons:and spaces",
        "glob*?[chars]\\",
        "ünïcødé — 翻訳 📚",
        "0000000000000000000000000000000000000000",
    ];
    for item in items {
        a.queue_push("q:odd name*", item, 0).await.expect("push");
    }
    assert_eq!(a.queue_len("q:odd name*").await.expect("len"), 6);
    assert!(
        a.queue_remove("q:odd name*", "glob*?[chars]\\")
            .await
            .expect("remove")
    );
    assert_eq!(
        pop_all(&a, "q:odd name*").await,
        strings(&[
            "",
            "plain",
            "with:colons:and spaces",
            "ünïcødé — 翻訳 📚",
            "0000000000000000000000000000000000000000",
        ])
    );
}

async fn queues_are_independent(a: Coord, b: Coord) {
    a.queue_push("q1", "x", 0).await.expect("push");
    a.queue_push("q2", "y", 0).await.expect("push");
    // The same item in two queues is two entries.
    a.queue_push("q2", "x", 5).await.expect("push");
    assert_eq!(b.queue_len("q1").await.expect("len"), 1);
    assert_eq!(b.queue_len("q2").await.expect("len"), 2);
    assert!(b.queue_remove("q2", "x").await.expect("remove"));
    assert_eq!(b.queue_peek("q1", 5).await.expect("peek"), strings(&["x"]));
    assert_eq!(b.queue_pop("q2").await.expect("pop").as_deref(), Some("y"));
    assert_eq!(b.queue_pop("q1").await.expect("pop").as_deref(), Some("x"));
}

async fn queue_pop_is_atomic_under_concurrent_poppers(a: Coord, b: Coord) {
    const ITEMS: usize = 400;
    const POPPERS: usize = 20;
    for i in 0..ITEMS {
        let priority = i64::try_from(i % 7).expect("small");
        a.queue_push("q", &format!("item-{i}"), priority)
            .await
            .expect("push");
    }
    let mut tasks = Vec::new();
    for p in 0..POPPERS {
        // Half the poppers on each handle: with Redis, two connections.
        let c = if p % 2 == 0 {
            Arc::clone(&a)
        } else {
            Arc::clone(&b)
        };
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            while let Some(item) = c.queue_pop("q").await.expect("pop") {
                got.push(item);
                tokio::task::yield_now().await;
            }
            got
        }));
    }
    let mut seen = HashSet::new();
    let mut total = 0;
    for t in tasks {
        for item in t.await.expect("popper") {
            total += 1;
            assert!(seen.insert(item.clone()), "{item} popped twice");
        }
    }
    assert_eq!(total, ITEMS);
    assert_eq!(seen.len(), ITEMS);
    assert_eq!(a.queue_len("q").await.expect("len"), 0);
}

async fn queue_concurrent_pushes_all_land(a: Coord, b: Coord) {
    const PUSHERS: usize = 10;
    const EACH: usize = 30;
    let mut tasks = Vec::new();
    for p in 0..PUSHERS {
        let c = if p % 2 == 0 {
            Arc::clone(&a)
        } else {
            Arc::clone(&b)
        };
        tasks.push(tokio::spawn(async move {
            for i in 0..EACH {
                c.queue_push("q", &format!("p{p}-{i}"), 0)
                    .await
                    .expect("push");
                // Every pusher also re-pushes one shared item: never duplicated.
                c.queue_push("q", "shared", 0).await.expect("push shared");
            }
        }));
    }
    for t in tasks {
        t.await.expect("pusher");
    }
    assert_eq!(
        a.queue_len("q").await.expect("len"),
        u64::try_from(PUSHERS * EACH + 1).expect("small")
    );
    // FIFO within one pusher survives concurrency.
    let order = pop_all(&a, "q").await;
    for p in 0..PUSHERS {
        let mine: Vec<&String> = order
            .iter()
            .filter(|s| s.starts_with(&format!("p{p}-")))
            .collect();
        let expected: Vec<String> = (0..EACH).map(|i| format!("p{p}-{i}")).collect();
        assert_eq!(mine, expected.iter().collect::<Vec<_>>());
    }
}

// ----- counters ------------------------------------------------------------------

async fn counters_add_get_set(a: Coord, b: Coord) {
    assert_eq!(a.counter_get("c").await.expect("get"), 0);
    assert_eq!(a.counter_add("c", 5).await.expect("add"), 5);
    assert_eq!(b.counter_add("c", -7).await.expect("add"), -2);
    assert_eq!(a.counter_get("c").await.expect("get"), -2);
    b.counter_set("c", 100).await.expect("set");
    assert_eq!(a.counter_get("c").await.expect("get"), 100);
    assert_eq!(a.counter_add("c", 0).await.expect("add 0"), 100);
    assert_eq!(a.counter_get("other").await.expect("get"), 0);
    assert_eq!(a.counter_add("other", 1).await.expect("add"), 1);
    assert_eq!(b.counter_get("c").await.expect("get"), 100);
    b.counter_set("c", 0).await.expect("set 0");
    assert_eq!(a.counter_get("c").await.expect("get"), 0);
}

async fn counter_overflow_is_refused(a: Coord, _b: Coord) {
    a.counter_set("c", i64::MAX).await.expect("set");
    assert!(a.counter_add("c", 1).await.is_err());
    assert_eq!(a.counter_get("c").await.expect("get"), i64::MAX);
    a.counter_set("c", i64::MIN).await.expect("set");
    assert!(a.counter_add("c", -1).await.is_err());
    assert_eq!(a.counter_get("c").await.expect("get"), i64::MIN);
}

async fn counter_concurrent_adds_sum(a: Coord, b: Coord) {
    let mut tasks = Vec::new();
    for t in 0..20 {
        let c = if t % 2 == 0 {
            Arc::clone(&a)
        } else {
            Arc::clone(&b)
        };
        tasks.push(tokio::spawn(async move {
            for _ in 0..25 {
                c.counter_add("c", 2).await.expect("add");
                c.counter_add("c", -1).await.expect("sub");
            }
        }));
    }
    for t in tasks {
        t.await.expect("adder");
    }
    assert_eq!(a.counter_get("c").await.expect("get"), 500);
}

// ----- leases --------------------------------------------------------------------

async fn lease_is_exclusive_while_held(a: Coord, b: Coord) {
    let ttl = Duration::from_secs(30);
    assert_eq!(a.lease_holder("job").await.expect("holder"), None);
    assert!(a.lease_acquire("job", "w1", ttl).await.expect("acquire"));
    assert_eq!(
        b.lease_holder("job").await.expect("holder").as_deref(),
        Some("w1")
    );
    // Not stealable: acquire, renew and release by another holder all fail.
    assert!(!b.lease_acquire("job", "w2", ttl).await.expect("steal"));
    assert!(!b.lease_renew("job", "w2", ttl).await.expect("renew other"));
    assert!(!b.lease_release("job", "w2").await.expect("release other"));
    assert_eq!(
        a.lease_holder("job").await.expect("holder").as_deref(),
        Some("w1")
    );
    // Re-acquiring by the holder succeeds (renews).
    assert!(a.lease_acquire("job", "w1", ttl).await.expect("reacquire"));
    assert!(a.lease_renew("job", "w1", ttl).await.expect("renew"));
    // Other keys are unaffected.
    assert!(
        b.lease_acquire("job-2", "w2", ttl)
            .await
            .expect("other key")
    );
    // Release by the holder frees it for others.
    assert!(a.lease_release("job", "w1").await.expect("release"));
    assert!(!a.lease_release("job", "w1").await.expect("release twice"));
    assert_eq!(a.lease_holder("job").await.expect("holder"), None);
    assert!(
        !a.lease_renew("job", "w1", ttl)
            .await
            .expect("renew released")
    );
    assert!(
        b.lease_acquire("job", "w2", ttl)
            .await
            .expect("acquire freed")
    );
    assert_eq!(
        a.lease_holder("job").await.expect("holder").as_deref(),
        Some("w2")
    );
}

async fn lease_expires_and_can_be_taken(a: Coord, b: Coord) {
    assert!(
        a.lease_acquire("job", "w1", LEASE_TTL)
            .await
            .expect("acquire")
    );
    assert!(!b.lease_acquire("job", "w2", LEASE_TTL).await.expect("held"));
    tokio::time::sleep(PAST_TTL).await;
    assert_eq!(a.lease_holder("job").await.expect("holder"), None);
    assert!(
        b.lease_acquire("job", "w2", Duration::from_secs(30))
            .await
            .expect("take expired")
    );
    // The old holder has lost it for good.
    assert!(
        !a.lease_renew("job", "w1", LEASE_TTL)
            .await
            .expect("renew lost")
    );
    assert!(!a.lease_release("job", "w1").await.expect("release lost"));
    assert!(
        !a.lease_acquire("job", "w1", LEASE_TTL)
            .await
            .expect("reacquire lost")
    );
    assert_eq!(
        a.lease_holder("job").await.expect("holder").as_deref(),
        Some("w2")
    );
}

async fn lease_renew_extends(a: Coord, b: Coord) {
    assert!(
        a.lease_acquire("job", "w1", LEASE_TTL)
            .await
            .expect("acquire")
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(a.lease_renew("job", "w1", LEASE_TTL).await.expect("renew"));
    // 400 ms after acquiring: past the first TTL, within the renewed one.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        b.lease_holder("job").await.expect("holder").as_deref(),
        Some("w1")
    );
    assert!(
        !b.lease_acquire("job", "w2", LEASE_TTL)
            .await
            .expect("still held")
    );
    // Acquire by the holder renews too.
    assert!(
        a.lease_acquire("job", "w1", Duration::from_secs(30))
            .await
            .expect("acquire renews")
    );
    tokio::time::sleep(PAST_TTL).await;
    assert_eq!(
        b.lease_holder("job").await.expect("holder").as_deref(),
        Some("w1")
    );
}

async fn lease_renew_fails_after_expiry(a: Coord, _b: Coord) {
    assert!(
        a.lease_acquire("job", "w1", LEASE_TTL)
            .await
            .expect("acquire")
    );
    tokio::time::sleep(PAST_TTL).await;
    // Expired means lost, even if nobody took it meanwhile: the holder must stop.
    assert!(
        !a.lease_renew("job", "w1", LEASE_TTL)
            .await
            .expect("renew expired")
    );
    assert_eq!(a.lease_holder("job").await.expect("holder"), None);
    // It can be acquired afresh.
    assert!(
        a.lease_acquire("job", "w1", LEASE_TTL)
            .await
            .expect("acquire again")
    );
}

async fn lease_zero_ttl_is_an_error(a: Coord, _b: Coord) {
    assert!(a.lease_acquire("job", "w1", Duration::ZERO).await.is_err());
    assert_eq!(a.lease_holder("job").await.expect("holder"), None);
    assert!(
        a.lease_acquire("job", "w1", LEASE_TTL)
            .await
            .expect("acquire")
    );
    assert!(a.lease_renew("job", "w1", Duration::ZERO).await.is_err());
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

// ----- Redis only ----------------------------------------------------------------

mod redis_only {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::broadcast;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn namespaces_do_not_see_each_other() {
        let Some(url) = redis_url() else {
            return;
        };
        let (ns1, ns2) = (random_namespace(), random_namespace());
        let one = connect_redis(&url, &ns1).await;
        let two = connect_redis(&url, &ns2).await;
        one.queue_push("q", "x", 0).await.expect("push");
        one.counter_add("c", 3).await.expect("add");
        assert!(one.lease_acquire("l", "w1", SOON).await.expect("acquire"));
        let mut sub = two.subscribe(&Channel::request("ch"));
        one.notify(&Channel::request("ch")).await.expect("notify");
        let one_dyn: Coord = one.clone();
        settle(&one_dyn).await;

        assert_eq!(two.queue_len("q").await.expect("len"), 0);
        assert_eq!(two.counter_get("c").await.expect("get"), 0);
        assert!(two.lease_acquire("l", "w2", SOON).await.expect("acquire"));
        assert!(!sub.wait(Duration::from_millis(100)).await);

        assert!(one.purge_namespace().await.expect("purge") >= 3);
        two.purge_namespace().await.expect("purge");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn unreachable_server_is_an_error() {
        // Port 1 on localhost: connection refused at once.
        let result = RedisCoordination::connect("redis://127.0.0.1:1", "x:").await;
        assert!(result.is_err());
        assert!(RedisCoordination::connect("not a url", "x:").await.is_err());
    }

    /// A TCP proxy in front of Redis whose open connections can be cut, to
    /// simulate a network failure without touching the shared server.
    struct CuttableProxy {
        addr: std::net::SocketAddr,
        cut: broadcast::Sender<()>,
        task: tokio::task::JoinHandle<()>,
    }

    impl CuttableProxy {
        async fn start(target: String) -> Self {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("addr");
            let (cut, _) = broadcast::channel::<()>(4);
            let cut_tx = cut.clone();
            let task = tokio::spawn(async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    let mut cut_rx = cut_tx.subscribe();
                    let target = target.clone();
                    tokio::spawn(async move {
                        let Ok(mut outbound) = TcpStream::connect(&target).await else {
                            return;
                        };
                        tokio::select! {
                            _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                            _ = cut_rx.recv() => {
                                let _ = inbound.shutdown().await;
                            }
                        }
                    });
                }
            });
            Self { addr, cut, task }
        }

        fn cut_all(&self) {
            let _ = self.cut.send(());
        }
    }

    impl Drop for CuttableProxy {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    /// Splits `redis://[auth@]host[:port][/db]` into (before, host:port, after).
    fn split_authority(url: &str) -> Option<(String, String, String)> {
        let rest = url.strip_prefix("redis://")?;
        let end = rest.find('/').unwrap_or(rest.len());
        let authority = &rest[..end];
        let host_start = authority.rfind('@').map_or(0, |i| i + 1);
        let host = &authority[host_start..];
        let host = if host.contains(':') {
            host.to_owned()
        } else {
            format!("{host}:6379")
        };
        Some((
            format!("redis://{}", &authority[..host_start]),
            host,
            rest[end..].to_owned(),
        ))
    }

    async fn retry<T, F, Fut>(what: &str, mut op: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, crate::error::ModelError>>,
    {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match op().await {
                Ok(v) => return v,
                Err(e) if Instant::now() < deadline => {
                    eprintln!("{what} failed, retrying: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("{what} kept failing: {e}"),
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn listener_survives_a_lost_connection_and_wakes_waiters() {
        let Some(url) = redis_url() else {
            return;
        };
        let Some((before, target, after)) = split_authority(&url) else {
            eprintln!("TEST_REDIS_URL is not redis://…: connection-loss test not run");
            return;
        };
        let proxy = CuttableProxy::start(target).await;
        let proxied = format!("{before}{}{after}", proxy.addr);
        let namespace = random_namespace();
        let c = connect_redis(&proxied, &namespace).await;

        let mut sub = c.subscribe(&Channel::request("ch"));
        proxy.cut_all();
        // Notifies may have been lost while the listener was away, so on
        // reconnecting it wakes every waiter.
        assert!(
            sub.wait(Duration::from_secs(10)).await,
            "not woken after reconnect"
        );

        // Commands recover (the first one after the cut may fail) and
        // notifications flow again.
        let channel = Channel::request("ch");
        let mut after_cut = c.subscribe(&channel);
        retry("notify", || c.notify(&channel)).await;
        assert!(
            after_cut.wait(SOON).await,
            "notify after reconnect not delivered"
        );
        retry("queue push", || c.queue_push("q", "x", 0)).await;
        assert_eq!(c.queue_pop("q").await.expect("pop").as_deref(), Some("x"));
        retry("purge", || c.purge_namespace()).await;
    }

    #[test]
    fn split_authority_handles_auth_and_db() {
        assert_eq!(
            split_authority("redis://127.0.0.1:6379"),
            Some(("redis://".into(), "127.0.0.1:6379".into(), String::new()))
        );
        assert_eq!(
            split_authority("redis://:pw@host/2"),
            Some(("redis://:pw@".into(), "host:6379".into(), "/2".into()))
        );
        assert_eq!(split_authority("rediss://host"), None);
    }
}
