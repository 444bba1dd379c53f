//! The bodies of the two events: `translation_request.finished` (spec 6.1),
//! rendered at its first attempt so that it carries the stored result, and
//! `chapters.translated` (spec 6.2), one numbered batch per group of chapters
//! whose passages all got a translation while the job runs.

use crate::error::DeliveryError;
use dragoman_model::clock;
use dragoman_model::documents::report::CompletionReport;
use dragoman_model::documents::webhook::{
    AnnouncedChapter, ChaptersTranslatedEvent, FinishedEvent, ResultArtifact,
};
use dragoman_model::entities::{chapter, passage, request, result, webhook_delivery};
use dragoman_model::vocab::CallbackEvent;
use dragoman_model::webhook::announced_in;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, QueryFilter,
    QueryOrder, QuerySelect,
};
use std::collections::HashSet;

fn status_url(request_id: &str) -> String {
    format!("/api/v1/translation-requests/{request_id}")
}

fn result_url(request_id: &str) -> String {
    format!("/api/v1/translation-requests/{request_id}/result")
}

/// Body of the final event of a request that has ended.
pub fn finished_body(
    row: &request::Model,
    stored: Option<&result::Model>,
) -> Result<String, DeliveryError> {
    let report = row
        .report
        .clone()
        .map(serde_json::from_value::<CompletionReport>)
        .transpose()
        .map_err(|e| DeliveryError::DeliveryFailed(format!("the stored report: {e}")))?;
    let event = FinishedEvent {
        artifact: stored.map(|r| ResultArtifact {
            format: r.format,
            sha256: r.sha256.clone(),
            size: r.size,
        }),
        error: (!row.error.is_empty()).then(|| row.error.clone()),
        event: CallbackEvent::Finished,
        external_id: row.external_id.clone(),
        finished_at: row.finished_at.unwrap_or_else(clock::now),
        job_id: row.job_id.clone(),
        project_id: row.project_id.clone(),
        report,
        request_id: row.id.clone(),
        result_url: result_url(&row.id),
        status: row.status,
        status_url: status_url(&row.id),
    };
    body(&event)
}

/// The JSON text of an event.
fn body(event: &impl serde::Serialize) -> Result<String, DeliveryError> {
    serde_json::to_string(event).map_err(|e| DeliveryError::DeliveryFailed(e.to_string()))
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
    let body = body(&ChaptersTranslatedEvent {
        announced: count(announced.len() + chapters.len()),
        batch: i64::from(batch),
        chapters: chapters
            .iter()
            .map(|c| AnnouncedChapter {
                chapter_id: c.id.clone(),
                external_id: c.external_id.clone(),
                number: c.number.map(i64::from),
                title: c.title.clone(),
            })
            .collect(),
        created_at: now,
        event: CallbackEvent::ChaptersTranslated,
        external_id: row.external_id.clone(),
        project_id: row.project_id.clone(),
        request_id: row.id.clone(),
        result_url: format!("{}?partial=true", result_url(&row.id)),
        series_id: row.series_id.clone(),
        status_url: status_url(&row.id),
        total: count(ids.len()),
    })?;
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

/// A count as the events give it.
fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}
