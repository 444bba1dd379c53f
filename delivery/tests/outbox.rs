//! The webhook outbox on a real (in-memory SQLite) database: of two
//! processes taking the same call only one gets it; outcomes follow the
//! schedule; a stale taker cannot overwrite a newer outcome; exhausted calls
//! end `failed`; the request shows when its next retry is due.

use dragoman_delivery::webhooks::{RetrySchedule, outbox};
use dragoman_migrations::{Migrator, MigratorTrait};
use dragoman_model::clock;
use dragoman_model::entities::request;
use dragoman_model::entities::webhook_delivery::{self, ActiveModel, Entity};
use dragoman_model::ids;
use dragoman_model::vocab::{
    CallbackEvent, InputKind, Priority, RequestStatus, Stage, WebhookState,
};
use sea_orm::{ActiveModelTrait, ConnectionTrait, DatabaseConnection, EntityTrait, Set};
use serde_json::json;
use std::time::Duration;

async fn database() -> DatabaseConnection {
    let db = dragoman_model::db::connect("sqlite::memory:")
        .await
        .expect("in-memory database");
    Migrator::up(&db, None).await.expect("migrations");
    // The outbox alone is under test: no request rows behind the calls.
    db.execute_unprepared("PRAGMA foreign_keys = OFF")
        .await
        .expect("pragma");
    db
}

async fn queued(db: &DatabaseConnection, request: &str) -> webhook_delivery::Model {
    ActiveModel::queued(
        request,
        CallbackEvent::Finished,
        None,
        "http://x/",
        "{}".into(),
    )
    .insert(db)
    .await
    .expect("insert")
}

async fn reload(db: &DatabaseConnection, row: &webhook_delivery::Model) -> webhook_delivery::Model {
    Entity::find_by_id(row.id.clone())
        .one(db)
        .await
        .expect("select")
        .expect("row")
}

const SCHEDULE: RetrySchedule = RetrySchedule {
    first: Duration::from_secs(30),
    longest: Duration::from_secs(3600),
};

#[tokio::test]
async fn only_one_taker_gets_a_call_and_outcomes_follow_the_schedule() {
    let db = database().await;
    let row = queued(&db, "r1").await;
    let due = outbox::due(&db, clock::now_millis() + 1, 10)
        .await
        .expect("due");
    assert_eq!(due.len(), 1);
    // Two processes read the same row; only the first takes it.
    let taken = outbox::claim(&db, &row, 40_000).await.expect("claim");
    assert!(
        outbox::claim(&db, &row, 40_000)
            .await
            .expect("claim")
            .is_none()
    );
    let taken = taken.expect("the first taker gets the call");
    assert_eq!(taken, reload(&db, &row).await);
    assert_eq!(taken.attempts, 1);
    assert!(
        outbox::due(&db, clock::now_millis(), 10)
            .await
            .expect("due")
            .is_empty()
    );
    // A failure waits 30 s.
    let before = clock::now_millis();
    outbox::settle(&db, &taken, Err("HTTP 500".into()), 3, &SCHEDULE)
        .await
        .expect("settle");
    let failed_once = reload(&db, &taken).await;
    assert_eq!(failed_once.state, WebhookState::Pending);
    assert_eq!(failed_once.last_error, "HTTP 500");
    let next = failed_once.next_attempt_at.expect("next attempt");
    assert!((before + 30_000..=clock::now_millis() + 30_000).contains(&next));
    // The stale outcome of the first attempt cannot land twice.
    outbox::settle(&db, &taken, Ok(()), 3, &SCHEDULE)
        .await
        .expect("settle");
    assert_eq!(reload(&db, &taken).await.state, WebhookState::Pending);
    // Second attempt fails: 60 s; third fails: failed for good.
    let second = outbox::claim(&db, &failed_once, 40_000)
        .await
        .expect("claim")
        .expect("taken");
    let before = clock::now_millis();
    outbox::settle(&db, &second, Err("timeout after 10 s".into()), 3, &SCHEDULE)
        .await
        .expect("settle");
    let after_second = reload(&db, &second).await;
    let next = after_second.next_attempt_at.expect("next attempt");
    assert!((before + 60_000..=clock::now_millis() + 60_000).contains(&next));
    let third = outbox::claim(&db, &after_second, 40_000)
        .await
        .expect("claim")
        .expect("taken");
    outbox::settle(&db, &third, Err("HTTP 502".into()), 3, &SCHEDULE)
        .await
        .expect("settle");
    let last = reload(&db, &third).await;
    assert_eq!(
        (
            last.state,
            last.attempts,
            last.last_error.as_str(),
            last.next_attempt_at
        ),
        (WebhookState::Failed, 3, "HTTP 502", None)
    );
}

#[tokio::test]
async fn a_delivered_call_is_settled_and_an_interrupted_last_attempt_fails() {
    let db = database().await;
    let row = queued(&db, "r2").await;
    let taken = outbox::claim(&db, &row, 40_000)
        .await
        .expect("claim")
        .expect("taken");
    outbox::settle(&db, &taken, Ok(()), 6, &SCHEDULE)
        .await
        .expect("settle");
    let done = reload(&db, &taken).await;
    assert_eq!(done.state, WebhookState::Delivered);
    assert!(done.delivered_at.is_some() && done.next_attempt_at.is_none());

    // A call whose last allowed attempt was cut short is failed, not retried.
    let row = queued(&db, "r3").await;
    let cut = outbox::claim(&db, &row, 40_000)
        .await
        .expect("claim")
        .expect("taken");
    outbox::fail_exhausted(&db, &cut).await.expect("fail");
    let failed = reload(&db, &cut).await;
    assert_eq!(
        (failed.state, failed.last_error.as_str()),
        (WebhookState::Failed, "attempts exhausted")
    );
}

/// A request that ended and named a callback (its account, series and
/// volume are not there: foreign keys are off).
async fn ended_request(db: &DatabaseConnection) -> String {
    let now = clock::now();
    request::ActiveModel {
        id: Set(ids::new_id()),
        account_id: Set("account".into()),
        token_id: Set(None),
        external_id: Set(None),
        idempotency_key: Set(None),
        content_hash: Set(ids::new_id()),
        series_id: Set("series".into()),
        project_id: Set("volume".into()),
        job_id: Set(None),
        input: Set(InputKind::Txt),
        status: Set(RequestStatus::Imported),
        stage: Set(Stage::Import),
        step: Set(String::new()),
        error: Set(String::new()),
        stop_reason: Set(String::new()),
        priority: Set(Priority::Normal),
        options: Set(Default::default()),
        callback_url: Set(Some("http://x/".into())),
        callback_events: Set(json!(["chapters.translated"])),
        chapters: Set(json!({})),
        result: Set(None),
        report: Set(None),
        next_attempt: Set(0),
        created_at: Set(now),
        updated_at: Set(now),
        finished_at: Set(Some(now)),
    }
    .insert(db)
    .await
    .expect("request")
    .id
}

/// `next_attempt` as the status document shows it.
async fn shown(db: &DatabaseConnection, request_id: &str) -> i64 {
    request::Entity::find_by_id(request_id.to_owned())
        .one(db)
        .await
        .expect("select")
        .expect("request")
        .next_attempt
}

async fn taken(db: &DatabaseConnection, row: &webhook_delivery::Model) -> webhook_delivery::Model {
    outbox::claim(db, &reload(db, row).await, 40_000)
        .await
        .expect("claim")
        .expect("taken")
}

#[tokio::test]
async fn the_request_shows_when_its_next_retry_is_due_and_zero_when_none_is() {
    let db = database().await;
    let request_id = ended_request(&db).await;
    let last = queued(&db, &request_id).await;
    assert_eq!(shown(&db, &request_id).await, 0, "not tried yet");

    // The final event fails once: its retry, 30 s on, in Unix seconds.
    let before = clock::now();
    let first = taken(&db, &last).await;
    outbox::settle(&db, &first, Err("HTTP 500".into()), 3, &SCHEDULE)
        .await
        .expect("settle");
    let due_ms = reload(&db, &last).await.next_attempt_at.expect("due");
    let next = shown(&db, &request_id).await;
    assert_eq!(next, (due_ms + 999) / 1000);
    assert!(
        (before + 30..=clock::now() + 31).contains(&next),
        "{next} is not about 30 s after {before}"
    );

    // A batch of the same request failing later keeps the earliest retry.
    let batch = ActiveModel::queued(
        &request_id,
        CallbackEvent::ChaptersTranslated,
        Some(1),
        "http://x/",
        "{}".into(),
    )
    .insert(&db)
    .await
    .expect("insert");
    let call = taken(&db, &batch).await;
    outbox::settle(&db, &call, Err("HTTP 503".into()), 3, &SCHEDULE)
        .await
        .expect("settle");
    assert_eq!(shown(&db, &request_id).await, next);

    // The final event delivered: the batch's retry is the next one.
    let second = taken(&db, &last).await;
    outbox::settle(&db, &second, Ok(()), 3, &SCHEDULE)
        .await
        .expect("settle");
    let batch_due_ms = reload(&db, &batch).await.next_attempt_at.expect("due");
    assert_eq!(shown(&db, &request_id).await, (batch_due_ms + 999) / 1000);

    // The batch exhausted (its last attempt cut short): nothing is due.
    let cut = taken(&db, &batch).await;
    outbox::fail_exhausted(&db, &cut).await.expect("fail");
    assert_eq!(reload(&db, &batch).await.state, WebhookState::Failed);
    assert_eq!(shown(&db, &request_id).await, 0);

    // A call that fails for good after its last attempt: nothing is due.
    let other = ended_request(&db).await;
    let row = queued(&db, &other).await;
    let call = taken(&db, &row).await;
    outbox::settle(&db, &call, Err("HTTP 500".into()), 2, &SCHEDULE)
        .await
        .expect("settle");
    assert!(shown(&db, &other).await > 0);
    let call = taken(&db, &row).await;
    outbox::settle(&db, &call, Err("HTTP 500".into()), 2, &SCHEDULE)
        .await
        .expect("settle");
    assert_eq!(reload(&db, &row).await.state, WebhookState::Failed);
    assert_eq!(shown(&db, &other).await, 0);
}
