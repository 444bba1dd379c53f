//! Stored results on a real (in-memory SQLite) database: the results loop
//! stores the result of a request that ended completed and of no other,
//! leaves one being built elsewhere alone, waits after a failed build, and
//! deletes expired results with their blobs; the webhook dispatcher never
//! builds a result, it waits for the loop's and then sends without one.
//! The loop's queries run on PostgreSQL too whenever `TEST_DATABASE_URL`
//! is set.

use dragoman_delivery::webhooks::{Dispatcher, RetrySchedule};
use dragoman_delivery::{ResultStore, ResultsLoop, stored};
use dragoman_migrations::{Migrator, MigratorTrait};
use dragoman_model::coordination::{Coordination, LocalCoordination};
use dragoman_model::entities::{
    account, chapter, passage, project, request, result, series, webhook_delivery,
};
use dragoman_model::server_key::ServerKey;
use dragoman_model::vocab::{
    CallbackEvent, InputKind, PassageStatus, Priority, RequestStatus, ResultFormat, ResultScope,
    SeriesKind, Stage, VolumeStatus,
};
use dragoman_model::webhook::{WebhookPolicy, WebhookSettings};
use dragoman_model::{clock, ids};
use dragoman_testing::TestDatabase;
use object_store::ObjectStore;
use object_store::memory::InMemory;
use object_store::path::Path;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter,
    Set,
};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const DAY: i64 = 86_400;

struct World {
    db: DatabaseConnection,
    coordination: Arc<dyn Coordination>,
    blobs: Arc<dyn ObjectStore>,
    account: String,
    series: String,
    project: String,
}

impl World {
    async fn new() -> World {
        let db = dragoman_model::db::connect("sqlite::memory:")
            .await
            .expect("in-memory database");
        World::on(db).await
    }

    /// A volume with one translated chapter on an empty database.
    async fn on(db: DatabaseConnection) -> World {
        Migrator::up(&db, None).await.expect("migrations");
        let now = clock::now();
        let mut account = account::ActiveModel::new_account("reader", String::new(), false);
        account.priority_ceiling = Set(Priority::High);
        let account = account.insert(&db).await.expect("account");
        let series = series::ActiveModel::new_series(
            &account.id,
            "Saga",
            SeriesKind::Numbered,
            ("en", "fr"),
            None,
        )
        .insert(&db)
        .await
        .expect("series");
        let mut project = project::ActiveModel::new_volume(
            &series,
            "The First Book".into(),
            1,
            InputKind::Txt,
            ("en", "fr"),
        );
        project.status = Set(VolumeStatus::Translated);
        let project = project.insert(&db).await.expect("project");
        let chapter = chapter::ActiveModel {
            id: Set(ids::new_id()),
            project_id: Set(project.id.clone()),
            external_id: Set(None),
            number: Set(Some(1)),
            part: Set(None),
            part_count: Set(None),
            kind: Set("chapter".into()),
            label: Set(None),
            title: Set(Some("Beginnings".into())),
            translated_title: Set(Some("Commencements".into())),
            position: Set(0),
            source_sha256: Set(String::new()),
            words: Set(3),
            mapping: Set(None),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(&db)
        .await
        .expect("chapter");
        passage::ActiveModel {
            id: Set(ids::new_id()),
            chapter_id: Set(chapter.id.clone()),
            project_id: Set(project.id.clone()),
            position: Set(0),
            source: Set("It began here.".into()),
            markup: Set(None),
            translation: Set(Some("Tout commença ici.".into())),
            status: Set(PassageStatus::Ok),
            last_error: Set(None),
            human: Set(false),
            validated: Set(false),
            attempts: Set(1),
            memory_key: Set(None),
            score: Set(None),
            signals: Set(None),
            reviewed: Set(false),
            autopilot_round: Set(0),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(&db)
        .await
        .expect("passage");
        World {
            db,
            coordination: Arc::new(LocalCoordination::new()),
            blobs: Arc::new(InMemory::new()),
            account: account.id,
            series: series.id,
            project: project.id,
        }
    }

    fn store(&self) -> ResultStore {
        ResultStore {
            blobs: self.blobs.clone(),
            retention_days: 30,
            epub: Default::default(),
        }
    }

    fn results_loop(&self) -> ResultsLoop {
        ResultsLoop::new(self.db.clone(), self.coordination.clone(), self.store())
    }

    /// A request over the volume's chapters that ended `finished_ago`
    /// seconds ago with `status`, asking for `format`.
    async fn request(
        &self,
        status: RequestStatus,
        format: ResultFormat,
        finished_ago: i64,
    ) -> request::Model {
        let now = clock::now();
        let chapters: Vec<String> = chapter::Entity::find()
            .filter(chapter::Column::ProjectId.eq(self.project.clone()))
            .all(&self.db)
            .await
            .expect("chapters")
            .into_iter()
            .map(|c| c.id)
            .collect();
        request::ActiveModel {
            id: Set(ids::new_id()),
            account_id: Set(self.account.clone()),
            token_id: Set(None),
            external_id: Set(None),
            idempotency_key: Set(None),
            content_hash: Set(ids::new_id()),
            series_id: Set(self.series.clone()),
            project_id: Set(self.project.clone()),
            job_id: Set(None),
            input: Set(InputKind::Txt),
            status: Set(status),
            stage: Set(Stage::Export),
            step: Set(status.to_string()),
            error: Set(if status == RequestStatus::Failed {
                "provider unreachable".into()
            } else {
                String::new()
            }),
            stop_reason: Set(String::new()),
            priority: Set(Priority::Normal),
            options: Set(dragoman_model::request_options::StoredOptions {
                output_format: Some(format),
                ..Default::default()
            }),
            callback_url: Set(Some("https://hooks.example/done".into())),
            callback_events: Set(json!([])),
            chapters: Set(json!({ "ids": chapters })),
            result: Set(None),
            report: Set(None),
            next_attempt: Set(0),
            created_at: Set(now - finished_ago - 60),
            updated_at: Set(now - finished_ago),
            finished_at: Set(Some(now - finished_ago)),
        }
        .insert(&self.db)
        .await
        .expect("request")
    }

    async fn results_of(&self, request_id: &str) -> Vec<result::Model> {
        result::Entity::find()
            .filter(result::Column::RequestId.eq(request_id))
            .all(&self.db)
            .await
            .expect("results")
    }

    async fn blob(&self, key: &str) -> Option<Vec<u8>> {
        let found = self.blobs.get(&Path::from(key)).await.ok()?;
        Some(found.bytes().await.expect("bytes").to_vec())
    }
}

#[tokio::test]
async fn a_completed_request_gets_its_stored_result_and_a_failed_one_none() {
    let world = World::new().await;
    let completed = world
        .request(RequestStatus::Completed, ResultFormat::Txt, 10)
        .await;
    let residuals = world
        .request(
            RequestStatus::CompletedWithResiduals,
            ResultFormat::Json,
            10,
        )
        .await;
    let failed = world
        .request(RequestStatus::Failed, ResultFormat::Txt, 10)
        .await;
    let cancelled = world
        .request(RequestStatus::Cancelled, ResultFormat::Txt, 10)
        .await;
    let running = world
        .request(RequestStatus::Running, ResultFormat::Txt, 10)
        .await;
    let results = world.results_loop();

    let pass = results.pass().await.expect("pass");
    assert_eq!((pass.stored, pass.failed), (2, 0));

    let stored = world.results_of(&completed.id).await;
    assert_eq!(stored.len(), 1);
    let txt = &stored[0];
    assert_eq!(
        (txt.format, txt.scope, txt.media_type.as_str()),
        (
            ResultFormat::Txt,
            ResultScope::Request,
            "text/plain; charset=utf-8"
        )
    );
    let expires = txt.expires_at.expect("expires");
    assert!((29 * DAY..=30 * DAY).contains(&(expires - clock::now())));
    let body = world.blob(&txt.blob_key).await.expect("blob stored");
    let text = String::from_utf8(body.clone()).expect("utf-8");
    assert!(text.contains("Tout commença ici."), "{text}");
    assert_eq!(txt.sha256, dragoman_book::text::sha256_hex(&body));
    assert_eq!(usize::try_from(txt.size).ok(), Some(body.len()));

    let json_result = world.results_of(&residuals.id).await;
    assert_eq!(json_result.len(), 1);
    assert_eq!(json_result[0].format, ResultFormat::Json);

    for other in [&failed, &cancelled, &running] {
        assert!(
            world.results_of(&other.id).await.is_empty(),
            "{}",
            other.status
        );
    }

    // Stored once: a second pass finds nothing to do.
    assert_eq!(results.pass().await.expect("pass").stored, 0);
    assert_eq!(world.results_of(&completed.id).await.len(), 1);
}

#[tokio::test]
async fn a_request_that_ended_before_the_retention_window_gets_none() {
    let world = World::new().await;
    let old = world
        .request(RequestStatus::Completed, ResultFormat::Txt, 31 * DAY)
        .await;
    let pass = world.results_loop().pass().await.expect("pass");
    assert_eq!((pass.stored, pass.failed), (0, 0));
    assert!(world.results_of(&old.id).await.is_empty());
}

#[tokio::test]
async fn a_result_another_process_is_building_is_left_to_it() {
    let world = World::new().await;
    let done = world
        .request(RequestStatus::Completed, ResultFormat::Txt, 10)
        .await;
    let key = stored::lease_key(&done.id);
    assert!(
        world
            .coordination
            .lease_acquire(&key, "other process", Duration::from_secs(60))
            .await
            .expect("lease")
    );
    let results = world.results_loop();
    let pass = results.pass().await.expect("pass");
    assert_eq!((pass.stored, pass.failed), (0, 0));
    assert!(world.results_of(&done.id).await.is_empty());

    // The other process gave up: this one builds it.
    world
        .coordination
        .lease_release(&key, "other process")
        .await
        .expect("release");
    assert_eq!(results.pass().await.expect("pass").stored, 1);
    assert_eq!(world.results_of(&done.id).await.len(), 1);
}

#[tokio::test]
async fn a_failed_build_waits_before_it_is_tried_again() {
    let world = World::new().await;
    // `epub` exists only for a request that sent an EPUB: this build fails.
    let broken = world
        .request(RequestStatus::Completed, ResultFormat::Epub, 10)
        .await;
    let results = world.results_loop();
    let pass = results.pass().await.expect("pass");
    assert_eq!((pass.stored, pass.failed), (0, 1));
    // Right after, the failing build is not tried again; others still are.
    let fine = world
        .request(RequestStatus::Completed, ResultFormat::Json, 5)
        .await;
    let pass = results.pass().await.expect("pass");
    assert_eq!((pass.stored, pass.failed), (1, 0));
    assert!(world.results_of(&broken.id).await.is_empty());
    assert_eq!(world.results_of(&fine.id).await.len(), 1);
}

/// A stored result row and its blob, expiring at `expires_at`.
async fn stored_result(
    world: &World,
    request_id: &str,
    expires_at: i64,
    with_blob: bool,
) -> String {
    let id = ids::new_id();
    let key = format!("results/{request_id}/{id}/book.txt");
    if with_blob {
        world
            .blobs
            .put(&Path::from(key.clone()), b"bytes".to_vec().into())
            .await
            .expect("put");
    }
    result::ActiveModel {
        id: Set(id),
        request_id: Set(request_id.to_owned()),
        format: Set(ResultFormat::Txt),
        scope: Set(ResultScope::Request),
        media_type: Set(ResultFormat::Txt.media_type().into()),
        filename: Set("book.txt".into()),
        size: Set(5),
        sha256: Set(String::new()),
        blob_key: Set(key.clone()),
        created_at: Set(expires_at - 30 * DAY),
        expires_at: Set(Some(expires_at)),
    }
    .insert(&world.db)
    .await
    .expect("result");
    key
}

#[tokio::test]
async fn expired_results_are_deleted_with_their_blobs_and_the_others_kept() {
    let world = World::new().await;
    let old = world
        .request(RequestStatus::Completed, ResultFormat::Txt, 40 * DAY)
        .await;
    let recent = world
        .request(RequestStatus::Completed, ResultFormat::Txt, DAY)
        .await;
    let now = clock::now();
    let expired = stored_result(&world, &old.id, now - DAY, true).await;
    let blob_gone = stored_result(&world, &old.id, now - 2 * DAY, false).await;
    let kept = stored_result(&world, &recent.id, now + 29 * DAY, true).await;

    assert_eq!(world.results_loop().sweep().await.expect("sweep"), 2);

    assert!(world.results_of(&old.id).await.is_empty());
    assert_eq!(world.blob(&expired).await, None);
    assert_eq!(world.blob(&blob_gone).await, None);
    let left = world.results_of(&recent.id).await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].blob_key, kept);
    assert_eq!(world.blob(&kept).await, Some(b"bytes".to_vec()));
    // The old request is out of the retention window: not rebuilt.
    assert_eq!(world.results_loop().pass().await.expect("pass").stored, 0);
    assert!(world.results_of(&old.id).await.is_empty());
}

/// The same retention and sweeps on S3 (a real `moto_server`): the loop
/// stores a result as an object of the bucket, the sweep deletes expired
/// results whether their object is there or already gone (S3 answers a
/// delete of an absent key with success), and stale uploads go once they
/// are a day old — S3 sets modification times itself, so the sweep is run
/// two days ahead instead of ageing the objects.
#[tokio::test]
async fn on_s3_results_are_stored_and_expired_ones_and_stale_uploads_deleted() {
    let test = "on_s3_results_are_stored_and_expired_ones_and_stale_uploads_deleted";
    let Some(s3) = dragoman_testing::S3Server::start_or_skip(test).await else {
        return;
    };
    let bucket = s3.bucket("results-loop").await;
    let mut world = World::new().await;
    world.blobs =
        dragoman_model::blob::open_with(&format!("s3://{bucket}/blobs"), s3.env()).expect("s3");
    let root = dragoman_model::blob::open_with(&format!("s3://{bucket}"), s3.env()).expect("s3");

    let done = world
        .request(RequestStatus::Completed, ResultFormat::Txt, 60)
        .await;
    assert_eq!(world.results_loop().pass().await.expect("pass").stored, 1);
    let stored = world.results_of(&done.id).await;
    assert_eq!(stored.len(), 1);
    let body = world
        .blob(&stored[0].blob_key)
        .await
        .expect("in the bucket");
    assert!(
        String::from_utf8_lossy(&body).contains("Tout commença ici."),
        "the stored result holds the translation"
    );
    assert!(
        root.head(&Path::from(format!("blobs/{}", stored[0].blob_key)))
            .await
            .is_ok(),
        "the result is an object under the store's prefix"
    );

    let old = world
        .request(RequestStatus::Completed, ResultFormat::Txt, 40 * DAY)
        .await;
    let now = clock::now();
    let expired = stored_result(&world, &old.id, now - DAY, true).await;
    let blob_gone = stored_result(&world, &old.id, now - 2 * DAY, false).await;
    let upload = Path::from("uploads/left-behind");
    world
        .blobs
        .put(&upload, b"book".to_vec().into())
        .await
        .expect("put");
    // The upload is younger than a day: only the two expired results go.
    assert_eq!(world.results_loop().sweep().await.expect("sweep"), 2);
    assert!(world.results_of(&old.id).await.is_empty());
    assert_eq!(world.blob(&expired).await, None);
    assert_eq!(world.blob(&blob_gone).await, None);
    assert!(
        world.blobs.head(&upload).await.is_ok(),
        "a fresh upload is kept"
    );
    assert_eq!(
        world.results_of(&done.id).await.len(),
        1,
        "a result still kept stays"
    );

    let store = world.store();
    assert_eq!(store.sweep_uploads(now).await.expect("sweep uploads"), 0);
    assert_eq!(
        store
            .sweep_uploads(now + 2 * DAY)
            .await
            .expect("sweep uploads"),
        1
    );
    assert!(
        world.blobs.head(&upload).await.is_err(),
        "a stale upload is gone"
    );
    assert!(
        world.blob(&stored[0].blob_key).await.is_some(),
        "the sweep of uploads leaves results alone"
    );
}

fn dispatcher(world: &World) -> Arc<Dispatcher> {
    let settings = WebhookSettings::from_environment("", "", 6, 5, "").expect("settings");
    Arc::new(Dispatcher::new(
        world.db.clone(),
        world.coordination.clone(),
        WebhookPolicy::new(settings, ServerKey::generate()),
        RetrySchedule::default(),
    ))
}

/// Queues the final event of `request`, as the scheduler does when it ends
/// it, `age` seconds ago.
async fn final_event(world: &World, request: &request::Model, age: i64) -> webhook_delivery::Model {
    let mut row = webhook_delivery::ActiveModel::queued(
        &request.id,
        CallbackEvent::Finished,
        None,
        "https://hooks.example/done",
        String::new(),
    );
    row.created_at = Set(clock::now() - age);
    row.insert(&world.db).await.expect("final event")
}

async fn body_of(world: &World, row: &webhook_delivery::Model) -> String {
    webhook_delivery::Entity::find_by_id(row.id.clone())
        .one(&world.db)
        .await
        .expect("select")
        .expect("row")
        .body
}

#[tokio::test]
async fn the_final_event_waits_for_the_stored_result_and_never_builds_it() {
    let world = World::new().await;
    let done = world
        .request(RequestStatus::Completed, ResultFormat::Txt, 1)
        .await;
    let call = final_event(&world, &done, 0).await;
    let dispatcher = dispatcher(&world);

    // Within the grace: postponed, nothing built.
    dispatcher.tick().await.expect("tick");
    assert_eq!(body_of(&world, &call).await, "");
    assert!(world.results_of(&done.id).await.is_empty());

    // The results loop stores it; the event then describes it.
    world.results_loop().pass().await.expect("pass");
    let stored = stored::find(&world.db, &done.id)
        .await
        .expect("find")
        .expect("stored");
    let mut rendered = String::new();
    for _ in 0..50 {
        dispatcher.tick().await.expect("tick");
        rendered = body_of(&world, &call).await;
        if !rendered.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let body: Value = serde_json::from_str(&rendered).expect("rendered body");
    assert_eq!(
        body["artifact"],
        json!({"format": "txt", "size": stored.size, "sha256": stored.sha256})
    );
}

#[tokio::test]
async fn past_the_grace_the_final_event_goes_without_a_result() {
    let world = World::new().await;
    let done = world
        .request(RequestStatus::Completed, ResultFormat::Txt, 60)
        .await;
    let call = final_event(&world, &done, 60).await;
    dispatcher(&world).tick().await.expect("tick");
    let body: Value = serde_json::from_str(&body_of(&world, &call).await).expect("rendered body");
    assert_eq!(body["status"], "completed");
    assert_eq!(body["artifact"], Value::Null);
    // The dispatcher built nothing.
    let count = result::Entity::find()
        .count(&world.db)
        .await
        .expect("count");
    assert_eq!(count, 0);
}

/// The loop on PostgreSQL: one stored result even when two processes look
/// at once, none for a failed request, and expired ones swept.
async fn loop_on(db: DatabaseConnection) {
    let world = World::on(db).await;
    let done = world
        .request(RequestStatus::Completed, ResultFormat::Txt, 10)
        .await;
    let failed = world
        .request(RequestStatus::Failed, ResultFormat::Txt, 10)
        .await;
    let (one, other) = (world.results_loop(), world.results_loop());
    let (a, b) = tokio::join!(one.pass(), other.pass());
    let (a, b) = (a.expect("pass"), b.expect("pass"));
    assert_eq!((a.failed, b.failed), (0, 0));
    let stored = world.results_of(&done.id).await;
    assert_eq!(stored.len(), 1);
    assert!(world.results_of(&failed.id).await.is_empty());
    let key = stored[0].blob_key.clone();
    assert!(world.blob(&key).await.is_some());

    let mut expired: result::ActiveModel = stored[0].clone().into();
    expired.expires_at = Set(Some(clock::now() - 1));
    expired.update(&world.db).await.expect("expire");
    assert_eq!(one.sweep().await.expect("sweep"), 1);
    assert!(world.results_of(&done.id).await.is_empty());
    assert_eq!(world.blob(&key).await, None);
}

#[tokio::test]
async fn on_postgres_the_loop_stores_once_and_sweeps() {
    // Dropped with the handle, also when an assertion fails.
    let Some(database) = TestDatabase::fresh("PostgreSQL results loop", "dragoman_delivery").await
    else {
        return;
    };
    let db = dragoman_model::db::connect(database.url())
        .await
        .expect("test database");
    loop_on(db.clone()).await;
    db.close().await.expect("close");
}
