//! Migration round trip against real databases.
//!
//! SQLite (always): a fresh temp file opened through `dragoman_model::db::connect`
//! (which must create the missing parent directories), then `up`, every table present,
//! one row per entity written and read back, constraint checks, `down`, nothing left.
//!
//! PostgreSQL (whenever `TEST_DATABASE_URL` is set, e.g.
//! `postgres://postgres@127.0.0.1:5432/test`): the same on a database
//! `dragoman_test_<random>` created through that admin connection and dropped afterwards.
//! Without the variable the test fails under CI (`CI=true`) and is skipped, with a
//! note, elsewhere.

use std::time::Duration;

use dragoman_migrations::{Migrator, MigratorTrait};
use dragoman_model::db::{self, backend_name, begin_write, ping};
use dragoman_model::entities::{
    account, api_token, audit_log, autopilot_decision, autopilot_run, chapter, deleted_request,
    job, passage, passage_version, project, provider, provider_call, request, result, series,
    session, setting, webhook_delivery,
};
use dragoman_model::ids::new_id;
use dragoman_model::vocab::{
    AuditAction, AuditTarget, AutopilotAction, AutopilotOutcome, BudgetPeriod, CallbackEvent,
    InputKind, JobStatus, MailLanguage, PassageStatus, Priority, ProjectKind, ProviderKind,
    RequestStatus, ResultFormat, ResultScope, SeriesKind, Stage, UsageStage, VersionReason,
    VolumeStatus, WebhookState,
};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection,
    EntityTrait, IntoActiveModel, PaginatorTrait, QueryFilter, Statement,
};
use sea_orm_migration::SchemaManager;
use serde_json::json;

mod support;

const TABLES: [&str; 28] = [
    "accounts",
    "sessions",
    "api_tokens",
    "audit_log",
    "providers",
    "series",
    "projects",
    "chapters",
    "passages",
    "requests",
    "jobs",
    "results",
    "webhook_deliveries",
    "provider_calls",
    "settings",
    "glossaries",
    "terms",
    "series_entities",
    "narrative_entities",
    "passage_analyses",
    "bible_lines",
    "autopilot_runs",
    "autopilot_decisions",
    "licence_words",
    "passage_versions",
    "deleted_requests",
    "mail_outbox",
    "password_resets",
];

/// A timestamp beyond 32 bits, to prove the columns are 64-bit.
const T: i64 = 4_102_444_800; // 2100-01-01

/// Inserts `$model` (all fields set), checks the returned and the re-read rows equal it.
macro_rules! round_trip {
    ($db:expr, $module:ident, $model:expr, $pk:ident) => {{
        let model: $module::Model = $model;
        let inserted = model
            .clone()
            .into_active_model()
            .reset_all()
            .insert($db)
            .await
            .expect(concat!("insert ", stringify!($module)));
        assert_eq!(inserted, model, "insert returned {}", stringify!($module));
        let found = $module::Entity::find_by_id(model.$pk.clone())
            .one($db)
            .await
            .expect(concat!("select ", stringify!($module)))
            .expect(concat!("row present: ", stringify!($module)));
        assert_eq!(found, model, "re-read {}", stringify!($module));
        model
    }};
}

async fn assert_tables(db: &DatabaseConnection, present: bool) {
    let manager = SchemaManager::new(db);
    for table in TABLES {
        assert_eq!(
            manager.has_table(table).await.unwrap(),
            present,
            "table {table} present should be {present}"
        );
    }
}

/// Migrates up, exercises every entity and the constraints, migrates down.
async fn exercise(db: &DatabaseConnection) {
    ping(db).await.unwrap();
    Migrator::up(db, None).await.unwrap();
    assert!(
        Migrator::get_pending_migrations(db)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        Migrator::get_applied_migrations(db).await.unwrap().len(),
        Migrator::migrations().len()
    );
    assert_tables(db, true).await;

    let account = round_trip!(
        db,
        account,
        account::Model {
            id: new_id(),
            username: "ada".into(),
            password_hash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".into(),
            email: Some("ada@example.org".into()),
            is_admin: true,
            active: true,
            priority_ceiling: Priority::High,
            max_running: Some(2),
            max_queued: None,
            word_allowance: None,
            created_at: T,
            updated_at: T + 1,
            second_factor_secret: None,
            second_factor_enabled_at: None,
            recovery_codes: None,
            notify_on_finish: false,
            mail_language: MailLanguage::En,
        },
        id
    );
    let provider = round_trip!(
        db,
        provider,
        provider::Model {
            id: new_id(),
            name: "local-llama".into(),
            kind: ProviderKind::OpenAi,
            model: "llama-3.1-8b".into(),
            base_url: "http://127.0.0.1:8080/v1".into(),
            api_key_env: "LLAMA_API_KEY".into(),
            price_input: Some(0.15),
            price_output: None,
            price_cached_input: Some(0.05),
            capacity: 4,
            batch_discount: 0.5,
            fallback_provider_id: None,
            created_at: T,
            updated_at: T,
        },
        id
    );
    let session = round_trip!(
        db,
        session,
        session::Model {
            id: "a".repeat(64),
            account_id: account.id.clone(),
            created_at: T,
            expires_at: T + 86_400,
            last_seen_at: T,
        },
        id
    );
    let token = round_trip!(
        db,
        api_token,
        api_token::Model {
            id: new_id(),
            account_id: account.id.clone(),
            name: "ci".into(),
            prefix: "dgm_abcd".into(),
            secret_hash: "b".repeat(64),
            scopes: json!(["translate", "read"]),
            created_at: T,
            expires_at: Some(T + 1000),
            revoked_at: None,
            last_used_at: Some(T),
            webhook_secret_enc: Some("c2VjcmV0".into()),
            max_priority: Priority::Normal,
            max_running: 1,
            max_queued: 10,
            budget_amount: Some(12.5),
            budget_period: Some(BudgetPeriod::Month),
        },
        id
    );
    round_trip!(
        db,
        audit_log,
        audit_log::Model {
            id: new_id(),
            at: T,
            actor_account_id: Some(account.id.clone()),
            action: AuditAction::TokenCreate,
            target_type: AuditTarget::ApiToken,
            target_id: Some(token.id.clone()),
            details: json!({"name": "ci", "scopes": ["translate"]}),
        },
        id
    );
    let series = round_trip!(
        db,
        series,
        series::Model {
            id: new_id(),
            account_id: account.id.clone(),
            name: "Der Zauberberg".into(),
            kind: SeriesKind::Numbered,
            source_language: Some("de".into()),
            target_language: Some("en".into()),
            archived: false,
            default_provider_id: Some(provider.id.clone()),
            shared_glossary_id: None,
            suspended: false,
            created_at: T,
            updated_at: T,
        },
        id
    );
    let project = round_trip!(
        db,
        project,
        project::Model {
            id: new_id(),
            series_id: series.id.clone(),
            account_id: account.id.clone(),
            title: "Band 1".into(),
            volume_number: Some(1),
            volume_label: Some("I".into()),
            external_id: Some("ext-1".into()),
            source_format: Some(InputKind::Epub),
            project_kind: ProjectKind::Volume,
            status: VolumeStatus::Translated,
            provider_id: Some(provider.id.clone()),
            source_language: "de".into(),
            target_language: "en".into(),
            author: Some("Thomas Mann".into()),
            original_blob: Some("originals/abc.epub".into()),
            analysis_mode: None,
            threads: Some(3),
            batch: None,
            archived: false,
            ai_disclosure: Some(false),
            licence_counted: true,
            budget_amount: Some(12.5),
            created_at: T,
            updated_at: T,
        },
        id
    );
    let chapter = round_trip!(
        db,
        chapter,
        chapter::Model {
            id: new_id(),
            project_id: project.id.clone(),
            external_id: None,
            number: Some(1),
            part: Some(1),
            part_count: Some(2),
            kind: "chapter".into(),
            label: Some("Erstes Kapitel".into()),
            title: Some("Ankunft".into()),
            translated_title: None,
            position: 0,
            source_sha256: "d".repeat(64),
            words: 5_000_000_000,
            mapping: Some(json!({"p": [1, 2, 3]})),
            created_at: T,
            updated_at: T,
        },
        id
    );
    let passage = round_trip!(
        db,
        passage,
        passage::Model {
            id: new_id(),
            chapter_id: chapter.id.clone(),
            project_id: project.id.clone(),
            position: 0,
            source: "Ein einfacher junger Mensch reiste im Hochsommer …".repeat(100),
            markup: Some(json!([{"tag": "em", "start": 0, "end": 3}])),
            translation: None,
            status: PassageStatus::Pending,
            last_error: None,
            human: false,
            validated: false,
            attempts: 0,
            memory_key: Some("k".repeat(64)),
            score: Some(72),
            signals: Some(json!([{"code": "length_ratio", "count": 1, "penalty": 20}])),
            reviewed: true,
            autopilot_round: 2,
            created_at: T,
            updated_at: T,
        },
        id
    );
    round_trip!(
        db,
        passage_version,
        passage_version::Model {
            id: new_id(),
            passage_id: passage.id.clone(),
            project_id: project.id.clone(),
            previous_translation: Some("Seigneur des ténèbres".into()),
            new_translation: Some("Maître des ténèbres".into()),
            reason: VersionReason::PropagateTerm,
            account_id: account.id.clone(),
            token_id: Some(token.id.clone()),
            created_at: T,
        },
        id
    );
    let request = round_trip!(
        db,
        request,
        request::Model {
            id: new_id(),
            account_id: account.id.clone(),
            token_id: Some(token.id.clone()),
            external_id: Some("req-1".into()),
            idempotency_key: Some("idem-1".into()),
            content_hash: "e".repeat(64),
            series_id: series.id.clone(),
            project_id: project.id.clone(),
            job_id: None,
            input: InputKind::Epub,
            status: RequestStatus::Queued,
            stage: Stage::Translation,
            step: "".into(),
            error: "".into(),
            stop_reason: "".into(),
            priority: Priority::Normal,
            options: dragoman_model::request_options::StoredOptions {
                final_review: Some(true),
                threads: Some(2),
                ..Default::default()
            },
            callback_url: Some("https://example.org/hook".into()),
            callback_events: json!(["finished"]),
            chapters: json!({"created": 1, "unchanged": 0, "replaced": 0, "new": 1}),
            result: None,
            report: Some(json!({"ok": 1})),
            next_attempt: T,
            created_at: T,
            updated_at: T,
            finished_at: None,
        },
        id
    );
    round_trip!(
        db,
        autopilot_run,
        autopilot_run::Model {
            job_id: new_id(),
            request_id: request.id.clone(),
            round: 2,
            rounds: 2,
            finished: true,
            outcome: Some(AutopilotOutcome::Unresolved),
            reason: Some("1 passage retained".into()),
            updated_at: T,
        },
        job_id
    );
    round_trip!(
        db,
        autopilot_decision,
        autopilot_decision::Model {
            id: new_id(),
            request_id: request.id.clone(),
            job_id: new_id(),
            passage_id: passage.id.clone(),
            round: 1,
            action: AutopilotAction::Retain,
            reason: "wrong_language".into(),
            score_before: Some(30),
            score_after: None,
            created_at: T,
        },
        id
    );
    let job = round_trip!(
        db,
        job,
        job::Model {
            id: new_id(),
            request_id: request.id.clone(),
            project_id: project.id.clone(),
            account_id: account.id.clone(),
            token_id: Some(token.id.clone()),
            status: JobStatus::Running,
            priority: Priority::Normal,
            provider_id: Some(provider.id.clone()),
            lease_holder: Some("worker-1".into()),
            lease_expires_at: Some(T + 30),
            attempts: 1,
            progress: json!({"done": 0, "total": 10}),
            estimate: None,
            paused_at: Some(T),
            pause_reason: Some("budget_exceeded".into()),
            provider_switches: 1,
            operation: dragoman_model::vocab::JobOperation::Translate,
            created_at: T,
            updated_at: T,
            started_at: Some(T),
            finished_at: None,
        },
        id
    );
    round_trip!(
        db,
        result,
        result::Model {
            id: new_id(),
            request_id: request.id.clone(),
            format: ResultFormat::Epub,
            scope: ResultScope::Volume,
            media_type: "application/epub+zip".into(),
            filename: "band-1.en.epub".into(),
            size: 3_000_000_000,
            sha256: "f".repeat(64),
            blob_key: "results/xyz.epub".into(),
            created_at: T,
            expires_at: Some(T + 86_400),
        },
        id
    );
    round_trip!(
        db,
        webhook_delivery,
        webhook_delivery::Model {
            id: new_id(),
            request_id: request.id.clone(),
            event: CallbackEvent::Finished,
            batch: Some(1),
            url: "https://example.org/hook".into(),
            body: json!({"event": "finished"}).to_string(),
            state: WebhookState::Pending,
            attempts: 0,
            next_attempt_at: Some(T),
            last_error: "".into(),
            created_at: T,
            updated_at: T,
            delivered_at: None,
        },
        id
    );
    round_trip!(
        db,
        deleted_request,
        deleted_request::Model {
            id: new_id(),
            account_id: account.id.clone(),
            series_id: new_id(),
            project_id: new_id(),
            document: json!({"status": "completed", "volume_deleted_at": T}),
            deleted_at: T,
        },
        id
    );
    round_trip!(
        db,
        provider_call,
        provider_call::Model {
            id: new_id(),
            provider_id: provider.id.clone(),
            account_id: account.id.clone(),
            token_id: Some(token.id.clone()),
            request_id: Some(request.id.clone()),
            job_id: Some(job.id.clone()),
            prompt_tokens: 1200,
            completion_tokens: 800,
            cached: false,
            cached_prompt_tokens: 1024,
            cache_write_tokens: 0,
            stage: UsageStage::Review,
            batch: false,
            cost: Some(0.000_42),
            duration_ms: 1534,
            status: "ok".into(),
            error: "".into(),
            created_at: T,
        },
        id
    );
    round_trip!(
        db,
        setting,
        setting::Model {
            key: "registration_open".into(),
            value: json!(false),
            updated_at: T,
        },
        key
    );

    // Updates through the active model work with string keys.
    let mut active = passage.clone().into_active_model();
    active.translation = Set(Some("A simple young man travelled in high summer …".into()));
    active.status = Set(PassageStatus::Ok);
    let updated = active.update(db).await.unwrap();
    assert_eq!(updated.status, PassageStatus::Ok);
    let reread = passage::Entity::find_by_id(passage.id.clone())
        .one(db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reread, updated);

    // Unique constraints.
    let mut dup = account.clone();
    dup.id = new_id();
    assert!(
        dup.into_active_model()
            .reset_all()
            .insert(db)
            .await
            .is_err(),
        "duplicate username accepted"
    );
    let mut dup = series.clone();
    dup.id = new_id();
    assert!(
        dup.into_active_model()
            .reset_all()
            .insert(db)
            .await
            .is_err(),
        "duplicate (account_id, name) series accepted"
    );
    // (account_id, external_id) is unique, but several NULL external ids are fine.
    let mut dup = project.clone();
    dup.id = new_id();
    assert!(
        dup.clone()
            .into_active_model()
            .reset_all()
            .insert(db)
            .await
            .is_err(),
        "duplicate (account_id, external_id) project accepted"
    );
    for _ in 0..2 {
        let mut p = project.clone();
        p.id = new_id();
        p.external_id = None;
        p.into_active_model().reset_all().insert(db).await.unwrap();
    }

    // Foreign keys are enforced.
    let mut orphan = session.clone();
    orphan.id = "0".repeat(64);
    orphan.account_id = new_id();
    assert!(
        orphan
            .into_active_model()
            .reset_all()
            .insert(db)
            .await
            .is_err(),
        "session of an unknown account accepted"
    );

    // A provider with recorded calls cannot be deleted.
    assert!(
        provider::Entity::delete_by_id(provider.id.clone())
            .exec(db)
            .await
            .is_err(),
        "provider with calls deleted"
    );

    // Deleting the account cascades through everything it owns.
    account::Entity::delete_by_id(account.id.clone())
        .exec(db)
        .await
        .unwrap();
    assert_eq!(session::Entity::find().count(db).await.unwrap(), 0);
    assert_eq!(api_token::Entity::find().count(db).await.unwrap(), 0);
    assert_eq!(series::Entity::find().count(db).await.unwrap(), 0);
    assert_eq!(project::Entity::find().count(db).await.unwrap(), 0);
    assert_eq!(chapter::Entity::find().count(db).await.unwrap(), 0);
    assert_eq!(passage::Entity::find().count(db).await.unwrap(), 0);
    assert_eq!(passage_version::Entity::find().count(db).await.unwrap(), 0);
    assert_eq!(request::Entity::find().count(db).await.unwrap(), 0);
    assert_eq!(job::Entity::find().count(db).await.unwrap(), 0);
    assert_eq!(result::Entity::find().count(db).await.unwrap(), 0);
    assert_eq!(webhook_delivery::Entity::find().count(db).await.unwrap(), 0);
    assert_eq!(provider_call::Entity::find().count(db).await.unwrap(), 0);
    assert_eq!(deleted_request::Entity::find().count(db).await.unwrap(), 0);
    // Unowned rows stay.
    assert_eq!(audit_log::Entity::find().count(db).await.unwrap(), 1);
    assert_eq!(setting::Entity::find().count(db).await.unwrap(), 1);
    assert_eq!(
        provider::Entity::find()
            .filter(provider::Column::Name.eq("local-llama"))
            .count(db)
            .await
            .unwrap(),
        1
    );

    Migrator::down(db, None).await.unwrap();
    assert_tables(db, false).await;
    assert!(
        Migrator::get_applied_migrations(db)
            .await
            .unwrap()
            .is_empty()
    );

    // `down` leaves nothing behind: the schema can be created again.
    Migrator::up(db, None).await.unwrap();
    assert_tables(db, true).await;
    Migrator::down(db, None).await.unwrap();
    assert_tables(db, false).await;
}

async fn pragma(db: &DatabaseConnection, name: &str) -> String {
    let row = db
        .query_one_raw(Statement::from_string(
            db.get_database_backend(),
            format!("PRAGMA {name}"),
        ))
        .await
        .unwrap()
        .unwrap();
    row.try_get_by_index::<String>(0)
        .or_else(|_| row.try_get_by_index::<i64>(0).map(|n| n.to_string()))
        .unwrap()
}

#[tokio::test]
async fn sqlite_up_round_trip_down() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join("deeper").join("dragoman.db");
    let url = format!("sqlite://{}", path.display());

    let db = db::connect(&url).await.unwrap();
    assert!(path.exists(), "database file not created");
    assert_eq!(backend_name(&db), "sqlite");
    assert_eq!(pragma(&db, "journal_mode").await, "wal");
    assert_eq!(pragma(&db, "foreign_keys").await, "1");
    assert_eq!(pragma(&db, "busy_timeout").await, "5000");

    exercise(&db).await;
    db.close().await.unwrap();
}

/// Two pools on one file (as two processes would be): a writer waits for the other's
/// write transaction instead of failing with `SQLITE_BUSY`.
#[tokio::test]
async fn sqlite_concurrent_writers_wait() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("busy.db").display());
    let first = db::connect(&url).await.unwrap();
    let second = db::connect(&url).await.unwrap();
    Migrator::up(&first, None).await.unwrap();

    let setting_row = |key: &str| setting::Model {
        key: key.into(),
        value: json!(1),
        updated_at: T,
    };

    let txn = begin_write(&first).await.unwrap();
    setting_row("held")
        .into_active_model()
        .reset_all()
        .insert(&txn)
        .await
        .unwrap();
    let waiter = tokio::spawn(async move {
        setting_row("waiting")
            .into_active_model()
            .reset_all()
            .insert(&second)
            .await
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Without a busy timeout the second insert would already have failed.
    assert!(!waiter.is_finished(), "second writer did not wait");
    txn.commit().await.unwrap();
    waiter.await.unwrap().expect("second writer failed");
    assert_eq!(setting::Entity::find().count(&first).await.unwrap(), 2);
    first.close().await.unwrap();
}

#[tokio::test]
async fn postgres_up_round_trip_down() {
    support::on_scratch_postgres("PostgreSQL migration test", |db| async move {
        assert_eq!(backend_name(&db), "postgres");
        exercise(&db).await;
        db.close().await.expect("close");
    })
    .await;
}
