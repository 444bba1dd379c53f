//! `Submit`: a request becomes a stored request, its chapters and passages,
//! and a job — or, when its series is busy with another volume, a queued
//! request that waits for it.
//!
//! The order is the one of spec 4.2: the payload's meaning
//! ([`TranslationPayload::check`], run here and only here), the idempotency
//! key, then a replay of the same content (answered even when quotas are
//! full), then the admission checks ([`admission`]); a refusal stores
//! nothing. One write transaction then places the request ([`placement`]),
//! imports its chapters ([`import`]) and stores the request and its job.

mod admission;
mod chapter_order;
mod import;
mod placement;

pub use admission::Admitted;
pub use import::ChapterChange;

use crate::error::SchedulerError;
use crate::{chapters, lifecycle, steps};
use dragoman_model::entities::{passage, project, request};
use dragoman_model::payload::TranslationPayload;
use dragoman_model::vocab::{
    CallbackEvent, InputKind, Issue, IssueKind, RequestStatus, ResultFormat, Stage, VolumeStatus,
};
use dragoman_model::webhook::WebhookPolicy;
use dragoman_model::{clock, ids};
use dragoman_proto::principal::Principal;
use dragoman_proto::v1::{RequestSummary, SubmitRequest, SubmitResponse};
use dragoman_proto::wire::{self, WireEnum};
use sea_orm::{ActiveModelTrait, DatabaseConnection, DatabaseTransaction, Set};
use serde_json::json;

/// Limits of intake (spec 8).
#[derive(Debug, Clone)]
pub struct IntakeLimits {
    /// `API_MAX_CHAPTERS`.
    pub max_chapters: usize,
}

/// Attempts at storing a request that lost a race on a unique index.
const STORE_ATTEMPTS: u32 = 3;

/// An `Idempotency-Key` is 1 to 200 printable ASCII characters. The gateway
/// passes the header through as it came (lossily decoded), so this is the
/// one place the rule is applied.
pub fn valid_idempotency_key(key: &str) -> bool {
    (1..=200).contains(&key.len()) && key.bytes().all(|b| (0x20..=0x7e).contains(&b))
}

pub fn summary(row: &request::Model) -> RequestSummary {
    RequestSummary {
        request_id: row.id.clone(),
        external_id: row.external_id.clone(),
        series_id: row.series_id.clone(),
        project_id: row.project_id.clone(),
        job_id: row.job_id.clone(),
        input: row.input.to_wire(),
        status: row.status.to_wire(),
    }
}

/// A request that passed the checks of its content, before admission.
pub struct Submitted {
    pub input: InputKind,
    pub payload: TranslationPayload,
    pub key: Option<String>,
    /// [`TranslationPayload::content_hash`]: what a replay must match.
    pub hash: String,
}

/// Decodes the message and applies the payload's rules of meaning and the
/// idempotency key rule.
pub fn decode(message: SubmitRequest, limits: &IntakeLimits) -> Result<Submitted, SchedulerError> {
    let input =
        InputKind::from_wire(message.input, "input").map_err(SchedulerError::payload_field)?;
    let submission = message.submission.ok_or_else(|| {
        SchedulerError::InvalidPayload(vec![Issue::new([json!("body")], IssueKind::Missing)])
    })?;
    let payload = wire::payload(submission).map_err(SchedulerError::payload_field)?;
    let issues = payload.check(limits.max_chapters);
    if !issues.is_empty() {
        return Err(SchedulerError::InvalidPayload(issues));
    }
    let key = message.idempotency_key;
    if key.as_deref().is_some_and(|k| !valid_idempotency_key(k)) {
        return Err(SchedulerError::InvalidIdempotencyKey);
    }
    let hash = payload.content_hash();
    Ok(Submitted {
        input,
        payload,
        key,
        hash,
    })
}

fn replayed(original: &request::Model) -> SubmitResponse {
    SubmitResponse {
        summary: Some(summary(original)),
        replayed: true,
    }
}

/// Runs a submission to its answer; the flag says whether a job was created
/// (workers are then woken).
pub async fn submit(
    db: &DatabaseConnection,
    who: &Principal,
    message: SubmitRequest,
    limits: &IntakeLimits,
    webhooks: &WebhookPolicy,
) -> Result<(SubmitResponse, bool), SchedulerError> {
    let submitted = decode(message, limits)?;
    // A replay is answered even when quotas are full: look before checking.
    if let Some(original) = admission::replay(db, &who.account_id, &submitted).await? {
        return Ok((replayed(&original), false));
    }
    let admitted = admission::admit(db, who, webhooks, submitted).await?;

    // Two writers can race past the checks above (PostgreSQL runs them side
    // by side): the loser hits a unique index, and the next attempt finds
    // the winner's request (a replay) or series.
    let mut attempts = 0;
    let row = loop {
        attempts += 1;
        let txn = dragoman_model::db::begin_write(db).await?;
        // Looked up again under the write lock: of concurrent identical
        // submissions, the first stores and the others replay it.
        if let Some(original) =
            admission::replay(&txn, &admitted.owner.id, &admitted.submitted).await?
        {
            txn.rollback().await?;
            return Ok((replayed(&original), false));
        }
        let stored = match store(&txn, &admitted).await {
            Ok(row) => txn
                .commit()
                .await
                .map(|()| row)
                .map_err(SchedulerError::from),
            Err(e) => {
                txn.rollback().await?;
                Err(e)
            }
        };
        match stored {
            Ok(row) => break row,
            Err(SchedulerError::Db(e)) if attempts < STORE_ATTEMPTS && is_unique_violation(&e) => {
                continue;
            }
            Err(e) => return Err(e),
        }
    };
    let has_job = row.job_id.is_some();
    Ok((
        SubmitResponse {
            summary: Some(summary(&row)),
            replayed: false,
        },
        has_job,
    ))
}

fn is_unique_violation(e: &sea_orm::DbErr) -> bool {
    matches!(
        e.sql_err(),
        Some(sea_orm::SqlErr::UniqueConstraintViolation(_))
    )
}

/// Stores an admitted request: its series and volume, its chapters, the
/// request row and — when it starts and its series is free — its job.
async fn store(
    txn: &DatabaseTransaction,
    admitted: &Admitted,
) -> Result<request::Model, SchedulerError> {
    let now = clock::now();
    let payload = &admitted.submitted.payload;
    let start = admitted.start;
    let series = placement::resolve_series(txn, admitted).await?;
    let volume = placement::resolve_volume(txn, admitted, &series).await?;
    let incoming = payload.chapters.iter().map(chapters::read).collect();
    let mut imported = import::import_chapters(txn, &volume, incoming, payload, now).await?;
    if payload
        .callback_events
        .contains(&CallbackEvent::ChaptersTranslated)
    {
        // Chapters complete already are never announced (spec 6.2).
        let complete = passage::fully_translated_chapters(txn, &imported.ids).await?;
        imported.translated_at_import = Some(
            imported
                .ids
                .iter()
                .filter(|id| complete.contains(*id))
                .cloned()
                .collect(),
        );
    }

    let busy = start && lifecycle::series_busy(txn, &series.id).await?;
    let status = if !start {
        RequestStatus::Imported
    } else if busy {
        RequestStatus::Queued
    } else {
        RequestStatus::Pending
    };
    let pipeline = &payload.pipeline;
    let options = json!({
        "start": start,
        "final_review": pipeline.final_review.unwrap_or(true),
        "output_format": payload.output.format.unwrap_or(ResultFormat::Json),
        "analysis_mode": pipeline.analysis_mode,
        "threads": pipeline.threads,
        "quality": pipeline.quality.unwrap_or_default(),
        "context_backend": pipeline.context_backend.unwrap_or_default(),
        "provider_id": admitted.provider_id,
        "target_language": payload.target_language,
        "source_language": payload.source_language,
    });
    let row = request::ActiveModel {
        id: Set(ids::new_id()),
        account_id: Set(admitted.owner.id.clone()),
        token_id: Set(admitted.token.as_ref().map(|t| t.id.clone())),
        external_id: Set(payload.external_id.clone()),
        idempotency_key: Set(admitted.submitted.key.clone()),
        content_hash: Set(admitted.submitted.hash.clone()),
        series_id: Set(series.id.clone()),
        project_id: Set(volume.id.clone()),
        job_id: Set(None),
        input: Set(admitted.submitted.input),
        status: Set(status),
        stage: Set(Stage::Import),
        step: Set(if start {
            steps::WAITING
        } else {
            RequestStatus::Imported.as_str()
        }
        .to_owned()),
        error: Set(String::new()),
        stop_reason: Set(String::new()),
        priority: Set(admitted.priority),
        options: Set(options),
        callback_url: Set(payload.callback_url.clone()),
        callback_events: Set(json!(payload.callback_events)),
        chapters: Set(json!(imported)),
        result: Set(None),
        report: Set(None),
        next_attempt: Set(0),
        created_at: Set(now),
        updated_at: Set(now),
        finished_at: Set((!start).then_some(now)),
    }
    .insert(txn)
    .await?;
    let mut volume_model: project::ActiveModel = volume.into();
    volume_model.status = Set(if start {
        VolumeStatus::Translating
    } else {
        VolumeStatus::Imported
    });
    volume_model.updated_at = Set(now);
    volume_model.update(txn).await?;
    match status {
        RequestStatus::Imported => {
            lifecycle::finish_report(txn, &row, RequestStatus::Imported, None).await
        }
        RequestStatus::Queued => Ok(row),
        _ => lifecycle::create_job(txn, row).await,
    }
}

#[cfg(test)]
mod tests;
