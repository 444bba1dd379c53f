//! Jobs whose workers keep dying: past [`MAX_JOB_LEASES`] expired leases
//! a job fails with [`WORKER_LOST`] instead of being leased again.

use super::{MAX_JOB_LEASES, WORKER_LOST};
use crate::error::SchedulerError;
use crate::lifecycle::ending::finish_report;
use dragoman_model::clock;
use dragoman_model::entities::{job, request};
use dragoman_model::vocab::{JobStatus, RequestStatus};
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, Set};

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
