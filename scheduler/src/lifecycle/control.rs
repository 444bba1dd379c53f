//! Pause, resume and cancel (spec 3, 4.4).
//!
//! - A request without a job yet (`queued` at intake) can only be cancelled.
//! - Pause stops a job waiting for a worker or running; the request stays
//!   `pending` with step `paused`, and its series is free for the next
//!   volume.
//! - Resume puts a paused job back in line; when another volume of the
//!   series is under way meanwhile, the request waits `queued` with its
//!   paused job until its turn. A request resumed that way cannot be resumed
//!   or paused again (it is not paused any more); it can be cancelled.
//! - A final request allows nothing.

use super::ending::finish_report;
use super::series_queue::{reactivate_job, series_busy};
use crate::error::SchedulerError;
use crate::steps;
use dragoman_model::clock;
use dragoman_model::entities::{job, request};
use dragoman_model::vocab::{ControlAction, JobStatus, RequestStatus};
use sea_orm::{ActiveModelTrait, ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, Set};

/// Applies `action` to the account's request. Returns the request after the
/// change.
pub async fn control(
    db: &DatabaseConnection,
    account_id: &str,
    request_id: &str,
    action: ControlAction,
) -> Result<request::Model, SchedulerError> {
    let txn = dragoman_model::db::begin_write(db).await?;
    let row = request::Entity::find_by_id(request_id.to_owned())
        .filter(request::Column::AccountId.eq(account_id))
        .one(&txn)
        .await?
        .ok_or(SchedulerError::RequestNotFound)?;
    if row.status.is_final() {
        txn.rollback().await?;
        return Err(SchedulerError::ActionNotAllowed(action));
    }
    let job_row = match &row.job_id {
        Some(id) => job::Entity::find_by_id(id.clone()).one(&txn).await?,
        None => None,
    };
    let now = clock::now();
    let updated = match (action, job_row) {
        (ControlAction::Cancel, job_row) => {
            if let Some(j) = job_row {
                let mut model: job::ActiveModel = j.into();
                model.status = Set(JobStatus::Cancelled);
                model.lease_holder = Set(None);
                model.finished_at = Set(Some(now));
                model.updated_at = Set(now);
                model.update(&txn).await?;
            }
            finish_report(
                &txn,
                &row,
                RequestStatus::Cancelled,
                Some(RequestStatus::Cancelled.as_str()),
            )
            .await?
        }
        (_, None) => {
            txn.rollback().await?;
            return Err(SchedulerError::NotStarted);
        }
        (ControlAction::Pause, Some(j))
            if matches!(j.status, JobStatus::Pending | JobStatus::Running) =>
        {
            let mut model: job::ActiveModel = j.into();
            model.status = Set(JobStatus::Paused);
            model.lease_holder = Set(None);
            model.updated_at = Set(now);
            model.update(&txn).await?;
            let mut model: request::ActiveModel = row.into();
            model.status = Set(RequestStatus::Pending);
            model.step = Set(steps::PAUSED.to_owned());
            model.updated_at = Set(now);
            model.update(&txn).await?
        }
        (ControlAction::Resume, Some(j))
            if j.status == JobStatus::Paused && row.status != RequestStatus::Queued =>
        {
            if series_busy(&txn, &row.series_id).await? {
                let mut model: request::ActiveModel = row.into();
                model.status = Set(RequestStatus::Queued);
                model.step = Set(steps::WAITING.to_owned());
                model.updated_at = Set(now);
                model.update(&txn).await?
            } else {
                reactivate_job(&txn, row, &j.id).await?
            }
        }
        _ => {
            txn.rollback().await?;
            return Err(SchedulerError::ActionNotAllowed(action));
        }
    };
    txn.commit().await?;
    Ok(updated)
}
