//! The Delivery gRPC service: the stored result (built once, in the
//! request's format and scope, when the request ends) and results on demand.

use crate::error::DeliveryError;
use crate::results::{self, ResultQuery};
use crate::stored::{self, ResultStore};
use crate::webhooks::{admin, events};
use dragoman_book::bilingual::Layout;
use dragoman_model::clock;
use dragoman_model::coordination::Coordination;
use dragoman_model::entities::{request, result};
use dragoman_model::webhook::{WEBHOOKS_CHANNEL, WebhookPolicy};
use dragoman_proto::principal::InternalCredential;
use dragoman_proto::v1::*;
use object_store::path::Path;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};
use std::sync::Arc;
use tonic::{Request, Response, Status};

pub struct DeliveryService {
    db: DatabaseConnection,
    results: ResultStore,
    coordination: Arc<dyn Coordination>,
    credential: InternalCredential,
    webhooks: WebhookPolicy,
}

impl DeliveryService {
    pub fn new(
        db: DatabaseConnection,
        results: ResultStore,
        coordination: Arc<dyn Coordination>,
        credential: InternalCredential,
        webhooks: WebhookPolicy,
    ) -> Self {
        Self {
            db,
            results,
            coordination,
            credential,
            webhooks,
        }
    }

    async fn stored(&self, request_id: &str) -> Result<Option<result::Model>, DeliveryError> {
        stored::find(&self.db, request_id).await
    }

    /// Wake-ups are hints: the dispatcher looks at the outbox every few
    /// seconds anyway, so a failed notify is only logged.
    async fn wake_dispatcher(&self) {
        if let Err(e) = self.coordination.notify(WEBHOOKS_CHANNEL).await {
            tracing::warn!(error = %e, "coordination notify failed");
        }
    }
}

fn stored_message(r: &result::Model) -> StoredResult {
    StoredResult {
        format: r.format.clone(),
        media_type: r.media_type.clone(),
        filename: r.filename.clone(),
        size: r.size,
        sha256: r.sha256.clone(),
        created_at: r.created_at,
    }
}

#[tonic::async_trait]
impl dragoman_proto::Delivery for DeliveryService {
    async fn status(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<RoleStatus>, Status> {
        self.credential.verify(&request)?;
        let db = dragoman_model::db::ping(&self.db).await;
        let blobs = dragoman_model::blob::probe(self.results.blobs.as_ref()).await;
        let detail = match (&db, &blobs) {
            (Ok(()), Ok(())) => String::new(),
            (Err(e), _) => format!("database: {e}"),
            (_, Err(e)) => format!("blob store: {e}"),
        };
        Ok(Response::new(RoleStatus {
            role: "delivery".into(),
            ok: db.is_ok() && blobs.is_ok(),
            detail,
        }))
    }

    /// Builds and stores the request's result once; a second call returns
    /// the stored one.
    async fn store_result(
        &self,
        request: Request<StoreResultRequest>,
    ) -> Result<Response<StoredResult>, Status> {
        self.credential.verify(&request)?;
        let request_id = request.into_inner().request_id;
        let stored = self.results.ensure(&self.db, &request_id).await?;
        self.wake_dispatcher().await;
        Ok(Response::new(stored_message(&stored)))
    }

    async fn get_result(
        &self,
        request: Request<GetResultRequest>,
    ) -> Result<Response<ResultFile>, Status> {
        let who = self.credential.principal(&request)?;
        let m = request.into_inner();
        let layout = match m.layout.as_str() {
            "" | "interleaved" => Layout::Interleaved,
            "side-by-side" => Layout::SideBySide,
            _ => return Err(DeliveryError::InvalidRequest("layout").into()),
        };
        let scope = if m.scope.is_empty() {
            "request".to_owned()
        } else {
            m.scope
        };
        let row = request::Entity::find_by_id(m.request_id.clone())
            .filter(request::Column::AccountId.eq(who.account_id.clone()))
            .one(&self.db)
            .await
            .map_err(DeliveryError::from)?
            .ok_or(DeliveryError::RequestNotFound)?;
        let format = if m.format.is_empty() {
            results::default_format(&row)
        } else {
            m.format
        };
        // The stored result is served as it is, while it is kept.
        let wants_stored = scope == "request"
            && layout == Layout::Interleaved
            && format == results::default_format(&row);
        if wants_stored
            && let Some(stored) = self.stored(&row.id).await?
            && stored.format == format
            && stored.expires_at.is_none_or(|at| at > clock::now())
            && let Ok(found) = self
                .results
                .blobs
                .get(&Path::from(stored.blob_key.clone()))
                .await
            && let Ok(bytes) = found.bytes().await
        {
            let complete = row.status == "completed";
            return Ok(Response::new(ResultFile {
                body: bytes.to_vec(),
                media_type: stored.media_type,
                filename: stored.filename,
                complete,
                status: row.status,
            }));
        }
        let query = ResultQuery {
            format,
            scope,
            partial: m.partial,
            layout,
        };
        let built = results::build(&self.db, &who.account_id, &row.id, &query).await?;
        Ok(Response::new(ResultFile {
            body: built.body,
            media_type: built.media_type.into(),
            filename: built.filename,
            complete: built.complete,
            status: row.status,
        }))
    }

    async fn announce_chapters(
        &self,
        request: Request<AnnounceChaptersRequest>,
    ) -> Result<Response<AnnounceChaptersResponse>, Status> {
        self.credential.verify(&request)?;
        let request_id = request.into_inner().request_id;
        let queued = events::announce_chapters(&self.db, &request_id).await?;
        if queued.is_some() {
            self.wake_dispatcher().await;
        }
        let (batch, chapters) = queued.unwrap_or((0, 0));
        Ok(Response::new(AnnounceChaptersResponse {
            batch,
            chapters: i32::try_from(chapters).unwrap_or(i32::MAX),
        }))
    }

    async fn get_webhook_settings(
        &self,
        request: Request<StatusRequest>,
    ) -> Result<Response<WebhookSettingsView>, Status> {
        let who = self.credential.principal(&request)?;
        if !who.admin {
            return Err(DeliveryError::AdminRequired.into());
        }
        let view = admin::view(&self.db, &self.webhooks).await?;
        Ok(Response::new(WebhookSettingsView {
            view_json: view.to_string(),
        }))
    }

    async fn update_webhook_settings(
        &self,
        request: Request<UpdateWebhookSettingsRequest>,
    ) -> Result<Response<WebhookSettingsView>, Status> {
        let who = self.credential.principal(&request)?;
        if !who.admin {
            return Err(DeliveryError::AdminRequired.into());
        }
        let m = request.into_inner();
        let view = admin::update(&self.db, &self.webhooks, &m.changes_json, m.reset).await?;
        tracing::info!(account = %who.account_id, reset = m.reset, "webhook settings changed");
        // Retries scheduled under the old settings are looked at again now.
        self.wake_dispatcher().await;
        Ok(Response::new(WebhookSettingsView {
            view_json: view.to_string(),
        }))
    }
}
