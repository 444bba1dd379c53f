//! The external memory's documents and the messages of
//! `external_memory.proto` that carry them from the memory service to the
//! gateway.

use super::required;
use crate::v1;
use crate::wire::{WireEnum, WireError};
use dragoman_model::documents::external_memory::{
    CleanupCounts, CleanupList, CleanupRecord, CleanupSettingsChanges, CleanupSettingsView,
    CleanupStage, DriftSample, EmbeddingModel, ExternalMemoryStatus, LocalMemoryStatus,
    MemoryScope, MemoryScopeAction, MemoryScopeKind, MemoryScopeOutcome, MemoryScopeStatus,
    MirroredScopeStatus, OrphanReason, OrphanRun, OrphanSample, OrphanScan, OrphanScheduleChanges,
    OrphanScheduleView, OutboxRetried, OutboxState, RemoteMemoryStatus, ScopeItems, ScopeOutbox,
    UnmirroredScopeStatus,
};

crate::wire::wire_enum! {
    MemoryScopeKind => MemoryScopeKind { Project, Series }
    MemoryScopeAction => MemoryScopeAction { Synchronize, Rebuild, Reindex, Check }
    CleanupStage => MemoryCleanupState { Pending, Done, Failed, Retired }
    OrphanReason => MemoryOrphanReason { UnknownId, ProjectGone, SeriesGone, ItemGone }
}

impl From<MemoryScope> for v1::MemoryScopeRef {
    fn from(scope: MemoryScope) -> Self {
        v1::MemoryScopeRef {
            kind: scope.kind.to_wire(),
            id: scope.id,
        }
    }
}

impl TryFrom<v1::MemoryScopeRef> for MemoryScope {
    type Error = WireError;
    fn try_from(message: v1::MemoryScopeRef) -> Result<Self, WireError> {
        Ok(MemoryScope {
            id: message.id,
            kind: WireEnum::from_wire(message.kind, "scope.kind")?,
        })
    }
}

fn scope(message: Option<v1::MemoryScopeRef>) -> Result<MemoryScope, WireError> {
    required(message, "scope")?.try_into()
}

impl From<OutboxState> for v1::MemoryOutboxState {
    fn from(o: OutboxState) -> Self {
        v1::MemoryOutboxState {
            failed: o.failed,
            lag_seconds: o.lag_seconds,
            last_error: o.last_error,
            last_synced_at: o.last_synced_at,
            oldest_pending_at: o.oldest_pending_at,
            pending: o.pending,
        }
    }
}

impl From<v1::MemoryOutboxState> for OutboxState {
    fn from(o: v1::MemoryOutboxState) -> Self {
        OutboxState {
            failed: o.failed,
            lag_seconds: o.lag_seconds,
            last_error: o.last_error,
            last_synced_at: o.last_synced_at,
            oldest_pending_at: o.oldest_pending_at,
            pending: o.pending,
        }
    }
}

impl From<CleanupCounts> for v1::MemoryCleanupCounts {
    fn from(c: CleanupCounts) -> Self {
        v1::MemoryCleanupCounts {
            done: c.done,
            failed: c.failed,
            pending: c.pending,
            retired: c.retired,
        }
    }
}

impl From<v1::MemoryCleanupCounts> for CleanupCounts {
    fn from(c: v1::MemoryCleanupCounts) -> Self {
        CleanupCounts {
            done: c.done,
            failed: c.failed,
            pending: c.pending,
            retired: c.retired,
        }
    }
}

impl From<ExternalMemoryStatus> for v1::ExternalMemoryStatusView {
    fn from(status: ExternalMemoryStatus) -> Self {
        use v1::external_memory_status_view::State;
        let state = match status {
            ExternalMemoryStatus::Configured(s) => State::Configured(v1::RemoteMemoryStatus {
                cleanups: Some(s.cleanups.into()),
                collection: s.collection,
                database: s.database,
                embedding: s.embedding.map(|e| v1::MemoryEmbeddingModel {
                    dimension: e.dimension,
                    model: e.model,
                }),
                embeddings_url: s.embeddings_url,
                lag_seconds: s.lag_seconds,
                last_error: s.last_error,
                last_sync_at: s.last_sync_at,
                mirrored_items: s.mirrored_items,
                outbox: Some(s.outbox.into()),
                reachable: s.reachable,
                tenant: s.tenant,
                url: s.url,
            }),
            ExternalMemoryStatus::Unconfigured(s) => State::Unconfigured(v1::LocalMemoryStatus {
                cleanups: Some(s.cleanups.into()),
                outbox: Some(s.outbox.into()),
            }),
        };
        v1::ExternalMemoryStatusView { state: Some(state) }
    }
}

impl TryFrom<v1::ExternalMemoryStatusView> for ExternalMemoryStatus {
    type Error = WireError;
    fn try_from(message: v1::ExternalMemoryStatusView) -> Result<Self, WireError> {
        use v1::external_memory_status_view::State;
        Ok(match required(message.state, "state")? {
            State::Configured(s) => {
                ExternalMemoryStatus::Configured(Box::new(RemoteMemoryStatus {
                    cleanups: required(s.cleanups, "cleanups")?.into(),
                    collection: s.collection,
                    configured: true,
                    database: s.database,
                    embedding: s.embedding.map(|e| EmbeddingModel {
                        dimension: e.dimension,
                        model: e.model,
                    }),
                    embeddings_url: s.embeddings_url,
                    lag_seconds: s.lag_seconds,
                    last_error: s.last_error,
                    last_sync_at: s.last_sync_at,
                    mirrored_items: s.mirrored_items,
                    outbox: required(s.outbox, "outbox")?.into(),
                    reachable: s.reachable,
                    tenant: s.tenant,
                    url: s.url,
                }))
            }
            State::Unconfigured(s) => ExternalMemoryStatus::Unconfigured(LocalMemoryStatus {
                cleanups: required(s.cleanups, "cleanups")?.into(),
                configured: false,
                outbox: required(s.outbox, "outbox")?.into(),
            }),
        })
    }
}

impl From<OutboxRetried> for v1::MemoryOutboxRetried {
    fn from(r: OutboxRetried) -> Self {
        v1::MemoryOutboxRetried { retried: r.retried }
    }
}

impl From<v1::MemoryOutboxRetried> for OutboxRetried {
    fn from(r: v1::MemoryOutboxRetried) -> Self {
        OutboxRetried { retried: r.retried }
    }
}

impl From<CleanupSettingsView> for v1::MemoryCleanupSettingsView {
    fn from(v: CleanupSettingsView) -> Self {
        v1::MemoryCleanupSettingsView {
            enabled: v.enabled,
            max_attempts: v.max_attempts,
            overridden: v.overridden,
            retain_days: v.retain_days,
        }
    }
}

impl From<v1::MemoryCleanupSettingsView> for CleanupSettingsView {
    fn from(v: v1::MemoryCleanupSettingsView) -> Self {
        CleanupSettingsView {
            enabled: v.enabled,
            max_attempts: v.max_attempts,
            overridden: v.overridden,
            retain_days: v.retain_days,
        }
    }
}

impl From<CleanupSettingsChanges> for v1::MemoryCleanupSettingsChanges {
    fn from(c: CleanupSettingsChanges) -> Self {
        v1::MemoryCleanupSettingsChanges {
            enabled: c.enabled,
            max_attempts: c.max_attempts,
            retain_days: c.retain_days,
        }
    }
}

impl From<v1::MemoryCleanupSettingsChanges> for CleanupSettingsChanges {
    fn from(c: v1::MemoryCleanupSettingsChanges) -> Self {
        CleanupSettingsChanges {
            enabled: c.enabled,
            max_attempts: c.max_attempts,
            retain_days: c.retain_days,
        }
    }
}

impl From<CleanupRecord> for v1::MemoryCleanupRecord {
    fn from(r: CleanupRecord) -> Self {
        v1::MemoryCleanupRecord {
            attempts: r.attempts,
            created_at: r.created_at,
            finished_at: r.finished_at,
            id: r.id,
            label: r.label,
            last_error: r.last_error,
            next_attempt_at: r.next_attempt_at,
            removed: r.removed,
            scope: Some(r.scope.into()),
            state: r.state.to_wire(),
        }
    }
}

impl TryFrom<v1::MemoryCleanupRecord> for CleanupRecord {
    type Error = WireError;
    fn try_from(r: v1::MemoryCleanupRecord) -> Result<Self, WireError> {
        Ok(CleanupRecord {
            attempts: r.attempts,
            created_at: r.created_at,
            finished_at: r.finished_at,
            id: r.id,
            label: r.label,
            last_error: r.last_error,
            next_attempt_at: r.next_attempt_at,
            removed: r.removed,
            scope: scope(r.scope)?,
            state: WireEnum::from_wire(r.state, "state")?,
        })
    }
}

impl From<CleanupList> for v1::MemoryCleanupList {
    fn from(list: CleanupList) -> Self {
        v1::MemoryCleanupList {
            cleanups: list.cleanups.into_iter().map(Into::into).collect(),
            counts: Some(list.counts.into()),
        }
    }
}

impl TryFrom<v1::MemoryCleanupList> for CleanupList {
    type Error = WireError;
    fn try_from(list: v1::MemoryCleanupList) -> Result<Self, WireError> {
        Ok(CleanupList {
            cleanups: list
                .cleanups
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_, _>>()?,
            counts: required(list.counts, "counts")?.into(),
        })
    }
}

impl From<OrphanScan> for v1::MemoryOrphanScan {
    fn from(s: OrphanScan) -> Self {
        v1::MemoryOrphanScan {
            at: s.at,
            by_reason: s.by_reason.into_iter().collect(),
            collections: s.collections,
            orphans: s.orphans,
            removed: s.removed,
            sample: s
                .sample
                .into_iter()
                .map(|o| v1::MemoryOrphanSample {
                    collection: o.collection,
                    id: o.id,
                    reason: o.reason.to_wire(),
                })
                .collect(),
            scanned: s.scanned,
        }
    }
}

impl TryFrom<v1::MemoryOrphanScan> for OrphanScan {
    type Error = WireError;
    fn try_from(s: v1::MemoryOrphanScan) -> Result<Self, WireError> {
        Ok(OrphanScan {
            at: s.at,
            by_reason: s.by_reason.into_iter().collect(),
            collections: s.collections,
            orphans: s.orphans,
            removed: s.removed,
            sample: s
                .sample
                .into_iter()
                .map(|o| {
                    Ok(OrphanSample {
                        collection: o.collection,
                        id: o.id,
                        reason: WireEnum::from_wire(o.reason, "sample.reason")?,
                    })
                })
                .collect::<Result<_, WireError>>()?,
            scanned: s.scanned,
        })
    }
}

impl From<OrphanScheduleView> for v1::MemoryOrphanScheduleView {
    fn from(v: OrphanScheduleView) -> Self {
        use v1::memory_orphan_run::Outcome;
        v1::MemoryOrphanScheduleView {
            clean: v.clean,
            enabled: v.enabled,
            interval_hours: v.interval_hours,
            last_run_at: v.last_run_at,
            last_scan: v.last_scan.map(|run| v1::MemoryOrphanRun {
                outcome: Some(match run {
                    OrphanRun::Scanned(scan) => Outcome::Scanned(scan.into()),
                    OrphanRun::Failed { error } => Outcome::Error(error),
                }),
            }),
            next_run_at: v.next_run_at,
        }
    }
}

impl TryFrom<v1::MemoryOrphanScheduleView> for OrphanScheduleView {
    type Error = WireError;
    fn try_from(v: v1::MemoryOrphanScheduleView) -> Result<Self, WireError> {
        use v1::memory_orphan_run::Outcome;
        let last_scan = match v.last_scan {
            None => None,
            Some(run) => Some(match required(run.outcome, "last_scan.outcome")? {
                Outcome::Scanned(scan) => OrphanRun::Scanned(scan.try_into()?),
                Outcome::Error(error) => OrphanRun::Failed { error },
            }),
        };
        Ok(OrphanScheduleView {
            clean: v.clean,
            enabled: v.enabled,
            interval_hours: v.interval_hours,
            last_run_at: v.last_run_at,
            last_scan,
            next_run_at: v.next_run_at,
        })
    }
}

impl From<OrphanScheduleChanges> for v1::MemoryOrphanScheduleChanges {
    fn from(c: OrphanScheduleChanges) -> Self {
        v1::MemoryOrphanScheduleChanges {
            clean: c.clean,
            enabled: c.enabled,
            interval_hours: c.interval_hours,
        }
    }
}

impl From<v1::MemoryOrphanScheduleChanges> for OrphanScheduleChanges {
    fn from(c: v1::MemoryOrphanScheduleChanges) -> Self {
        OrphanScheduleChanges {
            clean: c.clean,
            enabled: c.enabled,
            interval_hours: c.interval_hours,
        }
    }
}

impl From<MemoryScopeStatus> for v1::MemoryScopeStatusView {
    fn from(status: MemoryScopeStatus) -> Self {
        use v1::memory_scope_status_view::State;
        let state = match status {
            MemoryScopeStatus::Mirrored(s) => State::Mirrored(v1::MirroredScopeStatus {
                collection: s.collection,
                in_sync: s.in_sync,
                items: Some(v1::MemoryScopeItems {
                    by_kind: s.items.by_kind.into_iter().collect(),
                    local: s.items.local,
                    mirrored: s.items.mirrored,
                    to_delete: s.items.to_delete,
                    to_write: s.items.to_write,
                    unchanged: s.items.unchanged,
                }),
                last_synced_at: s.last_synced_at,
                outbox: Some(v1::MemoryScopeOutbox {
                    failed: s.outbox.failed,
                    last_error: s.outbox.last_error,
                    next_attempt_at: s.outbox.next_attempt_at,
                    pending: s.outbox.pending,
                }),
                scope: Some(s.scope.into()),
            }),
            MemoryScopeStatus::Unmirrored(s) => State::Unmirrored(v1::UnmirroredScopeStatus {
                scope: Some(s.scope.into()),
            }),
        };
        v1::MemoryScopeStatusView { state: Some(state) }
    }
}

impl TryFrom<v1::MemoryScopeStatusView> for MemoryScopeStatus {
    type Error = WireError;
    fn try_from(message: v1::MemoryScopeStatusView) -> Result<Self, WireError> {
        use v1::memory_scope_status_view::State;
        Ok(match required(message.state, "state")? {
            State::Mirrored(s) => {
                let items = required(s.items, "items")?;
                let outbox = required(s.outbox, "outbox")?;
                MemoryScopeStatus::Mirrored(MirroredScopeStatus {
                    collection: s.collection,
                    configured: true,
                    in_sync: s.in_sync,
                    items: ScopeItems {
                        by_kind: items.by_kind.into_iter().collect(),
                        local: items.local,
                        mirrored: items.mirrored,
                        to_delete: items.to_delete,
                        to_write: items.to_write,
                        unchanged: items.unchanged,
                    },
                    last_synced_at: s.last_synced_at,
                    outbox: ScopeOutbox {
                        failed: outbox.failed,
                        last_error: outbox.last_error,
                        next_attempt_at: outbox.next_attempt_at,
                        pending: outbox.pending,
                    },
                    scope: scope(s.scope)?,
                })
            }
            State::Unmirrored(s) => MemoryScopeStatus::Unmirrored(UnmirroredScopeStatus {
                configured: false,
                scope: scope(s.scope)?,
            }),
        })
    }
}

impl From<MemoryScopeOutcome> for v1::MemoryScopeOutcome {
    fn from(o: MemoryScopeOutcome) -> Self {
        v1::MemoryScopeOutcome {
            action: o.action.to_wire(),
            collection: o.collection,
            extra: o.extra,
            in_sync: o.in_sync,
            items: o.items,
            local: o.local,
            missing: o.missing,
            queued: o.queued,
            remote: o.remote,
            removed: o.removed,
            sample: o.sample.map(|s| v1::MemoryDriftSample {
                extra: s.extra,
                missing: s.missing,
                stale: s.stale,
            }),
            scope: Some(o.scope.into()),
            stale: o.stale,
        }
    }
}

impl TryFrom<v1::MemoryScopeOutcome> for MemoryScopeOutcome {
    type Error = WireError;
    fn try_from(o: v1::MemoryScopeOutcome) -> Result<Self, WireError> {
        Ok(MemoryScopeOutcome {
            action: WireEnum::from_wire(o.action, "action")?,
            collection: o.collection,
            extra: o.extra,
            in_sync: o.in_sync,
            items: o.items,
            local: o.local,
            missing: o.missing,
            queued: o.queued,
            remote: o.remote,
            removed: o.removed,
            sample: o.sample.map(|s| DriftSample {
                extra: s.extra,
                missing: s.missing,
                stale: s.stale,
            }),
            scope: scope(o.scope)?,
            stale: o.stale,
        })
    }
}

#[cfg(test)]
mod tests;
