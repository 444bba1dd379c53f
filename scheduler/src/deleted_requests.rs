//! Requests whose volume was deleted. Deleting a volume deletes what
//! belongs to it, its requests' rows with it; what each request's owner can
//! still ask is kept here: its status document as it stood, with
//! `volume_deleted_at` set and no stored result (spec 4.5: its result is
//! 404 `volume_not_found`).
//!
//! A kept request is no longer a request of the account: it is not listed,
//! it takes no action (`volume_not_found`), and its external id and
//! idempotency key are free for the same content sent again, which makes a
//! new request in a new volume. It goes with its account.

use crate::document;
use crate::error::SchedulerError;
use crate::lifecycle::queue::QueueSettings;
use dragoman_model::documents::request::RequestDocument;
use dragoman_model::entities::{deleted_request, project, request};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, Set,
};

/// Keeps the status document of every request of `volume`, about to be
/// deleted at `now` in the same transaction.
pub async fn keep(
    txn: &impl ConnectionTrait,
    volume: &project::Model,
    queue: &QueueSettings,
    now: i64,
) -> Result<(), SchedulerError> {
    let rows = request::Entity::find()
        .filter(request::Column::ProjectId.eq(volume.id.as_str()))
        .all(txn)
        .await?;
    for row in rows {
        let mut kept = document::build(txn, &row, queue).await?;
        kept.volume_deleted_at = Some(now);
        // The stored result goes with the volume.
        kept.result = None;
        kept.queue = None;
        let kept = serde_json::to_value(&kept).map_err(|e| stored(&e))?;
        deleted_request::ActiveModel {
            id: Set(row.id.clone()),
            account_id: Set(row.account_id.clone()),
            series_id: Set(row.series_id.clone()),
            project_id: Set(row.project_id.clone()),
            document: Set(kept),
            deleted_at: Set(now),
        }
        .insert(txn)
        .await?;
    }
    Ok(())
}

/// The kept request `request_id` of `account_id`, if its volume was
/// deleted.
pub async fn find(
    db: &impl ConnectionTrait,
    account_id: &str,
    request_id: &str,
) -> Result<Option<deleted_request::Model>, SchedulerError> {
    Ok(deleted_request::Entity::find_by_id(request_id.to_owned())
        .filter(deleted_request::Column::AccountId.eq(account_id))
        .one(db)
        .await?)
}

/// The document kept of a request; a volume is deleted only once its
/// requests ended.
pub fn document_of(kept: &deleted_request::Model) -> Result<RequestDocument, SchedulerError> {
    serde_json::from_value(kept.document.clone()).map_err(|e| stored(&e))
}

fn stored(error: &serde_json::Error) -> SchedulerError {
    SchedulerError::Db(DbErr::Json(format!("kept status document: {error}")))
}
