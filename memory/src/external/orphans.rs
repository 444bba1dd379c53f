//! Orphans: remote items whose book, series or item no longer exists
//! locally; found by a scan, removed by a clean, on a schedule or asked.
//!
//! A scan reads every item of every Dragoman collection (ids and metadata
//! only, a page at a time) and classes as orphans the items whose id is not
//! one of Dragoman's (`<kind>:<local id>`), whose volume (`project_id`) or,
//! for series items, whose series no longer exists, or whose own row
//! (passage, entity, term, Bible line) is gone. Items that exist locally
//! but are stale are not orphans: a sync or a rebuild handles them. The
//! installation is assumed to own the Chroma database it is given.
//!
//! The schedule (`GET/PUT /api/settings/memory/orphans/schedule`, the
//! settings row `memory_orphan_schedule`): `enabled` (default false),
//! `interval_hours` (1 to 8760, default 24), `clean` (default false: a
//! scheduled run only scans; true: it removes what it found). The last run
//! is kept in the settings row `memory_orphans_last`.

use super::ExternalMemory;
use super::cleanup::{issue, within};
use super::items::{ItemKind, parse_item_id};
use crate::error::{MemoryError, MemoryResult};
use dragoman_model::clock;
use dragoman_model::documents::external_memory::{
    OrphanRun, OrphanSample, OrphanScan, OrphanScheduleChanges, OrphanScheduleView,
};
use dragoman_model::entities::{
    bible_line, memory_mirror, narrative_entity, passage, project, series, series_entity, setting,
    term,
};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashSet};

/// The settings row of the schedule.
pub const SCHEDULE_KEY: &str = "memory_orphan_schedule";
/// The settings row of the last run.
pub const LAST_KEY: &str = "memory_orphans_last";
/// Items read per call.
const PAGE: usize = 1000;
/// Orphan ids shown in a scan's answer.
const SAMPLE: usize = 20;
/// Ids per `IN (…)` when checking what exists locally.
const CHUNK: usize = 500;

/// Why an item is an orphan.
pub use dragoman_model::documents::external_memory::OrphanReason;

/// One remote item as the scan reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteItem {
    pub collection: String,
    pub id: String,
    pub project_id: Option<String>,
    pub series_id: Option<String>,
}

impl RemoteItem {
    fn new(collection: &str, id: String, metadata: &Map<String, Value>) -> RemoteItem {
        let field = |name: &str| {
            metadata
                .get(name)
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        RemoteItem {
            collection: collection.to_owned(),
            project_id: field("project_id"),
            series_id: field("series_id"),
            id,
        }
    }
}

/// What exists locally among the owners and items the remote items name.
#[derive(Debug, Default)]
pub struct Local {
    pub projects: HashSet<String>,
    pub series: HashSet<String>,
    /// Remote ids (`<kind>:<local id>`) whose row exists.
    pub items: HashSet<String>,
}

/// Why `item` is an orphan, when it is one.
pub fn orphan_reason(item: &RemoteItem, local: &Local) -> Option<OrphanReason> {
    if parse_item_id(&item.id).is_none() {
        return Some(OrphanReason::UnknownId);
    }
    match (&item.project_id, &item.series_id) {
        (Some(project), _) if !local.projects.contains(project) => {
            return Some(OrphanReason::ProjectGone);
        }
        (None, Some(series)) if !local.series.contains(series) => {
            return Some(OrphanReason::SeriesGone);
        }
        _ => {}
    }
    (!local.items.contains(&item.id)).then_some(OrphanReason::ItemGone)
}

/// The ids among `ids` that exist in the table of `kind`.
async fn existing(
    db: &impl ConnectionTrait,
    kind: ItemKind,
    ids: Vec<String>,
) -> MemoryResult<Vec<String>> {
    Ok(match kind {
        ItemKind::Passage => {
            passage::Entity::find()
                .select_only()
                .column(passage::Column::Id)
                .filter(passage::Column::Id.is_in(ids))
                .into_tuple()
                .all(db)
                .await?
        }
        ItemKind::Entity => {
            narrative_entity::Entity::find()
                .select_only()
                .column(narrative_entity::Column::Id)
                .filter(narrative_entity::Column::Id.is_in(ids))
                .into_tuple()
                .all(db)
                .await?
        }
        ItemKind::SeriesEntity => {
            series_entity::Entity::find()
                .select_only()
                .column(series_entity::Column::Id)
                .filter(series_entity::Column::Id.is_in(ids))
                .into_tuple()
                .all(db)
                .await?
        }
        ItemKind::Term => {
            term::Entity::find()
                .select_only()
                .column(term::Column::Id)
                .filter(term::Column::Id.is_in(ids))
                .into_tuple()
                .all(db)
                .await?
        }
        ItemKind::BibleLine => {
            bible_line::Entity::find()
                .select_only()
                .column(bible_line::Column::Id)
                .filter(bible_line::Column::Id.is_in(ids))
                .into_tuple()
                .all(db)
                .await?
        }
    })
}

/// Reads what exists locally of what `items` name.
pub async fn local_of(db: &impl ConnectionTrait, items: &[RemoteItem]) -> MemoryResult<Local> {
    let mut local = Local::default();
    let projects: Vec<String> = items
        .iter()
        .filter_map(|i| i.project_id.clone())
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    for chunk in projects.chunks(CHUNK) {
        let found: Vec<String> = project::Entity::find()
            .select_only()
            .column(project::Column::Id)
            .filter(project::Column::Id.is_in(chunk.iter().cloned()))
            .into_tuple()
            .all(db)
            .await?;
        local.projects.extend(found);
    }
    let all_series: Vec<String> = items
        .iter()
        .filter_map(|i| i.series_id.clone())
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    for chunk in all_series.chunks(CHUNK) {
        let found: Vec<String> = series::Entity::find()
            .select_only()
            .column(series::Column::Id)
            .filter(series::Column::Id.is_in(chunk.iter().cloned()))
            .into_tuple()
            .all(db)
            .await?;
        local.series.extend(found);
    }
    let mut by_kind: BTreeMap<&'static str, (ItemKind, Vec<String>)> = BTreeMap::new();
    for item in items {
        if let Some((kind, id)) = parse_item_id(&item.id) {
            by_kind
                .entry(kind.as_str())
                .or_insert_with(|| (kind, Vec::new()))
                .1
                .push(id.to_owned());
        }
    }
    for (kind, ids) in by_kind.into_values() {
        for chunk in ids.chunks(CHUNK) {
            let found = existing(db, kind, chunk.to_vec()).await?;
            local
                .items
                .extend(found.into_iter().map(|id| kind.item_id(&id)));
        }
    }
    Ok(local)
}

/// A scan's orphans.
#[derive(Debug, Default)]
struct Scan {
    collections: Vec<String>,
    scanned: usize,
    orphans: Vec<(RemoteItem, OrphanReason)>,
}

impl Scan {
    fn document(&self, at: i64) -> OrphanScan {
        let mut by_reason = BTreeMap::new();
        for (_, reason) in &self.orphans {
            *by_reason.entry(reason.as_str().to_owned()).or_insert(0) += 1;
        }
        OrphanScan {
            at,
            by_reason,
            collections: self.collections.clone(),
            orphans: self.orphans.len() as u64,
            removed: None,
            sample: self
                .orphans
                .iter()
                .take(SAMPLE)
                .map(|(item, reason)| OrphanSample {
                    collection: item.collection.clone(),
                    id: item.id.clone(),
                    reason: *reason,
                })
                .collect(),
            scanned: self.scanned as u64,
        }
    }
}

/// The administrator's orphan schedule, as saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OrphanSchedule {
    pub clean: bool,
    pub enabled: bool,
    pub interval_hours: i64,
}

/// The last run, as saved for the schedule's answer.
#[derive(Serialize)]
struct LastRun<'a> {
    last_run_at: i64,
    last_scan: &'a OrphanRun,
}

impl Default for OrphanSchedule {
    fn default() -> Self {
        OrphanSchedule {
            enabled: false,
            interval_hours: 24,
            clean: false,
        }
    }
}

impl OrphanSchedule {
    fn from_saved(value: &Value) -> OrphanSchedule {
        let defaults = OrphanSchedule::default();
        OrphanSchedule {
            enabled: value
                .get("enabled")
                .and_then(Value::as_bool)
                .unwrap_or(defaults.enabled),
            interval_hours: value
                .get("interval_hours")
                .and_then(Value::as_i64)
                .unwrap_or(defaults.interval_hours),
            clean: value
                .get("clean")
                .and_then(Value::as_bool)
                .unwrap_or(defaults.clean),
        }
    }

    /// The schedule with the fields given changed.
    pub fn changed(self, changes: &OrphanScheduleChanges) -> MemoryResult<OrphanSchedule> {
        let mut next = self;
        if let Some(on) = changes.enabled {
            next.enabled = on;
        }
        if let Some(on) = changes.clean {
            next.clean = on;
        }
        if let Some(n) = changes.interval_hours {
            next.interval_hours = within(n, 1, 8760)
                .map_err(|kind| MemoryError::InvalidRequest(vec![issue("interval_hours", kind)]))?;
        }
        Ok(next)
    }

    /// When the next scheduled run is due, after a run at `last_run_at`.
    pub fn next_run_at(self, last_run_at: Option<i64>, now: i64) -> Option<i64> {
        self.enabled.then(|| match last_run_at {
            Some(at) => at + self.interval_hours.saturating_mul(3600),
            None => now,
        })
    }
}

async fn saved(db: &impl ConnectionTrait, key: &str) -> MemoryResult<Option<Value>> {
    Ok(setting::Entity::find_by_id(key.to_owned())
        .one(db)
        .await?
        .map(|row| row.value))
}

async fn load_schedule(db: &impl ConnectionTrait) -> MemoryResult<OrphanSchedule> {
    Ok(saved(db, SCHEDULE_KEY)
        .await?
        .map(|v| OrphanSchedule::from_saved(&v))
        .unwrap_or_default())
}

impl ExternalMemory {
    /// Reads every remote item and classes the orphans.
    async fn scan(&self) -> MemoryResult<Scan> {
        let mut scan = Scan::default();
        let mut remote = Vec::new();
        for name in self.store.collection_names().await? {
            let Some(collection) = self.store.collection_named(&name).await? else {
                continue;
            };
            let mut offset = 0;
            loop {
                let page = collection.list(None, PAGE, offset).await?;
                let n = page.len();
                remote.extend(
                    page.into_iter()
                        .map(|(id, metadata)| RemoteItem::new(&name, id, &metadata)),
                );
                if n < PAGE {
                    break;
                }
                offset += n;
            }
            scan.collections.push(name);
        }
        let local = local_of(&self.db, &remote).await?;
        scan.scanned = remote.len();
        scan.orphans = remote
            .into_iter()
            .filter_map(|item| orphan_reason(&item, &local).map(|reason| (item, reason)))
            .collect();
        Ok(scan)
    }

    /// Saves the last run for the schedule's answer.
    async fn remember(&self, result: &OrphanRun) -> MemoryResult<()> {
        setting::save(
            &self.db,
            LAST_KEY,
            LastRun {
                last_run_at: clock::now(),
                last_scan: result,
            },
        )
        .await?;
        Ok(())
    }

    /// Finds the orphans; answers the scan (counts and a sample of ids).
    pub async fn scan_orphans(&self) -> MemoryResult<OrphanScan> {
        let result = self.scan().await?.document(clock::now());
        self.remember(&OrphanRun::Scanned(result.clone())).await?;
        Ok(result)
    }

    /// Removes the orphans; answers what was removed.
    pub async fn clean_orphans(&self) -> MemoryResult<OrphanScan> {
        let scan = self.scan().await?;
        let mut by_collection: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (item, _) in &scan.orphans {
            by_collection
                .entry(item.collection.as_str())
                .or_default()
                .push(item.id.clone());
        }
        let mut removed = 0;
        for (name, ids) in by_collection {
            let Some(collection) = self.store.collection_named(name).await? else {
                continue;
            };
            for chunk in ids.chunks(super::sync::ID_CHUNK) {
                collection.delete_ids(chunk.to_vec()).await?;
                memory_mirror::Entity::delete_many()
                    .filter(memory_mirror::Column::ItemId.is_in(chunk.iter().cloned()))
                    .filter(memory_mirror::Column::Collection.eq(name))
                    .exec(&self.db)
                    .await?;
                removed += chunk.len();
            }
        }
        let result = OrphanScan {
            removed: Some(removed as u64),
            ..scan.document(clock::now())
        };
        self.remember(&OrphanRun::Scanned(result.clone())).await?;
        if removed > 0 {
            tracing::info!(removed, "external memory orphans removed");
        }
        Ok(result)
    }

    pub async fn orphan_schedule(&self) -> MemoryResult<OrphanScheduleView> {
        let schedule = load_schedule(&self.db).await?;
        let last = saved(&self.db, LAST_KEY).await?.unwrap_or(Value::Null);
        let last_run_at = last.get("last_run_at").and_then(Value::as_i64);
        // A run saved by an older build that no longer reads is shown as
        // none rather than refusing the schedule.
        let last_scan = last
            .get("last_scan")
            .and_then(|run| serde_json::from_value(run.clone()).ok());
        Ok(OrphanScheduleView {
            clean: schedule.clean,
            enabled: schedule.enabled,
            interval_hours: schedule.interval_hours,
            last_run_at,
            last_scan,
            next_run_at: schedule.next_run_at(last_run_at, clock::now()),
        })
    }

    pub async fn put_orphan_schedule(
        &self,
        changes: &OrphanScheduleChanges,
    ) -> MemoryResult<OrphanScheduleView> {
        let next = load_schedule(&self.db).await?.changed(changes)?;
        setting::save(&self.db, SCHEDULE_KEY, next).await?;
        super::sync::wake();
        self.orphan_schedule().await
    }

    /// Runs the scheduled scan (and clean) when it is due.
    pub(crate) async fn run_orphan_schedule(&self) -> MemoryResult<()> {
        let schedule = load_schedule(&self.db).await?;
        if !schedule.enabled {
            return Ok(());
        }
        let last_run_at = saved(&self.db, LAST_KEY)
            .await?
            .and_then(|v| v.get("last_run_at").and_then(Value::as_i64));
        let now = clock::now();
        if schedule
            .next_run_at(last_run_at, now)
            .is_none_or(|at| at > now)
        {
            return Ok(());
        }
        let outcome = if schedule.clean {
            self.clean_orphans().await
        } else {
            self.scan_orphans().await
        };
        if let Err(e) = outcome {
            // Counted as a run, so a Chroma that is down is not scanned
            // every second; the next run comes after the interval.
            self.remember(&OrphanRun::Failed {
                error: e.to_string(),
            })
            .await?;
            return Err(e);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(id: &str, project: Option<&str>, series: Option<&str>) -> RemoteItem {
        RemoteItem {
            collection: "c".into(),
            id: id.into(),
            project_id: project.map(str::to_owned),
            series_id: series.map(str::to_owned),
        }
    }

    #[test]
    fn orphans_are_items_without_a_local_owner_or_row() {
        let local = Local {
            projects: HashSet::from(["p".to_owned()]),
            series: HashSet::from(["s".to_owned()]),
            items: HashSet::from(["passage:1".to_owned(), "term:2".to_owned()]),
        };
        let reason = |item: &RemoteItem| orphan_reason(item, &local);
        assert_eq!(reason(&remote("passage:1", Some("p"), Some("s"))), None);
        assert_eq!(reason(&remote("term:2", None, Some("s"))), None);
        assert_eq!(
            reason(&remote("passage:1", Some("gone"), Some("s"))),
            Some(OrphanReason::ProjectGone)
        );
        assert_eq!(
            reason(&remote("term:2", None, Some("gone"))),
            Some(OrphanReason::SeriesGone)
        );
        assert_eq!(
            reason(&remote("passage:3", Some("p"), Some("s"))),
            Some(OrphanReason::ItemGone)
        );
        assert_eq!(
            reason(&remote("stranger", None, None)),
            Some(OrphanReason::UnknownId)
        );
    }

    #[test]
    fn the_schedule_changes_field_by_field() {
        let schedule = OrphanSchedule::default();
        assert_eq!(schedule.next_run_at(None, 100), None, "off by default");
        let on = schedule
            .changed(&OrphanScheduleChanges {
                enabled: Some(true),
                interval_hours: Some(2),
                ..Default::default()
            })
            .expect("valid");
        assert_eq!(on.next_run_at(None, 100), Some(100));
        assert_eq!(on.next_run_at(Some(100), 200), Some(100 + 7200));
        for hours in [0, 8761] {
            let change = OrphanScheduleChanges {
                interval_hours: Some(hours),
                ..Default::default()
            };
            assert!(schedule.changed(&change).is_err(), "{hours}");
        }
    }

    /// What exists locally is read from the database, per kind.
    #[tokio::test]
    async fn local_rows_are_found_by_kind() {
        use crate::external::items::testing::{Books, on_both};
        on_both(|db| async move {
            let books = Books::new(&db).await;
            let items = vec![
                remote(
                    &format!("passage:{}", books.passages[0].id),
                    Some(&books.volume.id),
                    Some(&books.series.id),
                ),
                remote(&format!("entity:{}", books.entity.id), Some("gone"), None),
                remote(
                    &format!("series_entity:{}", books.series_entity.id),
                    None,
                    Some(&books.series.id),
                ),
                remote("term:missing", None, Some(&books.series.id)),
            ];
            let local = local_of(&db, &items).await.expect("local");
            let reasons: Vec<Option<OrphanReason>> =
                items.iter().map(|i| orphan_reason(i, &local)).collect();
            assert_eq!(
                reasons,
                vec![
                    None,
                    Some(OrphanReason::ProjectGone),
                    None,
                    Some(OrphanReason::ItemGone)
                ]
            );
        })
        .await;
    }
}
