//! Provider capacity slots: expiring coordination leases shared by every
//! worker of the installation, so that a provider never gets more calls at
//! once than its capacity, and a crashed worker's slot comes back.
//!
//! Capacity is work-conserving. A job's share is its ticket's `threads` (the
//! volume's share, lowered by the request's `threads`). Below its share a
//! job takes any free slot, and while it waits for one it says so: a
//! reservation under its job id in the provider's `waiting` pool, which
//! expires on its own if its worker dies. At or above its share a job takes
//! a free slot only while no job of the provider waits for its share. A
//! lone book thus uses the whole provider; once another book waits, the
//! first gives its extra slots back as their calls end (a call in flight is
//! never cut), and each then holds its share. How many calls a job sends at
//! most is [`parallel_calls`]: `threads` stays the ceiling when the client
//! set it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use dragoman_model::coordination::Coordination;
use dragoman_model::entities::provider;
use dragoman_model::ids;
use dragoman_proto::v1::JobTicket;
use tokio::sync::Notify;

use super::Worker;
use super::budget_guard::Purse;

/// How often a call waiting for a slot looks again when no call of this
/// process gives one back meanwhile (a slot freed by another process, an
/// expired one).
const LOOK_AGAIN: Duration = Duration::from_millis(50);

/// How long a job's word that it waits for its share lasts unless said
/// again: many looks, so it never lapses while the job waits, and short, so
/// a dead worker's word stops holding other jobs back soon.
const WAITING_TTL: Duration = Duration::from_secs(2);

/// The room of the `waiting` pool: it only counts waiting jobs, never
/// refuses one.
const WAITING_ROOM: f64 = 1e9;

/// The most calls a job may have in flight at once (the ceiling of
/// `threads` in the spec).
const MOST_CALLS: usize = 64;

/// How many calls of a job run side by side: its ticket's `max_threads`
/// when the client set `threads`; else as many as the provider's
/// `capacity` (never fewer than its share) and a quarter more, which wait
/// for a slot. The slots decide how many go at once: the calls waiting
/// take a slot the moment one is given back, while the call that gave it
/// stores what it got, so the provider never idles between two calls.
pub(super) fn parallel_calls(ticket: &JobTicket, capacity: usize) -> usize {
    let share = usize::try_from(ticket.threads).unwrap_or(1);
    let most = match ticket.max_threads {
        Some(max) => usize::try_from(max).unwrap_or(1),
        None => {
            let slots = capacity.max(share);
            slots + slots.div_ceil(4)
        }
    };
    most.clamp(1, MOST_CALLS)
}

/// What a job holds of its provider's capacity, counted by the worker that
/// runs it (a job runs in one process).
#[derive(Debug)]
pub(super) struct JobSlots {
    job_id: String,
    share: usize,
    /// Shared with each [`Slot`] the job holds, which counts itself off
    /// when given back.
    held: Arc<AtomicUsize>,
    /// The job's calls waiting for a slot now.
    seeking: AtomicUsize,
}

impl JobSlots {
    pub(super) fn new(ticket: &JobTicket) -> JobSlots {
        JobSlots {
            job_id: ticket.job_id.clone(),
            share: usize::try_from(ticket.threads).unwrap_or(1).max(1),
            held: Arc::default(),
            seeking: AtomicUsize::new(0),
        }
    }

    /// Whether the job holds less than its share: it may take any free slot.
    fn below_share(&self) -> bool {
        self.held.load(Ordering::SeqCst) < self.share
    }
}

/// One call of a job counted among those seeking a slot, until it ends or
/// is dropped (a call given up while it waits).
struct Seeking<'a>(&'a AtomicUsize);

impl<'a> Seeking<'a> {
    fn start(count: &'a AtomicUsize) -> Seeking<'a> {
        count.fetch_add(1, Ordering::SeqCst);
        Seeking(count)
    }

    /// Ends the count; whether other calls of the job still seek.
    fn end(self) -> bool {
        let others = self.0.fetch_sub(1, Ordering::SeqCst) > 1;
        std::mem::forget(self);
        others
    }
}

impl Drop for Seeking<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A slot held; give it back with [`Worker::release_slot`].
pub(super) struct Slot {
    key: String,
    holder: String,
    /// The count of slots its job holds.
    held: Arc<AtomicUsize>,
    job_id: String,
    share: usize,
    /// The `waiting` pool of its provider.
    pool: String,
}

/// The coordination pool where jobs of provider `provider_id` say they
/// wait for their share.
fn waiting_pool(provider_id: &str) -> String {
    format!("provider:{provider_id}:waiting")
}

/// The capacity slots of every provider as one worker process takes them.
#[derive(Debug, Default)]
pub struct ProviderSlots {
    /// Wakes this process's calls waiting for a slot when one of its calls
    /// gives one back.
    freed: Notify,
}

impl ProviderSlots {
    /// Waits for one of `capacity` slots of provider `provider_id` (the rule
    /// of the module's doc), leased for `ttl`; none once the process of
    /// `purse`'s job drains (the call is not to start).
    pub(super) async fn take(
        &self,
        coordination: &dyn Coordination,
        provider_id: &str,
        capacity: usize,
        purse: &Purse,
        ttl: Duration,
    ) -> Option<Slot> {
        let job = purse.slots();
        let seeking = Seeking::start(&job.seeking);
        let slot = self
            .seek(coordination, provider_id, capacity, purse, ttl)
            .await;
        if !seeking.end() || !job.below_share() {
            stop_waiting(coordination, provider_id, job).await;
        }
        slot
    }

    async fn seek(
        &self,
        coordination: &dyn Coordination,
        provider_id: &str,
        capacity: usize,
        purse: &Purse,
        ttl: Duration,
    ) -> Option<Slot> {
        let job = purse.slots();
        let holder = ids::new_id();
        let pool = waiting_pool(provider_id);
        loop {
            if purse.draining() {
                return None;
            }
            // Registered before looking, so a slot given back in between
            // still wakes this call.
            let freed = self.freed.notified();
            let may_take = if job.below_share() {
                // Said before looking, so a job above its share that looks
                // at the same time already sees it.
                let _ = coordination
                    .reserve(&pool, &job.job_id, 1.0, WAITING_ROOM, WAITING_TTL)
                    .await;
                true
            } else {
                stop_waiting(coordination, provider_id, job).await;
                // A coordination that does not answer holds nobody back.
                coordination
                    .reserved(&pool)
                    .await
                    .map_or(true, |waiting| waiting < 0.5)
            };
            if may_take {
                for index in 0..capacity {
                    let key = format!("provider:{provider_id}:slot:{index}");
                    if coordination
                        .lease_acquire(&key, &holder, ttl)
                        .await
                        .unwrap_or(false)
                    {
                        job.held.fetch_add(1, Ordering::SeqCst);
                        return Some(Slot {
                            key,
                            holder,
                            held: job.held.clone(),
                            job_id: job.job_id.clone(),
                            share: job.share,
                            pool,
                        });
                    }
                }
            }
            tokio::select! {
                () = freed => {}
                () = tokio::time::sleep(LOOK_AGAIN) => {}
            }
        }
    }

    /// Gives `slot` back, counts it off its job and wakes this process's
    /// calls waiting for one. A job left below its share says it waits
    /// before the slot is free: its next call usually follows at once, and
    /// a job above its share woken by the free slot must not take it first.
    /// The word lapses if no call of the job asks again.
    pub(super) async fn release(&self, coordination: &dyn Coordination, slot: Slot) {
        let left = slot.held.fetch_sub(1, Ordering::SeqCst).saturating_sub(1);
        if left < slot.share {
            let _ = coordination
                .reserve(&slot.pool, &slot.job_id, 1.0, WAITING_ROOM, WAITING_TTL)
                .await;
        }
        let _ = coordination.lease_release(&slot.key, &slot.holder).await;
        self.freed.notify_waiters();
    }
}

/// Withdraws the job's word that it waits for its share.
async fn stop_waiting(coordination: &dyn Coordination, provider_id: &str, job: &JobSlots) {
    let _ = coordination
        .release(&waiting_pool(provider_id), &job.job_id)
        .await;
}

impl Worker {
    /// Waits for one of the provider's `capacity` slots for a call of
    /// `purse`'s job ([`ProviderSlots::take`]).
    pub(super) async fn take_slot(
        &self,
        provider: &provider::Model,
        capacity: usize,
        purse: &Purse,
    ) -> Option<Slot> {
        let ttl = Duration::from_secs(
            u64::try_from(self.config.lease_seconds)
                .unwrap_or(30)
                .max(1)
                * 4,
        );
        self.slots
            .take(
                self.coordination.as_ref(),
                &provider.id,
                capacity,
                purse,
                ttl,
            )
            .await
    }

    pub(super) async fn release_slot(&self, slot: Slot) {
        self.slots.release(self.coordination.as_ref(), slot).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dragoman_model::coordination::LocalCoordination;

    const LEASE: Duration = Duration::from_secs(60);
    /// Long beside a take that may go (a few local operations), short for
    /// a test: a take still waiting after it was held back.
    const HELD_BACK: Duration = Duration::from_millis(300);

    fn ticket(threads: i32, max_threads: Option<i32>) -> JobTicket {
        JobTicket {
            threads,
            max_threads,
            ..JobTicket::default()
        }
    }

    fn purse(job: &str, share: i32) -> Purse {
        let ticket = JobTicket {
            job_id: job.into(),
            threads: share,
            ..JobTicket::default()
        };
        Purse::new(&ticket, "w1")
    }

    struct Board {
        coordination: LocalCoordination,
        slots: ProviderSlots,
    }

    impl Board {
        fn new() -> Board {
            Board {
                coordination: LocalCoordination::new(),
                slots: ProviderSlots::default(),
            }
        }

        async fn take(&self, purse: &Purse) -> Option<Slot> {
            self.slots
                .take(&self.coordination, "p", 8, purse, LEASE)
                .await
        }

        /// A take that must go at once.
        async fn taken(&self, purse: &Purse) -> Slot {
            tokio::time::timeout(HELD_BACK, self.take(purse))
                .await
                .expect("a free slot is taken at once")
                .expect("not draining")
        }

        async fn give_back(&self, slot: Slot) {
            self.slots.release(&self.coordination, slot).await;
        }
    }

    #[test]
    fn a_job_runs_as_many_calls_as_the_provider_takes_unless_its_client_set_threads() {
        assert_eq!(parallel_calls(&ticket(4, None), 8), 10);
        assert_eq!(parallel_calls(&ticket(4, None), 2), 5);
        assert_eq!(parallel_calls(&ticket(2, Some(2)), 8), 2);
        assert_eq!(parallel_calls(&ticket(4, None), 500), MOST_CALLS);
        assert_eq!(parallel_calls(&ticket(0, Some(0)), 8), 1);
    }

    #[tokio::test]
    async fn a_lone_job_takes_the_whole_capacity_and_no_more() {
        let board = Board::new();
        let alone = purse("alone", 4);
        let mut held = Vec::new();
        for _ in 0..8 {
            held.push(board.taken(&alone).await);
        }
        assert_eq!(alone.slots().held.load(Ordering::SeqCst), 8);
        let ninth = tokio::time::timeout(HELD_BACK, board.take(&alone)).await;
        assert!(ninth.is_err(), "a ninth call waits for one of eight slots");
    }

    #[tokio::test]
    async fn extra_slots_go_back_to_a_job_waiting_for_its_share_as_calls_end() {
        let board = Board::new();
        let (first, second) = (purse("first", 4), purse("second", 4));
        let mut first_held = Vec::new();
        for _ in 0..8 {
            first_held.push(board.taken(&first).await);
        }

        // The second job waits; the first gives back its calls' slots one
        // by one and asks again each time: each slot goes to the second
        // job until it holds its share, and the first's asks wait.
        let mut second_held = Vec::new();
        for _ in 0..4 {
            let waiting = board.take(&second);
            let first_again = async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                board.give_back(first_held.pop().expect("held")).await;
                tokio::time::timeout(HELD_BACK, board.take(&first)).await
            };
            let (got, first_again) = tokio::join!(waiting, first_again);
            second_held.push(got.expect("the waiting job got a slot"));
            assert!(
                first_again.is_err(),
                "the first job, above its share, got a slot the second waited for"
            );
        }
        assert_eq!(first.slots().held.load(Ordering::SeqCst), 4);
        assert_eq!(second.slots().held.load(Ordering::SeqCst), 4);

        // The second job no longer waits: a slot the first gives back
        // (below its share now) is its own again at once.
        board.give_back(first_held.pop().expect("held")).await;
        let _again = board.taken(&first).await;
    }

    #[tokio::test]
    async fn a_job_that_stops_waiting_holds_nobody_back() {
        let board = Board::new();
        let (first, second) = (purse("first", 4), purse("second", 4));
        let mut first_held = Vec::new();
        for _ in 0..7 {
            first_held.push(board.taken(&first).await);
        }
        // The second job takes the last slot and asks for no more: its word
        // is withdrawn, though it is below its share, so the first (above
        // its share) may take back what it gives.
        let second_slot = board.taken(&second).await;
        board.give_back(first_held.pop().expect("held")).await;
        first_held.push(board.taken(&first).await);

        // A job that gives a slot back below its share keeps a claim on it
        // for its next call; unclaimed, the word lapses.
        board.give_back(second_slot).await;
        assert!(
            tokio::time::timeout(HELD_BACK, board.take(&first))
                .await
                .is_err(),
            "the first job took the slot the second gave back below its share"
        );
        let lapsed = WAITING_TTL + Duration::from_secs(1);
        let taken = tokio::time::timeout(lapsed, board.take(&first)).await;
        assert!(matches!(taken, Ok(Some(_))), "the word lapsed");
    }

    #[tokio::test]
    async fn a_draining_process_starts_no_call() {
        let board = Board::new();
        let (_drain, draining) = tokio::sync::watch::channel(true);
        let drained = purse("drained", 4).drained_by(draining);
        assert!(board.take(&drained).await.is_none());
    }
}
