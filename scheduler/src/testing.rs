//! What the unit tests share: an in-memory database with the real schema,
//! one account with a token and a provider, and submissions built from the
//! JSON a client would send.

use crate::error::SchedulerError;
use crate::intake::{self, IntakeLimits};
use crate::lifecycle::job_start::StartSettings;
use crate::lifecycle::queue::QueueSettings;
use crate::lifecycle::{Dispatcher, Leased};
use dragoman_migrations::{Migrator, MigratorTrait};
use dragoman_model::entities::{
    account, api_token, chapter, job, passage, project, provider, request, series,
};
use dragoman_model::payload::TranslationPayload;
use dragoman_model::server_key::ServerKey;
use dragoman_model::vocab::{AnalysisMode, InputKind, Priority, ProviderKind};
use dragoman_model::webhook::{WebhookPolicy, WebhookSettings};
use dragoman_model::{clock, ids};
use dragoman_proto::principal::Principal;
use dragoman_proto::v1::{SubmitRequest, SubmitResponse};
use dragoman_proto::wire::{self, WireEnum};
use dragoman_testing::TestDatabase;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, Set,
};
use serde_json::{Value, json};

/// The only host a callback may name in these tests (an address literal,
/// so nothing is resolved).
pub const CALLBACK: &str = "http://127.0.0.1:9/hook";

pub struct Fixture {
    pub db: DatabaseConnection,
    pub account: account::Model,
    pub token: api_token::Model,
    pub provider: provider::Model,
    pub webhooks: WebhookPolicy,
    pub limits: IntakeLimits,
    /// The blob store uploads are read from (in memory).
    pub blobs: std::sync::Arc<dyn object_store::ObjectStore>,
    /// The dispatch state of one scheduler process (whose turn it is).
    pub dispatcher: Dispatcher,
    /// The settings of the job-start checks.
    pub start: StartSettings,
}

impl Fixture {
    /// A fixture on an in-memory SQLite database.
    pub async fn new() -> Fixture {
        let db = dragoman_model::db::connect("sqlite::memory:")
            .await
            .expect("in-memory database");
        Fixture::on(db).await
    }

    /// A fixture on `db`, migrated here.
    pub async fn on(db: DatabaseConnection) -> Fixture {
        Migrator::up(&db, None).await.expect("migrations");
        let now = clock::now();
        let mut account = account::ActiveModel::new_account("reader", String::new(), false);
        account.priority_ceiling = Set(Priority::High);
        let account = account.insert(&db).await.expect("account");
        let token = api_token::ActiveModel {
            id: Set(ids::new_id()),
            account_id: Set(account.id.clone()),
            name: Set("ci".into()),
            prefix: Set(ids::new_id()),
            secret_hash: Set(String::new()),
            scopes: Set(json!([])),
            created_at: Set(now),
            expires_at: Set(None),
            revoked_at: Set(None),
            last_used_at: Set(None),
            webhook_secret_enc: Set(None),
            max_priority: Set(Priority::High),
            max_running: Set(10),
            max_queued: Set(100),
            budget_amount: Set(None),
            budget_period: Set(None),
        }
        .insert(&db)
        .await
        .expect("token");
        let provider = insert_provider(&db, "simulator").await;
        let settings = WebhookSettings::from_environment(
            "127.0.0.1",
            "127.0.0.0/8",
            6,
            10,
            "whsec_0123456789abcdef0123456789abcdef",
        )
        .expect("webhook settings");
        Fixture {
            db,
            account,
            token,
            provider,
            webhooks: WebhookPolicy::new(settings, ServerKey::generate()),
            limits: IntakeLimits {
                max_chapters: 50,
                analysis_mode: AnalysisMode::Parallel,
                final_review: true,
                batch: false,
                review_below: crate::lifecycle::lease::DEFAULT_REVIEW_BELOW,
                queue: QueueSettings::default(),
                licence: dragoman_model::licence::LicenceSettings::default(),
                budget_switch_percent: dragoman_model::budget::DEFAULT_SWITCH_PERCENT,
            },
            blobs: std::sync::Arc::new(object_store::memory::InMemory::new()),
            dispatcher: Dispatcher::new(QueueSettings::default()),
            start: StartSettings::default(),
        }
    }

    /// Leases the next job for `worker` as the scheduler service does after
    /// a wake-up: every change a test makes between two leases is seen.
    pub async fn lease(&self, worker: &str, seconds: i64) -> Result<Leased, SchedulerError> {
        self.dispatcher.invalidate();
        crate::lifecycle::lease(&self.db, worker, seconds, &self.dispatcher, &self.start).await
    }

    /// Registers one more provider.
    pub async fn add_provider(&self, name: &str) -> provider::Model {
        insert_provider(&self.db, name).await
    }

    pub fn principal(&self) -> Principal {
        Principal {
            account_id: self.account.id.clone(),
            token_id: Some(self.token.id.clone()),
            admin: false,
        }
    }

    /// A payload for volume `number` of series `series` with the fixture's
    /// provider; `chapters` as the JSON array a client sends.
    pub fn body(&self, series: &str, number: i64, chapters: Value) -> Value {
        json!({
            "series": {"name": series, "create_if_missing": true},
            "volume": {"number": number},
            "source_language": "en",
            "target_language": "fr",
            "provider_id": self.provider.id,
            "chapters": chapters,
        })
    }

    pub fn message(body: &Value, key: Option<&str>) -> SubmitRequest {
        let payload: TranslationPayload =
            serde_json::from_value(body.clone()).expect("a payload the gateway accepts");
        SubmitRequest {
            input: InputKind::Json.to_wire(),
            idempotency_key: key.map(str::to_owned),
            submission: Some(wire::submission(&payload)),
            files: Vec::new(),
            split: 0,
        }
    }

    pub async fn submit_message(
        &self,
        message: SubmitRequest,
    ) -> Result<SubmitResponse, SchedulerError> {
        intake::submit(
            &self.db,
            self.blobs.as_ref(),
            &self.principal(),
            message,
            &self.limits,
            &self.webhooks,
        )
        .await
        .map(|(answer, _)| answer)
    }

    /// Puts `files` (name, bytes) in the blob store as the gateway would and
    /// submits them with the form fields `fields`.
    pub async fn upload(
        &self,
        input: InputKind,
        files: &[(&str, &[u8])],
        fields: &[(&str, &str)],
    ) -> Result<SubmitResponse, SchedulerError> {
        use object_store::ObjectStore;
        use sha2::Digest;
        let mut uploaded = Vec::new();
        for (name, bytes) in files {
            let key = format!("uploads/{}", ids::new_id());
            self.blobs
                .put(
                    &object_store::path::Path::from(key.as_str()),
                    bytes.to_vec().into(),
                )
                .await
                .expect("blob");
            uploaded.push(dragoman_model::upload::UploadedFile {
                name: (*name).to_owned(),
                blob_key: key,
                sha256: hex::encode(sha2::Sha256::digest(bytes)),
                size: bytes.len() as u64,
            });
        }
        let text = serde_urlencoded::to_string(fields).expect("fields");
        let form: dragoman_model::upload::UploadForm =
            serde_urlencoded::from_str(&text).expect("a form the gateway accepts");
        let (payload, split) = form.into_payload().expect("known events");
        self.submit_message(SubmitRequest {
            input: input.to_wire(),
            idempotency_key: None,
            submission: Some(wire::submission(&payload)),
            files: wire::uploaded_files(&uploaded),
            split: split.to_wire(),
        })
        .await
    }

    /// Keys in the blob store under `prefix`.
    pub async fn blob_keys(&self, prefix: &str) -> Vec<String> {
        use futures::TryStreamExt;
        let prefix = object_store::path::Path::from(prefix);
        self.blobs
            .list(Some(&prefix))
            .map_ok(|meta| meta.location.to_string())
            .try_collect()
            .await
            .expect("list")
    }

    pub async fn submit(&self, body: &Value) -> Result<SubmitResponse, SchedulerError> {
        self.submit_message(Self::message(body, None)).await
    }

    /// Submits and returns the stored request.
    pub async fn accepted(&self, body: &Value) -> request::Model {
        let answer = self.submit(body).await.expect("accepted");
        let id = answer.summary.expect("summary").request_id;
        self.request(&id).await
    }

    pub async fn request(&self, id: &str) -> request::Model {
        request::Entity::find_by_id(id.to_owned())
            .one(&self.db)
            .await
            .expect("select")
            .expect("request")
    }

    pub async fn job(&self, id: &str) -> job::Model {
        job::Entity::find_by_id(id.to_owned())
            .one(&self.db)
            .await
            .expect("select")
            .expect("job")
    }

    pub async fn volume(&self, id: &str) -> project::Model {
        project::Entity::find_by_id(id.to_owned())
            .one(&self.db)
            .await
            .expect("select")
            .expect("volume")
    }

    /// The volume's chapters in reading order.
    pub async fn chapters(&self, project_id: &str) -> Vec<chapter::Model> {
        chapter::Entity::find()
            .filter(chapter::Column::ProjectId.eq(project_id))
            .order_by_asc(chapter::Column::Position)
            .all(&self.db)
            .await
            .expect("chapters")
    }

    pub async fn passages(&self, chapter_id: &str) -> Vec<passage::Model> {
        passage::Entity::find()
            .filter(passage::Column::ChapterId.eq(chapter_id))
            .order_by_asc(passage::Column::Position)
            .all(&self.db)
            .await
            .expect("passages")
    }

    /// Rows of the tables a refused submission must leave alone.
    pub async fn stored(&self) -> (u64, u64, u64, u64) {
        (
            request::Entity::find()
                .count(&self.db)
                .await
                .expect("count"),
            series::Entity::find().count(&self.db).await.expect("count"),
            project::Entity::find()
                .count(&self.db)
                .await
                .expect("count"),
            chapter::Entity::find()
                .count(&self.db)
                .await
                .expect("count"),
        )
    }
}

/// One chapter item of a payload.
pub fn chapter(number: i64, content: &str) -> Value {
    json!({"number": number, "title": format!("Chapter {number}"), "content": content})
}

async fn insert_provider(db: &DatabaseConnection, name: &str) -> provider::Model {
    let now = clock::now();
    provider::ActiveModel {
        id: Set(ids::new_id()),
        name: Set(name.into()),
        kind: Set(ProviderKind::OpenAi),
        model: Set("sim".into()),
        base_url: Set("http://127.0.0.1:1".into()),
        api_key_env: Set(String::new()),
        price_input: Set(None),
        price_output: Set(None),
        price_cached_input: Set(None),
        capacity: Set(4),
        batch_discount: Set(0.5),
        fallback_provider_id: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(db)
    .await
    .expect("provider")
}

/// Runs `test` on a fixture over SQLite, then over a fresh PostgreSQL
/// database when `TEST_DATABASE_URL` names a server (required under CI,
/// `CI=true`; skipped with a note otherwise). The database is dropped
/// afterwards, even when the test fails.
pub async fn on_both<F, Fut>(test: F)
where
    F: Fn(Fixture) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    test(Fixture::new().await).await;
    // Dropped with the handle, also when the test fails.
    let Some(database) = TestDatabase::fresh("PostgreSQL variant", "dragoman_scheduler").await
    else {
        return;
    };
    let db = dragoman_model::db::connect(database.url())
        .await
        .expect("test database");
    test(Fixture::on(db.clone()).await).await;
    let _ = db.close().await;
}
