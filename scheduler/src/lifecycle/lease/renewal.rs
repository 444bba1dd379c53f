//! Keeping a lease: a worker's heartbeat extends the lease of the job it
//! holds, and after a database outage every lease still held when it
//! began runs on, since no worker could renew it meanwhile.

use crate::error::SchedulerError;
use dragoman_model::clock;
use dragoman_model::entities::job;
use dragoman_model::vocab::JobStatus;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};

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
