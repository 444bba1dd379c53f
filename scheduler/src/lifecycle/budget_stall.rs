//! A job paused by a budget never resumes on its own; left paused longer
//! than `API_REQUEST_STALL_MINUTES` it ends `failed` with stop reason
//! `budget_exceeded` (spec 3), so no request waits forever for a cap that
//! nobody raises.

use super::ending::fail_request;
use crate::error::SchedulerError;
use dragoman_model::clock;
use dragoman_model::entities::{job, request};
use dragoman_model::vocab::{ErrorCode, JobStatus};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};

/// `API_REQUEST_STALL_MINUTES` when nothing sets it: a day to raise a cap.
pub const DEFAULT_STALL_MINUTES: i64 = 24 * 60;

/// Fails the requests whose jobs a budget paused more than `stall_minutes`
/// ago; returns them, now `failed`.
pub async fn fail_stalled(
    db: &DatabaseConnection,
    stall_minutes: i64,
) -> Result<Vec<request::Model>, SchedulerError> {
    let now = clock::now();
    let deadline = now - stall_minutes.max(0) * 60;
    let stalled = job::Entity::find()
        .filter(job::Column::Status.eq(JobStatus::Paused))
        .filter(job::Column::PauseReason.eq(ErrorCode::BudgetExceeded.code()))
        .filter(job::Column::PausedAt.lt(deadline))
        .all(db)
        .await?;
    let mut failed = Vec::new();
    for paused in stalled {
        let txn = dragoman_model::db::begin_write(db).await?;
        // Taken only if still paused for the budget: a resume meanwhile wins.
        let taken = job::Entity::update_many()
            .col_expr(job::Column::Status, Expr::value(JobStatus::Failed))
            .col_expr(job::Column::FinishedAt, Expr::value(now))
            .col_expr(job::Column::UpdatedAt, Expr::value(now))
            .filter(job::Column::Id.eq(paused.id.clone()))
            .filter(job::Column::Status.eq(JobStatus::Paused))
            .filter(job::Column::PausedAt.eq(paused.paused_at))
            .exec(&txn)
            .await?;
        let row = request::Entity::find_by_id(paused.request_id.clone())
            .one(&txn)
            .await?;
        match (taken.rows_affected, row) {
            (1, Some(row)) if !row.status.is_final() => {
                let reason = format!(
                    "{}: paused by its budget for more than {stall_minutes} minutes",
                    ErrorCode::BudgetExceeded.code()
                );
                let row =
                    fail_request(&txn, row, ErrorCode::BudgetExceeded.code(), &reason).await?;
                txn.commit().await?;
                failed.push(row);
            }
            _ => txn.rollback().await?,
        }
    }
    Ok(failed)
}
