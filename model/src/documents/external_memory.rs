//! The external memory's documents (spec 1, 4.9): the installation's sync
//! status, the cleanup settings and records, the orphan scans and their
//! schedule, and one volume's or series' mirror and the actions on it.
//!
//! Every object's fields are declared in the order of their names: these
//! documents were first written as JSON maps, which sort their keys, and a
//! client sees the same bytes as before.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// What a mirrored scope is: a volume (`project`) or a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MemoryScopeKind {
    Project,
    Series,
}

/// A volume or series whose remote items are mirrored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MemoryScope {
    pub id: String,
    pub kind: MemoryScopeKind,
}

/// The outbox of changes waiting to be written to the external memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OutboxState {
    /// Unsynced rows whose last attempt failed.
    pub failed: u64,
    /// Seconds since the oldest unsynced change (0 when none waits).
    pub lag_seconds: i64,
    pub last_error: Option<String>,
    pub last_synced_at: Option<i64>,
    pub oldest_pending_at: Option<i64>,
    /// Unsynced rows.
    pub pending: u64,
}

/// Cleanup records by state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CleanupCounts {
    pub done: u64,
    pub failed: u64,
    pub pending: u64,
    pub retired: u64,
}

/// The embedding model in force.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct EmbeddingModel {
    pub dimension: u64,
    pub model: String,
}

/// The installation's sync state with an external memory configured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RemoteMemoryStatus {
    pub cleanups: CleanupCounts,
    /// The collection in force; null when the embeddings endpoint did not
    /// answer.
    pub collection: Option<String>,
    /// Always true.
    pub configured: bool,
    pub database: String,
    pub embedding: Option<EmbeddingModel>,
    /// Without user, password or query.
    pub embeddings_url: String,
    pub lag_seconds: i64,
    pub last_error: Option<String>,
    pub last_sync_at: Option<i64>,
    pub mirrored_items: u64,
    pub outbox: OutboxState,
    /// Whether Chroma answered its heartbeat.
    pub reachable: bool,
    pub tenant: String,
    /// Without user, password or query.
    pub url: String,
}

/// The installation's sync state without an external memory: the outbox
/// fills whatever the configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct LocalMemoryStatus {
    pub cleanups: CleanupCounts,
    /// Always false.
    pub configured: bool,
    pub outbox: OutboxState,
}

/// `GET /api/settings/memory/status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum ExternalMemoryStatus {
    Configured(Box<RemoteMemoryStatus>),
    Unconfigured(LocalMemoryStatus),
}

/// `POST /api/settings/memory/outbox/retry`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OutboxRetried {
    /// Failed rows made due now.
    pub retried: u64,
}

/// The cleanup settings in force.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CleanupSettingsView {
    pub enabled: bool,
    pub max_attempts: i32,
    /// Whether the administrator's settings apply (else the defaults).
    pub overridden: bool,
    pub retain_days: i64,
}

/// A change of the cleanup settings: the fields given change. Integers
/// are taken whatever their sign or size within `i64`: their range is the
/// memory service's to judge.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CleanupSettingsChanges {
    #[serde(
        default,
        deserialize_with = "crate::serde_fields::value_if_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub enabled: Option<bool>,
    #[serde(
        default,
        deserialize_with = "crate::serde_fields::value_if_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_attempts: Option<i64>,
    #[serde(
        default,
        deserialize_with = "crate::serde_fields::value_if_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub retain_days: Option<i64>,
}

/// Where a cleanup record stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CleanupStage {
    Pending,
    Done,
    Failed,
    Retired,
}

/// The remote items of a deleted volume or series, to remove.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CleanupRecord {
    pub attempts: i32,
    pub created_at: i64,
    pub finished_at: Option<i64>,
    pub id: String,
    pub label: String,
    pub last_error: Option<String>,
    pub next_attempt_at: Option<i64>,
    /// Remote items removed so far.
    pub removed: i64,
    pub scope: MemoryScope,
    pub state: CleanupStage,
}

/// `GET /api/settings/memory/cleanups`: newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CleanupList {
    pub cleanups: Vec<CleanupRecord>,
    pub counts: CleanupCounts,
}

/// Why a remote item has no local owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OrphanReason {
    /// Not a Dragoman id.
    UnknownId,
    ProjectGone,
    SeriesGone,
    ItemGone,
}

impl OrphanReason {
    pub fn as_str(self) -> &'static str {
        match self {
            OrphanReason::UnknownId => "unknown_id",
            OrphanReason::ProjectGone => "project_gone",
            OrphanReason::SeriesGone => "series_gone",
            OrphanReason::ItemGone => "item_gone",
        }
    }
}

/// One orphan of a scan's sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OrphanSample {
    pub collection: String,
    pub id: String,
    pub reason: OrphanReason,
}

/// An orphan scan (and, after a clean, what was removed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OrphanScan {
    pub at: i64,
    /// Orphans per reason (reasons found only).
    pub by_reason: BTreeMap<String, u64>,
    pub collections: Vec<String>,
    pub orphans: u64,
    /// Remote items removed; a clean's only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed: Option<u64>,
    pub sample: Vec<OrphanSample>,
    pub scanned: u64,
}

/// The last scheduled or asked run: a scan, or why it failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum OrphanRun {
    Scanned(OrphanScan),
    Failed { error: String },
}

/// `GET /api/settings/memory/orphans/schedule`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OrphanScheduleView {
    pub clean: bool,
    pub enabled: bool,
    pub interval_hours: i64,
    pub last_run_at: Option<i64>,
    pub last_scan: Option<OrphanRun>,
    pub next_run_at: Option<i64>,
}

/// A change of the orphan schedule: the fields given change.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OrphanScheduleChanges {
    #[serde(
        default,
        deserialize_with = "crate::serde_fields::value_if_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub clean: Option<bool>,
    #[serde(
        default,
        deserialize_with = "crate::serde_fields::value_if_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub enabled: Option<bool>,
    #[serde(
        default,
        deserialize_with = "crate::serde_fields::value_if_present",
        skip_serializing_if = "Option::is_none"
    )]
    pub interval_hours: Option<i64>,
}

/// A scope's items, local and mirrored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ScopeItems {
    /// Local items per kind (kinds present only).
    pub by_kind: BTreeMap<String, u64>,
    pub local: u64,
    pub mirrored: u64,
    pub to_delete: u64,
    pub to_write: u64,
    pub unchanged: u64,
}

/// A scope's waiting outbox rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ScopeOutbox {
    pub failed: u64,
    pub last_error: Option<String>,
    pub next_attempt_at: Option<i64>,
    pub pending: u64,
}

/// A scope's mirror with an external memory configured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MirroredScopeStatus {
    /// The collection in force; null when the embeddings endpoint did not
    /// answer.
    pub collection: Option<String>,
    /// Always true.
    pub configured: bool,
    pub in_sync: bool,
    pub items: ScopeItems,
    pub last_synced_at: Option<i64>,
    pub outbox: ScopeOutbox,
    pub scope: MemoryScope,
}

/// A scope without an external memory: there is no mirror.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UnmirroredScopeStatus {
    /// Always false.
    pub configured: bool,
    pub scope: MemoryScope,
}

/// `GET /api/series/{id}/memory`, `GET /api/projects/{id}/memory/status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum MemoryScopeStatus {
    Mirrored(MirroredScopeStatus),
    Unmirrored(UnmirroredScopeStatus),
}

/// An action on one scope's mirror.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MemoryScopeAction {
    /// Writes what changed (`resync`, `synchronize`).
    Synchronize,
    /// Deletes the scope's remote items and writes them all again.
    Rebuild,
    /// Embeds every item again with the model in force.
    Reindex,
    /// Compares the remote items with the database; writes nothing.
    Check,
}

/// Ids of a check's drift, a few per kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DriftSample {
    pub extra: Vec<String>,
    pub missing: Vec<String>,
    pub stale: Vec<String>,
}

/// What an action on a scope did. `synchronize` answers `queued`;
/// `rebuild` also `removed`; `reindex` also `items` (mirror rows dropped);
/// `check` answers the comparison (`collection` to `stale`) and writes
/// nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MemoryScopeOutcome {
    pub action: MemoryScopeAction,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collection: Option<String>,
    /// In the collection, not wanted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_sync: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<u64>,
    /// Wanted, not in the collection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<DriftSample>,
    pub scope: MemoryScope,
    /// In the collection with another revision or schema version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale: Option<u64>,
}
