//! The Delivery gRPC service: the stored result (built once, in the
//! request's format and scope, when the request ends) and results on demand.

use crate::error::DeliveryError;
use crate::results::{self, ResultQuery};
use dragoman_book::bilingual::Layout;
use dragoman_model::entities::{request, result};
use dragoman_model::{clock, ids};
use dragoman_proto::principal::InternalCredential;
use dragoman_proto::v1::*;
use object_store::ObjectStore;
use object_store::path::Path;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder, Set,
};
use std::sync::Arc;
use tonic::{Request, Response, Status};

pub struct DeliveryService {
    db: DatabaseConnection,
    blobs: Arc<dyn ObjectStore>,
    credential: InternalCredential,
    /// `RETENTION_RESULTS_DAYS`: stored results are kept this long.
    retention_days: i64,
}

impl DeliveryService {
    pub fn new(
        db: DatabaseConnection,
        blobs: Arc<dyn ObjectStore>,
        credential: InternalCredential,
        retention_days: i64,
    ) -> Self {
        Self {
            db,
            blobs,
            credential,
            retention_days,
        }
    }

    async fn stored(&self, request_id: &str) -> Result<Option<result::Model>, DeliveryError> {
        Ok(result::Entity::find()
            .filter(result::Column::RequestId.eq(request_id))
            .filter(result::Column::Scope.eq("request"))
            .order_by_desc(result::Column::CreatedAt)
            .one(&self.db)
            .await?)
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
        let blobs = dragoman_model::blob::probe(self.blobs.as_ref()).await;
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
        if let Some(existing) = self.stored(&request_id).await? {
            return Ok(Response::new(stored_message(&existing)));
        }
        let row = request::Entity::find_by_id(request_id.clone())
            .one(&self.db)
            .await
            .map_err(DeliveryError::from)?
            .ok_or(DeliveryError::RequestNotFound)?;
        let format = results::default_format(&row);
        let query = ResultQuery {
            format: format.clone(),
            scope: "request".into(),
            partial: false,
            layout: Layout::Interleaved,
        };
        let built = results::build(&self.db, &row.account_id, &request_id, &query).await?;
        let digest = dragoman_book::text::sha256_hex(&built.body);
        let key = format!("results/{request_id}/{}", built.filename);
        self.blobs
            .put(&Path::from(key.clone()), built.body.clone().into())
            .await
            .map_err(|e| DeliveryError::Blob(e.to_string()))?;
        let now = clock::now();
        let stored = result::ActiveModel {
            id: Set(ids::new_id()),
            request_id: Set(request_id),
            format: Set(format),
            scope: Set("request".into()),
            media_type: Set(built.media_type.into()),
            filename: Set(built.filename),
            size: Set(i64::try_from(built.body.len()).unwrap_or(i64::MAX)),
            sha256: Set(digest),
            blob_key: Set(key),
            created_at: Set(now),
            expires_at: Set(Some(now + self.retention_days * 86_400)),
        }
        .insert(&self.db)
        .await
        .map_err(DeliveryError::from)?;
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
            && let Ok(found) = self.blobs.get(&Path::from(stored.blob_key.clone())).await
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
}
