//! What the JSON result says about quality (spec 2.6, 4.5) on a real
//! (in-memory SQLite) database, with passages' statuses, scores and
//! signals and the autopilot's run and decisions written as the pipeline
//! writes them: each chapter's issues, and when a result is complete.

use dragoman_delivery::ResultStore;
use dragoman_delivery::issues::DELIVERED_IN_SOURCE;
use dragoman_delivery::results::{self, ResultQuery};
use dragoman_migrations::{Migrator, MigratorTrait};
use dragoman_model::entities::{
    account, autopilot_decision, autopilot_run, chapter, passage, project, request, series,
};
use dragoman_model::vocab::{
    AutopilotAction, AutopilotOutcome, InputKind, Layout, PassageStatus, Priority, RequestStatus,
    ResultFormat, ResultScope, SeriesKind, Severity, SignalCode, Stage,
};
use dragoman_model::{clock, ids};
use object_store::memory::InMemory;
use sea_orm::{ActiveModelTrait, DatabaseConnection, Set};
use serde_json::{Value, json};
use std::sync::Arc;

struct World {
    db: DatabaseConnection,
    account: String,
    request: request::Model,
    /// Two chapters in reading order; the request created only the first.
    chapters: Vec<chapter::Model>,
}

impl World {
    async fn new() -> World {
        let db = dragoman_model::db::connect("sqlite::memory:")
            .await
            .expect("in-memory database");
        Migrator::up(&db, None).await.expect("migrations");
        let now = clock::now();
        let mut account = account::ActiveModel::new_account("reader", String::new(), false);
        account.priority_ceiling = Set(Priority::High);
        let account = account.insert(&db).await.expect("account");
        let series = series::ActiveModel::new_series(
            &account.id,
            "Saga",
            SeriesKind::Numbered,
            ("en", "fr"),
            None,
        )
        .insert(&db)
        .await
        .expect("series");
        let project = project::ActiveModel::new_volume(
            &series,
            "The First Book".into(),
            1,
            InputKind::Txt,
            ("en", "fr"),
        )
        .insert(&db)
        .await
        .expect("project");
        let mut chapters = Vec::new();
        for position in 0..2 {
            let chapter = chapter::ActiveModel {
                id: Set(ids::new_id()),
                project_id: Set(project.id.clone()),
                external_id: Set(Some(format!("ch-{position}"))),
                number: Set(Some(position + 1)),
                part: Set(None),
                part_count: Set(None),
                kind: Set("chapter".into()),
                label: Set(None),
                title: Set(Some(format!("Chapter {position}"))),
                translated_title: Set(None),
                position: Set(position),
                source_sha256: Set(String::new()),
                words: Set(3),
                mapping: Set(None),
                created_at: Set(now),
                updated_at: Set(now),
            }
            .insert(&db)
            .await
            .expect("chapter");
            chapters.push(chapter);
        }
        let ids: Vec<&str> = chapters.iter().map(|c| c.id.as_str()).collect();
        let request = request::ActiveModel {
            id: Set(ids::new_id()),
            account_id: Set(account.id.clone()),
            token_id: Set(None),
            external_id: Set(None),
            idempotency_key: Set(None),
            content_hash: Set(ids::new_id()),
            series_id: Set(series.id.clone()),
            project_id: Set(project.id.clone()),
            job_id: Set(Some(ids::new_id())),
            input: Set(InputKind::Txt),
            status: Set(RequestStatus::Completed),
            stage: Set(Stage::Export),
            step: Set(RequestStatus::Completed.to_string()),
            error: Set(String::new()),
            stop_reason: Set(String::new()),
            priority: Set(Priority::Normal),
            options: Set(dragoman_model::request_options::StoredOptions {
                output_format: Some(ResultFormat::Json),
                ..Default::default()
            }),
            callback_url: Set(None),
            callback_events: Set(json!([])),
            chapters: Set(json!({ "ids": ids, "new": [ids[0]] })),
            result: Set(None),
            report: Set(None),
            next_attempt: Set(0),
            created_at: Set(now - 60),
            updated_at: Set(now),
            finished_at: Set(Some(now)),
        }
        .insert(&db)
        .await
        .expect("request");
        World {
            db,
            account: account.id,
            request,
            chapters,
        }
    }

    /// A passage of chapter `c` at `position`, translated unless `status`
    /// says it is not, with `signals`.
    async fn passage(
        &self,
        c: usize,
        position: i32,
        status: PassageStatus,
        signals: Value,
    ) -> passage::Model {
        let now = clock::now();
        let translated = PassageStatus::USABLE.contains(&status) || status == PassageStatus::Error;
        passage::ActiveModel {
            id: Set(ids::new_id()),
            chapter_id: Set(self.chapters[c].id.clone()),
            project_id: Set(self.chapters[c].project_id.clone()),
            position: Set(position),
            source: Set(format!("Source {position}.")),
            markup: Set(None),
            translation: Set(translated.then(|| format!("Traduction {position}."))),
            status: Set(status),
            last_error: Set(None),
            human: Set(false),
            validated: Set(false),
            attempts: Set(1),
            memory_key: Set(None),
            score: Set(Some(70)),
            signals: Set(Some(signals)),
            reviewed: Set(false),
            autopilot_round: Set(0),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(&self.db)
        .await
        .expect("passage")
    }

    async fn edit(
        &self,
        p: &passage::Model,
        edit: impl FnOnce(&mut passage::ActiveModel),
    ) -> passage::Model {
        let mut model: passage::ActiveModel = p.clone().into();
        edit(&mut model);
        model.update(&self.db).await.expect("passage")
    }

    async fn decision(&self, p: &passage::Model, action: AutopilotAction, reason: &str, at: i64) {
        autopilot_decision::ActiveModel {
            id: Set(ids::new_id()),
            request_id: Set(self.request.id.clone()),
            job_id: Set(self.request.job_id.clone().unwrap_or_default()),
            passage_id: Set(p.id.clone()),
            round: Set(1),
            action: Set(action),
            reason: Set(reason.to_owned()),
            score_before: Set(p.score),
            score_after: Set(p.score),
            created_at: Set(at),
        }
        .insert(&self.db)
        .await
        .expect("decision");
    }

    async fn autopilot(&self, outcome: AutopilotOutcome) {
        autopilot_run::ActiveModel {
            job_id: Set(self.request.job_id.clone().unwrap_or_default()),
            request_id: Set(self.request.id.clone()),
            round: Set(2),
            rounds: Set(2),
            finished: Set(true),
            outcome: Set(Some(outcome)),
            reason: Set(None),
            updated_at: Set(0),
        }
        .insert(&self.db)
        .await
        .expect("autopilot run");
    }

    /// The JSON result over `scope` and whether it reads complete.
    async fn result(&self, scope: ResultScope) -> (Value, bool) {
        let store = ResultStore {
            blobs: Arc::new(InMemory::new()),
            retention_days: 30,
            epub: Default::default(),
        };
        let query = ResultQuery {
            format: ResultFormat::Json,
            scope,
            partial: false,
            layout: Layout::Interleaved,
        };
        let built = results::build(&self.db, &store, &self.account, &self.request.id, &query)
            .await
            .unwrap_or_else(|e| panic!("result: {e}"));
        let body: Value = serde_json::from_slice(&built.body).expect("json");
        assert_eq!(body["complete"], built.complete);
        (body, built.complete)
    }
}

fn signal(code: SignalCode, penalty: u32) -> Value {
    json!({"code": code, "count": 1, "penalty": penalty, "message": format!("{code} here")})
}

fn issue(segment: &passage::Model, severity: Severity, code: &str, message: &str) -> Value {
    json!({"segment_id": segment.id, "severity": severity, "code": code, "message": message})
}

#[tokio::test]
async fn chapter_issues_name_each_signal_and_each_residual_in_position_order() {
    let world = World::new().await;
    // Inserted out of order: issues follow the passages' positions.
    let retained = world
        .passage(0, 4, PassageStatus::SourceRetained, json!([]))
        .await;
    let minor_major = world
        .passage(
            0,
            0,
            PassageStatus::Ok,
            json!([
                signal(SignalCode::LengthRatio, 5),
                signal(SignalCode::LockedTerm, 10)
            ]),
        )
        .await;
    let heavy = world
        .passage(
            0,
            1,
            PassageStatus::Check,
            json!([signal(SignalCode::GlossaryTerm, 20)]),
        )
        .await;
    let validated = world
        .passage(
            0,
            2,
            PassageStatus::Check,
            json!([signal(SignalCode::NameDrift, 8)]),
        )
        .await;
    let validated = world.edit(&validated, |m| m.validated = Set(true)).await;
    let unchanged = world
        .passage(
            0,
            3,
            PassageStatus::Ok,
            json!([signal(SignalCode::Unchanged, 40)]),
        )
        .await;
    let failed = world.passage(0, 5, PassageStatus::Error, json!([])).await;
    let failed = world
        .edit(&failed, |m| {
            m.last_error = Set(Some("provider_error".into()))
        })
        .await;
    world
        .decision(
            &retained,
            AutopilotAction::Retain,
            "wrong language twice",
            1,
        )
        .await;
    world
        .decision(
            &retained,
            AutopilotAction::Retain,
            "unusable after 2 rounds",
            2,
        )
        .await;
    world.passage(1, 0, PassageStatus::Ok, json!([])).await;

    let (body, complete) = world.result(ResultScope::Request).await;
    assert!(!complete);
    let chapter = &body["chapters"][0];
    assert_eq!(
        chapter["issues"],
        json!([
            issue(
                &minor_major,
                Severity::Minor,
                SignalCode::LengthRatio.as_str(),
                "length_ratio here"
            ),
            issue(
                &minor_major,
                Severity::Major,
                SignalCode::LockedTerm.as_str(),
                "locked_term here"
            ),
            issue(
                &heavy,
                Severity::Major,
                SignalCode::GlossaryTerm.as_str(),
                "glossary_term here"
            ),
            issue(
                &unchanged,
                Severity::Critical,
                SignalCode::Unchanged.as_str(),
                "unchanged here"
            ),
            issue(
                &retained,
                Severity::Critical,
                "unusable after 2 rounds",
                DELIVERED_IN_SOURCE
            ),
            issue(
                &failed,
                Severity::Critical,
                "provider_error",
                DELIVERED_IN_SOURCE
            ),
        ])
    );
    assert_eq!(
        chapter["review"],
        json!({"segments": 6, "validated": 1, "flagged": 2})
    );
    assert_eq!(chapter["flagged_passages"], json!([heavy.id, failed.id]));
    assert_eq!(chapter["complete"], false);
    assert!(!chapter["issues"].to_string().contains(&validated.id));
    // A clean chapter has no issue and is complete.
    assert_eq!(body["chapters"][1]["issues"], json!([]));
    assert_eq!(body["chapters"][1]["complete"], true);
}

#[tokio::test]
async fn complete_asks_for_no_flagged_passage_in_new_and_volume_and_no_unresolved_autopilot() {
    let world = World::new().await;
    let flagged = world.passage(0, 0, PassageStatus::Check, json!([])).await;
    world.passage(1, 0, PassageStatus::Ok, json!([])).await;

    // Every passage translated: the request's scope is complete as before,
    // the chapter with a flagged passage is not, nor are scopes covering it.
    let (body, complete) = world.result(ResultScope::Request).await;
    assert!(complete);
    assert_eq!(body["chapters"][0]["complete"], false);
    assert!(!world.result(ResultScope::New).await.1);
    assert!(!world.result(ResultScope::Volume).await.1);

    world.edit(&flagged, |m| m.validated = Set(true)).await;
    assert!(world.result(ResultScope::New).await.1);
    assert!(world.result(ResultScope::Volume).await.1);

    world.autopilot(AutopilotOutcome::Unresolved).await;
    for scope in [ResultScope::Request, ResultScope::New, ResultScope::Volume] {
        assert!(!world.result(scope).await.1, "{scope}");
    }
}

#[tokio::test]
async fn a_resolved_autopilot_leaves_the_result_complete() {
    let world = World::new().await;
    world.passage(0, 0, PassageStatus::Ok, json!([])).await;
    world.passage(1, 0, PassageStatus::Ok, json!([])).await;
    world.autopilot(AutopilotOutcome::Resolved).await;
    let (body, complete) = world.result(ResultScope::Volume).await;
    assert!(complete);
    assert_eq!(body["incomplete_chapters"], json!([]));
}
