//! The bodies of the two events: `translation_request.finished` (spec 6.1),
//! rendered at its first attempt so that it carries the stored result, and
//! `chapters.translated` (spec 6.2), one numbered batch per group of chapters
//! whose passages all got a translation while the job runs.

use crate::error::DeliveryError;
use dragoman_model::clock;
use dragoman_model::entities::{chapter, passage, request, result, webhook_delivery};
use dragoman_model::vocab::CallbackEvent;
use dragoman_model::webhook::announced_in;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, QueryFilter,
    QueryOrder, QuerySelect,
};
use serde_json::json;
use std::collections::HashSet;

fn status_url(request_id: &str) -> String {
    format!("/api/v1/translation-requests/{request_id}")
}

fn result_url(request_id: &str) -> String {
    format!("/api/v1/translation-requests/{request_id}/result")
}

/// Body of the final event of a request that has ended.
pub fn finished_body(row: &request::Model, stored: Option<&result::Model>) -> String {
    let artifact = stored.map(|r| json!({"format": r.format, "size": r.size, "sha256": r.sha256}));
    json!({
        "event": CallbackEvent::Finished,
        "request_id": row.id,
        "external_id": row.external_id,
        "status": row.status,
        "error": (!row.error.is_empty()).then_some(&row.error),
        "project_id": row.project_id,
        "job_id": row.job_id,
        "status_url": status_url(&row.id),
        "result_url": result_url(&row.id),
        "artifact": artifact,
        "report": row.report,
        "finished_at": row.finished_at.unwrap_or_else(clock::now),
    })
    .to_string()
}

/// Queues a batch of the request's chapters that are now fully translated,
/// were not at import and were not announced yet. Returns the batch number
/// and its size, or `None` when there is nothing new. Runs in one write
/// transaction holding the request row, so two workers never announce a
/// chapter twice.
pub async fn announce_chapters(
    db: &sea_orm::DatabaseConnection,
    request_id: &str,
) -> Result<Option<(i32, usize)>, DeliveryError> {
    let txn = dragoman_model::db::begin_write(db).await?;
    let mut find = request::Entity::find_by_id(request_id.to_owned());
    if txn.get_database_backend() == DbBackend::Postgres {
        find = find.lock_exclusive();
    }
    let Some(row) = find.one(&txn).await? else {
        txn.rollback().await?;
        return Err(DeliveryError::RequestNotFound);
    };
    // Batches are announced while the job runs, never after the end.
    if !row.wants_chapter_events() || row.status.is_final() {
        txn.rollback().await?;
        return Ok(None);
    }
    let ids = row.chapter_ids();
    let at_import: HashSet<String> = row
        .chapter_list("translated_at_import")
        .into_iter()
        .collect();
    let earlier = webhook_delivery::Entity::find()
        .filter(webhook_delivery::Column::RequestId.eq(request_id))
        .filter(webhook_delivery::Column::Event.eq(CallbackEvent::ChaptersTranslated))
        .all(&txn)
        .await?;
    let announced: HashSet<String> = earlier.iter().flat_map(|d| announced_in(&d.body)).collect();
    let candidates: Vec<String> = ids
        .iter()
        .filter(|id| !at_import.contains(*id) && !announced.contains(*id))
        .cloned()
        .collect();
    if candidates.is_empty() {
        txn.rollback().await?;
        return Ok(None);
    }
    let translated = passage::fully_translated_chapters(&txn, &candidates).await?;
    let complete: Vec<String> = candidates
        .into_iter()
        .filter(|id| translated.contains(id))
        .collect();
    if complete.is_empty() {
        txn.rollback().await?;
        return Ok(None);
    }
    let chapters = chapter::Entity::find()
        .filter(chapter::Column::Id.is_in(complete.clone()))
        .order_by_asc(chapter::Column::Position)
        .all(&txn)
        .await?;
    let batch = earlier.iter().filter_map(|d| d.batch).max().unwrap_or(0) + 1;
    let now = clock::now();
    let body = json!({
        "event": CallbackEvent::ChaptersTranslated,
        "request_id": row.id,
        "external_id": row.external_id,
        "series_id": row.series_id,
        "project_id": row.project_id,
        "batch": batch,
        "chapters": chapters.iter().map(|c| json!({
            "chapter_id": c.id,
            "external_id": c.external_id,
            "number": c.number,
            "title": c.title,
        })).collect::<Vec<_>>(),
        "announced": announced.len() + chapters.len(),
        "total": ids.len(),
        "status_url": status_url(&row.id),
        "result_url": format!("{}?partial=true", result_url(&row.id)),
        "created_at": now,
    })
    .to_string();
    let url = row.callback_url.clone().unwrap_or_default();
    webhook_delivery::ActiveModel::queued(
        &row.id,
        CallbackEvent::ChaptersTranslated,
        Some(batch),
        &url,
        body,
    )
    .insert(&txn)
    .await?;
    txn.commit().await?;
    Ok(Some((batch, chapters.len())))
}
