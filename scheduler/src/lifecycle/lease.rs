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
//! stands for waits on nobody else.
//!
//! Otherwise the waiting jobs are read as groups of one priority, account
//! and token, with the arrival of each group's oldest job: one grouped
//! query that the dispatch index (`ix_jobs_dispatch`) serves, so the rows
//! the scheduler reads grow with the groups, not with the queue. With them
//! come the running jobs (few: the limits bound them) and the running
//! limits of the accounts and tokens involved, in one query each. A group
//! whose token or account is at its running limit waits. Among the others:
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
//! locks the account's row, counts its running jobs again and takes the job
//! by a conditional update (it is still waiting and unchanged since it was
//! read). Two workers choosing at once, in one process or several, thus
//! never take a token or an account past its limit, nor one job twice.
//! When another worker got there first, or when the job-start checks
//! ([`job_start`]) refuse the job, the decision is made again from fresh
//! counts.
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
use dragoman_model::entities::{account, api_token, job, project, request};
use dragoman_model::vocab::{
    AnalysisMode, InputKind, JobStatus, Priority, Quality, RequestStatus, ResultFormat, Stage,
};
use dragoman_proto::v1::JobTicket;
use dragoman_proto::wire::WireEnum;
use sea_orm::sea_query::{Alias, Expr, ExprTrait, Query};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, EntityTrait,
    FromQueryResult, QueryFilter, QueryOrder, QuerySelect, Set,
};
use serde_json::Value;
use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, PoisonError};

/// Leases a job may have: one whose workers keep dying (a poison job) fails
/// instead of being retried forever.
pub const MAX_JOB_LEASES: i32 = 5;

/// A volume's share of its provider's capacity (parallel batches) when the
/// volume sets none.
pub const DEFAULT_VOLUME_THREADS: i64 = 4;

/// The stop reason of a request whose job was abandoned by its workers.
pub const WORKER_LOST: &str = "worker_lost";

/// Decisions one lease makes at most. Each one after the first follows a
/// job another worker took first or one the job-start checks refused; past
/// them the worker asks again (it is woken when checks ended requests).
const DECISIONS: usize = 16;

/// Accounts whose turn a process remembers; past them it forgets those
/// with nothing waiting.
const TURNS_KEPT: usize = 10_000;

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
/// setting wins over them), and whose turn it is among accounts.
#[derive(Debug, Default)]
pub struct Dispatcher {
    environment: QueueSettings,
    turns: Mutex<Turns>,
}

/// When this process last started a job for each account, by a counter
/// (seconds are too coarse: many jobs start in one).
#[derive(Debug, Default)]
struct Turns {
    clock: u64,
    last: HashMap<String, u64>,
}

impl Dispatcher {
    pub fn new(environment: QueueSettings) -> Dispatcher {
        Dispatcher {
            environment,
            turns: Mutex::default(),
        }
    }

    /// The queue settings of the environment.
    pub fn environment(&self) -> &QueueSettings {
        &self.environment
    }

    fn turns(&self) -> std::sync::MutexGuard<'_, Turns> {
        // The map holds no invariant a panicking holder could break.
        self.turns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes that a job of `account` started; `waiting` are the accounts
    /// with waiting jobs, the ones worth remembering.
    fn started(&self, account: &str, waiting: &HashSet<&str>) {
        let mut turns = self.turns();
        turns.clock += 1;
        let now = turns.clock;
        turns.last.insert(account.to_owned(), now);
        if turns.last.len() > TURNS_KEPT {
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

/// Waiting jobs of one priority, account and token.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Group {
    priority: Priority,
    account_id: String,
    token_id: Option<String>,
    /// Arrival of its oldest job.
    oldest: i64,
}

/// A running job as the decision reads it.
#[derive(Debug, Clone, FromQueryResult)]
struct RunningJob {
    id: String,
    account_id: String,
    token_id: Option<String>,
    lease_expires_at: Option<i64>,
    attempts: i32,
}

impl RunningJob {
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
    fn of(running: &[RunningJob], now: i64) -> Load {
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
) -> Option<&'g Group> {
    groups
        .iter()
        .filter(|g| blocked(g, load, limits).is_none())
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
    for _ in 0..DECISIONS {
        let t0 = std::time::Instant::now();
        let now = clock::now();
        let running = running_jobs(db).await?;
        let t1 = t0.elapsed();
        if let Some(ticket) = take_over(db, &running, worker_id, lease_seconds, now).await? {
            leased.ticket = Some(ticket);
            return Ok(leased);
        }
        let (groups, limits) = waiting_groups(db, dispatcher.environment()).await?;
        let t2 = t0.elapsed();
        if groups.is_empty() {
            break;
        }
        let load = Load::of(&running, now);
        let chosen = {
            let turns = dispatcher.turns();
            let turn = |account: &str| turns.last.get(account).copied().unwrap_or(0);
            choose(&groups, &load, &limits, turn).cloned()
        };
        let Some(group) = chosen else { break };
        let Some(taken) = take(db, &group, &limits, worker_id, lease_seconds, now).await? else {
            continue;
        };
        let (job_row, row) = taken;
        let t3 = t0.elapsed();
        if std::env::var("PROBE_TIMES").is_ok() { eprintln!("T running {:?} groups {:?} take {:?}", t1, t2 - t1, t3 - t2); }
        match job_start::check(db, &job_row, &row, start).await? {
            StartVerdict::Go => {
                let waiting: HashSet<&str> = groups.iter().map(|g| g.account_id.as_str()).collect();
                dispatcher.started(&group.account_id, &waiting);
                leased.ticket = ticket_of(db, &job_row, &row).await?;
                return Ok(leased);
            }
            StartVerdict::Refused(ended) => leased.ended.push(*ended),
        }
    }
    Ok(leased)
}

/// Every running job, live or not.
async fn running_jobs(db: &DatabaseConnection) -> Result<Vec<RunningJob>, SchedulerError> {
    Ok(job::Entity::find()
        .select_only()
        .column(job::Column::Id)
        .column(job::Column::AccountId)
        .column(job::Column::TokenId)
        .column(job::Column::LeaseExpiresAt)
        .column(job::Column::Attempts)
        .filter(job::Column::Status.eq(JobStatus::Running))
        .into_model::<RunningJob>()
        .all(db)
        .await?)
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

/// The waiting jobs as groups of one priority, account and token, with the
/// running limits of their accounts and tokens: one query, grouping first
/// (the dispatch index serves it) and joining the few groups to their
/// account and token after.
async fn waiting_groups(
    db: &DatabaseConnection,
    environment: &QueueSettings,
) -> Result<(Vec<Group>, Limits), SchedulerError> {
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
        });
    }
    Ok((groups, limits))
}

/// Takes over the job whose lease expired first, if any.
async fn take_over(
    db: &DatabaseConnection,
    running: &[RunningJob],
    worker_id: &str,
    lease_seconds: i64,
    now: i64,
) -> Result<Option<JobTicket>, SchedulerError> {
    let mut expired: Vec<&RunningJob> = running.iter().filter(|j| j.expired(now)).collect();
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

/// Takes the oldest job of `group` for `worker_id` when its token and its
/// account still have a free slot; none when they have not or another
/// worker took the job first. Returns the job and its request as they are
/// now.
async fn take(
    db: &DatabaseConnection,
    group: &Group,
    limits: &Limits,
    worker_id: &str,
    lease_seconds: i64,
    now: i64,
) -> Result<Option<(job::Model, request::Model)>, SchedulerError> {
    let token = match &group.token_id {
        Some(t) => job::Column::TokenId.eq(t.clone()),
        None => job::Column::TokenId.is_null(),
    };
    let Some(head) = job::Entity::find()
        .filter(job::Column::Status.eq(JobStatus::Pending))
        .filter(job::Column::Priority.eq(group.priority))
        .filter(job::Column::AccountId.eq(group.account_id.clone()))
        .filter(token)
        .order_by_asc(job::Column::CreatedAt)
        .order_by_asc(job::Column::Id)
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let txn = dragoman_model::db::begin_write(db).await?;
    // The account's row is the lock every start of the account (and of its
    // tokens) takes before the update counts its running jobs: whoever
    // comes second counts the first one's job (the update reads what was
    // committed before it began).
    let locked: Option<String> = account::Entity::find_by_id(group.account_id.clone())
        .select_only()
        .column(account::Column::Id)
        .lock_exclusive()
        .into_tuple()
        .one(&txn)
        .await?;
    if locked.is_none() {
        txn.rollback().await?;
        return Ok(None);
    }
    let account_limit = limits.accounts.get(&group.account_id).copied().unwrap_or(0);
    let token_limit = group
        .token_id
        .as_ref()
        .and_then(|t| limits.tokens.get(t).map(|limit| (t.clone(), *limit)));
    let started_at = head.started_at.unwrap_or(now);
    // Taken only while it still waits unchanged and its account and token
    // are under their limits.
    let taken = job::Entity::update_many()
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
    let taken = match &token_limit {
        Some((token, limit)) => {
            taken.filter(running_below(now, job::Column::TokenId, token, *limit))
        }
        None => taken,
    }
    .exec(&txn)
    .await?;
    if taken.rows_affected != 1 {
        txn.rollback().await?;
        return Ok(None);
    }
    let Some(row) = mark_running(&txn, &head.request_id, now).await? else {
        txn.rollback().await?;
        return Ok(None);
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
    Ok(Some((job_row, row)))
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

/// The ticket of a job taken; none when its volume is gone.
async fn ticket_of(
    db: &DatabaseConnection,
    job_row: &job::Model,
    row: &request::Model,
) -> Result<Option<JobTicket>, SchedulerError> {
    let Some(volume) = project::Entity::find_by_id(job_row.project_id.clone())
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let requested = row.options.get("threads").and_then(Value::as_i64);
    Ok(Some(JobTicket {
        job_id: job_row.id.clone(),
        request_id: job_row.request_id.clone(),
        project_id: job_row.project_id.clone(),
        provider_id: job_row.provider_id.clone().unwrap_or_default(),
        source_language: volume.source_language,
        target_language: volume.target_language,
        threads: ticket_threads(requested, volume.threads),
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
    }))
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

#[cfg(test)]
mod tests {
    use super::*;

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
