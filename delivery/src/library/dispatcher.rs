//! The delivery role's publication loop: finds the publications that are
//! due, takes them one at a time, gathers the book's EPUB and sidecar and
//! writes them into the library folder. It sleeps until the next one is
//! due, or until a wake-up on [`Channel::Library`] says one was asked for.
//! Without a library folder nothing is attempted: pending publications
//! wait for the administrator, their attempts untouched.

use super::{LibraryPolicy, files, outbox, settings, source};
use crate::error::DeliveryError;
use crate::stored::ResultStore;
use dragoman_model::clock;
use dragoman_model::coordination::Coordination;
use dragoman_model::entities::publication;
use dragoman_model::vocab::Channel;
use sea_orm::DatabaseConnection;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Longest sleep between two looks at the publications (another process
/// may have asked for one this one was not woken for).
const LONGEST_SLEEP: Duration = Duration::from_secs(2);
/// Publications looked at per round.
const BATCH: u64 = 20;
/// How long a taken publication is out of other processes' reach: longer
/// than building a book's EPUB and writing it can take.
const LEASE: Duration = Duration::from_secs(900);

pub struct LibraryDispatcher {
    db: DatabaseConnection,
    coordination: Arc<dyn Coordination>,
    results: ResultStore,
    policy: LibraryPolicy,
}

impl LibraryDispatcher {
    pub fn new(
        db: DatabaseConnection,
        coordination: Arc<dyn Coordination>,
        results: ResultStore,
        policy: LibraryPolicy,
    ) -> Self {
        Self {
            db,
            coordination,
            results,
            policy,
        }
    }

    /// Runs until `stop` turns true; the publication being written then
    /// ends first.
    pub async fn run(&self, mut stop: watch::Receiver<bool>) {
        while !*stop.borrow() {
            // Subscribed before looking, so a publication asked for
            // meanwhile wakes us.
            let mut wake = self.coordination.subscribe(&Channel::Library);
            let sleep = match self.tick(&stop).await {
                Ok(Some(next)) => {
                    let ms = next.saturating_sub(clock::now_millis()).max(0);
                    Duration::from_millis(u64::try_from(ms).unwrap_or(0)).min(LONGEST_SLEEP)
                }
                Ok(None) => LONGEST_SLEEP,
                Err(e) => {
                    tracing::warn!(error = %e, "library publications");
                    LONGEST_SLEEP
                }
            };
            if sleep.is_zero() {
                continue;
            }
            tokio::select! {
                _ = wake.wait(sleep) => {}
                _ = stop.changed() => {}
            }
        }
    }

    /// Makes every due attempt; returns when the next pending publication
    /// is due, or `None` when there is none or no folder is configured.
    pub async fn tick(&self, stop: &watch::Receiver<bool>) -> Result<Option<i64>, DeliveryError> {
        let Some((library, _)) = settings::load(&self.db).await? else {
            return Ok(None);
        };
        for row in outbox::due(&self.db, clock::now_millis(), BATCH).await? {
            if *stop.borrow() {
                break;
            }
            // One broken row must not hold up the others.
            if let Err(e) = self.one(row, &library.path).await {
                tracing::warn!(error = %e, "library publication row");
            }
        }
        outbox::next_due(&self.db).await
    }

    async fn one(&self, row: publication::Model, library: &Path) -> Result<(), DeliveryError> {
        if u32::try_from(row.attempts).unwrap_or(0) >= self.policy.max_attempts {
            return outbox::fail_exhausted(&self.db, &row).await;
        }
        let lease_ms = i64::try_from(LEASE.as_millis()).unwrap_or(i64::MAX);
        let Some(taken) = outbox::claim(&self.db, &row, lease_ms).await? else {
            return Ok(());
        };
        let outcome = self.attempt(&taken.project_id, library.to_path_buf()).await;
        match &outcome {
            Ok(path) => tracing::info!(book = %taken.project_id, %path, "book published"),
            Err(e) => tracing::warn!(book = %taken.project_id, attempt = taken.attempts,
                error = %e, "book not published"),
        }
        outbox::settle(
            &self.db,
            &taken,
            outcome,
            self.policy.max_attempts,
            &self.policy.schedule,
        )
        .await
    }

    /// One attempt: the book gathered, then written off the async threads.
    async fn attempt(&self, project_id: &str, library: PathBuf) -> Result<String, String> {
        let book = source::gather(
            &self.db,
            &self.results,
            self.coordination.as_ref(),
            project_id,
        )
        .await?;
        tokio::task::spawn_blocking(move || files::write(&library, &book))
            .await
            .map_err(|e| format!("the writing task ended: {e}"))?
    }
}
