//! The completion report (spec 2.7), as the scheduler writes it when a
//! request ends: in the status document, the JSON result, `report.json` of
//! a ZIP result and the final webhook.

use dragoman_model::quality::Signal;
use dragoman_model::vocab::{AutopilotOutcome, PassageStatus, RequestStatus};
use serde::Serialize;
use utoipa::ToSchema;

use super::super::refusals::TokenBudget;

/// What a request came to (spec 2.7, `version` 1).
#[derive(Serialize, ToSchema)]
pub struct CompletionReport {
    #[schema(minimum = 1, maximum = 1)]
    pub version: i64,
    /// `completed`, `completed_with_residuals`, `failed`, `cancelled` (or
    /// `imported` for an import-only request).
    pub outcome: RequestStatus,
    /// Why it did not complete; null when it did.
    #[schema(required = true)]
    pub reason: Option<String>,
    pub passages: ReportPassages,
    /// Every passage delivered in source text.
    pub residual_total: i64,
    /// At most 500 of them, in reading order.
    pub residuals: Vec<Residual>,
    /// Whether `residuals` is cut.
    pub residuals_truncated: bool,
    pub usage: Usage,
    pub cost: ReportCost,
    pub durations: Durations,
    /// Null when the autopilot did not run.
    #[schema(required = true)]
    pub autopilot: Option<AutopilotSummary>,
    pub decisions: Decisions,
    /// Per chapter, in reading order.
    pub chapter_map: Vec<ChapterMapEntry>,
    /// EPUB only: validation and repairs of the delivered book; null
    /// otherwise.
    #[schema(required = true)]
    pub delivery: Option<DeliveryReport>,
    /// Null when the request has no volume.
    #[schema(required = true)]
    pub quality: Option<QualityReport>,
}

/// Counts over the request's passages (the whole book for an EPUB).
#[derive(Serialize, ToSchema)]
pub struct ReportPassages {
    pub total: i64,
    pub translated: i64,
    pub source_retained: i64,
    pub untranslated: i64,
    pub flagged: i64,
    pub validated: i64,
    pub human: i64,
    pub by_status: PassagesByStatus,
}

#[derive(Serialize, ToSchema)]
pub struct PassagesByStatus {
    pub ok: i64,
    pub check: i64,
    pub source_retained: i64,
    pub error: i64,
}

/// A passage delivered in its source text.
#[derive(Serialize, ToSchema)]
pub struct Residual {
    pub segment_id: String,
    pub chapter_id: String,
    #[schema(required = true)]
    pub chapter_external_id: Option<String>,
    #[schema(required = true)]
    pub chapter_title: Option<String>,
    pub position: i64,
    pub status: PassageStatus,
    /// What the reader gets instead: `source`.
    pub kept: String,
    /// The autopilot's reason when recorded, else the passage's last
    /// error, else `source_retained`, `untranslated`, `markup_mismatch` or
    /// `validator_repair`.
    pub reason: String,
}

/// The provider calls of the request.
#[derive(Serialize, ToSchema)]
pub struct Usage {
    pub calls: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    /// Translations recalled from the translation memory, never sent.
    pub cached_calls: i64,
    /// Prompt tokens the providers answered from their own prompt cache
    /// (priced at the provider's cached-input price); an addition to the
    /// fields of spec 2.7.
    pub cached_prompt_tokens: i64,
    /// Counts only calls with a known price; null when none had one.
    #[schema(required = true)]
    pub cost: Option<f64>,
    /// The same figures for each stage of the pipeline the calls were
    /// made for; every stage is present (zeros and a null cost without
    /// calls) and the stages add up to the totals. An addition to the
    /// fields of spec 2.7.
    pub by_stage: UsageByStage,
}

/// The request's usage by pipeline stage. A passage served from the
/// translation memory counts in `translation`.
#[derive(Serialize, ToSchema)]
pub struct UsageByStage {
    pub analysis: StageUsage,
    pub translation: StageUsage,
    pub review: StageUsage,
    pub autopilot: StageUsage,
}

/// The provider calls of one stage, with the fields of the totals.
#[derive(Serialize, ToSchema)]
pub struct StageUsage {
    pub calls: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cached_calls: i64,
    pub cached_prompt_tokens: i64,
    /// Counts only calls with a known price; null when none had one.
    #[schema(required = true)]
    pub cost: Option<f64>,
}

/// What the request cost against its estimate and budgets.
#[derive(Serialize, ToSchema)]
pub struct ReportCost {
    /// Null when no estimate was made.
    #[schema(required = true)]
    pub estimated: Option<f64>,
    /// `usage.cost`.
    #[schema(required = true)]
    pub actual: Option<f64>,
    /// The token's cap; null without one.
    #[schema(required = true)]
    pub budget: Option<TokenBudget>,
    /// What the book has cost so far.
    pub book_spent: f64,
    /// The book's cap; null without one.
    #[schema(required = true)]
    pub book_budget: Option<f64>,
    /// `paused_for_budget`, `provider_switched` or `budget_reached`; null
    /// when no budget acted.
    #[schema(required = true)]
    pub warning: Option<String>,
    pub paused_for_budget: bool,
    /// Moves to a cheaper provider.
    pub provider_switches: i64,
}

/// Seconds.
#[derive(Serialize, ToSchema)]
pub struct Durations {
    /// Since creation.
    pub total_seconds: i64,
    pub queued_seconds: i64,
    pub job_seconds: i64,
}

/// How the autopilot ended.
#[derive(Serialize, ToSchema)]
pub struct AutopilotSummary {
    /// Null while it has not finished.
    #[schema(required = true)]
    pub outcome: Option<AutopilotOutcome>,
    pub rounds: i64,
    #[schema(required = true)]
    pub reason: Option<String>,
}

/// Decisions made for the request.
#[derive(Serialize, ToSchema)]
pub struct Decisions {
    /// Decisions the autopilot logged.
    pub autopilot: i64,
    /// Choices made reading the upload.
    pub intake: Vec<IntakeDecision>,
}

/// A choice made reading an uploaded file.
#[derive(Serialize, ToSchema)]
pub struct IntakeDecision {
    pub file: String,
    /// The chapter's name as read (heading or file name).
    pub name: String,
    #[schema(required = true)]
    pub chapter_number: Option<i64>,
    pub confidence: f64,
    pub reason: String,
}

/// One chapter of the request and what the request did to it.
#[derive(Serialize, ToSchema)]
pub struct ChapterMapEntry {
    pub chapter_id: String,
    #[schema(required = true)]
    pub external_id: Option<String>,
    pub status: ChapterChange,
    /// `chapter`, or a special: `prologue`, `interlude`, `epilogue`, …
    pub kind: String,
    #[schema(required = true)]
    pub number: Option<i64>,
    #[schema(required = true)]
    pub part: Option<i64>,
    #[schema(required = true)]
    pub part_count: Option<i64>,
    #[schema(required = true)]
    pub label: Option<String>,
    pub position: i64,
    pub confidence: f64,
    pub reason: String,
}

/// What a request did to a chapter.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChapterChange {
    Created,
    Unchanged,
    Replaced,
}

/// Validation and repairs of a delivered EPUB.
#[derive(Serialize, ToSchema)]
pub struct DeliveryReport {
    pub validation: EpubValidation,
    /// Each repair attempt: `attempt`, `errors`, `files`,
    /// `passages_restored`.
    pub repairs: Vec<serde_json::Value>,
    /// Errors the original book already had; they do not block delivery.
    pub inherited_errors: Vec<serde_json::Value>,
    /// Errors left when repairs were exhausted (the delivery failed).
    pub errors: Option<Vec<serde_json::Value>>,
    /// Why the validator gave no verdict; the book was delivered
    /// unvalidated.
    pub validator_error: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct EpubValidation {
    /// A validator is installed.
    pub available: bool,
    /// Null when none is installed or it could not finish.
    #[schema(required = true)]
    pub valid: Option<bool>,
}

/// Scores of the translation, 0 to 100 (bands: good from 85, fair from
/// 70, weak from 50, poor below).
#[derive(Serialize, ToSchema)]
pub struct QualityReport {
    pub scored: i64,
    #[schema(required = true)]
    pub average: Option<f64>,
    #[schema(required = true)]
    pub minimum: Option<i64>,
    /// Below `review_below` and not validated by a person.
    pub to_review: i64,
    pub review_below: i64,
    pub bands: QualityBands,
    /// Ten buckets of ten points.
    #[schema(min_items = 10, max_items = 10)]
    pub histogram: Vec<i64>,
    /// At most 10.
    pub weakest_chapters: Vec<WeakChapter>,
    /// At most 10 passages, with the signals that lowered their score.
    pub review_first: Vec<ReviewFirst>,
}

#[derive(Serialize, ToSchema)]
pub struct QualityBands {
    pub good: i64,
    pub fair: i64,
    pub weak: i64,
    pub poor: i64,
}

#[derive(Serialize, ToSchema)]
pub struct WeakChapter {
    pub chapter_id: String,
    #[schema(required = true)]
    pub external_id: Option<String>,
    #[schema(required = true)]
    pub title: Option<String>,
    pub position: i64,
    pub scored: i64,
    #[schema(required = true)]
    pub average: Option<f64>,
    #[schema(required = true)]
    pub minimum: Option<i64>,
    pub to_review: i64,
}

#[derive(Serialize, ToSchema)]
pub struct ReviewFirst {
    pub segment_id: String,
    pub chapter_id: String,
    #[schema(required = true)]
    pub chapter_external_id: Option<String>,
    pub position: i64,
    pub score: i64,
    pub status: PassageStatus,
    pub signals: Vec<Signal>,
}
