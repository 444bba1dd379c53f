//! What a scheduler process keeps for its dispatch decisions: the queue
//! settings of its environment, whose turn it is among accounts, and the
//! summary of the waiting groups it reads them from, kept up to date by
//! the arrivals at every lease and full reads behind the decisions.

use super::choice::{Group, Load, choose};
use super::reads::{JobRow, read_limits, read_waiting, running_and_arrivals};
use super::summary::{Reading, Summary, lock};
use super::{ARRIVALS_PAGE, TURNS_KEPT};
use crate::error::SchedulerError;
use crate::lifecycle::queue::QueueSettings;
use sea_orm::{DatabaseConnection, FromQueryResult};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// What a scheduler process keeps for its dispatch decisions: the
/// installation's queue settings from the environment (an administrator
/// setting wins over them), whose turn it is among accounts, and its
/// summary of the waiting groups (see the module's doc).
#[derive(Debug, Default)]
pub struct Dispatcher {
    pub(super) environment: QueueSettings,
    pub(super) turns: Mutex<Turns>,
    /// Shared with the full read running behind the decisions, if any.
    pub(super) summary: Arc<Mutex<Summary>>,
}

/// When this process last started a job for each account, by a counter
/// (seconds are too coarse: many jobs start in one).
#[derive(Debug, Default)]
pub(super) struct Turns {
    pub(super) clock: u64,
    pub(super) last: HashMap<String, u64>,
}

impl Dispatcher {
    pub fn new(environment: QueueSettings) -> Dispatcher {
        Dispatcher {
            environment,
            ..Dispatcher::default()
        }
    }

    /// The queue settings of the environment.
    pub fn environment(&self) -> &QueueSettings {
        &self.environment
    }

    /// This process added waiting work or changed a limit. New jobs are
    /// seen by the next lease anyway (they are read by their ids); what
    /// the ids do not show (a paused job back in line, a raised limit) is
    /// read again behind the decisions, within `REREAD_GAP`.
    pub fn work_added(&self) {
        self.summary().wanted = true;
    }

    /// Voids the summary: the next decision reads every waiting group
    /// first, so that it sees every change made before this call.
    pub fn invalidate(&self) {
        let mut summary = self.summary();
        summary.clock += 1;
        summary.invalidated = summary.clock;
    }

    pub(super) fn turns(&self) -> MutexGuard<'_, Turns> {
        // The map holds no invariant a panicking holder could break.
        self.turns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn summary(&self) -> MutexGuard<'_, Summary> {
        lock(&self.summary)
    }

    /// Whether the waiting groups must be read before deciding.
    pub(super) fn unread(&self) -> bool {
        self.summary().unread()
    }

    /// Reads every waiting group, in the way of the decision.
    pub(super) async fn read_all(&self, db: &DatabaseConnection) -> Result<(), SchedulerError> {
        let start = self.summary().begin();
        let read = read_waiting(db, &self.environment).await?;
        self.summary().apply(start, read);
        Ok(())
    }

    /// Reads the running jobs and, in the same statement, the jobs made
    /// since the newest one the summary has seen (with the limits of their
    /// accounts and tokens when the summary lacks them); takes the latter
    /// in and returns the former.
    pub(super) async fn read_arrivals(
        &self,
        db: &DatabaseConnection,
    ) -> Result<Vec<JobRow>, SchedulerError> {
        let newest = self.summary().newest.clone();
        let query = running_and_arrivals(newest.as_deref());
        let rows = JobRow::find_by_statement(db.get_database_backend().build(&query))
            .all(db)
            .await?;
        let (arrivals, running): (Vec<JobRow>, Vec<JobRow>) =
            rows.into_iter().partition(|r| r.arrived != 0);
        if arrivals.len() as u64 >= ARRIVALS_PAGE {
            // More may wait past the page: a full read covers them at
            // once; meanwhile each lease reads one more page.
            self.summary().wanted = true;
        }
        let (accounts, tokens) = self.summary().unknown(&arrivals);
        let limits = read_limits(db, accounts, tokens).await?;
        self.summary().learn(arrivals, limits);
        Ok(running)
    }

    /// Starts a full read behind the decisions when one is due and none
    /// runs. Outside a Tokio runtime none starts: the summary is then read
    /// again when nothing it knows may start.
    pub(super) fn read_behind(&self, db: &DatabaseConnection) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let start = {
            let mut summary = self.summary();
            if !summary.due() {
                return;
            }
            summary.reading = true;
            summary.begin()
        };
        let reading = Reading(Arc::clone(&self.summary));
        let db = db.clone();
        let environment = self.environment;
        runtime.spawn(async move {
            match read_waiting(&db, &environment).await {
                Ok(read) => lock(&reading.0).apply(start, read),
                Err(e) => {
                    // Tried again at the first lease past `REREAD_GAP`.
                    lock(&reading.0).wanted = true;
                    tracing::warn!(error = %e, "reading the waiting groups failed");
                }
            }
        });
    }

    /// Waits until no full read runs behind the decisions.
    #[cfg(test)]
    pub(crate) async fn settled(&self) {
        while self.summary().reading {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }

    /// The group whose job starts next among those not `passed` in this
    /// lease.
    pub(super) fn choose(&self, load: &Load, passed: &HashSet<Group>) -> Option<Group> {
        let summary = self.summary();
        let turns = self.turns();
        let turn = |account: &str| turns.last.get(account).copied().unwrap_or(0);
        choose(&summary.groups, load, &summary.limits, turn, passed).cloned()
    }

    /// The group has no waiting job left.
    pub(super) fn forget(&self, group: &Group) {
        self.summary().groups.retain(|g| g != group);
    }

    /// The running limits just read for the group's account and token.
    pub(super) fn note_limits(&self, group: &Group, account: i64, token: Option<i64>) {
        let mut summary = self.summary();
        summary
            .limits
            .accounts
            .insert(group.account_id.clone(), account);
        if let Some(t) = &group.token_id {
            match token {
                Some(limit) => summary.limits.tokens.insert(t.clone(), limit),
                None => summary.limits.tokens.remove(t),
            };
        }
    }

    /// Notes that a job of `account` started.
    pub(super) fn started(&self, account: &str) {
        let mut turns = self.turns();
        turns.clock += 1;
        let now = turns.clock;
        turns.last.insert(account.to_owned(), now);
        if turns.last.len() > TURNS_KEPT {
            let summary = self.summary();
            let waiting: HashSet<&str> = summary
                .groups
                .iter()
                .map(|g| g.account_id.as_str())
                .collect();
            turns.last.retain(|a, _| waiting.contains(a.as_str()));
        }
    }
}
