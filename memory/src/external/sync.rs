//! The sync loop of the memory role: drains the outbox scope by scope,
//! writes what changed to Chroma, retries with backoff, and removes the
//! remote items of deleted books and series.
//!
//! One pass over a scope: read its items as they are now
//! ([`items::desired`]), compare them with what `memory_mirror` says was
//! written ([`plan`]: same hash and same collection means unchanged), embed
//! and upsert the changed ones a batch at a time (each batch's mirror rows
//! are written as soon as Chroma took it, so a pass cut short resumes where
//! it stopped), then delete the remote items no longer wanted. Nothing
//! local is ever removed or undone when Chroma or the embeddings endpoint
//! fails: the outbox rows wait ([`outbox`] backoff) and the pass is tried
//! again.
//!
//! The loop wakes every second (changes come from other processes through
//! the triggers) and at once when this process asks ([`wake`]: a resync,
//! a retry). Besides the outbox it works the cleanup records, the orphan
//! schedule, and its housekeeping: the first sync of every book into a new
//! collection (a new installation, or a change of embedding model), the
//! deletion of Dragoman collections nothing points at any more, the purge
//! of old outbox rows and the gauges.

use super::chroma::{Collection, Record};
use super::embeddings::EmbeddingModel;
use super::items::{self, Item};
use super::outbox::{self, DueScope, kind_of};
use super::{ExternalMemory, MirrorScope};
use crate::error::{MemoryError, MemoryResult};
use dragoman_model::clock;
use dragoman_model::entities::memory_mirror;
use dragoman_model::entities::{project, series, setting};
use dragoman_model::telemetry::metrics;
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter, QuerySelect, Set,
};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, watch};

/// How often the loop looks at the outbox without being woken.
pub const POLL: Duration = Duration::from_secs(1);
/// Scopes taken per read of the outbox.
const SCOPES_PER_READ: u64 = 100;
/// How often the housekeeping runs (purge, gauges, old collections).
const HOUSEKEEPING_EVERY: Duration = Duration::from_secs(60);
/// How often the gauges are refreshed.
const GAUGES_EVERY: Duration = Duration::from_secs(5);
/// The settings row recording which collection every book was first
/// written to (see [`ExternalMemory::backfill`]).
pub const BACKFILL_KEY: &str = "memory_backfill";

/// The backfill done, as saved under [`BACKFILL_KEY`]: the collection it
/// filled and how many scopes it queued.
#[derive(Serialize)]
struct Backfill<'a> {
    collection: &'a str,
    scopes: usize,
}

/// Wakes the sync loop of this process. One process-wide signal: the loop
/// polls every second anyway, so a wake meant for another instance (tests
/// run several) costs one early look at the outbox.
static WAKE: Notify = Notify::const_new();

/// Asks the sync loop to look at the outbox now.
pub fn wake() {
    WAKE.notify_one();
}

/// What one pass over a scope wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncOutcome {
    pub upserted: usize,
    pub deleted: usize,
    pub unchanged: usize,
}

/// What a pass over a scope has to write, decided from the items as they
/// are and the mirror rows, without Chroma.
#[derive(Debug, Default, PartialEq)]
pub struct SyncPlan<'a> {
    /// Items new, changed, or written under another collection (model).
    pub upsert: Vec<&'a Item>,
    /// Remote ids to delete, by collection: items no longer wanted, and
    /// items that moved to the collection of the model in force.
    pub delete: BTreeMap<String, Vec<String>>,
    pub unchanged: usize,
}

/// The plan of a pass: `desired` against `mirrored` (the scope's mirror
/// rows), with `collection` the collection of the model in force.
pub fn plan<'a>(
    desired: &'a [Item],
    mirrored: &[memory_mirror::Model],
    collection: &str,
) -> SyncPlan<'a> {
    let by_id: HashMap<&str, &memory_mirror::Model> = mirrored
        .iter()
        .map(|row| (row.item_id.as_str(), row))
        .collect();
    let wanted: HashSet<&str> = desired.iter().map(|item| item.id.as_str()).collect();
    let mut plan = SyncPlan::default();
    for item in desired {
        match by_id.get(item.id.as_str()) {
            Some(row) if row.content_hash == item.hash && row.collection == collection => {
                plan.unchanged += 1;
            }
            _ => plan.upsert.push(item),
        }
    }
    for row in mirrored {
        if !wanted.contains(row.item_id.as_str()) || row.collection != collection {
            plan.delete
                .entry(row.collection.clone())
                .or_default()
                .push(row.item_id.clone());
        }
    }
    plan
}

/// Records `written` as mirrored in `collection` under `model`.
async fn record_mirrored(
    db: &impl ConnectionTrait,
    scope: &MirrorScope,
    written: &[&Item],
    model: &EmbeddingModel,
    collection: &str,
    now: i64,
) -> MemoryResult<()> {
    if written.is_empty() {
        return Ok(());
    }
    let rows = written.iter().map(|item| memory_mirror::ActiveModel {
        item_id: Set(item.id.clone()),
        scope_kind: Set(kind_of(scope)),
        scope_id: Set(scope.id().to_owned()),
        project_id: Set(item.project_id().map(str::to_owned)),
        series_id: Set(item.series_id().map(str::to_owned)),
        kind: Set(item.kind.as_str().to_owned()),
        content_hash: Set(item.hash.clone()),
        embedding_model: Set(model.name.clone()),
        collection: Set(collection.to_owned()),
        synced_at: Set(now),
    });
    memory_mirror::Entity::insert_many(rows)
        .on_conflict(
            OnConflict::column(memory_mirror::Column::ItemId)
                .update_columns([
                    memory_mirror::Column::ScopeKind,
                    memory_mirror::Column::ScopeId,
                    memory_mirror::Column::ProjectId,
                    memory_mirror::Column::SeriesId,
                    memory_mirror::Column::Kind,
                    memory_mirror::Column::ContentHash,
                    memory_mirror::Column::EmbeddingModel,
                    memory_mirror::Column::Collection,
                    memory_mirror::Column::SyncedAt,
                ])
                .to_owned(),
        )
        .exec(db)
        .await?;
    Ok(())
}

/// The mirror rows of `scope`.
pub(crate) async fn mirror_rows(
    db: &impl ConnectionTrait,
    scope: &MirrorScope,
) -> MemoryResult<Vec<memory_mirror::Model>> {
    Ok(memory_mirror::Entity::find()
        .filter(memory_mirror::Column::ScopeKind.eq(kind_of(scope)))
        .filter(memory_mirror::Column::ScopeId.eq(scope.id()))
        .all(db)
        .await?)
}

/// Most ids in one `IN (…)` or one Chroma delete.
pub(crate) const ID_CHUNK: usize = 500;

impl ExternalMemory {
    /// Runs until `stop` turns true: drains the outbox, the cleanups and
    /// the orphan schedule.
    pub async fn run_sync(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        tracing::info!(url = %self.settings.url, "external memory sync loop started");
        let mut backfilled = false;
        let mut last_housekeeping: Option<tokio::time::Instant> = None;
        let mut last_gauges: Option<tokio::time::Instant> = None;
        loop {
            if *stop.borrow() {
                break;
            }
            if !backfilled {
                match self.backfill().await {
                    Ok(queued) => {
                        backfilled = true;
                        if queued > 0 {
                            tracing::info!(
                                queued,
                                "external memory: every book queued for its first sync"
                            );
                        }
                    }
                    // Chroma or the embeddings endpoint not there yet:
                    // the outbox waits too, nothing is lost.
                    Err(e) => tracing::debug!(error = %e, "external memory not ready"),
                }
            }
            if backfilled {
                self.drain_outbox(&stop).await;
            }
            if let Err(e) = self.work_cleanups().await {
                tracing::warn!(error = %e, "external memory cleanups");
            }
            if let Err(e) = self.run_orphan_schedule().await {
                tracing::warn!(error = %e, "external memory orphan schedule");
            }
            let due = |last: Option<tokio::time::Instant>, every: Duration| {
                last.is_none_or(|at| at.elapsed() >= every)
            };
            if due(last_gauges, GAUGES_EVERY) {
                last_gauges = Some(tokio::time::Instant::now());
                if let Ok(counts) = outbox::counts(&self.db).await {
                    metrics::memory_outbox(counts.pending, counts.lag_seconds(clock::now()));
                }
            }
            if due(last_housekeeping, HOUSEKEEPING_EVERY) {
                last_housekeeping = Some(tokio::time::Instant::now());
                if let Err(e) = self.housekeeping().await {
                    tracing::warn!(error = %e, "external memory housekeeping");
                }
            }
            tokio::select! {
                changed = stop.changed() => {
                    // The sender gone: nobody can ask for a stop any more,
                    // and `changed` would answer at once forever.
                    if changed.is_err() {
                        break;
                    }
                }
                _ = WAKE.notified() => {}
                _ = tokio::time::sleep(POLL) => {}
            }
        }
        tracing::info!("external memory sync loop stopped");
    }

    /// One read of the due scopes, each synced and marked; a failure
    /// makes the scope wait and ends the read (Chroma or the embeddings
    /// endpoint failing for one scope most likely fails the next too;
    /// the next tick tries the next scope).
    async fn drain_outbox(&self, stop: &watch::Receiver<bool>) {
        let due = match outbox::due_scopes(&self.db, clock::now(), SCOPES_PER_READ).await {
            Ok(due) => due,
            Err(e) => {
                tracing::warn!(error = %e, "reading the memory outbox failed");
                return;
            }
        };
        for scope in due {
            if *stop.borrow() {
                return;
            }
            if let Err(e) = self.sync_due(&scope).await {
                tracing::warn!(
                    scope = scope.scope.kind(),
                    id = scope.scope.id(),
                    failures = scope.failures + 1,
                    error = %e,
                    "external memory sync failed; retried later"
                );
                return;
            }
        }
    }

    /// Syncs one due scope and marks its rows (synced, or failed).
    pub(crate) async fn sync_due(&self, due: &DueScope) -> MemoryResult<SyncOutcome> {
        match self.sync_scope(&due.scope).await {
            Ok(outcome) => {
                outbox::mark_synced(&self.db, &due.scope, due.last_id, clock::now()).await?;
                Ok(outcome)
            }
            Err(error) => {
                outbox::mark_failed(&self.db, due, clock::now(), &error.to_string()).await?;
                Err(error)
            }
        }
    }

    /// Drains every due scope now, failures included (for tests and for
    /// actions that want the result at once). Answers the scopes synced.
    pub async fn sync_pending(&self) -> MemoryResult<usize> {
        let mut synced = 0;
        loop {
            let due = outbox::due_scopes(&self.db, clock::now(), SCOPES_PER_READ).await?;
            if due.is_empty() {
                return Ok(synced);
            }
            for scope in &due {
                self.sync_due(scope).await?;
                synced += 1;
            }
        }
    }

    /// Writes `scope` to Chroma as it is now, against what the mirror
    /// says is there.
    pub async fn sync_scope(&self, scope: &MirrorScope) -> MemoryResult<SyncOutcome> {
        let model = self.embedder.model().await?;
        let collection = self.store.collection(&model).await?;
        let desired = items::desired(&self.db, scope).await?;
        let mirrored = mirror_rows(&self.db, scope).await?;
        let plan = plan(&desired, &mirrored, collection.name());
        let mut outcome = SyncOutcome {
            unchanged: plan.unchanged,
            ..SyncOutcome::default()
        };
        let batch = self.settings.sync_batch.max(1);
        for chunk in plan.upsert.chunks(batch) {
            self.write_batch(scope, chunk, &model, &collection).await?;
            outcome.upserted += chunk.len();
        }
        for (name, ids) in &plan.delete {
            outcome.deleted += self.delete_remote(name, &collection, ids).await?;
        }
        Ok(outcome)
    }

    /// Embeds and upserts one batch, then records it in the mirror.
    async fn write_batch(
        &self,
        scope: &MirrorScope,
        chunk: &[&Item],
        model: &EmbeddingModel,
        collection: &Collection,
    ) -> MemoryResult<()> {
        let texts: Vec<String> = chunk.iter().map(|item| item.text.clone()).collect();
        let vectors = self.embedder.embed(&texts).await?;
        if vectors.len() != chunk.len() {
            return Err(MemoryError::External(format!(
                "embeddings: {} vectors for {} texts",
                vectors.len(),
                chunk.len()
            )));
        }
        let records = chunk
            .iter()
            .zip(vectors)
            .map(|(item, embedding)| Record {
                id: item.id.clone(),
                document: item.text.clone(),
                embedding,
                metadata: item.metadata.clone(),
            })
            .collect();
        collection.upsert(records).await?;
        record_mirrored(
            &self.db,
            scope,
            chunk,
            model,
            collection.name(),
            clock::now(),
        )
        .await
    }

    /// Deletes `ids` from collection `name` (the one in force is
    /// `current`) and their mirror rows there; answers how many.
    async fn delete_remote(
        &self,
        name: &str,
        current: &Collection,
        ids: &[String],
    ) -> MemoryResult<usize> {
        let other;
        let target = if name == current.name() {
            Some(current)
        } else {
            // A collection already gone holds nothing to delete.
            other = self.store.collection_named(name).await?;
            other.as_ref()
        };
        for chunk in ids.chunks(ID_CHUNK) {
            if let Some(target) = target {
                target.delete_ids(chunk.to_vec()).await?;
            }
            // Only the row of that collection: an item that moved to the
            // collection in force keeps its new row.
            memory_mirror::Entity::delete_many()
                .filter(memory_mirror::Column::ItemId.is_in(chunk.iter().cloned()))
                .filter(memory_mirror::Column::Collection.eq(name))
                .exec(&self.db)
                .await?;
        }
        Ok(ids.len())
    }

    /// The collection of the model in force.
    pub(crate) async fn current_collection(&self) -> MemoryResult<(EmbeddingModel, Collection)> {
        let model = self.embedder.model().await?;
        let collection = self.store.collection(&model).await?;
        Ok((model, collection))
    }

    /// Queues every volume and series once per collection: the first time
    /// an installation mirrors (its books were written before), and after
    /// a change of embedding model (every item is embedded again into the
    /// new collection; the old one is deleted once nothing points at it).
    /// Answers the scopes queued.
    pub(crate) async fn backfill(&self) -> MemoryResult<usize> {
        let (_, collection) = self.current_collection().await?;
        let done = setting::Entity::find_by_id(BACKFILL_KEY.to_owned())
            .one(&self.db)
            .await?
            .and_then(|row| {
                row.value
                    .get("collection")
                    .and_then(|c| c.as_str())
                    .map(str::to_owned)
            });
        if done.as_deref() == Some(collection.name()) {
            return Ok(0);
        }
        let volumes: Vec<String> = project::Entity::find()
            .select_only()
            .column(project::Column::Id)
            .into_tuple()
            .all(&self.db)
            .await?;
        let all_series: Vec<String> = series::Entity::find()
            .select_only()
            .column(series::Column::Id)
            .into_tuple()
            .all(&self.db)
            .await?;
        let scopes: Vec<MirrorScope> = volumes
            .into_iter()
            .map(MirrorScope::Project)
            .chain(all_series.into_iter().map(MirrorScope::Series))
            .collect();
        for scope in &scopes {
            outbox::enqueue(&self.db, scope).await?;
        }
        setting::save(
            &self.db,
            BACKFILL_KEY,
            Backfill {
                collection: collection.name(),
                scopes: scopes.len(),
            },
        )
        .await?;
        Ok(scopes.len())
    }

    /// Purges old outbox rows and finished cleanups, refreshes nothing
    /// remote unless the outbox is drained: then deletes the Dragoman
    /// collections of other models that no mirror row points at.
    async fn housekeeping(&self) -> MemoryResult<()> {
        let now = clock::now();
        let keep = i64::try_from(outbox::KEEP_SYNCED.as_secs()).unwrap_or(i64::MAX);
        outbox::purge_synced(&self.db, now - keep).await?;
        self.purge_cleanups(now).await?;
        let pending = outbox::counts(&self.db).await?.pending;
        if pending == 0 {
            self.delete_unused_collections().await?;
        }
        Ok(())
    }

    /// Deletes the Dragoman collections other than the one in force that
    /// no mirror row points at (what a change of model leaves behind once
    /// every book is in the new one).
    pub(crate) async fn delete_unused_collections(&self) -> MemoryResult<Vec<String>> {
        let (_, current) = self.current_collection().await?;
        let mut deleted = Vec::new();
        for name in self.store.collection_names().await? {
            if name == current.name() {
                continue;
            }
            let used = memory_mirror::Entity::find()
                .filter(memory_mirror::Column::Collection.eq(name.as_str()))
                .count(&self.db)
                .await?;
            if used == 0 {
                self.store.delete_collection(&name).await?;
                tracing::info!(collection = %name, "unused external memory collection deleted");
                deleted.push(name);
            }
        }
        Ok(deleted)
    }
}

/// The mirror against a real Chroma and the simulator's embeddings.
#[cfg(test)]
#[path = "mirror_tests.rs"]
mod mirror_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::external::items::ItemKind;
    use dragoman_model::entities::memory_outbox::ScopeKind;
    use serde_json::Map;

    fn item(id: &str, hash: &str) -> Item {
        Item {
            id: format!("passage:{id}"),
            kind: ItemKind::Passage,
            text: id.to_owned(),
            metadata: Map::new(),
            hash: hash.to_owned(),
        }
    }

    fn row(id: &str, hash: &str, collection: &str) -> memory_mirror::Model {
        memory_mirror::Model {
            item_id: format!("passage:{id}"),
            scope_kind: ScopeKind::Project,
            scope_id: "p".into(),
            project_id: Some("p".into()),
            series_id: Some("s".into()),
            kind: "passage".into(),
            content_hash: hash.into(),
            embedding_model: "m".into(),
            collection: collection.into(),
            synced_at: 0,
        }
    }

    const NOW: &str = "dragoman-m-8";

    #[test]
    fn a_first_sync_writes_everything() {
        let desired = [item("a", "1"), item("b", "2")];
        let plan = plan(&desired, &[], NOW);
        assert_eq!(plan.upsert.len(), 2);
        assert!(plan.delete.is_empty());
        assert_eq!(plan.unchanged, 0);
    }

    #[test]
    fn a_replay_writes_nothing() {
        let desired = [item("a", "1"), item("b", "2")];
        let mirrored = [row("a", "1", NOW), row("b", "2", NOW)];
        let plan = plan(&desired, &mirrored, NOW);
        assert!(plan.upsert.is_empty());
        assert!(plan.delete.is_empty());
        assert_eq!(plan.unchanged, 2);
    }

    #[test]
    fn changed_items_are_written_and_gone_ones_deleted() {
        let desired = [item("a", "1"), item("b", "changed"), item("c", "3")];
        let mirrored = [row("a", "1", NOW), row("b", "2", NOW), row("d", "4", NOW)];
        let plan = plan(&desired, &mirrored, NOW);
        let upserted: Vec<&str> = plan.upsert.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(upserted, ["passage:b", "passage:c"]);
        assert_eq!(
            plan.delete,
            BTreeMap::from([(NOW.to_owned(), vec!["passage:d".to_owned()])])
        );
        assert_eq!(plan.unchanged, 1);
    }

    #[test]
    fn a_new_model_moves_every_item_to_its_collection() {
        let desired = [item("a", "1")];
        let mirrored = [
            row("a", "1", "dragoman-old-4"),
            row("z", "9", "dragoman-old-4"),
        ];
        let plan = plan(&desired, &mirrored, NOW);
        assert_eq!(plan.upsert.len(), 1, "re-embedded, not mixed");
        assert_eq!(
            plan.delete,
            BTreeMap::from([(
                "dragoman-old-4".to_owned(),
                vec!["passage:a".to_owned(), "passage:z".to_owned()]
            )])
        );
    }
}
