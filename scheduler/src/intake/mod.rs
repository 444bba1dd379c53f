//! `Submit`: a request becomes a stored request, its chapters and passages,
//! and a job — or, when its series is busy with another volume, a queued
//! request that waits for it.
//!
//! The order is the one of spec 4.2: the payload's meaning
//! ([`TranslationPayload::check`], or for an upload the files read by the
//! book crate and [`upload::check`], run here and only here), the
//! idempotency key, then a replay of the same content (answered even when
//! quotas are full), then the admission checks ([`admission`]); a refusal
//! stores nothing. One write transaction then places the request
//! ([`placement`]), imports its chapters ([`import`]), stores the request
//! and its job, and counts the words it adds in the licence's ledger
//! ([`crate::licence::count`]) — a refusal there (402, when a concurrent
//! submission took the words admission saw) rolls all of it back; an EPUB's
//! original is kept only when that succeeds.
//!
//! The request row itself, its options and its job are made by
//! [`store_request`], which a series `start` uses too for the requests it
//! creates in volumes already imported.

mod admission;
mod chapter_order;
mod import;
mod placement;
pub mod upload;

pub use admission::{Admitted, Allowance, check_priority, provider_in_force};
pub use import::ChapterChange;

use crate::chapters::{self, IncomingChapter};
use crate::error::SchedulerError;
use crate::lifecycle::queue::QueueSettings;
use crate::{lifecycle, steps};
use dragoman_model::documents::report::IntakeDecision;
use dragoman_model::entities::{passage, project, request, series};
use dragoman_model::licence::LicenceSettings;
use dragoman_model::payload::{PipelineOptions, TranslationPayload};
use dragoman_model::request_options::StoredOptions;
use dragoman_model::upload::{self as upload_rules, UploadedFile};
use dragoman_model::vocab::{
    AnalysisMode, CallbackEvent, InputKind, Issue, IssueContext, IssueKind, JobOperation, Priority,
    RequestStatus, ResultFormat, Stage, VolumeStatus,
};
use dragoman_model::webhook::WebhookPolicy;
use dragoman_model::{clock, ids};
use dragoman_proto::principal::Principal;
use dragoman_proto::v1::{RequestSummary, SubmitRequest, SubmitResponse};
use dragoman_proto::wire::{self, WireEnum};
use object_store::ObjectStore;
use object_store::path::Path;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseConnection, DatabaseTransaction, EntityTrait,
    PaginatorTrait, QueryFilter, Set,
};
use serde::Serialize;
use serde_json::Value;

/// Limits (spec 8) and installation defaults of intake.
#[derive(Debug, Clone)]
pub struct IntakeLimits {
    /// `API_MAX_CHAPTERS`.
    pub max_chapters: usize,
    /// `ANALYSIS_MODE`: the analysis mode of a request that does not choose
    /// one, on a volume that does not either.
    pub analysis_mode: AnalysisMode,
    /// `FINAL_REVIEW`: whether the installation lets the review stage run.
    pub final_review: bool,
    /// `DRAGOMAN_BATCH`: whether the calls of a request that does not
    /// choose, on a volume that does not either, go by the provider's batch
    /// mode.
    pub batch: bool,
    /// `QUALITY_REVIEW_BELOW`: passages scoring below it are checked,
    /// retried by the autopilot and counted `to_review`.
    pub review_below: i32,
    /// `QUEUE_MAX_RUNNING_PER_ACCOUNT` and the account's default waiting
    /// quota, as the environment gives them (an administrator setting wins
    /// over them).
    pub queue: QueueSettings,
    /// Where the licence is found (`DRAGOMAN_LICENCE_FILE`, else the
    /// administrator setting) and `LICENCE_QUOTA_OVERRUN_WORDS`.
    pub licence: LicenceSettings,
    /// `BUDGET_SWITCH_PERCENT`: the threshold a resume of a paused job is
    /// judged against.
    pub budget_switch_percent: u8,
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
    /// What a replay must match: [`TranslationPayload::content_hash`], or
    /// for an upload [`upload_rules::content_hash`].
    pub hash: String,
    /// The chapters to import, from the payload or the uploaded files.
    pub chapters: Vec<IncomingChapter>,
    /// `report.decisions.intake`: the choices made reading the upload.
    pub intake: Vec<IntakeDecision>,
    /// An EPUB: where its original is kept, and where the gateway put it.
    pub original: Option<Original>,
    /// An EPUB sent with no volume: the number its file name gives.
    pub volume_from_name: Option<i32>,
}

/// An EPUB original: the content-addressed key it is kept under, and the
/// upload it is copied from.
#[derive(Debug, Clone)]
pub struct Original {
    pub key: String,
    pub upload_key: String,
}

/// Decodes the message and applies the rules of meaning of the payload or
/// of the upload (whose files are read from `blobs`), and the idempotency
/// key rule.
pub async fn decode(
    message: SubmitRequest,
    limits: &IntakeLimits,
    blobs: &dyn ObjectStore,
) -> Result<Submitted, SchedulerError> {
    let input =
        InputKind::from_wire(message.input, "input").map_err(SchedulerError::payload_field)?;
    let split = wire::split(message.split).map_err(SchedulerError::payload_field)?;
    let files = wire::files(message.files);
    let submission = message.submission.ok_or_else(|| {
        SchedulerError::InvalidPayload(vec![Issue::new(["body"], IssueKind::Missing)])
    })?;
    let mut payload = wire::payload(submission).map_err(SchedulerError::payload_field)?;
    let key = message.idempotency_key;
    if input == InputKind::Json {
        let issues = payload.check(input, limits.max_chapters);
        if !issues.is_empty() {
            return Err(SchedulerError::InvalidPayload(issues));
        }
        if key.as_deref().is_some_and(|k| !valid_idempotency_key(k)) {
            return Err(SchedulerError::InvalidIdempotencyKey);
        }
        let hash = payload.content_hash();
        let chapters = payload.chapters.iter().map(chapters::read).collect();
        return Ok(Submitted {
            input,
            payload,
            key,
            hash,
            chapters,
            intake: Vec::new(),
            original: None,
            volume_from_name: None,
        });
    }
    if files.is_empty() || (input == InputKind::Epub && files.len() > 1) {
        return Err(SchedulerError::InvalidPayload(vec![
            Issue::at("body", "file", IssueKind::Missing)
                .with_ctx(IssueContext::new().files("one EPUB, or TXT or DOCX chapters")),
        ]));
    }
    if key.as_deref().is_some_and(|k| !valid_idempotency_key(k)) {
        return Err(SchedulerError::InvalidIdempotencyKey);
    }
    // Hashed as sent, before anything is filled in from the book.
    let hash = upload_rules::content_hash(&payload, &files, split);
    let mut read = upload::read(blobs, input, &files, split).await?;
    if let Some(facts) = &read.book {
        upload::fill_from_book(&mut payload, facts, &mut read.intake);
    }
    let mut issues = upload_rules::check(
        &payload,
        input,
        split,
        read.chapters.len(),
        limits.max_chapters,
    );
    issues.extend(upload::repeated_numbers(&read.chapters, input));
    if !issues.is_empty() {
        return Err(SchedulerError::InvalidPayload(issues));
    }
    let original = (input == InputKind::Epub)
        .then(|| files.first())
        .flatten()
        .map(|file: &UploadedFile| Original {
            key: upload::original_key(&file.sha256),
            upload_key: file.blob_key.clone(),
        });
    Ok(Submitted {
        input,
        payload,
        key,
        hash,
        chapters: read.chapters,
        intake: read.intake,
        original,
        volume_from_name: read.book.and_then(|b| b.number_in_name),
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
    blobs: &dyn ObjectStore,
    who: &Principal,
    message: SubmitRequest,
    limits: &IntakeLimits,
    webhooks: &WebhookPolicy,
) -> Result<(SubmitResponse, bool), SchedulerError> {
    let submitted = decode(message, limits, blobs).await?;
    // A replay is answered even when quotas are full: look before checking.
    if let Some(original) = admission::replay(db, &who.account_id, &submitted).await? {
        return Ok((replayed(&original), false));
    }
    let admitted =
        admission::admit(db, who, webhooks, &limits.queue, &limits.licence, submitted).await?;
    if let Some(original) = &admitted.submitted.original {
        keep_original(blobs, original).await?;
    }
    let stored = store_with_retries(db, &admitted, limits).await;
    if stored.is_err()
        && let Some(original) = &admitted.submitted.original
    {
        forget_original(db, blobs, original).await;
    }
    let row = match stored? {
        Stored::Request(row) => row,
        Stored::Replay(original) => return Ok((replayed(&original), false)),
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

/// Copies an EPUB upload to its content-addressed key, unless the same book
/// is kept there already. The key names the bytes, so two submissions of
/// one book copying at once write the same object: a plain copy (server-side
/// on object storage) is safe where a conditional one is not offered.
async fn keep_original(blobs: &dyn ObjectStore, original: &Original) -> Result<(), SchedulerError> {
    let key = Path::from(original.key.as_str());
    match blobs.head(&key).await {
        Ok(_) => return Ok(()),
        Err(object_store::Error::NotFound { .. }) => {}
        Err(e) => return Err(SchedulerError::blob(format!("keeping {key}"))(e)),
    }
    blobs
        .copy(&Path::from(original.upload_key.as_str()), &key)
        .await
        .map_err(SchedulerError::blob(format!("keeping {key}")))
}

/// Deletes an original that no volume holds after a refused store, so a
/// refusal leaves nothing behind.
async fn forget_original(db: &DatabaseConnection, blobs: &dyn ObjectStore, original: &Original) {
    let held = project::Entity::find()
        .filter(project::Column::OriginalBlob.eq(original.key.clone()))
        .count(db)
        .await;
    if matches!(held, Ok(0))
        && let Err(e) = blobs.delete(&Path::from(original.key.as_str())).await
    {
        tracing::warn!(key = %original.key, error = %e, "deleting an unused original failed");
    }
}

/// What the store loop ended with.
enum Stored {
    Request(request::Model),
    /// A concurrent identical submission stored first.
    Replay(request::Model),
}

async fn store_with_retries(
    db: &DatabaseConnection,
    admitted: &Admitted,
    limits: &IntakeLimits,
) -> Result<Stored, SchedulerError> {
    // Two writers can race past the checks above (PostgreSQL runs them side
    // by side): the loser hits a unique index, and the next attempt finds
    // the winner's request (a replay) or series.
    let mut attempts = 0;
    loop {
        attempts += 1;
        let txn = dragoman_model::db::begin_write(db).await?;
        // Looked up again under the write lock: of concurrent identical
        // submissions, the first stores and the others replay it.
        if let Some(original) =
            admission::replay(&txn, &admitted.owner.id, &admitted.submitted).await?
        {
            txn.rollback().await?;
            return Ok(Stored::Replay(original));
        }
        let stored = match store(&txn, admitted, limits).await {
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
            Ok(row) => return Ok(Stored::Request(row)),
            Err(SchedulerError::Db(e)) if attempts < STORE_ATTEMPTS && is_unique_violation(&e) => {
                continue;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The output format of a request that names none: an EPUB comes back as
/// an EPUB (spec 2.5), everything else as JSON.
fn default_format(input: InputKind) -> ResultFormat {
    if input == InputKind::Epub {
        ResultFormat::Epub
    } else {
        ResultFormat::Json
    }
}

fn is_unique_violation(e: &sea_orm::DbErr) -> bool {
    matches!(
        e.sql_err(),
        Some(sea_orm::SqlErr::UniqueConstraintViolation(_))
    )
}

/// Stores an admitted request: its series and volume, its chapters, the
/// request row and — when it starts and its series is free — its job; then
/// counts its words.
async fn store(
    txn: &DatabaseTransaction,
    admitted: &Admitted,
    limits: &IntakeLimits,
) -> Result<request::Model, SchedulerError> {
    let now = clock::now();
    let payload = &admitted.submitted.payload;
    let start = admitted.start;
    let series = placement::resolve_series(txn, admitted).await?;
    let volume = placement::resolve_volume(txn, admitted, &series).await?;
    let incoming = admitted.submitted.chapters.clone();
    let mut imported = import::import_chapters(txn, &volume, incoming, payload, now).await?;
    imported.intake = admitted.submitted.intake.clone();
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

    let new = NewRequest {
        account_id: admitted.owner.id.clone(),
        token_id: admitted.token.as_ref().map(|t| t.id.clone()),
        external_id: payload.external_id.clone(),
        idempotency_key: admitted.submitted.key.clone(),
        content_hash: admitted.submitted.hash.clone(),
        input: admitted.submitted.input,
        start,
        priority: admitted.priority,
        provider_id: admitted.provider_id.clone(),
        pipeline: &payload.pipeline,
        output_format: payload.output.format,
        languages: (&payload.source_language, &payload.target_language),
        callback_url: payload.callback_url.clone(),
        callback_events: &payload.callback_events,
        chapters: column(&imported)?,
        original: admitted.submitted.original.as_ref(),
        operation: JobOperation::Translate,
    };
    let book = volume.clone();
    let row = store_request(txn, &series, volume, new, limits).await?;
    // Counted last, under the charging lock: a refusal rolls back the
    // whole store, so nothing of the request is imported.
    crate::licence::count(
        txn,
        &limits.licence,
        &admitted.owner,
        &book,
        &row.id,
        imported.words,
    )
    .await?;
    Ok(row)
}

/// A request to store in a volume whose chapters are in place: what
/// admission decided for a submission, or what a series `start` decided
/// for one of its volumes.
pub struct NewRequest<'a> {
    pub account_id: String,
    pub token_id: Option<String>,
    pub external_id: Option<String>,
    pub idempotency_key: Option<String>,
    pub content_hash: String,
    pub input: InputKind,
    /// False only imports: the request ends `imported` at once.
    pub start: bool,
    pub priority: Priority,
    pub provider_id: Option<String>,
    pub pipeline: &'a PipelineOptions,
    pub output_format: Option<ResultFormat>,
    /// Source and target language.
    pub languages: (&'a str, &'a str),
    pub callback_url: Option<String>,
    pub callback_events: &'a [CallbackEvent],
    /// The `chapters` bookkeeping (`created`, `unchanged`, `replaced`, `new`,
    /// `ids`, `map`), as an import records it.
    pub chapters: Value,
    /// An EPUB's original, which the volume follows from now on.
    pub original: Option<&'a Original>,
    /// What the request's job does.
    pub operation: JobOperation,
}

/// Stores the request row and sets it going: an import-only request ends
/// `imported`; one that starts gets its job when its series is free, else
/// waits `queued`. The volume's status follows.
///
/// The series' suspension is read again here, under the write lock, so a
/// series `pause` that commits between admission and this transaction
/// still refuses the work.
pub async fn store_request(
    txn: &DatabaseTransaction,
    series: &series::Model,
    volume: project::Model,
    new: NewRequest<'_>,
    limits: &IntakeLimits,
) -> Result<request::Model, SchedulerError> {
    let now = clock::now();
    let start = new.start;
    if start && lifecycle::series_suspended(txn, &series.id).await? {
        return Err(SchedulerError::SeriesSuspended);
    }
    let busy = start && lifecycle::series_busy(txn, &series.id).await?;
    let status = if !start {
        RequestStatus::Imported
    } else if busy {
        RequestStatus::Queued
    } else {
        RequestStatus::Pending
    };
    let pipeline = new.pipeline;
    let options = StoredOptions {
        start: Some(start),
        // Never when the installation disables it (spec 2.5).
        final_review: Some(pipeline.final_review.unwrap_or(true) && limits.final_review),
        // Kept with the request so its report reads the threshold it ran with.
        review_below: Some(limits.review_below),
        output_format: Some(new.output_format.unwrap_or(default_format(new.input))),
        analysis_mode: pipeline.analysis_mode,
        // The mode the analysis stage runs in: the request's, else the
        // volume's, else the installation's.
        analysis_mode_in_force: Some(
            pipeline
                .analysis_mode
                .or(volume.analysis_mode)
                .unwrap_or(limits.analysis_mode),
        ),
        threads: pipeline.threads,
        quality: Some(pipeline.quality.unwrap_or_default()),
        context_backend: Some(pipeline.context_backend.unwrap_or_default()),
        provider_id: new.provider_id,
        target_language: Some(new.languages.1.to_owned()),
        source_language: Some(new.languages.0.to_owned()),
        // Kept only when it is not a translation, so that the options of a
        // translation read as they always did.
        operation: (new.operation != JobOperation::Translate).then_some(new.operation),
        batch: pipeline.batch,
        batch_in_force: Some(pipeline.batch.or(volume.batch).unwrap_or(limits.batch)),
    };
    let row = request::ActiveModel {
        id: Set(ids::new_id()),
        account_id: Set(new.account_id),
        token_id: Set(new.token_id),
        external_id: Set(new.external_id),
        idempotency_key: Set(new.idempotency_key),
        content_hash: Set(new.content_hash),
        series_id: Set(series.id.clone()),
        project_id: Set(volume.id.clone()),
        job_id: Set(None),
        input: Set(new.input),
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
        priority: Set(new.priority),
        options: Set(options),
        callback_url: Set(new.callback_url),
        callback_events: Set(column(new.callback_events)?),
        chapters: Set(new.chapters),
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
    // Reader-note proposals leave the book's translation as it is, and so
    // its status.
    if new.operation == JobOperation::Translate {
        volume_model.status = Set(if start {
            VolumeStatus::Translating
        } else {
            VolumeStatus::Imported
        });
    }
    volume_model.updated_at = Set(now);
    if let Some(original) = new.original {
        // The rebuilt EPUB follows the last book sent to the volume; its
        // unchanged chapters were given that book's passage ids at import.
        volume_model.original_blob = Set(Some(original.key.clone()));
        volume_model.source_format = Set(Some(InputKind::Epub));
    }
    volume_model.update(txn).await?;
    match status {
        RequestStatus::Imported => {
            lifecycle::finish_report(txn, &row, RequestStatus::Imported, None).await
        }
        RequestStatus::Queued => Ok(row),
        _ => lifecycle::create_job(txn, row).await,
    }
}

/// `value` as the JSON a column of the request holds.
fn column<T: Serialize + ?Sized>(value: &T) -> Result<Value, SchedulerError> {
    serde_json::to_value(value)
        .map_err(|e| SchedulerError::Db(sea_orm::DbErr::Json(format!("request column: {e}"))))
}

/// The `chapters` bookkeeping of a request that covers the volume's
/// chapters as they are, none of them new (`ids` in reading order).
pub fn unchanged_chapters(ids: Vec<String>) -> Value {
    let imported = import::Imported {
        unchanged: ids.len(),
        map: ids
            .iter()
            .map(|id| (id.clone(), ChapterChange::Unchanged))
            .collect(),
        ids,
        ..import::Imported::default()
    };
    // Counts, ids and a map of them: plain fields, which always serialise.
    serde_json::to_value(imported).unwrap_or(Value::Null)
}

#[cfg(test)]
mod licence_tests;
#[cfg(test)]
mod tests;

#[cfg(test)]
mod upload_tests;
