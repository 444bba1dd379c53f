//! Leases of jobs to workers (spec 8, "Queue and priority rules" 1 and 3):
//! the dispatch decision, the running limits of tokens and accounts, the
//! ticket that carries everything the worker needs, heartbeats, and jobs
//! whose workers keep dying.
//!
//! # The decision
//!
//! A job whose lease expired before its workers used up their leases is
//! taken over first, before any waiting job: it started already (its
//! request reads `running`), it kept its running slot
//! ([`queue::holds_slot`]), so no limit is checked again, and the work it
//! stands for waits on nobody else. A worker that stops hands its job back
//! with [`release`], which makes the lease expired at once: the job is
//! taken over at the next lease instead of after its lease time.
//!
//! Otherwise the waiting jobs are seen as groups of one priority, account
//! and token, with the arrival of each group's oldest job and the running
//! limits of their accounts and tokens, read by one grouped query that the
//! dispatch index (`ix_jobs_dispatch`) serves: what the scheduler holds
//! grows with the groups, not with the queue. The running jobs (few: the
//! limits bound them) are read at every decision. A group whose token or
//! account is at its running limit waits. Among the others:
//!
//! 1. the highest priority;
//! 2. the account with the fewest running jobs, then the token with the
//!    fewest;
//! 3. in turn between accounts: the account this process started a job for
//!    least recently goes first (one never started, first of all);
//! 4. the oldest waiting job, then the account and token ids, so the order
//!    is total.
//!
//! The oldest job of the chosen group is taken in a write transaction that
//! reads it with its book while it locks the account's row and reads the
//! account's and the token's limits as they are now (one statement), and
//! takes the job by a conditional update that counts
//! their running jobs (it is still waiting and unchanged since it was
//! read, and both are under their limits). Two workers choosing at once,
//! in one process or several, thus never take a token or an account past
//! its limit, nor one job twice. When another worker got there first, or a
//! limit left no slot, the group is passed over for this lease and the
//! decision is made again from fresh running counts; when the job-start
//! checks ([`job_start`]) refuse the job, likewise.
//!
//! # The summary of the waiting groups
//!
//! Grouping reads every waiting job's index entry, so its cost grows with
//! the queue (a few milliseconds at 10,000 jobs). Each scheduler process
//! therefore keeps the groups it read (its [`Dispatcher`]'s summary) and
//! keeps it up to date in two ways:
//!
//! - **Arrivals, at every lease.** Job ids are UUID v7, ordered by the time
//!   they were made, so the jobs made since the newest one the summary has
//!   seen are a range of the primary key. The lease reads that range (at
//!   most `ARRIVALS_PAGE` jobs) in the statement that reads the running
//!   jobs, so it costs no round trip of its own, and their groups join the
//!   summary, whichever process made them; the limits of an account or a
//!   token the summary does not know yet are read with one more statement.
//!   Its cost grows with what arrived since the last lease, not with the
//!   queue.
//! - **The whole summary, behind the decisions.** What the ids do not show
//!   is read by the grouped query in a task beside the leases, never in
//!   the way of one: a paused job put back in line (it keeps its id), a
//!   limit raised outside the scheduler, a job whose transaction committed
//!   after a later job's id was read, or one made by a process whose clock
//!   is behind. It begins at the first lease `REREAD_AFTER` (2 s) after the
//!   previous one began, or `REREAD_GAP` after it when this process says it
//!   added work or changed a limit ([`Dispatcher::work_added`]: a resume, a
//!   promoted volume, a series action, a queue setting; a new request needs
//!   none, its job's id shows it) or more than a page of jobs arrived at
//!   once.
//!
//! The grouped query runs in the way of a lease only when the process has
//! no summary yet (its first lease, or after [`Dispatcher::invalidate`]),
//! and when nothing the summary knows may start, before answering "no
//! job". A full read that began before another one already taken in is
//! dropped; groups learned from arrivals after it began are kept.
//!
//! A freed running slot does not make the summary stale (the running jobs
//! are read at every decision), so a job ending only wakes the workers. A
//! group is dropped from the summary when a lease takes its last job (the
//! statement that reads the head job shows whether another one follows) or
//! finds it empty; the running counts and
//! the limits at the take are always read fresh, so a stale summary can
//! only delay a group (a resumed job, a late commit) by up to
//! `REREAD_AFTER`, or a limit raised outside the scheduler, never pass a
//! limit or take a job twice.
//!
//! The turn (rule 3) is kept in memory by each scheduler process: it only
//! orders accounts that tie on priority and on running jobs, which are read
//! from the database. Whatever several processes choose, an account that
//! got a slot has one more running job and goes after the accounts it tied
//! with at the next decision of any process; processes only differ on which
//! of the tied accounts goes first. A restarted process starts every
//! account even, and ties then fall to the oldest waiting job.

use super::ending::finish_report;
use super::job_start::{self, StartSettings, StartVerdict};
use super::queue::{self, QueueSettings};
use crate::error::SchedulerError;
use crate::steps;
use dragoman_model::clock;
use dragoman_model::entities::{account, api_token, job, project, request, setting};
use dragoman_model::vocab::{
    AnalysisMode, InputKind, JobStatus, Priority, Quality, RequestStatus, ResultFormat, Stage,
};
use dragoman_proto::v1::JobTicket;
use dragoman_proto::wire::WireEnum;
use sea_orm::sea_query::{
    Alias, Expr, ExprTrait, LockType, Order, Query, SelectStatement, UnionType,
};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DbErr,
    EntityTrait, FromQueryResult, Iterable, QueryFilter, QueryResult, QuerySelect, Set,
};
use serde_json::Value;
use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Leases a job may have: one whose workers keep dying (a poison job) fails
/// instead of being retried forever.
pub const MAX_JOB_LEASES: i32 = 5;

/// A volume's share of its provider's capacity (parallel batches) when the
/// volume sets none.
pub const DEFAULT_VOLUME_THREADS: i64 = 4;

/// The stop reason of a request whose job was abandoned by its workers.
pub const WORKER_LOST: &str = "worker_lost";

/// Decisions one lease makes at most. Each one after the first follows a
/// group found empty or passed over, or a job the job-start checks refused;
/// past them the worker asks again (it is woken when checks ended
/// requests).
const DECISIONS: usize = 16;

/// Accounts whose turn a process remembers; past them it forgets those
/// with nothing waiting.
const TURNS_KEPT: usize = 10_000;

/// How long after its last full read a process reads the waiting groups
/// again, behind the decisions: what the job ids do not show (a resumed
/// job, a limit raised outside the scheduler, a late commit) waits at most
/// this long.
const REREAD_AFTER: Duration = Duration::from_secs(2);

/// The least time between two full reads that this process's own changes
/// ask for: work added between any two leases costs one grouped read a
/// second, not one per lease (a grouped read of a deep queue takes a few
/// milliseconds of the database, and slows the leases beside it).
pub(super) const REREAD_GAP: Duration = Duration::from_secs(1);

/// Jobs one read of the arrivals takes at most; the next are read at the
/// next lease, and a full read is asked for (it covers them at once).
pub(super) const ARRIVALS_PAGE: u64 = 256;

/// What one lease did.
#[derive(Debug, Default)]
pub struct Leased {
    /// The job leased, with what its worker needs; none when no job may
    /// start now.
    pub ticket: Option<JobTicket>,
    /// Requests whose jobs the job-start checks refused on the way, now
    /// ended `failed`.
    pub ended: Vec<request::Model>,
}

/// What a scheduler process keeps for its dispatch decisions: the
/// installation's queue settings from the environment (an administrator
/// setting wins over them), whose turn it is among accounts, and its
/// summary of the waiting groups (see the module's doc).
#[derive(Debug, Default)]
pub struct Dispatcher {
    environment: QueueSettings,
    turns: Mutex<Turns>,
    /// Shared with the full read running behind the decisions, if any.
    summary: Arc<Mutex<Summary>>,
}

/// When this process last started a job for each account, by a counter
/// (seconds are too coarse: many jobs start in one).
#[derive(Debug, Default)]
struct Turns {
    clock: u64,
    last: HashMap<String, u64>,
}

/// The waiting groups as last read, with the running limits of their
/// accounts and tokens, and what orders the reads that update them.
#[derive(Debug, Default)]
struct Summary {
    groups: Vec<Group>,
    limits: Limits,
    /// The installation's settings in force at the last full read: the
    /// running limit of an account that sets none, for a group learned
    /// from arrivals.
    installation: QueueSettings,
    /// The highest job id read: the jobs above it arrived since.
    newest: Option<String>,
    /// Counts the full reads begun and the arrivals read, to order them.
    clock: u64,
    /// When (on `clock`) the full read the groups come from began; 0: none.
    applied: u64,
    /// When (on `clock`) the summary was last voided: a full read begun
    /// before does not make it whole again.
    invalidated: u64,
    /// When the last full read began.
    last_read: Option<Instant>,
    /// This process added work or changed a limit since that read began.
    wanted: bool,
    /// A full read runs behind the decisions.
    reading: bool,
}

/// What one full read found.
#[derive(Debug, Default)]
struct FullRead {
    groups: Vec<Group>,
    limits: Limits,
    installation: QueueSettings,
    /// The highest job id when the read began.
    newest: Option<String>,
}

impl Summary {
    /// Whether there is no summary to decide from (never read, or voided).
    fn unread(&self) -> bool {
        self.applied <= self.invalidated
    }

    /// Whether a full read is due behind the decisions.
    fn due(&self) -> bool {
        if self.reading {
            return false;
        }
        self.last_read.is_none_or(|at| {
            let since = at.elapsed();
            since >= REREAD_AFTER || (self.wanted && since >= REREAD_GAP)
        })
    }

    /// A full read begins; returns its place on the clock.
    fn begin(&mut self) -> u64 {
        self.clock += 1;
        self.last_read = Some(Instant::now());
        self.wanted = false;
        self.clock
    }

    /// Takes in the full read begun at `start`, unless one begun later is
    /// in already. Groups learned from arrivals after it began stay (with
    /// their limits): its snapshot may be older than their jobs.
    fn apply(&mut self, start: u64, read: FullRead) {
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
    fn unknown(&self, arrivals: &[JobRow]) -> (Vec<String>, Vec<String>) {
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
    fn learn(&mut self, arrivals: Vec<JobRow>, limits: NewLimits) {
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
struct Reading(Arc<Mutex<Summary>>);

impl Drop for Reading {
    fn drop(&mut self) {
        lock(&self.0).reading = false;
    }
}

/// The summary, whatever a panicking holder left: it holds no invariant a
/// panic could break, and at worst it is read again.
fn lock(summary: &Mutex<Summary>) -> MutexGuard<'_, Summary> {
    summary.lock().unwrap_or_else(PoisonError::into_inner)
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

    fn turns(&self) -> MutexGuard<'_, Turns> {
        // The map holds no invariant a panicking holder could break.
        self.turns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn summary(&self) -> MutexGuard<'_, Summary> {
        lock(&self.summary)
    }

    /// Whether the waiting groups must be read before deciding.
    fn unread(&self) -> bool {
        self.summary().unread()
    }

    /// Reads every waiting group, in the way of the decision.
    async fn read_all(&self, db: &DatabaseConnection) -> Result<(), SchedulerError> {
        let start = self.summary().begin();
        let read = read_waiting(db, &self.environment).await?;
        self.summary().apply(start, read);
        Ok(())
    }

    /// Reads the running jobs and, in the same statement, the jobs made
    /// since the newest one the summary has seen (with the limits of their
    /// accounts and tokens when the summary lacks them); takes the latter
    /// in and returns the former.
    async fn read_arrivals(&self, db: &DatabaseConnection) -> Result<Vec<JobRow>, SchedulerError> {
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
    fn read_behind(&self, db: &DatabaseConnection) {
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
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// The group whose job starts next among those not `passed` in this
    /// lease.
    fn choose(&self, load: &Load, passed: &HashSet<Group>) -> Option<Group> {
        let summary = self.summary();
        let turns = self.turns();
        let turn = |account: &str| turns.last.get(account).copied().unwrap_or(0);
        choose(&summary.groups, load, &summary.limits, turn, passed).cloned()
    }

    /// The group has no waiting job left.
    fn forget(&self, group: &Group) {
        self.summary().groups.retain(|g| g != group);
    }

    /// The running limits just read for the group's account and token.
    fn note_limits(&self, group: &Group, account: i64, token: Option<i64>) {
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
    fn started(&self, account: &str) {
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

/// The parallel batches of a job: the volume's share, lowered by the
/// request's `threads` when it asks for fewer, never raised (spec 2.5).
pub fn ticket_threads(requested: Option<i64>, volume: Option<i32>) -> i32 {
    let share = volume
        .map(i64::from)
        .filter(|t| *t > 0)
        .unwrap_or(DEFAULT_VOLUME_THREADS);
    let threads = std::cmp::max(requested.map_or(share, |r| std::cmp::min(r, share)), 1);
    i32::try_from(threads).unwrap_or(1)
}

/// The quality the request asked for (`normal` when it did not).
fn quality(row: &request::Model) -> Quality {
    row.options
        .get("quality")
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

/// The analysis mode intake settled for the request (the request's, the
/// volume's or the installation's choice).
pub fn analysis_mode(row: &request::Model) -> AnalysisMode {
    row.options
        .get("analysis_mode_in_force")
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or(AnalysisMode::Parallel)
}

/// The score below which the request's passages are checked (settled at
/// intake from `QUALITY_REVIEW_BELOW`).
pub fn review_below(row: &request::Model) -> i32 {
    row.options
        .get("review_below")
        .and_then(Value::as_i64)
        .and_then(|v| i32::try_from(v).ok())
        .unwrap_or(DEFAULT_REVIEW_BELOW)
}

/// `QUALITY_REVIEW_BELOW` when nothing sets it.
pub const DEFAULT_REVIEW_BELOW: i32 = 70;

/// A running job whose lease expired before its workers used up their
/// leases: a worker takes it over.
fn expired_lease(now: i64) -> Condition {
    Condition::all()
        .add(job::Column::Status.eq(JobStatus::Running))
        .add(job::Column::LeaseExpiresAt.lt(now))
        .add(job::Column::Attempts.lt(MAX_JOB_LEASES))
}

/// Waiting jobs of one priority, account and token. Two groups are the
/// same when those are, whatever their oldest job.
#[derive(Debug, Clone)]
struct Group {
    priority: Priority,
    account_id: String,
    token_id: Option<String>,
    /// Arrival of its oldest job (when last read).
    oldest: i64,
    /// When (on the summary's clock) a read last saw a job of it.
    learned: u64,
}

impl Group {
    fn key(&self) -> (Priority, &str, Option<&str>) {
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

/// A job as the decision reads it: a running one, or one made since the
/// newest one the summary has seen (an arrival), whatever its status.
#[derive(Debug, Clone, FromQueryResult)]
struct JobRow {
    /// 1 when read as an arrival, 0 when read as a running job.
    arrived: i32,
    id: String,
    status: JobStatus,
    priority: Priority,
    account_id: String,
    token_id: Option<String>,
    created_at: i64,
    lease_expires_at: Option<i64>,
    attempts: i32,
}

/// The columns of a [`JobRow`] after `arrived`.
const JOB_ROW: [job::Column; 8] = [
    job::Column::Id,
    job::Column::Status,
    job::Column::Priority,
    job::Column::AccountId,
    job::Column::TokenId,
    job::Column::CreatedAt,
    job::Column::LeaseExpiresAt,
    job::Column::Attempts,
];

impl JobRow {
    /// Whether a worker may take it over (see [`expired_lease`]).
    fn expired(&self, now: i64) -> bool {
        self.lease_expires_at.is_some_and(|at| at < now) && self.attempts < MAX_JOB_LEASES
    }

    /// Whether it holds a running slot (see [`queue::holds_slot`]).
    fn holds_slot(&self, now: i64) -> bool {
        self.lease_expires_at.is_some_and(|at| at >= now) || self.attempts < MAX_JOB_LEASES
    }
}

/// Running jobs per account and per token.
#[derive(Debug, Default)]
struct Load {
    accounts: HashMap<String, i64>,
    tokens: HashMap<String, i64>,
}

impl Load {
    fn of(running: &[JobRow], now: i64) -> Load {
        let mut load = Load::default();
        for job in running.iter().filter(|j| j.holds_slot(now)) {
            *load.accounts.entry(job.account_id.clone()).or_default() += 1;
            if let Some(token) = &job.token_id {
                *load.tokens.entry(token.clone()).or_default() += 1;
            }
        }
        load
    }

    fn account(&self, id: &str) -> i64 {
        self.accounts.get(id).copied().unwrap_or(0)
    }

    fn token(&self, id: Option<&str>) -> i64 {
        id.and_then(|t| self.tokens.get(t)).copied().unwrap_or(0)
    }
}

/// Running limits of the accounts and tokens with waiting jobs. An account
/// missing here has no slot; a token missing here (deleted since its job
/// was made) has no limit of its own.
#[derive(Debug, Default)]
struct Limits {
    accounts: HashMap<String, i64>,
    tokens: HashMap<String, i64>,
}

/// Why `group` cannot start a job now, if it cannot.
fn blocked(group: &Group, load: &Load, limits: &Limits) -> Option<queue::WaitReason> {
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
fn choose<'g>(
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

/// Leases the next job for `worker_id` (the order of the module's doc).
/// `start` are the settings of the job-start checks a new job passes once
/// taken; a job they refuse ends its request, returned in
/// [`Leased::ended`], and the next job is chosen.
pub async fn lease(
    db: &DatabaseConnection,
    worker_id: &str,
    lease_seconds: i64,
    dispatcher: &Dispatcher,
    start: &StartSettings,
) -> Result<Leased, SchedulerError> {
    let mut leased = Leased::default();
    // Groups passed over in this lease: their job was taken by another
    // worker first, or their limits, read again, left no slot.
    let mut passed = HashSet::new();
    // Whether this lease read every waiting group, and whether it looked
    // at the arrivals.
    let mut read_all = false;
    let mut looked = false;
    for _ in 0..DECISIONS {
        let now = clock::now();
        // The first decision reads the arrivals with the running jobs, in
        // one round trip, unless every group is to be read anyway.
        let running = if looked || dispatcher.unread() {
            running_jobs(db).await?
        } else {
            looked = true;
            let running = dispatcher.read_arrivals(db).await?;
            dispatcher.read_behind(db);
            running
        };
        if let Some(ticket) = take_over(db, &running, worker_id, lease_seconds, now).await? {
            leased.ticket = Some(ticket);
            return Ok(leased);
        }
        if !looked {
            looked = true;
            dispatcher.read_all(db).await?;
            read_all = true;
        }
        let load = Load::of(&running, now);
        let mut chosen = dispatcher.choose(&load, &passed);
        // Nothing the summary knows may start: the queue may hold work its
        // reads did not show yet (a resumed job); look before saying there
        // is none.
        if chosen.is_none() && !read_all {
            dispatcher.read_all(db).await?;
            read_all = true;
            chosen = dispatcher.choose(&load, &passed);
        }
        let Some(group) = chosen else { break };
        let Taken {
            job: mut job_row,
            request: row,
            book,
            last,
        } = match take(db, &group, dispatcher, worker_id, lease_seconds, now).await? {
            Take::Taken(taken) => *taken,
            Take::Empty => {
                dispatcher.forget(&group);
                continue;
            }
            Take::Passed => {
                passed.insert(group);
                continue;
            }
        };
        if last {
            // Dropped now rather than found empty at a later decision,
            // which would cost that decision a transaction and a read of
            // the running jobs.
            dispatcher.forget(&group);
        }
        match job_start::check(db, &mut job_row, &row, book.licence_counted, start).await? {
            StartVerdict::Go => {
                dispatcher.started(&group.account_id);
                // The first lease ends the job's wait in the queue; a job
                // put back in line after a pause waited for its owner.
                if job_row.attempts == 1 {
                    let waited = u64::try_from(now - job_row.created_at).unwrap_or(0);
                    dragoman_model::telemetry::metrics::queue_wait(
                        job_row.priority,
                        Duration::from_secs(waited),
                    );
                }
                leased.ticket = Some(ticket(&job_row, &row, book));
                return Ok(leased);
            }
            StartVerdict::Refused(ended) => leased.ended.push(*ended),
        }
    }
    Ok(leased)
}

/// Every running job, live or not.
async fn running_jobs(db: &DatabaseConnection) -> Result<Vec<JobRow>, SchedulerError> {
    let query = running_statement();
    Ok(
        JobRow::find_by_statement(db.get_database_backend().build(&query))
            .all(db)
            .await?,
    )
}

/// `SELECT` of every running job as a [`JobRow`]. The status is written
/// in the statement rather than bound: PostgreSQL then keeps one plan for
/// it (the index on the status) instead of planning it again at every
/// execution, as it does for a bound status whose rows it cannot guess.
fn running_statement() -> SelectStatement {
    Query::select()
        .expr_as(Expr::cust("0"), Alias::new("arrived"))
        .columns(JOB_ROW)
        .from(job::Entity)
        .and_where(
            Expr::col(job::Column::Status).eq(Expr::Constant(JobStatus::Running.as_str().into())),
        )
        .to_owned()
}

/// Every running job and, in the same statement, the first
/// `ARRIVALS_PAGE` jobs above `newest` (all of them without it) in id
/// order: a range of the primary key, whatever their status (the highest
/// id read moves the mark past the ones no longer waiting). The mark is
/// bound, unlike the status: written in the statement, it would make every
/// lease after an arrival a new statement, parsed and described again
/// (a range of the primary key needs no plan of its own anyway).
fn running_and_arrivals(newest: Option<&str>) -> SelectStatement {
    let page_of = Alias::new("arrivals");
    let mut page = Query::select()
        .columns(JOB_ROW)
        .from(job::Entity)
        .order_by(job::Column::Id, Order::Asc)
        .limit(ARRIVALS_PAGE)
        .to_owned();
    if let Some(newest) = newest {
        page.and_where(Expr::col(job::Column::Id).gt(newest));
    }
    let arrivals = Query::select()
        .expr_as(Expr::cust("1"), Alias::new("arrived"))
        .columns(JOB_ROW.map(|c| (page_of.clone(), c)))
        .from_subquery(page, page_of.clone())
        .to_owned();
    running_statement()
        .union(UnionType::All, arrivals)
        .to_owned()
}

/// The running limits of accounts and tokens the summary lacks, read for
/// the waiting jobs that arrived with them.
#[derive(Debug, Default)]
struct NewLimits {
    /// Each account found, with its own limit when it sets one.
    accounts: HashMap<String, Option<i32>>,
    /// Each token asked for, with its limit; none for a token not found
    /// (deleted since its job was made: no limit of its own).
    tokens: HashMap<String, Option<i32>>,
}

/// Reads the running limits of `accounts` and `tokens` (a statement for
/// each, when not empty).
async fn read_limits(
    db: &DatabaseConnection,
    accounts: Vec<String>,
    tokens: Vec<String>,
) -> Result<NewLimits, SchedulerError> {
    let mut limits = NewLimits::default();
    if !accounts.is_empty() {
        limits.accounts = account::Entity::find()
            .select_only()
            .column(account::Column::Id)
            .column(account::Column::MaxRunning)
            .filter(account::Column::Id.is_in(accounts))
            .into_tuple::<(String, Option<i32>)>()
            .all(db)
            .await?
            .into_iter()
            .collect();
    }
    if !tokens.is_empty() {
        let found: HashMap<String, i32> = api_token::Entity::find()
            .select_only()
            .column(api_token::Column::Id)
            .column(api_token::Column::MaxRunning)
            .filter(api_token::Column::Id.is_in(tokens.clone()))
            .into_tuple::<(String, i32)>()
            .all(db)
            .await?
            .into_iter()
            .collect();
        for token in tokens {
            let limit = found.get(&token).copied();
            limits.tokens.insert(token, limit);
        }
    }
    Ok(limits)
}

/// A group of waiting jobs with the running limits of its account (its
/// own, when set) and of its token, read together.
#[derive(Debug, FromQueryResult)]
struct GroupRow {
    priority: Priority,
    account_id: String,
    token_id: Option<String>,
    oldest: i64,
    account_max: Option<i32>,
    token_max: Option<i32>,
}

/// Every waiting group with the running limits of its account and token,
/// and the highest job id, read first: a job above it is read with the
/// arrivals, one below it that commits after the grouped query began
/// waits for the next full read.
async fn read_waiting(
    db: &DatabaseConnection,
    environment: &QueueSettings,
) -> Result<FullRead, SchedulerError> {
    let newest = job::Entity::find()
        .select_only()
        .expr(Expr::col(job::Column::Id).max())
        .into_tuple::<Option<String>>()
        .one(db)
        .await?
        .flatten();
    let (groups, limits, installation) = waiting_groups(db, environment).await?;
    Ok(FullRead {
        groups,
        limits,
        installation,
        newest,
    })
}

/// The waiting jobs as groups of one priority, account and token, with the
/// running limits of their accounts and tokens and the installation's
/// settings in force: one query, grouping first (the dispatch index serves
/// it) and joining the few groups to their account and token after.
async fn waiting_groups(
    db: &DatabaseConnection,
    environment: &QueueSettings,
) -> Result<(Vec<Group>, Limits, QueueSettings), SchedulerError> {
    let g = Alias::new("g");
    let grouped = Query::select()
        .column(job::Column::Priority)
        .column(job::Column::AccountId)
        .column(job::Column::TokenId)
        .expr_as(
            Expr::col(job::Column::CreatedAt).min(),
            Alias::new("oldest"),
        )
        .from(job::Entity)
        .and_where(job::Column::Status.eq(JobStatus::Pending))
        .group_by_columns([
            job::Column::Priority,
            job::Column::AccountId,
            job::Column::TokenId,
        ])
        .to_owned();
    let query = Query::select()
        .column((g.clone(), job::Column::Priority))
        .column((g.clone(), job::Column::AccountId))
        .column((g.clone(), job::Column::TokenId))
        .column((g.clone(), Alias::new("oldest")))
        .expr_as(
            Expr::col((account::Entity, account::Column::MaxRunning)),
            Alias::new("account_max"),
        )
        .expr_as(
            Expr::col((api_token::Entity, api_token::Column::MaxRunning)),
            Alias::new("token_max"),
        )
        .from_subquery(grouped, g.clone())
        .inner_join(
            account::Entity,
            Expr::col((account::Entity, account::Column::Id))
                .equals((g.clone(), job::Column::AccountId)),
        )
        .left_join(
            api_token::Entity,
            Expr::col((api_token::Entity, api_token::Column::Id))
                .equals((g.clone(), job::Column::TokenId)),
        )
        .to_owned();
    let rows = GroupRow::find_by_statement(db.get_database_backend().build(&query))
        .all(db)
        .await?;
    let installation = environment.in_force(db).await?;
    let mut limits = Limits::default();
    let mut groups = Vec::with_capacity(rows.len());
    for row in rows {
        limits.accounts.insert(
            row.account_id.clone(),
            installation.running_limit(row.account_max),
        );
        if let (Some(token), Some(max)) = (&row.token_id, row.token_max) {
            limits.tokens.insert(token.clone(), i64::from(max));
        }
        groups.push(Group {
            priority: row.priority,
            account_id: row.account_id,
            token_id: row.token_id,
            oldest: row.oldest,
            learned: 0,
        });
    }
    Ok((groups, limits, installation))
}

/// Takes over the job whose lease expired first, if any.
async fn take_over(
    db: &DatabaseConnection,
    running: &[JobRow],
    worker_id: &str,
    lease_seconds: i64,
    now: i64,
) -> Result<Option<JobTicket>, SchedulerError> {
    let mut expired: Vec<&JobRow> = running.iter().filter(|j| j.expired(now)).collect();
    expired.sort_by_key(|j| (j.lease_expires_at, j.id.as_str()));
    for candidate in expired {
        let txn = dragoman_model::db::begin_write(db).await?;
        let taken = job::Entity::update_many()
            .col_expr(job::Column::LeaseHolder, Expr::value(worker_id))
            .col_expr(
                job::Column::LeaseExpiresAt,
                Expr::value(now + lease_seconds),
            )
            .col_expr(
                job::Column::Attempts,
                Expr::col(job::Column::Attempts).add(1),
            )
            .col_expr(job::Column::UpdatedAt, Expr::value(now))
            .filter(job::Column::Id.eq(candidate.id.clone()))
            .filter(expired_lease(now))
            .exec(&txn)
            .await?;
        if taken.rows_affected != 1 {
            txn.rollback().await?;
            continue;
        }
        let job_row = job::Entity::find_by_id(candidate.id.clone())
            .one(&txn)
            .await?;
        let row = match &job_row {
            Some(j) => mark_running(&txn, &j.request_id, now).await?,
            None => None,
        };
        txn.commit().await?;
        if let (Some(job_row), Some(row)) = (job_row, row) {
            return ticket_of(db, &job_row, &row).await;
        }
    }
    Ok(None)
}

/// What became of the chosen group's job.
enum Take {
    /// Taken: the job, its request and its book as they are now.
    Taken(Box<Taken>),
    /// The group has no waiting job left.
    Empty,
    /// Not taken: another worker took it first, or the account or the
    /// token, read again, has no free slot.
    Passed,
}

/// A job just taken, with what its ticket and its job-start checks need.
#[derive(Debug)]
struct Taken {
    job: job::Model,
    request: request::Model,
    book: Book,
    /// No other job of its group was waiting when it was taken.
    last: bool,
}

/// The running limits of an account and a token as they are now, read
/// with the lock on the account's row.
#[derive(Debug, FromQueryResult)]
struct LockedLimits {
    account_max: Option<i32>,
    token_max: Option<i32>,
    queue_setting: Option<Value>,
}

/// Takes the oldest job of `group` for `worker_id` when its token and its
/// account have a free slot, counted and limited as they are now.
async fn take(
    db: &DatabaseConnection,
    group: &Group,
    dispatcher: &Dispatcher,
    worker_id: &str,
    lease_seconds: i64,
    now: i64,
) -> Result<Take, SchedulerError> {
    let txn = dragoman_model::db::begin_write(db).await?;
    // The account's row is the lock every start of the account (and of its
    // tokens) takes before the update counts its running jobs: whoever
    // comes second counts the first one's job (the update reads what was
    // committed before it began). The limits are read with it, so a limit
    // lowered a moment ago holds; the head job and its book come in the
    // same statement. The head may be one another worker has just taken:
    // the update below then matches nothing and the group is passed over.
    let mut heads = Head::find_by_statement(db.get_database_backend().build(&head_locked(group)))
        .all(&txn)
        .await?
        .into_iter();
    let Some(head) = heads.next() else {
        txn.rollback().await?;
        return Ok(Take::Empty);
    };
    let last = heads.next().is_none();
    let Head {
        job: head,
        book,
        limits,
    } = head;
    let installation = dispatcher.environment().with_saved(limits.queue_setting);
    let account_limit = installation.running_limit(limits.account_max);
    let token_limit = limits.token_max.map(i64::from);
    dispatcher.note_limits(group, account_limit, token_limit);
    let started_at = head.started_at.unwrap_or(now);
    // Taken only while it still waits unchanged and its account and token
    // are under their limits.
    let mut taking = job::Entity::update_many()
        .col_expr(job::Column::Status, Expr::value(JobStatus::Running))
        .col_expr(job::Column::LeaseHolder, Expr::value(worker_id))
        .col_expr(
            job::Column::LeaseExpiresAt,
            Expr::value(now + lease_seconds),
        )
        .col_expr(
            job::Column::Attempts,
            Expr::col(job::Column::Attempts).add(1),
        )
        .col_expr(job::Column::StartedAt, Expr::value(started_at))
        .col_expr(job::Column::UpdatedAt, Expr::value(now))
        .filter(job::Column::Id.eq(head.id.clone()))
        .filter(job::Column::UpdatedAt.eq(head.updated_at))
        .filter(job::Column::Status.eq(JobStatus::Pending))
        .filter(running_below(
            now,
            job::Column::AccountId,
            &group.account_id,
            account_limit,
        ));
    if let (Some(token), Some(limit)) = (&group.token_id, token_limit) {
        taking = taking.filter(running_below(now, job::Column::TokenId, token, limit));
    }
    if taking.exec(&txn).await?.rows_affected != 1 {
        txn.rollback().await?;
        return Ok(Take::Passed);
    }
    let Some(row) = mark_running(&txn, &head.request_id, now).await? else {
        txn.rollback().await?;
        return Ok(Take::Passed);
    };
    txn.commit().await?;
    // The row as the update left it: the update matched it unchanged.
    let job_row = job::Model {
        status: JobStatus::Running,
        lease_holder: Some(worker_id.to_owned()),
        lease_expires_at: Some(now + lease_seconds),
        attempts: head.attempts + 1,
        started_at: Some(started_at),
        updated_at: now,
        ..head
    };
    Ok(Take::Taken(Box::new(Taken {
        job: job_row,
        request: row,
        book,
        last,
    })))
}

/// The head job of a group as [`head_locked`] reads it: the job, what the
/// ticket and the job-start checks take from its book, and the running
/// limits read with the lock.
#[derive(Debug)]
struct Head {
    job: job::Model,
    book: Book,
    limits: LockedLimits,
}

impl FromQueryResult for Head {
    fn from_query_result(row: &QueryResult, pre: &str) -> Result<Self, DbErr> {
        Ok(Head {
            job: job::Model::from_query_result(row, pre)?,
            book: Book::from_query_result(row, pre)?,
            limits: LockedLimits::from_query_result(row, pre)?,
        })
    }
}

/// The two oldest waiting jobs of `group` (the second only shows whether
/// the first is the last), each with its book's languages, threads and
/// licence standing, and the account's row locked `FOR UPDATE`
/// (PostgreSQL; SQLite's write transaction holds the whole database
/// already) with the running limits of the account and the token and the
/// administrator's queue settings. No row when the group has no waiting
/// job (or its account is gone).
fn head_locked(group: &Group) -> SelectStatement {
    let token_max = Query::select()
        .column(api_token::Column::MaxRunning)
        .from(api_token::Entity)
        .and_where(api_token::Column::Id.eq(group.token_id.clone()))
        .to_owned();
    let saved = Query::select()
        .column(setting::Column::Value)
        .from(setting::Entity)
        .and_where(setting::Column::Key.eq(queue::SETTINGS_KEY))
        .to_owned();
    let token = match &group.token_id {
        Some(t) => Expr::col((job::Entity, job::Column::TokenId)).eq(t.clone()),
        None => Expr::col((job::Entity, job::Column::TokenId)).is_null(),
    };
    let mut query = Query::select();
    query
        .columns(job::Column::iter().map(|c| (job::Entity, c)))
        .expr_as(
            Expr::col((account::Entity, account::Column::MaxRunning)),
            Alias::new("account_max"),
        )
        .expr_as(
            Expr::SubQuery(None, Box::new(token_max.into())),
            Alias::new("token_max"),
        )
        .expr_as(
            Expr::SubQuery(None, Box::new(saved.into())),
            Alias::new("queue_setting"),
        );
    book_columns(&mut query)
        .from(job::Entity)
        .inner_join(
            project::Entity,
            Expr::col((project::Entity, project::Column::Id))
                .equals((job::Entity, job::Column::ProjectId)),
        )
        .inner_join(
            account::Entity,
            Expr::col((account::Entity, account::Column::Id))
                .equals((job::Entity, job::Column::AccountId)),
        )
        .and_where(Expr::col((job::Entity, job::Column::Status)).eq(JobStatus::Pending))
        .and_where(Expr::col((job::Entity, job::Column::Priority)).eq(group.priority))
        .and_where(Expr::col((job::Entity, job::Column::AccountId)).eq(group.account_id.clone()))
        .and_where(token)
        .order_by((job::Entity, job::Column::CreatedAt), Order::Asc)
        .order_by((job::Entity, job::Column::Id), Order::Asc)
        .limit(2)
        .lock_with_tables(LockType::Update, [account::Entity])
        .to_owned()
}

/// Whether fewer than `limit` jobs whose `column` is `value` hold a
/// running slot (a condition on the update that takes a job).
fn running_below(now: i64, column: job::Column, value: &str, limit: i64) -> Expr {
    let running = Query::select()
        .expr(Expr::col(job::Column::Id).count())
        .from(job::Entity)
        .cond_where(queue::holds_slot(now))
        .and_where(column.eq(value))
        .to_owned();
    Expr::SubQuery(None, Box::new(running.into())).lt(limit)
}

/// The request of a job a worker took: `running`, translating. Returns it
/// as it is now; none when it is gone.
async fn mark_running(
    txn: &impl ConnectionTrait,
    request_id: &str,
    now: i64,
) -> Result<Option<request::Model>, SchedulerError> {
    let update = request::Entity::update_many()
        .col_expr(request::Column::Status, Expr::value(RequestStatus::Running))
        .col_expr(request::Column::Stage, Expr::value(Stage::Translation))
        .col_expr(request::Column::Step, Expr::value(steps::TRANSLATING))
        .col_expr(request::Column::UpdatedAt, Expr::value(now))
        .filter(request::Column::Id.eq(request_id));
    // One round trip where the database returns the updated row.
    if txn.support_returning() {
        return Ok(update.exec_with_returning(txn).await?.into_iter().next());
    }
    update.exec(txn).await?;
    Ok(request::Entity::find_by_id(request_id.to_owned())
        .one(txn)
        .await?)
}

/// What a ticket and the job-start checks take from a job's book (its
/// volume).
#[derive(Debug, FromQueryResult)]
struct Book {
    source_language: String,
    target_language: String,
    threads: Option<i32>,
    licence_counted: bool,
}

/// Adds the [`Book`] columns of `projects` to `query`.
fn book_columns(query: &mut SelectStatement) -> &mut SelectStatement {
    query.columns([
        (project::Entity, project::Column::SourceLanguage),
        (project::Entity, project::Column::TargetLanguage),
        (project::Entity, project::Column::Threads),
        (project::Entity, project::Column::LicenceCounted),
    ])
}

/// The ticket of a job taken over, as it is now; none when its volume is
/// gone.
async fn ticket_of(
    db: &DatabaseConnection,
    job_row: &job::Model,
    row: &request::Model,
) -> Result<Option<JobTicket>, SchedulerError> {
    let mut query = Query::select();
    book_columns(&mut query).from(project::Entity).and_where(
        Expr::col((project::Entity, project::Column::Id)).eq(job_row.project_id.clone()),
    );
    let book = Book::find_by_statement(db.get_database_backend().build(&query))
        .one(db)
        .await?;
    Ok(book.map(|book| ticket(job_row, row, book)))
}

/// The ticket of a job taken: `job_row` is the job as it is now (the
/// job-start checks may have moved it to a cheaper provider, a worker that
/// took it over may have moved it before).
fn ticket(job_row: &job::Model, row: &request::Model, book: Book) -> JobTicket {
    let requested = row.options.get("threads").and_then(Value::as_i64);
    JobTicket {
        job_id: job_row.id.clone(),
        request_id: job_row.request_id.clone(),
        project_id: job_row.project_id.clone(),
        provider_id: job_row.provider_id.clone().unwrap_or_default(),
        source_language: book.source_language,
        target_language: book.target_language,
        threads: ticket_threads(requested, book.threads),
        account_id: job_row.account_id.clone(),
        token_id: job_row.token_id.clone(),
        chapter_ids: row.chapter_ids(),
        announce_chapters: row.wants_chapter_events(),
        quality: quality(row).to_wire(),
        analysis_mode: analysis_mode(row).to_wire(),
        final_review: row
            .options
            .get("final_review")
            .and_then(Value::as_bool)
            .unwrap_or(true),
        review_below: review_below(row),
        provider_switches: job_row.provider_switches,
        deliver_epub: row.input == InputKind::Epub
            && row.options.get("output_format").and_then(|f| f.as_str())
                == Some(ResultFormat::Epub.as_str()),
    }
}

/// Fails the jobs whose lease expired after [`MAX_JOB_LEASES`] leases;
/// returns their requests, now `failed`.
pub async fn fail_abandoned(
    db: &DatabaseConnection,
) -> Result<Vec<request::Model>, SchedulerError> {
    let now = clock::now();
    let abandoned = job::Entity::find()
        .filter(job::Column::Status.eq(JobStatus::Running))
        .filter(job::Column::LeaseExpiresAt.lt(now))
        .filter(job::Column::Attempts.gte(MAX_JOB_LEASES))
        .all(db)
        .await?;
    let mut failed = Vec::new();
    for stuck in abandoned {
        let txn = dragoman_model::db::begin_write(db).await?;
        let taken = job::Entity::update_many()
            .col_expr(job::Column::Status, Expr::value(JobStatus::Failed))
            .col_expr(
                job::Column::LeaseHolder,
                Expr::value(Option::<String>::None),
            )
            .col_expr(job::Column::FinishedAt, Expr::value(now))
            .col_expr(job::Column::UpdatedAt, Expr::value(now))
            .filter(job::Column::Id.eq(stuck.id.clone()))
            .filter(job::Column::Status.eq(JobStatus::Running))
            .exec(&txn)
            .await?;
        let row = request::Entity::find_by_id(stuck.request_id.clone())
            .one(&txn)
            .await?;
        match (taken.rows_affected, row) {
            (1, Some(row)) if !row.status.is_final() => {
                let reason = format!(
                    "{WORKER_LOST}: the job was leased {} times without finishing",
                    stuck.attempts
                );
                let mut model: request::ActiveModel = row.into();
                model.error = Set(reason.clone());
                model.stop_reason = Set(WORKER_LOST.to_owned());
                let row = model.update(&txn).await?;
                let row = finish_report(&txn, &row, RequestStatus::Failed, Some(&reason)).await?;
                txn.commit().await?;
                failed.push(row);
            }
            _ => txn.rollback().await?,
        }
    }
    Ok(failed)
}

/// Extends the lease of a job its worker still holds;
/// false when the worker must stop (lease lost, job paused or cancelled).
pub async fn heartbeat(
    db: &DatabaseConnection,
    job_id: &str,
    worker_id: &str,
    lease_seconds: i64,
) -> Result<bool, SchedulerError> {
    let now = clock::now();
    let updated = job::Entity::update_many()
        .col_expr(
            job::Column::LeaseExpiresAt,
            Expr::value(now + lease_seconds),
        )
        .filter(job::Column::Id.eq(job_id))
        .filter(job::Column::LeaseHolder.eq(worker_id))
        .filter(job::Column::Status.eq(JobStatus::Running))
        .exec(db)
        .await?;
    Ok(updated.rows_affected == 1)
}

/// After a database outage that began at `began` (Unix seconds): every
/// running job whose lease was still held then has it run on for
/// `lease_seconds` from now, as if renewed at the database's return; its
/// worker could not renew it meanwhile. Returns how many were extended.
pub async fn extend_after_outage(
    db: &DatabaseConnection,
    began: i64,
    lease_seconds: i64,
) -> Result<u64, SchedulerError> {
    let until = clock::now() + lease_seconds;
    // A second or two of margin: the outage was noticed a little after it
    // began.
    let held_then = began - 2;
    let extended = job::Entity::update_many()
        .col_expr(job::Column::LeaseExpiresAt, Expr::value(until))
        .filter(job::Column::Status.eq(JobStatus::Running))
        .filter(job::Column::LeaseHolder.is_not_null())
        .filter(job::Column::LeaseExpiresAt.gte(held_then))
        .filter(job::Column::LeaseExpiresAt.lt(until))
        .exec(db)
        .await?;
    Ok(extended.rows_affected)
}

/// Hands back the job `worker_id` holds running, before its lease ends (a
/// worker stopping on shutdown): its lease is made expired, so the next
/// lease of any worker takes it over at once ([`take_over`]), and the lease
/// it hands back does not count towards [`MAX_JOB_LEASES`] (a job drained
/// by rolling restarts is not a job whose workers keep dying). False when
/// the worker does not hold it (lease lost, job paused, cancelled or
/// ended): nothing changes.
pub async fn release(
    db: &DatabaseConnection,
    job_id: &str,
    worker_id: &str,
) -> Result<bool, SchedulerError> {
    let now = clock::now();
    let released = job::Entity::update_many()
        .col_expr(
            job::Column::LeaseHolder,
            Expr::value(Option::<String>::None),
        )
        .col_expr(job::Column::LeaseExpiresAt, Expr::value(now - 1))
        .col_expr(
            job::Column::Attempts,
            Expr::case(
                Expr::col(job::Column::Attempts).gt(0),
                Expr::col(job::Column::Attempts).sub(1),
            )
            .finally(0)
            .into(),
        )
        .col_expr(job::Column::UpdatedAt, Expr::value(now))
        .filter(job::Column::Id.eq(job_id))
        .filter(job::Column::LeaseHolder.eq(worker_id))
        .filter(job::Column::Status.eq(JobStatus::Running))
        .exec(db)
        .await?;
    Ok(released.rows_affected == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(priority: Priority, account: &str, token: Option<&str>, oldest: i64) -> Group {
        Group {
            priority,
            account_id: account.to_owned(),
            token_id: token.map(str::to_owned),
            oldest,
            learned: 0,
        }
    }

    #[test]
    fn the_order_of_the_decision() {
        let groups = [
            group(Priority::Normal, "a", Some("a1"), 1),
            group(Priority::Normal, "a", Some("a2"), 2),
            group(Priority::Normal, "b", None, 3),
            group(Priority::Low, "c", None, 0),
        ];
        let mut limits = Limits::default();
        for account in ["a", "b", "c"] {
            limits.accounts.insert(account.to_owned(), 4);
        }
        limits.tokens.insert("a1".to_owned(), 1);
        let never = |_: &str| 0;
        let passed = HashSet::new();
        let pick = |load: &Load, turn: &dyn Fn(&str) -> u64, passed: &HashSet<Group>| {
            choose(&groups, load, &limits, turn, passed)
                .map(|g| (g.account_id.clone(), g.token_id.clone()))
        };
        let nothing_runs = Load::default();
        // Normal before low, then the oldest.
        assert_eq!(
            pick(&nothing_runs, &never, &passed),
            Some(("a".into(), Some("a1".into())))
        );
        // The account running fewer jobs goes first.
        let mut a_runs = Load::default();
        a_runs.accounts.insert("a".into(), 1);
        a_runs.tokens.insert("a2".into(), 1);
        assert_eq!(pick(&a_runs, &never, &passed), Some(("b".into(), None)));
        // Equal accounts, a1 at its limit: a2 (older than b's) goes.
        let mut b_runs = Load::default();
        b_runs.accounts.insert("a".into(), 1);
        b_runs.accounts.insert("b".into(), 1);
        b_runs.tokens.insert("a1".into(), 1);
        assert_eq!(
            pick(&b_runs, &never, &passed),
            Some(("a".into(), Some("a2".into())))
        );
        // Tied accounts take turns: a started last, b goes.
        let a_last = |account: &str| u64::from(account == "a");
        assert_eq!(
            pick(&nothing_runs, &a_last, &passed),
            Some(("b".into(), None))
        );
        // A group passed over in this lease is not chosen again.
        let passed = HashSet::from([group(Priority::Normal, "b", None, 99)]);
        assert_eq!(
            pick(&nothing_runs, &a_last, &passed),
            Some(("a".into(), Some("a1".into())))
        );
    }

    fn arrival(id: &str, account: &str, status: JobStatus, created_at: i64) -> JobRow {
        JobRow {
            arrived: 1,
            id: id.to_owned(),
            status,
            priority: Priority::Normal,
            account_id: account.to_owned(),
            token_id: None,
            created_at,
            lease_expires_at: None,
            attempts: 0,
        }
    }

    /// What [`read_limits`] reads for the accounts `summary` lacks: each
    /// sets a running limit of 2.
    fn limits_for(summary: &Summary, arrivals: &[JobRow]) -> NewLimits {
        let (accounts, tokens) = summary.unknown(arrivals);
        assert!(tokens.is_empty());
        NewLimits {
            accounts: accounts.into_iter().map(|a| (a, Some(2))).collect(),
            tokens: HashMap::new(),
        }
    }

    fn learn(summary: &mut Summary, arrivals: Vec<JobRow>) {
        let limits = limits_for(summary, &arrivals);
        summary.learn(arrivals, limits);
    }

    fn read_of(groups: Vec<Group>, newest: &str) -> FullRead {
        let mut limits = Limits::default();
        for g in &groups {
            limits.accounts.insert(g.account_id.clone(), 4);
        }
        FullRead {
            groups,
            limits,
            installation: QueueSettings::default(),
            newest: Some(newest.to_owned()),
        }
    }

    fn accounts(summary: &Summary) -> Vec<&str> {
        let mut names: Vec<&str> = summary
            .groups
            .iter()
            .map(|g| g.account_id.as_str())
            .collect();
        names.sort_unstable();
        names
    }

    #[test]
    fn reads_are_taken_in_by_when_they_began() {
        let mut summary = Summary::default();
        let first = summary.begin();
        let second = summary.begin();
        summary.apply(
            second,
            read_of(vec![group(Priority::Normal, "a", None, 5)], "2"),
        );
        // Jobs arrive after the second read began: one waiting, one that
        // started already (it only moves the mark).
        learn(
            &mut summary,
            vec![
                arrival("3", "b", JobStatus::Pending, 9),
                arrival("4", "c", JobStatus::Running, 9),
            ],
        );
        assert_eq!(accounts(&summary), ["a", "b"]);
        assert_eq!(summary.newest.as_deref(), Some("4"));
        assert_eq!(summary.limits.accounts.get("b"), Some(&2));
        assert_eq!(summary.limits.accounts.get("c"), None);
        // The first read (an older snapshot) comes in last: dropped.
        summary.apply(first, read_of(Vec::new(), "1"));
        assert_eq!(accounts(&summary), ["a", "b"]);
        // A read begun now, whose snapshot misses what arrives after it
        // began: that stays, with its limits; b's group, gone from it
        // (its job started), goes.
        let third = summary.begin();
        learn(
            &mut summary,
            vec![arrival("5", "d", JobStatus::Pending, 12)],
        );
        summary.apply(
            third,
            read_of(vec![group(Priority::Normal, "a", None, 5)], "4"),
        );
        assert_eq!(accounts(&summary), ["a", "d"]);
        assert_eq!(summary.limits.accounts.get("d"), Some(&2));
        assert_eq!(summary.limits.accounts.get("b"), None);
        assert_eq!(summary.newest.as_deref(), Some("5"));
        // An arrival older than what a group knew (a late commit) makes
        // the group's oldest job older.
        let known = vec![arrival("6", "a", JobStatus::Pending, 1)];
        assert_eq!(summary.unknown(&known), (Vec::new(), Vec::new()));
        learn(&mut summary, known);
        let a = summary.groups.iter().find(|g| g.account_id == "a");
        assert_eq!(a.map(|g| g.oldest), Some(1));
    }

    #[test]
    fn a_voided_summary_is_whole_again_only_by_a_read_begun_after() {
        let dispatcher = Dispatcher::default();
        assert!(dispatcher.unread());
        let start = dispatcher.summary().begin();
        dispatcher.summary().apply(start, read_of(Vec::new(), "1"));
        assert!(!dispatcher.unread());
        let before = dispatcher.summary().begin();
        dispatcher.invalidate();
        dispatcher.summary().apply(before, read_of(Vec::new(), "1"));
        assert!(dispatcher.unread());
        let after = dispatcher.summary().begin();
        dispatcher.summary().apply(after, read_of(Vec::new(), "1"));
        assert!(!dispatcher.unread());
    }

    #[test]
    fn a_full_read_is_due_after_a_while_or_sooner_when_asked() {
        let mut summary = Summary::default();
        assert!(summary.due());
        summary.begin();
        assert!(!summary.due());
        summary.wanted = true;
        summary.last_read = Instant::now().checked_sub(REREAD_GAP);
        assert!(summary.due());
        summary.reading = true;
        assert!(!summary.due());
        summary.reading = false;
        summary.wanted = false;
        assert!(!summary.due());
        summary.last_read = Instant::now().checked_sub(REREAD_AFTER);
        assert!(summary.due());
    }

    #[test]
    fn threads_only_lower_the_volume_share() {
        assert_eq!(ticket_threads(None, None), 4);
        assert_eq!(ticket_threads(Some(2), None), 2);
        assert_eq!(ticket_threads(Some(10), None), 4);
        assert_eq!(ticket_threads(Some(10), Some(8)), 8);
        assert_eq!(ticket_threads(Some(3), Some(8)), 3);
        assert_eq!(ticket_threads(None, Some(6)), 6);
    }
}
