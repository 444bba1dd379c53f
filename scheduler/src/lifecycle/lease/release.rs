//! Handing a lease back before it ends (a worker stopping on shutdown),
//! so the job is taken over at the next lease.

use crate::error::SchedulerError;
use dragoman_model::clock;
use dragoman_model::entities::job;
use dragoman_model::vocab::JobStatus;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};

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
