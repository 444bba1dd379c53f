//! Each document crosses the wire and comes back equal, and serialises as
//! the JSON the memory service wrote before it was typed.

use super::*;
use std::collections::BTreeMap;

/// `doc` → message → doc is `doc`, and `doc` as JSON is `json`.
macro_rules! round_trip {
    ($message:ty, $doc:expr, $json:expr $(,)?) => {{
        let doc = $doc;
        let message: $message = doc.clone().into();
        let back = message.try_into().expect("decodes");
        assert_eq!(doc, back);
        assert_eq!(serde_json::to_string(&doc).expect("serialises"), *$json);
    }};
}

fn outbox() -> OutboxState {
    OutboxState {
        failed: 1,
        lag_seconds: 40,
        last_error: Some("chroma: timeout".into()),
        last_synced_at: Some(1_700_000_000),
        oldest_pending_at: Some(1_700_000_100),
        pending: 3,
    }
}

fn counts() -> CleanupCounts {
    CleanupCounts {
        done: 4,
        failed: 1,
        pending: 2,
        retired: 0,
    }
}

fn project() -> MemoryScope {
    MemoryScope {
        id: "p1".into(),
        kind: MemoryScopeKind::Project,
    }
}

fn scan() -> OrphanScan {
    OrphanScan {
        at: 1_700_000_200,
        by_reason: BTreeMap::from([("item_gone".into(), 1), ("project_gone".into(), 2)]),
        collections: vec!["dragoman_m_384".into()],
        orphans: 3,
        removed: Some(3),
        sample: vec![OrphanSample {
            collection: "dragoman_m_384".into(),
            id: "passage:9".into(),
            reason: OrphanReason::ProjectGone,
        }],
        scanned: 10,
    }
}

const OUTBOX: &str = r#"{"failed":1,"lag_seconds":40,"last_error":"chroma: timeout","last_synced_at":1700000000,"oldest_pending_at":1700000100,"pending":3}"#;
const COUNTS: &str = r#"{"done":4,"failed":1,"pending":2,"retired":0}"#;
const SCAN: &str = r#"{"at":1700000200,"by_reason":{"item_gone":1,"project_gone":2},"collections":["dragoman_m_384"],"orphans":3,"removed":3,"sample":[{"collection":"dragoman_m_384","id":"passage:9","reason":"project_gone"}],"scanned":10}"#;

#[test]
fn the_status_crosses() {
    let configured = ExternalMemoryStatus::Configured(Box::new(RemoteMemoryStatus {
        cleanups: counts(),
        collection: Some("dragoman_m_384".into()),
        configured: true,
        database: "default_database".into(),
        embedding: Some(EmbeddingModel {
            dimension: 384,
            model: "m".into(),
        }),
        embeddings_url: "http://embed:8080/v1".into(),
        lag_seconds: 40,
        last_error: Some("chroma: timeout".into()),
        last_sync_at: Some(1_700_000_000),
        mirrored_items: 12,
        outbox: outbox(),
        reachable: true,
        tenant: "default_tenant".into(),
        url: "http://chroma:8000/".into(),
    }));
    round_trip!(
        v1::ExternalMemoryStatusView,
        configured,
        &format!(
            r#"{{"cleanups":{COUNTS},"collection":"dragoman_m_384","configured":true,"database":"default_database","embedding":{{"dimension":384,"model":"m"}},"embeddings_url":"http://embed:8080/v1","lag_seconds":40,"last_error":"chroma: timeout","last_sync_at":1700000000,"mirrored_items":12,"outbox":{OUTBOX},"reachable":true,"tenant":"default_tenant","url":"http://chroma:8000/"}}"#
        ),
    );
    let local = ExternalMemoryStatus::Unconfigured(LocalMemoryStatus {
        cleanups: counts(),
        configured: false,
        outbox: outbox(),
    });
    round_trip!(
        v1::ExternalMemoryStatusView,
        local,
        &format!(r#"{{"cleanups":{COUNTS},"configured":false,"outbox":{OUTBOX}}}"#),
    );
    assert!(ExternalMemoryStatus::try_from(v1::ExternalMemoryStatusView { state: None }).is_err());
}

#[test]
fn the_cleanup_documents_cross() {
    round_trip!(
        v1::MemoryOutboxRetried,
        OutboxRetried { retried: 5 },
        r#"{"retried":5}"#
    );
    round_trip!(
        v1::MemoryCleanupSettingsView,
        CleanupSettingsView {
            enabled: true,
            max_attempts: 8,
            overridden: false,
            retain_days: 30,
        },
        r#"{"enabled":true,"max_attempts":8,"overridden":false,"retain_days":30}"#,
    );
    let record = CleanupRecord {
        attempts: 2,
        created_at: 1_700_000_000,
        finished_at: Some(1_700_000_500),
        id: "c1".into(),
        label: "Tome 1".into(),
        last_error: Some("gone".into()),
        next_attempt_at: Some(1_700_000_300),
        removed: 7,
        scope: MemoryScope {
            id: "s1".into(),
            kind: MemoryScopeKind::Series,
        },
        state: CleanupStage::Retired,
    };
    const RECORD: &str = r#"{"attempts":2,"created_at":1700000000,"finished_at":1700000500,"id":"c1","label":"Tome 1","last_error":"gone","next_attempt_at":1700000300,"removed":7,"scope":{"id":"s1","kind":"series"},"state":"retired"}"#;
    round_trip!(v1::MemoryCleanupRecord, record.clone(), RECORD);
    round_trip!(
        v1::MemoryCleanupList,
        CleanupList {
            cleanups: vec![record],
            counts: counts(),
        },
        &format!(r#"{{"cleanups":[{RECORD}],"counts":{COUNTS}}}"#),
    );
    let changes = CleanupSettingsChanges {
        enabled: Some(false),
        max_attempts: Some(3),
        retain_days: Some(10),
    };
    let back: CleanupSettingsChanges =
        v1::MemoryCleanupSettingsChanges::from(changes.clone()).into();
    assert_eq!(back, changes);
}

#[test]
fn the_orphan_documents_cross() {
    round_trip!(v1::MemoryOrphanScan, scan(), SCAN);
    round_trip!(
        v1::MemoryOrphanScheduleView,
        OrphanScheduleView {
            clean: true,
            enabled: true,
            interval_hours: 24,
            last_run_at: Some(1_700_000_200),
            last_scan: Some(OrphanRun::Scanned(scan())),
            next_run_at: Some(1_700_086_600),
        },
        &format!(
            r#"{{"clean":true,"enabled":true,"interval_hours":24,"last_run_at":1700000200,"last_scan":{SCAN},"next_run_at":1700086600}}"#
        ),
    );
    round_trip!(
        v1::MemoryOrphanScheduleView,
        OrphanScheduleView {
            clean: false,
            enabled: false,
            interval_hours: 24,
            last_run_at: Some(1),
            last_scan: Some(OrphanRun::Failed {
                error: "chroma down".into(),
            }),
            next_run_at: None,
        },
        r#"{"clean":false,"enabled":false,"interval_hours":24,"last_run_at":1,"last_scan":{"error":"chroma down"},"next_run_at":null}"#,
    );
    let changes = OrphanScheduleChanges {
        clean: Some(true),
        enabled: Some(true),
        interval_hours: Some(2),
    };
    let back: OrphanScheduleChanges = v1::MemoryOrphanScheduleChanges::from(changes.clone()).into();
    assert_eq!(back, changes);
}

#[test]
fn the_scope_documents_cross() {
    round_trip!(
        v1::MemoryScopeStatusView,
        MemoryScopeStatus::Mirrored(MirroredScopeStatus {
            collection: Some("dragoman_m_384".into()),
            configured: true,
            in_sync: false,
            items: ScopeItems {
                by_kind: BTreeMap::from([("entity".into(), 2), ("passage".into(), 5)]),
                local: 7,
                mirrored: 6,
                to_delete: 1,
                to_write: 2,
                unchanged: 4,
            },
            last_synced_at: Some(1_700_000_000),
            outbox: ScopeOutbox {
                failed: 1,
                last_error: Some("timeout".into()),
                next_attempt_at: Some(1_700_000_010),
                pending: 1,
            },
            scope: project(),
        }),
        r#"{"collection":"dragoman_m_384","configured":true,"in_sync":false,"items":{"by_kind":{"entity":2,"passage":5},"local":7,"mirrored":6,"to_delete":1,"to_write":2,"unchanged":4},"last_synced_at":1700000000,"outbox":{"failed":1,"last_error":"timeout","next_attempt_at":1700000010,"pending":1},"scope":{"id":"p1","kind":"project"}}"#,
    );
    round_trip!(
        v1::MemoryScopeStatusView,
        MemoryScopeStatus::Unmirrored(UnmirroredScopeStatus {
            configured: false,
            scope: project(),
        }),
        r#"{"configured":false,"scope":{"id":"p1","kind":"project"}}"#,
    );
    round_trip!(
        v1::MemoryScopeOutcome,
        MemoryScopeOutcome {
            action: MemoryScopeAction::Check,
            collection: Some("dragoman_m_384".into()),
            extra: Some(1),
            in_sync: Some(false),
            items: Some(6),
            local: Some(7),
            missing: Some(2),
            queued: Some(true),
            remote: Some(6),
            removed: Some(3),
            sample: Some(DriftSample {
                extra: vec!["term:9".into()],
                missing: vec!["passage:1".into(), "passage:2".into()],
                stale: vec![],
            }),
            scope: project(),
            stale: Some(0),
        },
        r#"{"action":"check","collection":"dragoman_m_384","extra":1,"in_sync":false,"items":6,"local":7,"missing":2,"queued":true,"remote":6,"removed":3,"sample":{"extra":["term:9"],"missing":["passage:1","passage:2"],"stale":[]},"scope":{"id":"p1","kind":"project"},"stale":0}"#,
    );
}
