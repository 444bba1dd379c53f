//! Cleanup records: the remote items of a deleted book or series, removed
//! by the sync loop and retried until done or retired by an administrator;
//! and the administrator's cleanup settings.
//!
//! A record is added by a trigger when a volume or a series is deleted
//! (its rows are gone with it, so the outbox cannot say what to remove).
//! The loop removes, in every Dragoman collection, the items whose
//! `project_id` (a volume) or `series_id` (a series: its own items and its
//! volumes') is the deleted one, and their mirror rows. A failure waits
//! like an outbox row (1 s doubling to 5 min); after `max_attempts` the
//! record is `failed` until an administrator retries it (due now, its
//! attempts counted again from zero) or retires it (its remote items stay;
//! an orphan scan finds them).
//!
//! Settings (`GET/PUT/DELETE /api/settings/memory/cleanup`, the settings
//! row `memory_cleanup`): `enabled` (default true; off, records wait as
//! `pending`), `max_attempts` (1 to 100, default 8), `retain_days` (1 to
//! 3650, default 30: `done` and `retired` records older are deleted).

use super::chroma::{Collection, Where};
use super::outbox::{backoff, truncate};
use super::{ExternalMemory, MirrorScope};
use crate::error::{MemoryError, MemoryResult};
use dragoman_model::clock;
use dragoman_model::documents::external_memory::{
    CleanupCounts, CleanupList, CleanupRecord, CleanupSettingsChanges, CleanupSettingsView,
    CleanupStage, MemoryScope, MemoryScopeKind,
};
use dragoman_model::entities::memory_cleanup::{self, CleanupState};
use dragoman_model::entities::memory_mirror;
use dragoman_model::entities::memory_outbox::ScopeKind;
use dragoman_model::entities::setting;
use dragoman_model::vocab::{Issue, IssueKind};
use rand::Rng;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, IntoActiveModel, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect, Set,
};
use serde::Serialize;
use serde_json::Value;

/// The settings row of the cleanup settings.
pub const SETTINGS_KEY: &str = "memory_cleanup";
/// Records worked per pass of the loop.
const RECORDS_PER_PASS: u64 = 20;
/// Records listed at most (newest first).
const LIST_LIMIT: u64 = 500;
/// Remote items listed per call while removing.
const PAGE: usize = 500;

/// The administrator's cleanup settings, as saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CleanupSettings {
    pub enabled: bool,
    pub max_attempts: i32,
    pub retain_days: i64,
}

impl Default for CleanupSettings {
    fn default() -> Self {
        CleanupSettings {
            enabled: true,
            max_attempts: 8,
            retain_days: 30,
        }
    }
}

impl CleanupSettings {
    fn view(self, overridden: bool) -> CleanupSettingsView {
        CleanupSettingsView {
            enabled: self.enabled,
            max_attempts: self.max_attempts,
            overridden,
            retain_days: self.retain_days,
        }
    }

    /// The settings with the fields given changed; a field left out keeps
    /// its value, a value out of range is refused with its location.
    pub fn changed(self, changes: &CleanupSettingsChanges) -> MemoryResult<CleanupSettings> {
        let mut next = self;
        let mut issues = Vec::new();
        if let Some(on) = changes.enabled {
            next.enabled = on;
        }
        if let Some(n) = changes.max_attempts {
            match within(n, 1, 100)
                .and_then(|n| i32::try_from(n).map_err(|_| IssueKind::OutOfRange))
            {
                Ok(n) => next.max_attempts = n,
                Err(kind) => issues.push(issue("max_attempts", kind)),
            }
        }
        if let Some(n) = changes.retain_days {
            match within(n, 1, 3650) {
                Ok(n) => next.retain_days = n,
                Err(kind) => issues.push(issue("retain_days", kind)),
            }
        }
        if issues.is_empty() {
            Ok(next)
        } else {
            Err(MemoryError::InvalidRequest(issues))
        }
    }

    /// The saved settings (fields not saved keep their defaults).
    fn from_saved(value: &Value) -> CleanupSettings {
        let defaults = CleanupSettings::default();
        CleanupSettings {
            enabled: value
                .get("enabled")
                .and_then(Value::as_bool)
                .unwrap_or(defaults.enabled),
            max_attempts: value
                .get("max_attempts")
                .and_then(Value::as_i64)
                .and_then(|n| i32::try_from(n).ok())
                .unwrap_or(defaults.max_attempts),
            retain_days: value
                .get("retain_days")
                .and_then(Value::as_i64)
                .unwrap_or(defaults.retain_days),
        }
    }
}

pub(crate) fn issue(field: &str, kind: IssueKind) -> Issue {
    Issue::at("body", field, kind)
}

/// An integer from `min` to `max`, or why not.
pub(crate) fn within(n: i64, min: i64, max: i64) -> Result<i64, IssueKind> {
    if (min..=max).contains(&n) {
        Ok(n)
    } else {
        Err(IssueKind::OutOfRange)
    }
}

/// The settings in force and whether an administrator saved them.
pub async fn load_settings(db: &impl ConnectionTrait) -> MemoryResult<(CleanupSettings, bool)> {
    Ok(
        match setting::Entity::find_by_id(SETTINGS_KEY.to_owned())
            .one(db)
            .await?
        {
            Some(row) => (CleanupSettings::from_saved(&row.value), true),
            None => (CleanupSettings::default(), false),
        },
    )
}

/// A record as administrators read it.
fn view(record: &memory_cleanup::Model) -> CleanupRecord {
    CleanupRecord {
        attempts: record.attempts,
        created_at: record.created_at,
        finished_at: record.finished_at,
        id: record.id.clone(),
        label: record.label.clone(),
        last_error: record.last_error.clone(),
        next_attempt_at: record.next_attempt_at,
        removed: record.removed,
        scope: MemoryScope {
            id: record.scope_id.clone(),
            kind: match record.scope_kind {
                ScopeKind::Project => MemoryScopeKind::Project,
                ScopeKind::Series => MemoryScopeKind::Series,
            },
        },
        state: match record.state {
            CleanupState::Pending => CleanupStage::Pending,
            CleanupState::Done => CleanupStage::Done,
            CleanupState::Failed => CleanupStage::Failed,
            CleanupState::Retired => CleanupStage::Retired,
        },
    }
}

/// The records by state, for the status.
pub async fn counts(db: &impl ConnectionTrait) -> MemoryResult<CleanupCounts> {
    let count = |state: CleanupState| {
        memory_cleanup::Entity::find()
            .filter(memory_cleanup::Column::State.eq(state))
            .count(db)
    };
    Ok(CleanupCounts {
        done: count(CleanupState::Done).await?,
        failed: count(CleanupState::Failed).await?,
        pending: count(CleanupState::Pending).await?,
        retired: count(CleanupState::Retired).await?,
    })
}

/// The Chroma filter of the remote items of a deleted scope: a volume's
/// items name it; a series' own items and its volumes' items name it.
fn owner_filter(kind: ScopeKind, id: &str) -> Where {
    match kind {
        ScopeKind::Project => Where::project(id),
        ScopeKind::Series => Where::series(id),
    }
}

/// Deletes from `collection` what `filter` matches; answers how many.
/// Lists before deleting so the count is known and a page at a time so a
/// large book never makes one huge call.
pub(crate) async fn delete_matching(
    collection: &Collection,
    filter: &Where,
) -> MemoryResult<usize> {
    let mut removed = 0;
    loop {
        let page = collection.list(Some(filter), PAGE, 0).await?;
        if page.is_empty() {
            return Ok(removed);
        }
        let ids: Vec<String> = page.into_iter().map(|(id, _)| id).collect();
        let n = ids.len();
        collection.delete_ids(ids).await?;
        removed += n;
        if n < PAGE {
            return Ok(removed);
        }
    }
}

impl ExternalMemory {
    /// Removes, in every Dragoman collection, the items `filter` matches;
    /// answers how many.
    pub(crate) async fn delete_everywhere(&self, filter: &Where) -> MemoryResult<usize> {
        let mut removed = 0;
        for name in self.store.collection_names().await? {
            if let Some(collection) = self.store.collection_named(&name).await? {
                removed += delete_matching(&collection, filter).await?;
            }
        }
        Ok(removed)
    }

    /// Works the due records (when the settings allow).
    pub(crate) async fn work_cleanups(&self) -> MemoryResult<()> {
        let (settings, _) = load_settings(&self.db).await?;
        if !settings.enabled {
            return Ok(());
        }
        let now = clock::now();
        let due = memory_cleanup::Entity::find()
            .filter(memory_cleanup::Column::State.eq(CleanupState::Pending))
            .filter(
                sea_orm::Condition::any()
                    .add(memory_cleanup::Column::NextAttemptAt.is_null())
                    .add(memory_cleanup::Column::NextAttemptAt.lte(now)),
            )
            .order_by_asc(memory_cleanup::Column::CreatedAt)
            .limit(RECORDS_PER_PASS)
            .all(&self.db)
            .await?;
        for record in due {
            self.work_cleanup(record, &settings).await?;
        }
        Ok(())
    }

    /// One attempt at one record.
    async fn work_cleanup(
        &self,
        record: memory_cleanup::Model,
        settings: &CleanupSettings,
    ) -> MemoryResult<()> {
        let filter = owner_filter(record.scope_kind, &record.scope_id);
        let attempt = self.delete_everywhere(&filter).await;
        let now = clock::now();
        let mut active = record.clone().into_active_model();
        match attempt {
            Ok(removed) => {
                let column = match record.scope_kind {
                    ScopeKind::Project => memory_mirror::Column::ProjectId,
                    ScopeKind::Series => memory_mirror::Column::SeriesId,
                };
                memory_mirror::Entity::delete_many()
                    .filter(column.eq(record.scope_id.as_str()))
                    .exec(&self.db)
                    .await?;
                active.state = Set(CleanupState::Done);
                active.removed = Set(record.removed + i64::try_from(removed).unwrap_or(i64::MAX));
                active.finished_at = Set(Some(now));
                active.next_attempt_at = Set(None);
                active.last_error = Set(None);
                tracing::info!(
                    scope = record.scope_kind.as_str(),
                    id = %record.scope_id,
                    removed,
                    "external memory cleanup done"
                );
            }
            Err(error) => {
                let attempts = record.attempts.saturating_add(1);
                active.attempts = Set(attempts);
                active.last_error = Set(Some(truncate(&error.to_string())));
                if attempts >= settings.max_attempts {
                    active.state = Set(CleanupState::Failed);
                    active.next_attempt_at = Set(None);
                } else {
                    let wait = backoff(
                        u32::try_from(attempts).unwrap_or(u32::MAX),
                        rand::thread_rng().r#gen::<f64>(),
                    );
                    let wait = i64::try_from(wait.as_secs()).unwrap_or(300).max(1);
                    active.next_attempt_at = Set(Some(now + wait));
                }
                tracing::warn!(
                    scope = record.scope_kind.as_str(),
                    id = %record.scope_id,
                    attempts,
                    error = %error,
                    "external memory cleanup failed"
                );
            }
        }
        active.update(&self.db).await?;
        Ok(())
    }

    /// Deletes the finished records older than the settings keep.
    pub(crate) async fn purge_cleanups(&self, now: i64) -> MemoryResult<u64> {
        let (settings, _) = load_settings(&self.db).await?;
        let before = now - settings.retain_days.saturating_mul(86_400);
        let purged = memory_cleanup::Entity::delete_many()
            .filter(
                memory_cleanup::Column::State.is_in([CleanupState::Done, CleanupState::Retired]),
            )
            .filter(memory_cleanup::Column::FinishedAt.lt(before))
            .exec(&self.db)
            .await?;
        Ok(purged.rows_affected)
    }

    /// The cleanup settings in force (`GET /api/settings/memory/cleanup`).
    pub async fn cleanup_settings(&self) -> MemoryResult<CleanupSettingsView> {
        let (settings, overridden) = load_settings(&self.db).await?;
        Ok(settings.view(overridden))
    }

    /// Changes the fields given; answers the settings in force.
    pub async fn put_cleanup_settings(
        &self,
        changes: &CleanupSettingsChanges,
    ) -> MemoryResult<CleanupSettingsView> {
        let (settings, _) = load_settings(&self.db).await?;
        let next = settings.changed(changes)?;
        setting::save(&self.db, SETTINGS_KEY, next).await?;
        super::sync::wake();
        Ok(next.view(true))
    }

    /// Drops the administrator's settings; answers the defaults.
    pub async fn reset_cleanup_settings(&self) -> MemoryResult<CleanupSettingsView> {
        setting::Entity::delete_by_id(SETTINGS_KEY.to_owned())
            .exec(&self.db)
            .await?;
        Ok(CleanupSettings::default().view(false))
    }

    /// The cleanup records, newest first.
    pub async fn cleanups(&self) -> MemoryResult<CleanupList> {
        let records = memory_cleanup::Entity::find()
            .order_by_desc(memory_cleanup::Column::CreatedAt)
            .order_by_desc(memory_cleanup::Column::Id)
            .limit(LIST_LIMIT)
            .all(&self.db)
            .await?;
        Ok(CleanupList {
            cleanups: records.iter().map(view).collect(),
            counts: counts(&self.db).await?,
        })
    }

    async fn record(&self, id: &str) -> MemoryResult<memory_cleanup::Model> {
        memory_cleanup::Entity::find_by_id(id.to_owned())
            .one(&self.db)
            .await?
            .ok_or(MemoryError::CleanupNotFound)
    }

    /// Makes a failed or pending record due now; answers it.
    pub async fn retry_cleanup(&self, id: &str) -> MemoryResult<CleanupRecord> {
        let record = self.record(id).await?;
        if matches!(record.state, CleanupState::Done) {
            // Nothing left to remove: the record answers as it is.
            return Ok(view(&record));
        }
        // A retired record is taken up again too: the administrator
        // changed their mind, and removing is always safe.
        let mut active = record.into_active_model();
        active.state = Set(CleanupState::Pending);
        active.attempts = Set(0);
        active.next_attempt_at = Set(None);
        active.finished_at = Set(None);
        let record = active.update(&self.db).await?;
        super::sync::wake();
        Ok(view(&record))
    }

    /// Gives a record up (its remote items stay); answers it.
    pub async fn retire_cleanup(&self, id: &str) -> MemoryResult<CleanupRecord> {
        let record = self.record(id).await?;
        if matches!(record.state, CleanupState::Done | CleanupState::Retired) {
            return Ok(view(&record));
        }
        let mut active = record.into_active_model();
        active.state = Set(CleanupState::Retired);
        active.next_attempt_at = Set(None);
        active.finished_at = Set(Some(clock::now()));
        Ok(view(&active.update(&self.db).await?))
    }

    /// Removes the remote items of `scope` in every collection, and its
    /// mirror rows (a rebuild). A series' own items only: its volumes
    /// have scopes of their own.
    pub(crate) async fn remove_scope_remote(&self, scope: &MirrorScope) -> MemoryResult<usize> {
        let filter = super::maintenance::scope_filter(scope);
        let removed = self.delete_everywhere(&filter).await?;
        memory_mirror::Entity::delete_many()
            .filter(memory_mirror::Column::ScopeKind.eq(super::outbox::kind_of(scope)))
            .filter(memory_mirror::Column::ScopeId.eq(scope.id()))
            .exec(&self.db)
            .await?;
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_change_field_by_field_and_refuse_bad_values() {
        let defaults = CleanupSettings::default();
        assert_eq!(
            serde_json::to_value(defaults.view(false)).expect("json"),
            json!({"enabled": true, "max_attempts": 8, "retain_days": 30, "overridden": false})
        );
        let changed = defaults
            .changed(&CleanupSettingsChanges {
                max_attempts: Some(3),
                ..Default::default()
            })
            .expect("valid");
        assert_eq!(
            changed,
            CleanupSettings {
                max_attempts: 3,
                ..defaults
            }
        );
        let refused = defaults
            .changed(&CleanupSettingsChanges {
                enabled: Some(false),
                max_attempts: Some(0),
                retain_days: Some(i64::MAX),
            })
            .expect_err("invalid");
        let MemoryError::InvalidRequest(issues) = refused else {
            panic!("not an invalid request");
        };
        let kinds: Vec<(String, IssueKind)> = issues
            .iter()
            .map(|i| (i.loc[1].as_str().unwrap_or_default().to_owned(), i.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("max_attempts".into(), IssueKind::OutOfRange),
                ("retain_days".into(), IssueKind::OutOfRange)
            ]
        );
    }

    #[test]
    fn a_deleted_series_takes_its_volumes_items_too() {
        assert_eq!(
            serde_json::to_value(owner_filter(ScopeKind::Series, "s")).expect("json"),
            json!({"series_id": "s"})
        );
        assert_eq!(
            serde_json::to_value(owner_filter(ScopeKind::Project, "p")).expect("json"),
            json!({"project_id": "p"})
        );
    }
}
