//! The summary of the waiting groups a process decides from: how a full
//! read and the arrivals read at each lease are taken in, in the order
//! they began, and when the next full read is due.

use super::choice::{Group, Limits};
use super::reads::{JobRow, NewLimits};
use super::{REREAD_AFTER, REREAD_GAP};
use crate::lifecycle::queue::QueueSettings;
use dragoman_model::vocab::JobStatus;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// The waiting groups as last read, with the running limits of their
/// accounts and tokens, and what orders the reads that update them.
#[derive(Debug, Default)]
pub(super) struct Summary {
    pub(super) groups: Vec<Group>,
    pub(super) limits: Limits,
    /// The installation's settings in force at the last full read: the
    /// running limit of an account that sets none, for a group learned
    /// from arrivals.
    pub(super) installation: QueueSettings,
    /// The highest job id read: the jobs above it arrived since.
    pub(super) newest: Option<String>,
    /// Counts the full reads begun and the arrivals read, to order them.
    pub(super) clock: u64,
    /// When (on `clock`) the full read the groups come from began; 0: none.
    pub(super) applied: u64,
    /// When (on `clock`) the summary was last voided: a full read begun
    /// before does not make it whole again.
    pub(super) invalidated: u64,
    /// When the last full read began.
    pub(super) last_read: Option<Instant>,
    /// This process added work or changed a limit since that read began.
    pub(super) wanted: bool,
    /// A full read runs behind the decisions.
    pub(super) reading: bool,
}

/// What one full read found.
#[derive(Debug, Default)]
pub(super) struct FullRead {
    pub(super) groups: Vec<Group>,
    pub(super) limits: Limits,
    pub(super) installation: QueueSettings,
    /// The highest job id when the read began.
    pub(super) newest: Option<String>,
}

impl Summary {
    /// Whether there is no summary to decide from (never read, or voided).
    pub(super) fn unread(&self) -> bool {
        self.applied <= self.invalidated
    }

    /// Whether a full read is due behind the decisions.
    pub(super) fn due(&self) -> bool {
        if self.reading {
            return false;
        }
        self.last_read.is_none_or(|at| {
            let since = at.elapsed();
            since >= REREAD_AFTER || (self.wanted && since >= REREAD_GAP)
        })
    }

    /// A full read begins; returns its place on the clock.
    pub(super) fn begin(&mut self) -> u64 {
        self.clock += 1;
        self.last_read = Some(Instant::now());
        self.wanted = false;
        self.clock
    }

    /// Takes in the full read begun at `start`, unless one begun later is
    /// in already. Groups learned from arrivals after it began stay (with
    /// their limits): its snapshot may be older than their jobs.
    pub(super) fn apply(&mut self, start: u64, read: FullRead) {
        if start <= self.applied {
            return;
        }
        self.applied = start;
        let mut groups: Vec<Group> = read
            .groups
            .into_iter()
            .map(|g| Group {
                learned: start,
                ..g
            })
            .collect();
        let mut limits = read.limits;
        for later in self.groups.drain(..).filter(|g| g.learned > start) {
            if let Some(limit) = self.limits.accounts.get(&later.account_id) {
                limits
                    .accounts
                    .entry(later.account_id.clone())
                    .or_insert(*limit);
            }
            if let Some(t) = &later.token_id
                && let Some(limit) = self.limits.tokens.get(t)
            {
                limits.tokens.entry(t.clone()).or_insert(*limit);
            }
            match groups.iter_mut().find(|g| **g == later) {
                Some(g) => {
                    g.oldest = std::cmp::min(g.oldest, later.oldest);
                    g.learned = later.learned;
                }
                None => groups.push(later),
            }
        }
        self.groups = groups;
        self.limits = limits;
        self.installation = read.installation;
        self.newest = std::cmp::max(self.newest.take(), read.newest);
    }

    /// Accounts and tokens of the waiting `arrivals` whose running limits
    /// the summary lacks.
    pub(super) fn unknown(&self, arrivals: &[JobRow]) -> (Vec<String>, Vec<String>) {
        let mut accounts = HashSet::new();
        let mut tokens = HashSet::new();
        for job in arrivals.iter().filter(|j| j.status == JobStatus::Pending) {
            if !self.limits.accounts.contains_key(&job.account_id) {
                accounts.insert(job.account_id.clone());
            }
            if let Some(t) = &job.token_id
                && !self.limits.tokens.contains_key(t)
            {
                tokens.insert(t.clone());
            }
        }
        (accounts.into_iter().collect(), tokens.into_iter().collect())
    }

    /// Takes in the jobs read above `newest`, with the limits read for
    /// them: each waiting one adds its group (or an older arrival to it).
    pub(super) fn learn(&mut self, arrivals: Vec<JobRow>, limits: NewLimits) {
        for (account, own) in limits.accounts {
            let limit = self.installation.running_limit(own);
            self.limits.accounts.insert(account, limit);
        }
        for (token, limit) in limits.tokens {
            match limit {
                Some(limit) => self.limits.tokens.insert(token, i64::from(limit)),
                None => self.limits.tokens.remove(&token),
            };
        }
        let mut waiting = Vec::new();
        for job in arrivals {
            if self.newest.as_ref().is_none_or(|n| job.id > *n) {
                self.newest = Some(job.id.clone());
            }
            if job.status == JobStatus::Pending {
                waiting.push(job);
            }
        }
        if waiting.is_empty() {
            return;
        }
        self.clock += 1;
        let now = self.clock;
        let mut index: HashMap<Group, usize> = self
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| (g.clone(), i))
            .collect();
        for job in waiting {
            let group = Group {
                priority: job.priority,
                account_id: job.account_id,
                token_id: job.token_id,
                oldest: job.created_at,
                learned: now,
            };
            match index.get(&group) {
                Some(&i) => {
                    let known = &mut self.groups[i];
                    known.oldest = std::cmp::min(known.oldest, group.oldest);
                    known.learned = now;
                }
                None => {
                    index.insert(group.clone(), self.groups.len());
                    self.groups.push(group);
                }
            }
        }
    }
}

/// Marks that no full read runs behind the decisions any more, however
/// the one that ran ended (a panic included).
pub(super) struct Reading(pub(super) Arc<Mutex<Summary>>);

impl Drop for Reading {
    fn drop(&mut self) {
        lock(&self.0).reading = false;
    }
}

/// The summary, whatever a panicking holder left: it holds no invariant a
/// panic could break, and at worst it is read again.
pub(super) fn lock(summary: &Mutex<Summary>) -> MutexGuard<'_, Summary> {
    summary.lock().unwrap_or_else(PoisonError::into_inner)
}
