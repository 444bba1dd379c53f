//! The delivery role's results loop: stores the result of every request
//! that ended completed (the scheduler's wake-up on the webhook channel says
//! one did; a look every few seconds catches the rest), and deletes stored
//! results once their retention is over. A build that fails is logged and
//! tried again later, waiting longer after each failure.

use crate::error::DeliveryError;
use crate::stored::{self, ResultStore};
use crate::webhooks::RetrySchedule;
use dragoman_model::clock;
use dragoman_model::coordination::Coordination;
use dragoman_model::vocab::Channel;
use sea_orm::DatabaseConnection;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// Longest sleep between two looks for results to store.
const LOOK_EVERY: Duration = Duration::from_secs(5);
/// Time between two sweeps of expired results.
const SWEEP_EVERY: Duration = Duration::from_secs(300);
/// Requests looked at in one pass.
const BATCH: u64 = 50;
/// Expired results deleted per round of a sweep.
const SWEEP_BATCH: u64 = 200;
/// Waits before a failed build is tried again.
const RETRY: RetrySchedule = RetrySchedule {
    first: Duration::from_secs(10),
    longest: Duration::from_secs(600),
};

/// What one pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pass {
    /// Results built and stored (or found stored by another process).
    pub stored: usize,
    /// Builds that failed; each waits before it is tried again.
    pub failed: usize,
}

/// A request whose build failed.
struct Failing {
    failures: u32,
    next_try: Instant,
}

pub struct ResultsLoop {
    db: DatabaseConnection,
    coordination: Arc<dyn Coordination>,
    store: ResultStore,
    failing: Mutex<HashMap<String, Failing>>,
}

impl ResultsLoop {
    pub fn new(
        db: DatabaseConnection,
        coordination: Arc<dyn Coordination>,
        store: ResultStore,
    ) -> Self {
        Self {
            db,
            coordination,
            store,
            failing: Mutex::new(HashMap::new()),
        }
    }

    /// Runs until `stop` turns true.
    pub async fn run(&self, mut stop: watch::Receiver<bool>) {
        let mut next_sweep = Instant::now();
        while !*stop.borrow() {
            // Subscribed before looking, so a request ending meanwhile wakes us.
            let mut wake = self.coordination.subscribe(&Channel::Webhooks);
            if let Err(e) = self.pass().await {
                tracing::warn!(error = %e, "looking for results to store");
            }
            if Instant::now() >= next_sweep {
                match self.sweep().await {
                    Ok(0) => {}
                    Ok(deleted) => tracing::info!(deleted, "expired results deleted"),
                    Err(e) => tracing::warn!(error = %e, "deleting expired results"),
                }
                next_sweep = Instant::now() + SWEEP_EVERY;
            }
            tokio::select! {
                _ = wake.wait(LOOK_EVERY) => {}
                _ = stop.changed() => {}
            }
        }
    }

    /// Builds and stores the results still missing, except those waiting
    /// after a failure.
    pub async fn pass(&self) -> Result<Pass, DeliveryError> {
        let since = clock::now().saturating_sub(self.store.retention_seconds());
        let waiting = self.waiting();
        let mut pass = Pass::default();
        for request_id in stored::missing(&self.db, since, waiting, BATCH).await? {
            match self
                .store
                .ensure(&self.db, self.coordination.as_ref(), &request_id)
                .await
            {
                Ok(Some(_)) => {
                    self.succeeded(&request_id);
                    pass.stored += 1;
                }
                // Another process is building it.
                Ok(None) => {}
                Err(e) => {
                    let wait = self.failed(&request_id);
                    tracing::warn!(
                        request = %request_id,
                        error = %e,
                        retry_in_seconds = wait.as_secs(),
                        "storing the result failed"
                    );
                    pass.failed += 1;
                }
            }
        }
        if pass.stored > 0 {
            // Final webhooks waiting for these results can go now; a failed
            // notify only delays them until the dispatcher's next look.
            if let Err(e) = self.coordination.notify(&Channel::Webhooks).await {
                tracing::warn!(error = %e, "coordination notify failed");
            }
        }
        Ok(pass)
    }

    /// Deletes every stored result whose retention is over, and uploads
    /// left behind by a gateway that stopped.
    pub async fn sweep(&self) -> Result<usize, DeliveryError> {
        let mut total = self.store.sweep_uploads(clock::now()).await?;
        loop {
            let deleted = self
                .store
                .sweep(&self.db, clock::now(), SWEEP_BATCH)
                .await?;
            total += deleted;
            // A short round means nothing more is expired, or the rest
            // could not be deleted now.
            if u64::try_from(deleted).unwrap_or(0) < SWEEP_BATCH {
                return Ok(total);
            }
        }
    }

    /// Requests not to try now, and forgets those that stopped needing a
    /// build (stored elsewhere, or out of the retention window): they were
    /// due long ago and were not tried again.
    fn waiting(&self) -> Vec<String> {
        let now = Instant::now();
        let Ok(mut failing) = self.failing.lock() else {
            return Vec::new();
        };
        failing.retain(|_, f| f.next_try + RETRY.longest > now);
        failing
            .iter()
            .filter(|(_, f)| f.next_try > now)
            .map(|(id, _)| id.clone())
            .collect()
    }

    fn succeeded(&self, request_id: &str) {
        if let Ok(mut failing) = self.failing.lock() {
            failing.remove(request_id);
        }
    }

    /// Records a failure; returns the wait before the next try.
    fn failed(&self, request_id: &str) -> Duration {
        let Ok(mut failing) = self.failing.lock() else {
            return RETRY.first;
        };
        let entry = failing.entry(request_id.to_owned()).or_insert(Failing {
            failures: 0,
            next_try: Instant::now(),
        });
        entry.failures = entry.failures.saturating_add(1);
        let wait = RETRY.delay(entry.failures);
        entry.next_try = Instant::now() + wait;
        wait
    }
}
