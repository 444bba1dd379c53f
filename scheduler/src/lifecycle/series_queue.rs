//! Volumes of a series run one at a time, in reading order (spec 2.8): a
//! request whose series is busy waits `queued`, and the next one gets its
//! job when the series is free.
//!
//! A paused job does not hold its series: pausing lets the next volume
//! start. A paused request resumed while another volume of its series runs
//! goes back to `queued` with its paused job, which [`promote_next`]
//! re-activates when its turn comes.
//!
//! A suspended series (a series `pause`, see [`super::series_control`])
//! starts nothing: its queued requests wait until it is resumed.

use crate::error::SchedulerError;
use crate::steps;
use dragoman_model::entities::{job, project, request, series};
use dragoman_model::reading_order;
use dragoman_model::vocab::{JobStatus, RequestStatus};
use dragoman_model::{clock, ids};
use sea_orm::sea_query::{Expr, Query};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, EntityTrait,
    PaginatorTrait, QueryFilter, QueryOrder, Set,
};
use serde_json::{Map, Value};

/// A series is busy while one of its requests has a job that is under way
/// (waiting for a worker or running); a paused job does not count.
pub async fn series_busy(
    db: &impl ConnectionTrait,
    series_id: &str,
) -> Result<bool, SchedulerError> {
    let paused_jobs = Query::select()
        .column(job::Column::Id)
        .from(job::Entity)
        .and_where(job::Column::Status.eq(JobStatus::Paused))
        .to_owned();
    let active = request::Entity::find()
        .filter(request::Column::SeriesId.eq(series_id))
        .filter(request::Column::Status.is_in([RequestStatus::Pending, RequestStatus::Running]))
        .filter(
            Condition::any()
                .add(request::Column::JobId.is_null())
                .add(request::Column::JobId.not_in_subquery(paused_jobs)),
        )
        .count(db)
        .await?;
    Ok(active > 0)
}

/// Whether the series' owner suspended it (an unknown series is not).
pub async fn series_suspended(
    db: &impl ConnectionTrait,
    series_id: &str,
) -> Result<bool, SchedulerError> {
    Ok(series::Entity::find_by_id(series_id.to_owned())
        .one(db)
        .await?
        .is_some_and(|s| s.suspended))
}

/// Gives `row` its job; it becomes `pending`.
pub async fn create_job(
    db: &impl ConnectionTrait,
    row: request::Model,
) -> Result<request::Model, SchedulerError> {
    let now = clock::now();
    let job_id = ids::new_id();
    let provider_id = row.options.provider_id.clone();
    job::ActiveModel {
        id: Set(job_id.clone()),
        request_id: Set(row.id.clone()),
        project_id: Set(row.project_id.clone()),
        account_id: Set(row.account_id.clone()),
        token_id: Set(row.token_id.clone()),
        status: Set(JobStatus::Pending),
        priority: Set(row.priority),
        provider_id: Set(provider_id),
        lease_holder: Set(None),
        lease_expires_at: Set(None),
        attempts: Set(0),
        // No progress yet: the empty object the job fills as it runs.
        progress: Set(Value::Object(Map::new())),
        estimate: Set(None),
        paused_at: Set(None),
        pause_reason: Set(None),
        provider_switches: Set(0),
        operation: Set(row.options.operation()),
        created_at: Set(now),
        updated_at: Set(now),
        started_at: Set(None),
        finished_at: Set(None),
    }
    .insert(db)
    .await?;
    let mut model: request::ActiveModel = row.into();
    model.job_id = Set(Some(job_id));
    model.status = Set(RequestStatus::Pending);
    model.step = Set(steps::WAITING_FOR_WORKER.to_owned());
    model.updated_at = Set(now);
    Ok(model.update(db).await?)
}

/// Puts a paused job back in line for a worker; its request becomes
/// `pending`.
pub async fn reactivate_job(
    db: &impl ConnectionTrait,
    row: request::Model,
    job_id: &str,
) -> Result<request::Model, SchedulerError> {
    let now = clock::now();
    job::Entity::update_many()
        .col_expr(job::Column::Status, Expr::value(JobStatus::Pending))
        .col_expr(job::Column::UpdatedAt, Expr::value(now))
        .filter(job::Column::Id.eq(job_id))
        .exec(db)
        .await?;
    let mut model: request::ActiveModel = row.into();
    model.status = Set(RequestStatus::Pending);
    model.step = Set(steps::WAITING_FOR_WORKER.to_owned());
    model.updated_at = Set(now);
    Ok(model.update(db).await?)
}

/// When the series is free, starts its next queued request (volume reading
/// order, then arrival): a new job, or its paused one re-activated.
/// Returns the request started.
pub async fn promote_next(
    db: &DatabaseConnection,
    series_id: &str,
) -> Result<Option<String>, SchedulerError> {
    let txn = dragoman_model::db::begin_write(db).await?;
    let promoted = promote_in(&txn, series_id).await?;
    txn.commit().await?;
    Ok(promoted)
}

/// [`promote_next`] inside the caller's write transaction. A suspended
/// series starts nothing.
pub async fn promote_in(
    txn: &impl ConnectionTrait,
    series_id: &str,
) -> Result<Option<String>, SchedulerError> {
    if series_busy(txn, series_id).await? || series_suspended(txn, series_id).await? {
        return Ok(None);
    }
    let queued = request::Entity::find()
        .filter(request::Column::SeriesId.eq(series_id))
        .filter(request::Column::Status.eq(RequestStatus::Queued))
        .order_by_asc(request::Column::CreatedAt)
        .all(txn)
        .await?;
    let mut candidates = Vec::new();
    for row in queued {
        let volume = project::Entity::find_by_id(row.project_id.clone())
            .one(txn)
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
    Ok(match candidates.into_iter().next() {
        Some((_, row)) => Some(match row.job_id.clone() {
            Some(job_id) => reactivate_job(txn, row, &job_id).await?.id,
            None => create_job(txn, row).await?.id,
        }),
        None => None,
    })
}
