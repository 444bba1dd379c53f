//! The webhook outbox on a real (in-memory SQLite) database: of two
//! processes taking the same call only one gets it; outcomes follow the
//! schedule; a stale taker cannot overwrite a newer outcome; exhausted calls
//! end `failed`.

use dragoman_delivery::webhooks::{RetrySchedule, outbox};
use dragoman_migrations::{Migrator, MigratorTrait};
use dragoman_model::clock;
use dragoman_model::entities::webhook_delivery::{self, ActiveModel, Entity};
use dragoman_model::vocab::{CallbackEvent, WebhookState};
use sea_orm::{ActiveModelTrait, ConnectionTrait, DatabaseConnection, EntityTrait};
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
