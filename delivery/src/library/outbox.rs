//! The `publications` table as an outbox: one row per book, put back to
//! `pending` each time its publication is asked for, taken by one delivery
//! process at a time, and settled as `published`, due again after the
//! schedule's wait, or `failed` once its attempts are used. Every change is
//! a conditional update on the row's status, attempts and due time, so two
//! processes never make the same attempt and an attempt that outlived its
//! lease (or was overtaken by a new request to publish) cannot overwrite a
//! newer state.

use crate::error::DeliveryError;
use crate::webhooks::RetrySchedule;
use dragoman_model::clock;
use dragoman_model::documents::publication::PublicationView;
use dragoman_model::entities::publication::{self, Column, Entity};
use dragoman_model::ids;
use dragoman_model::vocab::PublicationStatus;
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

/// What an attempt wrote: the EPUB's path under the library folder.
pub type Written = String;

/// The view of a book's row; [`PublicationView::none`] without one.
pub fn view(row: Option<&publication::Model>) -> PublicationView {
    let Some(row) = row else {
        return PublicationView::none();
    };
    PublicationView {
        status: row.status,
        attempts: u32::try_from(row.attempts).unwrap_or(0),
        last_error: (!row.last_error.is_empty()).then(|| row.last_error.clone()),
        path: row.path.clone(),
        published_at: row.published_at,
        updated_at: Some(row.updated_at),
    }
}

/// The book's row, if its publication was ever asked for.
pub async fn find(
    db: &impl ConnectionTrait,
    project_id: &str,
) -> Result<Option<publication::Model>, DeliveryError> {
    Ok(Entity::find()
        .filter(Column::ProjectId.eq(project_id))
        .one(db)
        .await?)
}

/// Puts the book's publication (back) to `pending`, due now with its
/// attempts counted afresh, and answers the row.
pub async fn request(
    db: &impl ConnectionTrait,
    project_id: &str,
) -> Result<publication::Model, DeliveryError> {
    let now = clock::now();
    let row = publication::Model {
        id: ids::new_id(),
        project_id: project_id.to_owned(),
        status: PublicationStatus::Pending,
        attempts: 0,
        next_attempt_at: Some(clock::now_millis()),
        last_error: String::new(),
        path: None,
        created_at: now,
        updated_at: now,
        published_at: None,
    };
    let active: publication::ActiveModel = row.into();
    Entity::insert(active)
        .on_conflict(
            OnConflict::column(Column::ProjectId)
                .update_columns([
                    Column::Status,
                    Column::Attempts,
                    Column::NextAttemptAt,
                    Column::LastError,
                    Column::Path,
                    Column::UpdatedAt,
                    Column::PublishedAt,
                ])
                .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    find(db, project_id)
        .await?
        .ok_or_else(|| DeliveryError::DeliveryFailed("the publication was not kept".into()))
}

/// Pending publications due at `now_ms`, oldest first.
pub async fn due(
    db: &impl ConnectionTrait,
    now_ms: i64,
    limit: u64,
) -> Result<Vec<publication::Model>, DeliveryError> {
    Ok(Entity::find()
        .filter(Column::Status.eq(PublicationStatus::Pending))
        .filter(Column::NextAttemptAt.lte(now_ms))
        .order_by_asc(Column::NextAttemptAt)
        .limit(limit)
        .all(db)
        .await?)
}

/// When the next pending publication is due (Unix milliseconds).
pub async fn next_due(db: &impl ConnectionTrait) -> Result<Option<i64>, DeliveryError> {
    let next: Option<Option<i64>> = Entity::find()
        .select_only()
        .column(Column::NextAttemptAt)
        .filter(Column::Status.eq(PublicationStatus::Pending))
        .order_by_asc(Column::NextAttemptAt)
        .into_tuple()
        .one(db)
        .await?;
    Ok(next.flatten())
}

/// The row as it was read: still pending, with the same attempts and due
/// time.
fn unchanged(row: &publication::Model) -> sea_orm::Condition {
    sea_orm::Condition::all()
        .add(Column::Id.eq(row.id.clone()))
        .add(Column::Status.eq(PublicationStatus::Pending))
        .add(Column::Attempts.eq(row.attempts))
        .add(Column::NextAttemptAt.eq(row.next_attempt_at))
}

/// Takes the publication for this process: counts the attempt and pushes
/// the row out of reach for `lease_ms` (if this process dies mid-attempt,
/// it is tried again after that). `None` when another process took it, or
/// it was asked for again, first.
pub async fn claim(
    db: &impl ConnectionTrait,
    row: &publication::Model,
    lease_ms: i64,
) -> Result<Option<publication::Model>, DeliveryError> {
    let lease_until = clock::now_millis().saturating_add(lease_ms);
    let now = clock::now();
    let taken = Entity::update_many()
        .col_expr(Column::Attempts, Expr::col(Column::Attempts).add(1))
        .col_expr(Column::NextAttemptAt, Expr::value(lease_until))
        .col_expr(Column::UpdatedAt, Expr::value(now))
        .filter(unchanged(row))
        .exec(db)
        .await?;
    Ok((taken.rows_affected == 1).then(|| publication::Model {
        attempts: row.attempts + 1,
        next_attempt_at: Some(lease_until),
        updated_at: now,
        ..row.clone()
    }))
}

/// Records the outcome of the attempt taken as `row` (what [`claim`]
/// returned): published at its path, due again after the schedule's wait,
/// or failed for good once `max_attempts` attempts were made.
pub async fn settle(
    db: &impl ConnectionTrait,
    row: &publication::Model,
    outcome: Result<Written, String>,
    max_attempts: u32,
    schedule: &RetrySchedule,
) -> Result<(), DeliveryError> {
    let now = clock::now();
    let attempts = u32::try_from(row.attempts).unwrap_or(0);
    let update = Entity::update_many().col_expr(Column::UpdatedAt, Expr::value(now));
    let update = match outcome {
        Ok(path) => update
            .col_expr(Column::Status, Expr::value(PublicationStatus::Published))
            .col_expr(Column::Path, Expr::value(Some(path)))
            .col_expr(Column::PublishedAt, Expr::value(Some(now)))
            .col_expr(Column::LastError, Expr::value(String::new()))
            .col_expr(Column::NextAttemptAt, Expr::value(Option::<i64>::None)),
        Err(error) if attempts >= max_attempts => update
            .col_expr(Column::Status, Expr::value(PublicationStatus::Failed))
            .col_expr(Column::LastError, Expr::value(error))
            .col_expr(Column::NextAttemptAt, Expr::value(Option::<i64>::None)),
        Err(error) => {
            let wait = i64::try_from(schedule.delay(attempts).as_millis()).unwrap_or(i64::MAX);
            update
                .col_expr(Column::LastError, Expr::value(error))
                .col_expr(
                    Column::NextAttemptAt,
                    Expr::value(clock::now_millis().saturating_add(wait)),
                )
        }
    };
    update.filter(unchanged(row)).exec(db).await?;
    Ok(())
}

/// Fails a publication that already made every attempt it may (the last
/// one was cut short by a stop).
pub async fn fail_exhausted(
    db: &impl ConnectionTrait,
    row: &publication::Model,
) -> Result<(), DeliveryError> {
    let error = if row.last_error.is_empty() {
        "every attempt was interrupted".to_owned()
    } else {
        row.last_error.clone()
    };
    Entity::update_many()
        .col_expr(Column::Status, Expr::value(PublicationStatus::Failed))
        .col_expr(Column::LastError, Expr::value(error))
        .col_expr(Column::NextAttemptAt, Expr::value(Option::<i64>::None))
        .col_expr(Column::UpdatedAt, Expr::value(clock::now()))
        .filter(unchanged(row))
        .exec(db)
        .await?;
    Ok(())
}
