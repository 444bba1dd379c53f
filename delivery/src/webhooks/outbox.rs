//! The webhook outbox in the database: which calls are due, who makes them,
//! and what became of them. Every change is a conditional update on the
//! row's attempt count, so two delivery processes never make the same call
//! and a call that outlived its lease cannot overwrite a newer outcome.
//! Retries live here, so a restart loses none; so does the request's
//! `next_attempt` (status document, spec 2.2), written here whenever a
//! call's outcome changes the schedule.

use super::schedule::RetrySchedule;
use crate::error::DeliveryError;
use dragoman_model::clock;
use dragoman_model::entities::request;
use dragoman_model::entities::webhook_delivery::{self, Column, Entity};
use dragoman_model::telemetry::metrics::{self, WebhookOutcome};
use dragoman_model::vocab::WebhookState;
use sea_orm::sea_query::{Expr, ExprTrait, Func, Query};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

/// Pending calls due at `now_ms`, oldest first.
pub async fn due(
    db: &impl ConnectionTrait,
    now_ms: i64,
    limit: u64,
) -> Result<Vec<webhook_delivery::Model>, DeliveryError> {
    Ok(Entity::find()
        .filter(Column::State.eq(WebhookState::Pending))
        .filter(Column::NextAttemptAt.lte(now_ms))
        .order_by_asc(Column::NextAttemptAt)
        .limit(limit)
        .all(db)
        .await?)
}

/// When the next pending call is due (Unix milliseconds).
pub async fn next_due(db: &impl ConnectionTrait) -> Result<Option<i64>, DeliveryError> {
    let next: Option<Option<i64>> = Entity::find()
        .select_only()
        .column(Column::NextAttemptAt)
        .filter(Column::State.eq(WebhookState::Pending))
        .order_by_asc(Column::NextAttemptAt)
        .into_tuple()
        .one(db)
        .await?;
    Ok(next.flatten())
}

fn unchanged(row: &webhook_delivery::Model) -> sea_orm::Condition {
    sea_orm::Condition::all()
        .add(Column::Id.eq(row.id.clone()))
        .add(Column::State.eq(WebhookState::Pending))
        .add(Column::Attempts.eq(row.attempts))
}

/// Takes the call for this process: counts the attempt and pushes the row
/// out of reach for `lease_ms` (if this process dies mid-call, the call is
/// made again after that). Returns the row as taken, or `None` when another
/// process took it first.
pub async fn claim(
    db: &impl ConnectionTrait,
    row: &webhook_delivery::Model,
    lease_ms: i64,
) -> Result<Option<webhook_delivery::Model>, DeliveryError> {
    let lease_until = clock::now_millis() + lease_ms;
    let now = clock::now();
    let taken = Entity::update_many()
        .col_expr(Column::Attempts, Expr::col(Column::Attempts).add(1))
        .col_expr(Column::NextAttemptAt, Expr::value(lease_until))
        .col_expr(Column::UpdatedAt, Expr::value(now))
        .filter(unchanged(row))
        .filter(Column::NextAttemptAt.eq(row.next_attempt_at))
        .exec(db)
        .await?;
    Ok((taken.rows_affected == 1).then(|| webhook_delivery::Model {
        attempts: row.attempts + 1,
        next_attempt_at: Some(lease_until),
        updated_at: now,
        ..row.clone()
    }))
}

/// Stores the rendered body of a final event (once: the bytes signed at the
/// first attempt are the bytes of every retry).
pub async fn set_body(
    db: &impl ConnectionTrait,
    row: &webhook_delivery::Model,
    body: &str,
) -> Result<bool, DeliveryError> {
    let set = Entity::update_many()
        .col_expr(Column::Body, Expr::value(body))
        .filter(unchanged(row))
        .filter(Column::Body.eq(""))
        .exec(db)
        .await?;
    Ok(set.rows_affected == 1)
}

/// Moves a call that is not ready yet, without counting an attempt.
pub async fn postpone(
    db: &impl ConnectionTrait,
    row: &webhook_delivery::Model,
    until_ms: i64,
) -> Result<(), DeliveryError> {
    Entity::update_many()
        .col_expr(Column::NextAttemptAt, Expr::value(until_ms))
        .filter(unchanged(row))
        .exec(db)
        .await?;
    Ok(())
}

/// Records the outcome of the call taken as `row` (what [`claim`] returned):
/// delivered, due again after the schedule's wait, or failed for good once
/// `max_attempts` calls were made. An outcome lands once, and never over a
/// later taker's.
pub async fn settle(
    db: &impl ConnectionTrait,
    row: &webhook_delivery::Model,
    outcome: Result<(), String>,
    max_attempts: u32,
    schedule: &RetrySchedule,
) -> Result<(), DeliveryError> {
    let now = clock::now();
    let now_ms = clock::now_millis();
    let attempts = u32::try_from(row.attempts).unwrap_or(0);
    let counted = match &outcome {
        Ok(()) => WebhookOutcome::Delivered,
        Err(_) if attempts >= max_attempts => WebhookOutcome::Failed,
        Err(_) => WebhookOutcome::Retrying,
    };
    let update = Entity::update_many().col_expr(Column::UpdatedAt, Expr::value(now));
    let update = match outcome {
        Ok(()) => update
            .col_expr(Column::State, Expr::value(WebhookState::Delivered))
            .col_expr(Column::DeliveredAt, Expr::value(now))
            .col_expr(Column::NextAttemptAt, Expr::value(Option::<i64>::None)),
        Err(error) if attempts >= max_attempts => update
            .col_expr(Column::State, Expr::value(WebhookState::Failed))
            .col_expr(Column::LastError, Expr::value(error))
            .col_expr(Column::NextAttemptAt, Expr::value(Option::<i64>::None)),
        Err(error) => {
            let wait = i64::try_from(schedule.delay(attempts).as_millis()).unwrap_or(i64::MAX);
            update
                .col_expr(Column::LastError, Expr::value(error))
                .col_expr(
                    Column::NextAttemptAt,
                    Expr::value(now_ms.saturating_add(wait)),
                )
        }
    };
    let landed = update
        .filter(unchanged(row))
        .filter(Column::NextAttemptAt.eq(row.next_attempt_at))
        .exec(db)
        .await?;
    if landed.rows_affected == 1 {
        metrics::webhook_delivery(row.event, counted);
        show_next_attempt(db, &row.request_id).await?;
    }
    Ok(())
}

/// Fails a call that already made every attempt it may (the last one was
/// cut short by a stop, or the administrator lowered the limit).
pub async fn fail_exhausted(
    db: &impl ConnectionTrait,
    row: &webhook_delivery::Model,
) -> Result<(), DeliveryError> {
    let error = if row.last_error.is_empty() {
        "attempts exhausted".to_owned()
    } else {
        row.last_error.clone()
    };
    let landed = Entity::update_many()
        .col_expr(Column::State, Expr::value(WebhookState::Failed))
        .col_expr(Column::LastError, Expr::value(error))
        .col_expr(Column::NextAttemptAt, Expr::value(Option::<i64>::None))
        .col_expr(Column::UpdatedAt, Expr::value(clock::now()))
        .filter(unchanged(row))
        .exec(db)
        .await?;
    if landed.rows_affected == 1 {
        metrics::webhook_delivery(row.event, WebhookOutcome::Failed);
        show_next_attempt(db, &row.request_id).await?;
    }
    Ok(())
}

/// Writes on the request when its next webhook call is due after a failed
/// one (`next_attempt` of the status document, Unix seconds rounded up), or
/// 0 when none is: the earliest due time of its pending calls that failed
/// before, the final event and `chapters.translated` batches alike. A call
/// not made yet, or waiting for its result, is no retry. Computed again
/// from the outbox at each outcome, in one statement, rather than set from
/// one call: calls of one request settled by two processes do not
/// overwrite each other's time.
async fn show_next_attempt(
    db: &impl ConnectionTrait,
    request_id: &str,
) -> Result<(), DeliveryError> {
    let earliest_ms = Query::select()
        .expr(Func::min(Expr::col(Column::NextAttemptAt)))
        .from(Entity)
        .and_where(Column::RequestId.eq(request_id))
        .and_where(Column::State.eq(WebhookState::Pending))
        .and_where(Column::LastError.ne(""))
        .to_owned();
    let seconds = Expr::from(earliest_ms).add(999).div(1000);
    request::Entity::update_many()
        .col_expr(
            request::Column::NextAttempt,
            Func::coalesce([seconds, Expr::value(0i64)]).into(),
        )
        .filter(request::Column::Id.eq(request_id))
        .exec(db)
        .await?;
    Ok(())
}
