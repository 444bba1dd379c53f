//! The mirror against a real Chroma (`chroma run`, from PyPI `chromadb`,
//! through the test harness `dragoman_testing::Chroma`) and the provider
//! simulator's embeddings: what a sync writes, that replaying writes
//! nothing, that a Chroma killed mid-sync loses and duplicates nothing,
//! that a wiped collection is found by a check and repaired by a rebuild,
//! that a deleted volume's items are removed, that orphans are found and
//! cleaned, and that a change of model moves everything to a new
//! collection.
//!
//! Skipped with a note when no `chroma` executable is found, except under
//! `CI=true`, where the harness fails the test.

use crate::external::chroma::{Collection, Record, testkit};
use crate::external::items::testing::{Books, sqlite};
use crate::external::items::{self, SCHEMA_VERSION};
use crate::external::maintenance::ScopeAction;
use crate::external::{ExternalMemory, ExternalSettings, MirrorScope};
use dragoman_model::entities::memory_cleanup::{self, CleanupState};
use dragoman_model::entities::{memory_mirror, memory_outbox, project};
use dragoman_simulator::{RunningSimulator, SimulatorConfig};
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

/// A document as the client reads it.
fn doc(document: impl serde::Serialize) -> Value {
    serde_json::to_value(document).expect("a document serialises")
}

/// A database with the fixture's books, a Chroma, the simulator and the
/// external memory over them.
struct Setup {
    db: DatabaseConnection,
    books: Books,
    chroma: dragoman_testing::Chroma,
    simulator: RunningSimulator,
    external: Arc<ExternalMemory>,
}

impl Setup {
    async fn start(test: &str) -> Option<Setup> {
        Setup::start_with(test, SimulatorConfig::default(), |_| {}).await
    }

    async fn start_with(
        test: &str,
        simulator: SimulatorConfig,
        adjust: impl FnOnce(&mut ExternalSettings),
    ) -> Option<Setup> {
        let chroma = dragoman_testing::Chroma::start_or_skip(test).await?;
        let simulator = testkit::simulator_with(simulator).await;
        let db = sqlite().await;
        let books = Books::new(&db).await;
        books.translate(&db, 0, "Bonjour.", true).await;
        books.translate(&db, 1, "Au revoir.", false).await;
        let mut settings = testkit::settings(&chroma.url(), &simulator.openai_base_url());
        adjust(&mut settings);
        let external = Arc::new(ExternalMemory::new(db.clone(), settings).expect("external"));
        Some(Setup {
            db,
            books,
            chroma,
            simulator,
            external,
        })
    }

    fn volume(&self) -> MirrorScope {
        MirrorScope::Project(self.books.volume.id.clone())
    }

    fn series(&self) -> MirrorScope {
        MirrorScope::Series(self.books.series.id.clone())
    }

    /// The collection of the model in force.
    async fn collection(&self) -> Collection {
        self.external
            .current_collection()
            .await
            .expect("collection")
            .1
    }

    /// Every remote item of the collection in force, by id.
    async fn remote(&self) -> Vec<(String, Map<String, Value>)> {
        let mut all = self
            .collection()
            .await
            .list(None, 10_000, 0)
            .await
            .expect("list");
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// The ids the database wants mirrored, both scopes.
    async fn wanted(&self) -> BTreeSet<String> {
        let mut ids = BTreeSet::new();
        for scope in [self.volume(), self.series()] {
            for item in items::desired(&self.db, &scope).await.expect("items") {
                ids.insert(item.id);
            }
        }
        ids
    }

    async fn unsynced(&self) -> u64 {
        memory_outbox::Entity::find()
            .filter(memory_outbox::Column::SyncedAt.is_null())
            .count(&self.db)
            .await
            .expect("count")
    }
}

/// A sync writes every wanted item with schema version 2 and its
/// revision, and marks the outbox; a replay writes nothing.
#[tokio::test]
async fn a_sync_mirrors_every_item_once_and_a_replay_writes_nothing() {
    let Some(setup) = Setup::start("mirror sync").await else {
        return;
    };
    // The triggers queued both scopes when the fixture was written.
    assert_eq!(setup.external.sync_pending().await.expect("sync"), 2);
    assert_eq!(setup.unsynced().await, 0);

    let remote = setup.remote().await;
    let ids: BTreeSet<String> = remote.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(ids, setup.wanted().await);
    // Two translated passages, the entity, the accepted book term, the Bible
    // line, the series entity, the series term; no proposal, no shared term,
    // no untranslated passage.
    assert_eq!(ids.len(), 7);
    let desired = items::desired(&setup.db, &setup.volume())
        .await
        .expect("items");
    for (id, metadata) in &remote {
        assert_eq!(metadata["schema_version"], json!(SCHEMA_VERSION), "{id}");
        if let Some(item) = desired.iter().find(|i| &i.id == id) {
            assert_eq!(metadata["revision"], json!(item.hash), "{id}");
        }
    }
    let passage = remote
        .iter()
        .find(|(id, _)| *id == format!("passage:{}", setup.books.passages[0].id))
        .expect("passage mirrored");
    assert_eq!(passage.1["translation"], json!("Bonjour."));
    assert_eq!(passage.1["validated"], json!(true));
    assert_eq!(passage.1["project_id"], json!(setup.books.volume.id));

    // Replaying the outbox: the same state, nothing embedded or written.
    let embedded = setup.simulator.stats().embeddings;
    setup
        .external
        .mark_changed(&setup.volume())
        .await
        .expect("mark");
    setup
        .external
        .mark_changed(&setup.series())
        .await
        .expect("mark");
    for scope in [setup.volume(), setup.series()] {
        let outcome = setup.external.sync_scope(&scope).await.expect("replay");
        assert_eq!((outcome.upserted, outcome.deleted), (0, 0), "{scope:?}");
    }
    assert_eq!(setup.external.sync_pending().await.expect("sync"), 2);
    assert_eq!(
        setup.simulator.stats().embeddings,
        embedded,
        "nothing embedded"
    );
    assert_eq!(setup.remote().await, remote, "nothing changed remotely");

    // A change writes that item only; a deleted term is deleted remotely.
    setup.books.translate(&setup.db, 1, "Adieu.", false).await;
    dragoman_model::entities::term::Entity::delete_by_id(setup.books.series_term.id.clone())
        .exec(&setup.db)
        .await
        .expect("delete term");
    let volume = setup
        .external
        .sync_scope(&setup.volume())
        .await
        .expect("sync");
    assert_eq!((volume.upserted, volume.deleted), (1, 0));
    let series = setup
        .external
        .sync_scope(&setup.series())
        .await
        .expect("sync");
    assert_eq!((series.upserted, series.deleted), (0, 1));
    let ids: BTreeSet<String> = setup.remote().await.into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, setup.wanted().await);
    assert_eq!(ids.len(), 6);

    let status = doc(setup.external.status().await.expect("status"));
    assert_eq!(status["reachable"], json!(true));
    assert_eq!(status["embedding"]["dimension"], json!(64));
    assert_eq!(
        status["collection"],
        json!("dragoman-text-embedding-3-small-64")
    );
    assert!(
        !status.to_string().contains("sk-test-secret"),
        "no secret in the status"
    );
}

/// Chroma killed in the middle of a sync: the outbox waits, nothing local
/// is undone, and once Chroma is back every item is there exactly once.
#[tokio::test]
async fn a_chroma_killed_mid_sync_loses_and_duplicates_nothing() {
    // One item per call, each embedding slowed down: the sync is still
    // writing when Chroma is killed.
    let config = SimulatorConfig {
        latency: Duration::from_millis(250),
        ..SimulatorConfig::default()
    };
    let Some(mut setup) = Setup::start_with("mirror killed", config, |settings| {
        settings.sync_batch = 1;
    })
    .await
    else {
        return;
    };
    let translations_before: Vec<Option<String>> = passages(&setup.db, &setup.books).await;
    let waiting = setup.unsynced().await;
    assert!(waiting > 2, "{waiting} rows to sync");
    let external = setup.external.clone();
    let sync = tokio::spawn(async move { external.sync_pending().await });
    // Chroma goes away once the sync has written some rows and not all.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while setup.unsynced().await == waiting {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the sync wrote nothing"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    setup.chroma.stop().await;
    let outcome = sync.await.expect("task");
    assert!(outcome.is_err(), "the sync failed with Chroma gone");

    // The rows wait with their error; the database is untouched.
    let status = doc(setup.external.status().await.expect("status"));
    assert_eq!(status["reachable"], json!(false));
    assert!(status["outbox"]["pending"].as_u64().unwrap_or(0) > 0);
    assert!(status["last_error"].is_string(), "{status}");
    assert_eq!(passages(&setup.db, &setup.books).await, translations_before);

    setup.chroma.restart().await;
    setup.external.retry_outbox().await.expect("retry");
    setup.external.sync_pending().await.expect("sync");
    assert_eq!(setup.unsynced().await, 0);
    let remote = setup.remote().await;
    let ids: Vec<String> = remote.iter().map(|(id, _)| id.clone()).collect();
    let wanted: Vec<String> = setup.wanted().await.into_iter().collect();
    assert_eq!(ids, wanted, "every item once");
    assert_eq!(setup.collection().await.count().await.expect("count"), 7);
    for scope in [setup.volume(), setup.series()] {
        let check = doc(setup
            .external
            .scope_action(&scope, ScopeAction::Check)
            .await
            .expect("check"));
        assert_eq!(check["in_sync"], json!(true), "{check}");
    }
}

async fn passages(db: &DatabaseConnection, books: &Books) -> Vec<Option<String>> {
    let mut found = Vec::new();
    for passage in &books.passages {
        found.push(
            dragoman_model::entities::passage::Entity::find_by_id(passage.id.clone())
                .one(db)
                .await
                .expect("passage")
                .and_then(|p| p.translation),
        );
    }
    found
}

/// A wiped collection: the check reports every item missing, a rebuild
/// writes them again.
#[tokio::test]
async fn a_wiped_collection_is_found_by_check_and_repaired_by_rebuild() {
    let Some(setup) = Setup::start("mirror wiped").await else {
        return;
    };
    setup.external.sync_pending().await.expect("sync");
    let name = setup.collection().await.name().to_owned();
    setup
        .external
        .store
        .delete_collection(&name)
        .await
        .expect("wipe");

    let check = doc(setup
        .external
        .scope_action(&setup.volume(), ScopeAction::Check)
        .await
        .expect("check"));
    assert_eq!(check["in_sync"], json!(false));
    assert_eq!(check["missing"], json!(5));
    assert_eq!(check["remote"], json!(0));
    // A sync alone trusts the mirror: the drift stays until a rebuild.
    setup
        .external
        .scope_action(&setup.volume(), ScopeAction::Synchronize)
        .await
        .expect("synchronize");
    setup.external.sync_pending().await.expect("sync");
    assert!(setup.remote().await.is_empty());

    let rebuilt = doc(setup
        .external
        .scope_action(&setup.volume(), ScopeAction::Rebuild)
        .await
        .expect("rebuild"));
    assert_eq!(rebuilt["queued"], json!(true));
    setup.external.sync_pending().await.expect("sync");
    let check = doc(setup
        .external
        .scope_action(&setup.volume(), ScopeAction::Check)
        .await
        .expect("check"));
    assert_eq!(check["in_sync"], json!(true), "{check}");
    assert_eq!(check["remote"], json!(5));

    // The series was wiped too; rebuilding it leaves its volume's items
    // (which name the series as well) alone.
    let rebuilt = doc(setup
        .external
        .scope_action(&setup.series(), ScopeAction::Rebuild)
        .await
        .expect("rebuild"));
    assert_eq!(rebuilt["removed"], json!(0));
    setup.external.sync_pending().await.expect("sync");
    for (scope, remote) in [(setup.series(), 2), (setup.volume(), 5)] {
        let check = doc(setup
            .external
            .scope_action(&scope, ScopeAction::Check)
            .await
            .expect("check"));
        assert_eq!(check["in_sync"], json!(true), "{check}");
        assert_eq!(check["remote"], json!(remote));
    }
    let rebuilt = doc(setup
        .external
        .scope_action(&setup.series(), ScopeAction::Rebuild)
        .await
        .expect("rebuild"));
    assert_eq!(rebuilt["removed"], json!(2), "the series' own items only");
    setup.external.sync_pending().await.expect("sync");
    assert_eq!(setup.remote().await.len(), 7);

    // A stale remote item (another revision) is found too, and a reindex
    // writes it again.
    let collection = setup.collection().await;
    let passage_id = format!("passage:{}", setup.books.passages[0].id);
    let mut metadata = collection
        .get(vec![passage_id.clone()])
        .await
        .expect("get")
        .remove(0)
        .1;
    metadata.insert("revision".into(), json!("old"));
    collection
        .upsert(vec![Record {
            id: passage_id.clone(),
            document: "Hello.".into(),
            embedding: vec![0.125; 64],
            metadata,
        }])
        .await
        .expect("upsert");
    let check = doc(setup
        .external
        .scope_action(&setup.volume(), ScopeAction::Check)
        .await
        .expect("check"));
    assert_eq!(check["stale"], json!(1));
    assert_eq!(check["sample"]["stale"], json!([passage_id]));
    let reindexed = doc(setup
        .external
        .scope_action(&setup.volume(), ScopeAction::Reindex)
        .await
        .expect("reindex"));
    assert_eq!(reindexed["items"], json!(5));
    setup.external.sync_pending().await.expect("sync");
    let check = doc(setup
        .external
        .scope_action(&setup.volume(), ScopeAction::Check)
        .await
        .expect("check"));
    assert_eq!(check["in_sync"], json!(true), "{check}");
    let status = doc(setup
        .external
        .scope_status(&setup.volume())
        .await
        .expect("status"));
    assert_eq!(status["in_sync"], json!(true), "{status}");
    assert_eq!(status["items"]["mirrored"], json!(5));
}

/// A deleted volume leaves a cleanup record; the loop removes its remote
/// items and mirror rows, and the record says how many.
#[tokio::test]
async fn a_deleted_volume_is_removed_remotely_by_its_cleanup() {
    let Some(setup) = Setup::start("mirror cleanup").await else {
        return;
    };
    setup.external.sync_pending().await.expect("sync");
    project::Entity::delete_by_id(setup.books.volume.id.clone())
        .exec(&setup.db)
        .await
        .expect("delete volume");
    let record = memory_cleanup::Entity::find()
        .one(&setup.db)
        .await
        .expect("cleanup")
        .expect("a record");
    assert_eq!(record.state, CleanupState::Pending);

    setup.external.work_cleanups().await.expect("cleanups");
    let record = memory_cleanup::Entity::find_by_id(record.id)
        .one(&setup.db)
        .await
        .expect("cleanup")
        .expect("a record");
    assert_eq!(record.state, CleanupState::Done);
    assert_eq!(record.removed, 5);
    let remote: Vec<String> = setup.remote().await.into_iter().map(|(id, _)| id).collect();
    assert_eq!(remote.len(), 2, "the series' items stay: {remote:?}");
    assert!(
        remote
            .iter()
            .all(|id| id.starts_with("series_entity:") || id.starts_with("term:"))
    );
    let left = memory_mirror::Entity::find()
        .filter(memory_mirror::Column::ProjectId.eq(setup.books.volume.id.as_str()))
        .count(&setup.db)
        .await
        .expect("mirror");
    assert_eq!(left, 0);
    let listed = doc(setup.external.cleanups().await.expect("list"));
    assert_eq!(listed["cleanups"][0]["state"], json!("done"));
    assert_eq!(listed["counts"]["done"], json!(1));
}

/// An item with no local owner is an orphan: found by a scan, removed by a
/// clean, and a second scan finds nothing.
#[tokio::test]
async fn orphans_are_found_and_cleaned() {
    let Some(setup) = Setup::start("mirror orphans").await else {
        return;
    };
    setup.external.sync_pending().await.expect("sync");
    let collection = setup.collection().await;
    let mut metadata = Map::new();
    for (key, value) in [
        ("schema_version", json!(2)),
        ("kind", json!("passage")),
        ("project_id", json!(setup.books.volume.id)),
        ("series_id", json!(setup.books.series.id)),
        ("revision", json!("r")),
    ] {
        metadata.insert(key.into(), value);
    }
    collection
        .upsert(vec![Record {
            id: "passage:ghost".into(),
            document: "A passage that never was.".into(),
            embedding: vec![0.125; 64],
            metadata,
        }])
        .await
        .expect("upsert");

    let scan = doc(setup.external.scan_orphans().await.expect("scan"));
    assert_eq!(scan["scanned"], json!(8));
    assert_eq!(scan["orphans"], json!(1));
    assert_eq!(scan["by_reason"], json!({"item_gone": 1}));
    assert_eq!(scan["sample"][0]["id"], json!("passage:ghost"));
    let schedule = doc(setup.external.orphan_schedule().await.expect("schedule"));
    assert_eq!(schedule["last_scan"]["orphans"], json!(1));
    assert_eq!(schedule["enabled"], json!(false));

    let cleaned = doc(setup.external.clean_orphans().await.expect("clean"));
    assert_eq!(cleaned["removed"], json!(1));
    let scan = doc(setup.external.scan_orphans().await.expect("scan"));
    assert_eq!(scan["orphans"], json!(0));
    assert_eq!(scan["scanned"], json!(7), "the mirrored items stay");
}

/// A new embedding model: every book is queued once, embedded again into
/// the new model's collection, and the old collection is deleted once
/// nothing points at it. Vectors of the two models never mix.
#[tokio::test]
async fn a_new_model_reindexes_into_its_own_collection() {
    let Some(setup) = Setup::start("mirror model change").await else {
        return;
    };
    assert_eq!(setup.external.backfill().await.expect("backfill"), 2);
    setup.external.sync_pending().await.expect("sync");
    let old = setup.collection().await.name().to_owned();
    assert_eq!(
        setup.external.backfill().await.expect("backfill"),
        0,
        "once"
    );

    let mut settings = testkit::settings(&setup.chroma.url(), &setup.simulator.openai_base_url());
    settings.embeddings.dimensions = Some(32);
    let renewed = ExternalMemory::new(setup.db.clone(), settings).expect("external");
    assert_eq!(renewed.backfill().await.expect("backfill"), 2);
    renewed.sync_pending().await.expect("sync");
    let (model, collection) = renewed.current_collection().await.expect("collection");
    assert_eq!(model.dimension, 32);
    assert_ne!(collection.name(), old);
    assert_eq!(collection.count().await.expect("count"), 7);
    let rows = memory_mirror::Entity::find()
        .all(&setup.db)
        .await
        .expect("mirror");
    assert!(rows.iter().all(|row| row.collection == collection.name()));

    let deleted = renewed.delete_unused_collections().await.expect("delete");
    assert_eq!(deleted, vec![old]);
    assert_eq!(
        renewed.store.collection_names().await.expect("names"),
        vec![collection.name().to_owned()]
    );
}

/// The loop itself: started with a stop signal, it drains the outbox
/// within a few seconds of a change and stops when asked.
#[tokio::test]
async fn the_sync_loop_drains_the_outbox_and_stops() {
    let Some(setup) = Setup::start("mirror loop").await else {
        return;
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let running = tokio::spawn(setup.external.clone().run_sync(stopped));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while setup.unsynced().await > 0 {
        assert!(tokio::time::Instant::now() < deadline, "the outbox drains");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    setup.books.translate(&setup.db, 2, "Encore.", false).await;
    let passage_id = format!("passage:{}", setup.books.passages[2].id);
    loop {
        let ids: Vec<String> = setup.remote().await.into_iter().map(|(id, _)| id).collect();
        if ids.contains(&passage_id) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the change arrives");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.send_replace(true);
    tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("stops when asked")
        .expect("task");
}
