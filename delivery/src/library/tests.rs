//! Publication on a real (in-memory SQLite) database: who may ask, what is
//! refused before anything is queued, and a publication that cannot be
//! written retried with growing waits until it fails with its reason.

use super::*;
use crate::error::DeliveryError;
use crate::stored::ResultStore;
use dragoman_migrations::{Migrator, MigratorTrait};
use dragoman_model::clock;
use dragoman_model::coordination::LocalCoordination;
use dragoman_model::documents::publication::LibrarySettingsInput;
use dragoman_model::entities::{account, project, request, series};
use dragoman_model::ids;
use dragoman_model::tenancy::Acting;
use dragoman_model::vocab::{
    InputKind, Priority, PublicationStatus, RequestStatus, SeriesKind, Stage,
};
use object_store::memory::InMemory;
use sea_orm::{ActiveModelTrait, DatabaseConnection, Set};
use serde_json::json;
use std::sync::Arc;
use tokio::sync::watch;

struct World {
    db: DatabaseConnection,
    owner: String,
    other: String,
    book: project::Model,
    library: tempfile::TempDir,
}

impl World {
    /// A book of `owner` in a series of its own, with no request yet, and
    /// a library folder (not yet configured).
    async fn new() -> World {
        let db = dragoman_model::db::connect("sqlite::memory:")
            .await
            .expect("in-memory database");
        Migrator::up(&db, None).await.expect("migrations");
        let owner = account::ActiveModel::new_account("owner", String::new(), false)
            .insert(&db)
            .await
            .expect("owner");
        let other = account::ActiveModel::new_account("other", String::new(), false)
            .insert(&db)
            .await
            .expect("other");
        let series = series::ActiveModel::new_series(
            &owner.id,
            "Discworld",
            SeriesKind::Numbered,
            ("en", "fr"),
            None,
        )
        .insert(&db)
        .await
        .expect("series");
        let mut book = project::ActiveModel::new_volume(
            &series,
            "Mort".into(),
            4,
            InputKind::Epub,
            ("en", "fr"),
        );
        book.author = Set(Some("Terry Pratchett".into()));
        let book = book.insert(&db).await.expect("book");
        World {
            db,
            owner: owner.id,
            other: other.id,
            book,
            library: tempfile::tempdir().expect("library"),
        }
    }

    async fn configure(&self) {
        let path = self.library.path().to_string_lossy().into_owned();
        settings::update(&self.db, LibrarySettingsInput { path })
            .await
            .expect("library configured");
    }

    /// A completed EPUB request of the book (its original is not in the
    /// blob store, so its EPUB cannot be built).
    async fn completed_request(&self) {
        let now = clock::now();
        request::ActiveModel {
            id: Set(ids::new_id()),
            account_id: Set(self.owner.clone()),
            token_id: Set(None),
            external_id: Set(None),
            idempotency_key: Set(None),
            content_hash: Set(ids::new_id()),
            series_id: Set(self.book.series_id.clone()),
            project_id: Set(self.book.id.clone()),
            job_id: Set(None),
            input: Set(InputKind::Epub),
            status: Set(RequestStatus::Completed),
            stage: Set(Stage::Export),
            step: Set(String::new()),
            error: Set(String::new()),
            stop_reason: Set(String::new()),
            priority: Set(Priority::Normal),
            options: Set(Default::default()),
            callback_url: Set(None),
            callback_events: Set(json!([])),
            chapters: Set(json!({ "ids": [] })),
            result: Set(None),
            report: Set(None),
            next_attempt: Set(0),
            created_at: Set(now),
            updated_at: Set(now),
            finished_at: Set(Some(now)),
        }
        .insert(&self.db)
        .await
        .expect("request");
    }

    fn acting<'a>(&self, account: &'a str, administrator: bool) -> Acting<'a> {
        Acting::new(account, administrator)
    }
}

#[tokio::test]
async fn publishing_is_refused_until_there_is_a_folder_and_an_epub() {
    let world = World::new().await;
    let owner = world.acting(&world.owner, false);
    let status = publish::status(&world.db, owner, &world.book.id)
        .await
        .expect("status");
    assert_eq!(
        (status.status, status.attempts, status.path),
        (PublicationStatus::None, 0, None)
    );

    let refused = publish::publish(&world.db, owner, &world.book.id).await;
    assert!(
        matches!(refused, Err(DeliveryError::LibraryNotConfigured)),
        "{refused:?}"
    );
    world.configure().await;
    let refused = publish::publish(&world.db, owner, &world.book.id).await;
    assert!(
        matches!(refused, Err(DeliveryError::NothingToPublish)),
        "{refused:?}"
    );

    world.completed_request().await;
    let asked = publish::publish(&world.db, owner, &world.book.id)
        .await
        .expect("queued");
    assert_eq!(
        (asked.status, asked.attempts),
        (PublicationStatus::Pending, 0)
    );
    let read = publish::status(&world.db, owner, &world.book.id)
        .await
        .expect("status");
    assert_eq!(read, asked);
}

#[tokio::test]
async fn another_account_cannot_see_or_publish_the_book_but_an_administrator_can() {
    let world = World::new().await;
    world.configure().await;
    world.completed_request().await;
    let stranger = world.acting(&world.other, false);
    for refused in [
        publish::publish(&world.db, stranger, &world.book.id).await,
        publish::status(&world.db, stranger, &world.book.id).await,
        publish::status(&world.db, stranger, "no-such-book").await,
    ] {
        assert!(
            matches!(refused, Err(DeliveryError::VolumeNotFound)),
            "{refused:?}"
        );
    }
    let administrator = world.acting(&world.other, true);
    let asked = publish::publish(&world.db, administrator, &world.book.id)
        .await
        .expect("an administrator publishes");
    assert_eq!(asked.status, PublicationStatus::Pending);
}

#[tokio::test]
async fn a_book_that_cannot_be_written_fails_after_its_attempts_with_the_reason() {
    let world = World::new().await;
    world.configure().await;
    world.completed_request().await;
    let owner = world.acting(&world.owner, false);
    publish::publish(&world.db, owner, &world.book.id)
        .await
        .expect("queued");
    let policy = LibraryPolicy {
        max_attempts: 3,
        schedule: crate::webhooks::RetrySchedule {
            first: Duration::from_millis(200),
            longest: Duration::from_millis(300),
        },
    };
    let results = ResultStore {
        blobs: Arc::new(InMemory::new()),
        retention_days: 30,
        epub: Default::default(),
    };
    let dispatcher = LibraryDispatcher::new(
        world.db.clone(),
        Arc::new(LocalCoordination::new()),
        results,
        policy,
    );
    let (_stop, stopping) = watch::channel(false);

    dispatcher.tick(&stopping).await.expect("first round");
    let first = publish::status(&world.db, owner, &world.book.id)
        .await
        .expect("status");
    assert_eq!(
        (first.status, first.attempts),
        (PublicationStatus::Pending, 1)
    );
    let reason = first.last_error.expect("a reason");
    assert!(reason.contains("EPUB could not be produced"), "{reason}");

    dispatcher.tick(&stopping).await.expect("too early");
    let waiting = publish::status(&world.db, owner, &world.book.id)
        .await
        .expect("status");
    assert_eq!(waiting.attempts, 1, "not due yet: not tried");

    for _ in 0..2 {
        tokio::time::sleep(Duration::from_millis(350)).await;
        dispatcher.tick(&stopping).await.expect("round");
    }
    let failed = publish::status(&world.db, owner, &world.book.id)
        .await
        .expect("status");
    assert_eq!(
        (failed.status, failed.attempts),
        (PublicationStatus::Failed, 3)
    );
    assert!(failed.last_error.is_some() && failed.path.is_none());
    let written: Vec<_> = std::fs::read_dir(world.library.path())
        .expect("list")
        .collect();
    assert!(written.is_empty(), "nothing half-written is left");

    // Asking again starts over.
    let again = publish::publish(&world.db, owner, &world.book.id)
        .await
        .expect("queued again");
    assert_eq!(
        (again.status, again.attempts, again.last_error),
        (PublicationStatus::Pending, 0, None)
    );
}

#[tokio::test]
async fn without_a_folder_pending_publications_wait_untouched() {
    let world = World::new().await;
    world.configure().await;
    world.completed_request().await;
    let owner = world.acting(&world.owner, false);
    publish::publish(&world.db, owner, &world.book.id)
        .await
        .expect("queued");
    settings::clear(&world.db).await.expect("cleared");
    let results = ResultStore {
        blobs: Arc::new(InMemory::new()),
        retention_days: 30,
        epub: Default::default(),
    };
    let dispatcher = LibraryDispatcher::new(
        world.db.clone(),
        Arc::new(LocalCoordination::new()),
        results,
        LibraryPolicy::default(),
    );
    let (_stop, stopping) = watch::channel(false);
    assert_eq!(dispatcher.tick(&stopping).await.expect("round"), None);
    let waiting = publish::status(&world.db, owner, &world.book.id)
        .await
        .expect("status");
    assert_eq!(
        (waiting.status, waiting.attempts),
        (PublicationStatus::Pending, 0)
    );
}
