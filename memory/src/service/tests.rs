//! The Memory service through its trait: who may call what, and what
//! crosses the wire.

use super::*;
use crate::testing::Fixture;
use dragoman_model::vocab::{ErrorCode, Quality, TermLayer};
use dragoman_proto::Memory;
use dragoman_proto::api_status::ServiceError;
use dragoman_proto::principal::Principal;

fn service(fx: &Fixture) -> (MemoryService, InternalCredential) {
    let credential = InternalCredential::new("secret");
    let service =
        MemoryService::internal(fx.db.clone(), credential.clone(), MemorySettings::default());
    (service, credential)
}

fn put(owner: &str, layer: TermLayer) -> v1::PutTermRequest {
    v1::PutTermRequest {
        layer: layer.to_wire(),
        owner_id: owner.into(),
        source: "Dark Lord".into(),
        translation: "Seigneur".into(),
        category: String::new(),
        description: String::new(),
        locked: true,
        accepted: true,
    }
}

#[tokio::test]
async fn a_person_reaches_only_their_own_owners() {
    let fx = Fixture::new().await;
    let (service, credential) = service(&fx);
    let series = fx.series("Saga").await;
    let volume = fx.volume(&series, 1).await;
    let person = |account: &str| Principal {
        account_id: account.into(),
        token_id: None,
        admin: false,
    };
    let other = fx.add_account("other").await;

    let refused = service
        .put_term(credential.request(&person(&other), put(&series.id, TermLayer::Series)))
        .await
        .expect_err("another account's series");
    let sent = ServiceError::from_status(&refused).expect("a refusal");
    assert_eq!(sent.code, ErrorCode::SeriesNotFound);

    let stored = service
        .put_term(credential.request(&person(&fx.account), put(&series.id, TermLayer::Series)))
        .await
        .expect("own series")
        .into_inner();
    assert_eq!(stored.layer, TermLayer::Series.to_wire());
    assert_eq!(
        stored.origin,
        dragoman_model::vocab::Origin::Human.to_wire()
    );

    let listed = service
        .terms_in_force(credential.system_request(v1::ProjectRef {
            project_id: volume.id.clone(),
        }))
        .await
        .expect("terms")
        .into_inner();
    assert_eq!(listed.terms, vec![stored]);
    let refused = service
        .terms_in_force(credential.request(
            &person(&other),
            v1::ProjectRef {
                project_id: volume.id.clone(),
            },
        ))
        .await
        .expect_err("another account's volume");
    assert_eq!(
        ServiceError::from_status(&refused).map(|e| e.code),
        Some(ErrorCode::VolumeNotFound)
    );
}

fn code(status: &Status) -> Option<ErrorCode> {
    ServiceError::from_status(status).map(|e| e.code)
}

#[tokio::test]
async fn without_an_external_memory_status_reports_and_actions_refuse() {
    let fx = Fixture::new().await;
    let (service, credential) = service(&fx);
    let admin = Principal {
        account_id: fx.account.clone(),
        token_id: None,
        admin: true,
    };
    let person = Principal {
        admin: false,
        ..admin.clone()
    };
    let status = service
        .external_memory_status(credential.request(&admin, StatusRequest {}))
        .await
        .expect("status")
        .into_inner();
    let status = ExternalMemoryStatus::try_from(status).expect("a status");
    let ExternalMemoryStatus::Unconfigured(status) = status else {
        panic!("configured: {status:?}");
    };
    assert_eq!(status.outbox.pending, 0, "{status:?}");

    let refused = service
        .external_memory_status(credential.request(&person, StatusRequest {}))
        .await
        .expect_err("not an administrator");
    assert_eq!(code(&refused), Some(ErrorCode::AdminRequired));
    let refused = service
        .retry_memory_outbox(credential.request(&admin, StatusRequest {}))
        .await
        .expect_err("no external memory");
    assert_eq!(code(&refused), Some(ErrorCode::Conflict));
    let refused = service
        .update_memory_orphan_schedule(credential.request(
            &admin,
            v1::UpdateMemoryOrphanScheduleRequest { changes: None },
        ))
        .await
        .expect_err("no external memory");
    assert_eq!(code(&refused), Some(ErrorCode::Conflict));
}

#[tokio::test]
async fn a_mirror_answers_its_owner_and_administrators_only() {
    let fx = Fixture::new().await;
    let (service, credential) = service(&fx);
    let series = fx.series("Saga").await;
    let volume = fx.volume(&series, 1).await;
    let other = fx.add_account("other").await;
    let as_account = |account: &str, admin: bool| Principal {
        account_id: account.into(),
        token_id: None,
        admin,
    };
    let scope = |kind: v1::MemoryScopeKind, id: &str| v1::MemoryScopeRef {
        kind: kind.into(),
        id: id.into(),
    };
    let project = scope(v1::MemoryScopeKind::Project, &volume.id);
    let saga = scope(v1::MemoryScopeKind::Series, &series.id);

    for who in [as_account(&fx.account, false), as_account(&other, true)] {
        let view = service
            .memory_scope_status(credential.request(&who, project.clone()))
            .await
            .expect("the owner's or an administrator's")
            .into_inner();
        let view = MemoryScopeStatus::try_from(view).expect("a status");
        assert_eq!(
            serde_json::to_value(view).expect("json"),
            serde_json::json!({"configured": false,
                "scope": {"kind": "project", "id": volume.id}})
        );
    }
    let stranger = as_account(&other, false);
    for (asked, expected) in [
        (project.clone(), ErrorCode::VolumeNotFound),
        (saga.clone(), ErrorCode::SeriesNotFound),
        (
            scope(v1::MemoryScopeKind::Project, "absent"),
            ErrorCode::VolumeNotFound,
        ),
    ] {
        let refused = service
            .memory_scope_status(credential.request(&stranger, asked.clone()))
            .await
            .expect_err("another account's");
        assert_eq!(code(&refused), Some(expected));
        let refused = service
            .act_on_memory_scope(credential.request(
                &stranger,
                v1::MemoryScopeActionRequest {
                    scope: Some(asked),
                    action: v1::MemoryScopeAction::Rebuild.into(),
                },
            ))
            .await
            .expect_err("another account's");
        assert_eq!(code(&refused), Some(expected));
    }

    let owner = as_account(&fx.account, false);
    let refused = service
        .act_on_memory_scope(credential.request(
            &owner,
            v1::MemoryScopeActionRequest {
                scope: Some(saga.clone()),
                action: v1::MemoryScopeAction::Synchronize.into(),
            },
        ))
        .await
        .expect_err("no external memory");
    assert_eq!(code(&refused), Some(ErrorCode::Conflict));
    let refused = service
        .act_on_memory_scope(credential.request(
            &owner,
            v1::MemoryScopeActionRequest {
                scope: Some(saga),
                action: 0,
            },
        ))
        .await
        .expect_err("no action");
    let sent = ServiceError::from_status(&refused).expect("a refusal");
    assert_eq!(
        sent.issues,
        vec![Issue::at("body", "action", IssueKind::Enum)]
    );
}

#[tokio::test]
async fn calls_need_the_credential_and_a_layer() {
    let fx = Fixture::new().await;
    let (service, credential) = service(&fx);
    let refused = service
        .plan_analysis(Request::new(v1::PlanAnalysisRequest::default()))
        .await
        .expect_err("no credential");
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);

    let mut unspecified = put("x", TermLayer::Book);
    unspecified.layer = 0;
    let refused = service
        .put_term(credential.system_request(unspecified))
        .await
        .expect_err("no layer");
    let sent = ServiceError::from_status(&refused).expect("a refusal");
    assert_eq!(sent.code, ErrorCode::InvalidRequest);
    assert_eq!(
        sent.issues,
        vec![Issue::at("body", "layer", IssueKind::Enum)]
    );

    let refused = service
        .build_contexts(credential.system_request(v1::ContextRequest {
            project_id: "missing".into(),
            batches: vec![],
            ..Default::default()
        }))
        .await
        .expect_err("no volume");
    assert_eq!(refused.code(), tonic::Code::NotFound);
}

#[tokio::test]
async fn analyses_cross_the_wire_with_their_kinds() {
    let fx = Fixture::new().await;
    let (service, credential) = service(&fx);
    let volume = fx.volume(&fx.series("Saga").await, 1).await;
    let (chapter, passages) = fx.chapter(&volume, 1, &["Alice ran.", "Bob ran."]).await;
    let plan = service
        .plan_analysis(credential.system_request(v1::PlanAnalysisRequest {
            project_id: volume.id.clone(),
            chapter_ids: vec![chapter.id.clone()],
        }))
        .await
        .expect("plan")
        .into_inner();
    assert_eq!((plan.total, plan.done, plan.passages.len()), (2, 0, 2));
    let entity = |kind: i32, name: &str| v1::ExtractedEntity {
        kind,
        name: name.into(),
        ..Default::default()
    };
    let recorded = service
        .record_analysis(credential.system_request(v1::RecordAnalysisRequest {
            project_id: volume.id.clone(),
            analyses: vec![v1::PassageAnalysis {
                passage_id: passages[0].id.clone(),
                entities: vec![
                    entity(
                        dragoman_model::vocab::EntityKind::Character.to_wire(),
                        "Alice",
                    ),
                    // A kind the wire does not name is left out.
                    entity(0, "Nobody"),
                ],
                summary: "Alice runs.".into(),
                ..Default::default()
            }],
            reconcile: true,
            quality: 0,
        }))
        .await
        .expect("record")
        .into_inner();
    assert_eq!(recorded.stored, 1);
    let reconciled = service
        .reconcile(credential.system_request(v1::ReconcileRequest {
            project_id: volume.id.clone(),
            quality: Quality::High.to_wire(),
        }))
        .await
        .expect("reconcile")
        .into_inner();
    assert_eq!((reconciled.reconciled, reconciled.entities), (0, 1));
    let contexts = service
        .build_contexts(credential.system_request(v1::ContextRequest {
            project_id: volume.id.clone(),
            batches: vec![
                v1::ContextBatch {
                    passage_ids: vec![passages[1].id.clone()],
                },
                v1::ContextBatch {
                    passage_ids: vec![passages[0].id.clone()],
                },
            ],
            ..Default::default()
        }))
        .await
        .expect("context")
        .into_inner()
        .contexts;
    assert_eq!(contexts.len(), 2, "one context per batch, in order");
    assert_eq!(contexts[0].text, "Before: Alice runs.");
    assert_eq!(contexts[0].tokens, 7);
    assert_eq!(
        contexts[1].text, "Characters:\n- Alice",
        "the first passage names Alice and has nothing before it"
    );
}
