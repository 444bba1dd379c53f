//! The mail outbox in the database: which mails are due, who sends them,
//! and what became of them. Every change is a conditional update on the
//! row's state and attempt count, so two delivery processes never send the
//! same attempt and an attempt that outlived its lease cannot overwrite a
//! newer outcome. Retries live here, so a restart loses none.

use crate::error::DeliveryError;
use crate::webhooks::RetrySchedule;
use dragoman_model::clock;
use dragoman_model::documents::mail_settings::{MailOutboxEntry, MailOutboxPage};
use dragoman_model::entities::mail_outbox::{self, Column, Entity};
use dragoman_model::vocab::MailState;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect,
};

/// The administrator's view of a row (without its body).
pub fn entry(row: &mail_outbox::Model) -> MailOutboxEntry {
    MailOutboxEntry {
        id: row.id.clone(),
        kind: row.kind,
        to: row.to_address.clone(),
        subject: row.subject.clone(),
        state: row.state,
        attempts: u32::try_from(row.attempts).unwrap_or(0),
        next_attempt_at: row.next_attempt_at,
        last_error: row.last_error.clone(),
        created_at: row.created_at,
        sent_at: row.sent_at,
    }
}

/// Pending mails due at `now_ms`, oldest first.
pub async fn due(
    db: &impl ConnectionTrait,
    now_ms: i64,
    limit: u64,
) -> Result<Vec<mail_outbox::Model>, DeliveryError> {
    Ok(Entity::find()
        .filter(Column::State.eq(MailState::Pending))
        .filter(Column::NextAttemptAt.lte(now_ms))
        .order_by_asc(Column::NextAttemptAt)
        .limit(limit)
        .all(db)
        .await?)
}

/// When the next pending mail is due (Unix milliseconds).
pub async fn next_due(db: &impl ConnectionTrait) -> Result<Option<i64>, DeliveryError> {
    let next: Option<Option<i64>> = Entity::find()
        .select_only()
        .column(Column::NextAttemptAt)
        .filter(Column::State.eq(MailState::Pending))
        .order_by_asc(Column::NextAttemptAt)
        .into_tuple()
        .one(db)
        .await?;
    Ok(next.flatten())
}

fn unchanged(row: &mail_outbox::Model) -> sea_orm::Condition {
    sea_orm::Condition::all()
        .add(Column::Id.eq(row.id.clone()))
        .add(Column::State.eq(MailState::Pending))
        .add(Column::Attempts.eq(row.attempts))
}

/// Takes the mail for this process: counts the attempt and pushes the row
/// out of reach for `lease_ms` (if this process dies mid-attempt, the mail
/// is tried again after that). `None` when another process took it first.
pub async fn claim(
    db: &impl ConnectionTrait,
    row: &mail_outbox::Model,
    lease_ms: i64,
) -> Result<Option<mail_outbox::Model>, DeliveryError> {
    let lease_until = clock::now_millis().saturating_add(lease_ms);
    let now = clock::now();
    let taken = Entity::update_many()
        .col_expr(Column::Attempts, Expr::col(Column::Attempts).add(1))
        .col_expr(Column::NextAttemptAt, Expr::value(lease_until))
        .col_expr(Column::UpdatedAt, Expr::value(now))
        .filter(unchanged(row))
        .filter(Column::NextAttemptAt.eq(row.next_attempt_at))
        .exec(db)
        .await?;
    Ok((taken.rows_affected == 1).then(|| mail_outbox::Model {
        attempts: row.attempts + 1,
        next_attempt_at: Some(lease_until),
        updated_at: now,
        ..row.clone()
    }))
}

/// Records the outcome of the attempt taken as `row` (what [`claim`]
/// returned): sent, due again after the schedule's wait, or failed for
/// good once `max_attempts` attempts were made.
pub async fn settle(
    db: &impl ConnectionTrait,
    row: &mail_outbox::Model,
    outcome: Result<(), String>,
    max_attempts: u32,
    schedule: &RetrySchedule,
) -> Result<(), DeliveryError> {
    let now = clock::now();
    let attempts = u32::try_from(row.attempts).unwrap_or(0);
    let update = Entity::update_many().col_expr(Column::UpdatedAt, Expr::value(now));
    let update = match outcome {
        Ok(()) => update
            .col_expr(Column::State, Expr::value(MailState::Sent))
            .col_expr(Column::SentAt, Expr::value(now))
            .col_expr(Column::LastError, Expr::value(String::new()))
            .col_expr(Column::NextAttemptAt, Expr::value(Option::<i64>::None)),
        Err(error) if attempts >= max_attempts => update
            .col_expr(Column::State, Expr::value(MailState::Failed))
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
    update
        .filter(unchanged(row))
        .filter(Column::NextAttemptAt.eq(row.next_attempt_at))
        .exec(db)
        .await?;
    Ok(())
}

/// Fails a mail that already made every attempt it may (the last one was
/// cut short by a stop, or the limit was lowered).
pub async fn fail_exhausted(
    db: &impl ConnectionTrait,
    row: &mail_outbox::Model,
) -> Result<(), DeliveryError> {
    let error = if row.last_error.is_empty() {
        "attempts exhausted".to_owned()
    } else {
        row.last_error.clone()
    };
    Entity::update_many()
        .col_expr(Column::State, Expr::value(MailState::Failed))
        .col_expr(Column::LastError, Expr::value(error))
        .col_expr(Column::NextAttemptAt, Expr::value(Option::<i64>::None))
        .col_expr(Column::UpdatedAt, Expr::value(clock::now()))
        .filter(unchanged(row))
        .exec(db)
        .await?;
    Ok(())
}

/// One page of the outbox, newest first, of every state or one.
pub async fn list(
    db: &impl ConnectionTrait,
    state: Option<MailState>,
    limit: u64,
    offset: u64,
) -> Result<MailOutboxPage, DeliveryError> {
    let mut query = Entity::find();
    if let Some(state) = state {
        query = query.filter(Column::State.eq(state));
    }
    let total = query.clone().count(db).await?;
    let rows = query
        .order_by_desc(Column::CreatedAt)
        .order_by_desc(Column::Id)
        .limit(limit)
        .offset(offset)
        .all(db)
        .await?;
    Ok(MailOutboxPage {
        items: rows.iter().map(entry).collect(),
        limit,
        offset,
        total,
    })
}

/// Puts a failed mail back in the queue, due now with its attempts
/// counted afresh. 404 `mail_not_found` for no such mail, 409 `conflict`
/// for one that has not failed.
pub async fn retry(db: &impl ConnectionTrait, id: &str) -> Result<MailOutboxEntry, DeliveryError> {
    let row = Entity::find_by_id(id.to_owned())
        .one(db)
        .await?
        .ok_or(DeliveryError::MailNotFound)?;
    if row.state != MailState::Failed {
        return Err(DeliveryError::MailNotFailed);
    }
    let now_ms = clock::now_millis();
    let now = clock::now();
    let changed = Entity::update_many()
        .col_expr(Column::State, Expr::value(MailState::Pending))
        .col_expr(Column::Attempts, Expr::value(0))
        .col_expr(Column::NextAttemptAt, Expr::value(now_ms))
        .col_expr(Column::UpdatedAt, Expr::value(now))
        .filter(Column::Id.eq(id))
        .filter(Column::State.eq(MailState::Failed))
        .exec(db)
        .await?;
    if changed.rows_affected != 1 {
        return Err(DeliveryError::MailNotFailed);
    }
    Ok(entry(&mail_outbox::Model {
        state: MailState::Pending,
        attempts: 0,
        next_attempt_at: Some(now_ms),
        updated_at: now,
        ..row
    }))
}
