//! The stored result of a request (spec 2.2.1, 3): built once, in the
//! request's own format and scope, when the request ends completed; kept for
//! `RETENTION_RESULTS_DAYS`, then deleted. The final webhook's `artifact`
//! describes it.
//!
//! Several delivery processes may try to build the same result: a
//! coordination lease per request lets one build at a time. Should a build
//! outlive its lease and another process build too, both rows are kept,
//! each with its own blob, and the newest is the one served.

use crate::epub_result::EpubDelivery;
use crate::error::DeliveryError;
use crate::results::{self, BuiltResult, ResultQuery};
use dragoman_model::coordination::Coordination;
use dragoman_model::entities::{request, result};
use dragoman_model::vocab::{RequestStatus, ResultScope};
use dragoman_model::{clock, ids};
use object_store::ObjectStore;
use object_store::path::Path;
use sea_orm::sea_query::Query;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Set,
};
use std::time::Duration;

/// Statuses of a request that gets a stored result.
pub const STORED_FOR: [RequestStatus; 2] = [
    RequestStatus::Completed,
    RequestStatus::CompletedWithResiduals,
];

/// How long one process may build a result before another may take over.
const BUILD_LEASE: Duration = Duration::from_secs(600);

const SECONDS_PER_DAY: i64 = 86_400;

/// Where stored results go and how long they stay.
#[derive(Clone)]
pub struct ResultStore {
    pub blobs: std::sync::Arc<dyn ObjectStore>,
    /// `RETENTION_RESULTS_DAYS`.
    pub retention_days: i64,
    /// How delivered EPUBs are validated and repaired.
    pub epub: EpubDelivery,
}

/// The newest stored result of the request, if any.
pub async fn find(
    db: &impl ConnectionTrait,
    request_id: &str,
) -> Result<Option<result::Model>, DeliveryError> {
    Ok(result::Entity::find()
        .filter(result::Column::RequestId.eq(request_id))
        .filter(result::Column::Scope.eq(ResultScope::Request))
        .order_by_desc(result::Column::CreatedAt)
        .one(db)
        .await?)
}

/// Requests that ended completed at or after `since` and have no stored
/// result yet, oldest first, leaving out `skip`.
pub async fn missing(
    db: &impl ConnectionTrait,
    since: i64,
    skip: Vec<String>,
    limit: u64,
) -> Result<Vec<String>, DeliveryError> {
    let stored = Query::select()
        .column(result::Column::RequestId)
        .from(result::Entity)
        .and_where(result::Column::Scope.eq(ResultScope::Request))
        .to_owned();
    Ok(request::Entity::find()
        .select_only()
        .column(request::Column::Id)
        .filter(request::Column::Status.is_in(STORED_FOR))
        .filter(request::Column::FinishedAt.gte(since))
        .filter(request::Column::Id.not_in_subquery(stored))
        .filter(request::Column::Id.is_not_in(skip))
        .order_by_asc(request::Column::FinishedAt)
        .limit(limit)
        .into_tuple()
        .all(db)
        .await?)
}

/// The coordination lease a process holds while it builds the request's
/// result.
pub fn lease_key(request_id: &str) -> String {
    format!("result:{request_id}")
}

impl ResultStore {
    /// When results of requests that ended now stop being kept.
    pub fn retention_seconds(&self) -> i64 {
        self.retention_days.saturating_mul(SECONDS_PER_DAY)
    }

    /// The stored result, built and stored now when there is none yet;
    /// `None` while another process is building it.
    pub async fn ensure(
        &self,
        db: &impl ConnectionTrait,
        coordination: &dyn Coordination,
        request_id: &str,
    ) -> Result<Option<result::Model>, DeliveryError> {
        if let Some(existing) = find(db, request_id).await? {
            return Ok(Some(existing));
        }
        let key = lease_key(request_id);
        let holder = ids::new_id();
        if !coordination
            .lease_acquire(&key, &holder, BUILD_LEASE)
            .await?
        {
            return Ok(None);
        }
        let stored = self.build_and_store(db, request_id).await;
        if let Err(e) = coordination.lease_release(&key, &holder).await {
            // The lease expires on its own.
            tracing::warn!(request = %request_id, error = %e, "releasing a result lease failed");
        }
        if stored.is_ok() {
            crate::request_changed(coordination, request_id).await;
        }
        stored.map(Some)
    }

    async fn build_and_store(
        &self,
        db: &impl ConnectionTrait,
        request_id: &str,
    ) -> Result<result::Model, DeliveryError> {
        // Another process may have stored it before this one took the lease.
        if let Some(existing) = find(db, request_id).await? {
            return Ok(existing);
        }
        let row = request::Entity::find_by_id(request_id.to_owned())
            .one(db)
            .await?
            .ok_or(DeliveryError::RequestNotFound)?;
        let query = ResultQuery::stored(&row);
        let built = results::build(db, self, &row.account_id, request_id, &query).await?;
        self.keep(db, &row, &query, built).await
    }

    /// Stores `built` as the request's result.
    pub async fn keep(
        &self,
        db: &impl ConnectionTrait,
        row: &request::Model,
        query: &ResultQuery,
        built: BuiltResult,
    ) -> Result<result::Model, DeliveryError> {
        let request_id = row.id.as_str();
        let digest = dragoman_book::text::sha256_hex(&built.body);
        let id = ids::new_id();
        // Each stored row owns its blob, so deleting one never takes
        // another's bytes.
        let key = format!("results/{request_id}/{id}/{}", built.filename);
        self.blobs
            .put(&Path::from(key.clone()), built.body.clone().into())
            .await
            .map_err(DeliveryError::blob(format!("storing {key}")))?;
        let now = clock::now();
        Ok(result::ActiveModel {
            id: Set(id),
            request_id: Set(request_id.to_owned()),
            format: Set(query.format),
            scope: Set(query.scope),
            media_type: Set(built.media_type.into()),
            filename: Set(built.filename),
            size: Set(i64::try_from(built.body.len()).unwrap_or(i64::MAX)),
            sha256: Set(digest),
            blob_key: Set(key),
            created_at: Set(now),
            expires_at: Set(Some(now.saturating_add(self.retention_seconds()))),
        }
        .insert(db)
        .await?)
    }

    /// Deletes up to `limit` results expired at `now`: the blob first (one
    /// already gone is fine), then the row, so a failed delete is tried
    /// again at the next sweep. Returns how many were deleted.
    pub async fn sweep(
        &self,
        db: &impl ConnectionTrait,
        now: i64,
        limit: u64,
    ) -> Result<usize, DeliveryError> {
        let expired = result::Entity::find()
            .filter(result::Column::ExpiresAt.lte(now))
            .order_by_asc(result::Column::ExpiresAt)
            .limit(limit)
            .all(db)
            .await?;
        let mut deleted = 0;
        for row in expired {
            match self.blobs.delete(&Path::from(row.blob_key.clone())).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => {
                    tracing::warn!(result = %row.id, error = %e, "deleting an expired result's blob failed");
                    continue;
                }
            }
            result::Entity::delete_by_id(row.id).exec(db).await?;
            deleted += 1;
        }
        Ok(deleted)
    }

    /// Deletes uploads the gateway left behind when it stopped between
    /// receiving a book and handing it on: whatever is under `uploads/` and
    /// older than a day (an upload being received is younger).
    pub async fn sweep_uploads(&self, now: i64) -> Result<usize, DeliveryError> {
        use futures::TryStreamExt;
        let prefix = Path::from("uploads");
        let stale: Vec<Path> = self
            .blobs
            .list(Some(&prefix))
            .try_filter_map(|meta| async move {
                let old = meta.last_modified.timestamp() < now.saturating_sub(SECONDS_PER_DAY);
                Ok(old.then_some(meta.location))
            })
            .try_collect()
            .await
            .map_err(DeliveryError::blob("listing uploads"))?;
        for path in &stale {
            match self.blobs.delete(path).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(DeliveryError::blob(format!("deleting {path}"))(e)),
            }
        }
        Ok(stale.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration as StdDuration, SystemTime};

    #[tokio::test]
    async fn uploads_left_behind_are_swept_after_a_day() {
        let dir = tempfile::tempdir().expect("tempdir");
        let blobs = dragoman_model::blob::open(dir.path().to_str().expect("utf-8")).expect("store");
        for key in ["uploads/old", "uploads/new", "originals/kept.epub"] {
            blobs
                .put(&Path::from(key), b"book".to_vec().into())
                .await
                .expect("put");
        }
        let two_days_ago = SystemTime::now() - StdDuration::from_secs(2 * 86_400);
        for key in ["uploads/old", "originals/kept.epub"] {
            std::fs::File::options()
                .write(true)
                .open(dir.path().join(key))
                .expect("file")
                .set_modified(two_days_ago)
                .expect("mtime");
        }
        let store = ResultStore {
            blobs: blobs.clone(),
            retention_days: 30,
            epub: EpubDelivery::default(),
        };
        assert_eq!(store.sweep_uploads(clock::now()).await.expect("sweep"), 1);
        assert!(blobs.head(&Path::from("uploads/old")).await.is_err());
        assert!(blobs.head(&Path::from("uploads/new")).await.is_ok());
        assert!(blobs.head(&Path::from("originals/kept.epub")).await.is_ok());
    }
}
