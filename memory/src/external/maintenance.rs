//! The external memory's state for administrators and owners: the
//! installation's sync status, and per volume or series its status and the
//! resync, rebuild, reindex and check actions.
//!
//! - `Synchronize` adds an outbox row: the loop writes what changed.
//! - `Rebuild` deletes the scope's remote items (in every collection) and
//!   its mirror rows, then adds an outbox row: everything is written again.
//!   It repairs any drift, a wiped collection included.
//! - `Reindex` drops the scope's mirror rows and adds an outbox row: every
//!   item is embedded again with the model in force and upserted over the
//!   same ids.
//! - `Check` compares the items the database wants with those in the
//!   collection in force (missing, stale revision or schema, extra) and
//!   writes nothing.
//!
//! The actions answer at once; the loop does the writing within a second.

use super::chroma::{Collection, Where};
use super::items::{self, Item, SCHEMA_VERSION};
use super::outbox::{self, kind_of};
use super::sync::{mirror_rows, plan};
use super::{ExternalMemory, MirrorScope};
use crate::error::MemoryResult;
use dragoman_model::clock;
use dragoman_model::documents::external_memory::{
    DriftSample, EmbeddingModel, MemoryScopeOutcome, MirroredScopeStatus, RemoteMemoryStatus,
    ScopeItems, ScopeOutbox,
};
use dragoman_model::entities::{memory_mirror, memory_outbox};
use sea_orm::sea_query::{Expr, Func};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

/// How long the status waits for Chroma and the embeddings endpoint: it
/// is read by a person, and must answer when they are down.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// Ids shown per kind of drift.
const SAMPLE: usize = 20;
/// Remote items read per call during a check.
const PAGE: usize = 1000;

/// An action on one scope's mirror.
pub use dragoman_model::documents::external_memory::MemoryScopeAction as ScopeAction;

/// How the remote items of a scope differ from the database.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Drift {
    /// Wanted, not in the collection.
    pub missing: Vec<String>,
    /// In the collection with another revision or schema version.
    pub stale: Vec<String>,
    /// In the collection, not wanted.
    pub extra: Vec<String>,
}

impl Drift {
    pub fn in_sync(&self) -> bool {
        self.missing.is_empty() && self.stale.is_empty() && self.extra.is_empty()
    }
}

/// Compares `desired` with the `remote` items (id and metadata).
pub fn compare(desired: &[Item], remote: &[(String, Map<String, Value>)]) -> Drift {
    let remote_by_id: HashMap<&str, &Map<String, Value>> =
        remote.iter().map(|(id, m)| (id.as_str(), m)).collect();
    let wanted: HashSet<&str> = desired.iter().map(|i| i.id.as_str()).collect();
    let mut drift = Drift::default();
    for item in desired {
        match remote_by_id.get(item.id.as_str()) {
            None => drift.missing.push(item.id.clone()),
            Some(metadata) => {
                let revision = metadata.get("revision").and_then(Value::as_str);
                let version = metadata.get("schema_version").and_then(Value::as_i64);
                if revision != Some(item.hash.as_str()) || version != Some(SCHEMA_VERSION) {
                    drift.stale.push(item.id.clone());
                }
            }
        }
    }
    for (id, _) in remote {
        if !wanted.contains(id.as_str()) {
            drift.extra.push(id.clone());
        }
    }
    drift
}

/// The Chroma filter of a scope's own items: a volume's name it; a
/// series' name it and no volume (its volumes' items name it too). Chroma
/// takes one condition per object: two are joined by `$and`.
pub(crate) fn scope_filter(scope: &MirrorScope) -> Where {
    match scope {
        MirrorScope::Project(id) => Where::project(id.as_str()),
        MirrorScope::Series(id) => Where::and(vec![Where::series(id.as_str()), Where::project("")]),
    }
}

/// The URL without what it may carry of a secret (user, password, query).
fn shown_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => "(not a valid URL)".to_owned(),
    }
}

/// Every remote item of `collection` matching `filter`.
async fn list_all(
    collection: &Collection,
    filter: &Where,
) -> MemoryResult<Vec<(String, Map<String, Value>)>> {
    let mut all = Vec::new();
    let mut offset = 0;
    loop {
        let page = collection.list(Some(filter), PAGE, offset).await?;
        let n = page.len();
        all.extend(page);
        if n < PAGE {
            return Ok(all);
        }
        offset += n;
    }
}

impl ExternalMemory {
    /// `GET /api/settings/memory/status`.
    pub async fn status(&self) -> MemoryResult<RemoteMemoryStatus> {
        let now = clock::now();
        let reachable = matches!(
            tokio::time::timeout(PROBE_TIMEOUT, self.store.heartbeat()).await,
            Ok(Ok(()))
        );
        let (embedding, embedding_error) =
            match tokio::time::timeout(PROBE_TIMEOUT, self.embedder.model()).await {
                Ok(Ok(model)) => (Some(model), None),
                Ok(Err(e)) => (None, Some(e.to_string())),
                Err(_) => (None, Some("embeddings: no answer in time".to_owned())),
            };
        let counts = outbox::counts(&self.db).await?;
        let mirrored = memory_mirror::Entity::find().count(&self.db).await?;
        // Synced outbox rows are purged after a week: the mirror rows keep
        // when an item was last written.
        let last_written: Option<Option<i64>> = memory_mirror::Entity::find()
            .select_only()
            .column_as(
                Expr::expr(Func::max(Expr::col(memory_mirror::Column::SyncedAt))),
                "last",
            )
            .into_tuple()
            .one(&self.db)
            .await?;
        let last_sync_at = counts.last_synced_at.max(last_written.flatten());
        let cleanups = super::cleanup::counts(&self.db).await?;
        let last_cleanup_error = dragoman_model::entities::memory_cleanup::Entity::find()
            .filter(dragoman_model::entities::memory_cleanup::Column::LastError.is_not_null())
            .order_by_desc(dragoman_model::entities::memory_cleanup::Column::CreatedAt)
            .one(&self.db)
            .await?
            .and_then(|c| c.last_error);
        let last_error = counts
            .last_error
            .clone()
            .or(embedding_error.clone())
            .or(last_cleanup_error);
        Ok(RemoteMemoryStatus {
            cleanups,
            collection: embedding.as_ref().map(super::chroma::collection_name),
            configured: true,
            database: self.settings.database.clone(),
            embedding: embedding.as_ref().map(|m| EmbeddingModel {
                dimension: m.dimension as u64,
                model: m.name.clone(),
            }),
            embeddings_url: shown_url(&self.settings.embeddings.base_url),
            lag_seconds: counts.lag_seconds(now),
            last_error,
            last_sync_at,
            mirrored_items: mirrored,
            outbox: counts.state(now),
            reachable,
            tenant: self.settings.tenant.clone(),
            url: shown_url(&self.settings.url),
        })
    }

    /// `GET /api/series/{id}/memory`, `GET /api/projects/{id}/memory/status`.
    pub async fn scope_status(&self, scope: &MirrorScope) -> MemoryResult<MirroredScopeStatus> {
        let desired = items::desired(&self.db, scope).await?;
        let mirrored = mirror_rows(&self.db, scope).await?;
        // Without the embeddings endpoint the collection in force is not
        // known: compare with the collection the mirror rows name.
        let collection = match tokio::time::timeout(PROBE_TIMEOUT, self.embedder.model()).await {
            Ok(Ok(model)) => Some(super::chroma::collection_name(&model)),
            _ => None,
        };
        let assumed = collection
            .clone()
            .or_else(|| mirrored.first().map(|row| row.collection.clone()))
            .unwrap_or_default();
        let plan = plan(&desired, &mirrored, &assumed);
        let rows = || {
            memory_outbox::Entity::find()
                .filter(memory_outbox::Column::ScopeKind.eq(kind_of(scope)))
                .filter(memory_outbox::Column::ScopeId.eq(scope.id()))
                .filter(memory_outbox::Column::SyncedAt.is_null())
        };
        let pending = rows().count(&self.db).await?;
        let failed = rows()
            .filter(memory_outbox::Column::Attempts.gt(0))
            .count(&self.db)
            .await?;
        let last_error = rows()
            .filter(memory_outbox::Column::LastError.is_not_null())
            .order_by_desc(memory_outbox::Column::Id)
            .one(&self.db)
            .await?
            .and_then(|r| r.last_error);
        let next_attempt_at: Option<Option<i64>> = rows()
            .select_only()
            .column_as(
                Expr::expr(Func::max(Expr::col(memory_outbox::Column::NextAttemptAt))),
                "next",
            )
            .into_tuple()
            .one(&self.db)
            .await?;
        let mut by_kind = BTreeMap::new();
        for item in &desired {
            *by_kind.entry(item.kind.as_str().to_owned()).or_insert(0) += 1;
        }
        let to_write = plan.upsert.len();
        let to_delete: usize = plan.delete.values().map(Vec::len).sum();
        Ok(MirroredScopeStatus {
            collection,
            configured: true,
            in_sync: to_write == 0 && to_delete == 0 && pending == 0,
            items: ScopeItems {
                by_kind,
                local: desired.len() as u64,
                mirrored: mirrored.len() as u64,
                to_delete: to_delete as u64,
                to_write: to_write as u64,
                unchanged: plan.unchanged as u64,
            },
            last_synced_at: mirrored.iter().map(|row| row.synced_at).max(),
            outbox: ScopeOutbox {
                failed,
                last_error,
                next_attempt_at: next_attempt_at.flatten(),
                pending,
            },
            scope: scope.document(),
        })
    }

    pub async fn scope_action(
        &self,
        scope: &MirrorScope,
        action: ScopeAction,
    ) -> MemoryResult<MemoryScopeOutcome> {
        let outcome = MemoryScopeOutcome {
            action,
            collection: None,
            extra: None,
            in_sync: None,
            items: None,
            local: None,
            missing: None,
            queued: None,
            remote: None,
            removed: None,
            sample: None,
            scope: scope.document(),
            stale: None,
        };
        Ok(match action {
            ScopeAction::Synchronize => {
                self.mark_changed(scope).await?;
                MemoryScopeOutcome {
                    queued: Some(true),
                    ..outcome
                }
            }
            ScopeAction::Rebuild => {
                let removed = self.remove_scope_remote(scope).await?;
                self.mark_changed(scope).await?;
                MemoryScopeOutcome {
                    queued: Some(true),
                    removed: Some(removed as u64),
                    ..outcome
                }
            }
            ScopeAction::Reindex => {
                let dropped = memory_mirror::Entity::delete_many()
                    .filter(memory_mirror::Column::ScopeKind.eq(kind_of(scope)))
                    .filter(memory_mirror::Column::ScopeId.eq(scope.id()))
                    .exec(&self.db)
                    .await?
                    .rows_affected;
                self.mark_changed(scope).await?;
                MemoryScopeOutcome {
                    queued: Some(true),
                    items: Some(dropped),
                    ..outcome
                }
            }
            ScopeAction::Check => self.check(scope, outcome).await?,
        })
    }

    /// Compares the scope's wanted items with the collection in force.
    async fn check(
        &self,
        scope: &MirrorScope,
        outcome: MemoryScopeOutcome,
    ) -> MemoryResult<MemoryScopeOutcome> {
        let desired = items::desired(&self.db, scope).await?;
        let model = self.embedder.model().await?;
        // A check writes nothing: a missing collection is not created, it
        // means every item is missing.
        let remote = match self.store.existing_collection(&model).await? {
            Some(collection) => list_all(&collection, &scope_filter(scope)).await?,
            None => Vec::new(),
        };
        let drift = compare(&desired, &remote);
        let sample = |ids: &[String]| ids.iter().take(SAMPLE).cloned().collect::<Vec<_>>();
        Ok(MemoryScopeOutcome {
            collection: Some(super::chroma::collection_name(&model)),
            extra: Some(drift.extra.len() as u64),
            in_sync: Some(drift.in_sync()),
            local: Some(desired.len() as u64),
            missing: Some(drift.missing.len() as u64),
            remote: Some(remote.len() as u64),
            sample: Some(DriftSample {
                extra: sample(&drift.extra),
                missing: sample(&drift.missing),
                stale: sample(&drift.stale),
            }),
            stale: Some(drift.stale.len() as u64),
            ..outcome
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::external::items::ItemKind;
    use serde_json::json;

    fn item(id: &str, hash: &str) -> Item {
        Item {
            id: id.into(),
            kind: ItemKind::Passage,
            text: String::new(),
            metadata: Map::new(),
            hash: hash.into(),
        }
    }

    fn remote(id: &str, revision: &str, version: i64) -> (String, Map<String, Value>) {
        let Value::Object(metadata) = json!({"revision": revision, "schema_version": version})
        else {
            unreachable!("an object")
        };
        (id.into(), metadata)
    }

    #[test]
    fn a_check_names_missing_stale_and_extra_items() {
        let desired = [
            item("a", "1"),
            item("b", "2"),
            item("c", "3"),
            item("d", "4"),
        ];
        let remote = [
            remote("a", "1", 2),
            remote("b", "old", 2),
            remote("c", "3", 1),
            remote("z", "9", 2),
        ];
        let drift = compare(&desired, &remote);
        assert_eq!(drift.missing, ["d"]);
        assert_eq!(drift.stale, ["b", "c"]);
        assert_eq!(drift.extra, ["z"]);
        assert!(!drift.in_sync());
        assert!(compare(&desired[..1], &remote[..1]).in_sync());
    }

    #[test]
    fn a_series_filter_leaves_its_volumes_items_out() {
        assert_eq!(
            serde_json::to_value(scope_filter(&MirrorScope::Series("s".into()))).expect("json"),
            json!({"$and": [{"series_id": "s"}, {"project_id": ""}]})
        );
        assert_eq!(
            serde_json::to_value(scope_filter(&MirrorScope::Project("p".into()))).expect("json"),
            json!({"project_id": "p"})
        );
    }

    #[test]
    fn the_status_never_shows_credentials() {
        assert_eq!(
            shown_url("https://user:secret@chroma.example:8000/path?token=abc"),
            "https://chroma.example:8000/path"
        );
        assert_eq!(shown_url("not a url"), "(not a valid URL)");
    }
}
