//! A translation request as the API answers it: the summary of spec 2.1
//! (the answer of the send operation) and the status document of spec 2.2,
//! which flattens the summary and adds progress per stage, the chapters,
//! the options in force, the queue, the stored result, the report and the
//! webhooks.
//!
//! The document is written as a JSON object whose keys are sorted at every
//! level ([`RequestDocument::to_json`]): the order clients have always
//! read.

use crate::documents::report::CompletionReport;
use crate::estimate::Estimate;
use crate::vocab::{
    AnalysisMode, CallbackEvent, ContextBackend, InputKind, Priority, RequestStatus,
    RequestWebhookState, ResultFormat, Stage,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The answer of the send operation (spec 2.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RequestSummary {
    pub request_id: String,
    /// The client's identifier, when it gave one.
    #[schema(required = true)]
    pub external_id: Option<String>,
    pub series_id: String,
    /// The volume.
    pub project_id: String,
    /// Null while the request waits for its volume (status `queued`).
    #[schema(required = true)]
    pub job_id: Option<String>,
    pub input: InputKind,
    pub status: RequestStatus,
    /// `/api/v1/translation-requests/<request_id>`.
    pub status_url: String,
    /// `/api/v1/translation-requests/<request_id>/result`.
    pub result_url: String,
}

impl RequestSummary {
    /// Where the status document of request `request_id` is.
    pub fn status_url(request_id: &str) -> String {
        format!("/api/v1/translation-requests/{request_id}")
    }

    /// Where the result of request `request_id` is.
    pub fn result_url(request_id: &str) -> String {
        format!("/api/v1/translation-requests/{request_id}/result")
    }
}

/// A request's status document (spec 2.2): every field is always present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RequestDocument {
    #[serde(flatten)]
    pub summary: RequestSummary,
    pub created_at: i64,
    pub updated_at: i64,
    /// Null until the request reaches a final status.
    #[schema(required = true)]
    pub finished_at: Option<i64>,
    /// When the request's volume was deleted (Unix seconds); null while it
    /// exists. The document is then the one kept from that moment, with no
    /// stored result: the result answers 404 `volume_not_found`.
    #[schema(required = true)]
    pub volume_deleted_at: Option<i64>,
    /// The stage the request is in.
    pub stage: Stage,
    /// What the stage is doing (`reviewing`, `autopilot round 2`, …).
    pub step: String,
    pub progress: RequestProgress,
    pub memory: MemoryBackend,
    /// Made when the job starts; null before.
    #[schema(required = true)]
    pub estimate: Option<Estimate>,
    /// Why the request failed; empty when it did not.
    pub error: String,
    /// Why the job stopped (`budget_exceeded`,
    /// `licence_quota_insufficient`, …); empty when none.
    pub stop_reason: String,
    /// When the next call of a webhook that failed is due (Unix seconds):
    /// the earliest retry of the request's final event and
    /// `chapters.translated` batches; 0 when none is due (nothing failed,
    /// or every call was delivered or failed for good).
    #[schema(minimum = 0)]
    pub next_attempt: i64,
    pub chapters: RequestChapters,
    pub options: RequestOptions,
    pub priority: Priority,
    /// Why the job waits for a running slot; null when it does not.
    #[schema(required = true)]
    pub queue: Option<QueueState>,
    /// The stored result; null before it is built.
    #[schema(required = true)]
    pub result: Option<StoredResult>,
    // The completion report (the `CompletionReport` schema); null before
    // the end. Described by hand so the schema keeps its own description.
    #[schema(required = true, schema_with = completion_report)]
    pub report: Option<CompletionReport>,
    /// The final webhook.
    pub webhook: WebhookStatus,
    /// The `chapters.translated` webhooks.
    pub chapter_events: ChapterEvents,
}

impl RequestDocument {
    /// The document as JSON text, its keys sorted at every level.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        // Through a `Value`, whose objects keep their keys sorted.
        Ok(serde_json::to_value(self)?.to_string())
    }
}

/// `report`: the `CompletionReport` schema, or null.
fn completion_report() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::RefBuilder;
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
    let report = RefBuilder::new()
        .ref_location_from_schema_name("CompletionReport")
        .description(Some("The completion report; null before the end."))
        .build();
    OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .item(RefOr::Ref(report))
        .into()
}

/// How far the request is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RequestProgress {
    /// Passages of the request.
    pub segments: i64,
    /// Passages with a usable translation.
    pub translated: i64,
    #[schema(minimum = 0, maximum = 100)]
    pub percent: i64,
    /// Every stage in the order they run.
    pub stages: Vec<StageProgress>,
    /// The analysis stage; null when it does not run (quality `fast`, an
    /// import-only request).
    #[schema(required = true)]
    pub analysis: Option<AnalysisProgress>,
}

/// One stage's progress. A stage that does not run is `skipped` and reads
/// 0 of 0, 0 %.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StageProgress {
    pub key: Stage,
    pub done: i64,
    pub total: i64,
    #[schema(minimum = 0, maximum = 100)]
    pub percent: i64,
    pub skipped: bool,
}

/// The analysis stage of the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AnalysisProgress {
    pub mode: AnalysisMode,
    /// Passages analysed (or given an earlier analysis of the same text).
    pub done: i64,
    pub total: i64,
    #[schema(minimum = 0, maximum = 100)]
    pub percent: i64,
    /// Of `done`, those the model gave no usable analysis.
    pub failed: i64,
    /// Things the volume's memory names so far.
    pub entities: i64,
    /// Terms of the volume's glossary so far.
    pub terms: i64,
}

/// The memory backend asked for and the one that answered the contexts of
/// the request's job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MemoryBackend {
    pub backend: ContextBackend,
    /// `external` when the external memory answered every batch so far,
    /// `internal` when the database answered them all (or none was asked
    /// yet), `hybrid` when both answered some.
    pub answered_by: ContextBackend,
    /// Why the database answered a request that asked for more; empty
    /// otherwise.
    pub note: String,
    /// Batches whose context the external memory answered.
    #[schema(minimum = 0)]
    pub external_batches: i64,
    /// Batches whose context the database answered.
    #[schema(minimum = 0)]
    pub internal_batches: i64,
    /// Of `internal_batches`, those where the external memory was asked
    /// and failed or was late.
    #[schema(minimum = 0)]
    pub fallbacks: i64,
}

/// The chapters the request sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RequestChapters {
    pub created: i64,
    pub unchanged: i64,
    pub replaced: i64,
    /// In reading order.
    pub items: Vec<ChapterItem>,
    /// Ids of the chapters the request created or replaced.
    pub new: Vec<String>,
}

/// One chapter of the request and its progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChapterItem {
    pub chapter_id: String,
    #[schema(required = true)]
    pub external_id: Option<String>,
    /// Null for a special chapter.
    #[schema(required = true)]
    pub number: Option<i64>,
    /// `chapter`, or a special: `prologue`, `interlude`, `epilogue`, …
    pub kind: String,
    #[schema(required = true)]
    pub part: Option<i64>,
    #[schema(required = true)]
    pub part_count: Option<i64>,
    #[schema(required = true)]
    pub label: Option<String>,
    /// The label in the target language.
    pub display_label: String,
    /// Place in reading order.
    pub position: i64,
    pub mapping: ChapterMapping,
    #[schema(required = true)]
    pub title: Option<String>,
    pub segments: i64,
    pub translated: i64,
    pub validated: i64,
    pub flagged: i64,
    /// Every passage translated and none flagged.
    pub complete: bool,
}

/// How the chapter was recognised in the upload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChapterMapping {
    #[schema(minimum = 0, maximum = 1)]
    pub confidence: f64,
    pub reason: String,
    /// Whether its number or kind was detected rather than given.
    pub detected: bool,
}

/// The options the request runs with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RequestOptions {
    pub start: bool,
    pub final_review: bool,
    pub output_format: ResultFormat,
    /// The request's own choice; null when it made none.
    #[schema(required = true)]
    pub analysis_mode: Option<AnalysisMode>,
    #[schema(required = true)]
    pub threads: Option<i64>,
    /// Whether the calls go by the provider's batch mode: the request's
    /// choice, else the volume's, else the server's. A provider kind without
    /// a batch API runs them synchronously at full price (the report says so).
    #[serde(default)]
    pub batch: bool,
}

/// Why a job waits for a running slot (spec 8, queue rule 3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QueueState {
    pub reason: QueueReason,
}

/// The running limit a waiting job is held by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum QueueReason {
    /// The token's `max_running`.
    TokenLimit,
    /// The account's running limit.
    AccountLimit,
}

/// The stored result (spec 2.2.1): built once in the request's format and
/// scope `request`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StoredResult {
    pub format: ResultFormat,
    pub media_type: String,
    pub filename: String,
    /// Bytes.
    pub size: i64,
    /// Hex SHA-256 of the file.
    pub sha256: String,
    pub created_at: i64,
}

/// The final webhook's delivery (section 6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WebhookStatus {
    /// `none` when the request named no `callback_url`: no call is due,
    /// ever. Otherwise `pending` until the final event is delivered or
    /// failed for good.
    pub state: RequestWebhookState,
    pub attempts: i64,
    /// The last failure; empty when none.
    pub error: String,
}

/// The `chapters.translated` webhooks of the request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChapterEvents {
    #[schema(schema_with = chapters_translated)]
    pub event: CallbackEvent,
    pub batches: i64,
    pub delivered: i64,
    pub pending: i64,
    pub failed: i64,
    /// Chapters a batch will announce once translated.
    pub waiting_chapters: i64,
    /// The last failure; empty when none.
    pub error: String,
}

/// `event`: always `chapters.translated`.
fn chapters_translated() -> utoipa::openapi::schema::Schema {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some([CallbackEvent::ChaptersTranslated.as_str()]))
        .into()
}

/// What a job on a stored book would take now (the tool protocol's
/// `estimate_job`): the estimate in the shape of the status document's
/// `estimate`, with the book, the provider and the licence words it would
/// count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct JobEstimate {
    #[serde(flatten)]
    pub estimate: Estimate,
    pub book_id: String,
    /// The provider's name.
    pub provider: String,
    /// Words the licence would count for the job.
    pub licence_words: i64,
    /// Passages of the book without a usable translation.
    pub passages_without_translation: u64,
}

impl JobEstimate {
    /// The estimate as a JSON value, its keys sorted as it always went
    /// out.
    pub fn to_value(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::to_value(self)
    }
}
