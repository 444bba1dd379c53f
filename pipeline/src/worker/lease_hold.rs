//! How long a worker may trust the lease it holds when renewals fail.
//!
//! A renewal the scheduler granted extends the lease to at least the time
//! the renewal was sent plus the lease (the scheduler counts from when it
//! received it, in whole seconds, and another worker takes the job over only
//! once that has passed). A worker that cannot reach the scheduler therefore
//! knows when another one may take its job: it stops starting provider
//! calls a margin before (its job drains: the calls in flight come back and
//! are stored), and lets the job go when the lease is out. Without this, a
//! worker cut off from the scheduler but not from the provider would go on
//! translating passages that the worker taking over sends again, and each
//! would be paid twice.

use std::time::Duration;
use tokio::time::Instant;

/// The part of a lease kept free of new provider calls before it runs out
/// without a renewal: a fifth of the lease, at least one second, at most
/// half of it.
pub(super) fn margin(lease: Duration) -> Duration {
    (lease / 5).max(Duration::from_secs(1)).min(lease / 2)
}

/// The lease a worker holds, as far as its renewals show.
#[derive(Debug, Clone, Copy)]
pub(super) struct LeaseHold {
    lease: Duration,
    /// When the last renewal granted was sent (the lease itself, at first:
    /// it was granted just before the worker began).
    since: Instant,
}

impl LeaseHold {
    pub(super) fn new(lease: Duration, since: Instant) -> LeaseHold {
        LeaseHold { lease, since }
    }

    /// A renewal sent at `sent` was granted.
    pub(super) fn renewed(&mut self, sent: Instant) {
        self.since = self.since.max(sent);
    }

    /// From when no provider call may start: the margin before the lease
    /// runs out.
    pub(super) fn fence_at(&self) -> Instant {
        self.since + self.lease.saturating_sub(margin(self.lease))
    }

    /// From when another worker may hold the job.
    pub(super) fn lost_at(&self) -> Instant {
        self.since + self.lease
    }
}

/// How often the lease is renewed: three times a lease, so two renewals
/// may fail before the margin is reached.
pub(super) fn beat_every(lease: Duration) -> Duration {
    (lease / 3).max(Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_margin_is_a_fifth_of_the_lease_within_bounds() {
        assert_eq!(margin(Duration::from_secs(30)), Duration::from_secs(6));
        assert_eq!(margin(Duration::from_secs(3)), Duration::from_secs(1));
        assert_eq!(margin(Duration::from_secs(1)), Duration::from_millis(500));
    }

    #[test]
    fn calls_stop_before_the_lease_can_pass_to_another_worker() {
        let start = Instant::now();
        let lease = Duration::from_secs(30);
        let mut hold = LeaseHold::new(lease, start);
        assert_eq!(hold.fence_at(), start + Duration::from_secs(24));
        assert_eq!(hold.lost_at(), start + lease);
        // Two renewals fail in between: the times stay.
        assert!(hold.fence_at() > start + beat_every(lease) * 2);
        // A renewal granted moves both from when it was sent.
        hold.renewed(start + Duration::from_secs(10));
        assert_eq!(hold.fence_at(), start + Duration::from_secs(34));
        assert_eq!(hold.lost_at(), start + Duration::from_secs(40));
        // An older renewal answered late does not move them back.
        hold.renewed(start + Duration::from_secs(5));
        assert_eq!(hold.lost_at(), start + Duration::from_secs(40));
    }
}
