//! Waiting quotas (spec 8, "Queue and priority rules" 4; spec 3, last
//! row): the token's `max_queued` and the account's waiting quota (its own
//! `max_queued`, else the installation's, see [`super::queue`]) limit the
//! requests waiting to start. Over them, a new request and a resume are
//! refused with 429 `queue_full`, naming the quota and its limit.
//!
//! What waits to start: a request `queued` (its volume busy with earlier
//! work, or resumed while it was) and a job waiting for a worker (`pending`,
//! whatever slot it waits for). A paused job does not wait: nothing starts
//! it until its owner resumes it, and that resume counts as a new queue
//! entry, checked here like a new request. A running job, or one whose
//! lease expired and which a worker takes over, does not wait either.
//!
//! The counts read the dispatch index (`ix_jobs_dispatch`: status,
//! priority, account, token, arrival): every priority is named, so the
//! database seeks to the account's (or the token's) entries of each
//! priority instead of reading the whole queue.

use super::queue::QueueSettings;
use crate::error::{QueueScope, SchedulerError};
use dragoman_model::entities::{account, api_token, job, request};
use dragoman_model::vocab::{JobStatus, Priority, RequestStatus};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter};

/// Requests of the account (and of the token, when given) waiting to start.
pub async fn waiting(
    db: &impl ConnectionTrait,
    account_id: &str,
    token_id: Option<&str>,
) -> Result<u64, SchedulerError> {
    let mut jobs = job::Entity::find()
        .filter(job::Column::Status.eq(JobStatus::Pending))
        .filter(job::Column::Priority.is_in(Priority::ALL.iter().copied()))
        .filter(job::Column::AccountId.eq(account_id));
    let mut queued = request::Entity::find()
        .filter(request::Column::Status.eq(RequestStatus::Queued))
        .filter(request::Column::AccountId.eq(account_id));
    if let Some(token_id) = token_id {
        jobs = jobs.filter(job::Column::TokenId.eq(token_id));
        queued = queued.filter(request::Column::TokenId.eq(token_id));
    }
    Ok(jobs.count(db).await? + queued.count(db).await?)
}

/// 429 `queue_full` when one more request waiting to start would go over
/// the token's or the account's waiting quota (the token's is checked
/// first). `installation` are the environment's settings; the
/// administrator's, when saved, win over them.
pub async fn check(
    db: &impl ConnectionTrait,
    owner: &account::Model,
    token: Option<&api_token::Model>,
    installation: &QueueSettings,
) -> Result<(), SchedulerError> {
    if let Some(token) = token {
        let limit = i64::from(token.max_queued);
        let count = waiting(db, &token.account_id, Some(&token.id)).await?;
        if full(count, limit) {
            return Err(SchedulerError::QueueFull {
                scope: QueueScope::Token,
                limit,
            });
        }
    }
    let in_force = installation.in_force(db).await?;
    if let Some(limit) = in_force.queued_limit(owner.max_queued) {
        let count = waiting(db, &owner.id, None).await?;
        if full(count, limit) {
            return Err(SchedulerError::QueueFull {
                scope: QueueScope::Account,
                limit,
            });
        }
    }
    Ok(())
}

/// Whether `count` waiting requests leave no room under `limit`.
fn full(count: u64, limit: i64) -> bool {
    i64::try_from(count).unwrap_or(i64::MAX) >= limit
}

/// [`check`] for the owner and the token of a stored request (a resume):
/// the request joins the queue of the token that sent it, whoever resumes
/// it. A token revoked and deleted since has no quota left to check.
pub async fn check_request(
    db: &impl ConnectionTrait,
    row: &request::Model,
    installation: &QueueSettings,
) -> Result<(), SchedulerError> {
    let Some(owner) = account::Entity::find_by_id(row.account_id.clone())
        .one(db)
        .await?
    else {
        return Err(SchedulerError::RequestNotFound);
    };
    let token = match &row.token_id {
        Some(id) => api_token::Entity::find_by_id(id.clone()).one(db).await?,
        None => None,
    };
    check(db, &owner, token.as_ref(), installation).await
}
