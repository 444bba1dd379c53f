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
//! - Resume is refused while the request's series is suspended (a series
//!   `pause`); pause and cancel are not.
//! - A resume counts as a new queue entry (spec 3): it is refused with
//!   `queue_full` when the waiting quota of the request's token or account
//!   is full ([`waiting::check_request`]).
//!
//! - A token resumes only the paid jobs it started (spec 4.10); a session
//!   or an internal caller resumes any of the account's
//!   ([`check_resumer`]). A job is paid when it calls a provider: its
//!   estimate (made when it first started) counts calls, or, never
//!   started, its request has passages still to translate. A job over
//!   chapters already translated (identical chapters sent again) calls no
//!   provider and any token of the account may resume it.
//!
//! [`apply`] holds the rules of one request; the whole-series actions
//! ([`super::series_control`]) apply them to every volume in one call,
//! with the same [`check_resumer`].

use super::ending::finish_report;
use super::job_start;
use super::series_queue::{reactivate_job, series_busy, series_suspended};
use super::waiting;
use crate::error::SchedulerError;
use crate::intake::IntakeLimits;
use crate::steps;
use dragoman_model::entities::{job, passage, request};
use dragoman_model::vocab::{ControlAction, JobOperation, JobStatus, PassageStatus, RequestStatus};
use dragoman_model::{clock, tenancy};
use dragoman_proto::principal::Principal;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait,
    PaginatorTrait, QueryFilter, Set,
};
use serde_json::Value;

/// Applies `action` to a request of the caller's account. Returns the
/// request after the change.
pub async fn control(
    db: &DatabaseConnection,
    who: &Principal,
    request_id: &str,
    action: ControlAction,
    limits: &IntakeLimits,
) -> Result<request::Model, SchedulerError> {
    let txn = dragoman_model::db::begin_write(db).await?;
    let row = tenancy::request(&txn, who.acting(), request_id).await?;
    // A suspended series takes no paid work until the series is resumed;
    // pausing and cancelling stay allowed, and a request without a job
    // keeps its own refusal (it can only be cancelled).
    let suspended = action == ControlAction::Resume
        && !row.status.is_final()
        && row.job_id.is_some()
        && series_suspended(&txn, &row.series_id).await?;
    let applied = if suspended {
        Err(SchedulerError::SeriesSuspended)
    } else if action == ControlAction::Resume
        && let Err(refused) = check_resumer(&txn, who, &row).await
    {
        Err(refused)
    } else {
        apply(&txn, row, action, limits).await
    };
    match applied {
        Ok(updated) => {
            txn.commit().await?;
            Ok(updated)
        }
        Err(e) => {
            txn.rollback().await?;
            Err(e)
        }
    }
}

/// The rules of `action` on one request, inside the caller's write
/// transaction. A refusal writes nothing, so a caller acting on several
/// requests in one transaction may go on with the others after it.
/// `limits` give the environment's queue settings (for a resume's quota)
/// and the budget threshold a resume is judged against.
pub async fn apply(
    txn: &impl ConnectionTrait,
    row: request::Model,
    action: ControlAction,
    limits: &IntakeLimits,
) -> Result<request::Model, SchedulerError> {
    if row.status.is_final() {
        return Err(SchedulerError::ActionNotAllowed(action));
    }
    let job_row = match &row.job_id {
        Some(id) => job::Entity::find_by_id(id.clone()).one(txn).await?,
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
                model.update(txn).await?;
            }
            finish_report(
                txn,
                &row,
                RequestStatus::Cancelled,
                Some(RequestStatus::Cancelled.as_str()),
            )
            .await?
        }
        (_, None) => return Err(SchedulerError::NotStarted),
        (ControlAction::Pause, Some(j))
            if matches!(j.status, JobStatus::Pending | JobStatus::Running) =>
        {
            let mut model: job::ActiveModel = j.into();
            model.status = Set(JobStatus::Paused);
            model.lease_holder = Set(None);
            model.updated_at = Set(now);
            model.update(txn).await?;
            let mut model: request::ActiveModel = row.into();
            model.status = Set(RequestStatus::Pending);
            model.step = Set(steps::PAUSED.to_owned());
            model.updated_at = Set(now);
            model.update(txn).await?
        }
        (ControlAction::Resume, Some(j))
            if j.status == JobStatus::Paused && row.status != RequestStatus::Queued =>
        {
            job_start::check_resume(txn, &j, limits.budget_switch_percent).await?;
            waiting::check_request(txn, &row, &limits.queue).await?;
            // The pause is over: its reason stays on the job for the
            // report, the request no longer shows it.
            let mut resumed: job::ActiveModel = j.clone().into();
            resumed.paused_at = Set(None);
            resumed.update(txn).await?;
            let mut cleared: request::ActiveModel = row.into();
            cleared.stop_reason = Set(String::new());
            let row = cleared.update(txn).await?;
            if series_busy(txn, &row.series_id).await? {
                let mut model: request::ActiveModel = row.into();
                model.status = Set(RequestStatus::Queued);
                model.step = Set(steps::WAITING.to_owned());
                model.updated_at = Set(now);
                model.update(txn).await?
            } else {
                reactivate_job(txn, row, &j.id).await?
            }
        }
        _ => return Err(SchedulerError::ActionNotAllowed(action)),
    };
    Ok(updated)
}

/// 409 `not_own_job` when `who` is a token that may not resume the paused
/// job of `row`: a paid job another token (or a session) started. A caller
/// without a token, a job that is not paused (the action's own rules then
/// answer) and a job that calls no provider pass.
pub async fn check_resumer(
    db: &impl ConnectionTrait,
    who: &Principal,
    row: &request::Model,
) -> Result<(), SchedulerError> {
    let Some(token) = &who.token_id else {
        return Ok(());
    };
    if row.token_id.as_deref() == Some(token.as_str()) {
        return Ok(());
    }
    let Some(job_id) = &row.job_id else {
        return Ok(());
    };
    let Some(job_row) = job::Entity::find_by_id(job_id.clone()).one(db).await? else {
        return Ok(());
    };
    if job_row.status != JobStatus::Paused || !is_paid(db, row, &job_row).await? {
        return Ok(());
    }
    Err(SchedulerError::NotOwnJob)
}

/// Whether the job calls a provider: the calls of the estimate made when it
/// first started, or, never started, whether its request has passages
/// still to translate (what that estimate counts).
pub async fn is_paid(
    db: &impl ConnectionTrait,
    row: &request::Model,
    job_row: &job::Model,
) -> Result<bool, SchedulerError> {
    // A reader-note pass always calls the provider, whatever is left to
    // translate.
    if job_row.operation == JobOperation::TranslatorNotes {
        return Ok(true);
    }
    if let Some(estimate) = &job_row.estimate {
        return Ok(estimate
            .get("calls")
            .and_then(Value::as_u64)
            .is_none_or(|calls| calls > 0));
    }
    let left = passage::Entity::find()
        .filter(passage::Column::ChapterId.is_in(row.chapter_ids()))
        .filter(passage::Column::Translation.is_null())
        .filter(passage::Column::Status.eq(PassageStatus::Pending))
        .count(db)
        .await?;
    Ok(left > 0)
}
