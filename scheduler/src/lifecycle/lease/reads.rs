//! The statements the decision reads from: the running jobs with the
//! arrivals since the summary's newest job, the running limits of
//! accounts and tokens it lacks, and the full grouped read of the waiting
//! jobs.

use super::choice::{Group, Limits};
use super::summary::FullRead;
use super::{ARRIVALS_PAGE, MAX_JOB_LEASES};
use crate::error::SchedulerError;
use crate::lifecycle::queue::QueueSettings;
use dragoman_model::entities::{account, api_token, job};
use dragoman_model::vocab::{JobStatus, Priority};
use sea_orm::sea_query::{Alias, Expr, ExprTrait, Order, Query, SelectStatement, UnionType};
use sea_orm::{
    ColumnTrait, DatabaseConnection, EntityTrait, FromQueryResult, QueryFilter, QuerySelect,
};
use std::collections::HashMap;

/// A job as the decision reads it: a running one, or one made since the
/// newest one the summary has seen (an arrival), whatever its status.
#[derive(Debug, Clone, FromQueryResult)]
pub(super) struct JobRow {
    /// 1 when read as an arrival, 0 when read as a running job.
    pub(super) arrived: i32,
    pub(super) id: String,
    pub(super) status: JobStatus,
    pub(super) priority: Priority,
    pub(super) account_id: String,
    pub(super) token_id: Option<String>,
    pub(super) created_at: i64,
    pub(super) lease_expires_at: Option<i64>,
    pub(super) attempts: i32,
}

/// The columns of a [`JobRow`] after `arrived`.
pub(super) const JOB_ROW: [job::Column; 8] = [
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
    pub(super) fn expired(&self, now: i64) -> bool {
        self.lease_expires_at.is_some_and(|at| at < now) && self.attempts < MAX_JOB_LEASES
    }

    /// Whether it holds a running slot (see [`queue::holds_slot`]).
    pub(super) fn holds_slot(&self, now: i64) -> bool {
        self.lease_expires_at.is_some_and(|at| at >= now) || self.attempts < MAX_JOB_LEASES
    }
}

/// Every running job, live or not.
pub(super) async fn running_jobs(db: &DatabaseConnection) -> Result<Vec<JobRow>, SchedulerError> {
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
pub(super) fn running_statement() -> SelectStatement {
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
pub(super) fn running_and_arrivals(newest: Option<&str>) -> SelectStatement {
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
pub(super) struct NewLimits {
    /// Each account found, with its own limit when it sets one.
    pub(super) accounts: HashMap<String, Option<i32>>,
    /// Each token asked for, with its limit; none for a token not found
    /// (deleted since its job was made: no limit of its own).
    pub(super) tokens: HashMap<String, Option<i32>>,
}

/// Reads the running limits of `accounts` and `tokens` (a statement for
/// each, when not empty).
pub(super) async fn read_limits(
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
pub(super) struct GroupRow {
    pub(super) priority: Priority,
    pub(super) account_id: String,
    pub(super) token_id: Option<String>,
    pub(super) oldest: i64,
    pub(super) account_max: Option<i32>,
    pub(super) token_max: Option<i32>,
}

/// Every waiting group with the running limits of its account and token,
/// and the highest job id, read first: a job above it is read with the
/// arrivals, one below it that commits after the grouped query began
/// waits for the next full read.
pub(super) async fn read_waiting(
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
pub(super) async fn waiting_groups(
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
