//! The dispatch decision in memory: the waiting groups, the running load
//! and limits of their accounts and tokens, and the order that picks the
//! group whose job starts next.

use super::reads::JobRow;
use crate::lifecycle::queue;
use dragoman_model::vocab::Priority;
use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};

/// Waiting jobs of one priority, account and token. Two groups are the
/// same when those are, whatever their oldest job.
#[derive(Debug, Clone)]
pub(super) struct Group {
    pub(super) priority: Priority,
    pub(super) account_id: String,
    pub(super) token_id: Option<String>,
    /// Arrival of its oldest job (when last read).
    pub(super) oldest: i64,
    /// When (on the summary's clock) a read last saw a job of it.
    pub(super) learned: u64,
}

impl Group {
    pub(super) fn key(&self) -> (Priority, &str, Option<&str>) {
        (self.priority, &self.account_id, self.token_id.as_deref())
    }
}

impl PartialEq for Group {
    fn eq(&self, other: &Group) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Group {}

impl std::hash::Hash for Group {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

/// Running jobs per account and per token.
#[derive(Debug, Default)]
pub(super) struct Load {
    pub(super) accounts: HashMap<String, i64>,
    pub(super) tokens: HashMap<String, i64>,
}

impl Load {
    pub(super) fn of(running: &[JobRow], now: i64) -> Load {
        let mut load = Load::default();
        for job in running.iter().filter(|j| j.holds_slot(now)) {
            *load.accounts.entry(job.account_id.clone()).or_default() += 1;
            if let Some(token) = &job.token_id {
                *load.tokens.entry(token.clone()).or_default() += 1;
            }
        }
        load
    }

    pub(super) fn account(&self, id: &str) -> i64 {
        self.accounts.get(id).copied().unwrap_or(0)
    }

    pub(super) fn token(&self, id: Option<&str>) -> i64 {
        id.and_then(|t| self.tokens.get(t)).copied().unwrap_or(0)
    }
}

/// Running limits of the accounts and tokens with waiting jobs. An account
/// missing here has no slot; a token missing here (deleted since its job
/// was made) has no limit of its own.
#[derive(Debug, Default)]
pub(super) struct Limits {
    pub(super) accounts: HashMap<String, i64>,
    pub(super) tokens: HashMap<String, i64>,
}

/// Why `group` cannot start a job now, if it cannot.
pub(super) fn blocked(group: &Group, load: &Load, limits: &Limits) -> Option<queue::WaitReason> {
    let token = group.token_id.as_deref().and_then(|t| {
        limits
            .tokens
            .get(t)
            .map(|limit| (load.token(Some(t)), *limit))
    });
    let account_limit = limits.accounts.get(&group.account_id).copied().unwrap_or(0);
    queue::reason(token, (load.account(&group.account_id), account_limit))
}

/// The group whose job starts next (the order of the module's doc), if any
/// may start.
pub(super) fn choose<'g>(
    groups: &'g [Group],
    load: &Load,
    limits: &Limits,
    turn: impl Fn(&str) -> u64,
    passed: &HashSet<Group>,
) -> Option<&'g Group> {
    groups
        .iter()
        .filter(|g| blocked(g, load, limits).is_none() && !passed.contains(g))
        .min_by_key(|g| {
            (
                Reverse(g.priority),
                load.account(&g.account_id),
                load.token(g.token_id.as_deref()),
                turn(&g.account_id),
                g.oldest,
                &g.account_id,
                &g.token_id,
            )
        })
}
