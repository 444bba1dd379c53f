//! The end of a request: the worker's outcome becomes the request's final
//! status, its completion report, its volume's status, its final webhook
//! in the outbox and, when its owner asked for it, the mail that tells
//! them, all in the transaction that ends it — so no request ends without
//! its final event.

use crate::error::SchedulerError;
use crate::report;
use dragoman_model::clock;
use dragoman_model::documents::report::DeliveryReport;
use dragoman_model::entities::{
    account, job, mail_outbox, project, request, series, setting, webhook_delivery,
};
use dragoman_model::mail::{self, FinishedRequest};
use dragoman_model::vocab::{
    CallbackEvent, JobOperation, JobOutcome, JobStatus, PassageStatus, RequestStatus, Stage,
    VolumeStatus,
};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter,
    Set,
};
use serde_json::Value;

/// The report `reason` of a request that completed with residuals.
const RESIDUALS: &str = "residuals";

/// How a worker ended a job.
#[derive(Debug, Clone, Default)]
pub struct JobEnd {
    pub outcome: Option<JobOutcome>,
    /// Why it failed (`error` of the request).
    pub error: String,
    /// The request's `stop_reason` when it failed for a known reason;
    /// otherwise the error is the stop reason.
    pub stop_reason: Option<String>,
    /// `report.delivery` of an EPUB request, from its export stage.
    pub delivery: Option<DeliveryReport>,
}

impl JobEnd {
    pub fn done() -> JobEnd {
        JobEnd {
            outcome: Some(JobOutcome::Done),
            ..JobEnd::default()
        }
    }

    pub fn failed(error: &str) -> JobEnd {
        JobEnd {
            outcome: Some(JobOutcome::Failed),
            error: error.to_owned(),
            ..JobEnd::default()
        }
    }
}

/// Ends a job its worker holds and gives the request its final status and
/// report. Returns the request as it ended.
pub async fn finish(
    db: &DatabaseConnection,
    job_id: &str,
    worker_id: &str,
    end: JobEnd,
) -> Result<request::Model, SchedulerError> {
    let outcome = end.outcome.unwrap_or(JobOutcome::Failed);
    let error = end.error.as_str();
    let txn = dragoman_model::db::begin_write(db).await?;
    let held = job::Entity::find_by_id(job_id.to_owned())
        .filter(job::Column::LeaseHolder.eq(worker_id))
        .filter(job::Column::Status.eq(JobStatus::Running))
        .one(&txn)
        .await?;
    let Some(held) = held else {
        txn.rollback().await?;
        return Err(SchedulerError::JobNotHeld);
    };
    let row = request::Entity::find_by_id(held.request_id.clone())
        .one(&txn)
        .await?
        .ok_or(SchedulerError::RequestNotFound)?;
    let now = clock::now();
    let operation = held.operation;
    let (job_status, final_status, reason) = match outcome {
        // Reader-note proposals complete whatever the translation's
        // residuals: the report still lists them.
        JobOutcome::Done if operation == JobOperation::TranslatorNotes => {
            (JobStatus::Done, RequestStatus::Completed, None)
        }
        JobOutcome::Done => {
            let residuals = report::residual_count(&txn, &row).await?;
            if residuals > 0 {
                (
                    JobStatus::Done,
                    RequestStatus::CompletedWithResiduals,
                    Some(RESIDUALS),
                )
            } else {
                (JobStatus::Done, RequestStatus::Completed, None)
            }
        }
        JobOutcome::Failed => (JobStatus::Failed, RequestStatus::Failed, Some(error)),
    };
    let mut model: job::ActiveModel = held.into();
    model.status = Set(job_status);
    model.finished_at = Set(Some(now));
    model.updated_at = Set(now);
    model.lease_holder = Set(None);
    model.update(&txn).await?;
    let mut row_model: request::ActiveModel = row.into();
    let stop_reason = end.stop_reason.as_deref().unwrap_or(error);
    if final_status == RequestStatus::Failed {
        row_model.error = Set(error.to_owned());
        row_model.stop_reason = Set(stop_reason.to_owned());
    }
    row_model.stage = Set(Stage::Export);
    let row = row_model.update(&txn).await?;
    let reason = if final_status == RequestStatus::Failed {
        Some(stop_reason)
    } else {
        reason
    };
    let mut done = finish_report(&txn, &row, final_status, reason).await?;
    if let (Some(delivery), Some(report)) = (end.delivery, done.report.clone()) {
        let mut report = report;
        report["delivery"] = report::stored(&delivery);
        let mut model: request::ActiveModel = done.into();
        model.report = Set(Some(report));
        done = model.update(&txn).await?;
    }
    // Reader-note proposals leave the book's translation, and so its
    // status, as they found it.
    if operation == JobOperation::Translate {
        let volume_status = match final_status {
            RequestStatus::Completed => VolumeStatus::Translated,
            RequestStatus::CompletedWithResiduals => VolumeStatus::Incomplete,
            _ => VolumeStatus::Imported,
        };
        project::Entity::update_many()
            .col_expr(project::Column::Status, Expr::value(volume_status))
            .col_expr(project::Column::UpdatedAt, Expr::value(now))
            .filter(project::Column::Id.eq(done.project_id.clone()))
            .exec(&txn)
            .await?;
    }
    txn.commit().await?;
    count_passages(&done);
    Ok(done)
}

/// Counts the passages of a request a worker finished by the status they
/// ended with, as its report gives them.
fn count_passages(done: &request::Model) {
    let Some(by_status) = done
        .report
        .as_ref()
        .and_then(|report| report.pointer("/passages/by_status"))
    else {
        return;
    };
    for status in [
        PassageStatus::Ok,
        PassageStatus::Check,
        PassageStatus::SourceRetained,
        PassageStatus::Error,
    ] {
        if let Some(count) = by_status.get(status.as_str()).and_then(Value::as_u64) {
            dragoman_model::telemetry::metrics::passages(status, count);
        }
    }
}

/// Sets the final status, `finished_at` and the completion report (none for
/// an import-only request, which translated nothing), and queues the final
/// webhook. Returns the request as it ended.
pub async fn finish_report(
    db: &impl ConnectionTrait,
    row: &request::Model,
    status: RequestStatus,
    reason: Option<&str>,
) -> Result<request::Model, SchedulerError> {
    let now = clock::now();
    let report = if status == RequestStatus::Imported {
        None
    } else {
        Some(report::stored(
            &report::build(db, row, status, reason, now).await?,
        ))
    };
    let mut model: request::ActiveModel = row.clone().into();
    model.status = Set(status);
    model.stage = Set(Stage::Export);
    model.step = Set(status.as_str().to_owned());
    model.finished_at = Set(Some(now));
    model.updated_at = Set(now);
    model.report = Set(report);
    let ended = model.update(db).await?;
    queue_final_webhook(db, &ended).await?;
    queue_finished_mail(db, &ended).await?;
    Ok(ended)
}

/// Ends a request `failed` with `reason` in `error` and `stop_reason` as
/// its code, inside the caller's transaction: the report and final webhook
/// follow as for any end.
pub async fn fail_request(
    db: &impl ConnectionTrait,
    row: request::Model,
    stop_reason: &str,
    reason: &str,
) -> Result<request::Model, SchedulerError> {
    let mut model: request::ActiveModel = row.into();
    model.error = Set(reason.to_owned());
    model.stop_reason = Set(stop_reason.to_owned());
    let row = model.update(db).await?;
    finish_report(db, &row, RequestStatus::Failed, Some(reason)).await
}

/// Queues the final webhook in the transaction that ends the request;
/// delivery renders its body at the first attempt (it then carries the
/// stored result).
async fn queue_final_webhook(
    db: &impl ConnectionTrait,
    row: &request::Model,
) -> Result<(), SchedulerError> {
    let Some(url) = &row.callback_url else {
        return Ok(());
    };
    webhook_delivery::ActiveModel::queued(
        &row.id,
        CallbackEvent::Finished,
        None,
        url,
        String::new(),
    )
    .insert(db)
    .await?;
    Ok(())
}

/// Queues the mail that tells the owner their request ended, in the
/// transaction that ends it: only when the owner asked for it
/// (`notify_on_finish`), has an address, and mail is configured. An
/// import-only request ends as it is sent, with nothing to tell.
async fn queue_finished_mail(
    db: &impl ConnectionTrait,
    row: &request::Model,
) -> Result<(), SchedulerError> {
    if row.status == RequestStatus::Imported {
        return Ok(());
    }
    let Some(owner) = account::Entity::find_by_id(row.account_id.clone())
        .one(db)
        .await?
    else {
        return Ok(());
    };
    let Some(address) = owner.email.as_deref().filter(|a| !a.trim().is_empty()) else {
        return Ok(());
    };
    if !owner.notify_on_finish
        || setting::Entity::find_by_id(mail::SETTINGS_KEY.to_owned())
            .one(db)
            .await?
            .is_none()
    {
        return Ok(());
    }
    let title = book_title(db, row).await?;
    let error = (row.status == RequestStatus::Failed && !row.error.is_empty())
        .then_some(row.error.as_str());
    let text = mail::request_finished(
        owner.mail_language,
        &FinishedRequest {
            username: &owner.username,
            request_id: &row.id,
            title: &title,
            status: row.status,
            error,
            // The scheduler does not know the public URL.
            status_url: None,
        },
    );
    mail_outbox::ActiveModel::queued(
        text.kind,
        Some(&owner.id),
        address.trim(),
        &text.subject,
        text.body,
    )
    .insert(db)
    .await?;
    Ok(())
}

/// The book's title, or its series' name when the book has none.
async fn book_title(
    db: &impl ConnectionTrait,
    row: &request::Model,
) -> Result<String, SchedulerError> {
    let title = project::Entity::find_by_id(row.project_id.clone())
        .one(db)
        .await?
        .map(|p| p.title)
        .filter(|t| !t.trim().is_empty());
    if let Some(title) = title {
        return Ok(title);
    }
    Ok(series::Entity::find_by_id(row.series_id.clone())
        .one(db)
        .await?
        .map(|s| s.name)
        .unwrap_or_default())
}

#[cfg(test)]
#[path = "ending_mail_tests.rs"]
mod mail_tests;
