//! Taking a job for a worker: a job whose lease expired is taken over, the
//! head job of a chosen group is taken under its account's lock and
//! within the running limits read with it, and its request marked
//! running.

use super::MAX_JOB_LEASES;
use super::choice::Group;
use super::dispatcher::Dispatcher;
use super::reads::JobRow;
use super::ticket::{Book, book_columns, ticket_of};
use crate::error::SchedulerError;
use crate::lifecycle::queue;
use crate::steps;
use dragoman_model::entities::{account, api_token, job, project, request, setting};
use dragoman_model::vocab::{JobStatus, RequestStatus, Stage};
use dragoman_proto::v1::JobTicket;
use sea_orm::sea_query::{Alias, Expr, ExprTrait, LockType, Order, Query, SelectStatement};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait,
    FromQueryResult, Iterable, QueryFilter, QueryResult,
};
use serde_json::Value;

/// A running job whose lease expired before its workers used up their
/// leases: a worker takes it over.
pub(super) fn expired_lease(now: i64) -> Condition {
    Condition::all()
        .add(job::Column::Status.eq(JobStatus::Running))
        .add(job::Column::LeaseExpiresAt.lt(now))
        .add(job::Column::Attempts.lt(MAX_JOB_LEASES))
}

/// Takes over the job whose lease expired first, if any.
pub(super) async fn take_over(
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
pub(super) enum Take {
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
pub(super) struct Taken {
    pub(super) job: job::Model,
    pub(super) request: request::Model,
    pub(super) book: Book,
    /// No other job of its group was waiting when it was taken.
    pub(super) last: bool,
}

/// The running limits of an account and a token as they are now, read
/// with the lock on the account's row.
#[derive(Debug, FromQueryResult)]
pub(super) struct LockedLimits {
    pub(super) account_max: Option<i32>,
    pub(super) token_max: Option<i32>,
    pub(super) queue_setting: Option<Value>,
}

/// Takes the oldest job of `group` for `worker_id` when its token and its
/// account have a free slot, counted and limited as they are now.
pub(super) async fn take(
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
pub(super) struct Head {
    pub(super) job: job::Model,
    pub(super) book: Book,
    pub(super) limits: LockedLimits,
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
pub(super) fn head_locked(group: &Group) -> SelectStatement {
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
pub(super) fn running_below(now: i64, column: job::Column, value: &str, limit: i64) -> Expr {
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
pub(super) async fn mark_running(
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
