//! A request's life after intake: its job is created (at once, or when its
//! series is free), leased by workers with expiring leases, paused, resumed
//! or cancelled, and finished with the completion report (spec 2.7, 3).
//! Leases are taken by conditional updates, so two workers never hold one
//! job, on SQLite or PostgreSQL alike.

use crate::error::SchedulerError;
use crate::reading_order;
use crate::report;
use dragoman_model::entities::{account, api_token, job, project, request, webhook_delivery};
use dragoman_model::webhook::EVENT_FINISHED;
use dragoman_model::{clock, ids};
use dragoman_proto::v1::JobTicket;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, EntityTrait,
    PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};
use serde_json::{Value, json};
use std::collections::HashMap;

/// Running jobs an account may have when neither the account nor the
/// administrator says otherwise (`QUEUE_MAX_RUNNING_PER_ACCOUNT`).
pub const DEFAULT_ACCOUNT_RUNNING: i64 = 4;

/// Leases a job may have: one whose workers keep dying (a poison job) fails
/// instead of being retried forever.
pub const MAX_JOB_LEASES: i32 = 5;

pub fn is_final(status: &str) -> bool {
    request::is_final(status)
}

/// A series is busy while one of its requests has a job that is not over:
/// volumes of a series run one at a time.
pub async fn series_busy(
    db: &impl ConnectionTrait,
    series_id: &str,
) -> Result<bool, SchedulerError> {
    let active = request::Entity::find()
        .filter(request::Column::SeriesId.eq(series_id))
        .filter(request::Column::Status.is_in(["pending", "running"]))
        .count(db)
        .await?;
    Ok(active > 0)
}

/// Gives `row` its job; it becomes `pending`.
pub async fn create_job(
    db: &impl ConnectionTrait,
    row: request::Model,
) -> Result<request::Model, SchedulerError> {
    let now = clock::now();
    let job_id = ids::new_id();
    let provider_id = row
        .options
        .get("provider_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    job::ActiveModel {
        id: Set(job_id.clone()),
        request_id: Set(row.id.clone()),
        project_id: Set(row.project_id.clone()),
        account_id: Set(row.account_id.clone()),
        token_id: Set(row.token_id.clone()),
        status: Set("pending".into()),
        priority: Set(row.priority.clone()),
        provider_id: Set(provider_id),
        lease_holder: Set(None),
        lease_expires_at: Set(None),
        attempts: Set(0),
        progress: Set(json!({})),
        estimate: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
        started_at: Set(None),
        finished_at: Set(None),
    }
    .insert(db)
    .await?;
    let mut model: request::ActiveModel = row.into();
    model.job_id = Set(Some(job_id));
    model.status = Set("pending".into());
    model.step = Set("waiting for a worker".into());
    model.updated_at = Set(clock::now());
    Ok(model.update(db).await?)
}

/// When the series is free, gives a job to its next queued request (volume
/// reading order, then arrival). Returns the request promoted.
pub async fn promote_next(
    db: &DatabaseConnection,
    series_id: &str,
) -> Result<Option<String>, SchedulerError> {
    let txn = dragoman_model::db::begin_write(db).await?;
    if series_busy(&txn, series_id).await? {
        txn.rollback().await?;
        return Ok(None);
    }
    let queued = request::Entity::find()
        .filter(request::Column::SeriesId.eq(series_id))
        .filter(request::Column::Status.eq("queued"))
        .order_by_asc(request::Column::CreatedAt)
        .all(&txn)
        .await?;
    let mut candidates = Vec::new();
    for row in queued {
        let volume = project::Entity::find_by_id(row.project_id.clone())
            .one(&txn)
            .await?;
        let key = volume
            .as_ref()
            .map(|v| reading_order::key(v.volume_number, v.volume_label.as_deref()))
            .unwrap_or_else(|| reading_order::key(None, None));
        candidates.push((key, row));
    }
    candidates.sort_by(|a, b| {
        reading_order::compare(&a.0, &b.0).then(a.1.created_at.cmp(&b.1.created_at))
    });
    let promoted = match candidates.into_iter().next() {
        Some((_, row)) => Some(create_job(&txn, row).await?.id),
        None => None,
    };
    txn.commit().await?;
    Ok(promoted)
}

/// Leases the next job for `worker_id`: by priority, then the account with
/// the fewest running jobs, then arrival; jobs whose token or account is at
/// its running limit wait with a reason. An expired lease is taken over.
pub async fn lease(
    db: &DatabaseConnection,
    worker_id: &str,
    lease_seconds: i64,
) -> Result<Option<JobTicket>, SchedulerError> {
    let now = clock::now();
    let candidates = job::Entity::find()
        .filter(
            Condition::any().add(job::Column::Status.eq("pending")).add(
                Condition::all()
                    .add(job::Column::Status.eq("running"))
                    .add(job::Column::LeaseExpiresAt.lt(now))
                    .add(job::Column::Attempts.lt(MAX_JOB_LEASES)),
            ),
        )
        .order_by_asc(job::Column::CreatedAt)
        .limit(500)
        .all(db)
        .await?;
    if candidates.is_empty() {
        return Ok(None);
    }
    let running = job::Entity::find()
        .filter(job::Column::Status.eq("running"))
        .filter(job::Column::LeaseExpiresAt.gte(now))
        .all(db)
        .await?;
    let mut by_account: HashMap<String, i64> = HashMap::new();
    let mut by_token: HashMap<String, i64> = HashMap::new();
    for r in &running {
        *by_account.entry(r.account_id.clone()).or_default() += 1;
        if let Some(t) = &r.token_id {
            *by_token.entry(t.clone()).or_default() += 1;
        }
    }
    let rank = |p: &str| match p {
        "high" => 0,
        "normal" => 1,
        _ => 2,
    };
    let mut ordered: Vec<&job::Model> = candidates.iter().collect();
    ordered.sort_by_key(|j| {
        (
            rank(&j.priority),
            by_account.get(&j.account_id).copied().unwrap_or(0),
            j.created_at,
        )
    });
    for candidate in ordered {
        let token_limit = match &candidate.token_id {
            Some(t) => api_token::Entity::find_by_id(t.clone())
                .one(db)
                .await?
                .map(|t| i64::from(t.max_running)),
            None => None,
        };
        let account_limit = account::Entity::find_by_id(candidate.account_id.clone())
            .one(db)
            .await?
            .and_then(|a| a.max_running)
            .map(i64::from)
            .unwrap_or(DEFAULT_ACCOUNT_RUNNING);
        let token_running = candidate
            .token_id
            .as_ref()
            .and_then(|t| by_token.get(t))
            .copied()
            .unwrap_or(0);
        let account_running = by_account.get(&candidate.account_id).copied().unwrap_or(0);
        let waiting_reason = if token_limit.is_some_and(|limit| token_running >= limit) {
            Some("token_limit")
        } else if account_running >= account_limit {
            Some("account_limit")
        } else {
            None
        };
        if let Some(reason) = waiting_reason {
            let mut progress = candidate.progress.clone();
            progress["queue_reason"] = json!(reason);
            job::Entity::update_many()
                .col_expr(job::Column::Progress, Expr::value(progress))
                .filter(job::Column::Id.eq(candidate.id.clone()))
                .exec(db)
                .await?;
            continue;
        }
        let taken = job::Entity::update_many()
            .col_expr(job::Column::Status, Expr::value("running"))
            .col_expr(job::Column::LeaseHolder, Expr::value(worker_id))
            .col_expr(
                job::Column::LeaseExpiresAt,
                Expr::value(now + lease_seconds),
            )
            .col_expr(
                job::Column::Attempts,
                Expr::col(job::Column::Attempts).add(1),
            )
            .col_expr(
                job::Column::StartedAt,
                Expr::value(candidate.started_at.unwrap_or(now)),
            )
            .col_expr(job::Column::UpdatedAt, Expr::value(now))
            .filter(job::Column::Id.eq(candidate.id.clone()))
            .filter(job::Column::UpdatedAt.eq(candidate.updated_at))
            .filter(
                Condition::any().add(job::Column::Status.eq("pending")).add(
                    Condition::all()
                        .add(job::Column::Status.eq("running"))
                        .add(job::Column::LeaseExpiresAt.lt(now)),
                ),
            )
            .exec(db)
            .await?;
        if taken.rows_affected != 1 {
            continue;
        }
        let mut progress = candidate.progress.clone();
        if let Some(map) = progress.as_object_mut() {
            map.remove("queue_reason");
        }
        job::Entity::update_many()
            .col_expr(job::Column::Progress, Expr::value(progress))
            .filter(job::Column::Id.eq(candidate.id.clone()))
            .exec(db)
            .await?;
        request::Entity::update_many()
            .col_expr(request::Column::Status, Expr::value("running"))
            .col_expr(request::Column::Stage, Expr::value("translation"))
            .col_expr(request::Column::Step, Expr::value("translating"))
            .col_expr(request::Column::UpdatedAt, Expr::value(now))
            .filter(request::Column::Id.eq(candidate.request_id.clone()))
            .exec(db)
            .await?;
        let Some(volume) = project::Entity::find_by_id(candidate.project_id.clone())
            .one(db)
            .await?
        else {
            continue;
        };
        let threads = request::Entity::find_by_id(candidate.request_id.clone())
            .one(db)
            .await?
            .and_then(|r| r.options.get("threads").and_then(Value::as_i64))
            .or(volume.threads.map(i64::from))
            .unwrap_or(4);
        return Ok(Some(JobTicket {
            job_id: candidate.id.clone(),
            request_id: candidate.request_id.clone(),
            project_id: candidate.project_id.clone(),
            provider_id: candidate.provider_id.clone().unwrap_or_default(),
            source_language: volume.source_language,
            target_language: volume.target_language,
            threads: i32::try_from(threads).unwrap_or(4),
            account_id: candidate.account_id.clone(),
            token_id: candidate.token_id.clone(),
        }));
    }
    Ok(None)
}

/// Fails the jobs whose lease expired after [`MAX_JOB_LEASES`] leases;
/// returns their requests, now `failed`.
pub async fn fail_abandoned(
    db: &DatabaseConnection,
) -> Result<Vec<request::Model>, SchedulerError> {
    let now = clock::now();
    let abandoned = job::Entity::find()
        .filter(job::Column::Status.eq("running"))
        .filter(job::Column::LeaseExpiresAt.lt(now))
        .filter(job::Column::Attempts.gte(MAX_JOB_LEASES))
        .all(db)
        .await?;
    let mut failed = Vec::new();
    for stuck in abandoned {
        let txn = dragoman_model::db::begin_write(db).await?;
        let taken = job::Entity::update_many()
            .col_expr(job::Column::Status, Expr::value("failed"))
            .col_expr(
                job::Column::LeaseHolder,
                Expr::value(Option::<String>::None),
            )
            .col_expr(job::Column::FinishedAt, Expr::value(now))
            .col_expr(job::Column::UpdatedAt, Expr::value(now))
            .filter(job::Column::Id.eq(stuck.id.clone()))
            .filter(job::Column::Status.eq("running"))
            .exec(&txn)
            .await?;
        let row = request::Entity::find_by_id(stuck.request_id.clone())
            .one(&txn)
            .await?;
        match (taken.rows_affected, row) {
            (1, Some(row)) if !is_final(&row.status) => {
                let reason = format!(
                    "worker_lost: the job was leased {} times without finishing",
                    stuck.attempts
                );
                request::Entity::update_many()
                    .col_expr(request::Column::Error, Expr::value(reason.clone()))
                    .col_expr(request::Column::StopReason, Expr::value("worker_lost"))
                    .filter(request::Column::Id.eq(row.id.clone()))
                    .exec(&txn)
                    .await?;
                let row = request::Entity::find_by_id(row.id.clone())
                    .one(&txn)
                    .await?
                    .ok_or(SchedulerError::RequestNotFound)?;
                finish_report(&txn, &row, "failed", Some(&reason)).await?;
                txn.commit().await?;
                failed.push(row);
            }
            _ => txn.rollback().await?,
        }
    }
    Ok(failed)
}

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
        .filter(job::Column::Status.eq("running"))
        .exec(db)
        .await?;
    Ok(updated.rows_affected == 1)
}

/// Ends a job its worker holds and gives the request its final status and
/// report. Returns the request's series, so its next volume can start.
pub async fn finish(
    db: &DatabaseConnection,
    job_id: &str,
    worker_id: &str,
    outcome: &str,
    error: &str,
) -> Result<request::Model, SchedulerError> {
    let txn = dragoman_model::db::begin_write(db).await?;
    let held = job::Entity::find_by_id(job_id.to_owned())
        .filter(job::Column::LeaseHolder.eq(worker_id))
        .filter(job::Column::Status.eq("running"))
        .one(&txn)
        .await?;
    let Some(held) = held else {
        txn.rollback().await?;
        return Err(SchedulerError::Conflict("finish".into()));
    };
    let row = request::Entity::find_by_id(held.request_id.clone())
        .one(&txn)
        .await?
        .ok_or(SchedulerError::RequestNotFound)?;
    let now = clock::now();
    let (job_status, final_status, reason) = if outcome == "done" {
        let residuals = report::residual_count(&txn, &row).await?;
        let status = if residuals > 0 {
            "completed_with_residuals"
        } else {
            "completed"
        };
        (
            "done",
            status,
            (residuals > 0).then(|| "residuals".to_owned()),
        )
    } else {
        ("failed", "failed", Some(error.to_owned()))
    };
    let mut model: job::ActiveModel = held.into();
    model.status = Set(job_status.into());
    model.finished_at = Set(Some(now));
    model.updated_at = Set(now);
    model.lease_holder = Set(None);
    model.update(&txn).await?;
    let mut row_model: request::ActiveModel = row.clone().into();
    if final_status == "failed" {
        row_model.error = Set(error.to_owned());
        row_model.stop_reason = Set(error.to_owned());
    }
    row_model.stage = Set("export".into());
    row_model.update(&txn).await?;
    let row = request::Entity::find_by_id(row.id.clone())
        .one(&txn)
        .await?
        .ok_or(SchedulerError::RequestNotFound)?;
    finish_report(&txn, &row, final_status, reason.as_deref()).await?;
    let volume_status = match final_status {
        "completed" => "translated",
        "completed_with_residuals" => "incomplete",
        _ => "imported",
    };
    project::Entity::update_many()
        .col_expr(project::Column::Status, Expr::value(volume_status))
        .col_expr(project::Column::UpdatedAt, Expr::value(now))
        .filter(project::Column::Id.eq(row.project_id.clone()))
        .exec(&txn)
        .await?;
    let done = request::Entity::find_by_id(row.id.clone())
        .one(&txn)
        .await?
        .ok_or(SchedulerError::RequestNotFound)?;
    txn.commit().await?;
    Ok(done)
}

/// Sets the final status, `finished_at` and the completion report (none for
/// an import-only request, which translated nothing).
pub async fn finish_report(
    db: &impl ConnectionTrait,
    row: &request::Model,
    status: &str,
    reason: Option<&str>,
) -> Result<(), SchedulerError> {
    let now = clock::now();
    let report = if status == "imported" {
        None
    } else {
        Some(report::build(db, row, status, reason, now).await?)
    };
    let mut model: request::ActiveModel = row.clone().into();
    model.status = Set(status.into());
    model.stage = Set("export".into());
    model.step = Set(status.into());
    model.finished_at = Set(Some(now));
    model.updated_at = Set(now);
    model.report = Set(report);
    model.update(db).await?;
    queue_final_webhook(db, row).await
}

/// Queues the final webhook in the transaction that ends the request, so no
/// request ends without it; delivery renders its body at the first attempt
/// (it then carries the stored result).
async fn queue_final_webhook(
    db: &impl ConnectionTrait,
    row: &request::Model,
) -> Result<(), SchedulerError> {
    let Some(url) = &row.callback_url else {
        return Ok(());
    };
    webhook_delivery::ActiveModel::queued(&row.id, EVENT_FINISHED, None, url, String::new())
        .insert(db)
        .await?;
    Ok(())
}

/// Pause, resume or cancel (spec 4.4). Returns the request after the change.
pub async fn control(
    db: &DatabaseConnection,
    account_id: &str,
    request_id: &str,
    action: &str,
) -> Result<request::Model, SchedulerError> {
    let txn = dragoman_model::db::begin_write(db).await?;
    let row = request::Entity::find_by_id(request_id.to_owned())
        .filter(request::Column::AccountId.eq(account_id))
        .one(&txn)
        .await?
        .ok_or(SchedulerError::RequestNotFound)?;
    if is_final(&row.status) {
        txn.rollback().await?;
        return Err(SchedulerError::Conflict(action.into()));
    }
    let job_row = match &row.job_id {
        Some(id) => job::Entity::find_by_id(id.clone()).one(&txn).await?,
        None => None,
    };
    let now = clock::now();
    match (action, job_row) {
        ("cancel", job_row) => {
            if let Some(j) = job_row {
                let mut model: job::ActiveModel = j.into();
                model.status = Set("cancelled".into());
                model.lease_holder = Set(None);
                model.finished_at = Set(Some(now));
                model.updated_at = Set(now);
                model.update(&txn).await?;
            }
            finish_report(&txn, &row, "cancelled", Some("cancelled")).await?;
        }
        (_, None) => {
            txn.rollback().await?;
            return Err(SchedulerError::NotStarted);
        }
        ("pause", Some(j)) if j.status == "pending" || j.status == "running" => {
            let mut model: job::ActiveModel = j.into();
            model.status = Set("paused".into());
            model.lease_holder = Set(None);
            model.updated_at = Set(now);
            model.update(&txn).await?;
            request::Entity::update_many()
                .col_expr(request::Column::Status, Expr::value("pending"))
                .col_expr(request::Column::Step, Expr::value("paused"))
                .col_expr(request::Column::UpdatedAt, Expr::value(now))
                .filter(request::Column::Id.eq(row.id.clone()))
                .exec(&txn)
                .await?;
        }
        ("resume", Some(j)) if j.status == "paused" => {
            let mut model: job::ActiveModel = j.into();
            model.status = Set("pending".into());
            model.updated_at = Set(now);
            model.update(&txn).await?;
            request::Entity::update_many()
                .col_expr(request::Column::Status, Expr::value("pending"))
                .col_expr(request::Column::Step, Expr::value("waiting for a worker"))
                .col_expr(request::Column::UpdatedAt, Expr::value(now))
                .filter(request::Column::Id.eq(row.id.clone()))
                .exec(&txn)
                .await?;
        }
        _ => {
            txn.rollback().await?;
            return Err(SchedulerError::Conflict(action.into()));
        }
    }
    let updated = request::Entity::find_by_id(row.id.clone())
        .one(&txn)
        .await?
        .ok_or(SchedulerError::RequestNotFound)?;
    txn.commit().await?;
    Ok(updated)
}
