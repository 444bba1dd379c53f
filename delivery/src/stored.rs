//! The stored result of a request (spec 2.2.1, 3): built once, in the
//! request's own format and scope, when the request ends; kept for
//! `RETENTION_RESULTS_DAYS`. The final webhook's `artifact` describes it.

use crate::error::DeliveryError;
use crate::results::{self, ResultQuery};
use dragoman_book::bilingual::Layout;
use dragoman_model::entities::{request, result};
use dragoman_model::{clock, ids};
use object_store::ObjectStore;
use object_store::path::Path;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, Set,
};

/// Where stored results go and how long they stay.
#[derive(Clone)]
pub struct ResultStore {
    pub blobs: std::sync::Arc<dyn ObjectStore>,
    /// `RETENTION_RESULTS_DAYS`.
    pub retention_days: i64,
}

/// The newest stored result of the request, if any.
pub async fn find(
    db: &impl ConnectionTrait,
    request_id: &str,
) -> Result<Option<result::Model>, DeliveryError> {
    Ok(result::Entity::find()
        .filter(result::Column::RequestId.eq(request_id))
        .filter(result::Column::Scope.eq("request"))
        .order_by_desc(result::Column::CreatedAt)
        .one(db)
        .await?)
}

impl ResultStore {
    /// The stored result, built and stored now when there is none yet.
    pub async fn ensure(
        &self,
        db: &impl ConnectionTrait,
        request_id: &str,
    ) -> Result<result::Model, DeliveryError> {
        if let Some(existing) = find(db, request_id).await? {
            return Ok(existing);
        }
        let row = request::Entity::find_by_id(request_id.to_owned())
            .one(db)
            .await?
            .ok_or(DeliveryError::RequestNotFound)?;
        let format = results::default_format(&row);
        let query = ResultQuery {
            format: format.clone(),
            scope: "request".into(),
            partial: false,
            layout: Layout::Interleaved,
        };
        let built = results::build(db, &row.account_id, request_id, &query).await?;
        let digest = dragoman_book::text::sha256_hex(&built.body);
        let key = format!("results/{request_id}/{}", built.filename);
        self.blobs
            .put(&Path::from(key.clone()), built.body.clone().into())
            .await
            .map_err(|e| DeliveryError::Blob(e.to_string()))?;
        let now = clock::now();
        Ok(result::ActiveModel {
            id: Set(ids::new_id()),
            request_id: Set(request_id.to_owned()),
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
        .insert(db)
        .await?)
    }
}
